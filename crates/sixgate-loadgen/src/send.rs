//! The sender: paced `sendmmsg` batches of one UDP datagram size.
//!
//! Three paths:
//! - a connected UDP socket (fixed source port): the kernel builds the headers,
//!   every message of a batch points at the same payload;
//! - with a source port range (RFC 4814), a raw IP socket: each message carries
//!   its own UDP header with a pseudorandom source port and its checksum;
//! - with `via` (an interface and the next hop's Ethernet address), a packet
//!   socket with `PACKET_QDISC_BYPASS`: each message is a whole Ethernet frame
//!   handed straight to the driver. On a veth bed the sender's IP stack (route
//!   lookup, IP output) is about half of what the sender's CPU spends per packet,
//!   so this offers the most load; the frames are the same on the wire.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::frame::{self, IPV4_HEADER, IPV6_HEADER, Mac, Template, UDP_HEADER};
use crate::pacing::{Pacer, Step};
use crate::ports::{PortGen, PortRange};
use crate::sys;

/// What to send.
#[derive(Debug, Clone)]
pub struct SendOptions {
    pub dst: SocketAddr,
    /// Packets per second; 0 = as fast as possible.
    pub rate: u64,
    pub duration: Duration,
    /// UDP payload bytes.
    pub size: usize,
    /// Pseudorandom source ports (raw socket, needs CAP_NET_RAW).
    pub src_ports: Option<PortRange>,
    /// Send whole Ethernet frames through this interface (packet socket).
    pub via: Option<Via>,
    /// With `via`: spread the source address over this many hosts (the last 16
    /// bits of the address plus 0..hosts), pseudorandomly per packet; 1 = one.
    pub src_hosts: u16,
    /// Packets per `sendmmsg`.
    pub batch: usize,
    /// Seed for the source ports.
    pub seed: u64,
}

/// The packet-socket path: where frames go out and to whom.
#[derive(Debug, Clone)]
pub struct Via {
    pub iface: String,
    /// The next hop's Ethernet address.
    pub dst_mac: Mac,
    /// Default: the interface's own.
    pub src_mac: Option<Mac>,
}

/// What was sent.
#[derive(Debug, Clone, Serialize)]
pub struct SendReport {
    pub mode: &'static str,
    pub dst: String,
    pub src_ports: Option<String>,
    /// Source hosts the packets are spread over.
    pub src_hosts: u16,
    /// Requested rate (0 = unpaced).
    pub target_pps: u64,
    pub duration_s: f64,
    pub payload_bytes: usize,
    /// IP packet size (IPv4: payload + 28, IPv6: payload + 48).
    pub ip_bytes: usize,
    /// Packets the schedule called for (unpaced: those sent).
    pub scheduled: u64,
    /// Packets the kernel accepted.
    pub packets: u64,
    /// Packets whose send failed (ENOBUFS, ECONNREFUSED, ...): not offered.
    pub send_errors: u64,
    pub first_error: Option<String>,
    /// From the first send to the return of the last.
    pub elapsed_s: f64,
    /// Packets accepted per second of `elapsed_s`.
    pub offered_pps: f64,
    /// Scheduled packets not sent by the end of the trial (the sender could
    /// not keep up), and their share of the schedule.
    pub behind_packets: u64,
    pub behind_pct: f64,
    /// Worst lateness of a batch against its schedule, microseconds.
    pub max_late_us: f64,
    /// System calls made.
    pub syscalls: u64,
}

/// Send one trial and report on it.
pub fn send(opts: &SendOptions) -> io::Result<SendReport> {
    if opts.batch == 0 || opts.batch > 1024 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "batch must be 1..=1024",
        ));
    }
    if opts.src_hosts > 1 && opts.via.is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "several source hosts need --via (whole frames)",
        ));
    }
    let mut path = match (&opts.via, opts.src_ports) {
        (Some(via), range) => Path::packet(opts, via, range)?,
        (None, None) => Path::udp(opts)?,
        (None, Some(range)) => Path::raw(opts, range)?,
    };
    sys::tight_timer_slack();
    let pacer = Pacer::new(opts.rate, opts.duration, opts.batch);

    let mut done: u64 = 0; // packets sent or given up on (the schedule index)
    let mut packets: u64 = 0;
    let mut errors: u64 = 0;
    let mut first_error: Option<String> = None;
    let mut syscalls: u64 = 0;
    let mut max_late = Duration::ZERO;
    let start = Instant::now();
    let mut last = start;
    loop {
        let now = Instant::now();
        let elapsed = now - start;
        match pacer.step(done, elapsed) {
            Step::Done => break,
            Step::WaitUntil(t) => {
                let wait = t.saturating_sub(elapsed);
                if wait > Duration::from_micros(2) {
                    std::thread::sleep(wait);
                }
            }
            Step::Send(n) => {
                if pacer.total().is_some() {
                    max_late = max_late.max(pacer.lateness(done + n as u64 - 1, elapsed));
                }
                syscalls += 1;
                match path.send(n) {
                    Ok(sent) => {
                        packets += sent as u64;
                        done += sent as u64;
                    }
                    Err(e) => {
                        // The first message of the batch failed: count it as not
                        // offered and move on, so the schedule does not stall.
                        errors += 1;
                        done += 1;
                        first_error.get_or_insert_with(|| e.to_string());
                    }
                }
                last = Instant::now();
            }
        }
    }
    let elapsed = (last - start).as_secs_f64();
    let scheduled = pacer.total().unwrap_or(done);
    let behind = scheduled.saturating_sub(done);
    let ip_bytes = opts.size
        + UDP_HEADER
        + match opts.dst {
            SocketAddr::V4(_) => IPV4_HEADER,
            SocketAddr::V6(_) => IPV6_HEADER,
        };
    Ok(SendReport {
        mode: "send",
        dst: opts.dst.to_string(),
        src_ports: opts.src_ports.map(|r| r.to_string()),
        src_hosts: opts.src_hosts.max(1),
        target_pps: opts.rate,
        duration_s: opts.duration.as_secs_f64(),
        payload_bytes: opts.size,
        ip_bytes,
        scheduled,
        packets,
        send_errors: errors,
        first_error,
        elapsed_s: elapsed,
        offered_pps: if elapsed > 0.0 {
            packets as f64 / elapsed
        } else {
            0.0
        },
        behind_packets: behind,
        behind_pct: if scheduled > 0 {
            behind as f64 * 100.0 / scheduled as f64
        } else {
            0.0
        },
        max_late_us: max_late.as_secs_f64() * 1e6,
        syscalls,
    })
}

/// A socket with its batch of prepared messages. The buffers, iovecs and
/// headers are allocated once and never move while the `Path` lives.
struct Path {
    fd: OwnedFd,
    msgs: Vec<libc::mmsghdr>,
    /// What `msgs` point at; the templated paths rewrite headers through these
    /// pointers (never through a reference to `_bufs`, which they alias).
    iovecs: Vec<libc::iovec>,
    _bufs: Vec<u8>,
    /// Raw IP and packet-socket paths: the per-packet port and checksum.
    stamp: Option<(Template, PortGen)>,
    /// Packet-socket path with several source hosts: draws host + 1.
    hosts: Option<PortGen>,
}

impl Path {
    fn udp(opts: &SendOptions) -> io::Result<Path> {
        let sock = UdpSocket::bind(unspecified(opts.dst))?;
        sock.connect(opts.dst)?;
        // A deep send buffer, so that bursts do not block on it.
        let _ = sys::set_buffer(sock.as_raw_fd(), false, 4 << 20);
        let fd = OwnedFd::from(sock);
        let bufs = payload(opts.size);
        // Every message points at the same payload.
        let iovecs = vec![
            libc::iovec {
                iov_base: bufs.as_ptr() as *mut libc::c_void,
                iov_len: bufs.len(),
            };
            opts.batch
        ];
        Ok(Path {
            fd,
            msgs: messages(&iovecs),
            iovecs,
            _bufs: bufs,
            stamp: None,
            hosts: None,
        })
    }

    /// Raw IP socket: we write the UDP header, the kernel the IP header.
    fn raw(opts: &SendOptions, range: PortRange) -> io::Result<Path> {
        let (src, _) = route_source(opts.dst)?;
        let fd = sys::raw_udp_socket(src, opts.dst.ip()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("raw socket for --src-port-range (needs CAP_NET_RAW): {e}"),
            )
        })?;
        let _ = sys::set_buffer(fd.as_raw_fd(), false, 4 << 20);
        let t = frame::udp(src, opts.dst, &payload(opts.size)).map_err(invalid)?;
        Ok(Path::templated(
            fd,
            t,
            PortGen::new(range, opts.seed),
            opts.batch,
        ))
    }

    /// Packet socket: we write the whole Ethernet frame and hand it to the
    /// interface's driver; the sender's own IP stack is skipped.
    fn packet(opts: &SendOptions, via: &Via, range: Option<PortRange>) -> io::Result<Path> {
        let (src, port) = route_source(opts.dst)?;
        let range = range.unwrap_or(PortRange {
            first: port,
            last: port,
        });
        let src_mac = match via.src_mac {
            Some(m) => m,
            None => interface_mac(&via.iface)?,
        };
        let fd = sys::packet_socket(&via.iface).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("packet socket on {} (needs CAP_NET_RAW): {e}", via.iface),
            )
        })?;
        let _ = sys::set_buffer(fd.as_raw_fd(), false, 4 << 20);
        let mut t = frame::ethernet(src_mac, via.dst_mac, src, opts.dst, &payload(opts.size))
            .map_err(invalid)?;
        if opts.src_hosts > 1 {
            t = t.with_hosts().map_err(invalid)?;
        }
        let mut path = Path::templated(fd, t, PortGen::new(range, opts.seed), opts.batch);
        if opts.src_hosts > 1 {
            let hosts = PortRange {
                first: 1,
                last: opts.src_hosts,
            };
            path.hosts = Some(PortGen::new(hosts, opts.seed ^ 0x686f_7374));
        }
        Ok(path)
    }

    fn templated(fd: OwnedFd, t: Template, ports: PortGen, batch: usize) -> Path {
        let stride = t.bytes.len();
        let mut bufs = Vec::with_capacity(stride * batch);
        for _ in 0..batch {
            bufs.extend_from_slice(&t.bytes);
        }
        let iovecs: Vec<libc::iovec> = (0..batch)
            .map(|i| libc::iovec {
                // SAFETY: i * stride is inside `bufs` (batch × stride bytes).
                iov_base: unsafe { bufs.as_mut_ptr().add(i * stride) }.cast(),
                iov_len: stride,
            })
            .collect();
        Path {
            fd,
            msgs: messages(&iovecs),
            iovecs,
            _bufs: bufs,
            stamp: Some((t, ports)),
            hosts: None,
        }
    }

    /// Sends the first `n` messages of the batch; returns how many went.
    fn send(&mut self, n: usize) -> io::Result<usize> {
        if let (Some((t, ports)), Some(hosts)) = (&mut self.stamp, &mut self.hosts) {
            for iov in &self.iovecs[..n] {
                let fields = t.stamp_host(ports.next_port(), hosts.next_port() - 1);
                let h = iov.iov_base.cast::<u8>();
                for (at, v) in fields {
                    // SAFETY: as below; every offset is inside the frame.
                    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), h.add(at), 2) };
                }
            }
        } else if let Some((t, ports)) = &mut self.stamp {
            let u = t.udp_offset;
            for iov in &self.iovecs[..n] {
                let (port, csum) = t.stamp(ports.next_port());
                let h = iov.iov_base.cast::<u8>();
                // SAFETY: each iovec points at its own copy of the template
                // (UDP header at `u`) inside the live buffer; nothing else
                // accesses it now.
                unsafe {
                    std::ptr::copy_nonoverlapping(port.as_ptr(), h.add(u), 2);
                    std::ptr::copy_nonoverlapping(csum.as_ptr(), h.add(u + 6), 2);
                }
            }
        }
        sys::sendmmsg(self.fd.as_raw_fd(), &mut self.msgs[..n])
    }
}

fn invalid(e: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e)
}

fn unspecified(dst: SocketAddr) -> SocketAddr {
    match dst {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    }
}

/// The source address (and an ephemeral port) the kernel would use for `dst`.
fn route_source(dst: SocketAddr) -> io::Result<(IpAddr, u16)> {
    let probe = UdpSocket::bind(unspecified(dst))?;
    probe.connect(dst)?;
    let local = probe.local_addr()?;
    Ok((local.ip(), local.port()))
}

/// The interface's Ethernet address, from sysfs (the namespace's own under
/// `ip netns exec`).
fn interface_mac(iface: &str) -> io::Result<Mac> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e} (give --src-mac)")))?;
    text.trim().parse().map_err(invalid)
}

/// The payload: a recognisable, fixed pattern.
fn payload(size: usize) -> Vec<u8> {
    b"sixgate-loadgen "
        .iter()
        .copied()
        .cycle()
        .take(size)
        .collect()
}

/// One `mmsghdr` per iovec, without addresses (the socket is connected).
fn messages(iovecs: &[libc::iovec]) -> Vec<libc::mmsghdr> {
    iovecs
        .iter()
        .map(|iov| {
            // SAFETY: msghdr is plain data; all-zero is a valid empty header.
            let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
            hdr.msg_iov = std::ptr::from_ref(iov).cast_mut();
            hdr.msg_iovlen = 1;
            libc::mmsghdr {
                msg_hdr: hdr,
                msg_len: 0,
            }
        })
        .collect()
}
