//! The TOML schema: what a config file may contain, as serde structs.
//!
//! Values that need checking beyond their TOML type (prefixes, addresses, ranges,
//! enumerations) are kept as [`Spanned`] raw values so that the section checks can report
//! the file position of a bad one. Everything here is `deny_unknown_fields`: a
//! misspelt key is an error, never silently ignored.
//!
//! [`TRANSLATOR_KEYS`], [`EAM_KEYS`], [`NAT64_KEYS`], [`POOL4_KEYS`],
//! [`STATIC_BIB_KEYS`], [`CLAT_KEYS`], [`MAPT_KEYS`], [`MAP_RULE_KEYS`],
//! [`DAEMON_KEYS`], [`TUN_KEYS`], [`XDP_KEYS`], [`DNS64_KEYS`], [`PREF64_KEYS`],
//! [`METRICS_KEYS`], [`LOG_KEYS`], [`SYNC_KEYS`], [`SYNC_PEER_KEYS`] and
//! [`SYNC_SHARD_KEYS`] list the
//! accepted keys. Tests check that they match these structs and `docs/config.md`,
//! so the three cannot drift.

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// `[translator]`: the stateless translator (RFC 7915) and its address mapping.
    pub translator: Option<Spanned<TranslatorSection>>,
    /// `[nat64]`: stateful NAT64 (RFC 6146). Only with `mode = "nat64"`.
    pub nat64: Option<Spanned<Nat64Section>>,
    /// `[daemon]`: the gateway process (`sixgate run`). Optional.
    pub daemon: Option<Spanned<DaemonSection>>,
    /// `[tun]`: the TUN device of the live data plane (`sixgate run`). Optional.
    pub tun: Option<Spanned<TunSection>>,
    /// `[xdp]`: the AF_XDP data plane (`[daemon] dataplane = "xdp"`).
    pub xdp: Option<Spanned<XdpSection>>,
    /// `[clat]`: the customer side of 464XLAT (RFC 6877); only with `mode = "clat"`.
    pub clat: Option<Spanned<ClatSection>>,
    /// `[dns64]`: the DNS64 server (RFC 6147), see [`crate::dns64`]. Optional.
    pub dns64: Option<Spanned<Dns64Section>>,
    /// `[pref64]`: PREF64 Router Advertisements (RFC 8781), see [`crate::pref64`].
    pub pref64: Option<Spanned<Pref64Section>>,
    /// `[metrics]`: the Prometheus endpoint, see [`crate::metrics`].
    pub metrics: Option<Spanned<MetricsSection>>,
    /// `[sync]`: NAT64 state shared between nodes, see [`crate::sync`].
    pub sync: Option<Spanned<SyncSection>>,
    /// `[log]`: log format and sink, see [`crate::log`].
    pub log: Option<Spanned<LogSection>>,
    /// `[mapt]`: the MAP-T domain (RFC 7599); only with `mode = "mapt-br"` or
    /// `mode = "mapt-ce"`.
    pub mapt: Option<Spanned<MaptSection>>,
    /// `[log_export]`: NAT event export to collectors, see [`crate::log_export`].
    pub log_export: Option<Spanned<LogExportSection>>,
}

/// Top-level sections a file may have.
pub const SECTIONS: &[&str] = &[
    "translator",
    "nat64",
    "daemon",
    "tun",
    "xdp",
    "clat",
    "dns64",
    "pref64",
    "metrics",
    "log",
    "mapt",
    "sync",
    "log_export",
];

/// Keys of `[translator]`, in the order of [`TranslatorSection`]'s fields.
pub const TRANSLATOR_KEYS: &[&str] = &[
    "mode",
    "pool6",
    "eam",
    "wkp_strict",
    "hairpin",
    "rfc6791_v4",
    "rfc6791_v6",
    "icmp_source_v4",
    "icmp_source_v6",
    "reset_traffic_class",
    "reset_tos",
    "new_tos",
    "lowest_ipv6_mtu",
    "ipv4_mtu",
    "ipv6_mtu",
    "mtu_plateaus",
    "udp_zero_checksum",
    "class_e",
    "decrement_hop_limit",
    "icmp_errors_per_sec",
    "icmp_error_burst",
];

/// `[translator]`. Every key is optional at this level; the checks in `translator` decide which
/// combinations are complete and fills in the defaults.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranslatorSection {
    /// "siit" (others are planned).
    pub mode: Option<Spanned<String>>,
    /// RFC 6052 prefix, `ADDR/LEN`.
    pub pool6: Option<Spanned<String>>,
    /// RFC 7757 Explicit Address Mapping table.
    pub eam: Option<Vec<Spanned<EamEntry>>>,
    /// RFC 6052 §3.1 rule for the Well-Known Prefix.
    pub wkp_strict: Option<bool>,
    /// "off" | "simple" | "intrinsic" (RFC 7757 §4).
    pub hairpin: Option<Spanned<String>>,
    /// RFC 6791 pool: IPv4 addresses or prefixes.
    pub rfc6791_v4: Option<Vec<Spanned<String>>>,
    /// IPv6 source for translated ICMPv4 errors from unmappable sources.
    pub rfc6791_v6: Option<Spanned<String>>,
    /// Source of ICMPv4 errors the translator generates.
    pub icmp_source_v4: Option<Spanned<String>>,
    /// Source of ICMPv6 errors the translator generates.
    pub icmp_source_v6: Option<Spanned<String>>,
    /// RFC 7915 §4.1: zero the Traffic Class.
    pub reset_traffic_class: Option<bool>,
    /// RFC 7915 §5.1: overwrite the TOS with `new_tos`.
    pub reset_tos: Option<bool>,
    /// 0..=255.
    pub new_tos: Option<Spanned<i64>>,
    /// ≥ 1280.
    pub lowest_ipv6_mtu: Option<Spanned<i64>>,
    /// 68..=65535; unset: the OS enforces the IPv4 egress MTU.
    pub ipv4_mtu: Option<Spanned<i64>>,
    /// 1280..=65535; unset: the OS enforces the IPv6 egress MTU.
    pub ipv6_mtu: Option<Spanned<i64>>,
    /// Non-empty list, each 68..=65535.
    pub mtu_plateaus: Option<Spanned<Vec<Spanned<i64>>>>,
    /// "compute" | "drop" (RFC 7915 §4.5).
    pub udp_zero_checksum: Option<Spanned<String>>,
    /// "drop" | "translate": 240.0.0.0/4 (RFC 1812 §5.3.7).
    pub class_e: Option<Spanned<String>>,
    /// Decrement TTL / Hop Limit.
    pub decrement_hop_limit: Option<bool>,
    /// ICMP error token bucket rate.
    pub icmp_errors_per_sec: Option<Spanned<i64>>,
    /// ICMP error token bucket depth.
    pub icmp_error_burst: Option<Spanned<i64>>,
}

/// Keys of one `eam` entry, in the order of [`EamEntry`]'s fields.
pub const EAM_KEYS: &[&str] = &["ipv4", "ipv6"];

/// One RFC 7757 EAM entry: `{ ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EamEntry {
    /// IPv4 prefix (`ADDR/LEN`, or an address for /32).
    pub ipv4: Spanned<String>,
    /// IPv6 prefix (`ADDR/LEN`, or an address for /128).
    pub ipv6: Spanned<String>,
}

/// Keys of `[nat64]`, in the order of [`Nat64Section`]'s fields.
pub const NAT64_KEYS: &[&str] = &[
    "pool4",
    "filtering",
    "drop_external_tcp",
    "max_held_syns",
    "udp_timeout",
    "tcp_established_timeout",
    "tcp_transitory_timeout",
    "icmp_timeout",
    "port_reuse_delay",
    "max_sessions",
    "subscriber_prefix_len",
    "max_sessions_per_subscriber",
    "max_ports_per_subscriber",
    "port_block_size",
    "deterministic",
    "static_bib",
    "event_log",
    "log_destinations",
];

/// `[nat64]`: the stateful translator's pool4, tables, timers and limits
/// (RFC 6146, RFC 6888, RFC 7422). Timeouts are whole seconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nat64Section {
    /// The IPv4 transport addresses the translator owns (RFC 6146 §2).
    pub pool4: Option<Spanned<Vec<Spanned<Pool4Item>>>>,
    /// "endpoint-independent" | "address-dependent" (RFC 6146 §3.5.1 / RFC 4787).
    pub filtering: Option<Spanned<String>>,
    /// RFC 6146 §3.5.2.2: drop IPv4-initiated TCP instead of holding the SYN.
    pub drop_external_tcp: Option<bool>,
    /// Most IPv4 SYNs held for simultaneous open at once (§3.5.2.2).
    pub max_held_syns: Option<Spanned<i64>>,
    /// UDP session lifetime (§3.5.1), seconds.
    pub udp_timeout: Option<Spanned<i64>>,
    /// TCP established-state lifetime (§3.5.2.2), seconds.
    pub tcp_established_timeout: Option<Spanned<i64>>,
    /// TCP transitory-state lifetime (§3.5.2.2), seconds.
    pub tcp_transitory_timeout: Option<Spanned<i64>>,
    /// ICMP query session lifetime (§3.5.3), seconds.
    pub icmp_timeout: Option<Spanned<i64>>,
    /// RFC 6888 REQ-8: how long a freed pool4 port rests before reuse, seconds.
    pub port_reuse_delay: Option<Spanned<i64>>,
    /// Most sessions per worker, all protocols.
    pub max_sessions: Option<Spanned<i64>>,
    /// Length of the IPv6 prefix that identifies one subscriber (RFC 6888).
    pub subscriber_prefix_len: Option<Spanned<i64>>,
    /// RFC 6888 REQ-4: most sessions per subscriber.
    pub max_sessions_per_subscriber: Option<Spanned<i64>>,
    /// RFC 6888 REQ-4: most pool4 ports per subscriber.
    pub max_ports_per_subscriber: Option<Spanned<i64>>,
    /// RFC 7422 deterministic port blocks: ports per block, a power of two.
    pub port_block_size: Option<Spanned<i64>>,
    /// RFC 7422 deterministic NAT: the IPv6 prefix whose subscribers get
    /// fixed pool4 blocks by a formula.
    pub deterministic: Option<Spanned<String>>,
    /// Static BIB entries (RFC 6146 §3.5.1: manually configured).
    pub static_bib: Option<Vec<Spanned<StaticBibEntry>>>,
    /// "off" | "sessions" | "bib" (RFC 6888 REQ-12 logging).
    pub event_log: Option<Spanned<String>>,
    /// Put destination addresses in the event log (RFC 6888 §4 advises against).
    pub log_destinations: Option<bool>,
}

/// Keys of a `pool4` entry written as a table, in the order of [`Pool4Table`]'s fields.
pub const POOL4_KEYS: &[&str] = &["prefix", "tcp", "udp", "icmp"];

/// One `pool4` entry: `"ADDR[/LEN]"` with the default port ranges, or a table.
#[derive(Debug)]
pub enum Pool4Item {
    /// `"203.0.113.0/28"`.
    Prefix(String),
    /// `{ prefix = "203.0.113.1", tcp = "1024-65535", udp = "1024-65535", icmp = "0-65535" }`.
    Table(Pool4Table),
}

/// A `pool4` entry with its own port (and ICMP identifier) ranges.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool4Table {
    /// `ADDR[/LEN]`.
    pub prefix: Spanned<String>,
    /// `"FIRST-LAST"` or `"PORT"`.
    pub tcp: Option<Spanned<String>>,
    /// `"FIRST-LAST"` or `"PORT"`.
    pub udp: Option<Spanned<String>>,
    /// ICMP query identifiers, `"FIRST-LAST"` or `"ID"`.
    pub icmp: Option<Spanned<String>>,
}

// A string or a table. serde's `untagged` would buffer the value and lose the
// spans inside the table, so the two shapes are told apart by hand.
impl<'de> Deserialize<'de> for Pool4Item {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Pool4Item;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string \"ADDR[/LEN]\" or a table { prefix, tcp, udp, icmp }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Pool4Item, E> {
                Ok(Pool4Item::Prefix(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<Pool4Item, A::Error> {
                Pool4Table::deserialize(serde::de::value::MapAccessDeserializer::new(m))
                    .map(Pool4Item::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// Keys of one `static_bib` entry, in the order of [`StaticBibEntry`]'s fields.
pub const STATIC_BIB_KEYS: &[&str] = &["proto", "ipv6", "port6", "ipv4", "port4"];

/// A static BIB entry: `{ proto = "tcp", ipv6 = "2001:db8:1::80", port6 = 80,
/// ipv4 = "203.0.113.1", port4 = 80 }`. For ICMP the ports are query identifiers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticBibEntry {
    /// "tcp" | "udp" | "icmp".
    pub proto: Spanned<String>,
    /// The IPv6 host.
    pub ipv6: Spanned<String>,
    /// Its port (or ICMP identifier).
    pub port6: Spanned<i64>,
    /// The pool4 address it is reached at.
    pub ipv4: Spanned<String>,
    /// The pool4 port (or ICMP identifier).
    pub port4: Spanned<i64>,
}

/// Keys of `[daemon]`, in the order of [`DaemonSection`]'s fields.
pub const DAEMON_KEYS: &[&str] = &[
    "workers",
    "user",
    "socket",
    "dataplane",
    "fastpath",
    "fastpath_interfaces",
    "state_file",
    "fastpath_handover",
    "fastpath_pin_dir",
];

/// `[daemon]`: how `sixgate run` runs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonSection {
    /// Worker threads (one TUN queue each); 0 = one per online CPU; else 1..=256.
    pub workers: Option<Spanned<i64>>,
    /// User to switch to after set-up.
    pub user: Option<Spanned<String>>,
    /// Unix socket of the API, an absolute path.
    pub socket: Option<Spanned<String>>,
    /// "tun" (default) or "xdp".
    pub dataplane: Option<Spanned<String>>,
    /// "off", "tc", "xdp" or "auto" (default): the in-kernel fast path
    /// (docs/fastpath.md; "auto" is "tc" where it can run, else off).
    pub fastpath: Option<Spanned<String>>,
    /// Interfaces whose ingress the fast path is attached to.
    pub fastpath_interfaces: Option<Spanned<Vec<Spanned<String>>>>,
    /// Where NAT64 state is kept across a restart: an absolute path, or
    /// "" / "off" for none (docs/restart.md).
    pub state_file: Option<Spanned<String>>,
    /// Seconds the fast path goes on after a stop for the next start to
    /// take over (docs/restart.md); 0 (default): none.
    pub fastpath_handover: Option<Spanned<i64>>,
    /// A directory on a bpf file system for the handover's pins.
    pub fastpath_pin_dir: Option<Spanned<String>>,
}

/// Keys of `[xdp]`, in the order of [`XdpSection`]'s fields.
pub const XDP_KEYS: &[&str] = &[
    "ipv6_interface",
    "ipv4_interface",
    "attach_mode",
    "zero_copy",
    "frames",
];

/// `[xdp]`: the AF_XDP data plane's interfaces and sockets.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XdpSection {
    /// Interface facing the IPv6 side. Required with `dataplane = "xdp"`.
    pub ipv6_interface: Option<Spanned<String>>,
    /// Interface facing the IPv4 side. Required with `dataplane = "xdp"`.
    pub ipv4_interface: Option<Spanned<String>>,
    /// "auto" (default), "native" or "generic".
    pub attach_mode: Option<Spanned<String>>,
    /// "auto" (default: try zero-copy, else copy), "require" or "off".
    pub zero_copy: Option<Spanned<String>>,
    /// UMEM frames per worker, 512..=65536, a power of two.
    pub frames: Option<Spanned<i64>>,
}

/// Keys of `[tun]`, in the order of [`TunSection`]'s fields.
pub const TUN_KEYS: &[&str] = &["name", "mtu", "offload", "manage_routes", "keep"];

/// `[tun]`: the TUN device.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunSection {
    /// Interface name, 1..=15 bytes.
    pub name: Option<Spanned<String>>,
    /// Device MTU, 1280..=65535.
    pub mtu: Option<Spanned<i64>>,
    /// virtio-net header with checksum and segmentation offloads.
    pub offload: Option<bool>,
    /// Route pool6 and every EAM IPv4 prefix into the device.
    pub manage_routes: Option<bool>,
    /// Leave device and routes in place on exit.
    pub keep: Option<bool>,
}

/// Keys of `[clat]`, in the order of [`ClatSection`]'s fields.
pub const CLAT_KEYS: &[&str] = &["ipv4", "ipv6", "plat_prefix", "dns_server"];

/// `[clat]`: RFC 6877 CLAT, sugar over the SIIT core (one EAM entry plus the PLAT
/// prefix as pool6).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClatSection {
    /// The customer-side IPv4 hosts, `ADDR/LEN` or an address; default 192.0.0.0/29.
    pub ipv4: Option<Spanned<String>>,
    /// The CLAT's dedicated IPv6 prefix (RFC 6877 §6.3) they map to. Required.
    pub ipv6: Option<Spanned<String>>,
    /// "pool6" (the PLAT prefix is `[translator] pool6`) or "discover" (RFC 7050).
    pub plat_prefix: Option<Spanned<String>>,
    /// DNS server for the RFC 7050 query: an address or `ADDR:PORT` / `[ADDR]:PORT`.
    pub dns_server: Option<Spanned<String>>,
}

/// Keys of `[mapt]`, in the order of [`MaptSection`]'s fields.
pub const MAPT_KEYS: &[&str] = &[
    "dmr",
    "bmr",
    "fmr",
    "end_user_prefix",
    "lan",
    "napt_udp_timeout",
    "napt_tcp_established_timeout",
    "napt_tcp_transitory_timeout",
    "napt_icmp_timeout",
    "napt_max_sessions",
];

/// `[mapt]`: a MAP-T domain (RFC 7599) as a BR or a CE sees it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaptSection {
    /// Default Mapping Rule: an RFC 6052 prefix (RFC 7599 §5). Required.
    pub dmr: Option<Spanned<String>>,
    /// Basic Mapping Rules (RFC 7597 §5). A CE takes the one its End-user
    /// prefix lies under.
    pub bmr: Option<Vec<Spanned<MapRuleEntry>>>,
    /// Forwarding Mapping Rules (RFC 7597 §5).
    pub fmr: Option<Vec<Spanned<MapRuleEntry>>>,
    /// CE: the delegated End-user IPv6 prefix (RFC 7597 §5.2).
    pub end_user_prefix: Option<Spanned<String>>,
    /// CE: the LAN's private IPv4 prefix behind the NAPT44.
    pub lan: Option<Spanned<String>>,
    /// CE NAPT44: UDP mapping lifetime, seconds.
    pub napt_udp_timeout: Option<Spanned<i64>>,
    /// CE NAPT44: TCP established lifetime, seconds.
    pub napt_tcp_established_timeout: Option<Spanned<i64>>,
    /// CE NAPT44: TCP transitory lifetime, seconds.
    pub napt_tcp_transitory_timeout: Option<Spanned<i64>>,
    /// CE NAPT44: ICMP query lifetime, seconds.
    pub napt_icmp_timeout: Option<Spanned<i64>>,
    /// CE NAPT44: most sessions.
    pub napt_max_sessions: Option<Spanned<i64>>,
}

/// Keys of one `bmr` / `fmr` entry, in the order of [`MapRuleEntry`]'s fields.
pub const MAP_RULE_KEYS: &[&str] = &["ipv6_prefix", "ipv4_prefix", "ea_bits", "psid_offset"];

/// One Mapping Rule: `{ ipv6_prefix = "2001:db8:ce::/51", ipv4_prefix =
/// "192.0.2.0/24", ea_bits = 13, psid_offset = 0 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapRuleEntry {
    /// Rule IPv6 prefix.
    pub ipv6_prefix: Spanned<String>,
    /// Rule IPv4 prefix.
    pub ipv4_prefix: Spanned<String>,
    /// EA-bits length, 0..=48.
    pub ea_bits: Spanned<i64>,
    /// PSID offset a, 0..=15; default 6 (RFC 7597 §5.1).
    pub psid_offset: Option<Spanned<i64>>,
}

/// Keys of `[dns64]`, in the order of [`Dns64Section`]'s fields.
pub const DNS64_KEYS: &[&str] = &[
    "listen",
    "upstream",
    "prefixes",
    "exclude",
    "exclude_ipv4",
    "acl",
    "cache_size",
    "max_ttl",
    "upstream_timeout_ms",
    "upstream_attempts",
];

/// `[dns64]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dns64Section {
    /// Addresses to answer on, UDP and TCP: `"ADDR"` (port 53) or `"ADDR:PORT"`.
    pub listen: Option<Vec<Spanned<String>>>,
    /// Resolvers to forward to, same forms.
    pub upstream: Option<Vec<Spanned<String>>>,
    /// `"pool6"` or a list of RFC 6052 prefixes.
    pub prefixes: Option<Spanned<Prefixes>>,
    /// RFC 6147 §5.1.4 exclusion set: IPv6 prefixes.
    pub exclude: Option<Vec<Spanned<String>>>,
    /// IPv4 prefixes whose A records are never synthesized.
    pub exclude_ipv4: Option<Vec<Spanned<String>>>,
    /// Clients allowed to query: IPv4 or IPv6 prefixes.
    pub acl: Option<Vec<Spanned<String>>>,
    /// Most cached answers; 0 disables the cache.
    pub cache_size: Option<Spanned<i64>>,
    /// Longest time an answer is cached, seconds.
    pub max_ttl: Option<Spanned<i64>>,
    /// How long to wait for one upstream answer, milliseconds.
    pub upstream_timeout_ms: Option<Spanned<i64>>,
    /// Tries per question across the upstreams.
    pub upstream_attempts: Option<Spanned<i64>>,
}

/// `prefixes`: the word `"pool6"` or a list of prefixes.
#[derive(Debug)]
pub enum Prefixes {
    /// `"pool6"` (or any other string, refused by validation).
    Word(String),
    /// `["64:ff9b::/96", …]`.
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for Prefixes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Prefixes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"pool6\" or an array of RFC 6052 prefixes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Prefixes, E> {
                Ok(Prefixes::Word(v.to_owned()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<Prefixes, A::Error> {
                let mut out = Vec::new();
                while let Some(p) = s.next_element::<String>()? {
                    out.push(p);
                }
                Ok(Prefixes::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Keys of `[pref64]`, in the order of [`Pref64Section`]'s fields.
pub const PREF64_KEYS: &[&str] = &["interface", "interval", "lifetime", "router_lifetime"];

/// `[pref64]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pref64Section {
    /// The interface to advertise on.
    pub interface: Option<Spanned<String>>,
    /// Seconds between unsolicited advertisements.
    pub interval: Option<Spanned<i64>>,
    /// The PREF64 lifetime, seconds.
    pub lifetime: Option<Spanned<i64>>,
    /// The RA's Router Lifetime, seconds (0: not a default router).
    pub router_lifetime: Option<Spanned<i64>>,
}

/// Keys of `[metrics]`, in the order of [`MetricsSection`]'s fields.
pub const METRICS_KEYS: &[&str] = &["listen"];

/// `[metrics]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// TCP address serving `GET /metrics`: `"ADDR:PORT"` or `"[V6]:PORT"`.
    pub listen: Option<Spanned<String>>,
}

/// Keys of `[log_export]`, in the order of [`LogExportSection`]'s fields.
pub const LOG_EXPORT_KEYS: &[&str] = &[
    "collector",
    "file",
    "on_overflow",
    "interim",
    "observation_domain",
    "hostname",
];

/// Keys of one `[[log_export.collector]]`, in the order of [`CollectorEntry`]'s fields.
pub const LOG_EXPORT_COLLECTOR_KEYS: &[&str] = &[
    "protocol",
    "transport",
    "address",
    "mtu",
    "template_refresh",
];

/// `[log_export]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogExportSection {
    /// Where the events go: `[[log_export.collector]]` tables.
    pub collector: Option<Vec<Spanned<CollectorEntry>>>,
    /// JSON lines appended to this file.
    pub file: Option<Spanned<String>>,
    /// `"drop"` or `"refuse"`.
    pub on_overflow: Option<Spanned<String>>,
    /// Seconds between interim records of held port blocks; 0: none.
    pub interim: Option<Spanned<i64>>,
    /// IPFIX observation domain / NetFlow v9 source id.
    pub observation_domain: Option<Spanned<i64>>,
    /// Syslog HOSTNAME.
    pub hostname: Option<Spanned<String>>,
}

/// One collector as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorEntry {
    /// `"ipfix"`, `"netflow9"` or `"syslog"`.
    pub protocol: Spanned<String>,
    /// `"udp"` or `"tcp"`.
    pub transport: Option<Spanned<String>>,
    /// `"ADDR:PORT"`, or `"ADDR"` for the protocol's port.
    pub address: Spanned<String>,
    /// UDP: the largest datagram, IP and UDP headers included.
    pub mtu: Option<Spanned<i64>>,
    /// IPFIX / NetFlow v9 over UDP: seconds between template resends.
    pub template_refresh: Option<Spanned<i64>>,
}

/// Keys of `[log]`, in the order of [`LogSection`]'s fields.
pub const LOG_KEYS: &[&str] = &["format", "target", "file", "level"];

/// `[log]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    /// "text" | "json".
    pub format: Option<Spanned<String>>,
    /// "stderr" | "file" | "syslog".
    pub target: Option<Spanned<String>>,
    /// The log file (target "file"), or the syslog socket (target "syslog").
    pub file: Option<Spanned<String>>,
    /// `LEVEL` or `LEVEL,TARGET=LEVEL,…` (as `RUST_LOG`).
    pub level: Option<Spanned<String>>,
}

/// Keys of `[sync]`, documented qualified (`sync.KEY`): `key` and `address`
/// would read ambiguously bare.
pub const SYNC_KEYS: &[&str] = &[
    "node_id",
    "bind",
    "peers",
    "key",
    "key_file",
    "mtu",
    "shards",
    "announce_table",
    "join_timeout",
];
/// Keys of a `peers` entry.
pub const SYNC_PEER_KEYS: &[&str] = &["node_id", "address"];
/// Keys of a `shards` entry.
pub const SYNC_SHARD_KEYS: &[&str] = &["node_id", "pool4"];

/// `[sync]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncSection {
    /// This node's id, 1–65535.
    pub node_id: Option<Spanned<i64>>,
    /// Local `ADDR:PORT` on the sync link.
    pub bind: Option<Spanned<String>>,
    /// The other nodes.
    pub peers: Option<Spanned<Vec<Spanned<PeerEntry>>>>,
    /// Shared key, hex, inline.
    pub key: Option<Spanned<String>>,
    /// File holding the shared key, hex.
    pub key_file: Option<Spanned<String>>,
    /// MTU of the sync link.
    pub mtu: Option<Spanned<i64>>,
    /// Which node owns which pool4 addresses.
    pub shards: Option<Spanned<Vec<Spanned<ShardEntry>>>>,
    /// Kernel routing table the node's routes are announced in when ready.
    pub announce_table: Option<Spanned<i64>>,
    /// Seconds to wait for a peer's snapshot before announcing without.
    pub join_timeout: Option<Spanned<i64>>,
}

/// One `peers` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerEntry {
    /// Its node id.
    pub node_id: Spanned<i64>,
    /// Its `ADDR:PORT` on the sync link.
    pub address: Spanned<String>,
}

/// One `shards` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardEntry {
    /// The owning node.
    pub node_id: Spanned<i64>,
    /// Pool4 addresses or prefixes it owns.
    pub pool4: Spanned<Vec<Spanned<String>>>,
}
