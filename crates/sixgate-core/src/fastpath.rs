//! Which packets an in-kernel fast path may translate (docs/fastpath.md).
//!
//! The eBPF translator (`crates/sixgate-fastpath/bpf/siit.h`, TC and XDP)
//! takes only the common, easy packets and passes everything else up unchanged to a data
//! plane running this core. This module is the Rust statement of that scope:
//! [`unsupported`] says whether a configuration can have a fast path at all,
//! [`is_fast_path_candidate`] whether one packet is in it. The differential
//! test runs the program and [`crate::Translator`] on the same packets and
//! checks that the program translates exactly the candidates, byte for byte as
//! the core does, and passes up the rest; so a packet the program takes is one
//! the core translates with no decision of its own (no error, no drop, no
//! state but the IPv4 Identification counters, which the program keeps the
//! same way per CPU: [`crate::ipv4_id::Ipv4IdGenerator::start_values`]).
//!
//! The modes in scope are SIIT, a CLAT (RFC 6877: SIIT with the PLAT prefix
//! as pool6 and the customer range as an EAM entry) and a MAP-T BR (RFC 7599
//! §7: the domain side from the Mapping Rules and the ports,
//! `bpf/mapt_br.h`); a MAP-T BR packet the core would drop for its port set
//! or MAP address (RFC 7597 §5.2, §8.1) is no candidate, so it still goes up
//! to be dropped and counted. In mode nat64 the stateless scope is empty and
//! [`nat64`] states the scope instead: the packets of the sessions a worker
//! installed.
//!
//! Two facts of the host's network, not of the configuration, narrow the
//! scope further, and the core cannot know them: the program translates only
//! what the kernel would route into the slow path's device, and only a packet
//! whose translation (each segment of a GSO packet) fits the egress MTU the
//! kernel's FIB reports for it (docs/fastpath.md, "Forwarding"); a larger one
//! goes up unchanged, so the core's own answer (fragments, Packet Too Big)
//! stands. The differential tests set both up identically on each side.

use crate::config::Config;
use crate::mapt::MaptConfig;
use crate::packet::ipv4;
use crate::packet::ipv6::nh;
use crate::rfc7915::icmp_map::{v4 as icmp4, v6 as icmp6};

pub mod nat64;

/// The pool6 prefix length the fast path embeds (RFC 6052 §2.2, /96: the IPv4
/// address is the last 32 bits, no u octet).
pub const POOL6_LEN: u8 = 96;

/// Why `cfg` cannot have a fast path in this version, or `None` when it can:
/// stateless SIIT with EAM entries and a /96 pool6 (or no pool6), a MAP-T
/// BR, or stateful NAT64 with a /96 pool6 (its installed sessions only:
/// [`nat64`]). A CLAT (RFC 6877) is such a SIIT configuration: its PLAT
/// prefix is pool6 and its customer range an EAM entry, so it needs nothing
/// more here.
pub fn unsupported(cfg: &Config) -> Option<&'static str> {
    if cfg.nat64.is_some() && cfg.map.pool6.is_none() {
        return Some("the NAT64 fast path needs pool6");
    }
    if let Some(m) = &cfg.mapt {
        return mapt_unsupported(cfg, m);
    }
    match cfg.map.pool6 {
        None if cfg.map.eam.is_empty() => Some("the fast path needs pool6 or EAM entries"),
        Some(p) if p.len() != POOL6_LEN => Some("the fast path needs a /96 pool6"),
        _ => None,
    }
}

/// The most Mapping Rules the program's tries hold (each side).
pub const MAPT_RULES_MAX: usize = 1024;

/// A MAP-T BR (RFC 7599 §7) with a /96 DMR, no EAM entries and at most
/// [`MAPT_RULES_MAX`] rules is in scope; a CE (its NAPT44 keeps state) is not.
fn mapt_unsupported(cfg: &Config, m: &MaptConfig) -> Option<&'static str> {
    if m.ce().is_some() {
        return Some("a MAP-T CE (its NAPT44 keeps state) is not on the fast path");
    }
    if !cfg.map.eam.is_empty() {
        return Some("MAP-T with EAM entries is not on the fast path");
    }
    if m.fmrs.len() > MAPT_RULES_MAX {
        return Some("the fast path holds at most 1024 MAP-T rules");
    }
    match cfg.map.pool6 {
        Some(p) if p.len() == POOL6_LEN => None,
        _ => Some("the fast path needs a /96 DMR"),
    }
}

/// The port a MAP-T rule reads from a TCP or UDP header (`source` or
/// destination), or an ICMP Echo's identifier (RFC 7599 §6); `l4` is a
/// header [`l4_ok`] accepted.
fn l4_port(proto: u8, l4: &[u8], source: bool) -> u16 {
    let at = match proto {
        nh::TCP | nh::UDP if source => 0,
        nh::TCP | nh::UDP => 2,
        _ => 4,
    };
    u16::from_be_bytes([l4[at], l4[at + 1]])
}

/// RFC 7599 §7, 6→4 at a BR: the IPv4 source of a MAP address (RFC 7597 §5.2:
/// under a rule, its interface identifier agreeing with its EA bits) sending
/// from its own port set (RFC 7597 §8.1), or `None`: the core drops it and
/// counts why. `l4` is a header [`l4_ok`] accepted.
fn mapt_source(m: &MaptConfig, src6: u128, proto: u8, l4: &[u8]) -> Option<u32> {
    let r = m.rule_for_v6(src6)?;
    let (v4, psid) = r.decode(src6)?;
    (r.psid_len() == 0 || r.port_in_set(l4_port(proto, l4, true), psid)).then_some(v4)
}

/// RFC 7599 §7, 4→6 at a BR: the MAP address of the CE that owns the
/// destination and its port (RFC 7597 §5.1, §5.2), or `None` outside the
/// domain's rules or for a port no PSID owns.
fn mapt_destination(m: &MaptConfig, dst4: u32, proto: u8, l4: &[u8]) -> Option<u128> {
    let r = m.rule_for_v4(dst4)?;
    let psid = match r.psid_len() {
        0 => 0,
        _ => r.psid_of_port(l4_port(proto, l4, false))?,
    };
    Some(r.map_address(dst4, psid))
}

/// Does the upper-layer header qualify: TCP (a whole header), UDP (a header
/// and a non-zero checksum, RFC 7915 §4.5/§5.5), or ICMP Echo / Echo Reply
/// with code 0 (§4.2, §5.2)? `icmp` is the protocol number of ICMP here.
pub(crate) fn l4_ok(proto: u8, icmp: u8, echo: [u8; 2], l4: &[u8]) -> bool {
    match proto {
        nh::TCP => l4.len() >= 20,
        nh::UDP => l4.len() >= 8 && l4[6..8] != [0, 0],
        p if p == icmp => l4.len() >= 8 && echo.contains(&l4[0]) && l4[1] == 0,
        _ => false,
    }
}

/// The IPv6 header rules of every fast-path translation (SIIT and NAT64;
/// `bpf/header_in.h`, `ip6_in` and `ipv4_fits`): a whole header, Payload
/// Length not 0 (a jumbogram or an empty packet) and within the frame
/// (link-layer padding beyond it is trimmed, as the core trims it), hop
/// limit above 1 (RFC 7915 §5.1: Time Exceeded is the core's), and an IPv4
/// form that needs neither fragmentation nor Packet Too Big (§5.1, §5.4; over
/// 65535 bytes there is none). The Payload Length, if so.
pub(crate) fn v6_header_fits(cfg: &Config, ip: &[u8]) -> Option<usize> {
    if ip.len() < 40 {
        return None;
    }
    let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    if plen == 0 || 40 + plen > ip.len() || ip[7] <= 1 {
        return None;
    }
    let len4 = 20 + plen;
    (len4 <= usize::from(u16::MAX) && cfg.ipv4_mtu.is_none_or(|m| len4 <= usize::from(m)))
        .then_some(plen)
}

/// The IPv4 header rules of every fast-path translation (`bpf/header_in.h`,
/// `ip4_in` and `ipv6_fits`): no options (IHL 5), a valid header checksum,
/// Total Length within the frame (padding beyond it trimmed, as the core
/// trims it), not a fragment (MF clear, offset 0), TTL above 1, and an IPv6
/// form that fits: DF=1 within the IPv6 MTU (RFC 7915 §4.4: else
/// Fragmentation Needed), DF=0 within the fragment limit (§4.1: else
/// fragmented). The Total Length, if so.
pub(crate) fn v4_header_fits(cfg: &Config, ip: &[u8]) -> Option<usize> {
    if ip.len() < 20 || ip[0] != 0x45 || crate::checksum::sum(&ip[..20]) != 0xffff {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let flags = u16::from_be_bytes([ip[6], ip[7]]);
    if total < 20 || total > ip.len() || flags & (ipv4::MF | ipv4::OFFSET_MASK) != 0 || ip[8] <= 1 {
        return None;
    }
    let out = 40 + total - 20;
    let fits = if flags & ipv4::DF != 0 {
        cfg.ipv6_mtu.is_none_or(|m| out <= usize::from(m))
    } else {
        out <= cfg.v6_fragment_limit()
    };
    fits.then_some(total)
}

/// Is `ip` (an IPv4 or IPv6 packet, maybe with link-layer padding) one the fast path
/// translates under `cfg`? Only when [`unsupported`] is `None`. A candidate has
/// no IPv4 options or IPv6 extension headers, is no fragment, has a TTL or
/// hop limit above 1, source and destination map (EAM, then pool6; on a
/// MAP-T BR the CE's side by its rule and port, RFC 7599 §7) to addresses
/// the core accepts and not into a hairpin, carries TCP, UDP with a
/// checksum, or ICMP Echo / Echo Reply, and fits the configured MTUs without
/// fragmentation or Packet Too Big.
pub fn is_fast_path_candidate(cfg: &Config, ip: &[u8]) -> bool {
    // NAT64: only installed sessions ([`nat64::is_candidate`]).
    if unsupported(cfg).is_some() || cfg.nat64.is_some() {
        return false;
    }
    match ip.first().map(|b| b >> 4) {
        Some(6) => v6_candidate(cfg, ip),
        Some(4) => v4_candidate(cfg, ip),
        _ => false,
    }
}

fn v6_candidate(cfg: &Config, ip: &[u8]) -> bool {
    let Some(plen) = v6_header_fits(cfg, ip) else {
        return false;
    };
    let src6 = u128::from_be_bytes(ip[8..24].try_into().unwrap_or_default());
    let dst6 = u128::from_be_bytes(ip[24..40].try_into().unwrap_or_default());
    // RFC 7915 §5.1: multicast, unspecified and loopback sources, multicast
    // destinations are dropped.
    if ip[8] == 0xff || src6 <= 1 || ip[24] == 0xff {
        return false;
    }
    let echo = [icmp6::ECHO_REQUEST, icmp6::ECHO_REPLY];
    let (proto, l4) = (ip[6], &ip[40..40 + plen]);
    if !l4_ok(proto, nh::ICMPV6, echo, l4) {
        return false;
    }
    // EAM, then pool6 (RFC 7757 §3.3), with the core's own mapper; on a
    // MAP-T BR the source is a CE's MAP address (RFC 7599 §7).
    let src4 = match &cfg.mapt {
        Some(m) => mapt_source(m, src6, proto, l4).ok_or(()),
        None => cfg.map.map_v6(src6).map_err(drop),
    };
    let (Ok(src4), Ok(dst4)) = (src4, cfg.map.map_v6(dst6)) else {
        return false;
    };
    // RFC 1812 §5.3.7, strict whatever `class_e` says: 240/4 goes up to the
    // core, which translates or drops it as configured.
    if ipv4::is_bad_source(src4.to_be_bytes()) || ipv4::is_bad_destination(dst4.to_be_bytes()) {
        return false;
    }
    // RFC 7757 §4: a hairpin goes back into IPv6 in the core; so does a MAP-T
    // BR's packet from one CE to another (RFC 7599 §7).
    if cfg.map.eam.lookup_v4(dst4).is_some() && cfg.map.eam.lookup_v6(dst6).is_none() {
        return false;
    }
    cfg.mapt
        .as_ref()
        .is_none_or(|m| m.rule_for_v4(dst4).is_none())
}

fn v4_candidate(cfg: &Config, ip: &[u8]) -> bool {
    let Some(total) = v4_header_fits(cfg, ip) else {
        return false;
    };
    let (src, dst) = (
        [ip[12], ip[13], ip[14], ip[15]],
        [ip[16], ip[17], ip[18], ip[19]],
    );
    // As in v6_candidate: 240/4 is the core's, whatever `class_e` says.
    if ipv4::is_bad_source(src) || ipv4::is_bad_destination(dst) {
        return false;
    }
    let echo = [icmp4::ECHO_REQUEST, icmp4::ECHO_REPLY];
    let (proto, l4) = (ip[9], &ip[20..total]);
    if !l4_ok(proto, nh::ICMP, echo, l4) {
        return false;
    }
    let map = |a: [u8; 4]| cfg.map.map_v4(u32::from_be_bytes(a)).is_ok();
    // On a MAP-T BR the destination is a CE's, by its port (RFC 7599 §7).
    let dst_ok = match &cfg.mapt {
        Some(m) => mapt_destination(m, u32::from_be_bytes(dst), proto, l4).is_some(),
        None => map(dst),
    };
    map(src) && dst_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Eam, Rfc6052Prefix};
    use sixgate_testkit::{Ip4, Ip6};
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn cfg() -> Config {
        let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
        let mut c = Config::with_pool6(Some(pool6));
        let e = Eam::new(
            Ipv4Addr::new(198, 18, 0, 0),
            24,
            "2001:db8:1::".parse().unwrap(),
            120,
        )
        .unwrap();
        c.map.eam.insert(e).unwrap();
        c
    }
    const H6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5);
    const S6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc000, 0x0221);
    const S4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 33);
    const H4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 5);

    /// RFC 7915 §5.1 / §4.1: the plain TCP, UDP and Echo packets are in scope.
    #[test]
    fn rfc7915_s4_1_s5_1_plain_packets_are_candidates() {
        let c = cfg();
        for ip in [
            Ip6::new(H6, S6).tcp(1, 2, 10),
            Ip6::new(H6, S6).udp(1, 2, 10),
            Ip6::new(H6, S6).echo_request(1, 2, 10),
            Ip4::new(S4, H4).tcp(1, 2, 10),
            Ip4::new(S4, H4).udp(1, 2, 10),
            Ip4::new(S4, H4).echo_reply(1, 2, 10),
        ] {
            assert!(is_fast_path_candidate(&c, &ip), "{ip:02x?}");
        }
    }

    /// RFC 7915 §5.1 / §4.1: extension headers, options, fragments and an
    /// expiring hop limit or TTL are the core's.
    #[test]
    fn rfc7915_s4_1_s5_1_headers_fragments_and_ttl_are_slow_path() {
        let c = cfg();
        for ip in [
            Ip6::new(H6, S6).hop_by_hop().udp(1, 2, 10),
            Ip6::new(H6, S6).fragment_header(0, true, 1).udp(1, 2, 10),
            Ip6::new(H6, S6).hop_limit(1).udp(1, 2, 10),
            Ip4::new(S4, H4).options(&[1, 1, 1, 1]).udp(1, 2, 10),
            Ip4::new(S4, H4).df(false).fragment(17, 0, true, &[0; 16]),
            Ip4::new(S4, H4).ttl(1).udp(1, 2, 10),
        ] {
            assert!(!is_fast_path_candidate(&c, &ip), "{ip:02x?}");
        }
    }

    /// RFC 7915 §4.2 / §5.2: ICMP errors and non-Echo ICMP are the core's;
    /// §4.5 / §5.5: so is a UDP checksum of zero.
    #[test]
    fn rfc7915_s4_2_s4_5_icmp_errors_and_zero_udp_checksum_are_slow_path() {
        let c = cfg();
        let inner = Ip4::new(H4, S4).udp(1, 2, 8);
        assert!(!is_fast_path_candidate(
            &c,
            &Ip4::new(S4, H4).icmp_error(3, 3, [0; 4], &inner)
        ));
        assert!(!is_fast_path_candidate(
            &c,
            &Ip6::new(H6, S6).icmp(1, 4, [0; 4], &[0; 28])
        ));
        assert!(!is_fast_path_candidate(
            &c,
            &Ip4::new(S4, H4).udp_zero_checksum(1, 2, 8)
        ));
    }

    /// RFC 7757 §4: a hairpin (pool6 form of an EAM'd IPv4 address) goes
    /// back into IPv6 in the core.
    #[test]
    fn rfc7757_s4_hairpin_is_slow_path() {
        let c = cfg();
        let hairpin: Ipv6Addr = "2001:db8:64::c612:7".parse().unwrap();
        assert!(!is_fast_path_candidate(
            &c,
            &Ip6::new(H6, hairpin).udp(1, 2, 8)
        ));
    }

    /// RFC 7915 §5.4 / §4.4: a packet over a configured MTU gets the core's
    /// Packet Too Big, Fragmentation Needed or fragmentation.
    #[test]
    fn rfc7915_s4_4_s5_4_over_an_mtu_is_slow_path() {
        let mut c = cfg();
        c.ipv4_mtu = Some(1300);
        c.ipv6_mtu = Some(1300);
        assert!(!is_fast_path_candidate(
            &c,
            &Ip6::new(H6, S6).udp(1, 2, 1400)
        ));
        assert!(!is_fast_path_candidate(
            &c,
            &Ip4::new(S4, H4).udp(1, 2, 1400)
        ));
        assert!(!is_fast_path_candidate(
            &c,
            &Ip4::new(S4, H4).df(false).udp(1, 2, 1300)
        ));
    }

    /// RFC 6877 §6.3: a CLAT's configuration (PLAT prefix as pool6, the
    /// customer range as an EAM entry, hairpinning off) is in scope; a
    /// customer reached through the PLAT prefix is a hairpin, the core's.
    #[test]
    fn rfc6877_s6_3_clat_is_siit_on_the_fast_path() {
        let pool6 = Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap();
        let mut c = Config::with_pool6(Some(pool6));
        c.map
            .eam
            .insert(Eam::parse("192.0.0.0/29", "2001:db8:c1a7::/125").unwrap())
            .unwrap();
        c.hairpin = crate::config::HairpinMode::Off;
        assert_eq!(unsupported(&c), None);
        let customer4 = Ipv4Addr::new(192, 0, 0, 2);
        let customer6: Ipv6Addr = "2001:db8:c1a7::2".parse().unwrap();
        let server = Ipv4Addr::new(8, 8, 4, 4);
        let server6 = pool6.embed(server);
        assert!(is_fast_path_candidate(
            &c,
            &Ip4::new(customer4, server).tcp(1, 2, 10)
        ));
        assert!(is_fast_path_candidate(
            &c,
            &Ip6::new(server6, customer6).udp(1, 2, 10)
        ));
        let other = pool6.embed(Ipv4Addr::new(192, 0, 0, 3));
        assert!(!is_fast_path_candidate(
            &c,
            &Ip6::new(customer6, other).udp(1, 2, 10)
        ));
    }

    /// RFC 7599 §7 at a BR, the domain of the core's RFC 7599 tests (Lencse
    /// & Nagy): BMR = FMR 2001:db8:ce::/51 ↔ 192.0.2.0/24, 13 EA bits, a = 0;
    /// DMR 2001:db8:ffff::/96. The CE 192.0.2.8 PSID 27 owns 55296–57343.
    fn br() -> Config {
        use crate::mapt::{MapRule, MaptConfig, Role};
        let dmr = Rfc6052Prefix::new("2001:db8:ffff::".parse().unwrap(), 96).unwrap();
        let mut c = Config::with_pool6(Some(dmr));
        let bmr = MapRule::new(
            "2001:db8:ce::".parse().unwrap(),
            51,
            Ipv4Addr::new(192, 0, 2, 0),
            24,
            13,
            0,
        )
        .unwrap();
        c.mapt = Some(MaptConfig {
            dmr,
            fmrs: vec![bmr],
            role: Role::Br,
            hash_key: MaptConfig::DEFAULT_HASH_KEY,
        });
        c
    }
    const CE4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 8);
    const CE6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11b, 0, 0xc000, 0x0208, 0x1b);
    const SERVER: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
    const SERVER_D: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0xc633, 0x640a);

    /// RFC 7599 §7: a CE's packets from its port set, and the Internet's to
    /// a CE's port, are in scope both ways (Echo identifiers as ports, §6).
    #[test]
    fn rfc7599_s7_br_packets_are_candidates() {
        let c = br();
        assert_eq!(unsupported(&c), None);
        for ip in [
            Ip6::new(CE6, SERVER_D).udp(55300, 53, 20),
            Ip6::new(CE6, SERVER_D).tcp(57343, 80, 20),
            Ip6::new(CE6, SERVER_D).echo_request(55400, 1, 8),
            Ip4::new(SERVER, CE4).udp(53, 55300, 20),
            Ip4::new(SERVER, CE4).udp(53, 57344, 20),
            Ip4::new(SERVER, CE4).echo_reply(55400, 1, 8),
        ] {
            assert!(is_fast_path_candidate(&c, &ip), "{ip:02x?}");
        }
    }

    /// RFC 7597 §8.1, §5.2 and RFC 7599 §7: what the BR drops and counts
    /// (a source port outside the CE's set, a MAP address whose interface
    /// identifier disagrees, a source under no rule, a destination outside
    /// every rule) and a CE-to-CE hairpin are the core's.
    #[test]
    fn rfc7597_s8_1_br_refusals_are_slow_path() {
        let c = br();
        let bad = Ipv6Addr::from(u128::from(CE6) ^ 0x100_0000);
        let other_ce = c.mapt.as_ref().unwrap().fmrs[0].map_address(u32::from(CE4), 28);
        let other_ce = Ipv6Addr::from(other_ce);
        for ip in [
            Ip6::new(CE6, SERVER_D).udp(1000, 53, 20),
            Ip6::new(CE6, SERVER_D).echo_request(57344, 1, 8),
            Ip6::new(bad, SERVER_D).udp(55300, 53, 20),
            Ip6::new("2001:db8:1::5".parse().unwrap(), SERVER_D).udp(55300, 53, 20),
            Ip6::new(CE6, "2001:db8:ffff::c000:208".parse().unwrap()).udp(55300, 57344, 8),
            Ip4::new(SERVER, Ipv4Addr::new(203, 0, 113, 9)).udp(53, 55300, 8),
        ] {
            assert!(!is_fast_path_candidate(&c, &ip), "{ip:02x?}");
        }
        assert!(is_fast_path_candidate(
            &c,
            &Ip6::new(other_ce, SERVER_D).udp(57344, 53, 8)
        ));
    }

    #[test]
    fn unsupported_configurations_say_why() {
        assert_eq!(unsupported(&cfg()), None);
        let mut c = cfg();
        c.map.pool6 = Some(Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 64).unwrap());
        assert_eq!(unsupported(&c), Some("the fast path needs a /96 pool6"));
        assert!(!is_fast_path_candidate(&c, &Ip6::new(H6, S6).udp(1, 2, 8)));
        let c = Config::with_pool6(None);
        assert!(unsupported(&c).is_some());
        let mut c = br();
        c.map.pool6 = Some(Rfc6052Prefix::new("2001:db8:ffff::".parse().unwrap(), 64).unwrap());
        assert_eq!(unsupported(&c), Some("the fast path needs a /96 DMR"));
        // RFC 6146 NAT64: in scope with a /96 pool6 (its installed sessions
        // only, [`nat64`]), no stateless candidate.
        let mut c = Config::with_pool6(cfg().map.pool6);
        c.nat64 = Some(crate::nat64::Nat64Config::default());
        assert_eq!(unsupported(&c), None);
        assert!(!is_fast_path_candidate(&c, &Ip6::new(H6, S6).udp(1, 2, 8)));
        c.map.pool6 = None;
        assert_eq!(unsupported(&c), Some("the NAT64 fast path needs pool6"));
    }
}
