//! The XDP data plane's per-packet pieces allocate nothing: a counting global
//! allocator watches the socket rings (fill, receive, transmit, flush,
//! completion), the next-hop cache (hits, and the rtnetlink questions of a
//! miss), the kernel slow path and the control plane's once-per-round check
//! (`Follower::changed`), in a private network namespace whose loopback carries
//! the packets. (The translator itself is checked by
//! sixgate-core's `tests/no_alloc.rs`.) Allocations are counted per thread.

use sixgate_testkit::alloc_count::{Counting, allocs};
use std::net::{IpAddr, Ipv4Addr};

use std::sync::Arc;

use sixgate_dataplane::Live;
use sixgate_dataplane::{Plane, Refusal};
use sixgate_testkit::Ip4;
use sixgate_xdp::kernel_path::KernelPath;
use sixgate_xdp::nexthop::{Iface, NextHops};
use sixgate_xdp::xsk::{Bind, FRAME_SIZE, Umem, Xsk};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A data plane with no destinations to edit.
struct NoPlane;

impl Plane for NoPlane {
    fn apply(
        &mut self,
        _: &sixgate_core::Config,
        _: &sixgate_core::Config,
        _: &mut Vec<String>,
    ) -> Result<(), Refusal> {
        Ok(())
    }
}

#[test]
fn rings_next_hops_and_slow_path_allocate_nothing() {
    std::thread::spawn(run).join().expect("test thread");
}

fn run() {
    // SAFETY: only this thread's network namespace changes.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        println!("skipped: no network namespace (not root?)");
        return;
    }
    let up = std::process::Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(up, "cannot bring lo up");
    let mut umem = Umem::new(64).unwrap();
    let bind = Bind {
        ifindex: 1,
        queue: 0,
        ring_size: 32,
        try_zero_copy: false,
        require_zero_copy: false,
    };
    let mut xsk = match Xsk::open(&umem, &bind, None) {
        Ok(x) => x,
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    let mut free: Vec<u64> = (0..64).map(|f| f * u64::from(FRAME_SIZE)).collect();
    let mut hops = NextHops::new([
        Iface {
            ifindex: 1,
            mac: [0; 6],
        },
        Iface {
            ifindex: 1,
            mac: [0; 6],
        },
    ])
    .unwrap();
    let kernel = KernelPath::open().unwrap();
    let pkt = Ip4::new(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST).udp(9, 9, 18);
    let dst = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let (_live, followers) = Live::new(
        Arc::new(sixgate_core::Config::with_pool6(None)),
        vec![Arc::default()],
        Box::new(NoPlane),
        None,
    )
    .unwrap();
    let follower = &followers[0];

    // Warm up: the first next-hop question.
    hops.hop(dst, 0);
    let before = allocs();
    for round in 0..100u64 {
        xsk.fill(&mut free, 8);
        let (base, frame) = umem.frame_mut(free[free.len() - 1]);
        frame[256..256 + pkt.len()].copy_from_slice(&pkt);
        if xsk.tx_room(1) > 0 {
            free.pop();
            xsk.transmit(base + 256, pkt.len() as u32);
        }
        xsk.flush().unwrap();
        xsk.complete(&mut free);
        xsk.receive(16, |_, _| {});
        // A hit, then (past the cache's lifetime) a miss with its netlink round.
        hops.hop(dst, round);
        hops.hop(dst, round * 2_000_000_000);
        let _ = kernel.send(&pkt);
        assert!(!follower.changed());
    }
    assert_eq!(allocs() - before, 0, "allocations on the packet path");
    assert!(hops.lookups > 50, "the misses asked the kernel");
}

/// The workers' handoff (docs/xdp.md, "Handoff"): asking the owner hook,
/// pushing into a ring, publishing (with its doorbell) and draining.
#[test]
fn handoff_allocates_nothing_per_packet() {
    let pool4 = Ipv4Addr::new(198, 18, 0, 1);
    let cfg = sixgate_core::nat64::Nat64Config {
        pool4: vec![sixgate_core::nat64::Pool4Entry::single(pool4)],
        ..sixgate_core::nat64::Nat64Config::default()
    };
    let mut owner = sixgate_xdp::owner::Owner::new(Some(&cfg), 2);
    let client: std::net::Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    let server6: std::net::Ipv6Addr = "2001:db8:64::cb00:7107".parse().unwrap();
    let server4 = Ipv4Addr::new(203, 0, 113, 7);
    let packets = [
        sixgate_testkit::Ip6::new(client, server6).udp(40000, 53, 1200),
        sixgate_testkit::Ip6::new(client, server6).echo_request(7, 1, 56),
        Ip4::new(server4, pool4).tcp(443, 61002, 100),
        Ip4::new(server4, pool4).icmp_error(
            3,
            1,
            [0; 4],
            &Ip4::new(pool4, server4).udp(61003, 53, 8),
        ),
    ];
    let bell = std::sync::Arc::new(sixgate_xdp::handoff::Doorbell::new().unwrap());
    let (mut p, mut c) = sixgate_xdp::handoff::Ring::new(64, 1500, bell.clone());
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
