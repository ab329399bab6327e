//! Sessions shared between two gateway nodes (docs/ha.md), at the table level:
//! what node A exports, node B imports as the sole writer of its tables, and
//! B then translates the session's packets that cross it. Time is driven
//! through `now_ns`.

mod common;

use common::*;
use sixgate_core::nat64::{
    ImportError, Nat64Config, Pool4Entry, Proto, Replica, ReplicaOp, tcp::TcpState,
};
use sixgate_core::{Config, DropReason, Verdict};
use sixgate_testkit::{Ip4, Ip6, tcp_flag};
use std::net::{IpAddr, Ipv4Addr};

const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const S: u64 = 1_000_000_000;

fn config(f: impl FnOnce(&mut Nat64Config)) -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    let mut n = Nat64Config {
        pool4: vec![Pool4Entry::single(POOL4)],
        ..Nat64Config::default()
    };
    n.max_sessions = 64;
    f(&mut n);
    cfg.nat64 = Some(n);
    cfg
}

fn node() -> Harness {
    let mut h = Harness::new(config(|_| {}));
    h.t.enable_replica_export(16);
    h.now_ns = S;
    h
}

fn changes(h: &mut Harness) -> Vec<(ReplicaOp, Replica)> {
    let mut v = Vec::new();
    h.t.drain_replica_changes(|op, r| v.push((op, *r)));
    v
}

/// Pool4 port of a translated IPv4 packet's source.
fn src_port4(p: &[u8]) -> u16 {
    let s = view(p);
    assert_eq!(s.src, IpAddr::V4(POOL4));
    u16::from_be_bytes([l4(p)[0], l4(p)[1]])
}

fn tick_all(h: &mut Harness) {
    while h.t.tick(h.now_ns, &mut h.scratch).is_some() {}
}

#[test]
fn a_udp_session_of_node_a_is_translated_by_node_b() {
    let (mut a, mut b) = (node(), node());
    let out = a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10));
    let port4 = src_port4(&out);
    let reply = Ip4::new(SERVER4, POOL4).udp(53, port4, 10);
    // Before the record, B has no mapping.
    assert_eq!(b.run(&reply).0, Verdict::Replied(DropReason::NoBibEntry));
    let ch = changes(&mut a);
    assert_eq!(ch.len(), 1);
    let (op, r) = ch[0];
    assert_eq!(op, ReplicaOp::Upsert);
    assert_eq!(
        (r.proto, r.v6, r.port6, r.v4, r.port4),
        (Proto::Udp, CLIENT6, 5000, POOL4, port4)
    );
    assert_eq!((r.remote4, r.rport, r.tcp_state), (SERVER4, 53, None));
    assert_eq!(
        r.remaining_ms, 300_000,
        "the UDP lifetime, as a remaining time"
    );
    b.t.import_replica(op, &r, b.now_ns).unwrap();
    assert!(
        changes(&mut b).is_empty(),
        "an import is not exported again"
    );
    let back = b.one(&reply);
    assert_eq!(view(&back).dst, IpAddr::V6(CLIENT6));
    // Importing the same record again changes nothing (idempotent upsert).
    b.t.import_replica(op, &r, b.now_ns).unwrap();
    assert_eq!(b.t.nat64_stats().sessions.udp, 1);
    assert_eq!(b.t.nat64_stats().bib.udp, 1);
}

#[test]
fn tcp_states_travel_and_join_across_nodes() {
    let (mut a, mut b) = (node(), node());
    // The IPv6 SYN goes out through A ...
    let syn = a.one(&Ip6::new(CLIENT6, SERVER6).tcp_flags(40000, 443, tcp_flag::SYN, 0));
    let port4 = src_port4(&syn);
    let ch = changes(&mut a);
    assert_eq!(ch[0].1.tcp_state, Some(TcpState::V6Init));
    b.t.import_replica(ch[0].0, &ch[0].1, b.now_ns).unwrap();
    // ... the SYN-ACK comes back through B, which moves the session on.
    let synack = Ip4::new(SERVER4, POOL4).tcp_flags(443, port4, tcp_flag::SYN | tcp_flag::ACK, 0);
    let back = b.one(&synack);
    assert_eq!(view(&back).dst, IpAddr::V6(CLIENT6));
    let ch = changes(&mut b);
    assert_eq!(ch.len(), 1, "B exports the state change");
    assert_eq!(ch[0].1.tcp_state, Some(TcpState::Established));
    a.t.import_replica(ch[0].0, &ch[0].1, a.now_ns).unwrap();
    assert!(changes(&mut a).is_empty());
    // A's next packet of the flow finds ESTABLISHED: the record was applied.
    let mut sessions = Vec::new();
    let _ = a.t.walk_sessions(0, 16, a.now_ns, |s| sessions.push(s));
    assert_eq!(sessions[0].tcp_state, Some(TcpState::Established));
}

#[test]
fn deletes_and_short_remaining_lifetimes_expire_the_replica() {
    let (mut a, mut b) = (node(), node());
    a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10));
    let (op, r) = changes(&mut a)[0];
    b.t.import_replica(op, &r, b.now_ns).unwrap();
    // A's session expires: a delete goes to B.
    a.now_ns += 301 * S;
    tick_all(&mut a);
    let ch = changes(&mut a);
    assert_eq!(ch.len(), 1);
    assert_eq!(ch[0].0, ReplicaOp::Delete);
    b.t.import_replica(ch[0].0, &ch[0].1, b.now_ns).unwrap();
    assert_eq!(b.t.nat64_stats().sessions.udp, 0);
    // A record with 1 s left expires after 1 s, not after the UDP lifetime.
    let mut short = r;
    short.remaining_ms = 1000;
    short.port6 = 5001;
    short.port4 = r.port4.wrapping_add(2);
    b.t.import_replica(ReplicaOp::Upsert, &short, b.now_ns)
        .unwrap();
    assert_eq!(b.t.nat64_stats().sessions.udp, 1);
    b.now_ns += 1500 * 1_000_000;
    tick_all(&mut b);
    assert_eq!(b.t.nat64_stats().sessions.udp, 0);
}

#[test]
fn refused_imports_leave_the_tables_alone() {
    let (mut a, mut b) = (node(), node());
    a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10));
    let (_, r) = changes(&mut a)[0];
    // B mapped the same IPv6 endpoint itself meanwhile, on another port:
    // both are kept (tests/replica_conflict.rs).
    let mut mine = r;
    mine.port4 = r.port4.wrapping_add(2);
    b.t.import_replica(ReplicaOp::Upsert, &mine, b.now_ns)
        .unwrap();
    b.t.import_replica(ReplicaOp::Upsert, &r, b.now_ns).unwrap();
    assert_eq!(b.t.nat64_stats().bib_conflicts, 1);
    // The IPv4 side taken by another IPv6 endpoint.
    let mut other = r;
    other.port6 = 6000;
    other.port4 = mine.port4;
    assert_eq!(
        b.t.import_replica(ReplicaOp::Upsert, &other, b.now_ns),
        Err(ImportError::Conflict)
    );
    let mut outside = r;
    outside.v4 = Ipv4Addr::new(203, 0, 113, 9);
    assert_eq!(
        b.t.import_replica(ReplicaOp::Upsert, &outside, b.now_ns),
        Err(ImportError::NotInPool4)
    );
    assert_eq!(b.t.nat64_stats().sessions.udp, 2);
    let mut blocks = Harness::new(config(|n| n.port_block_size = 64));
    assert_eq!(
        blocks.t.import_replica(ReplicaOp::Upsert, &r, 0),
        Err(ImportError::PortBlocks)
    );
    let mut siit = Harness::sample();
    assert_eq!(
        siit.t.import_replica(ReplicaOp::Upsert, &r, 0),
        Err(ImportError::NotNat64)
    );
    // A full table.
    let mut tiny = Harness::new(config(|n| n.max_sessions = 1));
    tiny.t.import_replica(ReplicaOp::Upsert, &r, 0).unwrap();
    let mut second = r;
    second.remote4 = Ipv4Addr::new(198, 51, 100, 99);
    assert_eq!(
        tiny.t.import_replica(ReplicaOp::Upsert, &second, 0),
        Err(ImportError::TableFull)
    );
}

#[test]
fn a_full_export_ring_counts_what_it_lost() {
    let mut a = Harness::new(config(|_| {}));
    a.t.enable_replica_export(2);
    for port in 5000..5003 {
        a.one(&Ip6::new(CLIENT6, SERVER6).udp(port, 53, 10));
    }
    assert_eq!(a.t.replica_changes_lost(), 1);
    assert_eq!(changes(&mut a).len(), 2);
    a.one(&Ip6::new(CLIENT6, SERVER6).udp(5004, 53, 10));
    assert_eq!(changes(&mut a).len(), 1, "room again once drained");
}

#[test]
fn refreshes_are_coalesced_and_keep_the_replica_alive() {
    let (mut a, mut b) = (node(), node());
    let out = Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10);
    let mut exported = 0;
    let mut port4 = 0;
    // A packet every 10 s for 600 s: twice the UDP lifetime of 300 s.
    for step in 0..=60u64 {
        a.now_ns = S + step * 10 * S;
        b.now_ns = a.now_ns;
        port4 = src_port4(&a.one(&out));
        for (op, r) in changes(&mut a) {
            exported += 1;
            b.t.import_replica(op, &r, b.now_ns).unwrap();
        }
        tick_all(&mut b);
    }
    // One record per quarter lifetime (75 s), not one per packet.
    assert!(
        (8..=10).contains(&exported),
        "{exported} records for 61 packets"
    );
    let reply = Ip4::new(SERVER4, POOL4).udp(53, port4, 10);
    assert_eq!(
        view(&b.one(&reply)).dst,
        IpAddr::V6(CLIENT6),
        "the replica outlived one lifetime"
    );
}

#[test]
fn a_snapshot_sweeps_what_it_did_not_restate() {
    let pool = |f: &mut Nat64Config| {
        f.pool4 = vec![Pool4Entry {
            prefix_len: 31,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }];
    };
    let a_shard = (Ipv4Addr::new(192, 0, 2, 0), 32);
    let b_shard = (Ipv4Addr::new(192, 0, 2, 1), 32);
    let mut a = Harness::new(config(pool));
    let mut b = Harness::new(config(pool));
    a.t.enable_replica_export(16);
    a.t.set_own_pool4_shards(Some(&[a_shard]));
    b.t.set_own_pool4_shards(Some(&[b_shard]));
    b.t.set_replica_peers(&[(1, vec![a_shard])]);
    a.now_ns = S;
    b.now_ns = S;
    for port in [5000, 5001, 5002] {
        a.one(&Ip6::new(CLIENT6, SERVER6).udp(port, 53, 10));
    }
    for (op, r) in changes(&mut a) {
        b.t.import_replica(op, &r, b.now_ns).unwrap();
    }
    // B's own mapping, on its own shard: no snapshot of A's touches it.
    b.one(&Ip6::new(CLIENT6, SERVER6).udp(6000, 53, 10));
    assert_eq!(b.t.nat64_stats().sessions.udp, 4);
    // Two of A's sessions expire; B misses the deletes (say, a full import
    // ring), and B runs no timers here, so only the sweep can remove them.
    a.now_ns += 301 * S;
    b.now_ns = a.now_ns;
    a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10)); // 5000 lives on
    while a.t.tick(a.now_ns, &mut a.scratch).is_some() {}
    let _ = changes(&mut a);
    // A's snapshot: BEGIN, what A has, END, then the sweep of A's shard.
    assert!(b.t.replica_snapshot_begin(1));
    assert!(!b.t.replica_snapshot_begin(9), "not a peer");
    let mut restated = Vec::new();
    let _ = a.t.walk_sessions(0, 64, a.now_ns, |s| restated.push(s));
    assert_eq!(restated.len(), 1);
    for s in &restated {
        let r = Replica {
            proto: s.bib.proto,
            tcp_state: s.tcp_state,
            remaining_ms: s.expires_in_ms,
            v6: s.bib.v6,
            port6: s.bib.port6,
            v4: s.bib.v4,
            port4: s.bib.port4,
            remote4: s.remote4,
            rport: s.rport,
        };
        b.t.import_replica(ReplicaOp::Upsert, &r, b.now_ns).unwrap();
    }
    let mut cursor = Some(0);
    let mut removed = 0;
    while let Some(from) = cursor {
        let (next, n) = b.t.replica_sweep(1, from, 2, b.now_ns);
        cursor = next;
        removed += n;
    }
    assert_eq!(removed, 2, "the two sessions A no longer has");
    assert_eq!(
        b.t.nat64_stats().sessions.udp,
        2,
        "A's live one and B's own"
    );
}
