//! The `sixgate bench` command line (see docs/bench.md).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sixgate_netns::interrupt;

use crate::bed::{Bed, BedOptions, Kind};
use crate::dut::{DutOptions, Preset, RunningDut};
use crate::frame::STANDARD_SIZES;
use crate::measure::{Settings, Stateful, Tester};
use crate::report::{Machine, Report};
use crate::search::SearchParams;

/// Where `self-test` leaves the tester's ceiling for later runs to compare with.
pub const CEILING_FILE: &str = "/tmp/sixgate-bench-ceiling.json";

/// `sixgate bench …`
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create or remove the namespace test bed (RFC 8219 §4.1, §4.2).
    #[command(subcommand)]
    Bed(BedCommand),
    /// The tester's own ceiling: throughput with no DUT (the two tester ports
    /// joined by one veth pair). Saved for later runs, whose results near it
    /// are flagged "tester-limited".
    #[command(
        mut_arg("dut", |a| a.hide(true)),
        mut_arg("config", |a| a.hide(true)),
        mut_arg("dut_cpu", |a| a.hide(true)),
        mut_arg("dut_log", |a| a.hide(true))
    )]
    SelfTest(RunArgs),
    /// RFC 8219 §7.1 throughput: binary search for the highest zero-loss rate.
    Throughput(RunArgs),
    /// RFC 8219 §7.5 frame loss rate: from --max-rate down in steps.
    FrameLoss(FrameLossArgs),
    /// RFC 8219 §7.2–7.4 latency, PDV and IPDV at a rate (default: the
    /// throughput, found first).
    Latency(LatencyArgs),
    /// RFC 9693 stateful tests: phase 1 / phase 2 throughput, maximum
    /// connection establishment rate, table capacity, tear-down rate.
    Stateful(StatefulArgs),
    /// Render a result's charts (throughput vs frame size, loss vs rate,
    /// latency percentiles) to an SVG or PNG file.
    Plot {
        /// A result written by --json.
        result: PathBuf,
        /// The chart file (.svg or .png).
        #[arg(long)]
        out: PathBuf,
        /// svg or png (default: from the --out file's extension). A PNG is
        /// the SVG rasterised, its text in the system's fonts.
        #[arg(long, value_enum)]
        format: Option<crate::plot::Format>,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum BedCommand {
    /// Create the bed (namespaces sgb-left, sgb-dut, sgb-right; with --dual
    /// sgb-dut1 and sgb-dut2).
    Up {
        /// Two translators in series, IPv4 at both tester ports (RFC 8219 §4.2).
        #[arg(long)]
        dual: bool,
        /// Name part: sgb-NAME-left… (several beds side by side).
        #[arg(long, default_value = "")]
        name: String,
        /// Tester hosts per family and side with static neighbours (for
        /// --hosts in the tests: pseudorandom addresses).
        #[arg(long, default_value_t = 16)]
        hosts: u16,
    },
    /// Remove the bed and whatever runs in it.
    Down {
        #[arg(long, default_value = "")]
        name: String,
    },
}

/// Options of every measurement.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The device under test.
    #[arg(long, value_enum, default_value_t = Preset::KernelV6)]
    pub dut: Preset,
    /// `--dut sixgate`: its configuration file (bench/configs/ has ones for the bed).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The bed's name part (as in `bed up --name`); without a bed up, one is
    /// made for the run and removed after it.
    #[arg(long, default_value = "")]
    pub name: String,
    /// With no bed up: make a dual-DUT bed for the run.
    #[arg(long)]
    pub dual: bool,
    /// IPv6 frame sizes, bytes (IPv4 frames are 20 bytes shorter, RFC 8219
    /// §5.1); `all` = 84,148,276,532,1044,1300,1518.
    #[arg(long, default_value = "84", value_name = "LIST")]
    pub frame_sizes: String,
    /// Seconds per trial (RFC 8219 asks for at least 60).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds the receivers wait for late frames after each trial.
    #[arg(long, default_value_t = 0.3)]
    pub drain: f64,
    /// Left to right only (default: both directions at once, RFC 8219 §7.1).
    #[arg(long)]
    pub unidirectional: bool,
    /// Loss a throughput trial may show and still pass, percent (default 0:
    /// RFC 8219 zero loss; e.g. 0.001 for an RFC 9971-style search).
    #[arg(long, default_value_t = 0.0)]
    pub loss_goal: f64,
    /// Lowest rate the search tries, frames/s per direction.
    #[arg(long, default_value_t = 1000)]
    pub min_rate: u64,
    /// Highest rate, tried first (default: the self-test ceiling, else 1 M).
    #[arg(long)]
    pub max_rate: Option<u64>,
    /// Stop the search when the bracket is this narrow (frames/s; default
    /// 0.5 % of --max-rate).
    #[arg(long)]
    pub precision: Option<u64>,
    /// Trials per search at most.
    #[arg(long, default_value_t = 20)]
    pub steps: u32,
    /// Searches per frame size (RFC 8219 §10 asks for 20: median, 1st and
    /// 99th percentiles).
    #[arg(long, default_value_t = 1)]
    pub repetitions: u32,
    /// Global timeout, seconds: the search stops and says so.
    #[arg(long, default_value_t = 3600.0)]
    pub timeout: f64,
    /// RFC 4814 pseudorandom source ports.
    #[arg(long, default_value = "1024-65535")]
    pub src_ports: String,
    /// RFC 4814 pseudorandom destination ports.
    #[arg(long, default_value = "1-49151")]
    pub dst_ports: String,
    /// Pseudorandom addresses: spread the sources (and the answers'
    /// destinations) over this many tester hosts (needs `bed up --hosts` ≥ it).
    #[arg(long, default_value_t = 1)]
    pub hosts: u16,
    /// CPUs of the sending threads, one per direction (left-to-right first);
    /// default: the first and the last CPU.
    #[arg(long)]
    pub tx_cpus: Option<String>,
    /// CPUs of the receiving threads, one per port (left port first: it
    /// receives the right-to-left stream); default: the first and the last
    /// CPU, so that each CPU sends one stream and receives the other.
    #[arg(long)]
    pub rx_cpus: Option<String>,
    /// A trial is invalid when its sender ends more than this percentage of
    /// the trial's frames behind schedule (siitperf's rule: 0.001).
    #[arg(long, default_value_t = 0.001)]
    pub behind_limit: f64,
    /// Pin the DUT's processes to this CPU.
    #[arg(long)]
    pub dut_cpu: Option<usize>,
    /// The tester's ceiling, frames/s per direction (default: from the last
    /// self-test, /tmp/sixgate-bench-ceiling.json).
    #[arg(long)]
    pub ceiling: Option<u64>,
    /// RFC 9693 phase 1 rate (stateful DUTs), frames/s.
    #[arg(long, default_value_t = 20_000)]
    pub phase1_rate: u64,
    /// RFC 8219 §5.2 background traffic: this percentage (0 to 99) of the left
    /// tester's frames are native IPv6 to the right tester port's IPv6 address
    /// (2001:db8:2::7), which the DUT forwards without translating; counted
    /// with the rest and reported apart.
    #[arg(long, default_value_t = 0.0, value_name = "PCT")]
    pub background: f64,
    /// Stateful DUTs: connections phase 1 opens (source ports 1024…, then
    /// more destination ports from 80).
    #[arg(long, default_value_t = 10_000)]
    pub connections: u64,
    /// Write the whole result as JSON here (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per trial and direction here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write what the DUT said on exit (its standard error: sixgate's exit
    /// counters and AF_XDP socket statistics, which say where frames were
    /// lost) here.
    #[arg(long, value_name = "FILE")]
    pub dut_log: Option<PathBuf>,
    /// Seed of the pseudorandom ports.
    #[arg(long, default_value_t = 4814)]
    pub seed: u64,
    /// No line per trial on standard error.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
pub struct FrameLossArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Step down by this percentage of --max-rate.
    #[arg(long, default_value_t = 10)]
    pub step_pct: u32,
}

#[derive(Debug, clap::Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Rate, frames/s per direction (default: the throughput, searched first).
    #[arg(long)]
    pub rate: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct StatefulArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Skip the maximum connection establishment rate search.
    #[arg(long)]
    pub no_establishment: bool,
    /// Search the table capacity up to this many connections (0: skip).
    #[arg(long, default_value_t = 0)]
    pub capacity_max: u64,
    /// Skip the phase 2 throughput search.
    #[arg(long)]
    pub no_throughput: bool,
}

/// Run `sixgate bench`; `sixgate` is the binary that `--dut sixgate` runs.
pub fn run(args: Args, sixgate: &Path) -> Result<(), String> {
    match args.command {
        Command::Bed(BedCommand::Up { dual, name, hosts }) => {
            sixgate_netns::check_host()?;
            let bed = Bed::up(&BedOptions {
                name,
                kind: if dual { Kind::Dual } else { Kind::Single },
                hosts,
            })?;
            println!("{}", bed.describe());
            let names = bed.persist();
            println!("up: {}", names.join(" "));
            Ok(())
        }
        Command::Bed(BedCommand::Down { name }) => {
            let removed = Bed::down(&name);
            if removed.is_empty() {
                println!("no bed was up");
            } else {
                println!("removed: {}", removed.join(" "));
            }
            Ok(())
        }
        Command::Plot {
            result,
            out,
            format,
        } => {
            let json = std::fs::read_to_string(&result)
                .map_err(|e| format!("{}: {e}", result.display()))?;
            crate::plot::render(&json, &out, format)?;
            println!("wrote {}", out.display());
            Ok(())
        }
        Command::SelfTest(a) => measure(&a, sixgate, Measurement::SelfTest),
        Command::Throughput(a) => measure(&a, sixgate, Measurement::Throughput),
        Command::FrameLoss(a) => measure(&a.run, sixgate, Measurement::FrameLoss(a.step_pct)),
        Command::Latency(a) => measure(&a.run, sixgate, Measurement::Latency(a.rate)),
        Command::Stateful(a) => measure(
            &a.run,
            sixgate,
            Measurement::Stateful {
                establishment: !a.no_establishment,
                capacity_max: a.capacity_max,
                throughput: !a.no_throughput,
            },
        ),
    }
}

#[derive(Debug, Clone, Copy)]
enum Measurement {
    SelfTest,
    Throughput,
    FrameLoss(u32),
    Latency(Option<u64>),
    Stateful {
        establishment: bool,
        capacity_max: u64,
        throughput: bool,
    },
}

fn cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let bad = || format!("CPU list {s:?}: expected e.g. 0 or 0,1 or 2-3");
        if let Some((a, b)) = part.split_once('-') {
            let (a, b): (usize, usize) =
                (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
            v.extend(a..=b);
        } else {
            v.push(part.parse().map_err(|_| bad())?);
        }
    }
    Ok(v)
}

fn frame_sizes(s: &str) -> Result<Vec<u16>, String> {
    if s == "all" {
        return Ok(STANDARD_SIZES.to_vec());
    }
    s.split(',')
        .map(|p| {
            let v: u16 = p
                .trim()
                .parse()
                .map_err(|_| format!("--frame-sizes: {p:?} is not a size in bytes"))?;
            if !(84..=1518).contains(&v) {
                return Err(format!(
                    "--frame-sizes: {v}: IPv6 frame sizes run from 84 to 1518 bytes (RFC 8219 §5.1)"
                ));
            }
            Ok(v)
        })
        .collect()
}

fn read_ceiling() -> Option<u64> {
    let text = std::fs::read_to_string(CEILING_FILE).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["fps"].as_u64().filter(|&c| c > 0)
}

fn write_out(path: &Path, text: &str) -> Result<(), String> {
    if path == Path::new("-") {
        print!("{text}");
        Ok(())
    } else {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

fn measure(a: &RunArgs, sixgate: &Path, test: Measurement) -> Result<(), String> {
    sixgate_netns::check_host()?;
    interrupt::install().map_err(|e| e.to_string())?;
    let sizes = frame_sizes(&a.frame_sizes)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let both = vec![0, cpus - 1];
    let tx_cpus = match &a.tx_cpus {
        Some(s) => cpu_list(s)?,
        None => both.clone(),
    };
    let rx_cpus = match &a.rx_cpus {
        Some(s) => cpu_list(s)?,
        None => both,
    };
    if let Some(c) = tx_cpus.iter().chain(&rx_cpus).find(|&&c| c >= cpus) {
        return Err(format!("CPU {c}: this machine has CPUs 0 to {}", cpus - 1));
    }
    if a.duration <= 0.0 || a.drain < 0.0 {
        return Err("--duration must be positive and --drain not negative".into());
    }
    if !(0.0..100.0).contains(&a.background) {
        return Err(format!(
            "--background {}: a percentage from 0 to below 100 (some frames must be the translated test traffic)",
            a.background
        ));
    }
    let self_test = matches!(test, Measurement::SelfTest);
    if self_test {
        // A stale ceiling must not survive a self-test that finds none.
        let _ = std::fs::remove_file(CEILING_FILE);
    }
    // The bed: the one that is up, or one for this run.
    let (bed, temporary) = if self_test {
        let name = if a.name.is_empty() {
            "selftest".to_owned()
        } else {
            format!("{}-selftest", a.name)
        };
        Bed::down(&name);
        (
            Bed::up(&BedOptions {
                name,
                kind: Kind::Loop,
                hosts: 1,
            })?,
            true,
        )
    } else {
        match Bed::attach(&a.name) {
            Ok(b) if b.kind != Kind::Loop => (b, false),
            _ => (
                Bed::up(&BedOptions {
                    name: a.name.clone(),
                    kind: if a.dual { Kind::Dual } else { Kind::Single },
                    hosts: a.hosts.max(1),
                })?,
                true,
            ),
        }
    };
    let result = measure_on(&bed, a, sixgate, test, &sizes, tx_cpus, rx_cpus);
    if !temporary {
        bed.persist();
    }
    result
}

#[allow(clippy::too_many_arguments)]
fn measure_on(
    bed: &Bed,
    a: &RunArgs,
    sixgate: &Path,
    test: Measurement,
    sizes: &[u16],
    tx_cpus: Vec<usize>,
    rx_cpus: Vec<usize>,
) -> Result<(), String> {
    let self_test = matches!(test, Measurement::SelfTest);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(a.timeout.max(1.0));
    let dut = RunningDut::start(
        bed,
        &DutOptions {
            preset: a.dut,
            config: a.config.clone(),
            sixgate: sixgate.to_owned(),
            cpu: a.dut_cpu,
        },
    )?;
    let mut notes = Vec::new();
    let (mut src_ports, mut dst_ports) = (a.src_ports.clone(), a.dst_ports.clone());
    if dut.traffic.stateful {
        // Phase 2 may only use the tuples phase 1 opened.
        let hosts = u64::from(a.hosts.max(1));
        let per_host = a.connections.max(1).div_ceil(hosts);
        let src_n = per_host.min(64_512);
        let dst_n = per_host.div_ceil(src_n);
        let n = hosts * src_n * dst_n;
        src_ports = format!("1024-{}", 1024 + src_n - 1);
        dst_ports = format!("80-{}", 80 + dst_n - 1);
        notes.push(format!(
            "stateful DUT: {n} connections ({hosts} source address(es) × source ports {src_ports} × destination ports {dst_ports}), opened by phase 1 at {} fps",
            a.phase1_rate
        ));
    }
    let mut hosts = a.hosts.max(1);
    if let Some((first, last)) = dut.traffic.ce_ports {
        src_ports = format!("{first}-{last}");
        hosts = 1;
        notes.push(format!(
            "MAP-T BR: the left tester is one CE ({} = {}), source ports pseudorandom in its port set {src_ports}; the right tester answers to those ports; one host",
            crate::bed::addr::MAPT_CE6,
            crate::bed::addr::MAPT_CE4
        ));
    }
    let ceiling = if self_test {
        None
    } else {
        a.ceiling.or_else(read_ceiling)
    };
    let max_rate = a
        .max_rate
        .or(ceiling.map(|c| c + c / 10))
        .unwrap_or(1_000_000);
    let params = SearchParams {
        min_rate: a.min_rate.min(max_rate),
        max_rate,
        precision: a.precision.unwrap_or((max_rate / 200).max(100)),
        loss_goal_pct: a.loss_goal,
        max_steps: a.steps.max(1),
        invalid_retries: 1,
    };
    let settings = Settings {
        duration_s: a.duration,
        drain_s: a.drain,
        bidirectional: !a.unidirectional,
        src_ports,
        dst_ports,
        hosts,
        tx_cpus,
        rx_cpus,
        seed: a.seed,
        phase1_rate: a.phase1_rate,
        behind_limit: a.behind_limit / 100.0,
        background_pct: a.background,
    };
    eprintln!("sixgate bench: {}", bed.describe());
    for line in &dut.description {
        eprintln!("sixgate bench: DUT {line}");
    }
    for n in &notes {
        eprintln!("sixgate bench: {n}");
    }
    let mut tester = Tester::new(bed, dut.traffic, settings.clone()).map_err(|e| e.to_string())?;
    tester.verbose = !a.quiet;
    let mut report = Report {
        tool: format!("sixgate bench {}", env!("CARGO_PKG_VERSION")),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        machine: Machine::here(),
        bed: bed.describe(),
        dut: if self_test {
            "none (self-test)".into()
        } else {
            dut.preset.name().into()
        },
        dut_setup: dut.description.clone(),
        tester_ceiling_fps: ceiling,
        settings,
        throughput: Vec::new(),
        frame_loss: Vec::new(),
        latency: Vec::new(),
        stateful: None,
        trials: Vec::new(),
    };
    let out_of_time = || Instant::now() >= deadline || interrupt::requested();
    let run = (|| -> std::io::Result<()> {
        let loop_bed = bed.kind == Kind::Loop;
        match test {
            Measurement::SelfTest | Measurement::Throughput => {
                for &size in sizes {
                    let t = tester.throughput(
                        size,
                        &params,
                        a.repetitions,
                        ceiling,
                        deadline,
                        loop_bed,
                    )?;
                    report.throughput.push(t);
                    if out_of_time() {
                        break;
                    }
                }
            }
            Measurement::FrameLoss(step) => {
                for &size in sizes {
                    let pts = tester.frame_loss(size, max_rate, step, deadline, loop_bed)?;
                    report.frame_loss.extend(pts);
                }
            }
            Measurement::Latency(rate) => {
                for &size in sizes {
                    let r = match rate {
                        Some(r) => r,
                        None => {
                            let t =
                                tester.throughput(size, &params, 1, ceiling, deadline, loop_bed)?;
                            let r = t.searches.first().map_or(0, |s| s.rate);
                            report.throughput.push(t);
                            r
                        }
                    };
                    if r == 0 {
                        continue;
                    }
                    report.latency.extend(tester.latency(size, r, loop_bed)?);
                }
            }
            Measurement::Stateful {
                establishment,
                capacity_max,
                throughput,
            } => {
                if !dut.traffic.stateful {
                    notes.push(format!(
                        "{} keeps no per-connection state: the RFC 9693 tests measure it as if it did",
                        dut.preset.name()
                    ));
                }
                let size = sizes[0];
                let (offered, got) = tester.phase1(size, a.phase1_rate)?;
                let mut st = Stateful {
                    connections: offered,
                    phase1_rate: a.phase1_rate,
                    established: got,
                    ..Stateful::default()
                };
                if throughput {
                    for &size in sizes {
                        report.throughput.push(tester.throughput(
                            size,
                            &params,
                            a.repetitions,
                            ceiling,
                            deadline,
                            false,
                        )?);
                    }
                }
                let conntrack = matches!(dut.preset, Preset::Nat44 | Preset::TaygaNat44);
                let dut_ns = bed.duts.last().expect("a DUT namespace");
                // A stateful sixgate deletes its sessions on `sixgate session
                // flush` (docs/control.md), through its API socket.
                let api = dut
                    .api_socket()
                    .filter(|_| dut.traffic.stateful)
                    .map(Path::to_owned);
                let sixgate_flush = |ns: &sixgate_netns::Netns, sock: &Path| -> u64 {
                    let sock = sock.to_string_lossy();
                    ns.run(
                        &sixgate.to_string_lossy(),
                        ["session", "flush", "--socket", &*sock],
                    )
                    .ok()
                    .and_then(|out| {
                        out.trim()
                            .strip_prefix("flushed ")?
                            .split(' ')
                            .next()?
                            .parse()
                            .ok()
                    })
                    .unwrap_or(0)
                };
                // Delete every connection the DUT tracks; sixgate says how
                // many (`conntrack -F` does not).
                let delete = || -> u64 {
                    if conntrack {
                        let _ = dut_ns.run("conntrack", ["-F"]);
                        0
                    } else if let Some(sock) = &api {
                        sixgate_flush(dut_ns, sock)
                    } else {
                        0
                    }
                };
                let mut flush = || -> std::io::Result<()> {
                    delete();
                    Ok(())
                };
                if establishment {
                    let p = SearchParams {
                        min_rate: 1000,
                        max_rate: a.max_rate.unwrap_or(max_rate),
                        precision: (max_rate / 100).max(100),
                        loss_goal_pct: 0.0,
                        max_steps: a.steps,
                        invalid_retries: 1,
                    };
                    flush()?;
                    st.max_establishment_rate =
                        Some(tester.max_establishment_rate(size, &p, deadline)?);
                }
                if capacity_max > 0 {
                    st.table_capacity = Some(tester.table_capacity(
                        size,
                        a.phase1_rate,
                        1000,
                        capacity_max,
                        &mut flush,
                        deadline,
                    )?);
                }
                // RFC 9693 §4.3: phase 1 opens N connections, one command
                // deletes them all, timed less the same command on an empty
                // table (process start-up, and sixgate's API round trip).
                let teardown = if conntrack {
                    Some(("conntrack entries", "conntrack -F"))
                } else {
                    api.as_ref().map(|_| ("sessions", "sixgate session flush"))
                };
                if let Some((what, command)) = teardown {
                    flush()?;
                    let (n, _) = tester.phase1(size, a.phase1_rate)?;
                    let counted = conntrack.then(|| {
                        dut_ns
                            .run("conntrack", ["-C"])
                            .ok()
                            .and_then(|s| s.trim().parse().ok())
                            .unwrap_or(0)
                    });
                    let t0 = Instant::now();
                    let said = delete();
                    let full = t0.elapsed();
                    let t1 = Instant::now();
                    delete();
                    let empty = t1.elapsed();
                    let deleted: u64 = counted.unwrap_or(said);
                    let work = full.saturating_sub(empty).as_secs_f64();
                    if deleted > 0 && work > 0.0 {
                        st.teardown_rate = Some(deleted as f64 / work);
                    }
                    st.notes.push(format!(
                        "tear-down rate: {deleted} {what} (of {n} connections) deleted with `{command}` in {:.1} ms, less {:.1} ms for an empty table",
                        full.as_secs_f64() * 1e3,
                        empty.as_secs_f64() * 1e3
                    ));
                    tester.forget();
                } else {
                    st.notes.push(format!(
                        "tear-down rate not measured: {} offers no command that deletes its connections, and a UDP connection's end is a timeout (RFC 6146 §3.5.1: at least 2 minutes), invisible on the wire",
                        dut.preset.name()
                    ));
                }
                st.notes.extend(notes.iter().cloned());
                report.stateful = Some(st);
            }
        }
        Ok(())
    })();
    report.trials = std::mem::take(&mut tester.trials);
    drop(tester);
    let stop = dut.stop();
    // Even a failed run keeps what the DUT said, and reports the trials it did.
    if let (Ok(log), Some(p)) = (&stop, &a.dut_log) {
        write_out(p, log)?;
    }
    print!("{}", report.table());
    for n in &notes {
        if report.stateful.is_none() {
            println!("note: {n}");
        }
    }
    if let Some(p) = &a.csv {
        write_out(p, &report.csv())?;
    }
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n";
        write_out(p, &text)?;
    }
    if self_test
        && let Some(t) = report.throughput.first()
        && let Some(s) = t.fps
        && s.median > 0.0
    {
        let c = serde_json::json!({
            "fps": s.median as u64,
            "frame_size": t.frame_size,
            "bidirectional": !a.unidirectional,
            "unix_s": report.started_unix_s,
        });
        let _ = std::fs::write(CEILING_FILE, c.to_string());
        println!(
            "tester ceiling: {} fps per direction at {} B (saved to {CEILING_FILE})",
            s.median as u64, t.frame_size
        );
    }
    run.map_err(|e| format!("sixgate bench: {e}"))?;
    if interrupt::requested() {
        return Err("sixgate bench: interrupted".into());
    }
    stop.map(drop)
        .map_err(|e| format!("sixgate bench: stopping the DUT: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists() {
        assert_eq!(cpu_list("0").unwrap(), [0]);
        assert_eq!(cpu_list("0,2-3").unwrap(), [0, 2, 3]);
        assert!(cpu_list("x").is_err());
        assert_eq!(frame_sizes("84,1518").unwrap(), [84, 1518]);
        assert_eq!(frame_sizes("all").unwrap().len(), 7);
        assert!(frame_sizes("64").unwrap_err().contains("84 to 1518"));
    }
}
