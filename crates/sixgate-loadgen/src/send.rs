//! The sender: paced `sendmmsg` batches of one UDP datagram size.
//!
//! Two paths:
//! - a connected UDP socket (fixed source port): the kernel builds the headers,
//!   every message of a batch points at the same payload;
//! - with a source port range (RFC 4814), a raw socket: each message carries its
//!   own UDP header with a pseudorandom source port and its checksum.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::checksum;
use crate::pacing::{Pacer, Step};
use crate::ports::{PortGen, PortRange};
use crate::sys;

/// IPv4 and IPv6 header lengths (no options, no extension headers).
const IPV4_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const UDP_HEADER: usize = 8;

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
    /// Packets per `sendmmsg`.
    pub batch: usize,
    /// Seed for the source ports.
    pub seed: u64,
}

/// What was sent.
#[derive(Debug, Clone, Serialize)]
pub struct SendReport {
    pub mode: &'static str,
    pub dst: String,
    pub src_ports: Option<String>,
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
    let mut path = match opts.src_ports {
        None => Path::udp(opts)?,
        Some(range) => Path::raw(opts, range)?,
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
    fd: std::os::fd::OwnedFd,
    msgs: Vec<libc::mmsghdr>,
    /// What `msgs` point at; the raw path rewrites headers through these
    /// pointers (never through a reference to `_bufs`, which they alias).
    iovecs: Vec<libc::iovec>,
    _bufs: Vec<u8>,
    /// Raw path: per-packet headers to rewrite.
    raw: Option<RawState>,
}

struct RawState {
    ports: PortGen,
    /// Checksum sum of pseudo-header + datagram with a zero source port.
    base: u64,
}

impl Path {
    fn udp(opts: &SendOptions) -> io::Result<Path> {
        let bind: SocketAddr = match opts.dst {
            SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let sock = UdpSocket::bind(bind)?;
        sock.connect(opts.dst)?;
        // A deep send buffer, so that bursts do not block on it.
        let _ = sys::set_buffer(sock.as_raw_fd(), false, 4 << 20);
        let fd = std::os::fd::OwnedFd::from(sock);
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
            raw: None,
        })
    }

    fn raw(opts: &SendOptions, range: PortRange) -> io::Result<Path> {
        // The source address the kernel would pick for this destination.
        let probe = UdpSocket::bind(match opts.dst {
            SocketAddr::V4(_) => SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0)),
            SocketAddr::V6(_) => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)),
        })?;
        probe.connect(opts.dst)?;
        let src: IpAddr = probe.local_addr()?.ip();
        drop(probe);
        let fd = sys::raw_udp_socket(src, opts.dst.ip()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("raw socket for --src-port-range (needs CAP_NET_RAW): {e}"),
            )
        })?;
        let _ = sys::set_buffer(fd.as_raw_fd(), false, 4 << 20);

        let stride = UDP_HEADER + opts.size;
        let len = u16::try_from(stride)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "datagram too large"))?;
        let mut template = Vec::with_capacity(stride);
        template.extend_from_slice(&0u16.to_be_bytes()); // source port, per packet
        template.extend_from_slice(&opts.dst.port().to_be_bytes());
        template.extend_from_slice(&len.to_be_bytes());
        template.extend_from_slice(&0u16.to_be_bytes()); // checksum, per packet
        template.extend_from_slice(&payload(opts.size));
        let base = checksum::partial(src, opts.dst.ip(), &template);

        let mut bufs = Vec::with_capacity(stride * opts.batch);
        for _ in 0..opts.batch {
            bufs.extend_from_slice(&template);
        }
        let iovecs: Vec<libc::iovec> = (0..opts.batch)
            .map(|i| libc::iovec {
                // SAFETY: i * stride is inside `bufs` (batch × stride bytes).
                iov_base: unsafe { bufs.as_mut_ptr().add(i * stride) }.cast(),
                iov_len: stride,
            })
            .collect();
        Ok(Path {
            fd,
            msgs: messages(&iovecs),
            iovecs,
            _bufs: bufs,
            raw: Some(RawState {
                ports: PortGen::new(range, opts.seed),
                base,
            }),
        })
    }

    /// Sends the first `n` messages of the batch; returns how many went.
    fn send(&mut self, n: usize) -> io::Result<usize> {
        if let Some(raw) = &mut self.raw {
            for iov in &self.iovecs[..n] {
                let port = raw.ports.next_port();
                let csum = checksum::finish(raw.base + u64::from(port));
                let h = iov.iov_base.cast::<u8>();
                // SAFETY: each iovec points at its own `stride`-byte datagram
                // (≥ 8 bytes) inside the live buffer; nothing else accesses it now.
                unsafe {
                    std::ptr::copy_nonoverlapping(port.to_be_bytes().as_ptr(), h, 2);
                    std::ptr::copy_nonoverlapping(csum.to_be_bytes().as_ptr(), h.add(6), 2);
                }
            }
        }
        sys::sendmmsg(self.fd.as_raw_fd(), &mut self.msgs[..n])
    }
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
