//! From the deserialised [`schema`](crate::schema) to a checked [`Loaded`]: each
//! section's checks in turn, then the rules that span sections.

use sixgate_core::Config;
use sixgate_core::addr::Rfc6052Prefix;

use crate::cx::Cx;
use crate::schema::File;
use crate::translator::Explicit;
use crate::{
    ClatSettings, ConfigError, ConfigWarning, DaemonSettings, Dataplane, Dns64Settings,
    FastPathMode, LogSettings, MetricsSettings, Mode, PlatPrefix, Pref64Settings, SyncSettings,
    TunSettings, XdpSettings,
};

/// A loaded, validated configuration.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// What the translator core runs with. `ipv4_id_key` is the core's default:
    /// data planes that need unpredictable IDs seed it themselves.
    pub config: Config,
    /// The selected mode.
    pub mode: Mode,
    /// `[daemon]`, with defaults filled in.
    pub daemon: DaemonSettings,
    /// `[tun]`, with defaults filled in.
    pub tun: TunSettings,
    /// `[xdp]`, with defaults filled in (interfaces empty without the section).
    pub xdp: XdpSettings,
    /// `[clat]`, for `mode = "clat"`; `None` in every other mode.
    pub clat: Option<ClatSettings>,
    /// `[dns64]`, if the file has one.
    pub dns64: Option<Dns64Settings>,
    /// `[pref64]`, if the file has one: RFC 8781 Router Advertisements.
    pub pref64: Option<Pref64Settings>,
    /// `[metrics]` with a `listen` address; `None`: no metrics endpoint.
    pub metrics: Option<MetricsSettings>,
    /// `[log]`, with defaults filled in (text to standard error at info).
    pub log: LogSettings,
    /// `[sync]`, if the file has one (mode nat64 only; not yet used by the
    /// daemon, docs/ha.md).
    pub sync: Option<SyncSettings>,
    /// `[log_export]`, if the file has one: where the NAT64 event log goes
    /// (without it, to `[log]`).
    pub log_export: Option<crate::LogExportSettings>,
    /// Values that load but go against an RFC (timeouts below RFC 6146's minimums,
    /// for instance). `sixgate config check` and the daemon print them.
    pub warnings: Vec<ConfigWarning>,
}

impl Loaded {
    /// One line for humans: `mode siit, pool6 2001:db8:64::/96, 1 EAM entry`.
    pub fn describe(&self) -> String {
        let pool6 = match &self.config.map.pool6 {
            Some(p) => format!("{}/{}", p.addr(), p.len()),
            None => "none".to_owned(),
        };
        let plural = |n: usize, one: &'static str, many: &'static str| {
            format!("{n} {}", if n == 1 { one } else { many })
        };
        let mut out = match &self.config.nat64 {
            // MAP-T: the DMR is pool6, and there are no EAM entries to count.
            None if self.config.mapt.is_some() => format!("mode {}", self.mode),
            None => {
                let n = self.config.map.eam.entries().len();
                format!(
                    "mode {}, pool6 {pool6}, {}",
                    self.mode,
                    plural(n, "EAM entry", "EAM entries")
                )
            }
            Some(n) if n.pool4.is_empty() => format!(
                "mode {}, pool6 {pool6}, pool4 default (the gateway's own IPv4 address, \
                 ports 61001-65535)",
                self.mode
            ),
            Some(n) => {
                let addresses: u64 = n
                    .pool4
                    .iter()
                    .map(|e| 1u64 << (32 - u32::from(e.prefix_len)))
                    .sum();
                format!(
                    "mode {}, pool6 {pool6}, pool4 {} ({}), {}",
                    self.mode,
                    plural(n.pool4.len(), "entry", "entries"),
                    plural(addresses as usize, "address", "addresses"),
                    plural(n.static_bib.len(), "static BIB entry", "static BIB entries"),
                )
            }
        };
        if let Some(m) = &self.config.mapt {
            out.push_str(&format!(
                ", MAP-T DMR {}/{}, {}",
                m.dmr.addr(),
                m.dmr.len(),
                plural(m.fmrs.len(), "mapping rule", "mapping rules")
            ));
            if let Some(ce) = m.ce() {
                let first = ce.bmr.port_ranges(ce.psid).next().unwrap_or((0, 0));
                out.push_str(&format!(
                    ", CE {} PSID {} (ports {}-{}{}) at {}, LAN {}/{}",
                    ce.ipv4,
                    ce.psid,
                    first.0,
                    first.1,
                    if ce.bmr.psid_offset() > 0 {
                        ", ..."
                    } else {
                        ""
                    },
                    ce.map_address,
                    ce.lan.0,
                    ce.lan.1
                ));
            }
        }
        if let Some(c) = &self.clat {
            out.push_str(&format!(
                ", CLAT {}/{} <-> {}/{}, PLAT prefix ",
                c.ipv4.0, c.ipv4.1, c.ipv6.0, c.ipv6.1
            ));
            match &c.plat_prefix {
                PlatPrefix::Static(_) => out.push_str("static"),
                PlatPrefix::Discover { dns_server, .. } => {
                    out.push_str("discovered (RFC 7050) via ");
                    match dns_server {
                        Some(s) => out.push_str(&s.to_string()),
                        None => out.push_str("/etc/resolv.conf"),
                    }
                }
            }
        }
        if let Some(d) = &self.dns64 {
            out.push_str(&format!(
                ", DNS64 on {} to {}",
                plural(d.listen.len(), "address", "addresses"),
                plural(d.upstream.len(), "upstream", "upstreams")
            ));
        }
        if let Some(r) = &self.pref64 {
            out.push_str(&format!(
                ", PREF64 RAs on {} every {} s",
                r.interface, r.interval
            ));
        }
        if let Some(m) = &self.metrics {
            out.push_str(&format!(", metrics on {}", m.listen));
        }
        out
    }

    /// Use `prefix` as the PLAT prefix (pool6): what a CLAT does once RFC 7050
    /// discovery (or its fallback) has settled it. The ICMPv6 error source follows
    /// it unless the file set `icmp_source_v6`.
    pub fn set_plat_prefix(&mut self, prefix: Rfc6052Prefix) {
        let follows = self
            .clat
            .as_ref()
            .is_none_or(|c| c.icmp_source_v6_from_prefix);
        crate::clat::set_plat_prefix(&mut self.config, prefix, follows);
    }
}

/// Build the validated configuration; the first error (in the order the checks
/// run) when there is one.
pub(crate) fn build(file: File, text: &str, origin: &str) -> Result<Loaded, ConfigError> {
    let (loaded, errors) = build_all(file, text, origin);
    match (loaded, errors.into_iter().next()) {
        (_, Some(e)) => Err(e),
        (Some(l), None) => Ok(l),
        (None, None) => unreachable!("a file that does not load has an error"),
    }
}

/// Build the validated configuration, checking as much of the file as one error
/// leaves checkable: every section (those that need `[translator]` once it
/// loads), and in `[translator]`, `[nat64]`, `[daemon]`, `[tun]` and `[xdp]`
/// every key that does not depend on a bad one. `None` when there is any error;
/// the errors in the order the checks ran.
pub(crate) fn build_all(
    file: File,
    text: &str,
    origin: &str,
) -> (Option<Loaded>, Vec<ConfigError>) {
    let cx = Cx::new(text, origin);
    let translator = match file.translator {
        None => {
            cx.record(cx.err(
                0..0,
                "no [translator] section; expected a [translator] table with at least \
                 `mode` and `pool6` or `eam`",
            ));
            None
        }
        Some(section) => {
            let header = section.span();
            let t = section.into_inner();
            // [clat] gives different defaults to keys the file left out.
            let explicit = Explicit {
                hairpin: t.hairpin.is_some(),
                icmp_source_v6: t.icmp_source_v6.is_some(),
            };
            cx.keep(crate::translator::section(&cx, t, header))
                .map(|(config, mode, mode_span)| (config, mode, mode_span, explicit))
        }
    };
    // The sections of a mode need its [translator]; without one they are not
    // checked (their errors would follow from the first).
    let mut mode_sections = None;
    if let Some((mut config, mode, mode_span, explicit)) = translator {
        config.nat64 = mode_section_nat64(&cx, &config, mode, &mode_span, file.nat64);
        let clat = match (mode, file.clat) {
            (Mode::Clat, Some(c)) => cx.keep(crate::clat::section(&cx, &mut config, c, explicit)),
            (Mode::Clat, None) => {
                cx.record(cx.err(
                    mode_span.clone(),
                    "mode = \"clat\" needs a [clat] section; expected [clat] with at least \
                     ipv6 = the CLAT's IPv6 prefix (RFC 6877 §6.3), e.g. \"2001:db8:c1a7::/125\"",
                ));
                None
            }
            (_, Some(c)) => {
                cx.record(cx.err(
                    c.span(),
                    format!(
                        "[clat] is only read in mode \"clat\", but mode is {:?}; expected \
                         mode = \"clat\" in [translator], or no [clat] section",
                        mode.as_str()
                    ),
                ));
                None
            }
            (_, None) => None,
        };
        match (mode, file.mapt) {
            (Mode::MaptBr | Mode::MaptCe, Some(m)) => {
                let span = m.span();
                cx.keep(crate::mapt::section(
                    &cx,
                    &mut config,
                    mode,
                    m.into_inner(),
                    span,
                    explicit.icmp_source_v6,
                ));
            }
            (Mode::MaptBr | Mode::MaptCe, None) => cx.record(cx.err(
                mode_span,
                format!(
                    "mode = {:?} but no [mapt] section; expected a [mapt] table with the \
                     domain's `dmr` and mapping rules (RFC 7599 §5)",
                    mode.as_str()
                ),
            )),
            (_, Some(m)) => cx.record(cx.err(
                m.span(),
                format!(
                    "[mapt] is only read in modes \"mapt-br\" and \"mapt-ce\", but mode is \
                     {:?}; expected one of those modes, or no [mapt] section",
                    mode.as_str()
                ),
            )),
            (_, None) => {}
        }
        mode_sections = Some((config, mode, clat));
    }
    let dataplane_span = file
        .daemon
        .as_ref()
        .and_then(|d| d.get_ref().dataplane.as_ref().map(|v| v.span()));
    let fastpath_span = file
        .daemon
        .as_ref()
        .and_then(|d| d.get_ref().fastpath.as_ref().map(|v| v.span()));
    let daemon = file
        .daemon
        .and_then(|d| cx.keep(crate::daemon::section(&cx, d.into_inner())))
        .unwrap_or_default();
    let tun = file
        .tun
        .and_then(|t| cx.keep(crate::tun::section(&cx, t.into_inner())))
        .unwrap_or_default();
    let xdp = match file.xdp {
        Some(x) => {
            let span = x.span();
            cx.keep(crate::xdp::section(&cx, x.into_inner(), span))
        }
        None => Some(XdpSettings::default()),
    };
    if daemon.dataplane == Dataplane::Xdp
        && xdp.as_ref().is_some_and(|x| x.ipv6_interface.is_empty())
    {
        cx.record(cx.err(
            dataplane_span.unwrap_or(0..0),
            "dataplane = \"xdp\" needs an [xdp] section; expected [xdp] with \
             ipv6_interface and ipv4_interface, e.g. \"eth0\" and \"eth1\"",
        ));
    }
    // "tc" and "xdp" are the same program behind two hooks, in front of the
    // TUN plane alike.
    if matches!(daemon.fastpath, FastPathMode::Tc | FastPathMode::Xdp) {
        let name = daemon.fastpath.as_str();
        let span = fastpath_span.clone().unwrap_or(0..0);
        if daemon.dataplane != Dataplane::Tun {
            cx.record(cx.err(
                span.clone(),
                format!(
                    "fastpath = \"{name}\" sits in front of the TUN data plane, but dataplane \
                     is \"xdp\"; expected dataplane = \"tun\", or fastpath = \"off\""
                ),
            ));
        } else if daemon.fastpath_interfaces.is_empty() {
            cx.record(cx.err(
                span.clone(),
                format!(
                    "fastpath = \"{name}\" needs the interfaces to watch; expected \
                     fastpath_interfaces = the IPv6-side and IPv4-side interfaces, e.g. \
                     [\"eth0\", \"eth1\"]"
                ),
            ));
        }
        // The core states the scope for every mode: a CLAT's configuration is
        // SIIT's (RFC 6877: pool6 the PLAT prefix, an EAM entry), a MAP-T
        // BR's has its rules, NAT64's its installed sessions (a /96 pool6);
        // a MAP-T CE is refused there.
        let why = match &mode_sections {
            Some((config, ..)) => sixgate_core::fastpath::unsupported(config),
            None => None,
        };
        if let Some(why) = why {
            cx.record(cx.err(
                span,
                format!(
                    "fastpath = \"{name}\" cannot serve this configuration: {why}; expected \
                     fastpath = \"off\" (docs/fastpath.md says what the fast path covers)"
                ),
            ));
        }
    }
    // [dns64] and [pref64] may take pool6 from a [translator] that loaded.
    let pool6 = mode_sections.as_ref().map(|(c, ..)| c.map.pool6);
    let dns64_prefixes_span = file
        .dns64
        .as_ref()
        .and_then(|d| d.get_ref().prefixes.as_ref().map(|p| p.span()));
    let dns64 = match (file.dns64, pool6) {
        (Some(d), Some(pool6)) => {
            let span = d.span();
            cx.keep(crate::dns64::section(&cx, d.into_inner(), span, pool6))
        }
        _ => None,
    };
    let pref64 = match (file.pref64, pool6) {
        (Some(p), Some(pool6)) => {
            let span = p.span();
            cx.keep(crate::pref64::section(&cx, p.into_inner(), span, pool6))
        }
        _ => None,
    };
    let metrics = file
        .metrics
        .and_then(|m| cx.keep(crate::metrics::section(&cx, m.into_inner())))
        .flatten();
    let log = file
        .log
        .and_then(|l| cx.keep(crate::log::section(&cx, l.into_inner())))
        .unwrap_or_default();
    // A [translator] that failed has its own error: [sync] says nothing more.
    let sync = file
        .sync
        .zip(mode_sections.as_ref())
        .and_then(|(s, (c, ..))| {
            let span = s.span();
            let pool4 = c.nat64.as_ref().map(|n| n.pool4.as_slice());
            let user = daemon.user.as_deref();
            cx.keep(crate::sync::section(&cx, s.into_inner(), span, pool4, user))
        });
    // A [translator] that failed has its own error here too.
    let log_export = file
        .log_export
        .zip(mode_sections.as_ref())
        .and_then(|(s, (c, ..))| {
            let span = s.span();
            let on = c
                .nat64
                .as_ref()
                .map(|n| n.event_log != sixgate_core::nat64::EventLog::Off);
            cx.keep(crate::log_export::section(&cx, s.into_inner(), span, on))
        });
    if let (Some((config, ..)), Some(d), Some(span)) = (&mode_sections, &dns64, dns64_prefixes_span)
    {
        crate::lint::dns64_prefixes_differ_from_pool6(&cx, config, d, span);
    }
    let Some((mut config, mode, clat)) = mode_sections.filter(|_| !cx.failed()) else {
        return (None, cx.into_parts().0);
    };
    if let (Some(n), Some(le)) = (config.nat64.as_mut(), &log_export) {
        n.refuse_unlogged = le.on_overflow == crate::log_export::Overflow::Refuse;
    }
    let (_, warnings) = cx.into_parts();
    let loaded = Loaded {
        config,
        mode,
        daemon,
        tun,
        xdp: xdp.unwrap_or_default(),
        clat,
        dns64,
        pref64,
        metrics,
        log,
        sync,
        log_export,
        warnings,
    };
    (Some(loaded), Vec::new())
}

/// `[nat64]` against the mode: checked in mode nat64, required there, refused
/// elsewhere.
fn mode_section_nat64(
    cx: &Cx<'_>,
    config: &sixgate_core::Config,
    mode: Mode,
    mode_span: &std::ops::Range<usize>,
    nat64: Option<toml::Spanned<crate::schema::Nat64Section>>,
) -> Option<sixgate_core::nat64::Nat64Config> {
    match (mode, nat64) {
        (Mode::Nat64, Some(n)) => {
            let span = n.span();
            cx.keep(crate::nat64::section(cx, config, n.into_inner(), span))
        }
        (Mode::Nat64, None) => {
            cx.record(cx.err(
                mode_span.clone(),
                "mode = \"nat64\" but no [nat64] section; expected a [nat64] table, usually \
                 with `pool4`, the IPv4 addresses the translator owns (RFC 6146 §2); an empty \
                 [nat64] takes the default pool4 (the gateway's own IPv4 address, ports \
                 61001-65535)",
            ));
            None
        }
        (_, Some(n)) => {
            cx.record(cx.err(
                n.span(),
                format!(
                    "[nat64]: the section is for mode = \"nat64\" but this file has mode = \
                     {:?}; expected no [nat64] section, or mode = \"nat64\"",
                    mode.as_str()
                ),
            ));
            None
        }
        (_, None) => None,
    }
}

/// What `sixgate dns64` runs with: the `[dns64]` settings and any warnings.
#[derive(Clone, Debug)]
pub struct Dns64File {
    /// The checked section.
    pub dns64: Dns64Settings,
    /// Warnings of the whole file (its translator sections, when present).
    pub warnings: Vec<ConfigWarning>,
}

/// A file for `sixgate dns64`: it must have `[dns64]`; a `[translator]` is
/// optional, and when present the whole file is checked as for `sixgate run` (so
/// `prefixes = "pool6"` means the same prefix the translator uses).
pub(crate) fn build_dns64(file: File, text: &str, origin: &str) -> Result<Dns64File, ConfigError> {
    if file.translator.is_some() {
        let loaded = build(file, text, origin)?;
        return match loaded.dns64 {
            Some(dns64) => Ok(Dns64File {
                dns64,
                warnings: loaded.warnings,
            }),
            None => Err(ConfigError::at(
                origin,
                text,
                0..0,
                "no [dns64] section; expected a [dns64] table with at least `upstream`",
            )),
        };
    }
    let cx = Cx::new(text, origin);
    let Some(d) = file.dns64 else {
        return Err(cx.err(
            0..0,
            "no [dns64] section; expected a [dns64] table with at least `upstream`",
        ));
    };
    let span = d.span();
    let dns64 = crate::dns64::section(&cx, d.into_inner(), span, None)?;
    Ok(Dns64File {
        dns64,
        warnings: cx.into_warnings(),
    })
}
