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
        DropReason::BadSource | DropReason::BadDestination | DropReason::Hairpin
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
