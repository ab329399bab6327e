//! Helpers the end-to-end test files share (`e2e.rs`, `nat64.rs`, `mapt.rs`, and in [`ha`]
//! the two-node bed of `ha.rs` and `ha_faults.rs`): the bed's
//! life cycle around a test body, and the real clients and servers (ping, curl and
//! `python3 -m http.server`, iperf3) with their checks.

#![allow(dead_code)] // each test file uses its own subset

pub mod collectors;
pub mod ha;
pub mod ha_group;

use std::net::IpAddr;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::process::Output;
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use sixgate_netns::chain::{self, Chain};
use sixgate_netns::{
    Background, Dut, Netns, Proto, RunningDut, ScratchDir, Stopped, Topology, TopologyOptions,
    cleanup_stale, list_namespaces,
};

/// Tests of one process take turns: on a 2-core machine parallel beds would
/// share the CPU and throughput figures would mean nothing.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// A test's turn with a bed, the life cycle every bed test shares: take the
/// turn ([`SERIAL`]; stale beds of crashed runs removed once per process), note
/// the bed's namespaces ([`Turn::expect_gone`]), run the body with the logs
/// dumped if it panics ([`Turn::run`]), stop each translator cleanly
/// ([`stop_cleanly`]), and at [`Turn::finish`] check that the namespaces are
/// gone.
pub struct Turn {
    test: String,
    t0: Instant,
    names: Vec<String>,
    _serial: MutexGuard<'static, ()>,
}

impl Turn {
    /// Wait for this test's turn.
    pub fn take(test: &str) -> Turn {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        static CLEANUP: Once = Once::new();
        CLEANUP.call_once(|| {
            for what in cleanup_stale().unwrap_or_default() {
                println!("removed stale {what}");
            }
        });
        Turn {
            test: test.to_owned(),
            t0: Instant::now(),
            names: Vec::new(),
            _serial: serial,
        }
    }

    /// These namespaces must be gone at [`Turn::finish`].
    pub fn expect_gone<'a>(&mut self, namespaces: impl IntoIterator<Item = &'a Netns>) {
        self.names
            .extend(namespaces.into_iter().map(|n| n.name().to_owned()));
    }

    /// Run `body`; if it panics, print `logs()` (the translators' output) and
    /// let the panic go on (unwinding stops the translators and tears the bed
    /// down).
    pub fn run<T>(&self, logs: impl FnOnce() -> String, body: impl FnOnce() -> T) -> T {
        match catch_unwind(AssertUnwindSafe(body)) {
            Ok(v) => v,
            Err(panic) => {
                eprintln!("{}: logs:\n{}", self.test, logs());
                resume_unwind(panic);
            }
        }
    }

    /// The bed is down: check that its namespaces are gone.
    pub fn finish(self) {
        let listed = list_namespaces().unwrap_or_else(|e| panic!("{e}"));
        let left: Vec<&String> = self.names.iter().filter(|n| listed.contains(n)).collect();
        assert!(
            left.is_empty(),
            "{}: namespaces left behind: {left:?}",
            self.test
        );
        println!(
            "{}: passed in {:.1} s",
            self.test,
            self.t0.elapsed().as_secs_f32()
        );
    }
}

/// Stop `dut` (`what`: "CLAT", "BR", …), which must still be running, exit 0 on
/// SIGTERM and leave nothing behind; how it stopped.
pub fn stop_cleanly(test: &str, what: &str, dut: RunningDut) -> Stopped {
    dut.check_running()
        .unwrap_or_else(|e| panic!("{test}: {what}: {e}"));
    let stopped = dut.stop().unwrap_or_else(|e| panic!("{test}: {what}: {e}"));
    stopped
        .check_clean()
        .unwrap_or_else(|e| panic!("{test}: {what}: {e}"));
    stopped
}

/// Build a bed, start `translator`, run `body`, stop the translator (it must
/// stop cleanly) and check that the bed's namespaces are gone; how it stopped
/// (its output, its summary). If `body` panics, the translator's log is printed
/// and everything is still torn down.
pub fn run_bed(
    test: &str,
    options: TopologyOptions,
    translator: &Dut,
    body: impl FnOnce(&Topology, &RunningDut),
) -> Stopped {
    let mut turn = Turn::take(test);
    let options = translator.bed_options(options);
    let bed = Topology::build(options).unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.namespaces());
    let running = bed
        .start(translator)
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    println!(
        "{test}: {} ready in {} ms",
        translator.describe(),
        running.ready_after().as_millis()
    );
    turn.run(|| running.log(), || body(&bed, &running));
    let stopped = stop_cleanly(test, "translator", running);
    if let Some(s) = &stopped.tun_stats {
        println!(
            "{test}: TUN {} packets into the translator, {} out",
            s.tx_packets, s.rx_packets
        );
    }
    drop(bed);
    turn.finish();
    stopped
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `ping -c COUNT DEST` from `ns`; every reply must arrive. Returns the RTTs in ms.
pub fn ping(ns: &Netns, dest: &str, count: u32) -> Vec<f64> {
    ping_with(ns, dest, count, &[])
}

/// [`ping`] with more options for ping (`-s SIZE`).
pub fn ping_with(ns: &Netns, dest: &str, count: u32, extra: &[&str]) -> Vec<f64> {
    let count_s = count.to_string();
    let mut args = vec!["-n", "-c", &count_s, "-i", "0.2", "-W", "2"];
    args.extend_from_slice(extra);
    args.push(dest);
    let out = ns
        .run_timeout("ping", args, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}"));
    let rtts: Vec<f64> = out
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("time="))
        .filter_map(|t| t.parse().ok())
        .collect();
    assert_eq!(rtts.len(), count as usize, "{out}");
    assert!(
        out.contains(&format!("{count} received")),
        "every echo must come back:\n{out}"
    );
    rtts
}

/// Deterministic pseudo-random bytes (xorshift), so a corrupted transfer cannot
/// look right by accident.
pub fn pattern(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// FNV-1a, to print a checksum next to the byte comparison.
pub fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

pub const HTTP_PORT: u16 = 8080;

/// `python3 -m http.server` in `ns`, bound to `bind`, serving `dir`.
pub fn http_server(ns: &Netns, bind: IpAddr, dir: &ScratchDir) -> Background {
    let server = ns
        .spawn(
            "python3",
            [
                "-m",
                "http.server",
                "--bind",
                &bind.to_string(),
                "--directory",
                &dir.path().to_string_lossy(),
                &HTTP_PORT.to_string(),
            ],
        )
        .unwrap();
    ns.wait_listening(Proto::Tcp, HTTP_PORT, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    server
}

/// Fetch `file` (of `content`) with curl from `client`, at `url_host`, and compare.
pub fn fetch_and_compare(
    client: &Netns,
    url_host: &str,
    dir: &ScratchDir,
    file: &str,
    content: &[u8],
) {
    let out_path = dir.path().join(format!("{file}.fetched"));
    let url = format!("http://{url_host}:{HTTP_PORT}/{file}");
    let t0 = Instant::now();
    client
        .run_timeout(
            "curl",
            [
                "-g",
                "-sS",
                "--fail",
                "--max-time",
                "60",
                "-o",
                &out_path.to_string_lossy(),
                &url,
            ],
            Duration::from_secs(90),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let secs = t0.elapsed().as_secs_f64();
    let got = std::fs::read(&out_path).unwrap();
    assert_eq!(got.len(), content.len(), "length of {url}");
    assert!(got == content, "{url}: the bytes differ");
    println!(
        "curl {url}: {} bytes in {:.0} ms, FNV-1a {:016x} matches",
        got.len(),
        secs * 1e3,
        fnv1a(&got)
    );
}

/// A 1 MiB `file.bin` (in scratch directory `scratch`) served on the chain's
/// server at [`chain::addr::SERVER`], fetched with curl from its client and
/// compared; returns the client address the server saw.
pub fn chain_http_fetch(chain: &Chain, scratch: &str) -> String {
    let dir = ScratchDir::new(scratch).unwrap();
    let content = pattern(1 << 20);
    dir.write("file.bin", &content).unwrap();
    let server = http_server(&chain.server, chain::addr::SERVER.into(), &dir);
    fetch_and_compare(
        &chain.client,
        &chain::addr::SERVER.to_string(),
        &dir,
        "file.bin",
        &content,
    );
    http_client_seen(&server)
}

/// The address in the first access-log line of `python3 -m http.server`.
pub fn http_client_seen(server: &Background) -> String {
    // The server logs a request after it has answered it: the client may be
    // done before the line is written.
    let t0 = std::time::Instant::now();
    loop {
        let log = server.stderr();
        let seen = log
            .lines()
            .find(|l| l.contains("\"GET "))
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_owned);
        match seen {
            Some(s) => return s,
            None if t0.elapsed() < std::time::Duration::from_secs(5) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            None => panic!("no request in the server log:\n{log}"),
        }
    }
}

/// What iperf3 measured.
pub struct Iperf {
    /// Throughput the receiver saw.
    pub mbit_s: f64,
    /// Retransmits, or UDP loss and jitter.
    pub detail: String,
}

/// iperf3 for 3 s from `client` to a server in `server` bound to `bind`, reached
/// as `target`, with `args` (`-R`, `-u -b …`); returns the throughput the
/// receiver saw.
pub fn iperf3(
    client: &Netns,
    server: &Netns,
    bind: IpAddr,
    target: IpAddr,
    args: &[&str],
) -> Iperf {
    const PORT: u16 = 5201;
    let _server = server
        .spawn(
            "iperf3",
            ["-s", "-B", &bind.to_string(), "-p", &PORT.to_string()],
        )
        .unwrap();
    server
        .wait_listening(Proto::Tcp, PORT, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    let target = target.to_string();
    let port = PORT.to_string();
    let mut all = vec!["-c", &target, "-p", &port, "-t", "3", "-J"];
    all.extend_from_slice(args);
    let out = client
        .output_timeout("iperf3", &all, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "iperf3 output is not JSON ({e}):\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    if let Some(err) = json.get("error") {
        panic!("iperf3 {args:?}: {err}");
    }
    assert!(out.status.success(), "iperf3 {args:?}: {}", out.status);
    let end = &json["end"];
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    if args.contains(&"-u") {
        // The client's summary of a UDP test carries the server's loss counts.
        let sum = &end["sum"];
        let sent = num(&sum["bits_per_second"]);
        let lost = num(&sum["lost_percent"]);
        Iperf {
            mbit_s: sent * (1.0 - lost / 100.0) / 1e6,
            detail: format!(
                "sent {:.0} Mbit/s, {} of {} datagrams lost ({lost:.1} %), jitter {:.3} ms",
                sent / 1e6,
                num(&sum["lost_packets"]),
                num(&sum["packets"]),
                num(&sum["jitter_ms"])
            ),
        }
    } else {
        Iperf {
            mbit_s: num(&end["sum_received"]["bits_per_second"]) / 1e6,
            detail: format!("{} retransmits", num(&end["sum_sent"]["retransmits"])),
        }
    }
}

/// The fast path's counters from a daemon's summary line at exit:
/// (translated 6to4, translated 4to6, passed, aborted).
pub fn fastpath_counters(stopped: &Stopped) -> (u64, u64, u64, u64) {
    let line = stopped
        .stderr
        .lines()
        .find(|l| l.contains("fast path: received"))
        .unwrap_or_else(|| panic!("no fast path summary in the log:\n{}", stopped.stderr));
    let n: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    // "… 6to4 N 4to6 M, passed … P, aborted A": the labels' 6 and 4 too.
    let t = &n[n.len() - 9..];
    (t[3], t[6], t[7], t[8])
}

/// The fast path at work both ways (docs/fastpath.md): prints its counters
/// from `stopped`'s summary as `{test}: {what} fast path: …`, and asserts at
/// least `min` packets translated each way and none aborted.
pub fn assert_fast_path_both_ways(test: &str, what: &str, stopped: &Stopped, min: u64) {
    let (t64, t46, passed, aborted) = fastpath_counters(stopped);
    println!(
        "{test}: {what} fast path: 6to4 {t64}, 4to6 {t46}, passed {passed}, aborted {aborted}"
    );
    assert!(
        t46 >= min && t64 >= min,
        "too little on the fast path: {t46} 4to6, {t64} 6to4"
    );
    assert_eq!(aborted, 0);
}

/// Packets each worker read, from the exit summary's `per worker:` line.
pub fn per_worker_rx(stopped: &Stopped) -> Vec<u64> {
    let line = stopped
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("sixgate: per worker: "))
        .unwrap_or_else(|| panic!("no per-worker line in:\n{}", stopped.stdout));
    line.split(", ")
        .map(|w| {
            let words: Vec<&str> = w.split_whitespace().collect();
            words[2].parse().unwrap_or_else(|_| panic!("{line}"))
        })
        .collect()
}

/// Unprivileged BPF is off (`kernel.unprivileged_bpf_disabled` ≠ 0), so
/// dropping capabilities shows what sixgate does without them; otherwise a
/// test of that proves nothing.
pub fn unprivileged_bpf_disabled() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled")
        .is_ok_and(|v| v.trim() != "0")
}

/// `sixgate run --config CONFIG` in `ns`, stopped with SIGTERM after `secs`
/// (`timeout` then exits 124); with `drop_bpf`, under `capsh` (libcap2-bin)
/// without what loading a BPF program needs.
pub fn run_for(ns: &Netns, config: &std::path::Path, secs: u32, drop_bpf: bool) -> Output {
    let script = format!(
        "exec timeout -s TERM {secs} {} run --config {}",
        env!("CARGO_BIN_EXE_sixgate"),
        config.display()
    );
    let mut args = Vec::new();
    if drop_bpf {
        args.extend(["--drop=cap_bpf,cap_sys_admin,cap_perfmon", "--"]);
    }
    args.extend(["-c", &script]);
    let shell = if drop_bpf { "capsh" } else { "sh" };
    ns.output_timeout(shell, args, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{shell} (scripts/setup.sh installs it): {e}"))
}

/// The first line of `log` containing `needle`, printed; a panic showing the
/// log when there is none.
pub fn line_with<'a>(log: &'a str, needle: &str) -> &'a str {
    let line = log
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{log}"));
    println!("{}", line.trim());
    line
}

/// Without the capabilities to load BPF, `sixgate run` with `config` (two
/// workers, a mode whose packets must be steered: nat64, mapt-br) runs one
/// worker and says why (docs/tun.md, "Fallback"); its exit summary contains
/// `summary_has`. Skipped when unprivileged BPF is allowed.
pub fn without_bpf_runs_one_worker(test: &str, config: &str, summary_has: &str) {
    if !unprivileged_bpf_disabled() {
        println!("skipped: {test}: kernel.unprivileged_bpf_disabled = 0");
        return;
    }
    let ns = Netns::new("fallback").unwrap_or_else(|e| panic!("{e}"));
    let dir = ScratchDir::new("fallback").unwrap();
    // Its own API socket, so that it runs beside other tests' daemons.
    let socket = dir.path().join("api.sock");
    // And its own state file: never the host's (docs/restart.md).
    let state = dir.path().join("nat64.state");
    let config = config.replace(
        "[daemon]\n",
        &format!(
            "[daemon]\nsocket = \"{}\"\nstate_file = \"{}\"\n",
            socket.display(),
            state.display()
        ),
    );
    let path = dir.write("sixgate.toml", config).unwrap();
    let out = run_for(&ns, &path, 1, true);
    let log = String::from_utf8_lossy(&out.stderr);
    let summary = String::from_utf8_lossy(&out.stdout);
    let warning = line_with(&log, "cannot steer packets to 2 workers");
    assert!(warning.contains("running ONE worker"), "{warning}");
    assert!(
        warning.contains("Operation not permitted"),
        "the reason: {warning}"
    );
    assert!(log.contains("workers=1"), "one worker started:\n{log}");
    assert!(
        summary.contains(summary_has),
        "it ran and stopped:\n{summary}{log}"
    );
}
