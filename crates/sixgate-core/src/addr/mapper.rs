//! Address translation for one packet: EAM first, then pool6 (RFC 7757 §3.3, RFC 7915 §4.1/§5.1).
// STUB: the addr helper replaces this file.

use super::{EamTable, Rfc6052Prefix};

/// Why an address could not be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// Not in the EAM table and not under pool6 (or no pool6).
    NoMapping,
    /// RFC 6052 §3.1: the Well-Known Prefix with a non-global IPv4 address.
    WkpNonGlobal,
}

/// The address mapping part of the configuration.
#[derive(Clone, Debug, Default)]
pub struct Mapper {
    /// RFC 6052 translation prefix; `None`: EAM only.
    pub pool6: Option<Rfc6052Prefix>,
    /// RFC 7757 table; consulted first.
    pub eam: EamTable,
    /// RFC 6052 §3.1 enforcement for the Well-Known Prefix.
    pub wkp_strict: bool,
}

impl Mapper {
    /// Map an IPv6 address to IPv4: EAM, then pool6.
    pub fn v6_to_v4(&self, v6: &[u8; 16]) -> Result<[u8; 4], MapError> {
        let _ = v6;
        Err(MapError::NoMapping)
    }
    /// Map an IPv4 address to IPv6: EAM, then pool6.
    pub fn v4_to_v6(&self, v4: &[u8; 4]) -> Result<[u8; 16], MapError> {
        let _ = v4;
        Err(MapError::NoMapping)
    }
}
