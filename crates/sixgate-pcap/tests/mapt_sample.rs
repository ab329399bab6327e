//! The offline data plane in MAP-T modes (RFC 7599): captures built here are
//! translated with `samples/mapt-br.toml` and `samples/mapt-ce.toml`, and every
//! packet ends as its description says.

#[path = "../examples/common/raw_pcap.rs"]
mod raw_pcap;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use pcap_file::pcap::PcapReader;
use raw_pcap::pcap_of;
use sixgate_core::{DropReason, Verdict};
use sixgate_pcap::Outcome;
use sixgate_testkit::{Ip4, Ip6, tcp_flag};

/// 192.0.2.8, PSID 27 (ports 55296-57343), at its MAP address.
const CE4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 8);
const CE6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11b, 0, 0xc000, 0x0208, 0x1b);
/// 198.51.100.10 through the DMR.
const SERVER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
const SERVER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0xc633, 0x640a);
const LAN_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Translate `packets` with the sample `config`: each packet's outcome, and the
/// output packets.
fn run(config: &str, packets: Vec<Vec<u8>>) -> (Vec<String>, Vec<Vec<u8>>) {
    let text = std::fs::read_to_string(format!(
        "{}/../../samples/{config}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let cfg = sixgate_config::parse(&text, config).unwrap().config;
    let input = pcap_of(
        packets
            .into_iter()
            .enumerate()
            .map(|(i, p)| (Duration::from_millis(i as u64), p)),
    );
    let mut out = Vec::new();
    let mut outcomes = Vec::new();
    sixgate_pcap::translate_pcap_traced(Arc::new(cfg), &input[..], &mut out, |t| {
        outcomes.push(match t.outcome {
            Outcome::Verdict(Verdict::Translated) => "translated".to_owned(),
            Outcome::Verdict(Verdict::Dropped(r) | Verdict::Replied(r)) => r.as_str().to_owned(),
            other => format!("{other:?}"),
        })
    })
    .unwrap();
    let mut r = PcapReader::new(&out[..]).unwrap();
    let mut written = Vec::new();
    while let Some(p) = r.next_packet() {
        written.push(p.unwrap().data.into_owned());
    }
    (outcomes, written)
}

fn addrs(p: &[u8]) -> (IpAddr, IpAddr, Option<(u16, u16)>) {
    let s = sixgate_testkit::check(p).unwrap();
    (s.src, s.dst, s.ports())
}

/// RFC 7599 §7 with RFC 7597 §8.1: the BR translates its CEs' packets from their
/// own ports only, and IPv4 packets to the CE whose PSID owns the port.
#[test]
fn rfc7599_br_sample_capture() {
    let (outcomes, out) = run(
        "mapt-br.toml",
        vec![
            Ip6::new(CE6, SERVER6).udp(55300, 53, 20),
            Ip4::new(SERVER4, CE4).udp(53, 55300, 20),
            Ip6::new(CE6, SERVER6).udp(1000, 53, 20),
            Ip4::new(SERVER4, Ipv4Addr::new(203, 0, 113, 9)).udp(53, 55300, 20),
        ],
    );
    assert_eq!(
        outcomes,
        [
            "translated",
            "translated",
            DropReason::MaptSourceOutsidePortSet.as_str(),
            DropReason::MaptNoRule.as_str(),
        ]
    );
    assert_eq!(
        addrs(&out[0]),
        (CE4.into(), SERVER4.into(), Some((55300, 53)))
    );
    assert_eq!(
        addrs(&out[1]),
        (SERVER6.into(), CE6.into(), Some((53, 55300)))
    );
}

/// RFC 7599 §5 / §6: the CE's NAPT44 picks a port of its set, and the answer
/// finds the LAN host; nothing unasked-for gets in.
#[test]
fn rfc7599_ce_sample_capture() {
    let syn = Ip4::new(LAN_HOST, SERVER4).tcp_flags(40000, 443, tcp_flag::SYN, 0);
    let (_, out) = run("mapt-ce.toml", vec![syn.clone()]);
    let (src, dst, ports) = addrs(&out[0]);
    assert_eq!((src, dst), (CE6.into(), SERVER6.into()));
    let port = ports.unwrap().0;
    assert!((55296..=57343).contains(&port), "{port}");
    let (outcomes, out) = run(
        "mapt-ce.toml",
        vec![
            syn,
            Ip6::new(SERVER6, CE6).tcp_flags(443, port, tcp_flag::SYN | tcp_flag::ACK, 0),
            Ip6::new(SERVER6, CE6).udp(53, 55555, 8),
        ],
    );
    assert_eq!(
        outcomes,
        ["translated", "translated", DropReason::NoBibEntry.as_str()]
    );
    assert_eq!(
        addrs(&out[1]),
        (SERVER4.into(), LAN_HOST.into(), Some((443, 40000)))
    );
}
