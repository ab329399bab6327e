//! RFC 7597 §5: a Mapping Rule, the one formula that ties an IPv6 prefix, an IPv4
//! prefix and a port set together.
//!
//! A rule is (Rule IPv6 prefix, Rule IPv4 prefix, EA-bits length, PSID offset a).
//! The EA (Embedded Address) bits follow the rule IPv6 prefix in a CE's End-user
//! IPv6 prefix: first the IPv4 suffix (p = 32 − IPv4 prefix length bits), then the
//! PSID (k = EA − p bits). The PSID picks the CE's share of the 16-bit port space
//! (§5.1), and the MAP IPv6 address (§5.2) spells the IPv4 address and PSID out
//! again in its interface identifier.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// RFC 7597 §5.1: the default PSID offset (ports 0–1023 belong to no CE).
pub const DEFAULT_PSID_OFFSET: u8 = 6;

/// A validated Mapping Rule (a BMR or an FMR: both have this shape).
///
/// The numbers every packet needs (masks, k, m, where the EA bits sit) are worked
/// out once, in [`MapRule::new`]: they follow from the four parameters, so two
/// rules with the same parameters are still equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapRule {
    /// Rule IPv6 prefix, host bits clear.
    v6: u128,
    /// Its length r.
    v6_len: u8,
    /// Rule IPv4 prefix, host bits clear.
    v4: u32,
    /// Its length.
    v4_len: u8,
    /// EA-bits length o.
    ea: u8,
    /// PSID offset a.
    a: u8,
    /// `mask128(r)`.
    v6_mask: u128,
    /// `mask32(IPv4 prefix length)`.
    v4_mask: u32,
    /// §5.1: PSID length k.
    k: u8,
    /// §5.1: m = 16 − a − k.
    m: u8,
    /// The EA bits end here: 128 − (r + o).
    ea_shift: u8,
}

/// Why a rule's numbers do not fit together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// A prefix length beyond the address size.
    PrefixLength,
    /// §5.2: the End-user prefix (r + o) must not pass /64, and EA ≤ 48.
    EaTooLong,
    /// §5.2: the EA bits must at least hold the IPv4 suffix (no prefix sharing of
    /// IPv4 prefixes shorter than /32 per CE here).
    EaTooShort,
    /// §5.1: PSID offset + PSID length must fit in 16 bits.
    PsidTooLong,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleError::PrefixLength => "a prefix length is longer than the address",
            RuleError::EaTooLong => {
                "ipv6_prefix length + ea_bits must be at most 64 and ea_bits at most 48 \
                 (RFC 7597 §5.2)"
            }
            RuleError::EaTooShort => {
                "ea_bits must be at least the IPv4 suffix length (32 - ipv4_prefix length; \
                 RFC 7597 §5.2)"
            }
            RuleError::PsidTooLong => {
                "psid_offset + PSID length (ea_bits - IPv4 suffix length) must be at most 16 \
                 (RFC 7597 §5.1)"
            }
        })
    }
}

impl std::error::Error for RuleError {}

fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

fn mask32(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    }
}

impl MapRule {
    /// A rule from its four parameters, checked (§5, §5.1, §5.2).
    pub fn new(
        v6: Ipv6Addr,
        v6_len: u8,
        v4: Ipv4Addr,
        v4_len: u8,
        ea_bits: u8,
        psid_offset: u8,
    ) -> Result<Self, RuleError> {
        if v6_len > 128 || v4_len > 32 || psid_offset > 16 {
            return Err(RuleError::PrefixLength);
        }
        if ea_bits > 48 || u16::from(v6_len) + u16::from(ea_bits) > 64 {
            return Err(RuleError::EaTooLong);
        }
        let p = 32 - v4_len;
        if ea_bits < p {
            return Err(RuleError::EaTooShort);
        }
        let k = ea_bits - p;
        if k > 16 || (k > 0 && psid_offset + k > 16) {
            return Err(RuleError::PsidTooLong);
        }
        let a = if k == 0 { 0 } else { psid_offset };
        Ok(MapRule {
            v6: u128::from(v6) & mask128(v6_len),
            v6_len,
            v4: u32::from(v4) & mask32(v4_len),
            v4_len,
            ea: ea_bits,
            a,
            v6_mask: mask128(v6_len),
            v4_mask: mask32(v4_len),
            k,
            m: 16 - a - k,
            ea_shift: 128 - (v6_len + ea_bits),
        })
    }

    /// Rule IPv6 prefix and length.
    pub fn ipv6_prefix(&self) -> (Ipv6Addr, u8) {
        (Ipv6Addr::from(self.v6), self.v6_len)
    }
    /// Rule IPv4 prefix and length.
    pub fn ipv4_prefix(&self) -> (Ipv4Addr, u8) {
        (Ipv4Addr::from(self.v4), self.v4_len)
    }
    /// EA-bits length o.
    pub fn ea_bits(&self) -> u8 {
        self.ea
    }
    /// PSID offset a (0 when the rule has no PSID).
    pub fn psid_offset(&self) -> u8 {
        self.a
    }
    /// §5.2: IPv4 suffix length p.
    pub fn suffix_len(&self) -> u8 {
        32 - self.v4_len
    }
    /// §5.1: PSID length k (0: every CE owns a whole IPv4 address).
    #[inline]
    pub fn psid_len(&self) -> u8 {
        self.k
    }
    /// §5.1: m, the number of contiguous-port bits.
    #[inline]
    fn m(&self) -> u8 {
        self.m
    }
    /// Length of the End-user IPv6 prefix a CE gets from this rule (r + o).
    pub fn end_user_len(&self) -> u8 {
        self.v6_len + self.ea
    }
    /// Ports one PSID owns.
    pub fn ports_per_psid(&self) -> u32 {
        let sets = if self.a == 0 { 1 } else { (1u32 << self.a) - 1 };
        sets << self.m()
    }

    /// Whether `v6` lies under the rule IPv6 prefix.
    #[inline]
    pub fn contains_v6(&self, v6: u128) -> bool {
        v6 & self.v6_mask == self.v6
    }
    /// Whether `v4` lies in the rule IPv4 prefix.
    #[inline]
    pub fn contains_v4(&self, v4: u32) -> bool {
        v4 & self.v4_mask == self.v4
    }

    /// §5.1: the PSID that owns `port`; `None` for the ports no PSID owns (A = 0
    /// when a > 0: 0–1023 with the default offset).
    #[inline]
    pub fn psid_of_port(&self, port: u16) -> Option<u16> {
        let k = self.k;
        if k == 0 {
            return Some(0);
        }
        // A = port >> (16 − a) must not be 0 (u32: a = 0 shifts by 16, no overflow).
        if self.a > 0 && u32::from(port) >> (16 - self.a) == 0 {
            return None;
        }
        let psid = (u32::from(port) >> self.m) & ((1 << k) - 1);
        Some(psid as u16)
    }

    /// §5.1: whether `port` is in `psid`'s port set.
    #[inline]
    pub fn port_in_set(&self, port: u16, psid: u16) -> bool {
        self.psid_of_port(port) == Some(psid)
    }

    /// §5.1: the port set of `psid` as its contiguous ranges, in order: for each
    /// A (1 .. 2^a − 1 when a > 0, else just 0), the 2^m ports
    /// `(A << (16 − a)) | (PSID << m) | j`.
    pub fn port_ranges(&self, psid: u16) -> impl Iterator<Item = (u16, u16)> + '_ {
        let m = u32::from(self.m());
        let k = u32::from(self.psid_len());
        let a = u32::from(self.a);
        let first_a = if a == 0 { 0 } else { 1 };
        let psid = u32::from(psid) & ((1u32 << k) - 1);
        (first_a..(1u32 << a)).map(move |big_a| {
            let start = if a == 0 { 0 } else { big_a << (16 - a) } | psid << m;
            (start as u16, (start + (1 << m) - 1) as u16)
        })
    }

    /// §5.2: the EA bits of (`v4`, `psid`): IPv4 suffix then PSID.
    fn ea_value(&self, v4: u32, psid: u16) -> u64 {
        let k = u32::from(self.k);
        // The host bits of the IPv4 prefix are the suffix (none when p = 0).
        let suffix = u64::from(v4 & !self.v4_mask);
        let psid = u64::from(psid) & ((1u64 << k) - 1);
        (suffix << k) | psid
    }

    /// §5.2: the End-user IPv6 prefix (length [`Self::end_user_len`]) of the CE
    /// with IPv4 address `v4` (in the rule's prefix) and `psid`.
    #[inline]
    pub fn end_user_prefix(&self, v4: u32, psid: u16) -> u128 {
        let ea = u128::from(self.ea_value(v4, psid));
        self.v6 | if self.ea == 0 { 0 } else { ea << self.ea_shift }
    }

    /// §5.2: the MAP IPv6 address: End-user prefix, subnet ID 0, and the
    /// interface identifier 16 zero bits, the IPv4 address, the PSID
    /// (right-aligned, RFC 7599 §6 uses the same form).
    #[inline]
    pub fn map_address(&self, v4: u32, psid: u16) -> u128 {
        let psid = (u32::from(psid) & ((1u32 << self.psid_len()) - 1)) as u16;
        self.end_user_prefix(v4, psid) | u128::from(v4) << 16 | u128::from(psid)
    }

    /// §5.2 read backwards: the IPv4 address and PSID an address under the rule
    /// prefix stands for, from its EA bits. `None` when the interface identifier
    /// disagrees with them (a spoofed or malformed MAP address).
    #[inline]
    pub fn decode(&self, v6: u128) -> Option<(u32, u16)> {
        if !self.contains_v6(v6) {
            return None;
        }
        self.decode_under(v6)
    }

    /// [`Self::decode`] of an address already known to be under the rule
    /// prefix (the rule look-up checked it).
    #[inline]
    pub(crate) fn decode_under(&self, v6: u128) -> Option<(u32, u16)> {
        let (v4, psid) = self.decode_ea(v6);
        let iid = v6 as u64;
        (iid == u64::from(v4) << 16 | u64::from(psid)).then_some((v4, psid))
    }

    /// The IPv4 address and PSID the EA bits of `v6` give (no interface-ID check):
    /// what a CE learns from its End-user prefix.
    #[inline]
    pub fn decode_ea(&self, v6: u128) -> (u32, u16) {
        let k = u32::from(self.k);
        // o ≤ 48 and r + o ≤ 64: the EA bits lie in the upper 64 bits, and
        // `ea_shift` ≥ 64.
        let ea = if self.ea == 0 {
            0
        } else {
            ((v6 >> self.ea_shift) as u64) & ((1u64 << self.ea) - 1)
        };
        let psid = (ea & ((1 << k) - 1)) as u16;
        // p = 0: the EA bits are all PSID and `ea >> k` is 0.
        let suffix = (ea >> k) as u32;
        (self.v4 | suffix, psid)
    }

    /// Whether two rules claim some address in common, on either side (their
    /// IPv6 or their IPv4 prefixes nest), which makes a rule set ambiguous.
    pub fn overlaps(&self, other: &MapRule) -> bool {
        let l6 = self.v6_len.min(other.v6_len);
        let same6 = (self.v6 ^ other.v6) & mask128(l6) == 0;
        let l4 = self.v4_len.min(other.v4_len);
        let same4 = (self.v4 ^ other.v4) & mask32(l4) == 0;
        same6 || same4
    }
}

impl fmt::Display for MapRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} <-> {}/{} ea_bits {} psid_offset {}",
            Ipv6Addr::from(self.v6),
            self.v6_len,
            Ipv4Addr::from(self.v4),
            self.v4_len,
            self.ea,
            self.a
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v6: &str, r: u8, v4: &str, l: u8, ea: u8, a: u8) -> MapRule {
        MapRule::new(v6.parse().unwrap(), r, v4.parse().unwrap(), l, ea, a).unwrap()
    }
    fn v4(s: &str) -> u32 {
        u32::from(s.parse::<Ipv4Addr>().unwrap())
    }
    fn v6(s: &str) -> u128 {
        u128::from(s.parse::<Ipv6Addr>().unwrap())
    }

    /// RFC 7597 Appendix A, Example 1 (and Example 3's MAP address): BMR
    /// 2001:db8::/40 ↔ 192.0.2.0/24, 16 EA bits, a = 6; End-user prefix
    /// 2001:db8:12:3400::/56 gives 192.0.2.18, PSID 0x34, ports 1232–1235, …,
    /// 64720–64723.
    #[test]
    fn rfc7597_appendix_a_example_1() {
        let r = rule("2001:db8::", 40, "192.0.2.0", 24, 16, 6);
        assert_eq!(r.psid_len(), 8);
        assert_eq!(r.end_user_len(), 56);
        let (a, psid) = r.decode_ea(v6("2001:db8:12:3400::"));
        assert_eq!((a, psid), (v4("192.0.2.18"), 0x34));
        let ranges: Vec<_> = r.port_ranges(psid).collect();
        assert_eq!(ranges.len(), 63);
        assert_eq!(ranges[0], (1232, 1235));
        assert_eq!(ranges[1], (2256, 2259));
        assert_eq!(ranges[62], (64720, 64723));
        assert_eq!(r.ports_per_psid(), 252);
        assert_eq!(r.end_user_prefix(a, psid), v6("2001:db8:12:3400::"));
        let map = r.map_address(a, psid);
        assert_eq!(map, v6("2001:db8:12:3400:0:c000:212:34"));
        assert_eq!(r.decode(map), Some((a, psid)));
    }

    /// Lencse & Nagy 2022's example domain: BMR 2001:db8:ce::/51 ↔ 192.0.2.0/24,
    /// 13 EA bits, a = 0: PSID 5 bits, 2048-port sets. The CE with 192.0.2.8 and
    /// PSID 27 owns 55296–57343 and the End-user prefix 2001:db8:ce:11b::/64.
    #[test]
    fn rfc7597_s5_1_lencse_nagy_example() {
        let r = rule("2001:db8:ce::", 51, "192.0.2.0", 24, 13, 0);
        assert_eq!(r.psid_len(), 5);
        assert_eq!(r.ports_per_psid(), 2048);
        assert_eq!(r.port_ranges(27).collect::<Vec<_>>(), vec![(55296, 57343)]);
        assert_eq!(r.end_user_len(), 64);
        assert_eq!(
            r.end_user_prefix(v4("192.0.2.8"), 27),
            v6("2001:db8:ce:11b::")
        );
        assert_eq!(r.decode_ea(v6("2001:db8:ce:11b::")), (v4("192.0.2.8"), 27));
        assert_eq!(r.psid_of_port(55296), Some(27));
        assert_eq!(r.psid_of_port(57343), Some(27));
        assert_eq!(r.psid_of_port(57344), Some(28));
        // a = 0: port 0 belongs to PSID 0.
        assert_eq!(r.psid_of_port(0), Some(0));
    }

    /// §5.1: with a = 6, the ports 0–1023 (A = 0) belong to no PSID.
    #[test]
    fn rfc7597_s5_1_offset_excludes_system_ports() {
        let r = rule("2001:db8::", 40, "192.0.2.0", 24, 16, 6);
        for p in [0u16, 80, 1023] {
            assert_eq!(r.psid_of_port(p), None);
        }
        assert_eq!(r.psid_of_port(1024), Some(0));
    }

    /// §5.2: a full IPv4 address per CE (k = 0) and an address shared by all.
    #[test]
    fn rfc7597_s5_2_no_psid() {
        let r = rule("2001:db8:100::", 40, "198.51.100.0", 24, 8, 6);
        assert_eq!(r.psid_len(), 0);
        assert_eq!(r.psid_offset(), 0);
        assert_eq!(r.psid_of_port(5), Some(0));
        assert_eq!(r.port_ranges(0).collect::<Vec<_>>(), vec![(0, 65535)]);
        let m = r.map_address(v4("198.51.100.7"), 0);
        assert_eq!(m, v6("2001:db8:107::c633:6407:0"));
        assert_eq!(r.decode(m), Some((v4("198.51.100.7"), 0)));
    }

    #[test]
    fn rfc7597_s5_2_rejects_inconsistent_parameters() {
        let n = |r, l, ea, a| {
            MapRule::new(
                "2001:db8::".parse().unwrap(),
                r,
                "192.0.2.0".parse().unwrap(),
                l,
                ea,
                a,
            )
        };
        assert_eq!(n(40, 24, 7, 6), Err(RuleError::EaTooShort));
        assert_eq!(n(60, 24, 13, 0), Err(RuleError::EaTooLong));
        assert_eq!(n(8, 0, 49, 0), Err(RuleError::EaTooLong));
        assert_eq!(n(40, 24, 20, 6), Err(RuleError::PsidTooLong));
        assert_eq!(n(129, 24, 8, 6), Err(RuleError::PrefixLength));
        assert!(n(40, 24, 18, 6).is_ok());
    }

    /// §5.2: an interface identifier that disagrees with the EA bits is refused.
    #[test]
    fn rfc7597_s5_2_decode_checks_interface_id() {
        let r = rule("2001:db8:ce::", 51, "192.0.2.0", 24, 13, 0);
        let good = r.map_address(v4("192.0.2.8"), 27);
        assert_eq!(r.decode(good), Some((v4("192.0.2.8"), 27)));
        assert_eq!(r.decode(good ^ 1), None);
        assert_eq!(r.decode(good ^ (1 << 20)), None);
        assert_eq!(r.decode(v6("2001:db9::1")), None);
    }

    #[test]
    fn overlap_on_either_side() {
        let a = rule("2001:db8:ce::", 51, "192.0.2.0", 24, 13, 0);
        let b = rule("2001:db8:cf::", 51, "192.0.2.128", 25, 12, 0);
        let c = rule("2001:db8:cf::", 51, "198.51.100.0", 24, 13, 0);
        assert!(a.overlaps(&b));
        assert!(!a.overlaps(&c));
        assert!(b.overlaps(&c));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn any_rule() -> impl Strategy<Value = MapRule> {
            (16u8..=32, 0u8..=16, 0u8..=10, any::<u32>(), any::<u128>()).prop_filter_map(
                "consistent",
                |(v4_len, k, a, v4, v6)| {
                    let ea = (32 - v4_len) + k;
                    let r6 = 64u8.checked_sub(ea)?.min(48);
                    MapRule::new(Ipv6Addr::from(v6), r6, Ipv4Addr::from(v4), v4_len, ea, a).ok()
                },
            )
        }

        proptest! {
            /// §5.2: address → (IPv4, PSID) → address.
            #[test]
            fn map_address_round_trip(r in any_rule(), host in any::<u32>(), psid in any::<u16>()) {
                let (p4, l4) = r.ipv4_prefix();
                let v4 = u32::from(p4) | if l4 == 32 { 0 } else { host >> l4 };
                let k = r.psid_len();
                let psid = (u32::from(psid) & ((1u32 << k) - 1)) as u16;
                let a = r.map_address(v4, psid);
                prop_assert!(r.contains_v6(a));
                prop_assert_eq!(r.decode(a), Some((v4, psid)));
                prop_assert_eq!(r.map_address(v4, psid), a);
            }

            /// §5.1: every port belongs to at most one PSID, and to the one
            /// `psid_of_port` names; only A = 0 ports belong to none.
            #[test]
            fn every_port_has_one_psid(r in any_rule(), port in any::<u16>()) {
                match r.psid_of_port(port) {
                    Some(psid) => {
                        prop_assert!(r.port_in_set(port, psid));
                        let owners = r.port_ranges(psid)
                            .filter(|&(lo, hi)| lo <= port && port <= hi)
                            .count();
                        prop_assert_eq!(owners, 1);
                    }
                    None => prop_assert!(r.psid_offset() > 0 && port >> (16 - r.psid_offset()) == 0),
                }
            }
        }
    }
}
