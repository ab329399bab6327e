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
//!
//! Root and `ip netns` needed (else `skipped:`), and python3 and curl.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::ha::{BIN, KEY, UDP_CLIENT, UDP_ECHO, cli, sessions, wait_for};
use common::{HTTP_PORT, Turn, fetch_and_compare, http_server, pattern, stop_cleanly};
use sixgate_netns::{
    Netns, Proto, RunningDut, ScratchDir, check_host, start_sixgate_with_config, veth,
};

const SERVER4: &str = "198.51.100.10";
const SERVER6: &str = "2001:db8:64::c633:640a";
const UDP_PORT: u16 = 9000;

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
        let v: serde_json::Value =
            serde_json::from_str(&cli(&gw2, &["show", "sync", "--json"])).unwrap();
        assert!(v["peers"][0]["records_in"].as_u64() >= Some(2), "{v}");
        assert!(v["imported"].as_u64() >= Some(2), "{v}");
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
