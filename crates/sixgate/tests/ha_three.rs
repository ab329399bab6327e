//! Three NAT64 nodes sharing their state (docs/ha.md, "Snapshots in a group
//! of three or more"), end to end in namespaces.
//!
//! The bed is `common::ha_group`'s: three gateways, each owning a pool4
//! shard, the client sending through each, the server reaching each node's
//! shard through the next node, so every reply is translated from a replica.
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
use std::time::Duration;

use common::ha::{SERVER6, UDP_CLIENT, UDP_PORT, cli, sync_state, udp_echo_on, wait_for};
use common::ha_group::{NODES, converged, shard, with_group};
use sixgate_netns::RunningDut;

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
    with_group(test, |bed, gws| {
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
            let v = sync_state(gw);
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
    with_group(test, |bed, gws| {
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
        let _echoes: Vec<_> = [9001, 9002]
            .into_iter()
            .map(|p| udp_echo_on(&bed.server, p))
            .collect();
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
            // The workers publish their stats at each tick (100 ms), and the
            // echoes now come back at once (held replies): wait for them.
            for (i, gw) in (1u16..).zip(gws) {
                wait_for(
                    3,
                    || format!("gw{i} to count the conflict"),
                    || conflicts(gw) >= 1,
                );
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
