//! PREF64 Router Advertisements (RFC 8781) end to end: `sixgate run` in
//! `mode = "nat64"` on the namespace bed with `[pref64] interface` = the gateway's
//! link to the IPv6-only host. On that host a raw ICMPv6 socket (python3) reads
//! the RAs: the first comes unsolicited at start-up; it then sends a Router
//! Solicitation and the answer comes within seconds (not the 16 s of the next
//! initial RA). Both must come from a link-local address with hop limit 255, and
//! their PREF64 option must decode to pool6 with the configured lifetime.
//!
//! Needs root and `ip netns` (else it prints `skipped:` and passes).

use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

use sixgate_netns::{
    Dataplane, Dut, NAT64_TOML, Topology, TopologyOptions, addr, check_host, ifname,
};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// Reads two RAs on eth0, soliciting after the first; prints one line per RA:
/// `ra SOURCE HOPLIMIT SECONDS_SINCE_SOLICITATION (or `unsolicited`) HEX`.
const LISTENER: &str = r#"
import socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
s.settimeout(30)
print('ready', flush=True)
got, t_rs = 0, None
while got < 2:
    data, anc, _, src = s.recvmsg(1500, 256)
    if data[0] != 134:
        continue
    hl = [int.from_bytes(d, sys.byteorder) for _, t, d in anc if t == socket.IPV6_HOPLIMIT]
    since = 'unsolicited' if t_rs is None else '%.2f' % (time.monotonic() - t_rs)
    print('ra', src[0], hl[0] if hl else -1, since, data.hex(), flush=True)
    got += 1
    if got == 1:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        s.sendto(bytes([133, 0, 0, 0, 0, 0, 0, 0]), ('ff02::2%eth0', 0))
        t_rs = time.monotonic()
"#;

/// RFC 8781 §4: prefix, length and lifetime of the PREF64 option among an RA's
/// options (after its 16-octet header).
fn pref64_of(ra: &[u8]) -> Option<(Ipv6Addr, u8, u16)> {
    let mut opts = &ra[16..];
    while opts.len() >= 8 && opts[1] != 0 {
        let len = usize::from(opts[1]) * 8;
        if opts[0] == 38 && len == 16 && opts.len() >= 16 {
            let word = u16::from_be_bytes([opts[2], opts[3]]);
            let plen = [96, 64, 56, 48, 40, 32].get(usize::from(word & 7))?;
            let mut a = [0u8; 16];
            a[..12].copy_from_slice(&opts[4..16]);
            return Some((Ipv6Addr::from(a), *plen, (word >> 3) * 8));
        }
        opts = &opts[len.min(opts.len())..];
    }
    None
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn rfc8781_host_learns_pool6_from_router_advertisements() {
    let test = "rfc8781_host_learns_pool6_from_router_advertisements";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    let translator = Dut::Sixgate {
        binary: BIN.into(),
        dataplane: Dataplane::Tun,
        extra_toml: format!(
            "{NAT64_TOML}\n[pref64]\ninterface = \"{}\"\ninterval = 600\nlifetime = 1800\n",
            ifname::GATEWAY_V6
        ),
    };
    let _turn = common::Turn::take(test);
    let bed = Topology::build(TopologyOptions::default()).unwrap();
    // Listening before sixgate starts, so the start-up RA is the first one seen.
    let listener = bed.v6host.spawn("python3", ["-c", LISTENER]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !listener.stdout().starts_with("ready") {
        assert!(Instant::now() < deadline, "listener: {}", listener.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let running = bed.start(&translator).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while listener.stdout().matches("\nra ").count() < 2 {
        if Instant::now() > deadline {
            panic!(
                "two RAs expected: {}{}\nsixgate: {}",
                listener.stdout(),
                listener.stderr(),
                running.log()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = listener.stdout();
    let stopped = running.stop().unwrap();
    stopped.check_clean().unwrap();
    let ras: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("ra "))
        .map(|l| l.split(' ').collect())
        .collect();
    let pool6: Ipv6Addr = addr::POOL6.split('/').next().unwrap().parse().unwrap();
    for ra in &ras {
        let [_, src, hops, _, body] = ra[..] else {
            panic!("{ra:?}")
        };
        assert!(
            src.starts_with("fe80:"),
            "RFC 4861 §6.1.2: from link-local, {src}"
        );
        assert_eq!(hops, "255", "RFC 4861 §6.1.2: hop limit 255");
        let body = hex(body);
        assert_eq!(
            body[6..8],
            [0, 0],
            "router lifetime 0: not a default router"
        );
        assert_eq!(pref64_of(&body), Some((pool6, 96, 1800)), "{ra:?}");
    }
    assert_eq!(
        ras[0][3], "unsolicited",
        "the first RA is the start-up one, unsolicited"
    );
    let answered_after: f64 = ras[1][3].parse().unwrap();
    println!("{test}: the solicited RA came {answered_after:.2} s after the RS");
    assert!(
        answered_after < 10.0,
        "RFC 4861 §6.2.6: the RS is answered well before the next periodic RA"
    );
    let summary = stopped.stdout;
    assert!(summary.contains("sixgate pref64: "), "{summary}");
    assert!(summary.contains(", 0 send errors"), "{summary}");
    assert!(!summary.contains("Pref64Stats"), "{summary}");
}
