//! RFC 6052 §3.1: which IPv4 addresses are not global.
//!
//! RFC 6052 §3.1 forbids the Well-Known Prefix 64:ff9b::/96 from carrying "non-global
//! IPv4 addresses, such as those defined in RFC 1918 or listed in Section 3 of RFC
//! 5735", and tells translators to drop packets whose address is composed that way.
//! RFC 5735 was obsoleted by RFC 6890, whose IANA IPv4 Special-Purpose Address Registry
//! carries a "Global" column; we treat as non-global every block the registry marks
//! `Global = False`, plus multicast (not a global *unicast* address):
//!
//! | Block               | Name                                  | Source               |
//! |---------------------|---------------------------------------|----------------------|
//! | 0.0.0.0/8           | "This host on this network"           | RFC 1122 §3.2.1.3    |
//! | 10.0.0.0/8          | Private-Use                           | RFC 1918             |
//! | 100.64.0.0/10       | Shared Address Space                  | RFC 6598             |
//! | 127.0.0.0/8         | Loopback                              | RFC 1122 §3.2.1.3    |
//! | 169.254.0.0/16      | Link Local                            | RFC 3927             |
//! | 172.16.0.0/12       | Private-Use                           | RFC 1918             |
//! | 192.0.0.0/24        | IETF Protocol Assignments             | RFC 6890 §2.1        |
//! | 192.0.2.0/24        | Documentation (TEST-NET-1)            | RFC 5737             |
//! | 192.168.0.0/16      | Private-Use                           | RFC 1918             |
//! | 198.18.0.0/15       | Benchmarking                          | RFC 2544             |
//! | 198.51.100.0/24     | Documentation (TEST-NET-2)            | RFC 5737             |
//! | 203.0.113.0/24      | Documentation (TEST-NET-3)            | RFC 5737             |
//! | 224.0.0.0/4         | Multicast (not unicast)               | RFC 5771             |
//! | 240.0.0.0/4         | Reserved                              | RFC 1112 §4          |
//! | 255.255.255.255/32  | Limited Broadcast (inside 240/4)      | RFC 919 §7           |
//!
//! Exceptions inside 192.0.0.0/24 that the registry marks `Global = True`, and which are
//! therefore global here: 192.0.0.9/32 (Port Control Protocol Anycast, RFC 7723) and
//! 192.0.0.10/32 (Traversal Using Relays around NAT Anycast, RFC 8155).
//!
//! 192.88.99.0/24 (6to4 Relay Anycast, RFC 3068, deprecated by RFC 7526) was
//! `Global = True` in RFC 6890 and is treated as global.

use std::net::Ipv4Addr;

/// True if `v4` is not a global unicast address (IANA special-purpose registry).
///
/// See the module documentation for the list and its sources. One `match` on the first
/// octet: cheap enough for the packet path.
pub const fn is_non_global(v4: [u8; 4]) -> bool {
    let [a, b, c, d] = v4;
    match a {
        0 | 10 | 127 => true,
        100 => b & 0xc0 == 64,
        169 => b == 254,
        172 => b & 0xf0 == 16,
        192 => match (b, c) {
            (0, 0) => !matches!(d, 9 | 10),
            (0, 2) | (168, _) => true,
            _ => false,
        },
        198 => b & 0xfe == 18 || (b == 51 && c == 100),
        203 => b == 0 && c == 113,
        224..=255 => true,
        _ => false,
    }
}

/// [`is_non_global`] on an [`Ipv4Addr`].
pub const fn is_non_global_addr(v4: Ipv4Addr) -> bool {
    is_non_global(v4.octets())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ng(s: &str) -> bool {
        is_non_global(s.parse::<Ipv4Addr>().unwrap().octets())
    }

    /// The blocks of the module table: (first, last) address, both non-global, and the
    /// addresses just outside, both global unless another block starts there.
    const BLOCKS: [(&str, &str); 14] = [
        ("0.0.0.0", "0.255.255.255"),
        ("10.0.0.0", "10.255.255.255"),
        ("100.64.0.0", "100.127.255.255"),
        ("127.0.0.0", "127.255.255.255"),
        ("169.254.0.0", "169.254.255.255"),
        ("172.16.0.0", "172.31.255.255"),
        ("192.0.0.0", "192.0.0.255"),
        ("192.0.2.0", "192.0.2.255"),
        ("192.168.0.0", "192.168.255.255"),
        ("198.18.0.0", "198.19.255.255"),
        ("198.51.100.0", "198.51.100.255"),
        ("203.0.113.0", "203.0.113.255"),
        ("224.0.0.0", "239.255.255.255"),
        ("240.0.0.0", "255.255.255.255"),
    ];

    #[test]
    fn rfc6052_s3_1_rfc6890_non_global_blocks() {
        for (first, last) in BLOCKS {
            assert!(ng(first), "{first}");
            assert!(ng(last), "{last}");
        }
        assert!(ng("255.255.255.255"));
        assert!(ng("192.0.0.8")); // RFC 7600 dummy address
        assert!(ng("192.0.0.170")); // RFC 7050 ipv4only.arpa
        assert!(ng("192.0.0.171"));
    }

    #[test]
    fn rfc6052_s3_1_edges_are_global() {
        for a in [
            "1.0.0.0",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "191.255.255.255",
            "192.0.1.0",
            "192.0.3.0",
            "192.88.99.1",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "223.255.255.255",
            "8.8.8.8",
            "1.1.1.1",
        ] {
            assert!(!ng(a), "{a} should be global");
        }
    }

    #[test]
    fn rfc6890_global_exceptions_in_192_0_0_0_24() {
        assert!(!ng("192.0.0.9"), "PCP anycast, RFC 7723");
        assert!(!ng("192.0.0.10"), "TURN anycast, RFC 8155");
        assert!(ng("192.0.0.11"));
        assert!(!is_non_global_addr(Ipv4Addr::new(192, 0, 0, 9)));
    }

    /// Straightforward reference: the table as (network, mask) pairs.
    fn reference(v4: [u8; 4]) -> bool {
        let a = u32::from_be_bytes(v4);
        if a == 0xc000_0009 || a == 0xc000_000a {
            return false;
        }
        BLOCKS.iter().any(|(first, last)| {
            let f = u32::from(first.parse::<Ipv4Addr>().unwrap());
            let l = u32::from(last.parse::<Ipv4Addr>().unwrap());
            (f..=l).contains(&a)
        })
    }

    proptest! {
        #[test]
        fn rfc6052_s3_1_matches_reference(
            a in prop::sample::select(vec![0u8, 1, 10, 100, 127, 169, 172, 192, 198, 203, 223, 224, 240, 255]),
            rest in any::<[u8; 3]>(),
            uniform in any::<[u8; 4]>(),
        ) {
            let v4 = [a, rest[0], rest[1], rest[2]];
            prop_assert_eq!(is_non_global(v4), reference(v4));
            prop_assert_eq!(is_non_global(uniform), reference(uniform));
        }
    }
}
