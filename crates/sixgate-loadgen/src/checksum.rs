//! The UDP checksum for the raw-socket sender (RFC 768 / RFC 8200 §8.1): the
//! kernel fills it in for UDP sockets, but a raw socket sends what it is given.
//! The arithmetic is sixgate-core's (RFC 1071); this module only adds the
//! pseudo-header for either family and the "zero is sent as 0xffff" rule.

use sixgate_core::checksum::{fold, sum, v4_pseudo, v6_pseudo};
use std::net::IpAddr;

/// The checksum of a UDP datagram (`udp`: header with a zero checksum field, then
/// the payload) from `src` to `dst`. Both addresses must be of one family. A
/// computed zero is sent as 0xffff (zero means "no checksum" in IPv4 and is
/// invalid in IPv6).
pub fn udp(src: IpAddr, dst: IpAddr, udp: &[u8]) -> u16 {
    finish(partial(src, dst, udp))
}

/// The unfolded sum behind [`udp`]: pseudo-header plus datagram. Adding a
/// 16-bit field value to it and calling [`finish`] gives the checksum with that
/// field set (the sender adds each packet's source port this way).
pub fn partial(src: IpAddr, dst: IpAddr, udp: &[u8]) -> u64 {
    let udp_proto = libc::IPPROTO_UDP as u8;
    let pseudo = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            v4_pseudo(&s.octets(), &d.octets(), udp.len() as u16, udp_proto)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            v6_pseudo(&s.octets(), &d.octets(), udp.len() as u32, udp_proto)
        }
        _ => panic!("checksum::partial: mixed address families"),
    };
    u64::from(pseudo) + u64::from(sum(udp))
}

/// The IPv4 header checksum of `header` (its checksum field zero).
pub fn ipv4_header(header: &[u8]) -> u16 {
    !sum(header)
}

/// Fold and complement a sum into the checksum field value.
pub fn finish(acc: u64) -> u16 {
    match !fold(acc) {
        0 => 0xffff,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::UdpHeader;

    fn datagram(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(&sport.to_be_bytes());
        d.extend_from_slice(&dport.to_be_bytes());
        d.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend_from_slice(payload);
        d
    }

    #[test]
    fn matches_etherparse_ipv6() {
        let src: std::net::Ipv6Addr = "2001:db8:1::5".parse().unwrap();
        let dst: std::net::Ipv6Addr = "2001:db8:64::c633:6407".parse().unwrap();
        for (sport, len) in [(1024u16, 18usize), (65535, 0), (40000, 1), (7, 1231)] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let h = UdpHeader {
                source_port: sport,
                destination_port: 9,
                length: (8 + len) as u16,
                checksum: 0,
            };
            let want = h
                .calc_checksum_ipv6_raw(src.octets(), dst.octets(), &payload)
                .unwrap();
            let got = udp(src.into(), dst.into(), &datagram(sport, 9, &payload));
            assert_eq!(got, want, "sport {sport} len {len}");
            // The per-packet path: the sum without the port, plus the port.
            let base = partial(src.into(), dst.into(), &datagram(0, 9, &payload));
            assert_eq!(finish(base + u64::from(sport)), want);
        }
    }

    #[test]
    fn ipv4_header_checksum() {
        // RFC 1071 example header (checksum field zeroed): 0xb861.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_header(&h), 0xb861);
    }

    #[test]
    fn matches_etherparse_ipv4() {
        let src: std::net::Ipv4Addr = "198.51.100.7".parse().unwrap();
        let dst: std::net::Ipv4Addr = "198.18.0.5".parse().unwrap();
        for (sport, len) in [(1024u16, 18usize), (9, 0), (33333, 3)] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 13 + 1) as u8).collect();
            let h = UdpHeader {
                source_port: sport,
                destination_port: 5001,
                length: (8 + len) as u16,
                checksum: 0,
            };
            let want = h
                .calc_checksum_ipv4_raw(src.octets(), dst.octets(), &payload)
                .unwrap();
            let got = udp(src.into(), dst.into(), &datagram(sport, 5001, &payload));
            assert_eq!(got, want, "sport {sport} len {len}");
        }
    }
}
