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
                Some((op, r)) if sb.import.push(Inbound::Change(op, r)) => {
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
        assert!(sb.import.push(Inbound::Change(*op, *r)));
    }
    wb.exchange(&mut b, 1, IMPORT_BUDGET);
    assert_eq!(b.nat64_stats().sessions.udp, 3);
    // A snapshot that restates only the first session.
    assert!(sb.import.push(Inbound::SnapshotBegin));
    assert!(sb.import.push(Inbound::Change(all[0].0, all[0].1)));
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
        assert!(s.import.push(Inbound::SnapshotBegin));
    }
    assert!(!w.more_to_do());
    w.exchange(&mut t, 1, 2);
    assert!(w.more_to_do(), "two of three taken");
    w.exchange(&mut t, 2, 2);
    assert!(!w.more_to_do(), "the last one taken");
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
