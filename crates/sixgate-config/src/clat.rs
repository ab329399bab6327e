//! `[clat]`: the RFC 6877 customer-side translator, as SIIT configuration.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use sixgate_core::Config;
use sixgate_core::addr::{Eam, EamError, Rfc6052Prefix};
use sixgate_core::config::{HairpinMode, IPV4_DUMMY_ADDRESS};
use toml::Spanned;

use crate::ConfigError;
#[cfg(doc)]
use crate::Loaded;
use crate::cx::Cx;
use crate::schema::ClatSection;
use crate::translator::Explicit;
use crate::value::{V4_PREFIX, V6_PREFIX, clean_v4_prefix, clean_v6_prefix};

/// `[clat]`: RFC 6877 customer-side translator settings. Their EAM entry is already
/// in [`Loaded::config`]; the PLAT prefix is there too unless it is to be discovered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClatSettings {
    /// The customer-side IPv4 prefix (RFC 7335 192.0.0.0/29 by default).
    pub ipv4: (Ipv4Addr, u8),
    /// The CLAT's IPv6 prefix (RFC 6877 §6.3 dedicated prefix) it maps to.
    pub ipv6: (Ipv6Addr, u8),
    /// Where the PLAT prefix (pool6) comes from.
    pub plat_prefix: PlatPrefix,
    /// `[translator] icmp_source_v6` was not given: it follows the PLAT prefix
    /// (192.0.0.8 embedded, as in SIIT mode) once that is known.
    pub icmp_source_v6_from_prefix: bool,
}

impl ClatSettings {
    /// Use `prefix` as the PLAT prefix of a running `cfg` (RFC 7050 §3: a
    /// re-discovered prefix), as [`Loaded::set_plat_prefix`] does at start.
    pub fn set_plat_prefix(&self, cfg: &mut Config, prefix: Rfc6052Prefix) {
        set_plat_prefix(cfg, prefix, self.icmp_source_v6_from_prefix);
    }
}

/// pool6 = `prefix`, and the ICMPv6 error source with it (192.0.0.8 embedded)
/// when it `follows` the prefix.
pub(crate) fn set_plat_prefix(cfg: &mut Config, prefix: Rfc6052Prefix, follows: bool) {
    cfg.map.pool6 = Some(prefix);
    if follows {
        cfg.icmp_source_v6 = prefix.embed(IPV4_DUMMY_ADDRESS);
    }
}

/// Where a CLAT's PLAT prefix comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlatPrefix {
    /// `[translator] pool6`, already in the core config.
    Static(Rfc6052Prefix),
    /// RFC 7050: the AAAA records of `ipv4only.arpa`, asked at start-up.
    Discover {
        /// The DNS server to ask; `None`: the first `nameserver` of /etc/resolv.conf.
        dns_server: Option<SocketAddr>,
        /// `[translator] pool6`, used (with a warning) when discovery fails.
        fallback: Option<Rfc6052Prefix>,
    },
}

/// The DNS port, for `dns_server` given without one.
pub const DNS_PORT: u16 = 53;

/// RFC 7335: 192.0.0.0/29, the IPv4 Service Continuity Prefix, the default `[clat] ipv4`.
pub(crate) const CLAT_DEFAULT_V4: (Ipv4Addr, u8) = (Ipv4Addr::new(192, 0, 0, 0), 29);

/// `[clat]`: RFC 6877 as SIIT configuration. The customer-side IPv4 prefix becomes
/// one more EAM entry towards the CLAT's IPv6 prefix; destinations use the PLAT
/// prefix (pool6), static or discovered later (RFC 7050); hairpinning is off unless
/// the file asks for it (customer hosts reach each other on their own link).
pub(crate) fn section(
    cx: &Cx<'_>,
    cfg: &mut Config,
    c: Spanned<ClatSection>,
    explicit: Explicit,
) -> Result<ClatSettings, ConfigError> {
    let span = c.span();
    let c = c.into_inner();
    let (v4, v4_len) = match &c.ipv4 {
        Some(v) => clean_v4_prefix(cx, "ipv4", v, V4_PREFIX)?,
        None => CLAT_DEFAULT_V4,
    };
    let Some(v6_text) = &c.ipv6 else {
        return Err(cx.err(
            span,
            "[clat] has no `ipv6`; expected ipv6 = the CLAT's IPv6 prefix (RFC 6877 §6.3), \
             e.g. \"2001:db8:c1a7::/125\" for the default ipv4 = \"192.0.0.0/29\"",
        ));
    };
    let (v6, v6_len) = clean_v6_prefix(cx, "ipv6", v6_text, V6_PREFIX)?;
    if 128 - u32::from(v6_len) < 32 - u32::from(v4_len) {
        return Err(cx.bad(
            "ipv6",
            v6_text,
            format_args!(
                "it leaves {} host bits but ipv4 = \"{v4}/{v4_len}\" has {}",
                128 - u32::from(v6_len),
                32 - u32::from(v4_len)
            ),
            format_args!(
                "an IPv6 prefix of length /{} or shorter (RFC 7757 §3)",
                96 + v4_len
            ),
        ));
    }
    let entry = Eam {
        v4: v4.octets(),
        v4_len,
        v6: v6.octets(),
        v6_len,
    };
    if let Err(e) = cfg.map.eam.insert(entry) {
        let other = match e {
            EamError::Overlap(other) => format!(
                " with the [translator] eam entry {}/{} <-> {}/{}",
                Ipv4Addr::from(other.v4),
                other.v4_len,
                Ipv6Addr::from(other.v6),
                other.v6_len
            ),
            _ => String::new(),
        };
        return Err(cx.bad(
            "ipv6",
            v6_text,
            format_args!("the CLAT mapping {v4}/{v4_len} <-> {v6}/{v6_len} conflicts{other}"),
            "[clat] prefixes that no eam entry has exactly, on either side (RFC 7757 §3)",
        ));
    }
    if !explicit.hairpin {
        cfg.hairpin = HairpinMode::Off;
    }

    let mode = c
        .plat_prefix
        .as_ref()
        .map_or("pool6", |p| p.get_ref().as_str());
    let plat_prefix = match mode {
        "pool6" => match cfg.map.pool6 {
            Some(p) => PlatPrefix::Static(p),
            None => {
                let at = c.plat_prefix.as_ref().map_or(span.clone(), |p| p.span());
                return Err(cx.err(
                    at,
                    "[clat] takes the PLAT prefix from [translator] pool6, which is not set; \
                     expected pool6 = the PLAT's RFC 6052 prefix (e.g. \"64:ff9b::/96\"), or \
                     plat_prefix = \"discover\" (RFC 7050)",
                ));
            }
        },
        "discover" => PlatPrefix::Discover {
            dns_server: c
                .dns_server
                .as_ref()
                .map(|d| dns_server(cx, d))
                .transpose()?,
            fallback: cfg.map.pool6,
        },
        _ => {
            let p = c
                .plat_prefix
                .as_ref()
                .expect("only a given value can be unknown");
            return Err(cx.bad(
                "plat_prefix",
                p,
                "unknown source of the PLAT prefix",
                "\"pool6\" ([translator] pool6) or \"discover\" (RFC 7050, ipv4only.arpa)",
            ));
        }
    };
    if let (PlatPrefix::Static(_), Some(d)) = (&plat_prefix, &c.dns_server) {
        return Err(cx.bad(
            "dns_server",
            d,
            "only used to discover the PLAT prefix",
            "plat_prefix = \"discover\" with it, or no dns_server",
        ));
    }
    Ok(ClatSettings {
        ipv4: (v4, v4_len),
        ipv6: (v6, v6_len),
        plat_prefix,
        icmp_source_v6_from_prefix: !explicit.icmp_source_v6,
    })
}

/// `ADDR`, `ADDR:PORT` or `[ADDR]:PORT`; port 53 when left out.
fn dns_server(cx: &Cx<'_>, d: &Spanned<String>) -> Result<SocketAddr, ConfigError> {
    let text = d.get_ref().trim();
    text.parse::<SocketAddr>()
        .or_else(|_| text.parse::<IpAddr>().map(|a| SocketAddr::new(a, DNS_PORT)))
        .map_err(|_| {
            cx.bad(
                "dns_server",
                d,
                "not an address or address:port",
                "e.g. \"2001:db8::53\", \"192.0.2.53\" or \"[2001:db8::53]:5353\"",
            )
        })
}

#[cfg(test)]
mod tests;
