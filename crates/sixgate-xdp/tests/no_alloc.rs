//! The XDP workers' handoff allocates nothing per packet: asking the owner
//! hook, pushing into a ring, publishing (with its doorbell) and draining, under
//! the counting allocator (docs/xdp.md, "Handoff"). Translation itself is
//! covered by sixgate-core's no_alloc test.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use sixgate_core::nat64::{Nat64Config, Pool4Entry};
use sixgate_testkit::alloc_count::{Counting, allocs};
use sixgate_testkit::{Ip4, Ip6};
use sixgate_xdp::handoff::{Doorbell, ring};
use sixgate_xdp::owner::Owner;

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn handoff_allocates_nothing_per_packet() {
    let pool4 = Ipv4Addr::new(198, 18, 0, 1);
    let cfg = Nat64Config {
        pool4: vec![Pool4Entry::single(pool4)],
        ..Nat64Config::default()
    };
    let owner = Owner::new(Some(&cfg), 2);
    let client: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    let server6: Ipv6Addr = "2001:db8:64::cb00:7107".parse().unwrap();
    let server4 = Ipv4Addr::new(203, 0, 113, 7);
    let packets = [
        Ip6::new(client, server6).udp(40000, 53, 1200),
        Ip6::new(client, server6).echo_request(7, 1, 56),
        Ip4::new(server4, pool4).tcp(443, 61002, 100),
        Ip4::new(server4, pool4).icmp_error(
            3,
            1,
            [0; 4],
            &Ip4::new(pool4, server4).udp(61003, 53, 8),
        ),
    ];
    let bell = Arc::new(Doorbell::new().unwrap());
    let (mut p, mut c) = ring(64, 1500, bell.clone());
    let mut frame = [0u8; 2048];
    let before = allocs();
    let mut owners = 0u32;
    for round in 0..100 {
        for pkt in &packets {
            owners += u32::from(owner.of(pkt, 1));
            let _ = owner.hairpin(pkt);
            assert!(p.push(pkt));
        }
        p.publish();
        let n = c.drain(64, |ip| {
            frame[..ip.len()].copy_from_slice(ip);
            true
        });
        assert_eq!(n, packets.len() as u32, "round {round}");
        bell.clear();
    }
    assert_eq!(allocs() - before, 0, "allocations on the handoff path");
    assert!(owners > 0);
}
