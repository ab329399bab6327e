//! Wall-clock cost per packet of a MAP-T BR (RFC 7599) next to SIIT, in one run
//! (criterion): the same 64-byte-frame UDP packets (RFC 8219 sizes) each way.
//! The BR's domain and packets are `common::mapt_br_config` / `mapt_cases`; for
//! instruction counts, `scripts/profile.sh udp_6to4 mapt_br_udp_6to4 …`.
//!
//! Run: `cargo bench -p sixgate-core --bench mapt`.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use common::{Bench, case_by_name, warn_unless_translated};

fn mapt(c: &mut Criterion) {
    let mut g = c.benchmark_group("mapt");
    g.throughput(Throughput::Elements(1));
    for name in [
        "udp_6to4",
        "udp_4to6",
        "mapt_br_udp_6to4",
        "mapt_br_udp_4to6",
    ] {
        let (case, cfg) = case_by_name(name).expect("case");
        let mut b = Bench::new(cfg, &case.packet);
        warn_unless_translated(name, b.translate());
        g.bench_function(name, |bencher| {
            bencher.iter(|| {
                b.restore(black_box(&case.packet));
                black_box(b.translate())
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
    targets = mapt
}
criterion_main!(benches);
