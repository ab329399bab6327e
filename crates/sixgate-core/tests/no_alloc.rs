//! The core allocates nothing per packet: a counting global allocator watches
//! `translate` over every kind of packet the other tests use (translations, ICMP
//! errors with inner packets, fragmentation, generated errors, drops).

mod common;

use common::*;
use sixgate_core::{HEADROOM, PacketBuf};
use sixgate_testkit::{Ip4, Ip6, split_v6};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

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
    let before = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..3 {
        for input in inputs {
            buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
            let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
            std::hint::black_box(h.t.translate(&mut pkt, &mut h.scratch, 0));
        }
    }
    assert_eq!(
        ALLOCS.load(Ordering::Relaxed) - before,
        0,
        "allocations on the packet path"
    );
}
