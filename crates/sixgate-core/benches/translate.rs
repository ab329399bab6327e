//! Wall-clock cost of `Translator::translate` per packet (criterion).
//!
//! Translation rewrites the packet in place, so every iteration first restores the
//! original bytes. `restore/<case>` measures that copy alone: subtract it from
//! `translate/<case>` to get the translation cost.
//!
//! Run: `cargo bench -p sixgate-core --bench translate` (or `scripts/bench.sh`).

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use common::{Bench, cases, config, warn_unless_translated};

fn translate(c: &mut Criterion) {
    let cfg = config();
    let cases = cases();

    let mut g = c.benchmark_group("translate");
    g.throughput(Throughput::Elements(1));
    for case in &cases {
        let mut b = Bench::new(cfg.clone(), &case.packet);
        warn_unless_translated(case.name, b.translate());
        g.bench_function(case.name, |bencher| {
            bencher.iter(|| {
                b.restore(black_box(&case.packet));
                black_box(b.translate())
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("restore");
    g.throughput(Throughput::Elements(1));
    for case in &cases {
        let mut b = Bench::new(cfg.clone(), &case.packet);
        g.bench_function(case.name, |bencher| {
            bencher.iter(|| {
                b.restore(black_box(&case.packet));
                black_box(&mut b.buf);
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
    targets = translate
}
criterion_main!(benches);
