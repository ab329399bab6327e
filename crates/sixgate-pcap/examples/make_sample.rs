//! Build `samples/siit-demo.pcap`: thirteen packets that tell the story of
//! `samples/siit.toml` (pool6 2001:db8:64::/96, EAM 198.18.0.0/24 <-> 2001:db8:1::/120).
//!
//! ```text
//! cargo run -p sixgate-pcap --example make_sample [OUTPUT]
//! ```
//!
//! The output is LINKTYPE_RAW, little-endian, microsecond timestamps 1 ms apart from
//! 2024-01-01T00:00:00Z, so it is byte-for-byte reproducible; a test checks that the
//! committed file is what this program writes. Only documentation addresses are used.

#[path = "common/raw_pcap.rs"]
mod raw_pcap;

use std::time::Duration;

use etherparse::icmpv4::DestUnreachableHeader;
use etherparse::{Icmpv4Type, IpHeaders, IpNumber, Ipv4Header, PacketBuilder};

/// IPv6 client, 2001:db8:1::10; the EAM shows it to IPv4 as 198.18.0.16.
const CLIENT6: [u8; 16] = v6(0x2001_0db8_0001_0000_0000_0000_0000_0010);
const CLIENT4: [u8; 4] = [198, 18, 0, 16];
/// Web server 198.51.100.7, seen from IPv6 as 2001:db8:64::c633:6407 (pool6).
const WEB4: [u8; 4] = [198, 51, 100, 7];
const WEB6: [u8; 16] = v6(0x2001_0db8_0064_0000_0000_0000_c633_6407);
/// DNS server 198.51.100.53, seen from IPv6 as 2001:db8:64::c633:6435.
const DNS4: [u8; 4] = [198, 51, 100, 53];
const DNS6: [u8; 16] = v6(0x2001_0db8_0064_0000_0000_0000_c633_6435);
/// 198.51.100.8 under pool6: the last segment of the routed packet.
const OTHER6: [u8; 16] = v6(0x2001_0db8_0064_0000_0000_0000_c633_6408);
/// 2001:db8:65::c633:6407: a typo of the pool6 prefix, so nothing maps it to IPv4.
const OUTSIDE_POOL6: [u8; 16] = v6(0x2001_0db8_0065_0000_0000_0000_c633_6407);

const fn v6(a: u128) -> [u8; 16] {
    a.to_be_bytes()
}

const ECHO_ID: u16 = 0x5167;
const CLIENT_DNS_PORT: u16 = 40000;
const CLIENT_TCP_PORT: u16 = 40001;

/// The sample's packets, in order, each with a line saying what it is for.
pub fn packets() -> Vec<(&'static str, Vec<u8>)> {
    let ping = b"sixgate ping 0123456789abcdef012";
    let query = dns_query();
    vec![
        (
            "ICMPv6 echo request 2001:db8:1::10 -> 2001:db8:64::c633:6407 (6->4)",
            build(
                PacketBuilder::ipv6(CLIENT6, WEB6, 64).icmpv6_echo_request(ECHO_ID, 1),
                ping,
            ),
        ),
        (
            "ICMPv4 echo reply 198.51.100.7 -> 198.18.0.16 (4->6)",
            build(
                PacketBuilder::ip(ipv4(WEB4, CLIENT4, 0x2001, true)).icmpv4_echo_reply(ECHO_ID, 1),
                ping,
            ),
        ),
        (
            "UDP DNS query [2001:db8:1::10]:40000 -> [2001:db8:64::c633:6435]:53 (6->4)",
            build(
                PacketBuilder::ipv6(CLIENT6, DNS6, 64).udp(CLIENT_DNS_PORT, 53),
                &query,
            ),
        ),
        (
            "UDP DNS answer 198.51.100.53:53 -> 198.18.0.16:40000 (4->6)",
            build(
                PacketBuilder::ip(ipv4(DNS4, CLIENT4, 0x2002, true)).udp(53, CLIENT_DNS_PORT),
                &dns_answer(),
            ),
        ),
        (
            "TCP SYN [2001:db8:1::10]:40001 -> [2001:db8:64::c633:6407]:443 (6->4)",
            build(
                PacketBuilder::ipv6(CLIENT6, WEB6, 64)
                    .tcp(CLIENT_TCP_PORT, 443, 1_000_000, 64_800)
                    .syn(),
                &[],
            ),
        ),
        (
            "TCP SYN-ACK 198.51.100.7:443 -> 198.18.0.16:40001 (4->6)",
            build(
                PacketBuilder::ip(ipv4(WEB4, CLIENT4, 0x2003, true))
                    .tcp(443, CLIENT_TCP_PORT, 7_000_000, 65_160)
                    .syn()
                    .ack(1_000_001),
                &[],
            ),
        ),
        (
            "UDP with hop limit 1 -> [2001:db8:64::c633:6407]:33434 (Time Exceeded owed)",
            build(
                PacketBuilder::ipv6(CLIENT6, WEB6, 1).udp(40002, 33434),
                b"traceroute probe",
            ),
        ),
        (
            "UDP [2001:db8:1::10] -> [2001:db8:65::c633:6407], outside pool6 (Address Unreachable owed)",
            build(
                PacketBuilder::ipv6(CLIENT6, OUTSIDE_POOL6, 64).udp(40004, 123),
                &[0x23; 48],
            ),
        ),
        (
            "UDP 198.51.100.7 -> 198.18.0.16 with a corrupted IPv4 header checksum (dropped)",
            bad_header_checksum(),
        ),
        (
            "UDP 1400-byte payload, DF=0, 198.51.100.53:9 -> 198.18.0.16:40006 (fragmented for IPv6)",
            build(
                PacketBuilder::ip(ipv4(DNS4, CLIENT4, 0x2005, false)).udp(9, 40006),
                &big_payload(),
            ),
        ),
        (
            "UDP checksum zero 198.51.100.7:514 -> 198.18.0.16:40003 (RFC 7915 §4.5)",
            udp_checksum_zero(),
        ),
        (
            "ICMPv4 port unreachable 198.51.100.53 -> 198.18.0.16 quoting the translated DNS query",
            build(
                PacketBuilder::ip(ipv4(DNS4, CLIENT4, 0x2007, false)).icmpv4(
                    Icmpv4Type::DestinationUnreachable(DestUnreachableHeader::Port),
                ),
                &translated_query(&query),
            ),
        ),
        (
            "IPv6 with a Routing header, segments left 1 (Parameter Problem owed)",
            routed(),
        ),
    ]
}

/// The sample as a pcap file, a packet a millisecond.
pub fn pcap_bytes() -> Vec<u8> {
    raw_pcap::pcap_of(
        packets()
            .into_iter()
            .enumerate()
            .map(|(i, (_, p))| (Duration::from_millis(i as u64), p)),
    )
}

fn build<T>(b: etherparse::PacketBuilderStep<T>, payload: &[u8]) -> Vec<u8>
where
    etherparse::PacketBuilderStep<T>: Writable,
{
    b.to_vec(payload)
}

/// The etherparse builder steps that can be written, under one name.
trait Writable {
    fn to_vec(self, payload: &[u8]) -> Vec<u8>;
}

macro_rules! writable {
    ($($t:ty),*) => {$(
        impl Writable for etherparse::PacketBuilderStep<$t> {
            fn to_vec(self, payload: &[u8]) -> Vec<u8> {
                let mut v = Vec::with_capacity(self.size(payload.len()));
                self.write(&mut v, payload).expect("packet");
                v
            }
        }
    )*};
}
writable!(
    etherparse::UdpHeader,
    etherparse::TcpHeader,
    etherparse::Icmpv4Header,
    etherparse::Icmpv6Header
);

/// An IPv4 header (TTL 64) with the given ID and DF; lengths and checksum are filled in on write.
fn ipv4(src: [u8; 4], dst: [u8; 4], id: u16, df: bool) -> IpHeaders {
    let mut h = Ipv4Header::new(0, 64, IpNumber::UDP, src, dst).expect("header");
    h.identification = id;
    h.dont_fragment = df;
    IpHeaders::Ipv4(h, Default::default())
}

/// A DNS query for example.com A, id 0x5a5a, RD set.
fn dns_query() -> Vec<u8> {
    let mut q = vec![0x5a, 0x5a, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    q.extend_from_slice(b"\x07example\x03com\x00");
    q.extend_from_slice(&[0, 1, 0, 1]);
    q
}

/// Its answer: one A record, 203.0.113.80, TTL 300.
fn dns_answer() -> Vec<u8> {
    let mut a = dns_query();
    a[2..8].copy_from_slice(&[0x81, 0x80, 0, 1, 0, 1]);
    a.extend_from_slice(&[
        0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x01, 0x2c, 0, 4, 203, 0, 113, 80,
    ]);
    a
}

/// 1400 bytes that are easy to recognise in a hex dump.
fn big_payload() -> Vec<u8> {
    (0..1400u32).map(|i| (i % 251) as u8).collect()
}

/// A datagram damaged on the wire: its IPv4 header checksum does not verify.
fn bad_header_checksum() -> Vec<u8> {
    let mut p = build(
        PacketBuilder::ip(ipv4(WEB4, CLIENT4, 0x2004, true)).udp(123, 123),
        &[0x23; 48],
    );
    p[10] ^= 0x5a;
    p
}

/// A UDP datagram whose sender left the checksum out (zero), legal in IPv4 only.
fn udp_checksum_zero() -> Vec<u8> {
    let mut p = build(
        PacketBuilder::ip(ipv4(WEB4, CLIENT4, 0x2006, true)).udp(514, 40003),
        b"<14>sixgate: no UDP checksum",
    );
    p[26..28].copy_from_slice(&[0, 0]);
    p
}

/// The DNS query after translation to IPv4, as a router past the translator would
/// quote it: 198.18.0.16:40000 -> 198.51.100.53:53, TTL one less, DF=0 (RFC 7915 §5.1
/// for packets of 1260 bytes or less).
fn translated_query(query: &[u8]) -> Vec<u8> {
    let mut h = Ipv4Header::new(0, 63, IpNumber::UDP, CLIENT4, DNS4).expect("header");
    h.dont_fragment = false;
    build(
        PacketBuilder::ip(IpHeaders::Ipv4(h, Default::default())).udp(CLIENT_DNS_PORT, 53),
        query,
    )
}

/// A UDP packet with a Segment Routing Header (routing type 4, RFC 8754) whose
/// segments left is 1: its IPv6 destination is under pool6, its last segment too.
fn routed() -> Vec<u8> {
    // Build it addressed to the final segment, so the UDP checksum covers the
    // final destination as RFC 8200 §8.1 requires, then insert the routing header.
    let plain = build(
        PacketBuilder::ipv6(CLIENT6, OTHER6, 64).udp(40005, 9),
        b"source routed",
    );
    let mut srh = vec![17, 4, 4, 1, 1, 0, 0, 0];
    srh.extend_from_slice(&OTHER6); // segment list[0]: the last segment
    srh.extend_from_slice(&WEB6); // segment list[1]: the active one
    let mut p = plain[..40].to_vec();
    p[6] = 43; // next header: Routing
    let payload_len = u16::from_be_bytes([p[4], p[5]]) + srh.len() as u16;
    p[4..6].copy_from_slice(&payload_len.to_be_bytes());
    p[24..40].copy_from_slice(&WEB6);
    p.extend_from_slice(&srh);
    p.extend_from_slice(&plain[40..]);
    p
}

#[allow(dead_code)] // unused when a test includes this file for `pcap_bytes`
fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/siit-demo.pcap").to_owned()
    });
    for (i, (what, p)) in packets().iter().enumerate() {
        println!("{:>3} {:>5} bytes  {what}", i + 1, p.len());
    }
    std::fs::write(&out, pcap_bytes()).unwrap_or_else(|e| panic!("cannot write {out}: {e}"));
    println!("wrote {out}");
}
