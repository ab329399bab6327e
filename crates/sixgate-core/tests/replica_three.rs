//! docs/ha.md, "Snapshots in a group of three or more": three translators A,
//! B, C, each owning one pool4 address; B and C both send A a snapshot at
//! overlapping times. Each peer's snapshot sweeps only its own shard, with its
//! own mark, so A keeps exactly the union of what B and C hold, and nothing
//! on A's own shard is touched.

mod common;

use common::*;
use sixgate_core::nat64::{Nat64Config, Pool4Entry, Proto, Replica, ReplicaOp, SessionView};
use sixgate_core::{Config, Translator};
use sixgate_testkit::Ip6;
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

const S: u64 = 1_000_000_000;
const IDS: [u16; 3] = [1, 2, 3];

fn shard(i: usize) -> (Ipv4Addr, u8) {
    (Ipv4Addr::new(192, 0, 2, i as u8), 32)
}

fn config() -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry {
            prefix_len: 30,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }],
        max_sessions: 256,
        ..Nat64Config::default()
    });
    cfg
}

/// Node `i` of the three: its own shard, the other two as peers.
fn node(i: usize) -> Harness {
    let mut h = Harness::new(config());
    h.t.enable_replica_export(256);
    h.t.set_own_pool4_shards(Some(&[shard(i)]));
    let peers: Vec<_> = (0..3)
        .filter(|&j| j != i)
        .map(|j| (IDS[j], vec![shard(j)]))
        .collect();
    h.t.set_replica_peers(&peers);
    h.now_ns = S;
    h
}

fn replica(s: &SessionView) -> Replica {
    Replica {
        proto: s.bib.proto,
        tcp_state: s.tcp_state,
        remaining_ms: s.expires_in_ms,
        v6: s.bib.v6,
        port6: s.bib.port6,
        v4: s.bib.v4,
        port4: s.bib.port4,
        remote4: s.remote4,
        rport: s.rport,
    }
}

/// Every session of a node, as a record (what a snapshot restates).
fn table(h: &Harness) -> Vec<Replica> {
    let mut v = Vec::new();
    let mut at = Some(0);
    while let Some(from) = at {
        at =
            h.t.walk_sessions(from, 64, h.now_ns, |s| v.push(replica(&s)));
    }
    v
}

type Key = (Ipv6Addr, u16, Ipv4Addr, u16, Ipv4Addr, u16);

fn keys(v: &[Replica]) -> BTreeSet<Key> {
    v.iter()
        .map(|r| (r.v6, r.port6, r.v4, r.port4, r.remote4, r.rport))
        .collect()
}

/// Node `from`'s live changes to the two others.
fn sync(nodes: &mut [Harness], from: usize) {
    let mut ch = Vec::new();
    nodes[from]
        .t
        .drain_replica_changes(|op, r| ch.push((op, *r)));
    for (j, n) in nodes.iter_mut().enumerate() {
        if j != from {
            for (op, r) in &ch {
                n.t.import_replica_from(IDS[from], *op, r, n.now_ns)
                    .unwrap();
            }
        }
    }
}

fn sweep(t: &mut Translator, peer: u16, now_ns: u64) -> u64 {
    let (mut at, mut removed) = (Some(0), 0);
    while let Some(from) = at {
        let (next, n) = t.replica_sweep(peer, from, 3, now_ns);
        at = next;
        removed += n;
    }
    removed
}

/// A record of a session nobody has (any more): on `shard` port `port4`.
fn ghost(i: usize, port4: u16) -> Replica {
    Replica {
        proto: Proto::Udp,
        tcp_state: None,
        remaining_ms: 300_000,
        v6: Ipv6Addr::new(0x2001, 0xdb8, 0xdead, 0, 0, 0, 0, port4),
        port6: 7000,
        v4: shard(i).0,
        port4,
        remote4: SERVER4,
        rport: 53,
    }
}

#[test]
fn two_peers_snapshot_at_once_and_a_keeps_exactly_the_union() {
    let mut nodes = [node(0), node(1), node(2)];
    // Sessions made on each node, synced live to the others.
    for (i, n) in nodes.iter_mut().enumerate() {
        for k in 0..6u16 {
            let client = Ipv6Addr::new(0x2001, 0xdb8, 1 + i as u16, 0, 0, 0, 0, k + 1);
            n.one(&Ip6::new(client, SERVER6).udp(5000 + k, 53, 10));
        }
    }
    for i in 0..3 {
        sync(&mut nodes, i);
    }
    let [a, b, c] = &mut nodes;
    let a_own = keys(&table(a))
        .into_iter()
        .filter(|k| k.2 == shard(0).0)
        .collect::<BTreeSet<_>>();
    assert_eq!(a_own.len(), 6);
    assert_eq!(a.t.nat64_stats().sessions.udp, 18);

    // A holds entries B and C no longer have (deletes it missed): two on
    // B's shard, two on C's. B holds a stale replica of one of C's too,
    // which B's snapshot will restate.
    for (i, port) in [(1, 40000), (1, 40002), (2, 40000), (2, 40002)] {
        let from = IDS[i];
        a.t.import_replica_from(from, ReplicaOp::Upsert, &ghost(i, port), a.now_ns)
            .unwrap();
    }
    b.t.import_replica_from(3, ReplicaOp::Upsert, &ghost(2, 40002), b.now_ns)
        .unwrap();
    assert_eq!(a.t.nat64_stats().sessions.udp, 22);

    // B's and C's snapshots reach A interleaved: B begins, half of B's
    // records, C begins, the rest of both, B ends (A sweeps B's shard while
    // C's snapshot is still open), then C ends.
    let (b_snap, c_snap) = (table(b), table(c));
    assert_eq!(b_snap.len(), 19, "B's 18 and its stale replica of C's");
    let now = a.now_ns;
    let put = |a: &mut Harness, from: u16, r: &Replica| {
        a.t.import_replica_from(from, ReplicaOp::Upsert, r, now)
            .unwrap()
    };
    assert!(a.t.replica_snapshot_begin(2));
    let (b1, b2) = b_snap.split_at(b_snap.len() / 2);
    for r in b1 {
        put(a, 2, r);
    }
    assert!(a.t.replica_snapshot_begin(3));
    let (c1, c2) = c_snap.split_at(c_snap.len() / 2);
    for (rb, rc) in b2.iter().zip(c1) {
        put(a, 2, rb);
        put(a, 3, rc);
    }
    for r in b2.iter().skip(c1.len()) {
        put(a, 2, r);
    }
    assert_eq!(sweep(&mut a.t, 2, now), 2, "B's two ghosts, nothing else");
    for r in c2 {
        put(a, 3, r);
    }
    assert_eq!(
        sweep(&mut a.t, 3, now),
        2,
        "C's two ghosts, B's stale restatement of one included"
    );

    let union: BTreeSet<Key> = keys(&table(b)).union(&keys(&table(c))).copied().collect();
    let ghost_key = keys(&[ghost(2, 40002)]);
    let expected: BTreeSet<Key> = union.difference(&ghost_key).copied().collect();
    assert_eq!(
        keys(&table(a)),
        expected,
        "exactly the union of B's and C's"
    );
    assert!(a_own.is_subset(&keys(&table(a))), "A's own shard untouched");
    assert_eq!(a.t.nat64_stats().sessions.udp, 18);
}

#[test]
fn a_new_snapshot_of_the_same_peer_restarts_its_mark_only() {
    let mut nodes = [node(0), node(1), node(2)];
    for i in [1, 2] {
        let client = Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, i as u16);
        nodes[i].one(&Ip6::new(client, SERVER6).udp(5000, 53, 10));
        sync(&mut nodes, i);
    }
    let [a, b, c] = &mut nodes;
    let now = a.now_ns;
    // C's snapshot restates C's session; then B's snapshot begins twice
    // (the first one broken off by a resync) without touching C's mark.
    assert!(a.t.replica_snapshot_begin(3));
    for r in table(c) {
        a.t.import_replica_from(3, ReplicaOp::Upsert, &r, now)
            .unwrap();
    }
    assert!(a.t.replica_snapshot_begin(2));
    assert!(a.t.replica_snapshot_begin(2));
    for r in table(b) {
        a.t.import_replica_from(2, ReplicaOp::Upsert, &r, now)
            .unwrap();
    }
    assert_eq!(sweep(&mut a.t, 3, now), 0, "C's restated session stays");
    assert_eq!(sweep(&mut a.t, 2, now), 0, "B's restated session stays");
    assert_eq!(a.t.nat64_stats().sessions.udp, 2);
    // A sweep of a node that is no peer touches nothing.
    assert_eq!(a.t.replica_sweep(7, 0, 64, now), (None, 0));
}
