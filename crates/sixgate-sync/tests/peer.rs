//! Behaviours of one peer's streams (docs/ha.md, "Reliability",
//! "Authentication and replay").

mod common;

use common::*;
use sixgate_sync::record::{Op, TcpState};
use sixgate_sync::{Drop, Event, Key, ResyncReason};

fn synced_pair(key: Option<&Key>) -> (Node, Node, u64) {
    let mut a = Node::new(1, 2, 100, key);
    let mut b = Node::new(2, 1, 200, key);
    let mut now = 1_000 * MS;
    run(&mut a, &mut b, &mut now, 50);
    assert!(
        a.peer.synced() && b.peer.synced(),
        "{:?} {:?}",
        a.peer.status(),
        b.peer.status()
    );
    (a, b, now)
}

fn records(n: &Node) -> Vec<u16> {
    records_of(&n.events)
}

fn records_of(events: &[Event]) -> Vec<u16> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) => Some(r.port6 - 40000),
            _ => None,
        })
        .collect()
}

#[test]
fn join_snapshot_then_live_records_in_order() {
    let key = Key::new(b"0123456789abcdef").unwrap();
    let mut a = Node::new(1, 2, 100, Some(&key));
    let mut now = MS;
    for i in 0..100 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
    }
    let mut b = Node::new(2, 1, 200, Some(&key));
    run(&mut a, &mut b, &mut now, 50);
    assert!(b.peer.synced());
    assert_eq!(b.replica, a.table, "the snapshot restated the table");
    assert!(b.events.contains(&Event::PeerUp));
    for i in 100..130 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::V6Init));
    }
    a.change(now, session(1, 5, Op::SessionDelete, TcpState::Established));
    run(&mut a, &mut b, &mut now, 10);
    assert_eq!(b.replica, a.table);
    assert_eq!(a.peer.status().unacked, 0, "acks freed the queue");
    let c = a.peer.counters();
    assert_eq!(c.dropped(), 0, "{c:?}");
    // What a sent before b's snapshot began is dropped as `unsynced`: the
    // snapshot restated it.
    let c = b.peer.counters();
    assert_eq!(c.dropped(), c.unsynced, "{c:?}");
    assert_eq!(
        c.datagrams_in + c.dropped(),
        b.received,
        "one verdict per datagram"
    );
}

#[test]
fn records_fill_datagrams_to_the_mtu() {
    let key = Key::new(b"0123456789abcdef").unwrap();
    let (mut a, _b, now) = synced_pair(Some(&key));
    for i in 0..30 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
    }
    // 24 records fill a datagram; on an idle link (nothing unacked) the
    // other 6 follow at once.
    let first = a.step(now);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].len(), 44 + 24 * 56 + 32);
    assert_eq!(first[1].len(), 44 + 6 * 56 + 32);
    // While those wait for their ack, records wait for the flush delay.
    for i in 30..60 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
    }
    let full = a.step(now);
    assert_eq!(full.len(), 1);
    assert_eq!(full[0].len(), 44 + 24 * 56 + 32);
    assert!(a.step(now + MS / 2).is_empty());
    let later = a.step(now + MS);
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].len(), 44 + 6 * 56 + 32);
}

#[test]
fn reordered_datagrams_apply_in_order() {
    let (mut a, mut b, now) = synced_pair(None);
    b.events.clear();
    let mut ds = Vec::new();
    for i in 0..3 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
        ds.extend(a.step(now + MS));
    }
    assert_eq!(ds.len(), 3);
    for d in [&ds[2], &ds[0], &ds[1]] {
        b.receive(now + MS, d);
    }
    assert_eq!(records(&b), vec![0, 1, 2]);
    assert_eq!(b.peer.counters().dropped(), 0);
}

#[test]
fn lost_then_nacked_then_resent() {
    let (mut a, mut b, mut now) = synced_pair(None);
    b.events.clear();
    let mut ds = Vec::new();
    for i in 0..3 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
        ds.extend(a.step(now + MS));
    }
    b.receive(now, &ds[1]);
    b.receive(now, &ds[2]);
    assert!(records(&b).is_empty(), "held behind the gap");
    // The NACK waits for reordering to settle, then goes.
    assert!(b.step(now).iter().all(|d| d[5] != 2));
    now += 10 * MS;
    let nack: Vec<_> = b.step(now).into_iter().filter(|d| d[5] == 2).collect();
    assert_eq!(nack.len(), 1);
    a.receive(now, &nack[0]);
    for d in a.step(now) {
        b.receive(now, &d);
    }
    assert_eq!(records(&b), vec![0, 1, 2]);
    assert_eq!(a.peer.counters().resent, 1);
    assert_eq!(b.peer.counters().nacks_sent, 1);
}

#[test]
fn a_lost_last_message_is_found_by_the_probe() {
    let (mut a, mut b, mut now) = synced_pair(None);
    b.events.clear();
    a.change(now, session(1, 1, Op::SessionUpsert, TcpState::Established));
    let lost = a.step(now + MS);
    assert_eq!(lost.len(), 1);
    // Nothing else is sent; within the probe delay plus a NACK round, b has it.
    for _ in 0..200 {
        now += MS;
        for d in a.step(now) {
            b.receive(now, &d);
        }
        for d in b.step(now) {
            a.receive(now, &d);
        }
    }
    assert_eq!(records(&b), vec![1]);
}

#[test]
fn resend_limit_reached_resyncs() {
    let (mut a, mut b, mut now) = synced_pair(None);
    a.change(now, session(1, 1, Op::SessionUpsert, TcpState::Established));
    a.change(now, session(1, 2, Op::SessionUpsert, TcpState::Established));
    let _lost = a.step(now + MS);
    a.change(
        now + MS,
        session(1, 3, Op::SessionUpsert, TcpState::Established),
    );
    for d in a.step(now + 2 * MS) {
        b.receive(now, &d);
    }
    // Every resend of the missing message is lost: b NACKs, a resends, ...
    a.events.clear();
    let mut resync = false;
    for _ in 0..2000 {
        now += MS;
        let _lost = a
            .step(now)
            .into_iter()
            .filter(|d| d[5] != 1)
            .map(|d| b.receive(now, &d))
            .count();
        for d in b.step(now) {
            a.receive(now, &d);
        }
        if a.events
            .iter()
            .any(|e| matches!(e, Event::SnapshotRequested(_)))
        {
            resync = true;
            break;
        }
    }
    assert!(
        resync,
        "a gave up resending and resyncs: {:?}",
        a.peer.status()
    );
    assert!(
        b.peer.counters().nacks_sent >= 3,
        "{:?} {:?}",
        a.events,
        b.peer.counters()
    );
    // Once the link heals, the snapshot repairs b.
    run(&mut a, &mut b, &mut now, 100);
    assert_eq!(b.replica, a.table);
    assert!(a.peer.counters().resync_started >= 2);
}

#[test]
fn receiver_asks_for_resync_after_unanswered_nacks() {
    let (mut a, mut b, mut now) = synced_pair(None);
    a.change(now, session(1, 1, Op::SessionUpsert, TcpState::Established));
    let _lost = a.step(now + MS);
    a.change(
        now + MS,
        session(1, 2, Op::SessionUpsert, TcpState::Established),
    );
    for d in a.step(now + 2 * MS) {
        b.receive(now, &d);
    }
    // a never hears the NACKs.
    for _ in 0..1500 {
        now += MS;
        let _ = b.step(now);
    }
    let c = b.peer.counters();
    assert!(c.nacks_sent >= 3);
    assert!(c.resync_requested >= 1, "{c:?}");
}

#[test]
fn forged_and_replayed_datagrams_are_counted_and_ignored() {
    let key = Key::new(b"0123456789abcdef").unwrap();
    let (mut a, mut b, now) = synced_pair(Some(&key));
    b.events.clear();
    a.change(now, session(1, 7, Op::SessionUpsert, TcpState::Established));
    let ds = a.step(now + MS);
    let d = &ds[0];
    b.receive(now, d);
    b.receive(now, d);
    assert_eq!(records(&b), vec![7]);
    assert_eq!(b.peer.counters().replayed, 1);
    // The same datagram signed with another key, and one with a flipped bit.
    let mut forger = Node::new(1, 2, 100, Some(&Key::new(b"not the real key").unwrap()));
    forger.change(now, session(1, 8, Op::SessionDelete, TcpState::Established));
    for f in forger.step(now + MS) {
        b.receive(now, &f);
    }
    let mut flipped = d.clone();
    flipped[60] ^= 1;
    b.receive(now, &flipped);
    assert_eq!(records(&b), vec![7]);
    assert!(b.peer.counters().auth_failed >= 2);
    // Truncated and garbage input.
    b.receive(now, &d[..d.len() - 1]);
    b.receive(now, &[0xff; 300]);
    b.receive(now, &[]);
    let c = b.peer.counters();
    assert_eq!((c.truncated, c.bad_magic), (2, 1));
    assert_eq!(
        c.datagrams_in + c.dropped(),
        b.received,
        "one verdict per datagram"
    );
}

#[test]
fn old_epoch_wrong_node_and_config_mismatch_are_refused() {
    let (mut a, mut b, now) = synced_pair(None);
    // An old incarnation of node 1.
    let mut ghost = Node::new(1, 2, 50, None);
    for d in ghost.step(now) {
        b.receive(now, &d);
    }
    assert_eq!(b.peer.counters().replayed, 1);
    // Node 1 talking to node 3.
    let mut lost = Node::new(1, 3, 100, None);
    for d in lost.step(now) {
        b.receive(now, &d);
    }
    assert_eq!(b.peer.counters().wrong_node, 1);
    // Another configuration: one event, every datagram counted.
    let mut other = sixgate_sync::Peer::new(sixgate_sync::PeerConfig::new(1, 2, 100, 999), None);
    let mut buf = [0u8; 1500];
    let mut evs = Vec::new();
    for t in 0..3 {
        let n = other.poll_transmit(now + t * 2000 * MS, &mut buf).unwrap();
        assert_eq!(
            b.peer.receive(now, &buf[..n], &mut |e| evs.push(e)),
            Err(Drop::ConfigMismatch)
        );
    }
    assert_eq!(
        evs,
        vec![Event::ConfigMismatch {
            ours: HASH,
            theirs: 999
        }]
    );
    assert_eq!(b.peer.counters().config_mismatch, 3);
    let _ = a.step(now);
}

#[test]
fn a_restarted_peer_is_resynced() {
    let (mut a, mut b, mut now) = synced_pair(None);
    for i in 0..40 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
        b.change(now, session(2, i, Op::SessionUpsert, TcpState::Established));
    }
    run(&mut a, &mut b, &mut now, 20);
    assert_eq!(b.replica, a.table);
    // b restarts empty with a later epoch.
    let mut b2 = Node::new(2, 1, 300, None);
    run(&mut a, &mut b2, &mut now, 50);
    assert!(a.events.contains(&Event::PeerRestarted));
    assert_eq!(b2.replica, a.table, "a sent b2 a snapshot");
    // b2's first snapshot is empty, but a may be carrying b's sessions
    // (b was killed): it sweeps nothing.
    assert!(b2.table.is_empty());
    assert_eq!(a.replica.len(), 40, "b's entries kept at a");
}

/// A restarted peer's snapshots sweep nothing until it has acknowledged
/// ours: neither its first (empty) one nor one it begins while ours is
/// still on its way. Once it has ours, its snapshots sweep again.
#[test]
fn a_restarted_peers_snapshots_sweep_only_once_it_has_ours() {
    let (mut a, mut b, mut now) = synced_pair(None);
    for i in 0..40 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
        b.change(now, session(2, i, Op::SessionUpsert, TcpState::Established));
    }
    run(&mut a, &mut b, &mut now, 20);
    assert_eq!(a.replica, b.table);
    let mut b2 = Node::new(2, 1, 300, None);
    // a's datagrams to b2 are lost: b2's snapshots reach a, a's never b2.
    let one_way = |a: &mut Node, b2: &mut Node, now: &mut u64| {
        for _ in 0..20 {
            let _ = a.step(*now);
            for d in b2.step(*now) {
                a.receive(*now, &d);
            }
            *now += MS;
        }
    };
    b2.peer.snapshot_due(ResyncReason::PeerRestarted);
    one_way(&mut a, &mut b2, &mut now);
    b2.peer.snapshot_due(ResyncReason::Gap);
    one_way(&mut a, &mut b2, &mut now);
    let ends = |n: &Node| -> Vec<bool> {
        n.events
            .iter()
            .filter_map(|e| match e {
                Event::SnapshotEnd { sweep, .. } => Some(*sweep),
                _ => None,
            })
            .collect()
    };
    let before = ends(&a).len();
    assert!(a.events.contains(&Event::PeerRestarted));
    assert_eq!(a.peer.counters().snapshots_received, 3, "{:?}", a.events);
    assert_eq!(ends(&a)[before - 2..], [false, false]);
    assert_eq!(a.replica.len(), 40, "b's entries kept at a");
    // The link heals: b2 gets a's snapshot and acknowledges it.
    // (a's next keepalive, 1 s, is the first b2 hears of it.)
    run(&mut a, &mut b2, &mut now, 1200);
    assert_eq!(b2.replica, a.table);
    b2.peer.snapshot_due(ResyncReason::Gap);
    run(&mut a, &mut b2, &mut now, 20);
    assert_eq!(ends(&a).last(), Some(&true));
    assert!(
        a.replica.is_empty(),
        "b2's own tables are authoritative again"
    );
}

#[test]
fn full_queue_is_counted_and_schedules_a_snapshot() {
    let mut cfg = sixgate_sync::PeerConfig::new(1, 2, 100, HASH);
    cfg.queue_capacity = 2;
    let mut p = sixgate_sync::Peer::new(cfg, None);
    let mut pushed = 0;
    while p.push(
        0,
        &session(1, pushed, Op::SessionUpsert, TcpState::Established),
    ) {
        pushed += 1;
    }
    // Two full datagrams are queued and one more batch is pending.
    assert_eq!(pushed, 25 * 3);
    assert_eq!(p.room(), 0);
    assert_eq!(p.counters().queue_full, 1);
    assert_eq!(p.snapshot_wanted(), Some(ResyncReason::Gap));
}

#[test]
fn silence_marks_the_peer_down_and_keepalives_keep_it_up() {
    let (mut a, mut b, mut now) = synced_pair(None);
    run(&mut a, &mut b, &mut now, 5000);
    assert!(a.peer.is_up() && b.peer.is_up());
    assert!(!a.events.contains(&Event::PeerDown));
    for _ in 0..3100 {
        now += MS;
        let _ = a.step(now);
    }
    assert!(!a.peer.is_up());
    assert!(a.events.contains(&Event::PeerDown));
}

/// docs/ha.md, "Planned drain": records queued before the DRAIN reach the
/// peer before its event; the drain counts as done once the peer acks it.
#[test]
fn drain_is_acked_after_every_record_before_it() {
    let key = Key::new(b"0123456789abcdef").unwrap();
    let (mut a, mut b, mut now) = synced_pair(Some(&key));
    b.events.clear();
    for i in 0..30 {
        a.change(now, session(1, i, Op::SessionUpsert, TcpState::Established));
    }
    a.peer.drain();
    assert!(a.peer.status().draining && !a.peer.drain_acked());
    run(&mut a, &mut b, &mut now, 10);
    assert!(a.peer.drain_acked(), "{:?}", a.peer.status());
    assert_eq!(b.replica, a.table);
    let at = b
        .events
        .iter()
        .position(|e| matches!(e, Event::PeerDrained { id: 1, .. }))
        .unwrap_or_else(|| panic!("no PeerDrained: {:?}", b.events));
    assert_eq!(records_of(&b.events[..at]), (0..30).collect::<Vec<_>>());
    assert!(b.peer.status().peer_drained);
    // Records after the drain still flow (refreshes of what the node keeps
    // translating); a second drain call changes nothing.
    a.peer.drain();
    a.change(
        now,
        session(1, 99, Op::SessionRefresh, TcpState::Established),
    );
    run(&mut a, &mut b, &mut now, 10);
    assert_eq!(
        b.events
            .iter()
            .filter(|e| matches!(e, Event::PeerDrained { .. }))
            .count(),
        1
    );
    assert_eq!(b.peer.counters().dropped(), 0);
}

/// A snapshot that starts before the DRAIN is acked voids it (SNAP_BEGIN):
/// the DRAIN goes again after SNAP_END.
#[test]
fn drain_voided_by_a_snapshot_is_sent_again_after_it() {
    let (mut a, mut b, mut now) = synced_pair(None);
    a.change(now, session(1, 1, Op::SessionUpsert, TcpState::Established));
    a.peer.drain();
    // Lost on the way, then a resync restarts the stream.
    let _ = a.step(now);
    a.peer.snapshot_due(sixgate_sync::ResyncReason::Gap);
    run(&mut a, &mut b, &mut now, 20);
    assert!(a.peer.drain_acked(), "{:?}", a.peer.status());
    assert!(b.peer.status().peer_drained);
    assert_eq!(b.replica, a.table);
}

/// A peer that drained and then restarted empty handed its entries over:
/// its first snapshot does not sweep them; a later one does.
#[test]
fn a_drained_peer_restarting_empty_does_not_sweep_what_it_handed_over() {
    let (mut a, mut b, mut now) = synced_pair(None);
    for i in 0..10 {
        b.change(now, session(2, i, Op::SessionUpsert, TcpState::Established));
    }
    b.peer.drain();
    run(&mut a, &mut b, &mut now, 20);
    assert!(b.peer.drain_acked());
    assert_eq!(a.replica.len(), 10);
    let mut b2 = Node::new(2, 1, 300, None);
    run(&mut a, &mut b2, &mut now, 50);
    assert!(a.events.contains(&Event::PeerRestarted));
    assert!(
        a.events
            .iter()
            .any(|e| matches!(e, Event::SnapshotEnd { sweep: false, .. })),
        "{:?}",
        a.events
    );
    assert_eq!(a.replica.len(), 10, "kept after the drained peer restarted");
    assert!(!a.peer.status().peer_drained, "a new epoch, not drained");
    // Its next snapshot is an ordinary one again.
    b2.peer.snapshot_due(sixgate_sync::ResyncReason::Gap);
    run(&mut a, &mut b2, &mut now, 20);
    assert!(a.replica.is_empty());
}

/// A DRAIN is authenticated and replay-protected like every message: a
/// forged one is `auth_failed`, the same one twice is `replayed`, and the
/// event comes once.
#[test]
fn forged_and_replayed_drain_are_refused() {
    let key = Key::new(b"0123456789abcdef").unwrap();
    let (mut a, mut b, now) = synced_pair(Some(&key));
    b.events.clear();
    let mut forger = Node::new(1, 2, 100, Some(&Key::new(b"not the real key").unwrap()));
    forger.peer.drain();
    for f in forger.step(now) {
        b.receive(now, &f);
    }
    assert!(!b.peer.status().peer_drained);
    assert!(b.peer.counters().auth_failed >= 1);
    a.peer.drain();
    let ds = a.step(now);
    assert_eq!(ds.len(), 1);
    b.receive(now, &ds[0]);
    b.receive(now, &ds[0]);
    let drained = b
        .events
        .iter()
        .filter(|e| matches!(e, Event::PeerDrained { .. }))
        .count();
    assert_eq!(drained, 1);
    assert_eq!(b.peer.counters().replayed, 1);
}
