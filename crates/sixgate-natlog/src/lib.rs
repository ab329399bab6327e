//! NAT event logging's records and wire formats (RFC 6888 REQ-12, RFC 7422):
//! what answers "which subscriber had public address A, port P, at time T?".
//! Pure: no I/O, no threads. The data-plane runtime's exporter thread turns the
//! workers' [`sixgate_core::nat64::Event`]s into [`NatRecord`]s (wall-clock
//! time) and hands them to one encoder per collector:
//!
//! - [`ipfix`]: IPFIX (RFC 7011) with the RFC 8158 NAT information elements;
//! - [`netflow9`]: NetFlow v9 (RFC 3954) with the NEL / draft numbering that
//!   Cisco and Juniper collectors expect;
//! - [`syslog`]: RFC 5424 lines, framed for UDP (RFC 5426) or TCP (RFC 6587);
//! - [`json`]: one JSON object per line;
//! - [`time`]: RFC 3339 timestamps from Unix milliseconds.

mod flow;
pub mod ipfix;
pub mod json;
pub mod netflow9;
mod record;
pub mod syslog;
mod text;
pub mod time;
pub mod whois;

pub use record::{NatRecord, RecordKind};
