//! docs/ha.md, "Ownership of pool4": a node sharing state with others creates
//! mappings only on its own shards of pool4.

mod common;

use common::*;
use sixgate_core::nat64::{Nat64Config, Pool4Entry};
use sixgate_core::{Config, DropReason, Verdict};
use sixgate_testkit::Ip6;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

fn config() -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry {
            prefix_len: 30,
            ..Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 0))
        }],
        max_sessions: 4096,
        ..Nat64Config::default()
    });
    cfg
}

/// Pool4 addresses 200 subscribers get.
fn addresses(h: &mut Harness) -> BTreeSet<IpAddr> {
    (0..200u16)
        .map(|i| {
            let client = Ipv6Addr::new(0x2001, 0xdb8, i, 0, 0, 0, 0, 1);
            view(&h.one(&Ip6::new(client, SERVER6).udp(5000, 53, 10))).src
        })
        .collect()
}

fn v4(d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, d))
}

#[test]
fn only_the_owner_allocates() {
    let mut all = Harness::new(config());
    assert_eq!(
        addresses(&mut all),
        [0, 1, 2, 3].map(v4).into(),
        "no sync: all of pool4"
    );

    let mut a = Harness::new(config());
    a.t.set_own_pool4_shards(Some(&[(Ipv4Addr::new(192, 0, 2, 0), 31)]));
    assert_eq!(addresses(&mut a), [0, 1].map(v4).into());

    let mut b = Harness::new(config());
    b.t.set_own_pool4_shards(Some(&[
        (Ipv4Addr::new(192, 0, 2, 2), 32),
        (Ipv4Addr::new(192, 0, 2, 3), 32),
    ]));
    // Kept across a runtime change of the configuration.
    b.t.reconfigure(Arc::new(config())).unwrap();
    assert_eq!(addresses(&mut b), [2, 3].map(v4).into());

    // No shard inside pool4: nothing to allocate on (ICMPv6 address unreachable).
    let mut none = Harness::new(config());
    none.t
        .set_own_pool4_shards(Some(&[(Ipv4Addr::new(203, 0, 113, 0), 24)]));
    let client = Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, 1);
    let (v, _) = none.run(&Ip6::new(client, SERVER6).udp(5000, 53, 10));
    assert!(
        matches!(
            v,
            Verdict::Replied(DropReason::Pool4Exhausted)
                | Verdict::Dropped(DropReason::Pool4Exhausted)
        ),
        "{v:?}"
    );

    // Lifted again.
    none.t.set_own_pool4_shards(None);
    assert_eq!(
        none.run(&Ip6::new(client, SERVER6).udp(5000, 53, 10)).0,
        Verdict::Translated
    );
}
