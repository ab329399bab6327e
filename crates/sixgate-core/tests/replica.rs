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

/// RFC 6146 §3.5.1.1 / §3.5.3 (docs/fastpath.md): a UDP or ICMP query
/// session is settled, once, by its third packet in either direction; a
/// request and its reply are not enough. The hint is this node's: a peer
/// importing it changes nothing, and an imported session is settled only by
/// packets here.
#[test]
fn rfc6146_s3_5_1_1_a_session_settles_at_its_third_packet() {
    let (mut a, mut b) = (node(), node());
    let out = Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10);
    let port4 = src_port4(&a.one(&out));
    let ops = |v: Vec<(ReplicaOp, Replica)>| v.into_iter().map(|(op, _)| op).collect::<Vec<_>>();
    let created = changes(&mut a);
    assert_eq!(ops(created.clone()), [ReplicaOp::Upsert]);
    let reply = Ip4::new(SERVER4, POOL4).udp(53, port4, 10);
    a.one(&reply);
    assert_eq!(ops(changes(&mut a)), [], "request and reply: not settled");
    a.one(&out);
    let settled = changes(&mut a);
    assert_eq!(ops(settled.clone()), [ReplicaOp::Settled]);
    assert_eq!(settled[0].1.port4, port4);
    for _ in 0..5 {
        a.one(&reply);
    }
    assert_eq!(ops(changes(&mut a)), [], "settled once");

    // ICMP query (§3.5.3): the same.
    let ping = Ip6::new(CLIENT6, SERVER6).echo_request(7, 1, 8);
    for n in 0..3 {
        a.one(&ping);
        let want: &[ReplicaOp] = match n {
            0 => &[ReplicaOp::Upsert],
            1 => &[],
            _ => &[ReplicaOp::Settled],
        };
        assert_eq!(ops(changes(&mut a)), want, "ping {n}");
    }

    // The peer: the hint applies nothing; the replica settles by its own
    // packets (two here after the import: it never saw the first).
    b.t.import_replica(created[0].0, &created[0].1, b.now_ns)
        .unwrap();
    b.t.import_replica(ReplicaOp::Settled, &settled[0].1, b.now_ns)
        .unwrap();
    assert_eq!(ops(changes(&mut b)), [], "imports are not exported");
    b.one(&reply);
    assert_eq!(ops(changes(&mut b)), []);
    b.one(&reply);
    assert_eq!(ops(changes(&mut b)), [ReplicaOp::Settled]);
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
        // What the peer gets: not the fast path's hint.
        for (op, r) in changes(&mut a) {
            if op != ReplicaOp::Settled {
                exported += 1;
                b.t.import_replica(op, &r, b.now_ns).unwrap();
            }
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

/// Two nodes of a pair sharing pool4 192.0.2.0/31: A owns .0, B owns .1.
/// B is returned with A's shard as a peer's.
fn pair() -> (Harness, Harness) {
    let pool = |f: &mut Nat64Config| {
        f.pool4 = vec![Pool4Entry {
            prefix_len: 31,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }];
    };
    let mut a = Harness::new(config(pool));
    let mut b = Harness::new(config(pool));
    a.t.enable_replica_export(16);
    b.t.enable_replica_export(16);
    a.t.set_own_pool4_shards(Some(&[(Ipv4Addr::new(192, 0, 2, 0), 32)]));
    b.t.set_own_pool4_shards(Some(&[(Ipv4Addr::new(192, 0, 2, 1), 32)]));
    a.now_ns = S;
    b.now_ns = S;
    (a, b)
}

/// What B's timers send now.
fn tick_out(h: &mut Harness) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(v) = h.t.tick(h.now_ns, &mut h.scratch) {
        out.extend(v.scratch_outputs(&h.scratch).map(<[u8]>::to_vec));
    }
    out
}

/// docs/ha.md, "A packet of a session this node does not own" (RFC 6146
/// §3.5.1.2 answered otherwise): the first UDP reply reaches B before A's
/// record; it waits, silently, and is translated when the record arrives.
#[test]
fn a_reply_that_overtakes_its_record_is_held_then_translated() {
    let (mut a, mut b) = pair();
    let out = a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10));
    let pool4 = Ipv4Addr::new(192, 0, 2, 0);
    assert_eq!(view(&out).src, IpAddr::V4(pool4));
    let port4 = u16::from_be_bytes([l4(&out)[0], l4(&out)[1]]);
    let reply = Ip4::new(SERVER4, pool4).udp(53, port4, 10);
    assert_eq!(b.run(&reply).0, Verdict::Held, "no ICMP error");
    assert_eq!(b.t.nat64_stats().held_syns, 1);
    assert!(!b.t.held_ready());
    for (op, r) in changes(&mut a) {
        b.t.import_replica(op, &r, b.now_ns).unwrap();
    }
    assert!(b.t.held_ready(), "the record released it");
    let sent = tick_out(&mut b);
    assert_eq!(sent.len(), 1);
    assert_eq!(view(&sent[0]).dst, IpAddr::V6(CLIENT6));
    assert_eq!(u16::from_be_bytes([l4(&sent[0])[2], l4(&sent[0])[3]]), 5000);
    assert_eq!(b.t.counters().translated_4to6, 1);
    assert_eq!(b.t.nat64_stats().held_syns, 0);
    assert!(tick_out(&mut b).is_empty(), "sent once");
}

/// The SYN-ACK of a connection opened through A, at B before A's record:
/// held (not as an unsolicited SYN, §3.5.2.2), translated on the record,
/// and the session joins ESTABLISHED.
#[test]
fn a_syn_ack_that_overtakes_its_record_completes_the_handshake() {
    let (mut a, mut b) = pair();
    let syn = a.one(&Ip6::new(CLIENT6, SERVER6).tcp_flags(40000, 443, tcp_flag::SYN, 0));
    let pool4 = Ipv4Addr::new(192, 0, 2, 0);
    let port4 = u16::from_be_bytes([l4(&syn)[0], l4(&syn)[1]]);
    let synack = Ip4::new(SERVER4, pool4).tcp_flags(443, port4, tcp_flag::SYN | tcp_flag::ACK, 0);
    assert_eq!(b.run(&synack).0, Verdict::Held);
    assert_eq!(b.t.counters().drops(DropReason::SynHeld), 0);
    for (op, r) in changes(&mut a) {
        b.t.import_replica(op, &r, b.now_ns).unwrap();
    }
    let sent = tick_out(&mut b);
    assert_eq!(sent.len(), 1);
    assert_eq!(view(&sent[0]).dst, IpAddr::V6(CLIENT6));
    let mut sessions = Vec::new();
    let _ = b.t.walk_sessions(0, 16, b.now_ns, |s| sessions.push(s));
    assert_eq!(sessions[0].tcp_state, Some(TcpState::Established));
}

/// No record within 200 ms: dropped as `sync_pending`, never an ICMP error.
/// Packets for this node's own shard, and unsolicited SYNs, are as before.
#[test]
fn without_a_record_the_held_packet_goes_silently() {
    let (_, mut b) = pair();
    let peer4 = Ipv4Addr::new(192, 0, 2, 0);
    assert_eq!(
        b.run(&Ip4::new(SERVER4, peer4).udp(53, 2000, 10)).0,
        Verdict::Held
    );
    b.now_ns += 199_000_000;
    assert!(tick_out(&mut b).is_empty());
    assert_eq!(b.t.counters().drops(DropReason::SyncPending), 0);
    b.now_ns += 1_000_000;
    assert!(tick_out(&mut b).is_empty(), "no ICMP error");
    assert_eq!(b.t.counters().drops(DropReason::SyncPending), 1);
    assert_eq!(b.t.nat64_stats().held_syns, 0);
    // Own shard: RFC 6146 §3.5.1.2 as without sync.
    let own = Ip4::new(SERVER4, Ipv4Addr::new(192, 0, 2, 1)).udp(53, 2000, 10);
    assert_eq!(b.run(&own).0, Verdict::Replied(DropReason::NoBibEntry));
    // An unsolicited SYN is held for §3.5.2.2 whatever the shard.
    let syn = Ip4::new(SERVER4, peer4).tcp_flags(443, 2000, tcp_flag::SYN, 0);
    assert_eq!(b.run(&syn).0, Verdict::Dropped(DropReason::SynHeld));
}

/// The hold store is bounded (`max_held_syns`): what does not fit is
/// dropped as `sync_pending`, still without an error.
#[test]
fn a_full_hold_store_drops_silently() {
    let pool = |f: &mut Nat64Config| {
        f.max_held_syns = 1;
        f.pool4 = vec![Pool4Entry {
            prefix_len: 31,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }];
    };
    let mut b = Harness::new(config(pool));
    b.t.set_own_pool4_shards(Some(&[(Ipv4Addr::new(192, 0, 2, 1), 32)]));
    let peer4 = Ipv4Addr::new(192, 0, 2, 0);
    assert_eq!(
        b.run(&Ip4::new(SERVER4, peer4).udp(53, 2000, 10)).0,
        Verdict::Held
    );
    assert_eq!(
        b.run(&Ip4::new(SERVER4, peer4).udp(53, 2002, 10)).0,
        Verdict::Dropped(DropReason::SyncPending)
    );
    assert_eq!(b.t.counters().drops(DropReason::SyncPending), 1);
}

/// A reply the kernel handed over with its checksum left to offload (Linux
/// CHECKSUM_PARTIAL: the field holds the pseudo-header sum) is held, and
/// leaves later from the timers with no offload metadata: its checksum is
/// finished when it is held.
#[test]
fn a_held_packet_with_a_partial_checksum_leaves_with_a_full_one() {
    use sixgate_core::{HEADROOM, PacketBuf, checksum};
    let (mut a, mut b) = pair();
    let out = a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10));
    let port4 = u16::from_be_bytes([l4(&out)[0], l4(&out)[1]]);
    let mut p = Ip4::new(SERVER4, Ipv4Addr::new(192, 0, 2, 0)).udp(53, port4, 10);
    let pseudo = checksum::v4_pseudo(
        &p[12..16].try_into().unwrap(),
        &p[16..20].try_into().unwrap(),
        (p.len() - 20) as u16,
        17,
    );
    p[26..28].copy_from_slice(&pseudo.to_be_bytes());
    let mut buf = vec![0u8; HEADROOM + p.len()];
    buf[HEADROOM..].copy_from_slice(&p);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, p.len());
    assert_eq!(
        b.t.translate_with(&mut pkt, &mut b.scratch, b.now_ns, true),
        Verdict::Held
    );
    for (op, r) in changes(&mut a) {
        b.t.import_replica(op, &r, b.now_ns).unwrap();
    }
    let sent = tick_out(&mut b);
    assert_eq!(sent.len(), 1);
    assert!(view(&sent[0]).l4_verified, "a complete UDP checksum");
}

/// A fragmented reply (RFC 6146 §3.4) that overtakes its record: its first
/// fragment waits for the record, its later fragments for the first; the
/// record releases all of them, the first first.
#[test]
fn a_fragmented_reply_that_overtakes_its_record_goes_whole() {
    let (mut a, mut b) = pair();
    let out = a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10));
    let port4 = u16::from_be_bytes([l4(&out)[0], l4(&out)[1]]);
    let reply = Ip4::new(SERVER4, Ipv4Addr::new(192, 0, 2, 0)).udp(53, port4, 1200);
    let frags = sixgate_testkit::split_v4(&reply, 600);
    assert!(frags.len() >= 2);
    for f in &frags {
        assert_eq!(b.run(f).0, Verdict::Held, "no ICMP error");
    }
    for (op, r) in changes(&mut a) {
        b.t.import_replica(op, &r, b.now_ns).unwrap();
    }
    let sent = tick_out(&mut b);
    assert_eq!(sent.len(), frags.len(), "every fragment");
    let (whole, s) = reassemble(&sent);
    assert_eq!(s.dst, IpAddr::V6(CLIENT6));
    assert!(whole.len() > 1200);
    assert_eq!(b.t.counters().drops(DropReason::FragmentExpired), 0);
}

/// docs/logging.md, "With `[sync]`": the node that made a session logs its
/// end. B holds A's session as a replica: while A is up, B's copy timing out
/// is not logged (A logs it); while A is down, B logs it (the survivor ends
/// what the dead node began). B's own session is B's to log either way.
#[test]
fn the_end_is_logged_by_the_maker_or_by_the_survivor() {
    let pool = |n: &mut Nat64Config| {
        n.event_log = sixgate_core::nat64::EventLog::Sessions;
        n.pool4 = vec![Pool4Entry {
            prefix_len: 31,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }];
    };
    let a_shard = (Ipv4Addr::new(192, 0, 2, 0), 32);
    let b_shard = (Ipv4Addr::new(192, 0, 2, 1), 32);
    let run = |a_up: bool| {
        let mut a = Harness::new(config(pool));
        let mut b = Harness::new(config(pool));
        a.t.enable_replica_export(16);
        a.t.set_own_pool4_shards(Some(&[a_shard]));
        b.t.set_own_pool4_shards(Some(&[b_shard]));
        b.t.set_replica_peers(&[(1, vec![a_shard])]);
        b.t.set_peer_up(1, a_up);
        a.now_ns = S;
        b.now_ns = S;
        a.one(&Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10));
        for (op, r) in changes(&mut a) {
            b.t.import_replica(op, &r, b.now_ns).unwrap();
        }
        b.one(&Ip6::new(CLIENT6, SERVER6).udp(6000, 53, 10));
        b.t.drain_events(|_| {});
        b.now_ns += 400 * S;
        tick_all(&mut b);
        let mut ended = Vec::new();
        b.t.drain_events(|e| ended.push((e.kind, e.v4)));
        ended.sort_by_key(|e| e.1);
        ended
    };
    use sixgate_core::nat64::EventKind::SessionExpired as End;
    assert_eq!(run(true), [(End, Ipv4Addr::new(192, 0, 2, 1))]);
    assert_eq!(
        run(false),
        [
            (End, Ipv4Addr::new(192, 0, 2, 0)),
            (End, Ipv4Addr::new(192, 0, 2, 1))
        ]
    );
}
