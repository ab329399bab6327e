//! The committed demo capture is exactly what `examples/make_sample.rs` writes, so
//! nobody edits one without the other; and the offline plane reads all of it.

#[path = "../examples/make_sample.rs"]
mod make_sample;

use std::sync::Arc;

const COMMITTED: &[u8] = include_bytes!("../../../samples/siit-demo.pcap");

#[test]
fn regenerating_the_sample_gives_the_committed_bytes() {
    let fresh = make_sample::pcap_bytes();
    assert!(
        fresh == COMMITTED,
        "samples/siit-demo.pcap is stale: run `cargo run -p sixgate-pcap --example make_sample` \
         and commit the result"
    );
}

#[test]
fn sample_tells_the_whole_story() {
    let pkts = make_sample::packets();
    assert_eq!(pkts.len(), 13);
    // Every packet is well formed (valid checksums are etherparse's job when building).
    for (what, p) in &pkts {
        etherparse::SlicedPacket::from_ip(p).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

#[test]
fn offline_plane_reads_every_sample_packet() {
    let cfg = Arc::new(sixgate_core::Config::with_pool6(None));
    let mut traces = Vec::new();
    let s = sixgate_pcap::translate_pcap_traced(cfg, COMMITTED, Vec::new(), |t| {
        traces.push((t.index, t.ts_ns, t.family))
    })
    .unwrap();
    assert_eq!(s.input_packets, 13);
    assert_eq!(traces.len(), 13);
    assert_eq!(
        s.skipped_non_ip + s.skipped_truncated + s.skipped_oversize,
        0
    );
    let start = 1_704_067_200_000_000_000u64;
    for (i, &(index, ts, _)) in traces.iter().enumerate() {
        assert_eq!(index, i as u64 + 1);
        assert_eq!(
            ts,
            start + i as u64 * 1_000_000,
            "packet {index} is 1 ms after the previous"
        );
    }
}
