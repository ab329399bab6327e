//! The MAP-T step of the RFC 7915 paths (RFC 7599 §6, §7, §8): the new addresses
//! of a packet, found from the Mapping Rules with its ports, the spoofing check
//! (RFC 7597 §8.1), and the CE's NAPT44. ICMP errors map their outer addresses by
//! the port of the packet they quote (RFC 7599 §6: "the port ... of the inner
//! packet"); fragments after the first reuse what their first fragment got, from a
//! bounded table (RFC 7599 §8; a later fragment that arrives first waits for
//! it, as the NAT64's do: `nat64::early_fragments`).

use super::config::{CeConfig, MaptConfig, Role};
use super::napt44::{host_key, host_of};
use super::rule::MapRule;
use crate::addr::Mapper;
use crate::nat64::config::Proto;
use crate::nat64::packet::{self, Ports, Which};
use crate::nat64::xlate::{InnerTo4, InnerTo6};
use crate::packet::ipv4::{self, Ipv4Packet};
use crate::packet::ipv6::{self, Ipv6Packet};
use crate::packet::l4::ICMP_HEADER_LEN;
use crate::translator::Translator;
use crate::verdict::DropReason;

/// 6→4: the packet's IPv4 addresses and the port to rewrite.
pub(crate) struct To4 {
    /// `None`: an ICMPv6 error from an IPv6 node no rule maps (RFC 6791 applies).
    pub src4: Option<u32>,
    pub dst4: u32,
    pub port: Option<(Proto, Which, u16)>,
    pub inner: Option<InnerTo4>,
    /// BR: the IPv4 destination is in the domain (CE → BR → CE): back to IPv6.
    pub hairpin: bool,
}

/// 4→6: the packet's IPv6 addresses and the port to rewrite.
pub(crate) struct To6 {
    /// `None`: an ICMPv4 error from an IPv4 node with no mapping.
    pub src6: Option<u128>,
    pub dst6: u128,
    pub port: Option<(Proto, Which, u16)>,
    pub inner: Option<InnerTo6>,
}

/// The remote "port" of a NAPT44 session (ICMP queries have none; see
/// `nat64::xlate`).
#[inline]
fn remote_port(proto: Proto, port: u16) -> u16 {
    if proto == Proto::Icmp { 0 } else { port }
}

/// The ports of a first fragment, or `None` for a protocol without any: allowed
/// only where the rule gives whole IPv4 addresses (no PSID), else `mapt_no_port`.
fn ports_or_none(proto: u8, l4: &[u8], quoted: bool) -> Result<Option<Ports>, DropReason> {
    match packet::ports(proto, l4, quoted) {
        Ok(p) => Ok(Some(p)),
        Err(DropReason::Nat64Unsupported) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A MAP address's claim: the rule it is under and the PSID it names (`None`
/// when the rule gives whole addresses).
type Claim<'a> = Option<(&'a MapRule, u16)>;

/// An IPv6 address on the domain side as IPv4: a MAP address by its FMR (with the
/// PSID it claims), else the DMR (RFC 7599 §5).
fn v6_side<'a>(m: &'a MaptConfig, map: &Mapper, v6: u128) -> Result<(u32, Claim<'a>), DropReason> {
    match m.rule_for_v6(v6) {
        Some(r) => under_rule(r, v6),
        None => map
            .map_v6(v6)
            .map(|a| (a, None))
            .map_err(|_| DropReason::MaptNoRule),
    }
}

/// RFC 7597 §5.2: the IPv4 address and claim of `v6`, a MAP address under `r`
/// (which the rule look-up found holding it).
#[inline]
fn under_rule(r: &MapRule, v6: u128) -> Result<(u32, Claim<'_>), DropReason> {
    let (v4, psid) = r.decode_under(v6).ok_or(DropReason::MaptAddressMismatch)?;
    Ok((v4, (r.psid_len() > 0).then_some((r, psid))))
}

/// RFC 7597 §8.1: a MAP address may only send from its own port set.
fn check_port(claim: Claim<'_>, port: Option<u16>) -> Result<(), DropReason> {
    let Some((rule, psid)) = claim else {
        return Ok(());
    };
    match port {
        Some(p) if rule.port_in_set(p, psid) => Ok(()),
        Some(_) => Err(DropReason::MaptSourceOutsidePortSet),
        None => Err(DropReason::MaptNoPort),
    }
}

/// An IPv4 address as IPv6: by its FMR with the PSID of `port`, else the DMR.
fn v4_side(m: &MaptConfig, map: &Mapper, v4: u32, port: Option<u16>) -> Result<u128, DropReason> {
    match m.rule_for_v4(v4) {
        Some(r) => map_address(r, v4, port),
        None => map.map_v4(v4).map_err(|e| e.drop_reason(false)),
    }
}

/// RFC 7597 §5.1 / §5.2: the MAP address under `r` that owns (`v4`, `port`).
#[inline]
fn map_address(r: &MapRule, v4: u32, port: Option<u16>) -> Result<u128, DropReason> {
    let psid = match (r.psid_len(), port) {
        (0, _) => 0,
        (_, Some(p)) => r.psid_of_port(p).ok_or(DropReason::MaptPortExcluded)?,
        (_, None) => return Err(DropReason::MaptNoPort),
    };
    Ok(r.map_address(v4, psid))
}

fn frag_key6(p: &Ipv6Packet) -> [u64; 5] {
    let (s, d) = (
        u128::from_be_bytes(p.hdr.src),
        u128::from_be_bytes(p.hdr.dst),
    );
    [
        3,
        (s >> 64) as u64,
        s as u64,
        (d >> 64) as u64 ^ (d as u64).rotate_left(17),
        u64::from(p.frag.map_or(0, |f| f.id)),
    ]
}

fn frag_key4(p: &Ipv4Packet) -> [u64; 3] {
    let h = &p.hdr;
    [
        4,
        u64::from(u32::from_be_bytes(h.src)) << 32 | u64::from(u32::from_be_bytes(h.dst)),
        u64::from(h.proto) << 16 | u64::from(h.id.get()),
    ]
}

/// 6→4 (`data` is the whole IPv6 packet). Inlined into its one caller, the
/// MAP-T instance of `rfc7915::v6_to_v4::run`: since that grew (the host
/// multicast test, 2026-12-04) LLVM called it instead, ~80 instructions more
/// per MAP-T BR packet (docs/perf-log/2026-12-04.md).
#[inline(always)]
pub(crate) fn v6_to_v4(
    t: &mut Translator,
    data: &[u8],
    p: &Ipv6Packet,
    icmp_error: bool,
    now_ns: u64,
) -> Result<To4, DropReason> {
    let cfg = &*t.cfg;
    let (Some(m), Some(st)) = (cfg.mapt.as_ref(), t.mapt.as_deref_mut()) else {
        return Err(DropReason::MaptNoRule);
    };
    let map = &cfg.map;
    let (src6, dst6) = (
        u128::from_be_bytes(p.hdr.src),
        u128::from_be_bytes(p.hdr.dst),
    );
    let ce = m.ce();
    // The destination: a CE takes only its own MAP address; a BR sends to IPv4
    // through the DMR.
    let dst4 = match ce {
        Some(c) if dst6 != u128::from(c.map_address) => return Err(DropReason::MaptNoRule),
        Some(c) => u32::from(c.ipv4),
        None => map.map_v6(dst6).map_err(|e| e.drop_reason(false))?,
    };
    if icmp_error {
        // RFC 7599 §6 / RFC 7915 §5.3: about a packet sent into the domain.
        use DropReason::IcmpInnerUntranslatable as Inner;
        let at = p.l4_off + ICMP_HEADER_LEN;
        let q = ipv6::parse(data.get(at..).ok_or(Inner)?, true).map_err(|_| Inner)?;
        if !q.is_first() {
            return Err(Inner);
        }
        let ql4 = data.get(at + q.l4_off..).ok_or(Inner)?;
        let qp = packet::ports(q.proto, ql4, true).map_err(|_| Inner)?;
        let (qs6, qd6) = (
            u128::from_be_bytes(q.hdr.src),
            u128::from_be_bytes(q.hdr.dst),
        );
        // The error's source: a MAP node, the DMR, or an IPv6 router (RFC 6791).
        let src4 = v6_side(m, map, src6).ok().map(|(a, _)| a);
        return match ce {
            None => {
                // BR: the quoted packet went from IPv4 (DMR) to a CE, whose port
                // must be its own.
                let (qd4, claim) = v6_side(m, map, qd6)?;
                check_port(claim, Some(qp.dport))?;
                let qs4 = map.map_v6(qs6).map_err(|_| Inner)?;
                Ok(To4 {
                    src4,
                    dst4,
                    port: None,
                    inner: Some(InnerTo4 {
                        src: qs4.to_be_bytes(),
                        dst: qd4.to_be_bytes(),
                        proto: qp.proto,
                        which: Which::Destination,
                        port: qp.dport,
                    }),
                    hairpin: false,
                })
            }
            Some(c) => {
                // CE: the quoted packet left from our MAP address: whose was it?
                let napt = st.napt.as_deref().ok_or(Inner)?;
                let (qd4, _) = v6_side(m, map, qd6).map_err(|_| Inner)?;
                let (host, port) = napt
                    .session_of_outbound(
                        qp.proto,
                        u32::from(c.ipv4),
                        qp.sport,
                        qd4,
                        remote_port(qp.proto, qp.dport),
                    )
                    .ok_or(DropReason::NoBibEntry)?;
                let host = host_of(host);
                Ok(To4 {
                    src4,
                    dst4: host,
                    port: None,
                    inner: Some(InnerTo4 {
                        src: host.to_be_bytes(),
                        dst: qd4.to_be_bytes(),
                        proto: qp.proto,
                        which: Which::Source,
                        port,
                    }),
                    hairpin: false,
                })
            }
        };
    }
    let (src4, claim) = match (ce, m.rule_for_v6(src6)) {
        (_, Some(r)) => under_rule(r, src6)?,
        // BR: only MAP addresses may send through the BR.
        (None, None) => return Err(DropReason::MaptNoRule),
        (Some(_), None) => v6_side(m, map, src6)?,
    };
    if !p.is_first() {
        // The first fragment passed the port check and, on a CE, found the host.
        let to = st
            .fragment_recall(&frag_key6(p), now_ns)
            .ok_or(DropReason::FragmentUntracked)? as u32;
        let dst4 = if ce.is_some() { to } else { dst4 };
        return Ok(To4 {
            src4: Some(src4),
            dst4,
            port: None,
            inner: None,
            hairpin: false,
        });
    }
    let l4 = data
        .get(p.l4_off..p.total_len)
        .ok_or(DropReason::Malformed)?;
    let ports = ports_or_none(p.proto, l4, false)?;
    check_port(claim, ports.map(|x| x.sport))?;
    let (dst4, port) = match (ce, st.napt.as_deref_mut()) {
        (Some(c), Some(napt)) => {
            // The NAPT44, inbound: which LAN host owns this port of ours?
            let pp = ports.ok_or(DropReason::MaptNoPort)?;
            let (host, port) = napt.inbound(
                pp.proto,
                src4,
                remote_port(pp.proto, pp.sport),
                u32::from(c.ipv4),
                pp.dport,
                pp.flags,
                // Only a node sharing state holds whole packets (docs/ha.md),
                // so whether the checksum is partial does not matter here.
                (data, false),
                now_ns,
            )?;
            (host_of(host), Some((pp.proto, Which::Destination, port)))
        }
        _ => (dst4, None),
    };
    if p.is_fragmented() {
        st.fragment_remember(
            &frag_key6(p),
            u128::from(if ce.is_some() { dst4 } else { src4 }),
            now_ns,
        );
        // RFC 6146 §3.4: later fragments that came before it go after it.
        t.release_pending |= t.early.first_translated(|e| e.key6(p));
    }
    let hairpin = ce.is_none() && m.rule_for_v4(dst4).is_some();
    Ok(To4 {
        src4: Some(src4),
        dst4,
        port,
        inner: None,
        hairpin,
    })
}

/// 4→6 (`data` is the whole IPv4 packet). `hairpin`: the second half of a BR
/// hairpin, whose source is a CE too. Inlined into the MAP-T instances of
/// `rfc7915::v4_to_v6::run` (with two callers LLVM would call it: +19 for a
/// MAP-T BR packet).
#[inline(always)]
pub(crate) fn v4_to_v6(
    t: &mut Translator,
    data: &[u8],
    p: &Ipv4Packet,
    icmp_error: bool,
    hairpin: bool,
    now_ns: u64,
) -> Result<To6, DropReason> {
    let cfg = &*t.cfg;
    let (Some(m), Some(st)) = (cfg.mapt.as_ref(), t.mapt.as_deref_mut()) else {
        return Err(DropReason::MaptNoRule);
    };
    let map = &cfg.map;
    let h = &p.hdr;
    let (src4, dst4) = (u32::from_be_bytes(h.src), u32::from_be_bytes(h.dst));
    let ce: Option<&CeConfig> = match &m.role {
        Role::Ce(c) => Some(c),
        Role::Br => None,
    };
    if icmp_error {
        use DropReason::IcmpInnerUntranslatable as Inner;
        let at = p.ihl + ICMP_HEADER_LEN;
        let q = ipv4::parse(data.get(at..).ok_or(Inner)?, true).map_err(|_| Inner)?;
        if q.hdr.frag_offset() != 0 {
            return Err(Inner);
        }
        let ql4 = data.get(at + q.ihl..).ok_or(Inner)?;
        let qp = packet::ports(q.hdr.proto, ql4, true).map_err(|_| Inner)?;
        let (qs4, qd4) = (u32::from_be_bytes(q.hdr.src), u32::from_be_bytes(q.hdr.dst));
        return match ce {
            None => {
                // BR: about a packet a CE sent out; the CE is found by the quoted
                // source port (RFC 7599 §6).
                if dst4 != qs4 {
                    return Err(Inner);
                }
                let qs6 = v4_side(m, map, qs4, Some(qp.sport)).map_err(|_| Inner)?;
                let qd6 = map.map_v4(qd4).map_err(|_| Inner)?;
                Ok(To6 {
                    src6: map.map_v4(src4).ok(),
                    dst6: qs6,
                    port: None,
                    inner: Some(InnerTo6 {
                        src: qs6.to_be_bytes(),
                        dst: qd6.to_be_bytes(),
                        proto: qp.proto,
                        which: Which::Source,
                        port: qp.sport,
                    }),
                })
            }
            Some(c) => {
                // CE: a LAN host's error about a packet it got through the NAPT44.
                if !c.in_lan(src4) && src4 != u32::from(c.ipv4) {
                    return Err(DropReason::SourceUntranslatable);
                }
                let napt = st.napt.as_deref().ok_or(Inner)?;
                let (_, port) = napt
                    .session_of_inbound(
                        qp.proto,
                        host_key(qd4),
                        qp.dport,
                        qs4,
                        remote_port(qp.proto, qp.sport),
                    )
                    .ok_or(DropReason::NoBibEntry)?;
                let remote6 = v4_side(m, map, qs4, Some(qp.sport)).map_err(|_| Inner)?;
                let me = u128::from(c.map_address);
                Ok(To6 {
                    src6: Some(me),
                    dst6: remote6,
                    port: None,
                    inner: Some(InnerTo6 {
                        src: remote6.to_be_bytes(),
                        dst: me.to_be_bytes(),
                        proto: qp.proto,
                        which: Which::Destination,
                        port,
                    }),
                })
            }
        };
    }
    if let Some(c) = ce
        && !c.in_lan(src4)
    {
        return Err(DropReason::SourceUntranslatable);
    }
    // A BR serves only the domain's IPv4 prefixes.
    let dst_rule = m.rule_for_v4(dst4);
    if ce.is_none() && dst_rule.is_none() {
        return Err(DropReason::MaptNoRule);
    }
    let src6_fixed = ce.map(|c| u128::from(c.map_address));
    if h.frag_offset() != 0 {
        let dst6 = st
            .fragment_recall(&frag_key4(p), now_ns)
            .ok_or(DropReason::FragmentUntracked)?;
        let src6 = match src6_fixed {
            Some(a) => a,
            None => map.map_v4(src4).map_err(|e| e.drop_reason(true))?,
        };
        return Ok(To6 {
            src6: Some(src6),
            dst6,
            port: None,
            inner: None,
        });
    }
    let l4 = data.get(p.ihl..p.total_len).ok_or(DropReason::Malformed)?;
    let ports = ports_or_none(h.proto, l4, false)?;
    let dst6 = match dst_rule {
        Some(r) => map_address(r, dst4, ports.map(|x| x.dport))?,
        None => map.map_v4(dst4).map_err(|e| e.drop_reason(false))?,
    };
    let (src6, port) = match (ce, st.napt.as_deref_mut()) {
        (Some(c), Some(napt)) => {
            // The NAPT44, outbound: the LAN host's port in our port set.
            let pp = ports.ok_or(DropReason::MaptNoPort)?;
            let (_, port) = napt.outbound(
                pp.proto,
                host_key(src4),
                pp.sport,
                dst4,
                remote_port(pp.proto, pp.dport),
                pp.flags,
                now_ns,
            )?;
            (
                u128::from(c.map_address),
                Some((pp.proto, Which::Source, port)),
            )
        }
        // BR hairpin: the source is a CE, at its MAP address.
        _ if hairpin && m.rule_for_v4(src4).is_some() => {
            (v4_side(m, map, src4, ports.map(|x| x.sport))?, None)
        }
        _ => (map.map_v4(src4).map_err(|e| e.drop_reason(true))?, None),
    };
    if h.mf() {
        st.fragment_remember(&frag_key4(p), dst6, now_ns);
        // RFC 6146 §3.4: later fragments that came before it go after it.
        t.release_pending |= t.early.first_translated(|e| e.key4(h));
    }
    Ok(To6 {
        src6: Some(src6),
        dst6,
        port,
        inner: None,
    })
}
