//! Two nodes over a lossy, reordering, duplicating link converge once the
//! link heals (docs/ha.md, "Reliability"): every loss is repaired by a NACK
//! and a resend, or by a snapshot; nothing is applied out of order.

mod common;

use common::*;
use proptest::prelude::*;
use sixgate_sync::record::{Op, TcpState};

/// xorshift64*: the link's dice, seeded by proptest.
struct Dice(u64);
impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A one-way link: datagrams with their delivery time.
#[derive(Default)]
struct Link(Vec<(u64, Vec<u8>)>);

impl Link {
    fn send(&mut self, now: u64, d: Vec<u8>, loss_pct: u64, dice: &mut Dice) {
        if dice.below(100) < loss_pct {
            return;
        }
        let delay = dice.below(5) * MS; // up to 4 ms: reorders
        if dice.below(100) < loss_pct {
            self.0.push((now + dice.below(5) * MS, d.clone())); // duplicate
        }
        self.0.push((now + delay, d));
    }
    fn due(&mut self, now: u64) -> Vec<Vec<u8>> {
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|(t, _)| *t <= now);
        self.0 = rest;
        due.into_iter().map(|(_, d)| d).collect()
    }
}

fn converge(
    seed: u64,
    loss_pct: u64,
    changes_per_ms: u64,
    queue: usize,
) -> Result<(), TestCaseError> {
    let mut dice = Dice(seed | 1);
    let mut a = Node::new(1, 2, 100, None);
    let mut b = Node::new(2, 1, 200, None);
    // A small queue makes a full queue (and its snapshot) part of the test.
    for n in [&mut a, &mut b] {
        let mut cfg = sixgate_sync::PeerConfig::new(n.id, 3 - n.id, u64::from(n.id) * 100, HASH);
        cfg.queue_capacity = queue;
        n.peer = sixgate_sync::Peer::new(cfg, None);
    }
    let (mut ab, mut ba) = (Link::default(), Link::default());
    let mut now = MS;
    let states = [
        TcpState::V6Init,
        TcpState::Established,
        TcpState::V4FinRcv,
        TcpState::Trans,
    ];
    // 1 s of changes over the bad link, then 1 s over a good one.
    for ms in 0..2000u64 {
        let loss = if ms < 1000 { loss_pct } else { 0 };
        if ms < 1000 {
            for _ in 0..changes_per_ms {
                for n in [&mut a, &mut b] {
                    let i = dice.below(200) as u16;
                    let op = if dice.below(4) == 0 {
                        Op::SessionDelete
                    } else {
                        Op::SessionUpsert
                    };
                    let st = states[dice.below(4) as usize];
                    let id = n.id;
                    n.change(now, session(id, i, op, st));
                }
            }
        }
        for d in ab.due(now) {
            b.receive(now, &d);
        }
        for d in ba.due(now) {
            a.receive(now, &d);
        }
        for d in a.step(now) {
            ab.send(now, d, loss, &mut dice);
        }
        for d in b.step(now) {
            ba.send(now, d, loss, &mut dice);
        }
        now += MS;
    }
    let diff = |r: &std::collections::BTreeMap<K, _>, t: &std::collections::BTreeMap<K, _>| {
        r.iter().filter(|(k, v)| t.get(*k) != Some(*v)).count()
            + t.keys().filter(|k| !r.contains_key(*k)).count()
    };
    let (dab, dba) = (diff(&b.replica, &a.table), diff(&a.replica, &b.table));
    prop_assert!(
        dab == 0 && dba == 0,
        "{} entries of a differ at b, {} of b at a\na: {:?}\nb: {:?}",
        dab,
        dba,
        a.peer.status(),
        b.peer.status()
    );
    Ok(())
}

proptest! {
    // 24 cases by default (a few seconds); PROPTEST_CASES=N for a longer run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(24),
        ..ProptestConfig::default()
    })]

    #[test]
    fn lossy_reordering_link_converges(seed in any::<u64>(), loss in 0u64..20, rate in 1u64..4, queue in prop::sample::select(vec![4usize, 64, 1024])) {
        converge(seed, loss, rate, queue)?;
    }
}

#[test]
fn two_percent_loss_converges() {
    for seed in 1..5 {
        converge(seed, 2, 2, 1024).unwrap();
    }
}
