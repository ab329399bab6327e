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

/// Where the Fragment header was and what it said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Fragment offset in bytes.
    pub offset: usize,
    /// M flag.
    pub more: bool,
    /// Identification.
    pub id: u32,
}

/// An IPv6 packet with its extension headers walked.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6Packet {
    /// The fixed header.
    pub hdr: Ipv6Header,
    /// Offset of the upper-layer header (first byte after every extension header).
    pub l4_off: usize,
    /// Upper-layer protocol (the last Next Header).
    pub proto: u8,
    /// The Fragment header, if any.
    pub frag: Option<Fragment>,
    /// 40 + Payload Length. For a quoted packet this may exceed the bytes present.
    pub total_len: usize,
}

impl Ipv6Packet {
    /// Carries the first bytes of the upper-layer header (unfragmented or offset 0).
    pub fn is_first(&self) -> bool {
        self.frag.is_none_or(|f| f.offset == 0)
    }
    /// Part of a fragmented datagram (an atomic fragment, offset 0 and M=0, is not).
    pub fn is_fragmented(&self) -> bool {
        self.frag.is_some_and(|f| f.offset != 0 || f.more)
    }
}

/// Why an IPv6 packet cannot be translated, as found while walking its headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipv6Error {
    /// Lengths are inconsistent or a header is cut off.
    Malformed,
    /// RFC 7915 §5.1: a Routing header with Segments Left ≠ 0; `pointer` is the
    /// offset of that field, for the ICMPv6 Parameter Problem.
    RoutingHeader {
        /// Offset of Segments Left from the start of the packet.
        pointer: u32,
    },
    /// An extension header the translator cannot skip (Mobility, HIP, Shim6, experimental).
    UnknownExtension,
    /// A header chain the translator cannot carry: an extension header after
    /// the Fragment header (RFC 7112 §5; RFC 7915 §5.1.1: IPv4 has nowhere to
    /// put it, and later fragments' offsets count its bytes), or a Hop-by-Hop
    /// header that is not first (RFC 8200 §4.3).
    HeaderChain,
}

/// Parse an IPv6 packet and walk its extension headers (RFC 7915 §5.1).
///
/// `quoted` is for the packet inside an ICMPv6 error: it may be truncated (its
/// Payload Length is kept as the original's) and its Routing header is not ours
/// to judge. Hop-by-Hop, Destination Options and exhausted Routing headers are
/// skipped, as §5.1 says.
#[inline(always)]
pub fn parse(data: &[u8], quoted: bool) -> Result<Ipv6Packet, Ipv6Error> {
    let (hdr, _) = Ipv6Header::read_from_prefix(data).map_err(|_| Ipv6Error::Malformed)?;
    if hdr.ver_tc_flow.get() >> 28 != 6 {
        return Err(Ipv6Error::Malformed);
    }
    let total_len = HEADER_LEN + usize::from(hdr.payload_len.get());
    // RFC 2675: a zero Payload Length is a jumbogram only when a Hop-by-Hop
    // Jumbo Payload option follows; that header would lie past `end` and is
    // refused below. Zero with No Next Header (59) is an ordinary empty packet.
    if !quoted && total_len > data.len() {
        return Err(Ipv6Error::Malformed);
    }
    let end = total_len.min(data.len());
    let mut off = HEADER_LEN;
    let mut nh = hdr.next_header;
    let mut frag = None;
    loop {
        match nh {
            nh::HOP_BY_HOP | nh::DEST_OPTS | nh::ROUTING => {
                // RFC 8200 §4.3: Hop-by-Hop only right after the fixed header;
                // RFC 7112: nothing but the upper layer after a Fragment header.
                if (nh == nh::HOP_BY_HOP && off != HEADER_LEN) || frag.is_some() {
                    return Err(if quoted {
                        Ipv6Error::Malformed
                    } else {
                        Ipv6Error::HeaderChain
                    });
                }
                let b = data
                    .get(off..off + 4)
                    .filter(|_| off + 4 <= end)
                    .ok_or(Ipv6Error::Malformed)?;
                let len = (usize::from(b[1]) + 1) * 8;
                if off + len > end {
                    return Err(Ipv6Error::Malformed);
                }
                if nh == nh::ROUTING && b[3] != 0 && !quoted {
                    return Err(Ipv6Error::RoutingHeader {
                        pointer: off as u32 + 3,
                    });
                }
                nh = b[0];
                off += len;
            }
            nh::FRAGMENT => {
                if frag.is_some() || off + FRAGMENT_HEADER_LEN > end {
                    return Err(Ipv6Error::Malformed);
                }
                let (f, _) = FragmentHeader::read_from_prefix(&data[off..])
                    .map_err(|_| Ipv6Error::Malformed)?;
                frag = Some(Fragment {
                    offset: f.offset(),
                    more: f.more(),
                    id: f.id.get(),
                });
                nh = f.next_header;
                off += FRAGMENT_HEADER_LEN;
                // Past a non-first fragment's header the bytes are payload, not headers.
                if f.offset() != 0 {
                    break;
                }
            }
            nh::MOBILITY | nh::HIP | nh::SHIM6 | 253 | 254 => {
                return Err(Ipv6Error::UnknownExtension);
            }
            _ => break,
        }
    }
    Ok(Ipv6Packet {
        hdr,
        l4_off: off,
        proto: nh,
        frag,
        total_len,
    })
}

/// A fixed IPv6 header with flow label zero (RFC 7915 §4.1).
#[inline(always)]
pub fn header(
    tc: u8,
    payload_len: u16,
    next_header: u8,
    hop_limit: u8,
    src: [u8; 16],
    dst: [u8; 16],
) -> Ipv6Header {
    Ipv6Header {
        ver_tc_flow: Ipv6Header::ver_tc(tc),
        payload_len: U16::new(payload_len),
        next_header,
        hop_limit,
        src,
        dst,
    }
}

/// A Fragment header; `offset` in bytes (a multiple of 8).
pub fn fragment_header(next_header: u8, offset: usize, more: bool, id: u32) -> FragmentHeader {
    FragmentHeader {
        next_header,
        reserved: 0,
        offset_m: U16::new((offset as u16 & 0xfff8) | u16::from(more)),
        id: U32::new(id),
    }
}

/// Protocols that cannot cross a translator: numbers that only make sense in IPv6
/// (extension headers, ICMPv6), which would make an IPv6 packet claim a header
/// that is not there, and AH, whose integrity check covers the addresses.
pub fn is_untranslatable_protocol_v4(p: u8) -> bool {
    matches!(
        p,
        nh::HOP_BY_HOP
            | nh::ROUTING
            | nh::FRAGMENT
            | nh::AH
            | nh::ICMPV6
            | nh::DEST_OPTS
            | nh::MOBILITY
            | nh::HIP
            | nh::SHIM6
            | 253
            | 254
    )
}

/// Upper-layer protocols of an IPv6 packet that cannot cross a translator: ICMPv4
/// (no meaning inside IPv6) and AH (its integrity check covers the addresses).
pub fn is_untranslatable_protocol_v6(p: u8) -> bool {
    matches!(p, nh::ICMP | nh::AH)
}

/// Multicast (ff00::/8).
pub fn is_multicast(a: &[u8; 16]) -> bool {
    a[0] == 0xff
}

/// A host's own link-scope control traffic: to an interface- or link-local
/// multicast group (ff01::/16, ff02::/16) from a link-local address or ::
/// (MLD, router solicitations, Neighbour Discovery). Never forwarded.
pub fn is_host_link_multicast(src: &[u8; 16], dst: &[u8; 16]) -> bool {
    let link_scope = dst[0] == 0xff && (dst[1] & 0x0f) <= 2;
    let link_local = src[0] == 0xfe && src[1] & 0xc0 == 0x80;
    link_scope && (link_local || u128::from_be_bytes(*src) == 0)
}

/// Unspecified (::) or loopback (::1): never valid as a forwarded source.
pub fn is_unspecified_or_loopback(a: &[u8; 16]) -> bool {
    u128::from_be_bytes(*a) <= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30: the host's own MLD and router solicitations are told apart
    /// from a client's multicast.
    #[test]
    fn host_link_multicast_is_link_scope_from_link_local_or_unspecified() {
        let a = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
        assert!(is_host_link_multicast(&a("fe80::1"), &a("ff02::16")));
        assert!(is_host_link_multicast(&a("::"), &a("ff02::16")));
        assert!(is_host_link_multicast(&a("fe80::1"), &a("ff02::2")));
        assert!(!is_host_link_multicast(&a("2001:db8::1"), &a("ff02::16")));
        assert!(!is_host_link_multicast(&a("fe80::1"), &a("ff05::1")));
        assert!(!is_host_link_multicast(&a("fe80::1"), &a("2001:db8::1")));
    }
}
