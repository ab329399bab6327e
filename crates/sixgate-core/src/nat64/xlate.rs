//! The NAT64 step of the RFC 7915 paths (RFC 6146 §3.5 feeding §3.6 / §3.7): what
//! the tables say a packet's IPv4 source (6→4) or IPv6 destination (4→6) is, with
//! the new port, including the packets quoted in ICMP errors (looked up, never
//! refreshed, never created). Fragments after the first reuse what their first
//! fragment got.

use super::config::Proto;
use super::packet::{self, Ports, Which};
use crate::packet::ipv4::{self, Ipv4Packet};
use crate::packet::ipv6::{self, Ipv6Packet};
use crate::packet::l4::ICMP_HEADER_LEN;
use crate::translator::Translator;
use crate::verdict::DropReason;

/// 6→4: the packet's new source, and its new source port.
pub(crate) struct Out {
    pub src4: u32,
    /// New source port (ICMP: identifier) for the upper-layer header.
    pub port: Option<(Proto, u16)>,
    /// An ICMPv6 error: how its quoted packet's addresses and port change.
    pub inner: Option<InnerTo4>,
    /// §3.8: the IPv4 destination is ours and this worker owns it: go round again.
    pub hairpin: bool,
}

/// A quoted IPv6 packet in IPv4 terms: its new addresses, and which of its ports
/// becomes what (NAT64: the destination, the IPv6 host's; the MAP-T CE: the
/// source, the LAN host's).
pub(crate) struct InnerTo4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub proto: Proto,
    pub which: Which,
    pub port: u16,
}

/// 4→6: the packet's new destination, and its new destination port.
pub(crate) struct In {
    pub dst6: u128,
    pub port: Option<(Proto, u16)>,
    /// An ICMPv4 error: how its quoted packet's addresses and port change.
    pub inner: Option<InnerTo6>,
}

/// A quoted IPv4 packet in IPv6 terms: its new addresses, and which of its ports
/// becomes what (NAT64: the source, sent from pool4; the MAP-T CE: the
/// destination, the MAP address's).
pub(crate) struct InnerTo6 {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub proto: Proto,
    pub which: Which,
    pub port: u16,
}

/// The remote "port" of a session. An ICMP query session (§3.5.3) is one per
/// (BIB entry, remote address): the identifier is the BIB's on each side, and it
/// differs between the sides when it could not be kept, so it is no part of the
/// remote's key.
#[inline]
fn remote_port(proto: Proto, port: u16) -> u16 {
    if proto == Proto::Icmp { 0 } else { port }
}

fn v6_words(a: u128) -> [u64; 2] {
    [(a >> 64) as u64, a as u64]
}

/// 6→4 (`data` is the whole IPv6 packet, `dst4` its mapped destination).
pub(crate) fn v6_to_v4(
    t: &mut Translator,
    data: &[u8],
    p: &Ipv6Packet,
    dst4: u32,
    icmp_error: bool,
    now_ns: u64,
) -> Result<Out, DropReason> {
    let (src6, dst6) = (
        u128::from_be_bytes(p.hdr.src),
        u128::from_be_bytes(p.hdr.dst),
    );
    let map = &t.cfg.map;
    let Some(n) = t.nat64.as_deref_mut() else {
        return Err(DropReason::SourceUntranslatable);
    };
    if icmp_error {
        // §3.5 / RFC 7915 §5.3: an error about a packet an IPv4 host sent in.
        use DropReason::IcmpInnerUntranslatable as Inner;
        let at = p.l4_off + ICMP_HEADER_LEN;
        let q = ipv6::parse(data.get(at..).ok_or(Inner)?, true).map_err(|_| Inner)?;
        if !q.is_first() {
            return Err(Inner);
        }
        let ql4 = data.get(at + q.l4_off..).ok_or(Inner)?;
        let ports = packet::ports(q.proto, ql4, true)?;
        let remote4 = map
            .map_v6(u128::from_be_bytes(q.hdr.src))
            .map_err(|_| Inner)?;
        let qdst6 = u128::from_be_bytes(q.hdr.dst);
        let (v4, port4) = n
            .session_of_inbound(
                ports.proto,
                qdst6,
                ports.dport,
                remote4,
                remote_port(ports.proto, ports.sport),
            )
            .ok_or(DropReason::NoBibEntry)?;
        // §3.8: an error about a hairpinned packet goes back to its sender,
        // whose pool4 transport address is the quoted source, like any other
        // packet (the worker owning that port translates it back).
        let hairpin = n.in_pool4(dst4) && (n.workers == 1 || n.owns_port(ports.sport));
        return Ok(Out {
            src4: v4,
            port: None,
            inner: Some(InnerTo4 {
                src: remote4.to_be_bytes(),
                dst: v4.to_be_bytes(),
                proto: ports.proto,
                which: Which::Destination,
                port: port4,
            }),
            hairpin,
        });
    }
    let id = p.frag.map_or(0, |f| f.id);
    let key = {
        let [a, b] = v6_words(src6);
        let [c, d] = v6_words(dst6);
        [1, a, b, c ^ d.rotate_left(17), u64::from(id)]
    };
    if !p.is_first() {
        let src4 = n
            .fragment_recall(&key, now_ns)
            .ok_or(DropReason::FragmentUntracked)? as u32;
        return Ok(Out {
            src4,
            port: None,
            inner: None,
            hairpin: n.workers == 1 && n.in_pool4(dst4),
        });
    }
    let l4 = data
        .get(p.l4_off..p.total_len)
        .ok_or(DropReason::Malformed)?;
    let Ports {
        proto,
        sport,
        dport,
        flags,
    } = packet::ports(p.proto, l4, false)?;
    let (src4, port4) = n.outbound(
        proto,
        src6,
        sport,
        dst4,
        remote_port(proto, dport),
        flags,
        now_ns,
    )?;
    if p.is_fragmented() {
        n.fragment_remember(&key, u128::from(src4), now_ns);
        // §3.4: later fragments that came before it go after it.
        t.release_pending |= t.early.first_translated(|e| e.key6(p));
    }
    let hairpin = n.in_pool4(dst4) && (n.workers == 1 || n.owns_port(dport));
    Ok(Out {
        src4,
        port: Some((proto, port4)),
        inner: None,
        hairpin,
    })
}

/// 4→6 for a packet to a pool4 address (`data` is the whole IPv4 packet).
pub(crate) fn v4_to_v6(
    t: &mut Translator,
    data: &[u8],
    p: &Ipv4Packet,
    icmp_error: bool,
    now_ns: u64,
) -> Result<In, DropReason> {
    let map = &t.cfg.map;
    let Some(n) = t.nat64.as_deref_mut() else {
        return Err(DropReason::DestinationUntranslatable);
    };
    let h = &p.hdr;
    let (src4, dst4) = (u32::from_be_bytes(h.src), u32::from_be_bytes(h.dst));
    if icmp_error {
        // §3.5 / RFC 7915 §4.3: an error about a packet we sent out from pool4.
        use DropReason::IcmpInnerUntranslatable as Inner;
        let at = p.ihl + ICMP_HEADER_LEN;
        let q = ipv4::parse(data.get(at..).ok_or(Inner)?, true).map_err(|_| Inner)?;
        if q.hdr.frag_offset() != 0 {
            return Err(Inner);
        }
        let ql4 = data.get(at + q.ihl..).ok_or(Inner)?;
        let ports = packet::ports(q.hdr.proto, ql4, true)?;
        let (qsrc, qdst) = (u32::from_be_bytes(q.hdr.src), u32::from_be_bytes(q.hdr.dst));
        let (v6, port6) = n
            .session_of_outbound(
                ports.proto,
                qsrc,
                ports.sport,
                qdst,
                remote_port(ports.proto, ports.dport),
            )
            .ok_or(DropReason::NoBibEntry)?;
        let remote6 = map.map_v4(qdst).map_err(|_| Inner)?;
        return Ok(In {
            dst6: v6,
            port: None,
            inner: Some(InnerTo6 {
                src: v6.to_be_bytes(),
                dst: remote6.to_be_bytes(),
                proto: ports.proto,
                which: Which::Source,
                port: port6,
            }),
        });
    }
    let key = [
        2,
        u64::from(src4) << 32 | u64::from(dst4),
        u64::from(h.proto) << 16 | u64::from(h.id.get()),
    ];
    if h.frag_offset() != 0 {
        let dst6 = n
            .fragment_recall(&key, now_ns)
            .ok_or(DropReason::FragmentUntracked)?;
        return Ok(In {
            dst6,
            port: None,
            inner: None,
        });
    }
    let l4 = data.get(p.ihl..p.total_len).ok_or(DropReason::Malformed)?;
    let Ports {
        proto,
        sport,
        dport,
        flags,
    } = packet::ports(h.proto, l4, false)?;
    let (dst6, port6) = n.inbound(
        proto,
        src4,
        remote_port(proto, sport),
        dst4,
        dport,
        flags,
        (data, t.partial_csum),
        now_ns,
    )?;
    if h.mf() {
        n.fragment_remember(&key, dst6, now_ns);
        // §3.4: later fragments that came before it go after it.
        t.release_pending |= t.early.first_translated(|e| e.key4(h));
    }
    Ok(In {
        dst6,
        port: Some((proto, port6)),
        inner: None,
    })
}
