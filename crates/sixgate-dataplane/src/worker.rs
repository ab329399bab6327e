//! The worker loop every live data plane runs, one thread per queue and CPU,
//! generic over the data plane's packet I/O ([`PacketIo`]): monomorphised, so
//! the packet path has no indirect call.
//!
//! Each round: the translator's timers when due (stateful modes, every
//! [`TICK_NS`]; RFC 6146 session expiry, held SYNs), with the NAT64 event log
//! and table sizes; a new configuration or a control-plane question
//! ([`Follower`]); one batch of packets received, translated and sent
//! ([`PacketIo::batch`]); the counters published; then, when the batch found
//! nothing, a sleep in `poll` on the data plane's descriptors, the stop pipe
//! and the control plane's wake-up.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::IoCounters;
use crate::live::{Follower, Follows};
use crate::offload::{OFFLOAD_RING, SessionOffload};
use crate::replica::{IMPORT_BUDGET, WorkerEnds};
use crate::stats::WorkerStats;
use sixgate_core::nat64::{Replica, ReplicaOp};

/// Longest time between two calls of [`sixgate_core::Translator::tick`]
/// (docs/architecture.md: at least every 100 ms).
pub const TICK_NS: u64 = 100_000_000;

/// Longest sleep in a stateful mode: the timers' period.
pub const TICK_MS: i32 = (TICK_NS / 1_000_000) as i32;

/// A data plane's packet I/O, as the worker loop drives it. Its translator is
/// reached through [`Follows`] (timers, events, counters, runtime changes).
pub trait PacketIo: Follows {
    /// Once, before the first round.
    fn start(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Receive one batch, translate it and send what comes out. True when it
    /// found packets (more may be waiting: no sleep); an error ends the worker.
    fn batch(&mut self, now_ns: u64) -> Result<bool, String>;

    /// Run the translator's timers until they are done and send the packets
    /// they leave (an ICMPv4 Port Unreachable for a held SYN, RFC 6146
    /// §3.5.2.2; with sync, packets held for a peer's record that came,
    /// docs/ha.md: the loop also calls it then, between batches).
    fn tick(&mut self, now_ns: u64);

    /// The I/O counters to publish.
    fn io_counters(&self) -> &IoCounters;

    /// Before a sleep: the descriptors to wake on (negative: none) and the
    /// longest sleep (`None`: until woken, or [`TICK_MS`] in a stateful
    /// mode). `None` instead of a sleep: something is waiting already.
    fn sleep(&mut self) -> Option<Sleep>;

    /// After a sleep: what `poll` said of [`Sleep::fds`].
    fn woke(&mut self, _revents: [i16; 3]) -> Result<(), String> {
        Ok(())
    }

    /// Once, after the last round (what the data plane reports at exit).
    fn finish(&mut self, _index: usize) {}
}

/// What a worker sleeps on besides the stop pipe and the control plane.
pub struct Sleep {
    /// The data plane's descriptors (sockets, queues, doorbells); -1 for none.
    pub fds: [RawFd; 3],
    /// Longest sleep in milliseconds; `None`: the loop decides.
    pub timeout_ms: Option<i32>,
}

/// One worker: its packet I/O and what it shares with the gateway.
pub struct Worker<P> {
    pub index: usize,
    pub cpu: Option<usize>,
    pub io: P,
    pub stats: Arc<WorkerStats>,
    /// Set by the gateway to stop.
    pub stop: Arc<AtomicBool>,
    /// Read end of the stop pipe: hangs up when the gateway closes the write end.
    pub stop_fd: Arc<OwnedFd>,
    /// Tells the gateway that this worker failed.
    pub wake: UnixStream,
    /// Why a worker failed (first failure wins).
    pub failure: Arc<Mutex<Option<String>>>,
    /// Stateful (NAT64, a MAP-T CE's NAPT44): the timers run.
    pub stateful: bool,
    /// NAT64 events (`[nat64] event_log`): its ring to the exporter thread
    /// (docs/logging.md); `None`: the log is off.
    pub events: Option<crate::event_export::WorkerEvents>,
    /// The gateway's clock: every worker's `now_ns` counts from it, so the
    /// exporter reads the workers' event times alike.
    pub epoch: Instant,
    /// New configurations and questions from the control plane.
    pub follower: Follower,
    /// NAT64 state sync (`[sync]`): `None` when it is off, and then the loop
    /// does nothing more than before.
    pub sync: Option<WorkerSync>,
    /// NAT64 sessions on an in-kernel fast path (docs/fastpath.md), set by
    /// the data plane after [`crate::Crew::worker`]; `None`: none.
    pub offload: Option<Box<dyn SessionOffload>>,
    /// `[daemon] state_file` (NAT64): where its tables go when it stops
    /// (docs/restart.md); `None`: nowhere.
    pub save: Option<crate::restart::SaveSlot>,
    /// The sessions restored into its tables from the state file: handed to
    /// the fast-path offload at start, as settled, so that established flows
    /// go back into the kernel before their first packet.
    pub restored: Vec<Replica>,
}

/// A worker's part of NAT64 state sync (docs/ha.md, "Workers, rings, sole
/// writers").
pub struct WorkerSync {
    /// Its ends of the rings to and from the sync thread.
    pub ends: WorkerEnds,
    /// This node's pool4 shards: new mappings only there.
    pub own_shards: Vec<(std::net::Ipv4Addr, u8)>,
    /// This node's rank among the group's nodes, and their number: its share
    /// of each RFC 7422 deterministic block.
    pub deterministic_share: (u16, u16),
    /// Capacity of the translator's own change ring.
    pub export_capacity: usize,
}

impl<P: PacketIo> Worker<P> {
    /// The thread body.
    pub fn run(mut self) -> Result<(), String> {
        if let Some(cpu) = self.cpu
            && let Err(e) = crate::system::pin_current_thread(cpu)
        {
            tracing::warn!(
                worker = self.index,
                cpu,
                "cannot pin worker to its CPU: {e}"
            );
        }
        let result = self.run_loop();
        // Stopped: nothing is forwarded any more, so the walk stalls no one.
        if result.is_ok()
            && let Some(s) = &self.save
        {
            s.save(self.io.translator(), self.epoch.elapsed().as_nanos() as u64);
        }
        self.publish();
        self.io.finish(self.index);
        if let Err(e) = &result {
            let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            f.get_or_insert_with(|| e.clone());
            drop(f);
            let _ = self.wake.write_all(&[1]);
        }
        result
    }

    /// Sessions restored from the state file (docs/restart.md) were settled
    /// when they were saved: into the fast path now, before their first
    /// packet, rather than when that packet's refresh is exported (an import
    /// is not exported). Done when the thread starts, or earlier by the data
    /// plane, on its own thread, once [`Worker::offload`] is set (the TUN
    /// plane, before it takes over a handed-over fast path).
    pub fn settle_restored(&mut self) {
        let restored = std::mem::take(&mut self.restored);
        if let Some(o) = self.offload.as_mut()
            && !restored.is_empty()
        {
            for r in &restored {
                o.change(ReplicaOp::Settled, r);
            }
            o.flush();
        }
    }

    fn publish(&self) {
        self.stats
            .publish(self.io.translator().counters(), self.io.io_counters());
    }

    fn run_loop(&mut self) -> Result<(), String> {
        let start = self.epoch;
        let mut next_tick = 0u64;
        self.io.start()?;
        if let Some(s) = &self.sync {
            let t = self.io.translator_mut();
            t.enable_replica_export(s.export_capacity);
            t.set_own_pool4_shards(Some(&s.own_shards));
            let (rank, nodes) = s.deterministic_share;
            t.set_deterministic_share(rank, nodes);
        } else if self.offload.is_some() {
            // The fast path follows the same change records.
            self.io.translator_mut().enable_replica_export(OFFLOAD_RING);
        }
        self.settle_restored();
        loop {
            let now_ns = start.elapsed().as_nanos() as u64;
            if self.stateful && now_ns >= next_tick {
                self.tick(now_ns);
                next_tick = now_ns + TICK_NS;
            }
            if self.follower.changed() {
                let before: *const _ = self.io.translator().config();
                self.follower.follow(&mut self.io, now_ns);
                // A new configuration, not a question from the control plane.
                let cfg = self.io.translator().config();
                if let Some(o) = self.offload.as_mut()
                    && !std::ptr::eq(before, cfg)
                {
                    o.reconfigure(cfg);
                }
            }
            let busy = self.io.batch(now_ns)?;
            // Per batch, never per packet: one branch when sync is off.
            let more = self.exchange(now_ns);
            if let Some(ev) = self.events.as_mut() {
                ev.drain(self.io.translator_mut());
            }
            self.publish();
            if self.stop.load(Relaxed) {
                return Ok(());
            }
            if !busy && !more && self.sleep()? {
                return Ok(());
            }
        }
    }

    /// The translator's timers, then the NAT64 event log and table sizes (a
    /// MAP-T CE's NAPT44 keeps NAT64's tables).
    fn tick(&mut self, now_ns: u64) {
        // What the fast path saw first, so that it does not expire now.
        if let Some(o) = self.offload.as_mut() {
            o.tick(self.io.translator_mut(), now_ns);
        }
        self.io.tick(now_ns);
        // What is left goes on after the next batch.
        let _ = self.exchange(now_ns);
        self.follower.after_tick(self.io.translator());
        let t = self.io.translator_mut();
        match self.events.as_mut() {
            Some(ev) => ev.drain(t),
            // A log turned on by a reload has no ring (nor exporter): the
            // events go nowhere, as before the reload.
            None => t.drain_events(|_| {}),
        }
        self.stats.publish_nat64(if t.config().nat64.is_some() {
            t.nat64_stats()
        } else {
            t.napt44_stats()
        });
    }

    /// With sync: this worker's changes to the sync thread, the peers'
    /// records into its tables (bounded, as their sole writer), and the
    /// packets they released. With a fast path: the same changes to its
    /// offload. True when records or a sweep are left for the next round, or
    /// packets were released (no sleep then: a snapshot's backlog must not
    /// wait for the next tick, nor a packet for a flush).
    #[inline]
    fn exchange(&mut self, now_ns: u64) -> bool {
        let Worker {
            io, sync, offload, ..
        } = self;
        match (sync, offload) {
            (None, None) => false,
            (Some(s), o) => {
                let mut tee = |op: ReplicaOp, r: &Replica| {
                    if let Some(o) = o.as_mut() {
                        o.change(op, r);
                    }
                };
                s.ends
                    .exchange_tee(io.translator_mut(), now_ns, IMPORT_BUDGET, &mut tee);
                if let Some(o) = o.as_mut() {
                    o.flush();
                }
                // Packets that overtook their session's record, released by
                // it (docs/ha.md): out now, not at the next timer round; and
                // no sleep before the next batch, which also flushes what a
                // data plane queued (AF_XDP's tx ring).
                let released = io.translator().held_ready();
                if released {
                    io.tick(now_ns);
                }
                s.ends.more_to_do() || released
            }
            (None, Some(o)) => {
                io.translator_mut()
                    .drain_replica_changes(|op, r| o.change(op, r));
                o.flush();
                false
            }
        }
    }

    /// Sleep until the data plane has something, the control plane has
    /// something, the timeout ran out (false), or the stop pipe hangs up (true).
    fn sleep(&mut self) -> Result<bool, String> {
        let Some(s) = self.io.sleep() else {
            return Ok(false);
        };
        let timeout = s
            .timeout_ms
            .unwrap_or(if self.stateful { TICK_MS } else { -1 });
        let mut fds = [
            pollfd(s.fds[0]),
            pollfd(s.fds[1]),
            pollfd(s.fds[2]),
            pollfd(self.stop_fd.as_raw_fd()),
            pollfd(self.follower.wake.as_raw_fd()),
        ];
        loop {
            // SAFETY: fds is a valid array of pollfd.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if r >= 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(format!("worker {}: poll failed: {e}", self.index));
            }
        }
        if fds[3].revents != 0 {
            return Ok(true);
        }
        if fds[4].revents != 0 {
            self.follower.drain_wake();
        }
        self.io
            .woke([fds[0].revents, fds[1].revents, fds[2].revents])?;
        Ok(false)
    }
}

/// A `poll` entry waiting for input (`poll` skips a negative descriptor).
fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}
