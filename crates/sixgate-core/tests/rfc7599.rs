//! MAP-T (RFC 7599, rules from RFC 7597 §5) through `Translator::translate`, BR
//! and CE, every output checked by the oracle in sixgate-testkit.
//!
//! The domain is Lencse & Nagy's example: BMR = FMR 2001:db8:ce::/51 ↔
//! 192.0.2.0/24, 13 EA bits, a = 0 (5-bit PSID, 2048-port sets); DMR
//! 2001:db8:ffff::/96. The CE with End-user prefix 2001:db8:ce:11b::/64 is
//! 192.0.2.8, PSID 27, ports 55296–57343.

mod common;

use common::mapt::*;
use common::*;
use sixgate_core::mapt::{MapRule, Role};
use sixgate_core::{DropReason, Verdict};
use sixgate_testkit::{Ip4, Ip6, L4, split_v4, tcp_flag, truncate};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn dropped(h: &mut Harness, p: &[u8]) -> DropReason {
    match h.run(p).0 {
        Verdict::Dropped(r) | Verdict::Replied(r) => r,
        v => panic!("expected a drop, got {v:?}"),
    }
}

fn ports_of(p: &[u8]) -> (u16, u16) {
    match view(p).l4 {
        L4::Udp {
            src_port, dst_port, ..
        }
        | L4::Tcp {
            src_port, dst_port, ..
        } => (src_port, dst_port),
        L4::Icmp { rest, .. } => {
            let id = u16::from_be_bytes([rest[0], rest[1]]);
            (id, id)
        }
        L4::Other => panic!("no ports"),
    }
}

fn addrs(p: &[u8]) -> (IpAddr, IpAddr) {
    let v = view(p);
    (v.src, v.dst)
}

/// RFC 7599 §6 / §7: BR, IPv6 → IPv4: the source is the MAP address's IPv4 and
/// port, the destination comes out of the DMR.
#[test]
fn rfc7599_s6_br_v6_to_v4() {
    let mut h = br();
    let out = h.one(&Ip6::new(CE6, SERVER_D).udp(55300, 53, 20));
    assert_eq!(addrs(&out), (IpAddr::V4(CE4), IpAddr::V4(SERVER)));
    assert_eq!(ports_of(&out), (55300, 53));
}

/// RFC 7597 §8.1: a CE's source port must be in its own port set.
#[test]
fn rfc7597_s8_1_br_drops_ports_outside_the_set() {
    let mut h = br();
    let r = dropped(&mut h, &Ip6::new(CE6, SERVER_D).udp(1000, 53, 20));
    assert_eq!(r, DropReason::MaptSourceOutsidePortSet);
    assert_eq!(
        h.t.counters().drops(DropReason::MaptSourceOutsidePortSet),
        1
    );
    // Echo identifiers are ports too.
    let r = dropped(&mut h, &Ip6::new(CE6, SERVER_D).echo_request(57344, 1, 8));
    assert_eq!(r, DropReason::MaptSourceOutsidePortSet);
    h.one(&Ip6::new(CE6, SERVER_D).echo_request(57343, 1, 8));
    // A TCP segment too.
    let r = dropped(&mut h, &Ip6::new(CE6, SERVER_D).tcp(80, 80, 0));
    assert_eq!(r, DropReason::MaptSourceOutsidePortSet);
}

/// RFC 7597 §5.2: the interface identifier must repeat the EA bits' address and
/// PSID; a source under no FMR has no business at the BR.
#[test]
fn rfc7597_s5_2_br_checks_the_map_address() {
    let mut h = br();
    let bad = Ipv6Addr::from(u128::from(CE6) ^ 0x100_0000);
    let r = dropped(&mut h, &Ip6::new(bad, SERVER_D).udp(55300, 53, 20));
    assert_eq!(r, DropReason::MaptAddressMismatch);
    let stranger: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    let r = dropped(&mut h, &Ip6::new(stranger, SERVER_D).udp(55300, 53, 20));
    assert_eq!(r, DropReason::MaptNoRule);
}

/// RFC 7599 §7: BR, IPv4 → IPv6: the destination port picks the PSID, and with
/// it the CE.
#[test]
fn rfc7599_s7_br_v4_to_v6() {
    let mut h = br();
    let out = h.one(&Ip4::new(SERVER, CE4).udp(53, 55300, 20));
    assert_eq!(addrs(&out), (IpAddr::V6(SERVER_D), IpAddr::V6(CE6)));
    // Port 57344 belongs to PSID 28: another CE sharing 192.0.2.8.
    let out = h.one(&Ip4::new(SERVER, CE4).udp(53, 57344, 20));
    let other = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11c, 0, 0xc000, 0x0208, 0x1c);
    assert_eq!(view(&out).dst, IpAddr::V6(other));
    // An echo reply by its identifier.
    let out = h.one(&Ip4::new(SERVER, CE4).echo_reply(55400, 1, 8));
    assert_eq!(view(&out).dst, IpAddr::V6(CE6));
    // Outside every FMR.
    let r = dropped(
        &mut h,
        &Ip4::new(SERVER, Ipv4Addr::new(203, 0, 113, 9)).udp(53, 55300, 0),
    );
    assert_eq!(r, DropReason::MaptNoRule);
}

/// RFC 7597 §5.1: with the default offset a = 6, ports 0–1023 belong to no CE.
#[test]
fn rfc7597_s5_1_br_port_excluded() {
    let rule = MapRule::new(
        "2001:db8::".parse().unwrap(),
        40,
        "192.0.2.0".parse().unwrap(),
        24,
        16,
        6,
    )
    .unwrap();
    let mut cfg = config(Role::Br);
    cfg.mapt.as_mut().unwrap().fmrs = vec![rule];
    let mut h = Harness::new(cfg);
    let dst = Ipv4Addr::new(192, 0, 2, 18);
    let r = dropped(&mut h, &Ip4::new(SERVER, dst).udp(53, 80, 0));
    assert_eq!(r, DropReason::MaptPortExcluded);
    // RFC 7597 Appendix A, Example 1: 1232 is PSID 0x34's.
    let out = h.one(&Ip4::new(SERVER, dst).udp(53, 1232, 0));
    let map: Ipv6Addr = "2001:db8:12:3400:0:c000:212:34".parse().unwrap();
    assert_eq!(view(&out).dst, IpAddr::V6(map));
}

/// RFC 7599 §6 / RFC 7915 §4.2: an ICMPv4 error finds the CE by the port of the
/// packet it quotes.
#[test]
fn rfc7599_s6_br_icmp_error_uses_the_inner_port() {
    let mut h = br();
    let sent = Ip4::new(CE4, SERVER).udp(55300, 53, 20);
    let err = Ip4::new(SERVER, CE4).icmp_error(3, 3, [0; 4], &sent);
    let out = h.one(&err);
    let v = view(&out);
    assert_eq!((v.src, v.dst), (IpAddr::V6(SERVER_D), IpAddr::V6(CE6)));
    let inner = v.inner.unwrap();
    assert_eq!(
        (inner.src, inner.dst),
        (IpAddr::V6(CE6), IpAddr::V6(SERVER_D))
    );
    // And back: a CE's ICMPv6 error about a packet from the server.
    let got = Ip6::new(SERVER_D, CE6).udp(53, 55300, 20);
    let err6 = Ip6::new(CE6, SERVER_D).icmp_error(1, 4, [0; 4], &truncate(&got, 48));
    let out = h.one(&err6);
    let v = view(&out);
    assert_eq!((v.src, v.dst), (IpAddr::V4(CE4), IpAddr::V4(SERVER)));
    // Quoting a port outside the CE's set: spoofed.
    let got = Ip6::new(SERVER_D, CE6).udp(53, 1000, 20);
    let err6 = Ip6::new(CE6, SERVER_D).icmp_error(1, 4, [0; 4], &got);
    assert_eq!(dropped(&mut h, &err6), DropReason::MaptSourceOutsidePortSet);
}

/// RFC 7599 §8: later fragments go where the first went; ones that come first
/// wait for it (RFC 6146 §3.4's rule, as the NAT64 does).
#[test]
fn rfc7599_s8_br_fragments() {
    let mut h = br();
    let pkt = Ip4::new(SERVER, CE4)
        .df(false)
        .id(0x4242)
        .udp(53, 55300, 600);
    let frags = split_v4(&pkt, 256);
    assert!(frags.len() >= 3);
    let mut h2 = br();
    let mut reversed = frags.clone();
    reversed.reverse();
    let (verdicts, outs) = run_all(&mut h2, &reversed);
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Held, Verdict::Fragmented(3)]
    );
    assert!(outs.iter().all(|o| view(o).dst == IpAddr::V6(CE6)));
    for f in &frags {
        let (v, out) = h.run(f);
        assert_eq!(v, Verdict::Translated);
        assert_eq!(view(&out[0]).dst, IpAddr::V6(CE6));
    }
}

/// RFC 7599 §8 with RFC 7915 §4.2/§5.2: a fragmented ping through the BR
/// and the CE, both ways, the CE's fragments out of order.
#[test]
fn rfc7599_s8_fragmented_echo_br_and_ce() {
    let mut h = br();
    let req = Ip6::new(CE6, SERVER_D).echo_request(55400, 1, 3000);
    let frags = sixgate_testkit::split_v6(&req, 1232, 7);
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Translated, Verdict::Fragmented(2)]
    );
    assert!(icmp_verifies(&outs));
    let reply = Ip4::new(SERVER, CE4)
        .id(0x77)
        .df(false)
        .echo_reply(55400, 1, 3000);
    let mut frags = split_v4(&reply, 1480);
    frags.reverse();
    let (_, outs) = run_all(&mut h, &frags);
    assert!(outs.iter().all(|o| view(o).dst == IpAddr::V6(CE6)));
    assert!(icmp_verifies(&outs));
    assert_eq!(h.t.counters().total_drops(), 0);

    // The CE's NAPT44: a LAN host's big ping, the reply's fragments reversed.
    let mut h = ce();
    let req = Ip4::new(LAN_HOST, SERVER)
        .id(0x78)
        .df(false)
        .echo_request(7, 1, 3000);
    let (_, outs) = run_all(&mut h, &split_v4(&req, 1480));
    assert!(icmp_verifies(&outs));
    let (msg, _) = reassemble(&outs);
    let id = u16::from_be_bytes([msg[4], msg[5]]);
    let reply = Ip6::new(SERVER_D, CE6).echo_reply(id, 1, 3000);
    let mut frags = sixgate_testkit::split_v6(&reply, 1232, 8);
    frags.reverse();
    let (_, outs) = run_all(&mut h, &frags);
    assert!(icmp_verifies(&outs));
    let (msg, _) = reassemble(&outs);
    assert_eq!((msg[0], u16::from_be_bytes([msg[4], msg[5]])), (0, 7));
    assert_eq!(h.t.counters().total_drops(), 0);
}

/// RFC 7599 §7: CE → BR → CE, when the CE has no FMR for the other: the BR sends
/// it straight back into the domain.
#[test]
fn rfc7599_br_hairpin() {
    let mut h = br();
    // The CE with PSID 28 shares 192.0.2.8; reach it through the DMR.
    let to = Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0xc000, 0x0208);
    let out = h.one(&Ip6::new(CE6, to).udp(55300, 57400, 20));
    let other = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11c, 0, 0xc000, 0x0208, 0x1c);
    assert_eq!(addrs(&out), (IpAddr::V6(CE6), IpAddr::V6(other)));
    assert_eq!(h.t.counters().hairpinned, 1);
}

/// RFC 7599 §5 / §6: the CE's NAPT44 then MAP-T: a LAN host's TCP connection
/// leaves from the MAP address with a port of the set, and the answer finds it.
#[test]
fn rfc7599_s6_ce_napt44_round_trip() {
    let mut h = ce();
    let syn = Ip4::new(LAN_HOST, SERVER).tcp_flags(40000, 80, tcp_flag::SYN, 0);
    let out = h.one(&syn);
    assert_eq!(addrs(&out), (IpAddr::V6(CE6), IpAddr::V6(SERVER_D)));
    let (sport, dport) = ports_of(&out);
    assert!(PORTS.contains(&sport), "{sport}");
    assert_eq!(dport, 80);
    let back = Ip6::new(SERVER_D, CE6).tcp_flags(80, sport, tcp_flag::SYN | tcp_flag::ACK, 0);
    let out = h.one(&back);
    assert_eq!(addrs(&out), (IpAddr::V4(SERVER), IpAddr::V4(LAN_HOST)));
    assert_eq!(ports_of(&out), (80, 40000));
    assert_eq!(h.t.napt44_stats().sessions.tcp, 1);
}

/// The CE answers pings through its NAPT44 by echo identifier.
#[test]
fn rfc7599_ce_ping() {
    let mut h = ce();
    let out = h.one(&Ip4::new(LAN_HOST, SERVER).echo_request(7, 1, 16));
    let (id, _) = ports_of(&out);
    assert!(PORTS.contains(&id));
    let out = h.one(&Ip6::new(SERVER_D, CE6).echo_reply(id, 1, 16));
    assert_eq!(view(&out).dst, IpAddr::V4(LAN_HOST));
    assert_eq!(ports_of(&out).0, 7);
}

/// A CE takes nothing it did not ask for, and only at its own MAP address.
#[test]
fn rfc7599_ce_refuses_the_unknown() {
    let mut h = ce();
    let r = dropped(&mut h, &Ip6::new(SERVER_D, CE6).udp(53, 55300, 8));
    assert_eq!(r, DropReason::NoBibEntry);
    let other = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11c, 0, 0xc000, 0x0208, 0x1c);
    let r = dropped(&mut h, &Ip6::new(SERVER_D, other).udp(53, 57400, 8));
    assert_eq!(r, DropReason::MaptNoRule);
    // Not from the LAN.
    let r = dropped(
        &mut h,
        &Ip4::new(Ipv4Addr::new(10, 9, 0, 1), SERVER).udp(5, 53, 8),
    );
    assert_eq!(r, DropReason::SourceUntranslatable);
}

/// RFC 7915 §5.3 through the NAPT44: an error about a LAN host's packet reaches
/// the LAN host, quoting its own address and port.
#[test]
fn rfc7599_ce_icmp_error_to_the_lan_host() {
    let mut h = ce();
    let out = h.one(&Ip4::new(LAN_HOST, SERVER).udp(40000, 53, 20));
    let (sport, _) = ports_of(&out);
    let err = Ip6::new(SERVER_D, CE6).icmp_error(1, 4, [0; 4], &out);
    let out = h.one(&err);
    let v = view(&out);
    assert_eq!((v.src, v.dst), (IpAddr::V4(SERVER), IpAddr::V4(LAN_HOST)));
    let inner = v.inner.unwrap();
    assert_eq!(inner.src, IpAddr::V4(LAN_HOST));
    assert_eq!(inner.l4.ports(), Some((40000, 53)));
    assert_ne!(sport, 40000);
}

/// Fragments from the LAN: the later ones follow the first.
#[test]
fn rfc7599_s8_ce_fragments() {
    let mut h = ce();
    let pkt = Ip4::new(LAN_HOST, SERVER)
        .df(false)
        .id(9)
        .udp(40000, 53, 600);
    for f in split_v4(&pkt, 256) {
        let (v, out) = h.run(&f);
        assert_eq!(v, Verdict::Translated);
        assert_eq!(addrs(&out[0]), (IpAddr::V6(CE6), IpAddr::V6(SERVER_D)));
    }
}

/// RFC 7597 §5: the rules decide every CE's port set (and a CE's NAPT44 was
/// built on its own), so a running MAP-T node refuses a changed `[mapt]` or a
/// mode change, and takes a reload that leaves them alone.
#[test]
fn rfc7597_s5_rules_cannot_change_while_running() {
    use sixgate_core::reconfigure::check;
    use std::sync::Arc;
    let old = config(Role::Br);
    let mut rules = old.clone();
    rules.mapt.as_mut().unwrap().hash_key = 8;
    assert_eq!(check(&old, &rules).unwrap_err().key, "[mapt]");
    let mut siit = old.clone();
    siit.mapt = None;
    assert_eq!(check(&old, &siit).unwrap_err().key, "[translator] mode");
    assert_eq!(check(&siit, &old).unwrap_err().key, "[translator] mode");
    let mut h = br();
    let mut same = old.clone();
    same.ipv6_mtu = Some(1400);
    h.t.reconfigure(Arc::new(same)).unwrap();
}

/// RFC 9693 §4.3 tear-down on a CE: its NAPT44 is RFC 6146's tables, and a
/// flush empties them; the LAN host's next connection works.
#[test]
fn rfc9693_s4_3_ce_napt44_flush() {
    let mut h = ce();
    h.one(&Ip4::new(LAN_HOST, SERVER).tcp_flags(40000, 80, tcp_flag::SYN, 0));
    h.one(&Ip4::new(LAN_HOST, SERVER).udp(40001, 53, 8));
    assert_eq!(h.t.napt44_stats().sessions.total(), 2);
    let mut rows = 0;
    h.t.walk_sessions(0, 64, h.now_ns, |_| rows += 1);
    assert_eq!(rows, 2, "listed like NAT64 sessions");
    let mut out = sixgate_core::nat64::Flushed::default();
    let filter = sixgate_core::nat64::FlushFilter::default();
    assert_eq!(h.t.flush(&filter, 0, 1024, h.now_ns, &mut out), None);
    assert_eq!((out.sessions, out.bib), (2, 2));
    let st = h.t.napt44_stats();
    assert_eq!(
        (st.sessions.total(), st.bib.total(), st.sessions_flushed),
        (0, 0, 2)
    );
    let out = h.one(&Ip4::new(LAN_HOST, SERVER).udp(40001, 53, 8));
    assert!(PORTS.contains(&ports_of(&out).0));
}
