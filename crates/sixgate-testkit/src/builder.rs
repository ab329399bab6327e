//! Builders for raw IP packets (no link layer) with valid checksums.
//!
//! [`Ip4`] and [`Ip6`] hold the IP header parameters; their methods put a
//! transport message on top and return the finished packet as a `Vec<u8>`.
//! Headers are laid out with `etherparse` and every length and checksum is filled
//! in, so a packet straight from a builder passes [`crate::check`].
//!
//! Payload bytes, where only a length is given, come from [`pattern`].

use std::net::{Ipv4Addr, Ipv6Addr};

use etherparse::{
    IcmpEchoHeader, Icmpv4Header, Icmpv4Type, Icmpv6Header, Icmpv6Type, IpDscp, IpEcn,
    IpFragOffset, IpNumber, Ipv4Header, Ipv6FlowLabel, Ipv6FragmentHeader, Ipv6Header,
    Ipv6RawExtHeader, TcpHeader, UdpHeader,
};

use crate::proto;

/// Deterministic payload of `len` bytes (not all equal, so a shifted copy shows).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(7) ^ 0x5a) as u8).collect()
}

/// The first `len` bytes of `pkt` (all of it if shorter): what an ICMP error quotes.
pub fn truncate(pkt: &[u8], len: usize) -> Vec<u8> {
    pkt[..len.min(pkt.len())].to_vec()
}

/// Addresses for a transport checksum's pseudo-header.
#[derive(Clone, Copy)]
enum Pseudo {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

fn udp_message(p: Pseudo, sport: u16, dport: u16, payload: &[u8], zero_csum: bool) -> Vec<u8> {
    let mut h = UdpHeader::without_ipv4_checksum(sport, dport, payload.len())
        .expect("UDP payload too long");
    if !zero_csum {
        h.checksum = match p {
            Pseudo::V4(s, d) => h.calc_checksum_ipv4_raw(s, d, payload),
            Pseudo::V6(s, d) => h.calc_checksum_ipv6_raw(s, d, payload),
        }
        .expect("UDP payload too long");
    }
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// TCP flag bits for the `tcp_flags` builders (RFC 9293 §3.1).
pub mod tcp_flag {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// ACK.
    pub const ACK: u8 = 0x10;
}

/// Default flags: ACK.
const TCP_DEFAULT_FLAGS: u8 = tcp_flag::ACK;

fn tcp_message(p: Pseudo, sport: u16, dport: u16, payload: &[u8], flags: u8) -> Vec<u8> {
    let mut h = TcpHeader::new(sport, dport, 0x0102_0304, 64240);
    h.acknowledgment_number = 0x0a0b_0c0d;
    h.ack = flags & tcp_flag::ACK != 0;
    h.syn = flags & tcp_flag::SYN != 0;
    h.fin = flags & tcp_flag::FIN != 0;
    h.rst = flags & tcp_flag::RST != 0;
    h.psh = !payload.is_empty();
    h.checksum = match p {
        Pseudo::V4(s, d) => h.calc_checksum_ipv4_raw(s, d, payload),
        Pseudo::V6(s, d) => h.calc_checksum_ipv6_raw(s, d, payload),
    }
    .expect("TCP payload too long");
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn icmpv4_message(ty: Icmpv4Type, body: &[u8]) -> Vec<u8> {
    let h = Icmpv4Header::with_checksum(ty, body);
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn icmpv6_message(src: [u8; 16], dst: [u8; 16], ty: Icmpv6Type, body: &[u8]) -> Vec<u8> {
    let h = Icmpv6Header::with_checksum(ty, src, dst, body).expect("ICMPv6 body too long");
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// IPv4 header parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ip4 {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Time to live.
    pub ttl: u8,
    /// Type of service byte (DSCP << 2 | ECN).
    pub tos: u8,
    /// Identification.
    pub id: u16,
    /// Don't Fragment.
    pub df: bool,
    /// Options, zero-padded to a multiple of 4 bytes (at most 40).
    pub options: Vec<u8>,
}

impl Ip4 {
    /// `src` → `dst` with TTL 64, TOS 0, ID 0x1234, DF set, no options.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr) -> Self {
        Ip4 {
            src,
            dst,
            ttl: 64,
            tos: 0,
            id: 0x1234,
            df: true,
            options: Vec::new(),
        }
    }

    /// Set the TTL.
    pub fn ttl(mut self, ttl: u8) -> Self {
        self.ttl = ttl;
        self
    }

    /// Set the TOS byte.
    pub fn tos(mut self, tos: u8) -> Self {
        self.tos = tos;
        self
    }

    /// Set the Identification field.
    pub fn id(mut self, id: u16) -> Self {
        self.id = id;
        self
    }

    /// Set or clear Don't Fragment.
    pub fn df(mut self, df: bool) -> Self {
        self.df = df;
        self
    }

    /// Set the options (padded with End-of-Options to a multiple of 4).
    pub fn options(mut self, options: &[u8]) -> Self {
        self.options = options.to_vec();
        self
    }

    fn pseudo(&self) -> Pseudo {
        Pseudo::V4(self.src.octets(), self.dst.octets())
    }

    /// The IPv4 header for `payload_len` bytes of `protocol`, fragment offset in
    /// bytes (multiple of 8) and MF.
    fn header(&self, protocol: u8, payload_len: usize, offset: u16, more: bool) -> Vec<u8> {
        assert!(
            offset.is_multiple_of(8),
            "fragment offset {offset} is not a multiple of 8"
        );
        let mut options = self.options.clone();
        while !options.len().is_multiple_of(4) {
            options.push(0);
        }
        let mut h = Ipv4Header {
            dscp: IpDscp::try_new(self.tos >> 2).expect("6-bit DSCP"),
            ecn: IpEcn::try_new(self.tos & 3).expect("2-bit ECN"),
            identification: self.id,
            dont_fragment: self.df,
            more_fragments: more,
            fragment_offset: IpFragOffset::try_new(offset / 8).expect("fragment offset too big"),
            time_to_live: self.ttl,
            protocol: IpNumber(protocol),
            source: self.src.octets(),
            destination: self.dst.octets(),
            ..Default::default()
        };
        h.options = options[..]
            .try_into()
            .expect("IPv4 options longer than 40 bytes");
        h.total_len = u16::try_from(h.header_len() + payload_len).expect("IPv4 packet too long");
        h.header_checksum = h.calc_header_checksum();
        h.to_bytes().to_vec()
    }

    /// The IPv4 header followed by `payload` verbatim (no transport checksum work).
    pub fn raw(&self, protocol: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = self.header(protocol, payload.len(), 0, false);
        out.extend_from_slice(payload);
        out
    }

    /// One fragment: `data` is the fragment's slice of the original IP payload,
    /// starting `offset` bytes (a multiple of 8) into it; `more` is MF. DF is taken
    /// from `self` as is (clear it with `.df(false)` for realistic fragments).
    pub fn fragment(&self, protocol: u8, offset: u16, more: bool, data: &[u8]) -> Vec<u8> {
        let mut out = self.header(protocol, data.len(), offset, more);
        out.extend_from_slice(data);
        out
    }

    /// UDP with a [`pattern`] payload of `payload_len` bytes.
    pub fn udp(&self, sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
        self.udp_with(sport, dport, &pattern(payload_len))
    }

    /// UDP with the given payload.
    pub fn udp_with(&self, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        self.raw(
            proto::UDP,
            &udp_message(self.pseudo(), sport, dport, payload, false),
        )
    }

    /// UDP whose checksum field is zero ("no checksum", RFC 768; RFC 7915 §4.5).
    pub fn udp_zero_checksum(&self, sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
        self.raw(
            proto::UDP,
            &udp_message(self.pseudo(), sport, dport, &pattern(payload_len), true),
        )
    }

    /// TCP (ACK, and PSH when there is payload) with a [`pattern`] payload.
    pub fn tcp(&self, sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
        self.tcp_flags(sport, dport, TCP_DEFAULT_FLAGS, payload_len)
    }

    /// TCP with the given [`tcp_flag`] bits (PSH added when there is payload).
    pub fn tcp_flags(&self, sport: u16, dport: u16, flags: u8, payload_len: usize) -> Vec<u8> {
        self.raw(
            proto::TCP,
            &tcp_message(self.pseudo(), sport, dport, &pattern(payload_len), flags),
        )
    }

    /// ICMP Echo Request with a [`pattern`] payload.
    pub fn echo_request(&self, ident: u16, seq: u16, payload_len: usize) -> Vec<u8> {
        let ty = Icmpv4Type::EchoRequest(IcmpEchoHeader { id: ident, seq });
        self.raw(proto::ICMP, &icmpv4_message(ty, &pattern(payload_len)))
    }

    /// ICMP Echo Reply with a [`pattern`] payload.
    pub fn echo_reply(&self, ident: u16, seq: u16, payload_len: usize) -> Vec<u8> {
        let ty = Icmpv4Type::EchoReply(IcmpEchoHeader { id: ident, seq });
        self.raw(proto::ICMP, &icmpv4_message(ty, &pattern(payload_len)))
    }

    /// Any ICMP message: type, code, the 4 bytes after the checksum, then `body`.
    pub fn icmp(&self, ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
        let ty = Icmpv4Type::Unknown {
            type_u8: ty,
            code_u8: code,
            bytes5to8: rest,
        };
        self.raw(proto::ICMP, &icmpv4_message(ty, body))
    }

    /// An ICMP error quoting `inner` (an IPv4 packet, possibly cut short with
    /// [`truncate`]). `rest` is the rest-of-header word (unused, pointer, MTU...).
    pub fn icmp_error(&self, ty: u8, code: u8, rest: [u8; 4], inner: &[u8]) -> Vec<u8> {
        self.icmp(ty, code, rest, inner)
    }
}

/// An IPv6 extension header for [`Ip6`] to put between the fixed header and the
/// upper layer, in the order added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ext6 {
    /// Hop-by-Hop Options with one PadN option (8 bytes).
    HopByHop,
    /// Destination Options with one PadN option (8 bytes).
    DestOpts,
    /// Routing header with no addresses (8 bytes). Type 253 (RFC 4727 experimental)
    /// unless given; the pseudo-header keeps the fixed header's destination.
    Routing {
        /// Routing type.
        routing_type: u8,
        /// Segments Left.
        segments_left: u8,
    },
    /// Fragment header; `offset` in bytes, a multiple of 8.
    Fragment {
        /// Fragment offset in bytes.
        offset: u16,
        /// M flag.
        more: bool,
        /// Identification.
        id: u32,
    },
}

impl Ext6 {
    fn protocol(self) -> u8 {
        match self {
            Ext6::HopByHop => proto::HOP_BY_HOP,
            Ext6::DestOpts => proto::DEST_OPTS,
            Ext6::Routing { .. } => proto::ROUTING,
            Ext6::Fragment { .. } => proto::FRAGMENT,
        }
    }

    fn bytes(self, next: u8) -> Vec<u8> {
        let next = IpNumber(next);
        let raw = |payload: &[u8]| {
            Ipv6RawExtHeader::new_raw(next, payload)
                .expect("6-byte extension payload")
                .to_bytes()
                .to_vec()
        };
        match self {
            // PadN (type 1) covering the 4 remaining bytes.
            Ext6::HopByHop | Ext6::DestOpts => raw(&[1, 4, 0, 0, 0, 0]),
            Ext6::Routing {
                routing_type,
                segments_left,
            } => raw(&[routing_type, segments_left, 0, 0, 0, 0]),
            Ext6::Fragment { offset, more, id } => {
                assert!(
                    offset.is_multiple_of(8),
                    "fragment offset {offset} is not a multiple of 8"
                );
                let off = IpFragOffset::try_new(offset / 8).expect("fragment offset too big");
                Ipv6FragmentHeader::new(next, off, more, id)
                    .to_bytes()
                    .to_vec()
            }
        }
    }
}

/// IPv6 header parameters, and extension headers to insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ip6 {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Extension headers, in order.
    pub exts: Vec<Ext6>,
}

impl Ip6 {
    /// `src` → `dst` with hop limit 64, traffic class 0, flow label 0, no extension headers.
    pub fn new(src: Ipv6Addr, dst: Ipv6Addr) -> Self {
        Ip6 {
            src,
            dst,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
            exts: Vec::new(),
        }
    }

    /// Set the hop limit.
    pub fn hop_limit(mut self, hop_limit: u8) -> Self {
        self.hop_limit = hop_limit;
        self
    }

    /// Set the traffic class.
    pub fn traffic_class(mut self, tc: u8) -> Self {
        self.traffic_class = tc;
        self
    }

    /// Set the flow label (20 bits).
    pub fn flow_label(mut self, label: u32) -> Self {
        self.flow_label = label;
        self
    }

    /// Append an extension header.
    pub fn ext(mut self, ext: Ext6) -> Self {
        self.exts.push(ext);
        self
    }

    /// Append a Hop-by-Hop Options header.
    pub fn hop_by_hop(self) -> Self {
        self.ext(Ext6::HopByHop)
    }

    /// Append a Destination Options header.
    pub fn dest_opts(self) -> Self {
        self.ext(Ext6::DestOpts)
    }

    /// Append a Routing header (type 253) with `segments_left`.
    pub fn routing(self, segments_left: u8) -> Self {
        self.ext(Ext6::Routing {
            routing_type: 253,
            segments_left,
        })
    }

    /// Append a Fragment header (`offset` in bytes).
    pub fn fragment_header(self, offset: u16, more: bool, id: u32) -> Self {
        self.ext(Ext6::Fragment { offset, more, id })
    }

    fn pseudo(&self) -> Pseudo {
        Pseudo::V6(self.src.octets(), self.dst.octets())
    }

    /// Fixed header, the extension headers, then `payload` (of upper-layer protocol
    /// `protocol`) verbatim.
    pub fn raw(&self, protocol: u8, payload: &[u8]) -> Vec<u8> {
        let mut exts = Vec::new();
        for (i, e) in self.exts.iter().enumerate() {
            let next = self.exts.get(i + 1).map_or(protocol, |n| n.protocol());
            exts.extend_from_slice(&e.bytes(next));
        }
        let first = self.exts.first().map_or(protocol, |e| e.protocol());
        let h = Ipv6Header {
            traffic_class: self.traffic_class,
            flow_label: Ipv6FlowLabel::try_new(self.flow_label).expect("20-bit flow label"),
            payload_length: u16::try_from(exts.len() + payload.len())
                .expect("IPv6 payload too long"),
            next_header: IpNumber(first),
            hop_limit: self.hop_limit,
            source: self.src.octets(),
            destination: self.dst.octets(),
        };
        let mut out = h.to_bytes().to_vec();
        out.extend_from_slice(&exts);
        out.extend_from_slice(payload);
        out
    }

    /// One fragment: a Fragment header (after any extension headers already added)
    /// carrying `data`, the slice of the fragmentable part starting `offset` bytes in.
    pub fn fragment(&self, protocol: u8, offset: u16, more: bool, id: u32, data: &[u8]) -> Vec<u8> {
        self.clone()
            .fragment_header(offset, more, id)
            .raw(protocol, data)
    }

    /// UDP with a [`pattern`] payload of `payload_len` bytes.
    pub fn udp(&self, sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
        self.udp_with(sport, dport, &pattern(payload_len))
    }

    /// UDP with the given payload.
    pub fn udp_with(&self, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        self.raw(
            proto::UDP,
            &udp_message(self.pseudo(), sport, dport, payload, false),
        )
    }

    /// TCP (ACK, and PSH when there is payload) with a [`pattern`] payload.
    pub fn tcp(&self, sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
        self.tcp_flags(sport, dport, TCP_DEFAULT_FLAGS, payload_len)
    }

    /// TCP with the given [`tcp_flag`] bits (PSH added when there is payload).
    pub fn tcp_flags(&self, sport: u16, dport: u16, flags: u8, payload_len: usize) -> Vec<u8> {
        self.raw(
            proto::TCP,
            &tcp_message(self.pseudo(), sport, dport, &pattern(payload_len), flags),
        )
    }

    /// ICMPv6 Echo Request with a [`pattern`] payload.
    pub fn echo_request(&self, ident: u16, seq: u16, payload_len: usize) -> Vec<u8> {
        let ty = Icmpv6Type::EchoRequest(IcmpEchoHeader { id: ident, seq });
        let (s, d) = (self.src.octets(), self.dst.octets());
        self.raw(
            proto::ICMPV6,
            &icmpv6_message(s, d, ty, &pattern(payload_len)),
        )
    }

    /// ICMPv6 Echo Reply with a [`pattern`] payload.
    pub fn echo_reply(&self, ident: u16, seq: u16, payload_len: usize) -> Vec<u8> {
        let ty = Icmpv6Type::EchoReply(IcmpEchoHeader { id: ident, seq });
        let (s, d) = (self.src.octets(), self.dst.octets());
        self.raw(
            proto::ICMPV6,
            &icmpv6_message(s, d, ty, &pattern(payload_len)),
        )
    }

    /// Any ICMPv6 message: type, code, the 4 bytes after the checksum, then `body`.
    pub fn icmp(&self, ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
        let ty = Icmpv6Type::Unknown {
            type_u8: ty,
            code_u8: code,
            bytes5to8: rest,
        };
        let (s, d) = (self.src.octets(), self.dst.octets());
        self.raw(proto::ICMPV6, &icmpv6_message(s, d, ty, body))
    }

    /// An ICMPv6 error quoting `inner` (an IPv6 packet, possibly cut short with
    /// [`truncate`]). `rest` is the word after the checksum (unused, MTU, pointer).
    pub fn icmp_error(&self, ty: u8, code: u8, rest: [u8; 4], inner: &[u8]) -> Vec<u8> {
        self.icmp(ty, code, rest, inner)
    }
}

/// Split an unfragmented IPv4 packet (no options) into fragments carrying at most
/// `max_data` payload bytes each (rounded down to a multiple of 8). DF is cleared.
pub fn split_v4(pkt: &[u8], max_data: usize) -> Vec<Vec<u8>> {
    assert!(
        pkt.len() >= 20 && pkt[0] == 0x45,
        "split_v4: IPv4 without options"
    );
    let step = max_data / 8 * 8;
    assert!(step > 0, "split_v4: max_data below 8");
    let ip = Ip4 {
        src: Ipv4Addr::from([pkt[12], pkt[13], pkt[14], pkt[15]]),
        dst: Ipv4Addr::from([pkt[16], pkt[17], pkt[18], pkt[19]]),
        ttl: pkt[8],
        tos: pkt[1],
        id: u16::from_be_bytes([pkt[4], pkt[5]]),
        df: false,
        options: Vec::new(),
    };
    let data = &pkt[20..];
    data.chunks(step)
        .enumerate()
        .map(|(i, chunk)| {
            let offset = i * step;
            let more = offset + chunk.len() < data.len();
            ip.fragment(pkt[9], offset as u16, more, chunk)
        })
        .collect()
}

/// Split an unfragmented IPv6 packet into fragments of at most `max_data`
/// fragmentable bytes each (rounded down to a multiple of 8), with Fragment
/// Identification `id`. The unfragmentable part is the fixed header plus any
/// leading Hop-by-Hop, Destination Options and Routing headers.
pub fn split_v6(pkt: &[u8], max_data: usize, id: u32) -> Vec<Vec<u8>> {
    assert!(pkt.len() >= 40 && pkt[0] >> 4 == 6, "split_v6: not IPv6");
    let step = max_data / 8 * 8;
    assert!(step > 0, "split_v6: max_data below 8");
    // Walk the unfragmentable extension headers; remember where the last
    // next-header field is so the Fragment header can be spliced in.
    let mut next_at = 6;
    let mut at = 40;
    while matches!(
        pkt[next_at],
        proto::HOP_BY_HOP | proto::DEST_OPTS | proto::ROUTING
    ) {
        let len = (usize::from(pkt[at + 1]) + 1) * 8;
        next_at = at;
        at += len;
    }
    let (head, data) = pkt.split_at(at);
    let upper = pkt[next_at];
    data.chunks(step)
        .enumerate()
        .map(|(i, chunk)| {
            let offset = i * step;
            let more = offset + chunk.len() < data.len();
            let frag = Ext6::Fragment {
                offset: offset as u16,
                more,
                id,
            }
            .bytes(upper);
            let mut out = head.to_vec();
            out[next_at] = proto::FRAGMENT;
            out.extend_from_slice(&frag);
            out.extend_from_slice(chunk);
            let plen = (out.len() - 40) as u16;
            out[4..6].copy_from_slice(&plen.to_be_bytes());
            out
        })
        .collect()
}
