//! MTU arithmetic for Packet Too Big ↔ Fragmentation Needed (RFC 7915 §4.2, §5.2, §6).

/// IPv6 minimum link MTU (RFC 8200 §5).
pub const IPV6_MIN_MTU: u32 = 1280;
/// IPv4 minimum datagram every host must accept unfragmented (RFC 791).
pub const IPV4_MIN_MTU: u32 = 68;

/// RFC 7915 §4.2: ICMPv4 Fragmentation Needed → ICMPv6 Packet Too Big MTU.
///
/// `mtu4` is the field from the ICMPv4 message; zero means the router predates
/// RFC 1191, so the greatest plateau below the quoted packet's Total Length is used.
/// The result is `max(1280, mtu + 20)`; [`frag_needed_to_ptb_links`] adds the
/// translator's own links.
pub fn frag_needed_to_ptb(mtu4: u16, inner_total_len: u16, plateaus: &[u16]) -> u32 {
    let mtu = if mtu4 == 0 {
        plateau_below(inner_total_len, plateaus)
    } else {
        mtu4
    };
    (u32::from(mtu) + 20).max(IPV6_MIN_MTU)
}

/// RFC 7915 §4.2: "minimum(advertised MTU+20, MTU_of_IPv6_nexthop,
/// (MTU_of_IPv4_nexthop)+20)", each link counted where its MTU is configured
/// (`None`: the operating system's, unknown here), never below 1280.
pub fn frag_needed_to_ptb_links(
    mtu4: u16,
    inner_total_len: u16,
    plateaus: &[u16],
    ipv6_mtu: Option<u16>,
    ipv4_mtu: Option<u16>,
) -> u32 {
    let mut mtu = frag_needed_to_ptb(mtu4, inner_total_len, plateaus);
    if let Some(m) = ipv6_mtu {
        mtu = mtu.min(u32::from(m));
    }
    if let Some(m) = ipv4_mtu {
        mtu = mtu.min(u32::from(m) + 20);
    }
    mtu.max(IPV6_MIN_MTU)
}

/// RFC 1191 §5: the greatest plateau strictly less than `total_len`; the smallest
/// plateau if none is.
pub fn plateau_below(total_len: u16, plateaus: &[u16]) -> u16 {
    plateaus
        .iter()
        .copied()
        .filter(|&p| p < total_len)
        .max()
        .or_else(|| plateaus.iter().copied().min())
        .unwrap_or(IPV4_MIN_MTU as u16)
}

/// RFC 7915 §5.2: ICMPv6 Packet Too Big → ICMPv4 Fragmentation Needed MTU.
///
/// "The MTU field MUST be adjusted for the difference between the IPv4 and
/// IPv6 header sizes, taking into account whether or not the packet in error
/// includes a Fragment Header": 20 bytes, or 28 when the packet in error (the
/// quoted IPv6 packet) carried a Fragment header (its IPv4 form lacks both the
/// 20 bytes and the 8-byte Fragment header). Clamped to the 16-bit field and
/// the IPv4 minimum of 68.
pub fn ptb_to_frag_needed(mtu6: u32, inner_had_fragment_header: bool) -> u16 {
    let overhead = if inner_had_fragment_header { 28 } else { 20 };
    mtu6.saturating_sub(overhead).clamp(IPV4_MIN_MTU, 0xffff) as u16
}

/// RFC 7915 §5.2: "minimum(advertised MTU-20, MTU_of_IPv4_nexthop,
/// (MTU_of_IPv6_nexthop)-20)", the advertised MTU adjusted by
/// [`ptb_to_frag_needed`], each link counted where its MTU is configured
/// (`None`: the operating system's, unknown here), never below 68.
pub fn ptb_to_frag_needed_links(
    mtu6: u32,
    inner_had_fragment_header: bool,
    ipv4_mtu: Option<u16>,
    ipv6_mtu: Option<u16>,
) -> u16 {
    let mut mtu = ptb_to_frag_needed(mtu6, inner_had_fragment_header);
    if let Some(m) = ipv4_mtu {
        mtu = mtu.min(m);
    }
    if let Some(m) = ipv6_mtu {
        mtu = mtu.min(m.saturating_sub(20));
    }
    mtu.max(IPV4_MIN_MTU as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_MTU_PLATEAUS as P;

    #[test]
    fn rfc7915_s4_2_mtu_plus_20_floor_1280() {
        assert_eq!(frag_needed_to_ptb(1400, 1500, &P), 1420);
        assert_eq!(frag_needed_to_ptb(1260, 1500, &P), 1280);
        assert_eq!(frag_needed_to_ptb(576, 1500, &P), 1280);
        assert_eq!(frag_needed_to_ptb(9000, 9100, &P), 9020);
    }

    /// RFC 7915 §4.2 + RFC 1191 §7: MTU 0 uses the greatest plateau below Total Length.
    #[test]
    fn rfc7915_s4_2_mtu_zero_uses_rfc1191_plateaus() {
        assert_eq!(plateau_below(1500, &P), 1492);
        assert_eq!(plateau_below(1492, &P), 1006);
        assert_eq!(plateau_below(4400, &P), 4352);
        assert_eq!(plateau_below(60, &P), 68);
        assert_eq!(frag_needed_to_ptb(0, 1500, &P), 1512);
        assert_eq!(frag_needed_to_ptb(0, 1000, &P), 1280);
    }

    #[test]
    fn rfc7915_s4_2_mtu_minimum_of_advertised_and_both_links() {
        assert_eq!(frag_needed_to_ptb_links(1496, 1500, &P, None, None), 1516);
        assert_eq!(
            frag_needed_to_ptb_links(1496, 1500, &P, Some(1500), None),
            1500
        );
        assert_eq!(
            frag_needed_to_ptb_links(1496, 1500, &P, None, Some(1400)),
            1420
        );
        assert_eq!(
            frag_needed_to_ptb_links(1496, 1500, &P, Some(1300), Some(1400)),
            1300
        );
        assert_eq!(
            frag_needed_to_ptb_links(1496, 1500, &P, Some(1000), None),
            1280
        );
    }

    #[test]
    fn rfc7915_s5_2_mtu_minus_20_or_28() {
        assert_eq!(ptb_to_frag_needed(1500, false), 1480);
        assert_eq!(ptb_to_frag_needed(1500, true), 1472);
        assert_eq!(ptb_to_frag_needed(1280, false), 1260);
        assert_eq!(ptb_to_frag_needed(70_000, false), 65535);
        assert_eq!(ptb_to_frag_needed(10, false), 68);
    }

    /// RFC 7915 §5.2: "minimum(advertised MTU-20, MTU_of_IPv4_nexthop,
    /// (MTU_of_IPv6_nexthop)-20)" (28 for a packet in error with a Fragment
    /// header).
    #[test]
    fn rfc7915_s5_2_mtu_minimum_of_advertised_and_both_links() {
        assert_eq!(ptb_to_frag_needed_links(1280, false, None, None), 1260);
        assert_eq!(ptb_to_frag_needed_links(1280, true, None, None), 1252);
        assert_eq!(
            ptb_to_frag_needed_links(1500, false, Some(1400), None),
            1400
        );
        assert_eq!(
            ptb_to_frag_needed_links(1500, false, None, Some(1400)),
            1380
        );
        assert_eq!(
            ptb_to_frag_needed_links(1500, false, Some(1300), Some(1400)),
            1300
        );
        assert_eq!(ptb_to_frag_needed_links(1500, false, Some(40), None), 68);
    }
}
