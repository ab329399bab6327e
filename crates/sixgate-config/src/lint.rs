//! Values that are valid but likely mistakes: warnings, never errors
//! (`sixgate config check` and the daemon print them; loading goes on).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Range;

use ipnet::IpNet;
use sixgate_core::Config;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::addr::rfc6052::WELL_KNOWN_PREFIX;

use crate::Dns64Settings;
use crate::cx::Cx;
use crate::value::mask_v4;

/// `[dns64] prefixes` other than pool6 next to a translator: the DNS64 would
/// synthesize addresses the translator does not translate.
pub(crate) fn dns64_prefixes_differ_from_pool6(
    cx: &Cx<'_>,
    cfg: &Config,
    d: &Dns64Settings,
    span: Range<usize>,
) {
    let Some(pool6) = cfg.map.pool6 else {
        return;
    };
    if let Some(other) = d.prefixes.iter().find(|p| **p != pool6) {
        cx.warn(
            span,
            format!(
                "prefixes: {other} is not [translator] pool6 {pool6}: this gateway does not \
                 translate addresses the DNS64 synthesizes with it (fine only if another \
                 translator owns that prefix); prefixes = \"pool6\" keeps the two the same"
            ),
        );
    }
}

/// An `acl` entry that lets every client in: an open resolver, which the whole
/// Internet can use for amplification attacks.
pub(crate) fn open_resolver(cx: &Cx<'_>, span: Range<usize>, net: &IpNet) {
    if net.prefix_len() == 0 {
        cx.warn(
            span,
            format!(
                "acl = {net:?}: every client may query this DNS64, an open resolver (abused \
                 for amplification attacks) if it is reachable from the Internet; list the \
                 networks of the IPv6-only hosts instead",
                net = net.to_string()
            ),
        );
    }
}

/// An EAM entry whose IPv6 prefix lies inside pool6: those addresses stop
/// meaning "the IPv4 address embedded in them" (RFC 7757 §3.2: the EAM wins).
pub(crate) fn eam_inside_pool6(
    cx: &Cx<'_>,
    span: Range<usize>,
    key: &str,
    v6: (Ipv6Addr, u8),
    pool6: Option<Rfc6052Prefix>,
) {
    let Some(p) = pool6 else {
        return;
    };
    let inside =
        v6.1 >= p.len() && u128::from(v6.0) & mask(p.len()) == u128::from(p.addr()) & mask(p.len());
    if inside {
        cx.warn(
            span,
            format!(
                "{key}: {}/{} lies inside pool6 {p}: the EAM entry takes those addresses \
                 (RFC 7757 §3.2), so the IPv4 addresses RFC 6052 embeds there can no longer be \
                 reached through pool6; use an IPv6 prefix outside pool6",
                v6.0, v6.1
            ),
        );
    }
}

fn mask(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
}

/// Private, shared and benchmarking IPv4 space: the addresses of a lab
/// (documentation ranges stand in for global addresses in samples, so they
/// are not counted).
const LAB_V4: [(Ipv4Addr, u8); 5] = [
    (Ipv4Addr::new(10, 0, 0, 0), 8),
    (Ipv4Addr::new(172, 16, 0, 0), 12),
    (Ipv4Addr::new(192, 168, 0, 0), 16),
    (Ipv4Addr::new(100, 64, 0, 0), 10),
    (Ipv4Addr::new(198, 18, 0, 0), 15),
];

/// The IPv4 side of a translator on the Well-Known Prefix that looks like a
/// lab: RFC 6052 §3.1 forbids 64:ff9b::/96 from carrying non-global IPv4
/// addresses, so the lab's other hosts cannot be reached through it.
pub(crate) fn wkp_with_lab_ipv4(
    cx: &Cx<'_>,
    cfg: &Config,
    span: Range<usize>,
    key: &str,
    v4: (Ipv4Addr, u8),
) {
    if cfg.map.pool6 != Some(WELL_KNOWN_PREFIX) || !cfg.map.wkp_strict {
        return;
    }
    let lab = LAB_V4.iter().find(|&&(net, len)| {
        let l = len.min(v4.1);
        mask_v4(v4.0, l) == mask_v4(net, l)
    });
    if let Some((net, len)) = lab {
        cx.warn(
            span,
            format!(
                "{key}: {}/{} is in {net}/{len}, not global: if the IPv4 hosts behind this \
                 translator are not global either (a lab), pool6 64:ff9b::/96 cannot carry \
                 them (RFC 6052 §3.1) and their packets are dropped (wkp_non_global); use a \
                 network-specific prefix as pool6, or wkp_strict = false",
                v4.0, v4.1
            ),
        );
    }
}

/// `class_e = "translate"` with pool6 the Well-Known Prefix: RFC 6052 §3.1
/// still refuses 240/4 there (it is not global), so only EAM entries can
/// reach it.
pub(crate) fn class_e_under_the_well_known_prefix(cx: &Cx<'_>, cfg: &Config, span: Range<usize>) {
    if cfg.map.pool6 == Some(WELL_KNOWN_PREFIX) && cfg.map.wkp_strict {
        cx.warn(
            span,
            "class_e = \"translate\": 240.0.0.0/4 is not global, so pool6 64:ff9b::/96 \
             cannot carry it (RFC 6052 §3.1) and such packets are still dropped \
             (wkp_non_global) unless an EAM entry maps them; use a network-specific prefix \
             as pool6, or wkp_strict = false"
                .to_owned(),
        );
    }
}

#[cfg(test)]
mod tests;
