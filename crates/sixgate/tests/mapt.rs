//! MAP-T end to end (RFC 7599): an IPv4 LAN host behind sixgate as a MAP-T CE
//! (`mode = "mapt-ce"`, NAPT44 built in), an IPv6-only core, sixgate as the MAP-T
//! BR (`mode = "mapt-br"`) and an IPv4-only server. The namespaces are the
//! 464XLAT chain's (`sixgate_netns::chain`, [`Chain::build_mapt`]); the domain is
//! Lencse & Nagy's example with the chain's addresses (BMR 2001:db8:ce::/51 ↔
//! 198.18.0.0/24, 13 EA bits, a = 0), so the server sees 198.18.0.8 with a port of
//! the CE's set (PSID 27: 55296–57343; the second CE, PSID 28: 57344–59391).
//!
//! ```text
//! cargo test -p sixgate --test mapt -- --nocapture
//! ```
//!
//! Each test runs on every data plane (BR and CE on TUN, then both on XDP,
//! `TEST[tun]`, `TEST[xdp]`) unless `SIXGATE_E2E_DATAPLANE` names some, as the
//! e2e suite does.
//!
//! Skips (printing `skipped: <test>: <reason>` and passing) only when the machine
//! cannot make namespaces; missing tools (ping, curl, python3, iperf3) are
//! failures. Tests take turns (the shared `SERIAL` lock).

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;

use common::{Turn, chain_http_fetch, iperf3, per_worker_rx, ping, ping_with, stop_cleanly};
use sixgate_netns::chain::mapt::{Customer, addr as maddr};
use sixgate_netns::chain::{Chain, addr};
use sixgate_netns::{Dataplane, ENV_DATAPLANE, Proto, RunningDut, Stopped, check_host};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// The running chain a test body gets.
struct Running<'a> {
    chain: &'a Chain,
    ce: RunningDut<'a>,
    br: RunningDut<'a>,
    /// The second customer and its CE, when asked for.
    second: Option<(&'a Customer, RunningDut<'a>)>,
}

impl Running<'_> {
    fn logs(&self) -> String {
        let mut s = format!("--- CE:\n{}\n--- BR:\n{}", self.ce.log(), self.br.log());
        if let Some((_, ce2)) = &self.second {
            s.push_str(&format!("\n--- CE 2:\n{}", ce2.log()));
        }
        s
    }
}

/// The data planes to test on: those `SIXGATE_E2E_DATAPLANE` names, or all.
fn dataplanes() -> Vec<Dataplane> {
    match std::env::var(ENV_DATAPLANE) {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|d| Dataplane::parse(d.trim()).unwrap_or_else(|e| panic!("{e}")))
            .collect(),
        _ => Dataplane::ALL.to_vec(),
    }
}

/// [`with_mapt_on`] on each data plane of [`dataplanes`]; how the BR stopped on
/// each (empty when skipped).
fn with_mapt(test: &str, two: bool, body: impl Fn(&Running)) -> Vec<Stopped> {
    dataplanes()
        .into_iter()
        .filter_map(|d| with_mapt_on(&format!("{test}[{}]", d.name()), d, two, "", &body))
        .collect()
}

/// Build the MAP-T chain (with the second customer if `two`), start the BR and
/// the CE(s) on `dataplane` (the BR with `br_extra` TOML after its
/// configuration), run `body`, stop every translator (each must stop cleanly),
/// check the namespaces are gone, and return how the BR stopped (its summary).
fn with_mapt_on(
    test: &str,
    dataplane: Dataplane,
    two: bool,
    br_extra: &str,
    body: &impl Fn(&Running),
) -> Option<Stopped> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    let mut turn = Turn::take(test);
    let chain = Chain::build_mapt().unwrap_or_else(|e| panic!("{test}: {e}"));
    let customer = two.then(|| {
        chain
            .add_mapt_customer()
            .unwrap_or_else(|e| panic!("{test}: {e}"))
    });
    turn.expect_gone(chain.namespaces());
    if let Some(c) = &customer {
        turn.expect_gone([&c.client, &c.ce]);
    }
    let bin = Path::new(BIN);
    let br = chain
        .start_mapt_br_on(bin, dataplane, br_extra)
        .unwrap_or_else(|e| panic!("{test}: BR: {e}"));
    let ce = chain
        .start_mapt_ce_on(bin, dataplane)
        .unwrap_or_else(|e| panic!("{test}: CE: {e}"));
    let second = customer.as_ref().map(|c| {
        let t = c
            .start_ce_on(bin, dataplane)
            .unwrap_or_else(|e| panic!("{test}: CE 2: {e}"));
        (c, t)
    });
    println!(
        "{test}: BR ready in {} ms, CE in {} ms\n{}",
        br.ready_after().as_millis(),
        ce.ready_after().as_millis(),
        chain.describe()
    );
    let running = Running {
        chain: &chain,
        ce,
        br,
        second,
    };
    turn.run(|| running.logs(), || body(&running));
    let br_stopped = stop_all(test, running);
    drop(customer);
    drop(chain);
    turn.finish();
    br_stopped
}

/// Stop every translator (each must stop cleanly); how the BR stopped.
fn stop_all(test: &str, running: Running) -> Option<Stopped> {
    let Running { ce, br, second, .. } = running;
    let mut all = vec![("CE", ce), ("BR", br)];
    if let Some((_, t)) = second {
        all.push(("CE 2", t));
    }
    let mut br_stopped = None;
    for (what, t) in all {
        let stopped = stop_cleanly(test, what, t);
        println!("{test}: {what}: {}", stopped.stdout.trim());
        // A CE's exit line speaks of its NAPT44 in a CE's words.
        if what.starts_with("CE") {
            assert!(
                stopped.stdout.contains("napt44: sessions")
                    && stopped.stdout.contains("LAN hosts")
                    && !stopped.stdout.contains("subscribers"),
                "{test}: {what}: {}",
                stopped.stdout
            );
        }
        if what == "BR" {
            br_stopped = Some(stopped);
        }
    }
    br_stopped
}

/// A 3000-byte ping through the CE's NAPT44 and the BR: request and reply in
/// fragments (RFC 7599 §8, RFC 7915 §4.2/§5.2).
#[test]
fn mapt_ping_large_lan_host_to_server() {
    with_mapt("mapt_ping_large_lan_host_to_server", false, |r| {
        let size = ["-s", "3000"];
        let rtts = ping_with(&r.chain.client, &addr::SERVER.to_string(), 5, &size);
        println!("ping -s 3000 {}: RTT {rtts:?} ms", addr::SERVER);
    });
}

/// ICMP Echo through the CE's NAPT44 (identifier in its port set) and both
/// translations (RFC 7915 §4.2, §5.2).
/// Pings through the CE; then `sixgate session flush` empties the CE's NAPT44
/// (the ping's session and mapping are listed, then gone) and pings work again.
#[test]
fn mapt_ping_lan_host_to_server() {
    with_mapt("mapt_ping_lan_host_to_server", false, |r| {
        let rtts = ping(&r.chain.client, &addr::SERVER.to_string(), 5);
        println!("ping {}: RTT {rtts:?} ms", addr::SERVER);
        let sock = r.ce.api_socket().expect("the CE's API socket");
        let cli = |args: &[&str]| {
            let out = std::process::Command::new(BIN)
                .args(args)
                .arg("--socket")
                .arg(sock)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{args:?}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            text
        };
        let icmp = cli(&["show", "sessions", "--protocol", "icmp", "--csv"]);
        assert!(icmp.contains(",icmp,::ffff:"), "{icmp}");
        let out = cli(&["session", "flush"]);
        assert!(
            out.starts_with("flushed ") && !out.starts_with("flushed 0 "),
            "{out}"
        );
        assert_eq!(cli(&["show", "sessions", "--csv"]).lines().count(), 1);
        // New pings get through (a busy machine may lose one).
        let out = r
            .chain
            .client
            .run_timeout(
                "ping",
                [
                    "-n",
                    "-c",
                    "3",
                    "-i",
                    "0.2",
                    "-W",
                    "2",
                    &addr::SERVER.to_string(),
                ],
                Duration::from_secs(20),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!out.contains(" 0 received"), "{out}");
    });
}

/// curl fetches 1 MiB from `python3 -m http.server`; the server sees the CE's
/// shared IPv4 address.
#[test]
fn mapt_http_lan_host_to_server() {
    with_mapt("mapt_http_lan_host_to_server", false, |r| {
        let seen = chain_http_fetch(r.chain, "mapthttp");
        assert_eq!(seen, maddr::SHARED_V4.to_string(), "the server saw {seen}");
        println!("the server saw the LAN host as {seen}");
    });
}

fn iperf3_test(test: &str, what: &str, args: &'static [&'static str]) {
    with_mapt(test, false, |r| {
        let server: IpAddr = addr::SERVER.into();
        let m = iperf3(&r.chain.client, &r.chain.server, server, server, args);
        assert!(m.mbit_s > 0.0, "{what}: nothing arrived");
        println!("THROUGHPUT {what}: {:.0} Mbit/s, {}", m.mbit_s, m.detail);
    });
}

#[test]
fn mapt_iperf3_tcp_lan_host_to_server() {
    iperf3_test(
        "mapt_iperf3_tcp_lan_host_to_server",
        "MAP-T CE+BR TCP client -> server",
        &[],
    );
}

#[test]
fn mapt_iperf3_udp_lan_host_to_server() {
    iperf3_test(
        "mapt_iperf3_udp_lan_host_to_server",
        "MAP-T CE+BR UDP client -> server, 200 Mbit/s offered",
        &["-u", "-b", "200M", "-l", "1200"],
    );
}

/// A TCP server printing each peer as `ADDR PORT`, answering one HTTP line.
const PEER_SERVER: &str = r#"
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
for _ in range(int(sys.argv[3])):
    c, a = s.accept()
    c.recv(4096)
    print(a[0], a[1], flush=True)
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()
"#;

/// Two CEs share 198.18.0.8 with PSIDs 27 and 28 (RFC 7597 §5.1), both at once:
/// the server sees one address, with ports from the two sets.
#[test]
fn mapt_two_ces_share_one_ipv4_address() {
    with_mapt("mapt_two_ces_share_one_ipv4_address", true, |r| {
        const PORT: u16 = 9000;
        const EACH: usize = 3;
        let server = r
            .chain
            .server
            .spawn(
                "python3",
                [
                    "-c",
                    PEER_SERVER,
                    &addr::SERVER.to_string(),
                    &PORT.to_string(),
                    &(2 * EACH).to_string(),
                ],
            )
            .unwrap();
        r.chain
            .server
            .wait_listening(Proto::Tcp, PORT, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        let (customer, _) = r.second.as_ref().unwrap();
        let url = format!("http://{}:{PORT}/", addr::SERVER);
        // Both LANs at the same time, several connections each.
        let clients: Vec<_> = [&r.chain.client, &customer.client]
            .into_iter()
            .flat_map(|ns| std::iter::repeat_n(ns, EACH))
            .map(|ns| ns.spawn("curl", ["-sS", "--max-time", "10", &url]).unwrap())
            .collect();
        for c in clients {
            let f = c.wait(Duration::from_secs(20)).unwrap();
            assert!(f.status.success(), "curl: {}", f.stderr);
            assert_eq!(f.stdout, "ok");
        }
        let f = server.wait(Duration::from_secs(10)).unwrap();
        let peers: Vec<(Ipv4Addr, u16)> = f
            .stdout
            .lines()
            .map(|l| {
                let (a, p) = l.split_once(' ').unwrap();
                (a.parse().unwrap(), p.parse().unwrap())
            })
            .collect();
        println!("the server saw {peers:?}");
        assert_eq!(peers.len(), 2 * EACH);
        assert!(peers.iter().all(|(a, _)| *a == maddr::SHARED_V4));
        let in1 = peers
            .iter()
            .filter(|(_, p)| maddr::CE1_PORTS.contains(p))
            .count();
        let in2 = peers
            .iter()
            .filter(|(_, p)| maddr::CE2_PORTS.contains(p))
            .count();
        assert_eq!((in1, in2), (EACH, EACH), "ports {peers:?}");
    });
}

/// Sends `count` UDP datagrams with a raw IPv6 header (any source address).
const RAW_UDP6: &str = r#"
import socket, struct, sys
src = socket.inet_pton(socket.AF_INET6, sys.argv[1])
dst = socket.inet_pton(socket.AF_INET6, sys.argv[2])
sport, dport, count = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
payload = b"spoofed!"
n = 8 + len(payload)
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
pseudo = src + dst + struct.pack("!IxxxB", n, 17)
c = csum(pseudo + struct.pack("!HHHH", sport, dport, n, 0) + payload) or 0xffff
pkt = struct.pack("!IHBB", 6 << 28, n, 17, 64) + src + dst + struct.pack("!HHHH", sport, dport, n, c) + payload
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)
for _ in range(count):
    s.sendto(pkt, (sys.argv[2], 0))
"#;

/// RFC 7597 §8.1: a packet from the CE's MAP address with a source port outside
/// its set, crafted in the core, is dropped by the BR and counted.
#[test]
fn mapt_br_drops_ports_outside_the_set() {
    const SPOOFED: u32 = 3;
    let stopped = with_mapt("mapt_br_drops_ports_outside_the_set", false, |r| {
        r.chain
            .core
            .run_timeout(
                "python3",
                [
                    "-c",
                    RAW_UDP6,
                    &maddr::CE1_MAP.to_string(),
                    &addr::SERVER_AS_V6.to_string(),
                    "1000",
                    "9",
                    &SPOOFED.to_string(),
                ],
                Duration::from_secs(10),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        // The CE still works.
        ping(&r.chain.client, &addr::SERVER.to_string(), 1);
        // Both nodes reload their own files (the [mapt] section unchanged),
        // and the path still works after.
        for node in [&r.ce, &r.br] {
            let sock = node.api_socket().expect("an API socket");
            let out = std::process::Command::new(BIN)
                .args(["reload", "--socket"])
                .arg(sock)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "reload: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ping(&r.chain.client, &addr::SERVER.to_string(), 1);
    });
    let want = format!("mapt_source_outside_port_set {SPOOFED}");
    for stopped in stopped {
        assert!(
            stopped.stdout.contains(&want),
            "the BR's summary lacks {want:?}:\n{}",
            stopped.stdout
        );
    }
}

/// UDP echo server: sends every datagram back as it came.
const UDP_ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: fragment
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    data, peer = s.recvfrom(65535)
    s.sendto(data, peer)
"#;

/// UDP client: `count` one at a time (3000 bytes, up to 3 tries each), then
/// `count` datagrams of 1500 to 4000 bytes in bursts of 10 without waiting;
/// prints how many came back intact of each.
const FRAGMENTED_UDP_CLIENT: &str = r#"
import socket, sys
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: fragment
s.connect((host, port))
s.settimeout(2)
def payload(i, size):
    return (b"%06d" % i * (size // 6 + 1))[:size]
one = 0
for i in range(count):
    p = payload(i, 3000)
    for _ in range(3):
        s.send(p)
        try:
            if s.recv(65535) == p:
                one += 1
                break
        except socket.timeout:
            pass
want = set()
got = set()
for b in range(0, count, 10):
    for i in range(b, min(b + 10, count)):
        p = payload(100000 + i, 1500 + (i * 373) % 2500)
        want.add(p)
        s.send(p)
    try:
        while len(got) < len(want):
            d = s.recv(65535)
            if d in want:
                got.add(d)
    except socket.timeout:
        pass
print(one, len(got))
"#;

/// RFC 7599 §8 on a BR with two workers: fragmented UDP both ways (the LAN host
/// and the server each send 1500 to 4000-byte datagrams, fragmented at the
/// sender) gets through, and no later fragment reaches a worker without its
/// first (`fragment_untracked`): on TUN the steering program sends every
/// fragment of a datagram to one worker; on XDP (the BR's links have two
/// queues) the worker that receives a fragment hands it to that worker.
#[test]
fn mapt_br_two_workers_fragmented_udp_both_ways() {
    const TEST: &str = "mapt_br_two_workers_fragmented_udp_both_ways";
    const PORT: u16 = 7009;
    const COUNT: usize = 60;
    let two_workers = "[daemon]\nworkers = 2\n";
    for plane in dataplanes() {
        let test = format!("{TEST}[{}]", plane.name());
        let stopped = with_mapt_on(&test, plane, false, two_workers, &|r| {
            let how = match plane {
                Dataplane::Tun => "steering program attached",
                Dataplane::Xdp => "handoff rings",
            };
            assert!(
                r.br.log().contains(how),
                "the BR did not steer:\n{}",
                r.br.log()
            );
            let _server = r
                .chain
                .server
                .spawn(
                    "python3",
                    ["-c", UDP_ECHO, &addr::SERVER.to_string(), &PORT.to_string()],
                )
                .unwrap();
            r.chain
                .server
                .wait_listening(Proto::Udp, PORT, Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("{e}"));
            let out = r
                .chain
                .client
                .run_timeout(
                    "python3",
                    [
                        "-c",
                        FRAGMENTED_UDP_CLIENT,
                        &addr::SERVER.to_string(),
                        &PORT.to_string(),
                        &COUNT.to_string(),
                    ],
                    Duration::from_secs(120),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let got: Vec<usize> = out.split_whitespace().map(|n| n.parse().unwrap()).collect();
            println!(
                "{test}: echoed intact: {} of {COUNT} one at a time, {} of {COUNT} in bursts",
                got[0], got[1]
            );
            assert_eq!(got[0], COUNT, "one at a time");
            // Bursts may lose a datagram to a full queue, never most of them.
            assert!(got[1] >= COUNT * 9 / 10, "bursts: {} of {COUNT}", got[1]);
        });
        let Some(stopped) = stopped else { return };
        assert!(
            !stopped.stdout.contains("fragment_untracked"),
            "the BR dropped later fragments:\n{}",
            stopped.stdout
        );
        match plane {
            // The datagrams' IDs and the flows' ports spread them over both workers.
            Dataplane::Tun => {
                let rx = per_worker_rx(&stopped);
                assert!(
                    rx.len() == 2 && rx.iter().all(|&n| n > 0),
                    "per worker: {rx:?}"
                );
            }
            // The NIC (the veth peer) picked the queues; about half the
            // datagrams' fragments belong to the other worker.
            Dataplane::Xdp => assert!(
                stopped.stdout.contains("handed to owner"),
                "no fragment changed workers:\n{}",
                stopped.stdout
            ),
        }
    }
}

/// Without the capabilities to load BPF, a BR with two workers runs one, and
/// says why: its fragments could not be steered to one worker (RFC 7599 §8,
/// docs/tun.md "Fallback").
#[test]
fn mapt_br_without_bpf_runs_one_worker_and_says_why() {
    let test = "mapt_br_without_bpf_runs_one_worker_and_says_why";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let config = "[translator]\nmode = \"mapt-br\"\n[mapt]\ndmr = \"2001:db8:64::/96\"\n\
                  bmr = [ { ipv6_prefix = \"2001:db8:1::/51\", ipv4_prefix = \
                  \"198.18.0.0/24\", ea_bits = 13, psid_offset = 0 } ]\n\
                  [daemon]\nworkers = 2\n[tun]\nname = \"sgfb1\"\n";
    common::without_bpf_runs_one_worker(test, config, "sixgate:");
}

/// RFC 7599 §7 on the TC fast path (docs/fastpath.md): the BR on TUN with
/// `fastpath = "tc"` on both its interfaces. Ping and a 1 MiB HTTP fetch
/// from the LAN host cross it, and the program's counters at exit show it
/// translated both ways; packets from the CE's MAP address with a source
/// port outside its set (RFC 7597 §8.1), crafted in the core, are passed up
/// by the program and dropped and counted by the BR's core as without it.
#[test]
fn mapt_br_on_the_fast_path() {
    const TEST: &str = "mapt_br_on_the_fast_path";
    const SPOOFED: u32 = 3;
    let extra = "[daemon]\nfastpath = \"tc\"\nfastpath_interfaces = [\"eth6\", \"eth4\"]\n";
    let stopped = with_mapt_on(TEST, Dataplane::Tun, false, extra, &|r| {
        let log = r.br.log();
        assert!(
            log.contains("fast path: TC program attached"),
            "the BR runs without the fast path:\n{log}"
        );
        let rtts = ping(&r.chain.client, &addr::SERVER.to_string(), 5);
        println!(
            "ping {} (BR on the fast path): RTT {rtts:?} ms",
            addr::SERVER
        );
        let seen = chain_http_fetch(r.chain, "maptfast");
        println!("the server saw the LAN host as {seen}");
        r.chain
            .core
            .run_timeout(
                "python3",
                [
                    "-c",
                    RAW_UDP6,
                    &maddr::CE1_MAP.to_string(),
                    &addr::SERVER_AS_V6.to_string(),
                    "1000",
                    "9",
                    &SPOOFED.to_string(),
                ],
                Duration::from_secs(10),
            )
            .unwrap_or_else(|e| panic!("{e}"));
    });
    let Some(stopped) = stopped else {
        return;
    };
    common::assert_fast_path_both_ways(TEST, "BR", &stopped, 5);
    let want = format!("mapt_source_outside_port_set {SPOOFED}");
    assert!(
        stopped.stdout.contains(&want),
        "the BR's summary lacks {want:?}:\n{}",
        stopped.stdout
    );
}
