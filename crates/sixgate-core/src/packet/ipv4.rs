//! IPv4 header view (RFC 791 §3.1).

use zerocopy::byteorder::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Fixed part of the IPv4 header.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug)]
#[repr(C)]
pub struct Ipv4Header {
    /// Version (4) and IHL in 32-bit words.
    pub ver_ihl: u8,
    /// Type of Service / DSCP+ECN.
    pub tos: u8,
    /// Total length, header included.
    pub total_len: U16,
    /// Identification.
    pub id: U16,
    /// Flags (reserved, DF, MF) and fragment offset in 8-byte units.
    pub flags_frag: U16,
    /// Time to live.
    pub ttl: u8,
    /// Upper-layer protocol.
    pub proto: u8,
    /// Header checksum.
    pub checksum: U16,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = 20;
/// Don't Fragment flag in `flags_frag`.
pub const DF: u16 = 0x4000;
/// More Fragments flag in `flags_frag`.
pub const MF: u16 = 0x2000;
/// Fragment offset mask in `flags_frag`.
pub const OFFSET_MASK: u16 = 0x1fff;

impl Ipv4Header {
    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.ver_ihl & 0x0f) * 4
    }
    /// DF flag.
    pub fn df(&self) -> bool {
        self.flags_frag.get() & DF != 0
    }
    /// MF flag.
    pub fn mf(&self) -> bool {
        self.flags_frag.get() & MF != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> usize {
        usize::from(self.flags_frag.get() & OFFSET_MASK) * 8
    }
    /// True for any fragment (first, middle or last).
    pub fn is_fragment(&self) -> bool {
        self.flags_frag.get() & (MF | OFFSET_MASK) != 0
    }
}
