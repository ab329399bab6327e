//! Three NAT64 nodes sharing their state (docs/ha.md, "Snapshots in a group
//! of three or more"), end to end in namespaces:
//!
//! ```text
//!             fd00:1::/64 ── gw1 ── 10.1.0.0/24
//!   client  < fd00:2::/64 ── gw2 ── 10.2.0.0/24 > server (198.51.100.10 on lo)
//!             fd00:3::/64 ── gw3 ── 10.3.0.0/24
//!                  gw1, gw2, gw3 meshed by veths (sync: 10.5.0.N on lo)
//! ```
//!
//! Each gateway runs `sixgate run` in mode nat64, pool4 `198.18.0.0/30`, two
//! workers, `[sync]` with the two others as peers; gw1 owns `198.18.0.0`,
//! gw2 `198.18.0.1`, gw3 `198.18.0.2/31`. The client sends from `fd00:N::2`
//! through gwN (source routing), and the server reaches each node's shard
//! through the *next* node, so every reply is translated from a replica.
//!
//! - `ha_three_nodes_converge`: every node has both peers' snapshots; a UDP
//!   exchange through each node works; `show sessions` lists the same three
//!   sessions (one on each node's shard) on all three nodes; `show sync`
//!   shows each node both peers up and synced, nothing refused.
//! - `ha_three_ipv6_side_conflict_converges_on_one_mapping`: one client port
//!   sends through gw1 and gw2 at once; both flows work, the nodes agree on
//!   the sessions (two mappings, counted as a conflict on every node, or one
//!   if the record won the race), and the port's next flow, through gw3,
//!   takes the lower mapping.
//!
//! Root and `ip netns` needed (else `skipped:`), and python3.

mod common;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::ha::{BIN, KEY, UDP_CLIENT, UDP_ECHO, cli, sessions, wait_for};
use common::{Turn, stop_cleanly};
use sixgate_netns::{Netns, Proto, RunningDut, check_host, start_sixgate_with_config, veth};

const SERVER4: &str = "198.51.100.10";
const SERVER6: &str = "2001:db8:64::c633:640a";
const UDP_PORT: u16 = 9000;
const NODES: [u16; 3] = [1, 2, 3];

/// Node `n`'s pool4 shard.
fn shard(n: u16) -> &'static str {
    ["198.18.0.0", "198.18.0.1", "198.18.0.2/31"][usize::from(n) - 1]
}

fn gateway_toml(node: u16) -> String {
    let peers: Vec<String> = NODES
        .iter()
        .filter(|&&p| p != node)
        .map(|p| format!("{{ node_id = {p}, address = \"10.5.0.{p}:7464\" }}"))
        .collect();
    let shards: Vec<String> = NODES
        .iter()
        .map(|&n| format!("{{ node_id = {n}, pool4 = [\"{}\"] }}", shard(n)))
        .collect();
    format!(
        r#"[translator]
mode = "nat64"
pool6 = "2001:db8:64::/96"

[nat64]
pool4 = ["198.18.0.0/30"]

[daemon]
workers = 2

[tun]
name = "sixgate0"

[sync]
node_id = {node}
bind = "10.5.0.{node}:7464"
peers = [ {} ]
key = "{KEY}"
shards = [ {} ]
"#,
        peers.join(", "),
        shards.join(", ")
    )
}

struct Bed {
    client: Netns,
    gws: [Netns; 3],
    server: Netns,
}

impl Bed {
    fn all(&self) -> Vec<&Netns> {
        let mut v = vec![&self.client, &self.server];
        v.extend(self.gws.iter());
        v
    }
}

fn build() -> sixgate_netns::Result<Bed> {
    let n = sixgate_netns::next_index();
    let bed = Bed {
        client: Netns::with_index("h3client", n)?,
        gws: [
            Netns::with_index("h3gw1", n)?,
            Netns::with_index("h3gw2", n)?,
            Netns::with_index("h3gw3", n)?,
        ],
        server: Netns::with_index("h3server", n)?,
    };
    // Replies arrive on other links than the requests left by: loose
    // reverse-path checks everywhere.
    for ns in bed.all() {
        ns.sysctl(&[
            ("net.ipv4.conf.all.rp_filter", "0"),
            ("net.ipv4.conf.default.rp_filter", "0"),
            ("net.ipv6.conf.all.accept_dad", "0"),
            ("net.ipv6.conf.default.accept_dad", "0"),
        ])?;
    }
    for (i, gw) in (1u16..).zip(&bed.gws) {
        veth(&bed.client, &format!("c{i}"), gw, "lan")?;
        veth(gw, "wan", &bed.server, &format!("s{i}"))?;
    }
    // The sync mesh: a veth per pair, each node's address on its lo.
    for (i, j) in [(1u16, 2u16), (1, 3), (2, 3)] {
        let (a, b) = (&bed.gws[usize::from(i) - 1], &bed.gws[usize::from(j) - 1]);
        veth(a, &format!("n{j}"), b, &format!("n{i}"))?;
        a.add_route_dev(&format!("10.5.0.{j}/32"), &format!("n{j}"))?;
        b.add_route_dev(&format!("10.5.0.{i}/32"), &format!("n{i}"))?;
    }
    for (i, gw) in (1u16..).zip(&bed.gws) {
        gw.enable_forwarding()?;
        gw.sysctl(&[
            ("net.ipv6.icmp.ratelimit", "0"),
            ("net.ipv4.icmp_ratelimit", "0"),
        ])?;
        gw.add_address("lo", &format!("10.5.0.{i}/32"))?;
        gw.add_address("lan", &format!("fd00:{i}::1/64"))?;
        gw.add_address("wan", &format!("10.{i}.0.1/24"))?;
        gw.add_route_via(SERVER4, &format!("10.{i}.0.2"))?;
        // The client's addresses, whichever link they are on.
        for other in NODES.iter().filter(|&&o| o != i) {
            gw.add_route_via(&format!("fd00:{other}::/64"), &format!("fd00:{i}::2"))?;
        }
    }
    bed.server.add_address("lo", &format!("{SERVER4}/32"))?;
    for i in NODES {
        bed.server
            .add_address(&format!("s{i}"), &format!("10.{i}.0.2/24"))?;
        // IPv6 side: from fd00:i::2, pool6 through gwi.
        bed.client
            .add_address(&format!("c{i}"), &format!("fd00:{i}::2/64"))?;
        let table = (10 + i).to_string();
        bed.client.ip([
            "-6",
            "route",
            "add",
            "2001:db8:64::/96",
            "via",
            &format!("fd00:{i}::1"),
            "dev",
            &format!("c{i}"),
            "table",
            &table,
        ])?;
        bed.client.ip([
            "-6",
            "rule",
            "add",
            "from",
            &format!("fd00:{i}::2"),
            "table",
            &table,
        ])?;
    }
    // The server: each node's shard through the next node.
    for i in NODES {
        let next = i % 3 + 1;
        bed.server
            .add_route_via(shard(i), &format!("10.{next}.0.1"))?;
    }
    Ok(bed)
}

fn start(gw: &Netns, node: u16) -> RunningDut<'_> {
    start_sixgate_with_config(
        gw,
        Path::new(BIN),
        &gateway_toml(node),
        &["2001:db8:64::/96", "198.18.0.0/30"],
    )
    .unwrap_or_else(|e| panic!("gw{node}: {e}"))
}

/// Check the host, build the bed, start the three nodes, wait until each
/// has both peers' snapshots, run `body`, stop every node cleanly.
fn run_group(test: &str, body: impl FnOnce(&Bed, &[RunningDut])) {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let mut turn = Turn::take(test);
    let bed = build().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.all());
    let gws: Vec<RunningDut> = (1u16..).zip(&bed.gws).map(|(i, g)| start(g, i)).collect();
    let logs = || {
        gws.iter()
            .enumerate()
            .map(|(i, g)| format!("gw{}:\n{}\n", i + 1, g.log()))
            .collect::<String>()
    };
    turn.run(logs, || {
        wait_for(10, logs, || {
            (1u16..).zip(&gws).all(|(i, g)| {
                NODES.iter().filter(|&&p| p != i).all(|p| {
                    g.log()
                        .contains(&format!("snapshot from peer {p} received"))
                })
            })
        });
        let port = UDP_PORT.to_string();
        let _echo = bed
            .server
            .spawn("python3", ["-c", UDP_ECHO, SERVER4, &port])
            .unwrap();
        bed.server
            .wait_listening(Proto::Udp, UDP_PORT, Duration::from_secs(10))
            .unwrap();
        body(&bed, &gws);
    });
    for (i, gw) in (1u16..).zip(gws) {
        let s = stop_cleanly(test, &format!("gw{i}"), gw);
        print!("{test}: gw{i}:\n{}", s.stdout);
    }
    drop(bed);
    turn.finish();
}

/// Wait until every node lists the same sessions and `done` holds for them.
fn converged(gws: &[RunningDut], done: impl Fn(&BTreeSet<String>) -> bool) -> BTreeSet<String> {
    let t0 = Instant::now();
    loop {
        let lists: Vec<_> = gws.iter().map(sessions).collect();
        if lists.iter().all(|l| *l == lists[0]) && done(&lists[0]) {
            return lists[0].clone();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the nodes list different sessions: {lists:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `a` is in node `n`'s shard.
fn in_shard(n: u16, a: Ipv4Addr) -> bool {
    let s = shard(n);
    let (addr, len) = s.split_once('/').unwrap_or((s, "32"));
    let (addr, len): (Ipv4Addr, u32) = (addr.parse().unwrap(), len.parse().unwrap());
    let mask = u32::MAX << (32 - len);
    u32::from(a) & mask == u32::from(addr) & mask
}

/// A row's pool4 transport address (rows as `sessions` writes them:
/// `"udp" ["V6"]:P6 "V4":P4 -> "R4":RP`).
fn pool4_of(row: &str) -> (Ipv4Addr, u16) {
    let f = row.split_whitespace().nth(2).expect(row);
    let (a, p) = f.rsplit_once(':').expect(row);
    (
        a.trim_matches('"').parse().expect(row),
        p.parse().expect(row),
    )
}

#[test]
fn ha_three_nodes_converge() {
    let test = "ha_three_nodes_converge";
    run_group(test, |bed, gws| {
        let port = UDP_PORT.to_string();
        for i in NODES {
            let src = format!("fd00:{i}::2");
            let out = bed
                .client
                .run_timeout(
                    "python3",
                    ["-c", UDP_CLIENT, SERVER6, &port, &src],
                    Duration::from_secs(15),
                )
                .unwrap_or_else(|e| panic!("UDP through gw{i}: {e}"));
            println!("{test}: UDP through gw{i}: {}", out.trim());
        }

        // Every node lists the same three sessions, one on each shard.
        let all = converged(gws, |l| l.len() >= 3);
        for i in NODES {
            let src = format!("[\"fd00:{i}::2\"]");
            assert!(
                all.iter()
                    .any(|r| r.contains(&src) && in_shard(i, pool4_of(r).0)),
                "gw{i}'s session on its shard {}: {all:?}",
                shard(i)
            );
        }
        println!("{test}: all three nodes list {all:?}");

        // show sync: each node sees both peers up and synced, nothing
        // refused or lost.
        for (i, gw) in (1u16..).zip(gws) {
            let v: serde_json::Value =
                serde_json::from_str(&cli(gw, &["show", "sync", "--json"])).unwrap();
            let peers = v["peers"].as_array().unwrap();
            assert_eq!(peers.len(), 2, "gw{i}: {v}");
            for p in peers {
                assert_eq!(p["up"], true, "gw{i}: {v}");
                assert_eq!(p["synced"], true, "gw{i}: {v}");
                assert_eq!(p["dropped"], 0, "gw{i}: {v}");
            }
            assert_eq!(v["export_lost"], 0, "gw{i}: {v}");
            assert_eq!(v["import_refused"], 0, "gw{i}: {v}");
        }
    });
}

/// From one socket (argv: server, source address, source port, ports), a
/// datagram to each port at once, resent every 300 ms up to 20 times until
/// each has echoed.
const UDP_FANOUT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind((sys.argv[2], int(sys.argv[3])))
s.settimeout(0.3)
ports = [int(p) for p in sys.argv[4].split(",")]
got = set()
for i in range(20):
    for p in ports:
        if p not in got:
            s.sendto(b"sixgate ha", (sys.argv[1], p))
    try:
        while len(got) < len(ports):
            d, a = s.recvfrom(2000)
            got.add(a[1])
        print("echoes after", i + 1, "tries")
        sys.exit(0)
    except socket.timeout:
        pass
sys.exit(1)
"#;

/// docs/ha.md, "Two mappings of one IPv6 transport address" (RFC 6146
/// §3.5.1.1 across nodes): one client port sends through gw1 and gw2 at once
/// (source and destination-port routing stand in for an ECMP that splits a
/// subscriber's flows), so each node may map it on its own shard before it
/// hears of the other's mapping. Both flows get their echoes, every node
/// lists the same sessions, each node counts the conflict if there was one,
/// and a new flow of that port through gw3 takes the lower mapping.
#[test]
fn ha_three_ipv6_side_conflict_converges_on_one_mapping() {
    let test = "ha_three_ipv6_side_conflict_converges_on_one_mapping";
    run_group(test, |bed, gws| {
        for (dport, table) in [("9001", "12"), ("9002", "13")] {
            bed.client
                .ip([
                    "-6",
                    "rule",
                    "add",
                    "from",
                    "fd00:1::2",
                    "dport",
                    dport,
                    "table",
                    table,
                ])
                .unwrap();
        }
        let mut echoes = Vec::new();
        for p in [9001u16, 9002] {
            let port = p.to_string();
            echoes.push(
                bed.server
                    .spawn("python3", ["-c", UDP_ECHO, SERVER4, &port])
                    .unwrap(),
            );
            bed.server
                .wait_listening(Proto::Udp, p, Duration::from_secs(10))
                .unwrap();
        }
        let fanout = |ports: &str| {
            bed.client
                .run_timeout(
                    "python3",
                    ["-c", UDP_FANOUT, SERVER6, "fd00:1::2", "40000", ports],
                    Duration::from_secs(15),
                )
                .unwrap_or_else(|e| panic!("UDP to {ports}: {e}"))
        };
        println!(
            "{test}: through gw1 and gw2: {}",
            fanout("9000,9001").trim()
        );
        let ours = |l: &BTreeSet<String>, rport: &str| {
            l.iter()
                .filter(|r| r.contains("[\"fd00:1::2\"]:40000 ") && r.ends_with(rport))
                .map(|r| pool4_of(r))
                .collect::<Vec<_>>()
        };
        let all = converged(gws, |l| {
            !ours(l, ":9000").is_empty() && !ours(l, ":9001").is_empty()
        });
        let (a, b) = (ours(&all, ":9000")[0], ours(&all, ":9001")[0]);
        let conflicts = |gw: &RunningDut| -> u64 {
            let v: serde_json::Value =
                serde_json::from_str(&cli(gw, &["show", "stats", "--json"])).unwrap();
            v["counters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == "bib_conflicts")
                .unwrap_or_else(|| panic!("no bib_conflicts in {v}"))["total"]
                .as_u64()
                .unwrap()
        };
        if a == b {
            // gw2 had gw1's record before its first packet: one mapping.
            println!("{test}: no conflict this time: both flows on {a:?}");
        } else {
            println!("{test}: two mappings, {a:?} (gw1) and {b:?} (gw2)");
            for (i, gw) in (1u16..).zip(gws) {
                assert!(conflicts(gw) >= 1, "gw{i} counted the conflict");
            }
        }
        // A new flow of the port, through gw3: the lower mapping, the same
        // on every node.
        println!("{test}: through gw3: {}", fanout("9002").trim());
        let all = converged(gws, |l| !ours(l, ":9002").is_empty());
        assert_eq!(ours(&all, ":9002"), vec![a.min(b)], "{all:#?}");
        println!("{test}: all three nodes list {all:?}");
    });
}
