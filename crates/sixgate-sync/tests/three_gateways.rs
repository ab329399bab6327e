//! Three NAT64 translators A, B, C, each owning one pool4 address, synced
//! pairwise through `sixgate_sync::Peer`s over a link that loses 2 % of
//! datagrams (docs/ha.md, "Snapshots in a group of three or more"). Each
//! creates sessions; A holds entries of B's and C's shards that they no longer
//! have (deletes it missed), then asks both for a snapshot, the second while the first runs. The two
//! snapshots overlap at A, each sweeps only its sender's shard, and in the
//! end every node holds exactly the union of the three nodes' own sessions.

use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{Nat64Config, Pool4Entry, Proto, Replica, ReplicaOp};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_sync::{Event, Peer, PeerConfig, ResyncReason, tables};
use sixgate_testkit::Ip6;
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

const MS: u64 = 1_000_000;
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
const IDS: [u16; 3] = [1, 2, 3];

fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

/// Node `id`'s shard: 192.0.2.`id`.
fn shard(id: u16) -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, id as u8)
}

struct Link {
    id: u16,
    peer: Peer,
    /// Our snapshot walk to this peer: the next slab position, while one runs.
    walk: Option<u32>,
}

struct Gw {
    id: u16,
    t: Translator,
    scratch: Scratch,
    links: Vec<Link>,
    import_errors: u64,
    swept: u64,
    /// Snapshots received: (ms, from, begin or end).
    snapshots: Vec<(u64, u16, bool)>,
    /// After each sweep: when, whose, and what is left on its shard.
    after_sweep: Vec<(u64, u16, BTreeSet<Key>)>,
}

type Key = (Ipv6Addr, u16, Ipv4Addr, u16, Ipv4Addr, u16);

impl Gw {
    fn new(id: u16) -> Gw {
        let mut cfg = Config::with_pool6(Some(pool6()));
        cfg.nat64 = Some(Nat64Config {
            pool4: vec![Pool4Entry {
                prefix_len: 30,
                ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
            }],
            max_sessions: 4096,
            ..Nat64Config::default()
        });
        let mut t = Translator::new(Arc::new(cfg));
        t.enable_replica_export(4096);
        t.set_own_pool4_shards(Some(&[(shard(id), 32)]));
        let others: Vec<u16> = IDS.into_iter().filter(|&o| o != id).collect();
        let peers: Vec<_> = others.iter().map(|&o| (o, vec![(shard(o), 32)])).collect();
        t.set_replica_peers(&peers);
        let links = others
            .into_iter()
            .map(|o| Link {
                id: o,
                peer: Peer::new(PeerConfig::new(id, o, u64::from(id), 0x5157), None),
                walk: None,
            })
            .collect();
        Gw {
            id,
            t,
            scratch: Scratch::new(),
            links,
            import_errors: 0,
            swept: 0,
            snapshots: Vec::new(),
            after_sweep: Vec::new(),
        }
    }

    fn translate(&mut self, input: &[u8], now: u64) -> Verdict {
        let mut buf = vec![0u8; HEADROOM + input.len() + 64];
        buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
        self.t.translate(&mut pkt, &mut self.scratch, now)
    }

    fn link(&mut self, id: u16) -> &mut Link {
        self.links.iter_mut().find(|l| l.id == id).unwrap()
    }

    /// A datagram from node `from`, applied as a worker would: records, a
    /// snapshot's begin (its own mark), its end (the sweep of its shard).
    fn receive(&mut self, from: u16, now: u64, d: &[u8]) {
        let mut got = Vec::new();
        let _ = self.link(from).peer.receive(now, d, &mut |e| got.push(e));
        for e in got {
            match e {
                Event::Record(r) => {
                    if let Some((op, rep)) = tables::to_replica(&r)
                        && self.t.import_replica_from(from, op, &rep, now).is_err()
                    {
                        self.import_errors += 1;
                    }
                }
                Event::SnapshotBegin { .. } => {
                    assert!(self.t.replica_snapshot_begin(from));
                    self.snapshots.push((now / MS, from, true));
                }
                Event::SnapshotEnd { .. } => {
                    let mut at = Some(0);
                    while let Some(pos) = at {
                        let (next, n) = self.t.replica_sweep(from, pos, 16, now);
                        self.swept += n;
                        at = next;
                    }
                    self.snapshots.push((now / MS, from, false));
                    let mut left = self.table(now);
                    left.retain(|k| k.2 == shard(from));
                    self.after_sweep.push((now / MS, from, left));
                }
                _ => {}
            }
        }
    }

    /// Exports to every peer, snapshot walks (a few sessions a step, so two
    /// peers' snapshots overlap), timers; the datagrams due, by destination.
    fn step(&mut self, now: u64) -> Vec<(u16, Vec<u8>)> {
        let mut changes = Vec::new();
        self.t
            .drain_replica_changes(|op, r| changes.push(tables::to_record(op, r, &pool6())));
        let mut out = Vec::new();
        let mut buf = [0u8; 1500];
        for l in &mut self.links {
            for r in &changes {
                l.peer.push(now, r);
            }
            l.peer.handle_timeout(now, &mut |_| {});
            if l.peer.snapshot_wanted().is_some() {
                l.peer.start_snapshot();
                l.walk = Some(0);
            }
            if let Some(from) = l.walk {
                let mut batch = Vec::new();
                let span = l.peer.room().min(4) as u32;
                let next = self.t.walk_sessions(from, span, now, |s| {
                    batch.push(tables::to_record(
                        ReplicaOp::Upsert,
                        &tables::from_view(&s),
                        &pool6(),
                    ));
                });
                for r in &batch {
                    l.peer.push(now, r);
                }
                l.walk = next;
                if next.is_none() && !l.peer.end_snapshot() {
                    l.walk = Some(u32::MAX); // walked; END again next step
                }
            }
            while let Some(n) = l.peer.poll_transmit(now, &mut buf) {
                out.push((l.id, buf[..n].to_vec()));
            }
        }
        out
    }

    /// Every session, as (IPv6 host, port, pool4 address, port, remote, port).
    fn table(&self, now: u64) -> BTreeSet<Key> {
        let mut v = BTreeSet::new();
        let mut at = Some(0);
        while let Some(from) = at {
            at = self.t.walk_sessions(from, 256, now, |s| {
                v.insert((
                    s.bib.v6,
                    s.bib.port6,
                    s.bib.v4,
                    s.bib.port4,
                    s.remote4,
                    s.rport,
                ));
            });
        }
        v
    }
}

/// A session nobody has: on node `owner`'s shard.
fn ghost(owner: u16, i: u16) -> Replica {
    Replica {
        proto: Proto::Udp,
        tcp_state: None,
        remaining_ms: 300_000,
        v6: Ipv6Addr::new(0x2001, 0xdb8, 0xdead, 0, 0, 0, owner, i),
        port6: 7000,
        v4: shard(owner),
        port4: 60_000 + 2 * i,
        remote4: SERVER4,
        rport: 53,
    }
}

#[test]
fn two_snapshots_at_once_leave_a_with_exactly_the_union() {
    let mut gws = [Gw::new(1), Gw::new(2), Gw::new(3)];
    let mut dice: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut roll = || {
        dice ^= dice << 13;
        dice ^= dice >> 7;
        dice ^= dice << 17;
        dice % 100
    };
    let mut now = MS;
    for ms in 0..3000u64 {
        // Each node opens a UDP flow a millisecond for 300 ms, and B and C
        // again while their snapshots to A run.
        if ms < 300 || (700..760).contains(&ms) {
            for g in &mut gws {
                if ms >= 700 && g.id == 1 {
                    continue;
                }
                let client = Ipv6Addr::new(0x2001, 0xdb8, g.id, 0, 0, 0, 0, ms as u16);
                let pkt = Ip6::new(client, pool6().embed(SERVER4)).udp(5000, 53, 8);
                assert_eq!(g.translate(&pkt, now), Verdict::Translated);
            }
        }
        if ms == 600 {
            // A holds two entries of B's shard and two of C's that their
            // owners no longer have.
            for owner in [2, 3] {
                for i in 0..2 {
                    gws[0]
                        .t
                        .import_replica_from(owner, ReplicaOp::Upsert, &ghost(owner, i), now)
                        .unwrap();
                }
            }
        }
        // A asks B, then C while B's snapshot is under way: B's first
        // records come before C's snapshot begins, its last after.
        for (at, id) in [(700, 2), (900, 3)] {
            if ms == at {
                gws[0]
                    .link(id)
                    .peer
                    .request_resync(ResyncReason::ImportFull);
            }
        }
        // 2 % loss until 2 s.
        let loss = if ms < 2000 { 2 } else { 0 };
        for from in 0..3 {
            for (to, d) in gws[from].step(now) {
                if roll() >= loss {
                    gws[usize::from(to) - 1].receive(IDS[from], now, &d);
                }
            }
        }
        now += MS;
    }
    for g in &gws {
        for l in &g.links {
            assert!(
                l.peer.synced(),
                "{} from {}: {:?}",
                g.id,
                l.id,
                l.peer.status()
            );
        }
        assert_eq!(g.import_errors, 0, "node {}", g.id);
    }
    // The snapshots A asked for overlapped: both began before either ended.
    let after = |from, begin| {
        gws[0]
            .snapshots
            .iter()
            .find(|&&(ms, f, b)| ms >= 700 && f == from && b == begin)
            .map(|s| s.0)
            .unwrap_or_else(|| panic!("{:?}", gws[0].snapshots))
    };
    let (b_begin, b_end, c_begin, c_end) = (
        after(2, true),
        after(2, false),
        after(3, true),
        after(3, false),
    );
    assert!(
        b_begin < c_end && c_begin < b_end,
        "overlap: {:?}",
        gws[0].snapshots
    );
    assert_eq!(gws[0].swept, 4, "A swept the ghosts, nothing else");
    // Each node's own sessions, and the union of the three.
    let own: Vec<_> = gws
        .iter()
        .map(|g| {
            let mut t = g.table(now);
            t.retain(|k| k.2 == shard(g.id));
            t
        })
        .collect();
    assert_eq!(own[0].len(), 300);
    assert_eq!((own[1].len(), own[2].len()), (360, 360));
    // Right after each of the two sweeps, A held exactly the sender's
    // sessions on its shard: nothing the other snapshot restated meanwhile
    // was lost (B and C open no flows after 760 ms, and none expire).
    for (ms, from, left) in &gws[0].after_sweep {
        if *ms >= 700 {
            assert_eq!(
                left,
                &own[usize::from(*from) - 1],
                "{from}'s sweep at {ms} ms"
            );
        }
    }
    let union: BTreeSet<_> = own.iter().flatten().copied().collect();
    for g in &gws {
        assert_eq!(g.table(now), union, "node {} holds exactly the union", g.id);
    }
}
