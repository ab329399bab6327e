//! IPv6 header and Fragment header views (RFC 8200 §3, §4.5).

use zerocopy::byteorder::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The fixed IPv6 header.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug)]
#[repr(C)]
pub struct Ipv6Header {
    /// Version (6), traffic class, flow label.
    pub ver_tc_flow: U32,
    /// Payload length (extension headers included).
    pub payload_len: U16,
    /// Next header.
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;

impl Ipv6Header {
    /// Traffic class octet.
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow.get() >> 20) as u8
    }
    /// Version 6, the given traffic class, flow label zero (RFC 7915 §4.1).
    pub fn ver_tc(tc: u8) -> U32 {
        U32::new((6 << 28) | (u32::from(tc) << 20))
    }
}

/// The IPv6 Fragment header (RFC 8200 §4.5).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug)]
#[repr(C)]
pub struct FragmentHeader {
    /// Next header.
    pub next_header: u8,
    /// Reserved, zero.
    pub reserved: u8,
    /// Offset in 8-byte units (13 bits), 2 reserved bits, M flag.
    pub offset_m: U16,
    /// Identification.
    pub id: U32,
}

/// Length of the Fragment header.
pub const FRAGMENT_HEADER_LEN: usize = 8;

impl FragmentHeader {
    /// Fragment offset in bytes.
    pub fn offset(&self) -> usize {
        usize::from(self.offset_m.get() & 0xfff8)
    }
    /// M (more fragments) flag.
    pub fn more(&self) -> bool {
        self.offset_m.get() & 1 != 0
    }
}

/// Next Header values the translator cares about (IANA protocol numbers).
pub mod nh {
    /// Hop-by-Hop Options.
    pub const HOP_BY_HOP: u8 = 0;
    /// ICMP (IPv4).
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// Routing header.
    pub const ROUTING: u8 = 43;
    /// Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// ESP.
    pub const ESP: u8 = 50;
    /// AH.
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// No next header.
    pub const NONE: u8 = 59;
    /// Destination Options.
    pub const DEST_OPTS: u8 = 60;
    /// Mobility header.
    pub const MOBILITY: u8 = 135;
    /// HIP.
    pub const HIP: u8 = 139;
    /// Shim6.
    pub const SHIM6: u8 = 140;
}
