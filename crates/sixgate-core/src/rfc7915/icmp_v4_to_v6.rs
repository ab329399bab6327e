//! RFC 7915 §4.2 and §4.3: an ICMPv4 error becomes an ICMPv6 error, and the IPv4
//! packet it quotes becomes the IPv6 packet the IPv6 host originally sent.
//!
//! In place: the quoted upper-layer bytes stay; the new headers (outer IPv6,
//! ICMPv6, inner IPv6, and a Fragment header if the quoted packet was a fragment:
//! 88 or 96 bytes) are written before them, reaching into the headroom.

use super::icmp_informational;
use super::icmp_map::{self, Rest, v4 as icmp4};
use super::mtu;
use super::transport;
use super::v4_to_v6::Outer6;
use crate::checksum;
use crate::config::Config;
use crate::icmp_error::ICMPV6_ERROR_MAX;
use crate::nat64::packet::rewrite_port;
use crate::nat64::xlate::InnerTo6;
use crate::packet::PacketBuf;
use crate::packet::ipv4::{self, Ipv4Packet};
use crate::packet::ipv6::{self, nh};
use crate::packet::l4::ICMP_HEADER_LEN;
use crate::rfc4884;
use crate::translator::Translator;
use crate::verdict::{DropReason, Verdict};
use zerocopy::IntoBytes;

/// Translate the ICMPv4 error in `pkt` (outer header already parsed as `p`).
#[inline(never)]
pub(crate) fn translate_error(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    p: &Ipv4Packet,
    out: &Outer6,
    nat: Option<&InnerTo6>,
    hairpin: bool,
) -> Verdict {
    translate::<false>(t, pkt, p, out, nat, hairpin)
}

/// [`translate_error`] for an RFC 4884 multi-part message.
#[cold]
#[inline(never)]
fn multipart(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    p: &Ipv4Packet,
    out: &Outer6,
    nat: Option<&InnerTo6>,
    hairpin: bool,
) -> Verdict {
    translate::<true>(t, pkt, p, out, nat, hairpin)
}

/// The translation; `MULTIPART`: the message has an RFC 4884 length attribute.
#[inline(always)]
fn translate<const MULTIPART: bool>(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    p: &Ipv4Packet,
    out: &Outer6,
    nat: Option<&InnerTo6>,
    hairpin: bool,
) -> Verdict {
    use DropReason::IcmpInnerUntranslatable as Inner;
    if p.hdr.is_fragment() {
        return Verdict::Dropped(DropReason::FragmentedIcmp);
    }
    let (buf, start, len) = pkt.raw();
    let icmp_at = start + p.ihl;
    let end = start + len;
    if end - icmp_at < ICMP_HEADER_LEN + ipv4::HEADER_LEN {
        return Verdict::Dropped(Inner);
    }
    let b = &buf[icmp_at..icmp_at + 8];
    let (ty, code, rest) = (b[0], b[1], [b[4], b[5], b[6], b[7]]);
    // RFC 4884: a message whose length attribute is set takes the longer road
    // (its quote is padded, an extension may follow); most have none.
    if !MULTIPART
        && let Some((at, _)) = rfc4884::length_attribute(false, ty)
        && b_rest(rest, at) != 0
    {
        return multipart(t, pkt, p, out, nat, hairpin);
    }
    let m = match icmp_map::icmp4_to_icmp6(ty, code, rest) {
        Ok(m) => m,
        Err(r) => return Verdict::Dropped(r),
    };

    // §4.3: the quoted packet, possibly truncated.
    let inner_at = icmp_at + ICMP_HEADER_LEN;
    let q = match ipv4::parse(&buf[inner_at..end], true) {
        Ok(q) => q,
        Err(_) => return Verdict::Dropped(Inner),
    };
    let qh = q.hdr;
    // RFC 4884: a length attribute says where the quoted datagram's field ends
    // (padding and an extension structure may follow).
    let (end, ext, whole) = match rfc4884::length_attribute(false, ty) {
        Some((at, unit)) if MULTIPART => {
            let b = rfc4884::bounds(inner_at, end, b_rest(rest, at), unit, q.total_len, q.ihl);
            (b.end, b.ext, b.whole)
        }
        _ => (end, None, false),
    };
    let (qsrc, qdst) = match nat {
        // RFC 6146: the quoted packet went out through a session (which only
        // TCP, UDP and ICMP queries from pool4 have).
        Some(n) => (n.src, n.dst),
        // §4.3: the quoted packet is judged as the outer one would be (§4.1):
        // a protocol number with no IPv6 meaning, or an address no router
        // forwards, could not have been translated, so nothing quoting it is.
        None if quoted_untranslatable(&t.cfg, &qh) => return Verdict::Dropped(Inner),
        None => {
            let map = &t.cfg.map;
            // RFC 7757 §4.3, Appendix B: in a hairpinned error the quoted
            // packet's destination is the pool6 form its sender used.
            let qdst = u32::from_be_bytes(qh.dst);
            let qdst = if hairpin {
                map.map_v4_pool6(qdst)
            } else {
                map.map_v4(qdst)
            };
            match (map.v4_to_v6(&qh.src), qdst) {
                (Ok(s), Ok(d)) => (s, d.to_be_bytes()),
                _ => return Verdict::Dropped(Inner),
            }
        }
    };
    let q_l4_at = inner_at + q.ihl;
    let q_l4_len = q.total_len - q.ihl;
    let q_nh = if qh.proto == nh::ICMP {
        nh::ICMPV6
    } else {
        qh.proto
    };
    if qh.frag_offset() == 0 {
        let ql4 = &mut buf[q_l4_at..end];
        if qh.proto == nh::ICMP {
            let pseudo6 = checksum::v6_pseudo(&qsrc, &qdst, q_l4_len as u32, nh::ICMPV6);
            if let Err(r) = icmp_informational::translate_quoted(
                ql4,
                icmp_map::icmp4_to_icmp6,
                icmp4::is_error,
                0,
                pseudo6,
            ) {
                return Verdict::Dropped(r);
            }
        } else {
            let old = checksum::v4_addr_sum(&qh.src, &qh.dst);
            let new = checksum::v6_addr_sum(&qsrc, &qdst);
            if let Err(r) = transport::update_pseudo_header(ql4, qh.proto, old, new, true) {
                return Verdict::Dropped(r);
            }
        }
        if let Some(n) = nat {
            rewrite_port(ql4, n.proto, n.which, n.port, false);
        }
    }

    // §4.2 rest-of-header: Packet Too Big MTU, or the Figure 3 pointer (32-bit).
    let rest = match m.rest {
        Rest::Mtu => {
            let mtu4 = u16::from_be_bytes([rest[2], rest[3]]);
            let c = &t.cfg;
            let len = qh.total_len.get();
            mtu::frag_needed_to_ptb_links(mtu4, len, &c.mtu_plateaus, c.ipv6_mtu, c.ipv4_mtu)
                .to_be_bytes()
        }
        Rest::Pointer(ptr) => [0, 0, 0, ptr],
        Rest::Zero | Rest::Copy => [0; 4],
    };

    // §4.3 inner header: as §4.1 but the hop limit is not decremented; a quoted
    // fragment keeps a Fragment header so the IPv6 host can match it.
    let q_frag = qh.is_fragment();
    let frag_len = if q_frag { ipv6::FRAGMENT_HEADER_LEN } else { 0 };
    let hdrs = ipv6::HEADER_LEN + ICMP_HEADER_LEN + ipv6::HEADER_LEN + frag_len;
    let Some(new_start) = q_l4_at.checked_sub(hdrs) else {
        return Verdict::Dropped(DropReason::NoHeadroom);
    };
    let q_tc = if t.cfg.reset_traffic_class { 0 } else { qh.tos };
    let q_next = if q_frag { nh::FRAGMENT } else { q_nh };
    let q_payload = (q_l4_len + frag_len).min(usize::from(u16::MAX)) as u16;
    let inner = ipv6::header(q_tc, q_payload, q_next, qh.ttl, qsrc, qdst);

    let mut total = (hdrs + (end - q_l4_at)).min(ICMPV6_ERROR_MAX);
    let mut rest = rest;
    // §4.2 "ICMP Error Payload" / RFC 4884: lay the field out anew in 64-bit
    // words (cut to fit 1280 bytes), move the extension after it, set the
    // length attribute; drop the extension only if it cannot fit.
    if MULTIPART
        && let Some((from, len)) = ext
        && let Some((at6, unit6)) = rfc4884::length_attribute(true, m.ty)
    {
        let limit = new_start + ICMPV6_ERROR_MAX;
        let icmp = new_start + 40;
        if let Some(field) = rfc4884::place(buf, icmp, end, (from, len), unit6, whole, limit) {
            total = 48 + field + len;
            rest[at6 - 4] = (field / unit6) as u8;
        }
    }
    let icmp_len = total - ipv6::HEADER_LEN;
    let outer = ipv6::header(
        out.tc,
        icmp_len as u16,
        nh::ICMPV6,
        out.hop_limit,
        out.src,
        out.dst,
    );
    let o = &mut buf[new_start..new_start + total];
    o[..40].copy_from_slice(outer.as_bytes());
    o[40..48].copy_from_slice(&[m.ty, m.code, 0, 0, rest[0], rest[1], rest[2], rest[3]]);
    o[48..88].copy_from_slice(inner.as_bytes());
    if q_frag {
        let fh = ipv6::fragment_header(q_nh, qh.frag_offset(), qh.mf(), u32::from(qh.id.get()));
        o[88..96].copy_from_slice(fh.as_bytes());
    }
    // The message changed length and content: a full sum is owed (§4.3).
    let pseudo = checksum::v6_pseudo(&out.src, &out.dst, icmp_len as u32, nh::ICMPV6);
    let c = checksum::compute(pseudo, &o[40..]);
    o[42..44].copy_from_slice(&c.to_be_bytes());
    pkt.set_window(new_start, total);
    Verdict::Translated
}

/// The outer packet's rules (§4.1; RFC 1812 §5.3.7, 240/4 as `class_e` says)
/// applied to a quoted one.
#[inline(always)]
fn quoted_untranslatable(cfg: &Config, qh: &ipv4::Ipv4Header) -> bool {
    ipv6::is_untranslatable_protocol_v4(qh.proto)
        || ipv4::may_be_never_forwarded_octets(qh.src[0], qh.dst[0])
            && quoted_never_forwarded(cfg, qh)
}

#[cold]
#[inline(never)]
fn quoted_never_forwarded(cfg: &Config, qh: &ipv4::Ipv4Header) -> bool {
    cfg.never_forwarded(u32::from_be_bytes(qh.src))
        || cfg.never_forwarded(u32::from_be_bytes(qh.dst))
}

/// The rest-of-header byte at ICMP header offset `at` (4..8).
#[inline]
fn b_rest(rest: [u8; 4], at: usize) -> u8 {
    rest[at - 4]
}
