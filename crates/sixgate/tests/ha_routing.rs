//! Scale-out and failover by a real routing daemon (docs/ha.md, "Failover
//! and scale-out: a routing daemon decides"), in namespaces with BIRD 2:
//!
//! ```text
//!                      ┌── gw1: sixgate (siit) + BIRD ──┐
//!  client ── router6 ──┤  BGP + BFD, ECMP on both sides  ├── router4 ── server
//!                      └── gw2: sixgate (siit) + BIRD ──┘
//! ```
//!
//! (`sixgate_netns::ecmp`). Both gateways run the same SIIT config and no
//! sync: SIIT keeps nothing per flow, so either gateway translates any
//! packet.
//!
//! - `siit_two_gateways_behind_ecmp_fail_over_by_bfd`: the routers learn pool6
//!   and the EAM prefix from both gateways' BIRD (which learns them from
//!   kernel table 100, where the test puts them as sixgate's announce hook
//!   will) and send to both; curl and iperf3 work and both gateways'
//!   counters grow; then the gateway that carries a 100 pps ping goes silent
//!   (nftables drops everything, then `kill -9` of sixgate and BIRD): BFD
//!   withdraws its routes, a new curl works, an iperf3 running across the
//!   failure completes, and the ping's gap is printed.
//! - `nat64_pair_dist_configs_announce_shards_and_aggregate`: the
//!   gateways' BIRD runs dist/bird/sixgate-gw{1,2}.conf (only the site
//!   values changed) with a NAT64 pair's hook routes put in by hand: pool6 goes over both,
//!   each pool4 shard to its owner, the pool4 aggregate over both; a drained
//!   node announces nothing; a silent one loses everything by BFD and its
//!   shard falls to the survivor by the aggregate.
//! - `nat64_pair_with_sync_fails_over_by_bfd_and_the_aggregate`: two NAT64
//!   nodes with `[sync]` and `announce_table`, their BIRD on the dist/
//!   configs: flows on both, then the node carrying a ping goes silent
//!   during an iperf3; the survivor carries its sessions on from its
//!   replica, its shard's return traffic arriving by the aggregate.
//! - `nat64_pair_planned_drain_moves_traffic_by_bgp`: the same pair;
//!   `sixgate sync drain` on the node carrying a ping during an iperf3: BIRD
//!   withdraws its routes by a BGP update, its flows move to the other node
//!   without a lost echo, the iperf3 completes.
//! - `dist_bird_configs_parse`: `bird -p` accepts every dist/bird/*.conf.
//!
//! Root, `ip netns`, BIRD 2 (`bird2`), nftables, python3, curl and iperf3
//! needed (else `skipped:`); scripts/setup.sh installs them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::ha::{TCP_ECHO_THREADED, TCP_ROUNDS_CLIENT, more_rounds, wait_for};
use common::{Turn, fetch_and_compare, http_server, pattern, stop_cleanly};
use sixgate_netns::bird::{Bird, check_bird, parse_check};
use sixgate_netns::ecmp::{EcmpBed, addr, wait_routes};
use sixgate_netns::{Proto, RunningDut, ScratchDir, check_host, start_sixgate_with_config};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// The same on both gateways: SIIT (RFC 7915) with pool6 and one EAM entry
/// (RFC 7757) for the client's network.
fn siit_toml() -> String {
    format!(
        r#"[translator]
mode = "siit"
pool6 = "{}"
eam = [ {{ ipv4 = "{}", ipv6 = "{}" }} ]

[daemon]
workers = 1

[tun]
name = "sixgate0"
"#,
        addr::POOL6,
        addr::EAM_V4,
        addr::EAM_V6
    )
}

fn start_sixgate(bed: &EcmpBed, i: u8) -> RunningDut<'_> {
    start_sixgate_with_config(
        bed.gw(i),
        Path::new(BIN),
        &siit_toml(),
        &[addr::POOL6, addr::EAM_V4],
    )
    .unwrap_or_else(|e| panic!("gw{i}: {e}"))
}

/// A counter's total from `sixgate show stats --json`: the first of `names`
/// it has.
fn counter(dut: &RunningDut, names: &[&str]) -> u64 {
    let out = Command::new(BIN)
        .args(["show", "stats", "--json", "--socket"])
        .arg(dut.api_socket().expect("an API socket"))
        .output()
        .expect("run sixgate");
    assert!(
        out.status.success(),
        "show stats: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["counters"].as_array();
    names
        .iter()
        .find_map(|name| rows.and_then(|c| c.iter().find(|c| c["name"] == *name)))
        .and_then(|c| c["total"].as_u64())
        .unwrap_or_else(|| panic!("no counter {names:?} in {v}"))
}

/// Packets translated each way by each gateway: `[gw1, gw2]` of
/// `(6→4, 4→6)`, by its fast path and its workers together (the fast path
/// is on by default and takes the bulk of a flow; docs/fastpath.md,
/// "Counters").
fn translated(duts: [&RunningDut; 2]) -> [(u64, u64); 2] {
    duts.map(translated_by)
}

/// [`translated`] for one gateway.
fn translated_by(d: &RunningDut) -> (u64, u64) {
    (
        counter(d, &["translated_fast_and_slow_6to4", "translated_6to4"]),
        counter(d, &["translated_fast_and_slow_4to6", "translated_4to6"]),
    )
}

const IPERF_PORT: &str = "5201";

/// iperf3 (TCP) from the client to the server through the gateways, with
/// `streams` parallel connections for `secs`, in the background.
fn iperf3_client(bed: &EcmpBed, streams: u32, secs: u32) -> sixgate_netns::Background {
    bed.client
        .spawn(
            "iperf3",
            [
                "-c",
                addr::SERVER_AS_V6,
                "-p",
                IPERF_PORT,
                "-P",
                &streams.to_string(),
                "-t",
                &secs.to_string(),
                "-J",
            ],
        )
        .unwrap()
}

/// Wait for an iperf3 client to finish; it must have succeeded. Its summary.
fn iperf3_result(client: sixgate_netns::Background, what: &str) -> String {
    let f = client
        .wait(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let json: serde_json::Value = serde_json::from_str(&f.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: iperf3 output is not JSON ({e}):\n{}{}",
            f.stdout, f.stderr
        )
    });
    if let Some(err) = json.get("error") {
        panic!("{what}: iperf3: {err}");
    }
    assert!(f.status.success(), "{what}: iperf3 {}", f.status);
    let end = &json["end"];
    format!(
        "{:.0} Mbit/s received, {} retransmits, {} streams",
        end["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0)
            / 1e6,
        end["sum_sent"]["retransmits"],
        end["streams"].as_array().map_or(0, Vec::len)
    )
}

/// What `ping -D` saw across a failure.
struct PingGap {
    sent: u64,
    received: u64,
    /// The longest time between two consecutive replies: the forwarding
    /// gap (on a loaded machine ping itself may send late, which adds to it).
    gap: Duration,
    /// The most echoes lost in a row.
    lost_in_a_row: u64,
}

fn ping_gap(out: &str) -> PingGap {
    // "[1764163456.123456] 64 bytes from …: icmp_seq=12 ttl=62 time=0.5 ms"
    let replies: Vec<(f64, u64)> = out
        .lines()
        .filter_map(|l| {
            let stamp = l.strip_prefix('[')?.split(']').next()?.parse().ok()?;
            let seq = l.split("icmp_seq=").nth(1)?.split_whitespace().next()?;
            Some((stamp, seq.parse().ok()?))
        })
        .collect();
    let gap = replies
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .fold(0.0, f64::max);
    let lost_in_a_row = replies
        .windows(2)
        .map(|w| w[1].1.saturating_sub(w[0].1 + 1))
        .max()
        .unwrap_or(0);
    let summary = out
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .unwrap_or_else(|| panic!("no ping summary in:\n{out}"));
    let n: Vec<u64> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    PingGap {
        sent: n[0],
        received: n[1],
        gap: Duration::from_secs_f64(gap),
        lost_in_a_row,
    }
}

/// Print what the ping saw `at` ("at failover"); the gap must be under 2 s.
fn report_gap(test: &str, at: &str, out: &str) {
    let p = ping_gap(out);
    println!(
        "{test}: forwarding gap {at}: {} ms between two replies, {} echoes lost in a row ({} of {} lost; 100 pps)",
        p.gap.as_millis(),
        p.lost_in_a_row,
        p.sent - p.received,
        p.sent
    );
    assert!(
        p.gap < Duration::from_secs(2),
        "gap {} ms:\n{out}",
        p.gap.as_millis()
    );
}

/// A 100 pps ping from the client to the server for `secs`, whose replies
/// measure the gap ([`report_gap`]).
fn start_ping(bed: &EcmpBed, secs: u32) -> sixgate_netns::Background {
    bed.client
        .spawn(
            "ping",
            [
                "-n",
                "-D",
                "-i",
                "0.01",
                "-W",
                "1",
                "-w",
                &secs.to_string(),
                addr::SERVER_AS_V6,
            ],
        )
        .unwrap()
}

/// The gateway router6 sends the ping to: the one whose link from router6
/// takes more packets in 0.5 s (the ping's 50 against a few of BFD's).
fn gateway_carrying_ping(bed: &EcmpBed) -> u8 {
    let rx = |i: u8| {
        bed.gw(i)
            .link_stats(sixgate_netns::ecmp::ifname::GW_TO_ROUTER6)
            .unwrap()
            .rx_packets
    };
    let r0 = [rx(1), rx(2)];
    std::thread::sleep(Duration::from_millis(500));
    let grew = [rx(1) - r0[0], rx(2) - r0[1]];
    let gw = if grew[0] >= grew[1] { 1 } else { 2 };
    println!("the ping enters gw{gw} ({grew:?} packets in 0.5 s)");
    gw
}

/// Gateway `i` goes silent at once, as a powered-off box would (nothing in,
/// out or through: its peers notice only by BFD), then its sixgate and
/// BIRD are killed with SIGKILL.
fn power_off(bed: &EcmpBed, i: u8) {
    let gw = bed.gw(i);
    gw.run(
        "nft",
        ["table inet dead { \
            chain a { type filter hook input priority -300; policy drop; }; \
            chain b { type filter hook forward priority -300; policy drop; }; \
            chain c { type filter hook output priority -300; policy drop; }; }"],
    )
    .unwrap_or_else(|e| panic!("nft in gw{i} (scripts/setup.sh installs nftables): {e}"));
    for pid in gw.pids() {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

/// The bed of `test`, its namespaces to be gone at the end; None (the test
/// says `skipped:`) without root, `ip netns` tools or BIRD.
fn take_bed(test: &str) -> Option<(Turn, EcmpBed)> {
    if let Err(why) = check_host().and_then(|()| check_bird()) {
        println!("skipped: {test}: {why}");
        return None;
    }
    let mut turn = Turn::take(test);
    let bed = EcmpBed::build().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.namespaces());
    Some((turn, bed))
}

/// A 1 MiB file `f.bin` for curl to fetch through the gateways, and the URL
/// host that names the server by its IPv6 address.
fn web_file(name: &str) -> (ScratchDir, Vec<u8>, String) {
    let dir = ScratchDir::new(name).unwrap();
    let content = pattern(1 << 20);
    dir.write("f.bin", &content).unwrap();
    (dir, content, format!("[{}]", addr::SERVER_AS_V6))
}

/// The iperf3 server on the server, listening.
fn iperf3_server(bed: &EcmpBed) -> sixgate_netns::Background {
    let server = bed
        .server
        .spawn("iperf3", ["-s", "-B", addr::SERVER, "-p", IPERF_PORT])
        .unwrap();
    bed.server
        .wait_listening(Proto::Tcp, 5201, Duration::from_secs(10))
        .unwrap();
    server
}

/// Once both routers have BFD up to both gateways, powers gateway `i` off
/// ([`power_off`]) and returns when.
fn power_off_under_bfd(bed: &EcmpBed, routers: &[Bird; 2], i: u8) -> Instant {
    for r in routers {
        r.wait_bfd_up(2, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let t_off = Instant::now();
    power_off(bed, i);
    t_off
}

/// Reaps the powered-off gateway `victim` (its sixgate was killed) and
/// returns the survivor's number and sixgate.
fn reap<'a>(
    test: &str,
    victim: u8,
    dut1: RunningDut<'a>,
    dut2: RunningDut<'a>,
) -> (u8, RunningDut<'a>) {
    let (killed, alive) = if victim == 1 {
        (dut1, dut2)
    } else {
        (dut2, dut1)
    };
    let killed = killed
        .stop()
        .unwrap_or_else(|e| panic!("{test}: gw{victim}: {e}"));
    assert!(!killed.status.success(), "gw{victim} was killed");
    (3 - victim, alive)
}

/// Waits for the ping (at most 15 s) and prints its gap.
fn ping_done(test: &str, at: &str, ping: sixgate_netns::Background) {
    let out = ping
        .wait(Duration::from_secs(15))
        .unwrap_or_else(|e| panic!("ping: {e}"));
    report_gap(test, at, &out.stdout);
}

/// The NAT64 pair's routes once node `from` is gone or drained: pool6 and
/// the aggregate only to `to`, no route for `from`'s shard.
fn wait_moved(bed: &EcmpBed, from: u8, to: u8) {
    let gw = format!("gw{to}");
    let only: &[&str] = &[&gw];
    wait_routes(
        &[
            (&bed.router6, addr::POOL6, only),
            (&bed.router4, NAT64_SHARDS[usize::from(from - 1)], &[]),
            (&bed.router4, NAT64_POOL4, only),
        ],
        Duration::from_secs(5),
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Stops the BIRDs, removes the bed and hands the turn on.
fn tear_down(turn: Turn, bed: EcmpBed, routers: [Bird; 2], birds: [Bird; 2]) {
    for b in routers.into_iter().chain(birds) {
        b.stop();
    }
    drop(bed);
    turn.finish();
}

#[test]
fn siit_two_gateways_behind_ecmp_fail_over_by_bfd() {
    let test = "siit_two_gateways_behind_ecmp_fail_over_by_bfd";
    let Some((turn, bed)) = take_bed(test) else {
        return;
    };
    let t0 = Instant::now();
    let routers = bed
        .start_routers()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let birds = [1, 2].map(|i| {
        bed.start_gateway_bird(i)
            .unwrap_or_else(|e| panic!("{test}: {e}"))
    });
    let (dut1, dut2) = (start_sixgate(&bed, 1), start_sixgate(&bed, 2));
    let logs = || {
        logs_of(
            &[("gw1", &dut1), ("gw2", &dut2)],
            routers.iter().chain(&birds),
        )
    };
    let (dir, content, url_host) = web_file("ecmpwww");

    let (victim, ping, iperf, t_off, servers) = turn.run(logs, || {
        // Both translators are ready: what sixgate's hook then does.
        for i in [1, 2] {
            bed.announce(i, &[addr::POOL6, addr::EAM_V4]).unwrap();
        }
        for r in &routers {
            r.wait_established(&["gw1", "gw2"], Duration::from_secs(20))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let converged = bed
            .wait_next_hops(&["gw1", "gw2"], Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        println!(
            "{test}: BGP up and ECMP over both gateways on both routers {} ms after the routers' BIRD started (announce to route: {} ms)",
            t0.elapsed().as_millis(),
            converged.as_millis()
        );
        for r in &routers {
            println!("{}", r.birdc(&["show", "bfd", "sessions"]).unwrap().trim());
        }

        let http = http_server(&bed.server, addr::SERVER.parse().unwrap(), &dir);
        fetch_and_compare(&bed.client, &url_host, &dir, "f.bin", &content);

        // Several flows spread over both gateways.
        let iperf_server = iperf3_server(&bed);
        let before = translated([&dut1, &dut2]);
        let spread = iperf3_result(iperf3_client(&bed, 12, 2), "iperf3 -P 12");
        let after = translated([&dut1, &dut2]);
        println!("{test}: iperf3 -P 12: {spread}");
        for i in 0..2 {
            let d6 = after[i].0 - before[i].0;
            let d4 = after[i].1 - before[i].1;
            println!("{test}: gw{}: translated {d6} 6→4, {d4} 4→6", i + 1);
            assert!(
                d6 > 100 && d4 > 100,
                "gw{} carried too little of 12 flows: {d6} 6→4, {d4} 4→6",
                i + 1
            );
        }

        // The gateway that carries a 100 pps ping goes silent; the ping
        // measures the gap and an iperf3 runs across it.
        let ping = start_ping(&bed, 8);
        std::thread::sleep(Duration::from_millis(300));
        let victim = gateway_carrying_ping(&bed);
        let dut = |i: u8| if i == 1 { &dut1 } else { &dut2 };
        // Both ways: router6 and router4 hash each flow on their own, so
        // 9 connections all missing the victim both ways is 1 in 2^18.
        let both_ways = || {
            let (d6, d4) = translated_by(dut(victim));
            d6 + d4
        };
        let at_start = both_ways();
        let iperf = iperf3_client(&bed, 8, 5);
        std::thread::sleep(Duration::from_millis(1500));
        let carried = both_ways() - at_start;
        println!("{test}: gw{victim} translated {carried} packets of the iperf3 before it went silent");
        assert!(carried > 100, "no iperf3 flow crossed gw{victim}");
        let t_off = power_off_under_bfd(&bed, &routers, victim);
        // The servers live on across the failure.
        (victim, ping, iperf, t_off, (http, iperf_server))
    });
    let (survivor, alive) = reap(test, victim, dut1, dut2);
    let gw_survivor = format!("gw{survivor}");
    let logs = || logs_of(&[(&gw_survivor, &alive)], routers.iter().chain(&birds));
    turn.run(logs, || {
        bed.wait_next_hops(&[&format!("gw{survivor}")], Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
        let gone = t_off.elapsed();
        println!(
            "{test}: both routers send only to gw{survivor} {} ms after gw{victim} went silent",
            gone.as_millis()
        );
        for r in &routers {
            println!(
                "{}: {}",
                r.label(),
                r.protocol(&format!("gw{victim}")).unwrap()
            );
        }
        assert!(
            gone < Duration::from_millis(1500),
            "BFD (3 × {} ms) should withdraw gw{victim} within about 1 s, took {} ms",
            sixgate_netns::ecmp::BFD_INTERVAL_MS,
            gone.as_millis()
        );
        fetch_and_compare(&bed.client, &url_host, &dir, "f.bin", &content);
        let across = iperf3_result(iperf, "iperf3 across the failure");
        println!("{test}: iperf3 -P 8 across the failure completed: {across}");
        ping_done(test, "at failover", ping);
    });
    drop(servers);
    stop_cleanly(test, &gw_survivor, alive);
    tear_down(turn, bed, routers, birds);
}

fn dist_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist/bird")
}

/// dist/bird/*.conf: the example configs must stay valid for Debian's BIRD.
#[test]
fn dist_bird_configs_parse() {
    let test = "dist_bird_configs_parse";
    if let Err(why) = check_bird() {
        println!("skipped: {test}: {why}");
        return;
    }
    let dir = dist_dir();
    let mut confs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    confs.sort();
    assert!(confs.len() >= 2, "gw1 and gw2 in {}", dir.display());
    for c in &confs {
        parse_check(c).unwrap_or_else(|e| panic!("{e}"));
        println!("{test}: {} parses", c.display());
    }
}

/// `conf` with the value of `define NAME = …;` replaced (the comment after it
/// kept).
fn set_define(conf: &str, name: &str, value: &str) -> String {
    let head = format!("define {name} = ");
    let mut found = false;
    let out: Vec<String> = conf
        .lines()
        .map(|l| match l.strip_prefix(&head) {
            Some(rest) => {
                found = true;
                let tail = &rest[rest.find(';').expect("define ends with ;")..];
                format!("{head}{value}{tail}")
            }
            None => l.to_owned(),
        })
        .collect();
    assert!(found, "no `{head}` in the dist config");
    out.join("\n") + "\n"
}

/// dist/bird/sixgate-gw`i`.conf with the bed's values: its links, pool6
/// 2001:db8:64::/96, pool4 198.18.0.0/24 with gw1 owning 198.18.0.0/25 and
/// gw2 198.18.0.128/25.
fn dist_config_in_bed(i: u8) -> String {
    let path = dist_dir().join(format!("sixgate-gw{i}.conf"));
    let mut c =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for (name, value) in [
        ("V6_LOCAL", sixgate_netns::ecmp::addr::gw_v6(i)),
        ("V6_ROUTER", sixgate_netns::ecmp::addr::router6_to(i)),
        ("V4_LOCAL", sixgate_netns::ecmp::addr::gw_v4(i)),
        ("V4_ROUTER", sixgate_netns::ecmp::addr::router4_to(i)),
        ("POOL6", addr::POOL6.to_owned()),
        ("POOL4", NAT64_POOL4.to_owned()),
        ("POOL4_ROUTES", format!("[ {NAT64_POOL4}+ ]")),
        (
            "SHARD_ADDRESS",
            NAT64_SHARDS[usize::from(i - 1)]
                .split('/')
                .next()
                .unwrap()
                .to_owned(),
        ),
    ] {
        c = set_define(&c, name, &value);
    }
    c.replace("\"eth-v6\"", "\"r6\"")
        .replace("\"eth-v4\"", "\"r4\"")
        .replace("log syslog all;", "log stderr all;")
}

/// dist/bird/router-ipv`family`-side.conf with the bed's values: its
/// gateways' addresses, pool6 and pool4 (the protocols are named gw1 and
/// gw2, as the bed's own router configs name them).
fn dist_router_config_in_bed(family: u8) -> String {
    let path = dist_dir().join(format!("router-ipv{family}-side.conf"));
    let mut c =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let gw = |i: u8| {
        if family == 6 {
            sixgate_netns::ecmp::addr::gw_v6(i)
        } else {
            sixgate_netns::ecmp::addr::gw_v4(i)
        }
    };
    let (prefix_name, prefix) = if family == 6 {
        ("POOL6", addr::POOL6.to_owned())
    } else {
        ("POOL4_ROUTES", format!("[ {NAT64_POOL4}+ ]"))
    };
    for (name, value) in [
        ("ROUTER_ID", format!("10.255.0.{family}")),
        ("GW1", gw(1)),
        ("GW2", gw(2)),
        (prefix_name, prefix),
    ] {
        c = set_define(&c, name, &value);
    }
    c.replace(
        "log syslog all;",
        "log stderr all;\ndebug protocols { states };",
    )
}

const NAT64_POOL4: &str = "198.18.0.0/24";
const NAT64_SHARDS: [&str; 2] = ["198.18.0.0/25", "198.18.0.128/25"];

/// The dist/ configs of a NAT64 pair, run by BIRD in the bed with only the
/// site values changed (no translator: what they announce is the point).
/// With each node's hook routes (pool6, its own shard) in table 100: pool6
/// over both nodes, each shard to its owner alone, the pool4 aggregate over
/// both. gw1 drains (its table emptied): it announces nothing, not even the
/// aggregate. gw1 back, then gw2 goes silent: BFD withdraws everything of
/// gw2's, and gw2's shard reaches gw1 by the aggregate.
#[test]
fn nat64_pair_dist_configs_announce_shards_and_aggregate() {
    let test = "nat64_pair_dist_configs_announce_shards_and_aggregate";
    let Some((turn, bed)) = take_bed(test) else {
        return;
    };
    let routers = bed
        .start_routers()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let birds = [1u8, 2].map(|i| {
        Bird::start(bed.gw(i), &format!("gw{i}"), &dist_config_in_bed(i))
            .unwrap_or_else(|e| panic!("{test}: {e}"))
    });
    let logs = || {
        routers
            .iter()
            .chain(&birds)
            .map(|b| format!("bird {}:\n{}\n", b.label(), b.log()))
            .collect::<String>()
    };
    let hook = |i: u8| [addr::POOL6, NAT64_SHARDS[usize::from(i - 1)]];
    turn.run(logs, || {
        for i in [1, 2] {
            bed.announce(i, &hook(i)).unwrap();
        }
        let (r6, r4) = (&bed.router6, &bed.router4);
        let both: &[&str] = &["gw1", "gw2"];
        let took = wait_routes(
            &[
                (r6, addr::POOL6, both),
                (r4, NAT64_SHARDS[0], &["gw1"]),
                (r4, NAT64_SHARDS[1], &["gw2"]),
                (r4, NAT64_POOL4, both),
            ],
            Duration::from_secs(20),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        println!(
            "{test}: pool6 and the aggregate over both, each shard to its owner, after {} ms",
            took.as_millis()
        );
        println!("{}", routers[1].birdc(&["show", "route"]).unwrap().trim());

        // A drain: sixgate removes its routes, BIRD withdraws all of them.
        bed.withdraw(1, &hook(1)).unwrap();
        let took = wait_routes(
            &[
                (r6, addr::POOL6, &["gw2"]),
                (r4, NAT64_SHARDS[0], &[]),
                (r4, NAT64_SHARDS[1], &["gw2"]),
                (r4, NAT64_POOL4, &["gw2"]),
            ],
            Duration::from_secs(5),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        println!(
            "{test}: gw1 drained: it announces nothing after {} ms",
            took.as_millis()
        );
        bed.announce(1, &hook(1)).unwrap();

        // gw2 goes silent: BFD takes its routes away, the aggregate via gw1
        // is left for gw2's shard.
        let _ = wait_routes(&[(r4, NAT64_POOL4, both)], Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
        for r in &routers {
            r.wait_bfd_up(2, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let t_off = Instant::now();
        power_off(&bed, 2);
        wait_routes(
            &[
                (r6, addr::POOL6, &["gw1"]),
                (r4, NAT64_SHARDS[1], &[]),
                (r4, NAT64_POOL4, &["gw1"]),
            ],
            Duration::from_secs(5),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let gone = t_off.elapsed();
        println!(
            "{test}: gw2 silent: withdrawn by BFD after {} ms; {} now reaches gw1 by the aggregate",
            gone.as_millis(),
            NAT64_SHARDS[1]
        );
        assert!(
            gone < Duration::from_millis(1500),
            "{} ms",
            gone.as_millis()
        );
    });
    tear_down(turn, bed, routers, birds);
}

/// Node `i` of a NAT64 pair in the bed: the same `[nat64]` on both, `[sync]`
/// over the `sync` link, gw1 owning [`NAT64_SHARDS`]`[0]`, gw2 the other.
fn nat64_toml(i: u8) -> String {
    let peer = 3 - i;
    format!(
        r#"[translator]
mode = "nat64"
pool6 = "{pool6}"

[nat64]
pool4 = ["{NAT64_POOL4}"]

[daemon]
workers = 1

[tun]
name = "sixgate0"

[sync]
node_id = {i}
bind = "{me}:7464"
announce_table = {table}
peers = [ {{ node_id = {peer}, address = "{other}:7464" }} ]
shards = [
    {{ node_id = 1, pool4 = ["{s1}"] }},
    {{ node_id = 2, pool4 = ["{s2}"] }},
]
"#,
        pool6 = addr::POOL6,
        me = sixgate_netns::ecmp::addr::gw_sync(i),
        other = sixgate_netns::ecmp::addr::gw_sync(peer),
        s1 = NAT64_SHARDS[0],
        s2 = NAT64_SHARDS[1],
        table = sixgate_netns::ecmp::ANNOUNCE_TABLE,
    )
}

/// TCP sessions `dut` lists on pool4 addresses of `shard` (`A.B.C.D/25`).
fn tcp_sessions_on(dut: &RunningDut, shard: &str) -> usize {
    let out = Command::new(BIN)
        .args(["show", "sessions", "--json", "--socket"])
        .arg(dut.api_socket().expect("an API socket"))
        .output()
        .expect("run sixgate");
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "show sessions: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let (net, len) = shard.split_once('/').unwrap();
    let net: u32 = net.parse::<std::net::Ipv4Addr>().unwrap().into();
    let mask = u32::MAX << (32 - len.parse::<u32>().unwrap());
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["proto"] == "tcp")
        .filter_map(|r| r["ipv4"].as_str()?.parse::<std::net::Ipv4Addr>().ok())
        .filter(|a| u32::from(*a) & mask == net)
        .count()
}

/// What runs in the bed for a NAT64 pair: BIRD on the routers and the
/// gateways, all on the dist/ configs, and sixgate on both gateways
/// ([`nat64_toml`]).
type Nat64Pair<'a> = ([Bird; 2], [Bird; 2], RunningDut<'a>, RunningDut<'a>);

fn start_nat64_pair<'a>(test: &str, bed: &'a EcmpBed) -> Nat64Pair<'a> {
    // The routers on the dist/ configs too (only the site values changed).
    let routers = [(&bed.router6, 6u8), (&bed.router4, 4)].map(|(ns, family)| {
        Bird::start(
            ns,
            &format!("router{family}"),
            &dist_router_config_in_bed(family),
        )
        .unwrap_or_else(|e| panic!("{test}: {e}"))
    });
    let birds = [1u8, 2].map(|i| {
        Bird::start(bed.gw(i), &format!("gw{i}"), &dist_config_in_bed(i))
            .unwrap_or_else(|e| panic!("{test}: {e}"))
    });
    (
        routers,
        birds,
        start_nat64_node(test, bed, 1),
        start_nat64_node(test, bed, 2),
    )
}

/// sixgate on gateway `i` of the NAT64 pair ([`nat64_toml`]).
fn start_nat64_node<'a>(test: &str, bed: &'a EcmpBed, i: u8) -> RunningDut<'a> {
    start_sixgate_with_config(
        bed.gw(i),
        Path::new(BIN),
        &nat64_toml(i),
        &[addr::POOL6, NAT64_POOL4],
    )
    .unwrap_or_else(|e| panic!("{test}: gw{i}: {e}"))
}

/// The logs of the sixgates in `duts` (named) and of the BIRDs in `birds`.
fn logs_of<'b>(duts: &[(&str, &RunningDut)], birds: impl Iterator<Item = &'b Bird>) -> String {
    let mut s = String::new();
    for (name, d) in duts {
        s += &format!("sixgate {name}:\n{}\n", d.log());
    }
    for b in birds {
        s += &format!("bird {}:\n{}\n", b.label(), b.log());
    }
    s
}

/// Both nodes announce (each puts pool6 and its shard into its
/// `announce_table` once it has the other's snapshot): pool6 over both,
/// each shard to its owner, the aggregate over both.
fn wait_pair_announced(bed: &EcmpBed) {
    let both: &[&str] = &["gw1", "gw2"];
    let took = wait_routes(
        &[
            (&bed.router6, addr::POOL6, both),
            (&bed.router4, NAT64_SHARDS[0], &["gw1"]),
            (&bed.router4, NAT64_SHARDS[1], &["gw2"]),
            (&bed.router4, NAT64_POOL4, both),
        ],
        Duration::from_secs(20),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!("both nodes announced after {} ms", took.as_millis());
}

/// During a 16-flow iperf3 (returned, running): node `i` holds TCP sessions
/// on its own shard and the other node the same ones in its replica.
fn iperf3_over_the_pair(bed: &EcmpBed, duts: [&RunningDut; 2], i: u8) -> sixgate_netns::Background {
    // 16 flows: all of them missing node i is 1 in 2^16.
    let iperf = iperf3_client(bed, 16, 6);
    std::thread::sleep(Duration::from_millis(2000));
    let (node, other) = (duts[usize::from(i - 1)], duts[usize::from(2 - i)]);
    let own = NAT64_SHARDS[usize::from(i - 1)];
    let (mine, replicated) = (tcp_sessions_on(node, own), tcp_sessions_on(other, own));
    println!(
        "gw{i} has {mine} TCP sessions on its shard {own}, the other node {replicated} of them in its replica"
    );
    assert!(mine >= 1 && replicated >= 1, "{mine} {replicated}");
    iperf
}

/// The whole design at once (docs/ha.md, "Failover and scale-out"): a NAT64
/// pair with `[sync]`, each node's BIRD running the dist/ config and
/// announcing what the node puts into its `announce_table` once ready. Flows
/// spread over both nodes, each node's mappings on its own shard, replies
/// back to the owner by the shard's specific route. Then the node that
/// carries a ping goes silent during an iperf3: BFD withdraws its routes,
/// router6 sends everything to the survivor, which translates the dead
/// node's sessions from its replica, and router4 sends the dead node's
/// shard to the survivor by the aggregate. The iperf3 completes and the
/// ping's gap is printed.
#[test]
fn nat64_pair_with_sync_fails_over_by_bfd_and_the_aggregate() {
    let test = "nat64_pair_with_sync_fails_over_by_bfd_and_the_aggregate";
    let Some((turn, bed)) = take_bed(test) else {
        return;
    };
    let (routers, birds, dut1, dut2) = start_nat64_pair(test, &bed);
    let logs = || {
        logs_of(
            &[("gw1", &dut1), ("gw2", &dut2)],
            routers.iter().chain(&birds),
        )
    };
    let (dir, content, url_host) = web_file("ecmpnat");

    let (victim, ping, iperf, t_off, servers) = turn.run(logs, || {
        wait_pair_announced(&bed);

        let http = http_server(&bed.server, addr::SERVER.parse().unwrap(), &dir);
        fetch_and_compare(&bed.client, &url_host, &dir, "f.bin", &content);
        let iperf_server = iperf3_server(&bed);

        let ping = start_ping(&bed, 9);
        std::thread::sleep(Duration::from_millis(300));
        let victim = gateway_carrying_ping(&bed);
        let iperf = iperf3_over_the_pair(&bed, [&dut1, &dut2], victim);
        let t_off = power_off_under_bfd(&bed, &routers, victim);
        (victim, ping, iperf, t_off, (http, iperf_server))
    });
    let (survivor, alive) = reap(test, victim, dut1, dut2);
    let gw_survivor = format!("gw{survivor}");
    let logs = || logs_of(&[(&gw_survivor, &alive)], routers.iter().chain(&birds));
    turn.run(logs, || {
        wait_moved(&bed, victim, survivor);
        let gone = t_off.elapsed();
        println!(
            "{test}: {} ms after gw{victim} went silent: pool6 and the aggregate only to gw{survivor}, no route for gw{victim}'s shard",
            gone.as_millis()
        );
        assert!(gone < Duration::from_millis(1500), "{} ms", gone.as_millis());
        let across = iperf3_result(iperf, "iperf3 across the failure");
        println!("{test}: iperf3 -P 16 across the failure completed: {across}");
        ping_done(test, "at failover", ping);
        fetch_and_compare(&bed.client, &url_host, &dir, "f.bin", &content);
    });
    drop(servers);
    stop_cleanly(test, &gw_survivor, alive);
    tear_down(turn, bed, routers, birds);
}

/// A planned drain behind the routing daemon (docs/ha.md, "Planned drain"):
/// `sixgate sync drain` on the node carrying a ping, during a 16-flow
/// iperf3. The node removes its routes from its announce table, its BIRD
/// withdraws them at once (a BGP update; the sessions and BFD stay up), and
/// its flows move to the other node, which has every session: the iperf3
/// completes and the ping's gap is printed.
#[test]
fn nat64_pair_planned_drain_moves_traffic_by_bgp() {
    let test = "nat64_pair_planned_drain_moves_traffic_by_bgp";
    let Some((turn, bed)) = take_bed(test) else {
        return;
    };
    let (routers, birds, dut1, dut2) = start_nat64_pair(test, &bed);
    let logs = || {
        logs_of(
            &[("gw1", &dut1), ("gw2", &dut2)],
            routers.iter().chain(&birds),
        )
    };
    turn.run(logs, || {
        wait_pair_announced(&bed);
        let _iperf_server = iperf3_server(&bed);
        let ping = start_ping(&bed, 8);
        std::thread::sleep(Duration::from_millis(300));
        let node = gateway_carrying_ping(&bed);
        let other = 3 - node;
        let iperf = iperf3_over_the_pair(&bed, [&dut1, &dut2], node);

        let t0 = Instant::now();
        let draining = if node == 1 { &dut1 } else { &dut2 };
        let out = Command::new(BIN)
            .args(["sync", "drain", "--wait", "10", "--socket"])
            .arg(draining.api_socket().expect("an API socket"))
            .output()
            .expect("run sixgate");
        assert!(
            out.status.success(),
            "sync drain: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let drained = t0.elapsed();
        wait_moved(&bed, node, other);
        println!(
            "{test}: gw{node} drained in {} ms (its peer acknowledged); the routers send only to gw{other} {} ms after the command",
            drained.as_millis(),
            t0.elapsed().as_millis()
        );
        for r in &routers {
            let state = r.protocol(&format!("gw{node}")).unwrap();
            assert!(state.starts_with("up Established"), "{state}");
        }
        let across = iperf3_result(iperf, "iperf3 across the drain");
        println!("{test}: iperf3 -P 16 across the drain completed: {across}");
        ping_done(test, "at the drain", ping);
    });
    stop_cleanly(test, "gw1", dut1);
    stop_cleanly(test, "gw2", dut2);
    tear_down(turn, bed, routers, birds);
}

/// Failover that survives the failback (issue 31), behind the routers:
/// 100 TCP connections spread over the pair (each node maps its flows on
/// its own shard), echoing in rounds. gw1 loses power ([`power_off`]: silent,
/// then `kill -9` of its sixgate and its BIRD): BFD moves everything to
/// gw2, which carries gw1's sessions from its replica. gw1 boots again (BIRD,
/// then sixgate): the routers take it back within seconds (the dist/
/// routers' short `error wait time`), its first, empty snapshot sweeps
/// nothing at gw2, and it announces once it has gw2's. Then `kill -9` of
/// gw1's sixgate alone: its routes go with its TUN device, its BIRD (still
/// running) withdraws them, and gw2 carries every connection again.
#[test]
fn nat64_pair_kill_9_restart_and_kill_9_again_keep_every_connection() {
    let test = "nat64_pair_kill_9_restart_and_kill_9_again_keep_every_connection";
    let Some((turn, bed)) = take_bed(test) else {
        return;
    };
    let (routers, [bird1, bird2], dut1, dut2) = start_nat64_pair(test, &bed);
    let logs = || {
        logs_of(
            &[("gw1", &dut1), ("gw2", &dut2)],
            routers.iter().chain([&bird1, &bird2]),
        )
    };
    let dir = ScratchDir::new("ecmpkill2").unwrap();
    let stop = dir.path().join("stop");
    let port = "9003";
    let shard1 = NAT64_SHARDS[0];
    let (mut client, _echo, before) = turn.run(logs, || {
        wait_pair_announced(&bed);
        let echo = bed
            .server
            .spawn("python3", ["-c", TCP_ECHO_THREADED, addr::SERVER, port])
            .unwrap();
        bed.server
            .wait_listening(Proto::Tcp, 9003, Duration::from_secs(10))
            .unwrap();
        let client = bed
            .client
            .spawn(
                "python3",
                [
                    "-c",
                    TCP_ROUNDS_CLIENT,
                    addr::SERVER_AS_V6,
                    port,
                    &CONNECTIONS.to_string(),
                    &stop.to_string_lossy(),
                ],
            )
            .unwrap();
        wait_for(
            30,
            || {
                format!(
                    "{CONNECTIONS} connections: {} {}",
                    client.stdout(),
                    client.stderr()
                )
            },
            || client.stdout().contains("rounds 10"),
        );
        let on = |d: &RunningDut| {
            [
                tcp_sessions_on(d, shard1),
                tcp_sessions_on(d, NAT64_SHARDS[1]),
            ]
        };
        let (at1, at2) = (on(&dut1), on(&dut2));
        println!("{test}: sessions on gw1's and gw2's shards: gw1 {at1:?}, gw2 {at2:?}");
        assert_eq!(at1[0] + at1[1], CONNECTIONS, "gw1 lists every session");
        assert!(
            at1[0] >= 1 && at1[1] >= 1,
            "the flows spread over both nodes"
        );
        assert_eq!(at1, at2, "both nodes list the same sessions");
        (client, echo, at1[0])
    });

    // 1. gw1 dies whole, as a box that loses power: silent at once, its
    // sixgate and BIRD killed; the routers learn it by BFD.
    let t_kill = power_off_under_bfd(&bed, &routers, 1);
    let (_, dut2) = reap(test, 1, dut1, dut2);
    let _ = bird1.stop();
    let logs = || logs_of(&[("gw2", &dut2)], routers.iter().chain([&bird2]));
    turn.run(logs, || {
        wait_moved(&bed, 1, 2);
        println!(
            "{test}: gw1 powered off: the routers send only to gw2 after {} ms",
            t_kill.elapsed().as_millis()
        );
        more_rounds(test, &client, "after gw1 was killed");
    });

    // 2. gw1 comes back (the box boots: no filter, empty tables): BIRD,
    // then sixgate. BFD's failure put the routers' sessions to it in
    // BIRD's error wait, which the dist/ configs keep short.
    let t_start = Instant::now();
    bed.gw(1)
        .run("nft", ["delete table inet dead"])
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let bird1 = Bird::start(bed.gw(1), "gw1", &dist_config_in_bed(1))
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let dut1 = start_nat64_node(test, &bed, 1);
    let logs = || {
        logs_of(
            &[("gw1 (restarted)", &dut1), ("gw2", &dut2)],
            routers.iter().chain([&bird1, &bird2]),
        )
    };
    turn.run(logs, || {
        wait_pair_announced(&bed);
        println!(
            "{test}: gw1 restarted: announced again and taken back by both routers after {} ms",
            t_start.elapsed().as_millis()
        );
        assert!(
            dut2.log().contains("not swept (its first since it started"),
            "{}",
            dut2.log()
        );
        assert_eq!(
            tcp_sessions_on(&dut2, shard1),
            before,
            "gw2 kept gw1's sessions"
        );
        assert_eq!(tcp_sessions_on(&dut1, shard1), before, "gw1 got them back");
        more_rounds(test, &client, "through the restarted gw1");
    });

    // 3. gw1's sixgate alone killed: its BIRD lives on and withdraws the
    // routes the kernel removed with the TUN device.
    for pid in bed.gw(1).pids().into_iter().filter(|p| *p != bird1.pid()) {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let t_kill = Instant::now();
    let (_, dut2) = reap(test, 1, dut1, dut2);
    let logs = || logs_of(&[("gw2", &dut2)], routers.iter().chain([&bird1, &bird2]));
    turn.run(logs, || {
        wait_moved(&bed, 1, 2);
        println!(
            "{test}: gw1's sixgate killed (BIRD alive): the routers send only to gw2 after {} ms",
            t_kill.elapsed().as_millis()
        );
        more_rounds(test, &client, "after gw1's sixgate was killed again");
        std::fs::write(&stop, b"stop").unwrap();
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = client.exited() {
                break s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "the client did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            status.success() && client.stdout().contains("done"),
            "a connection was lost: {status:?} {} {}",
            client.stdout(),
            client.stderr()
        );
        println!(
            "{test}: all {CONNECTIONS} connections lived through both kills and the restart: {}",
            client.stdout().lines().last().unwrap_or("")
        );
    });
    drop(client);
    stop_cleanly(test, "gw2", dut2);
    tear_down(turn, bed, routers, [bird1, bird2]);
}

/// TCP connections of [`nat64_pair_kill_9_restart_and_kill_9_again_keep_every_connection`].
const CONNECTIONS: usize = 100;
