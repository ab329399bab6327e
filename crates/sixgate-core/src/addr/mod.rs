//! Address mapping: RFC 6052 prefixes, RFC 7757 EAM, RFC 6052 §3.1 scope rules, and
//! RFC 7050 prefix discovery (the pure part).

pub mod eam;
pub mod ipv4_scope;
pub mod mapper;
pub mod rfc6052;
pub mod rfc7050;

pub use eam::{Eam, EamError, EamTable};
pub use ipv4_scope::is_non_global;
pub use mapper::{MapError, Mapper};
pub use rfc6052::{LOCAL_USE_PREFIX, PrefixError, Rfc6052Prefix, WELL_KNOWN_PREFIX};
