//! RFC 7915 §5.2 and §5.3: an ICMPv6 error becomes an ICMPv4 error, and the IPv6
//! packet it quotes becomes the IPv4 packet the IPv4 host originally sent.
//!
//! In place: the quoted upper-layer bytes stay where they are; the three new
//! headers (outer IPv4, ICMPv4, inner IPv4: 48 bytes) are written just before them,
//! inside the 88+ bytes the IPv6 headers occupied.

use super::icmp_informational;
use super::icmp_map::{self, Rest, v6 as icmp6};
use super::mtu;
use super::transport;
use super::v6_to_v4::Outer;
use crate::checksum;
use crate::icmp_error::ICMPV4_ERROR_MAX;
use crate::nat64::packet::rewrite_port;
use crate::nat64::xlate::InnerTo4;
use crate::packet::ipv4::{self, DF, MF};
use crate::packet::ipv6::{self, nh};
use crate::packet::l4::ICMP_HEADER_LEN;
use crate::packet::{PacketBuf, ipv6::Ipv6Packet};
use crate::rfc4884;
use crate::translator::Translator;
use crate::verdict::{DropReason, Verdict};
use zerocopy::IntoBytes;

/// Translate the ICMPv6 error in `pkt` (outer header already parsed as `p`).
#[inline(never)]
pub(crate) fn translate_error(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    p: &Ipv6Packet,
    out: &Outer,
    nat: Option<&InnerTo4>,
) -> Verdict {
    use DropReason::IcmpInnerUntranslatable as Inner;
    // §5.3: an ICMP error's checksum covers the whole message; fragments can't be fixed.
    if p.is_fragmented() {
        return Verdict::Dropped(DropReason::FragmentedIcmp);
    }
    let (buf, start, len) = pkt.raw();
    let icmp_at = start + p.l4_off;
    let end = start + len;
    if end - icmp_at < ICMP_HEADER_LEN + ipv6::HEADER_LEN {
        return Verdict::Dropped(Inner);
    }
    let b = &buf[icmp_at..icmp_at + 8];
    let (ty, code, rest) = (b[0], b[1], [b[4], b[5], b[6], b[7]]);
    let m = match icmp_map::icmp6_to_icmp4(ty, code, rest) {
        Ok(m) => m,
        Err(r) => return Verdict::Dropped(r),
    };

    // §5.3: the quoted packet, possibly truncated.
    let inner_at = icmp_at + ICMP_HEADER_LEN;
    let q = match ipv6::parse(&buf[inner_at..end], true) {
        Ok(q) => q,
        Err(_) => return Verdict::Dropped(Inner),
    };
    let qh = q.hdr;
    // RFC 4884: a length attribute says where the quoted datagram's field ends
    // (padding and an extension structure may follow).
    let (end, ext, whole) = match rfc4884::length_attribute(true, ty) {
        Some((at, unit)) if rest[at - 4] != 0 => {
            let b = rfc4884::bounds(inner_at, end, rest[at - 4], unit, q.total_len, q.l4_off);
            (b.end, b.ext, b.whole)
        }
        _ => (end, None, false),
    };
    let (qsrc, qdst) = match nat {
        // RFC 6146: the quoted packet came in through a session.
        Some(n) => (n.src, n.dst),
        None => match (t.cfg.map.v6_to_v4(&qh.src), t.cfg.map.v6_to_v4(&qh.dst)) {
            (Ok(s), Ok(d)) => (s, d),
            _ => return Verdict::Dropped(Inner),
        },
    };
    // §5.3: the quoted packet is judged as the outer one would be (§5.1): ICMPv4
    // or AH inside IPv6, or an IPv4 address no router forwards, could not have
    // been translated, so nothing quoting it is.
    let (s4, d4) = (u32::from_be_bytes(qsrc), u32::from_be_bytes(qdst));
    if ipv6::is_untranslatable_protocol_v6(q.proto)
        || ipv4::may_be_never_forwarded(s4, d4)
            && (t.cfg.never_forwarded(s4) || t.cfg.never_forwarded(d4))
    {
        return Verdict::Dropped(Inner);
    }
    let q_l4_at = inner_at + q.l4_off;
    // The original datagram's upper-layer length, from its header (not what survived).
    let q_l4_len = q.total_len.saturating_sub(q.l4_off);
    let q_proto = if q.proto == nh::ICMPV6 {
        nh::ICMP
    } else {
        q.proto
    };
    if 20 + q_l4_len > usize::from(u16::MAX) {
        return Verdict::Dropped(Inner);
    }
    if q.is_first() {
        let ql4 = &mut buf[q_l4_at..end];
        if q.proto == nh::ICMPV6 {
            let pseudo = checksum::v6_pseudo(&qh.src, &qh.dst, q_l4_len as u32, nh::ICMPV6);
            if let Err(r) = icmp_informational::translate_quoted(
                ql4,
                icmp_map::icmp6_to_icmp4,
                icmp6::is_error,
                pseudo,
                0,
            ) {
                return Verdict::Dropped(r);
            }
        } else {
            let old = checksum::v6_addr_sum(&qh.src, &qh.dst);
            let new = checksum::v4_addr_sum(&qsrc, &qdst);
            if let Err(r) = transport::update_pseudo_header(ql4, q.proto, old, new, true) {
                return Verdict::Dropped(r);
            }
        }
        if let Some(n) = nat {
            rewrite_port(ql4, n.proto, n.which, n.port, false);
        }
    }

    // §5.3 inner header: as §5.1, but the TTL is not decremented.
    let (qid, qflags) = match q.frag {
        Some(f) => (
            f.id as u16,
            if f.more { MF } else { 0 } | (f.offset / 8) as u16,
        ),
        // §5.1 Flags, from the size the quoted packet had as IPv4.
        None if 20 + q_l4_len > super::v6_to_v4::DF_THRESHOLD_V4 => (0, DF),
        None => (0, 0),
    };
    let inner = ipv4::header(
        qh.traffic_class(),
        (20 + q_l4_len) as u16,
        qid,
        qflags,
        qh.hop_limit,
        q_proto,
        qsrc,
        qdst,
    );

    // §5.2 rest-of-header: MTU (−20, or −28 when the quoted packet had a Fragment
    // header, and no more than either link allows) or the Figure 6 pointer.
    let rest = match m.rest {
        Rest::Mtu => {
            let mtu6 = u32::from_be_bytes(rest);
            let (v4, v6) = (t.cfg.ipv4_mtu, t.cfg.ipv6_mtu);
            let mtu4 = mtu::ptb_to_frag_needed_links(mtu6, q.frag.is_some(), v4, v6);
            [0, 0, (mtu4 >> 8) as u8, mtu4 as u8]
        }
        Rest::Pointer(ptr) => [ptr, 0, 0, 0],
        Rest::Zero | Rest::Copy => [0; 4],
    };

    const HDRS: usize = ipv4::HEADER_LEN + ICMP_HEADER_LEN + ipv4::HEADER_LEN;
    let new_start = q_l4_at - HDRS;
    let mut total = (HDRS + (end - q_l4_at)).min(ICMPV4_ERROR_MAX);
    let mut rest = rest;
    // §5.2 "ICMP Error Payload" / RFC 4884: lay the field out anew in 32-bit
    // words (cut to fit 576 bytes), move the extension after it, set the
    // length attribute; drop the extension only if it cannot fit.
    if let Some((from, len)) = ext
        && let Some((at4, unit4)) = rfc4884::length_attribute(false, m.ty)
    {
        let limit = new_start + ICMPV4_ERROR_MAX;
        let icmp = new_start + 20;
        if let Some(field) = rfc4884::place(buf, icmp, end, (from, len), unit4, whole, limit) {
            total = 28 + field + len;
            rest[at4 - 4] = (field / unit4) as u8;
        }
    }
    let outer = ipv4::header(
        out.tos,
        total as u16,
        out.id,
        out.flags,
        out.ttl,
        nh::ICMP,
        out.src,
        out.dst,
    );
    let o = &mut buf[new_start..new_start + total];
    o[..20].copy_from_slice(outer.as_bytes());
    o[20..28].copy_from_slice(&[m.ty, m.code, 0, 0, rest[0], rest[1], rest[2], rest[3]]);
    o[28..48].copy_from_slice(inner.as_bytes());
    // The message changed length and content: the one place a full sum is owed.
    let c = checksum::compute(0, &o[20..]);
    o[22..24].copy_from_slice(&c.to_be_bytes());
    pkt.set_window(new_start, total);
    Verdict::Translated
}
