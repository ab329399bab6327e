//! RFC 7915: the IP/ICMP translation algorithm.
//!
//! - [`v4_to_v6`]: §4, translating from IPv4 to IPv6;
//! - [`v6_to_v4`]: §5, translating from IPv6 to IPv4;
//! - [`icmp_map`]: the §4.2 and §5.2 ICMP type/code tables;
//! - [`mtu`]: Packet Too Big / Fragmentation Needed MTU arithmetic (§4.2, §5.2, §6).

pub mod icmp_map;
pub mod mtu;
pub mod v4_to_v6;
pub mod v6_to_v4;
