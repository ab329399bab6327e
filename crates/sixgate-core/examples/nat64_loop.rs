//! One established stateful NAT64 flow (RFC 6146), its next packet
//! translated in a tight loop: the NAT64 workload `scripts/profile.sh` runs
//! under callgrind (cases `nat64_{udp,tcp}_{6to4,4to6}`). The flow is set up
//! first, so the script counts two runs and takes the difference.
//!
//! usage: nat64_loop {udp,tcp}_{6to4,4to6} [ITERATIONS]

#[path = "../benches/common/mod.rs"]
mod common;

use common::nat64::{NatBench, config};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "udp_6to4".into());
    let iterations: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(200_000);
    let (udp, out) = match name.as_str() {
        "udp_6to4" => (true, true),
        "udp_4to6" => (true, false),
        "tcp_6to4" => (false, true),
        "tcp_4to6" => (false, false),
        _ => {
            eprintln!("unknown case {name:?}; cases: udp_6to4, udp_4to6, tcp_6to4, tcp_4to6");
            std::process::exit(2);
        }
    };
    let mut b = NatBench::new(config(1 << 16), 0, 1);
    let flow = b.establish(udp, 0);
    let pkt = if out { flow.out } else { flow.back };
    for _ in 0..iterations {
        std::hint::black_box(b.translate(std::hint::black_box(&pkt)));
    }
}
