//! RFC 7050 (updated by RFC 8880): learning the PLAT's translation prefix
//! (Pref64::/n) from the AAAA records a DNS64 synthesizes for `ipv4only.arpa`.
//!
//! `ipv4only.arpa` has only A records, 192.0.0.170 and 192.0.0.171 (RFC 7050 §2,
//! RFC 8880 §2). Behind a DNS64 its AAAA records are those two addresses embedded in
//! the network's RFC 6052 prefix, so where the address sits tells the prefix and its
//! length (RFC 7050 §3). This module is the pure part: records in, prefixes out.
//! Asking the DNS server is the daemon's job.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::rfc6052::{Rfc6052Prefix, VALID_LENGTHS};

/// RFC 7050 §2 / RFC 8880 §2: the Well-Known IPv4-only Name.
pub const WELL_KNOWN_NAME: &str = "ipv4only.arpa";

/// RFC 7050 §2: the first Well-Known IPv4 Address of [`WELL_KNOWN_NAME`].
pub const WKA_PRIMARY: Ipv4Addr = Ipv4Addr::new(192, 0, 0, 170);

/// RFC 7050 §2: the second Well-Known IPv4 Address.
pub const WKA_SECONDARY: Ipv4Addr = Ipv4Addr::new(192, 0, 0, 171);

/// Is `v4` one of the two Well-Known IPv4 Addresses?
pub fn is_wka(v4: Ipv4Addr) -> bool {
    v4 == WKA_PRIMARY || v4 == WKA_SECONDARY
}

/// RFC 7050 §3: the RFC 6052 prefix under which `aaaa` carries a Well-Known
/// IPv4 Address, if any. Every length of RFC 6052 §2.2 is tried, from /32 to /96.
///
/// A position counts only if the address is exactly what RFC 6052 §2.2 builds
/// from that prefix and the WKA: the "u" octet and the suffix zero, as a DNS64
/// synthesizes them (RFC 6147 §5.2). That also settles RFC 7050 §3's case of a WKA
/// found at several positions of one address: the WKA ends in a non-zero octet
/// (0xaa or 0xab), and every longer RFC 6052 length puts its last IPv4 octet
/// further right, inside the suffix of every shorter one, so at most one length
/// can match.
pub fn prefix_of(aaaa: Ipv6Addr) -> Option<Rfc6052Prefix> {
    let bits = u128::from(aaaa);
    VALID_LENGTHS.into_iter().find_map(|len| {
        let mask = u128::MAX << (128 - u32::from(len));
        // The u octet of /64 and /96 lies inside the prefix: `new` refuses it set.
        let prefix = Rfc6052Prefix::new(Ipv6Addr::from(bits & mask), len).ok()?;
        let v4 = prefix.extract(aaaa)?;
        (is_wka(v4) && prefix.embed(v4) == aaaa).then_some(prefix)
    })
}

/// RFC 7050 §3: every distinct Pref64::/n that the AAAA records of
/// `ipv4only.arpa` reveal, in the order of the answer. Records with no WKA at an
/// RFC 6052 position are ignored. Empty: the network synthesizes nothing, so there
/// is no NAT64 to discover (§3: a negative answer means none).
///
/// RFC 7050 §3 lets a network announce more than one prefix; a node that can use
/// only one takes the first, which is what the daemon does.
pub fn discover(records: &[Ipv6Addr]) -> Vec<Rfc6052Prefix> {
    let mut out: Vec<Rfc6052Prefix> = Vec::new();
    for p in records.iter().filter_map(|&r| prefix_of(r)) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }
    fn p(s: &str) -> Rfc6052Prefix {
        s.parse().unwrap()
    }

    #[test]
    fn rfc7050_s2_well_known_addresses() {
        assert!(is_wka(Ipv4Addr::new(192, 0, 0, 170)));
        assert!(is_wka(Ipv4Addr::new(192, 0, 0, 171)));
        assert!(!is_wka(Ipv4Addr::new(192, 0, 0, 172)));
        assert_eq!(WELL_KNOWN_NAME, "ipv4only.arpa");
    }

    #[test]
    fn rfc7050_s3_well_known_prefix() {
        assert_eq!(prefix_of(a("64:ff9b::c000:aa")), Some(p("64:ff9b::/96")));
        assert_eq!(prefix_of(a("64:ff9b::c000:ab")), Some(p("64:ff9b::/96")));
        assert_eq!(
            discover(&[a("64:ff9b::c000:aa"), a("64:ff9b::c000:ab")]),
            vec![p("64:ff9b::/96")]
        );
    }

    /// RFC 7050 §3 with every length of RFC 6052 §2.2: the WKA is found where the
    /// Figure 1 layout puts it, around the u octet.
    #[test]
    fn rfc7050_s3_every_rfc6052_length() {
        for len in VALID_LENGTHS {
            let prefix = Rfc6052Prefix::new(a("2001:db8:122:344::"), len)
                .or_else(|_| Rfc6052Prefix::new(a("2001:db8:122::"), len))
                .or_else(|_| Rfc6052Prefix::new(a("2001:db8::"), len))
                .unwrap();
            for wka in [WKA_PRIMARY, WKA_SECONDARY] {
                let aaaa = prefix.embed(wka);
                assert_eq!(prefix_of(aaaa), Some(prefix), "/{len}: {aaaa}");
            }
        }
        // The RFC 6052 §2.4 examples, with the WKA instead of 192.0.2.33.
        assert_eq!(prefix_of(a("2001:db8:c000:aa::")), Some(p("2001:db8::/32")));
        assert_eq!(
            prefix_of(a("2001:db8:1c0:0:aa::")),
            Some(p("2001:db8:100::/40"))
        );
        assert_eq!(
            prefix_of(a("2001:db8:122:c000:0:aa00::")),
            Some(p("2001:db8:122::/48"))
        );
        assert_eq!(
            prefix_of(a("2001:db8:122:3c0:0:aa::")),
            Some(p("2001:db8:122:300::/56"))
        );
        assert_eq!(
            prefix_of(a("2001:db8:122:344:c0:0:aa00:0")),
            Some(p("2001:db8:122:344::/64"))
        );
    }

    /// RFC 7050 §3: records that do not carry a WKA at an RFC 6052 position are
    /// ignored; the others still count.
    #[test]
    fn rfc7050_s3_non_matching_records_are_ignored() {
        let records = [
            a("2001:db8::1"),                   // an ordinary AAAA
            a("64:ff9b::c000:ac"),              // 192.0.0.172: not a WKA
            a("2001:db8:122:344:c0:0:aa00:1"),  // /64 with a suffix that is not zero
            a("2001:db8:122:344:1c0:0:aa00:0"), // /64 with the u octet set
            a("2001:db8:64::c000:ab"),
        ];
        assert_eq!(discover(&records), vec![p("2001:db8:64::/96")]);
        assert_eq!(discover(&records[..4]), vec![]);
        assert_eq!(discover(&[]), vec![]);
    }

    /// RFC 7050 §3: a network may announce several prefixes; all are returned,
    /// in answer order, each once.
    #[test]
    fn rfc7050_s3_several_prefixes_in_answer_order() {
        let records = [
            a("2001:db8:64::c000:aa"),
            a("64:ff9b::c000:aa"),
            a("2001:db8:64::c000:ab"),
            a("2001:db8:122:344:c0:0:aa00:0"),
        ];
        assert_eq!(
            discover(&records),
            vec![
                p("2001:db8:64::/96"),
                p("64:ff9b::/96"),
                p("2001:db8:122:344::/64")
            ]
        );
    }

    /// RFC 7050 §3's "WKA at more than one position" cannot survive the RFC 6052
    /// §2.2 zero-suffix check: a prefix whose own bits spell the WKA at /32 gives
    /// only its real length.
    #[test]
    fn rfc7050_s3_one_position_per_address() {
        // The /64 prefix 2001:db8:c000:aa::/64 holds the WKA at the /32 position too.
        let prefix = p("2001:db8:c000:aa::/64");
        let aaaa = prefix.embed(WKA_PRIMARY);
        assert_eq!(prefix_of(aaaa), Some(prefix));
        // The prefix alone (nothing embedded past /32) reads as /32.
        assert_eq!(prefix_of(a("2001:db8:c000:aa::")), Some(p("2001:db8::/32")));
    }
}
