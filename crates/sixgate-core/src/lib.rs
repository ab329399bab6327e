//! sixgate's pure translation core.
//!
//! No I/O, no threads, no allocation per packet. Every data plane (TUN, AF_XDP, the
//! offline pcap mode), the tests and the fuzzers drive the same entry point:
//! [`Translator::translate`], which turns one packet into a [`Verdict`].
//!
//! Layout follows the RFCs:
//! - [`checksum`]: RFC 1071 sums and RFC 1624 incremental updates;
//! - [`packet`]: zero-copy header views and the headroom buffer;
//! - [`addr`]: RFC 6052 prefixes, RFC 7757 EAM, RFC 6791 pools;
//! - [`rfc7915`]: the IP/ICMP translation algorithm itself;
//! - [`nat64`]: stateful NAT64 (RFC 6146) state, on when `Config::nat64` is set;
//! - [`mapt`]: MAP-T (RFC 7599) BR and CE, on when `Config::mapt` is set;
//! - [`icmp_error`], [`rate_limit`], [`ipv4_id`]: what the translator owes on the side.

pub mod addr;
pub mod checksum;
pub mod config;
pub mod drop_hint;
pub mod fastpath;
mod hash;
pub mod icmp_error;
pub mod ipv4_id;
pub mod mapt;
pub mod nat64;
pub mod packet;
pub mod rate_limit;
pub mod reconfigure;
pub mod rfc4884;
pub mod rfc7915;
pub mod translator;
pub mod verdict;

pub use config::Config;
pub use packet::{HEADROOM, PacketBuf, Scratch};
pub use translator::Translator;
pub use verdict::{Counters, DropReason, Verdict};
