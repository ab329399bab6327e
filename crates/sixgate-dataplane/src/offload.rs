//! A worker's NAT64 sessions on an in-kernel fast path (docs/fastpath.md,
//! "NAT64 established sessions"). The worker stays the only RFC 6146
//! authority; a data plane that has a fast path gives each worker a
//! [`SessionOffload`], which the loop feeds, between batches, with the
//! translator's exported table changes (the same records state sync sends)
//! and lets look, once per tick, at what the fast path saw. Without one the
//! loop does nothing more than before.

use sixgate_core::nat64::{Replica, ReplicaOp};
use sixgate_core::{Config, Translator};

/// Entries of the translator's change ring when only a fast path reads it
/// (drained after every batch and tick; an overflow only leaves sessions on
/// the slow path, and a lost delete is caught by the offload's scan).
pub const OFFLOAD_RING: usize = 4096;

/// What a worker's fast-path companion does.
pub trait SessionOffload: Send {
    /// A change of the worker's NAT64 tables: install a settled session,
    /// remove a deleted or unsettled one.
    fn change(&mut self, op: ReplicaOp, r: &Replica);

    /// After a batch's changes: write what [`SessionOffload::change`]
    /// queued (one run of map calls, not one per session).
    fn flush(&mut self);

    /// Once per tick, before the translator's timers: bounded work that
    /// hands the translator the sessions the fast path saw, so they do not
    /// expire, and drops entries the translator no longer has.
    fn tick(&mut self, t: &mut Translator, now_ns: u64);

    /// A new configuration is in force in the worker.
    fn reconfigure(&mut self, cfg: &Config);
}
