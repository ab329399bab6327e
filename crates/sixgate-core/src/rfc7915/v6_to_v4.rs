//! RFC 7915 §5: translating from IPv6 to IPv4.

use super::icmp_informational;
use super::icmp_map::{self, v6 as icmp6};
use super::{icmp_fragments, icmp_v6_to_v4, transport};
use crate::checksum;
use crate::config::HairpinMode;
use crate::hash;
use crate::icmp_error::{self, ICMPV4_ERROR_MAX, Owed};
use crate::mapt;
use crate::nat64::early_fragments;
use crate::nat64::{self, packet::Which};
use crate::packet::ipv4::{self, DF, MF};
use crate::packet::ipv6::{self, Ipv6Error, Ipv6Packet, nh};
use crate::packet::{PacketBuf, Scratch};
use crate::translator::Translator;
use crate::verdict::{DropReason, Verdict};
use zerocopy::IntoBytes;

/// RFC 7915 §5.1 Flags: a translated IPv4 packet up to this size has DF=0.
pub const DF_THRESHOLD_V4: usize = 1260;

/// Translate one IPv6 packet to IPv4 in place (§5.1), or hairpin it back to IPv6
/// (RFC 7757 §4).
pub fn translate(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    scratch: &mut Scratch,
    now_ns: u64,
) -> Verdict {
    // MAP-T gets its own instance: its code inlined into the SIIT one costs
    // that in register pressure.
    if t.mapt.is_some() {
        run::<true>(t, pkt, scratch, now_ns)
    } else {
        run::<false>(t, pkt, scratch, now_ns)
    }
}

/// [`translate`]; `MAPT`: MAP-T may be on (`t.mapt` is tested); without it,
/// it is off.
fn run<const MAPT: bool>(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    scratch: &mut Scratch,
    now_ns: u64,
) -> Verdict {
    let p = match ipv6::parse(pkt.data(), false) {
        Ok(p) => p,
        Err(Ipv6Error::Malformed) => return Verdict::Dropped(DropReason::Malformed),
        Err(e @ (Ipv6Error::UnknownExtension | Ipv6Error::HeaderChain)) => {
            // §5.4: administratively prohibited (not to a multicast
            // destination, not about an ICMPv6 message).
            let quiet = ipv6::is_multicast(&pkt.data()[24..40].try_into().unwrap_or([0; 16]))
                || carries_icmpv6(pkt.data());
            let r = if e == Ipv6Error::HeaderChain {
                DropReason::ExtensionHeaderChain
            } else {
                DropReason::UnknownExtensionHeader
            };
            return icmp_error::prohibited_v6(t, pkt.data(), scratch, now_ns, r, quiet);
        }
        Err(Ipv6Error::RoutingHeader { pointer }) => {
            // §5.1: Parameter Problem, Erroneous header field, pointing at Segments
            // Left; never about an ICMPv6 error (RFC 4443 §2.4 (e.1)).
            let quiet = ipv6::is_multicast(&pkt.data()[24..40].try_into().unwrap_or([0; 16]))
                || carries_icmpv6_error(pkt.data());
            let owed = Owed {
                ty: icmp6::PARAM_PROBLEM,
                code: 0,
                rest: pointer.to_be_bytes(),
                reason: DropReason::RoutingHeader,
            };
            return icmp_error::reply_v6(t, pkt.data(), scratch, now_ns, owed, quiet);
        }
    };
    // Drop link-layer padding beyond Payload Length.
    let (start, total) = (pkt.start(), p.total_len);
    pkt.set_window(start, total);
    let h = p.hdr;
    let l4_len = total - p.l4_off;

    // Is this an ICMPv6 error? Needed for the "no error about an error" rule.
    let icmp_type =
        (p.proto == nh::ICMPV6 && p.is_first()).then(|| pkt.data().get(p.l4_off).copied());
    let icmp_error = match icmp_type {
        Some(None) => return Verdict::Dropped(DropReason::Malformed),
        Some(Some(ty)) => icmp6::is_error(ty),
        None => false,
    };
    // §5.1 copies Next Header into Protocol; ICMPv4 inside IPv6 has no meaning and
    // AH cannot survive new addresses.
    if ipv6::is_untranslatable_protocol_v6(p.proto) {
        // §5.4: administratively prohibited (the packet is no ICMPv6 message).
        let quiet = !p.is_first() || ipv6::is_multicast(&h.dst);
        let r = DropReason::UnknownProtocol;
        return icmp_error::prohibited_v6(t, pkt.data(), scratch, now_ns, r, quiet);
    }
    // One test on the way for the three reasons below (the host's own
    // multicast is to a multicast group).
    if ipv6::is_multicast(&h.dst)
        || ipv6::is_multicast(&h.src)
        || ipv6::is_unspecified_or_loopback(&h.src)
    {
        return Verdict::Dropped(bad_address(&h.src, &h.dst));
    }

    // §5.1 TTL: the translator is a router; Hop Limit 1 expires here.
    if t.cfg.decrement_hop_limit && h.hop_limit <= 1 {
        let owed = Owed {
            ty: icmp6::TIME_EXCEEDED,
            code: 0,
            rest: [0; 4],
            reason: DropReason::HopLimitExceeded,
        };
        let quiet = icmp_error || !p.is_first();
        return icmp_error::reply_v6(t, pkt.data(), scratch, now_ns, owed, quiet);
    }

    // §5.1 addresses: EAM, then pool6 (RFC 7757 §3.3).
    // Each address becomes an integer once; mapping and checksum sums work on those.
    let (src6, dst6) = (u128::from_be_bytes(h.src), u128::from_be_bytes(h.dst));
    // RFC 7599 §6: with MAP-T the rules and ports give both addresses.
    let mapt = if MAPT && t.mapt.is_some() {
        match mapt::xlate::v6_to_v4(t, pkt.data(), &p, icmp_error, now_ns) {
            Ok(o) => Some(o),
            // RFC 7599 §8 with RFC 6146 §3.4: it waits for its first.
            Err(DropReason::FragmentUntracked) => {
                let key = t.early.key6(&p);
                return early_fragments::hold(t, key, pkt.data(), now_ns);
            }
            Err(r) => return Verdict::Dropped(r),
        }
    } else {
        None
    };
    let dst4 = match mapt
        .as_ref()
        .map_or_else(|| t.cfg.map.map_v6(dst6), |m| Ok(m.dst4))
    {
        Ok(a) => a,
        Err(e) => {
            // §5.4: tell the sender, as a router with no route would; a
            // destination RFC 6052 §3.1 forbids is refused, not unknown:
            // administratively prohibited, as §5.4 says for what we discard.
            let reason = e.drop_reason(false);
            let code = match reason {
                DropReason::WkpNonGlobal => icmp6::CODE_ADMIN_PROHIBITED,
                _ => icmp6::CODE_ADDRESS_UNREACHABLE,
            };
            let owed = Owed {
                ty: icmp6::DEST_UNREACH,
                code,
                rest: [0; 4],
                reason,
            };
            return icmp_error::reply_v6(
                t,
                pkt.data(),
                scratch,
                now_ns,
                owed,
                icmp_error || !p.is_first(),
            );
        }
    };
    // RFC 6146: with NAT64 on, a source without an EAM entry gets its pool4
    // transport address from the BIB and session tables.
    let nat = if mapt.is_none() && t.nat64.is_some() && t.cfg.map.eam.lookup_v6(src6).is_none() {
        match nat64::xlate::v6_to_v4(t, pkt.data(), &p, dst4, icmp_error, now_ns) {
            Ok(o) => Some(o),
            // RFC 6146 §3.5.1.1, §3.5.2.1, §3.5.3: no IPv4 transport address
            // could be allocated: Destination Unreachable, address unreachable.
            Err(
                r @ (DropReason::Pool4Exhausted
                | DropReason::DeterministicPortsFull
                | DropReason::DeterministicUnmapped),
            ) => {
                let owed = Owed {
                    ty: icmp6::DEST_UNREACH,
                    code: icmp6::CODE_ADDRESS_UNREACHABLE,
                    rest: [0; 4],
                    reason: r,
                };
                let quiet = icmp_error || !p.is_first();
                return icmp_error::reply_v6(t, pkt.data(), scratch, now_ns, owed, quiet);
            }
            // RFC 6146 §3.4: a later fragment before its first waits for it.
            Err(DropReason::FragmentUntracked) => {
                let key = t.early.key6(&p);
                return early_fragments::hold(t, key, pkt.data(), now_ns);
            }
            Err(r) => return Verdict::Dropped(r),
        }
    } else {
        None
    };
    let mut src4 = match (&nat, &mapt) {
        (Some(o), _) => o.src4,
        (_, Some(m)) => match m.src4 {
            Some(a) => a,
            None => rfc6791_source(t, &h.src),
        },
        (None, None) => match t.cfg.map.map_v6(src6) {
            Ok(a) => a,
            // RFC 6791: an ICMPv6 error from an IPv6 router with an unmappable address.
            Err(_) if icmp_error => rfc6791_source(t, &h.src),
            Err(e) => {
                // §5.4: administratively prohibited.
                let quiet = p.proto == nh::ICMPV6 || !p.is_first();
                let r = e.drop_reason(true);
                return icmp_error::prohibited_v6(t, pkt.data(), scratch, now_ns, r, quiet);
            }
        },
    };
    // RFC 1812 §5.3.7, checked after mapping (pool6 can embed any address);
    // one test for both.
    if ipv4::may_be_never_forwarded(src4, dst4) {
        match never_forwarded(t, src4, dst4, icmp_error, &h.src) {
            Ok(s) => src4 = s,
            Err(r) => return Verdict::Dropped(r),
        }
    }
    let (src4_int, dst4_int) = (src4, dst4);
    let (src4, dst4) = (src4.to_be_bytes(), dst4.to_be_bytes());

    // RFC 7757 §4: the IPv4 destination, reached through pool6, is an EAM'd address
    // on our own IPv6 side. A destination that is itself an EAM entry's IPv6 side is
    // no hairpin: its host lives on the IPv4 side (a CLAT's customer, RFC 6877 §6.3).
    // MAP-T has no EAM entries (the rules map; its hairpin is the BR's own).
    let eam_hairpin = mapt.is_none()
        && t.cfg.map.eam.lookup_v4(dst4_int).is_some()
        && t.cfg.map.eam.lookup_v6(dst6).is_none();
    // RFC 6146 §3.8: back into IPv6 through the tables (or, when another worker
    // owns the destination port, out to the kernel, which routes it back to us).
    let hairpin = eam_hairpin
        || nat.as_ref().is_some_and(|o| o.hairpin)
        || mapt.as_ref().is_some_and(|m| m.hairpin);
    if eam_hairpin && nat.is_none() {
        let allowed = match t.cfg.hairpin {
            HairpinMode::Off => false,
            HairpinMode::Simple => icmp_error,
            HairpinMode::Intrinsic => true,
        };
        if !allowed {
            // §5.4: administratively prohibited.
            let quiet = p.proto == nh::ICMPV6 || !p.is_first();
            let r = DropReason::Hairpin;
            return icmp_error::prohibited_v6(t, pkt.data(), scratch, now_ns, r, quiet);
        }
    }

    // An IPv4 datagram's Total Length is 16 bits; IPv6 Payload Length without
    // extension headers can exceed it by 20.
    if 20 + l4_len > usize::from(u16::MAX) {
        return Verdict::Dropped(DropReason::PacketTooBig);
    }

    // Larger than the link it leaves on (when we know its MTU): the IPv4 one,
    // or for a hairpinned packet the IPv6 one (it never crosses IPv4).
    let link = if hairpin {
        t.cfg.ipv6_mtu.map(|m| (m, 40))
    } else {
        t.cfg.ipv4_mtu.map(|m| (m, 20))
    };
    let mut split4 = false;
    if let Some((mtu, hdr)) = link
        && hdr + l4_len > usize::from(mtu)
    {
        // §1.4, §5.1, §5.4: a packet its sender did not fragment (no Fragment header)
        // is not fragmented here either: it is sent back as too big, with the
        // link's MTU as IPv6 sees it (RFC 4443 §3.2: "the MTU of the next-hop
        // link"; RFC 8200 §5 lets a host keep 1280 when it is lower).
        if p.frag.is_none() && !icmp_error {
            let ptb = u32::from(mtu) + 40 - hdr as u32;
            let owed = Owed {
                ty: icmp6::PACKET_TOO_BIG,
                code: 0,
                rest: ptb.to_be_bytes(),
                reason: DropReason::PacketTooBig,
            };
            return icmp_error::reply_v6(t, pkt.data(), scratch, now_ns, owed, false);
        }
        // §5.1 / RFC 791: a fragment already (DF=0), so it is fragmented
        // further (in `finish`, or the hairpin's second half); a partial
        // checksum cannot be split (the data plane's contract).
        split4 = !t.partial_csum && !hairpin;
    }

    let proto4 = if p.proto == nh::ICMPV6 {
        // §5.2 on a fragmented Echo: its checksum needs the whole message's
        // length.
        if !icmp_error
            && p.frag.is_some()
            && let Some(v) = icmp_fragments::on_v6(t, pkt.data(), now_ns)
        {
            return v;
        }
        nh::ICMP
    } else {
        p.proto
    };
    let tos = if t.cfg.reset_tos {
        t.cfg.new_tos
    } else {
        h.traffic_class()
    };
    let ttl = if t.cfg.decrement_hop_limit {
        h.hop_limit - 1
    } else {
        h.hop_limit
    };

    if icmp_error {
        let mut out = Outer {
            tos,
            ttl,
            src: src4,
            dst: dst4,
            id: 0,
            flags: 0,
        };
        // §5.1 Flags: DF follows the size of the translated error, which is
        // cut to 576 bytes (RFC 1812 §4.3.2.3), not the IPv6 packet's.
        let len4 = (20 + l4_len).min(ICMPV4_ERROR_MAX);
        (out.id, out.flags) = identification(t, &p, len4, src4, dst4, proto4);
        let inner = nat
            .as_ref()
            .and_then(|o| o.inner.as_ref())
            .or(mapt.as_ref().and_then(|m| m.inner.as_ref()));
        let v = icmp_v6_to_v4::translate_error(t, pkt, &p, &out, inner);
        return finish(t, pkt, scratch, now_ns, v, hairpin, split4);
    }

    // §5.5 / §5.2: the upper-layer header, while the old header is still intact.
    let (buf, start, _) = pkt.raw();
    let l4 = &mut buf[start + p.l4_off..start + total];
    if let Some((proto, port)) = nat.as_ref().and_then(|o| o.port) {
        nat64::packet::rewrite_port(l4, proto, Which::Source, port, t.partial_csum);
    }
    if let Some((proto, which, port)) = mapt.as_ref().and_then(|m| m.port) {
        nat64::packet::rewrite_port(l4, proto, which, port, t.partial_csum);
    }
    if p.is_first() {
        if p.proto == nh::ICMPV6 {
            // §5.2: the ICMP checksum loses the pseudo-header, which names the
            // whole message's length (a fragment's waited for it above).
            let len = if p.is_fragmented() {
                match t.icmp_fragments.total.take() {
                    Some(n) => n,
                    None => return Verdict::Dropped(DropReason::FragmentedIcmp),
                }
            } else {
                l4_len as u32
            };
            if let Err(r) = icmp_informational::translate(
                l4,
                icmp_map::icmp6_to_icmp4,
                checksum::v6_pseudo(&h.src, &h.dst, len, nh::ICMPV6),
                0,
            ) {
                return Verdict::Dropped(r);
            }
        } else {
            // The address sums only TCP and UDP need (ICMP is summed whole).
            let v6_sum = checksum::v6_pair_sum(src6, dst6);
            let v4_sum = checksum::v4_pair_sum(src4_int, dst4_int);
            let r = if t.partial_csum {
                transport::update_partial(l4, p.proto, v6_sum, v4_sum)
            } else {
                match transport::update_pseudo_header(l4, p.proto, v6_sum, v4_sum, false) {
                    // §5.5: zero, invalid on IPv6 (the field was left alone).
                    Err(DropReason::UdpZeroChecksum) => {
                        udp_zero_checksum(t, l4, p.is_fragmented(), src4, dst4)
                    }
                    r => r,
                }
            };
            if let Err(r) = r {
                if r == DropReason::UdpZeroChecksum {
                    // §5.4 (with §4.5's policy): administratively prohibited.
                    return icmp_error::prohibited_v6(t, pkt.data(), scratch, now_ns, r, false);
                }
                return Verdict::Dropped(r);
            }
        }
    }

    let (id, flags) = identification(t, &p, 20 + l4_len, src4, dst4, proto4);
    let hdr = ipv4::header(
        tos,
        (20 + l4_len) as u16,
        id,
        flags,
        ttl,
        proto4,
        src4,
        dst4,
    );
    let new_start = start + p.l4_off - ipv4::HEADER_LEN;
    buf[new_start..new_start + ipv4::HEADER_LEN].copy_from_slice(hdr.as_bytes());
    pkt.set_window(new_start, ipv4::HEADER_LEN + l4_len);
    if p.proto == nh::ICMPV6 && p.frag.is_some() && t.icmp_fragments.has_ready() {
        let v = finish(
            t,
            pkt,
            scratch,
            now_ns,
            Verdict::Translated,
            hairpin,
            split4,
        );
        return t.release_held(v, true, pkt, scratch, now_ns);
    }
    finish(
        t,
        pkt,
        scratch,
        now_ns,
        Verdict::Translated,
        hairpin,
        split4,
    )
}

/// §5.4 ("unless the discarded packet is itself an ICMPv6 message"; RFC 4443
/// §2.4 (e)) for a packet whose header chain broke the rules: walk it leniently
/// (any order, at most 8 headers) to see whether ICMPv6 lies at its end.
#[cold]
#[inline(never)]
fn carries_icmpv6(data: &[u8]) -> bool {
    icmpv6_at(data).is_some()
}

/// RFC 4443 §2.4 (e.1): no ICMPv6 error is sent about an ICMPv6 error; found
/// by the same lenient walk, for a packet whose header chain we refuse.
#[cold]
#[inline(never)]
fn carries_icmpv6_error(data: &[u8]) -> bool {
    icmpv6_at(data)
        .and_then(|off| data.get(off))
        .is_some_and(|&ty| icmp6::is_error(ty))
}

/// Where the ICMPv6 header of a packet lies, by a lenient walk of its
/// extension headers (any order, at most 8).
fn icmpv6_at(data: &[u8]) -> Option<usize> {
    let (mut next, mut off) = (data.get(6).copied().unwrap_or(nh::NONE), ipv6::HEADER_LEN);
    for _ in 0..8 {
        match next {
            nh::HOP_BY_HOP | nh::ROUTING | nh::DEST_OPTS | nh::FRAGMENT => {
                let b = data.get(off..off + 2)?;
                off += if next == nh::FRAGMENT {
                    ipv6::FRAGMENT_HEADER_LEN
                } else {
                    (usize::from(b[1]) + 1) * 8
                };
                next = b[0];
            }
            nh::ICMPV6 => return Some(off),
            _ => return None,
        }
    }
    None
}

/// §5.5: an IPv6 UDP checksum of zero is invalid (RFC 8200 §8.1; RFC 6935
/// tunnels aside). `udp_zero_checksum` applies as in §4.5: compute the IPv4
/// checksum, or drop. A fragment's checksum covers bytes we do not have.
#[cold]
#[inline(never)]
fn udp_zero_checksum(
    t: &Translator,
    udp: &mut [u8],
    fragmented: bool,
    src4: [u8; 4],
    dst4: [u8; 4],
) -> Result<(), DropReason> {
    if fragmented || t.cfg.udp_zero_checksum == crate::config::UdpZeroChecksum::Drop {
        return Err(DropReason::UdpZeroChecksum);
    }
    let pseudo = checksum::v4_pseudo(&src4, &dst4, udp.len() as u16, nh::UDP);
    let c = match checksum::compute(pseudo, udp) {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// The outer IPv4 header fields decided before the ICMP error path takes over.
pub(crate) struct Outer {
    pub tos: u8,
    pub ttl: u8,
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub id: u16,
    pub flags: u16,
}

/// §5.1 / §5.1.1: Identification and Flags. With a Fragment header they come from
/// it; otherwise DF is set when the translated packet (`len4` bytes) exceeds 1260,
/// and below that a per-flow ID is needed because the IPv4 packet may be
/// fragmented (RFC 6864).
fn identification(
    t: &mut Translator,
    p: &Ipv6Packet,
    len4: usize,
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
) -> (u16, u16) {
    match p.frag {
        Some(f) => (
            f.id as u16,
            if f.more { MF } else { 0 } | (f.offset / 8) as u16,
        ),
        None if len4 <= DF_THRESHOLD_V4 => (t.ids.next(src, dst, proto), 0),
        None => (0, DF),
    }
}

/// Which of the IPv6 addresses no router forwards: the host's own link-scope
/// multicast first (MLD reports come from :: until the host has its
/// link-local address), then the source (multicast, ::, ::1), then a
/// multicast destination.
#[cold]
#[inline(never)]
fn bad_address(src: &[u8; 16], dst: &[u8; 16]) -> DropReason {
    if ipv6::is_host_link_multicast(src, dst) {
        DropReason::HostMulticast
    } else if ipv6::is_multicast(src) || ipv6::is_unspecified_or_loopback(src) {
        DropReason::BadSource
    } else {
        DropReason::BadDestination
    }
}

/// RFC 1812 §5.3.7: a destination no router forwards to is dropped; so is such
/// a source, but for an ICMPv6 error, which takes an RFC 6791 source instead.
/// 240.0.0.0/4 as `class_e` says.
#[cold]
#[inline(never)]
fn never_forwarded(
    t: &Translator,
    src4: u32,
    dst4: u32,
    icmp_error: bool,
    src6: &[u8; 16],
) -> Result<u32, DropReason> {
    if t.cfg.never_forwarded(dst4) {
        Err(DropReason::BadDestination)
    } else if !t.cfg.never_forwarded(src4) {
        Ok(src4)
    } else if icmp_error {
        Ok(rfc6791_source(t, src6))
    } else {
        Err(DropReason::BadSource)
    }
}

/// RFC 6791: pick the IPv4 source for an ICMPv6 error from an unmappable router,
/// by a hash of its address (stable per router, no RNG per packet).
fn rfc6791_source(t: &Translator, src6: &[u8; 16]) -> u32 {
    let pool = &t.cfg.rfc6791_v4;
    if pool.is_empty() {
        return u32::from(t.cfg.icmp_source_v4);
    }
    let h = hash::keyed(t.cfg.ipv4_id_key, &[hash::v6_word(src6)]);
    u32::from(pool[(h % pool.len() as u64) as usize])
}

/// Count a translated packet, or send it round again (RFC 7757 §4 hairpin).
#[inline(always)]
fn finish(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    scratch: &mut Scratch,
    now_ns: u64,
    v: Verdict,
    hairpin: bool,
    split4: bool,
) -> Verdict {
    if v != Verdict::Translated {
        return v;
    }
    if hairpin {
        return super::v4_to_v6::translate_hairpin(t, pkt, scratch, now_ns);
    }
    t.counters.translated_6to4 += 1;
    // §5.1 / RFC 791: an IPv6 fragment (DF=0) larger than the IPv4 link is
    // fragmented further, as any router would (a packet without a Fragment
    // header got Packet Too Big above).
    if split4 {
        return fragment_v4(t, pkt, scratch);
    }
    v
}

#[cold]
#[inline(never)]
fn fragment_v4(t: &mut Translator, pkt: &PacketBuf<'_>, scratch: &mut Scratch) -> Verdict {
    let mtu = t.cfg.ipv4_mtu.unwrap_or(u16::MAX);
    if pkt.len() <= usize::from(mtu) || pkt.data().get(6).is_some_and(|b| b & 0x40 != 0) {
        // It fits (an ICMP error, cut to 576), or DF=1: leave it whole.
        return Verdict::Translated;
    }
    let before = scratch.len();
    match super::fragment::split_v4(pkt.data(), usize::from(mtu), scratch) {
        Ok(n) => {
            t.counters.fragments_out += u64::from(n);
            Verdict::Fragmented((before + usize::from(n)) as u8)
        }
        Err(r) => {
            scratch.truncate(before);
            Verdict::Dropped(r)
        }
    }
}
