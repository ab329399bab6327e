//! Two nodes over real UDP sockets on the loopback: a session created on A's
//! translator is translated by B's, through the rings, the link and the
//! protocol; a datagram from an address that is no peer is counted, not read.

use super::*;
use crate::replica::{IMPORT_BUDGET, WorkerEnds, replica_rings};
use sixgate_core::nat64::{Nat64Config, Pool4Entry, ReplicaOp};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_testkit::{Ip4, Ip6};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
const MS: u64 = 1_000_000;

fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

struct Node {
    t: Translator,
    ends: WorkerEnds,
    link: SyncLink,
    walk: Option<u32>,
    events: Vec<(u16, Event)>,
}

fn translator() -> Translator {
    let mut cfg = Config::with_pool6(Some(pool6()));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry::single(POOL4)],
        max_sessions: 4096,
        ..Nat64Config::default()
    });
    let mut t = Translator::new(Arc::new(cfg));
    t.enable_replica_export(4096);
    t
}

fn node(id: u16, socket: UdpSocket, peer: (u16, SocketAddr), key: &Key) -> Node {
    // Node 1 owns POOL4; node 2 another address (all A's sessions are on
    // A's shard, so B's snapshots never sweep them).
    let shard_of = |n: u16| {
        if n == 1 {
            (POOL4, 32)
        } else {
            (Ipv4Addr::new(192, 0, 2, 2), 32)
        }
    };
    let (ends, sync) = replica_rings(4096, vec![(peer.0, vec![shard_of(peer.0)])]);
    let cfg = LinkConfig {
        node: id,
        peers: vec![peer],
        key: Some(key.clone()),
        config_hash: 0x5157,
        epoch: u64::from(id),
        max_datagram: 1452,
        pool6: pool6(),
        port_block_size: 0,
    };
    Node {
        t: translator(),
        ends,
        link: SyncLink::new(socket, cfg, vec![sync]).unwrap(),
        walk: None,
        events: Vec::new(),
    }
}

impl Node {
    /// The worker's exchange, the sync thread's step, and a snapshot walk.
    fn round(&mut self, now: u64) {
        self.ends.exchange(&mut self.t, now, IMPORT_BUDGET);
        let events = &mut self.events;
        let wants = self
            .link
            .step(now, &mut |id, e| events.push((id, *e)))
            .unwrap();
        if wants && self.walk.is_none() {
            self.link.snapshot();
            self.walk = Some(0);
        }
        if let Some(from) = self.walk {
            let mut batch = Vec::new();
            let span = self.link.snapshot_room().min(64) as u32;
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
            self.walk = next;
            if next.is_none() && !self.link.snapshot_end() {
                self.walk = Some(u32::MAX);
            }
        }
        self.ends.exchange(&mut self.t, now, IMPORT_BUDGET);
    }

    fn translate(&mut self, input: &[u8], now: u64) -> (Verdict, Vec<u8>) {
        let mut buf = vec![0u8; HEADROOM + input.len() + 64];
        buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
        let v = self.t.translate(&mut pkt, &mut Scratch::new(), now);
        (v, pkt.data().to_vec())
    }
}

#[test]
fn two_nodes_over_udp_share_their_sessions() {
    let sa = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sb = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (aa, ab) = (sa.local_addr().unwrap(), sb.local_addr().unwrap());
    let key = Key::new(b"a test key of sixteen+ bytes").unwrap();
    let mut a = node(1, sa, (2, ab), &key);
    let mut b = node(2, sb, (1, aa), &key);
    let server6 = pool6().embed(SERVER4);
    let mut ports = Vec::new();
    let mut now = MS;
    let start = std::time::Instant::now();
    // Real time matters only for the loopback's delivery; the protocol runs
    // on `now`, one millisecond a round.
    for round in 0..3000u64 {
        if round < 200 {
            let client = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, round as u16);
            let (v, out) = a.translate(&Ip6::new(client, server6).udp(5000, 53, 8), now);
            assert_eq!(v, Verdict::Translated);
            ports.push(u16::from_be_bytes([out[20], out[21]]));
        }
        a.round(now);
        b.round(now);
        now += MS;
        if round > 300
            && b.ends
                .counters
                .imported
                .load(std::sync::atomic::Ordering::Relaxed)
                >= 200
        {
            break;
        }
        if start.elapsed().as_secs() > 20 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    assert!(
        b.link.synced() && a.link.synced(),
        "{:?} {:?}",
        a.link.status(),
        b.link.status()
    );
    assert!(
        a.events
            .iter()
            .any(|(id, e)| *id == 2 && *e == Event::PeerUp)
    );
    assert_eq!(
        a.t.nat64_stats().sessions.udp,
        200,
        "B's snapshots swept nothing of A's"
    );
    assert_eq!(b.t.nat64_stats().sessions.udp, 200);
    for port in &ports {
        let (v, _) = b.translate(&Ip4::new(SERVER4, POOL4).udp(53, *port, 8), now);
        assert_eq!(v, Verdict::Translated, "port {port}");
    }
    // A datagram from an address that is no peer is counted and ignored.
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger.send_to(b"SGSY garbage", ab).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    b.round(now);
    assert_eq!(b.link.counters.unknown_peer, 1);
    let c = b.link.status()[0].2.counters;
    assert_eq!(c.auth_failed + c.malformed + c.truncated, 0, "{c:?}");
}

/// docs/ha.md, "Planned drain": the workers stop allocating (existing
/// mappings still translate), then the DRAIN goes after every record and
/// the peer acknowledges it.
#[test]
fn a_draining_node_stops_allocating_and_its_peer_acks_the_drain() {
    let sa = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sb = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (aa, ab) = (sa.local_addr().unwrap(), sb.local_addr().unwrap());
    let key = Key::new(b"a test key of sixteen+ bytes").unwrap();
    let mut a = node(1, sa, (2, ab), &key);
    let mut b = node(2, sb, (1, aa), &key);
    let server6 = pool6().embed(SERVER4);
    let old = Ip6::new(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1), server6).udp(5000, 53, 8);
    let mut now = MS;
    let rounds =
        |a: &mut Node, b: &mut Node, now: &mut u64, until: &dyn Fn(&Node, &Node) -> bool| {
            for _ in 0..5000 {
                if until(a, b) {
                    return;
                }
                a.round(*now);
                b.round(*now);
                *now += MS;
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            panic!("{:?} {:?}", a.link.status(), b.link.status());
        };
    rounds(&mut a, &mut b, &mut now, &|a, b| {
        a.link.synced() && b.link.synced()
    });
    assert_eq!(a.translate(&old, now).0, Verdict::Translated);
    assert!(!a.link.stop_allocating(), "the worker has not taken it yet");
    a.ends.exchange(&mut a.t, now, IMPORT_BUDGET);
    assert!(a.link.stop_allocating());
    a.link.drain();
    rounds(&mut a, &mut b, &mut now, &|a, _| a.link.drain_done());
    let st = b.link.status()[0].2;
    assert!(st.peer_drained, "{st:?}");
    assert!(
        b.events
            .iter()
            .any(|(id, e)| *id == 1 && matches!(e, Event::PeerDrained { .. }))
    );
    assert_eq!(
        b.t.nat64_stats().sessions.udp,
        1,
        "b has the session from before"
    );
    // No new mapping on a; the old one still translates.
    let new = Ip6::new(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2), server6).udp(5000, 53, 8);
    assert_ne!(a.translate(&new, now).0, Verdict::Translated);
    assert_eq!(a.translate(&old, now).0, Verdict::Translated);
}

/// One worker's rings and a link to `peer` (node 2, no key), both ends
/// sharing one doorbell.
fn belled_link(peer: SocketAddr) -> (SyncLink, WorkerEnds, Arc<crate::doorbell::Doorbell>) {
    let bell = Arc::new(crate::doorbell::Doorbell::new().unwrap());
    let (mut ends, mut sync) = replica_rings(64, vec![]);
    ends.bell = Some(bell.clone());
    sync.bell = Some(bell.clone());
    let cfg = LinkConfig {
        node: 1,
        peers: vec![(2, peer)],
        key: None,
        config_hash: 0x5157,
        epoch: 1,
        max_datagram: 1452,
        pool6: pool6(),
        port_block_size: 0,
    };
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let link = SyncLink::new(socket, cfg, vec![sync]).unwrap();
    (link, ends, bell)
}

/// The worker's side: a new UDP session from source port `port` translated,
/// its record moved into the export ring (ringing the doorbell if armed).
fn export_session(t: &mut Translator, ends: &mut WorkerEnds, port: u16) {
    let out = Ip6::new(
        Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5),
        Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6407),
    )
    .udp(port, 53, 10);
    let mut buf = vec![0u8; HEADROOM + out.len() + 64];
    buf[HEADROOM..HEADROOM + out.len()].copy_from_slice(&out);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, out.len());
    assert_eq!(
        t.translate(&mut pkt, &mut Scratch::new(), 1),
        Verdict::Translated
    );
    ends.exchange(t, 1, IMPORT_BUDGET);
}

/// docs/ha.md, "Workers, rings, sole writers": the sync thread sleeps until
/// a worker's doorbell, not until its timeout, and not at all while a
/// change waits in a ring.
#[test]
fn the_thread_sleeps_until_a_worker_rings() {
    let (mut link, mut ends, _bell) = belled_link("127.0.0.1:9".parse().unwrap());
    assert!(link.bell().is_some());
    // A worker exports 50 ms from now.
    let worker = std::thread::spawn(move || {
        let mut t = translator();
        std::thread::sleep(std::time::Duration::from_millis(50));
        export_session(&mut t, &mut ends, 5000);
        ends
    });
    let t0 = std::time::Instant::now();
    link.sleep(5_000_000_000);
    let slept = t0.elapsed();
    assert!(
        slept < std::time::Duration::from_millis(2000),
        "woken by the doorbell, not the 5 s timeout: {slept:?}"
    );
    let _ends = worker.join().unwrap();
    // The change is still in the ring (no step ran): no sleep at all.
    let t0 = std::time::Instant::now();
    link.sleep(5_000_000_000);
    assert!(t0.elapsed() < std::time::Duration::from_millis(100));
}

/// docs/ha.md, "Workers, rings, sole writers": on a busy link (a datagram
/// sent and not acked) records wait up to `flush_delay` for their datagram
/// to fill; meanwhile the thread sleeps without its doorbell, so a worker's
/// export neither writes the eventfd nor cuts the sleep short, and what it
/// exported leaves in the same datagram at the deadline.
#[test]
fn a_lingering_datagram_takes_the_workers_records_without_the_doorbell() {
    // The peer: a socket that is there (no ICMP error) and never answers.
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_nonblocking(true).unwrap();
    let (mut link, mut ends, bell) = belled_link(peer.local_addr().unwrap());
    let mut t = translator();
    let datagrams = |peer: &UdpSocket| {
        let mut b = [0u8; 2048];
        std::iter::from_fn(|| peer.recv(&mut b).ok()).count()
    };
    // An idle link: the first record leaves at once (docs/ha.md, Nagle).
    export_session(&mut t, &mut ends, 5000);
    link.step(0, &mut |_, _| {}).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(datagrams(&peer), 1);
    // Unacked now: the next record waits for company.
    export_session(&mut t, &mut ends, 5001);
    link.step(MS / 10, &mut |_, _| {}).unwrap();
    assert!(link.peers[0].peer.lingering());
    // A worker exports while the thread sleeps: no doorbell write, no wake.
    let t0 = std::time::Instant::now();
    export_session(&mut t, &mut ends, 5002);
    link.sleep(MS / 2);
    assert!(
        t0.elapsed() >= std::time::Duration::from_micros(450),
        "slept to the deadline though a change waited: {:?}",
        t0.elapsed()
    );
    let mut p = libc::pollfd {
        fd: bell.fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    assert_eq!(
        unsafe { libc::poll(&mut p, 1, 0) },
        0,
        "the doorbell was not written"
    );
    // At the deadline both records go, in one datagram.
    link.step(MS + MS / 10, &mut |_, _| {}).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(datagrams(&peer), 1);
    assert!(!link.peers[0].peer.lingering());
    assert_eq!(link.peers[0].peer.counters().records_out, 3);
}

/// docs/ha.md, "Workers, rings, sole writers": datagrams are read in
/// batches of `BATCH` per `recvmmsg` until a short one, each counted; a
/// sleep that saw the socket quiet makes the next step skip the read, and
/// one that saw it readable makes it read.
#[test]
fn datagrams_are_read_in_batches_and_only_when_the_socket_is_readable() {
    let key = Key::new(b"k").unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let at = socket.local_addr().unwrap();
    let mut b = node(2, socket, (1, "127.0.0.1:9".parse().unwrap()), &key);
    // Nothing there: the sleep's timeout passes, the step reads nothing.
    b.link.sleep(MS);
    assert_eq!(b.link.polled, Some(false));
    b.round(0);
    assert_eq!(b.link.polled, None);
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let n = 2 * BATCH + 3;
    for _ in 0..n {
        stranger.send_to(b"SGSY garbage", at).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    b.link.sleep(5_000 * MS);
    assert_eq!(b.link.polled, Some(true));
    b.round(0);
    assert_eq!(b.link.counters.unknown_peer, n as u64);
}
