//! Two NAT64 translators kept in sync through `sixgate_sync::Peer` over a lossy
//! link: every session node A creates is translated by node B afterwards (the
//! IPv4 return path crossing the other node, docs/ha.md), including those
//! created before B's stream was up (they arrive in A's snapshot, taken by a
//! walk of A's tables).

use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{Nat64Config, Pool4Entry, ReplicaOp};
use sixgate_core::{Config, DropReason, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_sync::record::Op;
use sixgate_sync::{Event, Peer, PeerConfig, tables};
use sixgate_testkit::{Ip4, Ip6, tcp_flag};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

const MS: u64 = 1_000_000;
const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);

fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

fn client(i: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, i)
}

struct Gw {
    t: Translator,
    scratch: Scratch,
    peer: Peer,
    /// Our snapshot walk: the next slab position, while one runs.
    walk: Option<u32>,
    import_errors: u64,
}

impl Gw {
    fn new(node: u16, other: u16) -> Gw {
        let mut cfg = Config::with_pool6(Some(pool6()));
        cfg.nat64 = Some(Nat64Config {
            pool4: vec![Pool4Entry::single(POOL4)],
            max_sessions: 4096,
            ..Nat64Config::default()
        });
        let mut t = Translator::new(Arc::new(cfg));
        t.enable_replica_export(4096);
        Gw {
            t,
            scratch: Scratch::new(),
            peer: Peer::new(PeerConfig::new(node, other, u64::from(node), 0x5157), None),
            walk: None,
            import_errors: 0,
        }
    }

    fn translate(&mut self, input: &[u8], now: u64) -> Verdict {
        let mut buf = vec![0u8; HEADROOM + input.len() + 64];
        buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
        self.t.translate(&mut pkt, &mut self.scratch, now)
    }

    fn receive(&mut self, now: u64, d: &[u8]) {
        let mut got = Vec::new();
        let _ = self.peer.receive(now, d, &mut |e| got.push(e));
        for e in got {
            if let Event::Record(r) = e
                && let Some((op, rep)) = tables::to_replica(&r)
                && self.t.import_replica(op, &rep, now).is_err()
            {
                self.import_errors += 1;
            }
        }
    }

    /// Exports, snapshot walk, timers and datagrams, as a sync thread would.
    fn step(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut changes = Vec::new();
        self.t
            .drain_replica_changes(|op, r| changes.push(tables::to_record(op, r, &pool6())));
        for r in &changes {
            self.peer.push(now, r);
        }
        self.peer.handle_timeout(now, &mut |_| {});
        if self.peer.snapshot_wanted().is_some() {
            self.peer.start_snapshot();
            self.walk = Some(0);
        }
        if let Some(from) = self.walk {
            let mut batch = Vec::new();
            let span = self.peer.room().min(64) as u32;
            let next = self.t.walk_sessions(from, span, now, |s| {
                let mut r = tables::to_record(ReplicaOp::Upsert, &tables::from_view(&s), &pool6());
                r.op = Op::SessionUpsert;
                batch.push(r);
            });
            for r in &batch {
                self.peer.push(now, r);
            }
            self.walk = next;
            if next.is_none() && !self.peer.end_snapshot() {
                self.walk = Some(u32::MAX); // ended walk; retry END next step
            }
        }
        let mut out = Vec::new();
        let mut buf = [0u8; 1500];
        while let Some(n) = self.peer.poll_transmit(now, &mut buf) {
            out.push(buf[..n].to_vec());
        }
        out
    }
}

#[test]
fn sessions_created_on_a_are_translated_by_b() {
    let (mut a, mut b) = (Gw::new(1, 2), Gw::new(2, 1));
    let mut dice: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut roll = || {
        dice ^= dice << 13;
        dice ^= dice >> 7;
        dice ^= dice << 17;
        dice % 100
    };
    let mut udp = Vec::new();
    let mut tcp = Vec::new();
    let mut now = MS;
    for ms in 0..2000u64 {
        // 300 UDP flows and 100 TCP opens through A during the first 400 ms;
        // the first ones before B has heard of A at all.
        if ms < 400 {
            let i = ms as u16;
            let v = a.translate(
                &Ip6::new(client(i), pool6().embed(SERVER4)).udp(5000, 53, 8),
                now,
            );
            assert_eq!(v, Verdict::Translated);
            udp.push(i);
            if ms % 4 == 0 {
                let syn = Ip6::new(client(i), pool6().embed(SERVER4)).tcp_flags(
                    40000,
                    443,
                    tcp_flag::SYN,
                    0,
                );
                assert_eq!(a.translate(&syn, now), Verdict::Translated);
                tcp.push(i);
            }
        }
        // 2 % loss until 1 s.
        let loss = if ms < 1000 { 2 } else { 0 };
        for d in a.step(now) {
            if roll() >= loss {
                b.receive(now, &d);
            }
        }
        for d in b.step(now) {
            if roll() >= loss {
                a.receive(now, &d);
            }
        }
        now += MS;
    }
    assert!(b.peer.synced(), "{:?}", b.peer.status());
    assert!(
        a.peer.counters().resync_started >= 1,
        "B joined by A's snapshot"
    );
    assert!(
        b.peer.counters().records_in >= 500,
        "{:?}",
        b.peer.counters()
    );
    assert_eq!(b.import_errors, 0);
    let (sa, sb) = (a.t.nat64_stats(), b.t.nat64_stats());
    assert_eq!(
        (sb.sessions.udp, sb.sessions.tcp),
        (sa.sessions.udp, sa.sessions.tcp)
    );
    // Every return packet crosses B: each finds its mapping there.
    let mut ports = Vec::new();
    let _ =
        a.t.walk_sessions(0, 4096, now, |s| ports.push((s.bib.proto, s.bib.port4)));
    for (proto, port4) in ports {
        let reply = match proto {
            sixgate_core::nat64::Proto::Udp => Ip4::new(SERVER4, POOL4).udp(53, port4, 8),
            _ => Ip4::new(SERVER4, POOL4).tcp_flags(443, port4, tcp_flag::SYN | tcp_flag::ACK, 0),
        };
        let v = b.translate(&reply, now);
        assert_eq!(v, Verdict::Translated, "{proto:?} port {port4}");
    }
    // And a port A never mapped still has none at B.
    assert_eq!(
        b.translate(&Ip4::new(SERVER4, POOL4).udp(53, 1, 8), now),
        Verdict::Replied(DropReason::NoBibEntry)
    );
    assert_eq!((udp.len(), tcp.len()), (400, 100));
}
