//! End to end with the TC fast path on (`[daemon] fastpath = "tc"`,
//! docs/fastpath.md) in the standard SIIT bed: ping both ways and an HTTP
//! transfer both ways cross the gateway, and the fast path's counters (its
//! summary line at exit) show that it carried the bulk, with the TUN device
//! seeing only the rest; a runtime EAM change reaches the program. Skips
//! like e2e.rs (not root, no namespaces, no `run` command).

use sixgate_netns::{
    Dataplane, Dut, ScratchDir, Stopped, Topology, TopologyOptions, addr, check_host, ifname,
};

mod common;
use common::{Turn, fetch_and_compare, http_server, iperf3, pattern, ping, run_bed, stop_cleanly};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// The fast path's counters from the daemon's summary line at exit.
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
}

fn counters(stopped: &Stopped) -> Summary {
    let line = stopped
        .stderr
        .lines()
        .find(|l| l.contains("fast path: received"))
        .unwrap_or_else(|| panic!("no fast path summary in the log:\n{}", stopped.stderr));
    // The number after `label` (sixgate-tun's fastpath::summary).
    let after = |label: &str| -> u64 {
        let rest = &line[line
            .find(label)
            .unwrap_or_else(|| panic!("no {label:?} in {line}"))
            + label.len()..];
        let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
        n.parse()
            .unwrap_or_else(|_| panic!("no number after {label:?} in {line}"))
    };
    let s = Summary {
        received: after("received "),
        v6to4: after("6to4 "),
        v4to6: after("4to6 "),
        passed: after("slow path "),
        aborted: after("aborted "),
        redirected: after("packets redirected "),
        redirected_neigh: after("unresolved neighbour "),
        to_kernel: after("by the kernel "),
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
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    let dut = Dut::Sixgate {
        binary: BIN.into(),
        dataplane: Dataplane::Tun,
        extra_toml: format!(
            "[daemon]\nfastpath = \"tc\"\nfastpath_interfaces = [\"{}\", \"{}\"]\n",
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
    });
    let c = counters(&stopped);
    let into_tun = stopped.tun_stats.as_ref().map_or(0, |s| s.tx_packets);
    println!("{test}: fast path {c:?}; {into_tun} packets into the TUN device");
    // Both directions of pings and transfers took it…
    assert!(c.v6to4 >= 3 && c.v4to6 >= 3, "{c:?}");
    // … and it carried the bulk: the TUN device saw only the rest.
    let fast = c.v6to4 + c.v4to6;
    assert!(
        fast >= 10 * into_tun.max(1),
        "fast path {fast} packets, TUN device {into_tun}"
    );
    // The program forwarded them itself (docs/fastpath.md, "Forwarding"):
    // every destination here has a route and a neighbour.
    assert_eq!(c.to_kernel, 0, "{c:?}");
    assert!(c.redirected >= fast - c.redirected_neigh, "{c:?}");
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
    // redirected by the program: the TUN plane translated nothing.
    assert!(c.v6to4 > 1000 && c.v4to6 > 1000, "{c:?}");
    assert_eq!(out_of_tun, 0, "the TUN plane translated packets");
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
            assert_eq!(
                ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 2).len(),
                2
            );
            assert_eq!(
                ping(&bed.v4host, &addr::V6_HOST_AS_V4.to_string(), 2).len(),
                2
            );
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
