//! Two NAT64 nodes sharing their state (docs/ha.md), end to end in namespaces:
//!
//! ```text
//!             fd00:1::/64 ── gw1 ── 10.1.0.0/24
//!   client  <                 │ sync 10.5.0.0/24   > server (198.51.100.10 on lo)
//!             fd00:2::/64 ── gw2 ── 10.2.0.0/24
//! ```
//!
//! Both gateways run `sixgate run` in mode nat64 with the same pool6 and pool4
//! (`198.18.0.0/31`), two workers each, and `[sync]` over their own veth; gw1 owns
//! `198.18.0.0`, gw2 `198.18.0.1`. The client reaches pool6 through gw1, the
//! server reaches pool4 through gw2: every reply crosses the node that did
//! not create the session and is translated from its replica. Static routes
//! stand in for the routing daemon.
//!
//! - `ha_asymmetric_udp_and_tcp`: a UDP exchange and a curl work across the
//!   asymmetric path, `show sessions` lists the same sessions on both, and
//!   `show sync` shows each node the other up and synced, nothing dropped
//!   (and gw2's `/metrics` the records it received); a reload on gw1 alone
//!   (another UDP timeout) changes its config hash, and gw2 logs the
//!   mismatch naming both.
//! - `ha_tcp_survives_kill_9_of_gw1`: a TCP connection opened across the
//!   asymmetric path carries data again after gw1 is killed with SIGKILL and
//!   the client's route moves to gw2, which translates both ways from its
//!   replica.
//! - `ha_restarted_node_gets_the_sessions_by_snapshot`: gw2 restarted empty
//!   gets gw1's sessions back by a snapshot (a walk of gw1's workers'
//!   tables through the control channel).
//! - `ha_first_packets_cross_before_their_record`: the first reply of each
//!   of 20 fresh UDP sessions is answered at the first try and 20 TCP
//!   connects finish well under 1 s, though each reply may reach gw2 before
//!   its session's record (held, then translated); with tshark, the export
//!   and import times. `…_xdp`: the same on the AF_XDP data plane.
//!
//! Root and `ip netns` needed (else `skipped:`), and python3 and curl.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{HTTP_PORT, Turn, fetch_and_compare, http_server, pattern, stop_cleanly};
use sixgate_netns::{
    Netns, Proto, RunningDut, ScratchDir, check_host, start_sixgate_with_config, veth,
};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");
const SERVER4: &str = "198.51.100.10";
const SERVER6: &str = "2001:db8:64::c633:640a";
const UDP_PORT: u16 = 9000;
const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

fn gateway_toml(node: u16) -> String {
    let peer = 3 - node;
    format!(
        r#"[translator]
mode = "nat64"
pool6 = "2001:db8:64::/96"

[nat64]
pool4 = ["198.18.0.0/31"]

[daemon]
workers = 2

[tun]
name = "sixgate0"

[metrics]
listen = "127.0.0.1:9464"

[sync]
node_id = {node}
bind = "10.5.0.{node}:7464"
peers = [ {{ node_id = {peer}, address = "10.5.0.{peer}:7464" }} ]
key = "{KEY}"
shards = [
    {{ node_id = 1, pool4 = ["198.18.0.0"] }},
    {{ node_id = 2, pool4 = ["198.18.0.1"] }},
]
"#
    )
}

/// The bed: four namespaces, wired and routed (asymmetric), nothing running.
struct Bed {
    client: Netns,
    gw1: Netns,
    gw2: Netns,
    server: Netns,
}

fn build() -> sixgate_netns::Result<Bed> {
    let n = sixgate_netns::next_index();
    let bed = Bed {
        client: Netns::with_index("haclient", n)?,
        gw1: Netns::with_index("hagw1", n)?,
        gw2: Netns::with_index("hagw2", n)?,
        server: Netns::with_index("haserver", n)?,
    };
    // Replies arrive on the other link than the requests left by: loose
    // reverse-path checks everywhere.
    for ns in bed.all() {
        ns.sysctl(&[
            ("net.ipv4.conf.all.rp_filter", "0"),
            ("net.ipv4.conf.default.rp_filter", "0"),
            ("net.ipv6.conf.all.accept_dad", "0"),
            ("net.ipv6.conf.default.accept_dad", "0"),
        ])?;
    }
    veth(&bed.client, "c1", &bed.gw1, "lan")?;
    veth(&bed.client, "c2", &bed.gw2, "lan")?;
    veth(&bed.gw1, "wan", &bed.server, "s1")?;
    veth(&bed.gw2, "wan", &bed.server, "s2")?;
    veth(&bed.gw1, "sync", &bed.gw2, "sync")?;
    for (i, gw) in [(1, &bed.gw1), (2, &bed.gw2)] {
        gw.enable_forwarding()?;
        gw.sysctl(&[
            ("net.ipv6.icmp.ratelimit", "0"),
            ("net.ipv4.icmp_ratelimit", "0"),
        ])?;
        gw.add_address("lan", &format!("fd00:{i}::1/64"))?;
        gw.add_address("wan", &format!("10.{i}.0.1/24"))?;
        gw.add_address("sync", &format!("10.5.0.{i}/24"))?;
        gw.add_route_via(SERVER4, &format!("10.{i}.0.2"))?;
        // The client's addresses, whichever link they are on.
        let other = 3 - i;
        gw.add_route_via(&format!("fd00:{other}::/64"), &format!("fd00:{i}::2"))?;
    }
    bed.client.add_address("c1", "fd00:1::2/64")?;
    bed.client.add_address("c2", "fd00:2::2/64")?;
    // IPv6 side: pool6 through gw1.
    bed.client.add_route_via("2001:db8:64::/96", "fd00:1::1")?;
    bed.server.add_address("s1", "10.1.0.2/24")?;
    bed.server.add_address("s2", "10.2.0.2/24")?;
    bed.server.add_address("lo", &format!("{SERVER4}/32"))?;
    // IPv4 side: pool4 through gw2.
    bed.server.add_route_via("198.18.0.0/31", "10.2.0.1")?;
    Ok(bed)
}

impl Bed {
    fn all(&self) -> [&Netns; 4] {
        [&self.client, &self.gw1, &self.gw2, &self.server]
    }
}

fn start<'a>(gw: &'a Netns, node: u16) -> RunningDut<'a> {
    start_sixgate_with_config(
        gw,
        Path::new(BIN),
        &gateway_toml(node),
        &["2001:db8:64::/96", "198.18.0.0/31"],
    )
    .unwrap_or_else(|e| panic!("gw{node}: {e}"))
}

/// Wait up to `secs` for `cond`; `what` names it in the failure.
fn wait_for(secs: u64, what: impl Fn() -> String, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "timed out after {secs} s waiting for {}",
            what()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn cli(dut: &RunningDut, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .arg("--socket")
        .arg(dut.api_socket().expect("an API socket"))
        .output()
        .expect("run sixgate");
    assert!(
        out.status.success(),
        "sixgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The sessions a node lists, without what may differ between nodes (the
/// worker, the lifetime, a TCP state caught mid-change).
fn sessions(dut: &RunningDut) -> BTreeSet<String> {
    let rows: serde_json::Value =
        serde_json::from_str(&cli(dut, &["show", "sessions", "--json"])).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} [{}]:{} {}:{} -> {}:{}",
                r["proto"], r["ipv6"], r["port6"], r["ipv4"], r["port4"], r["remote4"], r["rport"]
            )
        })
        .collect()
}

/// A UDP exchange from the client: one datagram, one echo back; resent every
/// 300 ms up to 20 times from the same socket (the first reply may reach gw2
/// before the session's record, docs/ha.md). Prints how many tries it took.
const UDP_CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.settimeout(0.3)
for i in range(20):
    s.sendto(b"sixgate ha", (sys.argv[1], int(sys.argv[2])))
    try:
        d, a = s.recvfrom(2000)
        if d == b"sixgate ha":
            print("echo after", i + 1, "tries")
            sys.exit(0)
    except socket.timeout:
        pass
sys.exit(1)
"#;

const UDP_ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    d, a = s.recvfrom(2000)
    s.sendto(d, a)
"#;

#[test]
fn ha_asymmetric_udp_and_tcp() {
    let test = "ha_asymmetric_udp_and_tcp";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let mut turn = Turn::take(test);
    let bed = build().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.all());
    let gw1 = start(&bed.gw1, 1);
    let gw2 = start(&bed.gw2, 2);
    let logs = || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log());
    turn.run(logs, || {
        // Each node has the other's snapshot (empty: nothing translated yet).
        wait_for(10, logs, || {
            gw1.log().contains("snapshot from peer 2 received")
                && gw2.log().contains("snapshot from peer 1 received")
        });

        let port = UDP_PORT.to_string();
        let _echo = bed
            .server
            .spawn("python3", ["-c", UDP_ECHO, SERVER4, &port])
            .unwrap();
        bed.server
            .wait_listening(Proto::Udp, UDP_PORT, Duration::from_secs(10))
            .unwrap();
        let out = bed
            .client
            .run_timeout(
                "python3",
                ["-c", UDP_CLIENT, SERVER6, &port],
                Duration::from_secs(15),
            )
            .unwrap_or_else(|e| panic!("UDP across gw1 and gw2: {e}"));
        println!("{test}: UDP: {}", out.trim());

        let dir = ScratchDir::new("hawww").unwrap();
        let content = pattern(256 * 1024);
        dir.write("f.bin", &content).unwrap();
        let _http = http_server(&bed.server, SERVER4.parse().unwrap(), &dir);
        fetch_and_compare(
            &bed.client,
            &format!("[{SERVER6}]"),
            &dir,
            "f.bin",
            &content,
        );

        // The requests went through gw1, the replies through gw2.
        let v6_in = |ns: &Netns| ns.link_stats("lan").unwrap().rx_packets;
        assert!(v6_in(&bed.gw1) > 10, "gw1 got the IPv6 side");
        let v4_in = |ns: &Netns| ns.link_stats("wan").unwrap().rx_packets;
        assert!(v4_in(&bed.gw2) > 10, "gw2 got the IPv4 side");
        assert!(v4_in(&bed.gw1) < 10, "no IPv4 replies through gw1");

        // Both nodes list the same sessions: the UDP one and the TCP one,
        // on gw1's pool4 address.
        let t0 = Instant::now();
        let last = loop {
            let both = (sessions(&gw1), sessions(&gw2));
            if both.0 == both.1 && both.0.len() >= 2 {
                break both;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "the nodes list different sessions: {both:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let udp = format!(":{UDP_PORT}");
        let tcp = format!(":{HTTP_PORT}");
        for (what, port) in [("\"udp\"", &udp), ("\"tcp\"", &tcp)] {
            assert!(
                last.0
                    .iter()
                    .any(|s| s.starts_with(what) && s.contains("198.18.0.0") && s.ends_with(port)),
                "{what} session on 198.18.0.0: {:?}",
                last.0
            );
        }
        println!("{test}: both nodes list {:?}", last.0);

        // show sync: each node sees the other up and synced; gw2 received
        // gw1's records, nothing was dropped or lost.
        for (gw, peer) in [(&gw1, 2), (&gw2, 1)] {
            let v: serde_json::Value =
                serde_json::from_str(&cli(gw, &["show", "sync", "--json"])).unwrap();
            let p = &v["peers"][0];
            assert_eq!(p["node_id"], peer, "{v}");
            assert_eq!(p["up"], true, "{v}");
            assert_eq!(p["synced"], true, "{v}");
            assert_eq!(p["dropped"], 0, "{v}");
            assert_eq!(v["export_lost"], 0, "{v}");
            assert_eq!(v["import_refused"], 0, "{v}");
        }
        // The report is published every 100 ms: the TCP session's record
        // (made a few ms ago, now that the handshake needs no SYN-ACK
        // retransmission) may not be in it yet.
        let sync2 = || -> serde_json::Value {
            serde_json::from_str(&cli(&gw2, &["show", "sync", "--json"])).unwrap()
        };
        wait_for(
            2,
            || format!("gw2's show sync to count 2 records: {}", sync2()),
            || {
                let v = sync2();
                v["peers"][0]["records_in"].as_u64() >= Some(2) && v["imported"].as_u64() >= Some(2)
            },
        );
        let table = cli(&gw1, &["show", "sync"]);
        assert!(
            table.starts_with("peer") && table.contains("synced"),
            "{table}"
        );
        println!("{test}: gw1 show sync:\n{table}");
        let scrape = bed
            .gw2
            .run(
                "curl",
                ["-sS", "--max-time", "5", "http://127.0.0.1:9464/metrics"],
            )
            .unwrap();
        let line = scrape
            .lines()
            .find(|l| {
                l.starts_with("sixgate_sync_records_total{") && l.contains("direction=\"in\"")
            })
            .unwrap_or_else(|| panic!("no sync records in /metrics:\n{scrape}"));
        assert!(!line.ends_with(" 0"), "{line}");
        assert!(
            scrape.contains("sixgate_sync_peer_synced{peer=\"1\"} 1"),
            "{scrape}"
        );

        // A reload that changes what the config hash covers (a timeout) on
        // gw1 only: gw1 says so, gw2 refuses gw1's datagrams and names both
        // hashes.
        let path = gw1.config_path();
        let text = std::fs::read_to_string(path).unwrap();
        let changed = text.replace("[nat64]\n", "[nat64]\nudp_timeout = 600\n");
        assert_ne!(text, changed, "{text}");
        std::fs::write(path, changed).unwrap();
        cli(&gw1, &["reload"]);
        wait_for(5, logs, || {
            gw1.log().contains("config hash now")
                && gw2.log().contains("sync: peer 1 has config hash")
        });
        println!(
            "{test}: {}",
            common::line_with(&gw2.log(), "sync: peer 1 has config hash")
        );
    });
    let s1 = stop_cleanly(test, "gw1", gw1);
    let s2 = stop_cleanly(test, "gw2", gw2);
    print!("{test}: gw1:\n{}{test}: gw2:\n{}", s1.stdout, s2.stdout);
    drop(bed);
    turn.finish();
}

/// A TCP echo server (one connection at a time).
const TCP_ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4)
while True:
    c, a = s.accept()
    while True:
        d = c.recv(2000)
        if not d:
            break
        c.sendall(d)
    c.close()
"#;

/// One connection: an echo, "first" on standard output, then waits for the
/// file argv[3] and echoes again on the same connection ("second").
const TCP_CLIENT: &str = r#"
import os, socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(b"before")
assert s.recv(100) == b"before"
print("first", flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.02)
s.sendall(b"after")
assert s.recv(100) == b"after"
print("second", flush=True)
"#;

#[test]
fn ha_tcp_survives_kill_9_of_gw1() {
    let test = "ha_tcp_survives_kill_9_of_gw1";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let mut turn = Turn::take(test);
    let bed = build().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.all());
    let gw1 = start(&bed.gw1, 1);
    let gw2 = start(&bed.gw2, 2);
    let logs = || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log());
    let port = "9001";
    let dir = ScratchDir::new("hago").unwrap();
    let go = dir.path().join("go");
    let mut client = turn.run(logs, || {
        wait_for(10, logs, || {
            gw1.log().contains("snapshot from peer 2 received")
                && gw2.log().contains("snapshot from peer 1 received")
        });
        let echo = bed
            .server
            .spawn("python3", ["-c", TCP_ECHO, SERVER4, port])
            .unwrap();
        bed.server
            .wait_listening(Proto::Tcp, 9001, Duration::from_secs(10))
            .unwrap();
        let client = bed
            .client
            .spawn(
                "python3",
                ["-c", TCP_CLIENT, SERVER6, port, &go.to_string_lossy()],
            )
            .unwrap();
        wait_for(
            10,
            || format!("the first echo: {} {}", client.stdout(), client.stderr()),
            || client.stdout().contains("first"),
        );
        // gw2 has the session from gw1.
        wait_for(5, logs, || {
            sessions(&gw2)
                .iter()
                .any(|s| s.starts_with("\"tcp\"") && s.ends_with(":9001"))
        });
        (client, echo)
    });
    // gw1 dies without a word; its TUN device and routes go with it.
    let pids = bed.gw1.pids();
    assert!(!pids.is_empty());
    for pid in &pids {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let killed = gw1.stop().unwrap_or_else(|e| panic!("{test}: gw1: {e}"));
    assert!(
        !killed.status.success(),
        "gw1 was killed: {:?}",
        killed.status
    );
    turn.run(
        || gw2.log(),
        || {
            // The routing daemon's part: the IPv6 side moves to gw2.
            bed.client
                .ip([
                    "-6",
                    "route",
                    "replace",
                    "2001:db8:64::/96",
                    "via",
                    "fd00:2::1",
                ])
                .unwrap();
            std::fs::write(&go, b"go").unwrap();
            wait_for(
                10,
                || {
                    format!(
                        "the echo after the failover: {} {}",
                        client.0.stdout(),
                        client.0.stderr()
                    )
                },
                || client.0.stdout().contains("second"),
            );
            println!("{test}: the connection carried data through gw2 alone");
        },
    );
    let _ = client.0.exited();
    drop(client);
    let s2 = stop_cleanly(test, "gw2", gw2);
    print!("{test}: gw2:\n{}", s2.stdout);
    drop(bed);
    turn.finish();
}

#[test]
fn ha_restarted_node_gets_the_sessions_by_snapshot() {
    let test = "ha_restarted_node_gets_the_sessions_by_snapshot";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let mut turn = Turn::take(test);
    let bed = build().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.all());
    let gw1 = start(&bed.gw1, 1);
    let first = start(&bed.gw2, 2);
    let port = UDP_PORT.to_string();
    let _echo = bed
        .server
        .spawn("python3", ["-c", UDP_ECHO, SERVER4, &port])
        .unwrap();
    let before = turn.run(
        || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), first.log()),
        || {
            wait_for(
                10,
                || gw1.log(),
                || gw1.log().contains("snapshot from peer 2 received"),
            );
            bed.server
                .wait_listening(Proto::Udp, UDP_PORT, Duration::from_secs(10))
                .unwrap();
            // Three UDP sessions (three client sockets).
            for _ in 0..3 {
                bed.client
                    .run_timeout(
                        "python3",
                        ["-c", UDP_CLIENT, SERVER6, &port],
                        Duration::from_secs(15),
                    )
                    .unwrap_or_else(|e| panic!("UDP: {e}"));
            }
            sessions(&gw1)
        },
    );
    assert_eq!(before.len(), 3, "{before:?}");
    // gw2 stops and starts again, empty: gw1 sees a new epoch and sends a
    // snapshot, a walk of its workers' tables.
    stop_cleanly(test, "gw2", first);
    let gw2 = start(&bed.gw2, 2);
    turn.run(
        || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log()),
        || {
            let mut after = BTreeSet::new();
            let t0 = Instant::now();
            while after != before {
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "gw2 after its restart lists {after:?}, gw1 {before:?}"
                );
                std::thread::sleep(Duration::from_millis(50));
                after = sessions(&gw2);
            }
            let log = gw2.log();
            let line = common::line_with(&log, "snapshot from peer 1 received");
            assert!(line.contains("(3 records, 3 announced)"), "{line}");
            println!("{test}: {line}");
        },
    );
    stop_cleanly(test, "gw1", gw1);
    stop_cleanly(test, "gw2", gw2);
    drop(bed);
    turn.finish();
}

/// Fresh sessions, one after another: per UDP session (a new socket) the
/// first exchange and a second one on the same socket, each with a 0.9 s
/// timeout (no retry: the first reply must come); then TCP connects, each
/// timed. Prints one JSON line of seconds.
const FIRST_PACKETS_CLIENT: &str = r#"
import json, socket, sys, time
host, uport, tport, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
udp_first, udp_again, tcp, ports = [], [], [], []
for i in range(n):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.settimeout(0.9)
    s.bind(("::", 0))
    ports.append(s.getsockname()[1])
    for what, into in ((b"first", udp_first), (b"again", udp_again)):
        t = time.monotonic()
        s.sendto(what, (host, uport))
        try:
            d, a = s.recvfrom(100)
        except socket.timeout:
            sys.exit("UDP session %d: no answer to %r within 0.9 s" % (i, what))
        assert d == what, d
        into.append(time.monotonic() - t)
    s.close()
    time.sleep(0.02)
for i in range(n):
    t = time.monotonic()
    c = socket.create_connection((host, tport), timeout=5)
    tcp.append(time.monotonic() - t)
    c.sendall(b"x")
    assert c.recv(10) == b"x"
    c.close()
    time.sleep(0.02)
print(json.dumps({"udp_first": udp_first, "udp_again": udp_again, "tcp": tcp, "ports": ports}))
"#;

/// tshark's lines: epoch seconds, IPv4 source, IPv6 source, UDP source and
/// destination ports, UDP payload (hex), tab-separated.
fn tshark(ns: &Netns, ifaces: &[&str]) -> Option<sixgate_netns::Background> {
    let mut args: Vec<String> = vec!["-l".into(), "-n".into()];
    for i in ifaces {
        args.extend(["-i".into(), (*i).into()]);
    }
    args.extend(
        [
            "-f",
            "udp",
            "-T",
            "fields",
            "-e",
            "frame.time_epoch",
            "-e",
            "ip.src",
            "-e",
            "ipv6.src",
            "-e",
            "udp.srcport",
            "-e",
            "udp.dstport",
            "-e",
            "udp.payload",
        ]
        .map(String::from),
    );
    let bg = ns.spawn("tshark", &args).ok()?;
    let t0 = Instant::now();
    while !bg.stderr().contains("Capturing on") {
        if t0.elapsed() > Duration::from_secs(20) || bg.stderr().contains("rror") {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(bg)
}

/// The median and the largest of `v`, in milliseconds.
fn ms(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.sort_by(f64::total_cmp);
    format!(
        "median {:.3} ms, max {:.3} ms (n = {})",
        v[v.len() / 2] * 1e3,
        v[v.len() - 1] * 1e3,
        v.len()
    )
}

/// docs/ha.md, plan step 2: with the client behind gw1 and the server behind
/// gw2, the first reply of every new session reaches gw2 about when the
/// session's record does. gw2 holds it until the record comes and then
/// translates it: the first UDP exchange of each of 20 fresh sessions gets
/// its answer (no ICMP error, no retry), and 20 TCP connects complete well
/// under the 1 s of a SYN-ACK retransmission. Where tshark is installed, it
/// also measures, per UDP session, the time from the request reaching gw1
/// to its record reaching gw2 (export), and from the later of the record and
/// the server's reply reaching gw2 to the translated reply leaving it
/// (import and release), for docs/ha.md.
#[test]
fn ha_first_packets_cross_before_their_record() {
    first_packets_cross("ha_first_packets_cross_before_their_record", false);
}

/// The same on the AF_XDP data plane (one worker per node: the bed's veths
/// have one queue), whose timers' send path (`send_copy`, next hops from
/// the kernel) sends the released packets.
#[test]
fn ha_first_packets_cross_before_their_record_xdp() {
    first_packets_cross("ha_first_packets_cross_before_their_record_xdp", true);
}

/// [`gateway_toml`] on the AF_XDP data plane, one worker.
fn xdp_toml(node: u16) -> String {
    let t = gateway_toml(node);
    let x = t
        .replace("workers = 2\n", "dataplane = \"xdp\"\nworkers = 1\n")
        .replace(
            "[tun]\nname = \"sixgate0\"\n",
            "[xdp]\nipv6_interface = \"lan\"\nipv4_interface = \"wan\"\n",
        );
    assert!(x.contains("[xdp]") && x.contains("workers = 1"), "{x}");
    x
}

fn first_packets_cross(test: &str, xdp: bool) {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let mut turn = Turn::take(test);
    let bed = build().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.all());
    let (gw1, gw2) = if xdp {
        // AF_XDP gets no checksum offload metadata: the hosts send complete
        // checksums, as the other XDP beds' do.
        for (ns, dev) in [
            (&bed.client, "c1"),
            (&bed.client, "c2"),
            (&bed.server, "s1"),
            (&bed.server, "s2"),
        ] {
            ns.run("ethtool", ["-K", dev, "tx", "off"])
                .unwrap_or_else(|e| panic!("{test}: {e}"));
        }
        let start = |gw, node| {
            start_sixgate_with_config(
                gw,
                Path::new(BIN),
                &xdp_toml(node),
                &["2001:db8:64::/96", "198.18.0.0/31"],
            )
            .unwrap_or_else(|e| panic!("gw{node}: {e}"))
        };
        (start(&bed.gw1, 1), start(&bed.gw2, 2))
    } else {
        (start(&bed.gw1, 1), start(&bed.gw2, 2))
    };
    let logs = || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log());
    const N: usize = 20;
    turn.run(logs, || {
        wait_for(10, logs, || {
            gw1.log().contains("snapshot from peer 2 received")
                && gw2.log().contains("snapshot from peer 1 received")
        });
        let uport = UDP_PORT.to_string();
        let tport = "9001";
        let _udp = bed
            .server
            .spawn("python3", ["-c", UDP_ECHO, SERVER4, &uport])
            .unwrap();
        let _tcp = bed
            .server
            .spawn("python3", ["-c", TCP_ECHO, SERVER4, tport])
            .unwrap();
        bed.server
            .wait_listening(Proto::Udp, UDP_PORT, Duration::from_secs(10))
            .unwrap();
        bed.server
            .wait_listening(Proto::Tcp, 9001, Duration::from_secs(10))
            .unwrap();
        // tshark does not see what an XDP program redirects.
        let cap1 = (!xdp).then(|| tshark(&bed.gw1, &["lan", "wan"])).flatten();
        let cap2 = (!xdp)
            .then(|| tshark(&bed.gw2, &["sync", "wan", "lan"]))
            .flatten();
        let out = bed
            .client
            .run_timeout(
                "python3",
                [
                    "-c",
                    FIRST_PACKETS_CLIENT,
                    SERVER6,
                    &uport,
                    tport,
                    &N.to_string(),
                ],
                Duration::from_secs(60),
            )
            .unwrap_or_else(|e| {
                for gw in [&gw1, &gw2] {
                    println!("{}", cli(gw, &["show", "counters", "--json"]));
                    println!("{}", cli(gw, &["show", "stats"]));
                    println!("{}", cli(gw, &["show", "sessions"]));
                }
                panic!("{test}: {e}")
            });
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        let secs = |k: &str| -> Vec<f64> {
            v[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        let (first, again, tcp) = (secs("udp_first"), secs("udp_again"), secs("tcp"));
        assert_eq!((first.len(), tcp.len()), (N, N), "{v}");
        let slowest = tcp.iter().copied().fold(0.0, f64::max);
        assert!(
            slowest < 0.5,
            "a TCP connect took {slowest:.3} s: a SYN-ACK retransmission? {v}"
        );
        println!("{test}: UDP first exchange {}", ms(first));
        println!("{test}: UDP second exchange {}", ms(again));
        println!("{test}: TCP connect {}", ms(tcp));

        // Nothing answered with an ICMP error, nothing left to expire.
        let counters = |gw: &RunningDut| -> serde_json::Value {
            serde_json::from_str(&cli(gw, &["show", "counters", "--all", "--json"])).unwrap()
        };
        let drops = |c: &serde_json::Value, reason: &str| {
            c["drops"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["reason"] == reason)
                .unwrap_or_else(|| panic!("no {reason} in {c}"))["count"]
                .as_u64()
                .unwrap()
        };
        std::thread::sleep(Duration::from_millis(300));
        let c2 = counters(&gw2);
        for reason in ["no_bib_entry", "syn_held", "sync_pending"] {
            assert_eq!(drops(&c2, reason), 0, "gw2 {reason}: {c2}");
        }

        // tshark's view, when there is one.
        let (Some(cap1), Some(cap2)) = (cap1, cap2) else {
            println!("{test}: no tshark (or XDP): export and import times not measured");
            return;
        };
        std::thread::sleep(Duration::from_millis(500));
        let l1 = cap1.stop(Duration::from_secs(5)).stdout;
        let l2 = cap2.stop(Duration::from_secs(5)).stdout;
        let ports: BTreeSet<u16> = v["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_u64().unwrap() as u16)
            .collect();
        let mut request = std::collections::BTreeMap::new();
        let mut record = std::collections::BTreeMap::new();
        let mut reply_in = std::collections::BTreeMap::new();
        let mut reply_out = std::collections::BTreeMap::new();
        let fields = |l: &str| -> Option<(f64, String, String, u16, u16, String)> {
            let f: Vec<&str> = l.split('\t').collect();
            Some((
                f.first()?.parse().ok()?,
                f.get(1)?.to_string(),
                f.get(2)?.to_string(),
                f.get(3)?.parse().ok()?,
                f.get(4)?.parse().ok()?,
                f.get(5).map_or(String::new(), |s| s.to_string()),
            ))
        };
        let mut request_out = std::collections::BTreeMap::new();
        for (t, v4, v6, sp, dp, _) in l1.lines().filter_map(fields) {
            if !v6.is_empty() && dp == UDP_PORT {
                // gw1's lan: the client's requests (the first per port).
                request.entry(sp).or_insert(t);
            } else if v4.starts_with("198.18.0.") && dp == UDP_PORT {
                // gw1's wan: the same, translated (by pool4 port).
                request_out.entry(sp).or_insert(t);
            }
        }
        for (t, v4, v6, sp, dp, payload) in l2.lines().filter_map(fields) {
            if sp == 7464 && v4 == "10.5.0.1" {
                // A sync datagram from gw1: its DATA records (docs/ha.md,
                // "Wire protocol"), by the client's port.
                let b: Vec<u8> = (0..payload.len() / 2)
                    .filter_map(|i| u8::from_str_radix(&payload[2 * i..2 * i + 2], 16).ok())
                    .collect();
                if b.len() < 44 || b[5] != 1 {
                    continue;
                }
                let count = usize::from(u16::from_be_bytes([b[42], b[43]]));
                for r in b[44..].chunks_exact(56).take(count) {
                    let port6 = u16::from_be_bytes([r[48], r[49]]);
                    let port4 = u16::from_be_bytes([r[50], r[51]]);
                    let rport = u16::from_be_bytes([r[52], r[53]]);
                    if r[0] == 1 && r[1] == 17 && rport == UDP_PORT {
                        record.entry(port6).or_insert((t, port4));
                    }
                }
            } else if v4 == SERVER4 && sp == UDP_PORT {
                reply_in.entry(dp).or_insert(t);
            } else if v6 == SERVER6 && sp == UDP_PORT {
                reply_out.entry(dp).or_insert(t);
            }
        }
        let (mut export, mut import, mut overtook) = (Vec::new(), Vec::new(), 0);
        let mut after_batch = Vec::new();
        for p in &ports {
            let (Some(&rq), Some(&(rec, port4)), Some(&out)) =
                (request.get(p), record.get(p), reply_out.get(p))
            else {
                continue;
            };
            let Some(&rin) = reply_in.get(&port4) else {
                continue;
            };
            export.push(rec - rq);
            if let Some(&sent) = request_out.get(&port4) {
                after_batch.push(rec - sent);
            }
            if rin < rec {
                overtook += 1;
            }
            import.push(out - rec.max(rin));
            println!(
                "{test}: port {p}: record +{:.3} ms, reply in +{:.3} ms, reply out +{:.3} ms",
                (rec - rq) * 1e3,
                (rin - rq) * 1e3,
                (out - rq) * 1e3
            );
        }
        println!(
            "{test}: request at gw1 to its record at gw2 (export): {}",
            ms(export.clone())
        );
        println!(
            "{test}: translated request out of gw1 to its record at gw2 (after its batch): {}",
            ms(after_batch)
        );
        println!(
            "{test}: record or reply at gw2, whichever came last, to the reply out (import): {}",
            ms(import)
        );
        println!(
            "{test}: replies that overtook their record: {overtook} of {}",
            export.len()
        );
    });
    let s1 = stop_cleanly(test, "gw1", gw1);
    let s2 = stop_cleanly(test, "gw2", gw2);
    print!("{test}: gw1:\n{}{test}: gw2:\n{}", s1.stdout, s2.stdout);
    drop(bed);
    turn.finish();
}
