//! The API's requests and answers, as JSON (docs/control.md lists every route).
//! Shared by the server and the client, so the two cannot disagree.

use serde::{Deserialize, Serialize};

/// The API's version prefix: every route starts with it.
pub const PREFIX: &str = "/v1";

/// `GET /v1/status`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Status {
    /// sixgate's version.
    pub version: String,
    /// `siit`, `nat64` or `clat`.
    pub mode: String,
    /// Seconds since the daemon started.
    pub uptime_s: u64,
    /// Worker threads (TUN queues).
    pub workers: usize,
    /// The TUN device.
    pub device: String,
    /// The configuration file `reload` reads.
    pub config_file: String,
    /// Reloads so far.
    pub reload: ReloadInfo,
    /// The in-kernel fast path: "translating", "off: WHY" (asked for, not
    /// running or passing everything up), or "not asked for".
    #[serde(default)]
    pub fastpath: String,
}

/// What became of the reloads (`crate::ReloadReading`, as JSON).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReloadInfo {
    /// Reloads that took effect.
    pub succeeded: u64,
    /// Reloads refused.
    pub failed: u64,
    /// Whether the last one took effect (true before the first).
    pub last_ok: bool,
    /// When the last one was tried, Unix seconds (0: never).
    pub last_unix_s: u64,
    /// Why the last one was refused.
    pub last_error: Option<String>,
}

/// One counter, summed and per worker (`GET /v1/stats`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct StatRow {
    /// Counter name (snake case).
    pub name: String,
    /// Sum over the workers.
    pub total: u64,
    /// Per worker, in worker order.
    pub workers: Vec<u64>,
}

/// `GET /v1/stats`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Stats {
    /// Every counter.
    pub counters: Vec<StatRow>,
    /// Why the fast path the file asks for (`[daemon] fastpath = "tc"` or
    /// `"auto"`) does not run (docs/fastpath.md); absent when it runs or was
    /// not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastpath_off: Option<String>,
}

/// One drop reason (`GET /v1/counters`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CounterRow {
    /// The `DropReason` name.
    pub reason: String,
    /// Packets dropped for it, all workers.
    pub count: u64,
}

/// `GET /v1/counters[?all=true]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Counters {
    /// Non-zero reasons, or all of them with `all=true`.
    pub drops: Vec<CounterRow>,
}

/// One RFC 6146 §3.1 BIB entry (`GET /v1/bib`, one JSON object per line).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BibRow {
    /// The worker that owns it.
    pub worker: usize,
    /// `tcp`, `udp` or `icmp`.
    pub proto: String,
    /// IPv6 address.
    pub ipv6: String,
    /// IPv6 port (ICMP: identifier).
    pub port6: u16,
    /// IPv4 (pool4) address.
    pub ipv4: String,
    /// IPv4 port (ICMP: identifier).
    pub port4: u16,
    /// Manually configured.
    #[serde(rename = "static")]
    pub is_static: bool,
}

/// One RFC 6146 §3.2 session (`GET /v1/sessions`, one JSON object per line).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SessionRow {
    /// The worker that owns it.
    pub worker: usize,
    /// `tcp`, `udp` or `icmp`.
    pub proto: String,
    /// IPv6 host.
    pub ipv6: String,
    /// Its port (ICMP: identifier).
    pub port6: u16,
    /// Its pool4 address.
    pub ipv4: String,
    /// Its pool4 port.
    pub port4: u16,
    /// The IPv4 remote.
    pub remote4: String,
    /// The remote as the IPv6 host sees it (pool6).
    pub remote6: String,
    /// The remote's port.
    pub rport: u16,
    /// TCP state (RFC 6146 §3.5.2), `-` for UDP and ICMP.
    pub state: String,
    /// Seconds until it expires unless refreshed.
    pub expires_s: u32,
}

/// One RFC 6888 subscriber (`GET /v1/subscribers`, one JSON object per
/// line): what it holds, and its RFC 7422 port blocks.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SubscriberRow {
    /// The worker that owns it.
    pub worker: usize,
    /// `PREFIX/LEN` (`subscriber_prefix_len`).
    pub subscriber: String,
    /// Its sessions.
    pub sessions: u32,
    /// Pool4 ports it holds (BIB entries, or blocks × block size).
    pub ports: u32,
    /// Its port blocks.
    pub blocks: Vec<BlockRow>,
}

/// One RFC 7422 port block of a [`SubscriberRow`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BlockRow {
    /// `tcp`, `udp` or `icmp`.
    pub proto: String,
    /// Pool4 address.
    pub ipv4: String,
    /// First port.
    pub first: u16,
    /// Last port.
    pub last: u16,
    /// BIB entries in it (those cooling down included).
    pub used: u16,
}

/// Filters of `GET /v1/bib`, `GET /v1/sessions` and `GET /v1/subscribers`
/// (query string).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TableFilter {
    /// Any of the row's addresses equals this one.
    pub address: Option<String>,
    /// Any of the row's ports equals this one.
    pub port: Option<u16>,
    /// `tcp`, `udp` or `icmp`.
    pub protocol: Option<String>,
}

/// One pool4 entry (`GET /v1/pool4`; `POST /v1/pool4/add|remove`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Pool4Row {
    /// `ADDR[/LEN]`.
    pub prefix: String,
    /// TCP ports, `FIRST-LAST` (add: default 61001-65535).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<String>,
    /// UDP ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<String>,
    /// ICMP identifiers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp: Option<String>,
}

/// `GET /v1/pool4`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Pool4 {
    /// Entries new mappings are taken from.
    pub pool4: Vec<Pool4Row>,
}

/// One RFC 7757 EAM entry (`GET /v1/eam`; `POST /v1/eam/add|remove`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EamRow {
    /// IPv4 prefix.
    pub ipv4: String,
    /// IPv6 prefix.
    pub ipv6: String,
}

/// `GET /v1/eam`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Eam {
    /// The table, in configuration order.
    pub eam: Vec<EamRow>,
}

/// A static BIB entry (`POST /v1/bib/add|remove`); remove needs only
/// `proto`, `ipv4` and `port4`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StaticBibRow {
    /// `tcp`, `udp` or `icmp`.
    pub proto: String,
    /// IPv6 server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<String>,
    /// Its port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port6: Option<u16>,
    /// Pool4 address.
    pub ipv4: String,
    /// Pool4 port.
    pub port4: u16,
}

/// `POST /v1/sessions/flush`: which sessions go (all of them by default).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FlushRequest {
    /// `tcp`, `udp` or `icmp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `ADDR[/LEN]`: the IPv6 hosts whose sessions go (a MAP-T CE: the LAN
    /// hosts, `::ffff:a.b.c.d`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<String>,
    /// `ADDR[/LEN]`: the pool4 addresses whose sessions go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<String>,
}

/// The answer to `POST /v1/sessions/flush`: what every worker removed.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FlushDone {
    /// Sessions removed.
    pub sessions: u64,
    /// Dynamic BIB entries removed (static ones stay).
    pub bib: u64,
}

/// `GET /v1/config`: the running configuration as TOML.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunningConfig {
    /// A configuration file that reproduces the running state.
    pub toml: String,
}

/// `POST /v1/config/save`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SaveRequest {
    /// Where the daemon writes the running configuration.
    pub path: String,
}

/// The answer to a change (`add`, `remove`, `reload`, `save`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Done {
    /// What was done, one line.
    pub done: String,
    /// Things to know (a route that could not be removed, …).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Every error: a 4xx or 5xx status and this body.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ApiError {
    /// What went wrong, naming the bad field or key.
    pub error: String,
}

/// One peer of NAT64 state sync (`GET /v1/sync`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SyncPeerRow {
    /// Its node id.
    pub node_id: u16,
    /// Its address on the sync link.
    pub address: String,
    /// Heard from within 3 s.
    pub up: bool,
    /// Its stream reached the end of a snapshot since either side started.
    pub synced: bool,
    /// Our next sequence number to it.
    pub next_seq: u32,
    /// Its next sequence number we expect (`None`: not synced yet).
    pub expected: Option<u32>,
    /// Lag: our messages it has not acknowledged yet.
    pub unacked: u64,
    /// A snapshot of our tables to it is running.
    pub snapshot_running: bool,
    /// It acknowledged our DRAIN (`sixgate sync drain`) and all before it.
    pub drain_acked: bool,
    /// It sent us DRAIN in its current epoch: we keep its entries.
    pub drained: bool,
    /// Records received from it and sent to it.
    pub records_in: u64,
    pub records_out: u64,
    /// Datagrams accepted from it and sent to it.
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    /// Messages sent again after a NACK.
    pub resent: u64,
    /// Snapshots of our tables started for it, asked of it, received from it.
    pub resyncs_started: u64,
    pub resyncs_requested: u64,
    pub snapshots_received: u64,
    /// Records its full queue refused (each makes a snapshot due).
    pub queue_full: u64,
    /// Its datagrams dropped, every reason together (docs/ha.md, "Drop
    /// counters").
    pub dropped: u64,
    /// The same by reason: every reason's name (`auth_failed`, `replayed`,
    /// …) and its count.
    #[serde(default)]
    pub drops: std::collections::BTreeMap<String, u64>,
}

/// `GET /v1/sync`: NAT64 state sync, as the sync thread last published it
/// (every 100 ms).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SyncState {
    /// This node's id.
    pub node_id: u16,
    /// Its state in the group: `joining`, `ready`, `draining`, `drained`
    /// (docs/ha.md, "Failover and scale-out").
    pub state: String,
    /// `[sync] announce_table`, if set.
    pub announce_table: Option<u32>,
    /// The routes announced there while ready (pool6, this node's shards).
    pub announce_routes: Vec<String>,
    /// Whether they are in the table now.
    pub announcing: bool,
    /// Every peer.
    pub peers: Vec<SyncPeerRow>,
    /// The workers' changes moved to the sync thread.
    pub exported: u64,
    /// Changes lost before the sync thread (a full ring): each makes a
    /// snapshot due.
    pub export_lost: u64,
    /// Peers' records applied, and refused by the tables.
    pub imported: u64,
    pub import_refused: u64,
    /// Entries removed after a peer's snapshot did not restate them.
    pub swept: u64,
    /// Datagrams from an address that is no peer.
    pub unknown_peer: u64,
    /// Records a worker's full import ring refused (a resync was asked).
    pub import_full: u64,
    /// Records the tables cannot take (BIB_DELETE today).
    pub not_imported: u64,
    /// Datagrams the socket did not take.
    pub send_errors: u64,
}
