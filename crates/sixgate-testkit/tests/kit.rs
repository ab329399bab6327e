//! Builders and oracle, tested against each other and against etherparse's own
//! packet writer (an independent path to the same bytes).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::PacketBuilder;
use sixgate_testkit::{
    Ext6, Family, Ip4, Ip6, L4, check, check_structure, csum, pattern, proto, split_v4, split_v6,
    truncate,
};

const S4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const D4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);

fn s6() -> Ipv6Addr {
    "2001:db8::1".parse().unwrap()
}
fn d6() -> Ipv6Addr {
    "64:ff9b::c633:6407".parse().unwrap()
}

fn ip4() -> Ip4 {
    Ip4::new(S4, D4)
}
fn ip6() -> Ip6 {
    Ip6::new(s6(), d6())
}

fn all_v4() -> Vec<(&'static str, Vec<u8>)> {
    let inner = Ip4::new(D4, S4).udp(53, 4000, 30);
    vec![
        ("udp", ip4().udp(4000, 53, 18)),
        ("udp empty", ip4().udp(1, 2, 0)),
        ("udp odd", ip4().udp(1, 2, 33)),
        ("tcp", ip4().tcp(40000, 80, 6)),
        ("echo", ip4().echo_request(7, 1, 18)),
        ("echo reply", ip4().echo_reply(7, 1, 17)),
        ("error", ip4().icmp_error(3, 3, [0; 4], &inner)),
        (
            "error cut",
            ip4().icmp_error(11, 0, [0; 4], &truncate(&inner, 28)),
        ),
        ("options", ip4().options(&[1, 1, 1]).udp(5, 6, 10)),
    ]
}

fn all_v6() -> Vec<(&'static str, Vec<u8>)> {
    let inner = Ip6::new(d6(), s6()).tcp(443, 50000, 100);
    vec![
        ("udp", ip6().udp(4000, 53, 18)),
        ("udp odd", ip6().udp(4000, 53, 1)),
        ("tcp", ip6().tcp(40000, 80, 6)),
        ("echo", ip6().echo_request(7, 1, 18)),
        ("echo reply", ip6().echo_reply(7, 1, 0)),
        ("error", ip6().icmp_error(1, 4, [0; 4], &inner)),
        (
            "ptb",
            ip6().icmp_error(2, 0, 1280u32.to_be_bytes(), &truncate(&inner, 48)),
        ),
        ("hbh", ip6().hop_by_hop().udp(1, 2, 3)),
        (
            "all exts",
            ip6().hop_by_hop().dest_opts().routing(0).udp(1, 2, 3),
        ),
    ]
}

#[test]
fn builders_pass_the_oracle() {
    for (name, p) in all_v4().into_iter().chain(all_v6()) {
        let s = check(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.len, p.len(), "{name}");
        assert!(s.l4_verified, "{name}");
        assert!(s.fragment.is_none(), "{name}");
    }
}

#[test]
fn summary_of_udp_v4() {
    let p = ip4()
        .ttl(9)
        .tos(0xb8)
        .id(0xbeef)
        .df(false)
        .udp(4000, 53, 18);
    // 64 bytes on the wire: 14 Ethernet + 46 IP + 4 FCS.
    assert_eq!(p.len(), 46);
    let s = check(&p).unwrap();
    assert_eq!(s.family, Family::V4);
    assert_eq!(s.src, IpAddr::V4(S4));
    assert_eq!(s.dst, IpAddr::V4(D4));
    assert_eq!(s.protocol, proto::UDP);
    assert_eq!(s.hop_limit, 9);
    assert_eq!(s.tos, 0xb8);
    assert_eq!(s.ipv4_id, Some(0xbeef));
    assert_eq!(s.df, Some(false));
    assert_eq!(s.ports(), Some((4000, 53)));
    assert_eq!(s.payload_len, 18);
    assert_eq!(s.header_len, 20);
    assert_eq!(&p[28..], &pattern(18)[..]);
}

#[test]
fn summary_of_icmp_echo_v6() {
    let p = ip6()
        .hop_limit(3)
        .traffic_class(0x20)
        .flow_label(0xabcde)
        .echo_request(0x1234, 9, 18);
    assert_eq!(p.len(), 66);
    let s = check(&p).unwrap();
    assert_eq!(s.family, Family::V6);
    assert_eq!(s.src, IpAddr::V6(s6()));
    assert_eq!(s.protocol, proto::ICMPV6);
    assert_eq!(s.hop_limit, 3);
    assert_eq!(s.tos, 0x20);
    assert_eq!(s.ipv4_id, None);
    assert_eq!(
        s.l4,
        L4::Icmp {
            ty: 128,
            code: 0,
            rest: [0x12, 0x34, 0, 9]
        }
    );
    assert_eq!(s.payload_len, 18);
}

#[test]
fn oracle_accepts_etherparse_packet_builder_output() {
    let payload = pattern(25);
    let mut v4 = Vec::new();
    PacketBuilder::ipv4(S4.octets(), D4.octets(), 64)
        .udp(1000, 2000)
        .write(&mut v4, &payload)
        .unwrap();
    let mut v6 = Vec::new();
    PacketBuilder::ipv6(s6().octets(), d6().octets(), 64)
        .tcp(1000, 2000, 1, 100)
        .write(&mut v6, &payload)
        .unwrap();
    let mut e6 = Vec::new();
    PacketBuilder::ipv6(s6().octets(), d6().octets(), 64)
        .icmpv6_echo_request(1, 2)
        .write(&mut e6, &payload)
        .unwrap();
    for p in [v4, v6, e6] {
        let s = check(&p).unwrap();
        assert!(s.l4_verified);
        assert_eq!(s.payload_len, 25);
    }
}

#[test]
fn builders_match_etherparse_packet_builder() {
    let payload = pattern(18);
    let mut v4 = Vec::new();
    PacketBuilder::ipv4(S4.octets(), D4.octets(), 64)
        .udp(4000, 53)
        .write(&mut v4, &payload)
        .unwrap();
    let ours = ip4().id(0).udp(4000, 53, 18);
    // etherparse's builder sets DF=1, ID=0: identical bytes.
    assert_eq!(ours, v4);
}

/// Flip each bit in turn; `covered` says which byte offsets must be detected.
fn assert_flips_detected(name: &str, p: &[u8], covered: impl Fn(usize) -> bool) {
    for i in (0..p.len()).filter(|&i| covered(i)) {
        for bit in 0..8 {
            let mut q = p.to_vec();
            q[i] ^= 1 << bit;
            assert!(
                check(&q).is_err(),
                "{name}: flipping bit {bit} of byte {i} went unnoticed"
            );
        }
    }
}

#[test]
fn every_corrupted_bit_of_ipv4_fails() {
    // Every IPv4 byte is under the header checksum or the transport checksum.
    for (name, p) in all_v4() {
        assert_flips_detected(name, &p, |_| true);
    }
}

#[test]
fn every_corrupted_checksummed_bit_of_ipv6_fails() {
    // Traffic class, flow label, hop limit and next-header values are under no
    // checksum; the version nibble, payload length, addresses and the transport
    // message are.
    for (name, p) in all_v6()
        .into_iter()
        .filter(|(n, _)| !n.contains("hbh") && !n.contains("exts"))
    {
        assert_flips_detected(name, &p, |i| i == 4 || i == 5 || i >= 8);
        for bit in 4..8 {
            let mut q = p.clone();
            q[0] ^= 1 << bit;
            assert!(check(&q).is_err(), "{name}: version bit {bit}");
        }
    }
}

#[test]
fn length_mismatch_fails() {
    for (name, p) in all_v4().into_iter().chain(all_v6()) {
        let mut longer = p.clone();
        longer.push(0);
        assert!(check(&longer).is_err(), "{name}: trailing byte");
        assert!(check(&p[..p.len() - 1]).is_err(), "{name}: cut short");
        assert!(
            check_structure(&longer).is_err(),
            "{name}: structure, trailing byte"
        );
    }
    assert!(check(&[]).is_err());
    assert!(check(&[0x45]).is_err());
    assert!(check(&[0x50; 40]).is_err());
}

#[test]
fn structure_check_ignores_transport_checksum() {
    let mut p = ip6().udp(1, 2, 10);
    let last = p.len() - 1;
    p[last] ^= 0xff;
    assert!(check(&p).is_err());
    let s = check_structure(&p).unwrap();
    assert!(!s.l4_verified);
    assert_eq!(s.ports(), Some((1, 2)));
}

#[test]
fn udp_zero_checksum_only_over_ipv4() {
    let p = ip4().udp_zero_checksum(1, 2, 10);
    let s = check(&p).unwrap();
    assert!(matches!(s.l4, L4::Udp { checksum: 0, .. }));
    let mut udp = p[20..].to_vec();
    udp[6] = 0;
    udp[7] = 0;
    assert!(
        check(&ip6().raw(proto::UDP, &udp))
            .unwrap_err()
            .contains("zero")
    );
}

#[test]
fn icmp_of_the_wrong_family_fails() {
    let echo6 = ip6().echo_request(1, 1, 4);
    let wrong = ip4().raw(proto::ICMPV6, &echo6[40..]);
    assert!(check(&wrong).is_err());
    assert!(check_structure(&wrong).is_ok());
    let echo4 = ip4().echo_request(1, 1, 4);
    assert!(check(&ip6().raw(proto::ICMP, &echo4[20..])).is_err());
}

#[test]
fn unknown_protocol_is_ip_checked_only() {
    let p = ip6().raw(proto::NO_NEXT, &[]);
    let s = check(&p).unwrap();
    assert_eq!(s.l4, L4::Other);
    assert!(!s.l4_verified);
    let p = ip4().raw(200, &[1, 2, 3]);
    assert_eq!(check(&p).unwrap().payload_len, 3);
}

#[test]
fn icmpv4_error_inner_packet() {
    let inner = Ip4::new(D4, S4).ttl(1).udp(53, 4000, 30);
    let whole = check(&ip4().icmp_error(3, 3, [0; 4], &inner)).unwrap();
    let i = whole.inner.as_ref().unwrap();
    assert_eq!(i.family, Family::V4);
    assert_eq!((i.src, i.dst), (IpAddr::V4(D4), IpAddr::V4(S4)));
    assert_eq!(i.hop_limit, 1);
    assert_eq!(i.l4.ports(), Some((53, 4000)));
    assert!(!i.truncated());
    assert_eq!(i.l4_checksum_ok, Some(true));
    assert_eq!(whole.icmp(), Some((3, 3)));

    // RFC 792: header plus 8 bytes.
    let cut = check(&ip4().icmp_error(3, 3, [0; 4], &truncate(&inner, 28))).unwrap();
    let i = cut.inner.as_ref().unwrap();
    assert!(i.truncated());
    assert_eq!((i.present_len, i.claimed_len), (28, 58));
    assert_eq!(i.l4.ports(), Some((53, 4000)));
    assert_eq!(i.l4_checksum_ok, None);

    // A quoted TCP header cut after the ports still names them.
    let tcp = Ip4::new(D4, S4).tcp(80, 5000, 0);
    let cut = check(&ip4().icmp_error(3, 1, [0; 4], &truncate(&tcp, 28))).unwrap();
    assert_eq!(cut.inner.unwrap().l4.ports(), Some((80, 5000)));

    // A quoted transport checksum that is wrong is reported, not fatal.
    let mut bad = inner.clone();
    let n = bad.len() - 1;
    bad[n] ^= 1;
    let s = check(&ip4().icmp_error(3, 3, [0; 4], &bad)).unwrap();
    assert_eq!(s.inner.unwrap().l4_checksum_ok, Some(false));
}

#[test]
fn icmp_error_inner_inconsistencies_fail() {
    let inner = Ip4::new(D4, S4).udp(53, 4000, 30);
    // Inner header checksum broken (outer checksum recomputed by the builder).
    let mut bad = inner.clone();
    bad[8] -= 1;
    let e = check(&ip4().icmp_error(3, 3, [0; 4], &bad)).unwrap_err();
    assert!(e.contains("inner"), "{e}");
    // More bytes quoted than the inner total length claims.
    let mut longer = inner.clone();
    longer.push(0);
    assert!(check(&ip4().icmp_error(3, 3, [0; 4], &longer)).is_err());
    // Inner header cut short.
    assert!(check(&ip4().icmp_error(3, 3, [0; 4], &truncate(&inner, 19))).is_err());
    // Wrong family quoted.
    let v6 = ip6().udp(1, 2, 3);
    assert!(check(&ip4().icmp_error(3, 3, [0; 4], &v6)).is_err());
    assert!(check(&ip6().icmp_error(1, 0, [0; 4], &inner)).is_err());
    // Nothing quoted.
    assert!(check(&ip6().icmp_error(1, 0, [0; 4], &[])).is_err());
    // Not an error type: the body is not parsed as a packet.
    assert!(
        check(&ip6().icmp(128, 0, [0; 4], &inner))
            .unwrap()
            .inner
            .is_none()
    );
}

#[test]
fn icmpv6_error_inner_packet() {
    let inner = Ip6::new(d6(), s6()).hop_by_hop().tcp(443, 50000, 1400);
    let s = check(&ip6().icmp_error(2, 0, 1280u32.to_be_bytes(), &truncate(&inner, 1232))).unwrap();
    assert_eq!(s.payload_len, 1232);
    let i = s.inner.unwrap();
    assert_eq!(i.family, Family::V6);
    assert_eq!(i.protocol, proto::TCP);
    assert_eq!(i.l4.ports(), Some((443, 50000)));
    assert!(i.truncated());
    // An inner extension header cut short is fine; the protocol is then the header's.
    let s = check(&ip6().icmp_error(1, 0, [0; 4], &truncate(&inner, 44))).unwrap();
    assert_eq!(s.inner.unwrap().protocol, proto::HOP_BY_HOP);
}

#[test]
fn ipv6_extension_headers() {
    let p = ip6()
        .hop_by_hop()
        .dest_opts()
        .routing(2)
        .ext(Ext6::DestOpts)
        .echo_request(1, 2, 3);
    let s = check(&p).unwrap();
    assert_eq!(
        s.ext_headers,
        vec![
            proto::HOP_BY_HOP,
            proto::DEST_OPTS,
            proto::ROUTING,
            proto::DEST_OPTS
        ]
    );
    assert_eq!(s.protocol, proto::ICMPV6);
    assert_eq!(p[40 + 16 + 3], 2, "segments left");
    assert!(s.l4_verified);
    // Hop-by-Hop anywhere but first is malformed.
    let bad = ip6().dest_opts().hop_by_hop().udp(1, 2, 3);
    assert!(check(&bad).is_err());
}

#[test]
fn atomic_fragment_is_checked_in_full() {
    let p = ip6().fragment_header(0, false, 77).udp(1, 2, 10);
    let s = check(&p).unwrap();
    assert!(s.fragment.unwrap().is_atomic());
    assert!(!s.is_fragment());
    assert!(s.l4_verified);
}

#[test]
fn fragments_v4_are_ip_checked_and_reassemble() {
    let whole = ip4().id(0x4242).udp(1111, 2222, 100);
    let frags = split_v4(&whole, 40);
    assert_eq!(frags.len(), 3);
    let mut data = Vec::new();
    for (i, f) in frags.iter().enumerate() {
        let s = check(f).unwrap();
        let fr = s.fragment.unwrap();
        assert_eq!(fr.id, 0x4242);
        assert_eq!(usize::from(fr.offset), data.len());
        assert_eq!(fr.more, i < 2);
        assert!(!s.l4_verified);
        assert_eq!(s.df, Some(false));
        if i == 0 {
            assert_eq!(s.ports(), Some((1111, 2222)));
        } else {
            assert_eq!(s.l4, L4::Other);
        }
        data.extend_from_slice(&f[20..]);
    }
    assert_eq!(data, whole[20..]);
    // A corrupted fragment's IP header still fails.
    let mut bad = frags[1].clone();
    bad[6] ^= 0x20;
    assert!(check(&bad).is_err());
    // The builder alone.
    let f = ip4().df(false).fragment(proto::UDP, 16, true, &[0; 8]);
    let fr = check(&f).unwrap().fragment.unwrap();
    assert_eq!((fr.offset, fr.more), (16, true));
}

#[test]
fn fragments_v6_keep_unfragmentable_headers() {
    let whole = ip6().hop_by_hop().udp(1111, 2222, 100);
    let frags = split_v6(&whole, 64, 0xdead_beef);
    assert_eq!(frags.len(), 2);
    let mut data = Vec::new();
    for (i, f) in frags.iter().enumerate() {
        let s = check(f).unwrap();
        assert_eq!(s.ext_headers, vec![proto::HOP_BY_HOP, proto::FRAGMENT]);
        assert_eq!(s.header_len, 56);
        assert_eq!(s.protocol, proto::UDP);
        let fr = s.fragment.unwrap();
        assert_eq!(fr.id, 0xdead_beef);
        assert_eq!(usize::from(fr.offset), data.len());
        assert_eq!(fr.more, i == 0);
        assert!(s.is_fragment());
        assert!(!s.l4_verified);
        data.extend_from_slice(&f[56..]);
    }
    assert_eq!(data, whole[48..]);
    let f = ip6().fragment(proto::TCP, 1232, false, 9, &[0; 10]);
    let s = check(&f).unwrap();
    assert_eq!(s.fragment.unwrap().offset, 1232);
    assert_eq!(s.payload_len, 10);
}

#[test]
fn icmp_checksum_matches_own_sum() {
    // The builders' checksums (from etherparse) agree with csum's.
    let p = ip4().echo_request(1, 2, 3);
    let mut icmp = p[20..].to_vec();
    let field = u16::from_be_bytes([icmp[2], icmp[3]]);
    icmp[2] = 0;
    icmp[3] = 0;
    assert_eq!(csum::checksum(&icmp), field);
}
