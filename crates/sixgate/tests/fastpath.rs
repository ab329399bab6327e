//! End to end with the TC fast path on (`[daemon] fastpath = "tc"`,
//! docs/fastpath.md) in the standard SIIT bed: ping both ways and an HTTP
//! transfer both ways cross the gateway, and the fast path's counters (its
//! summary line at exit) show that it carried the bulk, with the TUN device
//! seeing only the rest; a runtime EAM change reaches the program. Skips
//! like e2e.rs (not root, no namespaces, no `run` command).

use sixgate_netns::{
    Dataplane, Dut, NAT64_TOML, ScratchDir, Stopped, Topology, TopologyOptions, addr, check_host,
    ifname,
};

mod common;
use common::{
    Turn, fetch_and_compare, http_server, iperf3, pattern, ping, ping_with, run_bed, stop_cleanly,
};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// The fast path's counters from the daemon's two summary lines at exit.
#[derive(Debug)]
struct Summary {
    received: u64,
    v6to4: u64,
    v4to6: u64,
    passed: u64,
    aborted: u64,
    redirected: u64,
    redirected_neigh: u64,
    to_kernel: u64,
    route_kept: u64,
    route_asked: u64,
}

fn counters(stopped: &Stopped) -> Summary {
    // The line that holds `marker` (FastPathCounters::summary and
    // forwarding_summary), and the number after `label` in it.
    let line = |marker: &str| {
        stopped
            .stderr
            .lines()
            .find(|l| l.contains(marker))
            .unwrap_or_else(|| panic!("no {marker:?} in the log:\n{}", stopped.stderr))
    };
    let after = |line: &str, label: &str| -> u64 {
        let rest = &line[line
            .find(label)
            .unwrap_or_else(|| panic!("no {label:?} in {line}"))
            + label.len()..];
        let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
        n.parse()
            .unwrap_or_else(|_| panic!("no number after {label:?} in {line}"))
    };
    let (v, f) = (line("fast path: received"), line("fast path forwarding:"));
    let s = Summary {
        received: after(v, "received "),
        v6to4: after(v, "6to4 "),
        v4to6: after(v, "4to6 "),
        passed: after(v, "slow path "),
        aborted: after(v, "aborted "),
        redirected: after(f, "packets redirected "),
        redirected_neigh: after(f, "unresolved neighbour "),
        to_kernel: after(f, "by the kernel "),
        route_kept: after(f, "answers kept "),
        route_asked: after(f, "asked of the FIB "),
    };
    assert_eq!(
        s.received,
        s.v6to4 + s.v4to6 + s.passed + s.aborted,
        "received = translated + passed + aborted: {s:?}"
    );
    assert_eq!(
        s.v6to4 + s.v4to6,
        s.redirected + s.redirected_neigh + s.to_kernel,
        "translated = redirected + redirected_neigh + to_kernel: {s:?}"
    );
    assert_eq!(s.aborted, 0, "{s:?}");
    s
}

/// sixgate with `fastpath = "tc"` on the gateway's two interfaces, or `None`
/// (after saying why) where the test must skip.
fn fast_dut(test: &str) -> Option<Dut> {
    fast_dut_with(test, "", "")
}

/// [`fast_dut`] with `config` (a whole mode's sections, e.g. NAT64) before
/// the `[daemon]` section and `daemon` (keys) in it.
fn fast_dut_with(test: &str, config: &str, daemon: &str) -> Option<Dut> {
    dut_with(test, "tc", BIN.into(), config, daemon)
}

/// sixgate (`binary`) with `fastpath = MODE` on the gateway's two
/// interfaces, `config` and `daemon` as for [`fast_dut_with`], or `None`
/// (after saying why) where the test must skip.
fn dut_with(
    test: &str,
    mode: &str,
    binary: std::path::PathBuf,
    config: &str,
    daemon: &str,
) -> Option<Dut> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    let dut = Dut::Sixgate {
        binary,
        dataplane: Dataplane::Tun,
        extra_toml: format!(
            "{config}\n[daemon]\n{daemon}fastpath = \"{mode}\"\nfastpath_interfaces = [\"{}\", \"{}\"]\n",
            ifname::GATEWAY_V6,
            ifname::GATEWAY_V4
        ),
    };
    if let Err(why) = dut.check_available() {
        println!("skipped: {test}: {why}");
        return None;
    }
    Some(dut)
}

/// `sixgate ARGS --socket SOCKET`, which must succeed; its standard output.
fn cli(socket: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(BIN)
        .args(args)
        .arg("--socket")
        .arg(socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "sixgate {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The total of one `show stats` row.
fn stat(socket: &std::path::Path, name: &str) -> u64 {
    let text = cli(socket, &["show", "stats"]);
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in show stats:\n{text}"))
}

/// Every row's total from one `show stats`.
fn stats(socket: &std::path::Path) -> std::collections::HashMap<String, u64> {
    let text = cli(socket, &["show", "stats"]);
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_owned(), w.next()?.parse().ok()?))
        })
        .collect()
}

/// docs/fastpath.md, "Counters", as `show stats` reads them: the program's
/// verdicts and its translations' ways out add up (once no packet is between its first count and its
/// verdict: the bed is quiet but for Neighbour Discovery, so a few tries),
/// and the "fast and slow together" rows are the program's translations
/// plus the workers'.
fn check_stats_add_up(socket: &std::path::Path) {
    let mut tries = 0;
    let s = loop {
        let s = stats(socket);
        let translated = s["fastpath_translated_6to4"] + s["fastpath_translated_4to6"];
        let verdicts = translated + s["fastpath_passed"] + s["fastpath_aborted"];
        let ways_out =
            s["fastpath_redirected"] + s["fastpath_redirected_neigh"] + s["fastpath_to_kernel"];
        if s["fastpath_received"] == verdicts && translated == ways_out {
            break s;
        }
        tries += 1;
        assert!(
            tries < 50,
            "received != translated + passed + aborted, or translated != redirected + \
             redirected_neigh + to_kernel: {s:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    for dir in ["6to4", "4to6"] {
        assert_eq!(
            s[&format!("translated_fast_and_slow_{dir}")],
            s[&format!("fastpath_translated_{dir}")] + s[&format!("translated_{dir}")],
            "{dir}: {s:?}"
        );
    }
}

/// The exit summary's "fast and slow path together" line (standard
/// output): (6to4, 4to6, fast path, workers).
fn together(stopped: &Stopped) -> (u64, u64, u64, u64) {
    let line = stopped
        .stdout
        .lines()
        .find(|l| l.contains("fast and slow path together"))
        .unwrap_or_else(|| panic!("no together line in:\n{}", stopped.stdout));
    let n: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    // "6to4 A 4to6 B (fast path F, workers W)", the 6 and 4 of the labels
    // included.
    let t = &n[n.len() - 8..];
    (t[2], t[5], t[6], t[7])
}

/// The workers' translations from the exit summary ("translated 6to4 X
/// 4to6 Y").
fn workers_translated(stopped: &Stopped) -> (u64, u64) {
    let line = stopped
        .stdout
        .lines()
        .find(|l| l.starts_with("sixgate: rx "))
        .unwrap_or_else(|| panic!("no summary in:\n{}", stopped.stdout));
    let after = &line[line.find("translated 6to4 ").expect(line)..];
    let n: Vec<u64> = after
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    // "6to4 X 4to6 Y": the labels' digits too.
    (n[2], n[5])
}

/// A runtime EAM change reaches the program (docs/fastpath.md,
/// "Configuration changes"): with the v6 host's EAM entry removed the core
/// refuses its packets, and the program must not translate them with the
/// entry it had; added back, they take the fast path again.
#[test]
fn eam_changes_reach_the_fast_path() {
    let test = "eam_changes_reach_the_fast_path";
    let Some(dut) = fast_dut(test) else {
        return;
    };
    run_bed(test, TopologyOptions::default(), &dut, |bed, running| {
        let socket = running.api_socket().expect("an API socket");
        let dest = addr::V4_HOST_AS_V6.to_string();
        assert_eq!(ping(&bed.v6host, &dest, 2).len(), 2);
        let before = stat(socket, "fastpath_translated_6to4");
        assert!(before >= 2, "{before}");
        cli(socket, &["eam", "remove", addr::EAM_V4, addr::EAM_V6]);
        // Refused by the core now (no mapping for the source): no reply.
        let _ = bed.v6host.run_timeout(
            "ping",
            ["-n", "-c", "2", "-i", "0.2", "-W", "1", &dest],
            std::time::Duration::from_secs(10),
        );
        assert_eq!(
            stat(socket, "fastpath_translated_6to4"),
            before,
            "translated with a removed EAM entry"
        );
        cli(socket, &["eam", "add", addr::EAM_V4, addr::EAM_V6]);
        assert_eq!(ping(&bed.v6host, &dest, 2).len(), 2);
        assert!(stat(socket, "fastpath_translated_6to4") >= before + 2);
    });
}

#[test]
fn ping_and_http_both_ways_mostly_on_the_fast_path() {
    let test = "ping_and_http_both_ways_mostly_on_the_fast_path";
    let Some(dut) = fast_dut(test) else {
        return;
    };
    let content = pattern(4 << 20);
    let stopped = run_bed(test, TopologyOptions::default(), &dut, |bed, running| {
        assert_eq!(
            ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3).len(),
            3
        );
        assert_eq!(
            ping(&bed.v4host, &addr::V6_HOST_AS_V4.to_string(), 3).len(),
            3
        );
        // Fragmented pings are the slow path's (RFC 7915 §5.1.1): the
        // workers translate something too, for the totals below.
        let big = ["-s", "2000"];
        assert_eq!(
            ping_with(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 2, &big).len(),
            2
        );
        let dir = ScratchDir::new("www").unwrap();
        dir.write("file.bin", &content).unwrap();
        {
            let _server = http_server(&bed.v4host, addr::V4_HOST.into(), &dir);
            let url = format!("[{}]", addr::V4_HOST_AS_V6);
            fetch_and_compare(&bed.v6host, &url, &dir, "file.bin", &content);
        }
        let _server = http_server(&bed.v6host, addr::V6_HOST.into(), &dir);
        let url = addr::V6_HOST_AS_V4.to_string();
        fetch_and_compare(&bed.v4host, &url, &dir, "file.bin", &content);
        // `show stats` reports the fast path while it runs.
        let socket = running.api_socket().expect("an API socket");
        assert!(stat(socket, "fastpath_translated_6to4") > 0);
        assert!(stat(socket, "fastpath_translated_4to6") > 0);
        check_stats_add_up(socket);
    });
    let c = counters(&stopped);
    let into_tun = stopped.tun_stats.as_ref().map_or(0, |s| s.tx_packets);
    println!("{test}: fast path {c:?}; {into_tun} packets into the TUN device");
    // The exit summary: translated, fast and slow together.
    let (all_6to4, all_4to6, fast, slow) = together(&stopped);
    let (slow_6to4, slow_4to6) = workers_translated(&stopped);
    println!("{test}: together 6to4 {all_6to4} 4to6 {all_4to6} (fast {fast}, workers {slow})");
    assert_eq!(
        (all_6to4, all_4to6),
        (c.v6to4 + slow_6to4, c.v4to6 + slow_4to6)
    );
    assert_eq!((fast, slow), (c.v6to4 + c.v4to6, slow_6to4 + slow_4to6));
    assert!(slow > 0, "the fragmented pings took the workers");
    // Both directions of pings and transfers took it…
    assert!(c.v6to4 >= 3 && c.v4to6 >= 3, "{c:?}");
    // … and it carried the bulk: the TUN device saw only the rest (the
    // fragmented pings, and the GSO super-packets whose short last segment
    // would leave with another DF than the others, which the core
    // segments: how many depends on how TCP coalesced under the host's
    // load, 15 to 55 here against 430 to 500 on the fast path).
    let fast = c.v6to4 + c.v4to6;
    assert!(
        fast >= 5 * into_tun.max(1),
        "fast path {fast} packets, TUN device {into_tun}"
    );
    // The program forwarded them itself (docs/fastpath.md, "Forwarding"):
    // every destination here has a route and a neighbour.
    assert_eq!(c.to_kernel, 0, "{c:?}");
    assert!(c.redirected >= fast - c.redirected_neigh, "{c:?}");
}

/// The XDP program (`fastpath = "xdp"`, docs/fastpath.md, "XDP") on the
/// gateway's two veths, attached in native mode: ping both ways and a 4 MiB
/// HTTP transfer each way, translated and redirected by it (XDP_REDIRECT),
/// the TUN device carrying only the rest. The bed as XDP on veth needs it:
/// complete checksums from the hosts (an XDP frame carries no
/// CHECKSUM_PARTIAL) and GRO on the gateway's peers, without which a veth
/// refuses frames redirected into it (no NAPI to take them).
#[test]
fn xdp_ping_and_http_both_ways_on_the_fast_path() {
    let test = "xdp_ping_and_http_both_ways_on_the_fast_path";
    let Some(dut) = dut_with(test, "xdp", BIN.into(), "", "") else {
        return;
    };
    let content = pattern(4 << 20);
    let options = TopologyOptions {
        complete_checksums: true,
        ..TopologyOptions::default()
    };
    let stopped = run_bed(test, options, &dut, |bed, running| {
        bed.v6host
            .run("ethtool", ["-K", ifname::V6_HOST, "gro", "on"])
            .unwrap();
        bed.router
            .run("ethtool", ["-K", ifname::ROUTER_GW, "gro", "on"])
            .unwrap();
        assert_eq!(
            ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3).len(),
            3
        );
        assert_eq!(
            ping(&bed.v4host, &addr::V6_HOST_AS_V4.to_string(), 3).len(),
            3
        );
        let dir = ScratchDir::new("www").unwrap();
        dir.write("file.bin", &content).unwrap();
        {
            let _server = http_server(&bed.v4host, addr::V4_HOST.into(), &dir);
            let url = format!("[{}]", addr::V4_HOST_AS_V6);
            fetch_and_compare(&bed.v6host, &url, &dir, "file.bin", &content);
        }
        let _server = http_server(&bed.v6host, addr::V6_HOST.into(), &dir);
        let url = addr::V6_HOST_AS_V4.to_string();
        fetch_and_compare(&bed.v4host, &url, &dir, "file.bin", &content);
        let socket = running.api_socket().expect("an API socket");
        check_stats_add_up(socket);
    });
    assert!(
        stopped
            .stderr
            .contains("XDP program (native mode) attached to"),
        "not on XDP:\n{}",
        stopped.stderr
    );
    assert!(!stopped.stderr.contains("the TC program instead"));
    let c = counters(&stopped);
    let into_tun = stopped.tun_stats.as_ref().map_or(0, |s| s.tx_packets);
    println!("{test}: fast path {c:?}; {into_tun} packets into the TUN device");
    // No bpf_redirect_neigh on XDP: an unresolved next hop went up.
    assert_eq!(c.redirected_neigh, 0, "{c:?}");
    assert!(c.v6to4 >= 3 && c.v4to6 >= 3, "{c:?}");
    let fast = c.v6to4 + c.v4to6;
    // No GSO through an XDP veth: every segment is a packet, thousands of
    // them for 8 MiB.
    assert!(fast >= 2000, "{c:?}");
    assert!(
        fast >= 10 * into_tun.max(1),
        "fast path {fast} packets, TUN device {into_tun}"
    );
    assert_eq!(c.to_kernel, 0, "{c:?}");
    assert_eq!(c.redirected, fast, "{c:?}");
}

/// Forwarding in the program (docs/fastpath.md, "Forwarding") with the
/// gateway's neighbour caches flushed first: the first packets of each
/// find the next hop unresolved and leave by `bpf_redirect_neigh` (the
/// kernel resolves it, no packet lost), the rest
/// by `bpf_redirect` with the resolved MAC addresses; then iperf3 TCP both
/// ways and UDP through the fast path, the TUN device carrying none of it.
#[test]
fn unresolved_neighbours_then_iperf3_redirected_by_the_program() {
    let test = "unresolved_neighbours_then_iperf3_redirected_by_the_program";
    let Some(dut) = fast_dut(test) else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &dut, |bed, running| {
        let socket = running.api_socket().expect("an API socket");
        for (v, dev) in [("-4", ifname::GATEWAY_V4), ("-6", ifname::GATEWAY_V6)] {
            bed.gateway
                .run("ip", [v, "neigh", "flush", "dev", dev])
                .unwrap_or_else(|e| panic!("{test}: {e}"));
        }
        let before = stat(socket, "fastpath_redirected_neigh");
        // Every echo answered, the first included.
        assert_eq!(
            ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3).len(),
            3
        );
        // At least the first packet found its next hop unresolved (the
        // other direction's may have been learnt meanwhile from a peer's own
        // ARP or Neighbour Solicitation; tests/forward.rs in
        // sixgate-fastpath checks both directions one by one).
        let neigh = stat(socket, "fastpath_redirected_neigh") - before;
        assert!(neigh >= 1, "redirected to an unresolved neighbour: {neigh}");
        let redirected = stat(socket, "fastpath_redirected");
        assert!(redirected >= 2, "redirected: {redirected}");
        for args in [
            &[][..],
            &["-R"][..],
            &["-u", "-b", "100M", "-l", "1200"][..],
        ] {
            let r = iperf3(
                &bed.v6host,
                &bed.v4host,
                addr::V4_HOST.into(),
                addr::V4_HOST_AS_V6.into(),
                args,
            );
            println!(
                "{test}: iperf3 {args:?}: {:.0} Mbit/s, {}",
                r.mbit_s, r.detail
            );
            assert!(r.mbit_s > 1.0, "iperf3 {args:?}: {:.1} Mbit/s", r.mbit_s);
        }
        assert!(stat(socket, "fastpath_redirected") > redirected + 1000);
        assert_eq!(stat(socket, "fastpath_to_kernel"), 0);
    });
    let c = counters(&stopped);
    let out_of_tun = stopped.tun_stats.as_ref().map_or(0, |s| s.rx_packets);
    println!("{test}: fast path {c:?}; {out_of_tun} packets out of the TUN device");
    assert!(c.redirected_neigh >= 1, "{c:?}");
    // iperf3's control connection and data both ways, translated and
    // redirected by the program. The TUN plane translated only what the
    // program passed up: IPv6 super-packets ending in a segment short
    // enough to need DF=0 (RFC 7915 §5.1, docs/fastpath.md), each leaving
    // the TUN plane as two packets (docs/tun.md, "DF of segments").
    assert!(c.v6to4 > 1000 && c.v4to6 > 1000, "{c:?}");
    assert!(
        out_of_tun <= 2 * c.passed,
        "the TUN plane translated more than the program passed up: {out_of_tun}, {c:?}"
    );
    // bpf/route_cache.h: the route check asked the FIB for a flow's first
    // packets on each CPU, and once a second, and kept the answer between.
    assert!(c.route_kept > 10 * c.route_asked, "{c:?}");
}

/// Strict reverse-path filtering on the gateway would drop an IPv4 packet the
/// program translated and handed to the kernel (its source is routed into
/// the TUN device). `sixgate run` then makes the program translate only
/// what it forwards itself (docs/fastpath.md, "Forwarding"): the hosts'
/// pings are translated and redirected, and a ping of the gateway's own
/// IPv4 address through pool6 (a local destination: no forwarding answer)
/// goes up untranslated and is answered through the TUN plane.
#[test]
fn strict_rp_filter_translates_only_what_the_program_forwards() {
    let test = "strict_rp_filter_translates_only_what_the_program_forwards";
    let Some(dut) = fast_dut(test) else {
        return;
    };
    let mut turn = Turn::take(test);
    let bed = Topology::build(dut.bed_options(TopologyOptions::default()))
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(bed.namespaces());
    bed.gateway
        .run("sysctl", ["-w", "net.ipv4.conf.all.rp_filter=1"])
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let running = bed.start(&dut).unwrap_or_else(|e| panic!("{test}: {e}"));
    let gateway_as_v6 = format!("2001:db8:64::{}", addr::GATEWAY_V4);
    turn.run(
        || running.log(),
        || {
            pings_both_ways(&bed);
            assert_eq!(ping(&bed.v6host, &gateway_as_v6, 2).len(), 2);
        },
    );
    let stopped = stop_cleanly(test, "translator", running);
    assert!(
        stopped
            .stderr
            .contains("translates only the packets it forwards itself"),
        "{}",
        stopped.stderr
    );
    let c = counters(&stopped);
    let out_of_tun = stopped.tun_stats.as_ref().map_or(0, |s| s.rx_packets);
    println!("{test}: fast path {c:?}; {out_of_tun} packets out of the TUN device");
    assert!(c.v6to4 >= 4 && c.v4to6 >= 4, "{c:?}");
    assert_eq!(c.to_kernel, 0, "{c:?}");
    // The gateway's echo requests and replies went through the TUN plane.
    assert!(
        c.passed >= 2 && out_of_tun >= 4,
        "{c:?}, {out_of_tun} out of TUN"
    );
    drop(bed);
    turn.finish();
}

/// A UDP session's lifetime in the NAT64 test: shorter than the flow, so it
/// lives only if the program's last-seen refreshes it.
const SHORT_UDP_TIMEOUT: u32 = 2;

/// docs/fastpath.md, "NAT64 established sessions": in mode nat64 the
/// workers install the sessions they settled (TCP ESTABLISHED; UDP and ICMP
/// Echo at their third packet) and the program carries their packets; SYN,
/// FIN and the first packets go through the TUN device. A 6-second UDP flow with a 2-second
/// UDP timeout keeps its one session (RFC 6146 §3.5.1.1: each packet
/// refreshes it; here the program's last-seen, read by the worker). Two
/// workers.
#[test]
fn nat64_sessions_mostly_on_the_fast_path() {
    let test = "nat64_sessions_mostly_on_the_fast_path";
    let config = format!("{NAT64_TOML}udp_timeout = {SHORT_UDP_TIMEOUT}\n");
    // Two workers: each installs its own sessions through its own handle.
    let Some(dut) = fast_dut_with(test, &config, "workers = 2\n") else {
        return;
    };
    let content = pattern(4 << 20);
    let stopped = run_bed(test, TopologyOptions::default(), &dut, |bed, running| {
        let socket = running.api_socket().expect("an API socket");
        let dest = addr::V4_HOST_AS_V6.to_string();
        assert_eq!(ping(&bed.v6host, &dest, 4).len(), 4);
        let dir = ScratchDir::new("www").unwrap();
        dir.write("file.bin", &content).unwrap();
        {
            let _server = http_server(&bed.v4host, addr::V4_HOST.into(), &dir);
            let url = format!("[{dest}]");
            fetch_and_compare(&bed.v6host, &url, &dir, "file.bin", &content);
        }
        for args in [&[][..], &["-R"][..]] {
            let r = iperf3(
                &bed.v6host,
                &bed.v4host,
                addr::V4_HOST.into(),
                addr::V4_HOST_AS_V6.into(),
                args,
            );
            assert!(r.mbit_s > 0.0, "iperf3 {args:?}: {}", r.detail);
            println!("{test}: iperf3 TCP {args:?}: {:.0} Mbit/s", r.mbit_s);
        }
        // The UDP flow outlives its timeout three times over.
        let installed = stat(socket, "fastpath_nat64_installed");
        let refreshed = stat(socket, "fastpath_nat64_refreshed");
        let r = iperf3(
            &bed.v6host,
            &bed.v4host,
            addr::V4_HOST.into(),
            addr::V4_HOST_AS_V6.into(),
            &["-u", "-b", "20M", "-l", "1200", "-t", "6"],
        );
        assert!(r.mbit_s > 0.0, "iperf3 UDP: {}", r.detail);
        let installed = stat(socket, "fastpath_nat64_installed") - installed;
        let refreshed = stat(socket, "fastpath_nat64_refreshed") - refreshed;
        println!(
            "{test}: iperf3 UDP 6 s (udp_timeout {SHORT_UDP_TIMEOUT} s): {:.0} Mbit/s; \
             sessions installed {installed}, refreshed {refreshed}",
            r.mbit_s
        );
        // Its control connection and its UDP flow, once each: the flow's
        // session never expired under it.
        assert!(installed <= 2, "installed {installed}: the session expired");
        assert!(refreshed >= 4, "refreshed {refreshed}");
        assert_eq!(stat(socket, "fastpath_nat64_map_full"), 0);
        assert_eq!(stat(socket, "fastpath_nat64_map_errors"), 0);
    });
    // Both invariants, forwarding included (bpf/forward.h), for NAT64's
    // packets too.
    let c = counters(&stopped);
    let (v6to4, v4to6) = (c.v6to4, c.v4to6);
    let into_tun = stopped.tun_stats.as_ref().map_or(0, |s| s.tx_packets);
    println!("{test}: fast path {c:?}; {into_tun} packets into the TUN device");
    assert!(v6to4 >= 3 && v4to6 >= 3, "6to4 {v6to4}, 4to6 {v4to6}");
    // The handshakes, FINs and first packets took the TUN device; the bulk
    // did not.
    let fast = v6to4 + v4to6;
    assert!(
        fast >= 5 * into_tun.max(1),
        "fast path {fast} packets, TUN device {into_tun}"
    );
}

/// The egress MTU pass-up (docs/fastpath.md, "Forwarding"): the gateway's
/// link to the v6 host has MTU 1280, the v4 host sends 1500-byte packets
/// (DF). Their translation would not fit, so the program passes them up
/// untranslated; the core translates them, the kernel answers Packet Too Big,
/// the core turns that into Fragmentation Needed (1280 - 20) for the v4 host,
/// exactly as without the fast path, and the download completes. The
/// packets that fit take the fast path throughout.
#[test]
fn pmtu_download_v4_to_v6_over_1280_link_through_the_fast_path() {
    let test = "pmtu_download_v4_to_v6_over_1280_link_through_the_fast_path";
    let Some(dut) = fast_dut(test) else {
        return;
    };
    let options = TopologyOptions {
        v6_link_mtu: Some(1280),
        ..TopologyOptions::default()
    };
    let stopped = run_bed(test, options, &dut, |bed, _| {
        let dir = ScratchDir::new("www").unwrap();
        let content = pattern(1 << 20);
        dir.write("big.bin", &content).unwrap();
        let _server = http_server(&bed.v4host, addr::V4_HOST.into(), &dir);
        let v6_as_v4 = addr::V6_HOST_AS_V4.to_string();
        assert_eq!(
            bed.v4host.cached_pmtu(&v6_as_v4).unwrap(),
            None,
            "fresh bed"
        );
        fetch_and_compare(
            &bed.v6host,
            &format!("[{}]", addr::V4_HOST_AS_V6),
            &dir,
            "big.bin",
            &content,
        );
        let pmtu = bed.v4host.cached_pmtu(&v6_as_v4).unwrap();
        assert_eq!(pmtu, Some(1260), "Fragmentation Needed with MTU 1280 - 20");
    });
    let c = counters(&stopped);
    let out_of_tun = stopped.tun_stats.as_ref().map_or(0, |s| s.rx_packets);
    println!("{test}: fast path {c:?}; {out_of_tun} packets out of the TUN device");
    // The oversized packets went up and the core translated them (and the
    // kernel's Packet Too Big); the rest took the fast path.
    assert!(
        c.passed >= 1 && out_of_tun >= 2,
        "{c:?}, {out_of_tun} out of TUN"
    );
    assert!(c.v4to6 > 10 && c.v6to4 > 10, "{c:?}");
}

/// Two pings each way across the translator, all answered.
fn pings_both_ways(bed: &Topology) {
    assert_eq!(
        ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 2).len(),
        2
    );
    assert_eq!(
        ping(&bed.v4host, &addr::V6_HOST_AS_V4.to_string(), 2).len(),
        2
    );
}

/// A wrapper of the daemon that makes its kernel probe report `feature`
/// missing (`SIXGATE_FASTPATH_PRETEND_MISSING`).
fn pretend_missing(dir: &ScratchDir, feature: &str) -> std::path::PathBuf {
    let script =
        format!("#!/bin/sh\nSIXGATE_FASTPATH_PRETEND_MISSING={feature} exec {BIN} \"$@\"\n");
    dir.write_script("sixgate", script, &["run", "--help"])
        .unwrap()
}

/// docs/fastpath.md, "Kernel requirements": a kernel without
/// `bpf_skb_change_proto` (pretended with the probe's test hook, through a
/// wrapper that sets it for the daemon only) gets one warning naming it,
/// `show stats` says the fast path is off and why, and the TUN plane alone
/// translates both ways: no failed start.
#[test]
fn kernel_without_a_helper_runs_on_tun_alone() {
    let test = "kernel_without_a_helper_runs_on_tun_alone";
    let dir = ScratchDir::new("pretend").unwrap();
    let wrapper = pretend_missing(&dir, "bpf_skb_change_proto");
    let Some(dut) = dut_with(test, "tc", wrapper, "", "") else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &dut, |bed, running| {
        pings_both_ways(bed);
        let socket = running.api_socket().expect("an API socket");
        let text = cli(socket, &["show", "stats"]);
        assert!(
            text.contains("fast path off: fastpath = \"tc\": this kernel lacks")
                && text.contains("bpf_skb_change_proto"),
            "{text}"
        );
        assert!(!text.contains("fastpath_received"), "{text}");
        assert!(stat(socket, "translated_6to4") >= 2);
        assert!(stat(socket, "translated_4to6") >= 2);
    });
    let said: Vec<&str> = stopped
        .stderr
        .lines()
        .filter(|l| l.contains("lacks what the TC fast path needs"))
        .collect();
    assert_eq!(said.len(), 1, "{}", stopped.stderr);
    assert!(
        said[0].contains("WARN") && said[0].contains("bpf_skb_change_proto"),
        "{}",
        said[0]
    );
    assert!(
        !stopped.stderr.contains("fast path: received"),
        "{}",
        stopped.stderr
    );
}

/// docs/config.md: `fastpath = "xdp"` where the XDP program cannot run
/// (a kernel without `bpf_xdp_adjust_head`, pretended with the probe's test
/// hook) is one warning naming it, and the TC program instead, which
/// translates pings both ways.
#[test]
fn xdp_falls_back_to_tc_with_one_warning() {
    let test = "xdp_falls_back_to_tc_with_one_warning";
    let dir = ScratchDir::new("pretend").unwrap();
    let wrapper = pretend_missing(&dir, "bpf_xdp_adjust_head");
    let Some(dut) = dut_with(test, "xdp", wrapper, "", "") else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &dut, |bed, _| {
        pings_both_ways(bed);
    });
    let said: Vec<&str> = stopped
        .stderr
        .lines()
        .filter(|l| l.contains("the TC program instead"))
        .collect();
    assert_eq!(said.len(), 1, "{}", stopped.stderr);
    assert!(
        said[0].contains("WARN")
            && said[0].contains("fastpath = \"xdp\"")
            && said[0].contains("lacks what the XDP fast path needs: bpf_xdp_adjust_head"),
        "{}",
        said[0]
    );
    assert!(
        stopped.stderr.contains("fast path: TC program attached to"),
        "{}",
        stopped.stderr
    );
    let c = counters(&stopped);
    assert!(c.v6to4 >= 2 && c.v4to6 >= 2, "{c:?}");
}

/// docs/config.md: `fastpath = "auto"` on a kernel that has what the program
/// needs, for SIIT (in scope), is the TC fast path: it translates pings both
/// ways, and says nothing is off.
#[test]
fn auto_takes_the_fast_path_where_it_can() {
    let test = "auto_takes_the_fast_path_where_it_can";
    let Some(dut) = dut_with(test, "auto", BIN.into(), "", "") else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &dut, |bed, running| {
        pings_both_ways(bed);
        let socket = running.api_socket().expect("an API socket");
        assert!(!cli(socket, &["show", "stats"]).contains("fast path off"));
    });
    let c = counters(&stopped);
    assert!(c.v6to4 >= 2 && c.v4to6 >= 2, "{c:?}");
    assert!(
        !stopped.stderr.contains("fastpath = \"auto\""),
        "{}",
        stopped.stderr
    );
}

/// docs/config.md: the default (no `fastpath`, no `fastpath_interfaces`) is
/// `"auto"` on every Ethernet interface that is up: here the gateway's two,
/// and the program translates pings both ways (issue 18, "on by default
/// where it works").
#[test]
fn default_config_takes_the_fast_path_on_every_ethernet_interface() {
    let test = "default_config_takes_the_fast_path_on_every_ethernet_interface";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let dut = Dut::Sixgate {
        binary: BIN.into(),
        dataplane: Dataplane::Tun,
        extra_toml: String::new(),
    };
    if let Err(why) = dut.check_available() {
        println!("skipped: {test}: {why}");
        return;
    }
    let stopped = run_bed(test, TopologyOptions::default(), &dut, |bed, _| {
        pings_both_ways(bed);
    });
    let attached = stopped
        .stderr
        .lines()
        .find(|l| l.contains("TC program attached to the ingress of"))
        .unwrap_or_else(|| panic!("not attached:\n{}", stopped.stderr));
    for iface in [ifname::GATEWAY_V6, ifname::GATEWAY_V4] {
        assert!(attached.contains(iface), "{attached}");
    }
    let c = counters(&stopped);
    assert!(c.v6to4 >= 2 && c.v4to6 >= 2, "{c:?}");
}

/// The BIB's IPv4 addresses (`show bib`) that lie in 198.18.`third`.0/24.
fn bib_v4_in(socket: &std::path::Path, third: u8) -> Vec<String> {
    let text = cli(socket, &["show", "bib"]);
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse::<std::net::Ipv4Addr>().ok())
        .filter(|a| a.octets()[..3] == [198, 18, third])
        .map(|a| a.to_string())
        .collect()
}

/// Issue 30: with `[daemon] user = "nobody"` a reload that changes nothing, a
/// `pool4 add` and a reload that adds pool4 each leave the fast path
/// translating (the daemon keeps CAP_NET_ADMIN and CAP_BPF across the drop,
/// docs/config.md "[daemon]"), and the new pool4 addresses in use. Each step
/// pings anew: a new ICMP session, whose packets from the fourth on take the
/// fast path.
#[test]
fn dropped_privileges_keep_the_fast_path_across_reload_and_pool4_changes() {
    let test = "dropped_privileges_keep_the_fast_path_across_reload_and_pool4_changes";
    let Some(dut) = fast_dut_with(test, NAT64_TOML, "user = \"nobody\"\n") else {
        return;
    };
    run_bed(test, TopologyOptions::default(), &dut, |bed, running| {
        let socket = running.api_socket().expect("an API socket");
        let path = running.config_path().to_owned();
        // The pool4 prefixes added below come back to the gateway too.
        bed.router
            .add_route_via("198.18.0.0/15", &addr::GATEWAY_V4.to_string())
            .unwrap();
        let dest = addr::V4_HOST_AS_V6.to_string();
        let fast = |why: &str| {
            let before = stat(socket, "fastpath_translated_6to4");
            assert_eq!(ping(&bed.v6host, &dest, 6).len(), 6, "{why}");
            let after = stat(socket, "fastpath_translated_6to4");
            assert!(after > before, "{why}: the fast path translated nothing");
            let status = cli(socket, &["show", "status"]);
            assert!(
                status
                    .lines()
                    .any(|l| l.starts_with("fastpath") && l.contains("translating")),
                "{why}: {status}"
            );
        };
        fast("at start");
        assert!(!bib_v4_in(socket, 0).is_empty());
        // A reload that changes nothing.
        cli(socket, &["reload"]);
        fast("after a reload that changed nothing");
        // pool4 add (a route into the device), the old prefix out: new
        // sessions take the new one.
        cli(socket, &["pool4", "add", "198.18.1.0/24"]);
        cli(socket, &["pool4", "remove", "198.18.0.0/24"]);
        fast("after pool4 add");
        assert!(
            !bib_v4_in(socket, 1).is_empty(),
            "{}",
            cli(socket, &["show", "bib"])
        );
        // A reload that adds pool4; it says that it undoes the runtime
        // changes the file does not make.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("198.18.0.0/24", "198.18.2.0/24")).unwrap();
        let out = std::process::Command::new(BIN)
            .args(["reload", "--socket"])
            .arg(socket)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("undid runtime changes"), "{err}");
        assert!(err.contains("pool4 add 198.18.1.0/24"), "{err}");
        fast("after a reload that added pool4");
        assert!(
            !bib_v4_in(socket, 2).is_empty(),
            "{}",
            cli(socket, &["show", "bib"])
        );
    });
}
