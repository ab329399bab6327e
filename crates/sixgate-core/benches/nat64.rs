//! Stateful NAT64 (RFC 6146) costs (criterion):
//!
//! - `nat64_established/<case>`: one packet of an established UDP or TCP flow, each
//!   direction (table look-ups, state update, port rewrite, RFC 7915). As in
//!   `translate`, every iteration restores the packet first: subtract
//!   `restore/<case>` from the `translate` bench for the copy's share (~1-2 ns).
//! - `nat64_new_session/udp_6to4`: a packet that creates a new BIB entry and
//!   session (a unique IPv6 source per packet): the connection establishment rate.
//! - `nat64_workers/{1,2}`: established UDP both ways on one thread, and on two
//!   threads each with its own `Translator::for_worker`, side by side in one run;
//!   throughput counts packets of all threads.
//!
//! Run: `cargo bench -p sixgate-core --bench nat64` (or `scripts/bench.sh`).

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sixgate_core::Verdict;

use common::nat64::{Flow, NatBench, config, new_flow_packet};

fn established(c: &mut Criterion) {
    let mut g = c.benchmark_group("nat64_established");
    g.throughput(Throughput::Elements(1));
    for (name, udp, out) in [
        ("udp_6to4", true, true),
        ("udp_4to6", true, false),
        ("tcp_6to4", false, true),
        ("tcp_4to6", false, false),
    ] {
        let mut b = NatBench::new(config(1 << 16), 0, 1);
        let flow = b.establish(udp, 0);
        let pkt = if out {
            flow.out.clone()
        } else {
            flow.back.clone()
        };
        assert_eq!(b.translate(&pkt), Verdict::Translated, "{name}");
        g.bench_function(name, |bencher| {
            bencher.iter(|| black_box(b.translate(black_box(&pkt))))
        });
    }
    g.finish();
}

fn new_session(c: &mut Criterion) {
    let mut g = c.benchmark_group("nat64_new_session");
    g.throughput(Throughput::Elements(1));
    g.bench_function("udp_6to4", |bencher| {
        bencher.iter_custom(|iters| {
            // A fresh translator sized for this batch (allocated before the clock starts).
            let cap = u32::try_from(iters).unwrap_or(u32::MAX).max(1024);
            let mut b = NatBench::new(config(cap), 0, 1);
            let mut pkt = new_flow_packet(0);
            let start = Instant::now();
            for i in 0..iters {
                new_flow_set(&mut pkt, i);
                let v = b.translate(&pkt);
                debug_assert_eq!(v, Verdict::Translated);
                black_box(v);
            }
            let t = start.elapsed();
            assert_eq!(
                b.translator.nat64_stats().sessions.udp,
                iters,
                "every packet made a session"
            );
            t
        })
    });
    g.finish();
}

/// Make `pkt` the first packet of unique flow `i` (source address and port).
#[inline(always)]
fn new_flow_set(pkt: &mut [u8], i: u64) {
    common::nat64::set_flow(pkt, i);
}

fn workers(c: &mut Criterion) {
    let mut g = c.benchmark_group("nat64_workers");
    for n in [1u16, 2] {
        // Each worker: 64 established UDP flows of its own subscribers, both ways.
        let mut benches: Vec<(NatBench, Vec<Flow>)> = (0..n)
            .map(|w| {
                let mut b = NatBench::new(config(1 << 16), w, n);
                let flows = (0..64).map(|i| b.establish(true, i)).collect();
                (b, flows)
            })
            .collect();
        g.throughput(Throughput::Elements(u64::from(n)));
        g.bench_function(format!("{n}"), |bencher| {
            bencher.iter_custom(|iters| {
                let go = Arc::new(std::sync::Barrier::new(usize::from(n)));
                std::thread::scope(|s| {
                    let handles: Vec<_> = benches
                        .iter_mut()
                        .map(|(b, flows)| {
                            let go = go.clone();
                            s.spawn(move || {
                                go.wait();
                                let start = Instant::now();
                                for i in 0..iters {
                                    let f = &flows[(i % 64) as usize];
                                    let p = if i & 64 == 0 { &f.out } else { &f.back };
                                    black_box(b.translate(p));
                                }
                                start.elapsed()
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap())
                        .max()
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = established, new_session, workers
}
criterion_main!(benches);
