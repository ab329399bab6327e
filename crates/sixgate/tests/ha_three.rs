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
//!
//! Root and `ip netns` needed (else `skipped:`), and python3.

mod common;

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

#[test]
fn ha_three_nodes_converge() {
    let test = "ha_three_nodes_converge";
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
        // Each node has both peers' snapshots.
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
        let t0 = Instant::now();
        let all = loop {
            let lists: Vec<_> = gws.iter().map(sessions).collect();
            if lists.iter().all(|l| *l == lists[0]) && lists[0].len() >= 3 {
                break lists[0].clone();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "the nodes list different sessions: {lists:#?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        for i in NODES {
            // Rows as `sessions` writes them: JSON strings, quoted.
            let pool = shard(i).trim_end_matches("/31");
            let (src, v4) = (format!("[\"fd00:{i}::2\"]"), format!(" \"{pool}\":"));
            assert!(
                all.iter().any(|s| s.contains(&src) && s.contains(&v4)),
                "gw{i}'s session on its shard {pool}: {all:?}"
            );
        }
        println!("{test}: all three nodes list {all:?}");

        // show sync: each node sees both peers up and synced, nothing
        // refused or lost.
        for (i, gw) in (1u16..).zip(&gws) {
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
    for (i, gw) in (1u16..).zip(gws) {
        let s = stop_cleanly(test, &format!("gw{i}"), gw);
        print!("{test}: gw{i}:\n{}", s.stdout);
    }
    drop(bed);
    turn.finish();
}
