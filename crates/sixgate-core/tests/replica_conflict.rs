//! docs/ha.md, "Two mappings of one IPv6 transport address": RFC 6146
//! §3.5.1.1 (one BIB entry per IPv6 transport address, endpoint-independent
//! mapping) across two nodes that each mapped the same subscriber's port
//! before either heard of the other's mapping.

mod common;

use common::*;
use sixgate_core::nat64::{
    ImportError, Nat64Config, Pool4Entry, Proto, Replica, ReplicaOp, StaticBib,
};
use sixgate_core::{Config, Verdict};
use sixgate_testkit::{Ip4, Ip6};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const S: u64 = 1_000_000_000;
const A4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 0);
const B4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
/// A second remote, 198.51.100.8, and its pool6 form; a third one's.
const SERVER4_B: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 8);
const SERVER6_B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6408);
const SERVER6_C: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6409);

fn config(f: impl FnOnce(&mut Nat64Config)) -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    let mut n = Nat64Config {
        pool4: vec![Pool4Entry {
            prefix_len: 31,
            ..Pool4Entry::single(A4)
        }],
        max_sessions: 64,
        ..Nat64Config::default()
    };
    f(&mut n);
    cfg.nat64 = Some(n);
    cfg
}

/// A node owning `own`, the other address its peer's (id `peer`).
fn node(own: Ipv4Addr, peer: (u16, Ipv4Addr)) -> Harness {
    let mut h = Harness::new(config(|_| {}));
    h.t.enable_replica_export(64);
    h.t.set_own_pool4_shards(Some(&[(own, 32)]));
    h.t.set_replica_peers(&[(peer.0, vec![(peer.1, 32)])]);
    h.now_ns = S;
    h
}

fn changes(h: &mut Harness) -> Vec<(ReplicaOp, Replica)> {
    let mut v = Vec::new();
    h.t.drain_replica_changes(|op, r| v.push((op, *r)));
    v
}

fn deliver(from: &mut Harness, from_id: u16, to: &mut Harness) {
    for (op, r) in changes(from) {
        to.t.import_replica_from(from_id, op, &r, to.now_ns)
            .unwrap();
    }
}

/// The IPv4 source transport address of a translated packet.
fn source4(p: &[u8]) -> (IpAddr, u16) {
    (view(p).src, u16::from_be_bytes([l4(p)[0], l4(p)[1]]))
}

fn out(remote6: Ipv6Addr) -> Vec<u8> {
    Ip6::new(CLIENT6, remote6).udp(5000, 53, 10)
}

/// The IPv4 transport address `h` gives CLIENT6 port 5000 towards `remote6`.
fn leaves_from(h: &mut Harness, remote6: Ipv6Addr) -> (IpAddr, u16) {
    source4(&h.one(&out(remote6)))
}

fn tick_all(h: &mut Harness) {
    while h.t.tick(h.now_ns, &mut h.scratch).is_some() {}
}

#[test]
fn rfc6146_s3_5_1_1_two_nodes_mapping_one_ipv6_address_keep_both_and_agree_on_one() {
    let (mut a, mut b) = (node(A4, (2, B4)), node(B4, (1, A4)));
    // ECMP puts two flows of CLIENT6 port 5000 on the two nodes at once:
    // each maps it on its own shard.
    let on_a = leaves_from(&mut a, SERVER6);
    let on_b = leaves_from(&mut b, SERVER6_B);
    assert_eq!(on_a.0, IpAddr::V4(A4));
    assert_eq!(on_b.0, IpAddr::V4(B4));
    deliver(&mut a, 1, &mut b);
    deliver(&mut b, 2, &mut a);
    for h in [&mut a, &mut b] {
        let st = h.t.nat64_stats();
        assert_eq!(
            (st.bib_conflicts, st.bib_conflicts_refused),
            (1, 0),
            "seen once on each node, both kept"
        );
        assert_eq!((st.bib.udp, st.sessions.udp), (2, 2));
        // §3.5.1.2: return traffic of either flow, on either node, reaches
        // the subscriber (both IPv4 sides stay mapped).
        for (remote, (v4, port4)) in [(SERVER4, on_a), (SERVER4_B, on_b)] {
            let IpAddr::V4(v4) = v4 else { unreachable!() };
            let back = h.one(&Ip4::new(remote, v4).udp(53, port4, 10));
            assert_eq!(view(&back).dst, IpAddr::V6(CLIENT6));
            assert_eq!(u16::from_be_bytes([l4(&back)[2], l4(&back)[3]]), 5000);
        }
        // Each existing flow keeps its source on both nodes (its remote
        // would drop a changed one) ...
        assert_eq!(leaves_from(h, SERVER6), on_a);
        assert_eq!(leaves_from(h, SERVER6_B), on_b);
        // ... and a new session takes the same mapping on both nodes, the
        // lower IPv4 transport address: endpoint-independent again.
        assert_eq!(leaves_from(h, SERVER6_C), on_a);
    }
    // The new sessions are exported like any other: no further conflict.
    deliver(&mut a, 1, &mut b);
    deliver(&mut b, 2, &mut a);
    assert_eq!(a.t.nat64_stats().bib_conflicts, 1);
}

#[test]
fn rfc6146_s3_5_1_1_the_alternate_takes_over_when_the_chosen_mapping_goes() {
    let (mut a, mut b) = (node(A4, (2, B4)), node(B4, (1, A4)));
    let on_a = leaves_from(&mut a, SERVER6);
    let on_b = leaves_from(&mut b, SERVER6_B);
    deliver(&mut a, 1, &mut b);
    deliver(&mut b, 2, &mut a);
    // Only B's flow goes on; A's session expires, and after the port-reuse
    // wait (RFC 6888 REQ-8) its mapping goes.
    for step in 1..=50u64 {
        a.now_ns = S + step * 10 * S;
        assert_eq!(leaves_from(&mut a, SERVER6_B), on_b);
        tick_all(&mut a);
    }
    assert_eq!(a.t.nat64_stats().bib.udp, 1, "A's own mapping is gone");
    // The remaining mapping is now the §3.5.1.1 entry: a new session uses it.
    assert_eq!(leaves_from(&mut a, SERVER6_C), on_b);
    let IpAddr::V4(v4) = on_a.0 else {
        unreachable!()
    };
    assert!(matches!(
        a.run(&Ip4::new(SERVER4, v4).udp(53, on_a.1, 10)).0,
        Verdict::Replied(_) | Verdict::Dropped(_)
    ));
}

#[test]
fn rfc6146_s3_5_1_1_icmpv6_errors_find_the_alternate_s_session() {
    let (mut a, mut b) = (node(A4, (2, B4)), node(B4, (1, A4)));
    leaves_from(&mut a, SERVER6);
    let on_b = leaves_from(&mut b, SERVER6_B);
    deliver(&mut b, 2, &mut a);
    // A packet of B's flow delivered by A, and the subscriber's ICMPv6 Port
    // Unreachable about it (RFC 7915 §5.2, RFC 6146 §3.5.1.1 last
    // paragraph): the error goes out from the alternate's IPv4 side.
    let IpAddr::V4(v4) = on_b.0 else {
        unreachable!()
    };
    let delivered = a.one(&Ip4::new(SERVER4_B, v4).udp(53, on_b.1, 10));
    let err = Ip6::new(CLIENT6, SERVER6_B).icmp_error(1, 4, [0; 4], &delivered);
    let e = a.one(&err);
    assert_eq!(view(&e).dst, IpAddr::V4(SERVER4_B));
    assert_eq!(view(&e).src, IpAddr::V4(v4));
}

#[test]
fn a_conflict_that_cannot_be_kept_is_refused_and_counted() {
    let peer = |port4| Replica {
        proto: Proto::Udp,
        tcp_state: None,
        remaining_ms: 300_000,
        v6: CLIENT6,
        port6: 5000,
        v4: B4,
        port4,
        remote4: SERVER4_B,
        rport: 53,
    };
    // A third mapping of one IPv6 transport address (three nodes at once).
    let mut a = node(A4, (2, B4));
    leaves_from(&mut a, SERVER6);
    a.t.import_replica_from(2, ReplicaOp::Upsert, &peer(40000), a.now_ns)
        .unwrap();
    assert_eq!(
        a.t.import_replica_from(2, ReplicaOp::Upsert, &peer(40002), a.now_ns),
        Err(ImportError::Conflict)
    );
    // A static entry of that IPv6 transport address.
    let mut s = Harness::new(config(|n| {
        n.static_bib = vec![StaticBib {
            proto: Proto::Udp,
            v6: CLIENT6,
            port6: 5000,
            v4: A4,
            port4: 7000,
        }];
    }));
    assert_eq!(
        s.t.import_replica(ReplicaOp::Upsert, &peer(40000), 0),
        Err(ImportError::Conflict)
    );
    for (h, kept) in [(&a, 1), (&s, 0)] {
        let st = h.t.nat64_stats();
        assert_eq!((st.bib_conflicts, st.bib_conflicts_refused), (kept, 1));
    }
    assert_eq!(a.t.nat64_stats().bib.udp, 2, "tables untouched");
}

#[test]
fn rfc6146_s3_5_2_tcp_segments_of_the_alternate_s_connection_keep_its_mapping() {
    use sixgate_testkit::tcp_flag::{ACK, SYN};
    let (mut a, mut b) = (node(A4, (2, B4)), node(B4, (1, A4)));
    let syn = |remote6| Ip6::new(CLIENT6, remote6).tcp_flags(40000, 443, SYN, 0);
    let on_a = source4(&a.one(&syn(SERVER6)));
    let on_b = source4(&b.one(&syn(SERVER6_B)));
    deliver(&mut a, 1, &mut b);
    deliver(&mut b, 2, &mut a);
    let IpAddr::V4(v4b) = on_b.0 else {
        unreachable!()
    };
    for h in [&mut a, &mut b] {
        // The SYN-ACK of B's connection, and the client's next segment
        // (§3.5.2.2: not a SYN, so it could not make a new mapping).
        let synack = Ip4::new(SERVER4_B, v4b).tcp_flags(443, on_b.1, SYN | ACK, 0);
        assert_eq!(view(&h.one(&synack)).dst, IpAddr::V6(CLIENT6));
        let ack = Ip6::new(CLIENT6, SERVER6_B).tcp_flags(40000, 443, ACK, 10);
        assert_eq!(source4(&h.one(&ack)), on_b);
        assert_eq!(source4(&h.one(&syn(SERVER6))), on_a);
    }
}
