//! Upper-layer header facts the translator needs: where each checksum lives.

use crate::packet::ipv6::nh;

/// UDP header length.
pub const UDP_HEADER_LEN: usize = 8;
/// Minimum TCP header length.
pub const TCP_HEADER_LEN: usize = 20;
/// ICMP / ICMPv6 header length (type, code, checksum, 4 bytes of rest-of-header).
pub const ICMP_HEADER_LEN: usize = 8;

/// Offset of the checksum field within the upper-layer header of `proto`.
pub fn checksum_offset(proto: u8) -> Option<usize> {
    match proto {
        nh::TCP => Some(16),
        nh::UDP => Some(6),
        nh::ICMP | nh::ICMPV6 => Some(2),
        _ => None,
    }
}
