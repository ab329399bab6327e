//! Two NAT64 nodes sharing their state (docs/ha.md), end to end in namespaces,
//! on the bed of `common/ha.rs` (client → gw1, server → gw2: every reply
//! crosses the node that did not create the session).
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
use std::time::{Duration, Instant};

use common::ha::{
    SERVER4, SERVER6, SyncPath, UDP_CLIENT, UDP_PORT, cli, client_via_gw2, kill_9, sessions,
    sync_state, udp_echo, udp_exchange, wait_for, with_pair,
};
use common::{HTTP_PORT, fetch_and_compare, http_server, pattern, stop_cleanly};
use sixgate_netns::{Netns, Proto, ScratchDir};

#[test]
fn ha_asymmetric_udp_and_tcp() {
    let test = "ha_asymmetric_udp_and_tcp";
    with_pair(test, SyncPath::Direct, |turn, bed, gw1, gw2| {
        let logs = || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log());
        turn.run(logs, || {
            let _echo = udp_echo(bed);
            let out = udp_exchange(bed);
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
                    last.0.iter().any(|s| s.starts_with(what)
                        && s.contains("198.18.0.0")
                        && s.ends_with(port)),
                    "{what} session on 198.18.0.0: {:?}",
                    last.0
                );
            }
            println!("{test}: both nodes list {:?}", last.0);

            // show sync: each node sees the other up and synced; gw2 received
            // gw1's records, nothing was dropped or lost.
            for (gw, peer) in [(&gw1, 2), (&gw2, 1)] {
                let v = sync_state(gw);
                let p = &v["peers"][0];
                assert_eq!(p["node_id"], peer, "{v}");
                assert_eq!(p["up"], true, "{v}");
                assert_eq!(p["synced"], true, "{v}");
                assert_eq!(p["dropped"], 0, "{v}");
                assert_eq!(v["export_lost"], 0, "{v}");
                assert_eq!(v["import_refused"], 0, "{v}");
            }
            let v = sync_state(&gw2);
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
    });
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
    with_pair(test, SyncPath::Direct, |turn, bed, gw1, gw2| {
        let logs = || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log());
        let port = "9001";
        let dir = ScratchDir::new("hago").unwrap();
        let go = dir.path().join("go");
        let mut client = turn.run(logs, || {
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
        kill_9(&bed.gw1);
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
                client_via_gw2(bed);
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
    });
}

#[test]
fn ha_restarted_node_gets_the_sessions_by_snapshot() {
    let test = "ha_restarted_node_gets_the_sessions_by_snapshot";
    with_pair(test, SyncPath::Direct, |turn, bed, gw1, first| {
        let port = UDP_PORT.to_string();
        let _echo = udp_echo(bed);
        let before = turn.run(
            || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), first.log()),
            || {
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
        let gw2 = bed.start(2);
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
    });
}
