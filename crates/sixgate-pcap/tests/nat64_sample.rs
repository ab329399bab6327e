//! The committed NAT64 demo capture is exactly what `examples/make_nat64_sample.rs`
//! writes, and translating it with `samples/nat64.toml` tells the story its
//! packet descriptions promise.

#[path = "../examples/make_nat64_sample.rs"]
mod make_nat64_sample;

use std::sync::Arc;

use sixgate_core::{DropReason, Verdict};
use sixgate_pcap::Outcome;

const COMMITTED: &[u8] = include_bytes!("../../../samples/nat64-demo.pcap");

#[test]
fn regenerating_the_nat64_sample_gives_the_committed_bytes() {
    let fresh = make_nat64_sample::pcap_bytes();
    assert!(
        fresh == COMMITTED,
        "samples/nat64-demo.pcap is stale (did NAT64 port selection change?): run \
         `cargo run -p sixgate-pcap --example make_nat64_sample` and commit the result"
    );
}

#[test]
fn nat64_sample_tells_its_story() {
    let text = include_str!("../../../samples/nat64.toml");
    let cfg = sixgate_config::parse(text, "samples/nat64.toml")
        .unwrap()
        .config;
    let mut traces = Vec::new();
    let s = sixgate_pcap::translate_pcap_traced(Arc::new(cfg), COMMITTED, Vec::new(), |t| {
        traces.push(*t)
    })
    .unwrap();
    let outcomes: Vec<String> = traces
        .iter()
        .map(|t| match t.outcome {
            Outcome::Verdict(Verdict::Translated) => "translated".to_owned(),
            Outcome::Verdict(Verdict::Dropped(r)) => r.as_str().to_owned(),
            // No BIB entry: Destination Unreachable back to the sender.
            Outcome::Verdict(Verdict::Replied(r)) => r.as_str().to_owned(),
            Outcome::Timer(r) => format!("timer {}", r.as_str()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            "translated",
            "translated",
            "translated",
            "translated",
            "translated",
            "translated",
            "translated",
            "translated",
            DropReason::NoBibEntry.as_str(),
            DropReason::SynHeld.as_str(),
            &format!("timer {}", DropReason::SynHeld.as_str()),
            // 400 s on, the DNS session is long gone.
            DropReason::NoBibEntry.as_str(),
        ],
        "{traces:#?}"
    );
    // The Port Unreachable leaves 6 s after the SYN it answers (to the 100 ms tick).
    let syn = traces[9].ts_ns;
    let icmp = traces[10].ts_ns;
    assert!(
        (6_000_000_000..6_100_000_000).contains(&(icmp - syn)),
        "{}",
        icmp - syn
    );
    assert_eq!(s.timer_packets, 1);
    // 8 translated, the timer's Port Unreachable, 2 Port Unreachable for no BIB
    // (RFC 6146 §3.5.1.2).
    assert_eq!(s.packets_written, 11);
    for (what, p) in make_nat64_sample::packets().iter().map(|(_, w, p)| (w, p)) {
        sixgate_testkit::check(p).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}
