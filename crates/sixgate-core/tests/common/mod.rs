//! Shared harness for the core's integration tests.
#![allow(dead_code)]

use sixgate_core::addr::{Eam, Rfc6052Prefix};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// 2001:db8:64::/96, the pool6 of the sample configuration.
pub fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

/// The sample configuration: pool6 2001:db8:64::/96, EAM 198.18.0.0/24 ↔ 2001:db8:1::/120.
pub fn sample_config() -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    cfg.map
        .eam
        .insert(
            Eam::new(
                Ipv4Addr::new(198, 18, 0, 0),
                24,
                "2001:db8:1::".parse().unwrap(),
                120,
            )
            .unwrap(),
        )
        .unwrap();
    cfg
}

/// An IPv6-side client (EAM'd to 198.18.0.5).
pub const CLIENT6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5);
/// Its IPv4 face.
pub const CLIENT4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 5);
/// An IPv4 server.
pub const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
/// The same server as the IPv6 side sees it (pool6).
pub const SERVER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6407);
/// An IPv4 router between the translator and the server.
pub const ROUTER4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
/// That router through pool6.
pub const ROUTER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xcb00, 0x7101);

/// A translator plus buffers, as a data plane would hold them.
pub struct Harness {
    pub t: Translator,
    pub scratch: Scratch,
    pub now_ns: u64,
}

impl Harness {
    pub fn new(cfg: Config) -> Self {
        Harness {
            t: Translator::new(Arc::new(cfg)),
            scratch: Scratch::new(),
            now_ns: 0,
        }
    }

    pub fn sample() -> Self {
        Self::new(sample_config())
    }

    /// Translate `input`; return the verdict and every output packet, each of
    /// which has been checked by the independent oracle.
    pub fn run(&mut self, input: &[u8]) -> (Verdict, Vec<Vec<u8>>) {
        let (v, out) = self.run_unchecked(input);
        for p in &out {
            if let Err(e) = sixgate_testkit::check_with(p, checks_for(p)) {
                panic!("oracle rejects output {p:02x?}: {e}");
            }
        }
        (v, out)
    }

    /// As [`Self::run`] without the oracle.
    pub fn run_unchecked(&mut self, input: &[u8]) -> (Verdict, Vec<Vec<u8>>) {
        let mut buf = vec![0u8; HEADROOM + input.len() + 64];
        buf[HEADROOM..HEADROOM + input.len()].copy_from_slice(input);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
        let v = self.t.translate(&mut pkt, &mut self.scratch, self.now_ns);
        let out = v
            .outputs(pkt.data(), &self.scratch)
            .map(<[u8]>::to_vec)
            .collect();
        (v, out)
    }

    /// Translate and expect exactly one translated packet.
    pub fn one(&mut self, input: &[u8]) -> Vec<u8> {
        let (v, mut out) = self.run(input);
        assert_eq!(v, Verdict::Translated, "verdict");
        out.pop().unwrap()
    }
}

/// Fragments' L4 checksums cannot be verified alone.
fn checks_for(p: &[u8]) -> sixgate_testkit::Checks {
    match sixgate_testkit::check_structure(p) {
        Ok(s) if s.is_fragment() => sixgate_testkit::Checks::IP_ONLY,
        _ => sixgate_testkit::Checks::ALL,
    }
}

/// The oracle's view of a packet.
pub fn view(p: &[u8]) -> sixgate_testkit::Summary {
    sixgate_testkit::check_with(p, checks_for(p)).unwrap()
}

/// Upper-layer bytes of an IP packet without extension headers or options.
pub fn l4(p: &[u8]) -> &[u8] {
    match p[0] >> 4 {
        4 => &p[usize::from(p[0] & 15) * 4..],
        _ => &p[40..],
    }
}

/// MAP-T (RFC 7599): Lencse & Nagy's example domain, BMR = FMR 2001:db8:ce::/51 ↔
/// 192.0.2.0/24, 13 EA bits, a = 0; DMR 2001:db8:ffff::/96.
pub mod mapt {
    use super::Harness;
    use sixgate_core::Config;
    use sixgate_core::addr::Rfc6052Prefix;
    use sixgate_core::mapt::{CeConfig, MapRule, MaptConfig, Napt44Config, Role};
    use std::net::{Ipv4Addr, Ipv6Addr};

    pub const CE4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 8);
    /// 2001:db8:ce:11b:0:c000:208:1b, the CE's MAP address (RFC 7597 §5.2).
    pub const CE6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11b, 0, 0xc000, 0x0208, 0x1b);
    pub const SERVER: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
    /// SERVER through the DMR.
    pub const SERVER_D: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0xc633, 0x640a);
    pub const LAN_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    pub const PORTS: std::ops::RangeInclusive<u16> = 55296..=57343;

    pub fn bmr() -> MapRule {
        MapRule::new(
            "2001:db8:ce::".parse().unwrap(),
            51,
            "192.0.2.0".parse().unwrap(),
            24,
            13,
            0,
        )
        .unwrap()
    }

    pub fn dmr() -> Rfc6052Prefix {
        Rfc6052Prefix::new("2001:db8:ffff::".parse().unwrap(), 96).unwrap()
    }

    pub fn config(role: Role) -> Config {
        let mut cfg = Config::with_pool6(Some(dmr()));
        cfg.map.wkp_strict = false;
        cfg.mapt = Some(MaptConfig {
            dmr: dmr(),
            fmrs: vec![bmr()],
            role,
            hash_key: 7,
        });
        cfg
    }

    pub fn br() -> Harness {
        Harness::new(config(Role::Br))
    }

    pub fn ce() -> Harness {
        let c = CeConfig::new(
            bmr(),
            ("2001:db8:ce:11b::".parse().unwrap(), 64),
            (Ipv4Addr::new(10, 0, 0, 0), 24),
            Napt44Config::default(),
        )
        .unwrap();
        Harness::new(config(Role::Ce(Box::new(c))))
    }
}

// ---- fragments ----

pub fn reassemble(frags: &[Vec<u8>]) -> (Vec<u8>, sixgate_testkit::Summary) {
    let mut data = vec![];
    let mut first = None;
    for f in frags {
        let s = sixgate_testkit::check_structure(f).unwrap();
        let fr = s.fragment.unwrap_or(sixgate_testkit::Fragment {
            offset: 0,
            more: false,
            id: 0,
        });
        // Fragments here carry no options and no extension header but the Fragment header.
        let payload = if s.family == sixgate_testkit::Family::V4 {
            l4(f)
        } else {
            &f[48..]
        };
        let end = usize::from(fr.offset) + payload.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[usize::from(fr.offset)..end].copy_from_slice(payload);
        if fr.offset == 0 {
            first = Some(s);
        }
    }
    (data, first.unwrap())
}

/// Translate `frags` in order; every output, and the verdicts.
pub fn run_all(h: &mut Harness, frags: &[Vec<u8>]) -> (Vec<Verdict>, Vec<Vec<u8>>) {
    let mut verdicts = Vec::new();
    let mut outs = Vec::new();
    for f in frags {
        let (v, o) = h.run(f);
        verdicts.push(v);
        outs.extend(o);
    }
    (verdicts, outs)
}

/// The ICMP checksum of the reassembled message covers it whole: ICMPv4
/// alone, ICMPv6 with its pseudo-header (RFC 8200 §8.1, the whole length).
pub fn icmp_verifies(outs: &[Vec<u8>]) -> bool {
    let (msg, first) = reassemble(outs);
    match (first.src, first.dst) {
        (std::net::IpAddr::V6(s), std::net::IpAddr::V6(d)) => {
            let ps = sixgate_testkit::csum::pseudo_v6(s.octets(), d.octets(), 58, msg.len());
            sixgate_testkit::csum::verifies(ps, &msg)
        }
        _ => sixgate_testkit::csum::verifies(0, &msg),
    }
}
