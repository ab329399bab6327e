//! Write the seed corpora `seeds/translate_v6/` and `seeds/translate_v4/` from
//! sixgate-testkit packets: every packet shape RFC 7915 treats differently, under
//! the typical configuration and a few others.
//!
//! Run from `fuzz/`: `cargo run --example gen_seeds`. The output is committed;
//! rerun it when the input layout ([`sixgate_fuzz::Knobs`]) or the shapes change.

use std::fs;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use sixgate_fuzz::{Knobs, POOL6, input};
use sixgate_testkit::{Ip4, Ip6, proto, split_v4, split_v6, truncate};

/// RFC 6052 §2.2 embedding, written here so the seeds do not depend on the core.
fn embed(prefix: Ipv6Addr, len: u8, v4: Ipv4Addr) -> Ipv6Addr {
    let mut a = prefix.octets();
    let start = usize::from(len / 8);
    let slots = (start..16).filter(|&i| i != 8).take(4);
    for (slot, byte) in slots.zip(v4.octets()) {
        a[slot] = byte;
    }
    a.into()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

const V4_HOST: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
/// Inside the EAM 198.18.0.0/24 ↔ 2001:db8:1::/120.
const EAM_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 5);
const EAM_V4_OTHER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 9);

fn seeds_v6() -> Vec<(String, Knobs, Vec<u8>)> {
    let typical = Knobs::typical();
    let pool = v6("2001:db8:64::");
    let me = v6("2001:db8:1::5"); // EAM side of 198.18.0.5
    let them = embed(pool, 96, V4_HOST);
    let ip = Ip6::new(me, them);
    let back = Ip6::new(them, me);
    let mut out: Vec<(&str, Vec<u8>)> = vec![
        ("udp", ip.udp(40000, 53, 18)),
        ("udp-empty", ip.udp(40000, 53, 0)),
        ("udp-large", ip.udp(40000, 53, 1400)),
        ("tcp", ip.tcp(40000, 443, 6)),
        ("echo-request", ip.echo_request(0x1234, 1, 18)),
        ("echo-reply", ip.echo_reply(0x1234, 1, 18)),
        (
            "tclass",
            ip.clone()
                .traffic_class(0xb8)
                .flow_label(0x12345)
                .udp(1, 2, 3),
        ),
        ("hop-limit-1", ip.clone().hop_limit(1).udp(40000, 53, 18)),
        ("hop-limit-0", ip.clone().hop_limit(0).echo_request(1, 1, 8)),
        (
            "hbh-dest",
            ip.clone().hop_by_hop().dest_opts().udp(1, 2, 10),
        ),
        ("routing-sl0", ip.clone().routing(0).tcp(1, 2, 0)),
        ("routing-sl1", ip.clone().routing(1).udp(1, 2, 10)),
        (
            "atomic-fragment",
            ip.clone().fragment_header(0, false, 7).udp(1, 2, 10),
        ),
        ("no-next-header", ip.raw(proto::NO_NEXT, &[])),
        ("unknown-proto", ip.raw(132, &[0; 12])),
        (
            "icmpv6-unknown-type",
            ip.icmp(200, 0, [0; 4], &[1, 2, 3, 4]),
        ),
        ("mld", ip.icmp(130, 0, [0; 4], &[0; 20])),
    ];
    let big = ip.udp(40000, 53, 200);
    for (i, f) in split_v6(&big, 96, 0xabcd).into_iter().enumerate() {
        out.push((["fragment-0", "fragment-1", "fragment-2"][i], f));
    }
    let echo = ip
        .clone()
        .fragment_header(0, true, 9)
        .echo_request(1, 2, 40);
    out.push(("fragment-icmp", echo));

    // ICMPv6 errors from the IPv6 host about a packet the IPv4 side sent it.
    let quoted = back.udp(53, 40000, 60);
    let quoted_tcp = back.tcp(443, 40000, 100);
    let errors = [
        ("err-port-unreachable", 1, 4, [0; 4], quoted.clone()),
        ("err-admin-prohibited", 1, 1, [0; 4], truncate(&quoted, 48)),
        ("err-no-route", 1, 0, [0; 4], quoted_tcp.clone()),
        (
            "err-packet-too-big",
            2,
            0,
            1280u32.to_be_bytes(),
            quoted_tcp.clone(),
        ),
        (
            "err-ptb-small-mtu",
            2,
            0,
            68u32.to_be_bytes(),
            truncate(&quoted_tcp, 60),
        ),
        ("err-time-exceeded", 3, 0, [0; 4], quoted.clone()),
        (
            "err-param-problem",
            4,
            0,
            7u32.to_be_bytes(),
            quoted.clone(),
        ),
        (
            "err-param-next-header",
            4,
            1,
            6u32.to_be_bytes(),
            truncate(&quoted, 40),
        ),
        ("err-quotes-echo", 1, 3, [0; 4], back.echo_request(1, 1, 16)),
    ];
    for (name, ty, code, rest, inner) in errors {
        out.push((name, ip.icmp_error(ty, code, rest, &inner)));
    }
    let nested = back.icmp_error(1, 4, [0; 4], &ip.udp(1, 2, 8));
    out.push(("err-in-err", ip.icmp_error(1, 4, [0; 4], &nested)));

    let mut seeds: Vec<(String, Knobs, Vec<u8>)> = out
        .into_iter()
        .map(|(n, p)| (n.to_string(), typical, p))
        .collect();

    // Hairpin: EAM'd IPv6 host to another EAM'd IPv4 address (RFC 7757 §4).
    let hp = Ip6::new(me, embed(pool, 96, EAM_V4_OTHER));
    seeds.push(("hairpin-udp".into(), typical, hp.udp(1, 2, 18)));
    let hp_err = hp.icmp_error(
        1,
        4,
        [0; 4],
        &Ip6::new(embed(pool, 96, EAM_V4_OTHER), me).udp(2, 1, 8),
    );
    for mode in 0..3 {
        let k = Knobs {
            hairpin: mode,
            ..typical
        };
        seeds.push((format!("hairpin-error-mode{mode}"), k, hp_err.clone()));
    }

    // Every pool6 choice, with a destination embedded under it.
    for (i, p) in POOL6.iter().enumerate() {
        let k = Knobs {
            pool6: i as u8,
            eam: i == 7,
            ..typical
        };
        let dst = match p {
            Some((a, len)) => embed(v6(a), *len, V4_HOST),
            None => v6("2001:db8:3::7"),
        };
        seeds.push((format!("pool6-{i}-udp"), k, Ip6::new(me, dst).udp(1, 2, 18)));
    }
    // RFC 6052 §3.1: the Well-Known Prefix with a private IPv4 address.
    let wkp = Knobs {
        pool6: 6,
        ..typical
    };
    let private = embed(v6("64:ff9b::"), 96, Ipv4Addr::new(10, 0, 0, 1));
    seeds.push((
        "wkp-private".into(),
        wkp,
        Ip6::new(me, private).udp(1, 2, 18),
    ));
    // Policies.
    let odd = Knobs {
        icmp_rate: 0,
        reset_tos: true,
        no_hop_decrement: true,
        mtu_1500: true,
        rfc6791: true,
        ..typical
    };
    seeds.push((
        "policies-udp".into(),
        odd,
        ip.clone().traffic_class(0xff).udp(1, 2, 18),
    ));
    seeds.push((
        "policies-hop-limit-1".into(),
        odd,
        ip.clone().hop_limit(1).udp(1, 2, 18),
    ));
    // Untranslatable source: an ICMPv6 error from a router with no mapping (RFC 6791).
    let router = Ip6::new(v6("2001:db8:ffff::99"), them);
    for rfc6791 in [false, true] {
        let k = Knobs { rfc6791, ..typical };
        let name = format!("err-from-unmapped-rfc6791-{rfc6791}");
        seeds.push((name, k, router.icmp_error(3, 0, [0; 4], &quoted)));
    }
    seeds
}

fn seeds_v4() -> Vec<(String, Knobs, Vec<u8>)> {
    let typical = Knobs::typical();
    let ip = Ip4::new(V4_HOST, EAM_V4);
    let back = Ip4::new(EAM_V4, V4_HOST);
    let mut out: Vec<(&str, Vec<u8>)> = vec![
        ("udp", ip.udp(53, 40000, 18)),
        ("udp-empty", ip.udp(53, 40000, 0)),
        ("udp-zero-checksum", ip.udp_zero_checksum(53, 40000, 18)),
        ("udp-df0-large", ip.clone().df(false).udp(53, 40000, 1472)),
        ("udp-df1-large", ip.udp(53, 40000, 1472)),
        ("tcp", ip.tcp(443, 40000, 6)),
        ("tcp-df0", ip.clone().df(false).id(0).tcp(443, 40000, 100)),
        ("echo-request", ip.echo_request(0x1234, 1, 18)),
        ("echo-reply", ip.echo_reply(0x1234, 1, 18)),
        ("tos", ip.clone().tos(0xb8).udp(1, 2, 3)),
        ("ttl-1", ip.clone().ttl(1).udp(53, 40000, 18)),
        ("ttl-0", ip.clone().ttl(0).echo_request(1, 1, 8)),
        (
            "options-nop",
            ip.clone().options(&[1, 1, 1, 1]).udp(1, 2, 10),
        ),
        // Record Route, and a Loose Source Route with a hop left (RFC 7915 §4.1).
        (
            "options-rr",
            ip.clone().options(&[7, 7, 4, 0, 0, 0, 0]).udp(1, 2, 10),
        ),
        (
            "options-lsrr",
            ip.clone()
                .options(&[131, 11, 4, 192, 0, 2, 1, 192, 0, 2, 2])
                .udp(1, 2, 10),
        ),
        ("unknown-proto", ip.raw(132, &[0; 12])),
        ("icmp-timestamp", ip.icmp(13, 0, [0; 4], &[0; 12])),
        ("icmp-unknown-type", ip.icmp(200, 0, [0; 4], &[1, 2, 3])),
        (
            "broadcast",
            Ip4::new(V4_HOST, Ipv4Addr::BROADCAST).udp(1, 2, 8),
        ),
        (
            "multicast",
            Ip4::new(V4_HOST, Ipv4Addr::new(224, 0, 0, 251)).udp(5353, 5353, 8),
        ),
    ];
    let big = ip.clone().df(false).id(0x4242).udp(53, 40000, 200);
    for (i, f) in split_v4(&big, 96).into_iter().enumerate() {
        out.push((["fragment-0", "fragment-1", "fragment-2"][i], f));
    }
    let zero_frag = ip.clone().df(false).udp_zero_checksum(53, 40000, 100);
    out.push((
        "fragment-udp-zero-checksum",
        split_v4(&zero_frag, 64).remove(0),
    ));
    out.push((
        "fragment-icmp",
        split_v4(&ip.clone().df(false).echo_request(1, 1, 100), 64).remove(0),
    ));

    // ICMPv4 errors from the IPv4 host about a packet the IPv6 side sent it.
    let quoted = back.udp(40000, 53, 60);
    let quoted_tcp = back.tcp(40000, 443, 100);
    let errors = [
        ("err-port-unreachable", 3, 3, [0; 4], quoted.clone()),
        (
            "err-port-unreachable-rfc792",
            3,
            3,
            [0; 4],
            truncate(&quoted, 28),
        ),
        ("err-net-unreachable", 3, 0, [0; 4], quoted_tcp.clone()),
        ("err-host-unreachable", 3, 1, [0; 4], quoted_tcp.clone()),
        ("err-proto-unreachable", 3, 2, [0; 4], quoted.clone()),
        (
            "err-frag-needed",
            3,
            4,
            [0, 0, 0x05, 0xdc],
            quoted_tcp.clone(),
        ),
        ("err-frag-needed-mtu0", 3, 4, [0; 4], quoted_tcp.clone()),
        ("err-admin-prohibited", 3, 13, [0; 4], quoted.clone()),
        ("err-source-quench", 4, 0, [0; 4], quoted.clone()),
        ("err-redirect", 5, 1, [192, 0, 2, 1], quoted.clone()),
        ("err-time-exceeded", 11, 0, [0; 4], quoted.clone()),
        ("err-param-problem", 12, 0, [8, 0, 0, 0], quoted.clone()),
        ("err-quotes-echo", 3, 1, [0; 4], back.echo_request(1, 1, 16)),
    ];
    for (name, ty, code, rest, inner) in errors {
        out.push((name, ip.icmp_error(ty, code, rest, &inner)));
    }
    let nested = back.icmp_error(3, 3, [0; 4], &ip.udp(1, 2, 8));
    out.push(("err-in-err", ip.icmp_error(3, 3, [0; 4], &nested)));

    let mut seeds: Vec<(String, Knobs, Vec<u8>)> = out
        .into_iter()
        .map(|(n, p)| (n.to_string(), typical, p))
        .collect();
    for (i, _) in POOL6.iter().enumerate() {
        let k = Knobs {
            pool6: i as u8,
            eam: i == 7,
            ..typical
        };
        seeds.push((format!("pool6-{i}-udp"), k, ip.udp(1, 2, 18)));
    }
    let odd = Knobs {
        icmp_rate: 0,
        udp_zero_drop: true,
        reset_tos: true,
        no_hop_decrement: true,
        mtu_1500: true,
        rfc6791: true,
        ..typical
    };
    seeds.push((
        "policies-udp-zero".into(),
        odd,
        ip.udp_zero_checksum(1, 2, 18),
    ));
    seeds.push((
        "policies-large".into(),
        odd,
        ip.clone().df(false).udp(1, 2, 1472),
    ));
    seeds.push((
        "policies-ttl-1".into(),
        odd,
        ip.clone().ttl(1).tos(0xff).udp(1, 2, 18),
    ));
    // An ICMPv4 error from a router with no mapping (needs rfc6791_v6).
    let router = Ip4::new(Ipv4Addr::new(203, 0, 113, 250), EAM_V4);
    for rfc6791 in [false, true] {
        let k = Knobs { rfc6791, ..typical };
        let name = format!("err-from-unmapped-rfc6791-{rfc6791}");
        seeds.push((name, k, router.icmp_error(11, 0, [0; 4], &quoted)));
    }
    seeds
}

fn write(dir: &Path, seeds: &[(String, Knobs, Vec<u8>)]) {
    if dir.exists() {
        fs::remove_dir_all(dir).unwrap();
    }
    fs::create_dir_all(dir).unwrap();
    for (name, knobs, pkt) in seeds {
        sixgate_testkit::check(pkt).unwrap_or_else(|e| panic!("seed {name} is malformed: {e}"));
        fs::write(dir.join(name), input(knobs, pkt)).unwrap();
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
}

/// The pool4 transport address a NAT64 translator gives an IPv6 packet (so the
/// seeds' IPv4 answers hit real mappings).
fn learn(t: &mut sixgate_core::Translator, pkt: &[u8]) -> (Ipv4Addr, u16) {
    let mut buf = vec![0u8; sixgate_core::HEADROOM + pkt.len()];
    buf[sixgate_core::HEADROOM..].copy_from_slice(pkt);
    let mut p = sixgate_core::PacketBuf::new(&mut buf, sixgate_core::HEADROOM, pkt.len());
    let mut scratch = sixgate_core::Scratch::new();
    let v = t.translate(&mut p, &mut scratch, 0);
    assert_eq!(v, sixgate_core::Verdict::Translated, "seed set-up");
    let s = sixgate_testkit::check(p.data()).unwrap();
    let port = match s.l4 {
        sixgate_testkit::L4::Icmp { rest, .. } => u16::from_be_bytes([rest[0], rest[1]]),
        l4 => l4.ports().unwrap().0,
    };
    match s.src {
        std::net::IpAddr::V4(a) => (a, port),
        _ => unreachable!(),
    }
}

/// One packet of a `translate_nat64` sequence: (IPv6?, seconds before, bytes).
type Step = (bool, u8, Vec<u8>);

/// Packet sequences for `translate_nat64`: flows out and back, a TCP handshake
/// and close, a held SYN and its timeout, ICMP errors both ways, hairpinning,
/// fragments, under a few knob settings.
fn seeds_nat64() -> Vec<(String, Vec<u8>)> {
    use sixgate_testkit::tcp_flag::{ACK, FIN, RST, SYN};
    let pool = v6("2001:db8:64::");
    let me = v6("2001:db8:1::5");
    let other = v6("2001:db8:2::7");
    let server6 = embed(pool, 96, V4_HOST);
    let mut out = Vec::new();
    for knobs in [0u8, 1, 4, 8 | 16, 32 | 64, 2] {
        let (cfg, workers) = sixgate_fuzz::nat64_config(knobs);
        let mut t = sixgate_core::Translator::for_worker(std::sync::Arc::new(cfg), 0, workers);
        let ip = Ip6::new(me, server6);
        let udp = ip.udp(61010, 53, 20);
        let syn = ip.tcp_flags(61020, 80, SYN, 0);
        let echo = ip.echo_request(7, 1, 16);
        if knobs & 8 != 0 {
            // Worker 0 of 2 may not serve this subscriber: just send the packets.
            out.push((
                format!("k{knobs}-out"),
                sixgate_fuzz::nat64_input(knobs, &[(true, 0, udp), (true, 1, syn)]),
            ));
            continue;
        }
        let (a, pu) = learn(&mut t, &udp);
        let (_, pt) = learn(&mut t, &syn);
        let (_, id) = learn(&mut t, &echo);
        let back = Ip4::new(V4_HOST, a);
        let sent = Ip4::new(a, V4_HOST).udp(pu, 53, 20);
        let seqs: Vec<(&str, Vec<Step>)> = vec![
            (
                "udp",
                vec![
                    (true, 0, udp.clone()),
                    (false, 1, back.udp(53, pu, 20)),
                    (false, 100, back.udp(53, pu, 20)),
                ],
            ),
            (
                "tcp",
                vec![
                    (true, 0, syn.clone()),
                    (false, 0, back.tcp_flags(80, pt, SYN | ACK, 0)),
                    (true, 0, ip.tcp_flags(61020, 80, ACK, 100)),
                    (true, 1, ip.tcp_flags(61020, 80, FIN | ACK, 0)),
                    (false, 0, back.tcp_flags(80, pt, FIN | ACK, 0)),
                    (false, 0, back.tcp_flags(80, pt, RST, 0)),
                ],
            ),
            (
                "held-syn",
                vec![
                    (false, 0, back.tcp_flags(80, 61100, SYN, 0)),
                    (false, 7, back.udp(1, 2, 3)),
                ],
            ),
            (
                "simultaneous-open",
                vec![
                    (false, 0, back.tcp_flags(80, 61030, SYN, 0)),
                    (true, 1, ip.tcp_flags(61030, 80, SYN, 0)),
                ],
            ),
            (
                "echo",
                vec![
                    (true, 0, echo.clone()),
                    (false, 0, back.echo_reply(id, 1, 16)),
                ],
            ),
            (
                "icmp4-error",
                vec![
                    (true, 0, udp.clone()),
                    (
                        false,
                        0,
                        Ip4::new(Ipv4Addr::new(203, 0, 113, 1), a).icmp_error(3, 3, [0; 4], &sent),
                    ),
                ],
            ),
            (
                "icmp6-error",
                vec![
                    (true, 0, udp.clone()),
                    (false, 0, back.udp(53, pu, 20)),
                    (
                        true,
                        0,
                        ip.icmp_error(1, 4, [0; 4], &Ip6::new(server6, me).udp(53, 61010, 20)),
                    ),
                ],
            ),
            (
                "hairpin",
                vec![
                    (true, 0, udp.clone()),
                    (
                        true,
                        0,
                        Ip6::new(other, embed(pool, 96, a)).udp(4000, pu, 20),
                    ),
                ],
            ),
            ("fragments", {
                let mut v = vec![(true, 0, udp.clone())];
                for f in split_v4(&back.clone().df(false).id(9).udp(53, pu, 600), 256) {
                    v.push((false, 0, f));
                }
                for f in split_v6(&ip.udp(61010, 53, 600), 256, 3) {
                    v.push((true, 0, f));
                }
                v
            }),
            // RFC 6146 §3.4: later fragments before their first wait for it;
            // a fragmented ping's first fragment waits for its last.
            ("fragments-reversed", {
                let mut v = vec![(true, 0, udp.clone())];
                let mut f4 = split_v4(&back.clone().df(false).id(10).udp(53, pu, 600), 256);
                f4.reverse();
                v.extend(f4.into_iter().map(|f| (false, 0, f)));
                let mut f6 = split_v6(&ip.echo_request(7, 2, 600), 256, 4);
                f6.reverse();
                v.extend(f6.into_iter().map(|f| (true, 0, f)));
                let f4 = split_v4(&back.clone().df(false).id(11).echo_reply(id, 2, 600), 256);
                v.extend(f4.into_iter().map(|f| (false, 0, f)));
                v
            }),
        ];
        for (name, seq) in seqs {
            out.push((
                format!("k{knobs}-{name}"),
                sixgate_fuzz::nat64_input(knobs, &seq),
            ));
        }
    }
    out
}

/// Packet sequences for `translate_mapt` (RFC 7599), for each knob byte (BR or
/// CE, PSID offset 0 or 6): a CE's flows out and back, a spoofed port, an ICMP
/// error by inner port, fragments, a BR hairpin.
fn seeds_mapt() -> Vec<(String, Vec<u8>)> {
    let ce6: Ipv6Addr = "2001:db8:ce:11b:0:c000:208:1b".parse().unwrap();
    let other6: Ipv6Addr = "2001:db8:64::c000:208".parse().unwrap();
    let server6: Ipv6Addr = "2001:db8:64::c633:640a".parse().unwrap();
    let (ce4, server4) = (Ipv4Addr::new(192, 0, 2, 8), Ipv4Addr::new(198, 51, 100, 10));
    let lan = Ipv4Addr::new(10, 0, 0, 2);
    let mut out = Vec::new();
    for a6 in [0u8, 2] {
        // a = 6: port 1232 + k * 1024 is PSID 0x34's with an 8-bit PSID; with
        // 5 bits and m = 5, PSID 27 owns 1888-1919 in each range.
        let port = if a6 != 0 { 1024 + 27 * 32 + 5 } else { 55300 };
        let sent = Ip4::new(ce4, server4).udp(port, 53, 8);
        let frag = Ip4::new(server4, ce4).df(false).id(7).udp(53, port, 600);
        let mut br = vec![
            (true, 0, Ip6::new(ce6, server6).udp(port, 53, 8)),
            (true, 0, Ip6::new(ce6, server6).udp(80, 53, 8)),
            (false, 1, Ip4::new(server4, ce4).udp(53, port, 8)),
            (
                false,
                0,
                Ip4::new(server4, ce4).icmp_error(3, 3, [0; 4], &sent),
            ),
            (true, 0, Ip6::new(ce6, other6).udp(port, 57400, 8)),
        ];
        br.extend(split_v4(&frag, 256).into_iter().map(|f| (false, 0, f)));
        out.push((format!("k{a6}-br"), sixgate_fuzz::nat64_input(a6, &br)));
        let ce = [
            (false, 0, Ip4::new(lan, server4).udp(4000, 53, 8)),
            (true, 0, Ip6::new(server6, ce6).udp(53, port, 8)),
            (false, 0, Ip4::new(lan, server4).echo_request(7, 1, 8)),
            (true, 100, Ip6::new(server6, ce6).udp(53, port, 8)),
        ];
        out.push((
            format!("k{}-ce", a6 | 1),
            sixgate_fuzz::nat64_input(a6 | 1, &ce),
        ));
    }
    out
}

/// Datagrams a node 1 would send to node 2 ([`sixgate_fuzz::run_sync`]'s
/// peer with knob bit 1): a snapshot of `n` sessions, then `live` more.
fn sync_stream(key: bool, n: u16, live: u16) -> Vec<Vec<u8>> {
    use sixgate_sync::record::{Op, Proto, TcpState};
    use sixgate_sync::{Key, Peer, PeerConfig, Record};
    let key = key.then(|| Key::new(sixgate_fuzz::SYNC_KEY).unwrap());
    let mut p = Peer::new(PeerConfig::new(1, 2, 5, sixgate_fuzz::SYNC_HASH), key);
    let rec = |i: u16, udp: bool| Record {
        op: Op::SessionUpsert,
        proto: if udp { Proto::Udp } else { Proto::Tcp },
        tcp_state: (!udp).then_some(TcpState::Established),
        lifetime_ms: 300_000,
        v6_host: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i),
        v6_remote: embed(v6("64:ff9b::"), 96, V4_HOST),
        v4_pool: Ipv4Addr::new(192, 0, 2, 1),
        v4_remote: V4_HOST,
        port6: 40000 + i,
        port4: 61000 + i,
        remote_port: 53,
    };
    let mut out = Vec::new();
    let mut buf = [0u8; 1500];
    let mut now = 1_000_000_000;
    let mut drain = |p: &mut Peer, now: u64, out: &mut Vec<Vec<u8>>| {
        while let Some(len) = p.poll_transmit(now, &mut buf) {
            out.push(buf[..len].to_vec());
        }
    };
    drain(&mut p, now, &mut out); // the first keepalive
    p.start_snapshot();
    for i in 0..n {
        p.push(now, &rec(i, i % 2 == 1));
    }
    p.end_snapshot();
    drain(&mut p, now, &mut out);
    for i in 0..live {
        now += 2_000_000;
        let mut r = rec(n + i, false);
        r.op = if i % 3 == 2 {
            Op::SessionDelete
        } else {
            Op::SessionUpsert
        };
        p.push(now, &r);
        drain(&mut p, now, &mut out);
    }
    out
}

fn seeds_sync() -> Vec<(String, Vec<u8>)> {
    let items = |knobs: u8, ds: &[(u8, &Vec<u8>)]| {
        let mut v = vec![knobs];
        for (ms, d) in ds {
            v.extend(sixgate_fuzz::sync_item(*ms, d));
        }
        v
    };
    let plain = sync_stream(false, 30, 4);
    let keyed = sync_stream(true, 3, 2);
    fn all(s: &[Vec<u8>]) -> Vec<(u8, &Vec<u8>)> {
        s.iter().map(|d| (1u8, d)).collect()
    }
    let mut lost = all(&plain);
    lost.remove(3); // a live DATA: the receiver NACKs it
    for x in lost.iter_mut().skip(3) {
        x.0 = 20;
    }
    let mut reordered = all(&plain);
    reordered.swap(4, 5);
    let mut replayed = all(&plain);
    replayed.insert(3, replayed[2]);
    vec![
        ("snapshot_then_live".into(), items(2, &all(&plain))),
        ("keyed".into(), items(3, &all(&keyed))),
        ("lost_then_nack".into(), items(2, &lost)),
        ("reordered".into(), items(2, &reordered)),
        ("replayed".into(), items(2, &replayed)),
        ("wrong_peer".into(), items(0, &all(&plain))),
    ]
}

/// State files (docs/restart.md) for [`sixgate_fuzz::run_state_file`]: a
/// valid one of TCP, UDP and ICMP sessions read back at once and 30 s
/// later, an empty one, one with a record to damage (resealed), and one
/// under another configuration.
fn seeds_state_file() -> Vec<(String, Vec<u8>)> {
    use sixgate_core::nat64::tcp::TcpState;
    use sixgate_core::nat64::{Proto, Replica};
    use sixgate_sync::state_file::encode;
    let sessions: Vec<Replica> = (0..6u16)
        .map(|i| {
            let (proto, tcp_state) = match i % 3 {
                0 => (Proto::Tcp, Some(TcpState::Established)),
                1 => (Proto::Udp, None),
                _ => (Proto::Icmp, None),
            };
            Replica {
                proto,
                tcp_state,
                remaining_ms: 20_000 + u32::from(i) * 5_000,
                v6: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i + 1),
                port6: 40_000 + i,
                v4: Ipv4Addr::new(192, 0, 2, 1),
                port4: 61_000 + i,
                remote4: V4_HOST,
                rport: if proto == Proto::Icmp {
                    61_000 + i
                } else {
                    443
                },
            }
        })
        .collect();
    let cooling: Vec<Replica> = sessions[3..6]
        .iter()
        .map(|r| Replica {
            tcp_state: None,
            remote4: Ipv4Addr::UNSPECIFIED,
            rport: 0,
            ..*r
        })
        .collect();
    let (hash, at) = (sixgate_fuzz::STATE_HASH, sixgate_fuzz::STATE_WRITTEN);
    let file = |knobs: u8, bytes: Vec<u8>| {
        let mut v = vec![knobs];
        v.extend(bytes);
        v
    };
    let pool6 = sixgate_core::addr::WELL_KNOWN_PREFIX;
    vec![
        (
            "valid".into(),
            file(0, encode(hash, at, &sessions, &[], Some(&pool6))),
        ),
        (
            "valid_30s_later".into(),
            file(2 | (30 << 2), encode(hash, at, &sessions, &[], None)),
        ),
        ("empty".into(), file(0, encode(hash, at, &[], &[], None))),
        (
            "resealed".into(),
            file(1, encode(hash, at, &sessions[..2], &[], None)),
        ),
        (
            "other_config".into(),
            file(0, encode(hash ^ 1, at, &sessions, &[], None)),
        ),
        (
            // RFC 6888 REQ-8: BIB entries cooling after the sessions.
            "cooling".into(),
            file(0, encode(hash, at, &sessions[..3], &cooling, None)),
        ),
    ]
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("seeds")
        .join("state_file");
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap();
    }
    fs::create_dir_all(&dir).unwrap();
    let seeds = seeds_state_file();
    for (name, data) in &seeds {
        sixgate_fuzz::run_state_file(data);
        fs::write(dir.join(name), data).unwrap();
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("seeds")
        .join("sync_receive");
    fs::create_dir_all(&dir).unwrap();
    // Regression inputs (regress-*) stay; the generated seeds are rewritten.
    for f in fs::read_dir(&dir).unwrap() {
        let f = f.unwrap();
        if !f.file_name().to_string_lossy().starts_with("regress-") {
            fs::remove_file(f.path()).unwrap();
        }
    }
    let seeds = seeds_sync();
    for (name, data) in &seeds {
        sixgate_fuzz::run_sync(data);
        fs::write(dir.join(name), data).unwrap();
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let dir = root.join("translate_mapt");
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap();
    }
    fs::create_dir_all(&dir).unwrap();
    let seeds = seeds_mapt();
    for (name, data) in &seeds {
        sixgate_fuzz::run_mapt(data);
        fs::write(dir.join(name), data).unwrap();
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
    write(&root.join("translate_v6"), &seeds_v6());
    write(&root.join("translate_v4"), &seeds_v4());
    let dir = root.join("translate_nat64");
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap();
    }
    fs::create_dir_all(&dir).unwrap();
    let seeds = seeds_nat64();
    for (name, data) in &seeds {
        sixgate_fuzz::run_nat64(data);
        fs::write(dir.join(name), data).unwrap();
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
}
