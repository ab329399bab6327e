//! RFC 6146 stateful NAT64 end to end through `Translator::translate` and
//! `Translator::tick`, every output checked by the etherparse-based oracle in
//! sixgate-testkit. Time is driven through `now_ns`.

mod common;

use common::*;
use sixgate_core::nat64::{
    self, EventKind, EventLog, Filtering, Nat64Config, Pool4Entry, PortRange, Proto, StaticBib,
    steering,
};
use sixgate_core::{Config, DropReason, Translator, Verdict};
use sixgate_testkit::{Family, Ip4, Ip6, L4, split_v4, split_v6, tcp_flag};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
/// POOL4 as the IPv6 side sees it (pool6 2001:db8:64::/96).
const POOL4_6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc000, 0x0201);
/// Another IPv4 server.
const OTHER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 9);
const OTHER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6409);
/// A second subscriber (another /64).
const CLIENT_B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 7);

const S: u64 = 1_000_000_000;

fn nat_config(f: impl FnOnce(&mut Nat64Config)) -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    let mut n = Nat64Config {
        pool4: vec![Pool4Entry::single(POOL4)],
        ..Nat64Config::default()
    };
    n.max_sessions = 1024;
    f(&mut n);
    cfg.nat64 = Some(n);
    cfg
}

fn nat(f: impl FnOnce(&mut Nat64Config)) -> Harness {
    Harness::new(nat_config(f))
}

fn out6(src: Ipv6Addr, dst: Ipv6Addr) -> Ip6 {
    Ip6::new(src, dst)
}

fn in4(src: Ipv4Addr) -> Ip4 {
    Ip4::new(src, POOL4)
}

/// (source address, source port) of a translated IPv4 packet.
fn src4(p: &[u8]) -> (IpAddr, u16) {
    let s = view(p);
    assert_eq!(s.family, Family::V4);
    let port = match s.l4 {
        L4::Udp { src_port, .. } | L4::Tcp { src_port, .. } => src_port,
        L4::Icmp { rest, .. } => u16::from_be_bytes([rest[0], rest[1]]),
        L4::Other => panic!("no ports"),
    };
    (s.src, port)
}

/// (destination address, destination port) of a translated IPv6 packet.
fn dst6(p: &[u8]) -> (IpAddr, u16) {
    let s = view(p);
    assert_eq!(s.family, Family::V6);
    let port = match s.l4 {
        L4::Udp { dst_port, .. } | L4::Tcp { dst_port, .. } => dst_port,
        L4::Icmp { rest, .. } => u16::from_be_bytes([rest[0], rest[1]]),
        L4::Other => panic!("no ports"),
    };
    (s.dst, port)
}

fn dropped(h: &mut Harness, p: &[u8]) -> DropReason {
    match h.run(p).0 {
        Verdict::Dropped(r) | Verdict::Replied(r) => r,
        v => panic!("expected a drop, got {v:?}"),
    }
}

/// Run `tick` until it has nothing more to do; return the packets it left.
fn tick_all(h: &mut Harness) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..10_000 {
        let Some(v) = h.t.tick(h.now_ns, &mut h.scratch) else {
            return out;
        };
        out.extend(v.scratch_outputs(&h.scratch).map(<[u8]>::to_vec));
    }
    panic!("tick never finished");
}

fn at(h: &mut Harness, secs: u64) {
    h.now_ns = secs * S;
    tick_all(h);
}

fn stats(h: &Harness) -> nat64::Stats {
    h.t.nat64_stats()
}

/// A UDP flow out from CLIENT6:sport to SERVER4:53; its pool4 port.
fn udp_out(h: &mut Harness, client: Ipv6Addr, sport: u16) -> u16 {
    let p = h.one(&out6(client, SERVER6).udp(sport, 53, 10));
    let (a, port) = src4(&p);
    assert_eq!(a, IpAddr::V4(POOL4));
    port
}

// ---- §3.5.1 UDP: mapping and filtering -------------------------------------------------

#[test]
fn rfc6146_s3_5_1_endpoint_independent_mapping() {
    let mut h = nat(|_| {});
    let a = h.one(&out6(CLIENT6, SERVER6).udp(5000, 53, 10));
    let b = h.one(&out6(CLIENT6, OTHER6).udp(5000, 53, 10));
    assert_eq!(src4(&a), src4(&b), "one BIB entry for two destinations");
    let s = view(&b);
    assert_eq!(s.dst, IpAddr::V4(OTHER4));
    assert!(s.l4_verified);
    let st = stats(&h);
    assert_eq!((st.bib.udp, st.sessions.udp), (1, 2));
    // The answer comes back to the IPv6 transport address.
    let port4 = src4(&a).1;
    let r = h.one(&in4(SERVER4).udp(53, port4, 10));
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT6), 5000));
    assert_eq!(view(&r).src, IpAddr::V6(SERVER6));
}

#[test]
fn rfc6146_s3_5_1_1_port_preservation_and_parity() {
    let mut h = nat(|_| {});
    assert_eq!(
        udp_out(&mut h, CLIENT6, 61010),
        61010,
        "in range, owned, free: kept"
    );
    let other = udp_out(&mut h, CLIENT_B, 61010);
    assert_ne!(other, 61010);
    assert_eq!(other % 2, 0, "parity kept");
    let odd = udp_out(&mut h, CLIENT_B, 61011);
    assert_eq!(odd, 61011);
    let odd2 = udp_out(&mut h, CLIENT6, 61011);
    assert_eq!(odd2 % 2, 1, "parity kept");
    // Out-of-range source ports land in range.
    let p = udp_out(&mut h, CLIENT6, 1234);
    assert!((61001..=65535).contains(&p));
}

#[test]
fn rfc6146_s3_5_1_2_endpoint_independent_filtering() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    // Any IPv4 host may use the mapping; that creates a session.
    let r = h.one(&in4(OTHER4).udp(4444, port4, 10));
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT6), 5000));
    assert_eq!(view(&r).src, IpAddr::V6(OTHER6));
    assert_eq!(stats(&h).sessions.udp, 2);
}

#[test]
fn rfc6146_s3_5_1_2_address_dependent_filtering() {
    let mut h = nat(|n| n.filtering = Filtering::AddressDependent);
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    let (v, out) = h.run(&in4(OTHER4).udp(4444, port4, 10));
    assert_eq!(v, Verdict::Replied(DropReason::Filtered));
    assert_eq!(
        view(&out[0]).icmp(),
        Some((3, 13)),
        "administratively prohibited"
    );
    // The same host from another port is allowed (address-dependent, not port).
    let r = h.one(&in4(SERVER4).udp(4444, port4, 10));
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT6), 5000));
    assert_eq!(h.t.counters().drops(DropReason::Filtered), 1);
}

#[test]
fn rfc6146_s3_5_1_2_no_bib_entry() {
    let mut h = nat(|_| {});
    let (v, out) = h.run(&in4(SERVER4).udp(53, 61500, 10));
    assert_eq!(v, Verdict::Replied(DropReason::NoBibEntry));
    let s = view(&out[0]);
    assert_eq!(
        (s.dst, s.icmp()),
        (IpAddr::V4(SERVER4), Some((3, 3))),
        "§3.5.1.2: Port Unreachable"
    );
    assert_eq!(
        stats(&h).bib.total(),
        0,
        "IPv4 packets never create mappings"
    );
}

/// §3.5.2.2: a TCP segment (not a SYN) for a pool4 port with no BIB entry is
/// answered as a closed port is; §3.5.3: an ICMP query for an identifier with
/// no BIB entry gets "host unreachable" (ICMP has no port).
#[test]
fn rfc6146_s3_5_2_2_and_s3_5_3_no_bib_entry_error_codes() {
    let mut h = nat(|_| {});
    let (v, out) = h.run(&in4(SERVER4).tcp_flags(80, 61500, tcp_flag::ACK, 0));
    assert_eq!(v, Verdict::Replied(DropReason::NoBibEntry));
    assert_eq!(view(&out[0]).icmp(), Some((3, 3)), "TCP: port unreachable");
    let (v, out) = h.run(&in4(SERVER4).echo_request(61500, 1, 8));
    assert_eq!(v, Verdict::Replied(DropReason::NoBibEntry));
    assert_eq!(view(&out[0]).icmp(), Some((3, 1)), "ICMP: host unreachable");
}

/// §3.5.1.1 (and §3.5.2.1, §3.5.3): no IPv4 transport address can be
/// allocated: ICMPv6 Destination Unreachable, Address Unreachable (code 3).
#[test]
fn rfc6146_s3_5_1_1_pool4_exhausted_gets_address_unreachable() {
    let mut h = nat(|n| n.pool4.clear());
    let (v, out) = h.run(&out6(CLIENT6, SERVER6).udp(5000, 53, 10));
    assert_eq!(v, Verdict::Replied(DropReason::Pool4Exhausted));
    let s = view(&out[0]);
    assert_eq!((s.dst, s.icmp()), (IpAddr::V6(CLIENT6), Some((1, 3))));
}

#[test]
fn rfc6146_s3_5_1_udp_timeout() {
    let mut h = nat(|_| {});
    udp_out(&mut h, CLIENT6, 5000);
    at(&mut h, 299);
    assert_eq!(stats(&h).sessions.udp, 1);
    at(&mut h, 301);
    assert_eq!(stats(&h).sessions.udp, 0);
}

#[test]
fn rfc6146_s3_5_1_traffic_refreshes_udp() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    at(&mut h, 200);
    h.one(&in4(SERVER4).udp(53, port4, 10));
    at(&mut h, 450);
    assert_eq!(stats(&h).sessions.udp, 1, "refreshed at 200 s");
    at(&mut h, 501);
    assert_eq!(stats(&h).sessions.udp, 0);
}

// ---- §3.5.3 ICMP queries -------------------------------------------------------------

#[test]
fn rfc6146_s3_5_3_icmp_query_and_timeout() {
    let mut h = nat(|_| {});
    let p = h.one(&out6(CLIENT6, SERVER6).echo_request(0x1234, 1, 16));
    let (a, id) = src4(&p);
    assert_eq!(a, IpAddr::V4(POOL4));
    assert_eq!(id, 0x1234, "identifier kept when free");
    assert_eq!(view(&p).icmp(), Some((8, 0)));
    let r = h.one(&in4(SERVER4).echo_reply(id, 1, 16));
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT6), 0x1234));
    assert_eq!(view(&r).icmp(), Some((129, 0)));
    at(&mut h, 59);
    assert_eq!(stats(&h).sessions.icmp, 1);
    at(&mut h, 61);
    assert_eq!(stats(&h).sessions.icmp, 0);
}

// ---- §3.5.2 TCP state machine --------------------------------------------------------

fn tcp6(h: &mut Harness, flags: u8) -> Verdict {
    h.run(&out6(CLIENT6, SERVER6).tcp_flags(40000, 80, flags, 0))
        .0
}

fn tcp4(h: &mut Harness, port4: u16, flags: u8) -> Verdict {
    h.run(&in4(SERVER4).tcp_flags(80, port4, flags, 0)).0
}

/// V6 SYN, V4 SYN+ACK: ESTABLISHED. Returns the pool4 port.
fn handshake(h: &mut Harness) -> u16 {
    let p = h.one(&out6(CLIENT6, SERVER6).tcp_flags(40000, 80, tcp_flag::SYN, 0));
    let port4 = src4(&p).1;
    assert_eq!(
        tcp4(h, port4, tcp_flag::SYN | tcp_flag::ACK),
        Verdict::Translated
    );
    port4
}

fn tcp_sessions(h: &Harness) -> u64 {
    stats(h).sessions.tcp
}

#[test]
fn rfc6146_s3_5_2_2_v6_init_times_out_after_tcp_trans() {
    let mut h = nat(|_| {});
    assert_eq!(tcp6(&mut h, tcp_flag::SYN), Verdict::Translated);
    at(&mut h, 239);
    assert_eq!(tcp_sessions(&h), 1);
    at(&mut h, 241);
    assert_eq!(tcp_sessions(&h), 0);
}

#[test]
fn rfc6146_s3_5_2_2_established_lives_tcp_est_then_trans() {
    let mut h = nat(|_| {});
    let port4 = handshake(&mut h);
    assert_eq!(tcp4(&mut h, port4, tcp_flag::ACK), Verdict::Translated);
    at(&mut h, 7439);
    assert_eq!(tcp_sessions(&h), 1);
    // TCP_EST ran out: TRANS for TCP_TRANS more.
    at(&mut h, 7441);
    assert_eq!(tcp_sessions(&h), 1);
    at(&mut h, 7441 + 241);
    assert_eq!(tcp_sessions(&h), 0);
}

#[test]
fn rfc6146_s3_5_2_2_trans_revived_by_traffic() {
    let mut h = nat(|_| {});
    handshake(&mut h);
    at(&mut h, 7441); // TRANS
    assert_eq!(tcp6(&mut h, tcp_flag::ACK), Verdict::Translated); // back to ESTABLISHED
    at(&mut h, 7441 + 241);
    assert_eq!(tcp_sessions(&h), 1, "ESTABLISHED again: TCP_EST");
}

#[test]
fn rfc6146_s3_5_2_2_rst_moves_to_trans() {
    let mut h = nat(|_| {});
    let port4 = handshake(&mut h);
    assert_eq!(tcp4(&mut h, port4, tcp_flag::RST), Verdict::Translated);
    at(&mut h, 239);
    assert_eq!(tcp_sessions(&h), 1);
    at(&mut h, 241);
    assert_eq!(tcp_sessions(&h), 0);
}

#[test]
fn rfc6146_s3_5_2_2_fin_from_both_sides() {
    let mut h = nat(|_| {});
    let port4 = handshake(&mut h);
    // V6 FIN RCV: still the established lifetime.
    assert_eq!(
        tcp6(&mut h, tcp_flag::FIN | tcp_flag::ACK),
        Verdict::Translated
    );
    at(&mut h, 300);
    assert_eq!(tcp_sessions(&h), 1);
    // V4 FIN + V6 FIN RCV: TCP_TRANS, and packets do not refresh it.
    assert_eq!(
        tcp4(&mut h, port4, tcp_flag::FIN | tcp_flag::ACK),
        Verdict::Translated
    );
    at(&mut h, 500);
    assert_eq!(tcp6(&mut h, tcp_flag::ACK), Verdict::Translated);
    at(&mut h, 541);
    assert_eq!(tcp_sessions(&h), 0);
}

#[test]
fn rfc6146_s3_5_2_2_v4_fin_first() {
    let mut h = nat(|_| {});
    let port4 = handshake(&mut h);
    assert_eq!(tcp4(&mut h, port4, tcp_flag::FIN), Verdict::Translated);
    at(&mut h, 1000);
    assert_eq!(tcp4(&mut h, port4, tcp_flag::ACK), Verdict::Translated);
    assert_eq!(tcp6(&mut h, tcp_flag::FIN), Verdict::Translated);
    at(&mut h, 1241);
    assert_eq!(tcp_sessions(&h), 0);
}

#[test]
fn rfc6146_s3_5_2_2_non_syn_creates_nothing() {
    let mut h = nat(|_| {});
    assert_eq!(
        tcp6(&mut h, tcp_flag::ACK),
        Verdict::Dropped(DropReason::NoBibEntry)
    );
    assert_eq!(stats(&h).bib.total(), 0);
}

#[test]
fn rfc6146_s3_5_2_2_simultaneous_open_releases_held_syn() {
    let mut h = nat(|_| {});
    // The IPv4 side's SYN arrives first, for the port the IPv6 side will keep.
    let syn4 = in4(SERVER4).tcp_flags(80, 61010, tcp_flag::SYN, 0);
    assert_eq!(h.run(&syn4).0, Verdict::Dropped(DropReason::SynHeld));
    assert_eq!(stats(&h).held_syns, 1);
    let p = h.one(&out6(CLIENT6, SERVER6).tcp_flags(61010, 80, tcp_flag::SYN, 0));
    assert_eq!(src4(&p), (IpAddr::V4(POOL4), 61010));
    assert_eq!(stats(&h).held_syns, 0, "released");
    // ...and nothing is owed when the hold time passes.
    h.now_ns = 7 * S;
    assert!(tick_all(&mut h).is_empty());
    // State goes on: the IPv4 SYN (retransmitted) completes the open.
    assert_eq!(
        tcp4(&mut h, 61010, tcp_flag::SYN | tcp_flag::ACK),
        Verdict::Translated
    );
}

#[test]
fn rfc6146_s3_5_2_2_held_syn_gets_port_unreachable_after_6s() {
    let mut h = nat(|_| {});
    let syn4 = in4(SERVER4).tcp_flags(80, 61500, tcp_flag::SYN, 0);
    assert_eq!(h.run(&syn4).0, Verdict::Dropped(DropReason::SynHeld));
    h.now_ns = 5 * S;
    assert!(tick_all(&mut h).is_empty());
    h.now_ns = 6 * S;
    let out = tick_all(&mut h);
    assert_eq!(out.len(), 1);
    let s = view(&out[0]);
    assert_eq!(s.family, Family::V4);
    assert_eq!(s.dst, IpAddr::V4(SERVER4));
    assert_eq!(s.icmp(), Some((3, 3)), "Port Unreachable");
    let inner = s.inner.expect("quotes the SYN");
    assert_eq!(inner.src, IpAddr::V4(SERVER4));
    assert_eq!(inner.l4.ports(), Some((80, 61500)));
    assert_eq!(stats(&h).held_syns, 0);
}

#[test]
fn rfc6146_s3_5_2_2_drop_external_tcp_and_full_store() {
    let mut h = nat(|n| n.drop_external_tcp = true);
    let syn4 = in4(SERVER4).tcp_flags(80, 61500, tcp_flag::SYN, 0);
    assert_eq!(dropped(&mut h, &syn4), DropReason::ExternalTcp);
    let mut h = nat(|n| n.max_held_syns = 1);
    assert_eq!(dropped(&mut h, &syn4), DropReason::SynHeld);
    let other = in4(OTHER4).tcp_flags(80, 61500, tcp_flag::SYN, 0);
    assert_eq!(dropped(&mut h, &other), DropReason::HeldSynStoreFull);
}

#[test]
fn rfc6146_s3_5_2_2_adf_holds_syn_from_unknown_host() {
    let mut h = nat(|n| n.filtering = Filtering::AddressDependent);
    let port4 = handshake(&mut h);
    let syn = in4(OTHER4).tcp_flags(80, port4, tcp_flag::SYN, 0);
    assert_eq!(dropped(&mut h, &syn), DropReason::SynHeld);
}

// ---- §3.1 static BIB -----------------------------------------------------------------

/// The client's web server published as POOL4:8080 (TCP, its port 80).
fn web_static_bib() -> StaticBib {
    StaticBib {
        proto: Proto::Tcp,
        v6: CLIENT6,
        port6: 80,
        v4: POOL4,
        port4: 8080,
    }
}

#[test]
fn rfc6146_s3_1_static_bib_ipv4_initiated() {
    let mut h = nat(|n| n.static_bib = vec![web_static_bib()]);
    assert_eq!(stats(&h).bib.tcp, 1);
    let r = h.one(&in4(SERVER4).tcp_flags(40000, 8080, tcp_flag::SYN, 0));
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT6), 80));
    // The server answers from its static mapping: V4 INIT -> ESTABLISHED.
    let p = h.one(&out6(CLIENT6, SERVER6).tcp_flags(80, 40000, tcp_flag::SYN | tcp_flag::ACK, 0));
    assert_eq!(src4(&p), (IpAddr::V4(POOL4), 8080));
    at(&mut h, 100);
    assert_eq!(tcp_sessions(&h), 1, "ESTABLISHED, not V4 INIT's 6 s");
    // Static entries never expire (expiry runs from when `tick` sees a deadline:
    // ESTABLISHED ends at 7540 s, TRANS 240 s after that).
    at(&mut h, 7541);
    at(&mut h, 7541 + 241);
    assert_eq!((stats(&h).sessions.tcp, stats(&h).bib.tcp), (0, 1));
}

#[test]
fn rfc6146_s3_5_2_2_v4_init_expires_after_syn_hold() {
    let mut h = nat(|n| n.static_bib = vec![web_static_bib()]);
    h.one(&in4(SERVER4).tcp_flags(40000, 8080, tcp_flag::SYN, 0));
    at(&mut h, 5);
    assert_eq!(tcp_sessions(&h), 1);
    at(&mut h, 7);
    assert_eq!(tcp_sessions(&h), 0);
}

// ---- §3.8 hairpinning ------------------------------------------------------------------

#[test]
fn rfc6146_s3_8_hairpinning() {
    let mut h = nat(|_| {});
    let port_a = udp_out(&mut h, CLIENT6, 5000);
    // B sends to A's pool4 transport address (through pool6).
    let r = h.one(&out6(CLIENT_B, POOL4_6).udp(6000, port_a, 10));
    let s = view(&r);
    assert_eq!(s.family, Family::V6);
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT6), 5000));
    assert_eq!(s.src, IpAddr::V6(POOL4_6), "B appears as its pool4 address");
    let port_b = s.ports().unwrap().0;
    assert_ne!(port_b, 6000, "B's source port is its pool4 port");
    assert_eq!(h.t.counters().hairpinned, 1);
    // A answers B through B's mapping.
    let back = h.one(&out6(CLIENT6, POOL4_6).udp(5000, port_b, 10));
    assert_eq!(dst6(&back), (IpAddr::V6(CLIENT_B), 6000));
}

/// §3.8: an ICMPv6 error about a hairpinned packet (here A refuses B's
/// datagram: Port Unreachable) translates to an IPv4 error from pool4 to
/// pool4, which goes round again to B, quoting B's packet as B sent it.
#[test]
fn rfc6146_s3_8_icmp_error_about_hairpinned_packet_is_hairpinned() {
    let mut h = nat(|_| {});
    let port_a = udp_out(&mut h, CLIENT6, 5000);
    let to_a = h.one(&out6(CLIENT_B, POOL4_6).udp(6000, port_a, 10));
    let err = out6(CLIENT6, POOL4_6).icmp_error(1, 4, [0; 4], &to_a);
    let r = h.one(&err);
    let s = view(&r);
    assert_eq!(
        s.family,
        Family::V6,
        "hairpinned, not sent from pool4 to pool4"
    );
    assert_eq!((s.src, s.dst), (IpAddr::V6(POOL4_6), IpAddr::V6(CLIENT_B)));
    assert_eq!(s.icmp(), Some((1, 4)), "port unreachable both ways");
    let i = s.inner.unwrap();
    assert_eq!((i.src, i.dst), (IpAddr::V6(CLIENT_B), IpAddr::V6(POOL4_6)));
    assert_eq!(i.l4.ports(), Some((6000, port_a)));
    assert_eq!(i.l4_checksum_ok, Some(true));
    assert_eq!(h.t.counters().hairpinned, 2);
}

/// RFC 6146 §3.8 with RFC 7915 §5.4: a hairpinned packet leaves on the IPv6
/// link, so that link's MTU is the one that counts, and its sender (on the
/// IPv6 side) gets an ICMPv6 Packet Too Big, never an ICMPv4 error addressed
/// to our own pool4; the IPv4 link's smaller MTU does not apply to it.
#[test]
fn rfc6146_s3_8_hairpinned_packet_too_big_answered_in_ipv6() {
    let mut cfg = nat_config(|_| {});
    cfg.ipv6_mtu = Some(1300);
    cfg.ipv4_mtu = Some(1000);
    let mut h = Harness::new(cfg);
    let port_a = udp_out(&mut h, CLIENT6, 5000);
    let (v, out) = h.run(&out6(CLIENT_B, POOL4_6).udp(6000, port_a, 1400));
    assert_eq!(v, Verdict::Replied(DropReason::PacketTooBig));
    let s = view(&out[0]);
    assert_eq!((s.family, s.icmp()), (Family::V6, Some((2, 0))));
    assert_eq!(s.dst, IpAddr::V6(CLIENT_B));
    assert_eq!(&out[0][44..48], &1300u32.to_be_bytes());
    let out = h.one(&out6(CLIENT_B, POOL4_6).udp(6000, port_a, 1100));
    assert_eq!(
        view(&out).dst,
        IpAddr::V6(CLIENT6),
        "over ipv4_mtu, hairpinned whole"
    );
}

// ---- ICMP errors -----------------------------------------------------------------------

#[test]
fn rfc6146_s3_5_icmpv4_error_matched_to_outbound_session() {
    let mut h = nat(|_| {});
    let out = h.one(&out6(CLIENT6, SERVER6).udp(5000, 53, 10));
    let port4 = src4(&out).1;
    let before = stats(&h);
    let err = Ip4::new(ROUTER4, POOL4).icmp_error(3, 1, [0; 4], &out);
    let r = h.one(&err);
    let s = view(&r);
    assert_eq!(s.dst, IpAddr::V6(CLIENT6));
    assert_eq!(s.src, IpAddr::V6(ROUTER6));
    assert_eq!(
        s.icmp(),
        Some((1, 0)),
        "RFC 7915 §4.2: host unreachable -> no route"
    );
    let inner = s.inner.unwrap();
    assert_eq!(inner.src, IpAddr::V6(CLIENT6));
    assert_eq!(inner.dst, IpAddr::V6(SERVER6));
    assert_eq!(inner.l4.ports(), Some((5000, 53)));
    assert_eq!(inner.l4_checksum_ok, Some(true));
    assert_eq!(stats(&h), before, "errors create no state");
    // An error about a flow we do not know.
    let stray = Ip4::new(POOL4, SERVER4).udp(port4 ^ 2, 53, 10);
    let err = Ip4::new(ROUTER4, POOL4).icmp_error(3, 1, [0; 4], &stray);
    assert_eq!(dropped(&mut h, &err), DropReason::NoBibEntry);
    assert_eq!(stats(&h).bib.total(), 1);
}

/// Issue 28: an independent NAT64 vector got two outputs (an IPv4 packet
/// and an ICMPv6 one) for one ICMP error. RFC 6146 §3.5: an ICMP error
/// matched to a session is translated, "one ... packet" out per packet in
/// (RFC 7915 §4.2/§5.2); one that cannot be translated is dropped, and an
/// ICMP error is never answered with another (RFC 4443 §2.4 (e), RFC 1122
/// §3.2.2). Every ICMPv4 and ICMPv6 error type and code we translate or
/// drop, about UDP, TCP and Echo sessions, quoted short and long (cut to
/// 576 / 1280, RFC 4884 extension or not), gives at most one packet, of the
/// other family, or a drop with none.
#[test]
fn rfc6146_s3_5_every_icmp_error_gives_at_most_one_packet() {
    let mut h = nat(|_| {});
    let udp = udp_out(&mut h, CLIENT6, 5000);
    let tcp = handshake(&mut h);
    let echo = h.one(&out6(CLIENT6, SERVER6).echo_request(77, 1, 8));
    let ident = match view(&echo).l4 {
        L4::Icmp { rest, .. } => u16::from_be_bytes([rest[0], rest[1]]),
        _ => unreachable!(),
    };
    let (mut cases, mut translated) = (0, 0);
    for len in [8usize, 600, 1400] {
        // The IPv4 side's errors quote what we sent there.
        let out4 = [
            Ip4::new(POOL4, SERVER4).udp(udp, 53, len),
            Ip4::new(POOL4, SERVER4).tcp(tcp, 80, len),
            Ip4::new(POOL4, SERVER4).echo_request(ident, 1, len),
        ];
        // The IPv6 side's, what we sent there.
        let out6_ = [
            Ip6::new(SERVER6, CLIENT6).udp(53, 5000, len),
            Ip6::new(SERVER6, CLIENT6).tcp(80, 40000, len),
            Ip6::new(SERVER6, CLIENT6).echo_reply(77, 1, len),
        ];
        for q in &out4 {
            for (ty, codes) in [(3u8, 0u8..16), (11, 0..2), (12, 0..3)] {
                for code in codes {
                    for rest in [[0u8; 4], [0, 0, 0x05, 0xdc], [4, 0, 0, 0]] {
                        let err = Ip4::new(ROUTER4, POOL4).icmp_error(ty, code, rest, q);
                        let (v, out) = h.run_unchecked(&err);
                        cases += 1;
                        assert!(
                            out.len() <= 1,
                            "ICMPv4 {ty}/{code} {rest:?} len {len}: {v:?}, {} out",
                            out.len()
                        );
                        if let [p] = &out[..] {
                            assert_eq!(view(p).family, Family::V6, "ICMPv4 {ty}/{code}");
                            translated += 1;
                        }
                    }
                }
            }
        }
        for q in &out6_ {
            for (ty, codes) in [(1u8, 0u8..7), (2, 0..1), (3, 0..2), (4, 0..3)] {
                for code in codes {
                    for rest in [[0u8; 4], [0, 0, 0x05, 0x00], [0, 0, 0, 6]] {
                        let err = out6(CLIENT6, SERVER6).icmp_error(ty, code, rest, q);
                        let (v, out) = h.run_unchecked(&err);
                        cases += 1;
                        assert!(
                            out.len() <= 1,
                            "ICMPv6 {ty}/{code} {rest:?} len {len}: {v:?}, {} out",
                            out.len()
                        );
                        if let [p] = &out[..] {
                            assert_eq!(view(p).family, Family::V4, "ICMPv6 {ty}/{code}");
                            translated += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 3 * (3 * 21 * 3 + 3 * 13 * 3));
    // Most are translated (the rest: codes RFC 7915 drops, rate limits
    // do not apply to translated errors).
    assert!(translated > cases / 2, "{translated} of {cases}");
    println!("{translated} of {cases} ICMP errors translated, one packet each");
}

#[test]
fn rfc6146_s3_5_icmpv6_error_matched_to_inbound_session() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    let inbound = h.one(&in4(SERVER4).udp(53, port4, 10));
    let before = stats(&h);
    // The IPv6 host refuses it: Port Unreachable to the sender.
    let err = out6(CLIENT6, SERVER6).icmp_error(1, 4, [0; 4], &inbound);
    let r = h.one(&err);
    let s = view(&r);
    assert_eq!(s.src, IpAddr::V4(POOL4));
    assert_eq!(s.dst, IpAddr::V4(SERVER4));
    assert_eq!(s.icmp(), Some((3, 3)));
    let inner = s.inner.unwrap();
    assert_eq!(inner.src, IpAddr::V4(SERVER4));
    assert_eq!(inner.dst, IpAddr::V4(POOL4));
    assert_eq!(inner.l4.ports(), Some((53, port4)));
    assert_eq!(inner.l4_checksum_ok, Some(true));
    assert_eq!(stats(&h), before);
}

// ---- RFC 6888 limits -------------------------------------------------------------------

#[test]
fn rfc6888_max_sessions_never_evicts() {
    let mut h = nat(|n| n.max_sessions = 2);
    udp_out(&mut h, CLIENT6, 5000);
    udp_out(&mut h, CLIENT6, 5001);
    let third = out6(CLIENT6, SERVER6).udp(5002, 53, 10);
    assert_eq!(dropped(&mut h, &third), DropReason::SessionTableFull);
    // Existing flows still pass.
    udp_out(&mut h, CLIENT6, 5000);
    assert_eq!(h.t.counters().drops(DropReason::SessionTableFull), 1);
}

#[test]
fn rfc6888_req4_sessions_per_subscriber() {
    let mut h = nat(|n| n.max_sessions_per_subscriber = 2);
    udp_out(&mut h, CLIENT6, 5000);
    // Same /64, another host: same subscriber.
    let sibling = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 99);
    udp_out(&mut h, sibling, 5000);
    let p = out6(CLIENT6, OTHER6).udp(5000, 53, 10);
    assert_eq!(dropped(&mut h, &p), DropReason::SubscriberLimit);
    // Another subscriber still gets through.
    udp_out(&mut h, CLIENT_B, 5000);
}

#[test]
fn rfc6888_req4_ports_per_subscriber() {
    let mut h = nat(|n| n.max_ports_per_subscriber = 1);
    udp_out(&mut h, CLIENT6, 5000);
    // A second destination on the same mapping needs no new port.
    h.one(&out6(CLIENT6, OTHER6).udp(5000, 53, 10));
    let p = out6(CLIENT6, SERVER6).udp(5001, 53, 10);
    assert_eq!(dropped(&mut h, &p), DropReason::SubscriberLimit);
    udp_out(&mut h, CLIENT_B, 5001);
}

#[test]
fn rfc6888_req8_port_reuse_delay() {
    let mut h = nat(|_| {});
    assert_eq!(udp_out(&mut h, CLIENT6, 61010), 61010);
    at(&mut h, 301); // session gone, port cooling
    assert_eq!(stats(&h).bib.udp, 1);
    let b = udp_out(&mut h, CLIENT_B, 61010);
    assert_ne!(b, 61010, "not reused within port_reuse");
    at(&mut h, 301 + 121);
    assert_eq!(
        udp_out(
            &mut h,
            Ipv6Addr::new(0x2001, 0xdb8, 3, 0, 0, 0, 0, 1),
            61010
        ),
        61010
    );
}

/// RFC 6888 REQ-8 across a restart (docs/restart.md): a cooling entry
/// walked out of one translator and restored into a new one holds its port
/// for the rest of its wait (not the whole delay again), is not logged,
/// takes no inbound traffic, and its owner revives it.
#[test]
fn rfc6888_req8_cooling_entry_kept_across_a_restart() {
    let mut h = nat(|_| {});
    assert_eq!(udp_out(&mut h, CLIENT6, 61010), 61010);
    at(&mut h, 301); // the session ends at this tick: cooling until 421 s
    h.now_ns = 350 * S;
    let mut cooling = Vec::new();
    h.t.walk_cooling_bib(h.now_ns, |r| cooling.push(r));
    assert_eq!(cooling.len(), 1, "{cooling:?}");
    let r = cooling[0];
    assert_eq!(
        (r.v6, r.port6, r.v4, r.port4),
        (CLIENT6, 61010, POOL4, 61010)
    );
    assert_eq!(r.remaining_ms, 71_000);

    // The new run: its own clock, the entry back with 71 s left.
    let mut h = nat(|_| {});
    h.t.restore_cooling_bib(&r, h.now_ns).unwrap();
    h.t.restore_cooling_bib(&r, h.now_ns).unwrap(); // the same again: no change
    assert_eq!(stats(&h).bib.udp, 1);
    assert_eq!(stats(&h).sessions.udp, 0);
    assert_eq!(
        dropped(&mut h, &in4(SERVER4).udp(53, 61010, 10)),
        DropReason::NoBibEntry,
        "a cooling mapping takes no inbound traffic"
    );
    assert_ne!(
        udp_out(&mut h, CLIENT_B, 61010),
        61010,
        "held for its subscriber"
    );
    at(&mut h, 70);
    assert_eq!(stats(&h).bib.udp, 2, "still cooling at 70 s");
    at(&mut h, 72);
    let c = Ipv6Addr::new(0x2001, 0xdb8, 3, 0, 0, 0, 0, 1);
    assert_eq!(
        udp_out(&mut h, c, 61010),
        61010,
        "free after the rest of its wait"
    );

    // Its owner revives it, with its port.
    let mut h = nat(|_| {});
    h.t.restore_cooling_bib(&r, h.now_ns).unwrap();
    assert_eq!(udp_out(&mut h, CLIENT6, 61010), 61010);
    assert_eq!(stats(&h).bib.udp, 1);
}

#[test]
fn rfc6888_cooling_mapping_is_revived_by_its_owner() {
    let mut h = nat(|_| {});
    let p = udp_out(&mut h, CLIENT6, 5000);
    at(&mut h, 301);
    assert_eq!(udp_out(&mut h, CLIENT6, 5000), p, "same mapping (EIM)");
    // A cooling mapping does not take inbound traffic.
    let mut h = nat(|_| {});
    let p = udp_out(&mut h, CLIENT6, 5000);
    at(&mut h, 301);
    assert_eq!(
        dropped(&mut h, &in4(SERVER4).udp(53, p, 10)),
        DropReason::NoBibEntry
    );
}

#[test]
fn rfc6146_empty_pool4_exhausts() {
    let mut h = nat(|n| n.pool4.clear());
    let p = out6(CLIENT6, SERVER6).udp(5000, 53, 10);
    assert_eq!(dropped(&mut h, &p), DropReason::Pool4Exhausted);
}

#[test]
fn rfc6146_pool4_exhaustion() {
    let mut h = nat(|n| {
        n.pool4[0].udp = PortRange::new(61000, 61003);
    });
    for sport in 0..4 {
        udp_out(&mut h, CLIENT6, 100 + sport);
    }
    let p = out6(CLIENT6, SERVER6).udp(200, 53, 10);
    assert_eq!(dropped(&mut h, &p), DropReason::Pool4Exhausted);
}

// ---- RFC 7422 port blocks and the event log ------------------------------------------

#[test]
fn rfc7422_port_blocks_logged_per_block() {
    let mut h = nat(|n| {
        n.port_block_size = 64;
        n.event_log = EventLog::Bib;
    });
    let a = udp_out(&mut h, CLIENT6, 5000);
    let b = udp_out(&mut h, CLIENT6, 5001);
    assert_eq!(a / 64, b / 64, "same block");
    let mut ev = Vec::new();
    h.t.drain_events(|e| ev.push(*e));
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].kind, EventKind::BlockAllocated);
    assert_eq!(ev[0].port4, a & !63);
    assert_eq!(ev[0].port4_last, (a & !63) + 63);
    assert_eq!(stats(&h).port_blocks, 1);
    at(&mut h, 301);
    at(&mut h, 301 + 121);
    h.t.drain_events(|e| ev.push(*e));
    assert_eq!(ev.last().unwrap().kind, EventKind::BlockReleased);
    assert_eq!(stats(&h).port_blocks, 0);
}

#[test]
fn rfc6888_req12_session_log_without_destinations_by_default() {
    let mut h = nat(|n| n.event_log = EventLog::Sessions);
    udp_out(&mut h, CLIENT6, 5000);
    let mut ev = Vec::new();
    h.t.drain_events(|e| ev.push(*e));
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].kind, EventKind::SessionCreated);
    assert_eq!(ev[0].remote, None);
    let mut h = nat(|n| {
        n.event_log = EventLog::Sessions;
        n.log_destinations = true;
    });
    udp_out(&mut h, CLIENT6, 5000);
    at(&mut h, 301);
    let mut ev = Vec::new();
    h.t.drain_events(|e| ev.push(*e));
    assert_eq!(ev[0].remote, Some((SERVER4, 53)));
    assert_eq!(ev[1].kind, EventKind::SessionExpired);
}

#[test]
fn rfc6888_req12_all_logs_blocks_and_sessions_with_the_subscriber_prefix() {
    let mut h = nat(|n| {
        n.port_block_size = 64;
        n.subscriber_prefix_len = 56;
        n.event_log = EventLog::All;
    });
    udp_out(&mut h, CLIENT6, 5000);
    let mut ev = Vec::new();
    h.t.drain_events(|e| ev.push(*e));
    let kinds: Vec<_> = ev.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EventKind::BlockAllocated, EventKind::SessionCreated]
    );
    assert_eq!(ev[0].prefix_len, 56, "a block names its subscriber prefix");
    assert_eq!(ev[1].prefix_len, 128, "a session names its host");
    assert_eq!(ev[1].v6, CLIENT6);
}

/// RFC 6888 REQ-12 leaves open what a full log does; with
/// `on_overflow = "refuse"` no session is made that could not be logged, and
/// the sessions that exist go on.
#[test]
fn rfc6888_req12_refuse_unlogged_sessions_when_the_ring_is_full() {
    let mut h = nat(|n| {
        n.event_log = EventLog::Sessions;
        n.refuse_unlogged = true;
        n.max_sessions = 1 << 16;
    });
    let first = udp_out(&mut h, CLIENT6, 1);
    let mut made = 1u16;
    loop {
        let p = out6(CLIENT6, SERVER6).udp(1 + made, 53, 10);
        match h.run(&p).0 {
            Verdict::Translated => made += 1,
            _ => break,
        }
        assert!(made < 10_000, "the ring never filled");
    }
    let p = out6(CLIENT6, SERVER6).udp(1 + made, 53, 10);
    assert_eq!(dropped(&mut h, &p), DropReason::EventLogFull);
    assert_eq!(stats(&h).events_lost, 0, "refused, not lost");
    // An existing session still translates, both ways.
    assert_eq!(udp_out(&mut h, CLIENT6, 1), first);
    // Drained, the ring takes new sessions again.
    let mut n = 0;
    h.t.drain_events(|_| n += 1);
    assert_eq!(n, usize::from(made));
    udp_out(&mut h, CLIENT6, 60_000);
}

// ---- multi-core: port_owner and subscriber_worker --------------------------------------

#[test]
fn nat64_workers_allocate_only_owned_ports() {
    let cfg = Arc::new(nat_config(|_| {}));
    for w in 0..2u16 {
        let mut h = Harness {
            t: Translator::for_worker(cfg.clone(), w, 2),
            scratch: sixgate_core::Scratch::new(),
            now_ns: 0,
        };
        let mut served = 0;
        for i in 0..40u16 {
            let client = Ipv6Addr::new(0x2001, 0xdb8, 0x100 + i, 0, 0, 0, 0, 1);
            let p = out6(client, SERVER6).udp(1000 + i, 53, 10);
            if steering::subscriber_worker(u128::from(client), 64, 2) != w {
                assert_eq!(dropped(&mut h, &p), DropReason::WrongWorker);
                continue;
            }
            let port = src4(&h.one(&p)).1;
            assert_eq!(steering::port_owner(port, 0, 2), w, "port {port}");
            served += 1;
        }
        assert!(served > 0);
        // IPv4 traffic for another worker's port.
        let foreign = (61002..)
            .find(|&p| steering::port_owner(p, 0, 2) != w)
            .unwrap();
        let p = in4(SERVER4).udp(53, foreign, 10);
        assert_eq!(dropped(&mut h, &p), DropReason::WrongWorker);
    }
}

// ---- fragments -------------------------------------------------------------------------

#[test]
fn rfc6146_fragments_follow_their_first() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    let whole = in4(SERVER4).id(77).df(false).udp(53, port4, 600);
    let frags = split_v4(&whole, 256);
    assert!(frags.len() >= 3);
    for f in &frags {
        let out = h.one(f);
        assert_eq!(view(&out).dst, IpAddr::V6(CLIENT6));
    }
    // IPv6 side: fragments out.
    let whole6 = out6(CLIENT6, SERVER6).udp(5000, 53, 600);
    for f in split_v6(&whole6, 256, 99) {
        let out = h.one(&f);
        assert_eq!(view(&out).src, IpAddr::V4(POOL4));
    }
    assert_eq!(stats(&h).sessions.udp, 1);
}

/// Translate `frags` in the order `order`; the verdicts and every output.
fn run_order(h: &mut Harness, frags: &[Vec<u8>], order: &[usize]) -> (Vec<Verdict>, Vec<Vec<u8>>) {
    let picked: Vec<_> = order.iter().map(|&i| frags[i].clone()).collect();
    run_all(h, &picked)
}

/// §3.4: fragments that come before their first wait for it, then leave
/// right after it: reversed and middle-first, both directions.
#[test]
fn rfc6146_s3_4_fragments_out_of_order_wait_for_their_first() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    for (id, order) in [(80u16, [2, 1, 0]), (81, [1, 0, 2]), (82, [1, 2, 0])] {
        let whole = in4(SERVER4).id(id).df(false).udp(53, port4, 600);
        let frags = split_v4(&whole, 256);
        assert_eq!(frags.len(), 3);
        let (verdicts, outs) = run_order(&mut h, &frags, &order);
        assert_eq!(outs.len(), 3, "order {order:?}: {verdicts:?}");
        assert!(verdicts.contains(&Verdict::Held));
        for o in &outs {
            assert_eq!(view(o).dst, IpAddr::V6(CLIENT6));
        }
        let (msg, first) = reassemble(&outs);
        assert_eq!(msg.len(), 608);
        assert_eq!(dst6(&first_of(&outs)).1, 5000);
        assert_eq!(first.family, Family::V6);
    }
    // IPv6 side, reversed.
    let whole6 = out6(CLIENT6, SERVER6).udp(5000, 53, 600);
    let mut frags = split_v6(&whole6, 256, 99);
    frags.reverse();
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Held, Verdict::Fragmented(3)]
    );
    for o in &outs {
        assert_eq!(view(o).src, IpAddr::V4(POOL4));
    }
    assert_eq!(src4(&first_of(&outs)), (IpAddr::V4(POOL4), port4));
    assert_eq!(h.t.counters().total_drops(), 0);
}

/// The output that holds the transport header (fragment offset 0).
fn first_of(outs: &[Vec<u8>]) -> Vec<u8> {
    outs.iter()
        .find(|o| view(o).fragment.is_none_or(|f| f.offset == 0))
        .unwrap()
        .clone()
}

/// §3.4 (FRAGMENT_MIN, 2 s): a fragment whose first never comes is dropped
/// and counted; the datagram's first, later, leaves alone.
#[test]
fn rfc6146_s3_4_waiting_fragment_expires() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    let frags = split_v4(&in4(SERVER4).id(90).df(false).udp(53, port4, 600), 256);
    assert_eq!(h.run(&frags[2]).0, Verdict::Held);
    at(&mut h, 3);
    assert_eq!(h.t.counters().drops(DropReason::FragmentExpired), 1);
    assert_eq!(h.run(&frags[0]).0, Verdict::Translated);
}

/// §3.4 and §5 (limit the resources fragments take): 64 fragments wait per
/// worker; more are dropped and counted, as is one too big to keep.
#[test]
fn rfc6146_s3_4_waiting_fragments_are_bounded() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    for id in 0..64u16 {
        let frags = split_v4(&in4(SERVER4).id(id).df(false).udp(53, port4, 600), 256);
        assert_eq!(h.run(&frags[1]).0, Verdict::Held);
    }
    let frags = split_v4(&in4(SERVER4).id(64).df(false).udp(53, port4, 600), 256);
    assert_eq!(dropped(&mut h, &frags[1]), DropReason::FragmentBufferFull);
    let big = split_v4(&in4(SERVER4).id(65).df(false).udp(53, port4, 6000), 2400);
    assert_eq!(dropped(&mut h, &big[1]), DropReason::FragmentBufferFull);
    // The rest still work: datagram 0's first releases its waiting fragment.
    let frags = split_v4(&in4(SERVER4).id(0).df(false).udp(53, port4, 600), 256);
    assert_eq!(h.run(&frags[0]).0, Verdict::Fragmented(2));
}

/// §3.5.3 with RFC 7915 §4.2/§5.2: a fragmented ping crosses the NAT64 both
/// ways. The first fragment's mapping is made before it waits for its last
/// fragment, so the middle ones follow it at once; its identifier is
/// rewritten and its checksum covers the whole message.
#[test]
fn rfc6146_s3_5_3_fragmented_echo_both_ways() {
    let mut h = nat(|_| {});
    let req = out6(CLIENT6, SERVER6).echo_request(4321, 1, 3000);
    let frags = split_v6(&req, 1232, 5);
    assert_eq!(frags.len(), 3);
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Translated, Verdict::Fragmented(2)]
    );
    assert!(icmp_verifies(&outs), "ICMPv4 checksum of the whole message");
    let (ip, ident) = src4(&first_of(&outs));
    assert_eq!(ip, IpAddr::V4(POOL4));
    // The reply, fragmented by the server, reversed.
    let reply = in4(SERVER4).id(0x5151).df(false).echo_reply(ident, 1, 3000);
    let mut frags = split_v4(&reply, 1480);
    frags.reverse();
    let (verdicts, outs) = run_all(&mut h, &frags);
    assert_eq!(verdicts[..2], [Verdict::Held, Verdict::Held]);
    assert!(matches!(verdicts[2], Verdict::Fragmented(_)));
    assert!(icmp_verifies(&outs), "ICMPv6 checksum of the whole message");
    assert_eq!(dst6(&first_of(&outs)), (IpAddr::V6(CLIENT6), 4321));
    let (msg, _) = reassemble(&outs);
    assert_eq!((msg[0], msg.len()), (129, 3008));
    // Middle and last before the first, from IPv6: all three leave with the
    // first, whose checksum waited for the last's length.
    let req = out6(CLIENT6, SERVER6).echo_request(4321, 2, 3000);
    let frags = split_v6(&req, 1232, 6);
    let (verdicts, outs) = run_all(
        &mut h,
        &[frags[1].clone(), frags[2].clone(), frags[0].clone()],
    );
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Held, Verdict::Fragmented(3)]
    );
    assert!(icmp_verifies(&outs));
    assert_eq!(src4(&first_of(&outs)), (IpAddr::V4(POOL4), ident));
    assert_eq!(h.t.counters().total_drops(), 0);
}

/// §3.4 with RFC 7915 §4.2: a two-fragment ping from IPv6 whose last
/// fragment waits for the first. The first, when it comes, needs the last's
/// length for its checksum (the whole message's pseudo-header): it must not
/// wait for a last fragment that already came; both leave at once. Also with
/// link-layer padding after the first fragment's declared length.
#[test]
fn rfc6146_s3_4_fragmented_echo_last_before_first_leaves_whole() {
    for pad in [0usize, 7] {
        let mut h = nat(|_| {});
        let req = out6(CLIENT6, SERVER6).echo_request(4321, 3, 1500);
        let frags = split_v6(&req, 1232, 7);
        assert_eq!(frags.len(), 2);
        let mut first = frags[0].clone();
        first.extend(std::iter::repeat_n(0u8, pad));
        let (verdicts, outs) = run_all(&mut h, &[frags[1].clone(), first]);
        assert_eq!(
            verdicts,
            [Verdict::Held, Verdict::Fragmented(2)],
            "padding {pad}"
        );
        assert!(icmp_verifies(&outs), "padding {pad}");
        assert_eq!(src4(&first_of(&outs)).0, IpAddr::V4(POOL4));
        assert_eq!(h.t.counters().total_drops(), 0);
    }
}

// ---- stats ---------------------------------------------------------------------------

#[test]
fn nat64_stats_count_ports_and_capacity() {
    let mut h = nat(|_| {});
    let st = stats(&h);
    assert_eq!(st.ports_owned.udp, 65535 - 61001 + 1);
    assert_eq!(st.session_capacity, 1024);
    udp_out(&mut h, CLIENT6, 5000);
    h.one(&out6(CLIENT6, SERVER6).tcp_flags(5000, 80, tcp_flag::SYN, 0));
    let st = stats(&h);
    assert_eq!(st.ports_in_use.udp, 1);
    assert_eq!(st.ports_in_use.tcp, 1);
    assert_eq!(st.sessions.total(), 2);
}

#[test]
fn nat64_off_tick_is_none() {
    let mut h = Harness::new(Config::with_pool6(Some(pool6())));
    assert_eq!(h.t.tick(0, &mut h.scratch), None);
    assert_eq!(h.t.nat64_stats(), nat64::Stats::default());
}

#[test]
fn rfc6888_subscriber_table_full_refuses_new_subscribers_only() {
    // 8 sessions: room for 8 tracked subscribers (at least min(cap, 1024)).
    let mut h = nat(|n| {
        n.max_sessions = 8;
        n.max_sessions_per_subscriber = 100;
    });
    for i in 0..8u16 {
        udp_out(
            &mut h,
            Ipv6Addr::new(0x2001, 0xdb8, 0x100 + i, 0, 0, 0, 0, 1),
            5000,
        );
    }
    assert_eq!(stats(&h).subscribers, 8);
    let p = out6(Ipv6Addr::new(0x2001, 0xdb8, 0x200, 0, 0, 0, 0, 1), SERVER6).udp(5000, 53, 10);
    assert_eq!(dropped(&mut h, &p), DropReason::SessionTableFull);
}

#[test]
fn nat64_reload_keeps_state_and_applies_new_timeouts() {
    let mut h = nat(|_| {});
    let port4 = udp_out(&mut h, CLIENT6, 5000);
    let cfg = nat_config(|n| n.timeouts.udp = 1000);
    h.t.set_config(Arc::new(cfg));
    // The existing mapping still answers, and its refresh now uses 1000 s.
    h.one(&in4(SERVER4).udp(53, port4, 10));
    at(&mut h, 900);
    assert_eq!(stats(&h).sessions.udp, 1);
    // Turning NAT64 off drops the state; on again starts empty.
    h.t.set_config(Arc::new(Config::with_pool6(Some(pool6()))));
    assert_eq!(stats(&h), nat64::Stats::default());
}

#[test]
fn rfc6146_s3_8_hairpin_to_another_workers_port_goes_through_ipv4() {
    let cfg = Arc::new(nat_config(|_| {}));
    let worker = |w| Harness {
        t: Translator::for_worker(cfg.clone(), w, 2),
        scratch: sixgate_core::Scratch::new(),
        now_ns: 0,
    };
    let mut w = [worker(0), worker(1)];
    let client_of = |wk: u16| {
        (0..100u16)
            .map(|i| Ipv6Addr::new(0x2001, 0xdb8, 0x300 + i, 0, 0, 0, 0, 1))
            .find(|&a| steering::subscriber_worker(u128::from(a), 64, 2) == wk)
            .unwrap()
    };
    let (a, b) = (client_of(1), client_of(0));
    // A's mapping lives in worker 1, on a port worker 1 owns.
    let pa = src4(&w[1].one(&out6(a, SERVER6).udp(5000, 53, 10))).1;
    assert_eq!(steering::port_owner(pa, 0, 2), 1);
    // B (worker 0) sends to it: worker 0 does not own pa, so the packet leaves as
    // IPv4 for the kernel to route back in...
    let v4 = w[0].one(&out6(b, POOL4_6).udp(6000, pa, 10));
    let s = view(&v4);
    assert_eq!((s.family, s.dst), (Family::V4, IpAddr::V4(POOL4)));
    assert_eq!(w[0].t.counters().hairpinned, 0);
    // ...and steering brings it to worker 1, which delivers it to A.
    let r = w[1].one(&v4);
    assert_eq!(dst6(&r), (IpAddr::V6(a), 5000));
    assert_eq!(view(&r).src, IpAddr::V6(POOL4_6));
}

#[test]
fn rfc6146_s3_5_3_icmp_identifier_changed_one_session() {
    let mut h = nat(|_| {});
    let a = h.one(&out6(CLIENT6, SERVER6).echo_request(7, 1, 16));
    assert_eq!(src4(&a).1, 7);
    // Another subscriber with the same identifier gets another one.
    let b = h.one(&out6(CLIENT_B, SERVER6).echo_request(7, 1, 16));
    let id_b = src4(&b).1;
    assert_ne!(id_b, 7);
    let r = h.one(&in4(SERVER4).echo_reply(id_b, 1, 16));
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT_B), 7));
    h.one(&out6(CLIENT_B, SERVER6).echo_request(7, 2, 16));
    assert_eq!(
        stats(&h).sessions.icmp,
        2,
        "one session per mapping and remote"
    );
    // An error about B's request finds B.
    let err = Ip4::new(ROUTER4, POOL4).icmp_error(11, 0, [0; 4], &b);
    let e = h.one(&err);
    let s = view(&e);
    assert_eq!(s.dst, IpAddr::V6(CLIENT_B));
    let inner = s.inner.unwrap();
    assert_eq!(inner.src, IpAddr::V6(CLIENT_B));
    assert_eq!(inner.l4.icmp(), Some((128, 0)));
    match inner.l4 {
        L4::Icmp { rest, .. } => assert_eq!(u16::from_be_bytes([rest[0], rest[1]]), 7),
        l4 => panic!("{l4:?}"),
    }
    assert_eq!(inner.l4_checksum_ok, Some(true));
}

#[test]
fn rfc6146_s3_8_hairpin_refused_quietly() {
    let mut h = nat(|n| n.filtering = Filtering::AddressDependent);
    let port_a = udp_out(&mut h, CLIENT6, 5000);
    // B is not a remote A has talked to: filtered, and no ICMPv4 error to our
    // own pool4 address.
    let (v, out) = h.run(&out6(CLIENT_B, POOL4_6).udp(6000, port_a, 10));
    assert_eq!(v, Verdict::Dropped(DropReason::Filtered));
    assert!(out.is_empty());
}

// ---- Runtime changes (Translator::reconfigure) -------------------------------------------

/// A second pool4 address, added and removed at runtime.
const POOL4_B: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

fn reconfigure(h: &mut Harness, f: impl FnOnce(&mut Nat64Config)) {
    let mut cfg = h.t.config().clone();
    f(cfg.nat64.as_mut().unwrap());
    h.t.reconfigure(Arc::new(cfg)).unwrap();
}

#[test]
fn rfc6146_s3_5_removed_pool4_address_drains_its_sessions_survive() {
    let mut h = nat(|_| {});
    let port = udp_out(&mut h, CLIENT6, 5000);
    // POOL4 goes, POOL4_B comes: the established session keeps POOL4 both ways.
    reconfigure(&mut h, |n| n.pool4 = vec![Pool4Entry::single(POOL4_B)]);
    assert_eq!(udp_out(&mut h, CLIENT6, 5000), port);
    let back = h.one(&Ip4::new(SERVER4, POOL4).udp(53, port, 10));
    assert_eq!(dst6(&back), (IpAddr::V6(CLIENT6), 5000));
    // A new mapping takes the new address (RFC 6146 §3.5.1.1: from pool4).
    let p = h.one(&out6(CLIENT_B, SERVER6).udp(6000, 53, 10));
    assert_eq!(src4(&p).0, IpAddr::V4(POOL4_B));
    assert_eq!(stats(&h).sessions.udp, 2);
    // Once its session and BIB entry expired, POOL4 is no longer ours.
    at(&mut h, 2000);
    at(&mut h, 2200); // the freed port's RFC 6888 reuse delay
    assert_eq!(stats(&h).bib.udp, 0);
    reconfigure(&mut h, |_| {});
    let (v, out) = h.run_unchecked(&Ip4::new(SERVER4, POOL4).udp(53, port, 10));
    assert!(v != Verdict::Translated || dst6(&out[0]).0 != IpAddr::V6(CLIENT6));
}

/// RFC 6146 §3.5.1.1: a removed pool4 address stays ours while it has BIB
/// entries; the timers forget it once the last one has gone, with no change
/// needed (the data plane then takes its route away).
#[test]
fn rfc6146_s3_5_drained_pool4_address_is_forgotten_by_the_timers() {
    let mut h = nat(|_| {});
    let port = udp_out(&mut h, CLIENT6, 5000);
    reconfigure(&mut h, |n| n.pool4 = vec![Pool4Entry::single(POOL4_B)]);
    at(&mut h, 10);
    assert_eq!(h.t.draining_pool4(), [Pool4Entry::single(POOL4)]);
    at(&mut h, 2000);
    at(&mut h, 2200); // the freed port's RFC 6888 reuse delay
    assert!(h.t.draining_pool4().is_empty());
    let (v, out) = h.run_unchecked(&Ip4::new(SERVER4, POOL4).udp(53, port, 10));
    assert!(v != Verdict::Translated || dst6(&out[0]).0 != IpAddr::V6(CLIENT6));
}

#[test]
fn rfc6146_s3_5_added_pool4_address_is_used_at_once() {
    let mut h = nat(|n| {
        // One UDP port: the second subscriber finds pool4 full.
        n.pool4[0].udp = PortRange::new(61001, 61001);
    });
    udp_out(&mut h, CLIENT6, 5000);
    let full = h.run(&out6(CLIENT_B, SERVER6).udp(6000, 53, 10)).0;
    assert!(matches!(full, Verdict::Dropped(_) | Verdict::Replied(_)));
    reconfigure(&mut h, |n| n.pool4.push(Pool4Entry::single(POOL4_B)));
    let p = h.one(&out6(CLIENT_B, SERVER6).udp(6000, 53, 10));
    assert_eq!(src4(&p).0, IpAddr::V4(POOL4_B));
    // The first subscriber's session was kept.
    assert_eq!(stats(&h).sessions.udp, 2);
}

#[test]
fn rfc6146_s3_1_static_bib_added_and_removed_at_runtime() {
    let mut h = nat(|_| {});
    let entry = web_static_bib();
    let port = udp_out(&mut h, CLIENT6, 5000);
    reconfigure(&mut h, |n| n.static_bib = vec![entry]);
    assert_eq!(stats(&h).bib.tcp, 1);
    let r = h.one(&in4(SERVER4).tcp_flags(40000, 8080, tcp_flag::SYN, 0));
    assert_eq!(dst6(&r), (IpAddr::V6(CLIENT6), 80));
    // Removed: the mapping and its session go; the UDP session stays.
    reconfigure(&mut h, |n| n.static_bib.clear());
    assert_eq!((stats(&h).bib.tcp, stats(&h).sessions.tcp), (0, 0));
    assert_eq!(udp_out(&mut h, CLIENT6, 5000), port);
}

#[test]
fn rfc6146_runtime_refuses_what_the_tables_are_built_on() {
    let mut h = nat(|_| {});
    let mut cfg = h.t.config().clone();
    cfg.nat64.as_mut().unwrap().max_sessions = 5;
    let e = h.t.reconfigure(Arc::new(cfg)).unwrap_err();
    assert_eq!(e.key, "[nat64] max_sessions");
    let e =
        h.t.reconfigure(Arc::new(Config::with_pool6(Some(pool6()))))
            .unwrap_err();
    assert_eq!(e.key, "[translator] mode");
}

#[test]
fn rfc6146_s3_1_tables_are_walked_in_chunks() {
    let mut h = nat(|_| {});
    for sport in 5000..5010 {
        udp_out(&mut h, CLIENT6, sport);
    }
    let (mut bibs, mut sessions) = (0, 0);
    let mut cursor = Some(0);
    while let Some(from) = cursor {
        cursor = h.t.walk_bib(from, 3, |b| {
            assert_eq!((b.proto, b.v6, b.is_static), (Proto::Udp, CLIENT6, false));
            bibs += 1;
        });
    }
    let mut cursor = Some(0);
    while let Some(from) = cursor {
        cursor = h.t.walk_sessions(from, 4, h.now_ns, |s| {
            assert_eq!((s.remote4, s.rport), (SERVER4, 53));
            assert!(s.expires_in_ms > 0);
            sessions += 1;
        });
    }
    assert_eq!((bibs, sessions), (10, 10));
}

// ---- flush (RFC 9693 §4.3 tear-down; RFC 6146 §3.5 deletion) ----------------------------

/// Flush every worker-table chunk with `budget`; what went, and how many calls.
fn flush_all(h: &mut Harness, filter: &nat64::FlushFilter, budget: u32) -> (nat64::Flushed, u32) {
    let mut out = nat64::Flushed::default();
    let (mut cursor, mut calls) = (Some(0), 0);
    while let Some(from) = cursor {
        cursor = h.t.flush(filter, from, budget, h.now_ns, &mut out);
        calls += 1;
        assert!(calls < 10_000, "the flush never ends");
    }
    (out, calls)
}

/// RFC 9693 §4.3 / RFC 6146 §3.5: an unfiltered flush, a chunk at a time,
/// removes every session and every dynamic BIB entry, keeps the static entry,
/// frees the ports at once, and traffic starts over.
#[test]
fn rfc9693_s4_3_flush_removes_sessions_and_dynamic_bib_keeps_static() {
    let mut h = nat(|n| n.static_bib = vec![web_static_bib()]);
    for sport in 5000..5010 {
        udp_out(&mut h, CLIENT6, sport);
    }
    // One BIB entry with two sessions, an ICMP one, a TCP one on the static entry.
    udp_out(&mut h, CLIENT_B, 6000);
    h.one(&out6(CLIENT_B, OTHER6).udp(6000, 53, 10));
    h.one(&out6(CLIENT6, SERVER6).echo_request(9, 1, 8));
    h.one(&in4(SERVER4).tcp_flags(40000, 8080, tcp_flag::SYN, 0));
    let before = stats(&h);
    assert_eq!(before.sessions.total(), 10 + 2 + 1 + 1);
    assert_eq!(before.bib.total(), 10 + 1 + 1 + 1);
    let (out, calls) = flush_all(&mut h, &nat64::FlushFilter::default(), 3);
    assert!(calls > 5, "bounded chunks: {calls} calls");
    assert_eq!((out.sessions, out.bib), (14, 12));
    let after = stats(&h);
    assert_eq!(after.sessions.total(), 0);
    assert_eq!((after.bib.tcp, after.bib.udp, after.bib.icmp), (1, 0, 0));
    assert_eq!(
        after.ports_in_use.total(),
        1,
        "only the static entry's port"
    );
    assert_eq!(after.sessions_flushed, 14);
    assert_eq!(after.subscribers, 0);
    // A second flush has nothing left to do.
    assert_eq!(
        flush_all(&mut h, &nat64::FlushFilter::default(), 3)
            .0
            .sessions,
        0
    );
    // New flows work.
    udp_out(&mut h, CLIENT_B, 5000);
    h.one(&in4(SERVER4).tcp_flags(40001, 8080, tcp_flag::SYN, 0));
    assert_eq!(stats(&h).sessions.total(), 2);
}

/// RFC 6888 REQ-12: the event log says a flushed session or mapping was
/// flushed, not expired, so an operator's records tell a tear-down from
/// a timeout.
#[test]
fn rfc6888_req12_flush_is_logged_as_flushed() {
    for (log, kinds) in [
        (
            EventLog::Sessions,
            [EventKind::SessionCreated, EventKind::SessionFlushed],
        ),
        (
            EventLog::Bib,
            [EventKind::BibCreated, EventKind::BibFlushed],
        ),
    ] {
        let mut h = nat(|n| n.event_log = log);
        udp_out(&mut h, CLIENT6, 5000);
        flush_all(&mut h, &nat64::FlushFilter::default(), 16);
        let mut ev = Vec::new();
        h.t.drain_events(|e| ev.push(e.kind));
        assert_eq!(ev, kinds, "{log:?}");
    }
}

/// A cooling entry (its last session expired, RFC 6888 REQ-8 wait) is flushed too.
#[test]
fn rfc9693_s4_3_flush_frees_cooling_ports() {
    let mut h = nat(|_| {});
    assert_eq!(udp_out(&mut h, CLIENT6, 61010), 61010);
    at(&mut h, 301);
    assert_eq!((stats(&h).bib.udp, stats(&h).sessions.udp), (1, 0));
    let (out, _) = flush_all(&mut h, &nat64::FlushFilter::default(), 64);
    assert_eq!((out.sessions, out.bib), (0, 1));
    assert_eq!(udp_out(&mut h, CLIENT_B, 61010), 61010, "reusable at once");
}

/// Filters: protocol, IPv6 prefix, pool4 address; what they do not name stays.
#[test]
fn rfc9693_s4_3_flush_filters() {
    let mut h = nat(|_| {});
    udp_out(&mut h, CLIENT6, 5000);
    udp_out(&mut h, CLIENT_B, 5000);
    h.one(&out6(CLIENT6, SERVER6).echo_request(9, 1, 8));
    let icmp = nat64::FlushFilter {
        proto: Some(Proto::Icmp),
        ..Default::default()
    };
    assert_eq!(flush_all(&mut h, &icmp, 64).0.sessions, 1);
    assert_eq!(stats(&h).sessions.total(), 2);
    let client_b = nat64::FlushFilter {
        ipv6: Some((u128::from(CLIENT_B) & !0xffff_ffff_ffff_ffff, 64)),
        ..Default::default()
    };
    let (out, _) = flush_all(&mut h, &client_b, 64);
    assert_eq!((out.sessions, out.bib), (1, 1));
    let elsewhere = nat64::FlushFilter {
        ipv4: Some((Ipv4Addr::new(192, 0, 2, 128), 25)),
        ..Default::default()
    };
    assert_eq!(flush_all(&mut h, &elsewhere, 64).0.sessions, 0);
    let pool4 = nat64::FlushFilter {
        ipv4: Some((POOL4, 32)),
        proto: Some(Proto::Udp),
        ..Default::default()
    };
    assert_eq!(flush_all(&mut h, &pool4, 64).0.sessions, 1);
    assert_eq!((stats(&h).sessions.total(), stats(&h).bib.total()), (0, 0));
}

/// One BIB entry with more sessions than a chunk's budget: the cursor comes
/// back to it until it is empty.
#[test]
fn rfc9693_s4_3_flush_resumes_inside_a_busy_entry() {
    let mut h = nat(|_| {});
    for last in 1..=20u8 {
        let server = Ipv6Addr::new(
            0x2001,
            0xdb8,
            0x64,
            0,
            0,
            0,
            0xc633,
            0x6400 | u16::from(last),
        );
        h.one(&out6(CLIENT6, server).udp(5000, 53, 10));
    }
    assert_eq!((stats(&h).bib.udp, stats(&h).sessions.udp), (1, 20));
    let (out, calls) = flush_all(&mut h, &nat64::FlushFilter::default(), 4);
    assert_eq!((out.sessions, out.bib), (20, 1));
    assert!(calls >= 5, "{calls}");
    assert_eq!(stats(&h).bib.udp, 0);
}
