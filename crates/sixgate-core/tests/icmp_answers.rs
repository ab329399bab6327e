//! docs/architecture.md, "ICMP answers by drop reason": the table there and
//! the translator agree, for every drop reason. RFC 7915 §4.4 and §5.4: "the
//! translator SHOULD be able to send back an ICMP error message to the
//! original sender of the packet, unless the discarded packet is itself an
//! ICMP message"; the other answers are the ones their sections name (§4.1
//! and §5.1 Time Exceeded, Source Route Failed, Parameter Problem; §4.4 and
//! §5.4 Packet Too Big / Fragmentation Needed; RFC 6146 §3.5 for NAT64).

mod common;

use common::*;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::config::{HairpinMode, UdpZeroChecksum};
use sixgate_core::nat64::{Filtering, Nat64Config, Pool4Entry};
use sixgate_core::{Config, DropReason, Verdict};
use sixgate_testkit::{Ip4, Ip6, tcp_flag};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};

const DOC: &str = include_str!("../../../docs/architecture.md");
const POOL4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const UNMAPPED6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, 1);

/// The table's rows: drop reason → (answer to an IPv6 packet, to an IPv4
/// packet), each "T/C" (ICMP type and code) or "none".
fn doc_table() -> BTreeMap<String, [String; 2]> {
    let section = DOC
        .split("### ICMP answers by drop reason")
        .nth(1)
        .expect("docs/architecture.md has the section");
    let mut rows = BTreeMap::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(label) = cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')) else {
            continue; // header and rule
        };
        let answer = |c: &str| c.split_whitespace().next().unwrap_or("").to_string();
        let dup = rows.insert(label.to_string(), [answer(cells[2]), answer(cells[3])]);
        assert!(dup.is_none(), "{label} twice in the table");
    }
    rows
}

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

fn sample_with(f: impl FnOnce(&mut Config)) -> Config {
    let mut cfg = sample_config();
    f(&mut cfg);
    cfg
}

/// The sample's EAM with the Well-Known Prefix as pool6 (RFC 6052 §3.1).
fn wkp_config() -> Config {
    let mut cfg = sample_config();
    cfg.map.pool6 = Some(Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap());
    cfg
}

/// One packet that must be dropped for `reason`, after `setup`.
struct Case {
    reason: DropReason,
    cfg: Config,
    setup: Vec<Vec<u8>>,
    input: Vec<u8>,
}

fn case(reason: DropReason, cfg: Config, input: Vec<u8>) -> Case {
    Case {
        reason,
        cfg,
        setup: vec![],
        input,
    }
}

fn v6() -> Ip6 {
    Ip6::new(CLIENT6, SERVER6)
}
fn v4() -> Ip4 {
    Ip4::new(SERVER4, CLIENT4)
}

fn cases() -> Vec<Case> {
    use DropReason as R;
    let s = sample_config;
    let udp6 = v6().udp(5000, 53, 20);
    let mut zero6 = udp6.clone();
    zero6[46..48].fill(0);
    let quoted6 = Ip6::new(SERVER6, CLIENT6).udp(53, 5000, 20);
    let pool6_client4: Ipv6Addr = "2001:db8:64::c612:5".parse().unwrap();
    let mut bad_sum = v4().udp(53, 5000, 20);
    bad_sum[10] ^= 0xff;
    let syn4 = Ip4::new(SERVER4, POOL4).tcp_flags(80, 61500, tcp_flag::SYN, 0);
    vec![
        // IPv6 packets (RFC 7915 §5).
        case(R::Malformed, s(), udp6[..udp6.len() - 4].to_vec()),
        case(R::UnknownVersion, s(), {
            let mut p = udp6.clone();
            p[0] = 0x50;
            p
        }),
        case(
            R::SourceUntranslatable,
            s(),
            Ip6::new(UNMAPPED6, SERVER6).udp(1, 2, 8),
        ),
        case(
            R::DestinationUntranslatable,
            s(),
            Ip6::new(CLIENT6, UNMAPPED6).udp(1, 2, 8),
        ),
        case(
            R::WkpNonGlobal,
            wkp_config(),
            Ip6::new(CLIENT6, "64:ff9b::c0a8:5801".parse().unwrap()).udp(1, 2, 8),
        ),
        case(R::HopLimitExceeded, s(), v6().hop_limit(1).udp(1, 2, 8)),
        case(R::RoutingHeader, s(), v6().routing(1).udp(1, 2, 8)),
        case(
            R::UnknownExtensionHeader,
            s(),
            v6().raw(135, &[59, 0, 0, 0, 0, 0, 0, 0]),
        ),
        case(
            R::ExtensionHeaderChain,
            s(),
            v6().fragment_header(0, false, 3).dest_opts().udp(1, 2, 8),
        ),
        case(
            R::IcmpUntranslatable,
            s(),
            v6().icmp(200, 0, [0; 4], &[0; 8]),
        ),
        case(
            R::IcmpInnerUntranslatable,
            s(),
            Ip6::new(ROUTER6, SERVER6).icmp_error(1, 4, [0; 4], &[0x60; 44]),
        ),
        case(
            R::IcmpErrorInError,
            s(),
            Ip6::new(ROUTER6, SERVER6).icmp_error(
                1,
                4,
                [0; 4],
                &Ip6::new(SERVER6, CLIENT6).icmp_error(1, 4, [0; 4], &quoted6),
            ),
        ),
        case(
            R::UdpZeroChecksum,
            sample_with(|c| c.udp_zero_checksum = UdpZeroChecksum::Drop),
            zero6,
        ),
        case(
            R::FragmentedIcmp,
            s(),
            Ip6::new(ROUTER6, SERVER6)
                .fragment_header(0, true, 9)
                .icmp_error(1, 4, [0; 4], &quoted6),
        ),
        case(
            R::PacketTooBig,
            sample_with(|c| c.ipv4_mtu = Some(1000)),
            v6().udp(1, 2, 1100),
        ),
        case(
            R::UnknownProtocol,
            s(),
            v6().raw(1, &[8, 0, 0, 0, 0, 0, 0, 0]),
        ),
        case(
            R::Hairpin,
            sample_with(|c| c.hairpin = HairpinMode::Off),
            Ip6::new(CLIENT6, pool6_client4).udp(1, 2, 8),
        ),
        case(
            R::BadSource,
            s(),
            Ip6::new(Ipv6Addr::LOCALHOST, SERVER6).udp(1, 2, 8),
        ),
        case(
            R::BadDestination,
            s(),
            Ip6::new(CLIENT6, "ff0e::1".parse().unwrap()).udp(1, 2, 8),
        ),
        case(
            R::HostMulticast,
            s(),
            Ip6::new("fe80::1".parse().unwrap(), "ff02::16".parse().unwrap()).udp(1, 2, 8),
        ),
        case(
            R::Pool4Exhausted,
            nat_config(|n| n.pool4.clear()),
            v6().udp(5000, 53, 10),
        ),
        // RFC 7422 deterministic NAT: CLIENT6 outside the prefix; then in
        // it, with a block of two ports both taken.
        case(
            R::DeterministicUnmapped,
            nat_config(|n| {
                n.subscriber_prefix_len = 128;
                n.port_block_size = 512;
                n.deterministic = Some(("2001:db8:ffff::".parse().unwrap(), 125));
            }),
            v6().udp(5000, 53, 10),
        ),
        Case {
            reason: R::DeterministicPortsFull,
            cfg: nat_config(|n| {
                n.subscriber_prefix_len = 128;
                n.port_block_size = 2;
                n.deterministic = Some((CLIENT6, 125));
            }),
            setup: vec![v6().udp(5000, 53, 10), v6().udp(5001, 53, 10)],
            input: v6().udp(5002, 53, 10),
        },
        Case {
            reason: R::SessionTableFull,
            cfg: nat_config(|n| n.max_sessions = 1),
            setup: vec![v6().udp(61234, 53, 10)],
            input: Ip6::new(UNMAPPED6, SERVER6).udp(61236, 53, 10),
        },
        case(
            R::Nat64Unsupported,
            nat_config(|_| {}),
            v6().raw(132, &[0; 12]),
        ),
        // IPv4 packets (RFC 7915 §4).
        case(R::Ipv4HeaderChecksum, s(), bad_sum),
        case(
            R::SourceUntranslatable,
            sample_with(|c| c.map.pool6 = None),
            v4().udp(1, 2, 8),
        ),
        case(
            R::DestinationUntranslatable,
            sample_with(|c| c.map.pool6 = None),
            Ip4::new(SERVER4, Ipv4Addr::new(198, 19, 0, 1)).udp(1, 2, 8),
        ),
        case(
            R::WkpNonGlobal,
            wkp_config(),
            Ip4::new(Ipv4Addr::new(192, 168, 88, 1), CLIENT4).udp(1, 2, 8),
        ),
        case(R::HopLimitExceeded, s(), v4().ttl(1).udp(1, 2, 8)),
        case(
            R::Ipv4SourceRoute,
            s(),
            v4().options(&[0x83, 7, 4, 203, 0, 113, 9]).udp(1, 2, 8),
        ),
        case(
            R::UdpZeroChecksum,
            sample_with(|c| c.udp_zero_checksum = UdpZeroChecksum::Drop),
            v4().udp_zero_checksum(1, 2, 8),
        ),
        case(
            R::PacketTooBig,
            sample_with(|c| c.ipv6_mtu = Some(1300)),
            v4().df(true).udp(1, 2, 1400),
        ),
        case(
            R::UnknownProtocol,
            s(),
            v4().raw(58, &[128, 0, 0, 0, 0, 0, 0, 0]),
        ),
        case(
            R::BadSource,
            s(),
            Ip4::new(Ipv4Addr::LOCALHOST, CLIENT4).udp(1, 2, 8),
        ),
        case(
            R::BadDestination,
            s(),
            Ip4::new(SERVER4, Ipv4Addr::new(224, 0, 0, 5)).udp(1, 2, 8),
        ),
        case(
            R::NoBibEntry,
            nat_config(|_| {}),
            Ip4::new(SERVER4, POOL4).udp(53, 61500, 10),
        ),
        Case {
            reason: R::Filtered,
            cfg: nat_config(|n| n.filtering = Filtering::AddressDependent),
            setup: vec![v6().udp(61234, 53, 10)],
            input: Ip4::new(ROUTER4, POOL4).udp(53, 61234, 10),
        },
        case(R::SynHeld, nat_config(|_| {}), syn4.clone()),
        case(
            R::ExternalTcp,
            nat_config(|n| n.drop_external_tcp = true),
            syn4,
        ),
    ]
}

/// Reasons no single packet in the configurations above produces (a data
/// plane's fault, a table or ring filling over time, timers, sync, several
/// workers, MAP-T); the table says "none" for each, held by their own tests.
const NOT_DRIVEN: &[&str] = &[
    "icmp_fragment_expired",
    "no_headroom",
    "subscriber_limit",
    "event_log_full",
    "held_syn_store_full",
    "sync_pending",
    "fragment_untracked",
    "fragment_expired",
    "fragment_buffer_full",
    "wrong_worker",
    "mapt_no_rule",
    "mapt_address_mismatch",
    "mapt_source_outside_port_set",
    "mapt_port_excluded",
    "mapt_no_port",
];

/// The ICMP answer a verdict sent: "T/C" or "none".
fn answer(v: Verdict, out: &[Vec<u8>]) -> String {
    match v {
        Verdict::Replied(_) => {
            let p = &out[0];
            let at = if p[0] >> 4 == 6 { 40 } else { 20 };
            format!("{}/{}", p[at], p[at + 1])
        }
        _ => "none".to_string(),
    }
}

/// RFC 7915 §4.4, §5.4 (and the sections each row names): every drop reason
/// is in the table, and each packet dropped for it gets the table's answer.
#[test]
fn rfc7915_s4_4_s5_4_every_drop_reason_answered_as_the_table_says() {
    let table = doc_table();
    let labels: BTreeSet<&str> = DropReason::ALL.iter().map(|r| r.as_str()).collect();
    let rows: BTreeSet<&str> = table.keys().map(String::as_str).collect();
    assert_eq!(rows, labels, "the table lists every drop reason, no other");
    let mut driven = BTreeSet::new();
    for c in cases() {
        let label = c.reason.as_str();
        let v6 = c.input[0] >> 4 == 6;
        let mut h = Harness::new(c.cfg);
        for p in &c.setup {
            let (v, _) = h.run_unchecked(p);
            assert!(matches!(v, Verdict::Translated), "{label}: setup {v:?}");
        }
        let (v, out) = h.run_unchecked(&c.input);
        let reason = match v {
            Verdict::Dropped(r) | Verdict::Replied(r) => r,
            v => panic!("{label}: {v:?}"),
        };
        assert_eq!(reason, c.reason, "dropped for another reason");
        let want = &table[label][usize::from(!v6)];
        let want = if want == "n/a" { "none" } else { want };
        assert_eq!(
            answer(v, &out),
            want,
            "{label} from IPv{}",
            if v6 { 6 } else { 4 }
        );
        driven.insert((label, v6));
    }
    // Every answer the table promises is checked above; every reason is
    // either driven or named as not drivable here (and answers nothing).
    for (label, [a6, a4]) in &table {
        for (a, v6) in [(a6, true), (a4, false)] {
            if a != "none" && a != "n/a" {
                assert!(
                    driven.contains(&(label.as_str(), v6)),
                    "{label}: {a} unchecked"
                );
            }
        }
        let any = driven.iter().any(|(l, _)| l == label);
        assert_eq!(
            !any,
            NOT_DRIVEN.contains(&label.as_str()),
            "{label}: driven, or in NOT_DRIVEN"
        );
        if !any {
            let quiet = |a: &str| a == "none" || a == "n/a";
            assert!(quiet(a6) && quiet(a4), "{label}: {a6} {a4}");
        }
    }
}
