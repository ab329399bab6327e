//! Packet templates for the senders that write their own headers: a UDP
//! datagram (raw IP socket: the kernel adds the IP header) or a whole Ethernet
//! frame (packet socket: nothing is added). Per packet only the source port and
//! the UDP checksum change; [`Template::stamp`] writes both. Frames can also vary
//! the last 16 bits of the source address over several hosts
//! ([`Template::with_hosts`], [`Template::stamp_host`]), then the IPv4 header
//! checksum changes too.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use crate::checksum;
use sixgate_core::checksum::{fold, sum};

pub const ETHERNET_HEADER: usize = 14;
pub const IPV4_HEADER: usize = 20;
pub const IPV6_HEADER: usize = 40;
pub const UDP_HEADER: usize = 8;
const HOP_LIMIT: u8 = 64;

/// An Ethernet address, written `02:00:5e:00:06:01`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl FromStr for Mac {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut mac = [0u8; 6];
        let mut parts = s.trim().split(':');
        for byte in &mut mac {
            let part = parts
                .next()
                .ok_or_else(|| format!("`{s}` is not a MAC address"))?;
            if part.is_empty() || part.len() > 2 {
                return Err(format!("`{s}` is not a MAC address"));
            }
            *byte =
                u8::from_str_radix(part, 16).map_err(|_| format!("`{s}` is not a MAC address"))?;
        }
        if parts.next().is_some() {
            return Err(format!("`{s}` is not a MAC address"));
        }
        Ok(Mac(mac))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

/// One packet with a zero source port and checksum, and what is needed to
/// fill them in.
#[derive(Debug, Clone)]
pub struct Template {
    pub bytes: Vec<u8>,
    /// Where the UDP header starts in `bytes`.
    pub udp_offset: usize,
    /// Unfolded checksum sum with a zero source port.
    base: u64,
    /// Set by [`Template::with_hosts`].
    hosts: Option<Hosts>,
}

/// Where the source address's last 16 bits are, and the sums without them.
#[derive(Debug, Clone)]
struct Hosts {
    /// Offset of the source address's last 16 bits in the frame.
    src_word: usize,
    /// Their value in the template (host 0).
    first: u16,
    /// The UDP checksum sum with a zero source port and those bits zero.
    base: u64,
    /// IPv4: offset of the header checksum, and the header's sum with the
    /// checksum field and those bits zero.
    ip: Option<(usize, u64)>,
}

/// What [`Template::stamp_host`] writes: `(offset, value)` pairs.
pub type Stamp = [(usize, [u8; 2]); 4];

impl Template {
    /// Source port and checksum field values for a packet from `port`.
    pub fn stamp(&self, port: u16) -> ([u8; 2], [u8; 2]) {
        let csum = checksum::finish(self.base + u64::from(port));
        (port.to_be_bytes(), csum.to_be_bytes())
    }

    /// A frame template whose source address varies over hosts (RFC 4814's
    /// spread, applied to addresses): host `h` has `h` added to the last 16 bits
    /// of the source address. Only for [`ethernet`] templates.
    pub fn with_hosts(mut self) -> Result<Template, String> {
        let ip = ETHERNET_HEADER;
        let (src_word, v4) = match self.bytes.get(12..14) {
            Some([0x08, 0x00]) => (ip + 14, true),
            Some([0x86, 0xdd]) => (ip + 22, false),
            _ => return Err("several source hosts need a whole frame (--via)".into()),
        };
        let first = u16::from_be_bytes([self.bytes[src_word], self.bytes[src_word + 1]]);
        let mut b = self.bytes.clone();
        b[src_word..src_word + 2].fill(0);
        let u = self.udp_offset;
        b[u + 6..u + 8].fill(0);
        // The pseudo-header's source word is gone from the UDP sum too.
        // One's complement: subtracting `first` is adding its complement.
        let base = self.base + u64::from(!first);
        let hdr = v4.then(|| {
            b[ip + 10..ip + 12].fill(0);
            (ip + 10, u64::from(sum(&b[ip..ip + IPV4_HEADER])))
        });
        self.hosts = Some(Hosts {
            src_word,
            first,
            base,
            ip: hdr,
        });
        Ok(self)
    }

    /// The fields of a frame from `port` of host `host` (see
    /// [`Template::with_hosts`]): source port, UDP checksum, the source address's
    /// last 16 bits and (IPv4) the header checksum, as `(offset, bytes)`.
    pub fn stamp_host(&self, port: u16, host: u16) -> Stamp {
        let u = self.udp_offset;
        let Some(h) = &self.hosts else {
            let (p, c) = self.stamp(port);
            return [(u, p), (u + 6, c), (u, p), (u + 6, c)];
        };
        let word = h.first.wrapping_add(host);
        let csum = checksum::finish(h.base + u64::from(port) + u64::from(word));
        let ip = match h.ip {
            Some((at, sum)) => (at, (!fold(sum + u64::from(word))).to_be_bytes()),
            None => (u + 6, csum.to_be_bytes()),
        };
        [
            (u, port.to_be_bytes()),
            (u + 6, csum.to_be_bytes()),
            (h.src_word, word.to_be_bytes()),
            ip,
        ]
    }

    /// Writes `port` and its checksum into `packet` (a copy of the template).
    pub fn stamp_into(&self, packet: &mut [u8], port: u16) {
        let (p, c) = self.stamp(port);
        let u = self.udp_offset;
        packet[u..u + 2].copy_from_slice(&p);
        packet[u + 6..u + 8].copy_from_slice(&c);
    }
}

fn same_family(src: IpAddr, dst: SocketAddr) -> Result<(), String> {
    if src.is_ipv4() == dst.is_ipv4() {
        Ok(())
    } else {
        Err(format!(
            "source {src} and destination {dst} are of different families"
        ))
    }
}

fn datagram(dst_port: u16, payload: &[u8]) -> Result<Vec<u8>, String> {
    let len = u16::try_from(UDP_HEADER + payload.len()).map_err(|_| "datagram too large")?;
    let mut d = Vec::with_capacity(UDP_HEADER + payload.len());
    d.extend_from_slice(&0u16.to_be_bytes()); // source port: per packet
    d.extend_from_slice(&dst_port.to_be_bytes());
    d.extend_from_slice(&len.to_be_bytes());
    d.extend_from_slice(&0u16.to_be_bytes()); // checksum: per packet
    d.extend_from_slice(payload);
    Ok(d)
}

/// A UDP datagram (header and payload) for a raw IP socket.
pub fn udp(src: IpAddr, dst: SocketAddr, payload: &[u8]) -> Result<Template, String> {
    same_family(src, dst)?;
    let bytes = datagram(dst.port(), payload)?;
    let base = checksum::partial(src, dst.ip(), &bytes);
    Ok(Template {
        bytes,
        udp_offset: 0,
        base,
        hosts: None,
    })
}

/// A whole Ethernet frame (no FCS) carrying an IPv4 (DF set, ID 0: an atomic
/// datagram, RFC 6864) or IPv6 packet with the UDP datagram.
pub fn ethernet(
    src_mac: Mac,
    dst_mac: Mac,
    src: IpAddr,
    dst: SocketAddr,
    payload: &[u8],
) -> Result<Template, String> {
    same_family(src, dst)?;
    let udp = datagram(dst.port(), payload)?;
    let base = checksum::partial(src, dst.ip(), &udp);
    let mut f = Vec::with_capacity(ETHERNET_HEADER + IPV6_HEADER + udp.len());
    f.extend_from_slice(&dst_mac.0);
    f.extend_from_slice(&src_mac.0);
    match (src, dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let total = u16::try_from(IPV4_HEADER + udp.len()).map_err(|_| "packet too large")?;
            let mut h = [0u8; IPV4_HEADER];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            h[6] = 0x40; // DF
            h[8] = HOP_LIMIT;
            h[9] = libc::IPPROTO_UDP as u8;
            h[12..16].copy_from_slice(&s.octets());
            h[16..20].copy_from_slice(&d.octets());
            let c = checksum::ipv4_header(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            f.extend_from_slice(&h);
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            let plen = u16::try_from(udp.len()).map_err(|_| "packet too large")?;
            f.extend_from_slice(&[0x60, 0, 0, 0]);
            f.extend_from_slice(&plen.to_be_bytes());
            f.push(libc::IPPROTO_UDP as u8);
            f.push(HOP_LIMIT);
            f.extend_from_slice(&s.octets());
            f.extend_from_slice(&d.octets());
        }
        _ => return Err("source and destination of different families".into()),
    }
    let udp_offset = f.len();
    f.extend_from_slice(&udp);
    Ok(Template {
        bytes: f,
        udp_offset,
        base,
        hosts: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    fn mac(s: &str) -> Mac {
        s.parse().unwrap()
    }

    #[test]
    fn parses_macs() {
        assert_eq!(mac("02:00:5e:00:06:01").0, [2, 0, 0x5e, 0, 6, 1]);
        assert_eq!(mac("2:0:5E:0:6:1").0, [2, 0, 0x5e, 0, 6, 1]);
        assert_eq!(mac("02:00:5e:00:06:01").to_string(), "02:00:5e:00:06:01");
        for bad in [
            "",
            "02:00:5e:00:06",
            "02:00:5e:00:06:01:07",
            "02:00:5e:00:06:zz",
            "020:0:0:0:0:0",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
    }

    /// Parses the frame with etherparse and checks every header and checksum.
    fn check_frame(t: &Template, port: u16, src: IpAddr, dst: SocketAddr, payload_len: usize) {
        let mut frame = t.bytes.clone();
        t.stamp_into(&mut frame, port);
        check_stamped(&frame, port, src, dst, payload_len);
    }

    /// Parses a stamped frame with etherparse and checks every header and checksum.
    fn check_stamped(frame: &[u8], port: u16, src: IpAddr, dst: SocketAddr, payload_len: usize) {
        let p = SlicedPacket::from_ethernet(frame).expect("parses");
        let Some(TransportSlice::Udp(udp)) = &p.transport else {
            panic!("no UDP")
        };
        assert_eq!(udp.source_port(), port);
        assert_eq!(udp.destination_port(), dst.port());
        assert_eq!(udp.payload().len(), payload_len);
        let hdr = udp.to_header();
        let want = match &p.net {
            Some(NetSlice::Ipv4(ip)) => {
                let h = ip.header();
                assert_eq!(IpAddr::from(h.source_addr()), src);
                assert_eq!(IpAddr::from(h.destination_addr()), dst.ip());
                assert!(h.dont_fragment());
                let owned = h.to_header();
                assert_eq!(owned.header_checksum, owned.calc_header_checksum());
                assert_eq!(usize::from(h.total_len()), frame.len() - ETHERNET_HEADER);
                hdr.calc_checksum_ipv4(&owned, udp.payload()).unwrap()
            }
            Some(NetSlice::Ipv6(ip)) => {
                let h = ip.header();
                assert_eq!(IpAddr::from(h.source_addr()), src);
                assert_eq!(IpAddr::from(h.destination_addr()), dst.ip());
                assert_eq!(usize::from(h.payload_length()), UDP_HEADER + payload_len);
                hdr.calc_checksum_ipv6(&h.to_header(), udp.payload())
                    .unwrap()
            }
            _ => panic!("no IP"),
        };
        assert_eq!(udp.checksum(), want);
    }

    #[test]
    fn ipv6_frame_is_84_bytes_on_the_wire() {
        let src: IpAddr = "2001:db8:1::5".parse().unwrap();
        let dst: SocketAddr = "[2001:db8:64::c633:6407]:5001".parse().unwrap();
        let t = ethernet(
            mac("02:00:5e:00:06:05"),
            mac("02:00:5e:00:06:01"),
            src,
            dst,
            &[7; 18],
        )
        .unwrap();
        // 14 + 40 + 8 + 18 = 80 bytes, + 4 FCS = 84 (RFC 8219's smallest IPv6 frame).
        assert_eq!(t.bytes.len(), 80);
        assert_eq!(&t.bytes[0..6], &[2, 0, 0x5e, 0, 6, 1]);
        for port in [1024, 40000, 65535] {
            check_frame(&t, port, src, dst, 18);
        }
    }

    /// Every host's frame parses, with its own source address and valid checksums.
    #[test]
    fn frames_from_several_hosts_have_valid_checksums() {
        for (src, dst) in [
            ("2001:db8:1::fffe", "[2001:db8:64::c633:6407]:5001"),
            ("192.0.2.5", "198.51.100.7:5001"),
        ] {
            let src: IpAddr = src.parse().unwrap();
            let dst: SocketAddr = dst.parse().unwrap();
            let t = ethernet(
                mac("02:00:5e:00:06:05"),
                mac("02:00:5e:00:06:01"),
                src,
                dst,
                &[3; 18],
            )
            .unwrap()
            .with_hosts()
            .unwrap();
            for (port, host) in [(1024u16, 0u16), (40000, 1), (65535, 7), (2000, 300)] {
                let mut frame = t.bytes.clone();
                for (at, v) in t.stamp_host(port, host) {
                    frame[at..at + 2].copy_from_slice(&v);
                }
                let bump = |x: u128| (x & !0xffff) | u128::from((x as u16).wrapping_add(host));
                let want = match src {
                    IpAddr::V4(a) => IpAddr::from(std::net::Ipv4Addr::from(bump(u128::from(
                        u32::from(a),
                    ))
                        as u32)),
                    IpAddr::V6(a) => IpAddr::from(std::net::Ipv6Addr::from(bump(u128::from(a)))),
                };
                check_stamped(&frame, port, want, dst, 18);
            }
        }
        let udp = udp(
            "192.0.2.5".parse().unwrap(),
            "198.51.100.7:9".parse().unwrap(),
            &[0; 4],
        );
        assert!(
            udp.unwrap().with_hosts().is_err(),
            "raw datagrams have no address"
        );
    }

    #[test]
    fn ipv4_frame_is_64_bytes_on_the_wire() {
        let src: IpAddr = "198.51.100.7".parse().unwrap();
        let dst: SocketAddr = "198.18.0.5:9".parse().unwrap();
        let t = ethernet(
            mac("02:00:5e:00:04:07"),
            mac("02:00:5e:00:04:01"),
            src,
            dst,
            &[1; 18],
        )
        .unwrap();
        // 14 + 20 + 8 + 18 = 60, + 4 FCS = 64.
        assert_eq!(t.bytes.len(), 60);
        for port in [1, 5353, 65535] {
            check_frame(&t, port, src, dst, 18);
        }
    }

    #[test]
    fn udp_template_for_raw_sockets() {
        let src: IpAddr = "2001:db8:1::5".parse().unwrap();
        let dst: SocketAddr = "[2001:db8:2::7]:5001".parse().unwrap();
        let t = udp(src, dst, b"abc").unwrap();
        assert_eq!(t.udp_offset, 0);
        let mut d = t.bytes.clone();
        t.stamp_into(&mut d, 4242);
        assert_eq!(&d[0..2], &4242u16.to_be_bytes());
        let mut zeroed = d.clone();
        zeroed[6..8].fill(0);
        assert_eq!(
            u16::from_be_bytes([d[6], d[7]]),
            checksum::udp(src, dst.ip(), &zeroed)
        );
    }

    #[test]
    fn mixed_families_are_refused() {
        let v4: IpAddr = "198.51.100.7".parse().unwrap();
        let dst: SocketAddr = "[2001:db8::1]:1".parse().unwrap();
        assert!(ethernet(mac("2:0:0:0:0:1"), mac("2:0:0:0:0:2"), v4, dst, &[]).is_err());
        assert!(udp(v4, dst, &[]).is_err());
    }
}
