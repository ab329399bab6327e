//! What `sixgate session flush` costs a worker (RFC 9693 §4.3 tear-down): one
//! translator filled with N sessions (default 1 M), then flushed the way a
//! worker does it between two packet batches, `FLUSH_SPAN` (1024) units of work
//! per call. Prints the number of calls and the wall-clock time of the longest
//! call and of all of them, for two fillings: `unique` (one BIB entry per
//! session: two units each) and `16 dst/BIB` (16 sessions per mapping).
//!
//! Wall-clock figures need a quiet machine; instruction counts do not:
//!
//! ```sh
//! cargo build --release -p sixgate-core --example nat64_flush
//! valgrind --tool=callgrind --toggle-collect='sixgate_core::reconfigure::*::flush' \
//!     target/release/examples/nat64_flush 100000 unique
//! ```
//!
//! counts only the flush calls (divide the total by the calls printed); the
//! second argument (`unique` or `16`) picks one filling.

#[path = "../benches/common/nat64.rs"]
#[allow(dead_code)]
mod nat64_common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use sixgate_core::nat64::{FlushFilter, Flushed};
use sixgate_core::{HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_testkit::Ip6;

/// The data plane's `live::FLUSH_SPAN`.
const SPAN: u32 = 1024;

/// Fill a translator with `n` sessions (`flow(i)`: subscriber, destination),
/// flush it in chunks, and print what that took.
fn measure(name: &str, n: u32, flow: impl Fn(u32) -> (u64, u32)) {
    let mut t = Translator::new(nat64_common::config(n));
    let mut scratch = Scratch::new();
    let server: Ipv6Addr = "2001:db8:64::c633:6407".parse().unwrap();
    let template = Ip6::new(Ipv6Addr::LOCALHOST, server).udp(40000, 53, 18);
    let mut buf = vec![0u8; HEADROOM + template.len()];
    for i in 0..n {
        let (sub, dst) = flow(i);
        buf[HEADROOM..].copy_from_slice(&template);
        let p = &mut buf[HEADROOM..];
        p[8..16].copy_from_slice(&(0x2001_0db8_0000_0000u64 | sub).to_be_bytes());
        p[16..24].copy_from_slice(&1u64.to_be_bytes());
        p[36..40].copy_from_slice(&dst.to_be_bytes());
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, template.len());
        assert_eq!(t.translate(&mut pkt, &mut scratch, 0), Verdict::Translated);
    }
    let bib = t.nat64_stats().bib.total();
    let mut out = Flushed::default();
    let (mut cursor, mut calls, mut longest) = (Some(0), 0u32, Duration::ZERO);
    let t0 = Instant::now();
    while let Some(from) = cursor {
        let c0 = Instant::now();
        cursor = t.flush(&FlushFilter::default(), from, SPAN, 0, &mut out);
        longest = longest.max(c0.elapsed());
        calls += 1;
    }
    let all = t0.elapsed();
    assert_eq!((out.sessions, out.bib), (u64::from(n), bib));
    println!(
        "{name:>10}: {n} sessions, {bib} BIB entries flushed in {calls} calls of \
         {SPAN}: {:.1} ms in all ({:.0} ns/session), longest call {:.0} µs",
        all.as_secs_f64() * 1e3,
        all.as_secs_f64() * 1e9 / f64::from(n),
        longest.as_secs_f64() * 1e6
    );
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N"))
        .unwrap_or(1_000_000);
    // A second argument picks one filling: `unique` or `16`.
    let only = std::env::args().nth(2).unwrap_or_default();
    let server = u32::from(Ipv4Addr::new(198, 51, 100, 7));
    if only != "16" {
        measure("unique", n, |i| (u64::from(i), server));
    }
    if only != "unique" {
        measure("16 dst/BIB", n, |i| (u64::from(i / 16), server + (i % 16)));
    }
}
