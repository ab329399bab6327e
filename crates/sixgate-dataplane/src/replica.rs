//! A worker's side of NAT64 state sync (docs/ha.md, "Workers, rings, sole
//! writers"): between batches it moves its translator's exported changes into
//! its export ring, and applies at most a budget of records from its import
//! ring, as the sole writer of its tables. The sync thread holds the other
//! ends ([`SyncEnds`]). `Worker` calls [`WorkerEnds::exchange`] after each
//! batch and tick when `[sync]` is set ([`crate::Crew`] makes the rings).

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use sixgate_core::Translator;
use sixgate_core::nat64::tcp::TcpState;
use sixgate_core::nat64::{ImportError, Replica, ReplicaOp};

use crate::doorbell::Doorbell;
use crate::spsc::{Consumer, Producer, ring};

/// One change or record.
pub type Change = (ReplicaOp, Replica);

/// What the sync thread hands a worker, in the peer's stream order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// A record to apply, from node `peer`.
    Change {
        /// The sender's node id: a record restates an entry for its
        /// owner's snapshot only when the owner sent it (docs/ha.md,
        /// "Snapshots in a group of three or more").
        peer: u16,
        /// What it does.
        op: ReplicaOp,
        /// The session.
        record: Replica,
    },
    /// Peer `peer`'s snapshot starts: what it restates of its shards is
    /// marked with its own mark (another peer's snapshot may run meanwhile).
    SnapshotBegin {
        /// The peer's node id.
        peer: u16,
    },
    /// Peer `peer`'s snapshot ended: sweep its shards of what was not restated.
    SnapshotEnd {
        /// The peer's node id.
        peer: u16,
    },
    /// This node drains (docs/ha.md, "Planned drain"): no new mappings from
    /// now on; existing ones are still translated.
    StopAllocating,
    /// Peer `peer` is heard from (`up`) or silent: while it is up it logs
    /// the ends of what it made, else this node does (docs/logging.md,
    /// "With `[sync]`").
    Liveness {
        /// The peer's node id.
        peer: u16,
        /// Heard from.
        up: bool,
    },
}

/// BIB slab positions a worker sweeps per round after a snapshot.
pub const SWEEP_BUDGET: u32 = 4096;

/// Counters both ends read (published with relaxed stores: figures, not
/// synchronisation).
#[derive(Debug, Default)]
pub struct ReplicaCounters {
    /// Changes moved into the export ring.
    pub exported: AtomicU64,
    /// Changes refused by a full export ring, or lost in the translator's own
    /// ring: each means this worker's tables need a snapshot to the peers.
    pub export_lost: AtomicU64,
    /// Records applied.
    pub imported: AtomicU64,
    /// Records refused by the tables (conflict, full, not ours: see
    /// [`ImportError`]).
    pub import_refused: AtomicU64,
    /// Entries removed after a peer's snapshot did not restate them.
    pub swept: AtomicU64,
}

/// The worker's ends.
pub struct WorkerEnds {
    export: Producer<Change>,
    import: Consumer<Inbound>,
    /// Shared with the sync thread.
    pub counters: Arc<ReplicaCounters>,
    lost_seen: u64,
    /// Each peer's node id and pool4 shards, for the mark and sweep after
    /// its snapshot (given to the translator at the first exchange).
    peer_shards: Vec<(u16, Vec<(Ipv4Addr, u8)>)>,
    peers_told: bool,
    /// Per peer (as `peer_shards`): the slab position of the sweep under
    /// way after its snapshot, if one is.
    sweeps: Vec<Option<u32>>,
    /// The last exchange used its whole budget (more may wait).
    backlog: bool,
    /// Rung after an exchange that exported something (the sync thread's,
    /// shared by every worker); `None`: the thread polls.
    pub bell: Option<Arc<Doorbell>>,
}

/// The sync thread's ends.
pub struct SyncEnds {
    /// Changes of this worker's tables, oldest first.
    pub export: Consumer<Change>,
    /// Records and snapshot markers for this worker's tables.
    pub import: Producer<Inbound>,
    /// Shared with the worker.
    pub counters: Arc<ReplicaCounters>,
    /// What the worker rings ([`WorkerEnds::bell`]), for the thread to
    /// sleep on.
    pub bell: Option<Arc<Doorbell>>,
}

/// Default records a worker applies per round: bounded work between batches,
/// like the timers' sweep budget.
pub const IMPORT_BUDGET: usize = 256;

/// The rings of one worker, `capacity` entries each, allocated now;
/// `peer_shards`: each peer's node id and pool4 shards (`[sync] shards`).
pub fn replica_rings(
    capacity: usize,
    peer_shards: Vec<(u16, Vec<(Ipv4Addr, u8)>)>,
) -> (WorkerEnds, SyncEnds) {
    let (ep, ec) = ring(capacity);
    let (ip, ic) = ring(capacity);
    let counters = Arc::new(ReplicaCounters::default());
    (
        WorkerEnds {
            export: ep,
            import: ic,
            counters: counters.clone(),
            lost_seen: 0,
            sweeps: vec![None; peer_shards.len()],
            peer_shards,
            peers_told: false,
            backlog: false,
            bell: None,
        },
        SyncEnds {
            export: ec,
            import: ip,
            counters,
            bell: None,
        },
    )
}

impl WorkerEnds {
    /// Between batches: this worker's changes into the export ring, then at
    /// most `budget` entries from the import ring into its tables, then a
    /// chunk of a sweep after a peer's snapshot. Returns the records applied.
    pub fn exchange(&mut self, t: &mut Translator, now_ns: u64, budget: usize) -> usize {
        self.exchange_tee(t, now_ns, budget, &mut |_, _| {})
    }

    /// [`WorkerEnds::exchange`], each exported change also handed to `tee`
    /// (a fast path's offload, `crate::offload`) before the export ring.
    pub fn exchange_tee(
        &mut self,
        t: &mut Translator,
        now_ns: u64,
        budget: usize,
        tee: &mut dyn FnMut(ReplicaOp, &Replica),
    ) -> usize {
        if !self.peers_told {
            // Once, before any record: allocates, never on the packet path.
            t.set_replica_peers(&self.peer_shards);
            self.peers_told = true;
        }
        let (mut exported, mut lost) = (0, 0);
        let export = &mut self.export;
        t.drain_replica_changes(|op, r| {
            tee(op, r);
            // The fast path's hint, not the peers'.
            if op == ReplicaOp::Settled {
                return;
            }
            if export.push((op, *r)) {
                exported += 1;
            } else {
                lost += 1;
            }
        });
        let lost_in_core = t.replica_changes_lost();
        lost += lost_in_core - self.lost_seen;
        self.lost_seen = lost_in_core;
        let c = &self.counters;
        c.exported.fetch_add(exported, Relaxed);
        c.export_lost.fetch_add(lost, Relaxed);
        // One write per batch at most, and none while the thread is awake.
        if exported + lost > 0
            && let Some(b) = &self.bell
        {
            b.ring();
        }
        let mut applied = 0;
        let mut refused = 0;
        self.backlog = false;
        for n in 0..budget {
            let Some(item) = self.import.pop() else {
                break;
            };
            self.backlog = n + 1 == budget;
            match item {
                Inbound::Change { peer, op, record } => {
                    match t.import_replica_from(peer, op, &record, now_ns) {
                        Ok(()) => {
                            applied += 1;
                            // A peer's delete, or its TCP state out of
                            // ESTABLISHED, takes the session off this
                            // node's fast path now (imports are not
                            // exported, so the tee hears it only here).
                            if op == ReplicaOp::Delete
                                || record.tcp_state.is_some_and(|s| s != TcpState::Established)
                            {
                                tee(ReplicaOp::Delete, &record);
                            }
                        }
                        Err(ImportError::NotNat64) => return applied,
                        Err(_) => refused += 1,
                    }
                }
                Inbound::SnapshotBegin { peer } => {
                    // The peer's new mark: its sweep against the previous
                    // one must stop (other peers' sweeps go on).
                    if let Some(p) = self.peer_index(peer) {
                        self.sweeps[p] = None;
                    }
                    t.replica_snapshot_begin(peer);
                }
                Inbound::SnapshotEnd { peer } => {
                    if let Some(p) = self.peer_index(peer) {
                        self.sweeps[p] = Some(0);
                    }
                }
                Inbound::StopAllocating => t.set_own_pool4_shards(Some(&[])),
                Inbound::Liveness { peer, up } => t.set_peer_up(peer, up),
            }
        }
        c.imported.fetch_add(applied as u64, Relaxed);
        c.import_refused.fetch_add(refused, Relaxed);
        self.sweep_some(t, now_ns);
        applied
    }

    /// Whether the last [`WorkerEnds::exchange`] left work for the next
    /// round: its whole budget was used, or a sweep is under way.
    pub fn more_to_do(&self) -> bool {
        self.backlog || self.sweeps.iter().any(Option::is_some)
    }

    fn peer_index(&self, peer: u16) -> Option<usize> {
        self.peer_shards.iter().position(|(id, _)| *id == peer)
    }

    /// One chunk of each sweep under way after a peer's snapshot (all of the
    /// peer's shards in one pass over the slab).
    fn sweep_some(&mut self, t: &mut Translator, now_ns: u64) {
        for (p, sweep) in self.sweeps.iter_mut().enumerate() {
            let Some(from) = *sweep else {
                continue;
            };
            let peer = self.peer_shards[p].0;
            let (next, removed) = t.replica_sweep(peer, from, SWEEP_BUDGET, now_ns);
            self.counters.swept.fetch_add(removed, Relaxed);
            *sweep = next;
        }
    }
}

#[cfg(test)]
mod tests;
