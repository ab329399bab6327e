//! One vs two NAT64 workers, side by side: each thread owns a
//! `Translator::for_worker(cfg, w, n)` and translates established UDP flows
//! (64 per worker, both directions). Reports, per run, the aggregate rate by wall
//! clock and by each thread's own on-CPU time (`/proc/thread-self/schedstat`),
//! which shows whether workers slow each other down (shared cache lines, memory
//! bandwidth) even when other jobs keep the cores busy.
//!
//! Run: `cargo run --release -p sixgate-core --example nat64_workers [-- PACKETS]`.

#[path = "../benches/common/nat64.rs"]
#[allow(dead_code)]
mod nat64_common;

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use nat64_common::{NatBench, config};

/// Nanoseconds this thread has run on a CPU.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn run(n: u16, packets: u64) -> (f64, f64) {
    let go = Arc::new(Barrier::new(usize::from(n)));
    let results: Vec<(f64, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|w| {
                let go = go.clone();
                s.spawn(move || {
                    let mut b = NatBench::new(config(1 << 16), w, n);
                    let flows: Vec<_> = (0..64).map(|i| b.establish(true, i)).collect();
                    go.wait();
                    let (t0, c0) = (Instant::now(), cpu_ns());
                    for i in 0..packets {
                        let f = &flows[(i % 64) as usize];
                        let p = if i & 64 == 0 { &f.out } else { &f.back };
                        black_box(b.translate(p));
                    }
                    let wall = t0.elapsed().as_secs_f64();
                    let cpu = (cpu_ns() - c0) as f64 / 1e9;
                    (wall, cpu)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = results.iter().map(|r| r.0).fold(0.0, f64::max);
    let by_wall = f64::from(n) * packets as f64 / wall;
    let by_cpu: f64 = results.iter().map(|r| packets as f64 / r.1).sum();
    (by_wall, by_cpu)
}

fn main() {
    let packets: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("PACKETS"))
        .unwrap_or(20_000_000);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("{cores} cores, load average {}", load.trim());
    for round in 1..=3 {
        let (w1, c1) = run(1, packets);
        let (w2, c2) = run(2, packets);
        println!(
            "round {round}: 1 worker {:.2} Mpps (CPU-time {:.2}), 2 workers {:.2} Mpps (CPU-time {:.2}): \
             x{:.2} by wall clock, x{:.2} by CPU time",
            w1 / 1e6,
            c1 / 1e6,
            w2 / 1e6,
            c2 / 1e6,
            w2 / w1,
            c2 / c1
        );
    }
}
