//! The per-packet work of a NAT64 packet on the XDP data plane with two
//! workers, without sockets: what `scripts/handoff-instructions.sh` runs under
//! callgrind to count instructions per packet (docs/xdp.md, "Handoff").
//!
//! usage: handoff_loop MODE [ITERATIONS] [PAYLOAD]
//!
//! - `local`: the packet's owner received it: ask the [`Owner`] hook, then
//!   translate (an established UDP flow, 6→4).
//! - `handed`: the other worker received it: ask the hook, copy it into the
//!   handoff ring (published once per 64, as a worker does per batch); the
//!   owner takes it out into its frame and translates it.
//! - `copy`: only the copy that puts the packet back in the buffer before each
//!   translation (the loop's own cost in `local`: a real worker translates
//!   the received frame in place).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::steering::subscriber_worker;
use sixgate_core::nat64::{Nat64Config, Pool4Entry};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_testkit::Ip6;
use sixgate_xdp::handoff::{Doorbell, Ring};
use sixgate_xdp::owner::Owner;

/// Packets per published batch (the worker's rx batch).
const BATCH: u64 = 64;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "local".into());
    let iterations: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let payload: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(18);

    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).expect("pool6");
    let mut cfg = Config::with_pool6(Some(pool6));
    let mut pool4 = Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0));
    pool4.prefix_len = 24;
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![pool4],
        ..Nat64Config::default()
    });
    let cfg = Arc::new(cfg);
    let mut owner = Owner::new(cfg.nat64.as_ref(), 2);
    // A subscriber of worker 0, talking to an IPv4 server.
    let client = (1u16..)
        .map(|n| Ipv6Addr::new(0x2001, 0xdb8, n, 0, 0, 0, 0, 1))
        .find(|a| subscriber_worker(u128::from(*a), 64, 2) == 0)
        .expect("a subscriber of worker 0");
    let server: Ipv6Addr = "2001:db8:64::c633:6407".parse().unwrap();
    let packet = Ip6::new(client, server).udp(40000, 53, payload);

    let mut t = Translator::for_worker(cfg, 0, 2);
    let mut scratch = Scratch::new();
    let mut frame = vec![0u8; 4096];
    let at = 256 + 14;
    let mut translate = |frame: &mut [u8], len: usize| {
        let mut pkt = PacketBuf::new(frame, at, len);
        t.translate(&mut pkt, &mut scratch, 0)
    };
    frame[at..at + packet.len()].copy_from_slice(&packet);
    assert_eq!(translate(&mut frame, packet.len()), Verdict::Translated);
    assert!(at >= HEADROOM);

    let bell = Arc::new(Doorbell::new().expect("eventfd"));
    let (mut to_owner, mut from_receiver) = Ring::new(512, 1500, bell.clone());
    for i in 0..iterations {
        match mode.as_str() {
            "copy" => {
                frame[at..at + packet.len()].copy_from_slice(std::hint::black_box(&packet));
            }
            "local" => {
                frame[at..at + packet.len()].copy_from_slice(&packet);
                let o = owner.of(std::hint::black_box(&frame[at..at + packet.len()]), 0);
                assert_eq!(o, 0);
                std::hint::black_box(translate(&mut frame, packet.len()));
            }
            "handed" => {
                // The receiving worker (1).
                let o = owner.of(std::hint::black_box(&packet), 1);
                assert!(to_owner.push(&packet), "ring full");
                assert_eq!(o, 0);
                if i % BATCH == BATCH - 1 {
                    to_owner.publish();
                    // The owner (0), its next round.
                    let mut lens = [0usize; BATCH as usize];
                    let mut k = 0;
                    from_receiver.drain(BATCH as u32, |ip| {
                        // One frame per packet in the worker; one buffer here.
                        frame[at..at + ip.len()].copy_from_slice(ip);
                        lens[k] = ip.len();
                        k += 1;
                        std::hint::black_box(translate(&mut frame, lens[k - 1]));
                        true
                    });
                    bell.clear();
                }
            }
            _ => {
                eprintln!("unknown mode {mode:?}: local, handed or copy");
                std::process::exit(2);
            }
        }
    }
}
