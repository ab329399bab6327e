//! Packets and configuration shared by the criterion and gungraun benchmarks.
//!
//! Sizes follow RFC 8219 §5.1.1: the IPv4 side of every case is a 64-byte
//! Ethernet frame (46-byte IP packet: 14 bytes of Ethernet header and 4 of FCS
//! around it), the IPv6 side 20 bytes more (84-byte frame, 66-byte packet). The
//! ICMP error case is the smallest legitimate one instead: an RFC 792 quote (inner
//! IPv4 header plus 8 bytes) makes a 56-byte packet, a 74-byte frame.

// Each bench target compiles this module and uses a different subset of it.
#![allow(dead_code)]

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use sixgate_core::addr::{Eam, EamTable, Rfc6052Prefix};
use sixgate_core::mapt::{MapRule, MaptConfig, Role};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_testkit::{Ip4, Ip6, truncate};

/// UDP payload that makes a 46-byte IPv4 / 66-byte IPv6 packet.
const UDP_PAYLOAD: usize = 18;
/// TCP payload for the same sizes (20-byte TCP header).
const TCP_PAYLOAD: usize = 6;
/// ICMP echo payload for the same sizes (8-byte ICMP header).
const ECHO_PAYLOAD: usize = 18;

/// The IPv4 host (reached through pool6).
const V4_HOST: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
/// The IPv6 host's IPv4 identity, inside the EAM 198.18.0.0/24.
const V6_HOST_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 5);

fn v6_host() -> Ipv6Addr {
    "2001:db8:1::5".parse().unwrap()
}

/// 198.51.100.7 under 2001:db8:64::/96.
fn v4_host_v6() -> Ipv6Addr {
    "2001:db8:64::c633:6407".parse().unwrap()
}

/// pool6 2001:db8:64::/96 and EAM 198.18.0.0/24 ↔ 2001:db8:1::/120.
pub fn config() -> Arc<Config> {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).expect("pool6");
    let mut cfg = Config::with_pool6(Some(pool6));
    let mut eam = EamTable::new();
    eam.insert(Eam {
        v4: [198, 18, 0, 0],
        v4_len: 24,
        v6: "2001:db8:1::".parse::<Ipv6Addr>().unwrap().octets(),
        v6_len: 120,
    })
    .expect("EAM entry");
    cfg.map.eam = eam;
    Arc::new(cfg)
}

/// One benchmark case: a name and the input packet.
pub struct Case {
    pub name: &'static str,
    pub packet: Vec<u8>,
}

/// Every case, in report order.
pub fn cases() -> Vec<Case> {
    let six = Ip6::new(v6_host(), v4_host_v6());
    let four = Ip4::new(V4_HOST, V6_HOST_V4);
    // What the IPv6 host sent, as the IPv4 side saw it, quoted RFC 792 style.
    let sent = Ip4::new(V6_HOST_V4, V4_HOST).udp(40000, 53, UDP_PAYLOAD);
    let cases = vec![
        Case {
            name: "udp_6to4",
            packet: six.udp(40000, 53, UDP_PAYLOAD),
        },
        Case {
            name: "udp_4to6",
            packet: four.udp(53, 40000, UDP_PAYLOAD),
        },
        Case {
            name: "tcp_6to4",
            packet: six.tcp(40000, 443, TCP_PAYLOAD),
        },
        Case {
            name: "icmp_echo_6to4",
            packet: six.echo_request(0x1234, 1, ECHO_PAYLOAD),
        },
        Case {
            name: "icmp_echo_4to6",
            packet: four.echo_reply(0x1234, 1, ECHO_PAYLOAD),
        },
        Case {
            name: "icmp_error_4to6",
            packet: four.icmp_error(3, 3, [0; 4], &truncate(&sent, 28)),
        },
    ];
    for c in &cases {
        sixgate_testkit::check(&c.packet).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    }
    cases
}

/// A MAP-T BR (RFC 7599) of Lencse & Nagy's example domain: BMR
/// 2001:db8:ce::/51 ↔ 192.0.2.0/24, 13 EA bits, a = 0; the DMR is [`config`]'s
/// pool6, so the IPv4 host is the same.
pub fn mapt_br_config() -> Arc<Config> {
    let dmr = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).expect("DMR");
    let mut cfg = Config::with_pool6(Some(dmr));
    let rule = MapRule::new(
        "2001:db8:ce::".parse().unwrap(),
        51,
        Ipv4Addr::new(192, 0, 2, 0),
        24,
        13,
        0,
    )
    .expect("rule");
    cfg.mapt = Some(MaptConfig {
        dmr,
        fmrs: vec![rule],
        role: Role::Br,
        hash_key: MaptConfig::DEFAULT_HASH_KEY,
    });
    Arc::new(cfg)
}

/// The BR's cases, sized as [`cases`]' UDP ones: the CE 192.0.2.8 PSID 27
/// (MAP address 2001:db8:ce:11b:0:c000:208:1b) with port 55300, in its set.
pub fn mapt_cases() -> Vec<Case> {
    let ce6: Ipv6Addr = "2001:db8:ce:11b:0:c000:208:1b".parse().unwrap();
    let ce4 = Ipv4Addr::new(192, 0, 2, 8);
    vec![
        Case {
            name: "mapt_br_udp_6to4",
            packet: Ip6::new(ce6, v4_host_v6()).udp(55300, 53, UDP_PAYLOAD),
        },
        Case {
            name: "mapt_br_udp_4to6",
            packet: Ip4::new(V4_HOST, ce4).udp(53, 55300, UDP_PAYLOAD),
        },
    ]
}

/// A case by name, with its configuration: [`cases`] with [`config`], or
/// [`mapt_cases`] with [`mapt_br_config`].
pub fn case_by_name(name: &str) -> Option<(Case, Arc<Config>)> {
    if let Some(c) = cases().into_iter().find(|c| c.name == name) {
        return Some((c, config()));
    }
    mapt_cases()
        .into_iter()
        .find(|c| c.name == name)
        .map(|c| (c, mapt_br_config()))
}

/// A translator, scratch area and buffer ready to translate `packet` in place.
pub struct Bench {
    pub translator: Translator,
    pub scratch: Scratch,
    pub buf: Vec<u8>,
    pub len: usize,
}

impl Bench {
    pub fn new(cfg: Arc<Config>, packet: &[u8]) -> Self {
        let mut buf = vec![0u8; HEADROOM + packet.len()];
        buf[HEADROOM..].copy_from_slice(packet);
        Bench {
            translator: Translator::new(cfg),
            scratch: Scratch::new(),
            buf,
            len: packet.len(),
        }
    }

    /// Put the original packet bytes back (translation rewrote them in place).
    #[inline(always)]
    pub fn restore(&mut self, packet: &[u8]) {
        self.buf[HEADROOM..].copy_from_slice(packet);
    }

    /// Translate the packet now in the buffer.
    #[inline(always)]
    pub fn translate(&mut self) -> Verdict {
        let mut pkt = PacketBuf::new(&mut self.buf, HEADROOM, self.len);
        self.translator.translate(&mut pkt, &mut self.scratch, 0)
    }
}

/// Warn (once per case) when a case is not translated: numbers for a drop path
/// would be meaningless as translation costs.
pub fn warn_unless_translated(name: &str, verdict: Verdict) {
    if verdict != Verdict::Translated {
        eprintln!("WARNING: {name} is not translated ({verdict:?}); its numbers measure that path");
    }
}

pub mod nat64;
