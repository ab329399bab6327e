//! RFC 6052 IPv4-embedded IPv6 addresses.
// STUB: the addr helper replaces this file.

use std::net::{Ipv4Addr, Ipv6Addr};

/// A validated RFC 6052 prefix: length 32, 40, 48, 56, 64 or 96, host bits zero,
/// and (RFC 6052 §2.2) bits 64..72, the "u" octet, zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rfc6052Prefix {
    addr: [u8; 16],
    len: u8,
}

/// Why a prefix is not a valid RFC 6052 prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// Length is not one of 32, 40, 48, 56, 64, 96.
    BadLength(u8),
    /// Bits beyond the prefix length are set.
    HostBitsSet,
    /// The "u" octet (bits 64..72) is not zero.
    UOctetSet,
    /// Text did not parse as `ADDR/LEN`.
    Syntax(String),
}

/// 64:ff9b::/96, RFC 6052 §2.1.
pub const WELL_KNOWN_PREFIX: Rfc6052Prefix = Rfc6052Prefix {
    addr: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    len: 96,
};

impl Rfc6052Prefix {
    /// Validate `addr/len`.
    pub fn new(addr: Ipv6Addr, len: u8) -> Result<Self, PrefixError> {
        let _ = (addr, len);
        todo!()
    }
    /// Prefix length.
    pub fn len(&self) -> u8 {
        self.len
    }
    /// Prefix address (host bits zero).
    pub fn addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.addr)
    }
    /// Is this 64:ff9b::/96 (RFC 6052 §2.1)?
    pub fn is_well_known(&self) -> bool {
        *self == WELL_KNOWN_PREFIX
    }
    /// RFC 6052 §2.2: embed an IPv4 address (u octet and suffix zero).
    pub fn embed(&self, v4: Ipv4Addr) -> Ipv6Addr {
        Ipv6Addr::from(self.embed_octets(v4.octets()))
    }
    /// [`Self::embed`] on raw octets (the packet path).
    pub fn embed_octets(&self, v4: [u8; 4]) -> [u8; 16] {
        let _ = v4;
        todo!()
    }
    /// RFC 6052 §2.3: extract the IPv4 address if `v6` is under this prefix.
    pub fn extract_octets(&self, v6: &[u8; 16]) -> Option<[u8; 4]> {
        let _ = v6;
        todo!()
    }
}
