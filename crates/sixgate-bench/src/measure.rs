//! The measurements: RFC 8219 §7 (throughput, latency, PDV, IPDV, frame loss
//! rate) and RFC 9693 (stateful: phase 1 / phase 2, maximum connection
//! establishment rate, connection tracking table capacity, tear-down rate).
//!
//! [`Tester`] owns the two tester ports and turns each measurement into
//! trials for the [`engine`](crate::engine); every trial also becomes a
//! [`TrialRow`] for the CSV.

use std::io;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde::Serialize;
use sixgate_loadgen::ports::PortRange;

use crate::bed::{self, MAC_DUT_LEFT, MAC_DUT_RIGHT, MAC_TESTER_LEFT, MAC_TESTER_RIGHT};
use crate::dut::Traffic;
use crate::engine::{self, Background, Direction, Port, Record, TrialResult, TrialSpec, Tuples};
use crate::frame::{Family, FlowSpec, Mac, Stamp, Template};
use crate::search::{self, Outcome, SearchParams, SearchResult};
use crate::stats::{Latency, Spread};

/// Settings shared by every measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Trial duration, seconds (RFC 8219 §7.1 asks for at least 60).
    pub duration_s: f64,
    /// How long the receivers wait for late frames after a trial, seconds.
    pub drain_s: f64,
    /// Both directions at once (RFC 8219 §7.1 SHOULD), else left → right only.
    pub bidirectional: bool,
    /// RFC 4814 pseudorandom port ranges.
    pub src_ports: String,
    pub dst_ports: String,
    /// Pseudorandom addresses: this many tester hosts per side (1 = fixed).
    pub hosts: u16,
    pub tx_cpus: Vec<usize>,
    pub rx_cpus: Vec<usize>,
    pub seed: u64,
    /// Rate of RFC 9693 phase 1 (frames/s).
    pub phase1_rate: u64,
    /// RFC 8219 §5.2 background traffic: this percentage of the left tester's
    /// frames are native IPv6 to the right tester's IPv6 address, which the
    /// DUT forwards without translating (0: none).
    pub background_pct: f64,
    /// A trial is invalid when its sender ends more than this share of its
    /// frames behind schedule (0.00001 = siitperf's 0.001 %).
    pub behind_limit: f64,
}

/// Why a trial does not count, in the words of what to do (empty when it
/// counts): the tester's own limits, not the DUT's, so its loss says
/// nothing, even a 0 % one.
pub fn invalid_why(row: &TrialRow) -> String {
    if row.valid {
        return String::new();
    }
    let mut why = Vec::new();
    if row.rx_ring_drops > 0 {
        why.push(format!(
            "the tester's receive ring dropped {} frames",
            row.rx_ring_drops
        ));
    }
    if row.behind_frames > 0.0 {
        why.push(format!(
            "the tester's sender ended {:.0} frames behind schedule (--behind-limit)",
            row.behind_frames
        ));
    }
    if why.is_empty() {
        why.push("the tester could not keep the rate".into());
    }
    format!(
        "INVALID, not counted: {}; the tester, not the DUT, is at its limit at this rate \
         (lower --max-rate to the self-test ceiling, or give the tester CPUs of its own: \
         --tx-cpus, --rx-cpus, --dut-cpu)",
        why.join(", and ")
    )
}

/// One trial, as the CSV has it.
#[derive(Debug, Clone, Serialize)]
pub struct TrialRow {
    pub test: String,
    pub frame_size: u16,
    pub rate: u64,
    pub direction: String,
    pub sent: u64,
    pub received: u64,
    pub loss_pct: f64,
    pub behind_frames: f64,
    pub valid: bool,
    pub rx_ring_drops: u64,
    pub elapsed_s: f64,
    /// Of `sent` and `received`: the native-IPv6 background frames.
    pub background_sent: u64,
    pub background_received: u64,
}

impl TrialRow {
    pub const HEADER: &'static str = "test,frame_size,rate,direction,sent,received,loss_pct,behind_frames,valid,rx_ring_drops,elapsed_s,background_sent,background_received";

    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{},{},{:.6},{:.3},{},{},{:.3},{},{}",
            self.test,
            self.frame_size,
            self.rate,
            self.direction,
            self.sent,
            self.received,
            self.loss_pct,
            self.behind_frames,
            self.valid,
            self.rx_ring_drops,
            self.elapsed_s,
            self.background_sent,
            self.background_received
        )
    }
}

/// Throughput at one frame size (RFC 8219 §7.1), over the repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// IPv6 frame size and its IPv4 counterpart (RFC 8219 §5.1).
    pub frame_size: u16,
    pub frame_size_v4: u16,
    pub searches: Vec<SearchResult>,
    /// Frames/s per direction: median, 1st and 99th percentile (§10).
    pub fps: Option<Spread>,
    /// Near the self-test ceiling, or a sender behind schedule, or the
    /// receive ring dropped: the tester may be the limit.
    pub tester_limited: bool,
    /// Native-IPv6 background frames (RFC 8219 §5.2) sent and received in the
    /// trial at the rate found (by the last search), when there are any.
    pub background_sent: u64,
    pub background_received: u64,
}

/// One point of the frame loss rate sweep (RFC 8219 §7.5).
#[derive(Debug, Clone, Serialize)]
pub struct LossPoint {
    pub frame_size: u16,
    pub rate: u64,
    pub sent: u64,
    pub received: u64,
    pub loss_pct: f64,
    pub valid: bool,
    /// Of `sent` and `received`: the native-IPv6 background frames.
    pub background_sent: u64,
    pub background_received: u64,
}

/// Latency, PDV and IPDV of one direction (RFC 8219 §7.2–7.4).
#[derive(Debug, Clone, Serialize)]
pub struct LatencyResult {
    pub frame_size: u16,
    pub rate: u64,
    pub direction: String,
    /// Tagged frames (§7.2): typical = median, worst case = 99.9th percentile.
    pub tagged: Option<Latency>,
    /// Tagged frames sent but never received.
    pub tagged_lost: u64,
    /// Every frame (§7.3 PDV, §7.4 IPDV).
    pub all: Option<Latency>,
    /// Loss over every frame of the direction, background included.
    pub loss_pct: f64,
    pub valid: bool,
    /// Native-IPv6 background frames (RFC 8219 §5.2) of this direction: only
    /// counted, their delays are not in the figures above.
    pub background_sent: u64,
    pub background_received: u64,
}

/// RFC 9693 results.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Stateful {
    /// Connections phase 1 opens before phase 2.
    pub connections: u64,
    pub phase1_rate: u64,
    /// Connections the responder saw in the last phase 1.
    pub established: u64,
    /// Maximum connection establishment rate (connections/s): the highest
    /// phase 1 rate at which every connection got through.
    pub max_establishment_rate: Option<SearchResult>,
    /// Connection tracking table capacity: the most connections phase 1 could
    /// open with all of them working.
    pub table_capacity: Option<u64>,
    /// Connection tear-down rate (connections/s), where measurable.
    pub teardown_rate: Option<f64>,
    pub notes: Vec<String>,
}

/// The tester: two ports and the DUT's addresses.
pub struct Tester {
    ports: Vec<Port>,
    pub traffic: Traffic,
    pub settings: Settings,
    src_ports: PortRange,
    dst_ports: PortRange,
    next_stream: u16,
    /// What the right side learned in phase 1: its answers in phase 2.
    learned: Option<(IpAddr, Vec<Stamp>)>,
    pub trials: Vec<TrialRow>,
    /// Print a line per trial on standard error.
    pub verbose: bool,
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

/// The MAC addresses frames carry: from a tester port to the device at the
/// other end of its link (the DUT, or the other tester port in the loop bed).
fn macs(from_left: bool, looped: bool) -> (Mac, Mac) {
    match (from_left, looped) {
        (true, false) => (MAC_TESTER_LEFT, MAC_DUT_LEFT),
        (false, false) => (MAC_TESTER_RIGHT, MAC_DUT_RIGHT),
        (true, true) => (MAC_TESTER_LEFT, MAC_TESTER_RIGHT),
        (false, true) => (MAC_TESTER_RIGHT, MAC_TESTER_LEFT),
    }
}

impl Tester {
    /// Open the ports of `bed`.
    pub fn new(bed: &bed::Bed, traffic: Traffic, settings: Settings) -> io::Result<Tester> {
        let left = Port::open(bed.left.name(), bed::TESTER_LEFT_IF)?;
        let right = Port::open(bed.right.name(), bed::TESTER_RIGHT_IF)?;
        let src_ports = settings
            .src_ports
            .parse()
            .map_err(|e| bad(format!("--src-ports: {e}")))?;
        let dst_ports = settings
            .dst_ports
            .parse()
            .map_err(|e| bad(format!("--dst-ports: {e}")))?;
        Ok(Tester {
            ports: vec![left, right],
            traffic,
            settings,
            src_ports,
            dst_ports,
            next_stream: (std::process::id() as u16) << 4,
            learned: None,
            trials: Vec::new(),
            verbose: false,
        })
    }

    fn template(
        &self,
        from_left: bool,
        src: IpAddr,
        dst: IpAddr,
        size: u16,
        looped: bool,
    ) -> io::Result<Template> {
        let (src_mac, dst_mac) = macs(from_left, looped);
        let family = if src.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        };
        Template::new(&FlowSpec {
            src_mac,
            dst_mac,
            src,
            dst,
            frame_size: family.frame_size(size),
        })
        .map_err(|e| bad(e.0))
    }

    /// The left tester's native-IPv6 background frames (RFC 8219 §5.2), if
    /// asked for: IPv6 to the right tester port's IPv6 address, which every
    /// bed routes through its DUT(s) by plain forwarding, at the IPv6 frame
    /// size.
    fn background(&mut self, size: u16, loop_bed: bool) -> io::Result<Option<Background>> {
        let pct = self.settings.background_pct;
        if pct <= 0.0 {
            return Ok(None);
        }
        let (src, dst) = bed::background_flow();
        Ok(Some(Background {
            template: self.template(true, src, dst, size, loop_bed)?,
            stream: self.stream(),
            share_ppm: (pct * 10_000.0).round() as u32,
        }))
    }

    fn stream(&mut self) -> u16 {
        self.next_stream = self.next_stream.wrapping_add(1);
        self.next_stream
    }

    fn random(&self, hosts_src: bool) -> Tuples {
        let hosts = self.settings.hosts.max(1);
        // A MAP-T CE's answers come back to the ports of its set it sent from.
        let (src_ports, dst_ports) = if !hosts_src && self.traffic.ce_ports.is_some() {
            (self.dst_ports, self.src_ports)
        } else {
            (self.src_ports, self.dst_ports)
        };
        Tuples::Random {
            src_ports,
            dst_ports,
            src_hosts: if hosts_src { hosts } else { 1 },
            dst_hosts: if hosts_src { 1 } else { hosts },
        }
    }

    /// One trial at `rate` frames/s per direction.
    fn trial(
        &mut self,
        test: &str,
        size: u16,
        rate: u64,
        record: Record,
        loop_bed: bool,
    ) -> io::Result<TrialResult> {
        let (fs, fd) = self.traffic.forward;
        let fwd = Direction {
            from: 0,
            to: 1,
            template: self.template(true, fs, fd, size, loop_bed)?,
            tuples: self.random(true),
            stream: self.stream(),
            background: self.background(size, loop_bed)?,
        };
        let mut directions = vec![fwd];
        if self.settings.bidirectional {
            let (rs, rd) = self.traffic.reverse;
            let (dst, tuples) = if self.traffic.stateful {
                if self.learned.is_none() {
                    self.phase1(size, self.settings.phase1_rate)?;
                }
                let (dst, stamps) = self.learned.clone().expect("phase 1 just ran");
                if stamps.is_empty() {
                    return Err(io::Error::other(
                        "RFC 9693 phase 1: no connection got through the DUT, so the IPv4 side has nothing to answer",
                    ));
                }
                (dst, Tuples::Learned(stamps))
            } else {
                (rd, self.random(false))
            };
            directions.push(Direction {
                from: 1,
                to: 0,
                template: self.template(false, rs, dst, size, loop_bed)?,
                tuples,
                stream: self.stream(),
                background: None,
            });
        }
        let spec = TrialSpec {
            rate,
            duration: Duration::from_secs_f64(self.settings.duration_s),
            frames: None,
            directions,
            drain: Duration::from_secs_f64(self.settings.drain_s),
            record,
            learn: false,
            tx_cpus: self.settings.tx_cpus.clone(),
            rx_cpus: self.settings.rx_cpus.clone(),
            seed: self.settings.seed ^ u64::from(self.next_stream),
            behind_limit: self.settings.behind_limit,
        };
        let r = engine::run_trial(&mut self.ports, &spec)?;
        self.log(test, size, rate, &r);
        Ok(r)
    }

    fn log(&mut self, test: &str, size: u16, rate: u64, r: &TrialResult) {
        for (i, d) in r.directions.iter().enumerate() {
            let row = TrialRow {
                test: test.to_owned(),
                frame_size: size,
                rate,
                direction: if i == 0 {
                    "left-to-right"
                } else {
                    "right-to-left"
                }
                .into(),
                sent: d.sent,
                received: d.received,
                loss_pct: Outcome {
                    sent: d.sent,
                    received: d.received,
                    valid: true,
                }
                .loss_pct(),
                behind_frames: d.behind,
                valid: d.valid && r.rx_ring_drops == 0,
                rx_ring_drops: r.rx_ring_drops,
                elapsed_s: d.elapsed_s,
                background_sent: d.background_sent,
                background_received: d.background_received,
            };
            if self.verbose {
                let background = if row.background_sent > 0 {
                    format!(
                        " (background {} of {})",
                        row.background_received, row.background_sent
                    )
                } else {
                    String::new()
                };
                eprintln!(
                    "  {:<12} {:>5} B {:>9} fps {:<13} sent {:>9} received {:>9}{background} loss {:>8.4} % {}",
                    row.test,
                    row.frame_size,
                    row.rate,
                    row.direction,
                    row.sent,
                    row.received,
                    row.loss_pct,
                    invalid_why(&row)
                );
            }
            self.trials.push(row);
        }
    }

    /// RFC 9693 phase 1: open every (source port, destination port) pair of
    /// the ranges once, left to right, at `rate`; the right side learns each
    /// translated tuple so that phase 2 can answer exactly those. Returns
    /// (connections offered, connections that arrived).
    pub fn phase1(&mut self, size: u16, rate: u64) -> io::Result<(u64, u64)> {
        self.phase1_with(size, rate, self.src_ports, self.dst_ports)
    }

    fn phase1_with(
        &mut self,
        size: u16,
        rate: u64,
        src_ports: PortRange,
        dst_ports: PortRange,
    ) -> io::Result<(u64, u64)> {
        let (fs, fd) = self.traffic.forward;
        let dir = Direction {
            from: 0,
            to: 1,
            template: self.template(true, fs, fd, size, false)?,
            tuples: Tuples::Enumerate {
                src_ports,
                dst_ports,
                src_hosts: self.settings.hosts.max(1),
            },
            stream: self.stream(),
            // Phase 1 opens connections: every frame is one.
            background: None,
        };
        let n = dir.tuples.count();
        let spec = TrialSpec {
            rate,
            duration: Duration::from_secs(3600),
            frames: Some(n),
            directions: vec![dir],
            drain: Duration::from_secs_f64(self.settings.drain_s.max(0.2)),
            record: Record::Nothing,
            learn: true,
            tx_cpus: self.settings.tx_cpus.clone(),
            rx_cpus: self.settings.rx_cpus.clone(),
            seed: self.settings.seed ^ 0x9693,
            behind_limit: self.settings.behind_limit,
        };
        let r = engine::run_trial(&mut self.ports, &spec)?;
        self.log("phase1", size, rate, &r);
        let d = &r.directions[0];
        let learned = &d.learned;
        let base = learned
            .first()
            .map(|s| s.src)
            .unwrap_or(self.traffic.reverse.1);
        let stamps = learned
            .iter()
            .filter(|s| same_upper(s.src, base))
            .map(|s| Stamp {
                src_port: s.dst_port,
                dst_port: s.src_port,
                src_host: 0,
                dst_host: low16(s.src).wrapping_sub(low16(base)),
                tag: Default::default(),
            })
            .collect::<Vec<_>>();
        let got = learned.len() as u64;
        self.learned = Some((base, stamps));
        Ok((d.sent, got))
    }

    /// RFC 8219 §7.1 throughput at `size`, `repetitions` times.
    pub fn throughput(
        &mut self,
        size: u16,
        params: &SearchParams,
        repetitions: u32,
        ceiling: Option<u64>,
        deadline: Instant,
        loop_bed: bool,
    ) -> io::Result<Throughput> {
        let mut searches = Vec::new();
        // (rate, background sent, received) of the last search's trials.
        let mut background = Vec::new();
        for _ in 0..repetitions.max(1) {
            background.clear();
            let r = search::binary_search(
                params,
                |rate| {
                    let t = self.trial("throughput", size, rate, Record::Nothing, loop_bed)?;
                    background.push((rate, t.background_sent(), t.background_received()));
                    Ok::<_, io::Error>(Outcome {
                        sent: t.sent(),
                        received: t.received(),
                        valid: t.valid(),
                    })
                },
                || Instant::now() >= deadline,
            )?;
            searches.push(r);
            if Instant::now() >= deadline {
                break;
            }
        }
        let rates: Vec<f64> = searches.iter().map(|s| s.rate as f64).collect();
        let fps = Spread::of(&rates);
        let near_ceiling = match (ceiling, fps) {
            (Some(c), Some(s)) => c > 0 && s.median >= 0.9 * c as f64,
            _ => false,
        };
        let tester_limited = near_ceiling || searches.iter().any(|s| s.tester_limited);
        let found = searches.last().map_or(0, |s| s.rate);
        let (background_sent, background_received) = background
            .iter()
            .rev()
            .find(|b| b.0 == found)
            .map_or((0, 0), |b| (b.1, b.2));
        Ok(Throughput {
            frame_size: size,
            frame_size_v4: Family::V4.frame_size(size),
            searches,
            fps,
            tester_limited,
            background_sent,
            background_received,
        })
    }

    /// RFC 8219 §7.5 frame loss rate: trials from `max_rate` down in steps of
    /// `step_pct` % of it, until two in a row lose nothing.
    pub fn frame_loss(
        &mut self,
        size: u16,
        max_rate: u64,
        step_pct: u32,
        deadline: Instant,
        loop_bed: bool,
    ) -> io::Result<Vec<LossPoint>> {
        let mut points = Vec::new();
        let mut clean = 0;
        let step = (max_rate * u64::from(step_pct.clamp(1, 100)) / 100).max(1);
        let mut rate = max_rate;
        while rate > 0 && clean < 2 && Instant::now() < deadline {
            let t = self.trial("frame-loss", size, rate, Record::Nothing, loop_bed)?;
            let o = Outcome {
                sent: t.sent(),
                received: t.received(),
                valid: t.valid(),
            };
            clean = if o.within(0.0) { clean + 1 } else { 0 };
            points.push(LossPoint {
                frame_size: size,
                rate,
                sent: o.sent,
                received: o.received,
                loss_pct: o.loss_pct(),
                valid: o.valid,
                background_sent: t.background_sent(),
                background_received: t.background_received(),
            });
            rate = rate.saturating_sub(step);
        }
        Ok(points)
    }

    /// RFC 8219 §7.2–7.4 at `rate`: at least 500 tagged frames per direction
    /// (typical and worst-case latency), and every frame's delay (PDV, IPDV).
    pub fn latency(
        &mut self,
        size: u16,
        rate: u64,
        loop_bed: bool,
    ) -> io::Result<Vec<LatencyResult>> {
        // At least 500 tagged frames of the test stream (background frames
        // are not tagged).
        let share = 1.0 - self.settings.background_pct / 100.0;
        let frames = (rate as f64 * self.settings.duration_s * share) as u64;
        let every = (frames / 500).max(1) as u32;
        let t = self.trial("latency", size, rate, Record::All(every), loop_bed)?;
        Ok(t.directions
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let tagged_sent = (d.sent - d.background_sent).div_ceil(u64::from(every));
                LatencyResult {
                    frame_size: size,
                    rate,
                    direction: if i == 0 {
                        "left-to-right"
                    } else {
                        "right-to-left"
                    }
                    .into(),
                    tagged: Latency::from_delays(&d.tagged),
                    tagged_lost: tagged_sent.saturating_sub(d.tagged.len() as u64),
                    all: Latency::from_delays(&d.delays),
                    loss_pct: Outcome {
                        sent: d.sent,
                        received: d.received,
                        valid: true,
                    }
                    .loss_pct(),
                    valid: d.valid && t.rx_ring_drops == 0,
                    background_sent: d.background_sent,
                    background_received: d.background_received,
                }
            })
            .collect())
    }

    /// RFC 9693 maximum connection establishment rate: binary search on the
    /// phase 1 rate for the highest one at which every connection got
    /// through. Each step uses destination ports no earlier step used, so that
    /// it opens new connections (a DUT's table is not emptied in between).
    pub fn max_establishment_rate(
        &mut self,
        size: u16,
        params: &SearchParams,
        deadline: Instant,
    ) -> io::Result<SearchResult> {
        let mut step = 0u16;
        let src = self.src_ports;
        let width = self.dst_ports.len().min(64) as u16;
        search::binary_search(
            params,
            |rate| {
                let first = self
                    .dst_ports
                    .first
                    .wrapping_add(step.wrapping_mul(width))
                    .max(1);
                let dst = PortRange {
                    first,
                    last: first.saturating_add(width - 1),
                };
                step = step.wrapping_add(1);
                let (sent, got) = self.phase1_with(size, rate, src, dst)?;
                let valid = self.trials.last().is_none_or(|t| t.valid);
                Ok::<_, io::Error>(Outcome {
                    sent,
                    received: got,
                    valid,
                })
            },
            || Instant::now() >= deadline,
        )
    }

    /// RFC 9693 connection tracking table capacity: phase 1 with more and
    /// more connections (doubling from `start`, up to `max`, then bisecting)
    /// until not all of them get through.
    pub fn table_capacity(
        &mut self,
        size: u16,
        rate: u64,
        start: u64,
        max: u64,
        reset: &mut dyn FnMut() -> io::Result<()>,
        deadline: Instant,
    ) -> io::Result<u64> {
        let src_len = u64::from(self.src_ports.len());
        let hosts = u64::from(self.settings.hosts.max(1));
        let mut try_n = |n: u64, me: &mut Tester| -> io::Result<bool> {
            reset()?;
            let per_host = n.div_ceil(hosts);
            let dst_count = per_host.div_ceil(src_len).max(1);
            let src_count = per_host.min(src_len);
            let src = PortRange {
                first: me.src_ports.first,
                last: me.src_ports.first + (src_count - 1) as u16,
            };
            let dst = PortRange {
                first: 1,
                last: dst_count.min(65535) as u16,
            };
            let (sent, got) = me.phase1_with(size, rate, src, dst)?;
            Ok(got >= sent && sent > 0)
        };
        let (mut lo, mut hi) = (0u64, None::<u64>);
        let mut n = start.max(1);
        while Instant::now() < deadline {
            if try_n(n, self)? {
                lo = n;
                if n >= max {
                    break;
                }
                n = match hi {
                    None => (n * 2).min(max),
                    Some(h) => lo + (h - lo) / 2,
                };
            } else {
                hi = Some(n);
                n = lo + (n - lo) / 2;
            }
            if let Some(h) = hi
                && h - lo <= (h / 100).max(1)
            {
                break;
            }
            if n == lo {
                break;
            }
        }
        Ok(lo)
    }

    /// Forget what phase 1 learned (the DUT's state was reset).
    pub fn forget(&mut self) {
        self.learned = None;
    }

    /// How many connections phase 1 opened last (what the right side answers).
    pub fn learned(&self) -> u64 {
        self.learned.as_ref().map_or(0, |(_, v)| v.len() as u64)
    }
}

fn low16(ip: IpAddr) -> u16 {
    match ip {
        IpAddr::V4(a) => u32::from(a) as u16,
        IpAddr::V6(a) => u128::from(a) as u16,
    }
}

/// Same address but for the last 16 bits (a host offset can reach it).
fn same_upper(a: IpAddr, b: IpAddr) -> bool {
    match (a, b) {
        (IpAddr::V4(x), IpAddr::V4(y)) => u32::from(x) >> 16 == u32::from(y) >> 16,
        (IpAddr::V6(x), IpAddr::V6(y)) => u128::from(x) >> 16 == u128::from(y) >> 16,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30: an invalid trial says why and what to do, in its line.
    #[test]
    fn invalid_trial_says_why_and_what_to_do() {
        let mut row = TrialRow {
            test: "throughput".into(),
            frame_size: 84,
            rate: 1000,
            direction: "left-to-right".into(),
            sent: 10,
            received: 10,
            loss_pct: 0.0,
            behind_frames: 0.0,
            valid: true,
            rx_ring_drops: 0,
            elapsed_s: 1.0,
            background_sent: 0,
            background_received: 0,
        };
        assert_eq!(invalid_why(&row), "");
        row.valid = false;
        row.behind_frames = 12.0;
        row.rx_ring_drops = 3;
        let why = invalid_why(&row);
        assert!(why.starts_with("INVALID, not counted: "), "{why}");
        assert!(why.contains("receive ring dropped 3") && why.contains("12 frames behind"));
        assert!(why.contains("--max-rate"), "{why}");
    }

    #[test]
    fn csv_rows_have_every_column() {
        let row = TrialRow {
            test: "throughput".into(),
            frame_size: 84,
            rate: 1000,
            direction: "left-to-right".into(),
            sent: 1000,
            received: 999,
            loss_pct: 0.1,
            behind_frames: 0.0,
            valid: true,
            rx_ring_drops: 0,
            elapsed_s: 1.0,
            background_sent: 0,
            background_received: 0,
        };
        assert_eq!(
            row.csv().split(',').count(),
            TrialRow::HEADER.split(',').count()
        );
    }

    #[test]
    fn learned_addresses_share_the_upper_bits() {
        let a: IpAddr = "198.18.0.9".parse().unwrap();
        let b: IpAddr = "198.18.0.0".parse().unwrap();
        assert!(same_upper(a, b));
        assert_eq!(low16(a).wrapping_sub(low16(b)), 9);
        assert!(!same_upper(a, "10.0.0.1".parse().unwrap()));
    }
}
