//! 464XLAT end to end (RFC 6877; the set-up of Lencse & Nagy 2022): an IPv4-only
//! client reaches an IPv4-only server across an IPv6-only core, through sixgate as
//! the CLAT (`mode = "clat"`, PLAT prefix discovered with RFC 7050 from dnsmasq in
//! the core) and sixgate as the PLAT. The chain is `sixgate_netns::chain`.
//!
//! The PLAT is picked by `SIXGATE_XLAT_PLAT`: `siit` (the default for now), a
//! stateless stand-in with an EAM entry for the CLAT's prefix, or `nat64`,
//! stateful NAT64 (RFC 6146). Both show the client to the server as an address in
//! 198.18.0.0/24.
//!
//! ```text
//! cargo test -p sixgate --test xlat464 -- --nocapture
//! SIXGATE_XLAT_PLAT=nat64 cargo test -p sixgate --test xlat464 -- --nocapture
//! ```
//!
//! Skips (printing `skipped: <test>: <reason>` and passing) only when the machine
//! cannot make namespaces. Missing tools (dnsmasq, ping, curl, python3, iperf3)
//! are failures: `scripts/setup.sh` installs them. Tests take turns, as in
//! `e2e.rs`.

use std::net::{IpAddr, Ipv4Addr};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::Path;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use sixgate_netns::chain::{Chain, Plat, addr};
use sixgate_netns::{
    Background, Netns, Proto, RunningTranslator, ScratchDir, check_host, cleanup_stale,
    list_namespaces,
};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// Environment variable that picks the PLAT: `siit` (default) or `nat64`.
const ENV_PLAT: &str = "SIXGATE_XLAT_PLAT";

static SERIAL: Mutex<()> = Mutex::new(());

fn plat() -> Plat {
    match std::env::var(ENV_PLAT).as_deref().map(str::trim) {
        Ok("nat64") => Plat::Nat64,
        Ok("siit") | Ok("") | Err(_) => Plat::SiitStandIn,
        Ok(other) => panic!("{ENV_PLAT}={other:?}: expected \"siit\" or \"nat64\""),
    }
}

/// The running chain a test body gets.
struct Running<'a> {
    chain: &'a Chain,
    clat: RunningTranslator<'a>,
    plat: RunningTranslator<'a>,
    dns: Background,
    plat_kind: Plat,
}

impl Running<'_> {
    /// Where the server sees the client's connections come from.
    fn client_seen_by_server_ok(&self, seen: &str) -> bool {
        let Ok(a) = seen.parse::<Ipv4Addr>() else {
            return false;
        };
        match self.plat_kind {
            Plat::SiitStandIn => a == addr::CLIENT_AS_V4_SIIT,
            Plat::Nat64 => a.octets()[..3] == [198, 18, 0],
        }
    }

    fn logs(&self) -> String {
        format!(
            "--- CLAT:\n{}\n--- PLAT:\n{}\n--- dnsmasq:\n{}",
            self.clat.log(),
            self.plat.log(),
            self.dns.stderr()
        )
    }
}

/// Build the chain, start dnsmasq, the PLAT and the CLAT, run `body`, stop both
/// translators (they must stop cleanly) and check that the namespaces are gone.
fn with_chain(test: &str, body: impl FnOnce(&Running)) {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    static CLEANUP: Once = Once::new();
    CLEANUP.call_once(|| {
        for what in cleanup_stale().unwrap_or_default() {
            println!("removed stale {what}");
        }
    });
    let t0 = Instant::now();
    let plat_kind = plat();
    let chain = Chain::build().unwrap_or_else(|e| panic!("{test}: {e}"));
    let names: Vec<String> = chain
        .namespaces()
        .iter()
        .map(|n| n.name().to_owned())
        .collect();
    let dns = chain
        .start_dns()
        .unwrap_or_else(|e| panic!("{test}: dnsmasq (scripts/setup.sh installs it): {e}"));
    let bin = Path::new(BIN);
    let plat = chain
        .start_plat(bin, plat_kind)
        .unwrap_or_else(|e| panic!("{test}: PLAT: {e}"));
    let clat = chain
        .start_clat(bin)
        .unwrap_or_else(|e| panic!("{test}: CLAT: {e}"));
    println!(
        "{test}: PLAT {} ready in {} ms, CLAT ready in {} ms (discovery included)\n{}",
        plat_kind.describe(),
        plat.ready_after().as_millis(),
        clat.ready_after().as_millis(),
        chain.describe()
    );
    let running = Running {
        chain: &chain,
        clat,
        plat,
        dns,
        plat_kind,
    };
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| body(&running))) {
        eprintln!("{test}: logs:\n{}", running.logs());
        drop(running);
        drop(chain);
        resume_unwind(panic);
    }
    stop_cleanly(test, running);
    drop(chain);
    let listed = list_namespaces().unwrap_or_else(|e| panic!("{e}"));
    let left: Vec<&String> = names.iter().filter(|n| listed.contains(n)).collect();
    assert!(left.is_empty(), "{test}: namespaces left behind: {left:?}");
    println!("{test}: passed in {:.1} s", t0.elapsed().as_secs_f32());
}

/// Stop both translators (each must stop cleanly) and dnsmasq.
fn stop_cleanly(test: &str, running: Running) {
    let Running {
        clat, plat, dns, ..
    } = running;
    for (what, t) in [("CLAT", clat), ("PLAT", plat)] {
        t.check_running()
            .unwrap_or_else(|e| panic!("{test}: {what}: {e}"));
        let stopped = t.stop().unwrap_or_else(|e| panic!("{test}: {what}: {e}"));
        stopped
            .check_clean()
            .unwrap_or_else(|e| panic!("{test}: {what}: {e}"));
        if let Some(s) = &stopped.tun_stats {
            println!(
                "{test}: {what} TUN: {} packets in, {} out; {}",
                s.tx_packets,
                s.rx_packets,
                stopped.stdout.trim()
            );
        }
    }
    drop(dns);
}

/// RFC 7050: the CLAT asked the core's DNS server, found the PLAT prefix and
/// uses it instead of its (unroutable here) fallback.
#[test]
fn clat_discovers_the_plat_prefix() {
    with_chain("clat_discovers_the_plat_prefix", |r| {
        let log = r.clat.log();
        let want = format!(
            "ipv4only.arpa via [{}]:53 reveals PLAT prefix {p}; using {p}",
            addr::DNS_SERVER,
            p = addr::PLAT_PREFIX
        );
        assert!(log.contains(&want), "CLAT log lacks {want:?}:\n{log}");
        assert!(!log.contains("fallback"), "{log}");
        let dns = r.dns.stderr();
        assert!(
            dns.contains("query[AAAA] ipv4only.arpa"),
            "dnsmasq saw no query:\n{dns}"
        );
    });
}

/// `ping -c COUNT DEST` from `ns`; every reply must arrive. Returns the RTTs in ms.
fn ping(ns: &Netns, dest: &str, count: u32) -> Vec<f64> {
    let out = ns
        .run_timeout(
            "ping",
            ["-n", "-c", &count.to_string(), "-i", "0.2", "-W", "2", dest],
            Duration::from_secs(20),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let rtts: Vec<f64> = out
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("time="))
        .filter_map(|t| t.parse().ok())
        .collect();
    assert_eq!(rtts.len(), count as usize, "{out}");
    rtts
}

/// ICMP Echo through both translators: ICMPv4 → ICMPv6 (CLAT) → ICMPv4 (PLAT)
/// and back (RFC 7915 §4.2, §5.2).
#[test]
fn ping_client_to_server() {
    with_chain("ping_client_to_server", |r| {
        let rtts = ping(&r.chain.client, &addr::SERVER.to_string(), 5);
        println!("ping {}: RTT {rtts:?} ms", addr::SERVER);
    });
}

/// Deterministic pseudo-random bytes (xorshift), so a corrupted transfer cannot
/// look right by accident.
fn pattern(len: usize) -> Vec<u8> {
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

const HTTP_PORT: u16 = 8080;

/// `python3 -m http.server` on the server, curl on the client: a 1 MiB file
/// fetched across the chain, bytes compared; the server's access log shows the
/// client as the PLAT's IPv4 address for it.
#[test]
fn http_client_to_server() {
    with_chain("http_client_to_server", |r| {
        let dir = ScratchDir::new("xlathttp").unwrap();
        let content = pattern(1 << 20);
        dir.write("file.bin", &content).unwrap();
        let server = r
            .chain
            .server
            .spawn(
                "python3",
                [
                    "-m",
                    "http.server",
                    "--bind",
                    &addr::SERVER.to_string(),
                    "--directory",
                    &dir.path().to_string_lossy(),
                    &HTTP_PORT.to_string(),
                ],
            )
            .unwrap();
        r.chain
            .server
            .wait_listening(Proto::Tcp, HTTP_PORT, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        let out = dir.path().join("fetched");
        let url = format!("http://{}:{HTTP_PORT}/file.bin", addr::SERVER);
        let t0 = Instant::now();
        r.chain
            .client
            .run_timeout(
                "curl",
                [
                    "-sS",
                    "--fail",
                    "--max-time",
                    "60",
                    "-o",
                    &out.to_string_lossy(),
                    &url,
                ],
                Duration::from_secs(90),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let got = std::fs::read(&out).unwrap();
        assert_eq!(got.len(), content.len(), "length of {url}");
        assert!(got == content, "{url}: the bytes differ");
        println!(
            "curl {url}: {} bytes in {:.0} ms, identical",
            got.len(),
            t0.elapsed().as_secs_f64() * 1e3
        );
        let log = server.stderr();
        let seen = log
            .lines()
            .find(|l| l.contains("\"GET "))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("no request in the server log:\n{log}"));
        assert!(
            r.client_seen_by_server_ok(seen),
            "the server saw the client as {seen}"
        );
        println!("the server saw the client as {seen}");
    });
}

/// iperf3 for 3 s from the client to the server (`-R`: the server sends), with
/// `args`; returns the receiver's Mbit/s and a detail line.
fn iperf3(r: &Running, args: &[&str]) -> (f64, String) {
    const PORT: u16 = 5201;
    let server: IpAddr = addr::SERVER.into();
    let _server = r
        .chain
        .server
        .spawn(
            "iperf3",
            ["-s", "-B", &server.to_string(), "-p", &PORT.to_string()],
        )
        .unwrap();
    r.chain
        .server
        .wait_listening(Proto::Tcp, PORT, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    let target = server.to_string();
    let port = PORT.to_string();
    let mut all = vec!["-c", &target, "-p", &port, "-t", "3", "-J"];
    all.extend_from_slice(args);
    let out = r
        .chain
        .client
        .output_timeout("iperf3", &all, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "iperf3 output is not JSON ({e}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    if let Some(err) = json.get("error") {
        panic!("iperf3 {args:?}: {err}");
    }
    assert!(out.status.success(), "iperf3 {args:?}: {}", out.status);
    let end = &json["end"];
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    if args.contains(&"-u") {
        let sum = &end["sum"];
        let sent = num(&sum["bits_per_second"]);
        let lost = num(&sum["lost_percent"]);
        (
            sent * (1.0 - lost / 100.0) / 1e6,
            format!(
                "sent {:.0} Mbit/s, {} of {} datagrams lost ({lost:.1} %)",
                sent / 1e6,
                num(&sum["lost_packets"]),
                num(&sum["packets"])
            ),
        )
    } else {
        (
            num(&end["sum_received"]["bits_per_second"]) / 1e6,
            format!("{} retransmits", num(&end["sum_sent"]["retransmits"])),
        )
    }
}

fn iperf3_test(test: &str, what: &str, args: &'static [&'static str]) {
    with_chain(test, |r| {
        let (mbit_s, detail) = iperf3(r, args);
        assert!(mbit_s > 0.0, "{what}: nothing arrived");
        println!(
            "THROUGHPUT {what} ({}): {mbit_s:.0} Mbit/s, {detail}",
            r.plat_kind.describe()
        );
    });
}

#[test]
fn iperf3_tcp_client_to_server() {
    iperf3_test(
        "iperf3_tcp_client_to_server",
        "464XLAT TCP client -> server",
        &[],
    );
}

#[test]
fn iperf3_tcp_server_to_client_reverse() {
    iperf3_test(
        "iperf3_tcp_server_to_client_reverse",
        "464XLAT TCP server -> client (-R)",
        &["-R"],
    );
}

#[test]
fn iperf3_udp_client_to_server() {
    iperf3_test(
        "iperf3_udp_client_to_server",
        "464XLAT UDP client -> server, 200 Mbit/s offered",
        &["-u", "-b", "200M", "-l", "1200"],
    );
}
