//! The NAT64 event exporter alone (docs/logging.md, docs/PERFORMANCE.md): a
//! translator creates N UDP sessions with `event_log = "sessions"`, and its
//! worker end moves the events onto the ring every 64 packets, as the worker
//! loop does after each batch; the exporter thread reads them and sends them
//! to one collector on the loopback, a UDP socket this program reads and
//! counts. Prints the exporter thread's own CPU time per event (its
//! `CLOCK_THREAD_CPUTIME_ID`), events/s on one core, the bytes on the wire per
//! event, and what was lost (must be 0).
//!
//! `cargo run --release -p sixgate-dataplane --example export_bench -- [ipfix|netflow9|syslog|syslog-tcp|json] [N]`
//!
//! `syslog-tcp`: RFC 5424 over TCP (RFC 6587 octet counting) to a listener on
//! the loopback that reads and counts.

use std::io::Read;
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use sixgate_config::{Collector, ExportProtocol, LogExportSettings, Transport};
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{EventLog, Nat64Config, Pool4Entry};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_dataplane::event_export::{Exporter, Outputs, Prepared, event_rings};
use sixgate_testkit::Ip6;

fn main() {
    let mut args = std::env::args().skip(1);
    let proto = args.next().unwrap_or_else(|| "ipfix".into());
    let n: u32 = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = if proto == "syslog-tcp" {
        tcp.local_addr().unwrap()
    } else {
        rx.local_addr().unwrap()
    };
    let dir = std::env::temp_dir().join(format!("export-bench-{}", std::process::id()));
    let mut s = LogExportSettings::default();
    match proto.as_str() {
        "json" => s.file = Some(dir.with_extension("json")),
        p => s.collectors.push(Collector {
            protocol: match p {
                "ipfix" => ExportProtocol::Ipfix,
                "netflow9" => ExportProtocol::NetFlow9,
                "syslog" | "syslog-tcp" => ExportProtocol::Syslog,
                _ => panic!("ipfix, netflow9, syslog, syslog-tcp or json"),
            },
            transport: if p == "syslog-tcp" {
                Transport::Tcp
            } else {
                Transport::Udp
            },
            address: addr,
            mtu: 1500,
            template_refresh: 60,
        }),
    }
    // The collector: count datagrams and bytes.
    let (bytes, done) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let reader = if proto == "syslog-tcp" {
        let bytes = bytes.clone();
        std::thread::spawn(move || {
            let Ok((mut conn, _)) = tcp.accept() else {
                return;
            };
            let mut buf = vec![0u8; 1 << 20];
            while let Ok(k) = conn.read(&mut buf) {
                if k == 0 {
                    break;
                }
                bytes.fetch_add(k as u64, Relaxed);
            }
        })
    } else {
        let (bytes, done) = (bytes.clone(), done.clone());
        std::thread::spawn(move || {
            let _ = socket_buffer(&rx);
            let mut buf = vec![0u8; 65536];
            while !done.load(Relaxed) {
                if let Ok(k) = rx.recv(&mut buf) {
                    bytes.fetch_add(k as u64, Relaxed);
                }
            }
        })
    };
    let mut t = translator();
    let (mut workers, rings) = event_rings(1);
    let epoch = Instant::now();
    let ex = Exporter::spawn(
        Outputs::Export(Prepared::open(&s, None).unwrap()),
        rings,
        epoch,
    )
    .unwrap();
    let stats = ex.stats();
    let mut scratch = Scratch::new();
    let mut packet = vec![0u8; HEADROOM + 256];
    let start = Instant::now();
    for i in 0..n {
        let src =
            Ipv6Addr::from(0x2001_0db8_0001_0000_0000_0000_0000_0000u128 + u128::from(i / 20_000));
        let dst = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0x0808, 0x0808);
        let p = Ip6::new(src, dst).udp(1024 + (i % 20_000) as u16, 53, 8);
        packet[HEADROOM..HEADROOM + p.len()].copy_from_slice(&p);
        let mut pkt = PacketBuf::new(&mut packet, HEADROOM, p.len());
        let now_ns = epoch.elapsed().as_nanos() as u64;
        let v = t.translate(&mut pkt, &mut scratch, now_ns);
        assert!(matches!(v, Verdict::Translated), "{v:?}");
        if i % 64 == 63 {
            workers[0].drain(&mut t);
        }
    }
    workers[0].drain(&mut t);
    let produced = start.elapsed();
    // What is still waiting in the translator's own ring goes on as the
    // worker's next batches would take it.
    while stats.events.load(Relaxed) < u64::from(n) - t.nat64_stats().events_lost {
        workers[0].drain(&mut t);
        std::thread::sleep(Duration::from_millis(1));
    }
    let cpu = ex.cpu_time().unwrap();
    let wall = start.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    ex.stop();
    done.store(true, Relaxed);
    reader.join().unwrap();
    let lost = t.nat64_stats().events_lost;
    let c = stats.collectors();
    let sent = c.first().map_or(0, |c| c.records_sent);
    let dropped = c.first().map_or(0, |c| c.records_dropped);
    println!(
        "{proto}: {n} events; exporter CPU {:.3} s = {:.0} ns/event = {:.2} M events/s on one core; \
         wall {:.3} s (the translator's own {:.3} s); lost at the ring {lost}, sent {sent}, \
         dropped at the socket {dropped}; {:.1} bytes/event received",
        cpu.as_secs_f64(),
        cpu.as_nanos() as f64 / f64::from(n),
        f64::from(n) / cpu.as_secs_f64() / 1e6,
        wall.as_secs_f64(),
        produced.as_secs_f64(),
        bytes.load(Relaxed) as f64 / sent.max(1) as f64,
    );
    if proto == "json" {
        let p = dir.with_extension("json");
        let len = std::fs::metadata(&p).map_or(0, |m| m.len());
        println!(
            "json: {:.1} bytes/event in the file",
            len as f64 / f64::from(n)
        );
        let _ = std::fs::remove_file(p);
    }
}

/// A large receive buffer, so the reader's scheduling does not drop datagrams.
fn socket_buffer(s: &UdpSocket) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 32 << 20;
    // SAFETY: a valid socket and option value.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn translator() -> Translator {
    let pool6 = Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap();
    let mut cfg = Config::with_pool6(Some(pool6));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry {
            tcp: sixgate_core::nat64::PortRange {
                first: 1,
                last: 65535,
            },
            udp: sixgate_core::nat64::PortRange {
                first: 1,
                last: 65535,
            },
            prefix_len: 24,
            ..Pool4Entry::single(Ipv4Addr::new(198, 18, 0, 0))
        }],
        max_sessions: 4_000_000,
        event_log: EventLog::Sessions,
        subscriber_prefix_len: 128,
        ..Nat64Config::default()
    });
    Translator::new(Arc::new(cfg))
}
