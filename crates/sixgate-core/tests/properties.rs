//! Property tests: any valid packet translates into packets the oracle accepts
//! (checksums and lengths); any bytes at all never panic, and whatever comes out is
//! structurally valid — a packet is fully translated or dropped, never half-done.

mod common;

use common::*;
use proptest::prelude::*;
use sixgate_core::{DropReason, Verdict};
use sixgate_testkit::{Ip4, Ip6};
use std::net::{Ipv4Addr, Ipv6Addr};

#[derive(Debug, Clone)]
enum Kind {
    Udp(u16, u16),
    Tcp(u16, u16),
    Echo(u16, u16),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Kind::Udp(a, b)),
        (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Kind::Tcp(a, b)),
        (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Kind::Echo(a, b)),
    ]
}

/// An IPv6 client inside the EAM range and an IPv4 server reached through pool6.
fn v6_packet() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<u8>(),
        1u32..=0xffff_fffe,
        2u8..=255,
        any::<u8>(),
        kind(),
        0usize..1600,
    )
        .prop_map(|(host, server, hop, tc, k, len)| {
            let src = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, u16::from(host));
            let server = Ipv4Addr::from(server);
            let dst = common::pool6().embed(server);
            let ip = Ip6::new(src, dst).hop_limit(hop).traffic_class(tc);
            match k {
                Kind::Udp(a, b) => ip.udp(a, b, len),
                Kind::Tcp(a, b) => ip.tcp(a, b, len),
                Kind::Echo(a, b) => ip.echo_request(a, b, len),
            }
        })
}

fn v4_packet() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<u8>(),
        1u32..=0xdfff_ffff,
        2u8..=255,
        any::<u8>(),
        any::<bool>(),
        kind(),
        0usize..1600,
    )
        .prop_map(|(host, server, ttl, tos, df, k, len)| {
            let ip = Ip4::new(Ipv4Addr::from(server), Ipv4Addr::new(198, 18, 0, host))
                .ttl(ttl)
                .tos(tos)
                .df(df);
            match k {
                Kind::Udp(a, b) => ip.udp(a, b, len),
                Kind::Tcp(a, b) => ip.tcp(a, b, len),
                Kind::Echo(a, b) => ip.echo_reply(a, b, len),
            }
        })
}

fn allowed_drop(r: DropReason) -> bool {
    // Non-global-ish sources/destinations and hairpin targets are legitimately refused.
    matches!(
        r,
        DropReason::BadSource
            | DropReason::BadDestination
            | DropReason::HostMulticast
            | DropReason::Hairpin
    )
}

proptest! {
    // PROPTEST_CASES overrides the default for long soaks.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
    ))]

    #[test]
    fn valid_ipv6_translates_to_valid_ipv4(p in v6_packet()) {
        let mut h = Harness::sample();
        let (v, out) = h.run(&p); // run() asserts the oracle on every output
        match v {
            Verdict::Translated => prop_assert_eq!(out[0].len() + 20, p.len()),
            Verdict::Dropped(r) => prop_assert!(allowed_drop(r), "{:?}", r),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    #[test]
    fn valid_ipv4_translates_to_valid_ipv6(p in v4_packet()) {
        let mut h = Harness::sample();
        let (v, out) = h.run(&p);
        match v {
            Verdict::Translated => prop_assert_eq!(out[0].len(), p.len() + 20),
            Verdict::Fragmented(n) => {
                prop_assert_eq!(usize::from(n), out.len());
                prop_assert!(out.iter().all(|o| o.len() <= 1280));
            }
            Verdict::Dropped(r) => prop_assert!(allowed_drop(r), "{:?}", r),
            Verdict::Replied(r) => prop_assert!(false, "unexpected reply {:?}", r),
            Verdict::Held => prop_assert!(false, "an unfragmented packet held"),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(version in prop_oneof![Just(4u8), Just(6u8)], mut bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
        if let Some(b) = bytes.first_mut() {
            *b = (version << 4) | (*b & 0x0f);
        }
        let mut h = Harness::sample();
        let (_, out) = h.run_unchecked(&bytes);
        for o in &out {
            prop_assert!(sixgate_testkit::check_structure(o).is_ok(), "output {:02x?}", o);
        }
    }

    /// Valid headers with random payload bytes (so ICMP errors with random inner
    /// packets, random extension chains) are the interesting half of "arbitrary".
    #[test]
    fn arbitrary_payloads_behind_valid_headers_never_panic(
        v6 in any::<bool>(), proto in prop_oneof![Just(1u8), Just(6), Just(17), Just(58), Just(0), Just(43), Just(44), Just(60), any::<u8>()],
        payload in proptest::collection::vec(any::<u8>(), 0..1400),
    ) {
        let mut h = Harness::sample();
        let p = if v6 {
            Ip6::new(CLIENT6, SERVER6).raw(proto, &payload)
        } else {
            Ip4::new(SERVER4, CLIENT4).df(false).raw(proto, &payload)
        };
        let (_, out) = h.run_unchecked(&p);
        for o in &out {
            prop_assert!(sixgate_testkit::check_structure(o).is_ok(), "output {:02x?}", o);
        }
    }
}

// ---- stateful NAT64 --------------------------------------------------------------------

mod nat64_traffic {
    use super::*;
    use sixgate_core::Config;
    use sixgate_core::nat64::{Filtering, Nat64Config, Pool4Entry, PortRange};

    pub const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

    /// NAT64 with a small pool and table, so exhaustion and limits happen too.
    pub fn harness(adf: bool, block: u16) -> Harness {
        let mut cfg = Config::with_pool6(Some(common::pool6()));
        let mut entry = Pool4Entry::single(POOL4);
        entry.tcp = PortRange::new(61000, 61063);
        entry.udp = PortRange::new(61000, 61063);
        entry.icmp = PortRange::new(0, 63);
        cfg.nat64 = Some(Nat64Config {
            pool4: vec![entry],
            max_sessions: 48,
            max_sessions_per_subscriber: 20,
            port_block_size: block,
            max_held_syns: 4,
            filtering: if adf {
                Filtering::AddressDependent
            } else {
                Filtering::EndpointIndependent
            },
            ..Nat64Config::default()
        });
        Harness::new(cfg)
    }

    /// One step of traffic: from IPv6 (a few clients) or IPv4 (a few servers,
    /// to pool4 ports near the ones in use), TCP with random flags, UDP or Echo,
    /// or a clock step with timers.
    #[derive(Debug, Clone)]
    pub enum Step {
        Out {
            client: u8,
            server: u8,
            k: u8,
            sport: u16,
            dport: u16,
            flags: u8,
            len: usize,
        },
        In {
            server: u8,
            k: u8,
            sport: u16,
            port4: u16,
            flags: u8,
            len: usize,
        },
        Time(u16),
    }

    pub fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0u8..4, 0u8..3, 0u8..3, 0u16..8, 0u16..3, any::<u8>(), 0usize..1500)
                .prop_map(|(client, server, k, sport, dport, flags, len)| Step::Out {
                    client, server, k, sport: 61000 + sport, dport: 80 + dport, flags: flags & 0x17, len }),
            4 => (0u8..3, 0u8..3, 0u16..3, 0u16..70, any::<u8>(), 0usize..1500)
                .prop_map(|(server, k, sport, port4, flags, len)| Step::In {
                    server, k, sport: 80 + sport, port4: 61000 + port4, flags: flags & 0x17, len }),
            1 => (0u16..400).prop_map(Step::Time),
        ]
    }

    pub fn packet(s: &Step) -> Option<Vec<u8>> {
        let server = |i: u8| Ipv4Addr::new(198, 51, 100, 1 + i);
        Some(match *s {
            Step::Out {
                client,
                server: sv,
                k,
                sport,
                dport,
                flags,
                len,
            } => {
                let src = Ipv6Addr::new(0x2001, 0xdb8, u16::from(client), 0, 0, 0, 0, 1);
                let ip = Ip6::new(src, common::pool6().embed(server(sv)));
                match k {
                    0 => ip.udp(sport, dport, len),
                    1 => ip.tcp_flags(sport, dport, flags, len),
                    _ => ip.echo_request(sport, dport, len),
                }
            }
            Step::In {
                server: sv,
                k,
                sport,
                port4,
                flags,
                len,
            } => {
                let ip = Ip4::new(server(sv), POOL4).df(len % 2 == 0);
                match k {
                    0 => ip.udp(sport, port4, len),
                    1 => ip.tcp_flags(sport, port4, flags, len),
                    _ => ip.echo_reply(port4 - 61000, sport, len),
                }
            }
            Step::Time(_) => return None,
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(128)
    ))]

    /// Random 6→4 / 4→6 traffic in NAT64 mode: no panic, every output (and every
    /// packet `tick` leaves) passes the oracle, and the tables stay in bounds.
    #[test]
    fn nat64_random_traffic_passes_the_oracle(
        adf in any::<bool>(),
        block in prop_oneof![Just(0u16), Just(8)],
        steps in proptest::collection::vec(nat64_traffic::step(), 1..120),
    ) {
        let mut h = nat64_traffic::harness(adf, block);
        for s in &steps {
            match nat64_traffic::packet(s) {
                Some(p) => {
                    let (v, out) = h.run(&p);
                    if let Verdict::Translated = v {
                        prop_assert_eq!(out.len(), 1);
                    }
                }
                None => {
                    if let nat64_traffic::Step::Time(dt) = s {
                        h.now_ns += u64::from(*dt) * 1_000_000_000;
                    }
                    while let Some(v) = h.t.tick(h.now_ns, &mut h.scratch) {
                        if let Verdict::Replied(_) = v {
                            for o in h.scratch.packets() {
                                prop_assert!(sixgate_testkit::check(o).is_ok(), "tick output {:02x?}", o);
                            }
                        }
                    }
                }
            }
            let st = h.t.nat64_stats();
            prop_assert!(st.sessions.total() <= 48);
            prop_assert!(st.held_syns <= 4);
        }
        h.t.drain_events(|_| {});
    }

    #[test]
    fn nat64_arbitrary_bytes_never_panic(
        version in prop_oneof![Just(4u8), Just(6u8)],
        mut bytes in proptest::collection::vec(any::<u8>(), 0..1500),
    ) {
        if let Some(b) = bytes.first_mut() {
            *b = (version << 4) | (*b & 0x0f);
        }
        let mut h = nat64_traffic::harness(false, 0);
        let (_, out) = h.run_unchecked(&bytes);
        for o in &out {
            prop_assert!(sixgate_testkit::check_structure(o).is_ok(), "output {:02x?}", o);
        }
    }
}

// ---- MAP-T (RFC 7599) ---------------------------------------------------------------

proptest! {
    /// BR and CE: arbitrary bytes, and valid headers with random payloads between
    /// the domain's addresses, never panic; what comes out is well formed.
    #[test]
    fn mapt_arbitrary_packets_never_panic(
        at_ce in any::<bool>(),
        v6 in any::<bool>(),
        raw in any::<bool>(),
        proto in prop_oneof![Just(1u8), Just(6), Just(17), Just(58), Just(44), any::<u8>()],
        mut bytes in proptest::collection::vec(any::<u8>(), 0..1400),
    ) {
        use common::mapt::*;
        let mut h = if at_ce { common::mapt::ce() } else { br() };
        let p = if raw {
            if let Some(b) = bytes.first_mut() {
                *b = (if v6 { 6 } else { 4 } << 4) | (*b & 0x0f);
            }
            bytes
        } else if v6 {
            Ip6::new(if at_ce { SERVER_D } else { CE6 }, if at_ce { CE6 } else { SERVER_D }).raw(proto, &bytes)
        } else {
            let src = if at_ce { LAN_HOST } else { SERVER };
            Ip4::new(src, if at_ce { SERVER } else { CE4 }).df(false).raw(proto, &bytes)
        };
        let (_, out) = h.run_unchecked(&p);
        for o in &out {
            prop_assert!(sixgate_testkit::check_structure(o).is_ok(), "output {:02x?}", o);
        }
    }

    /// The BR: a packet from a MAP address passes exactly when its source port is
    /// in the CE's set (RFC 7597 §8.1), and comes back to the same CE.
    #[test]
    fn mapt_br_port_check_is_the_port_set(sport in any::<u16>()) {
        use common::mapt::*;
        let mut h = br();
        let (v, out) = h.run(&Ip6::new(CE6, SERVER_D).udp(sport, 53, 8));
        if PORTS.contains(&sport) {
            prop_assert_eq!(v, Verdict::Translated);
            let (v, back) = h.run(&Ip4::new(SERVER, CE4).udp(53, sport, 8));
            prop_assert_eq!(v, Verdict::Translated);
            prop_assert_eq!(view(&back[0]).dst, std::net::IpAddr::V6(CE6));
            prop_assert!(out.len() == 1);
        } else {
            prop_assert_eq!(v, Verdict::Dropped(DropReason::MaptSourceOutsidePortSet));
        }
    }
}
