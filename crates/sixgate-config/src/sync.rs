//! `[sync]`: NAT64 state shared with other gateway nodes (docs/ha.md). Only in
//! mode nat64. Checked here; `sixgate run` starts the sync thread from it
//! (`sixgate_dataplane::sync_thread`; what is wired: docs/ha.md, "Status").

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use sixgate_core::nat64::Pool4Entry;
use sixgate_sync::hash::ConfigHash;
use toml::Spanned;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::SyncSection;
use crate::value::{int_in, mask_v4, parse_v4_prefix};

/// Default link MTU of the sync link.
pub const DEFAULT_SYNC_MTU: u16 = 1500;
/// Shortest shared key, bytes.
pub const MIN_KEY_BYTES: usize = 16;
/// Default `join_timeout`, seconds.
pub const DEFAULT_JOIN_TIMEOUT_S: u32 = 3;
/// Longest `join_timeout`, seconds.
pub const MAX_JOIN_TIMEOUT_S: i64 = 3600;

/// A peer, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncPeer {
    /// Node id.
    pub node_id: u16,
    /// Address and port on the sync link.
    pub address: SocketAddr,
}

/// Where the shared key comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum SyncKey {
    /// `key`: the bytes (decoded from hex).
    Inline(Vec<u8>),
    /// `key_file`: read at start ([`SyncKey::load`]).
    File(PathBuf),
}

impl std::fmt::Debug for SyncKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncKey::Inline(_) => f.write_str("Inline(..)"), // never print key material
            SyncKey::File(p) => write!(f, "File({})", p.display()),
        }
    }
}

impl SyncKey {
    /// The key bytes; a `key_file` is read now. Errors name the key and file.
    pub fn load(&self) -> Result<Vec<u8>, String> {
        match self {
            SyncKey::Inline(b) => Ok(b.clone()),
            SyncKey::File(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| {
                    format!("[sync] key_file = {:?}: cannot read it: {e}", p.display())
                })?;
                hex_key(text.trim())
                    .map_err(|why| format!("[sync] key_file = {:?}: {why}", p.display()))
            }
        }
    }
}

/// A pool4 shard, checked: inside pool4, disjoint from the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// The owning node.
    pub node_id: u16,
    /// Its prefixes, `(network, length)`.
    pub pool4: Vec<(Ipv4Addr, u8)>,
}

/// `[sync]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncSettings {
    /// This node.
    pub node_id: u16,
    /// Local address and port on the sync link.
    pub bind: SocketAddr,
    /// The other nodes (at least one).
    pub peers: Vec<SyncPeer>,
    /// Shared key; `None`: datagrams are not authenticated (dedicated link only).
    pub key: Option<SyncKey>,
    /// MTU of the sync link (datagrams are sized to it).
    pub mtu: u16,
    /// Every pool4 address, each owned by exactly one node.
    pub shards: Vec<Shard>,
    /// Kernel routing table for the routing daemon (docs/ha.md, "Failover
    /// and scale-out"): routes for pool6 and this node's shards while it is
    /// ready; `None`: nothing announced.
    pub announce_table: Option<u32>,
    /// How long a starting node waits for its peers' snapshots before it is
    /// ready without them (none answered), seconds.
    pub join_timeout: u32,
}

impl SyncSettings {
    /// This node's place among the group's node ids, sorted, and the group's
    /// size: its share of each RFC 7422 deterministic block (docs/ha.md).
    pub fn rank(&self) -> (u16, u16) {
        let rank = self
            .peers
            .iter()
            .filter(|p| p.node_id < self.node_id)
            .count();
        (rank as u16, (self.peers.len() + 1) as u16)
    }

    /// This node's own shards' prefixes.
    pub fn own_shards(&self) -> Vec<(Ipv4Addr, u8)> {
        self.shards
            .iter()
            .filter(|s| s.node_id == self.node_id)
            .flat_map(|s| s.pool4.iter().copied())
            .collect()
    }
}

impl SyncSettings {
    /// Largest datagram on the link: the MTU less the IP and UDP headers.
    pub fn max_datagram(&self) -> usize {
        let ip = if self.bind.is_ipv4() { 20 } else { 40 };
        usize::from(self.mtu) - ip - 8
    }
}

/// The NAT64 parts of `config` that decide which worker and node a mapping
/// belongs to and how long it lives, added to `h`: pool6, the whole pool4
/// (addresses and port ranges), the session timeouts, `port_block_size`,
/// `subscriber_prefix_len` and RFC 7422's formula. Shared by the sync
/// protocol's hash (docs/ha.md, "Config hash") and the state file's
/// ([`state_config_hash`]).
pub fn hash_nat64(mut h: ConfigHash, config: &sixgate_core::Config) -> ConfigHash {
    if let Some(p) = &config.map.pool6 {
        h = h.field(&p.addr().octets()).field(&[p.len()]);
    }
    if let Some(n) = &config.nat64 {
        for e in &n.pool4 {
            let mut b = Vec::with_capacity(17);
            b.extend_from_slice(&e.addr.octets());
            b.push(e.prefix_len);
            for r in [e.tcp, e.udp, e.icmp] {
                b.extend_from_slice(&r.first.to_be_bytes());
                b.extend_from_slice(&r.last.to_be_bytes());
            }
            h = h.field(&b);
        }
        let t = &n.timeouts;
        for v in [
            t.udp,
            t.tcp_established,
            t.tcp_transitory,
            t.icmp,
            t.syn_hold,
            t.port_reuse,
        ] {
            h = h.field(&v.to_be_bytes());
        }
        h = h
            .field(&n.port_block_size.to_be_bytes())
            .field(&[n.subscriber_prefix_len]);
        // RFC 7422: every node must compute the same formula (absent: the
        // hash of a group without it is what it was).
        if let Some((a, l)) = n.deterministic {
            h = h.field(b"deterministic").field(&a.octets()).field(&[l]);
        }
    }
    h
}

/// The config hash a NAT64 state file carries (docs/restart.md): the file is
/// read back only by a daemon that computes the same. `workers` is the
/// number of data-plane workers (each record goes to the worker that owns
/// its pool4 port); with `[sync]` its hash is part of it.
pub fn state_config_hash(
    config: &sixgate_core::Config,
    workers: u16,
    sync: Option<&SyncSettings>,
) -> u64 {
    let h = ConfigHash::default()
        .field(b"sixgate-state")
        .field(&[sixgate_sync::state_file::VERSION])
        .field(&workers.to_be_bytes());
    let mut h = hash_nat64(h, config);
    if let Some(s) = sync {
        h = h.field(&s.config_hash(config, workers).to_be_bytes());
    }
    h.finish()
}

impl SyncSettings {
    /// The hash every datagram carries (docs/ha.md, "Config hash"): what all
    /// nodes of a group must agree on, so that a peer with another plan is
    /// refused with a clear log line instead of corrupting tables. `workers`
    /// is the number of data-plane workers: a peer's mapping must land on the
    /// same worker here. Node-local values (`node_id`, `bind`, the key itself)
    /// are left out.
    pub fn config_hash(&self, config: &sixgate_core::Config, workers: u16) -> u64 {
        let h = ConfigHash::default()
            .field(b"sixgate-sync")
            .field(&[sixgate_sync::wire::VERSION])
            .field(&workers.to_be_bytes());
        let mut h = hash_nat64(h, config);
        let mut ids: Vec<u16> = self
            .peers
            .iter()
            .map(|p| p.node_id)
            .chain([self.node_id])
            .collect();
        ids.sort_unstable();
        for id in ids {
            h = h.field(&id.to_be_bytes());
        }
        let mut shards = self.shards.clone();
        shards.sort_by_key(|s| s.node_id);
        for s in &shards {
            let mut prefixes = s.pool4.clone();
            prefixes.sort_unstable();
            h = h.field(&s.node_id.to_be_bytes());
            for (a, l) in prefixes {
                h = h.field(&a.octets()).field(&[l]);
            }
        }
        h.field(&[u8::from(self.key.is_some())]).finish()
    }
}

fn hex_key(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("not an even number of hex digits".into());
    }
    let bytes: Vec<u8> = (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok())
        .collect();
    if bytes.len() < MIN_KEY_BYTES {
        return Err(format!(
            "{} bytes; expected at least {MIN_KEY_BYTES} ({} hex digits), e.g. from `openssl rand -hex 32`",
            bytes.len(),
            2 * MIN_KEY_BYTES
        ));
    }
    Ok(bytes)
}

fn node_id(cx: &Cx<'_>, key: &str, v: &Spanned<i64>) -> Result<u16, ConfigError> {
    Ok(int_in(cx, key, v, 1, 65535)? as u16)
}

fn socket(cx: &Cx<'_>, key: &str, v: &Spanned<String>) -> Result<SocketAddr, ConfigError> {
    match v.get_ref().parse::<SocketAddr>() {
        Ok(a) if a.port() != 0 && !a.ip().is_unspecified() => Ok(a),
        _ => Err(cx.bad(
            key,
            v,
            "not a unicast ADDR:PORT",
            "e.g. \"[fd00:5::1]:7464\" or \"10.5.0.1:7464\" (the address on the dedicated sync link, port not 0)",
        )),
    }
}

/// `announce_table`: a table of its own, not one the kernel routes by
/// (`ip route` names 253 default, 254 main, 255 local; 0 is unspecified),
/// and not with `[daemon] user` (an unprivileged process cannot change
/// routes).
fn announce_table(cx: &Cx<'_>, v: &Spanned<i64>, user: Option<&str>) -> Result<u32, ConfigError> {
    let n = int_in(cx, "announce_table", v, 1, i64::from(u32::MAX))?;
    let named = match n {
        253 => Some("default"),
        254 => Some("main"),
        255 => Some("local"),
        _ => None,
    };
    if let Some(name) = named {
        return Err(cx.bad(
            "announce_table",
            v,
            format!("the kernel's {name} table"),
            "a table of its own that only the routing daemon reads, 1-252 or 256-4294967295",
        ));
    }
    if let Some(u) = user {
        return Err(cx.err(
            v.span(),
            format!(
                "announce_table with [daemon] user = {u:?}: the unprivileged process could not                  add or withdraw its routes; expected one of them"
            ),
        ));
    }
    Ok(n as u32)
}

/// Checks `[sync]` against the mode and pool4 (`None`: not mode nat64, or
/// pool4 left to the gateway's own address) and `[daemon] user`.
pub(crate) fn section(
    cx: &Cx<'_>,
    s: SyncSection,
    span: std::ops::Range<usize>,
    nat64: Option<&[Pool4Entry]>,
    user: Option<&str>,
) -> Result<SyncSettings, ConfigError> {
    let Some(pool4) = nat64 else {
        return Err(cx.err(
            span,
            "[sync] shares stateful NAT64 tables; expected mode = \"nat64\" in [translator] \
             (SIIT and MAP-T BR are stateless and scale out without sync, docs/ha.md)",
        ));
    };
    // No pool4 key: the gateway's own address, found at run time.
    if pool4.is_empty() {
        return Err(cx.err(
            span,
            "[sync] divides pool4 between nodes; expected an explicit pool4 in [nat64] \
             (the default, the gateway's own address, differs on each node)",
        ));
    }
    let require = |name: &str| {
        cx.err(
            span.clone(),
            format!("[sync] has no {name}; expected {name} = …, see docs/config.md, [sync]"),
        )
    };
    let me = node_id(
        cx,
        "node_id",
        s.node_id.as_ref().ok_or_else(|| require("node_id"))?,
    )?;
    let bind_v = s.bind.as_ref().ok_or_else(|| require("bind"))?;
    let bind = socket(cx, "bind", bind_v)?;
    let peers_v = s.peers.as_ref().ok_or_else(|| require("peers"))?;
    if peers_v.get_ref().is_empty() {
        return Err(cx.err(
            peers_v.span(),
            "peers = []: no peer; expected at least one { node_id, address }",
        ));
    }
    let mut peers: Vec<SyncPeer> = Vec::new();
    for p in peers_v.get_ref() {
        let p = p.get_ref();
        let id = node_id(cx, "peers.node_id", &p.node_id)?;
        if id == me || peers.iter().any(|q| q.node_id == id) {
            return Err(cx.err(
                p.node_id.span(),
                format!(
                    "peers.node_id = {id}: duplicate node id (node_id and every peer's must differ)"
                ),
            ));
        }
        let address = socket(cx, "peers.address", &p.address)?;
        if address == bind || address.ip() == bind.ip() {
            return Err(cx.bad(
                "peers.address",
                &p.address,
                "this node's own address (bind) among its peers",
                "the peer's address on the sync link",
            ));
        }
        if peers.iter().any(|q| q.address == address) {
            return Err(cx.bad(
                "peers.address",
                &p.address,
                "two peers at one address",
                "one address per peer",
            ));
        }
        if address.is_ipv4() != bind.is_ipv4() {
            return Err(cx.bad(
                "peers.address",
                &p.address,
                "another address family than bind",
                "the same family as bind: the link is one UDP socket",
            ));
        }
        peers.push(SyncPeer {
            node_id: id,
            address,
        });
    }
    let key = match (&s.key, &s.key_file) {
        (Some(k), Some(_)) => {
            return Err(cx.err(
                k.span(),
                "key and key_file are both set; expected one of them",
            ));
        }
        (Some(k), None) => Some(SyncKey::Inline(
            hex_key(k.get_ref()).map_err(|why| cx.err(k.span(), format!("key: {why}")))?,
        )),
        (None, Some(f)) => {
            let p = PathBuf::from(f.get_ref());
            if !p.is_absolute() {
                return Err(cx.bad(
                    "key_file",
                    f,
                    "not an absolute path",
                    "e.g. \"/etc/sixgate/sync.key\"",
                ));
            }
            Some(SyncKey::File(p))
        }
        (None, None) => None,
    };
    let mtu = match &s.mtu {
        Some(v) => int_in(cx, "mtu", v, 1280, 65535)? as u16,
        None => DEFAULT_SYNC_MTU,
    };
    let shards = shards(cx, &s, &span, me, &peers, pool4)?;
    let announce_table = match &s.announce_table {
        Some(v) => Some(announce_table(cx, v, user)?),
        None => None,
    };
    let join_timeout = match &s.join_timeout {
        Some(v) => int_in(cx, "join_timeout", v, 1, MAX_JOIN_TIMEOUT_S)? as u32,
        None => DEFAULT_JOIN_TIMEOUT_S,
    };
    Ok(SyncSettings {
        node_id: me,
        bind,
        peers,
        key,
        mtu,
        shards,
        announce_table,
        join_timeout,
    })
}

/// Every pool4 address in exactly one shard; every node owns one; shards only
/// inside pool4.
fn shards(
    cx: &Cx<'_>,
    s: &SyncSection,
    span: &std::ops::Range<usize>,
    me: u16,
    peers: &[SyncPeer],
    pool4: &[Pool4Entry],
) -> Result<Vec<Shard>, ConfigError> {
    let Some(list) = &s.shards else {
        return Err(cx.err(
            span.clone(),
            "[sync] has no shards; expected shards = [ { node_id = N, pool4 = [\"ADDR/LEN\"] }, … ] \
             giving every pool4 address to one node",
        ));
    };
    let in_pool4 = |a: u32| {
        pool4
            .iter()
            .any(|e| u32::from(mask_v4(Ipv4Addr::from(a), e.prefix_len)) == u32::from(e.addr))
    };
    let mut out: Vec<Shard> = Vec::new();
    // (first, last, node) of every shard prefix so far.
    let mut ranges: Vec<(u32, u32, u16)> = Vec::new();
    for e in list.get_ref() {
        let e = e.get_ref();
        let id = node_id(cx, "shards.node_id", &e.node_id)?;
        if id != me && !peers.iter().any(|p| p.node_id == id) {
            return Err(cx.err(
                e.node_id.span(),
                format!("shards.node_id = {id}: not this node's node_id nor a peer's"),
            ));
        }
        let mut prefixes = Vec::new();
        for p in e.pool4.get_ref() {
            let (addr, len) = parse_v4_prefix(p.get_ref(), true)
                .map_err(|why| cx.bad("shards.pool4", p, why, "\"ADDR\" or \"ADDR/LEN\""))?;
            if mask_v4(addr, len) != addr {
                return Err(cx.bad(
                    "shards.pool4",
                    p,
                    "host bits set",
                    "the prefix's network address",
                ));
            }
            let first = u32::from(addr);
            let last = first | u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            // pool4 holds at most 65536 addresses: a larger shard cannot fit.
            if last - first > 65535 || (first..=last).any(|a| !in_pool4(a)) {
                return Err(cx.bad(
                    "shards.pool4",
                    p,
                    "holds addresses outside pool4",
                    "a part of [nat64] pool4",
                ));
            }
            if let Some(&(_, _, other)) = ranges.iter().find(|(f, l, _)| first <= *l && *f <= last)
            {
                return Err(cx.bad(
                    "shards.pool4",
                    p,
                    format!("overlaps a shard of node {other}"),
                    "each pool4 address in exactly one shard",
                ));
            }
            ranges.push((first, last, id));
            prefixes.push((addr, len));
        }
        match out.iter_mut().find(|s| s.node_id == id) {
            Some(s) => s.pool4.extend(prefixes),
            None => out.push(Shard {
                node_id: id,
                pool4: prefixes,
            }),
        }
    }
    for e in pool4 {
        let first = u32::from(e.addr);
        let last = first | u32::MAX.checked_shr(u32::from(e.prefix_len)).unwrap_or(0);
        if let Some(a) = (first..=last).find(|a| !ranges.iter().any(|(f, l, _)| f <= a && a <= l)) {
            return Err(cx.err(
                list.span(),
                format!(
                    "shards: pool4 address {} is in no shard; expected every pool4 address given to one node",
                    Ipv4Addr::from(a)
                ),
            ));
        }
    }
    for id in std::iter::once(me).chain(peers.iter().map(|p| p.node_id)) {
        if !out.iter().any(|s| s.node_id == id) {
            return Err(cx.err(
                list.span(),
                format!("shards: node {id} owns no pool4 address; expected a shard for every node"),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
