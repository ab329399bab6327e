//! The steering program (bpf/steer.c) and the Rust definitions in
//! `sixgate_core::nat64::steering` pick the same worker (docs/architecture.md,
//! "Multi-core without a shared table"): random packets of every kind the
//! program parses run through the loaded program with `BPF_PROG_TEST_RUN`, and
//! the queue it returns is compared with what the Rust functions say, the packet
//! parsed independently by the testkit oracle.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use aya::programs::{TestRun, TestRunOptions};
use sixgate_core::mapt::steering::{
    flow4_worker, flow6_worker, fragment4_worker, fragment6_worker,
};
use sixgate_core::nat64::steering::{PacketOwner, port_owner, subscriber_worker};
use sixgate_core::nat64::{Deterministic, Nat64Config, Pool4Entry, PortRange, Proto, StaticBib};
use sixgate_testkit::{Ip4, Ip6, L4, Summary};
use sixgate_tun::steering::{Mode, Params, Steering};

/// splitmix64: reproducible random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn u16(&mut self) -> u16 {
        self.next() as u16
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const POOL4: [Ipv4Addr; 2] = [Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2)];
const SERVER4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 7);
const SERVER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xcb00, 0x7107);

/// A subscriber address: a few /48s, random below.
fn subscriber(r: &mut Rng) -> Ipv6Addr {
    let net = r.pick(&[1u16, 2, 0xabcd]);
    Ipv6Addr::new(
        0x2001,
        0xdb8,
        net,
        r.u16() & 0x00ff,
        r.u16(),
        r.u16(),
        r.u16(),
        r.u16(),
    )
}

/// A random packet as the kernel would route it into the TUN device.
fn packet(r: &mut Rng, statics: &[StaticBib]) -> Vec<u8> {
    let sub = subscriber(r);
    let p4 = r.pick(&POOL4);
    match r.below(13) {
        0 => Ip6::new(sub, SERVER6).udp(r.u16(), r.u16(), 8),
        1 => Ip6::new(sub, SERVER6).tcp(r.u16(), 80, 0),
        2 => Ip6::new(sub, SERVER6).echo_request(r.u16(), 1, 16),
        3 => Ip6::new(sub, SERVER6).hop_by_hop().udp(r.u16(), 53, 8),
        4 => {
            // An error from a router about a packet we sent to a subscriber.
            let inner = Ip6::new(SERVER6, sub).udp(53, r.u16(), 8);
            let router = Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, r.u16());
            let ty = r.pick(&[1u8, 3]);
            let outer = Ip6::new(router, SERVER6);
            // Also behind extension headers, which the program walks.
            let outer = match r.below(3) {
                0 => outer,
                1 => outer.hop_by_hop(),
                _ => outer.hop_by_hop().dest_opts(),
            };
            outer.icmp_error(ty, 0, [0; 4], &inner)
        }
        5 => Ip6::new(sub, SERVER6).fragment(17, 8 * (r.u16() % 100 + 1), false, 7, &[0; 16]),
        6 => Ip4::new(SERVER4, p4).udp(r.u16(), r.u16(), 8),
        7 => Ip4::new(SERVER4, p4).tcp(443, r.u16(), 0),
        8 => Ip4::new(SERVER4, p4).echo_reply(r.u16(), 1, 16),
        9 => {
            let inner = if r.below(2) == 0 {
                Ip4::new(p4, SERVER4).udp(r.u16(), 53, 8)
            } else {
                Ip4::new(p4, SERVER4).echo_request(r.u16(), 1, 8)
            };
            Ip4::new(Ipv4Addr::new(198, 51, 100, 1), p4).icmp_error(
                r.pick(&[3u8, 11]),
                0,
                [0; 4],
                &inner,
            )
        }
        10 => {
            Ip4::new(SERVER4, p4)
                .id(r.u16())
                .fragment(17, 8 * (r.u16() % 100 + 1), false, &[0; 16])
        }
        _ => {
            // A static BIB entry, directly or quoted in an error.
            let s = r.pick(statics);
            let proto = match s.proto {
                Proto::Tcp => 6,
                Proto::Udp => 17,
                Proto::Icmp => 1,
            };
            let (addr, port) = (s.v4, s.port4);
            let to = Ip4::new(SERVER4, addr);
            match (proto, r.below(2)) {
                (6, 0) => to.tcp(r.u16(), port, 0),
                (17, 0) => to.udp(r.u16(), port, 8),
                (1, 0) => to.echo_request(port, 1, 8),
                (6, _) => Ip4::new(Ipv4Addr::new(198, 51, 100, 1), addr).icmp_error(
                    3,
                    1,
                    [0; 4],
                    &Ip4::new(addr, SERVER4).tcp(port, 443, 0),
                ),
                (17, _) => Ip4::new(Ipv4Addr::new(198, 51, 100, 1), addr).icmp_error(
                    3,
                    1,
                    [0; 4],
                    &Ip4::new(addr, SERVER4).udp(port, 53, 8),
                ),
                _ => Ip4::new(Ipv4Addr::new(198, 51, 100, 1), addr).icmp_error(
                    11,
                    0,
                    [0; 4],
                    &Ip4::new(addr, SERVER4).echo_request(port, 1, 8),
                ),
            }
        }
    }
}

fn v4(a: IpAddr) -> Ipv4Addr {
    match a {
        IpAddr::V4(a) => a,
        IpAddr::V6(_) => panic!("expected IPv4"),
    }
}

fn v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V6(a) => a,
        IpAddr::V4(_) => panic!("expected IPv6"),
    }
}

/// The worker the architecture says a packet belongs to, from the Rust functions.
fn expected(s: &Summary, cfg: &Nat64Config, w: u16) -> u16 {
    let (len, block) = (cfg.subscriber_prefix_len, cfg.port_block_size);
    let det = Deterministic::plan(cfg).expect("a good formula");
    let subscriber_worker = |a: u128, len, w| {
        det.as_ref()
            .and_then(|d| d.worker(a, w))
            .unwrap_or_else(|| subscriber_worker(a, len, w))
    };
    let owner = |proto: u8, addr: Ipv4Addr, port: u16| {
        let proto = match proto {
            6 => Proto::Tcp,
            17 => Proto::Udp,
            _ => Proto::Icmp,
        };
        cfg.static_bib
            .iter()
            .find(|e| e.proto == proto && e.v4 == addr && e.port4 == port)
            .map_or_else(
                || port_owner(port, block, w),
                |e| subscriber_worker(u128::from(e.v6), len, w),
            )
    };
    match s.family {
        sixgate_testkit::Family::V6 => {
            let who = match (&s.l4, &s.inner) {
                (L4::Icmp { ty, .. }, Some(inner)) if *ty < 128 => v6(inner.dst),
                _ => v6(s.src),
            };
            subscriber_worker(u128::from(who), len, w)
        }
        sixgate_testkit::Family::V4 => {
            if let Some(f) = s.fragment
                && f.offset != 0
            {
                return (f.id % u32::from(w)) as u16;
            }
            let dst = v4(s.dst);
            match (&s.l4, &s.inner) {
                (L4::Udp { dst_port, .. }, _) => owner(17, dst, *dst_port),
                (L4::Tcp { dst_port, .. }, _) => owner(6, dst, *dst_port),
                (
                    L4::Icmp {
                        ty: 0 | 8, rest, ..
                    },
                    _,
                ) => owner(1, dst, u16::from_be_bytes([rest[0], rest[1]])),
                (L4::Icmp { .. }, Some(inner)) => match inner.l4 {
                    L4::Udp { src_port, .. } => owner(17, v4(inner.src), src_port),
                    L4::Tcp { src_port, .. } => owner(6, v4(inner.src), src_port),
                    L4::Icmp { rest, .. } => {
                        owner(1, v4(inner.src), u16::from_be_bytes([rest[0], rest[1]]))
                    }
                    L4::Other => 0,
                },
                _ => 0,
            }
        }
    }
}

fn load_or_skip(p: &Params) -> Option<Steering> {
    match Steering::load(p) {
        Ok(s) => Some(s),
        Err(e) if unsafe { libc::geteuid() } != 0 => {
            println!("skipped: not root, cannot load BPF programs ({e})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn bpf_program_and_rust_functions_pick_the_same_worker() {
    let mut r = Rng(0x5158_6a7e);
    let mut checked = 0;
    // Workers, subscriber prefix length, port-block size (0: port pairs),
    // RFC 7422 deterministic NAT over 2001:db8:1::/48 (a third of the
    // subscribers `subscriber` makes).
    for (workers, len, block, det) in [
        (2u16, 128u8, 0u16, false),
        (3, 64, 0, false),
        (4, 56, 64, false),
        (7, 48, 128, false),
        (16, 60, 0, false),
        (5, 56, 256, true),
    ] {
        let static_bib: Vec<StaticBib> = [
            (Proto::Tcp, 8080u16),
            (Proto::Udp, 5353),
            (Proto::Icmp, 77),
            (Proto::Tcp, 2),
        ]
        .iter()
        .map(|&(proto, port)| StaticBib {
            proto,
            v6: subscriber(&mut r),
            port6: port,
            v4: POOL4[0],
            port4: port,
        })
        .collect();
        let all = PortRange::new(1024, 65535);
        let cfg = Nat64Config {
            subscriber_prefix_len: len,
            port_block_size: block,
            static_bib,
            deterministic: det.then(|| (Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0), 48)),
            pool4: POOL4
                .iter()
                .map(|&a| Pool4Entry {
                    tcp: all,
                    udp: all,
                    icmp: all,
                    ..Pool4Entry::single(a)
                })
                .collect(),
            ..Nat64Config::default()
        };
        let p = Params::new(&cfg, workers);
        // The user-space copy (the XDP workers' handoff) agrees too, with or
        // without the right to load the program.
        let owner = PacketOwner::new(&cfg, workers);
        let mut rr = Rng(r.0);
        for _ in 0..120 {
            let pkt = packet(&mut rr, &cfg.static_bib);
            let summary = sixgate_testkit::check(&pkt).expect("a good packet");
            let want = expected(&summary, &cfg, workers);
            assert_eq!(owner.of(&pkt), want, "PacketOwner: {summary:?}");
        }
        let Some(steering) = load_or_skip(&p) else {
            return;
        };
        for _ in 0..120 {
            let pkt = packet(&mut r, &cfg.static_bib);
            let summary = sixgate_testkit::check(&pkt)
                .unwrap_or_else(|e| panic!("testkit built a bad packet: {e}"));
            let want = expected(&summary, &cfg, workers);
            // BPF_PROG_TEST_RUN takes an Ethernet frame and hands a socket filter
            // the data after the Ethernet header, as a TUN device does.
            let mut frame = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
            frame.extend_from_slice(if pkt[0] >> 4 == 4 {
                &[0x08, 0x00]
            } else {
                &[0x86, 0xdd]
            });
            frame.extend_from_slice(&pkt);
            let got = steering
                .program()
                .test_run(TestRunOptions {
                    data_in: Some(&frame),
                    ..TestRunOptions::default()
                })
                .expect("BPF_PROG_TEST_RUN")
                .return_value;
            assert_eq!(
                got,
                u32::from(want),
                "workers {workers}, /{len}, block {block}: {summary:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 720);
}

#[test]
fn truncated_and_unknown_packets_go_to_queue_zero() {
    let p = Params {
        mode: Mode::Nat64,
        workers: 4,
        subscriber_prefix_len: 64,
        port_group: 2,
        static_bib: Vec::new(),
        deterministic: None,
    };
    let Some(steering) = load_or_skip(&p) else {
        return;
    };
    // A port cut off, an unknown IP version, an ICMP error quoting too little.
    let udp = Ip4::new(SERVER4, POOL4[0]).udp(1, 7, 8);
    let err = Ip4::new(SERVER4, POOL4[0]).icmp_error(3, 1, [0; 4], &udp);
    for pkt in [&udp[..22], &[0x50u8; 40][..], &err[..20 + 8 + 12]] {
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x08, 0x00]);
        frame.extend_from_slice(pkt);
        let got = steering
            .program()
            .test_run(TestRunOptions {
                data_in: Some(&frame),
                ..TestRunOptions::default()
            })
            .map(|r| r.return_value);
        assert!(matches!(got, Ok(0)), "{pkt:02x?}: {got:?}");
        let owner = PacketOwner::new(&Nat64Config::default(), 4);
        assert_eq!(owner.of(pkt), 0, "PacketOwner: {pkt:02x?}");
    }
}

/// The queue the program picks for IP packet `pkt`.
fn queue_of_v4(steering: &Steering, pkt: &[u8]) -> u32 {
    let mut frame = vec![0u8; 12];
    // BPF_PROG_TEST_RUN takes an Ethernet frame and hands a socket filter the
    // data after the Ethernet header, as a TUN device does.
    frame.extend_from_slice(if pkt[0] >> 4 == 4 {
        &[0x08, 0x00]
    } else {
        &[0x86, 0xdd]
    });
    frame.extend_from_slice(pkt);
    steering
        .program()
        .test_run(TestRunOptions {
            data_in: Some(&frame),
            ..TestRunOptions::default()
        })
        .expect("BPF_PROG_TEST_RUN")
        .return_value
}

#[test]
fn static_bib_entries_added_and_removed_at_runtime_steer_their_ipv4_side() {
    let workers = 4;
    let cfg = Nat64Config {
        subscriber_prefix_len: 64,
        ..Nat64Config::default()
    };
    let p = Params::new(&cfg, workers);
    let Some(mut steering) = load_or_skip(&p) else {
        return;
    };
    // A static entry whose IPv6 side another worker owns than its port would say.
    let port = 8080;
    let by_port = port_owner(port, cfg.port_block_size, workers);
    let v6 = (1u16..)
        .map(|n| Ipv6Addr::new(0x2001, 0xdb8, n, 0, 0, 0, 0, 5))
        .find(|a| subscriber_worker(u128::from(*a), 64, workers) != by_port)
        .unwrap();
    let entry = StaticBib {
        proto: Proto::Tcp,
        v6,
        port6: 80,
        v4: POOL4[0],
        port4: port,
    };
    let pkt = Ip4::new(SERVER4, POOL4[0]).tcp_flags(40000, port, 0x02, 0);
    assert_eq!(queue_of_v4(&steering, &pkt), u32::from(by_port));
    let with = Params::new(
        &Nat64Config {
            static_bib: vec![entry],
            ..cfg.clone()
        },
        workers,
    );
    steering
        .update_static_bib(&p.static_bib, &with.static_bib)
        .unwrap();
    let owner = subscriber_worker(u128::from(v6), 64, workers);
    assert_eq!(queue_of_v4(&steering, &pkt), u32::from(owner));
    steering
        .update_static_bib(&with.static_bib, &p.static_bib)
        .unwrap();
    assert_eq!(queue_of_v4(&steering, &pkt), u32::from(by_port));
}

/// RFC 6146 §3.4 across workers: an IPv4 datagram's later fragments carry no
/// port, so the program remembers where it sent the first fragment (by
/// source, destination, protocol and Identification) and sends them there,
/// to the worker holding the mapping; a later fragment whose first it has
/// not seen goes by its Identification, as `PacketOwner` says.
#[test]
fn rfc6146_s3_4_later_fragments_follow_their_first_fragment() {
    let workers = 4u16;
    let cfg = Nat64Config::default();
    let p = Params::new(&cfg, workers);
    let Some(steering) = load_or_skip(&p) else {
        return;
    };
    let owner = PacketOwner::new(&cfg, workers);
    let mut checked = 0;
    for port in 61001u16..61041 {
        let by_port = port_owner(port, cfg.port_block_size, workers);
        // An Identification that alone would pick another worker.
        let id = (port..).find(|i| i % workers != by_port).unwrap();
        let from = Ip4::new(SERVER4, POOL4[0]).id(id).df(false);
        // UDP header (53 → port) and some data, as the first fragment.
        let mut udp = vec![0, 53];
        udp.extend_from_slice(&port.to_be_bytes());
        udp.extend_from_slice(&[0x0b, 0xc0, 0, 0]);
        udp.extend_from_slice(&[0; 16]);
        let first = from.fragment(17, 0, true, &udp);
        let middle = from.fragment(17, 24, true, &[0; 24]);
        let last = from.fragment(17, 48, false, &[0; 24]);
        // Before the first: by Identification, in the program and in Rust.
        let alone = Ip4::new(SERVER4, POOL4[0])
            .id(id.wrapping_add(4 * 1000))
            .df(false);
        let stray = alone.fragment(17, 24, false, &[0; 8]);
        let want_stray = u32::from(owner.of(&stray));
        assert_eq!(queue_of_v4(&steering, &stray), want_stray);
        assert_eq!(queue_of_v4(&steering, &first), u32::from(by_port));
        assert_eq!(u32::from(owner.of(&first)), u32::from(by_port));
        assert_eq!(queue_of_v4(&steering, &middle), u32::from(by_port));
        assert_eq!(queue_of_v4(&steering, &last), u32::from(by_port));
        assert_ne!(u32::from(owner.of(&last)), u32::from(by_port));
        checked += 1;
    }
    assert_eq!(checked, 40);
}

/// MAP-T BR traffic (docs/mapt.md): IPv4 from the Internet to a CE's shared
/// address and ports, IPv6 from MAP addresses, and fragments of both.
fn br_packet(r: &mut Rng) -> Vec<u8> {
    let ce4 = Ipv4Addr::new(198, 18, 0, r.pick(&[8u8, 9]));
    let map6 = Ipv6Addr::new(0x2001, 0xdb8, 0xce, r.u16() & 0x1fff, 0, 0xc612, 8, 0x1b);
    let data = [0u8; 24];
    match r.below(9) {
        0 => Ip4::new(SERVER4, ce4).udp(r.u16(), 55296 + r.u16() % 2048, 8),
        1 => Ip4::new(SERVER4, ce4).tcp(443, r.u16(), 0),
        2 => Ip4::new(SERVER4, ce4).echo_reply(r.u16(), 1, 16),
        // A first fragment (MF, offset 0), a middle one, a last one.
        3 => Ip4::new(SERVER4, ce4)
            .id(r.u16())
            .fragment(17, 0, true, &data),
        4 => Ip4::new(SERVER4, ce4).id(r.u16()).fragment(
            r.pick(&[6u8, 17, 1]),
            8 * (r.u16() % 100 + 1),
            r.below(2) == 0,
            &data,
        ),
        5 => Ip6::new(map6, SERVER6).udp(r.u16(), r.u16(), 8),
        6 => Ip6::new(map6, SERVER6).hop_by_hop().tcp(r.u16(), 80, 0),
        7 => Ip6::new(map6, SERVER6).fragment(17, 0, true, r.next() as u32, &data),
        _ => Ip6::new(map6, SERVER6).hop_by_hop().fragment(
            r.pick(&[6u8, 17, 58]),
            8 * (r.u16() % 100 + 1),
            r.below(2) == 0,
            r.next() as u32,
            &data,
        ),
    }
}

/// What `sixgate_core::mapt::steering` says for `s`.
fn expected_flow(s: &Summary, w: u16) -> u16 {
    let ports = match s.l4 {
        L4::Udp {
            src_port, dst_port, ..
        }
        | L4::Tcp {
            src_port, dst_port, ..
        } => (src_port, dst_port),
        _ => (0, 0),
    };
    match (s.src, s.dst, s.fragment) {
        (IpAddr::V4(a), IpAddr::V4(b), Some(f)) => {
            fragment4_worker(a.into(), b.into(), f.id as u16, s.protocol, w)
        }
        (IpAddr::V4(a), IpAddr::V4(b), None) => {
            flow4_worker(a.into(), b.into(), s.protocol, ports, w)
        }
        (IpAddr::V6(a), IpAddr::V6(b), Some(f)) => {
            fragment6_worker(a.into(), b.into(), f.id, s.protocol, w)
        }
        (a, b, _) => flow6_worker(u128::from(v6(a)), u128::from(v6(b)), s.protocol, ports, w),
    }
}

/// RFC 7599 §8: the BR's steering program ([`Mode::Flow`]) agrees with
/// `sixgate_core::mapt::steering`, so every fragment of a datagram, first and
/// later, reaches the worker whose fragment table holds the first one.
#[test]
fn rfc7599_8_flow_mode_keeps_the_fragments_of_a_datagram_together() {
    let mut r = Rng(0x7599_0008);
    for workers in [2u16, 3, 4, 16] {
        let Some(steering) = load_or_skip(&Params::flow(workers)) else {
            return;
        };
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let pkt = br_packet(&mut r);
            let summary = sixgate_testkit::check_structure(&pkt)
                .unwrap_or_else(|e| panic!("testkit built a bad packet: {e}"));
            let got = queue_of_v4(&steering, &pkt);
            assert_eq!(
                got,
                u32::from(expected_flow(&summary, workers)),
                "workers {workers}: {summary:?}"
            );
            seen.insert(got);
        }
        assert_eq!(seen.len(), usize::from(workers), "not spread: {seen:?}");
        // One datagram's fragments: first, middle and last, each family.
        let v4 = Ip4::new(SERVER4, Ipv4Addr::new(198, 18, 0, 8)).id(0x1234);
        let v6 = Ip6::new(
            SERVER6,
            Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11b, 0, 0xc612, 8, 0x1b),
        );
        let q4: Vec<u32> = [(0, true), (1480, true), (2960, false)]
            .iter()
            .map(|&(off, more)| queue_of_v4(&steering, &v4.fragment(17, off, more, &[0; 24])))
            .collect();
        let q6: Vec<u32> = [(0, true), (1232, true), (2464, false)]
            .iter()
            .map(|&(off, more)| {
                queue_of_v4(&steering, &v6.fragment(17, off, more, 0x5678, &[0; 24]))
            })
            .collect();
        assert!(q4.iter().all(|q| *q == q4[0]), "IPv4: {q4:?}");
        assert!(q6.iter().all(|q| *q == q6[0]), "IPv6: {q6:?}");
    }
}
