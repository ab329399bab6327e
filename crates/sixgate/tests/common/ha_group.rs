//! The three-node NAT64 bed of `ha_three.rs` (docs/ha.md, "Snapshots in a
//! group of three or more"):
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
//! The constants, waits, CLI and UDP echo are the two-node bed's
//! ([`super::ha`]).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use sixgate_netns::{Netns, RunningDut, check_host, veth};

use super::ha::{KEY, SERVER4, SYNC_PORT, UDP_PORT, sessions, start_routed, udp_echo_on, wait_for};
use super::{Turn, stop_cleanly};

/// The nodes' ids.
pub const NODES: [u16; 3] = [1, 2, 3];

/// Node `n`'s pool4 shard.
pub fn shard(n: u16) -> &'static str {
    ["198.18.0.0", "198.18.0.1", "198.18.0.2/31"][usize::from(n) - 1]
}

/// Node `node`'s configuration: the two others as peers, every shard.
pub fn group_toml(node: u16) -> String {
    let peers: Vec<String> = NODES
        .iter()
        .filter(|&&p| p != node)
        .map(|p| format!("{{ node_id = {p}, address = \"10.5.0.{p}:{SYNC_PORT}\" }}"))
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
bind = "10.5.0.{node}:{SYNC_PORT}"
peers = [ {} ]
key = "{KEY}"
shards = [ {} ]
"#,
        peers.join(", "),
        shards.join(", ")
    )
}

/// The bed: five namespaces, wired and routed, nothing running.
pub struct Group {
    pub client: Netns,
    pub gws: [Netns; 3],
    pub server: Netns,
}

impl Group {
    pub fn all(&self) -> Vec<&Netns> {
        let mut v = vec![&self.client, &self.server];
        v.extend(self.gws.iter());
        v
    }
}

pub fn build_group() -> sixgate_netns::Result<Group> {
    let n = sixgate_netns::next_index();
    let bed = Group {
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

/// Starts node `node` in `gw`.
pub fn start_member(gw: &Netns, node: u16) -> RunningDut<'_> {
    start_routed(
        gw,
        node,
        &group_toml(node),
        &["2001:db8:64::/96", "198.18.0.0/30"],
    )
}

/// Check the host, build the bed, start the three nodes, wait until each
/// has both peers' snapshots, start the UDP echo on [`UDP_PORT`], run
/// `body`, stop every node cleanly.
pub fn with_group(test: &str, body: impl FnOnce(&Group, &[RunningDut])) {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let mut turn = Turn::take(test);
    let bed = build_group().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.all());
    let gws: Vec<RunningDut> = (1u16..)
        .zip(&bed.gws)
        .map(|(i, g)| start_member(g, i))
        .collect();
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
        let _echo = udp_echo_on(&bed.server, UDP_PORT);
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
pub fn converged(gws: &[RunningDut], done: impl Fn(&BTreeSet<String>) -> bool) -> BTreeSet<String> {
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
