//! sixgate's configuration file: TOML in, a validated [`sixgate_core::Config`] out.
//!
//! ```toml
//! [translator]
//! mode = "siit"
//! pool6 = "2001:db8:64::/96"
//! eam = [ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]
//! ```
//!
//! The schema lives in [`schema`], the checks and defaults in `validate`. Every
//! error, syntax or semantic, is reported as `FILE:LINE:COLUMN: message`, where the
//! message names the key, the bad value and what was expected. `docs/config.md`
//! documents every key; a test keeps it in step with the schema.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::Range;
use std::path::Path;

use sixgate_core::Config;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::config::IPV4_DUMMY_ADDRESS;

pub use dns64::{Dns64File, Dns64Settings, load_dns64, parse_dns64};
pub use log::{LogFormat, LogSettings, LogTarget};
pub use metrics::MetricsSettings;
pub use pref64::Pref64Settings;

pub mod dns64;
pub mod log;
mod mapt;
pub mod metrics;
mod nat64;
pub mod pref64;
pub mod schema;
mod validate;

/// The translator mode a file selects. Planned modes are recognised so that a
/// file written for them gets a clear "not yet" error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Stateless IP/ICMP translation (RFC 7915) with RFC 6052 and RFC 7757 mapping.
    Siit,
    /// RFC 6877 CLAT: the SIIT core with the customer-side IPv4 range as an EAM
    /// entry and the PLAT prefix (static or RFC 7050) as pool6; see [`ClatSettings`].
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
    /// Values that load but go against an RFC (timeouts below RFC 6146's minimums,
    /// for instance). `sixgate config check` and the daemon print them.
    pub warnings: Vec<ConfigWarning>,
}

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

/// `[daemon]`: how `sixgate run` runs. Only the live data plane reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonSettings {
    /// Worker threads, one TUN queue each. `0`: one per online CPU.
    pub workers: u16,
    /// Switch to this user (and its primary group, no supplementary groups)
    /// once the device, its queues and the routes are set up.
    pub user: Option<String>,
    /// The Unix socket of the daemon's API (`sixgate show`, `reload`, …).
    pub socket: std::path::PathBuf,
    /// Which live data plane `sixgate run` uses.
    pub dataplane: Dataplane,
}

/// `[daemon] dataplane`: how packets reach the translator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dataplane {
    /// A TUN device the kernel routes into (`[tun]`, docs/tun.md).
    #[default]
    Tun,
    /// AF_XDP sockets on two Ethernet interfaces (`[xdp]`, docs/xdp.md).
    Xdp,
}

impl Dataplane {
    /// The name in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Dataplane::Tun => "tun",
            Dataplane::Xdp => "xdp",
        }
    }
}

/// `[xdp] attach_mode`: how the XDP program is attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XdpAttach {
    /// Native (driver) XDP, falling back to generic with a warning.
    #[default]
    Auto,
    /// Native only: an error if the driver has no XDP support.
    Native,
    /// Generic (SKB) XDP only.
    Generic,
}

/// `[xdp] zero_copy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZeroCopy {
    /// Zero-copy where the driver supports it, else copy mode.
    #[default]
    Auto,
    /// Zero-copy or an error.
    Require,
    /// Copy mode always.
    Off,
}

/// `[xdp]`: the AF_XDP data plane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpSettings {
    /// Interface facing the IPv6 side.
    pub ipv6_interface: String,
    /// Interface facing the IPv4 side.
    pub ipv4_interface: String,
    /// Native or generic XDP.
    pub attach_mode: XdpAttach,
    /// Zero-copy sockets.
    pub zero_copy: ZeroCopy,
    /// UMEM frames per worker (shared by its two sockets).
    pub frames: u32,
}

/// Default `[xdp] frames`.
pub const DEFAULT_XDP_FRAMES: u32 = 4096;

impl Default for XdpSettings {
    fn default() -> Self {
        XdpSettings {
            ipv6_interface: String::new(),
            ipv4_interface: String::new(),
            attach_mode: XdpAttach::Auto,
            zero_copy: ZeroCopy::Auto,
            frames: DEFAULT_XDP_FRAMES,
        }
    }
}

/// `[tun]`: the TUN device of the live data plane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunSettings {
    /// Interface name.
    pub name: String,
    /// Device MTU.
    pub mtu: u16,
    /// Open the queues with a virtio-net header and enable checksum and
    /// segmentation offloads (TSO4/6, USO4/6), falling back to plain packets if
    /// the kernel refuses.
    pub offload: bool,
    /// Install routes for pool6 and every EAM IPv4 prefix into the device, and
    /// remove them on exit.
    pub manage_routes: bool,
    /// Leave the device (made persistent) and the routes in place on exit.
    pub keep: bool,
}

/// Default `[tun] name`.
pub const DEFAULT_TUN_NAME: &str = "sixgate0";
/// Default `[tun] mtu`.
pub const DEFAULT_TUN_MTU: u16 = 1500;

impl Default for TunSettings {
    fn default() -> Self {
        TunSettings {
            name: DEFAULT_TUN_NAME.to_owned(),
            mtu: DEFAULT_TUN_MTU,
            offload: true,
            manage_routes: true,
            keep: false,
        }
    }
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
        self.config.map.pool6 = Some(prefix);
        if self
            .clat
            .as_ref()
            .is_none_or(|c| c.icmp_source_v6_from_prefix)
        {
            self.config.icmp_source_v6 = prefix.embed(IPV4_DUMMY_ADDRESS);
        }
    }
}

/// A value that loads but goes against a standard, with where it is in the file.
/// Printed as `FILE:LINE:COLUMN: warning: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigWarning {
    origin: String,
    position: Position,
    message: String,
}

impl ConfigWarning {
    /// A warning at byte range `span` of `text`.
    pub(crate) fn at(origin: &str, text: &str, span: Range<usize>, message: String) -> Self {
        ConfigWarning {
            origin: origin.to_owned(),
            position: Position::of_offset(text, span.start),
            message,
        }
    }

    /// Where in the file.
    pub fn position(&self) -> Position {
        self.position
    }

    /// The message without the `FILE:LINE:COLUMN: warning: ` prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.position;
        write!(
            f,
            "{}:{}:{}: warning: {}",
            self.origin, p.line, p.column, self.message
        )
    }
}

/// A line and column in the file, both counted from 1 (columns in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text`.
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        // Step back to a character boundary so the slice below is valid.
        let offset = (0..=offset)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// Why a configuration could not be loaded.
#[derive(Debug)]
pub struct ConfigError {
    origin: String,
    position: Option<Position>,
    message: String,
    source: Option<std::io::Error>,
}

impl ConfigError {
    /// An error at byte range `span` of `text`.
    pub(crate) fn at(
        origin: &str,
        text: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            origin: origin.to_owned(),
            position: Some(Position::of_offset(text, span.start)),
            message: message.into(),
            source: None,
        }
    }

    /// The file could not be read.
    pub(crate) fn unreadable(origin: &str, e: std::io::Error) -> Self {
        ConfigError {
            message: format!("cannot read config file: {e}"),
            origin: origin.to_owned(),
            position: None,
            source: Some(e),
        }
    }

    /// The file name (or other origin) the error is in.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Where in the file, if the error is about its content.
    pub fn position(&self) -> Option<Position> {
        self.position
    }

    /// The message without the `FILE:LINE:COLUMN: ` prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(
                f,
                "{}:{}:{}: {}",
                self.origin, p.line, p.column, self.message
            ),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Read and validate the file at `path`; errors name it as given.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::unreadable(&origin, e))?;
    parse(&text, &origin)
}

/// Parse and validate `text`; `origin` (usually the file name) prefixes every error.
pub fn parse(text: &str, origin: &str) -> Result<Loaded, ConfigError> {
    let file: schema::File = toml::from_str(text).map_err(|e| syntax_error(&e, text, origin))?;
    validate::build(file, text, origin)
}

/// A TOML syntax or type error, with the key it is about when toml knows it.
pub(crate) fn syntax_error(e: &toml::de::Error, text: &str, origin: &str) -> ConfigError {
    let span = e.span().unwrap_or(0..0);
    // serde speaks of Rust types; say it in TOML's words.
    let mut message = e
        .message()
        .trim_end()
        .replace("expected i64", "expected an integer")
        .replace("expected a sequence", "expected an array")
        .replace("expected struct TranslatorSection", "expected a table")
        .replace("expected struct DaemonSection", "expected a table")
        .replace("expected struct TunSection", "expected a table")
        .replace("expected struct XdpSection", "expected a table")
        .replace("expected struct ClatSection", "expected a table")
        .replace("expected struct Nat64Section", "expected a table")
        .replace("expected struct Dns64Section", "expected a table")
        .replace("expected struct MaptSection", "expected a table")
        .replace(
            "expected struct MapRuleEntry",
            "expected a table { ipv6_prefix, ipv4_prefix, ea_bits, psid_offset }",
        )
        .replace(
            "expected struct StaticBibEntry",
            "expected a table { proto, ipv6, port6, ipv4, port4 }",
        )
        .replace(
            "expected struct Pool4Table",
            "expected a table { prefix, tcp, udp, icmp }",
        )
        .replace(
            "expected struct EamEntry",
            "expected a table { ipv4, ipv6 }",
        );
    let key = key_path(e);
    if message == "duplicate key" {
        let name = text.get(span.clone()).unwrap_or("").trim();
        message = format!("duplicate key `{name}`; expected each key at most once per table");
    } else if message.starts_with("unknown field") {
        let what = if key.is_none() {
            "unknown section"
        } else {
            "unknown key"
        };
        message = message.replacen("unknown field", what, 1);
    } else if message.starts_with("missing field") {
        message = message.replacen("missing field", "missing key", 1);
    }
    let message = match key {
        Some(key) => format!("{key}: {message}"),
        None => message,
    };
    ConfigError::at(origin, text, span, message)
}

/// The dotted key path toml recorded for an error. toml only shows it in its
/// `Display` when it has no input to quote, so render it that way and pick it out.
fn key_path(e: &toml::de::Error) -> Option<String> {
    let mut e = e.clone();
    e.set_input(None);
    e.to_string()
        .lines()
        .find_map(|l| l.strip_prefix("in `")?.strip_suffix('`').map(str::to_owned))
        .filter(|k| !k.is_empty())
}

#[cfg(test)]
mod tests;

/// Where the daemon's API listens unless `[daemon] socket` says otherwise.
pub const DEFAULT_SOCKET: &str = "/run/sixgate/sixgate.sock";

impl Default for DaemonSettings {
    fn default() -> Self {
        DaemonSettings {
            workers: 0,
            user: None,
            socket: DEFAULT_SOCKET.into(),
            dataplane: Dataplane::Tun,
        }
    }
}
