//! The packet oracle: is this a well-formed IP packet, and what is in it?
//!
//! [`check`] parses a raw IPv4 or IPv6 packet with `etherparse` and verifies, with
//! this crate's own checksum code ([`crate::csum`]):
//!
//! - the version nibble, and for IPv4 the IHL and the header checksum;
//! - IPv4 Total Length / IPv6 Payload Length equal to the buffer length;
//! - the IPv6 extension header chain;
//! - for packets that are not fragments (an IPv6 atomic fragment counts as not a
//!   fragment): the transport header and checksum: UDP (length field, pseudo-header
//!   checksum; zero is accepted over IPv4 only), TCP (data offset, checksum), ICMPv4
//!   (checksum), ICMPv6 (pseudo-header checksum), and ICMPv4 inside IPv6 or ICMPv6
//!   inside IPv4 is an error;
//! - for ICMP errors, the quoted packet: same family as the outer packet, its IP
//!   header present in full, an IPv4 header checksum that verifies, and no more
//!   bytes quoted than its length fields claim (fewer is fine: quotes are cut short).
//!
//! Fragments are checked at the IP layer only; [`Summary::fragment`] says which.
//! [`check_structure`] checks only the outer IP layer of any packet, for outputs
//! whose transport checksum merely carries over the input's (the fuzzers).

use std::net::IpAddr;

use etherparse::{
    IpAuthHeaderSlice, Ipv4HeaderSlice, Ipv6FragmentHeaderSlice, Ipv6HeaderSlice,
    Ipv6RawExtHeaderSlice,
};

use crate::{csum, proto};

/// Address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// Fragment fields: IPv4 flags/offset, or an IPv6 Fragment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Offset in bytes.
    pub offset: u16,
    /// More Fragments.
    pub more: bool,
    /// Identification (IPv4: 16 bits).
    pub id: u32,
}

impl Fragment {
    /// Offset 0 and no more fragments: the whole datagram (an IPv6 atomic fragment).
    pub fn is_atomic(&self) -> bool {
        self.offset == 0 && !self.more
    }
}

/// What the transport header says, as far as it was parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4 {
    /// UDP.
    Udp {
        /// Source port.
        src_port: u16,
        /// Destination port.
        dst_port: u16,
        /// Checksum field (0: none, IPv4 only).
        checksum: u16,
    },
    /// TCP.
    Tcp {
        /// Source port.
        src_port: u16,
        /// Destination port.
        dst_port: u16,
    },
    /// ICMPv4 or ICMPv6 (by the family).
    Icmp {
        /// Type.
        ty: u8,
        /// Code.
        code: u8,
        /// The 4 bytes after the checksum (echo id/seq, MTU, pointer, unused).
        rest: [u8; 4],
    },
    /// Not parsed: a non-first fragment, another protocol, or too few bytes.
    Other,
}

/// What [`check`] found in a packet that passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Address family.
    pub family: Family,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Upper-layer protocol (after any IPv6 extension headers).
    pub protocol: u8,
    /// TTL or Hop Limit.
    pub hop_limit: u8,
    /// TOS or Traffic Class.
    pub tos: u8,
    /// IPv4 Identification (`None` for IPv6).
    pub ipv4_id: Option<u16>,
    /// IPv4 Don't Fragment (`None` for IPv6).
    pub df: Option<bool>,
    /// IPv6 extension headers in order (protocol numbers); empty for IPv4.
    pub ext_headers: Vec<u8>,
    /// Fragment fields when the packet is an IPv4 fragment or has an IPv6 Fragment header.
    pub fragment: Option<Fragment>,
    /// The transport header, when parsed.
    pub l4: L4,
    /// True when the transport header and checksum were verified (not for
    /// fragments, unknown protocols or [`check_structure`]).
    pub l4_verified: bool,
    /// Bytes after the transport header when it was parsed (UDP/TCP payload, the
    /// ICMP body after its 8-byte header); otherwise bytes after the IP headers.
    pub payload_len: usize,
    /// The quoted packet of an ICMP error.
    pub inner: Option<Box<Inner>>,
    /// Bytes of IP headers (IPv4 header with options, or IPv6 fixed header plus
    /// extension headers) before the IP payload.
    pub header_len: usize,
    /// Packet length in bytes.
    pub len: usize,
}

impl Summary {
    /// (source port, destination port) for UDP and TCP.
    pub fn ports(&self) -> Option<(u16, u16)> {
        self.l4.ports()
    }

    /// (type, code) for ICMP.
    pub fn icmp(&self) -> Option<(u8, u8)> {
        self.l4.icmp()
    }

    /// True when this is a fragment that does not hold the whole datagram.
    pub fn is_fragment(&self) -> bool {
        self.fragment.is_some_and(|f| !f.is_atomic())
    }
}

impl L4 {
    /// (source port, destination port) for UDP and TCP.
    pub fn ports(&self) -> Option<(u16, u16)> {
        match *self {
            L4::Udp {
                src_port, dst_port, ..
            }
            | L4::Tcp { src_port, dst_port } => Some((src_port, dst_port)),
            _ => None,
        }
    }

    /// (type, code) for ICMP.
    pub fn icmp(&self) -> Option<(u8, u8)> {
        match *self {
            L4::Icmp { ty, code, .. } => Some((ty, code)),
            _ => None,
        }
    }

    /// What identifies the flow on its sending side: the source port for UDP and
    /// TCP, the identifier of an ICMP or ICMPv6 Echo Request or Reply (the NAT64
    /// "port" of ICMP queries, RFC 6146 §3.5.3).
    pub fn source_port_or_echo_id(&self) -> Option<u16> {
        match *self {
            L4::Icmp {
                ty: 0 | 8 | 128 | 129,
                rest,
                ..
            } => Some(u16::from_be_bytes([rest[0], rest[1]])),
            _ => self.ports().map(|(src, _)| src),
        }
    }
}

/// The packet quoted by an ICMP error (possibly cut short).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inner {
    /// Address family (always that of the outer packet, or the check fails).
    pub family: Family,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Upper-layer protocol, as far as the extension headers present tell.
    pub protocol: u8,
    /// TTL or Hop Limit.
    pub hop_limit: u8,
    /// Length the inner IP header claims (IPv4 Total Length, or 40 + Payload Length).
    pub claimed_len: usize,
    /// Bytes actually quoted.
    pub present_len: usize,
    /// Fragment fields, if the quoted packet was a fragment.
    pub fragment: Option<Fragment>,
    /// Transport header fields, as far as present.
    pub l4: L4,
    /// Whether the quoted transport checksum verifies: `None` when it cannot be
    /// told (cut short, a fragment, another protocol).
    pub l4_checksum_ok: Option<bool>,
}

impl Inner {
    /// True when fewer bytes are quoted than the inner header claims.
    pub fn truncated(&self) -> bool {
        self.present_len < self.claimed_len
    }
}

/// Which layers [`check_with`] verifies beyond the outer IP layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks {
    /// Transport header fields and checksum (non-fragments only).
    pub l4: bool,
    /// The quoted packet of ICMP errors.
    pub inner: bool,
}

impl Checks {
    /// Everything.
    pub const ALL: Checks = Checks {
        l4: true,
        inner: true,
    };
    /// The outer IP layer only.
    pub const IP_ONLY: Checks = Checks {
        l4: false,
        inner: false,
    };
}

/// Check a raw IP packet completely; see the module docs.
pub fn check(packet: &[u8]) -> Result<Summary, String> {
    check_with(packet, Checks::ALL)
}

/// Check only the outer IP layer (version, header checksum, lengths, extension
/// header chain); transport fields are still summarised where present.
pub fn check_structure(packet: &[u8]) -> Result<Summary, String> {
    check_with(packet, Checks::IP_ONLY)
}

/// Check a raw IP packet, verifying the layers `checks` selects.
pub fn check_with(packet: &[u8], checks: Checks) -> Result<Summary, String> {
    let Some(&first) = packet.first() else {
        return Err("empty packet".into());
    };
    match first >> 4 {
        4 => check_v4(packet, checks),
        6 => check_v6(packet, checks),
        v => Err(format!("IP version {v}")),
    }
}

/// Addresses feeding a transport checksum.
#[derive(Clone, Copy)]
enum Pseudo {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

impl Pseudo {
    fn family(self) -> Family {
        match self {
            Pseudo::V4(..) => Family::V4,
            Pseudo::V6(..) => Family::V6,
        }
    }

    fn sum(self, protocol: u8, len: usize) -> u32 {
        match self {
            Pseudo::V4(s, d) => csum::pseudo_v4(s, d, protocol, len),
            Pseudo::V6(s, d) => csum::pseudo_v6(s, d, protocol, len),
        }
    }
}

/// The IP layer of an outer packet, ready for the transport checks.
struct IpLayer<'a> {
    summary: Summary,
    pseudo: Pseudo,
    payload: &'a [u8],
}

fn check_v4(pkt: &[u8], checks: Checks) -> Result<Summary, String> {
    let h = Ipv4HeaderSlice::from_slice(pkt).map_err(|e| format!("IPv4 header: {e}"))?;
    let hl = h.slice().len();
    if !csum::verifies(0, h.slice()) {
        return Err(format!(
            "IPv4 header checksum {:#06x} does not verify",
            h.header_checksum()
        ));
    }
    if usize::from(h.total_len()) != pkt.len() {
        return Err(format!(
            "IPv4 total length {} but the packet has {} bytes",
            h.total_len(),
            pkt.len()
        ));
    }
    let fragment = v4_fragment(&h);
    let layer = IpLayer {
        summary: Summary {
            family: Family::V4,
            src: h.source_addr().into(),
            dst: h.destination_addr().into(),
            protocol: h.protocol().0,
            hop_limit: h.ttl(),
            tos: pkt[1],
            ipv4_id: Some(h.identification()),
            df: Some(h.dont_fragment()),
            ext_headers: Vec::new(),
            fragment,
            l4: L4::Other,
            l4_verified: false,
            payload_len: pkt.len() - hl,
            inner: None,
            header_len: hl,
            len: pkt.len(),
        },
        pseudo: Pseudo::V4(h.source(), h.destination()),
        payload: &pkt[hl..],
    };
    transport(layer, checks)
}

fn v4_fragment(h: &Ipv4HeaderSlice<'_>) -> Option<Fragment> {
    let offset = h.fragments_offset().byte_offset();
    (h.more_fragments() || offset != 0).then(|| Fragment {
        offset,
        more: h.more_fragments(),
        id: u32::from(h.identification()),
    })
}

/// The IPv6 extension header chain of `rest`, starting with `next`.
struct V6Chain<'a> {
    exts: Vec<u8>,
    fragment: Option<Fragment>,
    protocol: u8,
    payload: &'a [u8],
}

/// Walk the extension headers. `lax`: stop quietly at a header cut short (for
/// quoted packets) instead of failing.
fn walk_v6<'a>(mut next: u8, mut rest: &'a [u8], lax: bool) -> Result<V6Chain<'a>, String> {
    let mut exts = Vec::new();
    let mut fragment = None;
    loop {
        let len = match next {
            proto::HOP_BY_HOP | proto::DEST_OPTS | proto::ROUTING => {
                if next == proto::HOP_BY_HOP && !exts.is_empty() {
                    return Err("Hop-by-Hop Options header not first".into());
                }
                match Ipv6RawExtHeaderSlice::from_slice(rest) {
                    Ok(s) => (s.slice().len(), s.next_header().0),
                    Err(_) if lax => break,
                    Err(e) => return Err(format!("IPv6 extension header {next}: {e}")),
                }
            }
            proto::FRAGMENT => match Ipv6FragmentHeaderSlice::from_slice(rest) {
                Ok(s) => {
                    if fragment.is_some() {
                        return Err("two IPv6 Fragment headers".into());
                    }
                    fragment = Some(Fragment {
                        offset: s.fragment_offset().byte_offset(),
                        more: s.more_fragments(),
                        id: s.identification(),
                    });
                    (s.slice().len(), s.next_header().0)
                }
                Err(_) if lax => break,
                Err(e) => return Err(format!("IPv6 Fragment header: {e}")),
            },
            51 => match IpAuthHeaderSlice::from_slice(rest) {
                Ok(s) => (s.slice().len(), s.next_header().0),
                Err(_) if lax => break,
                Err(e) => return Err(format!("IPv6 Authentication header: {e}")),
            },
            _ => break,
        };
        exts.push(next);
        rest = &rest[len.0..];
        next = len.1;
        // Past a non-first fragment's header the bytes are data, not headers.
        if fragment.is_some_and(|f| f.offset != 0) {
            break;
        }
    }
    Ok(V6Chain {
        exts,
        fragment,
        protocol: next,
        payload: rest,
    })
}

fn check_v6(pkt: &[u8], checks: Checks) -> Result<Summary, String> {
    let h = Ipv6HeaderSlice::from_slice(pkt).map_err(|e| format!("IPv6 header: {e}"))?;
    let claimed = 40 + usize::from(h.payload_length());
    if claimed != pkt.len() {
        return Err(format!(
            "IPv6 payload length {} but the packet has {} bytes after the header",
            h.payload_length(),
            pkt.len() - 40
        ));
    }
    let chain = walk_v6(h.next_header().0, &pkt[40..], false)?;
    let layer = IpLayer {
        summary: Summary {
            family: Family::V6,
            src: h.source_addr().into(),
            dst: h.destination_addr().into(),
            protocol: chain.protocol,
            hop_limit: h.hop_limit(),
            tos: h.traffic_class(),
            ipv4_id: None,
            df: None,
            ext_headers: chain.exts,
            fragment: chain.fragment,
            l4: L4::Other,
            l4_verified: false,
            payload_len: chain.payload.len(),
            inner: None,
            header_len: pkt.len() - chain.payload.len(),
            len: pkt.len(),
        },
        pseudo: Pseudo::V6(h.source(), h.destination()),
        payload: chain.payload,
    };
    transport(layer, checks)
}

fn is_icmp_error(family: Family, ty: u8) -> bool {
    match family {
        Family::V4 => matches!(ty, 3 | 4 | 5 | 11 | 12),
        Family::V6 => ty < 128,
    }
}

/// Parse the transport header as far as `data` allows, without verifying anything.
fn parse_l4(family: Family, protocol: u8, data: &[u8]) -> (L4, usize) {
    let icmp = match family {
        Family::V4 => proto::ICMP,
        Family::V6 => proto::ICMPV6,
    };
    let be = |i: usize| u16::from_be_bytes([data[i], data[i + 1]]);
    match protocol {
        proto::UDP if data.len() >= 8 => (
            L4::Udp {
                src_port: be(0),
                dst_port: be(2),
                checksum: be(6),
            },
            8,
        ),
        proto::TCP if data.len() >= 20 => {
            let off = usize::from(data[12] >> 4) * 4;
            (
                L4::Tcp {
                    src_port: be(0),
                    dst_port: be(2),
                },
                off.clamp(20, data.len()),
            )
        }
        p if p == icmp && data.len() >= 8 => (
            L4::Icmp {
                ty: data[0],
                code: data[1],
                rest: [data[4], data[5], data[6], data[7]],
            },
            8,
        ),
        _ => (L4::Other, 0),
    }
}

fn transport(layer: IpLayer<'_>, checks: Checks) -> Result<Summary, String> {
    let IpLayer {
        mut summary,
        pseudo,
        payload,
    } = layer;
    let family = summary.family;
    let protocol = summary.protocol;
    let whole = summary.fragment.is_none_or(|f| f.is_atomic());
    let first = summary.fragment.is_none_or(|f| f.offset == 0);
    if !first {
        return Ok(summary);
    }
    let (l4, hdr_len) = parse_l4(family, protocol, payload);
    summary.l4 = l4;
    summary.payload_len = payload.len() - hdr_len;
    if !(checks.l4 && whole) {
        return Ok(summary);
    }
    verify_l4(pseudo, protocol, payload)?;
    summary.l4_verified = matches!(
        protocol,
        proto::UDP | proto::TCP | proto::ICMP | proto::ICMPV6
    );
    if let L4::Icmp { ty, .. } = summary.l4
        && checks.inner
        && is_icmp_error(family, ty)
    {
        let (quoted, padded) = rfc4884_original_datagram(family, ty, payload)?;
        let inner = check_inner(family, quoted, padded)?;
        summary.inner = Some(Box::new(inner));
    }
    Ok(summary)
}

/// Verify the transport header and checksum of a whole (unfragmented) payload.
fn verify_l4(pseudo: Pseudo, protocol: u8, data: &[u8]) -> Result<(), String> {
    let family = pseudo.family();
    let name = match protocol {
        proto::UDP => "UDP",
        proto::TCP => "TCP",
        proto::ICMP if family == Family::V4 => "ICMPv4",
        proto::ICMPV6 if family == Family::V6 => "ICMPv6",
        proto::ICMP => return Err("ICMPv4 (protocol 1) inside IPv6".into()),
        proto::ICMPV6 => return Err("ICMPv6 (protocol 58) inside IPv4".into()),
        _ => return Ok(()),
    };
    let min = if protocol == proto::TCP { 20 } else { 8 };
    if data.len() < min {
        return Err(format!("{name} message of {} bytes", data.len()));
    }
    match protocol {
        proto::UDP => {
            let ulen = usize::from(u16::from_be_bytes([data[4], data[5]]));
            if ulen != data.len() {
                return Err(format!(
                    "UDP length {ulen} but the IP payload has {} bytes",
                    data.len()
                ));
            }
            if data[6] == 0 && data[7] == 0 {
                return if family == Family::V4 {
                    Ok(())
                } else {
                    Err("UDP checksum zero over IPv6".into())
                };
            }
        }
        proto::TCP => {
            let off = usize::from(data[12] >> 4) * 4;
            if off < 20 || off > data.len() {
                return Err(format!(
                    "TCP data offset {off} with {} bytes present",
                    data.len()
                ));
            }
        }
        _ => {}
    }
    let pseudo_sum = if protocol == proto::ICMP {
        0
    } else {
        pseudo.sum(protocol, data.len())
    };
    if !csum::verifies(pseudo_sum, data) {
        let field = match protocol {
            proto::UDP => 6,
            proto::TCP => 16,
            _ => 2,
        };
        return Err(format!(
            "{name} checksum {:#06x} does not verify",
            u16::from_be_bytes([data[field], data[field + 1]])
        ));
    }
    Ok(())
}

/// RFC 4884: the original datagram field of an ICMP error (`icmp`: header and
/// body), and whether it is padded (a non-zero length attribute). An extension
/// structure after it must follow a field of at least 128 bytes, carry version 2
/// and a checksum that verifies.
fn rfc4884_original_datagram(family: Family, ty: u8, icmp: &[u8]) -> Result<(&[u8], bool), String> {
    let (at, unit) = match (family, ty) {
        (Family::V4, 3 | 11 | 12) => (5, 4),
        (Family::V6, 1 | 3) => (4, 8),
        _ => return Ok((&icmp[8..], false)),
    };
    let body = &icmp[8..];
    let field = usize::from(icmp[at]) * unit;
    if field == 0 {
        return Ok((body, false));
    }
    if field > body.len() {
        return Err(format!(
            "RFC 4884 length attribute {field} bytes, {} present",
            body.len()
        ));
    }
    let ext = &body[field..];
    if !ext.is_empty() {
        if field < 128 {
            return Err(format!("RFC 4884 extension after a {field}-byte field"));
        }
        if ext.len() < 4 || ext[0] >> 4 != 2 {
            return Err("RFC 4884 extension header malformed".into());
        }
        if !csum::verifies(0, ext) {
            return Err("RFC 4884 extension checksum does not verify".into());
        }
    }
    Ok((&body[..field], true))
}

/// Check the packet quoted by an ICMP error of family `outer`. `padded`: the
/// quote may end in zero padding past the length its header claims (RFC 4884).
fn check_inner(outer: Family, q: &[u8], padded: bool) -> Result<Inner, String> {
    let version = q.first().map(|b| b >> 4);
    let q = if padded { strip_padding(outer, q)? } else { q };
    match (outer, version) {
        (_, None) => Err("ICMP error quotes nothing".to_string()),
        (Family::V4, Some(4)) => inner_v4(q),
        (Family::V6, Some(6)) => inner_v6(q),
        (_, Some(v)) => Err(format!("{outer:?} ICMP error quotes IP version {v}")),
    }
    .map_err(|e| format!("inner packet: {e}"))
}

/// RFC 4884 §5: a padded quote, cut to the length its header claims; the
/// bytes cut must be zeros.
fn strip_padding(family: Family, q: &[u8]) -> Result<&[u8], String> {
    let claimed = match family {
        Family::V4 if q.len() >= 4 => usize::from(u16::from_be_bytes([q[2], q[3]])),
        Family::V6 if q.len() >= 6 => 40 + usize::from(u16::from_be_bytes([q[4], q[5]])),
        _ => return Ok(q),
    };
    if q.len() <= claimed {
        return Ok(q);
    }
    if q[claimed..].iter().any(|&b| b != 0) {
        return Err("RFC 4884 padding is not zero".into());
    }
    Ok(&q[..claimed])
}

fn inner_v4(q: &[u8]) -> Result<Inner, String> {
    let h = Ipv4HeaderSlice::from_slice(q).map_err(|e| format!("IPv4 header: {e}"))?;
    let hl = h.slice().len();
    if !csum::verifies(0, h.slice()) {
        return Err(format!(
            "IPv4 header checksum {:#06x} does not verify",
            h.header_checksum()
        ));
    }
    let claimed = usize::from(h.total_len());
    if claimed < hl {
        return Err(format!(
            "IPv4 total length {claimed} below header length {hl}"
        ));
    }
    if q.len() > claimed {
        return Err(format!(
            "{} bytes quoted but IPv4 total length is {claimed}",
            q.len()
        ));
    }
    let fragment = v4_fragment(&h);
    let pseudo = Pseudo::V4(h.source(), h.destination());
    Ok(inner_l4(
        Inner {
            family: Family::V4,
            src: h.source_addr().into(),
            dst: h.destination_addr().into(),
            protocol: h.protocol().0,
            hop_limit: h.ttl(),
            claimed_len: claimed,
            present_len: q.len(),
            fragment,
            l4: L4::Other,
            l4_checksum_ok: None,
        },
        pseudo,
        &q[hl..],
    ))
}

fn inner_v6(q: &[u8]) -> Result<Inner, String> {
    let h = Ipv6HeaderSlice::from_slice(q).map_err(|e| format!("IPv6 header: {e}"))?;
    let claimed = 40 + usize::from(h.payload_length());
    if q.len() > claimed {
        return Err(format!(
            "{} bytes quoted but IPv6 payload length claims {claimed} in all",
            q.len()
        ));
    }
    let chain = walk_v6(h.next_header().0, &q[40..], true)?;
    let pseudo = Pseudo::V6(h.source(), h.destination());
    Ok(inner_l4(
        Inner {
            family: Family::V6,
            src: h.source_addr().into(),
            dst: h.destination_addr().into(),
            protocol: chain.protocol,
            hop_limit: h.hop_limit(),
            claimed_len: claimed,
            present_len: q.len(),
            fragment: chain.fragment,
            l4: L4::Other,
            l4_checksum_ok: None,
        },
        pseudo,
        chain.payload,
    ))
}

/// Fill in what the quoted transport header shows; verify its checksum when the
/// whole datagram is there.
fn inner_l4(mut inner: Inner, pseudo: Pseudo, data: &[u8]) -> Inner {
    if inner.fragment.is_some_and(|f| f.offset != 0) {
        return inner;
    }
    inner.l4 = match parse_l4(inner.family, inner.protocol, data) {
        // RFC 792 quotes only 8 bytes: enough for TCP's ports, not its header.
        (L4::Other, _) if inner.protocol == proto::TCP && data.len() >= 4 => L4::Tcp {
            src_port: u16::from_be_bytes([data[0], data[1]]),
            dst_port: u16::from_be_bytes([data[2], data[3]]),
        },
        (l4, _) => l4,
    };
    let whole = !inner.truncated() && inner.fragment.is_none_or(|f| f.is_atomic());
    let known = matches!(inner.l4, L4::Udp { .. } | L4::Tcp { .. } | L4::Icmp { .. });
    if whole && known {
        inner.l4_checksum_ok = Some(verify_l4(pseudo, inner.protocol, data).is_ok());
    }
    inner
}
