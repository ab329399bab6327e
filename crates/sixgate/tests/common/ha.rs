//! The two-node NAT64 bed of the HA tests (`ha.rs`, `ha_faults.rs`;
//! docs/ha.md):
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
//! [`with_pair`] is every test's start: bed, both nodes, each with the
//! other's (empty) snapshot. With [`SyncPath::Relay`] the nodes talk through
//! a UDP relay in gw2's namespace that delays some datagrams (reordering,
//! which this kernel cannot do without netem), and [`Bed::sync_loss`] drops
//! a share of the sync datagrams in gw1's namespace with nftables.
//!
//! The constants, the start of a node with a configuration, the waits, the
//! CLI and the UDP echo pair serve the three-node bed too
//! ([`super::ha_group`], `ha_three.rs`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use sixgate_netns::{Background, Netns, RunningDut, check_host, start_sixgate_with_config, veth};

use super::Turn;

pub const BIN: &str = env!("CARGO_BIN_EXE_sixgate");
pub const SERVER4: &str = "198.51.100.10";
pub const SERVER6: &str = "2001:db8:64::c633:640a";
pub const UDP_PORT: u16 = 9000;
pub const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
/// The sync port on every node.
pub const SYNC_PORT: u16 = 7464;

/// How the nodes reach each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPath {
    /// Straight over the sync veth.
    Direct,
    /// Through [`RELAY`]: gw1 knows node 2 at 10.5.0.12, gw2 knows node 1 at
    /// 10.5.0.11, both addresses of the relay in gw2's namespace, which
    /// holds back `RELAY_HOLD_PERCENT` % of the datagrams for 3 ms (later
    /// ones overtake them).
    Relay,
}

/// Share of the datagrams the relay holds back (reorders).
pub const RELAY_HOLD_PERCENT: u32 = 5;

/// The relay: two sockets, each standing for one node towards the other, so
/// each node sees its peer's datagrams from the address it was told. Prints
/// `held N` for every datagram it held back.
const RELAY: &str = r#"
import random, select, socket, sys, time
pct, hold = float(sys.argv[1]), 0.003
gw1, gw2 = ("10.5.0.1", 7464), ("10.5.0.2", 7464)
def bound(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a, 7464))
    return s
as1, as2 = bound("10.5.0.11"), bound("10.5.0.12")
held, n = [], 0
print("ready", flush=True)
while True:
    now = time.monotonic()
    wait = max(0.0, min(h[0] for h in held) - now) if held else 1.0
    r, _, _ = select.select([as1, as2], [], [], wait)
    for s in r:
        d, a = s.recvfrom(65536)
        if s is as2 and a == gw1:
            out, to = as1, gw2
        elif s is as1 and a == gw2:
            out, to = as2, gw1
        else:
            continue
        if random.random() * 100 < pct:
            held.append((time.monotonic() + hold, out, d, to))
            n += 1
            print("held", n, flush=True)
        else:
            out.sendto(d, to)
    now = time.monotonic()
    for h in [h for h in held if h[0] <= now]:
        held.remove(h)
        h[1].sendto(h[2], h[3])
"#;

pub fn gateway_toml(node: u16, path: SyncPath) -> String {
    let peer = 3 - node;
    let peer_addr = match path {
        SyncPath::Direct => format!("10.5.0.{peer}:{SYNC_PORT}"),
        SyncPath::Relay => format!("10.5.0.1{peer}:{SYNC_PORT}"),
    };
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
bind = "10.5.0.{node}:{SYNC_PORT}"
peers = [ {{ node_id = {peer}, address = "{peer_addr}" }} ]
key = "{KEY}"
shards = [
    {{ node_id = 1, pool4 = ["198.18.0.0"] }},
    {{ node_id = 2, pool4 = ["198.18.0.1"] }},
]
"#
    )
}

/// The bed: four namespaces, wired and routed (asymmetric), nothing running.
pub struct Bed {
    pub client: Netns,
    pub gw1: Netns,
    pub gw2: Netns,
    pub server: Netns,
    pub path: SyncPath,
}

/// The bed with the nodes talking straight over the sync veth.
pub fn build() -> sixgate_netns::Result<Bed> {
    build_via(SyncPath::Direct)
}

/// The bed with the nodes talking over `path`.
pub fn build_via(path: SyncPath) -> sixgate_netns::Result<Bed> {
    let n = sixgate_netns::next_index();
    let bed = Bed {
        client: Netns::with_index("haclient", n)?,
        gw1: Netns::with_index("hagw1", n)?,
        gw2: Netns::with_index("hagw2", n)?,
        server: Netns::with_index("haserver", n)?,
        path,
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
    if path == SyncPath::Relay {
        bed.gw2.add_address("sync", "10.5.0.11/24")?;
        bed.gw2.add_address("sync", "10.5.0.12/24")?;
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
    pub fn all(&self) -> [&Netns; 4] {
        [&self.client, &self.gw1, &self.gw2, &self.server]
    }

    /// Starts node `node` (1 or 2) in its namespace.
    pub fn start(&self, node: u16) -> RunningDut<'_> {
        let gw = if node == 1 { &self.gw1 } else { &self.gw2 };
        start_via(gw, node, self.path)
    }

    /// Drops `percent` % of the sync datagrams gw1 sends and receives
    /// (nftables `numgen random`, in gw1's namespace); 0 removes the rule.
    pub fn sync_loss(&self, percent: u32) {
        let _ = self.gw1.run("nft", ["delete", "table", "inet", "ha_loss"]);
        if percent == 0 {
            return;
        }
        let rule = format!("udp dport {SYNC_PORT} numgen random mod 100 < {percent} counter drop");
        let script = format!(
            "table inet ha_loss {{\n\
             chain input {{ type filter hook input priority 0; {rule}; }}\n\
             chain output {{ type filter hook output priority 0; {rule}; }}\n}}\n"
        );
        let dir = sixgate_netns::ScratchDir::new("haloss").unwrap();
        let file = dir.write("loss.nft", script).unwrap();
        self.gw1
            .run("nft", ["-f", &file.to_string_lossy()])
            .unwrap_or_else(|e| panic!("nft: {e}"));
    }

    /// Datagrams the loss rules dropped so far (both directions).
    pub fn sync_lost(&self) -> u64 {
        let out = self
            .gw1
            .run("nft", ["list", "table", "inet", "ha_loss"])
            .unwrap_or_default();
        let w: Vec<&str> = out.split_whitespace().collect();
        w.windows(2)
            .filter(|p| p[0] == "packets")
            .filter_map(|p| p[1].parse::<u64>().ok())
            .sum()
    }
}

/// Starts node `node` in `gw`, talking straight over the sync veth.
pub fn start(gw: &Netns, node: u16) -> RunningDut<'_> {
    start_via(gw, node, SyncPath::Direct)
}

fn start_via(gw: &Netns, node: u16, path: SyncPath) -> RunningDut<'_> {
    start_toml(gw, node, &gateway_toml(node, path))
}

/// Starts node `node` in `gw` with `toml` (a [`gateway_toml`], changed).
pub fn start_toml<'a>(gw: &'a Netns, node: u16, toml: &str) -> RunningDut<'a> {
    start_routed(gw, node, toml, &["2001:db8:64::/96", "198.18.0.0/31"])
}

/// Starts node `node` in `gw` with `toml`, `routes` (pool6, pool4) onto its
/// TUN device.
pub fn start_routed<'a>(gw: &'a Netns, node: u16, toml: &str, routes: &[&str]) -> RunningDut<'a> {
    start_sixgate_with_config(gw, Path::new(BIN), toml, routes)
        .unwrap_or_else(|e| panic!("gw{node}: {e}"))
}

/// Every HA test's start: the bed (`path` between the nodes), both nodes
/// started and each holding the other's snapshot (empty), then `body` with
/// the turn (for its logs on a panic), the bed and both nodes; afterwards
/// the bed is torn down and checked gone. `body` stops the nodes (or kills
/// them). Skipped, with a line saying why, where the host cannot build beds.
pub fn with_pair(
    test: &str,
    path: SyncPath,
    body: impl for<'b> FnOnce(&Turn, &'b Bed, RunningDut<'b>, RunningDut<'b>),
) {
    let Some((turn, bed)) = take_bed(test, path) else {
        return;
    };
    let relay: Option<Background> = (path == SyncPath::Relay).then(|| {
        let r = bed
            .gw2
            .spawn("python3", ["-c", RELAY, &RELAY_HOLD_PERCENT.to_string()])
            .unwrap();
        wait_for(10, || r.stderr(), || r.stdout().contains("ready"));
        r
    });
    let gw1 = bed.start(1);
    let gw2 = bed.start(2);
    turn.run(
        || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log()),
        || wait_synced(&gw1, &gw2),
    );
    body(&turn, &bed, gw1, gw2);
    if let Some(r) = relay {
        let held = r.stdout().lines().count().saturating_sub(1);
        println!("{test}: the relay held back (reordered) {held} datagrams");
    }
    drop(bed);
    turn.finish();
}

/// The turn and bed of `test`, the bed's namespaces to be gone at the end;
/// None (the test says `skipped:`) where the host cannot build beds.
pub fn take_bed(test: &str, path: SyncPath) -> Option<(Turn, Bed)> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    let mut turn = Turn::take(test);
    let bed = build_via(path).unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.all());
    Some((turn, bed))
}

/// Both nodes hold the other's snapshot.
pub fn wait_synced(gw1: &RunningDut, gw2: &RunningDut) {
    wait_for(
        10,
        || format!("the snapshots; gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log()),
        || {
            gw1.log().contains("snapshot from peer 2 received")
                && gw2.log().contains("snapshot from peer 1 received")
        },
    );
}

/// Wait up to `secs` for `cond`; `what` names it in the failure.
pub fn wait_for(secs: u64, what: impl Fn() -> String, mut cond: impl FnMut() -> bool) {
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

/// `sixgate ARGS --socket` of a running node; its standard output.
pub fn cli(dut: &RunningDut, args: &[&str]) -> String {
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

/// `show sync --json`.
pub fn sync_state(dut: &RunningDut) -> serde_json::Value {
    serde_json::from_str(&cli(dut, &["show", "sync", "--json"])).unwrap()
}

/// The sessions a node lists, without what may differ between nodes (the
/// worker, the lifetime, a TCP state caught mid-change).
pub fn sessions(dut: &RunningDut) -> BTreeSet<String> {
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

/// A UDP exchange from the client (arguments: server, port, and optionally
/// the source address): one datagram, one echo back; resent every 300 ms up
/// to 20 times from the same socket (the first reply may reach another node
/// before the session's record, docs/ha.md). Prints how many tries it took.
pub const UDP_CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
if len(sys.argv) > 3:
    s.bind((sys.argv[3], 0))
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

/// The server's side of [`UDP_CLIENT`] (arguments: address, port).
pub const UDP_ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    d, a = s.recvfrom(2000)
    s.sendto(d, a)
"#;

/// The UDP echo server on the server, listening.
pub fn udp_echo(bed: &Bed) -> Background {
    udp_echo_on(&bed.server, UDP_PORT)
}

/// A UDP echo server in `server` on [`SERVER4`] port `port`, listening.
pub fn udp_echo_on(server: &Netns, port: u16) -> Background {
    let echo = server
        .spawn("python3", ["-c", UDP_ECHO, SERVER4, &port.to_string()])
        .unwrap();
    server
        .wait_listening(sixgate_netns::Proto::Udp, port, Duration::from_secs(10))
        .unwrap();
    echo
}

/// One UDP exchange from the client across the pair ([`UDP_CLIENT`]).
pub fn udp_exchange(bed: &Bed) -> String {
    bed.client
        .run_timeout(
            "python3",
            ["-c", UDP_CLIENT, SERVER6, &UDP_PORT.to_string()],
            Duration::from_secs(15),
        )
        .unwrap_or_else(|e| panic!("UDP across gw1 and gw2: {e}"))
}

/// The node's Prometheus scrape (docs/metrics.md), from inside its
/// namespace.
pub fn scrape_metrics(gw: &Netns) -> String {
    gw.run(
        "curl",
        ["-sS", "--max-time", "5", "http://127.0.0.1:9464/metrics"],
    )
    .unwrap()
}

/// `kill -9` of every process in `ns` (a node dies without a word; its TUN
/// device and routes go with it).
pub fn kill_9(ns: &Netns) {
    let pids = ns.pids();
    assert!(!pids.is_empty(), "nothing runs in {}", ns.name());
    for pid in &pids {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

/// gw1 dies without a word ([`kill_9`]); its sixgate is reaped. Returns
/// when it died.
pub fn kill_gw1(test: &str, bed: &Bed, gw1: RunningDut) -> Instant {
    kill_9(&bed.gw1);
    let killed_at = Instant::now();
    let killed = gw1.stop().unwrap_or_else(|e| panic!("{test}: gw1: {e}"));
    assert!(
        !killed.status.success(),
        "gw1 was killed: {:?}",
        killed.status
    );
    killed_at
}

/// The routing daemon's part when traffic moves (gw1 died or drained, or
/// is back): the client's route to pool6 goes to node `node`.
pub fn client_via(bed: &Bed, node: u8) {
    let via = format!("fd00:{node}::1");
    bed.client
        .ip([
            "-6",
            "route",
            "replace",
            "2001:db8:64::/96",
            "via",
            via.as_str(),
        ])
        .unwrap();
}

/// A threaded TCP echo server.
pub const TCP_ECHO_THREADED: &str = r#"
import socketserver, sys
class H(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            d = self.request.recv(65536)
            if not d:
                return
            self.request.sendall(d)
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
S((sys.argv[1], int(sys.argv[2])), H).serve_forever()
"#;

/// argv[3] connections (opened in parallel), then rounds of an echo on
/// each until the file argv[4] exists; any loss, reset or 10 s stall
/// ends it non-zero.
pub const TCP_ROUNDS_CLIENT: &str = r#"
import concurrent.futures, os, socket, sys, time
host, port, n, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with concurrent.futures.ThreadPoolExecutor(n) as ex:
    conns = list(ex.map(lambda _: socket.create_connection((host, port), timeout=10), range(n)))
print("connected", n, flush=True)
rounds = 0
while not os.path.exists(stop):
    for i, c in enumerate(conns):
        msg = (b"%d:%d;" % (i, rounds)) * 50
        c.sendall(msg)
        got = b""
        while len(got) < len(msg):
            d = c.recv(65536)
            if not d:
                sys.exit("connection %d closed by the peer" % i)
            got += d
        assert got == msg, i
    rounds += 1
    if rounds % 10 == 0:
        print("rounds", rounds, flush=True)
    time.sleep(0.02)
for c in conns:
    c.close()
print("done", rounds, flush=True)
"#;

/// Three more rounds of echoes on every connection of `client`
/// ([`TCP_ROUNDS_CLIENT`], which exits on any loss, reset or 10 s stall).
pub fn more_rounds(test: &str, client: &Background, what: &str) {
    let now = client.stdout().matches("rounds").count();
    wait_for(
        20,
        || format!("{what}: {} {}", client.stdout(), client.stderr()),
        || client.stdout().matches("rounds").count() >= now + 3,
    );
    println!("{test}: {what}: every connection carries data");
}
