//! The XDP program (bpf/xdp_redirect.c) redirects exactly the packets sixgate
//! translates: run through the loaded program with `BPF_PROG_TEST_RUN`, with an
//! AF_XDP socket on queue 0 of a throw-away namespace's loopback, a frame whose
//! destination is in pool6, an EAM prefix or pool4 comes back `XDP_REDIRECT`;
//! the interfaces' own addresses, other destinations, ARP, Neighbour Discovery
//! and runts `XDP_PASS`. The default pool4's address (the host's own)
//! redirects only its ports and identifiers; the tries edited while the
//! program runs (a runtime change through the plane) take effect at once.

use std::net::{Ipv4Addr, Ipv6Addr};

use aya::programs::{TestRun, TestRunOptions};
use sixgate_dataplane::Plane;
use sixgate_testkit::{Ip4, Ip6};
use sixgate_xdp::plane::XdpPlane;
use sixgate_xdp::program::{Destinations, Program};
use sixgate_xdp::xsk::{Bind, Umem, Xsk};

const XDP_PASS: u32 = 2;
const XDP_REDIRECT: u32 = 4;

fn frame(ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

/// In a new network namespace of this thread only: lo up, index 1.
fn private_loopback() -> Result<(), String> {
    // SAFETY: unshare affects only the calling thread's network namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "no network namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    let ok = std::process::Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(()).ok_or("cannot bring lo up".into())
}

#[test]
fn redirects_exactly_what_sixgate_translates() {
    // A thread of its own: its namespace goes with it.
    std::thread::spawn(run).join().expect("test thread");
}

fn run() {
    if let Err(why) = private_loopback() {
        println!("skipped: redirects_exactly_what_sixgate_translates: {why}");
        return;
    }
    let mut dst = Destinations::from_prefixes([
        "2001:db8:64::/96",
        "2001:db8:1::/120",
        "198.18.0.0/24",
        "192.0.2.0/28",
    ])
    .unwrap();
    // One of the host's own addresses inside a redirected prefix.
    dst.local_v4.push(Ipv4Addr::new(198, 18, 0, 1));
    // The default pool4: the host's own address, its ports only.
    let own = Ipv4Addr::new(198, 51, 100, 1);
    dst.local_v4.push(own);
    dst.pool4_default = Some(own);
    dst.local_v6.push("2001:db8:64::1".parse().unwrap());
    let mut prog = match Program::load("lo", &dst) {
        Ok(p) => p,
        Err(e) => {
            println!("skipped: redirects_exactly_what_sixgate_translates: {e}");
            return;
        }
    };
    let umem = Umem::new(64).unwrap();
    let bind = Bind {
        ifindex: 1,
        queue: 0,
        ring_size: 32,
        try_zero_copy: false,
        require_zero_copy: false,
    };
    let xsk = Xsk::open(&umem, &bind, None).unwrap_or_else(|e| panic!("{e}"));
    prog.set_socket(0, xsk.fd()).unwrap();

    let h6: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    let out6: Ipv6Addr = "2001:db8:99::1".parse().unwrap();
    let h4 = Ipv4Addr::new(203, 0, 113, 7);
    let cases: Vec<(&str, Vec<u8>, u32)> = vec![
        (
            "IPv6 to pool6",
            frame(
                0x86dd,
                &Ip6::new(h6, "2001:db8:64::cb00:7107".parse().unwrap()).udp(1, 2, 8),
            ),
            XDP_REDIRECT,
        ),
        (
            "IPv6 to the EAM IPv6 prefix",
            frame(
                0x86dd,
                &Ip6::new(out6, "2001:db8:1::7".parse().unwrap()).udp(1, 2, 8),
            ),
            XDP_REDIRECT,
        ),
        (
            "IPv6 to an own address inside pool6",
            frame(
                0x86dd,
                &Ip6::new(h6, "2001:db8:64::1".parse().unwrap()).udp(1, 2, 8),
            ),
            XDP_PASS,
        ),
        (
            "IPv6 elsewhere",
            frame(0x86dd, &Ip6::new(h6, out6).udp(1, 2, 8)),
            XDP_PASS,
        ),
        (
            "IPv4 to the EAM IPv4 prefix",
            frame(
                0x0800,
                &Ip4::new(h4, Ipv4Addr::new(198, 18, 0, 5)).udp(1, 2, 8),
            ),
            XDP_REDIRECT,
        ),
        (
            "IPv4 to pool4",
            frame(
                0x0800,
                &Ip4::new(h4, Ipv4Addr::new(192, 0, 2, 9)).udp(1, 2, 8),
            ),
            XDP_REDIRECT,
        ),
        (
            "IPv4 to an own address inside the EAM prefix",
            frame(
                0x0800,
                &Ip4::new(h4, Ipv4Addr::new(198, 18, 0, 1)).udp(1, 2, 8),
            ),
            XDP_PASS,
        ),
        (
            "IPv4 elsewhere",
            frame(
                0x0800,
                &Ip4::new(h4, Ipv4Addr::new(192, 0, 2, 99)).udp(1, 2, 8),
            ),
            XDP_PASS,
        ),
        (
            "default pool4: TCP to a pool4 port",
            frame(0x0800, &Ip4::new(h4, own).tcp(80, 61001, 8)),
            XDP_REDIRECT,
        ),
        (
            "default pool4: UDP to the last pool4 port, header with options",
            frame(
                0x0800,
                &Ip4::new(h4, own).options(&[1, 1, 1, 1]).udp(53, 65535, 8),
            ),
            XDP_REDIRECT,
        ),
        (
            "default pool4: TCP to the host's own port",
            frame(0x0800, &Ip4::new(h4, own).tcp(80, 41000, 8)),
            XDP_PASS,
        ),
        (
            "default pool4: TCP to the port below the range",
            frame(0x0800, &Ip4::new(h4, own).tcp(80, 61000, 8)),
            XDP_PASS,
        ),
        (
            "default pool4: Echo Reply with a pool4 identifier",
            frame(0x0800, &Ip4::new(h4, own).echo_reply(62000, 1, 8)),
            XDP_REDIRECT,
        ),
        (
            "default pool4: Echo Reply to the host's own ping",
            frame(0x0800, &Ip4::new(h4, own).echo_reply(4242, 1, 8)),
            XDP_PASS,
        ),
        (
            "default pool4: Echo Request (the host answers it)",
            frame(0x0800, &Ip4::new(h4, own).echo_request(62000, 1, 8)),
            XDP_PASS,
        ),
        (
            "default pool4: Port Unreachable quoting UDP from a pool4 port",
            frame(
                0x0800,
                &Ip4::new(h4, own).icmp_error(3, 3, [0; 4], &Ip4::new(own, h4).udp(62000, 53, 8)),
            ),
            XDP_REDIRECT,
        ),
        (
            "default pool4: Time Exceeded quoting the host's own TCP",
            frame(
                0x0800,
                &Ip4::new(h4, own).icmp_error(11, 0, [0; 4], &Ip4::new(own, h4).tcp(40000, 80, 8)),
            ),
            XDP_PASS,
        ),
        (
            "default pool4: Time Exceeded quoting an Echo with a pool4 identifier",
            frame(
                0x0800,
                &Ip4::new(h4, own).icmp_error(
                    11,
                    0,
                    [0; 4],
                    &Ip4::new(own, h4).echo_request(61500, 1, 8),
                ),
            ),
            XDP_REDIRECT,
        ),
        (
            "default pool4: a non-first fragment (no port)",
            frame(
                0x0800,
                &Ip4::new(h4, own)
                    .df(false)
                    .fragment(17, 64, false, &[0; 16]),
            ),
            XDP_PASS,
        ),
        ("ARP", frame(0x0806, &[0; 28]), XDP_PASS),
        ("IPv6 runt", frame(0x86dd, &[0x60; 20]), XDP_PASS),
        ("IPv4 runt", frame(0x0800, &[0x45; 12]), XDP_PASS),
    ];
    for (what, f, want) in cases {
        let got = prog
            .program()
            .test_run(TestRunOptions {
                data_in: Some(&f),
                ..TestRunOptions::default()
            })
            .expect("BPF_PROG_TEST_RUN")
            .return_value;
        assert_eq!(got, want, "{what}");
    }

    // A runtime change (docs/control.md): the plane edits the tries under the
    // running program. A new EAM entry is redirected at once, a removed one
    // no more; the host's own addresses and the default pool4's keep their
    // values, even when a change names them.
    let cfg = |eam: &str, pool4: &str| {
        let text = format!(
            "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\
             eam = [{eam}]\n{pool4}"
        );
        sixgate_config::parse(&text, "t.toml")
            .unwrap_or_else(|e| panic!("{e}"))
            .config
    };
    let first = r#"{ ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" }"#;
    let more = r#", { ipv4 = "192.0.2.96/28", ipv6 = "2001:db8:7::/124" },
                  { ipv4 = "198.51.100.1/32", ipv6 = "2001:db8:8::1/128" }"#;
    let (old, new) = (cfg(first, ""), cfg(&format!("{first}{more}"), ""));
    let tries = vec![prog.take_tries().expect("the tries")];
    let mut plane = XdpPlane::new(tries, &dst, true, ["lo".into(), "lo".into()]);
    // What a file leaves out of a change is filled in as at start: each
    // side's MTU from its interface, read now.
    let mut filled = cfg(first, "");
    plane.complete(&mut filled).unwrap();
    let lo = Some(65535);
    assert_eq!((filled.ipv6_mtu, filled.ipv4_mtu), (lo, lo));
    let run = |f: &[u8]| {
        prog.program()
            .test_run(TestRunOptions {
                data_in: Some(f),
                ..TestRunOptions::default()
            })
            .expect("BPF_PROG_TEST_RUN")
            .return_value
    };
    let elsewhere = frame(
        0x0800,
        &Ip4::new(h4, Ipv4Addr::new(192, 0, 2, 99)).udp(1, 2, 8),
    );
    let own_port = frame(0x0800, &Ip4::new(h4, own).tcp(80, 41000, 8));
    let mut warn = Vec::new();
    assert_eq!((run(&elsewhere), run(&own_port)), (XDP_PASS, XDP_PASS));
    plane.apply(&old, &new, &mut warn).unwrap();
    assert_eq!(
        (run(&elsewhere), run(&own_port)),
        (XDP_REDIRECT, XDP_PASS),
        "after eam add"
    );
    plane.apply(&new, &old, &mut warn).unwrap();
    assert!(warn.is_empty(), "{warn:?}");
    assert_eq!(
        (run(&elsewhere), run(&own_port)),
        (XDP_PASS, XDP_PASS),
        "after eam remove"
    );
    // The default pool4's ports still go to sixgate.
    let pool4_port = frame(0x0800, &Ip4::new(h4, own).tcp(80, 61001, 8));
    assert_eq!(run(&pool4_port), XDP_REDIRECT);
}

/// A sixgate program left on an interface by a crashed run (attached the old
/// way, over netlink, so the kernel did not take it off with the process) is
/// removed when sixgate attaches, and sixgate's own program goes on; detaching
/// leaves the interface bare.
#[test]
fn stale_program_is_replaced_and_detach_leaves_nothing() {
    std::thread::spawn(stale).join().expect("test thread");
}

fn ip(args: &[&str]) -> bool {
    std::process::Command::new("ip")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

fn xdp_attached(dev: &str) -> bool {
    let out = std::process::Command::new("ip")
        .args(["-d", "link", "show", "dev", dev])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
}

fn stale() {
    if let Err(why) = private_loopback() {
        println!("skipped: stale_program_is_replaced_and_detach_leaves_nothing: {why}");
        return;
    }
    assert!(ip(&[
        "link", "add", "sgx0", "type", "veth", "peer", "name", "sgx1"
    ]));
    assert!(ip(&["link", "set", "sgx0", "up"]));
    assert!(ip(&["link", "set", "sgx1", "up"]));
    let object = concat!(env!("OUT_DIR"), "/xdp_redirect.o");
    if !ip(&[
        "link",
        "set",
        "dev",
        "sgx0",
        "xdpgeneric",
        "obj",
        object,
        "sec",
        "xdp",
    ]) {
        println!("skipped: this ip cannot load XDP objects (iproute2 without libbpf)");
        return;
    }
    assert!(xdp_attached("sgx0"), "the stale program is on");
    let dst = Destinations::from_prefixes(["2001:db8:64::/96"]).unwrap();
    let mut prog = match Program::load("sgx0", &dst) {
        Ok(p) => p,
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    prog.attach(sixgate_config::XdpAttach::Generic)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(xdp_attached("sgx0"), "sixgate's program is on");
    prog.detach().unwrap();
    assert!(!xdp_attached("sgx0"), "nothing left after detach");
}
