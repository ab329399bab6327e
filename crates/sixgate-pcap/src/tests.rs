//! Reading and writing captures. The translator core's outcomes are not asserted
//! here (they are the core's to test); what is checked is that every frame reaches
//! it, or is skipped for the stated reason, and that the output is a valid capture.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use etherparse::{PacketBuilder, VlanId};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
use pcap_file::{DataLink, Endianness, TsResolution};

use super::*;

const V6_CLIENT: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];
const V6_SERVER: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0x64, 0, 0, 0, 0, 0, 0, 198, 51, 100, 7,
];
const V4_CLIENT: [u8; 4] = [198, 18, 0, 16];
const V4_SERVER: [u8; 4] = [198, 51, 100, 7];

fn cfg() -> Arc<Config> {
    // EAM-free, pool6-free: enough for the reader; what the core does with it is its business.
    Arc::new(Config::with_pool6(None))
}

fn udp6() -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ipv6(V6_CLIENT, V6_SERVER, 64)
        .udp(40000, 53)
        .write(&mut v, b"query")
        .unwrap();
    v
}

fn udp4() -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ipv4(V4_SERVER, V4_CLIENT, 64)
        .udp(53, 40000)
        .write(&mut v, b"answer")
        .unwrap();
    v
}

/// A classic pcap in memory.
fn pcap(link: DataLink, res: TsResolution, frames: &[(u64, &[u8], u32)]) -> Vec<u8> {
    let header = PcapHeader {
        datalink: link,
        ts_resolution: res,
        endianness: Endianness::Big,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for &(ts_ns, data, orig) in frames {
        w.write_packet(&PcapPacket::new(Duration::from_nanos(ts_ns), orig, data))
            .unwrap();
    }
    w.into_writer()
}

fn run(input: &[u8]) -> (Summary, Vec<PacketTrace>, Vec<u8>) {
    let mut traces = Vec::new();
    let mut out = Vec::new();
    let s = translate_pcap_traced(cfg(), input, &mut out, |t| traces.push(*t)).unwrap();
    (s, traces, out)
}

fn read_output(out: &[u8]) -> (PcapHeader, Vec<(Duration, Vec<u8>)>) {
    let mut r = PcapReader::new(out).unwrap();
    let mut pkts = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        pkts.push((p.timestamp, p.data.into_owned()));
    }
    (r.header(), pkts)
}

fn v6(a: [u8; 16]) -> Option<IpAddr> {
    Some(IpAddr::V6(Ipv6Addr::from(a)))
}

fn v4(a: [u8; 4]) -> Option<IpAddr> {
    Some(IpAddr::V4(Ipv4Addr::from(a)))
}

#[test]
fn raw_capture_reaches_the_translator_in_order() {
    let (p6, p4) = (udp6(), udp4());
    let garbage = [0x50u8, 1, 2, 3];
    let input = pcap(
        DataLink::RAW,
        TsResolution::MicroSecond,
        &[
            (1_000_000_000, &p6, p6.len() as u32),
            (1_001_000_000, &p4, p4.len() as u32),
            (1_002_000_000, &garbage, 4),
        ],
    );
    let (s, traces, out) = run(&input);
    assert_eq!(s.input_packets, 3);
    assert_eq!((s.skipped_non_ip, s.skipped_truncated), (0, 0));
    let seen: Vec<_> = traces
        .iter()
        .map(|t| (t.index, t.ts_ns, t.family, t.src, t.dst))
        .collect();
    assert_eq!(
        seen,
        [
            (1, 1_000_000_000, Family::V6, v6(V6_CLIENT), v6(V6_SERVER)),
            (2, 1_001_000_000, Family::V4, v4(V4_SERVER), v4(V4_CLIENT)),
            (3, 1_002_000_000, Family::Other, None, None),
        ]
    );
    assert!(
        traces
            .iter()
            .all(|t| matches!(t.outcome, Outcome::Verdict(_)))
    );
    // Every packet got a verdict; the counts add up whatever the verdicts were.
    let written: usize = traces.iter().map(|t| t.written).sum();
    assert_eq!(s.packets_written, written as u64);
    assert_eq!(
        s.dropped.0.iter().map(|&(_, n)| n).sum::<u64>(),
        s.dropped_total
    );

    let (h, pkts) = read_output(&out);
    assert_eq!(h.datalink, DataLink::RAW);
    assert_eq!(h.ts_resolution, TsResolution::MicroSecond);
    assert_eq!(pkts.len() as u64, s.packets_written);
}

#[test]
fn output_writer_round_trips() {
    let (p6, p4) = (udp6(), udp4());
    for res in [TsResolution::MicroSecond, TsResolution::NanoSecond] {
        let mut out = Output::new(Vec::new(), res).unwrap();
        out.write(1_700_000_000_123_456_000, &p4).unwrap();
        out.write(1_700_000_000_123_456_000, &p6).unwrap();
        out.write(1_700_000_001_000_000_000, &p4).unwrap();
        assert_eq!(out.written, 3);
        let bytes = out.finish().unwrap();
        let (h, pkts) = read_output(&bytes);
        assert_eq!(h.datalink, DataLink::RAW);
        assert_eq!(h.ts_resolution, res);
        assert_eq!(h.endianness, Endianness::Little);
        let ts = |ns: u64| Duration::from_nanos(ns);
        assert_eq!(
            pkts,
            [
                (ts(1_700_000_000_123_456_000), p4.clone()),
                (ts(1_700_000_000_123_456_000), p6.clone()),
                (ts(1_700_000_001_000_000_000), p4.clone()),
            ]
        );
    }
}

#[test]
fn nanosecond_timestamps_are_kept() {
    let p6 = udp6();
    let input = pcap(
        DataLink::IPV6,
        TsResolution::NanoSecond,
        &[(5_000_000_007, &p6, p6.len() as u32)],
    );
    let (s, traces, out) = run(&input);
    assert_eq!(s.input_packets, 1);
    assert_eq!(traces[0].ts_ns, 5_000_000_007);
    assert_eq!(read_output(&out).0.ts_resolution, TsResolution::NanoSecond);
}

#[test]
fn ethernet_and_vlan_are_stripped() {
    let mac_a = [2, 0, 0, 0, 0, 1];
    let mac_b = [2, 0, 0, 0, 0, 2];
    let mut tagged_v4 = Vec::new();
    PacketBuilder::ethernet2(mac_a, mac_b)
        .single_vlan(VlanId::try_new(42).unwrap())
        .ipv4(V4_SERVER, V4_CLIENT, 64)
        .udp(53, 40000)
        .write(&mut tagged_v4, b"answer")
        .unwrap();
    let mut plain_v6 = Vec::new();
    PacketBuilder::ethernet2(mac_a, mac_b)
        .ipv6(V6_CLIENT, V6_SERVER, 64)
        .udp(40000, 53)
        .write(&mut plain_v6, b"query")
        .unwrap();
    // A minimum-size frame: 14 + 20 + 8 + 1 = 43 bytes, padded to 60.
    let mut padded_v4 = Vec::new();
    PacketBuilder::ethernet2(mac_a, mac_b)
        .ipv4(V4_SERVER, V4_CLIENT, 64)
        .udp(53, 40000)
        .write(&mut padded_v4, b"x")
        .unwrap();
    padded_v4.resize(60, 0);
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&mac_a);
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);

    let input = pcap(
        DataLink::ETHERNET,
        TsResolution::MicroSecond,
        &[
            (1_000, &tagged_v4, tagged_v4.len() as u32),
            (2_000, &arp, arp.len() as u32),
            (3_000, &plain_v6, plain_v6.len() as u32),
            (4_000, &padded_v4, 60),
        ],
    );
    let (s, traces, _) = run(&input);
    assert_eq!(s.input_packets, 4);
    assert_eq!(s.skipped_non_ip, 1);
    let seen: Vec<_> = traces.iter().map(|t| (t.family, t.src, t.dst)).collect();
    assert_eq!(
        seen,
        [
            (Family::V4, v4(V4_SERVER), v4(V4_CLIENT)),
            (Family::Other, None, None),
            (Family::V6, v6(V6_CLIENT), v6(V6_SERVER)),
            (Family::V4, v4(V4_SERVER), v4(V4_CLIENT)),
        ]
    );
    assert_eq!(traces[1].outcome, Outcome::SkippedNonIp(Some(0x0806)));
    assert_eq!(
        traces[1].to_string(),
        "     2 - skipped: not IP (ethertype 0x0806)"
    );
    for i in [0, 2, 3] {
        assert!(
            matches!(traces[i].outcome, Outcome::Verdict(_)),
            "{:?}",
            traces[i]
        );
    }
}

#[test]
fn truncated_frames_are_skipped() {
    let p4 = udp4();
    let input = pcap(
        DataLink::RAW,
        TsResolution::MicroSecond,
        &[
            (0, &p4[..20], p4.len() as u32),
            (1_000, &p4, p4.len() as u32),
        ],
    );
    let (s, traces, _) = run(&input);
    assert_eq!((s.input_packets, s.skipped_truncated), (2, 1));
    assert_eq!(
        traces[0].outcome,
        Outcome::SkippedTruncated {
            captured: 20,
            wire: p4.len() as u32
        }
    );
    assert!(
        traces[0]
            .to_string()
            .contains("truncated capture (20 of 34 bytes)")
    );
    assert!(matches!(traces[1].outcome, Outcome::Verdict(_)));
}

#[test]
fn unsupported_link_type_is_named() {
    let input = pcap(
        DataLink::PPP,
        TsResolution::MicroSecond,
        &[(0, &[0xff, 0x03], 2)],
    );
    let mut out = Vec::new();
    let e = translate_pcap(cfg(), &input[..], &mut out).unwrap_err();
    assert!(
        matches!(e, OfflineError::UnsupportedLinkType { code: 9, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.contains("unsupported link type PPP (9)"), "{msg}");
    assert!(
        msg.contains("RAW (101)") && msg.contains("ETHERNET (1)"),
        "{msg}"
    );
    assert!(
        out.is_empty(),
        "no output header for an input we cannot read"
    );
}

#[test]
fn not_a_capture() {
    let mut out = Vec::new();
    let e = translate_pcap(cfg(), &b"hello, world"[..], &mut out).unwrap_err();
    assert!(matches!(e, OfflineError::NotACapture(_)), "{e:?}");
    assert!(e.to_string().contains("neither pcap nor pcapng"), "{e}");
    let e = translate_pcap(cfg(), &b""[..], &mut out).unwrap_err();
    assert!(e.to_string().contains("0 bytes long"), "{e}");
}

/// Issue 20: a killed tcpdump leaves its last record half written. Every
/// complete record is translated and written, and the summary says where the
/// capture ends, whether it stops inside a record header or inside its data.
#[test]
fn cut_off_capture_keeps_every_complete_record() {
    let (p4, p6) = (udp4(), udp6());
    let input = pcap(
        DataLink::RAW,
        TsResolution::MicroSecond,
        &[(0, &p6, p6.len() as u32), (1, &p4, p4.len() as u32)],
    );
    let second = 24 + 16 + p6.len() as u64;
    for (cut, ends) in [(5, input.len() as u64 - 5), (p4.len() + 10, second + 6)] {
        let (s, traces, out) = run(&input[..input.len() - cut]);
        assert_eq!((s.input_packets, traces.len()), (1, 1), "cut {cut}");
        assert_eq!(read_output(&out).1.len() as u64, s.packets_written);
        let c = s.cut_short.expect("a cut");
        assert_eq!(
            c,
            CutShort {
                record: 2,
                offset: Some(second),
                input_bytes: ends,
                bad_caplen: None
            }
        );
        assert_eq!(
            c.to_string(),
            format!(
                "the capture was cut short in the middle of record 2 (at byte offset \
                 {second}); it ends at byte {ends}; translated the 1 complete record before it"
            )
        );
    }
    // A whole capture has no cut, and the JSON summary no such key.
    let (s, _, _) = run(&input);
    assert_eq!(s.cut_short, None);
    assert!(!serde_json::to_string(&s).unwrap().contains("cut_short"));
}

/// A record header whose captured length no capture has is damage, not a short
/// file: its own message, with the length and where the record is.
#[test]
fn absurd_caplen_is_named() {
    let p4 = udp4();
    let mut input = pcap(
        DataLink::RAW,
        TsResolution::MicroSecond,
        &[(0, &p4, p4.len() as u32), (1, &p4, p4.len() as u32)],
    );
    let second = 24 + 16 + p4.len();
    // Big-endian caplen of the second record.
    input[second + 8..second + 12].copy_from_slice(&0x4000_0000u32.to_be_bytes());
    let (s, traces, _) = run(&input);
    assert_eq!(traces.len(), 1);
    let c = s.cut_short.unwrap();
    assert_eq!(c.bad_caplen, Some(0x4000_0000));
    assert_eq!(
        c.to_string(),
        format!(
            "record 2 (at byte offset {second}) claims a captured length of 1073741824 \
             bytes, more than any capture holds (at most 262144): the capture is damaged \
             from there; translated the 1 record before it"
        )
    );
}

#[test]
fn short_file_header_is_a_read_error() {
    let input = pcap(DataLink::RAW, TsResolution::MicroSecond, &[]);
    let mut out = Vec::new();
    let e = translate_pcap(cfg(), &input[..10], &mut out).unwrap_err();
    assert!(matches!(e, OfflineError::ReadInput(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("shorter than the 24-byte pcap file header"),
        "{e}"
    );
}

/// pcapng: the same, numbered by packet (its reader reads ahead, so no offset).
#[test]
fn cut_off_pcapng_keeps_every_complete_packet() {
    let p6 = udp6();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock::new(DataLink::RAW, 65535))
        .unwrap();
    for i in 0..3u64 {
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(i),
            original_len: p6.len() as u32,
            data: std::borrow::Cow::Owned(p6.clone()),
            options: vec![],
        })
        .unwrap();
    }
    let input = w.into_inner();
    let (s, traces, _) = run(&input[..input.len() - 7]);
    assert_eq!(traces.len(), 2);
    let c = s.cut_short.unwrap();
    assert_eq!(
        (c.record, c.offset, c.input_bytes),
        (3, None, input.len() as u64 - 7)
    );
}

#[test]
fn pcapng_with_interface_link_types_and_resolution() {
    let p6 = udp6();
    let mut eth = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(V4_SERVER, V4_CLIENT, 64)
        .udp(53, 40000)
        .write(&mut eth, b"answer")
        .unwrap();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock::new(DataLink::RAW, 65535))
        .unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock::new(DataLink::ETHERNET, 65535))
        .unwrap();
    // Default if_tsresol is microseconds; pcap-file passes raw units as a Duration's nanos.
    let epb = |iface: u32, units: u64, data: &[u8]| EnhancedPacketBlock {
        interface_id: iface,
        timestamp: Duration::from_nanos(units),
        original_len: data.len() as u32,
        data: std::borrow::Cow::Owned(data.to_vec()),
        options: vec![],
    };
    w.write_pcapng_block(epb(0, 1_500_000, &p6)).unwrap();
    w.write_pcapng_block(epb(1, 1_501_000, &eth)).unwrap();
    let input = w.into_inner();

    let (s, traces, out) = run(&input);
    assert_eq!(s.input_packets, 2);
    let seen: Vec<_> = traces.iter().map(|t| (t.ts_ns, t.family)).collect();
    assert_eq!(
        seen,
        [(1_500_000_000, Family::V6), (1_501_000_000, Family::V4)]
    );
    assert_eq!(read_output(&out).0.ts_resolution, TsResolution::NanoSecond);
}

#[test]
fn pcapng_unsupported_interface_is_named() {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock::new(DataLink::IEEE802_11, 65535))
        .unwrap();
    w.write_pcapng_block(EnhancedPacketBlock {
        interface_id: 0,
        timestamp: Duration::ZERO,
        original_len: 4,
        data: std::borrow::Cow::Owned(vec![0; 4]),
        options: vec![],
    })
    .unwrap();
    let input = w.into_inner();
    let e = translate_pcap(cfg(), &input[..], Vec::new()).unwrap_err();
    assert!(
        e.to_string()
            .contains("unsupported link type IEEE802_11 (105)"),
        "{e}"
    );
}

#[test]
fn summary_json_lists_nonzero_drops_in_counter_order() {
    let s = Summary {
        input_packets: 3,
        dropped_total: 3,
        dropped: DropCounts(vec![("malformed", 1), ("hop_limit_exceeded", 2)]),
        ..Summary::default()
    };
    let j = serde_json::to_string(&s).unwrap();
    assert!(
        j.ends_with(r#""dropped_total":3,"dropped":{"malformed":1,"hop_limit_exceeded":2}}"#),
        "{j}"
    );
    assert!(
        j.starts_with(r#"{"input_packets":3,"skipped_non_ip":0,"#),
        "{j}"
    );
}

#[test]
fn trace_lines_read_well() {
    let t = PacketTrace {
        index: 7,
        ts_ns: 0,
        family: Family::V6,
        src: v6(V6_CLIENT),
        dst: v6(V6_SERVER),
        outcome: Outcome::Verdict(Verdict::Replied(DropReason::HopLimitExceeded)),
        written: 1,
    };
    assert_eq!(
        t.to_string(),
        "     7 IPv6 2001:db8:1::10 -> 2001:db8:64::c633:6407 dropped: hop_limit_exceeded, answered with an ICMP error"
    );
    let t = PacketTrace {
        outcome: Outcome::Verdict(Verdict::Fragmented(2)),
        family: Family::V4,
        src: v4(V4_SERVER),
        dst: v4(V4_CLIENT),
        ..t
    };
    assert_eq!(
        t.to_string(),
        "     7 IPv4 198.51.100.7 -> 198.18.0.16 translated into 2 fragments"
    );
    let t = PacketTrace {
        outcome: Outcome::Verdict(Verdict::Held),
        written: 0,
        ..t
    };
    assert_eq!(
        t.to_string(),
        "     7 IPv4 198.51.100.7 -> 198.18.0.16 held: first fragment of an ICMP Echo, until its last one"
    );
}
