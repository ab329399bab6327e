//! A second, independent oracle: Wireshark's dissectors. A mix of packets (both
//! directions, every protocol, ICMP errors with inner packets, fragments, generated
//! errors) goes through the offline data plane, and tshark must find no
//! error-level expert info (bad checksums, malformed packets) in the output.
//! Skips, saying why, where tshark is not installed (scripts/setup.sh installs it).
//!
//! Quoted packets are kept whole here: tshark "verifies" the checksum of a
//! truncated quote over the bytes present, which can never match. Truncated
//! quotes are covered by the etherparse oracle in sixgate-core's tests.

use sixgate_testkit::{Ip4, Ip6, split_v4, tcp_flag};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::sync::Arc;

/// Wireshark's PI_ERROR expert severity.
const PI_ERROR: u64 = 0x0080_0000;

fn inputs() -> Vec<Vec<u8>> {
    let c6: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    let s6: Ipv6Addr = "2001:db8:64::c633:6407".parse().unwrap();
    let (c4, s4, r4) = (
        Ipv4Addr::new(198, 18, 0, 5),
        Ipv4Addr::new(198, 51, 100, 7),
        Ipv4Addr::new(203, 0, 113, 1),
    );
    let up = Ip6::new(c6, s6);
    let down = Ip4::new(s4, c4);
    let mut v = vec![
        up.udp(40000, 5001, 100),
        up.tcp(40000, 443, 200),
        up.echo_request(1, 1, 56),
        up.clone().hop_limit(1).udp(40000, 5001, 8),
        Ip6::new(c6, "2001:db8:65::1".parse().unwrap()).udp(1, 2, 8),
        down.udp(5001, 40000, 100),
        down.tcp(443, 40000, 200),
        down.echo_reply(1, 1, 56),
        down.clone().ttl(1).udp(5001, 40000, 8),
        down.clone().df(false).udp(5001, 40000, 1400),
        down.udp_zero_checksum(5001, 40000, 30),
        Ip4::new(r4, c4).icmp_error(3, 3, [0; 4], &Ip4::new(c4, s4).udp(40000, 5001, 40)),
        Ip4::new(r4, c4).icmp_error(
            3,
            4,
            [0, 0, 5, 0x78],
            &Ip4::new(c4, s4).tcp(40000, 443, 200),
        ),
        Ip4::new(r4, c4).icmp_error(11, 0, [0; 4], &Ip4::new(c4, s4).echo_request(1, 1, 16)),
        Ip6::new("2001:db8:1::1".parse().unwrap(), s6).icmp_error(
            1,
            4,
            [0; 4],
            &Ip6::new(s6, c6).udp(5001, 40000, 40),
        ),
        Ip6::new("2001:db8:1::1".parse().unwrap(), s6).icmp_error(
            2,
            0,
            1400u32.to_be_bytes(),
            &Ip6::new(s6, c6).tcp(443, 40000, 200),
        ),
    ];
    v.extend(split_v4(&down.df(false).udp(5001, 40000, 3000), 1024));
    v
}

/// Packets 1 ms apart.
fn write_pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let timed: Vec<(u64, Vec<u8>)> = packets
        .iter()
        .enumerate()
        .map(|(i, p)| (i as u64, p.clone()))
        .collect();
    write_pcap_at(&timed)
}

/// Packets at the given milliseconds.
fn write_pcap_at(packets: &[(u64, Vec<u8>)]) -> Vec<u8> {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let header = PcapHeader {
        datalink: pcap_file::DataLink::RAW,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for (ms, p) in packets {
        let ts = std::time::Duration::from_millis(*ms);
        w.write_packet(&PcapPacket::new(ts, p.len() as u32, p))
            .unwrap();
    }
    w.into_writer()
}

#[test]
fn tshark_finds_no_errors_in_translated_output() {
    if !tshark_installed() {
        return;
    }
    // The shipped sample configuration: the oracle checks what users run.
    let sample = include_str!("../../../samples/siit.toml");
    let cfg = sixgate_config::parse(sample, "samples/siit.toml")
        .unwrap()
        .config;
    let input = write_pcap(&inputs());
    let mut output = Vec::new();
    let summary = sixgate_pcap::translate_pcap(Arc::new(cfg), &input[..], &mut output).unwrap();
    assert!(summary.packets_written >= 20, "{summary:?}");
    assert_tshark_clean(&output, summary.packets_written, "siit");
}

/// Mode nat64 with the shipped sample: flows out and their answers back (UDP,
/// TCP, ICMP echo), an ICMPv4 error about a flow, a connection in through the
/// static BIB entry, and the Port Unreachable a held SYN gets after 6 s
/// (RFC 6146 §3.5.2.2).
#[test]
fn tshark_finds_no_errors_in_nat64_output() {
    if !tshark_installed() {
        return;
    }
    let sample = include_str!("../../../samples/nat64.toml");
    let cfg = Arc::new(
        sixgate_config::parse(sample, "samples/nat64.toml")
            .unwrap()
            .config,
    );
    let c6: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    let s6: Ipv6Addr = "2001:db8:64::c633:6407".parse().unwrap();
    let web6: Ipv6Addr = "2001:db8:1::80".parse().unwrap();
    let (s4, pool4, r4) = (
        Ipv4Addr::new(198, 51, 100, 7),
        Ipv4Addr::new(203, 0, 113, 1),
        Ipv4Addr::new(192, 0, 2, 1),
    );
    let up = Ip6::new(c6, s6);
    let outbound = vec![
        up.udp(40000, 5001, 100),
        up.tcp_flags(40001, 443, tcp_flag::SYN, 0),
        up.echo_request(9, 1, 56),
    ];
    // Pass 1: where the flows went (the pool4 ports are the core's choice).
    let mut first = Vec::new();
    sixgate_pcap::translate_pcap(cfg.clone(), &write_pcap(&outbound)[..], &mut first).unwrap();
    let sent = packets_of(&first);
    assert_eq!(sent.len(), 3, "every flow went out");
    let port_of = |p: &[u8]| {
        let s = sixgate_testkit::check(p).unwrap();
        s.l4.source_port_or_echo_id().unwrap()
    };
    let (pu, pt, pi) = (port_of(&sent[0]), port_of(&sent[1]), port_of(&sent[2]));

    // Pass 2: the whole conversation.
    let down = Ip4::new(s4, pool4);
    let mut packets: Vec<(u64, Vec<u8>)> = outbound.into_iter().map(|p| (0, p)).collect();
    packets.extend(
        [
            down.udp(5001, pu, 100),
            down.tcp_flags(443, pt, tcp_flag::SYN | tcp_flag::ACK, 0),
            up.tcp(40001, 443, 200),
            down.tcp(443, pt, 1000),
            down.echo_reply(pi, 1, 56),
            Ip4::new(r4, pool4).icmp_error(3, 3, [0; 4], &sent[0]),
            Ip4::new(r4, pool4).icmp_error(11, 0, [0; 4], &sent[2]),
            Ip4::new(s4, pool4).tcp_flags(50000, 80, tcp_flag::SYN, 0),
            Ip6::new(web6, s6).tcp_flags(80, 50000, tcp_flag::SYN | tcp_flag::ACK, 0),
            // Unsolicited: held, then answered with Port Unreachable.
            down.tcp_flags(5002, 4444, tcp_flag::SYN, 0),
        ]
        .into_iter()
        .map(|p| (0, p)),
    );
    packets.push((7_000, up.udp(40000, 5001, 10)));
    let ms: Vec<u64> = packets
        .iter()
        .enumerate()
        .map(|(i, (t, _))| *t.max(&(i as u64)))
        .collect();
    let input = write_pcap_at(
        &packets
            .iter()
            .zip(&ms)
            .map(|((_, p), &t)| (t, p.clone()))
            .collect::<Vec<_>>(),
    );
    let mut output = Vec::new();
    let summary = sixgate_pcap::translate_pcap(cfg, &input[..], &mut output).unwrap();
    assert_eq!(summary.timer_packets, 1, "{summary:?}");
    // Every packet but the held SYN is translated, and the SYN gets its answer.
    assert_eq!(
        summary.packets_written, summary.input_packets,
        "{summary:?}"
    );
    assert_tshark_clean(&output, summary.packets_written, "nat64");
}

fn tshark_installed() -> bool {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("skipped: tshark is not installed (scripts/setup.sh installs it)");
        return false;
    }
    true
}

fn packets_of(pcap: &[u8]) -> Vec<Vec<u8>> {
    let mut r = pcap_file::pcap::PcapReader::new(pcap).unwrap();
    let mut v = Vec::new();
    while let Some(p) = r.next_packet() {
        v.push(p.unwrap().data.into_owned());
    }
    v
}

/// Run tshark over `output`: it must read `packets` frames and find no error.
fn assert_tshark_clean(output: &[u8], packets: u64, name: &str) {
    let dir = std::env::temp_dir().join(format!("sixgate-tshark-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.pcap");
    std::fs::write(&path, output).unwrap();
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&path)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
        ])
        .args([
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "_ws.expert.severity",
            "-e",
            "_ws.expert.message",
        ])
        .output()
        .unwrap();
    if std::env::var_os("SIXGATE_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let frames = text.lines().count();
    assert_eq!(frames as u64, packets, "tshark read every packet:\n{text}");
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| {
            let sev = l.split('\t').nth(1).unwrap_or("");
            sev.split(',')
                .any(|s| s.parse::<u64>().is_ok_and(|s| s >= PI_ERROR))
        })
        .collect();
    assert!(
        errors.is_empty(),
        "tshark reports errors:\n{}",
        errors.join("\n")
    );
}
