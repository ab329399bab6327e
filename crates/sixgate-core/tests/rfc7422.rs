//! RFC 7422 deterministic NAT through `Translator::translate`: every
//! subscriber of `[nat64] deterministic` leaves from the pool4 address and
//! ports the formula gives it (`nat64::Deterministic`), for every protocol,
//! and from nothing else.

mod common;

use common::*;
use sixgate_core::nat64::{Deterministic, EventKind, EventLog, Nat64Config, Pool4Entry, PortRange};
use sixgate_core::{Config, DropReason, Verdict};
use sixgate_testkit::{Family, Ip6, L4, tcp_flag};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// 2001:db8:100::/48 in /56 subscribers over 192.0.2.0/30, 1024-65535.
fn det_config(block: u16, f: impl FnOnce(&mut Nat64Config)) -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    let all = PortRange::new(1024, 65535);
    let mut n = Nat64Config {
        pool4: vec![Pool4Entry {
            prefix_len: 30,
            tcp: all,
            udp: all,
            icmp: all,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }],
        subscriber_prefix_len: 56,
        port_block_size: block,
        deterministic: Some(("2001:db8:100::".parse().unwrap(), 48)),
        max_sessions: 4096,
        ..Nat64Config::default()
    };
    f(&mut n);
    cfg.nat64 = Some(n);
    cfg
}

/// Subscriber 42 (2001:db8:100:2a00::/56): address 42 mod 4 = 192.0.2.2,
/// block 42 div 4 = 10.
const SUB42: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x100, 0x2a00, 0, 0, 0, 5);

fn source4(p: &[u8]) -> (Ipv4Addr, u16) {
    let s = view(p);
    assert_eq!(s.family, Family::V4);
    let IpAddr::V4(a) = s.src else { unreachable!() };
    let port = match s.l4 {
        L4::Udp { src_port, .. } | L4::Tcp { src_port, .. } => src_port,
        L4::Icmp { rest, .. } => u16::from_be_bytes([rest[0], rest[1]]),
        L4::Other => panic!("no ports"),
    };
    (a, port)
}

fn refused(h: &mut Harness, p: &[u8]) -> DropReason {
    match h.run(p).0 {
        Verdict::Dropped(r) | Verdict::Replied(r) => r,
        v => panic!("expected a refusal, got {v:?}"),
    }
}

/// RFC 7422 §2: "the subscriber's ... external address and port range are
/// determined by an algorithm": TCP, UDP and ICMP of one subscriber leave from
/// its block, and the formula backwards names it.
#[test]
fn rfc7422_s2_every_protocol_leaves_from_the_subscribers_block() {
    let cfg = det_config(256, |_| {});
    let d = Deterministic::plan(cfg.nat64.as_ref().unwrap())
        .unwrap()
        .unwrap();
    let mut h = Harness::new(cfg);
    let (lo, hi) = (1024 + 10 * 256, 1024 + 11 * 256 - 1);
    let want = Ipv4Addr::new(192, 0, 2, 2);
    let outs = [
        h.one(&Ip6::new(SUB42, SERVER6).udp(5000, 53, 10)),
        h.one(&Ip6::new(SUB42, SERVER6).tcp_flags(40000, 80, tcp_flag::SYN, 0)),
        h.one(&Ip6::new(SUB42, SERVER6).echo_request(0x7777, 1, 8)),
    ];
    for p in &outs {
        let (a, port) = source4(p);
        assert_eq!(a, want);
        assert!((lo..=hi).contains(&port), "{port} not in {lo}-{hi}");
        let owner = d.owner_of(a, port).expect("in a block");
        assert_eq!(
            owner.subscriber,
            "2001:db8:100:2a00::".parse::<Ipv6Addr>().unwrap()
        );
    }
    // Port preservation inside the block: offset 5000 mod 256 = 136.
    assert_eq!(source4(&outs[0]).1, lo + 136);
    // The reply finds its way back.
    let (a, port) = source4(&outs[0]);
    let back = h.one(&sixgate_testkit::Ip4::new(SERVER4, a).udp(53, port, 10));
    assert_eq!(view(&back).dst, IpAddr::V6(SUB42));
}

/// RFC 7422 §2: a subscriber that has used its ports gets no more (the block
/// is its whole share); counted as `deterministic_ports_full`, answered like
/// any allocation failure (RFC 6146 §3.5.1.1: Address Unreachable).
#[test]
fn rfc7422_s2_sessions_beyond_the_block_are_refused() {
    let mut h = Harness::new(det_config(4, |_| {}));
    let mut ports = HashSet::new();
    for sport in 6000..6004 {
        let p = h.one(&Ip6::new(SUB42, SERVER6).udp(sport, 53, 10));
        ports.insert(source4(&p));
    }
    assert_eq!(ports.len(), 4);
    let fifth = Ip6::new(SUB42, SERVER6).udp(6004, 53, 10);
    let (v, outs) = h.run(&fifth);
    assert_eq!(v, Verdict::Replied(DropReason::DeterministicPortsFull));
    let err = view(&outs[0]);
    assert!(matches!(err.l4, L4::Icmp { ty: 1, code: 3, .. }), "{err:?}");
    // Another subscriber is not affected.
    let other = Ipv6Addr::new(0x2001, 0xdb8, 0x100, 0x2b00, 0, 0, 0, 1);
    h.one(&Ip6::new(other, SERVER6).udp(6004, 53, 10));
    assert_eq!(
        h.t.counters().dropped[DropReason::DeterministicPortsFull as usize],
        1
    );
}

/// A source outside the deterministic prefix has no share: refused
/// (`deterministic_unmapped`), never given ports by chance.
#[test]
fn a_source_outside_the_prefix_is_refused() {
    let mut h = Harness::new(det_config(256, |_| {}));
    let stranger = Ipv6Addr::new(0x2001, 0xdb8, 0x200, 0, 0, 0, 0, 1);
    assert_eq!(
        refused(&mut h, &Ip6::new(stranger, SERVER6).udp(5000, 53, 10)),
        DropReason::DeterministicUnmapped
    );
}

/// docs/ha.md, "Deterministic NAT": two nodes compute one formula and split
/// each block by rank, so flows of one subscriber on both nodes never share
/// a port.
#[test]
fn two_nodes_take_disjoint_halves_of_a_block() {
    let mut a = Harness::new(det_config(16, |_| {}));
    let mut b = Harness::new(det_config(16, |_| {}));
    a.t.set_deterministic_share(0, 2);
    b.t.set_deterministic_share(1, 2);
    let mut seen = HashSet::new();
    for (h, parity) in [(&mut a, 0), (&mut b, 1)] {
        for sport in 7000..7008 {
            let (addr, port) = source4(&h.one(&Ip6::new(SUB42, SERVER6).udp(sport, 53, 10)));
            assert_eq!(addr, Ipv4Addr::new(192, 0, 2, 2));
            assert_eq!(port % 2, parity);
            assert!(seen.insert(port));
        }
        // Its half used up.
        let p = Ip6::new(SUB42, SERVER6).udp(7100, 53, 10);
        assert_eq!(refused(h, &p), DropReason::DeterministicPortsFull);
    }
}

/// RFC 7422 §2 and RFC 6888 REQ-12: with `event_log = "bib"`, the block is
/// logged once, with the formula's address and first port.
#[test]
fn the_block_is_logged_once() {
    let mut h = Harness::new(det_config(256, |n| n.event_log = EventLog::Bib));
    for sport in [5000, 5001, 5002] {
        h.one(&Ip6::new(SUB42, SERVER6).udp(sport, 53, 10));
    }
    let mut blocks = Vec::new();
    h.t.drain_events(|e| {
        if e.kind == EventKind::BlockAllocated {
            blocks.push((e.v4, e.port4));
        }
    });
    assert_eq!(blocks, vec![(Ipv4Addr::new(192, 0, 2, 2), 1024 + 10 * 256)]);
    // `show subscribers`: the subscriber, its sessions and its one block.
    let mut subs = Vec::new();
    assert_eq!(h.t.walk_subscribers(0, 64, |s| subs.push(s)), None);
    assert_eq!(subs.len(), 1);
    let s = &subs[0];
    assert_eq!(
        (s.prefix, s.prefix_len, s.sessions),
        ("2001:db8:100:2a00::".parse().unwrap(), 56, 3)
    );
    assert_eq!(s.blocks.len(), 1);
    let b = s.blocks[0];
    assert_eq!(
        (b.v4, b.first, b.last, b.used),
        (Ipv4Addr::new(192, 0, 2, 2), 3584, 3839, 3)
    );
}

/// docs/ha.md, "Deterministic NAT": the owner of an address's shard holds a
/// reply to a port of another node's share that it has no mapping for (the
/// peer's record may be on its way), but answers one in its own share as
/// RFC 6146 §3.5.1.2 says.
#[test]
fn the_shard_owner_waits_for_a_peers_share_only() {
    let mut a = Harness::new(det_config(16, |_| {}));
    a.t.set_own_pool4_shards(Some(&[(Ipv4Addr::new(192, 0, 2, 0), 30)]));
    a.t.set_deterministic_share(0, 2);
    let block = 1024 + 10 * 16;
    let to =
        |port| sixgate_testkit::Ip4::new(SERVER4, Ipv4Addr::new(192, 0, 2, 2)).udp(53, port, 10);
    assert_eq!(a.run(&to(block + 1)).0, Verdict::Held, "no ICMP error");
    assert_eq!(
        a.run(&to(block + 2)).0,
        Verdict::Replied(DropReason::NoBibEntry)
    );
}

/// docs/logging.md, "With [sync]": a peer's sessions are imported into the
/// subscriber's block here (counted, so the block is nobody else's), and the
/// importing node logs none of them: the node that made them did, once.
#[test]
fn a_peers_sessions_land_in_the_block_and_are_logged_once() {
    let mut a = Harness::new(det_config(16, |n| n.event_log = EventLog::All));
    let mut b = Harness::new(det_config(16, |n| n.event_log = EventLog::All));
    a.t.enable_replica_export(1024);
    b.t.enable_replica_export(1024);
    a.t.set_deterministic_share(0, 2);
    b.t.set_deterministic_share(1, 2);
    // Node 1 (A) and node 2 (B), each up for the other.
    a.t.set_replica_peers(&[(2, vec![])]);
    b.t.set_replica_peers(&[(1, vec![])]);
    a.t.set_peer_up(2, true);
    b.t.set_peer_up(1, true);
    for sport in 7000..7004 {
        a.one(&Ip6::new(SUB42, SERVER6).udp(sport, 53, 10));
    }
    let mut records = Vec::new();
    a.t.drain_replica_changes(|op, r| records.push((op, *r)));
    assert_eq!(records.len(), 4);
    for (op, r) in &records {
        b.t.import_replica(*op, r, b.now_ns).unwrap();
    }
    let mut logged = 0;
    a.t.drain_events(|_| logged += 1);
    assert_eq!(logged, 1 + 4, "A: the block and the four sessions");
    b.t.drain_events(|e| panic!("B logged a peer's {:?}", e.kind));
    assert_eq!(b.t.nat64_stats().sessions.udp, 4);
    let mut subs = Vec::new();
    b.t.walk_subscribers(0, 64, |s| subs.push(s));
    assert_eq!((subs.len(), subs[0].blocks.len()), (1, 1));
    assert_eq!(subs[0].blocks[0].used, 4);
    // B's own flow of the subscriber: its half of the same block, logged by B.
    let (addr, port) = source4(&b.one(&Ip6::new(SUB42, SERVER6).udp(7100, 53, 10)));
    assert_eq!((addr, port % 2), (Ipv4Addr::new(192, 0, 2, 2), 1));
    let mut kinds = Vec::new();
    b.t.drain_events(|e| kinds.push(e.kind));
    assert_eq!(kinds, [EventKind::SessionCreated]);
    // A's deletes reach B without a record there either.
    a.now_ns += 400 * 1_000_000_000;
    let _ = a.t.tick(a.now_ns, &mut a.scratch);
    while a.t.tick(a.now_ns, &mut a.scratch).is_some() {}
    records.clear();
    a.t.drain_replica_changes(|op, r| records.push((op, *r)));
    assert!(!records.is_empty());
    for (op, r) in &records {
        b.t.import_replica(*op, r, b.now_ns).unwrap();
    }
    b.t.drain_events(|e| panic!("B logged a peer's {:?}", e.kind));
    assert_eq!(b.t.nat64_stats().sessions.udp, 1);
}

/// docs/restart.md: a node's own sessions read back after a restart are
/// not logged again (the run that made them did, and logs nothing at stop
/// for them), but the port block they land in is: the stop logged it
/// released.
#[test]
fn a_restarts_own_sessions_log_their_block_again_and_nothing_else() {
    let mut a = Harness::new(det_config(16, |n| n.event_log = EventLog::All));
    let mut b = Harness::new(det_config(16, |n| n.event_log = EventLog::All));
    a.t.enable_replica_export(1024);
    for sport in 7000..7004 {
        a.one(&Ip6::new(SUB42, SERVER6).udp(sport, 53, 10));
    }
    let mut records = Vec::new();
    a.t.drain_replica_changes(|_, r| records.push(*r));
    assert_eq!(records.len(), 4);
    for r in &records {
        b.t.restore_replica(r, b.now_ns).unwrap();
    }
    let mut kinds = Vec::new();
    b.t.drain_events(|e| kinds.push(e.kind));
    assert_eq!(kinds, [EventKind::BlockAllocated], "the block's, once");
    assert_eq!(b.t.nat64_stats().sessions.udp, 4);
    // A second restore of the same is an update: nothing more.
    b.t.restore_replica(&records[0], b.now_ns).unwrap();
    b.t.drain_events(|e| panic!("logged {:?} again", e.kind));
}
