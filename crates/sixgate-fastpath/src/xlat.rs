//! The program's configuration as one LPM trie (bpf/config_maps.h): the
//! [`BpfConfig`] element and both sides of every RFC 7757 EAM entry, built
//! whole for each configuration and installed with one update of the `xlat`
//! slot, so that a packet is translated wholly under the old configuration or
//! wholly under the new one (docs/fastpath.md, "Configuration changes").

use aya::maps::MapData;
use aya::maps::lpm_trie::{Key, LpmTrie};
use sixgate_core::Config;

use crate::BpfConfig;

/// `EAM_MAX_ENTRIES` of bpf/config_maps.h: EAM entries the trie holds.
pub const EAM_MAX_ENTRIES: usize = 4096;
/// `XLAT_MAX_ENTRIES`: the config element and both sides of each EAM entry
/// and MAP-T rule. An inner map must match the outer map's template, this
/// included.
const XLAT_MAX_ENTRIES: u32 =
    1 + 2 * EAM_MAX_ENTRIES as u32 + 2 * sixgate_core::fastpath::MAPT_RULES_MAX as u32;
/// `BPF_F_NO_PREALLOC`, which the kernel requires of an LPM trie.
const NO_PREALLOC: u32 = 1;

/// `enum xlat_kind`: the first key byte says what an element is.
const KIND_CONFIG: u8 = 0;
const KIND_EAM4: u8 = 4;
const KIND_EAM6: u8 = 6;
pub(crate) const KIND_MAPT4: u8 = 14;
pub(crate) const KIND_MAPT6: u8 = 16;

/// `struct xlat_key` after its prefix length: the kind, an address, padding.
type KeyData = [u8; 20];

/// A configuration trie, as created here or found in the `xlat` slot.
pub type Trie = LpmTrie<MapData, KeyData, XlatVal>;

/// `union xlat_val`: as large as its largest member, `struct config`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct XlatVal([u8; VAL_SIZE]);
const VAL_SIZE: usize = core::mem::size_of::<BpfConfig>();
// SAFETY: a byte array; every bit pattern valid.
unsafe impl aya::Pod for XlatVal {}

/// `struct eam6_val`: the IPv4 side of an EAM entry, found by its IPv6 side.
#[repr(C)]
#[derive(Clone, Copy)]
struct Eam6Val {
    v4: u32,
    v6_len: u32,
    shift: u32,
}

/// `struct eam4_val`: the IPv6 side of an EAM entry, found by its IPv4 side.
#[repr(C)]
#[derive(Clone, Copy)]
struct Eam4Val {
    hi: u64,
    lo: u64,
    v4_len: u32,
    shift: u32,
}

const _: () = assert!(core::mem::size_of::<Eam6Val>() <= VAL_SIZE);
const _: () = assert!(core::mem::size_of::<Eam4Val>() <= VAL_SIZE);

impl XlatVal {
    /// `v`'s bytes, the rest zero. Only for the padding-free value structs
    /// above, `MaptRuleVal` and [`BpfConfig`] (whose padding is spelt out).
    pub(crate) fn of<T: Copy>(v: &T) -> XlatVal {
        let mut b = [0u8; VAL_SIZE];
        let n = core::mem::size_of::<T>().min(VAL_SIZE);
        // SAFETY: `v` is a live `T` of at least `n` bytes with no
        // uninitialised padding (the types above), copied into `b`'s `n`.
        unsafe { core::ptr::copy_nonoverlapping((v as *const T).cast::<u8>(), b.as_mut_ptr(), n) };
        XlatVal(b)
    }
}

/// The key of an element of `kind` with `addr`'s first `bits` bits.
pub(crate) fn key(kind: u8, addr: &[u8], bits: u8) -> Key<KeyData> {
    let mut d = [0u8; 20];
    d[0] = kind;
    d[1..1 + addr.len()].copy_from_slice(addr);
    Key::new(8 + u32::from(bits), d)
}

/// How a failed map creation starts (`FastPath::prepare` tells it apart).
pub(crate) const CANNOT_CREATE: &str = "cannot create a configuration map";

/// A new trie for `cfg` run as `bpf` (`None`: no config element, so the
/// program passes every packet up). Not yet installed: nothing reads it.
pub fn build(cfg: &Config, bpf: Option<&BpfConfig>) -> Result<Trie, String> {
    let eam = cfg.map.eam.entries();
    if bpf.is_some() && eam.len() > EAM_MAX_ENTRIES {
        return Err(format!(
            "{} EAM entries, the fast path holds at most {EAM_MAX_ENTRIES}",
            eam.len()
        ));
    }
    let mut t =
        Trie::create(XLAT_MAX_ENTRIES, NO_PREALLOC).map_err(|e| format!("{CANNOT_CREATE}: {e}"))?;
    let Some(bpf) = bpf else {
        return Ok(t);
    };
    let err = |e: aya::maps::MapError| format!("configuration map: {e}");
    t.insert(&key(KIND_CONFIG, &[], 0), XlatVal::of(bpf), 0)
        .map_err(err)?;
    for e in eam {
        // Where the IPv4 suffix sits: its end's distance from the IPv6
        // address's end (sixgate_core::addr::eam, `shift`).
        let shift = (128 - u32::from(e.v6_len)) - (32 - u32::from(e.v4_len));
        let v6 = u128::from_be_bytes(e.v6);
        let by6 = Eam6Val {
            v4: u32::from_be_bytes(e.v4),
            v6_len: u32::from(e.v6_len),
            shift,
        };
        t.insert(&key(KIND_EAM6, &e.v6, e.v6_len), XlatVal::of(&by6), 0)
            .map_err(err)?;
        let by4 = Eam4Val {
            hi: (v6 >> 64) as u64,
            lo: v6 as u64,
            v4_len: u32::from(e.v4_len),
            shift,
        };
        t.insert(&key(KIND_EAM4, &e.v4, e.v4_len), XlatVal::of(&by4), 0)
            .map_err(err)?;
    }
    crate::mapt_rules::insert(&mut t, cfg)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `struct xlat_key` and `union xlat_val` of bpf/config_maps.h.
    #[test]
    fn layout_matches_the_c_structs() {
        assert_eq!(core::mem::size_of::<Key<KeyData>>(), 24);
        assert_eq!(core::mem::size_of::<XlatVal>(), 40);
        assert_eq!(core::mem::size_of::<Eam6Val>(), 12);
        assert_eq!(core::mem::size_of::<Eam4Val>(), 24);
    }

    /// RFC 7757 §3: each side keyed by its own prefix, after the kind byte.
    #[test]
    fn rfc7757_s3_keys_hold_the_kind_then_the_prefix() {
        let k = key(KIND_EAM4, &[192, 0, 2, 0], 24);
        let data = k.data();
        assert_eq!((k.prefix_len(), &data[..5]), (32, &[4, 192, 0, 2, 0][..]));
        assert_eq!(key(KIND_CONFIG, &[], 0).prefix_len(), 8);
    }
}
