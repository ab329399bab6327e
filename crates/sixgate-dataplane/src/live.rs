//! The running gateway as the control plane sees it: configuration snapshots
//! published to the workers, and questions the workers answer about their
//! tables. Shared by every live data plane: what differs between them, where
//! a change's destinations go (routes into the TUN device, the XDP program's
//! maps), is a [`Plane`].
//!
//! - Configuration: the running [`Config`] sits in an `ArcSwap`. A change
//!   ([`Live::apply`]) is checked ([`sixgate_core::reconfigure::check`]), its
//!   destinations are put in place ([`Plane::apply`]), then it is stored and
//!   the generation number bumped. Each worker compares the generation with the
//!   one it saw, one relaxed load per batch of packets (not per packet), and on a
//!   change swaps the snapshot into its translator, which keeps its NAT64
//!   tables. `apply` returns once every worker runs the new configuration.
//! - Tables: each worker owns its BIB and sessions, so nothing else may read
//!   them. A reader sends a [`Request`] (a slab range) on the worker's channel
//!   and bumps the same generation; the worker answers between two batches with
//!   one [`Chunk`] and the cursor to go on from. A listing of a million sessions
//!   is so many small chunks, never one big copy, and the packet path never
//!   waits for a lock. A flush ([`Live::flush`], `sixgate session flush`)
//!   travels the same way: each request removes at most one chunk's worth.

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use sixgate_core::nat64::{BibView, FlushFilter, Flushed, Pool4Entry, SessionView, SubscriberView};
use sixgate_core::{Config, Translator};

use crate::stats::{Snapshot, WorkerStats};

/// How long a change or a question waits for the workers.
const WORKER_TIMEOUT: Duration = Duration::from_secs(5);

/// A question about one worker's tables (or an order to flush them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// RFC 6146 §3.1 BIB entries.
    Bib,
    /// RFC 6146 §3.2 sessions.
    Sessions,
    /// RFC 6888 subscribers and their RFC 7422 port blocks.
    Subscribers,
    /// Remove the sessions the filter names and their dynamic BIB entries
    /// (`Translator::flush`); `span` is the work budget.
    Flush(FlushFilter),
}

/// Work one flush request may do on a worker between two batches (positions
/// looked at and sessions removed): 250–320 k instructions (callgrind,
/// `examples/nat64_flush.rs`), some hundred microseconds with a million
/// sessions' worth of cache misses.
pub const FLUSH_SPAN: u32 = 1024;

/// The rows of one [`Chunk`].
#[derive(Debug)]
pub enum Rows {
    /// BIB entries.
    Bib(Vec<BibView>),
    /// Sessions.
    Sessions(Vec<SessionView>),
    /// Subscribers.
    Subscribers(Vec<SubscriberView>),
    /// What a flush chunk removed.
    Flushed(Flushed),
}

/// One worker's answer: the rows of a slab range and where to go on.
#[derive(Debug)]
pub struct Chunk {
    /// The rows found.
    pub rows: Rows,
    /// The cursor to ask with next; `None`: this worker has no more.
    pub next: Option<u32>,
}

/// A question as it travels to a worker.
pub struct Request {
    pub query: Query,
    pub from: u32,
    pub span: u32,
    pub reply: SyncSender<Chunk>,
}

/// The control plane's side of one worker.
struct Link {
    requests: Mutex<Sender<Request>>,
    wake: UnixStream,
}

/// What a worker keeps to follow the control plane.
pub struct Follower {
    live: Arc<Live>,
    index: usize,
    seen: u64,
    seen_config: u64,
    requests: Receiver<Request>,
    /// Read end of the wake-up socket (non-blocking), polled with the queue.
    pub wake: UnixStream,
}

/// The running gateway's shared state.
pub struct Live {
    config: ArcSwap<Config>,
    /// Bumped for every change and every question: what workers watch.
    generation: AtomicU64,
    /// Bumped for configuration changes only.
    config_generation: AtomicU64,
    links: Vec<Link>,
    stats: Vec<Arc<WorkerStats>>,
    /// Where the data plane's destinations go.
    plane: Mutex<Box<dyn Plane>>,
    /// The default pool4 (no `pool4` key): kept when a change has none either.
    default_pool4: Option<Ipv4Addr>,
    /// One change at a time.
    changing: Mutex<()>,
    /// NAT64 state sync, as its thread last published it (`None`: off).
    sync: Mutex<Option<crate::sync_thread::SyncReport>>,
    /// `sixgate sync drain` asked, not yet taken by the sync thread.
    sync_drain: std::sync::atomic::AtomicBool,
}

/// A runtime change that did not happen.
pub type Refusal = String;

/// What a data plane does with a change before its workers take it: put the
/// new configuration's destinations in place (routes, the XDP program's
/// tries), so that packets for a new EAM entry reach the workers once they
/// run it.
pub trait Plane: Send {
    /// Called with one change at a time, after it passed
    /// [`sixgate_core::reconfigure::check`] and before the workers see it.
    /// `Err`: the change is refused and nothing stays changed.
    fn apply(&mut self, old: &Config, new: &Config, warn: &mut Vec<String>) -> Result<(), Refusal>;

    /// Fill in what this data plane decides when the file leaves it out, as
    /// it did at start (the XDP data plane: each side's MTU from its
    /// interface). Called on every change before it is checked.
    fn complete(&self, _new: &mut Config) -> Result<(), Refusal> {
        Ok(())
    }

    /// At exit, once: take down what [`Plane::apply`] and the start put in
    /// place (routes into the TUN device), or leave it (`keep`; privileges
    /// dropped: what the kernel removes with the device). Returns what could
    /// not be undone.
    fn finish(&mut self, _keep: bool, _privileged: bool) -> Vec<String> {
        Vec::new()
    }

    /// Every worker is made and holds what it restored from the state file
    /// (docs/restart.md): the data plane finishes its start (TUN: takes over
    /// the fast path a stopped run handed over).
    fn workers_ready(&mut self) {}

    /// At a stop, after the workers halted and before anything is taken
    /// down (`[daemon] fastpath_handover`): leave the in-kernel fast path
    /// running for the next start to take over. `true`: it was left; the
    /// data plane keeps what it needs (the device and its routes) too.
    fn hand_over(&mut self) -> bool {
        false
    }

    /// Removed pool4 prefixes drained (RFC 6146 §3.5.1.1): every worker runs
    /// `cfg`, and of the prefixes removed only `draining` still has BIB
    /// entries; take away what was kept for the others (a route into the TUN
    /// device). Returns warnings.
    fn pool4_drained(&mut self, _cfg: &Config, _draining: &[Pool4Entry]) -> Vec<String> {
        Vec::new()
    }

    /// The counters of an in-kernel fast path in front of this data plane,
    /// if one is attached (docs/fastpath.md).
    fn fast_path(&self) -> Option<crate::FastPathCounters> {
        None
    }

    /// Why the fast path the file asks for (`fastpath = "tc"` or `"auto"`)
    /// does not run, for `show stats`; `None` when it runs or was not asked
    /// for (docs/fastpath.md, "Kernel requirements").
    fn fast_path_off(&self) -> Option<String> {
        None
    }
}

/// What a worker's follower reconfigures and asks: a TUN worker's pipeline, an
/// XDP worker's translator (and the packet owners it derives from the
/// configuration).
pub trait Follows {
    /// Run `cfg` from now on (keeping the tables).
    fn reconfigure(&mut self, cfg: Arc<Config>) -> Result<(), sixgate_core::reconfigure::Refused>;
    /// The translator, to walk its tables.
    fn translator(&self) -> &Translator;
    /// The translator, to flush its tables.
    fn translator_mut(&mut self) -> &mut Translator;
}

impl Follows for Translator {
    fn reconfigure(&mut self, cfg: Arc<Config>) -> Result<(), sixgate_core::reconfigure::Refused> {
        Translator::reconfigure(self, cfg)
    }
    fn translator(&self) -> &Translator {
        self
    }
    fn translator_mut(&mut self) -> &mut Translator {
        self
    }
}

impl Live {
    /// Shared state for `stats.len()` workers; returns each worker's follower.
    /// `default_pool4`: the address the gateway chose for a nat64 with no
    /// `pool4` key, kept by changes that have none either.
    pub fn new(
        cfg: Arc<Config>,
        stats: Vec<Arc<WorkerStats>>,
        plane: Box<dyn Plane>,
        default_pool4: Option<Ipv4Addr>,
    ) -> std::io::Result<(Arc<Live>, Vec<Follower>)> {
        let mut links = Vec::new();
        let mut ends = Vec::new();
        for _ in &stats {
            let (tx, rx) = std::sync::mpsc::channel();
            let (wake_rd, wake_wr) = UnixStream::pair()?;
            wake_rd.set_nonblocking(true)?;
            wake_wr.set_nonblocking(true)?;
            links.push(Link {
                requests: Mutex::new(tx),
                wake: wake_wr,
            });
            ends.push((rx, wake_rd));
        }
        let live = Arc::new(Live {
            config: ArcSwap::new(cfg),
            generation: AtomicU64::new(0),
            config_generation: AtomicU64::new(0),
            links,
            stats,
            plane: Mutex::new(plane),
            default_pool4,
            changing: Mutex::new(()),
            sync: Mutex::new(None),
            sync_drain: std::sync::atomic::AtomicBool::new(false),
        });
        let followers = ends
            .into_iter()
            .enumerate()
            .map(|(index, (requests, wake))| Follower {
                live: live.clone(),
                index,
                seen: 0,
                seen_config: 0,
                requests,
                wake,
            })
            .collect();
        Ok((live, followers))
    }

    /// The running translator configuration (with the keys the gateway fills
    /// in at start: the default pool4, hash keys).
    pub fn config(&self) -> Arc<Config> {
        self.config.load_full()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.stats.len()
    }

    /// All workers' counters, summed.
    pub fn snapshot(&self) -> Snapshot {
        crate::stats::sum(&self.stats)
    }

    /// Each worker's counters, in worker order.
    pub fn worker_snapshots(&self) -> Vec<Snapshot> {
        crate::stats::each(&self.stats)
    }

    /// The in-kernel fast path's counters, when one is attached (read from
    /// its maps: a system call, for stats and metrics, not per packet).
    pub fn fast_path(&self) -> Option<crate::FastPathCounters> {
        self.plane.lock().ok()?.fast_path()
    }

    /// Whether the fast path is attached and translating: `None` when none
    /// was asked for (`[daemon] fastpath = "off"`, or this data plane has
    /// none), `Some(false)` when it was and does not run or passes
    /// everything up ([`Live::fast_path_off`] says why).
    pub fn fast_path_active(&self) -> Option<bool> {
        let plane = self.plane.lock().ok()?;
        match (plane.fast_path_off(), plane.fast_path()) {
            (Some(_), _) => Some(false),
            (None, Some(_)) => Some(true),
            (None, None) => None,
        }
    }

    /// Why the fast path asked for does not run ([`Plane::fast_path_off`]).
    pub fn fast_path_off(&self) -> Option<String> {
        self.plane.lock().ok()?.fast_path_off()
    }

    /// Run `new` from now on, keeping the translators' state. Refused (the
    /// running configuration unchanged) when a key that cannot change at runtime
    /// differs, or a route cannot be added. `Ok` carries warnings.
    pub fn apply(&self, mut new: Config) -> Result<Vec<String>, Refusal> {
        let _one = self.changing.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.config.load_full();
        // What the gateway chose at start stays.
        new.ipv4_id_key = old.ipv4_id_key;
        if let (Some(n), Some(o)) = (&mut new.nat64, &old.nat64) {
            n.hash_key = o.hash_key;
            if n.pool4.is_empty()
                && let Some(a) = self.default_pool4
            {
                n.pool4 = vec![crate::pool4_default::entry(a)];
            }
        }
        if let (Some(n), Some(o)) = (&mut new.mapt, &old.mapt) {
            n.hash_key = o.hash_key;
        }
        let mut plane = self.plane.lock().unwrap_or_else(|p| p.into_inner());
        plane.complete(&mut new)?;
        sixgate_core::reconfigure::check(&old, &new).map_err(|e| e.to_string())?;
        let mut warnings = Vec::new();
        plane.apply(&old, &new, &mut warnings)?;
        self.config.store(Arc::new(new));
        // Release: a worker that reads the new number reads this snapshot.
        let g = self.config_generation.fetch_add(1, Ordering::Release) + 1;
        // Stored under the plane's lock: pool4_drained sees the plane and the
        // configuration of one change.
        drop(plane);
        self.poke_all();
        let deadline = Instant::now() + WORKER_TIMEOUT;
        for (i, s) in self.stats.iter().enumerate() {
            while s.applied.load(Ordering::Acquire) < g {
                if Instant::now() > deadline {
                    warnings.push(format!(
                        "worker {i} has not taken the change within {} s (busy or stopped); it \
                         will at its next batch",
                        WORKER_TIMEOUT.as_secs()
                    ));
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(warnings)
    }

    /// Ask worker `worker` for the rows at slab positions `from..from + span`.
    pub fn chunk(
        &self,
        worker: usize,
        query: Query,
        from: u32,
        span: u32,
    ) -> Result<Chunk, String> {
        let link = self
            .links
            .get(worker)
            .ok_or_else(|| format!("no worker {worker}"))?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        link.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Request {
                query,
                from,
                span,
                reply: tx,
            })
            .map_err(|_| format!("worker {worker} has stopped"))?;
        self.generation.fetch_add(1, Ordering::Release);
        let _ = (&link.wake).write(&[1]);
        rx.recv_timeout(WORKER_TIMEOUT)
            .map_err(|_| format!("worker {worker} did not answer"))
    }

    /// The sync thread's latest report (`None` without `[sync]`).
    pub fn sync_report(&self) -> Option<crate::sync_thread::SyncReport> {
        self.sync.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `sixgate sync drain` (docs/ha.md, "Planned drain"): asks the sync
    /// thread to drain; progress shows in [`Live::sync_report`]. Errors: no
    /// sync running.
    pub fn request_sync_drain(&self) -> Result<(), String> {
        if self.sync_report().is_none() {
            return Err("no sync: [sync] is not configured (or not running yet)".into());
        }
        self.sync_drain.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The sync thread takes a drain request, once.
    pub fn take_sync_drain(&self) -> bool {
        self.sync_drain.swap(false, Ordering::Relaxed)
    }

    /// The sync thread publishes its report (every 100 ms).
    pub fn publish_sync(&self, r: crate::sync_thread::SyncReport) {
        *self.sync.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    }

    /// Wake worker `worker` from its sleep (the sync thread left it records):
    /// one byte on its wake-up socket, no question asked.
    pub fn wake_worker(&self, worker: usize) {
        if let Some(link) = self.links.get(worker) {
            let _ = (&link.wake).write(&[1]);
        }
    }

    /// RFC 9693 §4.3 tear-down (`sixgate session flush`): every worker removes
    /// the sessions `filter` names and their dynamic BIB entries, a chunk of
    /// [`FLUSH_SPAN`] at a time between its packet batches. Returns the totals;
    /// an error names the worker that did not answer (what it removed before
    /// stays removed).
    pub fn flush(&self, filter: &FlushFilter) -> Result<Flushed, String> {
        let mut total = Flushed::default();
        for w in 0..self.workers() {
            let mut cursor = Some(0);
            while let Some(from) = cursor {
                let c = self.chunk(w, Query::Flush(*filter), from, FLUSH_SPAN)?;
                if let Rows::Flushed(f) = c.rows {
                    total.merge(&f);
                }
                cursor = c.next;
            }
        }
        Ok(total)
    }

    fn poke_all(&self) {
        self.generation.fetch_add(1, Ordering::Release);
        for l in &self.links {
            // Full: it has a wake-up pending anyway.
            let _ = (&l.wake).write(&[1]);
        }
    }

    /// A worker's draining pool4 prefixes changed, or every worker took a
    /// change. Once every worker runs the current configuration (each
    /// publishes its prefixes before it says so), the data plane is told which
    /// removed prefixes still drain anywhere ([`Plane::pool4_drained`]). Runs
    /// on a short-lived thread of its own ([`Follower`] starts it): the plane
    /// may run `ip`, and a change may hold its lock, neither of which a
    /// worker waits for.
    fn pool4_drained(&self) {
        let mut plane = self.plane.lock().unwrap_or_else(|p| p.into_inner());
        let g = self.config_generation.load(Ordering::Acquire);
        if self
            .stats
            .iter()
            .any(|s| s.applied.load(Ordering::Acquire) < g)
        {
            return; // the last worker to take the change calls again
        }
        let mut draining = Vec::new();
        for s in &self.stats {
            for p in s.draining.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                if !draining.contains(p) {
                    draining.push(*p);
                }
            }
        }
        for w in plane.pool4_drained(&self.config.load(), &draining) {
            tracing::warn!("{w}");
        }
    }

    /// At exit: the data plane takes down what it put in place for the
    /// destinations ([`Plane::finish`]); returns what could not be undone.
    pub fn finish(&self, keep: bool, privileged: bool) -> Vec<String> {
        let mut plane = self.plane.lock().unwrap_or_else(|p| p.into_inner());
        plane.finish(keep, privileged)
    }

    /// [`Plane::workers_ready`].
    pub fn workers_ready(&self) {
        let mut plane = self.plane.lock().unwrap_or_else(|p| p.into_inner());
        plane.workers_ready();
    }

    /// [`Plane::hand_over`].
    pub fn hand_over(&self) -> bool {
        let mut plane = self.plane.lock().unwrap_or_else(|p| p.into_inner());
        plane.hand_over()
    }
}

impl Follower {
    /// Empty the wake-up socket (a wake-up may come after the change it
    /// announces was taken: left there, it would wake every `poll` at once).
    pub fn drain_wake(&self) {
        let mut drain = [0u8; 64];
        while matches!((&self.wake).read(&mut drain), Ok(n) if n > 0) {}
    }

    /// After the translator's timers: when they forgot a drained pool4 prefix
    /// (RFC 6146 §3.5.1.1), the data plane may take away what it kept for it.
    pub fn after_tick(&self, t: &Translator) {
        if self.publish_draining(t) {
            self.check_drained();
        }
    }

    /// [`Live::pool4_drained`] on a thread of its own, off the packet path.
    fn check_drained(&self) {
        let live = self.live.clone();
        let spawned = std::thread::Builder::new()
            .name("sixgate-drained".into())
            .spawn(move || live.pool4_drained());
        if let Err(e) = spawned {
            tracing::warn!(
                worker = self.index,
                "cannot start a thread to take drained pool4 routes away ({e}); they go at \
                 the next change or at exit"
            );
        }
    }

    /// Publish the translator's draining pool4 prefixes; true when they changed.
    fn publish_draining(&self, t: &Translator) -> bool {
        let now = t.draining_pool4();
        let mut published = self.live.stats[self.index]
            .draining
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if published[..] == *now {
            return false;
        }
        published.clear();
        published.extend_from_slice(now);
        true
    }

    /// Between two batches: anything new? One relaxed load when nothing is.
    #[inline]
    pub fn changed(&self) -> bool {
        self.live.generation.load(Ordering::Relaxed) != self.seen
    }

    /// Take a new configuration and answer questions. `now_ns` is the worker's
    /// clock; the translator state stays the worker's own. True when the
    /// configuration changed (for what the worker built on it).
    pub fn follow(&mut self, p: &mut impl Follows, now_ns: u64) -> bool {
        // Pairs with the Release bumps: what was stored before them is seen.
        self.seen = self.live.generation.load(Ordering::Acquire);
        self.drain_wake();
        let g = self.live.config_generation.load(Ordering::Acquire);
        let changed = g != self.seen_config;
        if changed {
            let cfg = self.live.config.load_full();
            if let Err(e) = p.reconfigure(cfg) {
                // check() ran before the store: not expected.
                tracing::error!(worker = self.index, "{e}");
            }
            self.seen_config = g;
            self.publish_draining(p.translator());
            // Before `applied`: a `show` right after a change (pool4 add)
            // reads the new pool4, not the last tick's.
            let t = p.translator();
            if t.config().nat64.is_some() {
                self.live.stats[self.index].publish_nat64(t.nat64_stats());
            }
            // SeqCst, store and loads: of two workers taking the change at
            // once, at least one sees the other's and checks.
            self.live.stats[self.index]
                .applied
                .store(g, Ordering::SeqCst);
            // The last worker to take it: what the change drained at once.
            if self
                .live
                .stats
                .iter()
                .all(|s| s.applied.load(Ordering::SeqCst) >= g)
            {
                self.check_drained();
            }
        }
        while let Ok(r) = self.requests.try_recv() {
            let chunk = match r.query {
                Query::Bib => {
                    let mut rows = Vec::new();
                    let next = p.translator().walk_bib(r.from, r.span, |b| rows.push(b));
                    Chunk {
                        rows: Rows::Bib(rows),
                        next,
                    }
                }
                Query::Sessions => {
                    let mut rows = Vec::new();
                    let next = p
                        .translator()
                        .walk_sessions(r.from, r.span, now_ns, |s| rows.push(s));
                    Chunk {
                        rows: Rows::Sessions(rows),
                        next,
                    }
                }
                Query::Subscribers => {
                    let mut rows = Vec::new();
                    let next = p
                        .translator()
                        .walk_subscribers(r.from, r.span, |s| rows.push(s));
                    Chunk {
                        rows: Rows::Subscribers(rows),
                        next,
                    }
                }
                Query::Flush(filter) => {
                    let mut f = Flushed::default();
                    let next = p
                        .translator_mut()
                        .flush(&filter, r.from, r.span, now_ns, &mut f);
                    Chunk {
                        rows: Rows::Flushed(f),
                        next,
                    }
                }
            };
            let _ = r.reply.try_send(chunk);
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data plane with no destinations to put in place.
    struct NoPlane;
    impl Plane for NoPlane {
        fn apply(&mut self, _: &Config, _: &Config, _: &mut Vec<String>) -> Result<(), Refusal> {
            Ok(())
        }
    }
    use sixgate_core::nat64::{Nat64Config, Pool4Entry};
    use std::sync::atomic::AtomicBool;

    fn nat64(pool4: &[[u8; 4]]) -> Config {
        let mut c = Config::with_pool6(Some(
            sixgate_core::addr::Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap(),
        ));
        c.nat64 = Some(Nat64Config {
            pool4: pool4
                .iter()
                .map(|a| Pool4Entry::single(Ipv4Addr::from(*a)))
                .collect(),
            max_sessions: 64,
            ..Nat64Config::default()
        });
        c
    }

    /// A MAP-T node reloads its own file: the key the gateway drew at start
    /// for its IPv4 IDs and NAPT44 stays, so the `[mapt]` section compares
    /// equal and the reload is not refused as a change to it.
    #[test]
    fn mapt_reload_keeps_the_start_key() {
        let text = "[translator]\nmode = \"mapt-br\"\n[mapt]\ndmr = \"2001:db8:64::/96\"\n\
                    bmr = [ { ipv6_prefix = \"2001:db8:1::/51\", ipv4_prefix = \
                    \"198.18.0.0/24\", ea_bits = 13, psid_offset = 0 } ]\n";
        let file = || sixgate_config::parse(text, "br.toml").unwrap().config;
        let mut start = file();
        start.mapt.as_mut().unwrap().hash_key = 9;
        let plane = NoPlane;
        let (live, _) = Live::new(Arc::new(start), Vec::new(), Box::new(plane), None).unwrap();
        live.apply(file()).unwrap();
        assert_eq!(live.config().mapt.as_ref().unwrap().hash_key, 9);
    }

    /// Two stand-in workers that only follow (no packets): a change reaches
    /// both before `apply` returns, keeping the keys the gateway chose; a
    /// listing is answered chunk by chunk; a refused change leaves all as it was.
    #[test]
    fn changes_and_questions_reach_every_worker() {
        let mut start = nat64(&[[192, 0, 2, 1]]);
        start.ipv4_id_key = 42;
        start.nat64.as_mut().unwrap().hash_key = 7;
        let start = Arc::new(start);
        let stats: Vec<Arc<WorkerStats>> = (0..2).map(|_| Arc::default()).collect();
        let plane = NoPlane;
        let (live, followers) = Live::new(start.clone(), stats, Box::new(plane), None).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = followers
            .into_iter()
            .enumerate()
            .map(|(i, mut f)| {
                let stop = stop.clone();
                let cfg = start.clone();
                std::thread::spawn(move || {
                    let mut p = Translator::for_worker(cfg, i as u16, 2);
                    while !stop.load(Ordering::Relaxed) {
                        if f.changed() {
                            f.follow(&mut p, 0);
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    p.config().clone()
                })
            })
            .collect();
        let warnings = live
            .apply(nat64(&[[192, 0, 2, 1], [192, 0, 2, 2]]))
            .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        for w in 0..2 {
            let c = live.chunk(w, Query::Sessions, 0, 4096).unwrap();
            assert!(matches!(c.rows, Rows::Sessions(ref r) if r.is_empty()));
            assert_eq!(c.next, None);
        }
        assert_eq!(
            live.flush(&FlushFilter::default()).unwrap(),
            Flushed::default()
        );
        let mut bad = nat64(&[[192, 0, 2, 1]]);
        bad.nat64.as_mut().unwrap().max_sessions = 1;
        let e = live.apply(bad).unwrap_err();
        assert!(e.contains("[nat64] max_sessions"), "{e}");
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            let c = w.join().unwrap();
            let n = c.nat64.as_ref().unwrap();
            assert_eq!((n.pool4.len(), n.hash_key, c.ipv4_id_key), (2, 7, 42));
        }
        assert_eq!(live.config().nat64.as_ref().unwrap().pool4.len(), 2);
        assert!(live.chunk(5, Query::Bib, 0, 1).is_err());
    }

    /// Records what [`Plane::pool4_drained`] was told.
    struct Recorder(Arc<Mutex<Vec<Vec<Pool4Entry>>>>);
    impl Plane for Recorder {
        fn apply(&mut self, _: &Config, _: &Config, _: &mut Vec<String>) -> Result<(), Refusal> {
            Ok(())
        }
        fn pool4_drained(&mut self, _: &Config, draining: &[Pool4Entry]) -> Vec<String> {
            self.0.lock().unwrap().push(draining.to_vec());
            Vec::new()
        }
    }

    /// RFC 6146 §3.5.1.1: a removed pool4 address with a session is reported
    /// draining once the worker runs the change, and drained once the worker's
    /// timers have seen its last BIB entry go, without another change.
    #[test]
    fn rfc6146_s3_5_1_1_removed_pool4_is_reported_drained_by_the_timers() {
        use sixgate_core::{HEADROOM, PacketBuf, Scratch, Verdict};
        let (a, b) = ([192, 0, 2, 1], [192, 0, 2, 2]);
        let start = Arc::new(nat64(&[a]));
        let mut t = Translator::new(start.clone());
        let mut scratch = Scratch::new();
        let client: std::net::Ipv6Addr = "2001:db8:1::5".parse().unwrap();
        let server: std::net::Ipv6Addr = "2001:db8:64::cb00:7101".parse().unwrap();
        let udp = sixgate_testkit::Ip6::new(client, server).udp(5000, 53, 10);
        let mut buf = vec![0u8; HEADROOM + udp.len()];
        buf[HEADROOM..].copy_from_slice(&udp);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, udp.len());
        assert_eq!(t.translate(&mut pkt, &mut scratch, 0), Verdict::Translated);

        let told = Arc::new(Mutex::new(Vec::new()));
        let stats: Vec<Arc<WorkerStats>> = vec![Arc::default()];
        let (live, followers) =
            Live::new(start, stats, Box::new(Recorder(told.clone())), None).unwrap();
        let now_s = Arc::new(AtomicU64::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let mut f = followers.into_iter().next().unwrap();
        let worker = {
            let (now_s, stop) = (now_s.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let now = now_s.load(Ordering::Relaxed) * 1_000_000_000;
                    if f.changed() {
                        f.follow(&mut t, now);
                    }
                    while t.tick(now, &mut scratch).is_some() {}
                    f.after_tick(&t);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        let told_last = |want: &[Pool4Entry]| {
            let deadline = Instant::now() + WORKER_TIMEOUT;
            while told.lock().unwrap().last().map(|d| &d[..]) != Some(want) {
                assert!(Instant::now() < deadline, "{:?}", told.lock().unwrap());
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        live.apply(nat64(&[b])).unwrap();
        told_last(&[Pool4Entry::single(Ipv4Addr::from(a))]);
        // Past the UDP timeout, then the freed port's reuse delay.
        now_s.store(2000, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(50));
        now_s.store(2200, Ordering::Relaxed);
        told_last(&[]);
        stop.store(true, Ordering::Relaxed);
        worker.join().unwrap();
    }
}
