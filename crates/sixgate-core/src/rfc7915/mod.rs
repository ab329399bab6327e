//! RFC 7915: the IP/ICMP translation algorithm.
//!
//! - [`v4_to_v6`]: §4.1, IPv4 headers into IPv6 headers;
//! - [`icmp_v4_to_v6`]: §4.2–§4.3, ICMPv4 errors and the packets they quote;
//! - [`fragment`]: §4 / §1.2, fragmenting DF=0 packets for the IPv6 side;
//! - [`v6_to_v4`]: §5.1, IPv6 headers into IPv4 headers;
//! - [`icmp_v6_to_v4`]: §5.2–§5.3, ICMPv6 errors and the packets they quote;
//! - [`icmp_map`]: the §4.2 and §5.2 type/code tables;
//! - [`icmp_informational`]: §4.2 / §5.2 Echo messages, outer and quoted;
//! - [`icmp_fragments`]: §4.2 / §5.2 on a fragmented Echo (its first fragment
//!   waits for the message's length);
//! - [`mtu`]: Packet Too Big ↔ Fragmentation Needed arithmetic (§4.2, §5.2, §6);
//! - [`transport`]: §4.5 / §5.5, TCP and UDP checksums.

pub mod fragment;
pub mod icmp_fragments;
pub mod icmp_informational;
pub mod icmp_map;
pub(crate) mod icmp_v4_to_v6;
pub(crate) mod icmp_v6_to_v4;
pub mod mtu;
pub mod transport;
pub mod v4_to_v6;
pub mod v6_to_v4;
