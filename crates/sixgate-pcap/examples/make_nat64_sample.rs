//! Build `samples/nat64-demo.pcap`: the story of `samples/nat64.toml` (stateful
//! NAT64, RFC 6146: pool6 2001:db8:64::/96, pool4 203.0.113.1, a static BIB entry
//! for the IPv6 web server 2001:db8:1::80 at 203.0.113.1:80).
//!
//! ```text
//! cargo run -p sixgate-pcap --example make_nat64_sample [OUTPUT]
//! sixgate translate --config samples/nat64.toml --input samples/nat64-demo.pcap --output /tmp/out.pcap --verbose
//! ```
//!
//! IPv4 answers go to the pool4 port (or ICMP identifier) the translator picked for
//! each flow, which is the core's choice (RFC 6056 hash), so this program asks the
//! offline data plane which ports the outgoing packets got, with the sample
//! configuration, and addresses the answers to them. A change to port selection
//! therefore changes the capture: a test checks that the committed file is what
//! this program writes. Timestamps are microseconds from 2024-01-01T00:00:00Z; the
//! last packet comes 400 s later, past the UDP and ICMP timeouts, and between
//! them the held SYN's 6 s run out. Only documentation addresses are used.

#[path = "common/raw_pcap.rs"]
mod raw_pcap;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use pcap_file::pcap::PcapReader;
use raw_pcap::pcap_of;
use sixgate_testkit::{Ip4, Ip6, tcp_flag};

/// The IPv6-only client.
const CLIENT6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0x10);
/// The IPv6-only web server of the static BIB entry.
const WEB_SERVER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0x80);
/// Web server 198.51.100.7, seen from IPv6 as 2001:db8:64::c633:6407 (pool6).
const WEB4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
const WEB6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6407);
/// DNS server 198.51.100.53, seen from IPv6 as 2001:db8:64::c633:6435.
const DNS4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 53);
const DNS6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xc633, 0x6435);
/// An IPv4 browser that visits the IPv6 web server.
const BROWSER4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 9);
/// pool4.
const POOL4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

const ECHO_ID: u16 = 0x5167;
const CLIENT_DNS_PORT: u16 = 40000;
const CLIENT_TCP_PORT: u16 = 40001;

/// The configuration the capture is made for.
const CONFIG: &str = include_str!("../../../samples/nat64.toml");

/// The outgoing packets that create the dynamic mappings.
fn outgoing() -> [(&'static str, Vec<u8>); 3] {
    [
        (
            "ICMPv6 echo request 2001:db8:1::10 -> 2001:db8:64::c633:6407 (6->4, new ICMP session)",
            Ip6::new(CLIENT6, WEB6).echo_request(ECHO_ID, 1, 32),
        ),
        (
            "UDP DNS query [2001:db8:1::10]:40000 -> [2001:db8:64::c633:6435]:53 (6->4, new UDP BIB entry)",
            Ip6::new(CLIENT6, DNS6).udp(CLIENT_DNS_PORT, 53, 29),
        ),
        (
            "TCP SYN [2001:db8:1::10]:40001 -> [2001:db8:64::c633:6407]:443 (6->4, V6 INIT)",
            Ip6::new(CLIENT6, WEB6).tcp_flags(CLIENT_TCP_PORT, 443, tcp_flag::SYN, 0),
        ),
    ]
}

/// The pool4 identifier, UDP port and TCP port the outgoing packets got.
fn mapped_ports() -> [u16; 3] {
    let cfg = sixgate_config::parse(CONFIG, "samples/nat64.toml")
        .expect("samples/nat64.toml")
        .config;
    let input = pcap_of(outgoing().into_iter().map(|(_, p)| (Duration::ZERO, p)));
    let mut output = Vec::new();
    sixgate_pcap::translate_pcap(Arc::new(cfg), &input[..], &mut output).expect("translate");
    let mut r = PcapReader::new(&output[..]).expect("output capture");
    let mut ports = [0; 3];
    for port in &mut ports {
        let p = r
            .next_packet()
            .expect("every outgoing packet is translated");
        let s = sixgate_testkit::check(&p.expect("record").data).expect("valid packet");
        *port =
            s.l4.source_port_or_echo_id()
                .expect("port or echo identifier");
    }
    ports
}

/// The sample's packets, in order, each with its time (from the start) and a
/// line saying what it is for.
pub fn packets() -> Vec<(Duration, &'static str, Vec<u8>)> {
    let [echo_id, dns_port, tcp_port] = mapped_ports();
    let ms = Duration::from_millis;
    let [ping, query, syn] = outgoing();
    vec![
        (ms(0), ping.0, ping.1),
        (
            ms(1),
            "ICMPv4 echo reply 198.51.100.7 -> 203.0.113.1 (4->6, to the mapped identifier)",
            Ip4::new(WEB4, POOL4).echo_reply(echo_id, 1, 32),
        ),
        (ms(2), query.0, query.1),
        (
            ms(3),
            "UDP DNS answer 198.51.100.53:53 -> 203.0.113.1 (4->6, to the mapped port)",
            Ip4::new(DNS4, POOL4).udp(53, dns_port, 45),
        ),
        (ms(4), syn.0, syn.1),
        (
            ms(5),
            "TCP SYN-ACK 198.51.100.7:443 -> 203.0.113.1 (4->6, now ESTABLISHED)",
            Ip4::new(WEB4, POOL4).tcp_flags(443, tcp_port, tcp_flag::SYN | tcp_flag::ACK, 0),
        ),
        (
            ms(6),
            "TCP SYN 198.51.100.9:50000 -> 203.0.113.1:80 (4->6 through the static BIB entry)",
            Ip4::new(BROWSER4, POOL4).tcp_flags(50000, 80, tcp_flag::SYN, 0),
        ),
        (
            ms(7),
            "TCP SYN-ACK [2001:db8:1::80]:80 -> [2001:db8:64::c633:6409]:50000 (6->4)",
            Ip6::new(WEB_SERVER6, "2001:db8:64::c633:6409".parse().unwrap()).tcp_flags(
                80,
                50000,
                tcp_flag::SYN | tcp_flag::ACK,
                0,
            ),
        ),
        (
            ms(8),
            "UDP 198.51.100.7:5001 -> 203.0.113.1:7777, no BIB entry (dropped)",
            Ip4::new(WEB4, POOL4).udp(5001, 7777, 16),
        ),
        (
            ms(9),
            "TCP SYN 198.51.100.7:5002 -> 203.0.113.1:4444, no BIB entry (held 6 s, then \
             answered with Port Unreachable, RFC 6146 §3.5.2.2)",
            Ip4::new(WEB4, POOL4).tcp_flags(5002, 4444, tcp_flag::SYN, 0),
        ),
        (
            Duration::from_secs(400),
            "UDP DNS answer again, 400 s later: the session timed out after 300 s (dropped)",
            Ip4::new(DNS4, POOL4).udp(53, dns_port, 45),
        ),
    ]
}

/// The sample as a pcap file.
pub fn pcap_bytes() -> Vec<u8> {
    pcap_of(packets().into_iter().map(|(t, _, p)| (t, p)))
}

#[allow(dead_code)] // unused when a test includes this file for `pcap_bytes`
fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/nat64-demo.pcap").to_owned()
    });
    for (i, (t, what, p)) in packets().iter().enumerate() {
        println!(
            "{:>3} {:>8.3} s {:>5} bytes  {what}",
            i + 1,
            t.as_secs_f64(),
            p.len()
        );
    }
    std::fs::write(&out, pcap_bytes()).unwrap_or_else(|e| panic!("cannot write {out}: {e}"));
    println!("wrote {out}");
}
