//! One worker's NAT64 sessions on the fast path (docs/fastpath.md, "NAT64
//! established sessions"): it follows the worker's exported table changes
//! (`Translator::drain_replica_changes`) and keeps the program's maps in
//! step with the core, the only RFC 6146 authority:
//!
//! - a session the core settled (`sixgate_core::fastpath::nat64::entries`:
//!   TCP ESTABLISHED, UDP, ICMP query) is installed, both directions;
//! - a session the core deleted, or that left ESTABLISHED, is removed;
//! - before the core would expire a session it never sees packets of, a
//!   bounded scan per tick reads the entries' last-seen and, when the
//!   program saw the session since, refreshes it in the core
//!   (`Translator::nat64_fast_path_seen`); an entry whose session the core
//!   no longer has (its delete record was lost to a full ring) goes too.
//!
//! The records are kept in a slab allocated once, at the maps' share of this
//! worker; no allocation per change.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use sixgate_core::fastpath::nat64::{Entries, entries};
use sixgate_core::nat64::{Replica, ReplicaOp};
use sixgate_core::{Config, Translator};

use crate::Nat64Maps;

/// A session by its pool4 transport address and remote (protocol number,
/// pool4 address, pool4 port, remote address, remote port).
type Id = (u8, u32, u16, u32, u16);

fn id(r: &Replica) -> Id {
    (
        r.proto as u8,
        u32::from(r.v4),
        r.port4,
        u32::from(r.remote4),
        r.rport,
    )
}

struct Installed {
    r: Replica,
    e: Entries,
    /// The last-seen already handed to the core.
    seen: u64,
}

/// Least records looked at per tick; more when there are many, so that a
/// whole round takes at most [`ROUND_TICKS`] ticks (3.2 s at 100 ms), well
/// within the shortest lifetime.
pub const SCAN_BUDGET: usize = 256;
/// Ticks a whole round of the scan takes at most.
pub const ROUND_TICKS: usize = 32;

/// One worker's installed sessions and its handle on the maps.
pub struct Offload {
    maps: Nat64Maps,
    cfg: Arc<Config>,
    slots: Vec<Option<Installed>>,
    free: Vec<u32>,
    by_id: HashMap<Id, u32>,
    cursor: usize,
    cap: usize,
}

impl Offload {
    /// For one worker: `cap` sessions at most (its share of the maps).
    pub fn new(maps: Nat64Maps, cfg: Arc<Config>, cap: usize) -> Offload {
        Offload {
            maps,
            cfg,
            slots: Vec::with_capacity(cap),
            free: Vec::with_capacity(cap),
            by_id: HashMap::with_capacity(cap),
            cursor: 0,
            cap,
        }
    }

    /// Sessions installed now.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Is session `r` installed?
    pub fn contains(&self, r: &Replica) -> bool {
        self.by_id.contains_key(&id(r))
    }

    /// None installed.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// A new configuration (pool6, EAM or pool4 may have changed): each
    /// installed session is made again under it, and whatever no longer
    /// comes out the same (or not at all, e.g. a remote now in pool4) goes.
    pub fn reconfigure(&mut self, cfg: &Config) {
        self.cfg = Arc::new(cfg.clone());
        for i in 0..self.slots.len() {
            let stale = self.slots[i]
                .as_ref()
                .is_some_and(|rec| entries(&self.cfg, &rec.r).is_none_or(|e| e != rec.e));
            if stale {
                self.drop_slot(i);
            }
        }
    }

    /// Remove every entry (at exit, or after a configuration change).
    pub fn clear(&mut self) {
        for i in 0..self.slots.len() {
            self.drop_slot(i);
        }
    }

    /// One exported change of the worker's tables.
    pub fn change(&mut self, op: ReplicaOp, r: &Replica) {
        let k = id(r);
        let want = match op {
            ReplicaOp::Upsert => entries(&self.cfg, r),
            ReplicaOp::Delete => None,
        };
        let mut had = self.by_id.get(&k).copied();
        if let (Some(i), Some(e)) = (had, want.as_ref())
            && self.slots[i as usize]
                .as_ref()
                .is_some_and(|rec| rec.e != *e)
        {
            // Another session on the same pool4 transport address and
            // remote (the delete of the old one was lost): not its entries.
            self.drop_slot(i as usize);
            had = None;
        }
        match (had, want) {
            (Some(_), Some(_)) => {} // a refresh or the same state
            (Some(i), None) => self.drop_slot(i as usize),
            (None, Some(e)) => {
                if self.by_id.len() >= self.cap {
                    self.maps.counters.map_full.fetch_add(1, Relaxed);
                    return;
                }
                if self.maps.install(&e).is_err() {
                    return; // counted; the session stays on the slow path
                }
                let rec = Installed { r: *r, e, seen: 0 };
                let i = match self.free.pop() {
                    Some(i) => {
                        self.slots[i as usize] = Some(rec);
                        i
                    }
                    None => {
                        self.slots.push(Some(rec));
                        (self.slots.len() - 1) as u32
                    }
                };
                self.by_id.insert(k, i);
            }
            (None, None) => {}
        }
    }

    fn drop_slot(&mut self, i: usize) {
        if let Some(rec) = self.slots.get_mut(i).and_then(Option::take) {
            self.maps.remove(&rec.e);
            self.by_id.remove(&id(&rec.r));
            self.free.push(i as u32);
        }
    }

    /// Per tick: look at a bounded share of the installed sessions; hand the
    /// core those the program saw since the last look, and drop those the
    /// core no longer has in a state the program may carry.
    pub fn tick(&mut self, t: &mut Translator, now_ns: u64) {
        let n = self.slots.len();
        if n == 0 {
            return;
        }
        let budget = SCAN_BUDGET.max(n.div_ceil(ROUND_TICKS)).min(n);
        for _ in 0..budget {
            let i = self.cursor % n;
            self.cursor = (i + 1) % n;
            let Some(rec) = self.slots[i].as_mut() else {
                continue;
            };
            let keep = match self.maps.last_seen(&rec.e) {
                None => false,
                Some(seen) if seen > rec.seen => {
                    rec.seen = seen;
                    let alive = t.nat64_fast_path_seen(&rec.r, now_ns);
                    if alive {
                        self.maps.counters.refreshed.fetch_add(1, Relaxed);
                    }
                    alive
                }
                Some(_) => t.nat64_fast_path_alive(&rec.r),
            };
            if !keep {
                self.drop_slot(i);
            }
        }
    }
}

impl Drop for Offload {
    fn drop(&mut self) {
        self.clear();
    }
}
