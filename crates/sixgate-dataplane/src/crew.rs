//! A gateway's workers as one: their counters, how they are stopped (a flag
//! and a pipe whose hang-up wakes every sleeping worker), how a failed one
//! wakes the gateway ([`Signals`]), and their threads. Every live data plane
//! starts, waits for, stops and reports its workers through one.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::live::Follower;
use crate::replica::{SyncEnds, WorkerEnds, replica_rings};
use crate::signals::{Signals, pipe};
use crate::stats::{self, Snapshot, StatsHandle, WorkerStats};
use crate::worker::{PacketIo, Worker, WorkerSync};
use crate::{Report, Stop};

/// The workers of one gateway.
pub struct Crew {
    stats: Vec<Arc<WorkerStats>>,
    stop_flag: Arc<AtomicBool>,
    stop_rd: Arc<OwnedFd>,
    stop_wr: Option<OwnedFd>,
    signals: Signals,
    threads: Vec<JoinHandle<Result<(), String>>>,
    /// `[sync]`: the workers' ring ends not handed out yet, and the sync
    /// thread's ([`Crew::take_sync_ends`]).
    sync: Mutex<SyncSlots>,
    /// `[nat64] event_log`: the workers' event rings not handed out yet, and
    /// the exporter's ([`Crew::take_event_rings`]).
    events: Mutex<EventSlots>,
    /// The workers' clock (`now_ns` 0).
    epoch: std::time::Instant,
    /// `[daemon] state_file`: the tables restored into the workers as they
    /// are made, and written when they stop (docs/restart.md).
    restart: Mutex<Option<crate::restart::Restart>>,
}

#[derive(Default)]
struct EventSlots {
    created: bool,
    workers: Vec<Option<crate::event_export::WorkerEvents>>,
    exporter: Option<Vec<crate::spsc::Consumer<sixgate_core::nat64::Event>>>,
}

/// Entries of each ring between a worker and the sync thread, and of the
/// translator's own change ring: a burst of new sessions the sync thread has
/// not drained yet (some milliseconds of a busy worker) fits.
pub const SYNC_RING: usize = 65536;

#[derive(Default)]
struct SyncSlots {
    created: bool,
    workers: Vec<Option<WorkerEnds>>,
    link: Option<Vec<SyncEnds>>,
}

impl Crew {
    /// Counters for `n` workers, and the means to stop them; `signals` are
    /// what [`Crew::wait`] waits on.
    pub fn new(signals: Signals, n: usize) -> Result<Crew, String> {
        let (stop_rd, stop_wr) = pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
        Ok(Crew {
            stats: (0..n).map(|_| Arc::default()).collect(),
            stop_flag: Arc::new(AtomicBool::new(false)),
            stop_rd: Arc::new(stop_rd),
            stop_wr: Some(stop_wr),
            signals,
            threads: Vec::with_capacity(n),
            sync: Mutex::default(),
            events: Mutex::default(),
            epoch: std::time::Instant::now(),
            restart: Mutex::new(None),
        })
    }

    /// Each worker's counters, for [`crate::Live::new`].
    pub fn stats(&self) -> &[Arc<WorkerStats>] {
        &self.stats
    }

    /// Worker `index`, not started yet: `io` is its packet I/O, `follower`
    /// its end of the control plane's channel. With `[daemon] state_file`
    /// its share of the sessions the last run left is in its tables before
    /// it forwards anything (docs/restart.md).
    pub fn worker<P: PacketIo>(
        &self,
        index: usize,
        cpu: Option<usize>,
        mut io: P,
        follower: Follower,
        plan: &crate::Plan,
    ) -> Result<Worker<P>, String> {
        let (save, restored) = match &plan.state_file {
            Some(path) if plan.config.nat64.is_some() => {
                let mut slot = self.restart.lock().unwrap_or_else(|p| p.into_inner());
                let r = slot.get_or_insert_with(|| {
                    crate::restart::Restart::new(path.clone(), self.stats.len(), plan.sync.clone())
                });
                let now_ns = self.epoch.elapsed().as_nanos() as u64;
                let restored = r.restore(index, io.translator_mut(), now_ns);
                (Some(r.save_slot(index)), restored)
            }
            _ => (None, Vec::new()),
        };
        Ok(Worker {
            index,
            cpu,
            io,
            stats: self.stats[index].clone(),
            stop: self.stop_flag.clone(),
            stop_fd: self.stop_rd.clone(),
            wake: self.signals.waker().map_err(|e| e.to_string())?,
            failure: self.signals.failure(),
            stateful: plan.stateful,
            events: plan.event_log.then(|| self.event_ring(index)).flatten(),
            epoch: self.epoch,
            follower,
            sync: plan.sync.as_ref().and_then(|s| self.sync_ends(index, s)),
            offload: None,
            save,
            restored,
        })
    }

    /// Worker `index`'s sync ends; every worker's rings are made at the first
    /// call, so that the data planes need not know about sync.
    fn sync_ends(&self, index: usize, s: &sixgate_config::SyncSettings) -> Option<WorkerSync> {
        let mut slots = self.sync.lock().unwrap_or_else(|p| p.into_inner());
        if !slots.created {
            let peer_shards: Vec<_> = s
                .shards
                .iter()
                .filter(|sh| sh.node_id != s.node_id)
                .map(|sh| (sh.node_id, sh.pool4.clone()))
                .collect();
            // Without an eventfd the sync thread polls every 1 ms instead.
            let bell = match crate::doorbell::Doorbell::new() {
                Ok(b) => Some(Arc::new(b)),
                Err(e) => {
                    tracing::warn!("sync: no doorbell for the sync thread ({e}): it polls");
                    None
                }
            };
            let (workers, link) = (0..self.stats.len())
                .map(|_| {
                    let (mut w, mut l) = replica_rings(SYNC_RING, peer_shards.clone());
                    w.bell = bell.clone();
                    l.bell = bell.clone();
                    (Some(w), l)
                })
                .unzip();
            *slots = SyncSlots {
                created: true,
                workers,
                link: Some(link),
            };
        }
        let ends = slots.workers.get_mut(index)?.take()?;
        Some(WorkerSync {
            ends,
            own_shards: s
                .shards
                .iter()
                .filter(|sh| sh.node_id == s.node_id)
                .flat_map(|sh| sh.pool4.iter().copied())
                .collect(),
            deterministic_share: s.rank(),
            export_capacity: SYNC_RING,
        })
    }

    /// Worker `index`'s event ring; every worker's are made at the first call.
    fn event_ring(&self, index: usize) -> Option<crate::event_export::WorkerEvents> {
        let mut slots = self.events.lock().unwrap_or_else(|p| p.into_inner());
        if !slots.created {
            let (workers, exporter) = crate::event_export::event_rings(self.stats.len());
            *slots = EventSlots {
                created: true,
                workers: workers.into_iter().map(Some).collect(),
                exporter: Some(exporter),
            };
        }
        slots.workers.get_mut(index)?.take()
    }

    /// The exporter's ends of every worker's event ring, once the workers
    /// are made (`None` when the event log is off, or taken already).
    pub fn take_event_rings(
        &self,
    ) -> Option<Vec<crate::spsc::Consumer<sixgate_core::nat64::Event>>> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .exporter
            .take()
    }

    /// The workers' clock: their `now_ns` counts from it.
    pub fn epoch(&self) -> std::time::Instant {
        self.epoch
    }

    /// The sync thread's ends of every worker's rings, in worker order, once
    /// the workers are made (`None` without `[sync]`, or taken already).
    pub fn take_sync_ends(&self) -> Option<Vec<SyncEnds>> {
        self.sync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .link
            .take()
    }

    /// Start `w` on a thread of its own, named `name`.
    pub fn spawn<P: PacketIo + Send + 'static>(
        &mut self,
        name: String,
        w: Worker<P>,
    ) -> std::io::Result<()> {
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || w.run())?;
        self.threads.push(h);
        Ok(())
    }

    /// Block until SIGINT/SIGTERM or a worker failure.
    pub fn wait(&self) -> Stop {
        self.signals.wait()
    }

    /// All workers' counters, summed, as last published.
    pub fn snapshot(&self) -> Snapshot {
        stats::sum(&self.stats)
    }

    /// Each worker's counters, as last published, in worker order.
    pub fn worker_snapshots(&self) -> Vec<Snapshot> {
        stats::each(&self.stats)
    }

    /// A reader of the workers' counters for another thread (metrics, API).
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle::new(self.stats.iter().cloned().collect())
    }

    /// Tell every worker to stop (the flag, and the pipe's hang-up for those
    /// asleep); [`Crew::join`] waits for them.
    pub fn halt(&mut self) {
        self.stop_flag.store(true, Relaxed);
        drop(self.stop_wr.take());
    }

    /// Stop the workers and wait for them; `errors` gets their failures.
    /// With `[daemon] state_file` their tables are then written to it.
    pub fn join(&mut self, errors: &mut Vec<String>) {
        self.halt();
        for (i, h) in self.threads.drain(..).enumerate() {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(e),
                Err(_) => errors.push(format!("worker {i} panicked")),
            }
        }
        let restart = self
            .restart
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(r) = restart {
            r.write();
        }
    }

    /// What the run ended with: the counters and `errors`.
    pub fn report(&self, errors: Vec<String>) -> Report {
        Report {
            totals: self.snapshot(),
            workers: self.worker_snapshots(),
            errors,
            fast_path: None,
        }
    }
}
