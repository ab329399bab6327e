//! The entry point every data plane shares: one packet in, one [`Verdict`] out.

use std::sync::Arc;

use crate::config::Config;
use crate::icmp_error::{self, Owed};
use crate::ipv4_id::Ipv4IdGenerator;
use crate::mapt::Mapt;
use crate::nat64::early_fragments::EarlyFragments;
use crate::nat64::{self, Nat64};
use crate::packet::{PacketBuf, Scratch};
use crate::rate_limit::TokenBucket;
use crate::rfc7915::icmp_fragments::IcmpFragments;
use crate::rfc7915::{self, icmp_map};
use crate::verdict::{Counters, DropReason, Verdict};

/// ICMPv4 Destination Unreachable code 3.
const PORT_UNREACHABLE: u8 = 3;

/// NAT64 or MAP-T: fragments follow per-datagram state.
fn stateful(cfg: &Config) -> bool {
    cfg.nat64.is_some() || cfg.mapt.is_some()
}

/// One worker's translator: shared read-only configuration plus the worker's own
/// mutable state (counters, IPv4 ID table, ICMP token bucket). Never shared between
/// threads, so the packet path takes no lock.
pub struct Translator {
    pub(crate) cfg: Arc<Config>,
    pub(crate) counters: Counters,
    pub(crate) ids: Ipv4IdGenerator,
    pub(crate) icmp_bucket: TokenBucket,
    /// Set for the duration of one [`Translator::translate_with`] call: the TCP/UDP
    /// checksum field holds a partial (pseudo-header) sum, not a final checksum.
    pub(crate) partial_csum: bool,
    /// Stateful NAT64 state (RFC 6146), when `cfg.nat64` is set.
    pub(crate) nat64: Option<Box<Nat64>>,
    /// MAP-T state (fragments; a CE's NAPT44), when `cfg.mapt` is set.
    pub(crate) mapt: Option<Box<Mapt>>,
    /// This worker's number and the number of workers.
    pub(crate) worker: (u16, u16),
    /// First fragments of fragmented ICMP Echoes waiting for their length
    /// (RFC 7915 §4.2, §5.2).
    pub(crate) icmp_fragments: Box<IcmpFragments>,
    /// Stateful modes: fragments that came before their first (RFC 6146 §3.4).
    pub(crate) early: Box<EarlyFragments>,
    /// Set when a first fragment's translation found fragments of its
    /// datagram waiting in `early`: release them after it.
    pub(crate) release_pending: bool,
    /// NAT64 or MAP-T is on (`nat64` or `mapt` is set): only then can a
    /// translation set `release_pending`, so only then (and with fragments
    /// waiting) does [`Translator::translate_with`] take the path that tests it.
    stateful: bool,
}

impl Translator {
    /// The translator of a single worker (worker 0 of 1: offline mode, tests).
    pub fn new(cfg: Arc<Config>) -> Self {
        Self::for_worker(cfg, 0, 1)
    }

    /// The translator of worker `worker` of `workers` (docs/architecture.md): with
    /// NAT64 on it allocates only the pool4 ports
    /// [`nat64::steering::port_owner`] gives it, and serves the subscribers
    /// [`nat64::steering::subscriber_worker`] gives it. NAT64 tables are allocated
    /// here, at their full bounded size.
    pub fn for_worker(cfg: Arc<Config>, worker: u16, workers: u16) -> Self {
        let workers = workers.max(1);
        let worker = worker.min(workers - 1);
        Translator {
            ids: Ipv4IdGenerator::new(cfg.ipv4_id_key),
            icmp_bucket: TokenBucket::new(cfg.icmp_errors_per_sec, cfg.icmp_error_burst),
            counters: Counters::default(),
            partial_csum: false,
            worker: (worker, workers),
            nat64: cfg
                .nat64
                .as_ref()
                .map(|n| Box::new(Nat64::new(n, worker, workers))),
            mapt: cfg.mapt.as_ref().map(|m| Box::new(Mapt::new(m))),
            icmp_fragments: Box::new(IcmpFragments::new(cfg.ipv4_id_key)),
            early: Box::new(EarlyFragments::new(cfg.ipv4_id_key, stateful(&cfg))),
            release_pending: false,
            stateful: stateful(&cfg),
            cfg,
        }
    }

    /// Timers (RFC 6146 §3.5.2.2 held SYNs, session and BIB expiry). Call at least
    /// every 100 ms and repeat while it returns `Some`: a
    /// `Some(Verdict::Replied(_))` leaves one packet to send in `scratch` (an
    /// ICMPv4 Port Unreachable for a held SYN whose time ran out);
    /// `Some(Verdict::Fragmented(_))` leaves translated packets there (one
    /// held for a peer's record that has come, docs/ha.md; sent first);
    /// `Some(Verdict::Translated)` means nothing to send but more expired state is
    /// waiting. Each call does bounded work ([`nat64::SWEEP_BUDGET`] records).
    /// A MAP-T CE's NAPT44 tables expire the same way (they hold no SYNs).
    /// Without either it returns `None` at once.
    pub fn tick(&mut self, now_ns: u64, scratch: &mut Scratch) -> Option<Verdict> {
        scratch.clear();
        if let Some(v) = self.release_synced(scratch, now_ns) {
            return Some(v);
        }
        self.early.expire(now_ns, &mut self.counters);
        let mut held = [0u8; nat64::HELD_SYN_BYTES];
        loop {
            // The NAT64's tables, or a MAP-T CE's NAPT44 (which holds no SYNs).
            let tables = match self.nat64.as_deref_mut() {
                Some(n) => n,
                None => self.mapt.as_deref_mut()?.napt.as_deref_mut()?,
            };
            match tables.tick(now_ns, &mut held) {
                Ok(len) => {
                    // RFC 6146 §3.5.2.2: nobody on the IPv6 side opened it.
                    let owed = Owed {
                        ty: icmp_map::v4::DEST_UNREACH,
                        code: PORT_UNREACHABLE,
                        rest: [0; 4],
                        reason: DropReason::SynHeld,
                    };
                    let v = icmp_error::reply_v4(self, &held[..len], scratch, now_ns, owed, false);
                    if let Verdict::Replied(_) = v {
                        self.counters.icmp_generated += 1;
                        return Some(v);
                    }
                    // Rate-limited (counted): on to the next one.
                }
                Err(true) => return Some(Verdict::Translated),
                Err(false) => {
                    // Held whole for a peer's record that never came
                    // (docs/ha.md): dropped without an error.
                    if let Some(n) = self.nat64.as_deref_mut() {
                        let expired = std::mem::take(&mut n.held.sync_expired);
                        self.counters.dropped[DropReason::SyncPending as usize] += expired;
                    }
                    return None;
                }
            }
        }
    }

    /// Whether packets held for a peer's record (docs/ha.md) have their
    /// session now: the next [`Translator::tick`] sends them, so a data
    /// plane that imported records calls it at once instead of at the next
    /// timer round.
    #[inline]
    pub fn held_ready(&self) -> bool {
        self.nat64.as_ref().is_some_and(|n| n.held.ready() > 0)
    }

    /// docs/ha.md: one packet held for a peer's record whose session has
    /// arrived, translated (counted like any packet) into `scratch`:
    /// `Fragmented` with the packet(s), or `Replied` with an ICMP error
    /// owed to its sender. `None`: none ready.
    fn release_synced(&mut self, scratch: &mut Scratch, now_ns: u64) -> Option<Verdict> {
        loop {
            let mut r = self.nat64.as_deref_mut()?.held.take_ready()?;
            let mut pkt = PacketBuf::new(&mut r.buf, crate::HEADROOM, r.len);
            let v = rfc7915::v4_to_v6::translate(self, &mut pkt, scratch, now_ns);
            self.account(v, Some(4), r.len as u64);
            // A first fragment: its later fragments waited for it (RFC 6146
            // §3.4) and go after it.
            let v = if self.release_pending {
                self.release_early(v, &mut pkt, scratch, now_ns)
            } else {
                v
            };
            let out = match v {
                Verdict::Translated if scratch.push_copy(pkt.data()) => {
                    Some(Verdict::Fragmented(1))
                }
                Verdict::Translated => {
                    self.counters.count_drop(DropReason::PacketTooBig);
                    None
                }
                Verdict::Fragmented(_) | Verdict::Replied(_) => Some(v),
                Verdict::Dropped(_) | Verdict::Held => None,
            };
            if let Some(n) = self.nat64.as_deref_mut() {
                n.held.put_back(r);
            }
            if out.is_some() {
                return out;
            }
        }
    }

    /// Hand every pending RFC 6888 event to `f`, oldest first. Events that did not
    /// fit in the bounded ring are counted in [`nat64::Stats::events_lost`].
    pub fn drain_events(&mut self, f: impl FnMut(&nat64::Event)) {
        if let Some(n) = self.nat64.as_mut() {
            n.events.drain(f);
        }
    }

    /// [`Translator::drain_events`] until `f` refuses one (its ring to the
    /// exporter is full): that event and those after it wait here, and what
    /// no longer fits behind them is counted lost (or, with
    /// `refuse_unlogged`, refused before it is made).
    #[inline]
    pub fn drain_events_while(&mut self, f: impl FnMut(&nat64::Event) -> bool) {
        if let Some(n) = self.nat64.as_mut() {
            n.events.drain_while(f);
        }
    }

    /// Export this worker's NAT64 session changes (created, TCP state changed,
    /// deleted) for other gateway nodes into a ring of `capacity`, allocated
    /// now (docs/ha.md). Call before the first packet; no effect without NAT64.
    pub fn enable_replica_export(&mut self, capacity: usize) {
        if let Some(n) = self.nat64.as_mut() {
            n.enable_export(capacity);
        }
    }

    /// An in-kernel fast path translated packets of session `r` (an exported
    /// record; docs/fastpath.md): restart its lifetime as a packet would.
    /// False when the session is gone or left TCP ESTABLISHED: the fast
    /// path's entries for it must go (`nat64::offloaded`).
    pub fn nat64_fast_path_seen(&mut self, r: &nat64::Replica, now_ns: u64) -> bool {
        self.nat64
            .as_mut()
            .is_some_and(|n| n.fast_path_seen(r, now_ns))
    }

    /// Is session `r` still one an in-kernel fast path may carry (it exists;
    /// TCP: ESTABLISHED)? No change to it.
    pub fn nat64_fast_path_alive(&self, r: &nat64::Replica) -> bool {
        self.nat64.as_ref().is_some_and(|n| n.fast_path_alive(r))
    }

    /// With state shared between nodes (docs/ha.md), create new mappings only
    /// on the pool4 addresses of `shards` (prefixes; this node's own), though
    /// all of pool4 stays translated; `None` lifts the restriction. Kept across
    /// [`Translator::reconfigure`]. Allocates: call outside the packet path.
    pub fn set_own_pool4_shards(&mut self, shards: Option<&[(std::net::Ipv4Addr, u8)]>) {
        if let Some(n) = self.nat64.as_mut() {
            n.set_own_shards(shards.map(|s| s.iter().map(|&(a, l)| (u32::from(a), l)).collect()));
        }
    }

    /// RFC 7422 deterministic NAT with state shared between `nodes` gateway
    /// nodes: this node (`rank`, 0-based) takes the ports of each subscriber's
    /// block at offsets `≡ rank (mod nodes)`, so two nodes never hand one
    /// port to two flows (docs/ha.md, "Deterministic NAT").
    pub fn set_deterministic_share(&mut self, rank: u16, nodes: u16) {
        if let Some(n) = self.nat64.as_mut() {
            n.det_share = (rank.min(nodes.saturating_sub(1)), nodes.max(1));
        }
    }

    /// Hand every exported change to `f`, oldest first.
    pub fn drain_replica_changes(&mut self, f: impl FnMut(nat64::ReplicaOp, &nat64::Replica)) {
        if let Some(c) = self.nat64.as_mut().and_then(|n| n.changes.as_mut()) {
            c.drain(f);
        }
    }

    /// Changes that did not fit the export ring: each calls for a snapshot of
    /// this worker's tables to the peers.
    pub fn replica_changes_lost(&self) -> u64 {
        self.nat64
            .as_ref()
            .and_then(|n| n.changes.as_ref())
            .map_or(0, |c| c.lost)
    }

    /// Apply another node's session record to this worker's tables, between
    /// batches, as their sole writer (docs/ha.md). On error nothing changed.
    /// The sender is not said: an upsert counts as restated by the owner of
    /// its pool4 address for the sweep after the owner's snapshot; exact in a
    /// pair, where [`Translator::import_replica_from`] (what the workers
    /// call) is the same.
    pub fn import_replica(
        &mut self,
        op: nat64::ReplicaOp,
        r: &nat64::Replica,
        now_ns: u64,
    ) -> Result<(), nat64::ImportError> {
        match self.nat64.as_mut() {
            Some(n) => n.import(None, op, r, now_ns),
            None => Err(nat64::ImportError::NotNat64),
        }
    }

    /// A session this node had before a restart (docs/restart.md), read
    /// back from its state file: [`Translator::import_replica`]'s upsert,
    /// with the same checks and refusals, not exported and its session and
    /// BIB entry not logged again (the run that made them did; their ends
    /// are logged here as usual), but an RFC 7422 port block it makes again
    /// is logged allocated, since the stop logged it released.
    pub fn restore_replica(
        &mut self,
        r: &nat64::Replica,
        now_ns: u64,
    ) -> Result<(), nat64::ImportError> {
        match self.nat64.as_mut() {
            Some(n) => {
                n.restoring = true;
                let out = n.import(None, nat64::ReplicaOp::Upsert, r, now_ns);
                n.restoring = false;
                out
            }
            None => Err(nat64::ImportError::NotNat64),
        }
    }

    /// A dynamic BIB entry this node had cooling before a restart (RFC 6888
    /// REQ-8; docs/restart.md): made again without sessions, its port held
    /// for the rest of its wait (`r.remaining_ms`, at most
    /// `port_reuse_delay`; `r`'s remote fields are not read). Restore the
    /// sessions first, then these, shortest wait first.
    pub fn restore_cooling_bib(
        &mut self,
        r: &nat64::Replica,
        now_ns: u64,
    ) -> Result<(), nat64::ImportError> {
        match self.nat64.as_mut() {
            Some(n) => n.restore_cooling(r, now_ns),
            None => Err(nat64::ImportError::NotNat64),
        }
    }

    /// The dynamic BIB entries cooling (RFC 6888 REQ-8), each as a record
    /// with no remote and its remaining wait (for the state file,
    /// docs/restart.md). Allocates nothing; call it off the packet path.
    pub fn walk_cooling_bib(&self, now_ns: u64, f: impl FnMut(nat64::Replica)) {
        if let Some(n) = self.nat64.as_ref() {
            n.walk_cooling(now_ns, f);
        }
    }

    /// [`Translator::import_replica`] of a record from node `peer`: an upsert
    /// marks its entry as restated only when `peer` owns its pool4 address,
    /// so that in a group of three or more a third node's stale replica
    /// cannot keep an entry its owner's snapshot left out.
    pub fn import_replica_from(
        &mut self,
        peer: u16,
        op: nat64::ReplicaOp,
        r: &nat64::Replica,
        now_ns: u64,
    ) -> Result<(), nat64::ImportError> {
        match self.nat64.as_mut() {
            Some(n) => n.import(Some(peer), op, r, now_ns),
            None => Err(nat64::ImportError::NotNat64),
        }
    }

    /// docs/logging.md, "With `[sync]`": whether peer `peer` is heard from.
    /// While it is, it logs the ends of the sessions, BIB entries and port
    /// blocks it made; while it is not, this node logs those it holds.
    pub fn set_peer_up(&mut self, peer: u16, up: bool) {
        if let Some(n) = self.nat64.as_mut() {
            n.set_peer_up(peer, up);
        }
    }

    /// The peers whose sessions this worker imports, each with its pool4
    /// shards (`[sync] peers` and `shards`), for the mark and sweep after a
    /// peer's snapshot. Allocates: call outside the packet path. Kept across
    /// [`Translator::reconfigure`].
    pub fn set_replica_peers(&mut self, peers: &[(u16, Vec<(std::net::Ipv4Addr, u8)>)]) {
        if let Some(n) = self.nat64.as_mut() {
            n.set_peers(
                peers
                    .iter()
                    .map(|(id, s)| (*id, s.iter().map(|&(a, l)| (u32::from(a), l)).collect()))
                    .collect(),
            );
        }
    }

    /// Peer `peer`'s snapshot starts (`sixgate_sync::Event::SnapshotBegin`):
    /// the entries on its shards it restates are marked, so that
    /// [`Translator::replica_sweep`] can remove the rest afterwards. Each
    /// peer has its own mark: snapshots of two peers at once do not disturb
    /// each other. False for a peer not given to
    /// [`Translator::set_replica_peers`] (or without NAT64).
    pub fn replica_snapshot_begin(&mut self, peer: u16) -> bool {
        self.nat64.as_mut().is_some_and(|n| n.snapshot_begin(peer))
    }

    /// After peer `peer`'s snapshot (`SnapshotEnd`): remove the dynamic BIB
    /// entries and sessions on its shards that it did not restate, a chunk at
    /// a time like a flush: slab positions `from..`, at most `budget` looked
    /// at. Returns the cursor to go on from (`None`: done) and how many
    /// entries went. Other peers' shards and this node's own are untouched.
    pub fn replica_sweep(
        &mut self,
        peer: u16,
        from: u32,
        budget: u32,
        now_ns: u64,
    ) -> (nat64::walk::Cursor, u64) {
        match self.nat64.as_mut() {
            Some(n) => n.snapshot_sweep(peer, from, budget, now_ns),
            None => (None, 0),
        }
    }

    /// Removed pool4 prefixes this worker still has BIB entries on (RFC 6146
    /// §3.5.1.1, draining: `nat64::runtime`); the timers forget each once its
    /// last entry has gone, so a data plane can take away what it kept for it
    /// (a route). Empty without NAT64.
    pub fn draining_pool4(&self) -> &[nat64::Pool4Entry] {
        self.nat64.as_ref().map_or(&[], |n| n.draining())
    }

    /// NAT64 table sizes and pool4 use of this worker (all zero without NAT64).
    pub fn nat64_stats(&self) -> nat64::Stats {
        self.nat64.as_ref().map(|n| n.stats()).unwrap_or_default()
    }

    /// A MAP-T CE's NAPT44 table sizes and port use (all zero elsewhere).
    pub fn napt44_stats(&self) -> nat64::Stats {
        self.mapt
            .as_ref()
            .and_then(|m| m.napt.as_ref())
            .map(|n| n.stats())
            .unwrap_or_default()
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Swap in a new configuration without [`crate::reconfigure::check`];
    /// counters and ID state are kept.
    /// NAT64 state is kept when the new configuration still has NAT64 (its new
    /// limits and timeouts apply from now on; tables keep their size), created
    /// when it gains it, and dropped when it loses it.
    pub fn set_config(&mut self, cfg: Arc<Config>) {
        match (&mut self.nat64, &cfg.nat64) {
            (Some(n), Some(c)) => n.reconfigure(c),
            (None, Some(c)) => {
                let (w, n) = self.worker;
                self.nat64 = Some(Box::new(Nat64::new(c, w, n)));
            }
            (_, None) => self.nat64 = None,
        }
        // MAP-T: rules are read from the configuration per packet; the state
        // (fragments, NAPT44 tables) stays while the role does.
        let same_role = match (&self.cfg.mapt, &cfg.mapt) {
            (Some(a), Some(b)) => {
                a.ce().map(|c| (c.ipv4, c.psid)) == b.ce().map(|c| (c.ipv4, c.psid))
            }
            _ => false,
        };
        if !same_role {
            self.mapt = cfg.mapt.as_ref().map(|m| Box::new(Mapt::new(m)));
        }
        if self.early.enabled() != stateful(&cfg) {
            *self.early = EarlyFragments::new(cfg.ipv4_id_key, stateful(&cfg));
        }
        self.stateful = self.nat64.is_some() || self.mapt.is_some();
        self.icmp_bucket = TokenBucket::new(cfg.icmp_errors_per_sec, cfg.icmp_error_burst);
        self.cfg = cfg;
    }

    /// This worker's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Translate one packet (IPv4 or IPv6, by its version nibble) at time `now_ns`
    /// (any monotonic clock; only differences matter).
    ///
    /// On [`Verdict::Translated`] the packet buffer holds the result; on
    /// [`Verdict::Fragmented`] and [`Verdict::Replied`] the scratch area does.
    pub fn translate(
        &mut self,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
    ) -> Verdict {
        self.translate_with(pkt, scratch, now_ns, false)
    }

    /// [`Translator::translate`] for a packet whose TCP or UDP checksum is left to
    /// offload hardware (Linux `CHECKSUM_PARTIAL`, virtio `VIRTIO_NET_HDR_F_NEEDS_CSUM`).
    ///
    /// With `partial_csum` set, the checksum field of an outer TCP or UDP header is
    /// taken to hold the folded pseudo-header sum, *not* complemented; whoever
    /// finishes the checksum adds the segment's bytes to it and complements the
    /// result. New addresses then change it by `field - old_sum + new_sum` (ones'
    /// complement) instead of the RFC 1624 update of a final checksum, and a zero
    /// UDP field is not "no checksum" (RFC 7915 §4.5 does not apply).
    ///
    /// The data plane must only pass `true` for an unfragmented TCP or UDP packet
    /// whose checksum starts at its transport header, and must not fragment the
    /// result (a fragment cannot carry a partial checksum): it finishes the checksum
    /// itself for anything else (ICMP, IPv4 DF=0 packets that could be fragmented).
    /// ICMP errors the translator generates always carry complete checksums.
    pub fn translate_with(
        &mut self,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
        partial_csum: bool,
    ) -> Verdict {
        // A release needs fragments waiting in `early` when the packet comes
        // (one translation never both holds a fragment and releases: a held
        // one returns at once). SIIT and CLAT never hold any; in the stateful
        // modes the store is almost always empty. Without that, nothing is
        // kept live across the translation (no spills for a release that
        // cannot happen).
        if self.stateful && self.early.waiting() != 0 {
            return self.translate_stateful(pkt, scratch, now_ns, partial_csum);
        }
        self.translate_plain(pkt, scratch, now_ns, partial_csum)
    }

    /// [`Translator::translate_with`] when no early fragment can be released.
    /// Out of line like [`Translator::translate_stateful`], so that the test
    /// between them comes before either saves a register.
    #[inline(never)]
    fn translate_plain(
        &mut self,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
        partial_csum: bool,
    ) -> Verdict {
        self.translate_one(pkt, scratch, now_ns, partial_csum)
    }

    /// [`Translator::translate_with`] in the stateful modes with fragments
    /// waiting: a first fragment may release those that came before it
    /// (RFC 6146 §3.4).
    #[inline(never)]
    fn translate_stateful(
        &mut self,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
        partial_csum: bool,
    ) -> Verdict {
        let verdict = self.translate_one(pkt, scratch, now_ns, partial_csum);
        if self.release_pending {
            return self.release_early(verdict, pkt, scratch, now_ns);
        }
        verdict
    }

    /// One packet, translated and counted.
    #[inline(always)]
    fn translate_one(
        &mut self,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
        partial_csum: bool,
    ) -> Verdict {
        scratch.clear();
        self.partial_csum = partial_csum;
        let received = pkt.len() as u64;
        let version = pkt.data().first().map(|b| b >> 4);
        let verdict = match version {
            Some(6) => rfc7915::v6_to_v4::translate(self, pkt, scratch, now_ns),
            Some(4) => rfc7915::v4_to_v6::translate(self, pkt, scratch, now_ns),
            Some(_) => Verdict::Dropped(DropReason::UnknownVersion),
            None => Verdict::Dropped(DropReason::Malformed),
        };
        self.partial_csum = false;
        self.account(verdict, version, received);
        verdict
    }

    /// RFC 6146 §3.4: the first fragment of a datagram just got its state
    /// (`verdict`), and fragments of it that came before it wait in
    /// [`EarlyFragments`]: translate them now. All leave from the scratch
    /// area (a [`Verdict::Fragmented`]), the first fragment first. Each is
    /// counted as it is translated or dropped. If the first fragment itself
    /// was dropped or answered, the others stay and expire (counted).
    #[cold]
    #[inline(never)]
    fn release_early(
        &mut self,
        verdict: Verdict,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
    ) -> Verdict {
        self.release_pending = false;
        match verdict {
            Verdict::Translated => {
                if !scratch.push_copy(pkt.data()) {
                    self.early.release = None;
                    return verdict;
                }
            }
            Verdict::Fragmented(_) | Verdict::Held => {}
            Verdict::Dropped(_) | Verdict::Replied(_) => {
                self.early.release = None;
                return verdict;
            }
        }
        // Releasing a fragment may release a held ICMP first fragment, which
        // asks again for the same datagram: loop until none is left.
        while let Some(key) = self.early.release.take() {
            while let Some(mut f) = self.early.take(key, now_ns) {
                let before = scratch.len();
                let mut frag = PacketBuf::new(&mut f.buf, crate::HEADROOM, f.len);
                let version = frag.data().first().map(|b| b >> 4);
                let v = match version {
                    Some(6) => rfc7915::v6_to_v4::translate(self, &mut frag, scratch, now_ns),
                    _ => rfc7915::v4_to_v6::translate(self, &mut frag, scratch, now_ns),
                };
                let v = match v {
                    // An ICMP error about it would go back the other way,
                    // beside the translated fragments: it stays unsent.
                    Verdict::Replied(r) => {
                        scratch.truncate(before);
                        Verdict::Dropped(r)
                    }
                    v => v,
                };
                self.account(v, version, f.len as u64);
                if v == Verdict::Translated && !scratch.push_copy(frag.data()) {
                    self.counters.count_drop(DropReason::FragmentBufferFull);
                }
                self.early.put_back(f);
            }
        }
        self.release_pending = false;
        match scratch.len() {
            0 => verdict,
            n => Verdict::Fragmented(n as u8),
        }
    }

    /// Count what became of a packet of `received` bytes.
    #[inline(always)]
    fn account(&mut self, verdict: Verdict, version: Option<u8>, received: u64) {
        match verdict {
            Verdict::Dropped(r) | Verdict::Replied(r) => self.counters.count_drop(r),
            Verdict::Held => {}
            Verdict::Translated | Verdict::Fragmented(_) if version == Some(6) => {
                self.counters.bytes_6to4 += received;
            }
            Verdict::Translated | Verdict::Fragmented(_) => self.counters.bytes_4to6 += received,
        }
        if let Verdict::Replied(_) = verdict {
            self.counters.icmp_generated += 1;
        }
    }

    /// RFC 7915 §4.2 / §5.2: the last fragment of an ICMP Echo just went
    /// through (`verdict`; it came from IPv6 if `from_v6`), so its held first
    /// fragment can be translated too. Both leave from the scratch area (a
    /// [`Verdict::Fragmented`]), the first fragment first where the last one
    /// was translated in place.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_held(
        &mut self,
        verdict: Verdict,
        from_v6: bool,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
    ) -> Verdict {
        let Some(mut held) = self.icmp_fragments.take_ready() else {
            return verdict;
        };
        let version = Some(if from_v6 { 6 } else { 4 });
        {
            let before = scratch.len();
            let mut first = PacketBuf::new(&mut held.buf, crate::HEADROOM, held.len);
            let v = if from_v6 {
                rfc7915::v6_to_v4::translate(self, &mut first, scratch, now_ns)
            } else {
                rfc7915::v4_to_v6::translate(self, &mut first, scratch, now_ns)
            };
            let v = match v {
                // An ICMP error about it would go back the other way, beside
                // the translated fragments: it stays unsent (counted).
                Verdict::Replied(r) => {
                    scratch.truncate(before);
                    Verdict::Dropped(r)
                }
                v => v,
            };
            self.account(v, version, held.len as u64);
            if v == Verdict::Translated && !scratch.push_copy(first.data()) {
                self.counters.count_drop(DropReason::PacketTooBig);
            }
        }
        self.icmp_fragments.put_back(held);
        if verdict == Verdict::Translated && !scratch.push_copy(pkt.data()) {
            self.counters.count_drop(DropReason::PacketTooBig);
        }
        match (verdict, scratch.len()) {
            (_, 0) => verdict,
            // The caller counts only the verdict returned: the last
            // fragment's own drop is counted here.
            (Verdict::Dropped(r), n) => {
                self.counters.count_drop(r);
                Verdict::Fragmented(n as u8)
            }
            (_, n) => Verdict::Fragmented(n as u8),
        }
    }
}
