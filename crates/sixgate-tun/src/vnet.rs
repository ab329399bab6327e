//! The virtio-net header (`struct virtio_net_hdr`, virtio 1.x §5.1.6) that a TUN
//! queue opened with `IFF_VNET_HDR` puts in front of every packet, in both
//! directions, and the rules for rewriting it when the packet behind it is
//! translated.
//!
//! Layout (10 bytes, the size TUN uses unless told otherwise; fields in the
//! host's byte order for a legacy/native-endian TUN, which is the default):
//!
//! | byte | field | meaning |
//! |---|---|---|
//! | 0 | `flags` | `NEEDS_CSUM`: the TCP/UDP checksum is partial (see below); `DATA_VALID`: the checksum was verified |
//! | 1 | `gso_type` | `NONE`, `TCPV4`, `TCPV6`, `UDP_L4` (+ `ECN` bit): a super-packet to be cut into `gso_size` pieces |
//! | 2–3 | `hdr_len` | bytes of headers (a hint: Linux reports its linear length) |
//! | 4–5 | `gso_size` | payload bytes per segment |
//! | 6–7 | `csum_start` | where checksumming starts: the transport header |
//! | 8–9 | `csum_offset` | where, from `csum_start`, the checksum goes: 16 (TCP), 6 (UDP) |
//!
//! With `NEEDS_CSUM` the checksum field holds the folded pseudo-header sum, not
//! complemented (Linux `CHECKSUM_PARTIAL`): whoever finishes it sums from
//! `csum_start` to the end and stores the complement.

use sixgate_core::checksum;

/// Bytes of the header TUN uses by default (`TUNSETVNETHDRSZ` not called).
pub const LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`.
pub const F_DATA_VALID: u8 = 2;

/// `VIRTIO_NET_HDR_GSO_NONE`.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_UDP` (UFO, IP fragmentation; never enabled by sixgate).
pub const GSO_UDP: u8 = 3;
/// `VIRTIO_NET_HDR_GSO_TCPV6`.
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_UDP_L4` (USO: UDP segmentation, either family).
pub const GSO_UDP_L4: u8 = 5;
/// `VIRTIO_NET_HDR_GSO_ECN` (a flag on the TCP types: CWR seen).
pub const GSO_ECN: u8 = 0x80;

/// Transport header offsets of the checksum field.
pub const TCP_CSUM_OFFSET: u16 = 16;
/// UDP checksum field offset.
pub const UDP_CSUM_OFFSET: u16 = 6;

/// A decoded `virtio_net_hdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// `F_NEEDS_CSUM`, `F_DATA_VALID`.
    pub flags: u8,
    /// `GSO_*`, possibly with `GSO_ECN`.
    pub gso_type: u8,
    /// Header bytes (a hint).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Offset of the transport header (where checksumming starts).
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: u16,
}

/// What kind of segmentation a super-packet asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gso {
    /// Not a super-packet.
    None,
    /// TCP segmentation (TSO) over IPv4.
    TcpV4,
    /// TCP segmentation over IPv6.
    TcpV6,
    /// UDP segmentation (USO), either family.
    UdpL4,
    /// Something sixgate does not handle (UFO, unknown types).
    Other(u8),
}

impl VnetHdr {
    /// The header for a packet with nothing offloaded.
    pub const PLAIN: VnetHdr = VnetHdr {
        flags: 0,
        gso_type: GSO_NONE,
        hdr_len: 0,
        gso_size: 0,
        csum_start: 0,
        csum_offset: 0,
    };

    /// Decode (host byte order, as TUN uses by default).
    pub fn decode(b: &[u8; LEN]) -> VnetHdr {
        let u = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        }
    }

    /// Encode (host byte order).
    pub fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }

    /// True when the transport checksum is partial (`NEEDS_CSUM`).
    pub fn needs_csum(&self) -> bool {
        self.flags & F_NEEDS_CSUM != 0
    }

    /// The segmentation asked for.
    pub fn gso(&self) -> Gso {
        match self.gso_type & !GSO_ECN {
            GSO_NONE => Gso::None,
            GSO_TCPV4 => Gso::TcpV4,
            GSO_TCPV6 => Gso::TcpV6,
            GSO_UDP_L4 => Gso::UdpL4,
            other => Gso::Other(other),
        }
    }

    /// The header for the translation of a packet this header described.
    ///
    /// `delta` is how many bytes the IP header(s) grew (IPv4→IPv6: +20) or shrank
    /// (−20, more when IPv6 extension headers were dropped); the transport header
    /// and payload are unchanged and simply moved. `out_v6` is the family of the
    /// output. Rules:
    ///
    /// - `csum_start` and `hdr_len` shift by `delta`; `csum_offset` stays;
    /// - `gso_type` follows the output family for TCP (`TCPV4` ↔ `TCPV6`, the ECN
    ///   bit kept); `UDP_L4` is family-neutral and stays;
    /// - TCP `gso_size` shrinks by `delta` when headers grew, so that each segment
    ///   on the wire is as long as the sender made it for its path (a 1500-byte
    ///   IPv4 segment stays a 1500-byte IPv6 segment, carrying 20 bytes less).
    ///   When headers shrink it is kept: segments come out smaller, never too big.
    ///   UDP `gso_size` is never changed: it is the datagram boundary.
    /// - `DATA_VALID` is carried over: an incrementally updated checksum that was
    ///   valid stays valid.
    pub fn translated(&self, delta: isize, out_len: usize, out_v6: bool) -> VnetHdr {
        let shift = |v: u16| (v as isize + delta).clamp(0, u16::MAX as isize) as u16;
        let mut h = *self;
        if self.needs_csum() {
            h.csum_start = shift(self.csum_start);
        }
        if self.hdr_len != 0 {
            let min = if self.needs_csum() {
                usize::from(h.csum_start) + usize::from(h.csum_offset) + 2
            } else {
                0
            };
            h.hdr_len = (shift(self.hdr_len) as usize).clamp(min, out_len) as u16;
        }
        let ecn = self.gso_type & GSO_ECN;
        match self.gso() {
            Gso::TcpV4 | Gso::TcpV6 => {
                h.gso_type = if out_v6 { GSO_TCPV6 } else { GSO_TCPV4 } | ecn;
                if delta > 0 {
                    h.gso_size = self.gso_size.saturating_sub(delta as u16).max(1);
                }
            }
            Gso::None | Gso::UdpL4 | Gso::Other(_) => {}
        }
        h
    }
}

/// Finish a partial checksum in software: sum `pkt[csum_start..]` (the field
/// holds the pseudo-header sum) and store the complement at
/// `csum_start + csum_offset`. A UDP result of zero is sent as all ones
/// (RFC 768). Returns false if the offsets do not fit the packet.
pub fn complete_checksum(pkt: &mut [u8], csum_start: u16, csum_offset: u16) -> bool {
    let start = usize::from(csum_start);
    let at = start + usize::from(csum_offset);
    if at + 2 > pkt.len() {
        return false;
    }
    let mut c = !checksum::sum(&pkt[start..]);
    if csum_offset == UDP_CSUM_OFFSET && c == 0 {
        c = 0xffff;
    }
    pkt[at..at + 2].copy_from_slice(&c.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV6 | GSO_ECN,
            hdr_len: 74,
            gso_size: 1428,
            csum_start: 40,
            csum_offset: 16,
        };
        assert_eq!(VnetHdr::decode(&h.encode()), h);
        assert_eq!(h.gso(), Gso::TcpV6);
        assert!(h.needs_csum());
        assert_eq!(VnetHdr::decode(&[0; LEN]), VnetHdr::PLAIN);
        assert_eq!(VnetHdr::PLAIN.gso(), Gso::None);
        let ufo = VnetHdr {
            gso_type: GSO_UDP,
            ..VnetHdr::PLAIN
        };
        assert_eq!(ufo.gso(), Gso::Other(GSO_UDP));
    }

    #[test]
    fn tcp_v4_to_v6_shifts_offsets_and_shrinks_segments() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4 | GSO_ECN,
            hdr_len: 52,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
        };
        let t = h.translated(20, 40 + 32 + 10 * 1448, true);
        assert_eq!(t.gso_type, GSO_TCPV6 | GSO_ECN);
        assert_eq!(t.csum_start, 40);
        assert_eq!(t.csum_offset, 16);
        assert_eq!(t.hdr_len, 72);
        assert_eq!(t.gso_size, 1428, "a segment keeps its size on the wire");
        assert_eq!(t.flags, F_NEEDS_CSUM);
    }

    #[test]
    fn tcp_v6_to_v4_shifts_offsets_and_keeps_segment_size() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV6,
            hdr_len: 72,
            gso_size: 1428,
            csum_start: 40,
            csum_offset: 16,
        };
        let t = h.translated(-20, 20 + 32 + 5 * 1428, false);
        assert_eq!(t.gso_type, GSO_TCPV4);
        assert_eq!((t.csum_start, t.hdr_len, t.gso_size), (20, 52, 1428));
        // IPv6 with 24 bytes of extension headers dropped on the way.
        let h = VnetHdr {
            csum_start: 64,
            hdr_len: 96,
            ..h
        };
        let t = h.translated(-44, 20 + 32 + 1428, false);
        assert_eq!((t.csum_start, t.hdr_len), (20, 52));
    }

    #[test]
    fn udp_l4_keeps_type_and_datagram_size() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_UDP_L4,
            hdr_len: 28,
            gso_size: 1200,
            csum_start: 20,
            csum_offset: 6,
        };
        let t = h.translated(20, 48 + 3 * 1200, true);
        assert_eq!(t.gso_type, GSO_UDP_L4);
        assert_eq!(t.gso_size, 1200);
        assert_eq!((t.csum_start, t.hdr_len), (40, 48));
    }

    #[test]
    fn hdr_len_is_clamped_to_the_packet_and_covers_the_checksum() {
        // Linux reports its linear length, which may be the whole packet.
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_NONE,
            hdr_len: 120,
            gso_size: 0,
            csum_start: 20,
            csum_offset: 16,
        };
        assert_eq!(h.translated(20, 140, true).hdr_len, 140);
        let h = VnetHdr { hdr_len: 10, ..h };
        assert_eq!(h.translated(20, 140, true).hdr_len, 58);
        // Without NEEDS_CSUM there is no checksum to cover.
        let h = VnetHdr {
            flags: F_DATA_VALID,
            hdr_len: 40,
            csum_start: 0,
            csum_offset: 0,
            ..VnetHdr::PLAIN
        };
        let t = h.translated(-20, 100, false);
        assert_eq!((t.flags, t.hdr_len, t.csum_start), (F_DATA_VALID, 20, 0));
    }

    #[test]
    fn complete_checksum_matches_the_oracle() {
        use sixgate_testkit::Ip4;
        let pkt = Ip4::new([192, 0, 2, 1].into(), [198, 51, 100, 2].into()).udp(1, 2, 101);
        let mut p = pkt.clone();
        // Partial form: the pseudo-header sum in the field.
        let pseudo = checksum::v4_pseudo(&[192, 0, 2, 1], &[198, 51, 100, 2], 109, 17);
        p[26..28].copy_from_slice(&pseudo.to_be_bytes());
        assert!(complete_checksum(&mut p, 20, UDP_CSUM_OFFSET));
        assert!(sixgate_testkit::check(&p).unwrap().l4_verified);
        assert!(!complete_checksum(&mut p, 200, 6));
    }
}
