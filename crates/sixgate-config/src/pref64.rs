//! `[pref64]`: Router Advertisements carrying the PREF64 option (RFC 8781), so
//! that hosts on a link learn the translator's prefix (pool6) without DNS.

use std::ops::Range;

use sixgate_core::addr::Rfc6052Prefix;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::Pref64Section;
use crate::value::int_in;

/// RFC 4861 §6.2.1: MaxRtrAdvInterval is 4..=1800 seconds.
pub const INTERVAL_RANGE: (i64, i64) = (4, 1800);
/// Default seconds between unsolicited advertisements (RFC 4861 §6.2.1 default).
pub const DEFAULT_INTERVAL: u32 = 600;
/// RFC 8781 §4: the largest lifetime the 13-bit scaled field holds (8191 × 8).
pub const MAX_LIFETIME: u16 = 65528;
/// RFC 4861 §6.2.1: AdvDefaultLifetime is at most 9000 seconds.
pub const MAX_ROUTER_LIFETIME: i64 = 9000;

/// `[pref64]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pref64Settings {
    /// Interface the advertisements go out on.
    pub interface: String,
    /// The advertised prefix: the translator's pool6.
    pub prefix: Rfc6052Prefix,
    /// Seconds between unsolicited advertisements.
    pub interval: u32,
    /// PREF64 lifetime in seconds: a multiple of 8, at most [`MAX_LIFETIME`].
    pub lifetime: u16,
    /// Router Lifetime of the RA, seconds.
    pub router_lifetime: u16,
}

/// RFC 8781 §4: the lifetime SHOULD be at least 3 × MaxRtrAdvInterval; rounded
/// up to the 8-second unit, capped at [`MAX_LIFETIME`].
pub fn default_lifetime(interval: u32) -> u16 {
    (interval * 3)
        .div_ceil(8)
        .saturating_mul(8)
        .min(u32::from(MAX_LIFETIME)) as u16
}

pub(crate) fn section(
    cx: &Cx<'_>,
    p: Pref64Section,
    header: Range<usize>,
    pool6: Option<Rfc6052Prefix>,
) -> Result<Pref64Settings, ConfigError> {
    let Some(interface) = &p.interface else {
        return Err(cx.err(
            header,
            "[pref64] has no interface; expected interface = the link to advertise on, \
             e.g. interface = \"eth1\"",
        ));
    };
    let name = interface.get_ref();
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ']) {
        return Err(cx.bad(
            "interface",
            interface,
            "not an interface name",
            "1 to 15 characters, no '/' or spaces",
        ));
    }
    let Some(prefix) = pool6 else {
        return Err(cx.err(
            header,
            "[pref64] advertises [translator] pool6, but there is none; expected pool6 \
             in [translator] (a CLAT discovering its prefix has nothing to advertise)",
        ));
    };
    let interval = match &p.interval {
        Some(v) => int_in(cx, "interval", v, INTERVAL_RANGE.0, INTERVAL_RANGE.1)? as u32,
        None => DEFAULT_INTERVAL,
    };
    let lifetime = match &p.lifetime {
        Some(v) => {
            let n = int_in(cx, "lifetime", v, 0, i64::from(MAX_LIFETIME))?;
            if n % 8 != 0 {
                return Err(cx.bad(
                    "lifetime",
                    v,
                    "not a multiple of 8 (RFC 8781 §4 scales it by 8 s)",
                    format!("a multiple of 8, e.g. {}", n - n % 8 + 8),
                ));
            }
            if n < i64::from(interval) * 3 {
                cx.warn(
                    v.span(),
                    format!(
                        "lifetime = {n} is less than 3 × interval ({}); RFC 8781 §4 says \
                         it SHOULD be at least that, or hosts may forget the prefix \
                         between advertisements",
                        interval * 3
                    ),
                );
            }
            n as u16
        }
        None => default_lifetime(interval),
    };
    let router_lifetime = match &p.router_lifetime {
        Some(v) => int_in(cx, "router_lifetime", v, 0, MAX_ROUTER_LIFETIME)? as u16,
        None => 0,
    };
    Ok(Pref64Settings {
        interface: name.clone(),
        prefix,
        interval,
        lifetime,
        router_lifetime,
    })
}

#[cfg(test)]
mod tests;
