//! A worker's side of NAT64 state sync (docs/ha.md, "Workers, rings, sole
//! writers"): between batches it moves its translator's exported changes into
//! its export ring, and applies at most a budget of records from its import
//! ring, as the sole writer of its tables. The sync thread holds the other
//! ends ([`SyncEnds`]). Not yet started by the daemon (docs/ha.md, "Status").

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use sixgate_core::Translator;
use sixgate_core::nat64::{ImportError, Replica, ReplicaOp};

use crate::spsc::{Consumer, Producer, ring};

/// One change or record.
pub type Change = (ReplicaOp, Replica);

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
}

/// The worker's ends.
pub struct WorkerEnds {
    export: Producer<Change>,
    import: Consumer<Change>,
    /// Shared with the sync thread.
    pub counters: Arc<ReplicaCounters>,
    lost_seen: u64,
}

/// The sync thread's ends.
pub struct SyncEnds {
    /// Changes of this worker's tables, oldest first.
    pub export: Consumer<Change>,
    /// Records for this worker's tables.
    pub import: Producer<Change>,
    /// Shared with the worker.
    pub counters: Arc<ReplicaCounters>,
}

/// Default records a worker applies per round: bounded work between batches,
/// like the timers' sweep budget.
pub const IMPORT_BUDGET: usize = 256;

/// The rings of one worker, `capacity` records each, allocated now.
pub fn replica_rings(capacity: usize) -> (WorkerEnds, SyncEnds) {
    let (ep, ec) = ring(capacity);
    let (ip, ic) = ring(capacity);
    let counters = Arc::new(ReplicaCounters::default());
    (
        WorkerEnds {
            export: ep,
            import: ic,
            counters: counters.clone(),
            lost_seen: 0,
        },
        SyncEnds {
            export: ec,
            import: ip,
            counters,
        },
    )
}

impl WorkerEnds {
    /// Between batches: this worker's changes into the export ring, then at
    /// most `budget` records from the import ring into its tables. Returns
    /// the records applied.
    pub fn exchange(&mut self, t: &mut Translator, now_ns: u64, budget: usize) -> usize {
        let (mut exported, mut lost) = (0, 0);
        let export = &mut self.export;
        t.drain_replica_changes(|op, r| {
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
        let mut applied = 0;
        let mut refused = 0;
        for _ in 0..budget {
            let Some((op, r)) = self.import.pop() else {
                break;
            };
            match t.import_replica(op, &r, now_ns) {
                Ok(()) => applied += 1,
                Err(ImportError::NotNat64) => return applied,
                Err(_) => refused += 1,
            }
        }
        c.imported.fetch_add(applied as u64, Relaxed);
        c.import_refused.fetch_add(refused, Relaxed);
        applied
    }
}

#[cfg(test)]
mod tests;
