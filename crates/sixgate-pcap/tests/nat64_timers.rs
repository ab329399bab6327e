//! RFC 6146's timers through the offline data plane. The capture's timestamps are
//! the translator's clock, so a capture with gaps in it shows what happens when a
//! timer runs out: a reply after its session's timeout is dropped, one before it
//! passes; a held IPv4 SYN is answered with Port Unreachable 6 s later.
//!
//! The pool4 port a flow gets is the core's choice, so each test first runs the
//! packets that create the mappings, reads the ports from the output, and then
//! builds the whole capture (the translator is deterministic: the offline mode
//! keeps the port hash key fixed). Outputs are checked with the etherparse oracle.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use sixgate_core::{Config, DropReason, Verdict};
use sixgate_pcap::{Outcome, PacketTrace, Summary};
use sixgate_testkit::{Ip4, Ip6, L4, check, tcp_flag};

/// 2024-01-01T00:00:00Z, in nanoseconds: the capture's time zero.
const T0: u64 = 1_704_067_200_000_000_000;

fn client6() -> Ipv6Addr {
    "2001:db8:1::5".parse().unwrap()
}
/// Another subscriber (another /64).
fn other_client6() -> Ipv6Addr {
    "2001:db8:2::5".parse().unwrap()
}
/// 198.51.100.7 seen through pool6 2001:db8:64::/96.
fn server6() -> Ipv6Addr {
    "2001:db8:64::c633:6407".parse().unwrap()
}
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
const POOL4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

/// Mode nat64 with `pool4` and extra `[nat64]` lines.
fn config(pool4: &str, extra: &str) -> Arc<Config> {
    let text = format!(
        "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n\
         [nat64]\npool4 = {pool4}\n{extra}\n"
    );
    Arc::new(
        sixgate_config::parse(&text, "test.toml")
            .unwrap_or_else(|e| panic!("{e}"))
            .config,
    )
}

fn up() -> Ip6 {
    Ip6::new(client6(), server6())
}

fn down() -> Ip4 {
    Ip4::new(SERVER4, POOL4)
}

/// Seconds after [`T0`], in nanoseconds.
fn at(secs: f64) -> u64 {
    T0 + (secs * 1e9).round() as u64
}

/// What one offline run did.
struct Run {
    summary: Summary,
    traces: Vec<PacketTrace>,
    /// Output packets with their timestamps.
    out: Vec<(u64, Vec<u8>)>,
}

impl Run {
    /// The verdict on input packet `index` (1-based).
    fn verdict(&self, index: u64) -> Verdict {
        let t = self
            .traces
            .iter()
            .find(|t| t.index == index && !matches!(t.outcome, Outcome::Timer(_)))
            .unwrap_or_else(|| panic!("no trace for packet {index}"));
        match t.outcome {
            Outcome::Verdict(v) => v,
            other => panic!("packet {index}: {other:?}"),
        }
    }

    fn passed(&self, index: u64) -> bool {
        self.verdict(index) == Verdict::Translated
    }

    /// The output written for input packet `index`.
    fn output_of(&self, index: u64) -> &[u8] {
        let before = self
            .traces
            .iter()
            .take_while(|t| t.index != index || matches!(t.outcome, Outcome::Timer(_)))
            .map(|t| t.written)
            .sum::<usize>();
        &self.out[before].1
    }

    /// Packets the timers sent, with their timestamps.
    fn timer_packets(&self) -> Vec<(u64, &[u8])> {
        let mut n = 0;
        let mut found = Vec::new();
        for t in &self.traces {
            if matches!(t.outcome, Outcome::Timer(_)) {
                found.push((self.out[n].0, &self.out[n].1[..]));
            }
            n += t.written;
        }
        found
    }
}

fn run(cfg: &Arc<Config>, packets: &[(u64, Vec<u8>)]) -> Run {
    let header = PcapHeader {
        datalink: pcap_file::DataLink::RAW,
        ts_resolution: pcap_file::TsResolution::NanoSecond,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for (ts, p) in packets {
        w.write_packet(&PcapPacket::new(
            Duration::from_nanos(*ts),
            p.len() as u32,
            p,
        ))
        .unwrap();
    }
    let input = w.into_writer();
    let mut traces = Vec::new();
    let mut output = Vec::new();
    let summary = sixgate_pcap::translate_pcap_traced(cfg.clone(), &input[..], &mut output, |t| {
        traces.push(*t)
    })
    .unwrap();
    let mut r = PcapReader::new(&output[..]).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        out.push((p.timestamp.as_nanos() as u64, p.data.into_owned()));
    }
    for (_, p) in &out {
        check(p).unwrap_or_else(|e| panic!("output fails the oracle: {e}"));
    }
    Run {
        summary,
        traces,
        out,
    }
}

/// The pool4 port (or ICMP identifier) of each 6->4 packet in `packets`, in order.
fn mapped(cfg: &Arc<Config>, packets: &[(u64, Vec<u8>)]) -> Vec<u16> {
    let r = run(cfg, packets);
    (1..=packets.len() as u64)
        .map(|i| {
            assert!(r.passed(i), "packet {i}: {:?}", r.verdict(i));
            let s = check(r.output_of(i)).unwrap();
            assert_eq!(s.src, IpAddr::V4(POOL4));
            s.l4.source_port_or_echo_id()
                .expect("a port or an echo identifier")
        })
        .collect()
}

/// RFC 6146 §3.5.1: a UDP session lives `udp_timeout` after its last packet; an
/// IPv4 reply before then reaches the IPv6 host, one after it is dropped.
#[test]
fn rfc6146_3_5_1_udp_reply_after_the_session_timeout_is_dropped() {
    let cfg = config("[\"203.0.113.1\"]", "udp_timeout = 3");
    let out = (at(0.0), up().udp(40000, 5001, 20));
    let [port] = mapped(&cfg, std::slice::from_ref(&out))[..] else {
        unreachable!()
    };
    let reply = |t: f64| (at(t), down().udp(5001, port, 30));
    let r = run(&cfg, &[out.clone(), reply(2.9), reply(6.5)]);
    assert!(r.passed(2), "a reply 2.9 s in, within udp_timeout, passes");
    let s = check(r.output_of(2)).unwrap();
    assert_eq!(
        (s.src, s.dst, s.ports()),
        (
            IpAddr::V6(server6()),
            IpAddr::V6(client6()),
            Some((5001, 40000))
        )
    );
    assert!(
        matches!(r.verdict(3), Verdict::Dropped(_) | Verdict::Replied(_)),
        "a reply 3.6 s after the last packet finds no session: {:?}",
        r.verdict(3)
    );
    assert_eq!(r.summary.nat64.unwrap().sessions, 0);

    // The same flow, with the capture ending before the timeout: still there.
    let r = run(&cfg, &[out, reply(2.9)]);
    assert_eq!(r.summary.nat64.unwrap().sessions, 1);
}

/// RFC 6146 §3.5.2: a TCP session that is still opening lives
/// `tcp_transitory_timeout`; once both SYNs have passed it is established and
/// lives `tcp_established_timeout` since its last packet, after which it falls to
/// TRANS (§3.5.2.2) for `tcp_transitory_timeout` more, where a packet revives it.
#[test]
fn rfc6146_3_5_2_tcp_transitory_and_established_timeouts() {
    let cfg = config(
        "[\"203.0.113.1\"]",
        "tcp_transitory_timeout = 4\ntcp_established_timeout = 20",
    );
    let syn = |sport| up().tcp_flags(sport, 443, tcp_flag::SYN, 0);
    let opening = [(at(0.0), syn(40001)), (at(0.1), syn(40002))];
    let [pa, pb] = mapped(&cfg, &opening)[..] else {
        unreachable!()
    };
    let syn_ack = |port| down().tcp_flags(443, port, tcp_flag::SYN | tcp_flag::ACK, 0);
    let data = |port| down().tcp_flags(443, port, tcp_flag::ACK, 100);
    let mut packets = opening.to_vec();
    packets.extend([
        // Flow A: answered within TCP_TRANS, so established (packet 3).
        (at(3.5), syn_ack(pa)),
        // Flow B: its answer comes 4.5 s after its SYN, past TCP_TRANS (packet 4).
        (at(4.6), syn_ack(pb)),
        // Flow A, established: 10 s of silence is within TCP_EST (packet 5)...
        (at(13.5), data(pa)),
        // ...21 s is not, but the session is in TRANS, and revives (packet 6)...
        (at(34.5), data(pa)),
        // ...while 25 s is past TCP_EST + TCP_TRANS (packet 7).
        (at(59.5), data(pa)),
    ]);
    let r = run(&cfg, &packets);
    assert!(r.passed(3), "SYN-ACK within the transitory timeout");
    let s = check(r.output_of(3)).unwrap();
    assert_eq!(
        (s.dst, s.ports()),
        (IpAddr::V6(client6()), Some((443, 40001)))
    );
    assert!(
        !r.passed(4),
        "SYN-ACK 4.5 s after the SYN, past tcp_transitory_timeout: {:?}",
        r.verdict(4)
    );
    assert!(
        r.passed(5),
        "established: 10 s idle is under tcp_established_timeout though over the transitory one"
    );
    assert!(
        r.passed(6),
        "idle 21 s: past TCP_EST, within TCP_EST + TCP_TRANS"
    );
    assert!(
        matches!(r.verdict(7), Verdict::Dropped(_) | Verdict::Replied(_)),
        "established session idle 25 s > 20 s + 4 s: {:?}",
        r.verdict(7)
    );
}

/// RFC 6146 §3.5.3: an ICMP query session lives `icmp_timeout`.
#[test]
fn rfc6146_3_5_3_icmp_query_timeout() {
    let cfg = config("[\"203.0.113.1\"]", "icmp_timeout = 2");
    let request = (at(0.0), up().echo_request(7, 1, 16));
    let [id] = mapped(&cfg, std::slice::from_ref(&request))[..] else {
        unreachable!()
    };
    let reply = |t: f64, seq| (at(t), down().echo_reply(id, seq, 16));
    let r = run(&cfg, &[request, reply(1.5, 1), reply(4.1, 2)]);
    assert!(r.passed(2), "echo reply within icmp_timeout");
    let s = check(r.output_of(2)).unwrap();
    assert_eq!(s.dst, IpAddr::V6(client6()));
    assert_eq!(s.icmp(), Some((129, 0)));
    match s.l4 {
        L4::Icmp { rest, .. } => assert_eq!(u16::from_be_bytes([rest[0], rest[1]]), 7),
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(r.verdict(3), Verdict::Dropped(_) | Verdict::Replied(_)),
        "echo reply 2.6 s after the last one, past icmp_timeout: {:?}",
        r.verdict(3)
    );
}

/// RFC 6146 §3.5.2.2: an IPv4 SYN with no BIB entry is held 6 s for a
/// simultaneous open; when no IPv6 SYN comes, it is answered with an ICMP Port
/// Unreachable (type 3, code 3) quoting it, sent when the 6 s run out.
#[test]
fn rfc6146_3_5_2_2_held_syn_answered_with_port_unreachable_after_6_s() {
    let cfg = config("[\"203.0.113.1\"]", "");
    let syn = down().tcp_flags(5001, 4000, tcp_flag::SYN, 0);
    let tick = |t: f64| (at(t), up().udp(40000, 5001, 8));
    let r = run(&cfg, &[(at(0.0), syn.clone()), tick(5.5), tick(8.0)]);
    assert_eq!(r.verdict(1), Verdict::Dropped(DropReason::SynHeld));
    assert!(r.passed(2) && r.passed(3));
    let sent = r.timer_packets();
    assert_eq!(sent.len(), 1, "one Port Unreachable");
    assert_eq!(r.summary.timer_packets, 1);
    let (ts, icmp) = sent[0];
    assert!(
        (at(6.0)..at(6.0) + sixgate_pcap::TICK_NS).contains(&ts),
        "sent {} ms after the SYN; expected 6 s (to the 100 ms tick)",
        (ts - T0) / 1_000_000
    );
    // Between the two input packets of 5.5 s and 8 s, in time order.
    assert_eq!(r.out.len(), 3);
    assert!(r.out.windows(2).all(|w| w[0].0 <= w[1].0));
    let s = check(icmp).unwrap();
    assert_eq!(s.dst, IpAddr::V4(SERVER4));
    assert_eq!(s.icmp(), Some((3, 3)));
    let inner = s.inner.expect("the SYN is quoted");
    assert_eq!(
        (inner.src, inner.dst, inner.l4.ports()),
        (IpAddr::V4(SERVER4), IpAddr::V4(POOL4), Some((5001, 4000)))
    );

    // A capture that ends before the 6 s are up sends nothing.
    let r = run(&cfg, &[(at(0.0), syn.clone()), tick(5.9)]);
    assert!(r.timer_packets().is_empty());
    assert_eq!(r.summary.nat64.unwrap().held_syns, 1);

    // drop_external_tcp: dropped at once, never answered.
    let cfg = config("[\"203.0.113.1\"]", "drop_external_tcp = true");
    let r = run(&cfg, &[(at(0.0), syn), tick(8.0)]);
    assert_eq!(r.verdict(1), Verdict::Dropped(DropReason::ExternalTcp));
    assert!(r.timer_packets().is_empty());
}

/// RFC 6888 REQ-8: a pool4 port freed when its session expires rests 120 s
/// (`port_reuse_delay`'s default) before another subscriber may get it.
#[test]
fn rfc6888_req8_port_reuse_delay_120_s() {
    // One UDP port in pool4, so a second subscriber can only get the first one's.
    let cfg = config(
        "[{ prefix = \"203.0.113.1\", udp = \"5000\" }]",
        "udp_timeout = 3",
    );
    let a = |t: f64| (at(t), up().udp(40000, 5001, 8));
    let b = |t: f64| {
        (
            at(t),
            Ip6::new(other_client6(), server6()).udp(40000, 5001, 8),
        )
    };
    // A's session expires 3 s in; its port is free again 123 s in.
    let r = run(&cfg, &[a(0.0), b(10.0), b(100.0), b(125.0)]);
    assert!(r.passed(1));
    assert_eq!(check(r.output_of(1)).unwrap().ports(), Some((5000, 5001)));
    assert_eq!(
        r.verdict(2),
        Verdict::Replied(DropReason::Pool4Exhausted),
        "7 s after A's session ended, its port still rests (RFC 6146 §3.5.1.1: address unreachable)"
    );
    assert_eq!(r.verdict(3), Verdict::Replied(DropReason::Pool4Exhausted));
    assert!(
        r.passed(4),
        "120 s later, B gets the port: {:?}",
        r.verdict(4)
    );
    let s = check(r.output_of(4)).unwrap();
    assert_eq!(s.ports(), Some((5000, 5001)));
}

/// Across a long silence the offline clock takes bigger steps (at most
/// `MAX_TICKS_PER_GAP` per gap), so a timer that falls due in it fires within one
/// step of its time: here a held SYN's 6 s inside a day-long gap.
#[test]
fn rfc6146_3_5_2_2_held_syn_in_a_day_long_gap_fires_within_one_step() {
    let cfg = config("[\"203.0.113.1\"]", "");
    let day = 86_400.0;
    let r = run(
        &cfg,
        &[
            (at(0.0), down().tcp_flags(5001, 4000, tcp_flag::SYN, 0)),
            (at(day), up().udp(40000, 5001, 8)),
        ],
    );
    let sent = r.timer_packets();
    assert_eq!(sent.len(), 1);
    let step = (86_400_000_000_000u64).div_ceil(sixgate_pcap::MAX_TICKS_PER_GAP);
    assert!(
        (at(6.0)..at(6.0) + step).contains(&sent[0].0),
        "sent {} ms in",
        (sent[0].0 - T0) / 1_000_000
    );
    assert!(r.passed(2));
}
