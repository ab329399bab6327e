//! The core allocates nothing per packet: a counting global allocator watches
//! `translate` over every kind of packet the other tests use (translations, ICMP
//! errors with inner packets, fragmentation, generated errors, drops), and the
//! stateful NAT64 paths (established flows both ways, new sessions, expiry).
//! Allocations are counted per thread, so tests may run side by side.

mod common;

use common::*;
use sixgate_core::{HEADROOM, PacketBuf};
use sixgate_testkit::alloc_count::{Counting, allocs};
use sixgate_testkit::{Ip4, Ip6, split_v4, split_v6};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn translate_allocates_nothing_per_packet() {
    let server6 = Ip6::new(SERVER6, CLIENT6);
    let mut inputs = vec![
        Ip6::new(CLIENT6, SERVER6).udp(1, 2, 20),
        Ip6::new(CLIENT6, SERVER6).tcp(1, 2, 200),
        Ip6::new(CLIENT6, SERVER6).echo_request(1, 2, 56),
        Ip6::new(CLIENT6, SERVER6).hop_limit(1).udp(1, 2, 8),
        Ip6::new(CLIENT6, SERVER6).routing(1).udp(1, 2, 8),
        Ip6::new(CLIENT6, "2001:db8:64::198.18.0.9".parse().unwrap()).udp(1, 2, 8),
        Ip6::new("2001:db8:1::1".parse().unwrap(), SERVER6).icmp_error(
            1,
            4,
            [0; 4],
            &server6.udp(1, 2, 8),
        ),
        Ip4::new(SERVER4, CLIENT4).udp(1, 2, 20),
        Ip4::new(SERVER4, CLIENT4).df(false).udp(1, 2, 1400),
        Ip4::new(SERVER4, CLIENT4).echo_reply(1, 2, 56),
        Ip4::new(SERVER4, CLIENT4).ttl(1).udp(1, 2, 8),
        Ip4::new(ROUTER4, CLIENT4).icmp_error(
            3,
            4,
            [0, 0, 5, 0],
            &Ip4::new(CLIENT4, SERVER4).udp(1, 2, 1400),
        ),
        vec![0x45; 3],
    ];
    inputs.extend(split_v6(&Ip6::new(CLIENT6, SERVER6).udp(1, 2, 600), 256, 7));
    // A fragmented Echo both ways: the first fragment held, then released.
    inputs.extend(split_v6(
        &Ip6::new(CLIENT6, SERVER6).echo_request(1, 2, 600),
        256,
        8,
    ));
    inputs.extend(split_v4(
        &Ip4::new(SERVER4, CLIENT4).df(false).echo_reply(1, 2, 3000),
        1480,
    ));

    assert_no_alloc(&mut Harness::sample(), &inputs);
}

/// The RFC 6877 CLAT configuration (what `mode = "clat"` builds): the customer
/// range 192.0.0.0/29 as an EAM entry, the PLAT prefix as pool6, hairpinning off.
#[test]
fn clat_translate_allocates_nothing_per_packet() {
    let mut cfg = sixgate_core::Config::with_pool6(Some(pool6()));
    cfg.map
        .eam
        .insert(sixgate_core::addr::Eam::parse("192.0.0.0/29", "2001:db8:c1a7::/125").unwrap())
        .unwrap();
    cfg.hairpin = sixgate_core::config::HairpinMode::Off;
    let host4: std::net::Ipv4Addr = "192.0.0.2".parse().unwrap();
    let host6: std::net::Ipv6Addr = "2001:db8:c1a7::2".parse().unwrap();
    let inputs = vec![
        Ip4::new(host4, SERVER4).tcp(1, 2, 200),
        Ip4::new(host4, SERVER4).echo_request(1, 2, 56),
        Ip6::new(SERVER6, host6).udp(2, 1, 20),
        Ip6::new(SERVER6, host6).echo_reply(1, 2, 56),
        // Hairpin off: another customer host seen through the PLAT prefix is dropped.
        Ip6::new(host6, "2001:db8:64::192.0.0.3".parse().unwrap()).udp(1, 2, 8),
    ];
    assert_no_alloc(&mut Harness::new(cfg), &inputs);
}

fn assert_no_alloc(h: &mut Harness, inputs: &[Vec<u8>]) {
    let mut buf = vec![0u8; HEADROOM + 2048];
    let before = allocs();
    for _ in 0..3 {
        for input in inputs {
            buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
            let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
            std::hint::black_box(h.t.translate(&mut pkt, &mut h.scratch, 0));
        }
    }
    assert_eq!(allocs() - before, 0, "allocations on the packet path");
}

/// pool6 and a NAT64 (RFC 6146) on the one pool4 address `pool4`.
fn nat64_config(pool4: std::net::Ipv4Addr) -> sixgate_core::Config {
    use sixgate_core::nat64::{Nat64Config, Pool4Entry};
    let mut cfg = sixgate_core::Config::with_pool6(Some(pool6()));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry::single(pool4)],
        max_sessions: 4096,
        max_sessions_per_subscriber: 1000,
        ..Nat64Config::default()
    });
    cfg
}

#[test]
fn nat64_allocates_nothing_per_packet() {
    use sixgate_testkit::tcp_flag::{ACK, FIN, SYN};
    use std::net::Ipv4Addr;

    let pool4 = Ipv4Addr::new(192, 0, 2, 1);
    let mut h = Harness::new(nat64_config(pool4));
    // Session changes exported for other gateway nodes (docs/ha.md): the ring
    // is allocated here, and overflows below (counted, not grown).
    h.t.enable_replica_export(64);
    let out = |sport| Ip6::new(CLIENT6, SERVER6).udp(sport, 53, 20);
    let mut buf = vec![0u8; HEADROOM + 2048];
    // Writes the output's first 32 bytes to `head` (no allocation).
    let mut head = [0u8; 32];
    let mut run = |h: &mut Harness, input: &[u8], now: u64| -> [u8; 32] {
        buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
        std::hint::black_box(h.t.translate(&mut pkt, &mut h.scratch, now));
        let n = pkt.len().min(32);
        head[..n].copy_from_slice(&pkt.data()[..n]);
        head
    };
    // Set up: a UDP flow, a TCP connection, an ICMP query; learn their ports.
    let port_of = |p: &[u8]| u16::from_be_bytes([p[20], p[21]]);
    let udp4 = port_of(&run(&mut h, &out(5000), 0));
    let tcp4 = port_of(&run(
        &mut h,
        &Ip6::new(CLIENT6, SERVER6).tcp_flags(6000, 80, SYN, 0),
        0,
    ));
    run(
        &mut h,
        &Ip4::new(SERVER4, pool4).tcp_flags(80, tcp4, SYN | ACK, 0),
        0,
    );
    let echo = run(
        &mut h,
        &Ip6::new(CLIENT6, SERVER6).echo_request(9, 1, 56),
        0,
    );
    let id4 = u16::from_be_bytes([echo[24], echo[25]]);
    let inputs = [
        out(5000),
        Ip4::new(SERVER4, pool4).udp(53, udp4, 20),
        Ip6::new(CLIENT6, SERVER6).tcp_flags(6000, 80, ACK, 200),
        Ip4::new(SERVER4, pool4).tcp_flags(80, tcp4, ACK, 200),
        Ip6::new(CLIENT6, SERVER6).echo_request(9, 2, 56),
        Ip4::new(SERVER4, pool4).echo_reply(id4, 2, 56),
        Ip4::new(ROUTER4, pool4).icmp_error(
            3,
            1,
            [0; 4],
            &Ip4::new(pool4, SERVER4).udp(udp4, 53, 8),
        ),
        Ip4::new(SERVER4, pool4).udp(53, 1, 20),
        Ip4::new(SERVER4, pool4).tcp_flags(80, 2, SYN, 0),
    ];
    let fresh: Vec<Vec<u8>> = (0..150).map(|i| out(10_000 + i)).collect();
    let fin = Ip6::new(CLIENT6, SERVER6).tcp_flags(6000, 80, FIN, 0);
    let mut scratch = std::mem::take(&mut h.scratch);
    let before = allocs();
    for round in 0..3u16 {
        for input in &inputs {
            run(&mut h, input, 1);
        }
        // New flows, a close, and timers.
        for p in &fresh[usize::from(round) * 50..][..50] {
            run(&mut h, p, 1);
        }
        run(&mut h, &fin, 1);
        while h
            .t
            .tick(u64::from(round) * 400_000_000_000, &mut scratch)
            .is_some()
        {}
        h.t.drain_replica_changes(|_, r| {
            std::hint::black_box(r);
        });
    }
    assert_eq!(allocs() - before, 0, "allocations on the NAT64 packet path");
    assert!(h.t.replica_changes_lost() > 0, "the ring overflowed");
    assert!(h.t.nat64_stats().sessions.total() > 0);

    // The owner rule a data plane asks about every packet before handing it
    // to another worker (the XDP workers' handoff).
    let mut nat = h.t.config().nat64.clone().expect("nat64");
    nat.static_bib.push(sixgate_core::nat64::StaticBib {
        proto: sixgate_core::nat64::Proto::Tcp,
        v6: CLIENT6,
        port6: 80,
        v4: pool4,
        port4: 80,
    });
    let owner = sixgate_core::nat64::steering::PacketOwner::new(&nat, 4);
    let before = allocs();
    let mut sum = 0u32;
    for input in inputs.iter().chain(&fresh).chain([&fin]) {
        sum += u32::from(owner.of(std::hint::black_box(input)));
    }
    assert_eq!(allocs() - before, 0, "allocations in PacketOwner::of");
    assert!(sum > 0);
}

/// `sixgate session flush` (RFC 9693 §4.3 tear-down) runs between packet
/// batches on the worker: it allocates nothing either, nor do the packets after it.
#[test]
fn nat64_flush_allocates_nothing() {
    use sixgate_core::nat64::{FlushFilter, Flushed};
    use std::net::Ipv4Addr;

    let mut h = Harness::new(nat64_config(Ipv4Addr::new(192, 0, 2, 1)));
    // Session changes exported for other gateway nodes (docs/ha.md): the ring
    // is allocated here, and overflows below (counted, not grown).
    h.t.enable_replica_export(64);
    let out = |sport| Ip6::new(CLIENT6, SERVER6).udp(sport, 53, 20);
    for i in 0..300 {
        h.one(&out(10_000 + i));
    }
    let before = allocs();
    let mut flushed = Flushed::default();
    let mut cursor = Some(0);
    while let Some(from) = cursor {
        cursor =
            h.t.flush(&FlushFilter::default(), from, 64, 1, &mut flushed);
    }
    assert_eq!(allocs() - before, 0, "allocations in a flush");
    assert_eq!(flushed.sessions, 300);
    let again: Vec<Vec<u8>> = (0..100).map(|i| out(20_000 + i)).collect();
    assert_no_alloc(&mut h, &again);
}

#[test]
fn nat64_after_reconfigure_allocates_nothing_per_packet() {
    use sixgate_core::nat64::Pool4Entry;
    use std::net::Ipv4Addr;
    use std::sync::Arc;

    // A runtime change (Translator::reconfigure) may allocate; the packets after
    // it may not: a flow on a removed (draining) pool4 address, and new flows
    // on the added one.
    let (old4, new4) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2));
    let mut cfg = nat64_config(old4);
    let mut h = Harness::new(cfg.clone());
    let out = |sport| Ip6::new(CLIENT6, SERVER6).udp(sport, 53, 20);
    let first = h.one(&out(5000));
    let port = u16::from_be_bytes([first[20], first[21]]);
    cfg.nat64.as_mut().unwrap().pool4 = vec![Pool4Entry::single(new4)];
    h.t.reconfigure(Arc::new(cfg)).unwrap();
    let mut inputs = vec![out(5000), Ip4::new(SERVER4, old4).udp(53, port, 20)];
    inputs.extend((0..100).map(|i| out(20_000 + i)));
    assert_no_alloc(&mut h, &inputs);
}

#[test]
fn mapt_br_allocates_nothing_per_packet() {
    use common::mapt::*;
    let mut inputs = vec![
        Ip6::new(CE6, SERVER_D).udp(55300, 53, 20),
        Ip6::new(CE6, SERVER_D).tcp(55301, 80, 200),
        Ip6::new(CE6, SERVER_D).echo_request(55302, 1, 56),
        Ip6::new(CE6, SERVER_D).udp(1000, 53, 20),
        Ip4::new(SERVER, CE4).udp(53, 55300, 20),
        Ip4::new(SERVER, CE4).echo_reply(55302, 1, 56),
        Ip4::new(SERVER, CE4).icmp_error(3, 3, [0; 4], &Ip4::new(CE4, SERVER).udp(55300, 53, 8)),
        // Hairpin to the CE with PSID 28.
        Ip6::new(CE6, "2001:db8:ffff::c000:208".parse().unwrap()).udp(55300, 57400, 20),
    ];
    inputs.extend(split_v4(
        &Ip4::new(SERVER, CE4).df(false).id(3).udp(53, 55300, 600),
        256,
    ));
    assert_no_alloc(&mut br(), &inputs);
}

#[test]
fn mapt_ce_allocates_nothing_per_packet() {
    use common::mapt::*;
    use sixgate_testkit::tcp_flag::{ACK, SYN};
    let mut h = ce();
    // Set up flows (these create NAPT44 state), then learn their ports.
    let mut buf = vec![0u8; HEADROOM + 2048];
    let mut sport_of = |h: &mut Harness, input: &[u8]| -> u16 {
        buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
        h.t.translate(&mut pkt, &mut h.scratch, 0);
        let d = pkt.data();
        u16::from_be_bytes([d[40], d[41]])
    };
    let udp = sport_of(&mut h, &Ip4::new(LAN_HOST, SERVER).udp(4000, 53, 20));
    let tcp = sport_of(
        &mut h,
        &Ip4::new(LAN_HOST, SERVER).tcp_flags(4001, 80, SYN, 0),
    );
    let inputs = vec![
        Ip4::new(LAN_HOST, SERVER).udp(4000, 53, 20),
        Ip6::new(SERVER_D, CE6).udp(53, udp, 20),
        Ip6::new(SERVER_D, CE6).tcp_flags(80, tcp, SYN | ACK, 0),
        Ip4::new(LAN_HOST, SERVER).tcp_flags(4001, 80, ACK, 200),
        Ip6::new(SERVER_D, CE6).udp(53, 1, 20),
        Ip6::new(SERVER_D, CE6).icmp_error(1, 4, [0; 4], &Ip6::new(CE6, SERVER_D).udp(udp, 53, 8)),
    ];
    assert_no_alloc(&mut h, &inputs);
}

/// docs/ha.md: with state sync, packets for a peer's shard wait in the hold
/// store for the peer's record, are translated from it when the record is
/// imported (between batches), or expire: none of it allocates.
#[test]
fn nat64_sync_hold_and_release_allocate_nothing() {
    use sixgate_core::Config;
    use sixgate_core::nat64::{Nat64Config, Pool4Entry, Proto, Replica, ReplicaOp};
    use std::net::Ipv4Addr;

    let peer4 = Ipv4Addr::new(192, 0, 2, 0);
    let mut cfg = Config::with_pool6(Some(pool6()));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry {
            prefix_len: 31,
            ..Pool4Entry::single(peer4)
        }],
        max_sessions: 4096,
        ..Nat64Config::default()
    });
    let mut h = Harness::new(cfg);
    h.t.enable_replica_export(64);
    h.t.set_own_pool4_shards(Some(&[(Ipv4Addr::new(192, 0, 2, 1), 32)]));
    let replies: Vec<Vec<u8>> = (0..100u16)
        .map(|i| Ip4::new(SERVER4, peer4).udp(53, 10_000 + 2 * i, 20))
        .collect();
    let record = |i: u16| Replica {
        proto: Proto::Udp,
        tcp_state: None,
        remaining_ms: 300_000,
        v6: CLIENT6,
        port6: 10_000 + 2 * i,
        v4: peer4,
        port4: 10_000 + 2 * i,
        remote4: SERVER4,
        rport: 53,
    };
    let mut buf = vec![0u8; HEADROOM + 2048];
    let before = allocs();
    let mut sent = 0;
    for (i, r) in replies.iter().enumerate() {
        let now = i as u64 * 1_000_000;
        buf[HEADROOM..HEADROOM + r.len()].copy_from_slice(r);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, r.len());
        std::hint::black_box(h.t.translate(&mut pkt, &mut h.scratch, now));
        // Every other one's record comes; the rest expire (or find the
        // store full: more than 64 wait at once).
        if i % 2 == 0 {
            h.t.import_replica(ReplicaOp::Upsert, &record(i as u16), now)
                .unwrap();
        }
        while let Some(v) = h.t.tick(now, &mut h.scratch) {
            sent += v.scratch_outputs(&h.scratch).count();
        }
    }
    while h.t.tick(1_000_000_000, &mut h.scratch).is_some() {}
    assert_eq!(allocs() - before, 0, "allocations holding or releasing");
    assert_eq!(sent, 50, "each reply whose record came");
    assert_eq!(h.t.nat64_stats().held_syns, 0);
}
