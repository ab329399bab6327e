//! NAT64 state sync's two benchmarks of docs/ha.md, on one core: two nodes
//! (translator, replica rings, `SyncLink` over UDP on the loopback, HMAC on,
//! 1500-byte MTU) driven in turns by this one thread, as in
//! `sync_link/tests.rs`. Both nodes' work is on this core, so a node's
//! own share is less.
//!
//! - `replication [N]` (default 1 000 000): node A creates N UDP sessions by
//!   translating packets, 256 between link rounds while fewer than 256 of
//!   its datagrams are unacked; each becomes a change record that is
//!   exported, encoded, sent, received, decoded, handed to B's worker and
//!   imported. Prints the time until B imported the last one, the time the
//!   same packets take to translate alone (a fresh translator, no sync), and
//!   records/s of the difference: what replication costs on top. Every drop
//!   counter must stay 0.
//! - `snapshot [N]`: A holds N sessions; B joins and asks for a snapshot,
//!   which A walks out of its tables paced by its send queue's room (256
//!   a round, as the sync thread does); prints the time from the snapshot's
//!   start to B having imported all N.
//!
//! - `worker [N]`: a worker's own cost of sync, CPU ns per packet with its
//!   side on (export from the core, the exchange every 256 packets) and off,
//!   for packets that each create a session and for packets of 1000
//!   existing sessions; best of three runs each.
//!
//! `cargo run --release -p sixgate-dataplane --example sync_bench -- replication`

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{Nat64Config, Pool4Entry, ReplicaOp};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_dataplane::replica::{IMPORT_BUDGET, WorkerEnds, replica_rings};
use sixgate_dataplane::sync_link::{LinkConfig, SyncLink};
use sixgate_sync::{Event, Key, tables};
use sixgate_testkit::Ip6;

const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
/// Sessions per subscriber (one source port, this many server ports).
const PER_SUBSCRIBER: u64 = 1000;
/// Records a round creates or walks: the sync thread's `WALK_SPAN`.
const ROUND: usize = 256;

/// This thread's CPU time, s: on a machine shared with other work the
/// figure that says what the code costs (wall time says what it waited).
fn cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

fn translator(sessions: u64, export: bool) -> Translator {
    let mut cfg = Config::with_pool6(Some(pool6()));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry::single(POOL4)],
        max_sessions: (sessions + sessions / 4 + 1024) as u32,
        ..Nat64Config::default()
    });
    let mut t = Translator::new(Arc::new(cfg));
    if export {
        t.enable_replica_export(1 << 16);
    }
    t
}

struct Node {
    t: Translator,
    ends: WorkerEnds,
    link: SyncLink,
    walk: Option<u32>,
    snapshot_started: Option<Instant>,
    snapshot_end_seen: bool,
}

fn node(id: u16, socket: UdpSocket, peer: (u16, SocketAddr), t: Translator) -> Node {
    let key = Key::new(b"a benchmark key of 32 bytes.....").unwrap();
    let shard = if peer.0 == 1 {
        POOL4
    } else {
        Ipv4Addr::new(192, 0, 2, 2)
    };
    let (ends, sync) = replica_rings(1 << 16, vec![(peer.0, vec![(shard, 32)])]);
    let cfg = LinkConfig {
        node: id,
        peers: vec![peer],
        key: Some(key),
        config_hash: 0x5157,
        epoch: u64::from(id),
        max_datagram: 1452,
        pool6: pool6(),
        port_block_size: 0,
    };
    Node {
        t,
        ends,
        link: SyncLink::new(socket, cfg, vec![sync]).unwrap(),
        walk: None,
        snapshot_started: None,
        snapshot_end_seen: false,
    }
}

impl Node {
    /// The worker's exchange (until its import ring is empty), the sync
    /// thread's step and a chunk of a snapshot walk.
    fn round(&mut self, now: u64) {
        self.exchange(now);
        let mut end = false;
        let wants = self
            .link
            .step(now, &mut |_, e| {
                if let Event::SnapshotEnd { .. } = e {
                    end = true;
                }
            })
            .unwrap();
        self.snapshot_end_seen |= end;
        if wants && self.walk.is_none() {
            self.link.snapshot();
            self.snapshot_started = Some(Instant::now());
            self.walk = Some(0);
        }
        if let Some(from) = self.walk {
            let span = self.link.snapshot_room().min(ROUND) as u32;
            if from == u32::MAX {
                if self.link.snapshot_end() {
                    self.walk = None;
                }
            } else if span > 0 {
                let mut batch = Vec::with_capacity(ROUND);
                let next = self.t.walk_sessions(from, span, now, |s| {
                    batch.push(tables::to_record(
                        ReplicaOp::Upsert,
                        &tables::from_view(&s),
                        &pool6(),
                    ));
                });
                for r in &batch {
                    self.link.snapshot_push(now, r);
                }
                self.walk = Some(next.unwrap_or(u32::MAX));
            }
        }
        self.exchange(now);
    }

    fn exchange(&mut self, now: u64) {
        loop {
            self.ends.exchange(&mut self.t, now, IMPORT_BUDGET);
            if !self.ends.more_to_do() {
                break;
            }
        }
    }

    fn imported(&self) -> u64 {
        self.ends.counters.imported.load(Relaxed)
    }
}

/// The packet creating session `i`: subscriber `i / PER_SUBSCRIBER`, port
/// 5000, to server port `1024 + i % PER_SUBSCRIBER`.
fn packet(i: u64) -> Vec<u8> {
    let sub = i / PER_SUBSCRIBER;
    let client = Ipv6Addr::new(0x2001, 0xdb8, 1, (sub >> 16) as u16, sub as u16, 0, 0, 1);
    let server6 = pool6().embed(SERVER4);
    Ip6::new(client, server6).udp(5000, 1024 + (i % PER_SUBSCRIBER) as u16, 8)
}

/// Buffers one translation uses, reused.
struct Bufs {
    packet: Vec<u8>,
    scratch: Scratch,
}

impl Bufs {
    fn new() -> Bufs {
        Bufs {
            packet: vec![0u8; HEADROOM + 256],
            scratch: Scratch::new(),
        }
    }
}

fn translate(t: &mut Translator, input: &[u8], bufs: &mut Bufs, now: u64) -> Verdict {
    bufs.packet[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
    let mut pkt = PacketBuf::new(&mut bufs.packet, HEADROOM, input.len());
    t.translate(&mut pkt, &mut bufs.scratch, now)
}

fn pair(a: Translator, b: Translator) -> (Node, Node) {
    let sa = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sb = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (aa, ab) = (sa.local_addr().unwrap(), sb.local_addr().unwrap());
    (node(1, sa, (2, ab), a), node(2, sb, (1, aa), b))
}

/// Rounds of both nodes until `done`; the protocol's clock is real time.
fn run(
    a: &mut Node,
    b: &mut Node,
    t0: Instant,
    mut before: impl FnMut(&mut Node, u64),
    done: impl Fn(&Node, &Node) -> bool,
) {
    while !done(a, b) {
        let now = t0.elapsed().as_nanos() as u64 + 1;
        before(a, now);
        a.round(now);
        b.round(now);
        assert!(t0.elapsed() < Duration::from_secs(300), "no end in 300 s");
    }
}

fn report(what: &str, a: &Node, b: &Node) {
    let (sa, sb) = (a.link.status()[0].2, b.link.status()[0].2);
    let (la, lb) = (a.link.counters(), b.link.counters());
    println!(
        "{what}: A sent {} datagrams ({} resent, queue full {}), export lost {}; B dropped {} \
         datagrams, import full {}, import refused {}, send errors {}/{}",
        sa.counters.datagrams_out,
        sa.counters.resent,
        sa.counters.queue_full,
        a.ends.counters.export_lost.load(Relaxed),
        sb.counters.dropped(),
        lb.import_full,
        b.ends.counters.import_refused.load(Relaxed),
        la.send_errors,
        lb.send_errors,
    );
    let lost = sa.counters.queue_full
        + a.ends.counters.export_lost.load(Relaxed)
        + sb.counters.dropped()
        + lb.import_full
        + b.ends.counters.import_refused.load(Relaxed);
    assert_eq!(lost, 0, "{what}: records dropped on the way");
}

fn replication(n: u64) {
    let packets: Vec<Vec<u8>> = (0..n).map(packet).collect();
    let mut buf = Bufs::new();
    // The translation alone, for the difference.
    let mut alone = translator(n, false);
    let (t0, c0) = (Instant::now(), cpu_s());
    for (i, p) in packets.iter().enumerate() {
        let v = translate(&mut alone, p, &mut buf, 1_000_000 + i as u64);
        assert_eq!(v, Verdict::Translated);
    }
    let alone_t = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
    drop(alone);

    let (mut a, mut b) = pair(translator(n, true), translator(n, true));
    let t0 = Instant::now();
    run(
        &mut a,
        &mut b,
        t0,
        |_, _| {},
        |a, b| a.link.synced() && b.link.synced(),
    );
    let (t0, c0) = (Instant::now(), cpu_s());
    let mut next = 0usize;
    run(
        &mut a,
        &mut b,
        t0,
        |a, now| {
            if a.link.status()[0].2.unacked < ROUND {
                for p in packets[next..].iter().take(ROUND) {
                    let v = translate(&mut a.t, p, &mut buf, now);
                    assert_eq!(v, Verdict::Translated);
                }
                next = (next + ROUND).min(packets.len());
            }
        },
        |_, b| b.imported() >= n,
    );
    let total = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
    let sync = (total.0 - alone_t.0, total.1 - alone_t.1);
    println!(
        "replication: {n} sessions created on A and imported by B in {:.2} s wall, {:.2} s CPU; \
         their translation alone {:.2} s wall, {:.2} s CPU; replication {:.2} s CPU = {:.0} \
         records/s per CPU-second ({:.0} by wall time; exported, encoded, sent, received, \
         imported, both nodes on this one thread)",
        total.0,
        total.1,
        alone_t.0,
        alone_t.1,
        sync.1,
        n as f64 / sync.1,
        n as f64 / sync.0,
    );
    report("replication", &a, &b);
}

fn snapshot(n: u64) {
    let mut a = translator(n, false);
    let mut buf = Bufs::new();
    for i in 0..n {
        let v = translate(&mut a, &packet(i), &mut buf, 1_000_000);
        assert_eq!(v, Verdict::Translated);
    }
    assert_eq!(a.nat64_stats().sessions.udp, n);
    let (mut a, mut b) = pair(a, translator(n, true));
    let t0 = Instant::now();
    let mut c0 = None;
    run(
        &mut a,
        &mut b,
        t0,
        |a, _| {
            if a.snapshot_started.is_some() && c0.is_none() {
                c0 = Some(cpu_s());
            }
        },
        |_, b| b.imported() >= n && b.snapshot_end_seen,
    );
    let started = a.snapshot_started.expect("A sent a snapshot");
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_s() - c0.unwrap_or(0.0);
    println!(
        "snapshot: {n} sessions from A to a joining B in {secs:.2} s wall, {cpu:.2} s CPU, from \
         the snapshot's start ({:.0} records/s; B's tables hold {} UDP sessions)",
        n as f64 / secs,
        b.t.nat64_stats().sessions.udp
    );
    report("snapshot", &a, &b);
}

/// One pass of `packets` through a translator, with sync's worker side on
/// (export, the exchange every 256 packets, the sync thread's end emptied)
/// or off; this thread's CPU ns per packet.
fn worker_pass(packets: &[Vec<u8>], sessions: u64, sync: bool, warm: &[Vec<u8>]) -> f64 {
    let mut t = translator(sessions, sync);
    let (mut ends, mut far) =
        replica_rings(1 << 16, vec![(2, vec![(Ipv4Addr::new(192, 0, 2, 2), 32)])]);
    let mut buf = Bufs::new();
    for p in warm {
        translate(&mut t, p, &mut buf, 1_000_000);
    }
    if sync {
        ends.exchange(&mut t, 1_000_000, IMPORT_BUDGET);
        while far.export.pop().is_some() {}
    }
    let c0 = cpu_s();
    for (i, chunk) in packets.chunks(ROUND).enumerate() {
        let now = 2_000_000 + i as u64 * 1000;
        for p in chunk {
            let v = translate(&mut t, p, &mut buf, now);
            debug_assert_eq!(v, Verdict::Translated);
        }
        if sync {
            ends.exchange(&mut t, now, IMPORT_BUDGET);
            while far.export.pop().is_some() {}
        }
    }
    (cpu_s() - c0) * 1e9 / packets.len() as f64
}

/// The worker's cost of sync: CPU ns per packet with its side of sync on and
/// off, for packets that each create a session and for packets of
/// sessions that exist (refreshes coalesced), best of three each.
fn worker(n: u64) {
    let new: Vec<Vec<u8>> = (0..n).map(packet).collect();
    let flows = 1000u64;
    let existing: Vec<Vec<u8>> = (0..n).map(|i| packet(i % flows)).collect();
    let warm: Vec<Vec<u8>> = (0..flows).map(packet).collect();
    for (what, packets, warm) in [
        ("new sessions", &new, &[][..]),
        ("existing sessions", &existing, &warm[..]),
    ] {
        let mut best = [f64::MAX; 2];
        for _ in 0..3 {
            for (k, sync) in [false, true].into_iter().enumerate() {
                best[k] = best[k].min(worker_pass(packets, n, sync, warm));
            }
        }
        println!(
            "worker, {what}: {n} packets, {:.0} ns/packet CPU with sync off, {:.0} on: {:+.1} % \
             (best of 3 each)",
            best[0],
            best[1],
            (best[1] / best[0] - 1.0) * 100.0
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "replication".into());
    let n = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    match what.as_str() {
        "replication" => replication(n),
        "snapshot" => snapshot(n),
        "worker" => worker(n),
        // One pass only (for callgrind: the difference of two runs' counts
        // is what sync adds): `worker-pass N on|off new|existing`.
        "worker-pass" => {
            let sync = args.next().as_deref() == Some("on");
            let existing = args.next().as_deref() == Some("existing");
            let flows = if existing { 1000 } else { n };
            let packets: Vec<Vec<u8>> = (0..n).map(|i| packet(i % flows)).collect();
            let warm: Vec<Vec<u8>> = (0..if existing { flows } else { 0 }).map(packet).collect();
            println!("{:.0} ns/packet", worker_pass(&packets, n, sync, &warm));
        }
        other => {
            eprintln!("sync_bench: replication, snapshot or worker, not {other:?}");
            std::process::exit(2);
        }
    }
}
