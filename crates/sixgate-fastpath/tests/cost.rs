//! Indicative per-packet cost of the TC and the XDP program
//! (`BPF_PROG_TEST_RUN`'s ns/run over many repetitions) next to the Rust
//! core's on the same packet. The kernel repeats the program on the same
//! packet, which it translates back and forth; `decrement_hop_limit = false`
//! keeps it translating (with the decrement, the hop limit runs out after 63
//! repetitions and the rest measure a packet passed up at the hop-limit
//! check; `COST_DECREMENT=1` measures that), and the share of repetitions
//! translated is printed with each figure. Not a benchmark: ignored by
//! default; run with
//! `cargo test --release -p sixgate-fastpath --test cost -- --ignored --nocapture`.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Instant;

use aya::programs::TestRunOptions;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator};
use sixgate_fastpath::{FastPath, Hook};
use sixgate_testkit::{Ip4, Ip6};

const REPEAT: u32 = 200_000;

#[test]
#[ignore]
fn cost_per_packet() {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
    let mut cfg = Config::with_pool6(Some(pool6));
    // Set: the old measurement, of a packet passed up after 63 repetitions.
    cfg.decrement_hop_limit = std::env::var_os("COST_DECREMENT").is_some();
    let tc = FastPath::load_on(Hook::Tc, &cfg, 0).expect("load TC");
    let xdp = FastPath::load_on(Hook::Xdp, &cfg, 0).expect("load XDP");
    let mut t = Translator::new(Arc::new(cfg));
    let mut scratch = Scratch::new();
    let a6 = pool6.embed(Ipv4Addr::new(198, 51, 100, 5));
    let b6 = pool6.embed(Ipv4Addr::new(192, 0, 2, 33));
    let a4 = Ipv4Addr::new(192, 0, 2, 33);
    let b4 = Ipv4Addr::new(198, 51, 100, 5);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "6to4 UDP 64 B (DF=0, flow ID)",
            Ip6::new(a6, b6).udp(1, 2, 16),
        ),
        ("6to4 TCP 1500 B (DF=1)", Ip6::new(a6, b6).tcp(1, 2, 1440)),
        (
            "6to4 Echo Request 84 B",
            Ip6::new(a6, b6).echo_request(1, 1, 36),
        ),
        ("4to6 UDP 64 B", Ip4::new(a4, b4).udp(1, 2, 36)),
        ("4to6 TCP 1500 B", Ip4::new(a4, b4).tcp(1, 2, 1460)),
        (
            "4to6 Echo Request 84 B",
            Ip4::new(a4, b4).echo_request(1, 1, 56),
        ),
        (
            "passed up: IPv6 with Hop-by-Hop",
            Ip6::new(a6, b6).hop_by_hop().udp(1, 2, 16),
        ),
    ];
    println!(
        "| packet | TC ns/run (translated share) | XDP ns/run (translated share) | core ns/packet |"
    );
    println!("|---|---|---|---|");
    for (what, ip) in cases {
        let et: u16 = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
        let mut frame = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        frame.extend_from_slice(&et.to_be_bytes());
        frame.extend_from_slice(&ip);
        let run = |fp: &FastPath| {
            let before = fp.counters().expect("counters");
            let r = fp
                .test_run(TestRunOptions {
                    data_in: Some(&frame),
                    repeat: REPEAT,
                    ..TestRunOptions::default()
                })
                .expect("test run");
            let after = fp.counters().expect("counters");
            let translated = after.translated_6to4 + after.translated_4to6
                - before.translated_6to4
                - before.translated_4to6;
            format!(
                "{} ({:.0} %)",
                r.duration.as_nanos(),
                100.0 * translated as f64 / f64::from(REPEAT)
            )
        };
        let (tc_ns, xdp_ns) = (run(&tc), run(&xdp));
        let mut buf = vec![0u8; HEADROOM + ip.len() + 64];
        let t0 = Instant::now();
        for _ in 0..REPEAT {
            buf[HEADROOM..HEADROOM + ip.len()].copy_from_slice(&ip);
            let mut pkt = PacketBuf::new(&mut buf, HEADROOM, ip.len());
            std::hint::black_box(t.translate(&mut pkt, &mut scratch, 0));
        }
        let core = t0.elapsed().as_nanos() as f64 / f64::from(REPEAT);
        println!("| {what} | {tc_ns} | {xdp_ns} | {core:.0} |");
    }
}
