//! `[translator]`: the mode and the stateless translator (RFC 7915) with its
//! address mapping (RFC 6052 pool6, RFC 7757 EAM), as a core [`Config`].

use std::collections::HashSet;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Range;

use sixgate_core::Config;
use sixgate_core::addr::{Eam, EamError, Rfc6052Prefix};
use sixgate_core::config::{ClassE, HairpinMode, UdpZeroChecksum};
use toml::Spanned;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::{EamEntry, TranslatorSection};
use crate::value::{
    V4_PREFIX, V6_PREFIX, clean_v4_prefix, clean_v6_prefix, int_in, quoted_list, rfc6052_prefix,
    v4_addr, v6_addr,
};

/// The translator mode a file selects. Planned modes are recognised so that a
/// file written for them gets a clear "not yet" error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Stateless IP/ICMP translation (RFC 7915) with RFC 6052 and RFC 7757 mapping.
    Siit,
    /// RFC 6877 CLAT: the SIIT core with the customer-side IPv4 range as an EAM
    /// entry and the PLAT prefix (static or RFC 7050) as pool6; see [`ClatSettings`](crate::ClatSettings).
    Clat,
    /// Stateful NAT64 (RFC 6146): RFC 7915 headers, addresses and ports from the
    /// BIB and session tables; settings in `[nat64]`.
    Nat64,
    /// MAP-T Border Relay (RFC 7599 §7): RFC 7915 with addresses and ports from
    /// the Mapping Rules in `[mapt]`.
    MaptBr,
    /// MAP-T Customer Edge (RFC 7599 §5): a NAPT44 for the LAN, then MAP-T; see
    /// `[mapt]`.
    MaptCe,
}

impl Mode {
    /// The name used in the file.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Siit => "siit",
            Mode::Clat => "clat",
            Mode::Nat64 => "nat64",
            Mode::MaptBr => "mapt-br",
            Mode::MaptCe => "mapt-ce",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Modes the file format knows: the supported ones, then the planned ones.
pub const KNOWN_MODES: &[&str] = &["siit", "nat64", "clat", "mapt-br", "mapt-ce"];
/// Modes that parse but are not implemented yet.
pub const PLANNED_MODES: &[&str] = &[];

/// Most addresses `rfc6791_v4` may expand to.
pub(crate) const RFC6791_V4_MAX: u64 = 65_536;

/// The RFC 6052 Well-Known Prefix, pool6's default in mode nat64 (RFC 6146 §2).
const WELL_KNOWN_PREFIX: &str = "64:ff9b::/96";

/// Which `[translator]` keys the file set itself.
#[derive(Clone, Copy)]
pub(crate) struct Explicit {
    pub(crate) hairpin: bool,
    pub(crate) icmp_source_v6: bool,
}

/// `[translator]` as a core [`Config`], with the mode and where the file names it.
pub(crate) fn section(
    cx: &Cx<'_>,
    t: TranslatorSection,
    header: Range<usize>,
) -> Result<(Config, Mode, Range<usize>), ConfigError> {
    let (mode, mode_span) = match &t.mode {
        Some(m) => (mode(cx, m)?, m.span()),
        None => {
            return Err(cx.err(
                header,
                format!(
                    "[translator] has no `mode`; expected mode = one of {}",
                    quoted_list(KNOWN_MODES)
                ),
            ));
        }
    };

    let mut pool6 = t.pool6.as_ref().map(|p| pool6(cx, p)).transpose()?;
    let eam_entries = t.eam.as_deref().unwrap_or(&[]);
    let mapt = matches!(mode, Mode::MaptBr | Mode::MaptCe);
    if mapt {
        not_in_mapt(cx, &t)?;
    }
    if mode == Mode::Nat64 {
        not_in_nat64(cx, &t)?;
        if pool6.is_none() {
            let wkp = toml::Spanned::new(0..0, WELL_KNOWN_PREFIX.to_owned());
            pool6 = Some(self::pool6(cx, &wkp)?);
        }
    }
    // A CLAT always maps its [clat] prefixes.
    if pool6.is_none() && eam_entries.is_empty() && mode != Mode::Clat && !mapt {
        return Err(cx.err(
            header,
            "[translator] maps no addresses; expected `pool6` (an RFC 6052 prefix), \
             at least one `eam` entry, or both",
        ));
    }

    let mut cfg = Config::with_pool6(pool6);
    if let Some(v) = t.wkp_strict {
        cfg.map.wkp_strict = v;
    }
    // From here on every key is checked on its own: one bad value does not hide
    // the next.
    for (i, e) in eam_entries.iter().enumerate() {
        cx.check(|| eam(cx, &mut cfg, i, e));
    }
    if let Some(h) = &t.hairpin {
        cx.check(|| {
            cfg.hairpin = match h.get_ref().as_str() {
                "off" => HairpinMode::Off,
                "simple" => HairpinMode::Simple,
                "intrinsic" => HairpinMode::Intrinsic,
                _ => {
                    return Err(cx.bad(
                        "hairpin",
                        h,
                        "unknown hairpinning mode",
                        "\"off\", \"simple\" or \"intrinsic\" (RFC 7757 §4)",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(list) = &t.rfc6791_v4
        && let Some(v) = cx.keep(rfc6791_v4(cx, list))
    {
        cfg.rfc6791_v4 = v;
    }
    if let Some(a) = &t.rfc6791_v6
        && let Some(v) = cx.keep(v6_addr(cx, "rfc6791_v6", a))
    {
        cfg.rfc6791_v6 = Some(v);
    }
    if let Some(a) = &t.icmp_source_v4
        && let Some(v) = cx.keep(v4_addr(cx, "icmp_source_v4", a))
    {
        cfg.icmp_source_v4 = v;
    }
    match (&t.icmp_source_v6, pool6) {
        (Some(a), _) => {
            if let Some(v) = cx.keep(v6_addr(cx, "icmp_source_v6", a)) {
                cfg.icmp_source_v6 = v;
            }
        }
        (None, Some(_)) => {} // with_pool6 embedded 192.0.0.8 in pool6.
        // A CLAT discovering its PLAT prefix: Loaded::set_plat_prefix fills it in.
        (None, None) if mode == Mode::Clat => {}
        // MAP-T: [mapt] sets it from the DMR.
        (None, None) if mapt => {}
        (None, None) => cx.record(cx.err(
            header,
            "[translator] has no `icmp_source_v6` and no `pool6` to derive it from; \
             expected icmp_source_v6 = an IPv6 address of this translator",
        )),
    }
    if let Some(v) = t.reset_traffic_class {
        cfg.reset_traffic_class = v;
    }
    if let Some(v) = t.reset_tos {
        cfg.reset_tos = v;
    }
    if let Some(v) = &t.new_tos
        && let Some(n) = cx.keep(int_in(cx, "new_tos", v, 0, 255))
    {
        cfg.new_tos = n as u8;
    }
    if let Some(v) = &t.lowest_ipv6_mtu
        && let Some(n) = cx.keep(int_in(cx, "lowest_ipv6_mtu", v, 1280, 65535))
    {
        cfg.lowest_ipv6_mtu = n as u16;
    }
    if let Some(v) = &t.ipv4_mtu
        && let Some(n) = cx.keep(int_in(cx, "ipv4_mtu", v, 68, 65535))
    {
        cfg.ipv4_mtu = Some(n as u16);
    }
    if let Some(v) = &t.ipv6_mtu
        && let Some(n) = cx.keep(int_in(cx, "ipv6_mtu", v, 1280, 65535))
    {
        cfg.ipv6_mtu = Some(n as u16);
    }
    if let Some(list) = &t.mtu_plateaus
        && let Some(v) = cx.keep(mtu_plateaus(cx, list))
    {
        cfg.mtu_plateaus = v;
    }
    if let Some(u) = &t.udp_zero_checksum {
        cx.check(|| {
            cfg.udp_zero_checksum = match u.get_ref().as_str() {
                "compute" => UdpZeroChecksum::Compute,
                "drop" => UdpZeroChecksum::Drop,
                _ => {
                    return Err(cx.bad(
                        "udp_zero_checksum",
                        u,
                        "unknown policy",
                        "\"compute\" or \"drop\" (RFC 7915 §4.5)",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(c) = &t.class_e {
        cx.check(|| {
            cfg.class_e = match c.get_ref().as_str() {
                "drop" => ClassE::Drop,
                "translate" => ClassE::Translate,
                _ => {
                    return Err(cx.bad(
                        "class_e",
                        c,
                        "unknown policy",
                        "\"drop\" or \"translate\" (240.0.0.0/4, RFC 1812 §5.3.7)",
                    ));
                }
            };
            if cfg.class_e == ClassE::Translate {
                crate::lint::class_e_under_the_well_known_prefix(cx, &cfg, c.span());
            }
            Ok(())
        });
    }
    if let Some(v) = t.decrement_hop_limit {
        cfg.decrement_hop_limit = v;
    }
    if let Some(v) = &t.icmp_errors_per_sec
        && let Some(n) = cx.keep(int_in(cx, "icmp_errors_per_sec", v, 0, u32::MAX.into()))
    {
        cfg.icmp_errors_per_sec = n as u32;
    }
    if let Some(v) = &t.icmp_error_burst {
        cx.check(|| {
            cfg.icmp_error_burst = int_in(cx, "icmp_error_burst", v, 0, u32::MAX.into())? as u32;
            if cfg.icmp_error_burst == 0 && cfg.icmp_errors_per_sec > 0 {
                return Err(cx.bad(
                    "icmp_error_burst",
                    v,
                    "an empty bucket can never send an error",
                    "at least 1, or icmp_errors_per_sec = 0 to disable ICMP errors",
                ));
            }
            Ok(())
        });
    }
    Ok((cfg, mode, mode_span))
}

/// Keys of `[translator]` that have no meaning in mode nat64, refused with why.
fn not_in_nat64(cx: &Cx<'_>, t: &TranslatorSection) -> Result<(), ConfigError> {
    if let Some(first) = t.eam.as_ref().and_then(|e| e.first()) {
        return Err(cx.err(
            first.span(),
            "eam: Explicit Address Mappings (RFC 7757) are for mode \"siit\"; in mode \
             \"nat64\" IPv6 hosts share pool4 through the BIB and session tables (RFC 6146), \
             so an EAM entry would bypass them; expected no `eam` (a fixed mapping is a \
             `static_bib` entry in [nat64])",
        ));
    }
    if let Some(h) = &t.hairpin {
        return Err(cx.err(
            h.span(),
            format!(
                "hairpin = {:?}: RFC 7757 hairpinning is about EAM entries, which mode \
                 \"nat64\" has none of; NAT64 always hairpins traffic to pool4 (RFC 6146 §3.8); \
                 expected no `hairpin`",
                h.get_ref()
            ),
        ));
    }
    Ok(())
}

/// Keys of `[translator]` that MAP-T takes from `[mapt]` instead, refused with why.
fn not_in_mapt(cx: &Cx<'_>, t: &TranslatorSection) -> Result<(), ConfigError> {
    if let Some(p) = &t.pool6 {
        return Err(cx.err(
            p.span(),
            "pool6: in MAP-T the off-domain prefix is the Default Mapping Rule (RFC 7599 §5); \
             expected no `pool6` in [translator], and dmr = \"PREFIX\" in [mapt]",
        ));
    }
    if let Some(first) = t.eam.as_ref().and_then(|e| e.first()) {
        return Err(cx.err(
            first.span(),
            "eam: MAP-T maps addresses by its mapping rules (RFC 7597 §5); expected no `eam` \
             (a fixed mapping is an `fmr` entry in [mapt])",
        ));
    }
    if let Some(h) = &t.hairpin {
        return Err(cx.err(
            h.span(),
            "hairpin: RFC 7757 hairpinning is about EAM entries; a MAP-T BR always sends \
             traffic for the domain's IPv4 addresses back into the domain; expected no `hairpin`",
        ));
    }
    Ok(())
}

fn mode(cx: &Cx<'_>, m: &Spanned<String>) -> Result<Mode, ConfigError> {
    let name = m.get_ref().as_str();
    match name {
        "siit" => Ok(Mode::Siit),
        "nat64" => Ok(Mode::Nat64),
        "clat" => Ok(Mode::Clat),
        "mapt-br" => Ok(Mode::MaptBr),
        "mapt-ce" => Ok(Mode::MaptCe),
        _ if PLANNED_MODES.contains(&name) => Err(cx.err(
            m.span(),
            format!(
                "mode = {name:?}: mode {name} is not supported yet (planned); expected {}",
                quoted_list(SUPPORTED_MODES)
            ),
        )),
        _ => Err(cx.bad(
            "mode",
            m,
            "unknown mode",
            // The choices once; the planned ones only when there are any.
            if PLANNED_MODES.is_empty() {
                format!("one of {}", quoted_list(KNOWN_MODES))
            } else {
                format!(
                    "one of {} (supported: {})",
                    quoted_list(KNOWN_MODES),
                    quoted_list(SUPPORTED_MODES)
                )
            },
        )),
    }
}

/// Modes that work today.
const SUPPORTED_MODES: &[&str] = &["siit", "nat64", "clat", "mapt-br", "mapt-ce"];

fn pool6(cx: &Cx<'_>, p: &Spanned<String>) -> Result<Rfc6052Prefix, ConfigError> {
    rfc6052_prefix(cx, "pool6", p)
}

fn eam(cx: &Cx<'_>, cfg: &mut Config, i: usize, e: &Spanned<EamEntry>) -> Result<(), ConfigError> {
    let entry = e.get_ref();
    let k4 = format!("eam[{i}].ipv4");
    let k6 = format!("eam[{i}].ipv6");
    let (v4, v4_len) = clean_v4_prefix(cx, &k4, &entry.ipv4, V4_PREFIX)?;
    let (v6, v6_len) = clean_v6_prefix(cx, &k6, &entry.ipv6, V6_PREFIX)?;
    let suffix_mismatch = || {
        cx.err(
            e.span(),
            format!(
                "eam[{i}] = {{ ipv4 = {:?}, ipv6 = {:?} }}: the IPv4 prefix leaves {} host bits \
                 but the IPv6 prefix leaves {}; expected an IPv6 suffix at least as long as the \
                 IPv4 one (RFC 7757 §3), i.e. an IPv6 prefix of length /{} or shorter",
                entry.ipv4.get_ref(),
                entry.ipv6.get_ref(),
                32 - v4_len,
                128 - u32::from(v6_len),
                96 + v4_len,
            ),
        )
    };
    let new = Eam {
        v4: v4.octets(),
        v4_len,
        v6: v6.octets(),
        v6_len,
    };
    crate::lint::eam_inside_pool6(cx, e.span(), &k6, (v6, v6_len), cfg.map.pool6);
    crate::lint::wkp_with_lab_ipv4(cx, cfg, e.span(), &k4, (v4, v4_len));
    cfg.map.eam.insert(new).map_err(|err| match err {
        EamError::SuffixMismatch => suffix_mismatch(),
        EamError::Syntax(msg) => cx.err(e.span(), format!("eam[{i}]: {msg}")),
        EamError::HostBitsSet => cx.err(
            e.span(),
            format!("eam[{i}]: host bits set beyond a prefix length; expected clean prefixes"),
        ),
        EamError::Overlap(other) => {
            let which = cfg
                .map
                .eam
                .entries()
                .iter()
                .position(|x| *x == other)
                .map_or_else(|| "an earlier entry".to_owned(), |j| format!("eam[{j}]"));
            cx.err(
                e.span(),
                format!(
                    "eam[{i}] = {{ ipv4 = {:?}, ipv6 = {:?} }}: the same IPv4 or IPv6 prefix \
                     as {which} ({}/{} <-> {}/{}); expected each prefix in one entry at most \
                     (nested prefixes are fine: the longest match wins, RFC 7757 §3.2)",
                    entry.ipv4.get_ref(),
                    entry.ipv6.get_ref(),
                    Ipv4Addr::from(other.v4),
                    other.v4_len,
                    Ipv6Addr::from(other.v6),
                    other.v6_len,
                ),
            )
        }
    })
}

fn rfc6791_v4(cx: &Cx<'_>, list: &[Spanned<String>]) -> Result<Vec<Ipv4Addr>, ConfigError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, item) in list.iter().enumerate() {
        let key = format!("rfc6791_v4[{i}]");
        let (base, len) = clean_v4_prefix(cx, &key, item, "an IPv4 address or prefix ADDR/LEN")?;
        let count = 1u64 << (32 - u32::from(len));
        let total = out.len() as u64 + count;
        if total > RFC6791_V4_MAX {
            return Err(cx.bad(
                &key,
                item,
                format_args!("the pool would hold {total} addresses"),
                format_args!("at most {RFC6791_V4_MAX} addresses in rfc6791_v4 (a /16)"),
            ));
        }
        let start = u32::from(base);
        for n in 0..count as u32 {
            let a = Ipv4Addr::from(start + n);
            if seen.insert(a) {
                out.push(a);
            }
        }
    }
    Ok(out)
}

fn mtu_plateaus(cx: &Cx<'_>, list: &Spanned<Vec<Spanned<i64>>>) -> Result<Vec<u16>, ConfigError> {
    if list.get_ref().is_empty() {
        return Err(cx.err(
            list.span(),
            "mtu_plateaus = []: the list is empty; expected at least one MTU, \
             e.g. [65535, 32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68] (RFC 1191 §7)",
        ));
    }
    let mut out = list
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, v)| int_in(cx, &format!("mtu_plateaus[{i}]"), v, 68, 65535).map(|m| m as u16))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests;
