//! Value parsers shared by the sections: integers in a range, addresses, prefixes,
//! RFC 6052 prefixes, interface names, timeouts. Each reports a bad value at its
//! position in one shape: `KEY = VALUE: what is wrong; expected WHAT`.

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::addr::{PrefixError, Rfc6052Prefix};
use toml::Spanned;

use crate::ConfigError;
use crate::cx::Cx;

/// What a prefix key expects, for [`clean_v4_prefix`] and [`clean_v6_prefix`].
pub(crate) const V4_PREFIX: &str = "an IPv4 prefix ADDR/LEN or an address";
pub(crate) const V6_PREFIX: &str = "an IPv6 prefix ADDR/LEN or an address";

/// An IPv4 prefix (or address, /32) with no bits set beyond its length;
/// `expected` says what the key takes.
pub(crate) fn clean_v4_prefix(
    cx: &Cx<'_>,
    key: &str,
    v: &Spanned<String>,
    expected: &str,
) -> Result<(Ipv4Addr, u8), ConfigError> {
    let (a, len) = parse_v4_prefix(v.get_ref(), true).map_err(|p| cx.bad(key, v, p, expected))?;
    if mask_v4(a, len) != a {
        return Err(cx.bad(
            key,
            v,
            format_args!("bits beyond /{len} are set"),
            format_args!("\"{}/{len}\"", mask_v4(a, len)),
        ));
    }
    Ok((a, len))
}

/// An IPv6 prefix (or address, /128) with no bits set beyond its length;
/// `expected` says what the key takes.
pub(crate) fn clean_v6_prefix(
    cx: &Cx<'_>,
    key: &str,
    v: &Spanned<String>,
    expected: &str,
) -> Result<(Ipv6Addr, u8), ConfigError> {
    let (a, len) = parse_v6_prefix(v.get_ref(), true).map_err(|p| cx.bad(key, v, p, expected))?;
    if mask_v6(a, len) != a {
        return Err(cx.bad(
            key,
            v,
            format_args!("bits beyond /{len} are set"),
            format_args!("\"{}/{len}\"", mask_v6(a, len)),
        ));
    }
    Ok((a, len))
}

/// The kernel's dev_valid_name(): 1..IFNAMSIZ-1 bytes, not "." or "..", no '/',
/// ':' or whitespace. `None` when it is valid.
pub(crate) fn interface_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("empty name".to_owned())
    } else if name.len() > 15 {
        Some(format!("{} bytes long", name.len()))
    } else if name == "." || name == ".." {
        Some("reserved name".to_owned())
    } else if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace() || !c.is_ascii_graphic())
    {
        Some("contains '/', ':', whitespace or a non-ASCII character".to_owned())
    } else {
        None
    }
}

pub(crate) fn quoted_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An RFC 6052 prefix value of `key` (`pool6`, `[dns64] prefixes`).
pub(crate) fn rfc6052_prefix(
    cx: &Cx<'_>,
    key: &str,
    p: &Spanned<String>,
) -> Result<Rfc6052Prefix, ConfigError> {
    const EXPECTED: &str = "an RFC 6052 prefix ADDR/LEN with LEN 32, 40, 48, 56, 64 or 96, \
                            e.g. \"64:ff9b::/96\"";
    let (addr, len) = match parse_v6_prefix(p.get_ref(), false) {
        Ok(v) => v,
        Err(problem) => return Err(cx.bad(key, p, problem, EXPECTED)),
    };
    Rfc6052Prefix::new(addr, len).map_err(|e| match e {
        PrefixError::BadLength(l) => cx.bad(
            key,
            p,
            format_args!("length /{l} is not an RFC 6052 length"),
            "/32, /40, /48, /56, /64 or /96 (RFC 6052 §2.2)",
        ),
        PrefixError::HostBitsSet => cx.bad(
            key,
            p,
            format_args!("bits beyond /{len} are set"),
            format_args!("\"{}/{len}\"", mask_v6(addr, len)),
        ),
        PrefixError::UOctetSet => cx.bad(
            key,
            p,
            "bits 64..71 (the \"u\" octet) are not zero",
            "a prefix whose u octet is zero (RFC 6052 §2.2)",
        ),
        PrefixError::Syntax(s) => cx.bad(key, p, s, EXPECTED),
    })
}

pub(crate) fn int_in(
    cx: &Cx<'_>,
    key: &str,
    v: &Spanned<i64>,
    lo: i64,
    hi: i64,
) -> Result<i64, ConfigError> {
    let n = *v.get_ref();
    if (lo..=hi).contains(&n) {
        Ok(n)
    } else {
        Err(cx.err(
            v.span(),
            format!("{key} = {n}: out of range; expected an integer from {lo} to {hi}"),
        ))
    }
}

pub(crate) fn v4_addr(
    cx: &Cx<'_>,
    key: &str,
    v: &Spanned<String>,
) -> Result<Ipv4Addr, ConfigError> {
    v.get_ref().parse().map_err(|_| {
        cx.bad(
            key,
            v,
            "not an IPv4 address",
            "an address such as \"192.0.0.8\"",
        )
    })
}

pub(crate) fn v6_addr(
    cx: &Cx<'_>,
    key: &str,
    v: &Spanned<String>,
) -> Result<Ipv6Addr, ConfigError> {
    v.get_ref().parse().map_err(|_| {
        cx.bad(
            key,
            v,
            "not an IPv6 address",
            "an address such as \"2001:db8::8\"",
        )
    })
}

/// `ADDR/LEN`, or (if `bare_ok`) `ADDR` meaning /32. Host bits are checked by the caller.
pub(crate) fn parse_v4_prefix(s: &str, bare_ok: bool) -> Result<(Ipv4Addr, u8), String> {
    parse_prefix(s, bare_ok, 32)
}

/// `ADDR/LEN`, or (if `bare_ok`) `ADDR` meaning /128.
pub(crate) fn parse_v6_prefix(s: &str, bare_ok: bool) -> Result<(Ipv6Addr, u8), String> {
    parse_prefix(s, bare_ok, 128)
}

fn parse_prefix<A: std::str::FromStr>(s: &str, bare_ok: bool, max: u8) -> Result<(A, u8), String> {
    let family = if max == 32 { "IPv4" } else { "IPv6" };
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None if bare_ok => (s, None),
        None => return Err("no prefix length".to_owned()),
    };
    let addr = addr
        .parse()
        .map_err(|_| format!("{addr:?} is not an {family} address"))?;
    let len = match len {
        None => max,
        Some(l) => match l.parse::<u8>() {
            Ok(n) if n <= max => n,
            _ => return Err(format!("/{l} is not a prefix length from 0 to {max}")),
        },
    };
    Ok((addr, len))
}

pub(crate) fn mask_v4(a: Ipv4Addr, len: u8) -> Ipv4Addr {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    Ipv4Addr::from(u32::from(a) & mask)
}

fn mask_v6(a: Ipv6Addr, len: u8) -> Ipv6Addr {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    Ipv6Addr::from(u128::from(a) & mask)
}

/// Longest timeout, seconds (about 11.5 days): the core keeps deadlines as 32-bit
/// millisecond timestamps compared with wrapping arithmetic.
pub(crate) const MAX_TIMEOUT_S: i64 = sixgate_core::nat64::MAX_TIMEOUT_S as i64;

/// Most sessions for the whole gateway (64 Mi): the tables are allocated for
/// `max_sessions` at start, so an absurd value would fail there, not here.
pub(crate) const MAX_SESSIONS: i64 = 1 << 26;

/// A timeout key, its RFC floor and where the RFC sets it.
pub(crate) struct Timer {
    pub(crate) key: &'static str,
    /// Below this, warn.
    pub(crate) rfc_min: u32,
    /// What the warning cites.
    pub(crate) rule: &'static str,
}

/// A timeout in whole seconds, `lo` to [`MAX_TIMEOUT_S`]; under the RFC floor it warns.
pub(crate) fn timeout(
    cx: &Cx<'_>,
    t: &Timer,
    v: &Spanned<i64>,
    lo: i64,
) -> Result<u32, ConfigError> {
    let n = *v.get_ref();
    if n == 0 && lo > 0 {
        return Err(cx.err(
            v.span(),
            format!(
                "{} = 0: a session would expire as it is made; expected a number of seconds \
                 from 1 to {MAX_TIMEOUT_S}, at least {} to follow {}",
                t.key, t.rfc_min, t.rule
            ),
        ));
    }
    let secs = int_in(cx, t.key, v, lo, MAX_TIMEOUT_S)? as u32;
    if secs < t.rfc_min {
        cx.warn(
            v.span(),
            format!(
                "{} = {secs}: below {} s; {}. Fine for tests, not for service",
                t.key, t.rfc_min, t.rule
            ),
        );
    }
    Ok(secs)
}
