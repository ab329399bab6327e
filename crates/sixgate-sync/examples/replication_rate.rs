//! An indicative figure, not a benchmark: records per second one core pushes
//! through a sending `Peer`, over a perfect in-memory link, into a receiving
//! `Peer` that decodes and delivers them (HMAC on both ends, 1500-byte MTU).
//! Both ends run on this one thread, so a real node's sender alone has more.
//!
//! `cargo run --release -p sixgate-sync --example replication_rate [RECORDS]`

use sixgate_sync::record::{Op, Proto, TcpState};
use sixgate_sync::{Event, Key, Peer, PeerConfig, Record};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let key = Key::new(b"an example key of 32 bytes......").expect("key");
    let mut a = Peer::new(PeerConfig::new(1, 2, 1, 7), Some(key.clone()));
    let mut b = Peer::new(PeerConfig::new(2, 1, 2, 7), Some(key));
    let mut buf = [0u8; 1500];
    let mut now = 1_000_000_000u64;
    let mut got = 0u64;
    let mut exchange = |a: &mut Peer, b: &mut Peer, now: u64, got: &mut u64| {
        a.handle_timeout(now, &mut |_| {});
        b.handle_timeout(now, &mut |_| {});
        while let Some(len) = a.poll_transmit(now, &mut buf) {
            let _ = b.receive(now, &buf[..len], &mut |e| {
                if let Event::Record(_) = e {
                    *got += 1;
                }
            });
        }
        while let Some(len) = b.poll_transmit(now, &mut buf) {
            let _ = a.receive(now, &buf[..len], &mut |_| {});
        }
    };
    // Join: B asks, A sends an (empty) snapshot.
    for _ in 0..10 {
        exchange(&mut a, &mut b, now, &mut got);
        if a.snapshot_wanted().is_some() {
            a.start_snapshot();
            a.end_snapshot();
        }
        now += 1_000_000;
    }
    assert!(b.synced());
    let rec = |i: u64| Record {
        op: Op::SessionUpsert,
        proto: Proto::Tcp,
        tcp_state: Some(TcpState::Established),
        lifetime_ms: 7_440_000,
        v6_host: Ipv6Addr::from(0x2001_0db8_0000_0001_0000_0000_0000_0000u128 | u128::from(i)),
        v6_remote: Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0xc633, 0x6407),
        v4_pool: Ipv4Addr::new(192, 0, 2, 1),
        v4_remote: Ipv4Addr::new(198, 51, 100, 7),
        port6: i as u16,
        port4: (i >> 16) as u16,
        remote_port: 443,
    };
    let start = Instant::now();
    let mut sent = 0u64;
    while got < n {
        while sent < n && a.room() > 0 {
            a.push(now, &rec(sent));
            sent += 1;
        }
        now += 1_000_000;
        exchange(&mut a, &mut b, now, &mut got);
    }
    let secs = start.elapsed().as_secs_f64();
    let c = a.counters();
    println!(
        "{n} records in {secs:.2} s: {:.0} records/s through sender + receiver on one core \
         ({} datagrams, {} resent, queue full {})",
        n as f64 / secs,
        c.datagrams_out,
        c.resent,
        c.queue_full
    );
}
