//! `[mapt]`: from the deserialised section to a checked
//! [`MaptConfig`] (RFC 7599 MAP-T, rules from RFC 7597 §5).
//!
//! Checks: every rule's numbers fit together (RFC 7597 §5.2: IPv4 suffix bits +
//! PSID length = EA bits ≤ 48, r + EA ≤ 64; §5.1: a + k ≤ 16), no two rules
//! overlap on either side, the DMR is an RFC 6052 prefix, and a CE's End-user
//! prefix lies under one BMR. The DMR becomes pool6, so the RFC 7915 paths map
//! off-domain addresses with it.

use std::ops::Range;

use sixgate_core::Config;
use sixgate_core::config::IPV4_DUMMY_ADDRESS;
use sixgate_core::mapt::{CeConfig, DEFAULT_PSID_OFFSET, MapRule, MaptConfig, Napt44Config, Role};
use toml::Spanned;

use crate::cx::Cx;
use crate::schema::{MapRuleEntry, MaptSection};
use crate::value::{
    MAX_SESSIONS, Timer, V4_PREFIX, V6_PREFIX, clean_v4_prefix, clean_v6_prefix, int_in,
    rfc6052_prefix, timeout,
};
use crate::{ConfigError, Mode};

/// A checked rule, the entry it came from (for error positions) and its key.
type Checked<'a> = (MapRule, &'a Spanned<MapRuleEntry>, String);

const UDP_TIMER: Timer = Timer {
    key: "napt_udp_timeout",
    rfc_min: 120,
    rule: "RFC 4787 REQ-5: a UDP mapping MUST NOT expire in less than two minutes",
};
const TCP_EST_TIMER: Timer = Timer {
    key: "napt_tcp_established_timeout",
    rfc_min: 7440,
    rule: "RFC 5382 REQ-5: the established-connection idle timeout MUST NOT be less than \
           2 hours 4 minutes",
};
const TCP_TRANS_TIMER: Timer = Timer {
    key: "napt_tcp_transitory_timeout",
    rfc_min: 240,
    rule: "RFC 5382 REQ-5: the transitory-connection idle timeout MUST NOT be less than \
           4 minutes",
};
const ICMP_TIMER: Timer = Timer {
    key: "napt_icmp_timeout",
    rfc_min: 60,
    rule: "RFC 5508 REQ-1: an ICMP query mapping MUST NOT expire in less than 60 seconds",
};

/// Build the MAP-T settings into `cfg` (pool6 = the DMR; the ICMPv6 error source
/// follows it unless the file set one).
pub(crate) fn section(
    cx: &Cx<'_>,
    cfg: &mut Config,
    mode: Mode,
    m: MaptSection,
    header: Range<usize>,
    icmp_source_v6_explicit: bool,
) -> Result<(), ConfigError> {
    let Some(d) = &m.dmr else {
        return Err(cx.err(
            header,
            "[mapt] has no `dmr`; expected dmr = the Default Mapping Rule, an RFC 6052 prefix \
             (RFC 7599 §5), e.g. dmr = \"2001:db8:ffff::/96\"",
        ));
    };
    let dmr = rfc6052_prefix(cx, "dmr", d)?;
    let bmrs = rules(cx, "bmr", m.bmr.as_deref().unwrap_or(&[]))?;
    let fmrs = rules(cx, "fmr", m.fmr.as_deref().unwrap_or(&[]))?;
    // Every rule forwards (a BMR is the FMR of its own CEs, RFC 7597 §5).
    let all: Vec<(MapRule, &Spanned<MapRuleEntry>, String)> =
        bmrs.iter().cloned().chain(fmrs.iter().cloned()).collect();
    for (i, (a, _, ka)) in all.iter().enumerate() {
        for (b, sb, kb) in &all[i + 1..] {
            if a.overlaps(b) {
                return Err(cx.err(
                    sb.span(),
                    format!(
                        "{kb} ({b}) overlaps {ka} ({a}) on its IPv6 or IPv4 prefix; expected \
                         rules whose IPv6 prefixes and IPv4 prefixes are disjoint, so each \
                         address has one rule (RFC 7597 §5)"
                    ),
                ));
            }
        }
    }
    if all.is_empty() {
        return Err(cx.err(
            header,
            "[mapt] has no mapping rules; expected at least one `bmr` (a CE's, or the \
             domain's on a BR) or `fmr` entry, e.g. bmr = [{ ipv6_prefix = \
             \"2001:db8:ce::/51\", ipv4_prefix = \"192.0.2.0/24\", ea_bits = 13, \
             psid_offset = 0 }]",
        ));
    }
    let ce_only = [
        (
            "end_user_prefix",
            m.end_user_prefix.as_ref().map(Spanned::span),
        ),
        ("lan", m.lan.as_ref().map(Spanned::span)),
        (
            "napt_udp_timeout",
            m.napt_udp_timeout.as_ref().map(Spanned::span),
        ),
        (
            "napt_tcp_established_timeout",
            m.napt_tcp_established_timeout.as_ref().map(Spanned::span),
        ),
        (
            "napt_tcp_transitory_timeout",
            m.napt_tcp_transitory_timeout.as_ref().map(Spanned::span),
        ),
        (
            "napt_icmp_timeout",
            m.napt_icmp_timeout.as_ref().map(Spanned::span),
        ),
        (
            "napt_max_sessions",
            m.napt_max_sessions.as_ref().map(Spanned::span),
        ),
    ];
    let role = match mode {
        Mode::MaptCe => Role::Ce(Box::new(ce(cx, &m, &bmrs, header)?)),
        _ => {
            if let Some((key, Some(span))) = ce_only.iter().find(|(_, s)| s.is_some()) {
                return Err(cx.err(
                    span.clone(),
                    format!(
                        "{key}: a CE's setting, but mode is \"mapt-br\"; expected no `{key}` \
                         on a BR, or mode = \"mapt-ce\""
                    ),
                ));
            }
            Role::Br
        }
    };
    cfg.map.pool6 = Some(dmr);
    if !icmp_source_v6_explicit {
        cfg.icmp_source_v6 = dmr.embed(IPV4_DUMMY_ADDRESS);
    }
    cfg.mapt = Some(MaptConfig {
        dmr,
        fmrs: all.into_iter().map(|(r, _, _)| r).collect(),
        role,
        hash_key: MaptConfig::DEFAULT_HASH_KEY,
    });
    Ok(())
}

/// A CE's numbers: its BMR (the one its End-user prefix lies under), LAN and NAPT44.
fn ce(
    cx: &Cx<'_>,
    m: &MaptSection,
    bmrs: &[Checked<'_>],
    header: Range<usize>,
) -> Result<CeConfig, ConfigError> {
    let Some(e) = &m.end_user_prefix else {
        return Err(cx.err(
            header,
            "mode = \"mapt-ce\" but [mapt] has no `end_user_prefix`; expected the delegated \
             End-user IPv6 prefix, whose EA bits give the CE's IPv4 address and PSID \
             (RFC 7597 §5.2), e.g. end_user_prefix = \"2001:db8:ce:11b::/64\"",
        ));
    };
    let eup = clean_v6_prefix(cx, "end_user_prefix", e, V6_PREFIX)?;
    let Some(l) = &m.lan else {
        return Err(cx.err(
            header,
            "mode = \"mapt-ce\" but [mapt] has no `lan`; expected the LAN's private IPv4 \
             prefix behind the NAPT44, e.g. lan = \"192.168.1.0/24\"",
        ));
    };
    let lan = clean_v4_prefix(cx, "lan", l, V4_PREFIX)?;
    let Some((bmr, _, _)) = bmrs
        .iter()
        .filter(|(r, _, _)| r.contains_v6(u128::from(eup.0)))
        .max_by_key(|(r, _, _)| r.ipv6_prefix().1)
    else {
        return Err(cx.bad(
            "end_user_prefix",
            e,
            "under no `bmr`",
            "a prefix under the ipv6_prefix of one `bmr` entry (RFC 7597 §5.2)",
        ));
    };
    let mut napt = Napt44Config::default();
    let t = &mut napt.timeouts;
    if let Some(v) = &m.napt_udp_timeout {
        t.udp = timeout(cx, &UDP_TIMER, v, 1)?;
    }
    if let Some(v) = &m.napt_tcp_established_timeout {
        t.tcp_established = timeout(cx, &TCP_EST_TIMER, v, 1)?;
    }
    if let Some(v) = &m.napt_tcp_transitory_timeout {
        t.tcp_transitory = timeout(cx, &TCP_TRANS_TIMER, v, 1)?;
    }
    if let Some(v) = &m.napt_icmp_timeout {
        t.icmp = timeout(cx, &ICMP_TIMER, v, 1)?;
    }
    if let Some(v) = &m.napt_max_sessions {
        napt.max_sessions = int_in(cx, "napt_max_sessions", v, 1, MAX_SESSIONS)? as u32;
    }
    let ce = CeConfig::new(*bmr, eup, lan, napt).map_err(|err| {
        cx.bad(
            "end_user_prefix",
            e,
            err,
            format_args!("a prefix of length /{} or longer", bmr.end_user_len()),
        )
    })?;
    if ce.in_lan(u32::from(ce.ipv4)) {
        return Err(cx.bad(
            "lan",
            l,
            format_args!("holds the CE's own IPv4 address {}", ce.ipv4),
            "a private range apart from the MAP domain's IPv4 prefixes",
        ));
    }
    Ok(ce)
}

/// The entries of `bmr` or `fmr`, each checked (RFC 7597 §5, §5.1, §5.2).
fn rules<'a>(
    cx: &Cx<'_>,
    key: &str,
    list: &'a [Spanned<MapRuleEntry>],
) -> Result<Vec<Checked<'a>>, ConfigError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let e = s.get_ref();
        let k = format!("{key}[{i}]");
        let (v6, r) = clean_v6_prefix(cx, &format!("{k}.ipv6_prefix"), &e.ipv6_prefix, V6_PREFIX)?;
        let (v4, l) = clean_v4_prefix(cx, &format!("{k}.ipv4_prefix"), &e.ipv4_prefix, V4_PREFIX)?;
        let ea = int_in(cx, &format!("{k}.ea_bits"), &e.ea_bits, 0, 48)? as u8;
        let a = match &e.psid_offset {
            Some(v) => int_in(cx, &format!("{k}.psid_offset"), v, 0, 15)? as u8,
            None => DEFAULT_PSID_OFFSET,
        };
        let rule = MapRule::new(v6, r, v4, l, ea, a)
            .map_err(|err| cx.err(s.span(), format!("{k}: {err}")))?;
        out.push((rule, s, k));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
