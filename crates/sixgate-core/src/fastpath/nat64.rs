//! Stateful NAT64 sessions on the fast path (RFC 6146; docs/fastpath.md,
//! "NAT64 established sessions").
//!
//! The core stays the only RFC 6146 authority: it creates sessions, runs the
//! TCP state machine, filters, limits and expires. A session it has settled
//! (TCP ESTABLISHED, or UDP / ICMP query) can be *installed* in the program as
//! two map entries, one per direction: the key is the packet as it arrives,
//! the value what it leaves with. [`entries`] is that session-to-entry
//! function, in the layout of `bpf/nat64.h`; [`is_candidate`] says which
//! packets the program then translates (given the installed keys): the SIIT
//! header rules of [`super::is_fast_path_candidate`], and no TCP SYN, FIN or
//! RST, which change the session's state (§3.5.2.2) and so go up to the core.
//!
//! What the core would do with such a packet is exactly what the entry says:
//! the §3.5.1.1 / §3.5.2.1 look-up finds the session, the packet refreshes it
//! (the program writes a coarse last-seen that the data plane hands back to
//! the core before expiry), and the addresses and ports are rewritten
//! (§3.5.1, §3.5.2, §3.5.3 for the ICMP identifier).

use crate::config::Config;
use crate::nat64::{Proto, Replica, tcp::TcpState};
use crate::packet::ipv4;
use crate::packet::ipv6::nh;
use crate::rfc7915::icmp_map::{v4 as icmp4, v6 as icmp6};

/// `struct nat64_key6` of bpf/nat64.h: an IPv6 packet as it arrives.
/// Ports in network byte order; ICMP: the identifier in both.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Key6 {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: [u8; 2],
    pub dport: [u8; 2],
    /// 6, 17 or 58.
    pub proto: u8,
    pub _pad: [u8; 3],
}

/// `struct nat64_key4`: an IPv4 packet as it arrives.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Key4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: [u8; 2],
    pub dport: [u8; 2],
    /// 6, 17 or 1.
    pub proto: u8,
    pub _pad: [u8; 3],
}

/// `struct nat64_to4`: what a [`Key6`] packet leaves with, and the two
/// pseudo-header address sums (RFC 1071) its L4 checksum moves between
/// (RFC 1624), precomputed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct To4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: [u8; 2],
    pub dport: [u8; 2],
    /// Sum of the IPv6 source and destination (the packet's).
    pub sum6: u16,
    /// Sum of the IPv4 source and destination (the translation's).
    pub sum4: u16,
    /// `bpf_ktime_get_ns()` of a packet, written by the program at most
    /// about once a second; 0 when installed.
    pub last_seen_ns: u64,
}

/// `struct nat64_to6`: what a [`Key4`] packet leaves with.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct To6 {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: [u8; 2],
    pub dport: [u8; 2],
    /// Sum of the IPv4 source and destination (the packet's).
    pub sum4: u16,
    /// Sum of the IPv6 source and destination (the translation's).
    pub sum6: u16,
    pub last_seen_ns: u64,
}

/// Both directions of one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entries {
    pub key6: Key6,
    pub to4: To4,
    pub key4: Key4,
    pub to6: To6,
}

/// Is session `r` settled enough for the program: TCP in ESTABLISHED
/// (RFC 6146 §3.5.2.2: only SYN, FIN and RST move it on, and those go up),
/// or UDP (§3.5.1) or an ICMP query (§3.5.3), whose packets only refresh it.
pub fn installable(r: &Replica) -> bool {
    match r.proto {
        Proto::Tcp => r.tcp_state == Some(TcpState::Established),
        Proto::Udp | Proto::Icmp => true,
    }
}

/// The program's two entries for session `r` under `cfg`, or `None` when it
/// stays on the slow path: not [`installable`], a hairpin (§3.8: the remote
/// is in pool4, the core turns it round), or a remote whose IPv6 form does
/// not map back to it (the 6→4 key would not be the packet the core maps).
pub fn entries(cfg: &Config, r: &Replica) -> Option<Entries> {
    let n = cfg.nat64.as_ref()?;
    if !installable(r) {
        return None;
    }
    let remote4 = u32::from(r.remote4);
    if n.pool4.iter().any(|p| p.contains(remote4)) {
        return None;
    }
    // RFC 1812 §5.3.7, strict: a remote in 240/4 (`class_e = "translate"`)
    // stays on the slow path.
    if ipv4::is_bad_destination(r.remote4.octets()) || ipv4::is_bad_source(r.remote4.octets()) {
        return None;
    }
    // §3.5.1.2: the remote's IPv6 form is its pool6 (or EAM) embedding, and
    // the 6→4 path maps it back (RFC 6052 §2.2).
    let remote6 = cfg.map.map_v4(remote4).ok()?;
    if cfg.map.map_v6(remote6) != Ok(remote4) {
        return None;
    }
    let (p6, p4) = match r.proto {
        Proto::Tcp => (nh::TCP, nh::TCP),
        Proto::Udp => (nh::UDP, nh::UDP),
        Proto::Icmp => (nh::ICMPV6, nh::ICMP),
    };
    // ICMP (§3.5.3): the identifier is the BIB's on each side, in both
    // "ports"; the remote has none.
    let (rport6, rport4) = match r.proto {
        Proto::Icmp => (r.port6, r.port4),
        _ => (r.rport, r.rport),
    };
    let (host6, remote6) = (r.v6.octets(), remote6.to_be_bytes());
    let (pool4, remote4) = (r.v4.octets(), r.remote4.octets());
    let sum6 = crate::checksum::v6_addr_sum(&host6, &remote6);
    let sum4 = crate::checksum::v4_addr_sum(&pool4, &remote4);
    let be = u16::to_be_bytes;
    Some(Entries {
        key6: Key6 {
            src: host6,
            dst: remote6,
            sport: be(r.port6),
            dport: be(rport6),
            proto: p6,
            _pad: [0; 3],
        },
        to4: To4 {
            src: pool4,
            dst: remote4,
            sport: be(r.port4),
            dport: be(rport4),
            sum6,
            sum4,
            last_seen_ns: 0,
        },
        key4: Key4 {
            src: remote4,
            dst: pool4,
            sport: be(rport4),
            dport: be(r.port4),
            proto: p4,
            _pad: [0; 3],
        },
        to6: To6 {
            src: remote6,
            dst: host6,
            sport: be(rport6),
            dport: be(r.port6),
            sum4,
            sum6: crate::checksum::v6_addr_sum(&remote6, &host6),
            last_seen_ns: 0,
        },
    })
}

/// The key of the program's IPv4 Identification counters in mode nat64
/// (RFC 6864, [`crate::ipv4_id`]): every NAT64 flow's first packets take
/// the worker, the rest the program, so with the workers' own key both would
/// count the same sequence from the same start values and repeat each
/// other's IDs for the same addresses at once. A derived key makes the two
/// sequences unrelated.
pub fn program_id_key(ipv4_id_key: u64) -> u64 {
    // "nat64 fp" in ASCII.
    ipv4_id_key ^ 0x6e61_7436_3420_6670
}

/// TCP flags that change a session's state (§3.5.2.2): FIN, SYN, RST.
const STATE_FLAGS: u8 = 0x07;

/// The key of `l4` under `proto`: the ports, or the Echo identifier twice.
fn ports(proto: u8, icmp: u8, l4: &[u8]) -> ([u8; 2], [u8; 2]) {
    if proto == icmp {
        ([l4[4], l4[5]], [l4[4], l4[5]])
    } else {
        ([l4[0], l4[1]], [l4[2], l4[3]])
    }
}

/// Is `ip` a packet the program translates under `cfg` in mode nat64, given
/// which keys are installed (`has6`, `has4`)? The SIIT header rules (no
/// options or extension headers, no fragment, TTL / hop limit above 1, the
/// MTUs, TCP / UDP with a checksum / ICMP Echo), no TCP SYN, FIN or RST,
/// and its key installed.
pub fn is_candidate(
    cfg: &Config,
    ip: &[u8],
    has6: impl Fn(&Key6) -> bool,
    has4: impl Fn(&Key4) -> bool,
) -> bool {
    if cfg.nat64.is_none() || super::unsupported(cfg).is_some() {
        return false;
    }
    match ip.first().map(|b| b >> 4) {
        Some(6) => v6_candidate(cfg, ip, has6),
        Some(4) => v4_candidate(cfg, ip, has4),
        _ => false,
    }
}

fn tcp_settled(proto: u8, l4: &[u8]) -> bool {
    proto != nh::TCP || l4[13] & STATE_FLAGS == 0
}

fn v6_candidate(cfg: &Config, ip: &[u8], has: impl Fn(&Key6) -> bool) -> bool {
    let Some(plen) = super::v6_header_fits(cfg, ip) else {
        return false;
    };
    let (proto, l4) = (ip[6], &ip[40..40 + plen]);
    let echo = [icmp6::ECHO_REQUEST, icmp6::ECHO_REPLY];
    if !super::l4_ok(proto, nh::ICMPV6, echo, l4) || !tcp_settled(proto, l4) {
        return false;
    }
    let (sport, dport) = ports(proto, nh::ICMPV6, l4);
    has(&Key6 {
        src: ip[8..24].try_into().unwrap_or_default(),
        dst: ip[24..40].try_into().unwrap_or_default(),
        sport,
        dport,
        proto,
        _pad: [0; 3],
    })
}

fn v4_candidate(cfg: &Config, ip: &[u8], has: impl Fn(&Key4) -> bool) -> bool {
    let Some(total) = super::v4_header_fits(cfg, ip) else {
        return false;
    };
    let (proto, l4) = (ip[9], &ip[20..total]);
    let echo = [icmp4::ECHO_REQUEST, icmp4::ECHO_REPLY];
    if !super::l4_ok(proto, nh::ICMP, echo, l4) || !tcp_settled(proto, l4) {
        return false;
    }
    let (sport, dport) = ports(proto, nh::ICMP, l4);
    has(&Key4 {
        src: ip[12..16].try_into().unwrap_or_default(),
        dst: ip[16..20].try_into().unwrap_or_default(),
        sport,
        dport,
        proto,
        _pad: [0; 3],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Rfc6052Prefix;
    use crate::nat64::{Nat64Config, Pool4Entry};
    use sixgate_testkit::{Ip4, Ip6};
    use std::net::{Ipv4Addr, Ipv6Addr};

    const H6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5);
    const R4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 33);
    const R6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc000, 0x0221);
    const P4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

    fn cfg() -> Config {
        let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
        let mut c = Config::with_pool6(Some(pool6));
        c.nat64 = Some(Nat64Config {
            pool4: vec![Pool4Entry::single(P4)],
            ..Nat64Config::default()
        });
        c
    }

    fn replica(proto: Proto, state: Option<TcpState>) -> Replica {
        Replica {
            proto,
            tcp_state: state,
            remaining_ms: 1000,
            v6: H6,
            port6: 4000,
            v4: P4,
            port4: 5000,
            remote4: R4,
            rport: 80,
        }
    }

    fn installed(c: &Config, r: &Replica) -> (impl Fn(&Key6) -> bool, impl Fn(&Key4) -> bool) {
        let e = entries(c, r).unwrap();
        (move |k: &Key6| *k == e.key6, move |k: &Key4| *k == e.key4)
    }

    /// RFC 6146 §3.5.2.2: only an ESTABLISHED TCP session is installed; UDP
    /// (§3.5.1) and ICMP query (§3.5.3) sessions are at once.
    #[test]
    fn rfc6146_s3_5_2_2_only_established_tcp_is_installed() {
        let c = cfg();
        assert!(entries(&c, &replica(Proto::Tcp, Some(TcpState::V6Init))).is_none());
        assert!(entries(&c, &replica(Proto::Tcp, Some(TcpState::V4FinRcv))).is_none());
        assert!(entries(&c, &replica(Proto::Tcp, Some(TcpState::Established))).is_some());
        assert!(entries(&c, &replica(Proto::Udp, None)).is_some());
        assert!(entries(&c, &replica(Proto::Icmp, None)).is_some());
    }

    /// RFC 6146 §3.5.1.1 / §3.5.1.2: the 6→4 key is (host, remote's pool6
    /// form, ports) and leaves with the BIB's pool4 transport address; the
    /// 4→6 key is the reverse.
    #[test]
    fn rfc6146_s3_5_1_entries_are_both_directions_of_the_session() {
        let e = entries(&cfg(), &replica(Proto::Udp, None)).unwrap();
        assert_eq!(e.key6.src, H6.octets());
        assert_eq!(e.key6.dst, R6.octets());
        assert_eq!(
            (e.key6.sport, e.key6.dport),
            (4000u16.to_be_bytes(), 80u16.to_be_bytes())
        );
        assert_eq!((e.to4.src, e.to4.dst), (P4.octets(), R4.octets()));
        assert_eq!(e.to4.sport, 5000u16.to_be_bytes());
        assert_eq!((e.key4.src, e.key4.dst), (R4.octets(), P4.octets()));
        assert_eq!(e.key4.dport, 5000u16.to_be_bytes());
        assert_eq!((e.to6.src, e.to6.dst), (R6.octets(), H6.octets()));
        assert_eq!(e.to6.dport, 4000u16.to_be_bytes());
        assert_eq!(e.key4.proto, nh::UDP);
    }

    /// RFC 6146 §3.5.3: an ICMP query session's identifier is the BIB's on
    /// each side.
    #[test]
    fn rfc6146_s3_5_3_icmp_identifier_on_both_sides() {
        let e = entries(&cfg(), &replica(Proto::Icmp, None)).unwrap();
        assert_eq!(e.key6.proto, nh::ICMPV6);
        assert_eq!(e.key4.proto, nh::ICMP);
        assert_eq!(e.key6.sport, e.key6.dport);
        assert_eq!(e.to4.sport, 5000u16.to_be_bytes());
        assert_eq!(e.key4.dport, 5000u16.to_be_bytes());
        assert_eq!(e.to6.dport, 4000u16.to_be_bytes());
    }

    /// RFC 6864 §4: the program's Identification sequence is not the
    /// workers'.
    #[test]
    fn rfc6864_s4_program_ids_are_not_the_workers() {
        use crate::ipv4_id::Ipv4IdGenerator;
        let k = cfg().ipv4_id_key;
        assert_ne!(program_id_key(k), k);
        assert_ne!(
            Ipv4IdGenerator::start_values(program_id_key(k)),
            Ipv4IdGenerator::start_values(k)
        );
    }

    /// RFC 6146 §3.8: a session whose remote is in pool4 is hairpinned by
    /// the core, never installed.
    #[test]
    fn rfc6146_s3_8_hairpin_is_not_installed() {
        let mut r = replica(Proto::Udp, None);
        r.remote4 = P4;
        assert!(entries(&cfg(), &r).is_none());
    }

    /// RFC 6146 §3.5.2.2: SYN, FIN and RST move the state machine: up to the
    /// core; other segments of an installed session are candidates both ways.
    #[test]
    fn rfc6146_s3_5_2_2_syn_fin_rst_go_up() {
        let c = cfg();
        let r = replica(Proto::Tcp, Some(TcpState::Established));
        let (h6, h4) = installed(&c, &r);
        let out = Ip6::new(H6, R6).tcp(4000, 80, 100);
        let back = Ip4::new(R4, P4).tcp(80, 5000, 100);
        assert!(is_candidate(&c, &out, &h6, &h4));
        assert!(is_candidate(&c, &back, &h6, &h4));
        for flag in [0x01, 0x02, 0x04] {
            let mut p = out.clone();
            p[40 + 13] |= flag;
            assert!(!is_candidate(&c, &p, &h6, &h4), "flag {flag:#x}");
            let mut p = back.clone();
            p[20 + 13] |= flag;
            // The header checksum does not cover TCP: still valid.
            assert!(!is_candidate(&c, &p, &h6, &h4), "flag {flag:#x}");
        }
        // Another remote port: another session, not installed.
        assert!(!is_candidate(
            &c,
            &Ip6::new(H6, R6).tcp(4000, 81, 10),
            &h6,
            &h4
        ));
    }

    /// RFC 7915 §5.1 / §4.1 (the SIIT header rules hold in NAT64 too): a
    /// fragment or an expiring hop limit of an installed session goes up.
    #[test]
    fn rfc7915_s4_1_s5_1_header_rules_hold() {
        let c = cfg();
        let r = replica(Proto::Udp, None);
        let (h6, h4) = installed(&c, &r);
        assert!(is_candidate(
            &c,
            &Ip6::new(H6, R6).udp(4000, 80, 10),
            &h6,
            &h4
        ));
        assert!(!is_candidate(
            &c,
            &Ip6::new(H6, R6).hop_limit(1).udp(4000, 80, 10),
            &h6,
            &h4
        ));
        assert!(!is_candidate(
            &c,
            &Ip6::new(H6, R6)
                .fragment_header(0, true, 1)
                .udp(4000, 80, 10),
            &h6,
            &h4
        ));
        assert!(!is_candidate(
            &c,
            &Ip4::new(R4, P4).ttl(1).udp(80, 5000, 10),
            &h6,
            &h4
        ));
        assert!(!is_candidate(
            &c,
            &Ip4::new(R4, P4).udp_zero_checksum(80, 5000, 10),
            &h6,
            &h4
        ));
    }
}
