//! sixgate's DNS64 (RFC 6147): a forwarding DNS server that synthesizes AAAA
//! records from A records for names that have none, so IPv6-only clients reach
//! IPv4-only servers through a NAT64 (or SIIT) translator using the same
//! RFC 6052 prefix. It also answers `ipv4only.arpa` (RFC 7050, RFC 8880) so
//! clients can discover that prefix.
//!
//! It is a small forwarder of its own over `hickory-proto`'s message format,
//! not `hickory-server` and `hickory-resolver`: what DNS64 needs is to see the
//! upstream's raw answer (RCODE, SOA, CNAME chain, CD/AD bits) for §5.1 and
//! §5.5, which a full resolver hides behind its own caching and validation, and
//! to own the listeners' bad-input handling and counters.
//!
//! - [`synth`]: RFC 6147 §5.1 (when to synthesize, how), pure.
//! - [`ptr`]: §5.3.1, PTR under the prefixes.
//! - [`ipv4only`]: RFC 7050 / RFC 8880 `ipv4only.arpa`, the answering side;
//!   [`plat_discovery`]: the asking side, a CLAT's RFC 7050 discovery and refresh.
//! - `cache`, `upstream`: the bounded cache and the forwarder.
//! - [`resolve`]: one query to one reply; [`server`]: UDP and TCP listeners.
//! - [`stats`]: counters for metrics.

pub mod cache;
pub mod ipv4only;
pub mod plat_discovery;
pub mod ptr;
pub mod resolve;
pub mod server;
pub mod stats;
pub mod synth;
mod upstream;

pub use server::{Server, ServerThread, serve_until_signal};
pub use stats::{Stats, StatsSnapshot};
