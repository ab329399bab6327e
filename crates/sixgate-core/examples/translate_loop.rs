//! Translate one benchmark case in a tight loop: the workload `scripts/profile.sh`
//! runs under callgrind to count instructions per packet (stable on noisy
//! machines, unlike wall-clock time).
//!
//! usage: translate_loop CASE [ITERATIONS]   (cases: see benches/common/mod.rs)

#[path = "../benches/common/mod.rs"]
mod common;

use sixgate_core::{HEADROOM, PacketBuf, Scratch, Translator};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "udp_6to4".into());
    let iterations: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(200_000);
    let Some((case, cfg)) = common::case_by_name(&name) else {
        let names: Vec<_> = common::cases()
            .iter()
            .chain(&common::mapt_cases())
            .map(|c| c.name)
            .collect();
        eprintln!("unknown case {name:?}; cases: {}", names.join(", "));
        std::process::exit(2);
    };
    let mut t = Translator::new(cfg);
    let mut scratch = Scratch::new();
    let mut buf = vec![0u8; HEADROOM + 2048];
    for _ in 0..iterations {
        buf[HEADROOM..HEADROOM + case.packet.len()].copy_from_slice(&case.packet);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, case.packet.len());
        std::hint::black_box(t.translate(&mut pkt, &mut scratch, 0));
    }
}
