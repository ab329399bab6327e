//! One worker's NAT64 sessions on the fast path (docs/fastpath.md, "NAT64
//! established sessions"): it follows the worker's exported table changes
//! (`Translator::drain_replica_changes`) and keeps the program's maps in
//! step with the core, the only RFC 6146 authority:
//!
//! - a session the core settled (TCP ESTABLISHED; UDP or ICMP query at its
//!   third packet, `ReplicaOp::Settled`) is installed, both directions
//!   (`sixgate_core::fastpath::nat64::entries`);
//! - a session the core deleted, or that left ESTABLISHED, is removed;
//! - before the core would expire a session it never sees packets of, a
//!   bounded scan per tick reads the entries' last-seen and, when the
//!   program saw the session since, refreshes it in the core
//!   (`Translator::nat64_fast_path_seen`); an entry whose session the core
//!   no longer has (its delete record was lost to a full ring) goes too.
//!
//! The records are kept in a slab allocated once, at the maps' share of this
//! worker; no allocation per change. Installs and removes are queued and
//! written at [`Offload::flush`] (the worker calls it after each batch's
//! changes, and every tick), a run of them at a time in batch calls
//! (`Nat64Maps::install_all`, `remove_all`): a system call per run per map,
//! not two per session, which new-session-heavy traffic pays for every
//! session.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use sixgate_core::fastpath::nat64::{Entries, entries};
use sixgate_core::nat64::{Proto, Replica, ReplicaOp};
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
    /// Where its install waits in the queue, until [`Offload::flush`].
    queued: Option<u32>,
}

/// A map write waiting for [`Offload::flush`].
enum Queued {
    /// Install the session of this slot.
    Install(u32),
    /// Remove these entries.
    Remove(Entries),
    /// An install whose session went before the flush.
    Void,
}

/// Least records looked at per tick; more when there are many, so that a
/// whole round takes at most [`round_ticks`] ticks.
pub const SCAN_BUDGET: usize = 256;
/// Most map writes queued before a flush is forced.
pub const QUEUE_MAX: usize = 256;
/// Ticks per second (`sixgate_dataplane::TICK_NS`, 100 ms).
const TICKS_PER_S: u64 = 10;

/// Ticks a whole round of the scan takes at most: a quarter of the shortest
/// lifetime an installed session can have (UDP, ICMP query, TCP
/// established; RFC 6146 §3.5), so a session whose packets all take the
/// fast path is refreshed in the core at least three times before it would
/// expire there, and outlives its last packet by at most a quarter of its
/// lifetime. Defaults: the ICMP query's 60 s, so 15 s (150 ticks).
pub fn round_ticks(cfg: &Config) -> usize {
    let shortest = cfg.nat64.as_ref().map_or(60, |n| {
        let t = &n.timeouts;
        t.udp.min(t.icmp).min(t.tcp_established)
    });
    (u64::from(shortest) * TICKS_PER_S / 4).max(1) as usize
}

/// One worker's installed sessions and its handle on the maps.
pub struct Offload {
    maps: Nat64Maps,
    cfg: Arc<Config>,
    slots: Vec<Option<Installed>>,
    free: Vec<u32>,
    by_id: HashMap<Id, u32>,
    cursor: usize,
    cap: usize,
    round: usize,
    queue: Vec<Queued>,
    /// Scratch of a flush's run (kept: no allocation per flush).
    run: Vec<Entries>,
    run_slots: Vec<u32>,
}

impl Offload {
    /// For one worker: `cap` sessions at most (its share of the maps).
    pub fn new(maps: Nat64Maps, cfg: Arc<Config>, cap: usize) -> Offload {
        Offload {
            maps,
            round: round_ticks(&cfg),
            cfg,
            slots: Vec::with_capacity(cap),
            free: Vec::with_capacity(cap),
            by_id: HashMap::with_capacity(cap),
            cursor: 0,
            cap,
            queue: Vec::with_capacity(QUEUE_MAX),
            run: Vec::with_capacity(QUEUE_MAX),
            run_slots: Vec::with_capacity(QUEUE_MAX),
        }
    }

    /// Sessions installed now (or queued to be, until the next flush).
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
        self.round = round_ticks(cfg);
        for i in 0..self.slots.len() {
            let stale = self.slots[i]
                .as_ref()
                .is_some_and(|rec| entries(&self.cfg, &rec.r).is_none_or(|e| e != rec.e));
            if stale {
                self.drop_slot(i);
            }
        }
        self.flush();
    }

    /// Remove every entry (after a configuration change). Not at exit: the
    /// maps go with the program, unless the program was handed over to the
    /// next start (docs/restart.md, "With the fast path"), which needs
    /// them whole.
    pub fn clear(&mut self) {
        for i in 0..self.slots.len() {
            self.drop_slot(i);
        }
        self.flush();
    }

    /// One exported change of the worker's tables (written to the maps at
    /// the next [`Offload::flush`]).
    pub fn change(&mut self, op: ReplicaOp, r: &Replica) {
        let k = id(r);
        let want = match op {
            ReplicaOp::Upsert | ReplicaOp::Settled => entries(&self.cfg, r),
            ReplicaOp::Delete => None,
        };
        // Installed when settled: TCP at ESTABLISHED (an upsert), UDP and
        // ICMP query at their third packet (`ReplicaOp::Settled`), so that
        // one-packet and request-reply sessions never cost map writes.
        let settles = op == ReplicaOp::Settled || r.proto == Proto::Tcp;
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
            (None, Some(_)) if !settles => {} // a refresh before it settled
            (None, Some(e)) => {
                if self.by_id.len() >= self.cap {
                    self.maps.counters.map_full.fetch_add(1, Relaxed);
                    return;
                }
                if self.queue.len() >= QUEUE_MAX {
                    self.flush();
                }
                let rec = Installed {
                    r: *r,
                    e,
                    seen: 0,
                    queued: Some(self.queue.len() as u32),
                };
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
                self.queue.push(Queued::Install(i));
            }
            (None, None) => {}
        }
    }

    fn drop_slot(&mut self, i: usize) {
        if let Some(rec) = self.slots.get_mut(i).and_then(Option::take) {
            match rec.queued {
                // Never written: nothing to remove.
                Some(q) => self.queue[q as usize] = Queued::Void,
                None => {
                    if self.queue.len() >= QUEUE_MAX {
                        self.flush();
                    }
                    self.queue.push(Queued::Remove(rec.e));
                }
            }
            self.by_id.remove(&id(&rec.r));
            self.free.push(i as u32);
        }
    }

    /// Write the queued installs and removes to the maps, in their order, a
    /// run of one kind at a time. An install that fails (a full map,
    /// another error; counted) leaves its session on the slow path, as if
    /// it had never been installed.
    pub fn flush(&mut self) {
        let mut at = 0;
        while at < self.queue.len() {
            let install = match self.queue[at] {
                Queued::Void => {
                    at += 1;
                    continue;
                }
                Queued::Install(_) => true,
                Queued::Remove(_) => false,
            };
            self.run.clear();
            self.run_slots.clear();
            while at < self.queue.len() {
                match &self.queue[at] {
                    Queued::Void => {}
                    Queued::Install(i) if install => {
                        let rec = self.slots[*i as usize].as_mut().expect("queued slot");
                        rec.queued = None;
                        self.run.push(rec.e);
                        self.run_slots.push(*i);
                    }
                    Queued::Remove(e) if !install => self.run.push(*e),
                    _ => break,
                }
                at += 1;
            }
            if install {
                let Offload {
                    maps,
                    run,
                    run_slots,
                    slots,
                    by_id,
                    free,
                    ..
                } = self;
                maps.install_all(run, &mut |k, r| {
                    if r.is_err() {
                        let i = run_slots[k];
                        if let Some(rec) = slots[i as usize].take() {
                            by_id.remove(&id(&rec.r));
                            free.push(i);
                        }
                    }
                });
            } else {
                self.maps.remove_all(&self.run);
            }
        }
        self.queue.clear();
    }

    /// Per tick: look at a bounded share of the installed sessions; hand the
    /// core those the program saw since the last look, and drop those the
    /// core no longer has in a state the program may carry.
    pub fn tick(&mut self, t: &mut Translator, now_ns: u64) {
        self.flush();
        let n = self.slots.len();
        if n == 0 {
            return;
        }
        let budget = SCAN_BUDGET.max(n.div_ceil(self.round)).min(n);
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
        self.flush();
    }
}
