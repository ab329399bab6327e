//! The exporter thread over real sockets on loopback.

use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use sixgate_config::{Collector, ExportProtocol, LogExportSettings, Transport};
use sixgate_core::nat64::{Event, EventKind, Proto};
use sixgate_natlog::{RecordKind, ipfix};

use super::*;

fn event(kind: EventKind, port4: u16) -> Event {
    Event {
        kind,
        time_ns: 1_000_000,
        proto: Proto::Udp,
        v6: "2001:db8::1".parse().unwrap(),
        prefix_len: 128,
        port6: 40000,
        v4: "198.51.100.1".parse().unwrap(),
        port4,
        port4_last: port4,
        remote: None,
    }
}

fn settings(c: Collector) -> LogExportSettings {
    LogExportSettings {
        collectors: vec![c],
        ..LogExportSettings::default()
    }
}

fn collector(
    protocol: ExportProtocol,
    transport: Transport,
    address: std::net::SocketAddr,
) -> Collector {
    Collector {
        protocol,
        transport,
        address,
        mtu: 1500,
        template_refresh: 60,
    }
}

/// RFC 7011: every event reaches a UDP collector, in order, stamped with
/// the wall clock; the templates come first.
#[test]
fn rfc7011_udp_collector_gets_every_event_with_wall_clock_time() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let c = collector(
        ExportProtocol::Ipfix,
        Transport::Udp,
        rx.local_addr().unwrap(),
    );
    let p = Prepared::open(&settings(c), Some(3)).unwrap();
    let (mut workers, rings) = event_rings(1);
    let epoch = Instant::now();
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    for port in 0..200 {
        assert!(
            workers[0]
                .ring
                .push(event(EventKind::SessionCreated, 61000 + port))
        );
    }
    let ex = Exporter::spawn(Outputs::Export(p), rings, epoch).unwrap();
    let mut dec = ipfix::Decoder::default();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while got.len() < 200 {
        let n = rx.recv(&mut buf).unwrap();
        let d = dec.message(&buf[..n]).unwrap();
        assert_eq!(d.domain, 3, "[sync] node_id is the default domain");
        got.extend(d.records);
    }
    ex.stop();
    let ports: Vec<u16> = got.iter().map(|r| r.outside_port).collect();
    assert_eq!(ports, (61000..61200).collect::<Vec<_>>());
    let t = got[0].unix_ms;
    assert!(t >= before && t < before + 2000, "{t} vs {before}");
}

/// A port block still held when the daemon stops is logged as released
/// (RFC 7422: one record per block, so the collector must see it end).
#[test]
fn rfc7422_held_blocks_are_released_at_stop() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let c = collector(
        ExportProtocol::Ipfix,
        Transport::Udp,
        rx.local_addr().unwrap(),
    );
    let p = Prepared::open(&settings(c), None).unwrap();
    let (mut workers, rings) = event_rings(1);
    let mut b = event(EventKind::BlockAllocated, 61440);
    b.port4_last = 61503;
    b.prefix_len = 56;
    assert!(workers[0].ring.push(b));
    let ex = Exporter::spawn(Outputs::Export(p), rings, Instant::now()).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    ex.stop();
    let mut dec = ipfix::Decoder::default();
    let mut kinds = Vec::new();
    let mut buf = [0u8; 65536];
    while kinds.len() < 2 {
        let n = rx.recv(&mut buf).unwrap();
        kinds.extend(
            dec.message(&buf[..n])
                .unwrap()
                .records
                .iter()
                .map(|r| (r.kind, r.outside_port_last)),
        );
    }
    assert_eq!(
        kinds,
        [
            (RecordKind::BlockAllocated, 61503),
            (RecordKind::BlockReleased, 61503)
        ]
    );
}

/// A TCP collector that closes the connection mid-stream: the exporter
/// connects again (counted), sends the templates first on the new
/// connection, and goes on; nothing blocks.
#[test]
fn rfc6587_tcp_collector_closing_mid_stream_is_reconnected() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = collector(
        ExportProtocol::Syslog,
        Transport::Tcp,
        l.local_addr().unwrap(),
    );
    let p = Prepared::open(&settings(c), None).unwrap();
    let (mut workers, rings) = event_rings(1);
    let ex = Exporter::spawn(Outputs::Export(p), rings, Instant::now()).unwrap();
    let stats = ex.stats();
    let (first, _) = l.accept().unwrap();
    drop(first); // the collector goes away at once
    assert!(
        workers[0]
            .ring
            .push(event(EventKind::SessionCreated, 61001))
    );
    let (mut second, _) = l.accept().unwrap();
    second
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // Keep producing until a frame arrives on the new connection.
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let mut port = 61002;
    while !String::from_utf8_lossy(&text).contains(" SADD ") {
        assert!(workers[0].ring.push(event(EventKind::SessionCreated, port)));
        port += 1;
        std::thread::sleep(Duration::from_millis(20));
        second.set_nonblocking(true).unwrap();
        if let Ok(n) = std::io::Read::read(&mut second, &mut buf) {
            text.extend_from_slice(&buf[..n]);
        }
        assert!(port < 61300, "nothing arrived on the second connection");
    }
    ex.stop();
    let r = &stats.collectors()[0];
    assert!(r.connects >= 2, "{r:?}");
    // RFC 6587 §3.4.1: LEN SP MSG.
    let s = String::from_utf8_lossy(&text);
    let (len, rest) = s.split_once(' ').unwrap();
    assert!(rest.starts_with("<134>1 "), "{s}");
    assert!(len.parse::<usize>().unwrap() <= rest.len());
}

/// A collector nobody listens on: UDP sends are refused and counted, the
/// exporter keeps reading the rings (the workers never wait).
#[test]
fn a_dead_udp_collector_costs_counted_records_only() {
    let dead = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = dead.local_addr().unwrap();
    drop(dead);
    let c = collector(ExportProtocol::Ipfix, Transport::Udp, addr);
    let p = Prepared::open(&settings(c), None).unwrap();
    let (mut workers, rings) = event_rings(1);
    let ex = Exporter::spawn(Outputs::Export(p), rings, Instant::now()).unwrap();
    let stats = ex.stats();
    for round in 0..20u16 {
        for i in 0..100u16 {
            while !workers[0]
                .ring
                .push(event(EventKind::SessionCreated, round * 100 + i))
            {
                std::thread::yield_now();
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    ex.stop();
    assert_eq!(stats.events.load(Relaxed), 2000, "every event read");
    let r = &stats.collectors()[0];
    assert_eq!(r.records_sent + r.records_dropped, 2000, "{r:?}");
    assert!(r.errors > 0, "{r:?}");
}

/// Juniper-style interim records: a block still held is logged again every
/// `interim` seconds (IPFIX: its allocation again), so a collector that lost
/// the allocation learns it.
#[test]
fn rfc7422_interim_relogs_held_blocks() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let c = collector(
        ExportProtocol::Syslog,
        Transport::Udp,
        rx.local_addr().unwrap(),
    );
    let mut s = settings(c);
    s.interim = 1;
    let p = Prepared::open(&s, None).unwrap();
    let (mut workers, rings) = event_rings(1);
    let mut b = event(EventKind::BlockAllocated, 61440);
    b.port4_last = 61503;
    b.prefix_len = 56;
    assert!(workers[0].ring.push(b));
    let ex = Exporter::spawn(Outputs::Export(p), rings, Instant::now()).unwrap();
    let mut ids = Vec::new();
    let mut buf = [0u8; 4096];
    while ids.iter().filter(|i| *i == "BACT").count() < 2 {
        let n = rx.recv(&mut buf).unwrap();
        let line = String::from_utf8_lossy(&buf[..n]).into_owned();
        ids.push(line.split(' ').nth(5).unwrap().to_owned());
    }
    assert_eq!(ids[0], "BADD");
    assert!(ex.stats().interim.load(Relaxed) >= 2);
    ex.stop();
}
