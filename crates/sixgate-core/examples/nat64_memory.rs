//! Memory per NAT64 session: a counting allocator measures what one worker's
//! translator holds with its tables sized for, and filled with, N sessions
//! (default 1 M): every byte the core allocates, tables preallocated at start
//! included. Prints bytes per session for three fillings:
//!
//! - `unique`: every session its own subscriber and BIB entry (the worst case:
//!   one BIB entry per session);
//! - `limits, 4/sub`: per-subscriber limits on (adds the subscriber table, sized
//!   for a quarter of the sessions), 4 BIB entries per subscriber;
//! - `16 dst/BIB`: 16 destinations per BIB entry (EIM: one mapping, many
//!   sessions), the common shape of real traffic.
//!
//! Run: `cargo run --release -p sixgate-core --example nat64_memory [-- N]`.

#[path = "../benches/common/nat64.rs"]
#[allow(dead_code)]
mod nat64_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use sixgate_core::nat64;
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_testkit::Ip6;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The benchmarks' NAT64 set-up for `n` sessions, with a per-subscriber
/// limit of 1000 when `limits` (so the subscriber table exists).
fn config(n: u32, limits: bool) -> Arc<Config> {
    let mut cfg = nat64_common::config(n);
    if limits && let Some(nat) = Arc::get_mut(&mut cfg).and_then(|c| c.nat64.as_mut()) {
        nat.max_sessions_per_subscriber = 1000;
    }
    cfg
}

/// Fill a fresh translator with `n` sessions; `flow(i)` gives session i's
/// (subscriber, source port, destination).
fn measure(name: &str, n: u32, limits: bool, flow: impl Fn(u32) -> (u64, u16, u32)) {
    let cfg = config(n, limits);
    let before = live();
    let mut t = Translator::new(cfg);
    let at_start = live() - before;
    let mut scratch = Scratch::new();
    let server: Ipv6Addr = "2001:db8:64::c633:6407".parse().unwrap();
    let template = Ip6::new(Ipv6Addr::LOCALHOST, server).udp(40000, 53, 18);
    let mut buf = vec![0u8; HEADROOM + template.len()];
    for i in 0..n {
        let (sub, sport, dst) = flow(i);
        buf[HEADROOM..].copy_from_slice(&template);
        let p = &mut buf[HEADROOM..];
        p[8..16].copy_from_slice(&(0x2001_0db8_0000_0000u64 | sub).to_be_bytes());
        p[16..24].copy_from_slice(&1u64.to_be_bytes());
        p[36..40].copy_from_slice(&dst.to_be_bytes());
        p[40..42].copy_from_slice(&sport.to_be_bytes());
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, template.len());
        let v = t.translate(&mut pkt, &mut scratch, 0);
        assert_eq!(v, Verdict::Translated, "{name}: flow {i}");
    }
    let filled = live() - before;
    let st = t.nat64_stats();
    assert_eq!(st.sessions.udp, u64::from(n));
    println!(
        "{name:>14}: {n} sessions, {} BIB entries, {} subscribers tracked: \
         {:.1} MiB at start, {:.1} MiB filled = {:.1} bytes/session",
        st.bib.udp,
        st.subscribers,
        at_start as f64 / 1048576.0,
        filled as f64 / 1048576.0,
        filled as f64 / f64::from(n)
    );
    drop(t);
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N"))
        .unwrap_or(1_000_000);
    println!(
        "records: session {} bytes, BIB entry {} bytes",
        nat64::SESSION_RECORD_BYTES,
        nat64::BIB_RECORD_BYTES
    );
    let server = u32::from(Ipv4Addr::new(198, 51, 100, 7));
    measure("unique", n, false, |i| (u64::from(i), 40000, server));
    // Limits on: the subscriber table (a quarter of the session capacity), here
    // with 4 sessions per subscriber.
    measure("limits, 4/sub", n, true, |i| {
        (u64::from(i / 4), 40000 + (i % 4) as u16, server)
    });
    // 16 destinations per mapping: one BIB entry per 16 sessions.
    measure("16 dst/BIB", n, false, |i| {
        (u64::from(i / 16), 40000, server + (i % 16))
    });
}
