//! End to end, stateful NAT64 (RFC 6146) on the TUN data plane: `sixgate run` in
//! `mode = "nat64"` in the standard namespace bed (IPv6-only host — gateway —
//! IPv4 router — IPv4-only host), with pool6 `2001:db8:64::/96` and pool4
//! `198.18.0.0/24` ([`NAT64_TOML`]), and real clients and servers on both sides.
//!
//! - `nat64_one_worker` / `nat64_two_workers`: the same core checks (curl to
//!   `python3 -m http.server` on the IPv4 host, ping from the IPv6 host, iperf3
//!   TCP both ways and UDP, an IPv4 client reaching an IPv6 web server through a
//!   static BIB entry, an IPv6 client reaching it by hairpinning) with one
//!   worker and with two; with two, a second
//!   subscriber whose /64 belongs to the other worker does the same, and both
//!   workers must have seen packets (the steering program at work).
//! - `nat64_one_worker_xdp` / `nat64_two_workers_xdp`: the same on the AF_XDP
//!   data plane; with two workers, packets reach their owner through the
//!   workers' handoff rings (docs/xdp.md).
//! - `nat64_udp_session_expires`: after the (shortened) UDP timeout the IPv4
//!   side can no longer reach the old mapping.
//! - `nat64_subscriber_limit_leaves_others_alone`: a subscriber at
//!   `max_sessions_per_subscriber` gets no more sessions; another one still
//!   connects.
//! - `nat64_without_bpf_runs_one_worker_and_says_why`: the steering fallback.
//!
//! - `nat64_fragments_two_workers` / `nat64_fragments_two_workers_xdp`
//!   (RFC 6146 §3.4): `ping -s 3000` both ways and `dig` of a 3.2 KB TXT
//!   record over UDP, with two workers.
//!
//! Ping from the IPv4 side needs a static BIB entry for ICMP, which fixes the
//! Echo identifier: only the fragments test does it, with `ping -e`.
//!
//! They need root and `ip netns` (else they print `skipped:` and pass), and the
//! tools `scripts/setup.sh` installs.

use std::net::Ipv6Addr;
use std::time::Duration;

use sixgate_core::nat64::steering::subscriber_worker;
use sixgate_netns::{
    Background, Dataplane, Dut, NAT64_TOML, Netns, Proto, RunningDut, ScratchDir, Topology,
    TopologyOptions, addr, check_host, veth,
};

mod common;
use common::{
    HTTP_PORT, fetch_and_compare, http_client_seen, http_server, iperf3, pattern, per_worker_rx,
    ping, ping_with, run_bed,
};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// The pool4 address and port of the static BIB entry for the v6 host's web
/// server (its IPv6 port is [`HTTP_PORT`] too).
const STATIC_V4: &str = "198.18.0.200";

/// sixgate in nat64 mode with `workers` workers and `nat64_keys` added to the
/// `[nat64]` section, or `None` (after printing why) if this machine cannot
/// run the bed.
fn nat64_or_skip(test: &str, workers: u16, nat64_keys: &str) -> Option<Dut> {
    nat64_on_or_skip(test, Dataplane::Tun, workers, nat64_keys)
}

/// [`nat64_or_skip`] on data plane `dataplane`.
fn nat64_on_or_skip(
    test: &str,
    dataplane: Dataplane,
    workers: u16,
    nat64_keys: &str,
) -> Option<Dut> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    Some(Dut::Sixgate {
        binary: BIN.into(),
        dataplane,
        // NAT64_TOML ends inside [nat64]: the keys land there.
        extra_toml: format!("{NAT64_TOML}{nat64_keys}\n[daemon]\nworkers = {workers}\n"),
    })
}

/// A pool4 address as the IPv4 host sees a client of the NAT64.
fn in_pool4(a: &str) -> bool {
    a.starts_with("198.18.0.")
}

/// A second IPv6-only host (another subscriber), on its own link to the gateway
/// with its own /64. With `other_worker_than` set (the worker count and a
/// subscriber), the /64 is chosen so that `subscriber_worker` puts it on another
/// worker. Removed with the returned namespace.
fn second_subscriber(
    bed: &Topology,
    other_worker_than: Option<(u16, Ipv6Addr)>,
) -> (Netns, Ipv6Addr) {
    let net = (2u16..200)
        .find(|&n| match other_worker_than {
            None => true,
            Some((workers, first)) => {
                let a = Ipv6Addr::new(0x2001, 0xdb8, n, 0, 0, 0, 0, 5);
                subscriber_worker(u128::from(a), 64, workers)
                    != subscriber_worker(u128::from(first), 64, workers)
            }
        })
        .expect("a /64 on another worker");
    let host = Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, 5);
    let gw = Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, 1);
    let ns = Netns::new("v6sub").unwrap_or_else(|e| panic!("{e}"));
    let setup = || -> sixgate_netns::Result<()> {
        veth(&ns, "eth0", &bed.gateway, "eth6b")?;
        bed.gateway.add_address("eth6b", &format!("{gw}/64"))?;
        ns.add_address("eth0", &format!("{host}/64"))?;
        ns.add_route_via("default", &gw.to_string())
    };
    setup().unwrap_or_else(|e| panic!("second subscriber: {e}"));
    (ns, host)
}

/// curl through the NAT64 from `client` (an IPv6 host) to the IPv4 host's web
/// server; the server must see a pool4 address.
fn http_through_nat64(client: &Netns, bed: &Topology) {
    let dir = ScratchDir::new("www").unwrap();
    let content = pattern(256 * 1024);
    dir.write("file.bin", &content).unwrap();
    let server = http_server(&bed.v4host, addr::V4_HOST.into(), &dir);
    fetch_and_compare(
        client,
        &format!("[{}]", addr::V4_HOST_AS_V6),
        &dir,
        "file.bin",
        &content,
    );
    let seen = http_client_seen(&server);
    assert!(
        in_pool4(&seen),
        "the v4 server saw {seen}, not a pool4 address"
    );
    println!("the IPv4 web server saw the IPv6 client as {seen} (pool4)");
}

/// iperf3 TCP both ways and UDP from `client` to the IPv4 host.
fn iperf3_through_nat64(client: &Netns, bed: &Topology, tr: &RunningDut) {
    for (what, args) in [
        ("TCP v6 -> v4", &[][..]),
        ("TCP v4 -> v6 (-R)", &["-R"][..]),
        (
            "UDP v6 -> v4, 1200-byte datagrams at 200 Mbit/s",
            &["-u", "-b", "200M", "-l", "1200"][..],
        ),
    ] {
        let r = iperf3(
            client,
            &bed.v4host,
            addr::V4_HOST.into(),
            addr::V4_HOST_AS_V6.into(),
            args,
        );
        assert!(r.mbit_s > 0.0, "{what}: no throughput ({})", r.detail);
        println!(
            "THROUGHPUT {} nat64 iperf3 {what}: {:.0} Mbit/s received ({})",
            tr.name(),
            r.mbit_s,
            r.detail
        );
    }
}

/// An IPv4 client reaches the v6 host's web server through the static BIB entry
/// `STATIC_V4:HTTP_PORT` ↔ `[V6_HOST]:HTTP_PORT`; the server sees the client at
/// its pool6 address.
fn static_bib_http(bed: &Topology) {
    let dir = ScratchDir::new("www6").unwrap();
    let content = pattern(64 * 1024);
    dir.write("inside.bin", &content).unwrap();
    let server = http_server(&bed.v6host, addr::V6_HOST.into(), &dir);
    fetch_and_compare(&bed.v4host, STATIC_V4, &dir, "inside.bin", &content);
    assert_eq!(http_client_seen(&server), addr::V4_HOST_AS_V6.to_string());
}

/// Hairpinning (RFC 6146 §3.8): an IPv6 client reaches the static BIB web
/// server at its pool4 address written in pool6. Its packets come back out of
/// the core as IPv4 to a pool4 address; translated in place when the same
/// worker owns that port, else written to the TUN device, routed back in by
/// the kernel and steered to the owner. The server sees the client at its
/// pool4 mapping written in pool6.
fn hairpin_http(client: &Netns, bed: &Topology) {
    let dir = ScratchDir::new("hairpin").unwrap();
    let content = pattern(64 * 1024);
    dir.write("hairpin.bin", &content).unwrap();
    let server = http_server(&bed.v6host, addr::V6_HOST.into(), &dir);
    let target = addr::in_pool6(STATIC_V4.parse().unwrap());
    fetch_and_compare(
        client,
        &format!("[{target}]"),
        &dir,
        "hairpin.bin",
        &content,
    );
    let seen = http_client_seen(&server);
    assert!(
        seen.starts_with("2001:db8:64::c612:"),
        "the server saw {seen}, not a pool4 address in pool6"
    );
    println!("hairpin through {target}: the v6 server saw the v6 client as {seen}");
}

/// The static BIB entry of [`static_bib_http`] and the event log, as `[nat64]` keys.
fn core_keys() -> String {
    format!(
        "event_log = \"sessions\"\n\
         static_bib = [ {{ proto = \"tcp\", ipv6 = \"{}\", port6 = {HTTP_PORT}, \
         ipv4 = \"{STATIC_V4}\", port4 = {HTTP_PORT} }} ]\n",
        addr::V6_HOST
    )
}

fn core_tests(test: &str, workers: u16) {
    core_tests_on(test, Dataplane::Tun, workers);
}

fn core_tests_on(test: &str, dataplane: Dataplane, workers: u16) {
    let Some(translator) = nat64_on_or_skip(test, dataplane, workers, &core_keys()) else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &translator, |bed, tr| {
        if workers > 1 {
            let log = tr.log();
            assert!(
                log.contains("steering program attached"),
                "no steering with {workers} workers:\n{log}"
            );
        }
        let rtts = ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3);
        println!(
            "ping {} through NAT64: RTT ms {rtts:?}",
            addr::V4_HOST_AS_V6
        );
        http_through_nat64(&bed.v6host, bed);
        iperf3_through_nat64(&bed.v6host, bed, tr);
        static_bib_http(bed);
        hairpin_http(&bed.v6host, bed);
        if workers > 1 {
            let (sub, a) = second_subscriber(bed, Some((workers, addr::V6_HOST)));
            println!("second subscriber {a} (another worker)");
            ping(&sub, &addr::V4_HOST_AS_V6.to_string(), 3);
            http_through_nat64(&sub, bed);
            iperf3_through_nat64(&sub, bed, tr);
            // The static BIB entry belongs to the other worker: both legs of
            // the hairpin go through the kernel and the steering program.
            hairpin_http(&sub, bed);
        }
        // Sessions were logged (event_log = "sessions"), as structured records.
        let log = tr.log();
        assert!(
            log.contains("session_created"),
            "no session event in the log:\n{log}"
        );
    });
    println!("{}", stopped.stdout.trim());
    assert!(
        stopped.stdout.contains("sixgate: nat64: sessions"),
        "no nat64 figures in the summary:\n{}",
        stopped.stdout
    );
    if workers > 1 {
        let rx = per_worker_rx(&stopped);
        assert_eq!(rx.len(), usize::from(workers));
        assert!(
            rx.iter().all(|&n| n > 0),
            "every worker must have seen packets: {rx:?}"
        );
    }
}

#[test]
fn nat64_one_worker() {
    core_tests("nat64_one_worker", 1);
}

/// The same on the XDP data plane, one worker.
#[test]
fn nat64_one_worker_xdp() {
    core_tests_on("nat64_one_worker_xdp", Dataplane::Xdp, 1);
}

/// Makes the v6 host a subscriber of another /64 on the same link (the XDP
/// gateway only translates on its one IPv6 interface): `2001:db8:NET::5` on
/// its link, the gateway's `2001:db8:NET::1` beside it, and that address as the
/// source of everything the host sends to pool6. With `other_worker_than`
/// (workers, a subscriber), NET is chosen so that the new subscriber belongs
/// to another worker; else so that it shares that subscriber's worker.
fn switch_subscriber(bed: &Topology, workers: u16, than: Ipv6Addr, other: bool) -> Ipv6Addr {
    let owner = |a: Ipv6Addr| subscriber_worker(u128::from(a), 64, workers);
    let net = (2u16..200)
        .find(|&n| {
            let a = Ipv6Addr::new(0x2001, 0xdb8, n, 0, 0, 0, 0, 5);
            (owner(a) != owner(than)) == other
        })
        .expect("a /64 of the wanted worker");
    let host = Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, 5);
    let gw = Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, 1);
    let setup = || -> sixgate_netns::Result<()> {
        bed.gateway.add_address("eth6", &format!("{gw}/64"))?;
        bed.v6host.add_address("eth0", &format!("{host}/64"))?;
        bed.v6host.ip([
            "-6",
            "route",
            "replace",
            addr::POOL6,
            "via",
            &addr::GATEWAY_V6.to_string(),
            "src",
            &host.to_string(),
        ])?;
        Ok(())
    };
    setup().unwrap_or_else(|e| panic!("subscriber {host}: {e}"));
    host
}

/// Two workers on the XDP data plane: an AF_XDP socket takes what its queue
/// receives, whoever owns it, so each worker hands the packets another worker
/// owns to it through a user-space ring (docs/xdp.md, "Handoff"). The veths have
/// two queues and spread flows over both by hash, so packets of every kind
/// arrive at a worker that does not own them. Three subscribers (two of them on
/// one worker, one on the other) ping, fetch over HTTP, run iperf3 TCP both
/// ways and UDP and reach the static BIB entry by hairpinning; an IPv4 client
/// reaches the static BIB entry (whose IPv4 side belongs to the worker of its
/// IPv6 side). Both workers must have translated, and some packets must have
/// been handed over.
#[test]
fn nat64_two_workers_xdp() {
    let test = "nat64_two_workers_xdp";
    let Some(translator) = nat64_on_or_skip(test, Dataplane::Xdp, 2, &core_keys()) else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &translator, |bed, tr| {
        let log = tr.log();
        assert!(
            log.contains("handoff rings"),
            "no handoff with 2 workers:\n{log}"
        );
        let mut subscribers = vec![addr::V6_HOST];
        for round in 0..3 {
            if round > 0 {
                // Round 1: another worker's subscriber; round 2: one sharing
                // the first subscriber's worker.
                subscribers.push(switch_subscriber(bed, 2, addr::V6_HOST, round == 1));
            }
            let me = subscribers[round];
            println!(
                "subscriber {me} (worker {})",
                subscriber_worker(u128::from(me), 64, 2)
            );
            let rtts = ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3);
            println!("ping through NAT64 from {me}: RTT ms {rtts:?}");
            http_through_nat64(&bed.v6host, bed);
            if round < 2 {
                iperf3_through_nat64(&bed.v6host, bed, tr);
            }
            hairpin_http(&bed.v6host, bed);
        }
        static_bib_http(bed);
        let log = tr.log();
        assert!(
            log.contains("session_created"),
            "no session event in the log:\n{log}"
        );
    });
    println!("{}", stopped.stdout.trim());
    let rx = per_worker_rx(&stopped);
    assert_eq!(rx.len(), 2);
    assert!(
        rx.iter().all(|&n| n > 0),
        "every worker must have received packets: {rx:?}"
    );
    assert!(
        stopped.stdout.contains("handed to owner"),
        "no packet was handed to its owner:\n{}",
        stopped.stdout
    );
    assert!(
        stopped.stdout.contains("sixgate: nat64: sessions"),
        "no nat64 figures in the summary:\n{}",
        stopped.stdout
    );
}

#[test]
fn nat64_two_workers() {
    core_tests("nat64_two_workers", 2);
}

/// Strings of the big TXT record (200 bytes each): a 3.2 KB answer, which the
/// IPv4 server's kernel sends in three fragments.
const TXT_STRINGS: usize = 16;

/// dnsmasq on the IPv4 host serving `big.test` TXT ([`TXT_STRINGS`] strings)
/// over UDP with a 4096-byte EDNS buffer.
fn big_txt_server(bed: &Topology) -> sixgate_netns::Background {
    let mut record = String::from("--txt-record=big.test");
    for i in 0..TXT_STRINGS {
        record.push_str(&format!(",{i:02}{}", "x".repeat(198)));
    }
    let listen = format!("--listen-address={}", addr::V4_HOST);
    bed.v4host
        .spawn(
            "dnsmasq",
            [
                "--no-daemon",
                "--conf-file=/dev/null",
                "--no-resolv",
                "--no-hosts",
                "--bind-interfaces",
                "--port=53",
                "--edns-packet-max=4096",
                "--pid-file=",
                listen.as_str(),
                record.as_str(),
            ],
        )
        .unwrap_or_else(|e| panic!("dnsmasq (scripts/setup.sh installs it): {e}"))
}

/// `dig` for the big TXT record from `client` at `server`, UDP only.
fn dig_txt(client: &Netns, server: &str) -> String {
    let at = format!("@{server}");
    client
        .run_timeout(
            "dig",
            [
                at.as_str(),
                "big.test",
                "TXT",
                "+bufsize=4096",
                "+notcp",
                "+ignore",
                "+tries=1",
                "+time=2",
            ],
            Duration::from_secs(10),
        )
        .unwrap_or_else(|e| e.to_string())
}

/// The whole answer came over UDP: no truncation, every string.
fn assert_whole_txt(out: &str) {
    let strings = out.matches('"').count() / 2;
    assert!(
        out.contains("status: NOERROR") && !out.contains(" tc") && strings == TXT_STRINGS,
        "the whole answer over UDP ({strings} strings):\n{out}"
    );
}

/// 20 `dig`s of the big TXT record from `client` through the NAT64.
fn dig_big_txt(client: &Netns) {
    let mut last = String::new();
    for _ in 0..20 {
        last = dig_txt(client, &addr::V4_HOST_AS_V6.to_string());
        assert_whole_txt(&last);
    }
    let size = last.lines().find(|l| l.contains("MSG SIZE")).unwrap_or("");
    println!("dig big.test TXT through NAT64, 20 whole answers: {size}");
}

/// The Echo identifier of the static BIB entry the IPv4 host pings through.
const ECHO_ID: u16 = 4242;
const ECHO_ID_STR: &str = "4242";

/// RFC 6146 §3.4 with two workers: fragmented datagrams cross the NAT64 both
/// ways. `ping -s 3000` from two subscribers (one per worker), and from the
/// IPv4 host to the first through a static BIB entry for its Echo
/// identifier: requests and replies in IPv6 and IPv4 fragments, the IPv4 ones whose later fragments
/// carry no port and must reach the worker of their first (the steering
/// program's `fragments` map on TUN, the workers' memo on XDP). `dig` of a
/// 3.2 KB TXT record from an IPv4 DNS server, over UDP: 20 answers, each in
/// three IPv4 fragments. Nothing is counted as `fragment_expired`.
fn fragments_through_nat64(test: &str, dataplane: Dataplane) {
    // The IPv4 host pings the IPv6 host through a static BIB entry for one
    // Echo identifier (ping -e picks it).
    let keys = format!(
        "static_bib = [ {{ proto = \"icmp\", ipv6 = \"{}\", port6 = {ECHO_ID}, \
         ipv4 = \"{STATIC_V4}\", port4 = {ECHO_ID} }} ]\n",
        addr::V6_HOST
    );
    let Some(translator) = nat64_on_or_skip(test, dataplane, 2, &keys) else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &translator, |bed, _| {
        let _dns = big_txt_server(bed);
        // dnsmasq starts in the background: until it answers at home.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !dig_txt(&bed.v4host, &addr::V4_HOST.to_string()).contains("NOERROR") {
            assert!(
                std::time::Instant::now() < deadline,
                "dnsmasq does not answer"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        for round in 0..2 {
            let me = if round == 0 {
                addr::V6_HOST
            } else {
                switch_subscriber(bed, 2, addr::V6_HOST, true)
            };
            let size = ["-s", "3000"];
            let rtts = ping_with(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 5, &size);
            println!(
                "ping -s 3000 from {me} (worker {}): RTT ms {rtts:?}",
                subscriber_worker(u128::from(me), 64, 2)
            );
            dig_big_txt(&bed.v6host);
            if round == 0 {
                // The other way: IPv4 fragments in first (the request), the
                // static entry's worker by the steering program's map.
                let args = ["-s", "3000", "-e", ECHO_ID_STR];
                let rtts = ping_with(&bed.v4host, STATIC_V4, 5, &args);
                println!("ping -s 3000 {STATIC_V4} from the IPv4 host: RTT ms {rtts:?}");
            }
        }
    });
    println!("{}", stopped.stdout.trim());
    for reason in [
        "fragment_expired",
        "fragment_buffer_full",
        "fragmented_icmp",
    ] {
        assert!(
            !stopped.stdout.contains(reason),
            "{reason} counted:\n{}",
            stopped.stdout
        );
    }
}

#[test]
fn nat64_fragments_two_workers() {
    fragments_through_nat64("nat64_fragments_two_workers", Dataplane::Tun);
}

#[test]
fn nat64_fragments_two_workers_xdp() {
    fragments_through_nat64("nat64_fragments_two_workers_xdp", Dataplane::Xdp);
}

/// IPv4 side of the expiry test: takes one datagram, answers at once
/// (`early`), and again after `later` seconds (`late`) to the same address and
/// port; prints the peer.
const UDP_LATE_REPLY_SERVER: &str = r#"
import socket, sys, time
port, later = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", port))
data, peer = s.recvfrom(100)
print(peer[0], peer[1], flush=True)
s.sendto(b"early", peer)
time.sleep(later)
s.sendto(b"late", peer)
print("sent late", flush=True)
time.sleep(30)
"#;

/// IPv6 side: sends one datagram, then prints every answer for `wait` seconds.
const UDP_LISTEN_CLIENT: &str = r#"
import socket, sys, time
host, port, wait = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.sendto(b"hello", (host, port))
s.settimeout(0.2)
got = []
end = time.time() + wait
while time.time() < end:
    try:
        data, _ = s.recvfrom(100)
        got.append(data.decode())
    except socket.timeout:
        pass
print(" ".join(got))
"#;

/// [`UDP_LATE_REPLY_SERVER`] on the v4 host at `port`, answering again after
/// `later` s, and [`UDP_LISTEN_CLIENT`] on the v6 host listening `wait` s
/// through pool6: the server (its stdout names the peer) and what the client got.
fn udp_late_reply(bed: &Topology, port: u16, later: f64, wait: f64) -> (Background, String) {
    let server = bed
        .v4host
        .spawn(
            "python3",
            [
                "-c",
                UDP_LATE_REPLY_SERVER,
                &port.to_string(),
                &later.to_string(),
            ],
        )
        .unwrap();
    bed.v4host
        .wait_listening(Proto::Udp, port, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    let got = bed
        .v6host
        .run_timeout(
            "python3",
            [
                "-c",
                UDP_LISTEN_CLIENT,
                &addr::V4_HOST_AS_V6.to_string(),
                &port.to_string(),
                &wait.to_string(),
            ],
            Duration::from_secs(30),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    (server, got)
}

/// The UDP timeout of the expiry test, seconds.
const SHORT_UDP_TIMEOUT: u32 = 2;

#[test]
fn nat64_udp_session_expires() {
    let test = "nat64_udp_session_expires";
    let keys = format!("udp_timeout = {SHORT_UDP_TIMEOUT}\n");
    let Some(translator) = nat64_or_skip(test, 1, &keys) else {
        return;
    };
    run_bed(test, TopologyOptions::default(), &translator, |bed, _| {
        const PORT: u16 = 7010;
        // The late answer comes well after the session's timeout and the sweep.
        let later = f64::from(SHORT_UDP_TIMEOUT) + 2.5;
        let (server, got) = udp_late_reply(bed, PORT, later, later + 1.5);
        let server_out = server.stdout();
        assert!(
            server_out.contains("sent late"),
            "the server did not send its late answer: {server_out}"
        );
        let peer = server_out.lines().next().unwrap_or_default().to_owned();
        println!("mapping seen by the v4 host: {peer}; v6 host received: {got:?}");
        assert!(
            in_pool4(&peer),
            "the v4 server saw {peer}, not a pool4 address"
        );
        assert_eq!(
            got.trim(),
            "early",
            "the answer within the session must arrive, the one after its \
             {SHORT_UDP_TIMEOUT} s timeout must not"
        );
    });
}

/// IPv4 side of the limit test: answers every datagram, prints each new peer.
const UDP_ANSWER_SERVER: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
seen = set()
while True:
    data, peer = s.recvfrom(100)
    if peer not in seen:
        seen.add(peer)
        print(peer[0], peer[1], flush=True)
    s.sendto(b"ok", peer)
"#;

/// IPv6 side: `n` sockets (flows), each sends until answered (3 tries); prints
/// how many were answered.
const UDP_MANY_FLOWS_CLIENT: &str = r#"
import socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
answered = 0
for i in range(n):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    for attempt in range(3):
        s.sendto(b"x", (host, port))
        try:
            s.recvfrom(100)
            answered += 1
            break
        except socket.timeout:
            pass
print(answered)
"#;

/// Sessions one subscriber may hold in the limit test.
const LIMIT: u32 = 4;

#[test]
fn nat64_subscriber_limit_leaves_others_alone() {
    let test = "nat64_subscriber_limit_leaves_others_alone";
    let keys = format!("max_sessions_per_subscriber = {LIMIT}\n");
    let Some(translator) = nat64_or_skip(test, 1, &keys) else {
        return;
    };
    let stopped = run_bed(test, TopologyOptions::default(), &translator, |bed, _| {
        const PORT: u16 = 7011;
        let server = bed
            .v4host
            .spawn("python3", ["-c", UDP_ANSWER_SERVER, &PORT.to_string()])
            .unwrap();
        bed.v4host
            .wait_listening(Proto::Udp, PORT, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        let flows = 2 * LIMIT;
        let answered = bed
            .v6host
            .run_timeout(
                "python3",
                [
                    "-c",
                    UDP_MANY_FLOWS_CLIENT,
                    &addr::V4_HOST_AS_V6.to_string(),
                    &PORT.to_string(),
                    &flows.to_string(),
                ],
                Duration::from_secs(60),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        println!(
            "{flows} UDP flows from {}: {} answered; the v4 server saw:\n{}",
            addr::V6_HOST,
            answered.trim(),
            server.stdout()
        );
        assert_eq!(
            answered.trim(),
            LIMIT.to_string(),
            "a subscriber gets max_sessions_per_subscriber sessions, no more"
        );
        // Another subscriber is not affected.
        let (sub, a) = second_subscriber(bed, None);
        println!("second subscriber {a}:");
        http_through_nat64(&sub, bed);
        ping(&sub, &addr::V4_HOST_AS_V6.to_string(), 2);
    });
    println!("{}", stopped.stdout.trim());
}

/// Without the capabilities to load BPF, `sixgate run` in nat64 mode with two
/// workers runs one, and says why (docs/tun.md, "Fallback").
#[test]
fn nat64_without_bpf_runs_one_worker_and_says_why() {
    let test = "nat64_without_bpf_runs_one_worker_and_says_why";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let config = format!("{NAT64_TOML}\n[daemon]\nworkers = 2\n[tun]\nname = \"sgfb0\"\n");
    common::without_bpf_runs_one_worker(test, &config, "sixgate: nat64:");
}

// --- the default pool4 (no pool4 key) -----------------------------------------------

/// nat64 with no `pool4`: `sixgate run` takes the gateway's own IPv4 address,
/// ports 61001-65535, and diverts them into the device.
fn default_pool4_config(workers: u16) -> String {
    format!(
        "[translator]\nmode = \"nat64\"\npool6 = \"{}\"\n\n[nat64]\nudp_timeout = 300\n\
         \n[daemon]\nworkers = {workers}\n",
        addr::POOL6
    )
}

/// Sends a datagram to a closed port from a connected socket; prints `refused`
/// once the (translated) Port Unreachable arrives, `silence` if none does.
const UDP_REFUSED_CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.connect((sys.argv[1], int(sys.argv[2])))
s.settimeout(0.5)
for _ in range(6):
    try:
        s.send(b"anyone?")
        s.recv(100)
    except ConnectionRefusedError:
        print("refused")
        sys.exit(0)
    except socket.timeout:
        pass
print("silence")
"#;

/// A port of the default pool4.
fn in_default_ports(port: u16) -> bool {
    (61001..=65535).contains(&port)
}

/// The gateway's nftables tables, `ip -4 rule` and routing table 6464, as text.
fn diversion_state(gw: &Netns) -> (String, String, String) {
    let out = gw
        .output("nft", ["list", "tables"])
        .unwrap_or_else(|e| panic!("{e}"));
    let tables = format!("{}{}", common::text(&out.stdout), common::text(&out.stderr));
    let rules = gw
        .ip(["-4", "rule", "show"])
        .unwrap_or_else(|e| panic!("{e}"));
    let table = gw
        .ip(["-4", "route", "show", "table", "6464"])
        .unwrap_or_default();
    (tables, rules, table)
}

/// The default pool4 end to end: curl, ping, UDP and iperf3 TCP from the IPv6
/// host; the IPv4 host sees the gateway's own address with ports in
/// 61001-65535; the gateway's own traffic still works during the run; after the
/// stop the nftables table, the rules and table 6464 are gone and `ip rule` is
/// as before. On XDP there is no diversion: the program redirects only the
/// pool4's ports of the gateway's address (docs/xdp.md).
fn default_pool4_tests(test: &str, dataplane: Dataplane, workers: u16) {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    if let Err(e) = std::process::Command::new("nft").arg("--version").output() {
        println!("skipped: {test}: no nft (nftables): {e}");
        return;
    }
    let translator = Dut::Sixgate {
        binary: BIN.into(),
        dataplane,
        extra_toml: default_pool4_config(workers),
    };
    let tun = dataplane == Dataplane::Tun;
    let _turn = common::Turn::take(test);
    let bed = Topology::build(translator.bed_options(TopologyOptions::default()))
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let before = diversion_state(&bed.gateway);
    let running = bed
        .start(&translator)
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let gw_v4 = addr::GATEWAY_V4.to_string();
    let body = || {
        // The bed is ready once pool6 is routed; the diversion comes right after.
        let t0 = std::time::Instant::now();
        while tun
            && !running.log().contains("default pool4 diverted")
            && t0.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = running.log();
        assert!(
            log.contains("pool4 is the gateway's own address") && log.contains(&gw_v4),
            "the log must say which address was chosen:\n{log}"
        );
        if tun {
            let (tables, rules, table) = diversion_state(&bed.gateway);
            assert!(tables.contains("table ip sixgate"), "{tables}");
            assert!(
                rules.contains("50:\tfrom all fwmark 0x6464 lookup 6464")
                    && rules.contains("100:\tfrom all lookup local")
                    && !rules.lines().any(|l| l.starts_with("0:")),
                "{rules}"
            );
            assert!(table.contains("default dev sixgate0"), "{table}");
        }

        // TCP: curl to the v4 web server, which sees the gateway's address.
        let dir = ScratchDir::new("www").unwrap();
        let content = pattern(256 * 1024);
        dir.write("file.bin", &content).unwrap();
        let server = http_server(&bed.v4host, addr::V4_HOST.into(), &dir);
        let v4_as_v6 = format!("[{}]", addr::V4_HOST_AS_V6);
        fetch_and_compare(&bed.v6host, &v4_as_v6, &dir, "file.bin", &content);
        let seen = http_client_seen(&server);
        assert_eq!(
            seen, gw_v4,
            "the v4 server must see the gateway's own address"
        );

        // ICMP.
        ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3);
        // Fragments (RFC 6146 §3.4): the replies' later fragments carry no
        // port, and must be diverted with their first.
        let size = ["-s", "3000"];
        ping_with(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3, &size);

        // UDP: the v4 host reports the peer it saw, port included.
        const PORT: u16 = 7011;
        let (udp, got) = udp_late_reply(&bed, PORT, 0.2, 1.5);
        let peer = udp.stdout().lines().next().unwrap_or_default().to_owned();
        println!("UDP: the v4 host saw the v6 host as {peer}; it received {got:?}");
        let (a, p) = peer
            .split_once(' ')
            .unwrap_or_else(|| panic!("peer {peer:?}"));
        let p: u16 = p.trim().parse().unwrap();
        assert!(a == gw_v4 && in_default_ports(p), "peer {peer}");
        assert_eq!(got.trim(), "early late");

        // An ICMP error quoting a packet from a pool4 port (the nftables rule that
        // reads the quoted header): Port Unreachable from the v4 host reaches the
        // v6 host, translated, and a connected UDP socket sees it as refused.
        let refused = bed
            .v6host
            .run_timeout(
                "python3",
                [
                    "-c",
                    UDP_REFUSED_CLIENT,
                    &addr::V4_HOST_AS_V6.to_string(),
                    "7999",
                ],
                Duration::from_secs(20),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(refused.trim(), "refused", "no Port Unreachable came back");

        // The host's own traffic: TCP from an ephemeral port (below 61001) and an
        // echo with an identifier outside the pool4 range.
        fetch_and_compare(
            &bed.gateway,
            &addr::V4_HOST.to_string(),
            &dir,
            "file.bin",
            &content,
        );
        let out = bed
            .gateway
            .run_timeout(
                "ping",
                [
                    "-n",
                    "-c",
                    "2",
                    "-i",
                    "0.2",
                    "-W",
                    "2",
                    "-e",
                    "4242",
                    &addr::V4_HOST.to_string(),
                ],
                Duration::from_secs(20),
            )
            .unwrap_or_else(|e| panic!("the gateway's own ping: {e}"));
        assert!(out.contains("2 received"), "{out}");

        if workers > 1 && tun {
            // A subscriber of the other worker: its pool4 ports are that
            // worker's share, and steering brings their replies there.
            let (sub, a) = second_subscriber(&bed, Some((workers, addr::V6_HOST)));
            println!("second subscriber {a} (another worker)");
            ping(&sub, &addr::V4_HOST_AS_V6.to_string(), 3);
            fetch_and_compare(&sub, &v4_as_v6, &dir, "file.bin", &content);
        } else if workers > 1 {
            // XDP: the v6 host becomes a subscriber of the other worker (on
            // the same link); the handoff brings its replies there.
            let a = switch_subscriber(&bed, workers, addr::V6_HOST, true);
            println!("the v6 host as {a} (another worker)");
            ping(&bed.v6host, &addr::V4_HOST_AS_V6.to_string(), 3);
            fetch_and_compare(&bed.v6host, &v4_as_v6, &dir, "file.bin", &content);
        }

        let r = iperf3(
            &bed.v6host,
            &bed.v4host,
            addr::V4_HOST.into(),
            addr::V4_HOST_AS_V6.into(),
            &[],
        );
        assert!(r.mbit_s > 0.0, "no throughput ({})", r.detail);
        println!(
            "THROUGHPUT {} nat64 default pool4 iperf3 TCP v6 -> v4: {:.0} Mbit/s ({})",
            translator.describe(),
            r.mbit_s,
            r.detail
        );
    };
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        eprintln!("{test}: translator output:\n{}", running.log());
        drop(running);
        drop(bed);
        std::panic::resume_unwind(panic);
    }
    running
        .check_running()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let stopped = running.stop().unwrap_or_else(|e| panic!("{test}: {e}"));
    stopped
        .check_clean()
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let after = diversion_state(&bed.gateway);
    assert!(!after.0.contains("sixgate"), "nft table left: {}", after.0);
    assert_eq!(after.1, before.1, "ip rule differs after the stop");
    assert!(after.2.trim().is_empty(), "table 6464 left: {}", after.2);
    println!("{test}: nft table, rules and table 6464 removed; ip rule as before");
    println!("{}", stopped.stdout.trim());
    if workers > 1 {
        let rx = per_worker_rx(&stopped);
        assert!(
            rx.len() == usize::from(workers) && rx.iter().all(|&n| n > 0),
            "every worker must have seen packets: {rx:?}"
        );
    }
}

#[test]
fn nat64_default_pool4_one_worker() {
    default_pool4_tests("nat64_default_pool4_one_worker", Dataplane::Tun, 1);
}

#[test]
fn nat64_default_pool4_two_workers() {
    default_pool4_tests("nat64_default_pool4_two_workers", Dataplane::Tun, 2);
}

/// The same on XDP (one worker): the program redirects the gateway's address
/// only for the pool4's ports, so the gateway's own TCP and ping work beside it.
#[test]
fn nat64_default_pool4_xdp() {
    default_pool4_tests("nat64_default_pool4_xdp", Dataplane::Xdp, 1);
}

/// With two workers on XDP: each worker's share of the ports comes back to it
/// through the handoff.
#[test]
fn nat64_default_pool4_xdp_two_workers() {
    default_pool4_tests("nat64_default_pool4_xdp_two_workers", Dataplane::Xdp, 2);
}

/// A failure in the last step of the diversion (nftables refusing) undoes the
/// earlier ones: `sixgate run` exits 1 naming it, `ip rule` is as before, table
/// 6464 is empty and the device is gone.
#[test]
fn nat64_default_pool4_setup_failure_undoes_everything() {
    let test = "nat64_default_pool4_setup_failure_undoes_everything";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let _turn = common::Turn::take(test);
    let bed = Topology::build(TopologyOptions::default()).unwrap_or_else(|e| panic!("{test}: {e}"));
    let before = diversion_state(&bed.gateway);
    let dir = ScratchDir::new("failnft").unwrap();
    // An `nft` that refuses everything, first on the PATH.
    dir.write_script(
        "nft",
        "#!/bin/sh\necho 'Error: refused by the test' >&2\nexit 1\n",
        &[],
    )
    .unwrap();
    let cfg = dir
        .write(
            "sixgate.toml",
            format!("{}[tun]\nname = \"sgfail0\"\n", default_pool4_config(1)),
        )
        .unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = bed
        .gateway
        .command(BIN)
        .args(["run", "--config"])
        .arg(&cfg)
        .env("PATH", path)
        .output()
        .unwrap();
    let err = common::text(&out.stderr);
    println!("{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nftables: Error: refused by the test"),
        "the error must name the failed step:\n{err}"
    );
    let after = diversion_state(&bed.gateway);
    assert_eq!(after.1, before.1, "ip rule differs after the failed start");
    assert!(after.2.trim().is_empty(), "table 6464 left: {}", after.2);
    assert!(
        bed.gateway.link("sgfail0").unwrap().is_none(),
        "the device is left behind"
    );
}
