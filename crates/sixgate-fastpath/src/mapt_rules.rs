//! The MAP-T BR's Mapping Rules (RFC 7597 §5) in the program's configuration
//! trie (bpf/config_maps.h, read by bpf/mapt_br.h): each rule whole, once by
//! its IPv6 prefix and once by its IPv4 prefix.

use sixgate_core::Config;
use sixgate_core::fastpath::MAPT_RULES_MAX;
use sixgate_core::mapt::MapRule;

use crate::xlat::{KIND_MAPT4, KIND_MAPT6, Trie, XlatVal, key};

/// `struct mapt_rule` of bpf/config_maps.h.
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

/// Put `cfg`'s rules (a BR's FMRs; none without MAP-T) into a new
/// configuration trie, each by both its prefixes (kinds `XLAT_MAPT6`,
/// `XLAT_MAPT4`), so that they change with the rest of the configuration.
pub(crate) fn insert(t: &mut Trie, cfg: &Config) -> Result<(), String> {
    let Some(m) = &cfg.mapt else {
        return Ok(());
    };
    if m.fmrs.len() > MAPT_RULES_MAX {
        return Err(format!(
            "{} MAP-T rules, the fast path holds at most {MAPT_RULES_MAX}",
            m.fmrs.len()
        ));
    }
    let err = |e: aya::maps::MapError| format!("configuration map (MAP-T rules): {e}");
    for r in &m.fmrs {
        let val = XlatVal::of(&MaptRuleVal::of(r));
        let (v6, r6) = r.ipv6_prefix();
        t.insert(&key(KIND_MAPT6, &v6.octets()[..8], r6), val, 0)
            .map_err(err)?;
        let (v4, l4) = r.ipv4_prefix();
        t.insert(&key(KIND_MAPT4, &v4.octets(), l4), val, 0)
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `struct mapt_rule` in bpf/config_maps.h.
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
