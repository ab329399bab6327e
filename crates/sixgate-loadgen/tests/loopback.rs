//! Smoke test on loopback: a receiver and a paced sender in one process, UDP
//! socket path always, the raw-socket (RFC 4814 ports) path when we may open
//! raw sockets. Rates are low so that a loaded CI machine keeps up.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::thread;
use std::time::Duration;

use sixgate_loadgen::recv::{Receiver, RecvOptions};
use sixgate_loadgen::send::{SendOptions, Via, send};

fn options(bind: SocketAddr, expect: Option<u64>, poll: Option<Duration>) -> RecvOptions {
    RecvOptions {
        bind,
        duration: Duration::from_secs(10),
        idle_timeout: Some(Duration::from_secs(2)),
        expect,
        batch: 64,
        poll,
        rcvbuf: 4 << 20,
        ready_file: None,
        reuse_port: false,
    }
}

fn receiver(ip: IpAddr, expect: u64, poll: Option<Duration>) -> Receiver {
    Receiver::bind(options(SocketAddr::new(ip, 0), Some(expect), poll)).expect("bind receiver")
}

fn round_trip(ip: IpAddr, src_ports: Option<&str>) {
    round_trip_with(ip, src_ports, None, Some(Duration::from_micros(200)));
}

fn round_trip_with(ip: IpAddr, src_ports: Option<&str>, via: Option<&str>, poll: Option<Duration>) {
    let (rate, duration) = (20_000u64, Duration::from_millis(500));
    let expect = 10_000;
    let rx = receiver(ip, expect, poll);
    let dst = rx.local_addr().unwrap();
    let counting = thread::spawn(move || rx.run().expect("receive"));

    let report = send(&SendOptions {
        dst,
        rate,
        duration,
        size: 18,
        src_ports: src_ports.map(|r| r.parse().unwrap()),
        via: via.map(|iface| Via {
            iface: iface.to_string(),
            // The loopback device's own (all-zero) address: frames to it are
            // for this host.
            dst_mac: "00:00:00:00:00:00".parse().unwrap(),
            src_mac: None,
        }),
        src_hosts: 1,
        batch: 32,
        seed: 1,
    })
    .expect("send");
    assert_eq!(report.scheduled, expect);
    assert_eq!(report.send_errors, 0);
    // Every scheduled packet was sent, or counted as behind; on a loaded CI
    // machine the sender may lose the CPU near the end, but not for long.
    assert_eq!(report.packets + report.behind_packets, expect, "{report:?}");
    assert!(report.behind_packets <= expect / 20, "{report:?}");
    let want_ip = if ip.is_ipv4() { 46 } else { 66 };
    assert_eq!(report.ip_bytes, want_ip);
    // Paced: it took about the trial's length, not much less.
    assert!(report.elapsed_s > 0.45, "{report:?}");
    assert!(report.offered_pps < rate as f64 * 1.1, "{report:?}");

    // Loopback loses nothing: every packet sent arrives, checksums intact.
    let got = counting.join().unwrap();
    assert_eq!(got.packets, report.packets, "{got:?}");
    assert_eq!(got.bytes, report.packets * 18);
    assert_eq!(got.socket_drops, 0);
}

#[test]
fn udp_socket_ipv4() {
    round_trip(Ipv4Addr::LOCALHOST.into(), None);
}

#[test]
fn udp_socket_ipv4_blocking_receiver() {
    round_trip_with(Ipv4Addr::LOCALHOST.into(), None, None, None);
}

#[test]
fn udp_socket_ipv6() {
    if UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).is_err() {
        eprintln!("skipped: no IPv6 loopback");
        return;
    }
    round_trip(Ipv6Addr::LOCALHOST.into(), None);
}

/// Raw sockets need CAP_NET_RAW; skip (and say so) without it.
fn can_raw() -> bool {
    // SAFETY: plain socket(2)/close(2) calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_UDP);
        if fd < 0 {
            return false;
        }
        libc::close(fd);
    }
    true
}

#[test]
fn pseudorandom_source_ports_ipv4() {
    if !can_raw() {
        eprintln!("skipped: no CAP_NET_RAW for the raw-socket path");
        return;
    }
    round_trip(Ipv4Addr::LOCALHOST.into(), Some("1024-65535"));
}

#[test]
fn pseudorandom_source_ports_ipv6() {
    if !can_raw() || UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).is_err() {
        eprintln!("skipped: no CAP_NET_RAW or no IPv6 loopback");
        return;
    }
    // The receiving UDP socket only counts datagrams whose checksum is right,
    // so this also checks the sender's checksums.
    round_trip(Ipv6Addr::LOCALHOST.into(), Some("20000-20099"));
}

// Only IPv6 here: an IPv4 frame injected on `lo` has no route attached, and the
// kernel drops 127/8 traffic that needs input routing as martian (unless
// route_localnet, a sysctl a test must not flip). The IPv4 frame layout is
// checked against etherparse in `frame`'s unit tests.
#[test]
fn ethernet_frames_through_a_packet_socket_ipv6() {
    if !can_raw() || UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).is_err() {
        eprintln!("skipped: no CAP_NET_RAW or no IPv6 loopback");
        return;
    }
    // The receiving socket checks the UDP checksum.
    round_trip_with(
        Ipv6Addr::LOCALHOST.into(),
        Some("1024-65535"),
        Some("lo"),
        Some(Duration::from_micros(200)),
    );
}

#[test]
fn ports_really_vary() {
    if !can_raw() {
        eprintln!("skipped: no CAP_NET_RAW for the raw-socket path");
        return;
    }
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let dst = sock.local_addr().unwrap();
    send(&SendOptions {
        dst,
        rate: 1000,
        duration: Duration::from_millis(100),
        size: 4,
        src_ports: Some("40000-40009".parse().unwrap()),
        via: None,
        src_hosts: 1,
        batch: 8,
        seed: 3,
    })
    .unwrap();
    let mut ports = Vec::new();
    let mut buf = [0u8; 64];
    while let Ok((n, from)) = sock.recv_from(&mut buf) {
        assert_eq!(n, 4);
        ports.push(from.port());
        if ports.len() == 100 {
            break;
        }
    }
    assert_eq!(ports.len(), 100);
    assert!(ports.iter().all(|p| (40000..=40009).contains(p)));
    ports.sort_unstable();
    ports.dedup();
    assert!(ports.len() >= 8, "{ports:?}");
}

/// `--reuse-port`: two receivers share one port, and between them count every
/// datagram (the kernel spreads the sender's source ports over them).
#[test]
fn receivers_share_a_port_with_reuse_port() {
    if !can_raw() {
        eprintln!("skipped: no CAP_NET_RAW for the raw-socket path (per-packet ports)");
        return;
    }
    let reuse = |bind| {
        let mut o = options(bind, None, Some(Duration::from_micros(200)));
        o.reuse_port = true;
        o.idle_timeout = Some(Duration::from_millis(500));
        Receiver::bind(o).expect("bind with SO_REUSEPORT")
    };
    let a = reuse(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0));
    let dst = a.local_addr().unwrap();
    let b = reuse(dst);
    let (a, b) = (
        thread::spawn(move || a.run()),
        thread::spawn(move || b.run()),
    );
    let report = send(&SendOptions {
        dst,
        rate: 10_000,
        duration: Duration::from_millis(300),
        size: 18,
        src_ports: Some("1024-65535".parse().unwrap()),
        via: None,
        src_hosts: 1,
        batch: 32,
        seed: 5,
    })
    .expect("send");
    let (a, b) = (a.join().unwrap().unwrap(), b.join().unwrap().unwrap());
    assert_eq!(a.packets + b.packets, report.packets, "{a:?} {b:?}");
    assert!(a.packets > 0 && b.packets > 0, "{a:?} {b:?}");
}
