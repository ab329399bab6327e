//! The engine: one trial is a paced stream of frames per direction, sent from one
//! tester port's TX ring and counted at the other's RX ring, each on its own
//! pinned thread.
//!
//! Pacing: frame `i` is due `i / rate` after the start ([`Pacer`], shared with
//! sixgate-loadgen); the sender sleeps until shortly before a batch is due and
//! busy-waits on the monotonic clock for the rest. A trial is invalid when, at
//! the end, the sender is behind its schedule by more than 0.001 % of the
//! trial's frames (siitperf's rule): it did not offer the rate it claims.

use std::collections::HashSet;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sixgate_loadgen::pacing::{Pacer, Step};
use sixgate_loadgen::ports::{PortGen, PortRange};

use crate::frame::{self, Stamp, Tag, Template};
use crate::ring::{RxRing, TxRing};

/// The share of a trial's frames the sender may be behind at the end: 0.001 %,
/// siitperf's rule (the default of [`TrialSpec::behind_limit`]).
pub const BEHIND_LIMIT: f64 = 0.000_01;

/// A tester port: a TX and an RX ring on one interface of one namespace.
pub struct Port {
    pub name: String,
    pub tx: TxRing,
    pub rx: RxRing,
}

/// Run `f` on a thread that has entered network namespace `ns` (sockets it
/// opens stay in that namespace for the whole process).
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let path = format!("/run/netns/{ns}");
            let file = std::fs::File::open(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
            use std::os::fd::AsRawFd;
            // SAFETY: setns on this thread only, with a namespace fd we hold.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
                return Err(io::Error::last_os_error());
            }
            f()
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    })
}

impl Port {
    /// Open the rings on `iface` in namespace `ns`.
    pub fn open(ns: &str, iface: &str) -> io::Result<Port> {
        let (tx, rx) = in_netns(ns, || Ok((TxRing::open(iface)?, RxRing::open(iface)?)))
            .map_err(|e| io::Error::new(e.kind(), format!("{ns}/{iface}: {e}")))?;
        Ok(Port {
            name: format!("{ns}/{iface}"),
            tx,
            rx,
        })
    }
}

/// Pin the calling thread to `cpu`.
///
/// Not real-time priority: tried, a SCHED_FIFO sender starves the kernel's
/// receive processing of the veth on its CPU and the tester loses its own
/// frames.
pub fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity(0) affects this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Nanoseconds of `CLOCK_REALTIME`, the clock of the kernel's receive stamps.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How a direction picks its frames' ports and addresses.
#[derive(Debug, Clone)]
pub enum Tuples {
    /// RFC 4814 pseudorandom ports in ranges, and optionally pseudorandom
    /// host offsets (0..n) added to the source or destination address.
    Random {
        src_ports: PortRange,
        dst_ports: PortRange,
        src_hosts: u16,
        dst_hosts: u16,
    },
    /// RFC 9693 phase 1: every (source host, source port, destination port)
    /// combination once, in a pseudorandom order, so each frame opens a new
    /// connection.
    Enumerate {
        src_ports: PortRange,
        dst_ports: PortRange,
        src_hosts: u16,
    },
    /// RFC 9693 phase 2, the responder's side: answer only tuples learned in
    /// phase 1, picked pseudorandomly.
    Learned(Vec<Stamp>),
}

impl Tuples {
    /// How many frames the tuples allow: `Enumerate`, each tuple once (phase
    /// 1); the others, any number.
    pub fn count(&self) -> u64 {
        match self {
            Tuples::Random { .. } => u64::MAX,
            Tuples::Enumerate {
                src_ports,
                dst_ports,
                src_hosts,
            } => {
                u64::from(src_ports.len())
                    * u64::from(dst_ports.len())
                    * u64::from((*src_hosts).max(1))
            }
            // Answers pick learned tuples at random, as often as the trial
            // asks: not a frame limit.
            Tuples::Learned(_) => u64::MAX,
        }
    }
}

/// One direction of a trial.
#[derive(Debug, Clone)]
pub struct Direction {
    pub from: usize,
    pub to: usize,
    pub template: Template,
    pub tuples: Tuples,
    pub stream: u16,
    /// Native-IPv6 background traffic mixed into this direction (RFC 8219
    /// §5.2), or none.
    pub background: Option<Background>,
}

/// RFC 8219 §5.2 background traffic: a share of a direction's frames are
/// native IPv6 that the DUT forwards without translating. They have their own
/// stream (counted apart at the receiver) and template (IPv6 to the far
/// tester's IPv6 address, at the IPv6 frame size), and take their ports from
/// the same RFC 4814 generators as the rest.
#[derive(Debug, Clone)]
pub struct Background {
    pub template: Template,
    pub stream: u16,
    /// Background frames per million of the direction's frames.
    pub share_ppm: u32,
}

/// Whether frame `i` (from 0) of a direction is a background frame when
/// `ppm` per million are: exactly ⌊n·ppm/10⁶⌋ of the first n frames, evenly
/// spread (the error diffusion of a line drawn with integer steps), so every
/// stretch of a trial carries the share, not just the whole.
pub fn is_background(i: u64, ppm: u32) -> bool {
    let p = u128::from(ppm);
    let i = u128::from(i);
    (i + 1) * p / 1_000_000 > i * p / 1_000_000
}

/// What the receivers keep per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Nothing,
    /// The delay of every `n`th frame (RFC 8219 §7.2 tagged frames).
    Tagged(u32),
    /// Every frame's delay, in arrival order (PDV and IPDV, §7.3–7.4), and
    /// every `n`th frame's apart.
    All(u32),
}

/// One trial.
#[derive(Debug, Clone)]
pub struct TrialSpec {
    /// Frames per second, per direction.
    pub rate: u64,
    pub duration: Duration,
    /// Frames at most per direction (phase 1 sends exactly the tuple count).
    pub frames: Option<u64>,
    pub directions: Vec<Direction>,
    /// How long receivers keep listening after the last frame was sent.
    pub drain: Duration,
    pub record: Record,
    /// Keep the tuples of what arrives (the responder learns phase 1).
    pub learn: bool,
    pub tx_cpus: Vec<usize>,
    /// Receiving CPU of each port (by port index).
    pub rx_cpus: Vec<usize>,
    pub seed: u64,
    /// The share of the trial's frames the sender may be behind at the end
    /// and the trial still valid ([`BEHIND_LIMIT`] by default).
    pub behind_limit: f64,
}

/// What one direction of a trial saw.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DirectionResult {
    pub stream: u16,
    /// Every frame, background included.
    pub sent: u64,
    pub received: u64,
    /// Of those, the native-IPv6 background frames (RFC 8219 §5.2).
    pub background_sent: u64,
    pub background_received: u64,
    /// Frames the sender was behind its schedule at the end (unsent ones
    /// included).
    pub behind: f64,
    pub valid: bool,
    /// The latest any batch went out, nanoseconds.
    pub max_late_ns: u64,
    pub elapsed_s: f64,
    /// Delays of the tagged frames (every `n`th), nanoseconds.
    #[serde(skip)]
    pub tagged: Vec<u64>,
    /// Delays of every frame, in arrival order ([`Record::All`]).
    #[serde(skip)]
    pub delays: Vec<u64>,
    #[serde(skip)]
    pub learned: Vec<Seen4>,
}

/// A learned tuple as the responder sees it: who sent (after the DUT's
/// translation), from which port, to which port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seen4 {
    pub src: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
}

/// The whole trial.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TrialResult {
    pub directions: Vec<DirectionResult>,
    /// Frames the tester's own receive rings dropped: the tester's loss.
    pub rx_ring_drops: u64,
}

impl TrialResult {
    pub fn sent(&self) -> u64 {
        self.directions.iter().map(|d| d.sent).sum()
    }
    pub fn received(&self) -> u64 {
        self.directions.iter().map(|d| d.received).sum()
    }
    pub fn valid(&self) -> bool {
        self.rx_ring_drops == 0 && self.directions.iter().all(|d| d.valid)
    }
    pub fn background_sent(&self) -> u64 {
        self.directions.iter().map(|d| d.background_sent).sum()
    }
    pub fn background_received(&self) -> u64 {
        self.directions.iter().map(|d| d.background_received).sum()
    }
}

/// A pseudorandom permutation of 0..n (for phase 1's unique tuples): an affine
/// map with a multiplier coprime to n.
struct Permutation {
    n: u64,
    mul: u64,
    add: u64,
}

impl Permutation {
    fn new(n: u64, seed: u64) -> Permutation {
        let n = n.max(1);
        let mut mul = (seed | 1) % n;
        while gcd(mul.max(1), n) != 1 {
            mul += 1;
        }
        Permutation {
            n,
            mul: mul.max(1),
            add: seed.rotate_left(17) % n,
        }
    }
    fn at(&self, i: u64) -> u64 {
        ((u128::from(i) * u128::from(self.mul) + u128::from(self.add)) % u128::from(self.n)) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Batch size for a rate: about 50 µs of frames, 1 to 64.
fn batch_for(rate: u64) -> usize {
    (rate / 20_000).clamp(1, 64) as usize
}

struct Sender<'a> {
    tx: &'a mut TxRing,
    dir: &'a Direction,
    spec: &'a TrialSpec,
    cpu: Option<usize>,
}

impl Sender<'_> {
    fn run(self, start: Instant) -> io::Result<DirectionResult> {
        if let Some(cpu) = self.cpu {
            pin(cpu);
        }
        let spec = self.spec;
        let frames_cap = spec.frames.unwrap_or(u64::MAX).min(self.dir.tuples.count());
        let capped = spec.frames.is_some();
        // A capped trial (phase 1) lasts as long as its frames take.
        let duration = if frames_cap < u64::MAX {
            Duration::from_nanos(
                (u128::from(frames_cap) * 1_000_000_000 / u128::from(spec.rate.max(1))) as u64,
            )
            .max(Duration::from_millis(1))
        } else {
            spec.duration
        };
        let batch = batch_for(spec.rate);
        let pacer = Pacer::new(spec.rate, duration, batch);
        let total = pacer.total().unwrap_or(0).min(frames_cap);
        let seed = spec.seed ^ u64::from(self.dir.stream).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut stamper = Stamper::new(self.dir, seed);
        let mut background_sent = 0u64;
        let mut sent = 0u64;
        let mut max_late = Duration::ZERO;
        let mut last_late = Duration::ZERO;
        // Sleep through most waits so that the DUT, which shares the CPUs,
        // gets them; busy-wait only the last few microseconds before a batch,
        // and the whole of the trial's last 2 ms, so that the end of the
        // schedule (what the 0.001 % rule checks) is kept precisely. A late
        // wake-up mid-trial is caught up at once (a burst of a few batches).
        let spin_below = Duration::from_micros(30);
        let final_stretch = duration.saturating_sub(Duration::from_millis(2));
        loop {
            let now = start.elapsed();
            let n = match pacer.step(sent, now) {
                // Phase 1 must offer every connection, however late.
                Step::Done if capped && sent < total => (batch as u64).min(total - sent),
                Step::Done => break,
                Step::WaitUntil(t) => {
                    let left = t.saturating_sub(now);
                    if left > spin_below && now < final_stretch {
                        std::thread::sleep(left - spin_below / 2);
                    } else {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                Step::Send(n) => (n as u64).min(total - sent),
            };
            if n == 0 {
                break;
            }
            let tx_ns = realtime_ns();
            for _ in 0..n {
                let (background, mut stamp) = stamper.next_frame();
                stamp.tag.tx_ns = tx_ns;
                let template = match (&self.dir.background, background) {
                    (Some(b), true) => {
                        background_sent += 1;
                        &b.template
                    }
                    _ => &self.dir.template,
                };
                template.stamp_into(self.tx.next_slot()?, &stamp);
                self.tx.commit(template.len());
            }
            // Handed over now: lateness counts to here, not to the end of the
            // system call, which also runs the receiving side of the veth.
            last_late = pacer.lateness(sent + n - 1, start.elapsed());
            max_late = max_late.max(last_late);
            self.tx.kick()?;
            sent += n;
        }
        let elapsed = start.elapsed();
        let rate = spec.rate as f64;
        let behind = (total - sent) as f64 + last_late.as_secs_f64() * rate;
        Ok(DirectionResult {
            stream: self.dir.stream,
            sent,
            received: 0,
            background_sent,
            background_received: 0,
            behind,
            // Less than one frame late is on schedule, however short the trial
            // (a 10 000-frame phase 1 would otherwise allow 0.1 frame).
            valid: behind <= (spec.behind_limit * total as f64).max(1.0),
            max_late_ns: max_late.as_nanos() as u64,
            elapsed_s: elapsed.as_secs_f64(),
            tagged: Vec::new(),
            delays: Vec::new(),
            learned: Vec::new(),
        })
    }
}

/// A pseudorandom host offset in 0..n (0 when n ≤ 1).
fn pick(g: &mut PortGen, n: u16) -> u16 {
    if n <= 1 {
        0
    } else {
        ((u32::from(g.next_port()) * u32::from(n)) >> 16) as u16
    }
}

/// The per-frame choices of one direction: test or background frame
/// (RFC 8219 §5.2), and the stamp — RFC 4814 pseudorandom ports and host
/// offsets, RFC 9693 phase 1's unique tuples, or phase 2's learned answers.
/// Apart from the rings, so that the mix can be checked on its own.
pub struct Stamper<'a> {
    dir: &'a Direction,
    sports: PortGen,
    dports: PortGen,
    hosts: PortGen,
    src_hosts: u16,
    dst_hosts: u16,
    perm: Permutation,
    /// Frames stamped so far, and per stream (each stream's tags count from 0).
    index: u64,
    seq: u64,
    background_seq: u64,
}

impl<'a> Stamper<'a> {
    pub fn new(dir: &'a Direction, seed: u64) -> Stamper<'a> {
        let all = PortRange {
            first: 1,
            last: 65535,
        };
        let (sports, dports, src_hosts, dst_hosts) = match &dir.tuples {
            Tuples::Random {
                src_ports,
                dst_ports,
                src_hosts,
                dst_hosts,
            } => (
                PortGen::new(*src_ports, seed),
                PortGen::new(*dst_ports, seed.rotate_left(23)),
                *src_hosts,
                *dst_hosts,
            ),
            _ => (PortGen::new(all, seed), PortGen::new(all, seed), 0, 0),
        };
        Stamper {
            dir,
            sports,
            dports,
            hosts: PortGen::new(all, seed.rotate_left(41)),
            src_hosts,
            dst_hosts,
            perm: Permutation::new(dir.tuples.count().min(u64::MAX / 2), seed),
            index: 0,
            seq: 0,
            background_seq: 0,
        }
    }

    /// The next frame: whether it is a background frame, and its stamp (the
    /// tag's send time is the sender's to fill in).
    pub fn next_frame(&mut self) -> (bool, Stamp) {
        let background = self
            .dir
            .background
            .as_ref()
            .is_some_and(|b| is_background(self.index, b.share_ppm));
        self.index += 1;
        let (seq, stream) = match (&self.dir.background, background) {
            (Some(b), true) => {
                self.background_seq += 1;
                (self.background_seq - 1, b.stream)
            }
            _ => {
                self.seq += 1;
                (self.seq - 1, self.dir.stream)
            }
        };
        let mut stamp = match &self.dir.tuples {
            Tuples::Random { .. } => Stamp {
                src_port: self.sports.next_port(),
                dst_port: self.dports.next_port(),
                src_host: pick(&mut self.hosts, self.src_hosts),
                dst_host: pick(&mut self.hosts, self.dst_hosts),
                tag: Tag::default(),
            },
            Tuples::Enumerate {
                src_ports,
                dst_ports,
                src_hosts,
            } => {
                let i = self.perm.at(seq % self.perm.n);
                let h = u64::from((*src_hosts).max(1));
                let w = u64::from(src_ports.len());
                Stamp {
                    src_host: (i % h) as u16,
                    src_port: src_ports.first + (i / h % w) as u16,
                    dst_port: dst_ports.first + (i / h / w) as u16,
                    ..Stamp::default()
                }
            }
            Tuples::Learned(v) => {
                let i = usize::from(self.hosts.next_port()) * v.len() / 65536;
                v[i.min(v.len() - 1)]
            }
        };
        stamp.tag = Tag {
            tx_ns: 0,
            seq: seq as u32,
            stream,
        };
        (background, stamp)
    }
}

/// Per-stream receive state.
struct StreamRx {
    stream: u16,
    /// Background frames are only counted: no delays, nothing learned.
    background: bool,
    received: u64,
    tagged: Vec<u64>,
    delays: Vec<u64>,
    learned: HashSet<Seen4>,
}

fn receive(
    rx: &mut RxRing,
    streams: &mut [StreamRx],
    record: Record,
    learn: bool,
    stop: &AtomicBool,
    cpu: Option<usize>,
) {
    if let Some(cpu) = cpu {
        pin(cpu);
    }
    let _ = rx.drops(); // reset the counter
    loop {
        let got = rx.poll_block(1, |f| {
            let Some(seen) = frame::parse(f.data) else {
                return;
            };
            let Some(s) = streams.iter_mut().find(|s| s.stream == seen.tag.stream) else {
                return; // a late frame of an earlier trial
            };
            s.received += 1;
            if s.background {
                return;
            }
            let delay = f.rx_ns.saturating_sub(seen.tag.tx_ns);
            match record {
                Record::Nothing => {}
                Record::Tagged(n) | Record::All(n) => {
                    if seen.tag.seq % n.max(1) == 0 {
                        s.tagged.push(delay);
                    }
                    if let Record::All(_) = record {
                        s.delays.push(delay);
                    }
                }
            }
            if learn {
                s.learned.insert(Seen4 {
                    src: seen.src,
                    src_port: seen.src_port,
                    dst_port: seen.dst_port,
                });
            }
        });
        if !got && stop.load(Ordering::Acquire) {
            break;
        }
    }
}

/// Run one trial over `ports`.
pub fn run_trial(ports: &mut [Port], spec: &TrialSpec) -> io::Result<TrialResult> {
    let stop = AtomicBool::new(false);
    // Receive state per destination port.
    let mut per_port: Vec<Vec<StreamRx>> = (0..ports.len()).map(|_| Vec::new()).collect();
    for d in &spec.directions {
        let streams = std::iter::once((d.stream, false))
            .chain(d.background.as_ref().map(|b| (b.stream, true)));
        for (stream, background) in streams {
            per_port[d.to].push(StreamRx {
                stream,
                background,
                received: 0,
                tagged: Vec::new(),
                delays: Vec::new(),
                learned: HashSet::new(),
            });
        }
    }
    let (txs, mut rxs): (Vec<_>, Vec<_>) = ports.iter_mut().map(|p| (&mut p.tx, &mut p.rx)).unzip();
    let mut txs: Vec<Option<&mut TxRing>> = txs.into_iter().map(Some).collect();
    let mut sent_results = Vec::new();
    std::thread::scope(|s| -> io::Result<()> {
        let mut receivers = Vec::new();
        for (i, (rx, streams)) in rxs.iter_mut().zip(per_port.iter_mut()).enumerate() {
            if streams.is_empty() {
                continue;
            }
            let cpu = spec.rx_cpus.get(i % spec.rx_cpus.len().max(1)).copied();
            let stop = &stop;
            receivers
                .push(s.spawn(move || receive(rx, streams, spec.record, spec.learn, stop, cpu)));
        }
        // Let the receivers reach their loops.
        std::thread::sleep(Duration::from_millis(20));
        let start = Instant::now();
        let mut senders = Vec::new();
        for (k, d) in spec.directions.iter().enumerate() {
            let tx = txs[d.from].take().ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "two directions from one port")
            })?;
            let cpu = spec.tx_cpus.get(k % spec.tx_cpus.len().max(1)).copied();
            let sender = Sender {
                tx,
                dir: d,
                spec,
                cpu,
            };
            senders.push(s.spawn(move || sender.run(start)));
        }
        let mut first_err = None;
        for h in senders {
            match h.join().map_err(|_| io::Error::other("sender panicked"))? {
                Ok(r) => sent_results.push(r),
                Err(e) => first_err = first_err.or(Some(e)),
            }
        }
        std::thread::sleep(spec.drain);
        stop.store(true, Ordering::Release);
        for h in receivers {
            h.join()
                .map_err(|_| io::Error::other("receiver panicked"))?;
        }
        first_err.map_or(Ok(()), Err)
    })?;
    let mut result = TrialResult::default();
    for (mut d, dir) in sent_results.into_iter().zip(&spec.directions) {
        let background = dir.background.as_ref().map(|b| b.stream);
        for s in per_port.iter_mut().flatten() {
            if s.stream == d.stream {
                d.received += s.received;
                d.tagged = std::mem::take(&mut s.tagged);
                d.delays = std::mem::take(&mut s.delays);
                d.learned = s.learned.drain().collect();
            } else if Some(s.stream) == background {
                // Received background frames count like the others.
                d.received += s.received;
                d.background_received = s.received;
            }
        }
        result.directions.push(d);
    }
    result.rx_ring_drops = ports.iter().map(|p| p.rx.drops()).sum();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9693 phase 1: every tuple once.
    #[test]
    fn permutation_visits_every_index_once() {
        for (n, seed) in [(1u64, 0u64), (10, 3), (1000, 77), (64_512, 12_345), (6, 4)] {
            let p = Permutation::new(n, seed);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.at(i) as usize;
                assert!(!seen[j], "n {n}: {j} twice");
                seen[j] = true;
            }
        }
    }

    /// RFC 4814 §4: pseudorandom ports, inside the configured ranges, with no
    /// fixed pattern (no constant step, no short period, every port drawn).
    #[test]
    fn rfc4814_ports_in_range_without_a_fixed_pattern() {
        let range = PortRange {
            first: 1024,
            last: 1087,
        };
        let mut g = PortGen::new(range, 4814);
        let v: Vec<u16> = (0..20_000).map(|_| g.next_port()).collect();
        assert!(v.iter().all(|p| (1024..=1087).contains(p)));
        assert!((1024..=1087).all(|p| v.contains(&p)), "every port drawn");
        let steps: std::collections::HashSet<i32> = v
            .windows(2)
            .map(|w| i32::from(w[1]) - i32::from(w[0]))
            .collect();
        assert!(steps.len() > 50, "{} distinct steps", steps.len());
        for period in 1..=256 {
            assert!(
                v.iter().zip(&v[period..]).filter(|(a, b)| a == b).count() < v.len() / 8,
                "period {period}"
            );
        }
    }

    fn template(src: &str, dst: &str, size: u16) -> Template {
        let (src, dst): (IpAddr, IpAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        Template::new(&frame::FlowSpec {
            src_mac: crate::bed::MAC_TESTER_LEFT,
            dst_mac: crate::bed::MAC_DUT_LEFT,
            src,
            dst,
            frame_size: size,
        })
        .unwrap()
    }

    /// RFC 8219 §5.2 background traffic: exactly the share asked for, spread
    /// evenly through the trial, each kind numbered in its own stream, and the
    /// RFC 4814 ports of both kinds still pseudorandom within their ranges.
    #[test]
    fn rfc8219_5_2_background_share_is_exact_and_ports_stay_random() {
        let range = PortRange {
            first: 1024,
            last: 1087,
        };
        for pct in [0.0, 1.0, 10.0, 33.3, 50.0, 90.0] {
            let ppm = (pct * 10_000.0_f64).round() as u32;
            let dir = Direction {
                from: 0,
                to: 1,
                template: template("2001:db8:1::5", "2001:db8:64::c633:6407", 84),
                tuples: Tuples::Random {
                    src_ports: range,
                    dst_ports: range,
                    src_hosts: 1,
                    dst_hosts: 1,
                },
                stream: 7,
                background: Some(Background {
                    template: template("2001:db8:1::5", "2001:db8:2::7", 84),
                    stream: 8,
                    share_ppm: ppm,
                }),
            };
            let mut st = Stamper::new(&dir, 4814);
            let n = 100_000u64;
            let frames: Vec<(bool, Stamp)> = (0..n).map(|_| st.next_frame()).collect();
            let count = frames.iter().filter(|f| f.0).count() as u64;
            assert_eq!(count, n * u64::from(ppm) / 1_000_000, "{pct} %");
            // Every 1000 frames carry the share, give or take one frame.
            for w in frames.chunks(1000) {
                let c = w.iter().filter(|f| f.0).count() as f64;
                assert!((c - pct * 10.0).abs() <= 1.0, "{pct} %: {c} in 1000");
            }
            for (kind, stream) in [(false, 7u16), (true, 8)] {
                let mine: Vec<&Stamp> = frames
                    .iter()
                    .filter(|f| f.0 == kind)
                    .map(|f| &f.1)
                    .collect();
                assert!(mine.iter().all(|s| s.tag.stream == stream));
                assert!(mine.iter().enumerate().all(|(i, s)| s.tag.seq == i as u32));
                if mine.len() < 1000 {
                    continue;
                }
                let ports: Vec<u16> = mine.iter().map(|s| s.src_port).collect();
                assert!(ports.iter().all(|p| (1024..=1087).contains(p)));
                assert!(
                    (1024..=1087).all(|p| ports.contains(&p)),
                    "every port drawn"
                );
                let steps: HashSet<i32> = ports
                    .windows(2)
                    .map(|w| i32::from(w[1]) - i32::from(w[0]))
                    .collect();
                assert!(steps.len() > 50, "{pct} %: {} distinct steps", steps.len());
            }
        }
        assert!(!is_background(0, 0) && is_background(0, 1_000_000));
    }

    #[test]
    fn batches_follow_the_rate() {
        assert_eq!(batch_for(1_000), 1);
        assert_eq!(batch_for(200_000), 10);
        assert_eq!(batch_for(10_000_000), 64);
    }

    #[test]
    fn host_offsets_stay_in_range() {
        let mut g = PortGen::new(
            PortRange {
                first: 1,
                last: 65535,
            },
            9,
        );
        assert!((0..1000).all(|_| pick(&mut g, 0) == 0 && pick(&mut g, 1) == 0));
        let v: Vec<u16> = (0..10_000).map(|_| pick(&mut g, 10)).collect();
        assert!(v.iter().all(|&h| h < 10));
        assert!((0..10).all(|h| v.contains(&h)));
    }
}
