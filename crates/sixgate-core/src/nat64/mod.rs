//! Stateful NAT64 (RFC 6146): the state one worker owns.
//!
//! - [`config`]: [`Nat64Config`] and its parts (pool4, timeouts, limits);
//! - [`steering`]: which worker owns a port or a subscriber;
//! - `bib` / `session`: the §3.1 Binding Information Base and session table;
//! - [`tcp`]: the §3.5.2 TCP state machine;
//! - `port_alloc`: RFC 6056 port choice within this worker's share of pool4;
//!   `port_map`: which of those ports are taken, a bit each, for it;
//! - `subscriber`: RFC 6888 per-subscriber limits and RFC 7422 port blocks;
//!   [`deterministic`]: RFC 7422 deterministic NAT, one block per subscriber
//!   by a formula;
//! - `filtering`: §3.5 "Filtering and Updating Binding and Session Information",
//!   the step the RFC 7915 paths call;
//! - `syn_store`: §3.5.2.2 IPv4 SYNs held for a simultaneous open;
//! - `fragments`: ports of fragmented datagrams, for their later fragments;
//! - `early_fragments`: §3.4 later fragments that came before their first,
//!   waiting for it (the translator's, shared with MAP-T);
//! - [`event`]: the RFC 6888 event log ring; [`stats`]: table sizes;
//! - [`walk`] and [`flush`]: listing and flushing the tables a chunk at a time;
//! - `offloaded`: refreshing sessions an in-kernel fast path carries;
//! - [`replica`]: export of changes to, and import of records from, other
//!   gateway nodes (docs/ha.md); `replica_snapshot`: the mark and sweep
//!   after a peer's snapshot, per shard owner; `replica_conflict`: two
//!   nodes' mappings of one IPv6 transport address; `shard`: the pool4
//!   addresses this node creates mappings on when it shares state with others.
//!
//! Layout and expiry are described in docs/architecture.md ("Tables and expiry").

mod bib;
pub mod config;
pub mod deterministic;
pub(crate) mod early_fragments;
pub mod event;
pub(crate) mod filtering;
pub mod flush;
pub(crate) mod fragments;
mod offloaded;
pub(crate) mod packet;
mod port_alloc;
mod port_map;
pub mod replica;
mod replica_conflict;
mod replica_snapshot;
mod runtime;
mod session;
mod shard;
mod slab;
pub mod stats;
pub mod steering;
mod subscriber;
mod syn_store;
pub mod tcp;
pub mod walk;
pub(crate) mod xlate;

pub use bib::BIB_RECORD_BYTES;
pub use config::{
    DEFAULT_POOL4_PORTS, EventLog, Filtering, Nat64Config, Pool4Entry, PortRange, Proto, StaticBib,
    Timeouts,
};
pub use deterministic::Deterministic;
pub use event::{Event, EventKind};
pub use flush::{FlushFilter, Flushed};
pub use replica::{ImportError, Replica, ReplicaOp};
pub use session::SESSION_RECORD_BYTES;
pub use stats::{PerProto, Stats};
pub use syn_store::HELD_BYTES as HELD_SYN_BYTES;
pub use walk::{BibView, BlockView, SessionView, SubscriberView};

use bib::Bib;
use event::EventRing;
use foldhash::fast::FixedState;
use fragments::FragmentTable;
use hashbrown::HashTable;
use session::Session;
use slab::{List, Slab};
use subscriber::Subscribers;
use syn_store::SynStore;

/// Events one worker keeps until the data plane drains them.
pub const EVENT_RING_CAPACITY: usize = 4096;

/// Most expired records one [`crate::Translator::tick`] call removes.
pub const SWEEP_BUDGET: u32 = 256;

/// Longest lifetime the tables keep, in seconds (timestamps are 32-bit
/// milliseconds compared with wrapping arithmetic, so lifetimes must stay well
/// under 24 days).
pub const MAX_TIMEOUT_S: u32 = 1_000_000;

/// One worker's NAT64 state.
pub(crate) struct Nat64 {
    pub(crate) cfg: Nat64Config,
    pub(crate) worker: u16,
    pub(crate) workers: u16,
    /// Milliseconds clock: `now_ns` of the first call is time zero.
    epoch_ns: Option<u64>,
    /// Lifetimes in milliseconds, indexed by timer class.
    lifetimes_ms: [u32; session::CLASSES],
    port_reuse_ms: u32,
    hasher: FixedState,

    bibs: Slab<Bib>,
    /// BIB by IPv6 transport address (proto, address, port).
    bib6: HashTable<u32>,
    /// BIB by IPv4 transport address (proto, address, port).
    bib4: HashTable<u32>,
    /// Alternate mappings of an IPv6 transport address another entry holds
    /// in `bib6` (`replica_conflict`), at most `ALT_CAPACITY`.
    bib6_alt: HashTable<u32>,
    /// This worker's pool4 ports that are taken (`port_map`), for `port_alloc`.
    port_map: port_map::PortMap,
    /// Dynamic BIB entries with no session, waiting out `port_reuse` (FIFO).
    cooling: List,

    sessions: Slab<Session>,
    /// Session by (BIB, remote IPv4 address, remote port).
    session_idx: HashTable<u32>,
    /// One FIFO per lifetime class: refreshed sessions go to the back, so each list
    /// is in deadline order and expiry only looks at the fronts.
    timers: [List; session::CLASSES],

    subs: Subscribers,
    pub(crate) held: SynStore,
    /// The last `inbound` held its packet for a peer's record (it returned
    /// `sync_pending`); the caller takes it.
    pub(crate) held_now: bool,
    frags: FragmentTable,
    pub(crate) events: EventRing,
    /// IPv4 transport addresses of every static BIB entry (of all workers), sorted:
    /// never handed out dynamically.
    reserved: Vec<(u8, u32, u16)>,
    /// Removed pool4 prefixes whose BIB entries have not all expired yet
    /// (`runtime`): still ours on the IPv4 side, never used for new mappings.
    draining: Vec<Pool4Entry>,
    /// Where the scan for drained prefixes goes on (`runtime::scan_draining`),
    /// and which of the first 64 draining prefixes it met this pass.
    drain_next: u32,
    drain_seen: u64,
    /// RFC 6056 algorithm 3's `next_ephemeral`.
    next_ephemeral: u32,
    bib_count: PerProto,
    session_count: PerProto,
    /// Sessions removed by [`Nat64::flush`] so far.
    sessions_flushed: u64,
    /// Changes for other gateway nodes (`replica`), when enabled.
    pub(crate) changes: Option<replica::ChangeRing>,
    /// An import is being applied: its changes are not exported again.
    pub(crate) importing: bool,
    /// Importing this node's own sessions from before a restart
    /// (docs/restart.md): the RFC 7422 port blocks made again are logged
    /// (the stop logged them released).
    pub(crate) restoring: bool,
    /// The peers whose entries are replicated here, with their snapshot
    /// generations (`replica_snapshot`).
    owners: Vec<replica_snapshot::Owner>,
    /// A peer's mapping of an IPv6 transport address mapped otherwise here:
    /// kept as an alternate, or refused (`replica_conflict`).
    bib_conflicts: u64,
    bib_conflicts_refused: u64,
    /// With sync, this node's pool4 shards (`shard`), and the pool4 entries
    /// they leave for new mappings.
    own_shards: Option<Vec<(u32, u8)>>,
    pub(crate) own_pool4: Option<Vec<Pool4Entry>>,
    /// RFC 7422 deterministic NAT (`deterministic`), its formula; `Err` when
    /// the configuration asks for it and it does not hold (never on a checked
    /// configuration): every new mapping is refused then, none made by chance.
    pub(crate) det: Result<Option<Deterministic>, ()>,
    /// With sync, this node's share of each deterministic block: the ports at
    /// offsets `≡ rank (mod nodes)`, so that two nodes never map two flows to
    /// one port (`Translator::set_deterministic_share`).
    pub(crate) det_share: (u16, u16),
}

impl Nat64 {
    pub(crate) fn new(cfg: &Nat64Config, worker: u16, workers: u16) -> Self {
        let workers = workers.max(1);
        // RFC 7422 blocks are aligned powers of two (the configuration checks it).
        let mut cfg = cfg.clone();
        if cfg.port_block_size >= 2 {
            cfg.port_block_size = 1 << (15 - cfg.port_block_size.leading_zeros().min(15));
        } else {
            cfg.port_block_size = 0;
        }
        let cfg = &cfg;
        let sess_cap = cfg.max_sessions.max(1).div_ceil(u32::from(workers));
        let bib_cap = sess_cap.saturating_add(cfg.static_bib.len() as u32);
        let mut reserved: Vec<(u8, u32, u16)> = cfg
            .static_bib
            .iter()
            .map(|s| (s.proto as u8, u32::from(s.v4), s.port4))
            .collect();
        reserved.sort_unstable();
        let mut n = Nat64 {
            cfg: cfg.clone(),
            worker,
            workers,
            epoch_ns: None,
            lifetimes_ms: [0; session::CLASSES],
            port_reuse_ms: 0,
            hasher: FixedState::with_seed(cfg.hash_key),
            bibs: Slab::with_capacity(bib_cap),
            bib6: HashTable::with_capacity(bib_cap as usize),
            bib4: HashTable::with_capacity(bib_cap as usize),
            bib6_alt: HashTable::with_capacity(replica_conflict::ALT_CAPACITY),
            port_map: port_map::PortMap::default(),
            cooling: List::default(),
            sessions: Slab::with_capacity(sess_cap),
            session_idx: HashTable::with_capacity(sess_cap as usize),
            timers: [List::default(); session::CLASSES],
            subs: Subscribers::new(cfg, bib_cap),
            held: SynStore::new(cfg.max_held_syns),
            held_now: false,
            frags: FragmentTable::new(),
            events: EventRing::new(EVENT_RING_CAPACITY),
            reserved,
            draining: Vec::new(),
            drain_next: 0,
            drain_seen: 0,
            next_ephemeral: 0,
            bib_count: PerProto::default(),
            session_count: PerProto::default(),
            sessions_flushed: 0,
            changes: None,
            importing: false,
            restoring: false,
            owners: Vec::new(),
            bib_conflicts: 0,
            bib_conflicts_refused: 0,
            own_shards: None,
            own_pool4: None,
            det: Deterministic::plan(cfg).map_err(|_| ()),
            det_share: (0, 1),
        };
        n.set_timeouts();
        n.install_static_bib();
        n.port_map_rebuild();
        n
    }

    fn set_timeouts(&mut self) {
        let t = &self.cfg.timeouts;
        let ms = |s: u32| s.min(MAX_TIMEOUT_S) * 1000;
        self.lifetimes_ms = session::lifetimes(t).map(ms);
        self.port_reuse_ms = ms(t.port_reuse);
    }

    /// Lifetime of class `class`, in milliseconds.
    pub(crate) fn lifetime_ms(&self, class: u8) -> u32 {
        self.lifetimes_ms[class as usize]
    }

    /// `now_ns` as table time (32-bit milliseconds since the first call).
    #[inline]
    pub(crate) fn now_ms(&mut self, now_ns: u64) -> u32 {
        let epoch = *self.epoch_ns.get_or_insert(now_ns);
        (now_ns.saturating_sub(epoch) / 1_000_000) as u32
    }

    /// Whether this worker owns pool4 port (identifier) `port`.
    #[inline]
    pub(crate) fn owns_port(&self, port: u16) -> bool {
        steering::port_owner(port, self.cfg.port_block_size, self.workers) == self.worker
    }

    /// Whether this worker serves IPv6 host `src6`.
    #[inline]
    pub(crate) fn owns_subscriber(&self, src6: u128) -> bool {
        let det = self.det.as_ref().ok().and_then(Option::as_ref);
        det.and_then(|d| d.worker(src6, self.workers))
            .unwrap_or_else(|| {
                steering::subscriber_worker(src6, self.cfg.subscriber_prefix_len, self.workers)
            })
            == self.worker
    }

    /// Whether `a` is one of pool4's addresses.
    #[inline]
    pub(crate) fn in_pool4(&self, a: u32) -> bool {
        self.cfg.pool4.iter().any(|p| p.contains(a)) || self.draining_has(a)
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut owned = PerProto::default();
        for p in &self.cfg.pool4 {
            for proto in Proto::ALL {
                let ports = port_alloc::owned_count(
                    p.range(proto),
                    self.cfg.port_block_size,
                    self.worker,
                    self.workers,
                );
                *owned.get_mut(proto) += u64::from(ports) * u64::from(p.addr_count());
            }
        }
        Stats {
            bib: self.bib_count,
            sessions: self.session_count,
            ports_in_use: self.bib_count,
            ports_owned: owned,
            subscribers: u64::from(self.subs.count()),
            port_blocks: u64::from(self.subs.block_count()),
            held_syns: u64::from(self.held.len()),
            session_capacity: u64::from(self.sessions.capacity()),
            events_lost: self.events.lost,
            sessions_flushed: self.sessions_flushed,
            bib_conflicts: self.bib_conflicts,
            bib_conflicts_refused: self.bib_conflicts_refused,
        }
    }
}

/// Deadline `d` has been reached at time `now` (both wrapping milliseconds).
#[inline]
pub(crate) fn reached(now: u32, d: u32) -> bool {
    (now.wrapping_sub(d) as i32) >= 0
}
