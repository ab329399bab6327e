//! The MAP-T BR's Mapping Rules (RFC 7597 §5) in the program's two LPM tries
//! (bpf/mapt_br.h): `mapt6` keyed by the rule IPv6 prefix, `mapt4` by the
//! rule IPv4 prefix, each holding the whole rule.

use aya::Ebpf;
use aya::maps::lpm_trie::{Key, LpmTrie};
use sixgate_core::Config;
use sixgate_core::mapt::MapRule;

/// `struct mapt_rule` of bpf/mapt_br.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MaptRuleVal {
    /// The rule IPv6 prefix's upper 64 bits (r + o ≤ 64: all of it).
    v6: u64,
    v4: u32,
    v4_len: u8,
    ea: u8,
    k: u8,
    a: u8,
    m: u8,
    /// Where the EA bits end in the upper 64 bits: 64 − (r + o).
    ea_shift: u8,
    _pad: [u8; 6],
}
// SAFETY: integers and a byte array, repr(C), padding spelt out.
unsafe impl aya::Pod for MaptRuleVal {}

impl MaptRuleVal {
    fn of(r: &MapRule) -> MaptRuleVal {
        let (v6, r6) = r.ipv6_prefix();
        let (v4, v4_len) = r.ipv4_prefix();
        let (k, a) = (r.psid_len(), r.psid_offset());
        MaptRuleVal {
            v6: (u128::from(v6) >> 64) as u64,
            v4: u32::from(v4),
            v4_len,
            ea: r.ea_bits(),
            k,
            a,
            // §5.1: MapRule::new checked a + k ≤ 16.
            m: 16 - a - k,
            // MapRule::new checked r + o ≤ 64.
            ea_shift: 64 - (r6 + r.ea_bits()),
            _pad: [0; 6],
        }
    }
}

fn trie6(
    ebpf: &mut Ebpf,
) -> Result<LpmTrie<&mut aya::maps::MapData, [u8; 8], MaptRuleVal>, String> {
    LpmTrie::try_from(ebpf.map_mut("mapt6").ok_or("no map mapt6")?)
        .map_err(|e| format!("mapt6 map: {e}"))
}

fn trie4(
    ebpf: &mut Ebpf,
) -> Result<LpmTrie<&mut aya::maps::MapData, [u8; 4], MaptRuleVal>, String> {
    LpmTrie::try_from(ebpf.map_mut("mapt4").ok_or("no map mapt4")?)
        .map_err(|e| format!("mapt4 map: {e}"))
}

/// Put `cfg`'s rules (a BR's FMRs; none without MAP-T) into the empty tries.
pub(crate) fn fill(ebpf: &mut Ebpf, cfg: &Config) -> Result<(), String> {
    let Some(m) = &cfg.mapt else {
        return Ok(());
    };
    for r in &m.fmrs {
        let val = MaptRuleVal::of(r);
        let (v6, r6) = r.ipv6_prefix();
        let mut k6 = [0u8; 8];
        k6.copy_from_slice(&v6.octets()[..8]);
        trie6(ebpf)?
            .insert(&Key::new(u32::from(r6), k6), val, 0)
            .map_err(|e| format!("mapt6 map: {e}"))?;
        let (v4, l4) = r.ipv4_prefix();
        trie4(ebpf)?
            .insert(&Key::new(u32::from(l4), v4.octets()), val, 0)
            .map_err(|e| format!("mapt4 map: {e}"))?;
    }
    Ok(())
}

/// Empty both tries.
pub(crate) fn clear(ebpf: &mut Ebpf) -> Result<(), String> {
    let mut t = trie6(ebpf)?;
    let keys: Vec<_> = t
        .keys()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("mapt6 map: {e}"))?;
    for k in keys {
        t.remove(&k).map_err(|e| format!("mapt6 map: {e}"))?;
    }
    let mut t = trie4(ebpf)?;
    let keys: Vec<_> = t
        .keys()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("mapt4 map: {e}"))?;
    for k in keys {
        t.remove(&k).map_err(|e| format!("mapt4 map: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `struct mapt_rule` in bpf/mapt_br.h.
    #[test]
    fn layout_matches_the_c_struct() {
        assert_eq!(core::mem::size_of::<MaptRuleVal>(), 24);
        assert_eq!(core::mem::offset_of!(MaptRuleVal, v4), 8);
        assert_eq!(core::mem::offset_of!(MaptRuleVal, ea_shift), 17);
    }

    /// RFC 7597 Appendix A, Example 1: 2001:db8::/40 ↔ 192.0.2.0/24, 16 EA
    /// bits, a = 6: k = 8, m = 2, the EA bits end 8 bits before bit 64.
    #[test]
    fn rfc7597_appendix_a_rule_as_the_program_reads_it() {
        let r = MapRule::new(
            "2001:db8::".parse().unwrap(),
            40,
            "192.0.2.0".parse().unwrap(),
            24,
            16,
            6,
        )
        .unwrap();
        let v = MaptRuleVal::of(&r);
        assert_eq!((v.k, v.a, v.m, v.ea_shift), (8, 6, 2, 8));
        assert_eq!(v.v6, 0x2001_0db8_0000_0000);
        assert_eq!(v.v4, 0xc000_0200);
    }
}
