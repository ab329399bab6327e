//! Software segmentation of a GSO super-packet, for the super-packets that cannot
//! be translated as one (see [`crate::pipeline`]): each segment is rebuilt as a
//! standalone packet with complete checksums, exactly as the kernel's own GSO
//! would have sent it, and then translated on its own.
//!
//! TCP (RFC 9293): every segment carries the headers of the super-packet with the
//! sequence number advanced by the payload before it; FIN and PSH only on the
//! last segment, CWR only on the first. UDP (USO): every segment is a datagram of
//! its own with its own length. IPv4 Identification advances by one per segment.

use sixgate_core::checksum;
use sixgate_core::packet::proto::{TCP, UDP};

use crate::vnet::{Gso, VnetHdr};

/// How a super-packet splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Offset of the transport header.
    pub l4_off: usize,
    /// Bytes of all headers (IP + transport).
    pub hdrs: usize,
    /// Payload bytes per segment.
    pub mss: usize,
    /// TCP (else UDP).
    pub tcp: bool,
    /// IPv6 (else IPv4).
    pub v6: bool,
    /// Number of segments.
    pub count: usize,
}

/// Why a super-packet cannot be segmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// A GSO type sixgate does not enable (UFO) or does not know.
    GsoType,
    /// Headers inconsistent with the GSO type or the packet length.
    Malformed,
    /// IPv6 extension headers before the transport header.
    ExtensionHeaders,
}

/// Work out how `pkt` (described by `hdr`) splits into segments.
pub fn plan(pkt: &[u8], hdr: &VnetHdr) -> Result<Plan, Unsupported> {
    let tcp = match hdr.gso() {
        Gso::TcpV4 | Gso::TcpV6 => true,
        Gso::UdpL4 => false,
        Gso::None | Gso::Other(_) => return Err(Unsupported::GsoType),
    };
    let want = if tcp { TCP } else { UDP };
    let (v6, l4_off) = match pkt.first().map(|b| b >> 4) {
        Some(4) if pkt.len() >= 20 => {
            let ihl = usize::from(pkt[0] & 15) * 4;
            if ihl < 20 || pkt[9] != want || matches!(hdr.gso(), Gso::TcpV6) {
                return Err(Unsupported::Malformed);
            }
            (false, ihl)
        }
        Some(6) if pkt.len() >= 40 => {
            if matches!(hdr.gso(), Gso::TcpV4) {
                return Err(Unsupported::Malformed);
            }
            if pkt[6] != want {
                return Err(Unsupported::ExtensionHeaders);
            }
            (true, 40)
        }
        _ => return Err(Unsupported::Malformed),
    };
    let l4_hlen = if tcp {
        let doff = pkt.get(l4_off + 12).ok_or(Unsupported::Malformed)? >> 4;
        usize::from(doff) * 4
    } else {
        8
    };
    let hdrs = l4_off + l4_hlen;
    let mss = usize::from(hdr.gso_size);
    if l4_hlen < 8 || hdrs > pkt.len() || mss == 0 {
        return Err(Unsupported::Malformed);
    }
    let payload = pkt.len() - hdrs;
    Ok(Plan {
        l4_off,
        hdrs,
        mss,
        tcp,
        v6,
        count: payload.div_ceil(mss).max(1),
    })
}

/// Write segment `i` of `pkt` into `out` (which must hold `p.hdrs + p.mss` bytes)
/// and return its length.
pub fn segment(pkt: &[u8], p: &Plan, i: usize, out: &mut [u8]) -> usize {
    let first = i == 0;
    let last = i + 1 == p.count;
    let from = p.hdrs + i * p.mss;
    let to = (from + p.mss).min(pkt.len());
    let chunk = &pkt[from.min(to)..to];
    let len = p.hdrs + chunk.len();
    out[..p.hdrs].copy_from_slice(&pkt[..p.hdrs]);
    out[p.hdrs..len].copy_from_slice(chunk);
    let l4_len = len - p.l4_off;

    // IP header: length (and for IPv4, Identification and the header checksum).
    let pseudo = if p.v6 {
        out[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
        checksum::v6_pseudo(
            &out[8..24].try_into().unwrap(),
            &out[24..40].try_into().unwrap(),
            l4_len as u32,
            if p.tcp { TCP } else { UDP },
        )
    } else {
        out[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        let id = u16::from_be_bytes([out[4], out[5]]).wrapping_add(i as u16);
        out[4..6].copy_from_slice(&id.to_be_bytes());
        out[10..12].copy_from_slice(&[0, 0]);
        let c = !checksum::sum(&out[..p.l4_off]);
        out[10..12].copy_from_slice(&c.to_be_bytes());
        checksum::v4_pseudo(
            &out[12..16].try_into().unwrap(),
            &out[16..20].try_into().unwrap(),
            l4_len as u16,
            if p.tcp { TCP } else { UDP },
        )
    };

    let l4 = &mut out[p.l4_off..len];
    let at = if p.tcp {
        let seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]).wrapping_add((i * p.mss) as u32);
        l4[4..8].copy_from_slice(&seq.to_be_bytes());
        const FIN: u8 = 0x01;
        const PSH: u8 = 0x08;
        const CWR: u8 = 0x80;
        if !last {
            l4[13] &= !(FIN | PSH);
        }
        if !first {
            l4[13] &= !CWR;
        }
        16
    } else {
        l4[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        6
    };
    l4[at..at + 2].copy_from_slice(&[0, 0]);
    let mut c = checksum::compute(pseudo, l4);
    if !p.tcp && c == 0 {
        c = 0xffff;
    }
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vnet::{F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4};
    use sixgate_testkit::{Ip4, Ip6, L4};

    fn hdr(gso_type: u8, gso_size: u16, csum_start: u16, csum_offset: u16) -> VnetHdr {
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: 0,
            gso_size,
            csum_start,
            csum_offset,
        }
    }

    fn all(pkt: &[u8], h: &VnetHdr) -> Vec<Vec<u8>> {
        let p = plan(pkt, h).unwrap();
        let mut out = vec![0u8; p.hdrs + p.mss];
        (0..p.count)
            .map(|i| {
                let n = segment(pkt, &p, i, &mut out);
                out[..n].to_vec()
            })
            .collect()
    }

    #[test]
    fn tcp_v4_segments_verify_and_continue_the_sequence() {
        let big = Ip4::new([192, 0, 2, 1].into(), [198, 51, 100, 2].into())
            .id(100)
            .tcp(1000, 80, 4000);
        let segs = all(&big, &hdr(GSO_TCPV4, 1448, 20, 16));
        assert_eq!(segs.len(), 3);
        let mut payload = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let v = sixgate_testkit::check(s).unwrap();
            assert!(v.l4_verified, "segment {i}");
            assert_eq!(v.ipv4_id, Some(100 + i as u16));
            let seq0 = u32::from_be_bytes(big[24..28].try_into().unwrap());
            let seq = u32::from_be_bytes(s[24..28].try_into().unwrap());
            assert_eq!(seq, seq0.wrapping_add(1448 * i as u32));
            assert!(matches!(v.l4, L4::Tcp { .. }));
            payload.extend_from_slice(&s[40..]);
        }
        assert_eq!(payload, &big[40..]);
        assert_eq!(segs[2].len(), 40 + 4000 - 2 * 1448);
    }

    #[test]
    fn tcp_flags_fin_psh_last_cwr_first() {
        let mut big = Ip6::new(
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        )
        .tcp(1, 2, 300);
        big[40 + 13] |= 0x01 | 0x08 | 0x80;
        let segs = all(&big, &hdr(GSO_TCPV6, 100, 40, 16));
        assert_eq!(segs.len(), 3);
        assert_eq!(segs[0][53] & 0x89, 0x80);
        assert_eq!(segs[1][53] & 0x89, 0x00);
        assert_eq!(segs[2][53] & 0x89, 0x09);
        for s in &segs {
            assert!(sixgate_testkit::check(s).unwrap().l4_verified);
        }
    }

    #[test]
    fn udp_segments_are_datagrams() {
        let big = Ip6::new(
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        )
        .udp(5000, 6000, 2500);
        let segs = all(&big, &hdr(GSO_UDP_L4, 1000, 40, 6));
        assert_eq!(segs.len(), 3);
        for s in &segs {
            let v = sixgate_testkit::check(s).unwrap();
            assert!(v.l4_verified);
            assert_eq!(v.ports(), Some((5000, 6000)));
        }
        assert_eq!(segs[2].len(), 48 + 500);
        let v4 = Ip4::new([192, 0, 2, 1].into(), [198, 51, 100, 2].into()).udp(1, 2, 10);
        assert_eq!(all(&v4, &hdr(GSO_UDP_L4, 1000, 20, 6)).len(), 1);
    }

    #[test]
    fn refusals() {
        let v6 = Ip6::new(
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        let tcp6 = v6.clone().tcp(1, 2, 100);
        assert_eq!(
            plan(&tcp6, &hdr(GSO_TCPV4, 10, 40, 16)),
            Err(Unsupported::Malformed)
        );
        assert_eq!(plan(&tcp6, &hdr(3, 10, 40, 16)), Err(Unsupported::GsoType));
        assert_eq!(
            plan(&tcp6, &hdr(GSO_TCPV6, 0, 40, 16)),
            Err(Unsupported::Malformed)
        );
        let ext = v6.hop_by_hop().tcp(1, 2, 100);
        assert_eq!(
            plan(&ext, &hdr(GSO_TCPV6, 10, 48, 16)),
            Err(Unsupported::ExtensionHeaders)
        );
        assert_eq!(
            plan(&[0x45; 10], &hdr(GSO_TCPV4, 10, 20, 16)),
            Err(Unsupported::Malformed)
        );
    }
}
