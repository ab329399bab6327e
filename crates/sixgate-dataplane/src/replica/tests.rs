use super::*;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{Nat64Config, Pool4Entry};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Verdict};
use sixgate_testkit::{Ip4, Ip6};
use std::net::{Ipv4Addr, Ipv6Addr};

const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);

fn translator() -> Translator {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
    let mut cfg = Config::with_pool6(Some(pool6));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry::single(POOL4)],
        max_sessions: 4096,
        ..Nat64Config::default()
    });
    let mut t = Translator::new(Arc::new(cfg));
    t.enable_replica_export(1024);
    t
}

fn run(t: &mut Translator, input: &[u8], now: u64) -> (Verdict, Vec<u8>) {
    let mut buf = vec![0u8; HEADROOM + input.len() + 64];
    buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
    let mut scratch = Scratch::new();
    let v = t.translate(&mut pkt, &mut scratch, now);
    (v, pkt.data().to_vec())
}

/// Worker A's changes cross to worker B through the rings and a "sync
/// thread" on its own thread; B then translates A's sessions' return packets.
#[test]
fn changes_cross_from_one_worker_to_another_through_the_rings() {
    // Rings that hold the whole test: a full one is a counted loss (the
    // snapshot's job, tested below), and the relay thread may not run at all
    // for a while on a busy machine.
    let (mut wa, mut sa) = replica_rings(512, vec![]);
    let (mut wb, mut sb) = replica_rings(512, vec![]);
    let (mut a, mut b) = (translator(), translator());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    // The sync thread: A's exports become B's imports (the wire is
    // sixgate-sync's business, tested there).
    let relay = std::thread::spawn(move || {
        let mut moved = 0u64;
        let mut pending: Option<Change> = None;
        while !stop2.load(Relaxed) || pending.is_some() {
            if pending.is_none() {
                pending = sa.export.pop();
            }
            match pending {
                Some((op, record))
                    if sb.import.push(Inbound::Change {
                        peer: 1,
                        op,
                        record,
                    }) =>
                {
                    moved += 1;
                    pending = None;
                }
                _ => std::thread::yield_now(),
            }
        }
        moved
    });
    let mut ports = Vec::new();
    for i in 0..300u16 {
        let client = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, i);
        let server6 = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6407);
        let (v, out) = run(&mut a, &Ip6::new(client, server6).udp(5000, 53, 8), 1);
        assert_eq!(v, Verdict::Translated);
        ports.push(u16::from_be_bytes([out[20], out[21]]));
        // The worker exchanges every few packets, as it would between batches.
        if i % 16 == 15 {
            wa.exchange(&mut a, 1, IMPORT_BUDGET);
            wb.exchange(&mut b, 1, IMPORT_BUDGET);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while wb.counters.imported.load(Relaxed) < 300 && std::time::Instant::now() < deadline {
        wa.exchange(&mut a, 1, IMPORT_BUDGET);
        wb.exchange(&mut b, 1, IMPORT_BUDGET);
        std::thread::yield_now();
    }
    stop.store(true, Relaxed);
    assert_eq!(relay.join().unwrap(), 300);
    assert_eq!(wa.counters.exported.load(Relaxed), 300);
    assert_eq!(wa.counters.export_lost.load(Relaxed), 0);
    assert_eq!(wb.counters.import_refused.load(Relaxed), 0);
    for port in ports {
        let (v, _) = run(&mut b, &Ip4::new(SERVER4, POOL4).udp(53, port, 8), 2);
        assert_eq!(v, Verdict::Translated, "port {port}");
    }
}

#[test]
fn a_full_export_ring_is_counted() {
    let (mut wa, _sync) = replica_rings(4, vec![]);
    let mut a = translator();
    for i in 0..6u16 {
        let client = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, i);
        let server6 = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6407);
        run(&mut a, &Ip6::new(client, server6).udp(5000, 53, 8), 1);
    }
    wa.exchange(&mut a, 1, IMPORT_BUDGET);
    assert_eq!(wa.counters.exported.load(Relaxed), 4);
    assert_eq!(wa.counters.export_lost.load(Relaxed), 2);
}

#[test]
fn snapshot_markers_sweep_what_was_not_restated() {
    let (mut wb, mut sb) = replica_rings(64, vec![(1, vec![(POOL4, 32)])]);
    let (mut a, mut b) = (translator(), translator());
    let server6 = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6407);
    for i in 0..3u16 {
        let client = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, i);
        run(&mut a, &Ip6::new(client, server6).udp(5000, 53, 8), 1);
    }
    let mut all = Vec::new();
    a.drain_replica_changes(|op, r| all.push((op, *r)));
    for (op, r) in &all {
        assert!(sb.import.push(Inbound::Change {
            peer: 1,
            op: *op,
            record: *r,
        }));
    }
    wb.exchange(&mut b, 1, IMPORT_BUDGET);
    assert_eq!(b.nat64_stats().sessions.udp, 3);
    // A snapshot that restates only the first session.
    assert!(sb.import.push(Inbound::SnapshotBegin { peer: 1 }));
    assert!(sb.import.push(Inbound::Change {
        peer: 1,
        op: all[0].0,
        record: all[0].1,
    }));
    assert!(sb.import.push(Inbound::SnapshotEnd { peer: 1 }));
    for _ in 0..4 {
        wb.exchange(&mut b, 2, IMPORT_BUDGET);
    }
    assert_eq!(b.nat64_stats().sessions.udp, 1);
    assert_eq!(wb.counters.swept.load(Relaxed), 2);
}

/// A worker whose exchange used its whole budget says so, so that its loop
/// goes round again instead of sleeping on a snapshot's backlog.
#[test]
fn a_full_budget_leaves_more_to_do() {
    let mut t = translator();
    let (mut w, mut s) = replica_rings(16, vec![]);
    for _ in 0..3 {
        assert!(s.import.push(Inbound::SnapshotBegin { peer: 1 }));
    }
    assert!(!w.more_to_do());
    w.exchange(&mut t, 1, 2);
    assert!(w.more_to_do(), "two of three taken");
    w.exchange(&mut t, 2, 2);
    assert!(!w.more_to_do(), "the last one taken");
}

/// Peers 2 and 3 of a group, each owning one address of this translator's
/// pool4 (`192.0.2.0/30`).
const P2: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const P3: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 3);

/// A worker's rings knowing peers 2 and 3, and its translator.
fn group_member() -> (WorkerEnds, SyncEnds, Translator) {
    let peers = vec![(2, vec![(P2, 32)]), (3, vec![(P3, 32)])];
    let (w, s) = replica_rings(64, peers);
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
    let mut cfg = Config::with_pool6(Some(pool6));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry {
            prefix_len: 30,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }],
        max_sessions: 64,
        ..Nat64Config::default()
    });
    (w, s, Translator::new(Arc::new(cfg)))
}

/// Node `from`'s record of session `i` on pool4 address `v4` (P2 or P3).
fn group_record(from: u16, v4: Ipv4Addr, i: u16) -> Inbound {
    use sixgate_core::nat64::{Proto, Replica};
    let record = Replica {
        proto: Proto::Udp,
        tcp_state: None,
        remaining_ms: 300_000,
        v6: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, u16::from(v4 == P3), i),
        port6: 5000,
        v4,
        port4: 40_000 + 2 * i,
        remote4: SERVER4,
        rport: 53,
    };
    Inbound::Change {
        peer: from,
        op: ReplicaOp::Upsert,
        record,
    }
}

/// docs/ha.md, "Snapshots in a group of three or more": two peers'
/// snapshots interleaved in one import ring; each peer's sweep removes only
/// what that peer did not restate on its own shard, while the other's
/// snapshot is still open.
#[test]
fn two_peers_snapshots_at_once_sweep_only_their_own_shards() {
    let (mut w, mut s, mut t) = group_member();
    // Each owner's record of a session on its own shard.
    let rec = |v4, i| group_record(if v4 == P3 { 3 } else { 2 }, v4, i);
    let (p2, p3) = (P2, P3);
    // Three sessions of each peer; each snapshot restates only two.
    for i in 0..3 {
        assert!(s.import.push(rec(p2, i)));
        assert!(s.import.push(rec(p3, i)));
    }
    for item in [
        Inbound::SnapshotBegin { peer: 2 },
        rec(p2, 0),
        Inbound::SnapshotBegin { peer: 3 },
        rec(p3, 0),
        rec(p2, 1),
        Inbound::SnapshotEnd { peer: 2 },
        rec(p3, 1),
        Inbound::SnapshotEnd { peer: 3 },
    ] {
        assert!(s.import.push(item));
    }
    // Three items a round: the sweeps run between rounds, as on a worker.
    for round in 0..6 {
        w.exchange(&mut t, 1 + round, 3);
    }
    assert!(!w.more_to_do());
    assert_eq!(w.counters.swept.load(Relaxed), 2, "one of each peer");
    assert_eq!(t.nat64_stats().sessions.udp, 4);
}

/// docs/fastpath.md, "NAT64 established sessions": with both sync and a fast
/// path, one drain of the translator's changes feeds both, in order, and the
/// export ring gets every change the tee saw.
#[test]
fn exchange_tee_hands_every_change_to_both() {
    let (mut w, mut s) = replica_rings(64, vec![]);
    let mut t = translator();
    let server6 = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6407);
    for i in 0..5u16 {
        let client = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, i);
        let (v, _) = run(&mut t, &Ip6::new(client, server6).udp(5000, 53, 8), 1);
        assert_eq!(v, Verdict::Translated);
    }
    let mut teed = Vec::new();
    w.exchange_tee(&mut t, 1, IMPORT_BUDGET, &mut |op, r| teed.push((op, *r)));
    assert_eq!(teed.len(), 5);
    let mut exported = Vec::new();
    while let Some(c) = s.export.pop() {
        exported.push(c);
    }
    assert_eq!(exported, teed);
    assert_eq!(w.counters.exported.load(Relaxed), 5);
}

/// docs/ha.md: a worker that exported wakes a sleeping sync thread (one
/// write per exchange), and a thread that is awake costs it no write.
#[test]
fn an_exchange_that_exported_rings_the_doorbell() {
    let bell = Arc::new(Doorbell::new().unwrap());
    let (mut w, _s) = replica_rings(64, vec![]);
    w.bell = Some(bell.clone());
    let mut t = translator();
    let readable = || {
        let mut p = libc::pollfd {
            fd: bell.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    };
    let out = Ip6::new(
        Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5),
        "2001:db8:64::c633:6407".parse().unwrap(),
    )
    .udp(5000, 53, 10);
    // Awake (not armed): no write.
    run(&mut t, &out, 1);
    w.exchange(&mut t, 1, IMPORT_BUDGET);
    assert!(!readable());
    // Asleep: the next export wakes it; an exchange with nothing to export
    // does not write.
    bell.arm();
    w.exchange(&mut t, 2, IMPORT_BUDGET);
    assert!(!readable());
    run(
        &mut t,
        &Ip6::new(
            Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5),
            "2001:db8:64::c633:6407".parse().unwrap(),
        )
        .udp(5001, 53, 10),
        3,
    );
    w.exchange(&mut t, 3, IMPORT_BUDGET);
    assert!(readable());
    bell.disarm();
    assert!(!readable());
}

/// docs/ha.md, "Snapshots in a group of three or more": the worker imports
/// each record as its sender's, so peer 3's stale replica of peer 2's
/// session, restated in peer 3's snapshot while peer 2's runs, does not
/// keep it through peer 2's sweep (imported as the owner's, it would).
#[test]
fn a_third_nodes_restatement_does_not_keep_the_owners_entry() {
    let (mut w, mut s, mut t) = group_member();
    for item in [
        group_record(2, P2, 0),
        group_record(2, P2, 1),
        Inbound::SnapshotBegin { peer: 2 },
        group_record(2, P2, 0),
        Inbound::SnapshotBegin { peer: 3 },
        // Peer 3 missed peer 2's delete of session 1.
        group_record(3, P2, 1),
        Inbound::SnapshotEnd { peer: 3 },
        Inbound::SnapshotEnd { peer: 2 },
    ] {
        assert!(s.import.push(item));
    }
    for round in 0..4 {
        w.exchange(&mut t, 1 + round, IMPORT_BUDGET);
    }
    assert!(!w.more_to_do());
    assert_eq!(w.counters.swept.load(Relaxed), 1, "peer 2's session 1");
    assert_eq!(t.nat64_stats().sessions.udp, 1);
}
