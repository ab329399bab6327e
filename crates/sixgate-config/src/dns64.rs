//! `[dns64]`: the DNS64 server (RFC 6147), its settings and its checks (its
//! schema, `Dns64Section`, is in [`schema`](crate::schema) with every section's).
//!
//! The section works in a gateway file (next to `[translator]`, whose `pool6` it
//! can take as its prefix, so the two never disagree) and alone, for
//! `sixgate dns64 --config FILE`, where [`load_dns64`](crate::load_dns64) reads it
//! without requiring a translator.

use std::net::{IpAddr, SocketAddr};
use std::ops::Range;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use sixgate_core::addr::Rfc6052Prefix;
use toml::Spanned;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::{Dns64Section, Prefixes};
use crate::value::{
    V4_PREFIX, V6_PREFIX, clean_v4_prefix, clean_v6_prefix, int_in, rfc6052_prefix,
};

/// The checked `[dns64]` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dns64Settings {
    /// Where to answer, UDP and TCP.
    pub listen: Vec<SocketAddr>,
    /// Where to forward, in order of preference.
    pub upstream: Vec<SocketAddr>,
    /// RFC 6052 prefixes to synthesize with: one AAAA per prefix and A record.
    pub prefixes: Vec<Rfc6052Prefix>,
    /// RFC 6147 §5.1.4: AAAA records inside these are treated as absent.
    pub exclude: Vec<Ipv6Net>,
    /// A records inside these are not synthesized.
    pub exclude_ipv4: Vec<Ipv4Net>,
    /// Clients that may query; others get REFUSED.
    pub acl: Vec<IpNet>,
    /// Most cached answers (0: no cache).
    pub cache_size: usize,
    /// TTL cap for cached answers, seconds.
    pub max_ttl: u32,
    /// Wait for one upstream answer, milliseconds.
    pub upstream_timeout_ms: u32,
    /// Tries per question (each to the next upstream).
    pub upstream_attempts: u32,
}

/// Default `listen`: the loopback addresses.
pub const DEFAULT_LISTEN: &[&str] = &["127.0.0.1:53", "[::1]:53"];
/// Default `exclude`: RFC 6147 §5.1.4's IPv4-mapped prefix.
pub const DEFAULT_EXCLUDE: &str = "::ffff:0:0/96";
/// Default `acl`: this host only (a DNS64 open to all is an open resolver).
pub const DEFAULT_ACL: &[&str] = &["127.0.0.0/8", "::1/128"];
/// Default `cache_size`.
pub const DEFAULT_CACHE_SIZE: usize = 10_000;
/// Default `max_ttl`, seconds (one day).
pub const DEFAULT_MAX_TTL: u32 = 86_400;
/// Default `upstream_timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u32 = 1_000;
/// Default `upstream_attempts`.
pub const DEFAULT_ATTEMPTS: u32 = 2;

/// Check `[dns64]`. `pool6` is `[translator] pool6` when the file has one.
pub(crate) fn section(
    cx: &Cx<'_>,
    d: Dns64Section,
    header: Range<usize>,
    pool6: Option<Rfc6052Prefix>,
) -> Result<Dns64Settings, ConfigError> {
    let listen: Vec<SocketAddr> = match &d.listen {
        Some(l) => l
            .iter()
            .map(|v| socket(cx, "listen", v))
            .collect::<Result<_, _>>()?,
        None => DEFAULT_LISTEN.iter().map(|s| s.parse().unwrap()).collect(),
    };
    let Some(up) = &d.upstream else {
        return Err(cx.err(
            header,
            "[dns64] has no upstream; expected upstream = a list of resolvers to forward \
             to, e.g. upstream = [\"192.0.2.53\"]",
        ));
    };
    let upstream: Vec<SocketAddr> = up
        .iter()
        .map(|v| socket(cx, "upstream", v))
        .collect::<Result<_, _>>()?;
    if upstream.is_empty() || listen.is_empty() {
        let what = if upstream.is_empty() {
            "upstream"
        } else {
            "listen"
        };
        return Err(cx.err(
            header,
            format!("[dns64] {what} is empty; expected at least one address"),
        ));
    }
    let prefixes = match &d.prefixes {
        None => match pool6 {
            Some(p) => vec![p],
            None => {
                return Err(cx.err(
                    header,
                    "[dns64] has no prefixes and the file sets no [translator] pool6; \
                     expected prefixes = [\"64:ff9b::/96\"] (RFC 6052 prefixes) or a \
                     [translator] pool6",
                ));
            }
        },
        Some(p) => match p.get_ref() {
            Prefixes::Word(w) if w == "pool6" => match pool6 {
                Some(p) => vec![p],
                None => {
                    return Err(cx.bad(
                        "prefixes",
                        p,
                        "this file sets no [translator] pool6",
                        "a [translator] section with pool6, or a list of RFC 6052 prefixes",
                    ));
                }
            },
            Prefixes::Word(_) => {
                return Err(cx.bad(
                    "prefixes",
                    p,
                    "unknown word",
                    "\"pool6\" or a list of RFC 6052 prefixes",
                ));
            }
            Prefixes::List(list) => {
                let mut out = Vec::new();
                for s in list {
                    let one = Spanned::new(p.span(), s.clone());
                    let prefix = rfc6052_prefix(cx, "prefixes", &one)?;
                    if !out.contains(&prefix) {
                        out.push(prefix);
                    }
                }
                if out.is_empty() {
                    return Err(cx.bad(
                        "prefixes",
                        p,
                        "empty list",
                        "at least one RFC 6052 prefix, or \"pool6\"",
                    ));
                }
                out
            }
        },
    };
    let exclude = match &d.exclude {
        Some(l) => l
            .iter()
            .map(|v| v6_net(cx, "exclude", v))
            .collect::<Result<_, _>>()?,
        None => vec![DEFAULT_EXCLUDE.parse().unwrap()],
    };
    let exclude_ipv4 = match &d.exclude_ipv4 {
        Some(l) => l
            .iter()
            .map(|v| v4_net(cx, "exclude_ipv4", v))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let acl = match &d.acl {
        Some(l) => l
            .iter()
            .map(|v| {
                let net = if v.get_ref().contains(':') {
                    v6_net(cx, "acl", v).map(IpNet::V6)
                } else {
                    v4_net(cx, "acl", v).map(IpNet::V4)
                }?;
                crate::lint::open_resolver(cx, v.span(), &net);
                Ok(net)
            })
            .collect::<Result<_, _>>()?,
        None => DEFAULT_ACL.iter().map(|s| s.parse().unwrap()).collect(),
    };
    let cache_size = match &d.cache_size {
        Some(v) => int_in(cx, "cache_size", v, 0, 100_000_000)? as usize,
        None => DEFAULT_CACHE_SIZE,
    };
    let max_ttl = match &d.max_ttl {
        Some(v) => int_in(cx, "max_ttl", v, 0, 604_800)? as u32,
        None => DEFAULT_MAX_TTL,
    };
    let upstream_timeout_ms = match &d.upstream_timeout_ms {
        Some(v) => int_in(cx, "upstream_timeout_ms", v, 10, 60_000)? as u32,
        None => DEFAULT_TIMEOUT_MS,
    };
    let upstream_attempts = match &d.upstream_attempts {
        Some(v) => int_in(cx, "upstream_attempts", v, 1, 10)? as u32,
        None => DEFAULT_ATTEMPTS,
    };
    Ok(Dns64Settings {
        listen,
        upstream,
        prefixes,
        exclude,
        exclude_ipv4,
        acl,
        cache_size,
        max_ttl,
        upstream_timeout_ms,
        upstream_attempts,
    })
}

/// `"ADDR"` (port 53), `"ADDR:PORT"` or `"[ADDR]:PORT"`.
fn socket(cx: &Cx<'_>, key: &str, v: &Spanned<String>) -> Result<SocketAddr, ConfigError> {
    let s = v.get_ref();
    if let Ok(a) = s.parse::<IpAddr>() {
        return Ok(SocketAddr::new(a, 53));
    }
    s.parse().map_err(|_| {
        cx.bad(
            key,
            v,
            "not an address or ADDR:PORT",
            "e.g. \"192.0.2.53\", \"192.0.2.53:5353\", \"2001:db8::53\" or \"[2001:db8::53]:53\"",
        )
    })
}

fn v6_net(cx: &Cx<'_>, key: &str, v: &Spanned<String>) -> Result<Ipv6Net, ConfigError> {
    let (a, len) = clean_v6_prefix(cx, key, v, V6_PREFIX)?;
    Ok(Ipv6Net::new(a, len).expect("length checked"))
}

fn v4_net(cx: &Cx<'_>, key: &str, v: &Spanned<String>) -> Result<Ipv4Net, ConfigError> {
    let (a, len) = clean_v4_prefix(cx, key, v, V4_PREFIX)?;
    Ok(Ipv4Net::new(a, len).expect("length checked"))
}

#[cfg(test)]
mod tests;
