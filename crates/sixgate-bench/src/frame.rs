//! Test frames: Ethernet + IPv4/IPv6 + UDP, built once per flow and stamped per
//! frame with RFC 4814 pseudorandom ports and the tester's tag.
//!
//! Frame sizes follow RFC 8219 §5.1: they count the Ethernet FCS (4 bytes) that
//! a veth does not carry, and the IPv4 frame of a pair is 20 bytes shorter than
//! the IPv6 one (84…1518 ↔ 64…1498), since the translator swaps a 40-byte header
//! for a 20-byte one and the UDP payload stays the same.
//!
//! The UDP payload starts with the tag ([`TAG_LEN`] bytes):
//!
//! ```text
//! 0      8      12       14      16            18
//! | tx ns | seq | stream | magic | compensator | zero padding…
//! ```
//!
//! The compensator keeps the ones' complement sum of the UDP message what it was
//! in the template, so the checksum built once stays valid whatever the ports,
//! addresses and tag (RFC 1624 reasoning: only the sum matters). Stamping a
//! frame is a copy and a few stores, no checksum pass.

use std::net::{IpAddr, SocketAddr};

/// Bytes of the tag at the start of the UDP payload.
pub const TAG_LEN: usize = 18;
/// Marks our frames (“SG”), so stray traffic on a port is not counted.
pub const MAGIC: u16 = 0x5347;
/// The Ethernet FCS counted by RFC 8219 frame sizes but absent on a veth.
pub const FCS: usize = 4;
/// Ethernet header length (no VLAN tag).
pub const ETH_LEN: usize = 14;
/// UDP header length.
const UDP_LEN: usize = 8;

/// The standard IPv6 frame sizes of RFC 8219 §5.1 (the IPv4 side is 20 bytes less).
pub const STANDARD_SIZES: [u16; 7] = [84, 148, 276, 532, 1044, 1300, 1518];

/// An Ethernet address: the load generator's, so both testers speak of one.
pub use sixgate_loadgen::frame::Mac;

/// The IP version of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// Bytes before the UDP header: Ethernet and IP.
    pub fn l4_offset(self) -> usize {
        ETH_LEN + if self == Family::V4 { 20 } else { 40 }
    }

    /// The smallest frame (with FCS) that holds the tag.
    pub fn min_frame(self) -> usize {
        self.l4_offset() + UDP_LEN + TAG_LEN + FCS
    }

    /// This family's frame size for an RFC 8219 IPv6 frame size (§5.1 offset).
    pub fn frame_size(self, ipv6_size: u16) -> u16 {
        match self {
            Family::V6 => ipv6_size,
            Family::V4 => ipv6_size.saturating_sub(20),
        }
    }
}

/// What one flow's frames look like.
#[derive(Debug, Clone)]
pub struct FlowSpec {
    pub src_mac: Mac,
    pub dst_mac: Mac,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// Frame size including the FCS, as RFC 8219 counts it.
    pub frame_size: u16,
}

/// What changes from frame to frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    pub src_port: u16,
    pub dst_port: u16,
    /// Added to the last 16 bits of the source address (pseudorandom addresses).
    pub src_host: u16,
    /// Added to the last 16 bits of the destination address.
    pub dst_host: u16,
    pub tag: Tag,
}

/// The tester's tag in every frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tag {
    /// Send time, nanoseconds of `CLOCK_REALTIME` (the receiver's kernel
    /// timestamps use the same clock).
    pub tx_ns: u64,
    /// Frame number within its stream, from 0.
    pub seq: u32,
    /// Which trial and direction the frame belongs to.
    pub stream: u16,
}

/// A frame built once; [`Template::stamp_into`] makes each frame from it.
#[derive(Debug, Clone)]
pub struct Template {
    bytes: Vec<u8>,
    family: Family,
    /// Last 16 bits of the template's addresses, before host offsets.
    src_low: u16,
    dst_low: u16,
}

/// A frame spec that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError(pub String);

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FrameError {}

fn add(acc: u32, word: u16) -> u32 {
    acc + u32::from(word)
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

impl Template {
    /// Build the template of `spec`; an error names the bad input.
    pub fn new(spec: &FlowSpec) -> Result<Template, FrameError> {
        let family = match (spec.src, spec.dst) {
            (IpAddr::V4(_), IpAddr::V4(_)) => Family::V4,
            (IpAddr::V6(_), IpAddr::V6(_)) => Family::V6,
            _ => {
                return Err(FrameError(format!(
                    "source {} and destination {} are not of one IP version",
                    spec.src, spec.dst
                )));
            }
        };
        let size = usize::from(spec.frame_size);
        if size < family.min_frame() || size > 1518 + 4 {
            return Err(FrameError(format!(
                "frame size {size}: an {family:?} test frame needs {} to 1522 bytes",
                family.min_frame()
            )));
        }
        let payload_len = size - FCS - family.l4_offset() - UDP_LEN;
        let mut payload = vec![0u8; payload_len];
        payload[14..16].copy_from_slice(&MAGIC.to_be_bytes());
        // The load generator's frame (Ethernet, IPv4 with DF or IPv6, UDP), with
        // ports 0 and the checksum of that: the sum the compensator keeps.
        let t = sixgate_loadgen::frame::ethernet(
            spec.src_mac,
            spec.dst_mac,
            spec.src,
            SocketAddr::new(spec.dst, 0),
            &payload,
        )
        .map_err(FrameError)?;
        let mut bytes = t.bytes.clone();
        t.stamp_into(&mut bytes, 0);
        debug_assert_eq!(bytes.len(), size - FCS);
        let (src_low, dst_low) = {
            let (s, d) = address_ends(family);
            (be16(&bytes, s), be16(&bytes, d))
        };
        Ok(Template {
            bytes,
            family,
            src_low,
            dst_low,
        })
    }

    /// The family of the frames.
    pub fn family(&self) -> Family {
        self.family
    }

    /// Bytes written per frame (the frame size less the FCS).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Never true: a frame has at least the headers and the tag.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The template's bytes (ports and tag zero).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Write the frame for `stamp` into `out` (at least [`Template::len`] bytes).
    pub fn stamp_into(&self, out: &mut [u8], stamp: &Stamp) {
        let out = &mut out[..self.bytes.len()];
        out.copy_from_slice(&self.bytes);
        let l4 = self.family.l4_offset();
        let p = l4 + UDP_LEN;
        let (src_end, dst_end) = address_ends(self.family);
        let src_low = self.src_low.wrapping_add(stamp.src_host);
        let dst_low = self.dst_low.wrapping_add(stamp.dst_host);
        put16(out, src_end, src_low);
        put16(out, dst_end, dst_low);
        put16(out, l4, stamp.src_port);
        put16(out, l4 + 2, stamp.dst_port);
        let t = stamp.tag;
        out[p..p + 8].copy_from_slice(&t.tx_ns.to_be_bytes());
        out[p + 8..p + 12].copy_from_slice(&t.seq.to_be_bytes());
        put16(out, p + 12, t.stream);
        // The UDP sum covers the pseudo-header's addresses, the ports and the
        // tag: the compensator cancels their change from the template.
        let mut changed = 0u32;
        for w in [
            src_low,
            dst_low,
            stamp.src_port,
            stamp.dst_port,
            t.stream,
            (t.seq >> 16) as u16,
            t.seq as u16,
        ] {
            changed = add(changed, w);
        }
        for i in 0..4 {
            changed = add(changed, (t.tx_ns >> (48 - 16 * i)) as u16);
        }
        let template = add(add(0, self.src_low), self.dst_low);
        // compensator = template − changed, in ones' complement.
        let comp = fold(template + u32::from(!fold(changed)));
        put16(out, p + 16, comp);
        if self.family == Family::V4 && (stamp.src_host | stamp.dst_host) != 0 {
            // The IPv4 header checksum covers the addresses: redo it (10 words).
            put16(out, ETH_LEN + 10, 0);
            let mut acc = 0u32;
            for i in (ETH_LEN..ETH_LEN + 20).step_by(2) {
                acc = add(acc, be16(out, i));
            }
            put16(out, ETH_LEN + 10, !fold(acc));
        }
    }
}

/// Offsets of the last 16 bits of the source and destination addresses.
fn address_ends(family: Family) -> (usize, usize) {
    match family {
        Family::V4 => (ETH_LEN + 14, ETH_LEN + 18),
        Family::V6 => (ETH_LEN + 22, ETH_LEN + 38),
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// What the receiver reads from one of our frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub tag: Tag,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
}

/// Parse a received frame; `None` for anything that is not a UDP frame
/// carrying our tag (neighbour discovery, stray traffic, truncated frames).
pub fn parse(frame: &[u8]) -> Option<Seen> {
    if frame.len() < ETH_LEN + 20 {
        return None;
    }
    let (family, src, dst) = match be16(frame, 12) {
        0x0800 if frame[ETH_LEN] >> 4 == 4 && frame[ETH_LEN + 9] == 17 => {
            // Only option-less headers: a translator emits no options.
            if frame[ETH_LEN] & 0x0f != 5 {
                return None;
            }
            let a = |at: usize| -> IpAddr {
                IpAddr::from(<[u8; 4]>::try_from(&frame[at..at + 4]).expect("4 bytes"))
            };
            (Family::V4, a(ETH_LEN + 12), a(ETH_LEN + 16))
        }
        0x86dd if frame.len() >= ETH_LEN + 40 && frame[ETH_LEN + 6] == 17 => {
            let a = |at: usize| -> IpAddr {
                IpAddr::from(<[u8; 16]>::try_from(&frame[at..at + 16]).expect("16 bytes"))
            };
            (Family::V6, a(ETH_LEN + 8), a(ETH_LEN + 24))
        }
        _ => return None,
    };
    let l4 = family.l4_offset();
    let p = l4 + UDP_LEN;
    if frame.len() < p + TAG_LEN || be16(frame, p + 14) != MAGIC {
        return None;
    }
    let tx_ns = u64::from_be_bytes(frame[p..p + 8].try_into().expect("8 bytes"));
    let seq = u32::from_be_bytes(frame[p + 8..p + 12].try_into().expect("4 bytes"));
    Some(Seen {
        tag: Tag {
            tx_ns,
            seq,
            stream: be16(frame, p + 12),
        },
        src,
        dst,
        src_port: be16(frame, l4),
        dst_port: be16(frame, l4 + 2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    use std::net::{Ipv4Addr, Ipv6Addr};

    const A: Mac = Mac([2, 0, 0, 0, 0, 1]);
    const B: Mac = Mac([2, 0, 0, 0, 0, 2]);

    fn spec(family: Family, size: u16) -> FlowSpec {
        let (src, dst): (IpAddr, IpAddr) = match family {
            Family::V4 => (
                Ipv4Addr::new(198, 51, 100, 7).into(),
                Ipv4Addr::new(198, 18, 0, 5).into(),
            ),
            Family::V6 => (
                "2001:db8:1::5".parse::<Ipv6Addr>().unwrap().into(),
                "2001:db8:64::c633:6407".parse::<Ipv6Addr>().unwrap().into(),
            ),
        };
        FlowSpec {
            src_mac: A,
            dst_mac: B,
            src,
            dst,
            frame_size: family.frame_size(size),
        }
    }

    /// Checks with etherparse that the IP header and UDP checksums are valid
    /// and returns the UDP payload length.
    fn check_valid(frame: &[u8]) -> usize {
        let p = SlicedPacket::from_ethernet(frame).expect("parses");
        let udp = match p.transport {
            Some(TransportSlice::Udp(u)) => u,
            other => panic!("not UDP: {other:?}"),
        };
        let payload = udp.payload();
        let sum = match p.net {
            Some(NetSlice::Ipv4(v4)) => {
                let h = v4.header().to_header();
                assert_eq!(
                    h.header_checksum,
                    h.calc_header_checksum(),
                    "IPv4 header checksum"
                );
                udp.to_header().calc_checksum_ipv4(&h, payload).unwrap()
            }
            Some(NetSlice::Ipv6(v6)) => {
                let h = v6.header().to_header();
                udp.to_header().calc_checksum_ipv6(&h, payload).unwrap()
            }
            other => panic!("not IP: {other:?}"),
        };
        assert_eq!(udp.checksum(), sum, "UDP checksum");
        payload.len()
    }

    /// RFC 8219 §5.1: every standard size, both families, valid and of the
    /// right length (the FCS is not written).
    #[test]
    fn rfc8219_5_1_standard_sizes_are_valid_frames() {
        for family in [Family::V4, Family::V6] {
            for size in STANDARD_SIZES {
                let s = spec(family, size);
                let t = Template::new(&s).unwrap();
                assert_eq!(t.len() + FCS, usize::from(family.frame_size(size)));
                let mut buf = vec![0u8; 2048];
                t.stamp_into(&mut buf, &Stamp::default());
                check_valid(&buf[..t.len()]);
            }
        }
        assert_eq!(Family::V4.frame_size(84), 64);
        assert_eq!(Family::V4.frame_size(1518), 1498);
        assert_eq!(Family::V4.min_frame(), 64);
        assert_eq!(Family::V6.min_frame(), 84);
    }

    #[test]
    fn stamped_frames_keep_valid_checksums_and_parse_back() {
        let mut buf = vec![0u8; 2048];
        let mut x = 0x1234_5678_9abc_def0u64;
        for family in [Family::V4, Family::V6] {
            for size in [84u16, 148, 1518] {
                let t = Template::new(&spec(family, size)).unwrap();
                for i in 0..500u32 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let stamp = Stamp {
                        src_port: (x >> 8) as u16 | 1,
                        dst_port: (x >> 24) as u16 | 1,
                        src_host: if i % 3 == 0 { (x % 200) as u16 } else { 0 },
                        dst_host: if i % 5 == 0 { (x % 100) as u16 } else { 0 },
                        tag: Tag {
                            tx_ns: x,
                            seq: i.wrapping_mul(2_654_435_761),
                            stream: (x >> 40) as u16,
                        },
                    };
                    t.stamp_into(&mut buf, &stamp);
                    let frame = &buf[..t.len()];
                    check_valid(frame);
                    let seen = parse(frame).expect("our frame");
                    assert_eq!(seen.tag, stamp.tag);
                    assert_eq!(
                        (seen.src_port, seen.dst_port),
                        (stamp.src_port, stamp.dst_port)
                    );
                }
            }
        }
    }

    #[test]
    fn bad_specs_are_named_errors() {
        let mut s = spec(Family::V4, 84);
        s.frame_size = 63;
        assert!(Template::new(&s).unwrap_err().0.contains("63"));
        s.dst = "2001:db8::1".parse::<Ipv6Addr>().unwrap().into();
        assert!(Template::new(&s).unwrap_err().0.contains("IP version"));
    }

    #[test]
    fn stray_frames_are_not_ours() {
        assert_eq!(parse(&[0u8; 10]), None);
        let t = Template::new(&spec(Family::V6, 84)).unwrap();
        let mut buf = t.bytes().to_vec();
        assert!(parse(&buf).is_some());
        let magic_at = Family::V6.l4_offset() + UDP_LEN + 14;
        buf[magic_at] ^= 0xff;
        assert_eq!(parse(&buf), None);
    }
}
