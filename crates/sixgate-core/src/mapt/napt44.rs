//! The CE's NAPT44 (RFC 7599 §1, RFC 7597 §5.1: "the CE ... uses a NAPT44 to
//! translate ... into its shared IPv4 address and port set").
//!
//! It is RFC 6146's BIB and session tables, reused rather than written twice:
//! a LAN host's private IPv4 address stands in the tables' "IPv6" column as an
//! IPv4-mapped address (`::ffff:a.b.c.d`), and "pool4" is the CE's one IPv4
//! address with, as its port ranges, the PSID's port set (one pool4 entry per
//! contiguous range). That gives the NAPT44 endpoint-independent mappings, the
//! TCP state machine, expiry FIFOs, bounded tables and RFC 6056 port choice —
//! inside the port set only — for free. What differs is configured: unsolicited
//! inbound SYNs are dropped, not held (a CE has no IPv6 side to wait for), each
//! LAN host is its own subscriber (/128), and there is one worker.
//!
//! The address part of NAPT44 costs nothing extra: the RFC 7915 paths already
//! rewrite the checksums from the private address's pseudo-header to the MAP
//! address's, so only the port changes by hand.

use std::net::Ipv4Addr;

use super::config::CeConfig;
use crate::nat64::{Nat64Config, Pool4Entry, PortRange};

/// Ports below this stay out of the NAPT44's choice (the well-known ports are
/// never handed to a LAN host's outgoing connection, RFC 6056 §2.1).
const FIRST_EPHEMERAL: u16 = 1024;

/// The LAN host `v4` in the tables' IPv6 column (`::ffff:v4`).
#[inline]
pub(crate) fn host_key(v4: u32) -> u128 {
    0xffff_0000_0000 | u128::from(v4)
}

/// The LAN host back out of the tables' IPv6 column.
#[inline]
pub(crate) fn host_of(key: u128) -> u32 {
    key as u32
}

/// NAT64 tables configured as the CE's NAPT44.
pub(crate) fn nat64_config(ce: &CeConfig, hash_key: u64) -> Nat64Config {
    let pool4 = ce
        .bmr
        .port_ranges(ce.psid)
        .filter_map(|(lo, hi)| {
            let lo_l4 = lo.max(FIRST_EPHEMERAL);
            (lo_l4 <= hi).then(|| entry(ce.ipv4, PortRange::new(lo_l4, hi), PortRange::new(lo, hi)))
        })
        .collect();
    Nat64Config {
        pool4,
        drop_external_tcp: true,
        max_held_syns: 1,
        timeouts: ce.napt.timeouts,
        max_sessions: ce.napt.max_sessions.max(1),
        subscriber_prefix_len: 128,
        hash_key,
        ..Nat64Config::default()
    }
}

fn entry(addr: Ipv4Addr, l4: PortRange, icmp: PortRange) -> Pool4Entry {
    Pool4Entry {
        addr,
        prefix_len: 32,
        tcp: l4,
        udp: l4,
        icmp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapt::{MapRule, Napt44Config};

    /// RFC 7597 §5.1: the NAPT44's pool is exactly the PSID's port set.
    #[test]
    fn rfc7597_s5_1_pool_is_the_port_set() {
        let bmr = MapRule::new(
            "2001:db8:ce::".parse().unwrap(),
            51,
            "192.0.2.0".parse().unwrap(),
            24,
            13,
            0,
        )
        .unwrap();
        let ce = CeConfig::new(
            bmr,
            ("2001:db8:ce:11b::".parse().unwrap(), 64),
            ("10.0.0.0".parse().unwrap(), 24),
            Napt44Config::default(),
        )
        .unwrap();
        assert_eq!(ce.ipv4, Ipv4Addr::new(192, 0, 2, 8));
        assert_eq!(ce.psid, 27);
        let c = nat64_config(&ce, 1);
        assert_eq!(c.pool4.len(), 1);
        assert_eq!(c.pool4[0].tcp, PortRange::new(55296, 57343));
        assert_eq!(host_of(host_key(0x0a00_0002)), 0x0a00_0002);
    }
}
