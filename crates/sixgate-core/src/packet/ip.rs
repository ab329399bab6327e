//! Either IP version's fixed header at the start of a packet, for the data
//! planes that look at a packet before or after translating it (offload
//! decisions, next hops) without re-reading byte offsets. No checks beyond
//! the header's length: the translator checks the rest.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use zerocopy::FromBytes;

use super::ipv4::Ipv4Header;
use super::ipv6::{self, Ipv6Header};

/// The fixed IP header of a packet.
#[derive(Clone, Copy, Debug)]
pub enum IpHeader<'a> {
    /// RFC 791 §3.1.
    V4(&'a Ipv4Header),
    /// RFC 8200 §3.
    V6(&'a Ipv6Header),
}

impl<'a> IpHeader<'a> {
    /// The header at the start of `p`, by its version field; `None` for
    /// another version or a packet too short for the fixed header.
    #[inline]
    pub fn of(p: &'a [u8]) -> Option<IpHeader<'a>> {
        match p.first()? >> 4 {
            4 => Ipv4Header::ref_from_prefix(p)
                .ok()
                .map(|(h, _)| IpHeader::V4(h)),
            6 => Ipv6Header::ref_from_prefix(p)
                .ok()
                .map(|(h, _)| IpHeader::V6(h)),
            _ => None,
        }
    }

    /// The length the header claims for the whole packet (IPv4 Total Length,
    /// IPv6 40 + Payload Length).
    #[inline]
    pub fn declared_len(&self) -> usize {
        match self {
            IpHeader::V4(h) => usize::from(h.total_len.get()),
            IpHeader::V6(h) => ipv6::HEADER_LEN + usize::from(h.payload_len.get()),
        }
    }

    /// The destination address.
    #[inline]
    pub fn dst(&self) -> IpAddr {
        match self {
            IpHeader::V4(h) => IpAddr::V4(Ipv4Addr::from(h.dst)),
            IpHeader::V6(h) => IpAddr::V6(Ipv6Addr::from(h.dst)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 791 §3.1 and RFC 8200 §3: version, lengths and destination read
    /// from the fixed headers; a short packet or version 5 has none.
    #[test]
    fn rfc791_and_rfc8200_fixed_headers() {
        let mut v4 = [0u8; 20];
        v4[0] = 0x45;
        v4[2..4].copy_from_slice(&1500u16.to_be_bytes());
        v4[16..20].copy_from_slice(&[192, 0, 2, 1]);
        let h = IpHeader::of(&v4).unwrap();
        assert_eq!(h.declared_len(), 1500);
        assert_eq!(h.dst(), IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[4..6].copy_from_slice(&8u16.to_be_bytes());
        v6[39] = 1;
        let h = IpHeader::of(&v6).unwrap();
        assert_eq!(h.declared_len(), 48);
        assert_eq!(h.dst(), IpAddr::V6(Ipv6Addr::from(1u128)));
        assert!(IpHeader::of(&v4[..19]).is_none());
        assert!(IpHeader::of(&[0x50; 40]).is_none());
    }
}
