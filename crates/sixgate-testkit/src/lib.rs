//! Test support for sixgate: packet builders and an independent packet oracle.
//!
//! This crate is a dev-dependency of the tests, benches and fuzz seeds. It does not
//! depend on `sixgate-core` on purpose: the builders use `etherparse` to lay out
//! headers and compute checksums, and the oracle ([`check`]) re-verifies every
//! checksum with its own RFC 1071 sum ([`csum`]), so a bug shared with the core's
//! checksum code cannot make a broken packet look right.
//!
//! ```
//! use sixgate_testkit::{Ip6, check};
//! let pkt = Ip6::new("2001:db8::1".parse().unwrap(), "64:ff9b::c000:201".parse().unwrap())
//!     .udp(4000, 53, 18);
//! let s = check(&pkt).unwrap();
//! assert_eq!(s.ports(), Some((4000, 53)));
//! assert_eq!(s.payload_len, 18);
//! ```

pub mod alloc_count;
pub mod builder;
pub mod csum;
pub mod oracle;

pub use builder::{Ext6, Ip4, Ip6, pattern, split_v4, split_v6, tcp_flag, truncate};
pub use oracle::{
    Checks, Family, Fragment, Inner, L4, Summary, check, check_structure, check_with,
};

/// IP protocol numbers used by the builders and the oracle.
pub mod proto {
    /// ICMP for IPv4.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 Hop-by-Hop Options.
    pub const HOP_BY_HOP: u8 = 0;
    /// IPv6 Routing header.
    pub const ROUTING: u8 = 43;
    /// IPv6 Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// IPv6 No Next Header.
    pub const NO_NEXT: u8 = 59;
    /// IPv6 Destination Options.
    pub const DEST_OPTS: u8 = 60;
}
