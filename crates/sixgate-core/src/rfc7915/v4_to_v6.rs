//! RFC 7915 §4: translating from IPv4 to IPv6.

use super::icmp_informational;
use super::icmp_map::{self, v4 as icmp4};
use super::{fragment, icmp_fragments, icmp_v4_to_v6, transport};
use crate::checksum;
use crate::config::UdpZeroChecksum;
use crate::icmp_error::{self, Owed};
use crate::mapt;
use crate::nat64::early_fragments;
use crate::nat64::{self, packet::Which};
use crate::packet::ipv4::{self, Ipv4Error};
use crate::packet::ipv6::{self, nh};
use crate::packet::{PacketBuf, Scratch};
use crate::translator::Translator;
use crate::verdict::{DropReason, Verdict};
use zerocopy::IntoBytes;

/// Translate one IPv4 packet to IPv6 in place (§4.1), fragmenting it into the
/// scratch area when it has DF=0 and would exceed `lowest_ipv6_mtu`.
pub fn translate(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    scratch: &mut Scratch,
    now_ns: u64,
) -> Verdict {
    // MAP-T gets its own instance of `run`: its code inlined into the SIIT
    // one costs that ~20 instructions in register pressure.
    let v = if t.mapt.is_some() {
        run::<false, true>(t, pkt, scratch, now_ns)
    } else {
        run::<false, false>(t, pkt, scratch, now_ns)
    };
    match v {
        Verdict::Translated | Verdict::Fragmented(_) => t.counters.translated_4to6 += 1,
        _ => {}
    }
    v
}

/// The second half of an RFC 7757 §4 hairpin: an IPv4 packet we just made from
/// IPv6 goes back to IPv6. The hop limit was already decremented once.
pub(crate) fn translate_hairpin(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    scratch: &mut Scratch,
    now_ns: u64,
) -> Verdict {
    let v = run::<true, true>(t, pkt, scratch, now_ns);
    match v {
        Verdict::Translated | Verdict::Fragmented(_) => t.counters.hairpinned += 1,
        _ => {}
    }
    v
}

/// The outer IPv6 header fields decided before the ICMP error path takes over.
pub(crate) struct Outer6 {
    pub tc: u8,
    pub hop_limit: u8,
    pub src: [u8; 16],
    pub dst: [u8; 16],
}

/// `HAIRPIN`: the second half of an RFC 7757 §4 hairpin. A constant, so the
/// ordinary path carries none of the hairpin tests (a pool6 source form, the
/// quiet errors, no early-fragment store): they cost it ~10 instructions.
/// `MAPT`: MAP-T may be on (`t.mapt` is tested); without it, it is off.
fn run<const HAIRPIN: bool, const MAPT: bool>(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    scratch: &mut Scratch,
    now_ns: u64,
) -> Verdict {
    let hairpin = HAIRPIN;
    let p = match ipv4::parse(pkt.data(), false) {
        Ok(p) => p,
        Err(Ipv4Error::Malformed) => return Verdict::Dropped(DropReason::Malformed),
        Err(Ipv4Error::Checksum) => return Verdict::Dropped(DropReason::Ipv4HeaderChecksum),
    };
    let (start, total) = (pkt.start(), p.total_len);
    pkt.set_window(start, total);
    let h = p.hdr;
    let first = h.frag_offset() == 0;
    let fragmented = h.is_fragment();
    let l4_len = total - p.ihl;

    let icmp_type = (h.proto == nh::ICMP && first).then(|| pkt.data().get(p.ihl).copied());
    let icmp_error = match icmp_type {
        Some(None) => return Verdict::Dropped(DropReason::Malformed),
        Some(Some(ty)) => icmp4::is_error(ty),
        None => false,
    };
    // §4.1 copies Protocol into Next Header; these values would claim an IPv6
    // extension header (or ICMPv6) that is not there.
    if ipv6::is_untranslatable_protocol_v4(h.proto) {
        // §4.4: administratively prohibited (not about a non-first fragment;
        // a hairpinned packet's sender is on the IPv6 side).
        let r = DropReason::UnknownProtocol;
        let quiet = !first || hairpin;
        return icmp_error::prohibited_v4(t, pkt.data(), scratch, now_ns, r, quiet);
    }
    // RFC 1812 §5.3.7: addresses no router forwards, one test for both.
    let (src4, dst4) = (u32::from_be_bytes(h.src), u32::from_be_bytes(h.dst));
    if ipv4::may_be_never_forwarded(src4, dst4)
        && let Some(r) = never_forwarded(t, h.src, h.dst, icmp_error)
    {
        return Verdict::Dropped(r);
    }
    let quiet = icmp_error || !first;
    // §4.1: an unexpired source route cannot be honoured across the translation.
    if p.unexpired_source_route {
        let owed = Owed {
            ty: icmp4::DEST_UNREACH,
            code: icmp4::CODE_SOURCE_ROUTE_FAILED,
            rest: [0; 4],
            reason: DropReason::Ipv4SourceRoute,
        };
        return icmp_error::reply_v4(t, pkt.data(), scratch, now_ns, owed, quiet);
    }
    let decrement = t.cfg.decrement_hop_limit && !hairpin;
    if decrement && h.ttl <= 1 {
        let owed = Owed {
            ty: icmp4::TIME_EXCEEDED,
            code: 0,
            rest: [0; 4],
            reason: DropReason::HopLimitExceeded,
        };
        return icmp_error::reply_v4(t, pkt.data(), scratch, now_ns, owed, quiet);
    }

    // §4.1 addresses: EAM, then pool6 (RFC 7757 §3.3).
    // Each address became an integer once; mapping and checksum sums work on those.
    // RFC 6146: a packet to pool4 finds its IPv6 destination in the BIB and
    // session tables.
    // RFC 7599 §6: with MAP-T the rules and ports give both addresses.
    let mapt = if MAPT && t.mapt.is_some() {
        match mapt::xlate::v4_to_v6(t, pkt.data(), &p, icmp_error, hairpin, now_ns) {
            Ok(o) => Some(o),
            // RFC 7599 §8 with RFC 6146 §3.4: it waits for its first.
            Err(DropReason::FragmentUntracked) if !hairpin => {
                let key = t.early.key4(&h);
                return early_fragments::hold(t, key, pkt.data(), now_ns);
            }
            Err(r) => return Verdict::Dropped(r),
        }
    } else {
        None
    };
    let nat = if mapt.is_none() && t.nat64.as_ref().is_some_and(|n| n.in_pool4(dst4)) {
        match nat64::xlate::v4_to_v6(t, pkt.data(), &p, icmp_error, now_ns) {
            Ok(i) => Some(i),
            // RFC 6146 §3.5.1.2, §3.5.2.2, §3.5.3: tell the sender. No mapping for
            // a TCP or UDP port is "port unreachable", for an ICMP identifier "host
            // unreachable"; filtering is "administratively prohibited".
            Err(r @ (DropReason::NoBibEntry | DropReason::Filtered)) => {
                let code = match r {
                    DropReason::Filtered => icmp4::CODE_ADMIN_PROHIBITED,
                    _ if h.proto == nh::ICMP => icmp4::CODE_HOST_UNREACHABLE,
                    _ => icmp4::CODE_PORT_UNREACHABLE,
                };
                let owed = Owed {
                    ty: icmp4::DEST_UNREACH,
                    code,
                    rest: [0; 4],
                    reason: r,
                };
                // A hairpinned packet's source is our own pool4: nobody to tell.
                let quiet = quiet || hairpin;
                return icmp_error::reply_v4(t, pkt.data(), scratch, now_ns, owed, quiet);
            }
            // RFC 6146 §3.4: a later fragment before its first waits for it
            // (not one we made ourselves: a hairpin's).
            Err(DropReason::FragmentUntracked) if !hairpin => {
                let key = t.early.key4(&h);
                return early_fragments::hold(t, key, pkt.data(), now_ns);
            }
            // docs/ha.md: it waits for the peer's record, or goes silently.
            Err(DropReason::SyncPending) => {
                return match t.nat64.as_mut().map(|n| std::mem::take(&mut n.held_now)) {
                    Some(true) => Verdict::Held,
                    _ => Verdict::Dropped(DropReason::SyncPending),
                };
            }
            Err(r) => return Verdict::Dropped(r),
        }
    } else {
        None
    };
    let mapped_dst = match (&nat, &mapt) {
        (Some(i), _) => Ok(i.dst6),
        (_, Some(m)) => Ok(m.dst6),
        (None, None) => t.cfg.map.map_v4(dst4),
    };
    let dst6 = match mapped_dst {
        Ok(a) => a,
        Err(e) => {
            // §4.4: tell the sender, as a router with no route would.
            let reason = e.drop_reason(false);
            // A destination RFC 6052 §3.1 forbids is refused, not unknown:
            // administratively prohibited (§4.4).
            let code = match reason {
                DropReason::WkpNonGlobal => icmp4::CODE_ADMIN_PROHIBITED,
                _ => icmp4::CODE_HOST_UNREACHABLE,
            };
            let owed = Owed {
                ty: icmp4::DEST_UNREACH,
                code,
                rest: [0; 4],
                reason,
            };
            return icmp_error::reply_v4(t, pkt.data(), scratch, now_ns, owed, quiet);
        }
    };
    let mapped_src = match mapt.as_ref().map(|m| m.src6) {
        Some(Some(a)) => Ok(a),
        // RFC 7757 §4.3 and Appendix B: a hairpinned packet's source takes its
        // pool6 form, not its EAM one, so the reply comes back through us.
        None if hairpin => t.cfg.map.map_v4_pool6(src4),
        Some(None) | None => t.cfg.map.map_v4(src4),
    };
    let src6 = match (mapped_src, t.cfg.rfc6791_v6) {
        (Ok(a), _) => a,
        // An ICMPv4 error from a router we cannot map: RFC 6791's IPv6 counterpart.
        (Err(_), Some(pool)) if icmp_error => u128::from(pool),
        (Err(e), _) => {
            // §4.4: administratively prohibited (never about an ICMPv4 message).
            let quiet = h.proto == nh::ICMP || !first || hairpin;
            let r = e.drop_reason(true);
            return icmp_error::prohibited_v4(t, pkt.data(), scratch, now_ns, r, quiet);
        }
    };
    let (src6_int, dst6_int) = (src6, dst6);
    let (src6, dst6) = (src6.to_be_bytes(), dst6.to_be_bytes());
    let tc = if t.cfg.reset_traffic_class { 0 } else { h.tos };
    let hop_limit = if decrement { h.ttl - 1 } else { h.ttl };

    if icmp_error {
        let out = Outer6 {
            tc,
            hop_limit,
            src: src6,
            dst: dst6,
        };
        let inner = nat
            .as_ref()
            .and_then(|i| i.inner.as_ref())
            .or(mapt.as_ref().and_then(|m| m.inner.as_ref()));
        return icmp_v4_to_v6::translate_error(t, pkt, &p, &out, inner, hairpin);
    }

    let frag_len = if fragmented {
        ipv6::FRAGMENT_HEADER_LEN
    } else {
        0
    };
    let out_len = ipv6::HEADER_LEN + frag_len + l4_len;
    // §4.4: a DF=1 packet that cannot cross the IPv6 link (when we know its MTU).
    if let Some(mtu6) = t.cfg.ipv6_mtu
        && h.df()
        && out_len > usize::from(mtu6)
    {
        let growth = (ipv6::HEADER_LEN + frag_len - ipv4::HEADER_LEN) as u16;
        let mtu4 = mtu6.saturating_sub(growth).max(68).to_be_bytes();
        let owed = Owed {
            ty: icmp4::DEST_UNREACH,
            code: icmp4::CODE_FRAG_NEEDED,
            rest: [0, 0, mtu4[0], mtu4[1]],
            reason: DropReason::PacketTooBig,
        };
        // A hairpinned packet's sender is on the IPv6 side: an ICMPv4 error
        // to our own pool4 would answer an IPv6 packet in IPv4.
        let quiet = quiet || hairpin;
        return icmp_error::reply_v4(t, pkt.data(), scratch, now_ns, owed, quiet);
    }
    let frag_mtu = t.cfg.v6_fragment_limit();
    let must_fragment = !h.df() && out_len > frag_mtu;

    // §4.2 on a fragmented Echo: its checksum needs the whole message's
    // length. (Not an error: those returned above.)
    if fragmented
        && h.proto == nh::ICMP
        && !hairpin
        && let Some(v) = icmp_fragments::on_v4(t, pkt.data(), l4_len, now_ns)
    {
        return v;
    }
    // §4.5 / §4.2: the upper-layer header, before the IPv4 header is overwritten.
    let (buf, start, _) = pkt.raw();
    let l4 = &mut buf[start + p.ihl..start + total];
    // Before the checksum work below: a zero UDP checksum is computed over the
    // new port.
    if let Some((proto, port)) = nat.as_ref().and_then(|i| i.port) {
        nat64::packet::rewrite_port(l4, proto, Which::Destination, port, t.partial_csum);
    }
    if let Some((proto, which, port)) = mapt.as_ref().and_then(|m| m.port) {
        nat64::packet::rewrite_port(l4, proto, which, port, t.partial_csum);
    }
    let nh6 = if h.proto == nh::ICMP {
        nh::ICMPV6
    } else {
        h.proto
    };
    if first {
        let pseudo6 = || checksum::v6_pseudo(&src6, &dst6, l4_len as u32, nh6);
        let r = if h.proto == nh::ICMP {
            let len = if fragmented {
                t.icmp_fragments.total.take()
            } else {
                Some(l4_len as u32)
            };
            match len {
                Some(n) => icmp_informational::translate(
                    l4,
                    icmp_map::icmp4_to_icmp6,
                    0,
                    checksum::v6_pseudo(&src6, &dst6, n, nh6),
                ),
                None => Err(DropReason::FragmentedIcmp),
            }
        } else {
            // The address sums only TCP and UDP need (ICMP is summed whole).
            let v4_sum = checksum::v4_pair_sum(src4, dst4);
            let v6_sum = checksum::v6_pair_sum(src6_int, dst6_int);
            if t.partial_csum {
                // A partial checksum field holds a sum, never "no checksum".
                transport::update_partial(l4, h.proto, v4_sum, v6_sum)
            } else {
                match transport::update_pseudo_header(l4, h.proto, v4_sum, v6_sum, false) {
                    // §4.5: zero is "no checksum" (the field was left alone).
                    Err(DropReason::UdpZeroChecksum) => {
                        udp_zero_checksum(t, l4, fragmented, pseudo6())
                    }
                    r => r,
                }
            }
        };
        if let Err(r) = r {
            if r == DropReason::UdpZeroChecksum {
                // §4.4 with §4.5's policy: administratively prohibited.
                let quiet = hairpin || !first;
                return icmp_error::prohibited_v4(t, pkt.data(), scratch, now_ns, r, quiet);
            }
            return Verdict::Dropped(r);
        }
    }

    // §4.1: a Fragment header only for fragments, and for packets we must fragment
    // (DF=0 and larger than lowest_ipv6_mtu); RFC 8021 retired atomic fragments.
    let frag_len = if must_fragment {
        ipv6::FRAGMENT_HEADER_LEN
    } else {
        frag_len
    };
    let hdr_len = ipv6::HEADER_LEN + frag_len;
    let Some(new_start) = (start + p.ihl).checked_sub(hdr_len) else {
        return Verdict::Dropped(DropReason::NoHeadroom);
    };
    let next = if frag_len > 0 { nh::FRAGMENT } else { nh6 };
    let hdr = ipv6::header(tc, (frag_len + l4_len) as u16, next, hop_limit, src6, dst6);
    buf[new_start..new_start + ipv6::HEADER_LEN].copy_from_slice(hdr.as_bytes());
    if frag_len > 0 {
        // §4.1: Identification copied into the low-order 16 bits.
        let fh = ipv6::fragment_header(nh6, h.frag_offset(), h.mf(), u32::from(h.id.get()));
        buf[new_start + ipv6::HEADER_LEN..new_start + hdr_len].copy_from_slice(fh.as_bytes());
    }
    pkt.set_window(new_start, hdr_len + l4_len);
    let v = if must_fragment {
        match fragment::split(pkt.data(), frag_mtu, scratch) {
            Ok(n) => {
                t.counters.fragments_out += u64::from(n);
                Verdict::Fragmented(n)
            }
            Err(r) => Verdict::Dropped(r),
        }
    } else {
        Verdict::Translated
    };
    if fragmented && h.proto == nh::ICMP && t.icmp_fragments.has_ready() {
        return t.release_held(v, false, pkt, scratch, now_ns);
    }
    v
}

/// RFC 1812 §5.3.7 / RFC 7915 §4.1: which of the two addresses no router
/// forwards, if it matters: an ICMPv4 error from an illegal unicast source still
/// crosses, for troubleshooting (RFC 6791 gives it an IPv6 source if it maps to
/// none). 240.0.0.0/4 as `class_e` says.
#[cold]
#[inline(never)]
fn never_forwarded(
    t: &Translator,
    src: [u8; 4],
    dst: [u8; 4],
    icmp_error: bool,
) -> Option<DropReason> {
    let cfg = &t.cfg;
    if cfg.never_forwarded(u32::from_be_bytes(dst)) {
        Some(DropReason::BadDestination)
    } else if cfg.never_forwarded(u32::from_be_bytes(src))
        && !(icmp_error && ipv4::is_error_source_allowed(src))
    {
        Some(DropReason::BadSource)
    } else {
        None
    }
}

/// §4.5: an IPv4 UDP checksum of zero means "none", which IPv6 forbids.
#[cold]
#[inline(never)]
fn udp_zero_checksum(
    t: &Translator,
    udp: &mut [u8],
    fragmented: bool,
    pseudo6: u16,
) -> Result<(), DropReason> {
    // A fragment's checksum covers bytes we do not have.
    if fragmented || t.cfg.udp_zero_checksum == UdpZeroChecksum::Drop {
        return Err(DropReason::UdpZeroChecksum);
    }
    let mut c = checksum::compute(pseudo6, udp);
    if c == 0 {
        c = 0xffff;
    }
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    Ok(())
}
