//! 464XLAT end to end (RFC 6877; the set-up of Lencse & Nagy 2022): an IPv4-only
//! client reaches an IPv4-only server across an IPv6-only core, through sixgate as
//! the CLAT (`mode = "clat"`, PLAT prefix discovered with RFC 7050 from dnsmasq in
//! the core) and sixgate as the PLAT. The chain is `sixgate_netns::chain`.
//!
//! The PLAT is picked by `SIXGATE_XLAT_PLAT`: `nat64` (the default), stateful
//! NAT64 (RFC 6146) as 464XLAT has it, or `siit`, a stateless stand-in with an EAM
//! entry for the CLAT's prefix. Both show the client to the server as an address
//! in 198.18.0.0/24.
//!
//! ```text
//! cargo test -p sixgate --test xlat464 -- --nocapture
//! SIXGATE_XLAT_PLAT=siit cargo test -p sixgate --test xlat464 -- --nocapture
//! ```
//!
//! Skips (printing `skipped: <test>: <reason>` and passing) only when the machine
//! cannot make namespaces. Missing tools (dnsmasq, ping, curl, python3, iperf3)
//! are failures: `scripts/setup.sh` installs them. Tests take turns (the shared
//! `SERIAL` lock), as in `e2e.rs`; clients and servers are the shared ones of
//! `common/`.

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Turn, chain_http_fetch, iperf3, ping, ping_with, stop_cleanly};
use sixgate_netns::chain::{CLAT_TOML, Chain, Plat, addr, ifname, ipv4only_hosts};
use sixgate_netns::{
    Background, Dataplane, RunningDut, ScratchDir, Stopped, check_host, start_sixgate_with_config,
};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// Environment variable that picks the PLAT: `nat64` (default) or `siit`.
const ENV_PLAT: &str = "SIXGATE_XLAT_PLAT";

fn plat() -> Plat {
    match std::env::var(ENV_PLAT).as_deref().map(str::trim) {
        Ok("nat64") | Ok("") | Err(_) => Plat::Nat64,
        Ok("siit") => Plat::SiitStandIn,
        Ok(other) => panic!("{ENV_PLAT}={other:?}: expected \"nat64\" or \"siit\""),
    }
}

/// The running chain a test body gets.
struct Running<'a> {
    chain: &'a Chain,
    clat: RunningDut<'a>,
    plat: RunningDut<'a>,
    dns: Background,
    plat_kind: Plat,
}

impl Running<'_> {
    /// Where the server sees the client's connections come from.
    fn client_seen_by_server_ok(&self, seen: &str) -> bool {
        let Ok(a) = seen.parse::<Ipv4Addr>() else {
            return false;
        };
        match self.plat_kind {
            Plat::SiitStandIn => a == addr::CLIENT_AS_V4_SIIT,
            Plat::Nat64 => a.octets()[..3] == [198, 18, 0],
        }
    }

    fn logs(&self) -> String {
        format!(
            "--- CLAT:\n{}\n--- PLAT:\n{}\n--- dnsmasq:\n{}",
            self.clat.log(),
            self.plat.log(),
            self.dns.stderr()
        )
    }
}

/// Build the chain, start dnsmasq, the PLAT and the CLAT, run `body`, stop both
/// translators (they must stop cleanly) and check that the namespaces are gone.
fn with_chain(test: &str, body: impl FnOnce(&Running)) {
    with_chain_on(test, Dataplane::Tun, Dns::Fixed, body);
}

/// Where the CLAT runs: on a data plane, or on TUN behind the TC fast path
/// (`fastpath = "tc"` on both its interfaces, docs/fastpath.md).
#[derive(Clone, Copy)]
enum ClatOn {
    Plane(Dataplane),
    FastPath,
}

impl From<Dataplane> for ClatOn {
    fn from(d: Dataplane) -> ClatOn {
        ClatOn::Plane(d)
    }
}

impl ClatOn {
    fn start<'a>(self, chain: &'a Chain, bin: &Path) -> sixgate_netns::Result<RunningDut<'a>> {
        match self {
            ClatOn::Plane(d) => chain.start_clat_on(bin, d),
            ClatOn::FastPath => {
                let config = format!(
                    "{CLAT_TOML}\n[daemon]\nfastpath = \"tc\"\nfastpath_interfaces = [\"{}\", \"{}\"]\n",
                    ifname::CLAT_UPLINK,
                    ifname::CLAT_LAN
                );
                start_sixgate_with_config(&chain.clat, bin, &config, &["0.0.0.0/0", addr::CLAT_V6])
            }
        }
    }
}

/// What the core's DNS server answers for `ipv4only.arpa`.
enum Dns<'a> {
    /// The PLAT prefix, TTL 300 s.
    Fixed,
    /// What this hosts file says, with this TTL (`Chain::start_dns_from`).
    From(&'a Path, u32),
}

/// [`with_chain`] with the CLAT on `clat_on` and DNS answers `dns`; how the
/// CLAT stopped (`None`: skipped).
fn with_chain_on(
    test: &str,
    clat_on: impl Into<ClatOn>,
    dns: Dns,
    body: impl FnOnce(&Running),
) -> Option<Stopped> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    let mut turn = Turn::take(test);
    let plat_kind = plat();
    let chain = Chain::build().unwrap_or_else(|e| panic!("{test}: {e}"));
    turn.expect_gone(chain.namespaces());
    let dns = match dns {
        Dns::Fixed => chain.start_dns(),
        Dns::From(hosts, ttl) => chain.start_dns_from(hosts, ttl),
    };
    let dns = dns.unwrap_or_else(|e| panic!("{test}: dnsmasq (scripts/setup.sh installs it): {e}"));
    let bin = Path::new(BIN);
    let plat = chain
        .start_plat(bin, plat_kind)
        .unwrap_or_else(|e| panic!("{test}: PLAT: {e}"));
    let clat = clat_on
        .into()
        .start(&chain, bin)
        .unwrap_or_else(|e| panic!("{test}: CLAT: {e}"));
    println!(
        "{test}: PLAT {} ready in {} ms, CLAT ready in {} ms (discovery included)\n{}",
        plat_kind.describe(),
        plat.ready_after().as_millis(),
        clat.ready_after().as_millis(),
        chain.describe()
    );
    let running = Running {
        chain: &chain,
        clat,
        plat,
        dns,
        plat_kind,
    };
    turn.run(|| running.logs(), || body(&running));
    let clat = stop_both(test, running);
    drop(chain);
    turn.finish();
    Some(clat)
}

/// Stop both translators (each must stop cleanly) and dnsmasq; how the CLAT
/// stopped.
fn stop_both(test: &str, running: Running) -> Stopped {
    let Running {
        clat, plat, dns, ..
    } = running;
    let mut clat_stopped = None;
    for (what, t) in [("CLAT", clat), ("PLAT", plat)] {
        let stopped = stop_cleanly(test, what, t);
        if let Some(s) = &stopped.tun_stats {
            println!(
                "{test}: {what} TUN: {} packets in, {} out; {}",
                s.tx_packets,
                s.rx_packets,
                stopped.stdout.trim()
            );
        }
        clat_stopped.get_or_insert(stopped);
    }
    drop(dns);
    clat_stopped.expect("the CLAT stopped first")
}

/// RFC 7050: the CLAT asked the core's DNS server, found the PLAT prefix and
/// uses it instead of its (unroutable here) fallback.
#[test]
fn clat_discovers_the_plat_prefix() {
    with_chain("clat_discovers_the_plat_prefix", |r| {
        let log = r.clat.log();
        let want = format!(
            "ipv4only.arpa via [{}]:53 reveals PLAT prefix {p}; using {p}",
            addr::DNS_SERVER,
            p = addr::PLAT_PREFIX
        );
        assert!(log.contains(&want), "CLAT log lacks {want:?}:\n{log}");
        let line = log.lines().find(|l| l.contains(&want)).unwrap_or_default();
        println!("CLAT: {line}");
        // RFC 7050 §3 / RFC 8880: the answer's lifetime is logged (dnsmasq: 300 s).
        assert!(line.contains("ttl_s=300"), "{line}");
        assert!(!log.contains("fallback"), "{log}");
        let dns = r.dns.stderr();
        assert!(
            dns.contains("query[AAAA] ipv4only.arpa"),
            "dnsmasq saw no query:\n{dns}"
        );
    });
}

/// RFC 7050 §3: the CLAT asks again before the answer's TTL (2 s here) runs out
/// and follows a changed prefix. It starts on a prefix nobody serves (ping
/// fails), the DNS answer then changes to the PLAT's prefix, and without a
/// restart ping gets through.
#[test]
fn clat_follows_a_changed_plat_prefix() {
    follows_a_changed_plat_prefix("clat_follows_a_changed_plat_prefix", Dataplane::Tun);
}

/// RFC 7050 §3 with the CLAT on the TC fast path: the new prefix reaches the
/// program through the running configuration (as a reload does), and the
/// pings after the change are translated there.
#[test]
fn clat_on_the_fast_path_follows_a_changed_plat_prefix() {
    let test = "clat_on_the_fast_path_follows_a_changed_plat_prefix";
    let Some(stopped) = follows_a_changed_plat_prefix(test, ClatOn::FastPath) else {
        return;
    };
    // Six pings got through after the change (the one before it failed).
    common::assert_fast_path_both_ways(test, "CLAT", &stopped, 6);
}

fn follows_a_changed_plat_prefix(test: &str, clat_on: impl Into<ClatOn>) -> Option<Stopped> {
    let dir = ScratchDir::new("xlat7050").unwrap();
    let hosts = dir.write("hosts", ipv4only_hosts("2001:db8:65::")).unwrap();
    with_chain_on(test, clat_on, Dns::From(&hosts, 2), |r| {
        let server = addr::SERVER.to_string();
        let log = r.clat.log();
        assert!(log.contains("using 2001:db8:65::/96"), "{log}");
        let out = r.chain.client.run_timeout(
            "ping",
            ["-n", "-c", "1", "-W", "1", &server],
            Duration::from_secs(5),
        );
        assert!(out.is_err(), "ping through an unserved prefix: {out:?}");
        std::fs::write(&hosts, ipv4only_hosts("2001:db8:64::")).unwrap();
        // dnsmasq re-reads --addn-hosts files on SIGHUP.
        let pid = r.dns.pid().to_string();
        let hup = std::process::Command::new("kill")
            .args(["-HUP", &pid])
            .status();
        assert!(hup.is_ok_and(|s| s.success()), "kill -HUP {pid}");
        let want = format!(
            "PLAT prefix changed from 2001:db8:65::/96 to {}",
            addr::PLAT_PREFIX
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while !r.clat.log().contains(&want) {
            assert!(Instant::now() < deadline, "no refresh:\n{}", r.logs());
            std::thread::sleep(Duration::from_millis(100));
        }
        let rtts = ping(&r.chain.client, &server, 3);
        println!("after the change, ping {server}: RTT {rtts:?} ms");
        // A reload keeps the prefix the refresh found, not the start-up one.
        let sock = r.clat.api_socket().expect("the CLAT's API socket");
        let out = std::process::Command::new(BIN)
            .args(["reload", "--socket"])
            .arg(sock)
            .output()
            .unwrap();
        assert!(out.status.success(), "reload: {out:?}");
        let rtts = ping(&r.chain.client, &server, 3);
        println!("after a reload, ping {server}: RTT {rtts:?} ms");
    })
}

/// ICMP Echo through both translators: ICMPv4 → ICMPv6 (CLAT) → ICMPv4 (PLAT)
/// and back (RFC 7915 §4.2, §5.2).
#[test]
fn ping_client_to_server() {
    with_chain("ping_client_to_server", |r| {
        let rtts = ping(&r.chain.client, &addr::SERVER.to_string(), 5);
        println!("ping {}: RTT {rtts:?} ms", addr::SERVER);
    });
}

/// A 3000-byte ping across the chain: the client's request and the server's
/// reply leave their hosts in fragments, which cross the CLAT (stateless) and
/// the PLAT (stateful NAT64, RFC 6146 §3.4 and RFC 7915 §4.2/§5.2: the first
/// fragment's identifier mapped before it waits for its length).
#[test]
fn ping_large_client_to_server() {
    with_chain("ping_large_client_to_server", |r| {
        let size = ["-s", "3000"];
        let rtts = ping_with(&r.chain.client, &addr::SERVER.to_string(), 5, &size);
        println!("ping -s 3000 {}: RTT {rtts:?} ms", addr::SERVER);
    });
}

/// `python3 -m http.server` on the server, curl on the client: a 1 MiB file
/// fetched across the chain, bytes compared; the server's access log shows the
/// client as the PLAT's IPv4 address for it.
#[test]
fn http_client_to_server() {
    with_chain("http_client_to_server", |r| {
        let seen = chain_http_fetch(r.chain, "xlathttp");
        assert!(
            r.client_seen_by_server_ok(&seen),
            "the server saw the client as {seen}"
        );
        println!("the server saw the client as {seen}");
    });
}

fn iperf3_test(test: &str, what: &str, args: &'static [&'static str]) {
    iperf3_test_on(test, Dataplane::Tun, what, args);
}

fn iperf3_test_on(test: &str, clat_on: Dataplane, what: &str, args: &'static [&'static str]) {
    with_chain_on(test, clat_on, Dns::Fixed, |r| {
        let server: IpAddr = addr::SERVER.into();
        let m = iperf3(&r.chain.client, &r.chain.server, server, server, args);
        let (mbit_s, detail) = (m.mbit_s, m.detail);
        assert!(mbit_s > 0.0, "{what}: nothing arrived");
        println!(
            "THROUGHPUT {what} ({}): {mbit_s:.0} Mbit/s, {detail}",
            r.plat_kind.describe()
        );
    });
}

#[test]
fn iperf3_tcp_client_to_server() {
    iperf3_test(
        "iperf3_tcp_client_to_server",
        "464XLAT TCP client -> server",
        &[],
    );
}

#[test]
fn iperf3_tcp_server_to_client_reverse() {
    iperf3_test(
        "iperf3_tcp_server_to_client_reverse",
        "464XLAT TCP server -> client (-R)",
        &["-R"],
    );
}

#[test]
fn iperf3_udp_client_to_server() {
    iperf3_test(
        "iperf3_udp_client_to_server",
        "464XLAT UDP client -> server, 200 Mbit/s offered",
        &["-u", "-b", "200M", "-l", "1200"],
    );
}

/// The CLAT on the XDP data plane (docs/xdp.md): ping across the chain.
#[test]
fn ping_client_to_server_xdp_clat() {
    with_chain_on(
        "ping_client_to_server_xdp_clat",
        Dataplane::Xdp,
        Dns::Fixed,
        |r| {
            let rtts = ping(&r.chain.client, &addr::SERVER.to_string(), 5);
            println!("ping {} (CLAT on XDP): RTT {rtts:?} ms", addr::SERVER);
        },
    );
}

/// The CLAT on XDP: TCP both ways with iperf3.
#[test]
fn iperf3_tcp_xdp_clat() {
    iperf3_test_on(
        "iperf3_tcp_xdp_clat",
        Dataplane::Xdp,
        "464XLAT TCP client -> server, CLAT on XDP",
        &[],
    );
    iperf3_test_on(
        "iperf3_tcp_xdp_clat_reverse",
        Dataplane::Xdp,
        "464XLAT TCP server -> client (-R), CLAT on XDP",
        &["-R"],
    );
}

/// RFC 6877 on the TC fast path (docs/fastpath.md): the CLAT with
/// `fastpath = "tc"` on both its interfaces, its PLAT prefix discovered
/// (RFC 7050) before the program was loaded. Ping and a 1 MiB HTTP fetch
/// cross the chain, and the program's counters at exit show it translated
/// both ways (the client's ICMPv4 and TCP to IPv6, the replies back).
#[test]
fn ping_and_http_through_a_clat_on_the_fast_path() {
    let test = "ping_and_http_through_a_clat_on_the_fast_path";
    let stopped = with_chain_on(test, ClatOn::FastPath, Dns::Fixed, |r| {
        let log = r.clat.log();
        assert!(
            log.contains("fast path: TC program attached"),
            "the CLAT runs without the fast path:\n{log}"
        );
        let rtts = ping(&r.chain.client, &addr::SERVER.to_string(), 5);
        println!(
            "ping {} (CLAT on the fast path): RTT {rtts:?} ms",
            addr::SERVER
        );
        let seen = chain_http_fetch(r.chain, "xlatfast");
        assert!(r.client_seen_by_server_ok(&seen), "the server saw {seen}");
    });
    let Some(stopped) = stopped else {
        return;
    };
    common::assert_fast_path_both_ways(test, "CLAT", &stopped, 5);
}
