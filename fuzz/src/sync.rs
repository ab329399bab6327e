//! The `sync_receive` harness: a sequence of datagrams from the sync link into
//! one `sixgate_sync::Peer` (decoder, authentication, replay window, receiver
//! and sender state machines, timers).
//!
//! Input layout: a knob byte (bit 0: a key is configured, so only the
//! decoder's early checks are reachable; bit 1: the peer expects node 1, else
//! node 3), then up to 32 items of `[ms to advance][length u16 BE][bytes]`.
//!
//! Invariants:
//! - nothing panics (debug assertions and overflow checks are on);
//! - every datagram is either accepted or counted under exactly one drop
//!   reason: `datagrams_in + dropped` grows by one per datagram;
//! - a datagram that decodes re-encodes to the same bytes (DATA and KEEPALIVE:
//!   the codec is a bijection on what it accepts);
//! - what the peer transmits decodes with the same key;
//! - the receiver never applies more records than it was sent.

use sixgate_sync::wire::{self, Body, Kind};
use sixgate_sync::{Event, Key, Peer, PeerConfig};

/// The config hash the seeds carry.
pub const SYNC_HASH: u64 = 0x5157_0001;
/// The key of knob bit 0.
pub const SYNC_KEY: &[u8] = b"fuzz sync key 16";

/// Splits the input into (knobs, items).
pub fn sync_items(data: &[u8]) -> (u8, Vec<(u8, &[u8])>) {
    let Some((&knobs, mut rest)) = data.split_first() else {
        return (0, Vec::new());
    };
    let mut items = Vec::new();
    while rest.len() >= 3 && items.len() < 32 {
        let ms = rest[0];
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]])).min(rest.len() - 3);
        items.push((ms, &rest[3..3 + len]));
        rest = &rest[3 + len..];
    }
    (knobs, items)
}

/// One item: how a seed is written.
pub fn sync_item(ms: u8, datagram: &[u8]) -> Vec<u8> {
    let mut v = vec![ms];
    v.extend_from_slice(&(datagram.len() as u16).to_be_bytes());
    v.extend_from_slice(datagram);
    v
}

pub fn run_sync(data: &[u8]) {
    let (knobs, items) = sync_items(data);
    let key = (knobs & 1 != 0).then(|| Key::new(SYNC_KEY).expect("non-empty key"));
    let peer_id = if knobs & 2 != 0 { 1 } else { 3 };
    let mut cfg = PeerConfig::new(2, peer_id, 7, SYNC_HASH);
    // Small queue: fast set-up per input, and the full-queue paths within reach.
    cfg.queue_capacity = 16;
    let mut peer = Peer::new(cfg, key.clone());
    let mut now: u64 = 1_000_000_000;
    let mut out = [0u8; 1500];
    let mut reencoded = [0u8; 70_000];
    let mut records_sent_to_us: u64 = 0;
    let mut applied: u64 = 0;
    for (ms, d) in items {
        now += u64::from(ms) * 1_000_000;
        if let Ok(dg) = wire::decode(d, key.as_ref()) {
            let (body, count): (&[u8], u16) = match dg.body {
                Body::Data(r) => (r.bytes(), r.len() as u16),
                Body::Keepalive => (&[], 0),
                _ => (&[], u16::MAX),
            };
            if count != u16::MAX {
                let n = wire::encode(&mut reencoded, &dg.header, body, count, key.as_ref())
                    .expect("fits");
                assert_eq!(&reencoded[..n], d, "decode/encode round trip");
            }
            if let Body::Data(r) = dg.body {
                records_sent_to_us += r.len() as u64;
            }
        }
        let before = peer.counters().datagrams_in + peer.counters().dropped();
        let _ = peer.receive(now, d, &mut |e| {
            if let Event::Record(_) = e {
                applied += 1;
            }
        });
        let after = peer.counters().datagrams_in + peer.counters().dropped();
        assert_eq!(after, before + 1, "one verdict per datagram");
        peer.handle_timeout(now, &mut |_| {});
        if peer.snapshot_wanted().is_some() {
            peer.start_snapshot();
            assert!(peer.end_snapshot());
        }
        for _ in 0..64 {
            let Some(n) = peer.poll_transmit(now, &mut out) else {
                break;
            };
            assert!(
                wire::decode(&out[..n], key.as_ref()).is_ok(),
                "we send what we accept"
            );
            if matches!(
                wire::decode(&out[..n], key.as_ref()).map(|d| d.header.kind),
                Ok(Kind::Data)
            ) {
                panic!("nothing was pushed, so no DATA goes out");
            }
        }
        let _ = peer.next_timeout(now);
    }
    assert!(
        applied <= records_sent_to_us,
        "applied {applied} of {records_sent_to_us}"
    );
    assert_eq!(peer.counters().records_in, applied);
}
