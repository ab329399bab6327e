//! The Router Advertisement (RFC 4861 §4.2) that carries the PREF64 option.
//!
//! ```text
//! |     Type      |     Code      |          Checksum             |
//! | Cur Hop Limit |M|O|  Reserved |       Router Lifetime         |
//! |                         Reachable Time                        |
//! |                          Retrans Timer                        |
//! |   Options ...
//! ```

use super::option;

/// RFC 4861 §4.2: Type 134.
pub const ROUTER_ADVERTISEMENT: u8 = 134;
/// RFC 4861 §4.1: Type 133.
pub const ROUTER_SOLICITATION: u8 = 133;
/// The RA's size: 16 octets of header, then the PREF64 option.
pub const SIZE: usize = 16 + option::SIZE;

/// An RA with `router_lifetime` (0: not a default router) and one PREF64 option.
/// Cur Hop Limit, Reachable Time and Retrans Timer are 0, "unspecified" (§4.2),
/// so hosts keep their own values; M and O are clear. The checksum is left 0: the
/// kernel fills it in for ICMPv6 raw sockets (RFC 3542 §3.1).
pub fn router_advertisement(router_lifetime: u16, pref64: &[u8; option::SIZE]) -> [u8; SIZE] {
    let mut ra = [0u8; SIZE];
    ra[0] = ROUTER_ADVERTISEMENT;
    ra[6..8].copy_from_slice(&router_lifetime.to_be_bytes());
    ra[16..].copy_from_slice(pref64);
    ra
}

/// RFC 4861 §6.1.1, the checks a raw socket leaves to us: ICMP Code 0 and at
/// least the 8 octets of a Router Solicitation. (The hop limit of 255 is not
/// checked: an answer is one multicast RA, no more than the next periodic one.)
pub fn is_router_solicitation(icmp: &[u8]) -> bool {
    icmp.len() >= 8 && icmp[0] == ROUTER_SOLICITATION && icmp[1] == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4861_s4_2_header_then_rfc8781_option() {
        let o = option::pref64_option("2001:db8:64::".parse().unwrap(), 96, 1800).unwrap();
        let ra = router_advertisement(0, &o);
        assert_eq!(ra[..16], [134, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(ra[16..], o);
        let with_router = router_advertisement(1800, &o);
        assert_eq!(with_router[6..8], 1800u16.to_be_bytes());
    }

    #[test]
    fn rfc4861_s6_1_1_solicitation_checks() {
        assert!(is_router_solicitation(&[133, 0, 0, 0, 0, 0, 0, 0]));
        assert!(!is_router_solicitation(&[133, 1, 0, 0, 0, 0, 0, 0]));
        assert!(!is_router_solicitation(&[133, 0, 0, 0]));
        assert!(!is_router_solicitation(&[134, 0, 0, 0, 0, 0, 0, 0]));
    }
}
