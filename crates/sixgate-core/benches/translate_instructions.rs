//! Instruction counts of one `Translator::translate` call per case (gungraun,
//! under valgrind's callgrind). Unlike wall-clock time these are repeatable on a
//! noisy shared machine, so they suit before/after comparisons in review.
//!
//! The setup (config, translator, buffer) runs outside the measured function, and
//! the state is returned rather than dropped inside it, so only the translation
//! is counted. Needs valgrind and `gungraun-runner` of the same version as the
//! `gungraun` library (`scripts/setup.sh --bench` installs it).
//!
//! Run: `cargo bench -p sixgate-core --bench translate_instructions` (or `scripts/bench.sh`).

mod common;

use std::hint::black_box;

use gungraun::{library_benchmark, library_benchmark_group, main};
use sixgate_core::Verdict;

use common::{Bench, cases, config};

fn setup(name: &str) -> Bench {
    let case = cases()
        .into_iter()
        .find(|c| c.name == name)
        .expect("known case");
    Bench::new(config(), &case.packet)
}

#[library_benchmark]
#[bench::udp_6to4(setup("udp_6to4"))]
#[bench::udp_4to6(setup("udp_4to6"))]
#[bench::tcp_6to4(setup("tcp_6to4"))]
#[bench::icmp_echo_6to4(setup("icmp_echo_6to4"))]
#[bench::icmp_echo_4to6(setup("icmp_echo_4to6"))]
#[bench::icmp_error_4to6(setup("icmp_error_4to6"))]
fn translate(mut b: Bench) -> (Verdict, Bench) {
    let verdict = black_box(b.translate());
    (verdict, b)
}

fn nat_setup(name: &str) -> common::nat64::NatCase {
    common::nat64::nat_case(name)
}

// Stateful NAT64 (RFC 6146): one packet of an established flow (table look-ups,
// state update, port rewrite and RFC 7915), or one that creates a mapping.
#[library_benchmark]
#[bench::udp_6to4(nat_setup("nat64_udp_6to4"))]
#[bench::udp_4to6(nat_setup("nat64_udp_4to6"))]
#[bench::tcp_6to4(nat_setup("nat64_tcp_6to4"))]
#[bench::tcp_4to6(nat_setup("nat64_tcp_4to6"))]
#[bench::new_udp_6to4(nat_setup("nat64_new_udp_6to4"))]
fn nat64_flow(mut c: common::nat64::NatCase) -> (Verdict, common::nat64::NatCase) {
    let verdict = black_box(c.bench.translate_loaded(c.packet.len()));
    (verdict, c)
}

library_benchmark_group!(name = translate_group, benchmarks = [translate, nat64_flow]);
main!(library_benchmark_groups = translate_group);
