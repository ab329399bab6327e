//! From the deserialised [`schema`](crate::schema) to a checked [`Config`]: defaults,
//! ranges, prefix rules, and an error with a file position for every refusal.
//!
//! Messages follow one shape: `KEY = VALUE: what is wrong; expected WHAT`.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt::Display;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::Range;

use sixgate_core::Config;
use sixgate_core::addr::{Eam, EamError, PrefixError, Rfc6052Prefix};
use sixgate_core::config::{HairpinMode, UdpZeroChecksum};
use toml::Spanned;

use crate::schema::{
    ClatSection, DaemonSection, EamEntry, File, TranslatorSection, TunSection, XdpSection,
};
use crate::{
    ClatSettings, ConfigError, ConfigWarning, DNS_PORT, DaemonSettings, Dataplane, KNOWN_MODES,
    Loaded, Mode, PLANNED_MODES, PlatPrefix, TunSettings, XdpAttach, XdpSettings, ZeroCopy,
};

/// Most worker threads (and TUN queues: the kernel's limit is 256).
pub(crate) const MAX_WORKERS: i64 = 256;

/// Most addresses `rfc6791_v4` may expand to.
pub(crate) const RFC6791_V4_MAX: u64 = 65_536;

/// The RFC 6052 Well-Known Prefix, pool6's default in mode nat64 (RFC 6146 §2).
const WELL_KNOWN_PREFIX: &str = "64:ff9b::/96";

/// Where errors point: the text (for positions) and its name; and the warnings so far.
pub(crate) struct Cx<'a> {
    text: &'a str,
    origin: &'a str,
    warnings: RefCell<Vec<ConfigWarning>>,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(text: &'a str, origin: &'a str) -> Self {
        Cx {
            text,
            origin,
            warnings: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn into_warnings(self) -> Vec<ConfigWarning> {
        self.warnings.into_inner()
    }

    pub(crate) fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.origin, self.text, span, msg)
    }

    /// Record a warning at `span`; loading goes on.
    pub(crate) fn warn(&self, span: Range<usize>, msg: String) {
        let w = ConfigWarning::at(self.origin, self.text, span, msg);
        self.warnings.borrow_mut().push(w);
    }

    /// `KEY = VALUE: problem; expected EXPECTED`, at the value.
    pub(crate) fn bad<T: std::fmt::Debug>(
        &self,
        key: &str,
        v: &Spanned<T>,
        problem: impl Display,
        expected: impl Display,
    ) -> ConfigError {
        self.err(
            v.span(),
            format!("{key} = {:?}: {problem}; expected {expected}", v.get_ref()),
        )
    }
}

/// Build the validated configuration.
pub(crate) fn build(file: File, text: &str, origin: &str) -> Result<Loaded, ConfigError> {
    let cx = Cx::new(text, origin);
    let Some(section) = file.translator else {
        return Err(cx.err(
            0..0,
            "no [translator] section; expected a [translator] table with at least \
             `mode` and `pool6` or `eam`",
        ));
    };
    let header = section.span();
    let t = section.into_inner();
    // [clat] gives different defaults to keys the file left out.
    let explicit = Explicit {
        hairpin: t.hairpin.is_some(),
        icmp_source_v6: t.icmp_source_v6.is_some(),
    };
    let (mut config, mode, mode_span) = translator(&cx, t, header)?;
    config.nat64 = match (mode, file.nat64) {
        (Mode::Nat64, Some(n)) => {
            let span = n.span();
            Some(crate::nat64::section(&cx, &config, n.into_inner(), span)?)
        }
        (Mode::Nat64, None) => {
            return Err(cx.err(
                mode_span,
                "mode = \"nat64\" but no [nat64] section; expected a [nat64] table, usually \
                 with `pool4`, the IPv4 addresses the translator owns (RFC 6146 §2); an empty \
                 [nat64] takes the default pool4 (the gateway's own IPv4 address, ports \
                 61001-65535)",
            ));
        }
        (_, Some(n)) => {
            return Err(cx.err(
                n.span(),
                format!(
                    "[nat64]: the section is for mode = \"nat64\" but this file has mode = \
                     {:?}; expected no [nat64] section, or mode = \"nat64\"",
                    mode.as_str()
                ),
            ));
        }
        (_, None) => None,
    };
    let clat = match (mode, file.clat) {
        (Mode::Clat, Some(c)) => Some(clat(&cx, &mut config, c, explicit)?),
        (Mode::Clat, None) => {
            return Err(cx.err(
                mode_span,
                "mode = \"clat\" needs a [clat] section; expected [clat] with at least \
                 ipv6 = the CLAT's IPv6 prefix (RFC 6877 §6.3), e.g. \"2001:db8:c1a7::/125\"",
            ));
        }
        (_, Some(c)) => {
            return Err(cx.err(
                c.span(),
                format!(
                    "[clat] is only read in mode \"clat\", but mode is {:?}; expected \
                     mode = \"clat\" in [translator], or no [clat] section",
                    mode.as_str()
                ),
            ));
        }
        (_, None) => None,
    };
    match (mode, file.mapt) {
        (Mode::MaptBr | Mode::MaptCe, Some(m)) => {
            let span = m.span();
            crate::mapt::section(
                &cx,
                &mut config,
                mode,
                m.into_inner(),
                span,
                explicit.icmp_source_v6,
            )?;
        }
        (Mode::MaptBr | Mode::MaptCe, None) => {
            return Err(cx.err(
                mode_span,
                format!(
                    "mode = {:?} but no [mapt] section; expected a [mapt] table with the \
                     domain's `dmr` and mapping rules (RFC 7599 §5)",
                    mode.as_str()
                ),
            ));
        }
        (_, Some(m)) => {
            return Err(cx.err(
                m.span(),
                format!(
                    "[mapt] is only read in modes \"mapt-br\" and \"mapt-ce\", but mode is \
                     {:?}; expected one of those modes, or no [mapt] section",
                    mode.as_str()
                ),
            ));
        }
        (_, None) => {}
    }
    let dataplane_span = file
        .daemon
        .as_ref()
        .and_then(|d| d.get_ref().dataplane.as_ref().map(|v| v.span()));
    let daemon = match file.daemon {
        Some(d) => daemon(&cx, d.into_inner())?,
        None => DaemonSettings::default(),
    };
    let tun = match file.tun {
        Some(t) => tun(&cx, t.into_inner())?,
        None => TunSettings::default(),
    };
    let xdp = match file.xdp {
        Some(x) => {
            let span = x.span();
            xdp(&cx, x.into_inner(), span)?
        }
        None => XdpSettings::default(),
    };
    if daemon.dataplane == Dataplane::Xdp && xdp.ipv6_interface.is_empty() {
        return Err(cx.err(
            dataplane_span.unwrap_or(0..0),
            "dataplane = \"xdp\" needs an [xdp] section; expected [xdp] with \
             ipv6_interface and ipv4_interface, e.g. \"eth0\" and \"eth1\"",
        ));
    }
    let dns64 = match file.dns64 {
        Some(d) => {
            let span = d.span();
            let pool6 = config.map.pool6;
            Some(crate::dns64::section(&cx, d.into_inner(), span, pool6)?)
        }
        None => None,
    };
    let pref64 = match file.pref64 {
        Some(p) => {
            let span = p.span();
            let pool6 = config.map.pool6;
            Some(crate::pref64::section(&cx, p.into_inner(), span, pool6)?)
        }
        None => None,
    };
    let metrics = match file.metrics {
        Some(m) => crate::metrics::section(&cx, m.into_inner())?,
        None => None,
    };
    let log = match file.log {
        Some(l) => crate::log::section(&cx, l.into_inner())?,
        None => crate::LogSettings::default(),
    };
    Ok(Loaded {
        config,
        mode,
        daemon,
        tun,
        xdp,
        clat,
        dns64,
        pref64,
        metrics,
        log,
        warnings: cx.warnings.into_inner(),
    })
}

/// Which `[translator]` keys the file set itself.
#[derive(Clone, Copy)]
struct Explicit {
    hairpin: bool,
    icmp_source_v6: bool,
}

/// RFC 7335: 192.0.0.0/29, the IPv4 Service Continuity Prefix, the default `[clat] ipv4`.
pub(crate) const CLAT_DEFAULT_V4: (Ipv4Addr, u8) = (Ipv4Addr::new(192, 0, 0, 0), 29);

/// `[clat]`: RFC 6877 as SIIT configuration. The customer-side IPv4 prefix becomes
/// one more EAM entry towards the CLAT's IPv6 prefix; destinations use the PLAT
/// prefix (pool6), static or discovered later (RFC 7050); hairpinning is off unless
/// the file asks for it (customer hosts reach each other on their own link).
fn clat(
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

fn daemon(cx: &Cx<'_>, d: DaemonSection) -> Result<DaemonSettings, ConfigError> {
    let mut out = DaemonSettings::default();
    if let Some(w) = &d.workers {
        out.workers = int_in(cx, "workers", w, 0, MAX_WORKERS)? as u16;
    }
    if let Some(u) = &d.user {
        let name = u.get_ref();
        // POSIX portable user names, plus what Debian's adduser accepts.
        let ok = !name.is_empty()
            && name.len() <= 32
            && !name.starts_with('-')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'));
        if !ok {
            return Err(cx.bad(
                "user",
                u,
                "not a user name",
                "a user name of 1 to 32 letters, digits, '_', '-', '.', e.g. \"nobody\"",
            ));
        }
        out.user = Some(name.clone());
    }
    if let Some(p) = &d.socket {
        let path = p.get_ref();
        // sun_path holds 108 bytes with the terminating NUL.
        if !path.starts_with('/') || path.len() > 107 || path.ends_with('/') {
            return Err(cx.bad(
                "socket",
                p,
                "not an absolute socket path of at most 107 bytes",
                "an absolute path such as \"/run/sixgate/sixgate.sock\"",
            ));
        }
        out.socket = path.into();
    }
    if let Some(v) = &d.dataplane {
        out.dataplane = match v.get_ref().as_str() {
            "tun" => Dataplane::Tun,
            "xdp" => Dataplane::Xdp,
            other => {
                return Err(cx.bad(
                    "dataplane",
                    v,
                    format!("unknown data plane {other:?}"),
                    "\"tun\" or \"xdp\"",
                ));
            }
        };
    }
    Ok(out)
}

/// The kernel's dev_valid_name(): 1..IFNAMSIZ-1 bytes, not "." or "..", no '/',
/// ':' or whitespace. `None` when it is valid.
fn interface_name_problem(name: &str) -> Option<String> {
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

fn xdp(cx: &Cx<'_>, x: XdpSection, span: Range<usize>) -> Result<XdpSettings, ConfigError> {
    let mut out = XdpSettings::default();
    let iface = |key: &str, v: &Option<toml::Spanned<String>>| -> Result<String, ConfigError> {
        match v {
            None => Err(cx.err(
                span.clone(),
                format!("[xdp] needs {key}; expected {key} = an interface name, e.g. \"eth0\""),
            )),
            Some(n) => match interface_name_problem(n.get_ref()) {
                Some(p) => Err(cx.bad(
                    key,
                    n,
                    p,
                    "an interface name of 1 to 15 ASCII characters without '/', ':' or spaces, \
                     e.g. \"eth0\"",
                )),
                None => Ok(n.get_ref().clone()),
            },
        }
    };
    out.ipv6_interface = iface("ipv6_interface", &x.ipv6_interface)?;
    out.ipv4_interface = iface("ipv4_interface", &x.ipv4_interface)?;
    if out.ipv6_interface == out.ipv4_interface
        && let Some(v) = &x.ipv4_interface
    {
        return Err(cx.bad(
            "ipv4_interface",
            v,
            "the same interface as ipv6_interface",
            "two different interfaces, one facing each side",
        ));
    }
    if let Some(v) = &x.attach_mode {
        out.attach_mode = match v.get_ref().as_str() {
            "auto" => XdpAttach::Auto,
            "native" => XdpAttach::Native,
            "generic" => XdpAttach::Generic,
            other => {
                return Err(cx.bad(
                    "attach_mode",
                    v,
                    format!("unknown attach mode {other:?}"),
                    "\"auto\", \"native\" or \"generic\"",
                ));
            }
        };
    }
    if let Some(v) = &x.zero_copy {
        out.zero_copy = match v.get_ref().as_str() {
            "auto" => ZeroCopy::Auto,
            "require" => ZeroCopy::Require,
            "off" => ZeroCopy::Off,
            other => {
                return Err(cx.bad(
                    "zero_copy",
                    v,
                    format!("unknown zero-copy setting {other:?}"),
                    "\"auto\", \"require\" or \"off\"",
                ));
            }
        };
    }
    if let Some(f) = &x.frames {
        let n = int_in(cx, "frames", f, 512, 65536)?;
        if !(n as u64).is_power_of_two() {
            return Err(cx.bad(
                "frames",
                f,
                format!("{n} is not a power of two"),
                "a power of two from 512 to 65536, e.g. 4096",
            ));
        }
        out.frames = n as u32;
    }
    Ok(out)
}

fn tun(cx: &Cx<'_>, t: TunSection) -> Result<TunSettings, ConfigError> {
    let mut out = TunSettings::default();
    if let Some(n) = &t.name {
        let name = n.get_ref();
        let problem = interface_name_problem(name);
        if let Some(problem) = problem {
            return Err(cx.bad(
                "name",
                n,
                problem,
                "an interface name of 1 to 15 ASCII characters without '/', ':' or spaces, \
                 e.g. \"sixgate0\"",
            ));
        }
        out.name = name.clone();
    }
    if let Some(m) = &t.mtu {
        out.mtu = int_in(cx, "mtu", m, 1280, 65535)? as u16;
    }
    if let Some(v) = t.offload {
        out.offload = v;
    }
    if let Some(v) = t.manage_routes {
        out.manage_routes = v;
    }
    if let Some(v) = t.keep {
        out.keep = v;
    }
    Ok(out)
}

fn translator(
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
    for (i, e) in eam_entries.iter().enumerate() {
        eam(cx, &mut cfg, i, e)?;
    }
    if let Some(v) = t.wkp_strict {
        cfg.map.wkp_strict = v;
    }
    if let Some(h) = &t.hairpin {
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
    }
    if let Some(list) = &t.rfc6791_v4 {
        cfg.rfc6791_v4 = rfc6791_v4(cx, list)?;
    }
    if let Some(a) = &t.rfc6791_v6 {
        cfg.rfc6791_v6 = Some(v6_addr(cx, "rfc6791_v6", a)?);
    }
    if let Some(a) = &t.icmp_source_v4 {
        cfg.icmp_source_v4 = v4_addr(cx, "icmp_source_v4", a)?;
    }
    match (&t.icmp_source_v6, pool6) {
        (Some(a), _) => cfg.icmp_source_v6 = v6_addr(cx, "icmp_source_v6", a)?,
        (None, Some(_)) => {} // with_pool6 embedded 192.0.0.8 in pool6.
        // A CLAT discovering its PLAT prefix: Loaded::set_plat_prefix fills it in.
        (None, None) if mode == Mode::Clat => {}
        // MAP-T: [mapt] sets it from the DMR.
        (None, None) if mapt => {}
        (None, None) => {
            return Err(cx.err(
                header,
                "[translator] has no `icmp_source_v6` and no `pool6` to derive it from; \
                 expected icmp_source_v6 = an IPv6 address of this translator",
            ));
        }
    }
    if let Some(v) = t.reset_traffic_class {
        cfg.reset_traffic_class = v;
    }
    if let Some(v) = t.reset_tos {
        cfg.reset_tos = v;
    }
    if let Some(v) = &t.new_tos {
        cfg.new_tos = int_in(cx, "new_tos", v, 0, 255)? as u8;
    }
    if let Some(v) = &t.lowest_ipv6_mtu {
        cfg.lowest_ipv6_mtu = int_in(cx, "lowest_ipv6_mtu", v, 1280, 65535)? as u16;
    }
    if let Some(v) = &t.ipv4_mtu {
        cfg.ipv4_mtu = Some(int_in(cx, "ipv4_mtu", v, 68, 65535)? as u16);
    }
    if let Some(v) = &t.ipv6_mtu {
        cfg.ipv6_mtu = Some(int_in(cx, "ipv6_mtu", v, 1280, 65535)? as u16);
    }
    if let Some(list) = &t.mtu_plateaus {
        cfg.mtu_plateaus = mtu_plateaus(cx, list)?;
    }
    if let Some(u) = &t.udp_zero_checksum {
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
    }
    if let Some(v) = t.decrement_hop_limit {
        cfg.decrement_hop_limit = v;
    }
    if let Some(v) = &t.icmp_errors_per_sec {
        cfg.icmp_errors_per_sec = int_in(cx, "icmp_errors_per_sec", v, 0, u32::MAX.into())? as u32;
    }
    if let Some(v) = &t.icmp_error_burst {
        cfg.icmp_error_burst = int_in(cx, "icmp_error_burst", v, 0, u32::MAX.into())? as u32;
        if cfg.icmp_error_burst == 0 && cfg.icmp_errors_per_sec > 0 {
            return Err(cx.bad(
                "icmp_error_burst",
                v,
                "an empty bucket can never send an error",
                "at least 1, or icmp_errors_per_sec = 0 to disable ICMP errors",
            ));
        }
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

pub(crate) fn quoted_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn pool6(cx: &Cx<'_>, p: &Spanned<String>) -> Result<Rfc6052Prefix, ConfigError> {
    rfc6052_prefix(cx, "pool6", p)
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
