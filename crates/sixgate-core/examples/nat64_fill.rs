//! What creating a NAT64 session costs as the tables fill: one worker's
//! translator takes the first packets (UDP, 6→4) of N new flows (default 1 M)
//! with the gateway benchmarks' configuration and traffic (bench/ha-gateway.sh,
//! bench/tun-compare.sh: pool4 198.18.0.0/24 at the default ports 61001-65535,
//! `subscriber_prefix_len = 128`, `max_sessions = 4194304`; the load
//! generator's RFC 4814 pseudorandom source ports in 1024-65535 from `hosts`
//! source addresses, default 64), and prints the wall-clock time per batch of
//! 50 000 new sessions.
//!
//! Wall-clock figures move with the machine's load; instruction counts do not.
//! Under callgrind, `--dump-before=*batch_mark` writes one profile per batch:
//!
//! ```sh
//! cargo build --release -p sixgate-core --example nat64_fill
//! valgrind --tool=callgrind --dump-instr=no --dump-before='*batch_mark' \
//!     --callgrind-out-file=/tmp/fill.out target/release/examples/nat64_fill
//! scripts/nat64-fill.sh /tmp/fill.out   # instructions per session, per batch
//! ```
//!
//! (`/tmp/fill.out.1` is the set-up, `.2` … the batches in order.)
//! Arguments: `[N [hosts [pool4/len]]]`, e.g. `1000000 4096 198.18.0.0/25` for
//! ha-gateway.sh's sync-off node and new-session traffic.

#[path = "../benches/common/nat64.rs"]
#[allow(dead_code)]
mod nat64_common;

use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use sixgate_core::{HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_testkit::Ip6;

/// Sessions per printed batch.
const BATCH: usize = 50_000;

/// A call callgrind can dump before (`--dump-before='*batch_mark'`): marks the
/// end of one batch and the start of the next.
#[inline(never)]
fn batch_mark(k: usize) {
    black_box(k);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |a| a.parse().expect("N"));
    let hosts: u16 = args.next().map_or(64, |a| a.parse().expect("hosts"));
    let (pool4, len) = args
        .next()
        .unwrap_or_else(|| "198.18.0.0/24".into())
        .split_once('/')
        .map(|(a, l)| {
            (
                a.parse::<Ipv4Addr>().expect("pool4"),
                l.parse::<u8>().expect("len"),
            )
        })
        .expect("pool4 as ADDR/LEN");
    let flows = nat64_common::rfc4814_new_flows(n, hosts, 4814);
    let mut t = Translator::new(nat64_common::gateway_config(pool4, len, 4_194_304));
    let mut scratch = Scratch::new();
    // The benchmark's client (fd00:1::2, plus the host number) and server
    // (198.51.100.10 in pool6, UDP port 5001), 18 bytes of payload.
    let client: Ipv6Addr = "fd00:1::2".parse().unwrap();
    let server: Ipv6Addr = "2001:db8:64::c633:640a".parse().unwrap();
    let template = Ip6::new(client, server).udp(1024, 5001, 18);
    let mut buf = vec![0u8; HEADROOM + template.len()];
    println!(
        "{} new UDP flows from {hosts} hosts through pool4 {pool4}/{len} \
         (ports 61001-65535), batches of {BATCH}",
        flows.len()
    );
    println!("sessions  ns/session  dropped  pool4 ports in use");
    let (mut at, mut dropped) = (0, 0u64);
    batch_mark(0);
    for (k, batch) in flows.chunks(BATCH).enumerate() {
        let t0 = Instant::now();
        for &(host, port) in batch {
            buf[HEADROOM..].copy_from_slice(&template);
            let p = &mut buf[HEADROOM..];
            let last = u16::from_be_bytes([p[22], p[23]]).wrapping_add(host);
            p[22..24].copy_from_slice(&last.to_be_bytes());
            p[40..42].copy_from_slice(&port.to_be_bytes());
            let mut pkt = PacketBuf::new(&mut buf, HEADROOM, template.len());
            if t.translate(&mut pkt, &mut scratch, 0) != Verdict::Translated {
                dropped += 1;
            }
        }
        let ns = t0.elapsed().as_nanos() as f64 / batch.len() as f64;
        batch_mark(k + 1);
        at += batch.len();
        let st = t.nat64_stats();
        println!(
            "{at:>8}  {ns:>10.0}  {dropped:>7}  {} of {}",
            st.ports_in_use.udp, st.ports_owned.udp
        );
    }
}
