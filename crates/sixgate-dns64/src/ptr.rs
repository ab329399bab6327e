//! RFC 6147 §5.3.1: PTR queries for addresses under a synthesis prefix. The
//! IPv6 address is the DNS64's own invention, so no ip6.arpa zone knows it; the
//! DNS64 answers with a CNAME to the in-addr.arpa name of the embedded IPv4
//! address and lets that name be resolved as usual.

use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::rr::Name;

use crate::synth::Policy;

/// TTL of the synthesized CNAME, seconds. Nothing upstream bounds it; it is
/// derived from configuration only, so one day would do, but a changed prefix
/// should not linger: the same 600 s as §5.1.7's cap without SOA.
pub const CNAME_TTL: u32 = 600;

/// The IPv6 address a full ip6.arpa name (32 nibble labels) stands for.
pub fn ip6_arpa_address(name: &Name) -> Option<Ipv6Addr> {
    let labels: Vec<&[u8]> = name.iter().collect();
    if labels.len() != 34
        || !labels[32].eq_ignore_ascii_case(b"ip6")
        || !labels[33].eq_ignore_ascii_case(b"arpa")
    {
        return None;
    }
    let mut v: u128 = 0;
    // The least significant nibble comes first.
    for (i, l) in labels[..32].iter().enumerate() {
        let [c] = l else { return None };
        let d = (*c as char).to_digit(16)? as u128;
        v |= d << (4 * i);
    }
    Some(Ipv6Addr::from(v))
}

/// `d.c.b.a.in-addr.arpa.` for `a.b.c.d`.
pub fn in_addr_arpa(v4: Ipv4Addr) -> Name {
    let [a, b, c, d] = v4.octets();
    Name::from_ascii(format!("{d}.{c}.{b}.{a}.in-addr.arpa.")).expect("a valid name")
}

/// RFC 6147 §5.3.1: the CNAME target for a PTR query name, if the name is an
/// address under one of the prefixes (and not in the exclusion set).
pub fn cname_target(name: &Name, policy: &Policy) -> Option<Name> {
    let v6 = ip6_arpa_address(name)?;
    policy.extract(v6).map(in_addr_arpa)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(p: &str) -> Policy {
        Policy {
            prefixes: vec![p.parse().unwrap()],
            exclude: vec![],
            exclude_ipv4: vec![],
        }
    }

    fn ip6_arpa(a: Ipv6Addr) -> Name {
        let mut s = String::new();
        for i in 0..32 {
            s.push_str(&format!("{:x}.", (u128::from(a) >> (4 * i)) & 0xf));
        }
        s.push_str("ip6.arpa.");
        Name::from_ascii(s).unwrap()
    }

    #[test]
    fn rfc6147_s5_3_1_ptr_under_prefix_is_cname_to_in_addr_arpa() {
        let p = policy("64:ff9b::/96");
        let name = ip6_arpa("64:ff9b::c000:221".parse().unwrap());
        assert_eq!(
            cname_target(&name, &p),
            Some(Name::from_ascii("33.2.0.192.in-addr.arpa.").unwrap())
        );
    }

    #[test]
    fn rfc6147_s5_3_1_every_rfc6052_length() {
        for len in [32, 40, 48, 56, 64, 96] {
            let p: sixgate_core::addr::Rfc6052Prefix = format!("2001:db8:100::/{len}")
                .replace("2001:db8:100::/32", "2001:db8::/32")
                .parse()
                .unwrap();
            let pol = Policy {
                prefixes: vec![p],
                exclude: vec![],
                exclude_ipv4: vec![],
            };
            let v4 = Ipv4Addr::new(198, 51, 100, 7);
            let name = ip6_arpa(p.embed(v4));
            assert_eq!(cname_target(&name, &pol), Some(in_addr_arpa(v4)), "/{len}");
        }
    }

    #[test]
    fn rfc6147_s5_3_1_names_outside_the_prefix_are_not_ours() {
        let p = policy("64:ff9b::/96");
        assert_eq!(
            cname_target(&ip6_arpa("2001:db8::1".parse().unwrap()), &p),
            None
        );
        // A partial name (a /64 delegation point) is not an address.
        let partial = Name::from_ascii("0.0.0.0.0.0.0.0.b.9.f.f.4.6.0.0.ip6.arpa.").unwrap();
        assert_eq!(cname_target(&partial, &p), None);
        let bad = Name::from_ascii(format!("{}ip6.arpa.", "g.".repeat(32))).unwrap();
        assert_eq!(ip6_arpa_address(&bad), None);
    }
}
