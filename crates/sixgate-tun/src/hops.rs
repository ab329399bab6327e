//! One router hop through the TUN data plane (RFC 7915 §4.1, §5.1: the
//! translator decrements the TTL / Hop Limit once, and answers Time
//! Exceeded when it runs out).
//!
//! A packet on the TUN data plane crosses the gateway's kernel twice: its
//! forwarding decrements the hop count on the way into the TUN device, and
//! again on the way out of it, besides the translator's own decrement. That
//! made the gateway three hops (traceroute showed it so) and a packet that
//! came with hop limit 2 was answered Time Exceeded by the translator
//! instead of leaving with hop limit 1, where the fast path, the AF_XDP data
//! plane and `sixgate translate` decrement once. So the TUN data plane gives
//! both back: a packet read from the device gets one (the kernel took it
//! forwarding it in), a packet written to it gets one (the kernel takes it
//! forwarding it out). What the gateway's kernel answers itself stays its
//! own: a packet that arrives with hop limit 1 is answered Time Exceeded by
//! the kernel before it reaches the device, as one hop answers.
//!
//! Limits (docs/architecture.md, "Translation choices"): a packet the
//! gateway itself sends into the device (not forwarded) gains one; a
//! written packet with hop count 255 cannot gain one and leaves with 254.

/// Add one to the IPv4 TTL (header checksum updated, RFC 1624) or the IPv6
/// Hop Limit of `p`, unless it is 255 or `p` is not an IP header.
pub fn give_back(p: &mut [u8]) {
    match p.first().map(|b| b >> 4) {
        Some(4) if p.len() >= 20 => {
            if p[8] == 255 {
                return;
            }
            // The 16-bit word TTL|protocol grows by 0x0100: HC' = ~(~HC + ~m + m').
            let old = u16::from_be_bytes([p[8], p[9]]);
            p[8] += 1;
            let new = u16::from_be_bytes([p[8], p[9]]);
            let hc = u16::from_be_bytes([p[10], p[11]]);
            let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
            sum = (sum & 0xffff) + (sum >> 16);
            sum = (sum & 0xffff) + (sum >> 16);
            p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        }
        Some(6) if p.len() >= 40 => p[7] = p[7].saturating_add(1),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sixgate_testkit::{Ip4, Ip6};
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// RFC 7915 §4.1 / §5.1 through the TUN device: one given back, the
    /// IPv4 header checksum still right, 255 left alone.
    #[test]
    fn rfc7915_s4_1_s5_1_give_back_keeps_the_header_checksum() {
        for ttl in [1u8, 2, 63, 254, 255] {
            let mut p = Ip4::new(Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 18, 0, 9))
                .ttl(ttl)
                .udp(1, 2, 10);
            give_back(&mut p);
            let want = Ip4::new(Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 18, 0, 9))
                .ttl(ttl.saturating_add(1))
                .udp(1, 2, 10);
            assert_eq!(p, want, "ttl {ttl}");
        }
        let mut p = Ip6::new(Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED)
            .hop_limit(7)
            .udp(1, 2, 3);
        give_back(&mut p);
        assert_eq!(p[7], 8);
        p[7] = 255;
        give_back(&mut p);
        assert_eq!(p[7], 255);
        give_back(&mut []);
    }
}
