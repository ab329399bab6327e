//! Stateful NAT64 set-ups for the benchmarks and the memory measurement:
//! pool6 2001:db8:64::/96, pool4 192.0.2.0/20 (wide enough for millions of
//! mappings), established flows per worker, and unique new flows.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{Nat64Config, Pool4Entry, steering};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_loadgen::ports::{PortGen, PortRange};
use sixgate_testkit::{Ip4, Ip6, tcp_flag};

/// The IPv4 server every flow talks to.
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);

fn server6() -> Ipv6Addr {
    "2001:db8:64::c633:6407".parse().unwrap()
}

/// NAT64 with room for `max_sessions` sessions (whole gateway).
pub fn config(max_sessions: u32) -> Arc<Config> {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).expect("pool6");
    let mut cfg = Config::with_pool6(Some(pool6));
    let mut pool4 = Pool4Entry::single(Ipv4Addr::new(192, 0, 0, 0));
    pool4.prefix_len = 20;
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![pool4],
        max_sessions,
        ..Nat64Config::default()
    });
    Arc::new(cfg)
}

/// One established flow: its next packet out and back.
pub struct Flow {
    pub out: Vec<u8>,
    pub back: Vec<u8>,
}

/// A worker's translator and buffers.
pub struct NatBench {
    pub translator: Translator,
    pub scratch: Scratch,
    pub buf: Vec<u8>,
    worker: u16,
    workers: u16,
    next_client: u32,
}

impl NatBench {
    pub fn new(cfg: Arc<Config>, worker: u16, workers: u16) -> Self {
        NatBench {
            translator: Translator::for_worker(cfg, worker, workers),
            scratch: Scratch::new(),
            buf: vec![0u8; HEADROOM + 2048],
            worker,
            workers,
            next_client: 0,
        }
    }

    /// Copy `pkt` in (the restore) and translate it.
    #[inline(always)]
    pub fn translate(&mut self, pkt: &[u8]) -> Verdict {
        self.buf[HEADROOM..HEADROOM + pkt.len()].copy_from_slice(pkt);
        let mut p = PacketBuf::new(&mut self.buf, HEADROOM, pkt.len());
        self.translator.translate(&mut p, &mut self.scratch, 0)
    }

    /// Translate the packet already in the buffer (`len` bytes), as
    /// [`NatBench::load`] left it.
    #[inline(always)]
    pub fn translate_loaded(&mut self, len: usize) -> Verdict {
        let mut p = PacketBuf::new(&mut self.buf, HEADROOM, len);
        self.translator.translate(&mut p, &mut self.scratch, 0)
    }

    /// Copy `pkt` into the buffer without translating it.
    pub fn load(&mut self, pkt: &[u8]) {
        self.buf[HEADROOM..HEADROOM + pkt.len()].copy_from_slice(pkt);
    }

    fn out_port(&self) -> (Ipv4Addr, u16) {
        let o = &self.buf[HEADROOM..];
        // The last translation wrote an IPv4 packet at HEADROOM + 20.
        let o = &o[20..];
        (
            Ipv4Addr::new(o[12], o[13], o[14], o[15]),
            u16::from_be_bytes([o[20], o[21]]),
        )
    }

    /// A client address this worker serves.
    fn client(&mut self) -> Ipv6Addr {
        loop {
            let i = self.next_client;
            self.next_client += 1;
            let a = Ipv6Addr::new(
                0x2001,
                0xdb8,
                0x1000 + (i >> 16) as u16,
                i as u16,
                0,
                0,
                0,
                1,
            );
            if steering::subscriber_worker(u128::from(a), 64, self.workers) == self.worker {
                return a;
            }
        }
    }

    /// Open a UDP flow or a TCP connection (`udp`) and return its next packets
    /// (18 bytes of UDP payload / 6 of TCP: 66-byte IPv6, 46-byte IPv4 packets).
    pub fn establish(&mut self, udp: bool, i: u16) -> Flow {
        let client = self.client();
        let ip = Ip6::new(client, server6());
        let sport = 40000 + i;
        let first = if udp {
            ip.udp(sport, 53, 18)
        } else {
            ip.tcp_flags(sport, 443, tcp_flag::SYN, 0)
        };
        assert_eq!(self.translate(&first), Verdict::Translated);
        let (a, port) = self.out_port();
        let back = Ip4::new(SERVER4, a);
        if udp {
            return Flow {
                out: first,
                back: back.udp(53, port, 18),
            };
        }
        let synack = back.tcp_flags(443, port, tcp_flag::SYN | tcp_flag::ACK, 0);
        assert_eq!(self.translate(&synack), Verdict::Translated);
        Flow {
            out: ip.tcp_flags(sport, 443, tcp_flag::ACK, 6),
            back: back.tcp_flags(443, port, tcp_flag::ACK, 6),
        }
    }
}

/// A UDP packet to rewrite with [`set_flow`] (66 bytes).
pub fn new_flow_packet(i: u64) -> Vec<u8> {
    let mut p = Ip6::new(Ipv6Addr::LOCALHOST, server6()).udp(40000, 53, 18);
    set_flow(&mut p, i);
    p
}

/// Make `pkt` (from [`new_flow_packet`]) the first packet of unique flow `i`: its
/// own /64 subscriber. The UDP checksum goes stale; the core updates checksums
/// incrementally and never verifies them, so costs are unchanged.
#[inline(always)]
pub fn set_flow(pkt: &mut [u8], i: u64) {
    let hi = 0x2001_0db8_0000_0000u64 | (i & 0xffff_ffff);
    pkt[8..16].copy_from_slice(&hi.to_be_bytes());
    pkt[16..24].copy_from_slice(&1u64.to_be_bytes());
}

/// A gungraun case: a worker with one established flow and the packet to send,
/// already in the buffer (so, like the stateless cases, no restore copy is counted).
pub struct NatCase {
    pub bench: Box<NatBench>,
    pub packet: Vec<u8>,
}

/// Established-flow cases by name: `nat64_{udp,tcp}_{6to4,4to6}`; and
/// `nat64_new_udp_6to4`, a packet that creates a mapping and session.
pub fn nat_case(name: &str) -> NatCase {
    let mut bench = NatBench::new(config(1 << 16), 0, 1);
    let packet = match name {
        "nat64_new_udp_6to4" => {
            // Warm the tables with other flows first, like a running gateway.
            let mut p = new_flow_packet(0);
            for i in 1..1000 {
                set_flow(&mut p, i);
                assert_eq!(bench.translate(&p), Verdict::Translated);
            }
            new_flow_packet(5000)
        }
        _ => {
            let flow = bench.establish(name.contains("udp"), 0);
            if name.ends_with("6to4") {
                flow.out
            } else {
                flow.back
            }
        }
    };
    bench.load(&packet);
    NatCase {
        bench: Box::new(bench),
        packet,
    }
}

/// The gateway benchmarks' NAT64 (bench/ha-gateway.sh, bench/tun-compare.sh):
/// pool6 2001:db8:64::/96, pool4 `pool4`/`prefix_len` at the default ports
/// (61001-65535), one subscriber per IPv6 address (`subscriber_prefix_len =
/// 128`), room for `max_sessions`.
pub fn gateway_config(pool4: Ipv4Addr, prefix_len: u8, max_sessions: u32) -> Arc<Config> {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).expect("pool6");
    let mut cfg = Config::with_pool6(Some(pool6));
    let mut entry = Pool4Entry::single(pool4);
    entry.prefix_len = prefix_len;
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![entry],
        max_sessions,
        subscriber_prefix_len: 128,
        ..Nat64Config::default()
    });
    Arc::new(cfg)
}

/// The first `n` distinct (source host, source port) pairs of the load
/// generator's new-session traffic (`--src-hosts hosts --src-port-range
/// 1024-65535`): host `h` is the source address plus `h`, both numbers
/// pseudorandom per packet. Repeats (packets of flows that exist) are left
/// out, so every pair is a new flow; fewer than `n` if the tuples run out.
pub fn rfc4814_new_flows(n: usize, hosts: u16, seed: u64) -> Vec<(u16, u16)> {
    let hosts = hosts.max(1);
    let tuples = usize::from(hosts) * (65536 - 1024);
    let n = n.min(tuples);
    let mut ports = PortGen::new(
        PortRange {
            first: 1024,
            last: 65535,
        },
        seed,
    );
    let mut host = PortGen::new(
        PortRange {
            first: 1,
            last: hosts,
        },
        seed ^ 0x686f_7374,
    );
    let mut seen = vec![0u64; usize::from(hosts) * 1024];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let port = ports.next_port();
        let h = host.next_port() - 1;
        let bit = usize::from(h) << 16 | usize::from(port);
        if seen[bit / 64] & 1 << (bit % 64) == 0 {
            seen[bit / 64] |= 1 << (bit % 64);
            out.push((h, port));
        }
    }
    out
}
