//! Which worker owns a packet (docs/architecture.md, "Multi-core without a shared
//! table"). The TUN data plane's eBPF steering program computes the same two
//! functions; they must agree bit for bit.

/// Golden-ratio multiplier of [`subscriber_worker`].
pub const SUBSCRIBER_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Size of the port groups workers own: the port-block size when blocks are on,
/// else 2 (port pairs, so a worker can keep a port's parity).
pub const fn port_group(port_block_size: u16) -> u16 {
    if port_block_size >= 2 {
        port_block_size
    } else {
        2
    }
}

/// The worker that owns pool4 port (or ICMP identifier) `port`:
/// `(port / group) % workers`, with `group` from [`port_group`].
pub const fn port_owner(port: u16, port_block_size: u16, workers: u16) -> u16 {
    if workers <= 1 {
        return 0;
    }
    (port / port_group(port_block_size)) % workers
}

/// The worker that owns IPv6 host `src6` (as a big-endian integer):
/// `(fold(src6 & mask(prefix_len)) * 0x9E3779B97F4A7C15 >> 32) % workers`, where
/// `fold(x) = (x >> 64) ^ (x & 0xffff_ffff_ffff_ffff)` and the multiplication wraps
/// at 64 bits.
pub const fn subscriber_worker(src6: u128, subscriber_prefix_len: u8, workers: u16) -> u16 {
    if workers <= 1 {
        return 0;
    }
    let masked = src6 & subscriber_mask(subscriber_prefix_len);
    let fold = ((masked >> 64) as u64) ^ (masked as u64);
    ((fold.wrapping_mul(SUBSCRIBER_MULTIPLIER) >> 32) % workers as u64) as u16
}

/// The subscriber prefix of `src6`: its first `subscriber_prefix_len` bits.
pub const fn subscriber_prefix(src6: u128, subscriber_prefix_len: u8) -> u128 {
    src6 & subscriber_mask(subscriber_prefix_len)
}

const fn subscriber_mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else if len >= 128 {
        u128::MAX
    } else {
        u128::MAX << (128 - len as u32)
    }
}

/// [`port_owner`] and [`subscriber_worker`] applied to a whole packet, the way
/// the TUN data plane's steering program (`crates/sixgate-tun/bpf/steer.c`)
/// reads it, for data planes that steer in user space (the AF_XDP workers hand
/// a packet to its owner, docs/xdp.md). Built once from the configuration;
/// [`PacketOwner::of`] reads the packet and allocates nothing.
///
/// - IPv6: `subscriber_worker(source)` (with RFC 7422 deterministic NAT, a
///   subscriber of its prefix: [`super::Deterministic::worker`]); an ICMPv6 error (type < 128, after at
///   most four extension headers): of the quoted packet's destination.
/// - IPv4: `port_owner(destination port)`; ICMP Echo: of the identifier; an
///   ICMPv4 error (types 3, 11, 12): of the quoted packet's source port or
///   identifier. A static BIB entry's IPv4 side: the worker of its IPv6 side
///   (RFC 6146 §3.1 "manually configured" entries live with their subscriber).
/// - A non-first IPv4 fragment: Identification modulo workers; anything too
///   short or unknown: worker 0.
#[derive(Clone, Debug)]
pub struct PacketOwner {
    workers: u16,
    subscriber_prefix_len: u8,
    port_block_size: u16,
    /// `(protocol number, IPv4 address, port, worker)`, sorted for binary search.
    statics: Vec<(u8, u32, u16, u16)>,
    /// RFC 7422 deterministic NAT: its subscribers go to their block's owner.
    deterministic: Option<super::Deterministic>,
}

/// IANA protocol numbers the steering reads.
use crate::packet::proto::{ICMP, ICMPV6, TCP, UDP};

impl PacketOwner {
    /// The owner rule of `cfg` over `workers` workers.
    pub fn new(cfg: &super::Nat64Config, workers: u16) -> PacketOwner {
        let mut owner = PacketOwner {
            workers: workers.max(1),
            subscriber_prefix_len: cfg.subscriber_prefix_len,
            port_block_size: cfg.port_block_size,
            statics: Vec::new(),
            deterministic: super::Deterministic::plan(cfg).ok().flatten(),
        };
        owner.statics = cfg
            .static_bib
            .iter()
            .map(|b| {
                let proto = match b.proto {
                    super::Proto::Tcp => TCP,
                    super::Proto::Udp => UDP,
                    super::Proto::Icmp => ICMP,
                };
                let w = owner.subscriber(u128::from(b.v6));
                (proto, u32::from(b.v4), b.port4, w)
            })
            .collect();
        owner.statics.sort_unstable();
        owner
    }

    /// The worker of IPv6 host `a`: [`super::Deterministic::worker`] for a
    /// subscriber of the deterministic prefix, else [`subscriber_worker`].
    pub fn subscriber(&self, a: u128) -> u16 {
        self.deterministic
            .as_ref()
            .and_then(|d| d.worker(a, self.workers))
            .unwrap_or_else(|| subscriber_worker(a, self.subscriber_prefix_len, self.workers))
    }

    /// Number of workers the rule spreads over.
    pub fn workers(&self) -> u16 {
        self.workers
    }

    /// The worker owning the IP packet `ip` (starting at its IP header).
    pub fn of(&self, ip: &[u8]) -> u16 {
        match ip.first().map(|v| v >> 4) {
            Some(4) => self.of_v4(ip),
            Some(6) => self.of_v6(ip),
            _ => 0,
        }
    }

    /// The owner of IPv4 transport address `(addr, port)` of protocol `proto`.
    fn owner4(&self, proto: u8, addr: u32, port: u16) -> u16 {
        match self
            .statics
            .binary_search_by(|s| (s.0, s.1, s.2).cmp(&(proto, addr, port)))
        {
            Ok(i) => self.statics[i].3,
            Err(_) => port_owner(port, self.port_block_size, self.workers),
        }
    }

    fn of_v4(&self, ip: &[u8]) -> u16 {
        let Some(h) = ip.get(..20) else { return 0 };
        let ihl = usize::from(h[0] & 15) * 4;
        let frag = u16::from_be_bytes([h[6], h[7]]) & 0x1fff;
        if frag != 0 || ihl < 20 {
            return u16::from_be_bytes([h[4], h[5]]) % self.workers;
        }
        let (proto, dst) = (h[9], be32(&h[16..20]));
        match proto {
            TCP | UDP => be16(ip, ihl + 2).map_or(0, |p| self.owner4(proto, dst, p)),
            ICMP => match ip.get(ihl) {
                Some(0 | 8) => be16(ip, ihl + 4).map_or(0, |id| self.owner4(ICMP, dst, id)),
                Some(3 | 11 | 12) => self.of_quoted_v4(ip, ihl + 8),
                _ => 0,
            },
            _ => 0,
        }
    }

    /// An ICMPv4 error: the quoted packet is one we sent, its source is ours.
    fn of_quoted_v4(&self, ip: &[u8], at: usize) -> u16 {
        let Some(h) = ip.get(at..at + 20) else {
            return 0;
        };
        let ihl = usize::from(h[0] & 15) * 4;
        let (proto, src) = (h[9], be32(&h[12..16]));
        if ihl < 20 {
            return 0;
        }
        match proto {
            TCP | UDP => be16(ip, at + ihl).map_or(0, |p| self.owner4(proto, src, p)),
            ICMP => match ip.get(at + ihl) {
                Some(0 | 8) => be16(ip, at + ihl + 4).map_or(0, |id| self.owner4(ICMP, src, id)),
                _ => 0,
            },
            _ => 0,
        }
    }

    fn of_v6(&self, ip: &[u8]) -> u16 {
        let sub = |a: &[u8]| {
            let a: [u8; 16] = a.try_into().expect("16 bytes");
            self.subscriber(u128::from_be_bytes(a))
        };
        let Some(src) = ip.get(8..24) else { return 0 };
        let (mut nh, mut off) = (ip[6], 40usize);
        // At most four Hop-by-Hop, Routing, Fragment or Destination Options
        // headers (RFC 8200 §4) before an ICMPv6 header, as steer.c walks.
        for _ in 0..4 {
            if !matches!(nh, 0 | 43 | 44 | 60) {
                break;
            }
            let Some(ext) = ip.get(off..off + 2) else {
                return sub(src);
            };
            if nh == 44 {
                // Only a first fragment carries the ICMPv6 header.
                if be16(ip, off + 2).is_none_or(|fo| fo & 0xfff8 != 0) {
                    return sub(src);
                }
                off += 8;
            } else {
                off += (usize::from(ext[1]) + 1) * 8;
            }
            nh = ext[0];
        }
        if nh == ICMPV6
            && ip.get(off).is_some_and(|&t| t < 128)
            && let Some(inner_dst) = ip.get(off + 8 + 24..off + 8 + 40)
        {
            return sub(inner_dst);
        }
        sub(src)
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_pairs_stay_on_one_worker() {
        for p in (0..u16::MAX).step_by(2) {
            assert_eq!(port_owner(p, 0, 2), port_owner(p + 1, 0, 2));
        }
        assert_eq!(port_owner(0, 0, 2), 0);
        assert_eq!(port_owner(2, 0, 2), 1);
        assert_eq!(port_owner(4, 0, 2), 0);
        assert_eq!(port_owner(130, 64, 4), 2);
        assert_eq!(port_owner(12345, 0, 1), 0);
    }

    /// RFC 6146 §3.1: a static BIB entry's IPv4 side belongs to the worker of
    /// its IPv6 side; other IPv4 packets to pool4 go by port, ICMP errors by
    /// the quoted packet's source port; what cannot be read goes to worker 0.
    #[test]
    fn rfc6146_3_1_packet_owner_of_static_entries_errors_and_truncated_packets() {
        use sixgate_testkit::{Ip4, Ip6};
        use std::net::{Ipv4Addr, Ipv6Addr};
        let (pool4, server) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(203, 0, 113, 7));
        let v6: Ipv6Addr = (1u16..)
            .map(|n| Ipv6Addr::new(0x2001, 0xdb8, n, 0, 0, 0, 0, 5))
            .find(|a| subscriber_worker(u128::from(*a), 64, 4) != port_owner(80, 0, 4))
            .unwrap();
        let cfg = super::super::Nat64Config {
            static_bib: vec![super::super::StaticBib {
                proto: super::super::Proto::Tcp,
                v6,
                port6: 80,
                v4: pool4,
                port4: 80,
            }],
            ..Default::default()
        };
        let o = PacketOwner::new(&cfg, 4);
        let mine = subscriber_worker(u128::from(v6), 64, 4);
        assert_eq!(o.of(&Ip4::new(server, pool4).tcp(5000, 80, 0)), mine);
        assert_eq!(
            o.of(&Ip4::new(server, pool4).udp(5000, 80, 0)),
            port_owner(80, 0, 4),
            "UDP 80 is not the static entry"
        );
        let quoted = Ip4::new(pool4, server).udp(1234, 53, 8);
        let err = Ip4::new(server, pool4).icmp_error(3, 1, [0; 4], &quoted);
        assert_eq!(o.of(&err), port_owner(1234, 0, 4));
        let out = Ip6::new(v6, "2001:db8:64::cb00:7107".parse().unwrap()).udp(1, 2, 8);
        assert_eq!(o.of(&out), mine);
        assert_eq!(o.of(&out[..20]), 0);
        assert_eq!(o.of(&[]), 0);
    }

    #[test]
    fn subscriber_worker_ignores_host_bits() {
        let a: u128 = 0x2001_0db8_0001_0002_0000_0000_0000_0005;
        let b: u128 = 0x2001_0db8_0001_0002_ffff_0000_0000_0009;
        assert_eq!(subscriber_worker(a, 64, 7), subscriber_worker(b, 64, 7));
        assert!(subscriber_worker(a, 64, 7) < 7);
        assert_eq!(subscriber_worker(a, 64, 1), 0);
        // Spread: 1000 subscribers over 2 workers are not all on one.
        let on0 = (0..1000u128)
            .filter(|i| subscriber_worker(a + (i << 64), 64, 2) == 0)
            .count();
        assert!((300..700).contains(&on0), "{on0}");
    }
}
