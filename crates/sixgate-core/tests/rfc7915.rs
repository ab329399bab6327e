//! RFC 7915 end to end through `Translator::translate`, every output checked by the
//! etherparse-based oracle in sixgate-testkit (lengths, IPv4 header checksum, L4
//! checksums with pseudo-headers, inner packets of ICMP errors).

mod common;

use common::*;
use sixgate_core::config::{ClassE, HairpinMode, UdpZeroChecksum};
use sixgate_core::{DropReason, Verdict};
use sixgate_testkit::{Family, Ip4, Ip6, L4, proto, split_v4, split_v6, truncate};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn v6() -> Ip6 {
    Ip6::new(CLIENT6, SERVER6)
}
fn v4() -> Ip4 {
    Ip4::new(SERVER4, CLIENT4)
}

// ---- §5.1 / §4.1 header translation -------------------------------------------------

#[test]
fn rfc7915_s5_1_udp_header_fields() {
    let mut h = Harness::sample();
    let input = v6().traffic_class(0xb8).hop_limit(64).udp(5353, 53, 20);
    let out = h.one(&input);
    let s = view(&out);
    assert_eq!(s.family, Family::V4);
    assert_eq!(s.src, IpAddr::V4(CLIENT4));
    assert_eq!(s.dst, IpAddr::V4(SERVER4));
    assert_eq!(s.hop_limit, 63, "§5.1 TTL = Hop Limit - 1");
    assert_eq!(s.tos, 0xb8, "§5.1 TOS copied from Traffic Class");
    assert_eq!(s.protocol, proto::UDP);
    assert_eq!(s.df, Some(false), "§5.1 DF=0 for IPv6 packets ≤ 1280 bytes");
    assert!(s.l4_verified);
    assert_eq!(s.ports(), Some((5353, 53)));
    assert_eq!(out.len(), input.len() - 20);
    assert_eq!(h.t.counters().translated_6to4, 1);
    assert_eq!(
        h.t.counters().bytes_6to4,
        input.len() as u64,
        "bytes as received"
    );
}

#[test]
fn rfc7915_s5_1_df_set_above_1280() {
    let mut h = Harness::sample();
    let out = h.one(&v6().udp(1, 2, 1300));
    let s = view(&out);
    assert_eq!(s.df, Some(true));
    assert_eq!(s.ipv4_id, Some(0));
}

#[test]
fn rfc7915_s5_1_reset_tos() {
    let mut cfg = sample_config();
    cfg.reset_tos = true;
    cfg.new_tos = 0x10;
    let mut h = Harness::new(cfg);
    assert_eq!(
        view(&h.one(&v6().traffic_class(0xb8).udp(1, 2, 8))).tos,
        0x10
    );
}

#[test]
fn rfc7915_s4_1_udp_header_fields() {
    let mut h = Harness::sample();
    let input = v4().tos(0x2e).ttl(40).udp(53, 5353, 30);
    let out = h.one(&input);
    let s = view(&out);
    assert_eq!(s.family, Family::V6);
    assert_eq!(s.src, IpAddr::V6(SERVER6));
    assert_eq!(s.dst, IpAddr::V6(CLIENT6));
    assert_eq!(s.hop_limit, 39);
    assert_eq!(s.tos, 0x2e, "§4.1 Traffic Class copied from TOS");
    assert!(s.ext_headers.is_empty(), "§4.1 no Fragment header for DF=1");
    assert_eq!(
        u32::from_be_bytes(out[0..4].try_into().unwrap()) & 0xfffff,
        0,
        "flow label 0"
    );
    assert!(s.l4_verified);
    assert_eq!(out.len(), input.len() + 20);
    assert_eq!(h.t.counters().translated_4to6, 1);
    assert_eq!(
        h.t.counters().bytes_4to6,
        input.len() as u64,
        "bytes as received"
    );
    assert_eq!(h.t.counters().bytes_6to4, 0);
}

#[test]
fn rfc7915_s4_1_reset_traffic_class() {
    let mut cfg = sample_config();
    cfg.reset_traffic_class = true;
    let mut h = Harness::new(cfg);
    assert_eq!(view(&h.one(&v4().tos(0x2e).udp(1, 2, 8))).tos, 0);
}

#[test]
fn rfc7915_s4_1_df0_small_packet_has_no_fragment_header() {
    let mut h = Harness::sample();
    let s = view(&h.one(&v4().df(false).udp(1, 2, 100)));
    assert!(s.fragment.is_none(), "RFC 8021: no atomic fragments");
}

#[test]
fn rfc7915_s4_1_options_ignored() {
    let mut h = Harness::sample();
    // Record Route (7), length 7, pointer 4, one empty slot, then End.
    let input = v4().options(&[7, 7, 4, 0, 0, 0, 0, 0]).udp(1, 2, 10);
    let out = h.one(&input);
    assert_eq!(out.len(), input.len() - 8 + 20);
    assert!(view(&out).l4_verified);
}

#[test]
fn rfc7915_s4_1_unexpired_source_route_gets_source_route_failed() {
    let mut h = Harness::sample();
    // LSRR (131), length 7, pointer 4: one hop not yet visited.
    let input = v4().options(&[131, 7, 4, 192, 0, 2, 1, 0]).udp(1, 2, 10);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::Ipv4SourceRoute));
    let s = view(&out[0]);
    assert_eq!(s.family, Family::V4);
    assert_eq!(s.icmp(), Some((3, 5)));
    assert_eq!(s.dst, IpAddr::V4(SERVER4));
}

#[test]
fn rfc7915_s4_1_exhausted_source_route_translated() {
    let mut h = Harness::sample();
    // Pointer 8 > length 7: the route is used up.
    let input = v4().options(&[131, 7, 8, 192, 0, 2, 1, 0]).udp(1, 2, 10);
    h.one(&input);
}

#[test]
fn rfc7915_s4_1_bad_ipv4_header_checksum_dropped() {
    let mut h = Harness::sample();
    let mut input = v4().udp(1, 2, 10);
    input[10] ^= 0xff;
    assert_eq!(
        h.run(&input).0,
        Verdict::Dropped(DropReason::Ipv4HeaderChecksum)
    );
    assert_eq!(h.t.counters().drops(DropReason::Ipv4HeaderChecksum), 1);
}

// ---- round trips ---------------------------------------------------------------------

/// v6→v4→v6 gives the same addresses back (EAM and pool6 are inverses here), so
/// the upper-layer bytes, checksum included, must be identical.
#[test]
fn rfc7915_s4_s5_round_trip_keeps_l4_bytes() {
    for input in [
        v6().udp(1000, 53, 33),
        v6().tcp(40000, 80, 100),
        v6().echo_request(7, 9, 56),
    ] {
        let mut h = Harness::sample();
        let mid = h.one(&input);
        let back = h.one(&mid);
        assert_eq!(l4(&back), l4(&input), "L4 bytes survive the round trip");
        assert_eq!(back[8..40], input[8..40], "addresses survive");
        assert_eq!(back[7], input[7] - 2, "hop limit decremented once per pass");
    }
}

#[test]
fn rfc7915_s5_5_tcp_checksum_updated() {
    let mut h = Harness::sample();
    let s = view(&h.one(&v6().tcp(40000, 443, 0)));
    assert!(s.l4_verified);
    assert_eq!(s.ports(), Some((40000, 443)));
    let s = view(&h.one(&v4().tcp(443, 40000, 1000)));
    assert!(s.l4_verified);
}

// ---- §4.2 / §5.2 ICMP informational ----------------------------------------------------

#[test]
fn rfc7915_s5_2_echo_request_becomes_icmpv4_echo() {
    let mut h = Harness::sample();
    let out = h.one(&v6().echo_request(0x1234, 1, 56));
    let s = view(&out);
    assert_eq!(s.protocol, proto::ICMP);
    assert_eq!(s.icmp(), Some((8, 0)));
    assert!(s.l4_verified);
    assert_eq!(
        &l4(&out)[4..8],
        &[0x12, 0x34, 0, 1],
        "identifier and sequence kept"
    );
}

#[test]
fn rfc7915_s4_2_echo_reply_becomes_icmpv6_echo_reply() {
    let mut h = Harness::sample();
    let s = view(&h.one(&v4().echo_reply(0x1234, 1, 56)));
    assert_eq!(s.protocol, proto::ICMPV6);
    assert_eq!(s.icmp(), Some((129, 0)));
    assert!(s.l4_verified);
}

#[test]
fn rfc7915_s5_2_neighbor_discovery_dropped() {
    let mut h = Harness::sample();
    let input = v6().icmp(135, 0, [0; 4], &[0; 16]);
    assert_eq!(
        h.run(&input).0,
        Verdict::Dropped(DropReason::IcmpUntranslatable)
    );
}

#[test]
fn rfc7915_s4_2_timestamp_dropped() {
    let mut h = Harness::sample();
    let input = v4().icmp(13, 0, [0; 4], &[0; 12]);
    assert_eq!(
        h.run(&input).0,
        Verdict::Dropped(DropReason::IcmpUntranslatable)
    );
}

// ---- §4.3 / §5.3 ICMP errors with inner packets ---------------------------------------

/// An ICMPv4 error from a router about a packet the IPv6 client sent (as IPv4).
fn v4_error(ty: u8, code: u8, rest: [u8; 4], inner: &[u8]) -> Vec<u8> {
    Ip4::new(ROUTER4, CLIENT4).icmp_error(ty, code, rest, inner)
}

/// The client's packet as it looked on the IPv4 side.
fn client_as_v4() -> Ip4 {
    Ip4::new(CLIENT4, SERVER4)
}

#[test]
fn rfc7915_s4_3_every_destination_unreachable_row_with_inner_udp() {
    let rows: &[(u8, u8, u8)] = &[
        (0, 1, 0),
        (1, 1, 0),
        (2, 4, 1),
        (3, 1, 4),
        (5, 1, 0),
        (6, 1, 0),
        (7, 1, 0),
        (8, 1, 0),
        (9, 1, 1),
        (10, 1, 1),
        (11, 1, 0),
        (12, 1, 0),
        (13, 1, 1),
        (15, 1, 1),
    ];
    for &(code, ty6, code6) in rows {
        let mut h = Harness::sample();
        let inner = client_as_v4().udp(5353, 53, 40);
        let out = h.one(&v4_error(3, code, [0; 4], &inner));
        let s = view(&out);
        assert_eq!(s.icmp(), Some((ty6, code6)), "code {code}");
        assert_eq!(s.src, IpAddr::V6(ROUTER6));
        assert_eq!(s.dst, IpAddr::V6(CLIENT6));
        let i = s.inner.expect("inner packet");
        assert_eq!(
            (i.src, i.dst),
            (IpAddr::V6(CLIENT6), IpAddr::V6(SERVER6)),
            "inner addresses"
        );
        assert_eq!(i.l4_checksum_ok, Some(true), "inner UDP checksum updated");
        if code == 2 {
            assert_eq!(&l4(&out)[4..8], &[0, 0, 0, 6], "pointer to Next Header");
        }
    }
}

#[test]
fn rfc7915_s4_3_inner_tcp_and_icmp() {
    let mut h = Harness::sample();
    let inner = client_as_v4().tcp(40000, 80, 0);
    let s = view(&h.one(&v4_error(11, 0, [0; 4], &inner)));
    assert_eq!(s.icmp(), Some((3, 0)));
    assert_eq!(s.inner.unwrap().l4_checksum_ok, Some(true));

    let inner = client_as_v4().echo_request(5, 6, 32);
    let s = view(&h.one(&v4_error(11, 0, [0; 4], &inner)));
    let i = s.inner.unwrap();
    assert_eq!(i.protocol, proto::ICMPV6);
    assert_eq!(i.l4.icmp(), Some((128, 0)), "inner echo request translated");
    assert_eq!(i.l4_checksum_ok, Some(true));
}

#[test]
fn rfc7915_s4_3_truncated_inner_packet() {
    let mut h = Harness::sample();
    let inner = truncate(&client_as_v4().udp(1, 2, 500), 28 + 64);
    let s = view(&h.one(&v4_error(3, 3, [0; 4], &inner)));
    let i = s.inner.unwrap();
    assert!(i.truncated());
    assert_eq!(
        i.claimed_len,
        40 + 8 + 500,
        "inner Payload Length is the original's"
    );
}

#[test]
fn rfc7915_s4_3_icmpv6_error_capped_at_1280() {
    let mut h = Harness::sample();
    let inner = client_as_v4().df(true).udp(1, 2, 1400);
    let out = h.one(&v4_error(3, 3, [0; 4], &inner));
    assert_eq!(out.len(), 1280, "RFC 4443 §2.4 (c)");
}

#[test]
fn rfc7915_s4_2_fragmentation_needed_becomes_packet_too_big() {
    let mut h = Harness::sample();
    let inner = client_as_v4().udp(1, 2, 1400);
    let out = h.one(&v4_error(3, 4, [0, 0, 0x05, 0x78], &inner)); // MTU 1400
    assert_eq!(view(&out).icmp(), Some((2, 0)));
    assert_eq!(&l4(&out)[4..8], &1420u32.to_be_bytes(), "MTU + 20");
    // MTU below 1260 is floored at the IPv6 minimum.
    let out = h.one(&v4_error(3, 4, [0, 0, 0x02, 0x40], &inner)); // 576
    assert_eq!(&l4(&out)[4..8], &1280u32.to_be_bytes());
}

#[test]
fn rfc7915_s4_2_fragmentation_needed_mtu_zero_uses_plateau() {
    let mut h = Harness::sample();
    let inner = client_as_v4().udp(1, 2, 4400 - 28); // Total Length 4400
    let out = h.one(&v4_error(3, 4, [0; 4], &truncate(&inner, 100)));
    assert_eq!(
        &l4(&out)[4..8],
        &(4352u32 + 20).to_be_bytes(),
        "RFC 1191 plateau 4352 + 20"
    );
}

#[test]
fn rfc7915_s4_2_parameter_problem_pointer() {
    let mut h = Harness::sample();
    let inner = client_as_v4().udp(1, 2, 8);
    let out = h.one(&v4_error(12, 0, [8, 0, 0, 0], &inner)); // TTL
    assert_eq!(view(&out).icmp(), Some((4, 0)));
    assert_eq!(&l4(&out)[4..8], &[0, 0, 0, 7], "TTL → Hop Limit");
    let (v, _) = h.run(&v4_error(12, 0, [10, 0, 0, 0], &inner)); // checksum: n/a
    assert_eq!(v, Verdict::Dropped(DropReason::IcmpUntranslatable));
}

#[test]
fn rfc7915_s4_3_error_inside_error_dropped() {
    let mut h = Harness::sample();
    let innermost = Ip4::new(SERVER4, CLIENT4).udp(1, 2, 8);
    let inner = client_as_v4().icmp_error(3, 3, [0; 4], &innermost);
    let (v, _) = h.run(&v4_error(3, 1, [0; 4], &inner));
    assert_eq!(v, Verdict::Dropped(DropReason::IcmpErrorInError));
}

/// An ICMPv6 error from an IPv6 router about a packet the IPv4 server sent.
fn v6_error_from(router: Ipv6Addr, ty: u8, code: u8, rest: [u8; 4], inner: &[u8]) -> Vec<u8> {
    Ip6::new(router, SERVER6).icmp_error(ty, code, rest, inner)
}

fn server_as_v6() -> Ip6 {
    Ip6::new(SERVER6, CLIENT6)
}

const ROUTER_V6_EAM: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);

#[test]
fn rfc7915_s5_3_every_icmpv6_error_row_with_inner_udp() {
    let rows: &[(u8, u8, u8, u8)] = &[
        (1, 0, 3, 1),
        (1, 1, 3, 10),
        (1, 2, 3, 1),
        (1, 3, 3, 1),
        (1, 4, 3, 3),
        (2, 0, 3, 4),
        (3, 0, 11, 0),
        (3, 1, 11, 1),
        (4, 1, 3, 2),
    ];
    for &(ty, code, ty4, code4) in rows {
        let mut h = Harness::sample();
        let inner = server_as_v6().udp(53, 5353, 40);
        let rest = if ty == 2 {
            1500u32.to_be_bytes()
        } else {
            [0; 4]
        };
        let out = h.one(&v6_error_from(ROUTER_V6_EAM, ty, code, rest, &inner));
        let s = view(&out);
        assert_eq!(s.icmp(), Some((ty4, code4)), "type {ty} code {code}");
        assert_eq!(s.src, IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)));
        assert_eq!(s.dst, IpAddr::V4(SERVER4));
        let i = s.inner.unwrap();
        assert_eq!((i.src, i.dst), (IpAddr::V4(SERVER4), IpAddr::V4(CLIENT4)));
        assert_eq!(i.l4_checksum_ok, Some(true));
        if ty == 2 {
            assert_eq!(&l4(&out)[6..8], &1480u16.to_be_bytes(), "§5.2 MTU - 20");
        }
    }
}

/// §5.2: "The MTU field MUST be adjusted for the difference between the IPv4
/// and IPv6 header sizes, taking into account whether or not the packet in
/// error includes a Fragment Header, i.e., minimum(advertised MTU-20,
/// MTU_of_IPv4_nexthop, (MTU_of_IPv6_nexthop)-20)". PTB 1280 about a packet
/// without a Fragment header is 1260 (not 1252); with one, 1252; the IPv4 and
/// IPv6 links' configured MTUs bound it.
#[test]
fn rfc7915_s5_2_packet_too_big_mtu_is_minimum_of_three() {
    let ptb = |cfg: sixgate_core::Config, frag: bool, mtu: u32| {
        let mut h = Harness::new(cfg);
        let inner = if frag {
            server_as_v6()
                .fragment_header(0, true, 7)
                .udp(53, 5353, 1300)
        } else {
            server_as_v6().udp(53, 5353, 1300)
        };
        let err = v6_error_from(
            ROUTER_V6_EAM,
            2,
            0,
            mtu.to_be_bytes(),
            &truncate(&inner, 200),
        );
        let out = h.one(&err);
        assert_eq!(view(&out).icmp(), Some((3, 4)));
        u16::from_be_bytes([l4(&out)[6], l4(&out)[7]])
    };
    assert_eq!(ptb(sample_config(), false, 1280), 1260);
    assert_eq!(ptb(sample_config(), true, 1280), 1252);
    let mut cfg = sample_config();
    cfg.ipv4_mtu = Some(1200);
    assert_eq!(ptb(cfg, false, 1400), 1200, "MTU_of_IPv4_nexthop");
    let mut cfg = sample_config();
    cfg.ipv6_mtu = Some(1300);
    assert_eq!(ptb(cfg, false, 1400), 1280, "MTU_of_IPv6_nexthop - 20");
}

#[test]
fn rfc7915_s5_2_packet_too_big_with_inner_fragment_header_subtracts_28() {
    let mut h = Harness::sample();
    let inner = server_as_v6()
        .fragment_header(0, true, 77)
        .udp(53, 5353, 1200);
    let out = h.one(&v6_error_from(
        ROUTER_V6_EAM,
        2,
        0,
        1400u32.to_be_bytes(),
        &truncate(&inner, 200),
    ));
    assert_eq!(&l4(&out)[6..8], &1372u16.to_be_bytes());
}

#[test]
fn rfc7915_s5_2_parameter_problem_pointer() {
    let mut h = Harness::sample();
    let inner = server_as_v6().udp(1, 2, 8);
    let out = h.one(&v6_error_from(
        ROUTER_V6_EAM,
        4,
        0,
        7u32.to_be_bytes(),
        &inner,
    ));
    assert_eq!(view(&out).icmp(), Some((12, 0)));
    assert_eq!(l4(&out)[4], 8, "Hop Limit → TTL");
    let out = h.one(&v6_error_from(
        ROUTER_V6_EAM,
        4,
        0,
        30u32.to_be_bytes(),
        &inner,
    ));
    assert_eq!(l4(&out)[4], 16, "destination address");
}

#[test]
fn rfc7915_s5_3_inner_icmp_echo_and_tcp() {
    let mut h = Harness::sample();
    let inner = server_as_v6().echo_reply(1, 2, 16);
    let s = view(&h.one(&v6_error_from(ROUTER_V6_EAM, 1, 4, [0; 4], &inner)));
    let i = s.inner.unwrap();
    assert_eq!(i.l4.icmp(), Some((0, 0)));
    assert_eq!(i.l4_checksum_ok, Some(true));
    let inner = server_as_v6().tcp(80, 40000, 10);
    let s = view(&h.one(&v6_error_from(ROUTER_V6_EAM, 3, 0, [0; 4], &inner)));
    assert_eq!(s.inner.unwrap().l4_checksum_ok, Some(true));
}

/// RFC 6791: an IPv6 router whose address maps to nothing still gets its error
/// through, from the configured IPv4 pool.
#[test]
fn rfc6791_untranslatable_icmpv6_error_source_uses_pool() {
    let mut cfg = sample_config();
    cfg.rfc6791_v4 = vec![Ipv4Addr::new(192, 0, 2, 10), Ipv4Addr::new(192, 0, 2, 11)];
    let mut h = Harness::new(cfg);
    let router: Ipv6Addr = "2001:db8:ffff::1".parse().unwrap();
    let inner = server_as_v6().udp(1, 2, 8);
    let s = view(&h.one(&v6_error_from(router, 3, 0, [0; 4], &inner)));
    let IpAddr::V4(src) = s.src else { panic!() };
    assert!(src == Ipv4Addr::new(192, 0, 2, 10) || src == Ipv4Addr::new(192, 0, 2, 11));
    // The same router always gets the same address (hash, not RNG).
    let s2 = view(&h.one(&v6_error_from(router, 3, 0, [0; 4], &inner)));
    assert_eq!(s.src, s2.src);
}

#[test]
fn rfc6791_without_pool_uses_icmp_source_v4() {
    let mut h = Harness::sample();
    let inner = server_as_v6().udp(1, 2, 8);
    let s = view(&h.one(&v6_error_from(
        "2001:db8:ffff::1".parse().unwrap(),
        3,
        0,
        [0; 4],
        &inner,
    )));
    assert_eq!(s.src, IpAddr::V4(Ipv4Addr::new(192, 0, 0, 8)));
}

/// §5.1 + §5.4: an unmappable source of a non-error is dropped, and told
/// "administratively prohibited" (an ICMPv6 message is not).
#[test]
fn rfc7915_s5_4_unmappable_source_of_non_error_gets_admin_prohibited() {
    let mut h = Harness::sample();
    let input = Ip6::new("2001:db8:ffff::1".parse().unwrap(), SERVER6).udp(1, 2, 8);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::SourceUntranslatable));
    assert_eq!(view(&out[0]).icmp(), Some((1, 1)));
    let echo = Ip6::new("2001:db8:ffff::1".parse().unwrap(), SERVER6).echo_request(1, 2, 8);
    assert_eq!(
        h.run(&echo).0,
        Verdict::Dropped(DropReason::SourceUntranslatable)
    );
}

#[test]
fn rfc7915_s5_4_untranslatable_destination_gets_address_unreachable() {
    let mut h = Harness::sample();
    let input = Ip6::new(CLIENT6, "2001:db8:ffff::1".parse().unwrap()).udp(1, 2, 8);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::DestinationUntranslatable));
    assert_eq!(view(&out[0]).icmp(), Some((1, 3)));
}

#[test]
fn rfc7915_s4_4_untranslatable_destination_gets_host_unreachable() {
    // Without pool6 only EAM'd IPv4 destinations can be translated.
    let mut cfg = sample_config();
    cfg.map.pool6 = None;
    let mut h = Harness::new(cfg);
    let input = Ip4::new(SERVER4, Ipv4Addr::new(198, 19, 0, 1)).udp(1, 2, 8);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::DestinationUntranslatable));
    assert_eq!(view(&out[0]).icmp(), Some((3, 1)));
}

#[test]
fn rfc7915_s5_4_ipv4_mtu_gets_packet_too_big() {
    let mut cfg = sample_config();
    cfg.ipv4_mtu = Some(1400);
    let mut h = Harness::new(cfg);
    let (v, out) = h.run(&v6().udp(1, 2, 1400));
    assert_eq!(v, Verdict::Replied(DropReason::PacketTooBig));
    assert_eq!(view(&out[0]).icmp(), Some((2, 0)));
    assert_eq!(&out[0][44..48], &1420u32.to_be_bytes(), "IPv4 MTU + 20");
    h.one(&v6().udp(1, 2, 1300));
}

#[test]
fn rfc7915_s4_4_ipv6_mtu_gets_fragmentation_needed() {
    let mut cfg = sample_config();
    cfg.ipv6_mtu = Some(1400);
    let mut h = Harness::new(cfg);
    let (v, out) = h.run(&v4().df(true).udp(1, 2, 1400));
    assert_eq!(v, Verdict::Replied(DropReason::PacketTooBig));
    assert_eq!(view(&out[0]).icmp(), Some((3, 4)));
    assert_eq!(&out[0][26..28], &1380u16.to_be_bytes(), "IPv6 MTU - 20");
    h.one(&v4().df(true).udp(1, 2, 1300));
}

// ---- Hop limit / TTL (§4.1, §5.1, §4.4, §5.4) ------------------------------------------

#[test]
fn rfc7915_s5_1_hop_limit_1_gets_time_exceeded() {
    let mut h = Harness::sample();
    let input = v6().hop_limit(1).udp(1, 2, 8);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::HopLimitExceeded));
    let s = view(&out[0]);
    assert_eq!(s.family, Family::V6);
    assert_eq!(s.icmp(), Some((3, 0)));
    assert_eq!(s.dst, IpAddr::V6(CLIENT6));
    assert_eq!(&out[0][48..], &input[..], "quotes the offending packet");
    assert_eq!(h.t.counters().icmp_generated, 1);
}

#[test]
fn rfc7915_s4_1_ttl_1_gets_time_exceeded() {
    let mut h = Harness::sample();
    let input = v4().ttl(1).udp(1, 2, 8);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::HopLimitExceeded));
    let s = view(&out[0]);
    assert_eq!(s.family, Family::V4);
    assert_eq!(s.icmp(), Some((11, 0)));
    assert_eq!(s.dst, IpAddr::V4(SERVER4));
}

#[test]
fn rfc4443_s2_4_e_no_error_about_an_error() {
    let mut h = Harness::sample();
    let inner = server_as_v6().udp(1, 2, 8);
    let input = Ip6::new(ROUTER_V6_EAM, SERVER6)
        .hop_limit(1)
        .icmp_error(1, 4, [0; 4], &inner);
    assert_eq!(
        h.run(&input).0,
        Verdict::Dropped(DropReason::HopLimitExceeded)
    );
    let input =
        Ip4::new(ROUTER4, CLIENT4)
            .ttl(1)
            .icmp_error(3, 3, [0; 4], &client_as_v4().udp(1, 2, 8));
    assert_eq!(
        h.run(&input).0,
        Verdict::Dropped(DropReason::HopLimitExceeded)
    );
}

#[test]
fn rfc4443_s2_4_f_generated_errors_rate_limited() {
    let mut cfg = sample_config();
    cfg.icmp_errors_per_sec = 1;
    cfg.icmp_error_burst = 2;
    let mut h = Harness::new(cfg);
    let input = v6().hop_limit(1).udp(1, 2, 8);
    assert!(matches!(h.run(&input).0, Verdict::Replied(_)));
    assert!(matches!(h.run(&input).0, Verdict::Replied(_)));
    assert_eq!(
        h.run(&input).0,
        Verdict::Dropped(DropReason::HopLimitExceeded)
    );
    assert_eq!(h.t.counters().icmp_rate_limited, 1);
    h.now_ns = 1_000_000_000;
    assert!(matches!(h.run(&input).0, Verdict::Replied(_)));
}

// ---- Extension headers (§5.1) -----------------------------------------------------------

#[test]
fn rfc7915_s5_1_hop_by_hop_and_destination_options_skipped() {
    let mut h = Harness::sample();
    let input = v6().hop_by_hop().dest_opts().udp(1, 2, 20);
    let out = h.one(&input);
    assert_eq!(out.len(), input.len() - 20 - 16);
    assert!(view(&out).l4_verified);
}

#[test]
fn rfc7915_s5_1_routing_header_segments_left_gets_parameter_problem() {
    let mut h = Harness::sample();
    let input = v6().routing(1).udp(1, 2, 8);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::RoutingHeader));
    let s = view(&out[0]);
    assert_eq!(s.icmp(), Some((4, 0)));
    assert_eq!(
        &out[0][44..48],
        &43u32.to_be_bytes(),
        "pointer to Segments Left"
    );
}

#[test]
fn rfc7915_s5_1_exhausted_routing_header_skipped() {
    let mut h = Harness::sample();
    let out = h.one(&v6().routing(0).udp(1, 2, 8));
    assert!(view(&out).l4_verified);
}

/// §5.1 + §5.4: an extension header we cannot walk: dropped, and told
/// "administratively prohibited".
#[test]
fn rfc7915_s5_4_unknown_extension_header_gets_admin_prohibited() {
    let mut h = Harness::sample();
    let input = v6().raw(135, &[59, 0, 0, 0, 0, 0, 0, 0]); // Mobility header
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::UnknownExtensionHeader));
    assert_eq!(view(&out[0]).icmp(), Some((1, 1)));
}

// ---- Fragments (§4.1, §5.1.1, §4 fragmentation) ------------------------------------------

/// Reassemble fragments' payloads (test helper; no overlap handling).
fn udp_verifies_v6(src: Ipv6Addr, dst: Ipv6Addr, udp: &[u8]) -> bool {
    let ps = sixgate_testkit::csum::pseudo_v6(src.octets(), dst.octets(), proto::UDP, udp.len());
    sixgate_testkit::csum::verifies(ps, udp)
}

fn udp_verifies_v4(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> bool {
    let ps = sixgate_testkit::csum::pseudo_v4(src.octets(), dst.octets(), proto::UDP, udp.len());
    sixgate_testkit::csum::verifies(ps, udp)
}

#[test]
fn rfc7915_s4_1_ipv4_fragments_get_fragment_header() {
    let mut h = Harness::sample();
    let whole = v4().df(false).id(0xabcd).udp(53, 5353, 600);
    let mut outs = vec![];
    for f in split_v4(&whole, 256) {
        let out = h.one(&f);
        let s = view(&out);
        let fr = s.fragment.expect("Fragment header");
        assert_eq!(fr.id, 0xabcd, "§4.1 ID copied to the low 16 bits");
        outs.push(out);
    }
    let (udp, _) = reassemble(&outs);
    assert_eq!(udp.len(), 608);
    assert!(
        udp_verifies_v6(SERVER6, CLIENT6, &udp),
        "first fragment's UDP checksum updated incrementally"
    );
}

#[test]
fn rfc7915_s5_1_1_ipv6_fragments_become_ipv4_fragments() {
    let mut h = Harness::sample();
    let whole = v6().udp(5353, 53, 600);
    let mut outs = vec![];
    for f in split_v6(&whole, 256, 0x1234_5678) {
        let out = h.one(&f);
        let s = view(&out);
        assert_eq!(s.ipv4_id, Some(0x5678), "§5.1.1 low 16 bits of the ID");
        assert_eq!(s.df, Some(false));
        outs.push(out);
    }
    let (udp, first) = reassemble(&outs);
    assert!(first.fragment.unwrap().more);
    assert!(udp_verifies_v4(CLIENT4, SERVER4, &udp));
}

#[test]
fn rfc7915_s4_df0_oversized_packet_fragmented_to_lowest_ipv6_mtu() {
    let mut h = Harness::sample();
    let input = v4().df(false).id(42).udp(53, 5353, 1400);
    let (v, outs) = h.run(&input);
    assert_eq!(v, Verdict::Fragmented(2));
    for o in &outs {
        assert!(o.len() <= 1280);
        assert_eq!(view(o).fragment.unwrap().id, 42);
    }
    let (udp, _) = reassemble(&outs);
    assert_eq!(udp.len(), 1408);
    assert!(udp_verifies_v6(SERVER6, CLIENT6, &udp));
    assert_eq!(h.t.counters().fragments_out, 2);
}

#[test]
fn rfc7915_s4_df0_respects_configured_lowest_ipv6_mtu() {
    let mut cfg = sample_config();
    cfg.lowest_ipv6_mtu = 1500;
    let mut h = Harness::new(cfg);
    let input = v4().df(false).udp(53, 5353, 1400);
    assert_eq!(h.run(&input).0, Verdict::Translated);
}

#[test]
fn rfc7915_s4_df1_oversized_packet_left_to_the_ipv6_path() {
    let mut h = Harness::sample();
    let out = h.one(&v4().df(true).udp(53, 5353, 1400));
    assert_eq!(out.len(), 1400 + 8 + 40);
}

// ---- Fragmented ICMP Echo (§4.2, §5.2; rfc7915::icmp_fragments) -------------------------

/// §5.2: an Echo Request in three IPv6 fragments. The first waits (nothing
/// sent) until the last has given the message's length; the middle one goes
/// at once; the last sends itself and the first, whose ICMPv4 checksum is
/// right for the whole message.
#[test]
fn rfc7915_s5_2_fragmented_echo_first_fragment_waits_for_the_last() {
    let mut h = Harness::sample();
    let frags = split_v6(&v6().echo_request(7, 1, 600), 256, 9);
    assert_eq!(frags.len(), 3);
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Translated, Verdict::Fragmented(2)]
    );
    assert_eq!(outs.len(), 3);
    assert!(outs.iter().all(|o| view(o).family == Family::V4));
    assert!(icmp_verifies(&outs), "ICMPv4 checksum of the whole message");
    let (msg, _) = reassemble(&outs);
    assert_eq!((msg[0], msg.len()), (8, 608), "Echo Request, whole");
    assert_eq!(h.t.counters().translated_6to4, 3);
    assert_eq!(h.t.counters().total_drops(), 0);
}

/// §5.2 with the fragments out of order: the last one's length waits for
/// the first, which then goes at once.
#[test]
fn rfc7915_s5_2_fragmented_echo_last_fragment_first() {
    let mut h = Harness::sample();
    let mut frags = split_v6(&v6().echo_request(7, 2, 600), 256, 10);
    frags.reverse();
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(verdicts, [Verdict::Translated; 3]);
    assert!(icmp_verifies(&outs));
}

/// §4.2: the same from IPv4 (an Echo Reply in fragments, DF=0): the first
/// waits, and the ICMPv6 checksum takes the whole message's length.
#[test]
fn rfc7915_s4_2_fragmented_echo_first_fragment_waits_for_the_last() {
    let mut h = Harness::sample();
    let frags = split_v4(&v4().id(0x4242).echo_reply(7, 3, 900), 400);
    assert_eq!(frags.len(), 3);
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Translated, Verdict::Fragmented(2)]
    );
    assert!(outs.iter().all(|o| view(o).family == Family::V6));
    assert!(icmp_verifies(&outs), "ICMPv6 checksum of the whole message");
    let (msg, _) = reassemble(&outs);
    assert_eq!((msg[0], msg.len()), (129, 908), "Echo Reply, whole");

    // 1480-byte fragments (a 1500-byte link's): each is split again for
    // the IPv6 side (§4, lowest_ipv6_mtu 1280), the held first one too.
    let frags = split_v4(&v4().id(0x4343).echo_reply(7, 4, 3000), 1480);
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(
        verdicts,
        [
            Verdict::Held,
            Verdict::Fragmented(2),
            Verdict::Fragmented(3)
        ]
    );
    assert!(outs.iter().all(|o| o.len() <= 1280));
    assert!(icmp_verifies(&outs));
}

/// A first fragment whose last one never comes is counted once its slot is
/// needed after the wait (2 s); the next datagram is unaffected.
#[test]
fn rfc7915_s5_2_fragmented_echo_without_its_last_fragment_expires() {
    let mut h = Harness::sample();
    let frags = split_v6(&v6().echo_request(7, 4, 600), 256, 11);
    assert_eq!(h.run(&frags[0]).0, Verdict::Held);
    h.now_ns += 3_000_000_000;
    // The same datagram's last fragment, too late: the first is gone.
    assert_eq!(h.run(&frags[2]).0, Verdict::Translated);
    assert_eq!(h.t.counters().drops(DropReason::IcmpFragmentExpired), 1);
    let again = split_v6(&v6().echo_request(7, 5, 600), 256, 12);
    let (_, outs) = run_all(&mut h, &again);
    assert!(icmp_verifies(&outs));
}

/// What cannot wait is still dropped and counted: a first fragment over
/// 4096 bytes, and fragmented ICMP errors (they quote a packet; their length
/// never matters to a ping).
#[test]
fn rfc7915_s5_2_fragmented_icmp_that_cannot_wait_is_dropped() {
    let mut h = Harness::sample();
    let big = split_v6(&v6().echo_request(7, 6, 9000), 5000, 13);
    assert_eq!(
        h.run(&big[0]).0,
        Verdict::Dropped(DropReason::FragmentedIcmp)
    );
    let quoted = v4().udp(53, 5353, 1400);
    let error = Ip4::new(ROUTER4, CLIENT4).icmp_error(3, 1, [0; 4], &quoted);
    let frags = split_v4(&error, 600);
    assert_eq!(
        h.run(&frags[0]).0,
        Verdict::Dropped(DropReason::FragmentedIcmp)
    );
}

// ---- UDP zero checksum (§4.5) ---------------------------------------------------------

#[test]
fn rfc7915_s4_5_udp_zero_checksum_computed() {
    let mut h = Harness::sample();
    let out = h.one(&v4().udp_zero_checksum(53, 5353, 30));
    let s = view(&out);
    assert!(s.l4_verified);
    let L4::Udp { checksum, .. } = s.l4 else {
        panic!()
    };
    assert_ne!(checksum, 0);
}

#[test]
fn rfc7915_s4_5_udp_zero_checksum_drop_policy() {
    let mut cfg = sample_config();
    cfg.udp_zero_checksum = UdpZeroChecksum::Drop;
    let mut h = Harness::new(cfg);
    let (v, out) = h.run(&v4().udp_zero_checksum(53, 5353, 30));
    assert_eq!(v, Verdict::Replied(DropReason::UdpZeroChecksum));
    assert_eq!(view(&out[0]).icmp(), Some((3, 13)), "§4.4 admin prohibited");
}

#[test]
fn rfc7915_s4_5_fragmented_udp_zero_checksum_dropped() {
    let mut h = Harness::sample();
    let whole = v4().df(false).udp_zero_checksum(53, 5353, 600);
    let frags = split_v4(&whole, 256);
    assert_eq!(
        h.run(&frags[0]).0,
        Verdict::Replied(DropReason::UdpZeroChecksum)
    );
}

// ---- RFC 6052 §3.1, RFC 7757 §4 -----------------------------------------------------------

#[test]
fn rfc6052_s3_1_well_known_prefix_refuses_non_global() {
    let wkp = sixgate_core::addr::Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap();
    let mut cfg = sample_config();
    cfg.map.pool6 = Some(wkp);
    let mut h = Harness::new(cfg.clone());
    let private: Ipv6Addr = "64:ff9b::10.0.0.1".parse().unwrap();
    let input = Ip6::new(CLIENT6, private).udp(1, 2, 8);
    assert_eq!(h.run(&input).0, Verdict::Replied(DropReason::WkpNonGlobal));
    // A global address (documentation ranges are themselves non-global).
    let public: Ipv6Addr = "64:ff9b::8.8.8.8".parse().unwrap();
    h.one(&Ip6::new(CLIENT6, public).udp(1, 2, 8));

    cfg.map.wkp_strict = false;
    let mut h = Harness::new(cfg);
    h.one(&input);
}

/// 192.0.0.0/29 (DS-Lite B4 addresses, RFC 6333; the IPv4 Service Continuity
/// Prefix of RFC 7335; Global = False in the IANA IPv4 Special-Purpose Address
/// Registry, RFC 6890, as all of 192.0.0.0/24 but .9 and .10): no
/// address a router must refuse (RFC 1812 §5.3.7), so under a
/// network-specific pool6 it translates both ways; under the Well-Known
/// Prefix RFC 6052 §3.1 ("MUST NOT" embed non-global addresses, translators
/// "MUST ... drop") refuses it both ways (`wkp_non_global`, answered
/// "administratively prohibited", RFC 7915 §4.4 / §5.4) unless `wkp_strict`
/// is off.
#[test]
fn rfc6052_s3_1_ds_lite_192_0_0_0_29_refused_only_under_the_well_known_prefix() {
    let b4: Ipv4Addr = "192.0.0.2".parse().unwrap();
    let global: Ipv4Addr = "8.8.8.8".parse().unwrap();
    let packets = |p: sixgate_core::addr::Rfc6052Prefix| {
        [
            Ip4::new(b4, global).udp(1, 2, 8),
            Ip4::new(global, b4).udp(1, 2, 8),
            Ip6::new(p.embed(b4), p.embed(global)).udp(1, 2, 8),
            Ip6::new(p.embed(global), p.embed(b4)).udp(1, 2, 8),
        ]
    };
    let nsp = common::pool6();
    let mut h = Harness::new(sixgate_core::Config::with_pool6(Some(nsp)));
    for p in packets(nsp) {
        h.one(&p);
    }
    let wkp = sixgate_core::addr::Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap();
    let mut cfg = sixgate_core::Config::with_pool6(Some(wkp));
    let mut h = Harness::new(cfg.clone());
    for p in packets(wkp) {
        assert_eq!(h.run(&p).0, Verdict::Replied(DropReason::WkpNonGlobal));
    }
    cfg.map.wkp_strict = false;
    let mut h = Harness::new(cfg);
    for p in packets(wkp) {
        h.one(&p);
    }
}

#[test]
fn rfc7757_s4_hairpin_intrinsic() {
    let mut h = Harness::sample();
    // The client reaches a neighbour by the neighbour's IPv4 address through pool6.
    let neighbour_via_pool6: Ipv6Addr = "2001:db8:64::198.18.0.6".parse().unwrap();
    let out = h.one(&Ip6::new(CLIENT6, neighbour_via_pool6).udp(1, 2, 20));
    let s = view(&out);
    assert_eq!(s.family, Family::V6);
    // RFC 7757 Appendix B: the source in its pool6 form (tests/rfc7757.rs).
    assert_eq!(
        s.src,
        IpAddr::V6("2001:db8:64::198.18.0.5".parse().unwrap())
    );
    assert_eq!(s.dst, IpAddr::V6("2001:db8:1::6".parse().unwrap()));
    assert_eq!(s.hop_limit, 63, "decremented once");
    assert!(s.l4_verified);
    assert_eq!(h.t.counters().hairpinned, 1);
}

#[test]
fn rfc7757_s4_hairpin_off_and_simple() {
    let neighbour_via_pool6: Ipv6Addr = "2001:db8:64::198.18.0.6".parse().unwrap();
    for mode in [HairpinMode::Off, HairpinMode::Simple] {
        let mut cfg = sample_config();
        cfg.hairpin = mode;
        let mut h = Harness::new(cfg);
        let (v, out) = h.run(&Ip6::new(CLIENT6, neighbour_via_pool6).udp(1, 2, 20));
        assert_eq!(v, Verdict::Replied(DropReason::Hairpin), "{mode:?}");
        assert_eq!(view(&out[0]).icmp(), Some((1, 1)), "§5.4 admin prohibited");
    }
}

/// RFC 6877 §6.3 with RFC 7757 §4: in a CLAT the EAM entry maps the customer's
/// IPv4 hosts to the CLAT's IPv6 prefix, so an IPv6 packet *to* that prefix is the
/// ordinary 6→4 direction, whatever the hairpin mode; only a destination reached
/// through pool6 hairpins.
#[test]
fn rfc6877_clat_return_traffic_is_no_hairpin() {
    let customer6: Ipv6Addr = "2001:db8:c1a7::2".parse().unwrap();
    for mode in [
        HairpinMode::Off,
        HairpinMode::Simple,
        HairpinMode::Intrinsic,
    ] {
        let mut cfg = sample_config();
        cfg.map
            .eam
            .insert(sixgate_core::addr::Eam::parse("192.0.0.0/29", "2001:db8:c1a7::/125").unwrap())
            .unwrap();
        cfg.hairpin = mode;
        let mut h = Harness::new(cfg);
        let out = h.one(&Ip6::new(SERVER6, customer6).udp(53, 1000, 20));
        let s = view(&out);
        assert_eq!(s.family, Family::V4, "{mode:?}");
        assert_eq!(s.src, IpAddr::V4(SERVER4));
        assert_eq!(s.dst, IpAddr::V4("192.0.0.2".parse().unwrap()));
        assert_eq!(h.t.counters().hairpinned, 0);
        // Another customer host reached through the PLAT prefix still hairpins.
        let (v, _) =
            h.run(&Ip6::new(customer6, "2001:db8:64::192.0.0.3".parse().unwrap()).udp(1, 2, 8));
        if mode == HairpinMode::Off {
            assert_eq!(v, Verdict::Replied(DropReason::Hairpin));
        }
    }
}

// ---- RFC 6864 IPv4 ID ---------------------------------------------------------------------

#[test]
fn rfc6864_ipv4_id_per_flow_increments() {
    let mut h = Harness::sample();
    let a = view(&h.one(&v6().udp(1, 2, 8))).ipv4_id.unwrap();
    let b = view(&h.one(&v6().udp(1, 2, 8))).ipv4_id.unwrap();
    assert_eq!(b, a.wrapping_add(1));
}

// ---- Bad input ----------------------------------------------------------------------------

#[test]
fn malformed_inputs_are_counted_drops() {
    let mut h = Harness::sample();
    let good6 = v6().udp(1, 2, 8);
    let good4 = v4().udp(1, 2, 8);
    for bad in [
        vec![],
        vec![0x60],
        good6[..39].to_vec(),
        good6[..good6.len() - 1].to_vec(),
        good4[..19].to_vec(),
        good4[..good4.len() - 1].to_vec(),
        vec![0x50; 60],
    ] {
        let (v, out) = h.run_unchecked(&bad);
        assert!(matches!(v, Verdict::Dropped(_)), "{bad:02x?} → {v:?}");
        assert!(out.is_empty());
    }
    assert_eq!(h.t.counters().total_drops(), 7);
}

#[test]
fn trailing_link_padding_is_ignored() {
    let mut h = Harness::sample();
    let mut input = v4().udp(1, 2, 8);
    input.extend_from_slice(&[0; 10]);
    let out = h.one(&input);
    assert_eq!(out.len(), 40 + 8 + 8);
}

#[test]
fn rfc7757_s3_eam_entry_added_and_removed_at_runtime() {
    use sixgate_core::addr::Eam;
    let mut h = Harness::sample();
    let host6: Ipv6Addr = "2001:db8:2::5".parse().unwrap();
    let probe = Ip6::new(host6, SERVER6).udp(5000, 53, 10);
    assert_eq!(
        h.run(&probe).0,
        Verdict::Replied(DropReason::SourceUntranslatable)
    );
    let entry = Eam::parse("198.18.1.0/24", "2001:db8:2::/120").unwrap();
    let mut cfg = h.t.config().clone();
    cfg.map.eam.insert(entry).unwrap();
    h.t.reconfigure(std::sync::Arc::new(cfg.clone())).unwrap();
    let out = h.one(&probe);
    assert_eq!(view(&out).src, IpAddr::V4(Ipv4Addr::new(198, 18, 1, 5)));
    cfg.map.eam.remove(&entry);
    h.t.reconfigure(std::sync::Arc::new(cfg)).unwrap();
    assert_eq!(
        h.run(&probe).0,
        Verdict::Replied(DropReason::SourceUntranslatable)
    );
    // The counters were kept across both changes.
    assert_eq!(h.t.counters().drops(DropReason::SourceUntranslatable), 2);
}

// ---- Issue 19: flags, lengths and MTUs the RFC names ---------------------------------------

/// §5.1 Flags: DF comes from the size of the *translated* IPv4 packet. A
/// 576-byte ICMPv4 error made from a 1400-byte ICMPv6 error (longer than RFC
/// 4443 §2.4 (c) allows, but sent by some routers) has DF=0, and so an
/// Identification (RFC 6864).
#[test]
fn rfc7915_s5_1_df_of_translated_icmp_error_from_its_truncated_size() {
    let mut h = Harness::sample();
    let inner = server_as_v6().udp(53, 5353, 1400);
    let input = v6_error_from(ROUTER_V6_EAM, 1, 4, [0; 4], &truncate(&inner, 1400 - 48));
    assert_eq!(input.len(), 1400);
    let out = h.one(&input);
    assert_eq!(out.len(), 576);
    let s = view(&out);
    assert_eq!(s.df, Some(false), "576 bytes ≤ 1260: DF=0");
    assert_ne!(s.ipv4_id, Some(0), "DF=0 needs an Identification");
    // The quoted packet's DF is its own IPv4 size: 20 + 8 + 1400 > 1260.
    assert_eq!(out[28 + 6] & 0x40, 0x40, "inner DF");
}

/// §5.1 Flags: with extension headers the IPv6 packet is larger than its IPv4
/// form; DF follows the IPv4 size.
#[test]
fn rfc7915_s5_1_df_from_ipv4_size_not_ipv6_size() {
    let mut h = Harness::sample();
    // 40 + 8 (Hop-by-Hop) + 8 (Destination Options) + 8 + 1224 = 1288 bytes;
    // as IPv4: 20 + 8 + 1224 = 1252.
    let out = h.one(&v6().hop_by_hop().dest_opts().udp(1, 2, 1224));
    assert_eq!(out.len(), 1252);
    assert_eq!(view(&out).df, Some(false));
}

/// §5.1 / RFC 2675: Payload Length 0 is a jumbogram only with a Hop-by-Hop
/// Jumbo Payload option. Next Header 59 with no payload is valid and, like
/// every protocol (§5.5), translated.
#[test]
fn rfc7915_s5_1_no_next_header_with_payload_length_0_translated() {
    let mut h = Harness::sample();
    let input = v6().raw(59, &[]);
    assert_eq!(input.len(), 40);
    let out = h.one(&input);
    assert_eq!(out.len(), 20);
    let s = view(&out);
    assert_eq!(s.protocol, 59);
    assert_eq!((s.src, s.dst), (IpAddr::V4(CLIENT4), IpAddr::V4(SERVER4)));
    // A zero Payload Length that claims a Hop-by-Hop header is still refused.
    let mut jumbo = v6().hop_by_hop().udp(1, 2, 8);
    jumbo[4..6].copy_from_slice(&[0, 0]);
    assert_eq!(h.run(&jumbo).0, Verdict::Dropped(DropReason::Malformed));
}

/// §4.2: the Packet Too Big MTU is min(advertised + 20, IPv6 next hop's MTU,
/// IPv4 next hop's MTU + 20), with the MTUs configured.
#[test]
fn rfc7915_s4_2_packet_too_big_mtu_is_minimum_of_three() {
    let inner = client_as_v4().udp(1, 2, 1460);
    let frag_needed = |mtu: u16| {
        let m = mtu.to_be_bytes();
        v4_error(3, 4, [0, 0, m[0], m[1]], &truncate(&inner, 200))
    };
    // Neither MTU configured: advertised + 20.
    let mut h = Harness::sample();
    assert_eq!(
        &l4(&h.one(&frag_needed(1496)))[4..8],
        &1516u32.to_be_bytes()
    );
    // IPv6 link of 1500: the translated packet could not be larger anyway.
    let mut cfg = sample_config();
    cfg.ipv6_mtu = Some(1500);
    let mut h = Harness::new(cfg);
    assert_eq!(
        &l4(&h.one(&frag_needed(1496)))[4..8],
        &1500u32.to_be_bytes()
    );
    assert_eq!(
        &l4(&h.one(&frag_needed(1400)))[4..8],
        &1420u32.to_be_bytes()
    );
    // IPv4 link of 1400: + 20.
    let mut cfg = sample_config();
    cfg.ipv4_mtu = Some(1400);
    let mut h = Harness::new(cfg);
    assert_eq!(
        &l4(&h.one(&frag_needed(1496)))[4..8],
        &1420u32.to_be_bytes()
    );
    // Never below the IPv6 minimum.
    assert_eq!(&l4(&h.one(&frag_needed(576)))[4..8], &1280u32.to_be_bytes());
}

/// §5.5 / RFC 8200 §8.1: an IPv6 UDP checksum of zero is invalid (outside RFC
/// 6935 tunnels); `udp_zero_checksum` decides, as in the other direction:
/// compute one, or drop.
#[test]
fn rfc7915_s5_5_ipv6_udp_zero_checksum_follows_policy() {
    let mut input = v6().udp(5353, 53, 30);
    input[46..48].copy_from_slice(&[0, 0]);
    let mut h = Harness::sample();
    let out = h.one(&input);
    let s = view(&out);
    assert!(s.l4_verified);
    let L4::Udp { checksum, .. } = s.l4 else {
        panic!()
    };
    assert_ne!(checksum, 0, "computed");

    let mut cfg = sample_config();
    cfg.udp_zero_checksum = UdpZeroChecksum::Drop;
    let mut h = Harness::new(cfg);
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Replied(DropReason::UdpZeroChecksum));
    assert_eq!(view(&out[0]).icmp(), Some((1, 1)), "§5.4 admin prohibited");
    // A fragment's checksum covers bytes we do not have: dropped either way.
    let whole = v6().udp(5353, 53, 600);
    let mut frags = split_v6(&whole, 256, 9);
    frags[0][54..56].copy_from_slice(&[0, 0]);
    let mut h = Harness::sample();
    assert_eq!(
        h.run_unchecked(&frags[0]).0,
        Verdict::Replied(DropReason::UdpZeroChecksum)
    );
}

// ---- Addresses no router forwards, and the quoted packet (issue 19) -----------------------

/// §4.1 Source Address: an ICMPv4 error from an illegal source (0.0.0.0,
/// 127.0.0.1: a misconfigured router) is translated, for troubleshooting;
/// anything else from such a source is dropped (RFC 1812 §5.3.7).
#[test]
fn rfc7915_s4_1_icmpv4_error_from_illegal_source_translated() {
    let mut h = Harness::sample();
    let inner = client_as_v4().udp(5353, 53, 20);
    for (router, router6) in [
        ("127.0.0.1", "2001:db8:64::7f00:1"),
        ("0.0.0.0", "2001:db8:64::"),
        ("169.254.0.1", "2001:db8:64::a9fe:1"),
    ] {
        let router: Ipv4Addr = router.parse().unwrap();
        let err = Ip4::new(router, CLIENT4).icmp_error(3, 1, [0; 4], &inner);
        let s = view(&h.one(&err));
        assert_eq!(s.src, IpAddr::V6(router6.parse().unwrap()), "{router}");
        assert_eq!(s.dst, IpAddr::V6(CLIENT6));
        let plain = Ip4::new(router, CLIENT4).udp(1, 2, 8);
        assert_eq!(h.run(&plain).0, Verdict::Dropped(DropReason::BadSource));
    }
    // Multicast and broadcast sources never send errors.
    let err = Ip4::new(Ipv4Addr::BROADCAST, CLIENT4).icmp_error(3, 1, [0; 4], &inner);
    assert_eq!(h.run(&err).0, Verdict::Dropped(DropReason::BadSource));
}

/// RFC 1812 §5.3.7, RFC 3927 §7, RFC 7915 §4.1: 0/8, 127/8, 169.254/16, 224/4,
/// 240/4 and 255.255.255.255 are never forwarded, as a source or a destination,
/// in either direction (IPv6 → IPv4 checks the address after mapping).
#[test]
fn rfc1812_s5_3_7_addresses_never_forwarded_both_directions() {
    // Issue 30: the host's own link-scope multicast (MLD from :: or a
    // link-local address) is counted apart; a client's multicast is not.
    {
        let mut h = Harness::sample();
        let a = |s: &str| -> Ipv6Addr { s.parse().unwrap() };
        for src in ["::", "fe80::1"] {
            let p = Ip6::new(a(src), a("ff02::16")).udp(1, 2, 8);
            let v = h.run(&p).0;
            assert_eq!(v, Verdict::Dropped(DropReason::HostMulticast), "{src}");
        }
        let p = Ip6::new(CLIENT6, a("ff02::16")).udp(1, 2, 8);
        assert_eq!(h.run(&p).0, Verdict::Dropped(DropReason::BadDestination));
    }
    let mut h = Harness::sample();
    let pool6 = |a: &str| -> Ipv6Addr { format!("2001:db8:64::{a}").parse().unwrap() };
    for a in [
        "0.0.0.1",
        "127.0.0.1",
        "169.254.1.1",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
    ] {
        let v4: Ipv4Addr = a.parse().unwrap();
        // IPv4 → IPv6.
        let p = Ip4::new(v4, CLIENT4).udp(1, 2, 8);
        assert_eq!(h.run(&p).0, Verdict::Dropped(DropReason::BadSource), "{a}");
        let p = Ip4::new(SERVER4, v4).udp(1, 2, 8);
        assert_eq!(
            h.run(&p).0,
            Verdict::Dropped(DropReason::BadDestination),
            "{a}"
        );
        // IPv6 → IPv4: the address embedded in pool6.
        let p = Ip6::new(pool6(a), CLIENT6).udp(1, 2, 8);
        assert_eq!(h.run(&p).0, Verdict::Dropped(DropReason::BadSource), "{a}");
        let p = Ip6::new(CLIENT6, pool6(a)).udp(1, 2, 8);
        assert_eq!(
            h.run(&p).0,
            Verdict::Dropped(DropReason::BadDestination),
            "{a}"
        );
    }
    // An ICMPv6 error from such a router takes the RFC 6791 source instead.
    let inner = server_as_v6().udp(53, 5353, 20);
    let err = v6_error_from(pool6("127.0.0.1"), 1, 0, [0; 4], &inner);
    assert_eq!(
        view(&h.one(&err)).src,
        IpAddr::V4(Ipv4Addr::new(192, 0, 0, 8))
    );
}

/// §4.3 / §5.3: a quoted packet with an address no router forwards could not
/// have been translated; an error quoting it is dropped, not translated.
#[test]
fn rfc7915_s4_3_s5_3_quoted_never_forwarded_address_dropped() {
    let mut h = Harness::sample();
    let inner = Ip4::new(CLIENT4, Ipv4Addr::LOCALHOST).udp(1, 2, 8);
    assert_eq!(
        h.run(&v4_error(3, 1, [0; 4], &inner)).0,
        Verdict::Dropped(DropReason::IcmpInnerUntranslatable)
    );
    let inner = Ip6::new("2001:db8:64::7f00:1".parse().unwrap(), CLIENT6).udp(1, 2, 8);
    assert_eq!(
        h.run(&v6_error_from(ROUTER_V6_EAM, 1, 0, [0; 4], &inner)).0,
        Verdict::Dropped(DropReason::IcmpInnerUntranslatable)
    );
}

/// RFC 1812 §5.3.7: "A router MAY have a switch that allows the network
/// manager to disable these checks. If such a switch is provided, it MUST
/// default to performing the checks." `class_e = "translate"` is that switch
/// for 240.0.0.0/4 alone: such an address translates as a source and as a
/// destination, IPv4 → IPv6 and IPv6 → IPv4, and in the packet an ICMP error
/// quotes (RFC 7915 §4.3, §5.3: judged as the outer packet would be).
/// 255.255.255.255 (limited broadcast) and the other blocks stay dropped.
#[test]
fn rfc1812_s5_3_7_class_e_translate_knob_both_directions() {
    let mut cfg = sample_config();
    cfg.class_e = ClassE::Translate;
    let mut h = Harness::new(cfg);
    let pool6 = |a: Ipv4Addr| -> Ipv6Addr { common::pool6().embed(a) };
    for a in ["240.0.0.0", "240.0.0.1", "250.1.2.3", "255.255.255.254"] {
        let v4: Ipv4Addr = a.parse().unwrap();
        // IPv4 → IPv6, source and destination.
        let s = view(&h.one(&Ip4::new(v4, CLIENT4).udp(1, 2, 8)));
        assert_eq!(
            (s.src, s.dst),
            (IpAddr::V6(pool6(v4)), IpAddr::V6(CLIENT6)),
            "{a}"
        );
        let s = view(&h.one(&Ip4::new(CLIENT4, v4).udp(1, 2, 8)));
        assert_eq!(
            (s.src, s.dst),
            (IpAddr::V6(CLIENT6), IpAddr::V6(pool6(v4))),
            "{a}"
        );
        // IPv6 → IPv4: the address embedded in pool6.
        let s = view(&h.one(&Ip6::new(pool6(v4), CLIENT6).udp(1, 2, 8)));
        assert_eq!((s.src, s.dst), (IpAddr::V4(v4), IpAddr::V4(CLIENT4)), "{a}");
        let s = view(&h.one(&Ip6::new(CLIENT6, pool6(v4)).udp(1, 2, 8)));
        assert_eq!((s.src, s.dst), (IpAddr::V4(CLIENT4), IpAddr::V4(v4)), "{a}");
        // §4.3 / §5.3: an error quoting such a packet translates too.
        let inner = Ip4::new(CLIENT4, v4).udp(1, 2, 8);
        let s = view(&h.one(&v4_error(3, 1, [0; 4], &inner)));
        assert_eq!(s.dst, IpAddr::V6(CLIENT6), "{a}");
        let inner = Ip6::new(pool6(v4), CLIENT6).udp(1, 2, 8);
        let s = view(&h.one(&v6_error_from(ROUTER_V6_EAM, 1, 0, [0; 4], &inner)));
        assert_eq!(s.dst, IpAddr::V4(SERVER4), "{a}");
    }
    for a in [
        "255.255.255.255",
        "224.0.0.1",
        "127.0.0.1",
        "0.0.0.1",
        "169.254.1.1",
    ] {
        let v4: Ipv4Addr = a.parse().unwrap();
        let bad_source = Verdict::Dropped(DropReason::BadSource);
        let bad_destination = Verdict::Dropped(DropReason::BadDestination);
        assert_eq!(
            h.run(&Ip4::new(v4, CLIENT4).udp(1, 2, 8)).0,
            bad_source,
            "{a}"
        );
        assert_eq!(
            h.run(&Ip4::new(CLIENT4, v4).udp(1, 2, 8)).0,
            bad_destination,
            "{a}"
        );
        assert_eq!(
            h.run(&Ip6::new(pool6(v4), CLIENT6).udp(1, 2, 8)).0,
            bad_source,
            "{a}"
        );
        assert_eq!(
            h.run(&Ip6::new(CLIENT6, pool6(v4)).udp(1, 2, 8)).0,
            bad_destination,
            "{a}"
        );
        let inner = Ip4::new(CLIENT4, v4).udp(1, 2, 8);
        assert_eq!(
            h.run(&v4_error(3, 1, [0; 4], &inner)).0,
            Verdict::Dropped(DropReason::IcmpInnerUntranslatable),
            "{a}"
        );
        let inner = Ip6::new(pool6(v4), CLIENT6).udp(1, 2, 8);
        assert_eq!(
            h.run(&v6_error_from(ROUTER_V6_EAM, 1, 0, [0; 4], &inner)).0,
            Verdict::Dropped(DropReason::IcmpInnerUntranslatable),
            "{a}"
        );
    }
}

/// `class_e` changes on a reload (`Translator::reconfigure`), both ways.
#[test]
fn rfc1812_s5_3_7_class_e_follows_a_reload() {
    let mut h = Harness::sample();
    let p = Ip4::new("240.1.2.3".parse().unwrap(), CLIENT4).udp(1, 2, 8);
    assert_eq!(h.run(&p).0, Verdict::Dropped(DropReason::BadSource));
    let mut cfg = h.t.config().clone();
    cfg.class_e = ClassE::Translate;
    h.t.reconfigure(std::sync::Arc::new(cfg.clone())).unwrap();
    assert_eq!(h.run(&p).0, Verdict::Translated);
    cfg.class_e = ClassE::Drop;
    h.t.reconfigure(std::sync::Arc::new(cfg)).unwrap();
    assert_eq!(h.run(&p).0, Verdict::Dropped(DropReason::BadSource));
}

/// RFC 1812 §5.3.7 switched off for 240/4 does not switch off RFC 6052 §3.1:
/// under the Well-Known Prefix 240/4 is not global (IANA registry,
/// "Reserved", Global = False), so with `wkp_strict` a packet from or to it
/// is still refused (`wkp_non_global`, answered "administratively
/// prohibited", §4.4 / §5.4) in both directions. By default IPv4 → IPv6 is
/// `bad_source` / `bad_destination`, asked before the prefix; IPv6 → IPv4
/// asks after mapping, so the prefix refuses it first (`wkp_non_global`).
#[test]
fn rfc6052_s3_1_class_e_translate_under_the_well_known_prefix() {
    let wkp = sixgate_core::addr::Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap();
    let class_e: Ipv4Addr = "240.0.0.1".parse().unwrap();
    let global: Ipv4Addr = "8.8.8.8".parse().unwrap();
    let packets = [
        Ip4::new(class_e, global).udp(1, 2, 8),
        Ip4::new(global, class_e).udp(1, 2, 8),
        Ip6::new(wkp.embed(class_e), wkp.embed(global)).udp(1, 2, 8),
        Ip6::new(wkp.embed(global), wkp.embed(class_e)).udp(1, 2, 8),
    ];
    let mut cfg = sixgate_core::Config::with_pool6(Some(wkp));
    cfg.class_e = ClassE::Translate;
    let mut h = Harness::new(cfg);
    for p in &packets {
        assert_eq!(h.run(p).0, Verdict::Replied(DropReason::WkpNonGlobal));
    }
    let mut h = Harness::new(sixgate_core::Config::with_pool6(Some(wkp)));
    let want = [
        Verdict::Dropped(DropReason::BadSource),
        Verdict::Dropped(DropReason::BadDestination),
        Verdict::Replied(DropReason::WkpNonGlobal),
        Verdict::Replied(DropReason::WkpNonGlobal),
    ];
    for (i, p) in packets.iter().enumerate() {
        assert_eq!(h.run(p).0, want[i], "{i}");
    }
}

/// §4.1 / §5.1 Protocol and Next Header, outer and quoted alike: a number that
/// would claim an IPv6 extension header or ICMPv6 inside IPv4 (or ICMPv4 inside
/// IPv6) is dropped as an outer packet (`unknown_protocol`) and as a quoted one
/// (`icmp_inner_untranslatable`).
#[test]
fn rfc7915_s4_3_s5_3_quoted_protocol_judged_as_outer() {
    let mut h = Harness::sample();
    for proto in [0u8, 43, 44, 58, 60] {
        let outer = v4().raw(proto, &[0; 8]);
        assert_eq!(
            h.run(&outer).0,
            Verdict::Replied(DropReason::UnknownProtocol)
        );
        let inner = client_as_v4().raw(proto, &[0; 8]);
        assert_eq!(
            h.run(&v4_error(3, 1, [0; 4], &inner)).0,
            Verdict::Dropped(DropReason::IcmpInnerUntranslatable),
            "quoted protocol {proto}"
        );
    }
    let outer = v6().raw(1, &[8, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        h.run(&outer).0,
        Verdict::Replied(DropReason::UnknownProtocol)
    );
    let inner = server_as_v6().raw(1, &[8, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        h.run(&v6_error_from(ROUTER_V6_EAM, 1, 0, [0; 4], &inner)).0,
        Verdict::Dropped(DropReason::IcmpInnerUntranslatable)
    );
}

/// §4.4 / §5.4: the "administratively prohibited" errors for packets the
/// translator cannot translate are rate-limited like every error it sends
/// (RFC 4443 §2.4 (f)), and the packets are counted under their own reason.
#[test]
fn rfc7915_s4_4_s5_4_admin_prohibited_errors_rate_limited_and_counted() {
    let mut cfg = sample_config();
    cfg.icmp_errors_per_sec = 1;
    cfg.icmp_error_burst = 1;
    let mut h = Harness::new(cfg);
    let v4_ah = v4().raw(51, &[0; 16]);
    let v6_icmp4 = v6().raw(1, &[8, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        h.run(&v4_ah).0,
        Verdict::Replied(DropReason::UnknownProtocol)
    );
    assert_eq!(
        h.run(&v6_icmp4).0,
        Verdict::Dropped(DropReason::UnknownProtocol)
    );
    assert_eq!(h.t.counters().drops(DropReason::UnknownProtocol), 2);
    assert_eq!(h.t.counters().icmp_generated, 1);
    assert_eq!(h.t.counters().icmp_rate_limited, 1);
    // Not about a non-first fragment.
    h.now_ns = 10_000_000_000;
    let frag = v4().fragment(51, 8, false, &[0; 16]);
    assert_eq!(
        h.run(&frag).0,
        Verdict::Dropped(DropReason::UnknownProtocol)
    );
}

// ---- RFC 7112: the header chain (issue 19) ------------------------------------------------

/// RFC 7112 §5 and RFC 7915 §5.1.1 / §5.4: an extension header after the
/// Fragment header cannot be translated (IPv4 has nowhere to put it, and the
/// later fragments' offsets count its bytes): dropped, counted
/// (`extension_header_chain`), answered "administratively prohibited".
#[test]
fn rfc7112_s5_extension_header_after_fragment_header_refused() {
    let mut h = Harness::sample();
    for input in [
        v6().fragment_header(0, true, 7).dest_opts().udp(1, 2, 64),
        v6().fragment_header(0, false, 8).dest_opts().udp(1, 2, 64),
        v6().fragment_header(0, true, 9).routing(0).udp(1, 2, 64),
    ] {
        let (v, out) = h.run(&input);
        assert_eq!(v, Verdict::Replied(DropReason::ExtensionHeaderChain));
        let s = view(&out[0]);
        assert_eq!((s.dst, s.icmp()), (IpAddr::V6(CLIENT6), Some((1, 1))));
    }
    assert_eq!(h.t.counters().drops(DropReason::ExtensionHeaderChain), 3);
    // Before the Fragment header they are fine.
    let whole = v6().dest_opts().udp(1, 2, 600);
    for f in split_v6(&whole, 256, 10) {
        assert_eq!(h.run(&f).0, Verdict::Translated);
    }
}

/// RFC 8200 §4.3 (with RFC 7915 §5.4): a Hop-by-Hop header anywhere but first is
/// the same case, counted and answered, no longer a silent `malformed`.
#[test]
fn rfc8200_s4_3_hop_by_hop_not_first_refused() {
    let mut h = Harness::sample();
    let input = v6().dest_opts().hop_by_hop().udp(1, 2, 8);
    // The oracle refuses the quoted packet itself: the error is read by hand.
    let (v, out) = h.run_unchecked(&input);
    assert_eq!(v, Verdict::Replied(DropReason::ExtensionHeaderChain));
    assert_eq!((out[0][6], out[0][40], out[0][41]), (58, 1, 1));
    assert_eq!(&out[0][24..40], &CLIENT6.octets());
    assert_eq!(&out[0][48..], &input[..]);
}

// ---- §1.4 / §5.1: IPv6 fragments and the IPv4 MTU (issue 19) ------------------------------

/// §5.1 / RFC 791: an IPv6 fragment whose IPv4 form (DF=0) is larger than
/// `ipv4_mtu` is fragmented further, as an IPv4 router would; the pieces keep
/// the Identification and reassemble into the datagram.
#[test]
fn rfc7915_s5_1_ipv6_fragment_larger_than_ipv4_mtu_fragmented_further() {
    let mut cfg = sample_config();
    cfg.ipv4_mtu = Some(1400);
    let mut h = Harness::new(cfg);
    let whole = v6().udp(5353, 53, 3000);
    let mut outs = vec![];
    for f in split_v6(&whole, 1400, 0x0042_0077) {
        let (v, out) = h.run(&f);
        assert!(
            matches!(v, Verdict::Fragmented(_) | Verdict::Translated),
            "{v:?}"
        );
        outs.extend(out);
    }
    assert!(outs.len() > 3, "the 1420-byte pieces were split");
    for o in &outs {
        assert!(o.len() <= 1400, "{} bytes on a 1400-byte link", o.len());
        let s = view(o);
        assert_eq!((s.df, s.ipv4_id), (Some(false), Some(0x0077)));
    }
    let (udp, _) = reassemble(&outs);
    assert_eq!(udp.len(), 8 + 3000);
    assert!(udp_verifies_v4(CLIENT4, SERVER4, &udp));
    assert_eq!(h.t.counters().translated_6to4, 3, "counted once per input");
}

/// §1.4: "the translator MUST send a Packet Too Big error message or fragment
/// the packet when the packet size exceeds the MTU of the next-hop
/// interface"; with §5.1 and §5.4, a packet its sender did not fragment (no Fragment header) is
/// not fragmented here: one ICMPv6 Packet Too Big with the IPv4 link's MTU +
/// 20 goes back, never two IPv4 fragments, even for a packet under 1280
/// bytes (which would have had DF=0). One that fits keeps DF=0 (§5.1 Flags).
#[test]
fn rfc7915_s5_1_unfragmented_packet_over_ipv4_mtu_gets_packet_too_big() {
    let mut cfg = sample_config();
    cfg.ipv4_mtu = Some(1000);
    let mut h = Harness::new(cfg);
    let (v, outs) = h.run(&v6().udp(1, 2, 1100));
    assert_eq!(v, Verdict::Replied(DropReason::PacketTooBig));
    assert_eq!(outs.len(), 1, "one IPv6 packet out");
    assert_eq!(view(&outs[0]).icmp(), Some((2, 0)));
    assert_eq!(&outs[0][44..48], &1020u32.to_be_bytes(), "IPv4 MTU + 20");
    assert_eq!(h.t.counters().fragments_out, 0);
    let out = h.one(&v6().udp(1, 2, 900));
    assert_eq!(view(&out).df, Some(false), "fits: DF=0 as §5.1 says");
    // With a Fragment header (here an atomic fragment) it may be split.
    let (v, outs) = h.run(&v6().fragment_header(0, false, 9).udp(1, 2, 1100));
    assert_eq!(v, Verdict::Fragmented(2));
    assert!(
        outs.iter()
            .all(|o| o.len() <= 1000 && view(o).df == Some(false))
    );
}

/// RFC 4443 §2.4 (e.1): "An ICMPv6 error message MUST NOT be originated as a
/// result of receiving ... An ICMPv6 error message": one behind a Routing
/// header with Segments Left non-zero is dropped, not answered with the
/// Parameter Problem §5.1 owes other packets (an Echo Request still gets it).
#[test]
fn rfc4443_s2_4_e_no_parameter_problem_about_an_icmpv6_error_with_a_routing_header() {
    let mut h = Harness::sample();
    let inner = server_as_v6().udp(1, 2, 8);
    let err = Ip6::new(ROUTER_V6_EAM, SERVER6)
        .routing(1)
        .icmp_error(1, 4, [0; 4], &inner);
    assert_eq!(h.run(&err).0, Verdict::Dropped(DropReason::RoutingHeader));
    let echo = v6().routing(1).echo_request(1, 1, 8);
    let (v, out) = h.run(&echo);
    assert_eq!(v, Verdict::Replied(DropReason::RoutingHeader));
    assert_eq!(view(&out[0]).icmp(), Some((4, 0)));
}

/// RFC 4443 §2.4 (e): an ICMPv6 error whose header chain we refuse is dropped
/// without an answer.
#[test]
fn rfc4443_s2_4_e_no_answer_to_an_icmpv6_error_with_a_refused_chain() {
    let mut h = Harness::sample();
    let inner = server_as_v6().udp(1, 2, 8);
    let err = Ip6::new(ROUTER_V6_EAM, SERVER6)
        .fragment_header(0, false, 3)
        .dest_opts()
        .icmp_error(1, 4, [0; 4], &inner);
    assert_eq!(
        h.run(&err).0,
        Verdict::Dropped(DropReason::ExtensionHeaderChain)
    );
}
