//! RFC 7757 §4 hairpinning, as its Appendix B walks through it: two IPv6 hosts
//! behind the same SIIT, each with an EAM entry, reach each other by their IPv4
//! addresses through pool6. Every output is checked by the testkit oracle.

mod common;

use common::*;
use sixgate_core::config::HairpinMode;
use sixgate_core::{DropReason, Verdict};
use sixgate_testkit::{Family, Ip6};
use std::net::{IpAddr, Ipv6Addr};

/// Host A: 2001:db8:1::5, EAM'd to 198.18.0.5 (the sample configuration).
const A: Ipv6Addr = CLIENT6;
/// Host B: 2001:db8:1::6, EAM'd to 198.18.0.6.
const B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 6);
/// B's IPv4 address as A addresses it: through pool6 (RFC 6052).
const B_VIA_POOL6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc612, 6);
/// A's IPv4 address through pool6.
const A_VIA_POOL6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc612, 5);

fn harness(mode: HairpinMode) -> Harness {
    let mut cfg = sample_config();
    cfg.hairpin = mode;
    Harness::new(cfg)
}

/// Appendix B, intrinsic hairpinning (§4.3): A's packet to B's pool6 address
/// reaches B with A's *pool6* address as its source (the IPv4 source 198.18.0.5
/// is translated by RFC 6052, not by the EAM table), so B's reply goes back
/// through the translator and reaches A from the address A wrote to.
#[test]
fn rfc7757_appendix_b_intrinsic_hairpin_source_is_pool6_form() {
    let mut h = harness(HairpinMode::Intrinsic);
    let out = h.one(&Ip6::new(A, B_VIA_POOL6).udp(4000, 53, 20));
    let s = view(&out);
    assert_eq!(s.family, Family::V6);
    assert_eq!((s.src, s.dst), (IpAddr::V6(A_VIA_POOL6), IpAddr::V6(B)));
    assert!(s.l4_verified);
    // B answers the address it saw; A gets it from the address it used.
    let back = h.one(&Ip6::new(B, A_VIA_POOL6).udp(53, 4000, 20));
    let s = view(&back);
    assert_eq!((s.src, s.dst), (IpAddr::V6(B_VIA_POOL6), IpAddr::V6(A)));
    assert_eq!(h.t.counters().hairpinned, 2);
}

/// Appendix B, an ICMP error about a hairpinned packet (§4.2 "simple" and §4.3
/// alike): B refuses A's datagram. The error reaches A from B's pool6 address,
/// and quotes the packet exactly as A sent it: source A, destination B's pool6
/// form (not B's EAM address).
#[test]
fn rfc7757_appendix_b_hairpinned_icmp_error_inner_destination_is_pool6_form() {
    for mode in [HairpinMode::Simple, HairpinMode::Intrinsic] {
        let mut h = harness(mode);
        // What B received from A (in intrinsic mode; in simple mode A's packet
        // was dropped, but a router past B may still report on such a packet).
        let as_received = Ip6::new(A_VIA_POOL6, B).udp(4000, 53, 20);
        let err = Ip6::new(B, A_VIA_POOL6).icmp_error(1, 4, [0; 4], &as_received);
        let out = h.one(&err);
        let s = view(&out);
        assert_eq!(s.family, Family::V6, "{mode:?}");
        assert_eq!((s.src, s.dst), (IpAddr::V6(B_VIA_POOL6), IpAddr::V6(A)));
        assert_eq!(s.icmp(), Some((1, 4)));
        let i = s.inner.expect("quoted packet");
        assert_eq!(
            (i.src, i.dst),
            (IpAddr::V6(A), IpAddr::V6(B_VIA_POOL6)),
            "{mode:?}: the packet as A sent it"
        );
        assert_eq!(i.l4.ports(), Some((4000, 53)));
        assert_eq!(i.l4_checksum_ok, Some(true));
    }
}

/// §4.1: with hairpinning off, neither is hairpinned.
#[test]
fn rfc7757_s4_1_hairpin_off_refuses_both() {
    let mut h = harness(HairpinMode::Off);
    assert_eq!(
        h.run(&Ip6::new(A, B_VIA_POOL6).udp(4000, 53, 20)).0,
        Verdict::Replied(DropReason::Hairpin)
    );
    let as_received = Ip6::new(A_VIA_POOL6, B).udp(4000, 53, 20);
    let err = Ip6::new(B, A_VIA_POOL6).icmp_error(1, 4, [0; 4], &as_received);
    assert_eq!(h.run(&err).0, Verdict::Dropped(DropReason::Hairpin));
}
