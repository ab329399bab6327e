//! The NAT64 event log off the packet path (RFC 6888 REQ-12, docs/logging.md).
//!
//! A worker moves its translator's events, fixed-size records, onto its own
//! [`spsc`] ring after every batch ([`WorkerEvents::drain`]): no text, no lock,
//! no system call. When the ring is full the events wait in the translator's
//! own ring, and what does not fit there is counted lost (`events_lost`) or,
//! with `[log_export] on_overflow = "refuse"`, never made. One exporter thread
//! ([`Exporter`]) reads every ring, stamps each event with the wall clock,
//! and hands batches to its outputs: the collectors of `[log_export]`
//! ([`sink`]: IPFIX, NetFlow v9, syslog over UDP or TCP), its JSON-lines
//! file, or, without `[log_export]`, `[log]` ([`crate::events`]). It also
//! keeps the port blocks held, to log them again every `interim` seconds and
//! as released when the daemon stops.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sixgate_config::LogExportSettings;
use sixgate_core::Translator;
use sixgate_core::nat64::Event;
use sixgate_natlog::{NatRecord, RecordKind};

use crate::spsc::{Consumer, Producer, ring};

mod sink;

pub use sink::CollectorReport;
use sink::Sink;

/// Events each worker's ring holds: some tens of milliseconds of a worker
/// creating sessions at full speed while the exporter sleeps or sends.
pub const EVENT_RING: usize = 65536;

/// The exporter's sleep when every ring was empty.
const IDLE: Duration = Duration::from_millis(10);

/// Records handed to the outputs at a time.
const BATCH: usize = 1024;

/// A worker's end of its event ring.
pub struct WorkerEvents {
    ring: Producer<Event>,
}

impl WorkerEvents {
    /// Move `t`'s pending events onto the ring, as many as fit (per batch:
    /// one load and compare when there are none).
    #[inline]
    pub fn drain(&mut self, t: &mut Translator) {
        let ring = &mut self.ring;
        t.drain_events_while(|e| ring.push(*e));
    }
}

/// The rings of `workers` workers: the workers' ends and the exporter's.
pub fn event_rings(workers: usize) -> (Vec<WorkerEvents>, Vec<Consumer<Event>>) {
    (0..workers)
        .map(|_| {
            let (p, c) = ring(EVENT_RING);
            (WorkerEvents { ring: p }, c)
        })
        .unzip()
}

/// Where the events go.
pub enum Outputs {
    /// `[log]`, through `tracing` (no `[log_export]`).
    Log,
    /// `[log_export]`'s collectors and file, opened.
    Export(Prepared),
}

/// `[log_export]` made ready before privileges are dropped: the file opened,
/// the collectors' sockets made.
pub struct Prepared {
    file: Option<(File, String)>,
    sinks: Vec<Sink>,
    interim: u32,
}

impl Prepared {
    /// Open what `s` names; `node_id`: `[sync] node_id`, the default
    /// observation domain.
    pub fn open(s: &LogExportSettings, node_id: Option<u16>) -> Result<Prepared, String> {
        let file = match &s.file {
            Some(p) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| format!("[log_export] file = {:?}: {e}", p.display()))?;
                Some((f, p.display().to_string()))
            }
            None => None,
        };
        let domain = s
            .observation_domain
            .unwrap_or_else(|| node_id.map_or(1, u32::from));
        let hostname = s.hostname.clone().unwrap_or_else(crate::system::hostname);
        let sinks = s
            .collectors
            .iter()
            .map(|c| Sink::new(c, domain, &hostname))
            .collect::<Result<_, _>>()?;
        Ok(Prepared {
            file,
            sinks,
            interim: s.interim,
        })
    }
}

/// Counters of the exporter, read by `show stats` and `/metrics`.
#[derive(Default)]
pub struct ExportStats {
    /// Events read from the workers' rings.
    pub events: AtomicU64,
    /// Interim records of held port blocks made.
    pub interim: AtomicU64,
    /// JSON lines that could not be written to the file.
    pub file_errors: AtomicU64,
    collectors: std::sync::Mutex<Vec<CollectorReport>>,
}

impl ExportStats {
    /// Each collector, as last published (every round).
    pub fn collectors(&self) -> Vec<CollectorReport> {
        self.collectors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Everything, for `/metrics`.
    pub fn report(&self) -> ExportReport {
        ExportReport {
            events: self.events.load(Relaxed),
            interim: self.interim.load(Relaxed),
            file_errors: self.file_errors.load(Relaxed),
            collectors: self.collectors(),
        }
    }
}

/// [`ExportStats`] read at one time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Events read from the workers' rings.
    pub events: u64,
    /// Interim records of held port blocks made.
    pub interim: u64,
    /// JSON lines that could not be written to the file.
    pub file_errors: u64,
    /// Each collector.
    pub collectors: Vec<CollectorReport>,
}

/// The exporter thread.
pub struct Exporter {
    stop: Arc<AtomicBool>,
    stats: Arc<ExportStats>,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Start the thread on `rings`; event times count from `epoch` (the
    /// workers' clock, [`crate::Crew::epoch`]).
    pub fn spawn(
        outputs: Outputs,
        rings: Vec<Consumer<Event>>,
        epoch: Instant,
    ) -> io::Result<Exporter> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(ExportStats::default());
        let interim = match &outputs {
            Outputs::Export(p) => Duration::from_secs(u64::from(p.interim)),
            Outputs::Log => Duration::ZERO,
        };
        let mut run = Run {
            rings,
            epoch,
            outputs,
            stats: stats.clone(),
            blocks: HashMap::new(),
            next_interim: Instant::now() + interim,
            batch: Vec::with_capacity(BATCH),
            text: String::new(),
        };
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sixgate-events".into())
            .spawn(move || run.main(&s))?;
        Ok(Exporter {
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// Its counters.
    pub fn stats(&self) -> Arc<ExportStats> {
        self.stats.clone()
    }

    /// CPU time the exporter thread has used (`CLOCK_THREAD_CPUTIME_ID` of
    /// the thread), for benchmarks; `None` once stopped or unreadable.
    pub fn cpu_time(&self) -> Option<Duration> {
        use std::os::unix::thread::JoinHandleExt;
        let t = self.thread.as_ref()?.as_pthread_t();
        let mut clock: libc::clockid_t = 0;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: the thread is not joined (the handle is held), so its
        // pthread_t is valid; both out-pointers are valid.
        unsafe {
            if libc::pthread_getcpuclockid(t, &mut clock) != 0
                || libc::clock_gettime(clock, &mut ts) != 0
            {
                return None;
            }
        }
        Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    /// Call once the workers have stopped: what is left on the rings is
    /// exported, every port block still held is logged as released, the
    /// outputs flushed (TCP: for at most 2 s), and the thread ends.
    pub fn stop(mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A port block's identity: protocol, address, first port.
type BlockKey = (u8, u32, u16);

struct Run {
    rings: Vec<Consumer<Event>>,
    epoch: Instant,
    outputs: Outputs,
    stats: Arc<ExportStats>,
    /// Port blocks allocated and not released, for interim records and the
    /// release at stop.
    blocks: HashMap<BlockKey, NatRecord>,
    next_interim: Instant,
    batch: Vec<NatRecord>,
    text: String,
}

impl Run {
    fn main(&mut self, stop: &AtomicBool) {
        loop {
            let stopping = stop.load(Relaxed);
            let moved = self.drain();
            self.interim();
            if let Outputs::Export(p) = &mut self.outputs {
                for s in &mut p.sinks {
                    s.tick();
                }
                let reports = p.sinks.iter().map(Sink::report).collect();
                *self
                    .stats
                    .collectors
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = reports;
            }
            if stopping {
                self.release_held_blocks();
                if let Outputs::Export(p) = &mut self.outputs {
                    let deadline = Instant::now() + Duration::from_secs(2);
                    for s in &mut p.sinks {
                        s.finish(deadline);
                    }
                    let reports = p.sinks.iter().map(Sink::report).collect();
                    *self
                        .stats
                        .collectors
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = reports;
                }
                return;
            }
            if moved == 0 {
                std::thread::sleep(IDLE);
            }
        }
    }

    /// Unix milliseconds of a worker's `time_ns`, through the wall clock as
    /// it is now (so an NTP step is followed, not frozen at start).
    fn clock(&self) -> impl Fn(u64) -> u64 + use<> {
        let now_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let now_epoch_ns = self.epoch.elapsed().as_nanos() as i128;
        let offset = now_unix_ns - now_epoch_ns;
        move |t_ns| ((offset + i128::from(t_ns)).max(0) / 1_000_000) as u64
    }

    /// Every ring's events to the outputs; how many.
    fn drain(&mut self) -> usize {
        let unix_ms = self.clock();
        let mut n = 0;
        for i in 0..self.rings.len() {
            while let Some(e) = self.rings[i].pop() {
                let r = NatRecord::from_event(&e, unix_ms(e.time_ns));
                self.track_block(&r);
                self.batch.push(r);
                n += 1;
                if self.batch.len() == BATCH {
                    self.flush();
                }
            }
        }
        self.flush();
        self.stats.events.fetch_add(n as u64, Relaxed);
        n
    }

    fn track_block(&mut self, r: &NatRecord) {
        if !r.kind.is_block() {
            return;
        }
        let key = (r.protocol_number(), u32::from(r.outside), r.outside_port);
        match r.kind {
            RecordKind::BlockAllocated => {
                self.blocks.insert(key, *r);
            }
            RecordKind::BlockReleased => {
                self.blocks.remove(&key);
            }
            _ => {}
        }
    }

    /// `interim` seconds after the last round, every held block again.
    fn interim(&mut self) {
        let Outputs::Export(p) = &self.outputs else {
            return;
        };
        if p.interim == 0 || self.blocks.is_empty() || Instant::now() < self.next_interim {
            return;
        }
        self.next_interim = Instant::now() + Duration::from_secs(u64::from(p.interim));
        self.restate_blocks(RecordKind::BlockActive);
    }

    /// Every held block as released, at stop: a collector must not think a
    /// stopped node still holds them (RFC 7422 logs per block).
    fn release_held_blocks(&mut self) {
        self.restate_blocks(RecordKind::BlockReleased);
        self.blocks.clear();
    }

    fn restate_blocks(&mut self, kind: RecordKind) {
        let now = (self.clock())(self.epoch.elapsed().as_nanos() as u64);
        let held: Vec<NatRecord> = self.blocks.values().copied().collect();
        for mut r in held {
            r.kind = kind;
            r.unix_ms = now;
            self.batch.push(r);
            if kind == RecordKind::BlockActive {
                self.stats.interim.fetch_add(1, Relaxed);
            }
            if self.batch.len() == BATCH {
                self.flush();
            }
        }
        self.flush();
    }

    /// The batch to every output.
    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        match &mut self.outputs {
            Outputs::Log => {
                for r in &self.batch {
                    crate::events::log(r);
                }
            }
            Outputs::Export(p) => {
                if let Some((f, _)) = &mut p.file {
                    self.text.clear();
                    for r in &self.batch {
                        sixgate_natlog::json::line(r, &mut self.text);
                    }
                    if f.write_all(self.text.as_bytes()).is_err() {
                        self.stats
                            .file_errors
                            .fetch_add(self.batch.len() as u64, Relaxed);
                    }
                }
                for s in &mut p.sinks {
                    s.push(&self.batch);
                }
            }
        }
        self.batch.clear();
    }
}

#[cfg(test)]
mod tests;
