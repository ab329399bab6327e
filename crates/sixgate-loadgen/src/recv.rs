//! The receiver: counts the datagrams arriving on one UDP socket with
//! `recvmmsg`, and the ones its own socket queue dropped (`SO_RXQ_OVFL`), so
//! that a loss at the receiver is not blamed on the device under test.
//!
//! By default it polls: a non-blocking `recvmmsg`, then a short sleep whenever
//! the queue ran dry. A receiver blocked in `recvmmsg` has to be woken for
//! nearly every datagram, and that wake-up (an IPI when it sleeps on another
//! CPU, costly in a VM) is paid by whoever delivers the datagram: on a veth
//! bed, the sender's CPU. Profiles showed ~20 % of the sender's CPU in that
//! wake-up, so a blocking receiver lowers the rate the bed can offer.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::sys;

/// Blocking mode: how long one `recvmmsg` waits for a first datagram before
/// the loop checks its deadlines again.
const BLOCK_TIMEOUT: Duration = Duration::from_millis(20);

/// Bytes kept of each datagram (lengths are counted in full via MSG_TRUNC).
const SNAP: usize = 2048;

#[derive(Debug, Clone)]
pub struct RecvOptions {
    pub bind: SocketAddr,
    /// Stop this long after binding, whatever arrives.
    pub duration: Duration,
    /// Stop once this long has passed without a datagram, after the first one.
    pub idle_timeout: Option<Duration>,
    /// Stop once this many datagrams have arrived.
    pub expect: Option<u64>,
    /// Datagrams per `recvmmsg`.
    pub batch: usize,
    /// Poll: sleep this long whenever the socket queue is empty or a call
    /// returned less than a batch. `None`: block in `recvmmsg` instead.
    pub poll: Option<Duration>,
    /// Socket receive buffer to ask for, bytes.
    pub rcvbuf: usize,
    /// Created once the socket is bound (for scripts to wait on).
    pub ready_file: Option<PathBuf>,
    /// SO_REUSEPORT: share the port with other receivers.
    pub reuse_port: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RecvReport {
    pub mode: &'static str,
    pub bind: String,
    pub packets: u64,
    /// UDP payload bytes.
    pub bytes: u64,
    /// From binding to the end.
    pub elapsed_s: f64,
    /// From the first datagram to the last.
    pub first_to_last_s: f64,
    /// Datagrams per second between the first and the last (0 with fewer
    /// than two).
    pub pps: f64,
    /// Datagrams the socket's own queue dropped (receiver too slow).
    pub socket_drops: u64,
    /// Receive buffer the kernel granted, bytes.
    pub rcvbuf: usize,
    /// Why it stopped: "duration", "idle" or "expect".
    pub stopped_by: &'static str,
}

/// A bound receiver, not yet counting.
pub struct Receiver {
    sock: UdpSocket,
    opts: RecvOptions,
    rcvbuf: usize,
}

impl Receiver {
    pub fn bind(opts: RecvOptions) -> io::Result<Receiver> {
        if opts.batch == 0 || opts.batch > 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "batch must be 1..=1024",
            ));
        }
        let sock = if opts.reuse_port {
            sys::udp_bind_reuse_port(opts.bind)?
        } else {
            UdpSocket::bind(opts.bind)?
        };
        let fd = sock.as_raw_fd();
        let rcvbuf = sys::set_buffer(fd, true, opts.rcvbuf)?;
        sys::set_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1)?;
        if opts.poll.is_none() {
            sock.set_read_timeout(Some(BLOCK_TIMEOUT))?;
        } else {
            sock.set_nonblocking(true)?;
        }
        if let Some(path) = &opts.ready_file {
            std::fs::write(path, format!("{}\n", sock.local_addr()?))?;
        }
        Ok(Receiver { sock, opts, rcvbuf })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Counts until a stop condition holds.
    pub fn run(self) -> io::Result<RecvReport> {
        let batch = self.opts.batch;
        let cspace = sys::rxq_ovfl_space();
        let mut bufs = vec![0u8; SNAP * batch];
        let mut control = vec![0u8; cspace * batch];
        let mut iovecs: Vec<libc::iovec> = (0..batch)
            .map(|i| libc::iovec {
                // SAFETY: i * SNAP is inside `bufs` (batch × SNAP bytes).
                iov_base: unsafe { bufs.as_mut_ptr().add(i * SNAP) }.cast(),
                iov_len: SNAP,
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = (0..batch)
            .map(|i| {
                // SAFETY: msghdr is plain data; all-zero is a valid empty header.
                let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
                // SAFETY: i is within iovecs and control.
                hdr.msg_iov = unsafe { iovecs.as_mut_ptr().add(i) };
                hdr.msg_iovlen = 1;
                hdr.msg_control = unsafe { control.as_mut_ptr().add(i * cspace) }.cast();
                hdr.msg_controllen = cspace as _;
                libc::mmsghdr {
                    msg_hdr: hdr,
                    msg_len: 0,
                }
            })
            .collect();

        let fd = self.sock.as_raw_fd();
        if self.opts.poll.is_some() {
            sys::tight_timer_slack();
        }
        let start = Instant::now();
        let (mut packets, mut bytes, mut drops) = (0u64, 0u64, 0u64);
        let (mut first, mut last): (Option<Instant>, Instant) = (None, start);
        let stopped_by = loop {
            // recvmmsg shrinks msg_controllen to what it wrote: restore it.
            for m in &mut msgs {
                m.msg_hdr.msg_controllen = cspace as _;
            }
            let n = sys::recvmmsg(fd, &mut msgs)?;
            if let Some(poll) = self.opts.poll
                && n < batch
            {
                // Let the queue fill instead of being woken per datagram.
                std::thread::sleep(poll);
            }
            let now = Instant::now();
            if n > 0 {
                first.get_or_insert(now);
                last = now;
                packets += n as u64;
                for m in &msgs[..n] {
                    bytes += u64::from(m.msg_len);
                }
                // The counter is cumulative for the socket; the latest is the total.
                if let Some(d) = sys::rxq_ovfl(&msgs[n - 1].msg_hdr) {
                    drops = drops.max(u64::from(d));
                }
            }
            if self.opts.expect.is_some_and(|e| packets >= e) {
                break "expect";
            }
            if now - start >= self.opts.duration {
                break "duration";
            }
            if let (Some(idle), Some(_)) = (self.opts.idle_timeout, first)
                && now - last >= idle
            {
                break "idle";
            }
        };
        let first_to_last = first.map_or(0.0, |f| (last - f).as_secs_f64());
        Ok(RecvReport {
            mode: "recv",
            bind: self.opts.bind.to_string(),
            packets,
            bytes,
            elapsed_s: start.elapsed().as_secs_f64(),
            first_to_last_s: first_to_last,
            pps: if packets >= 2 && first_to_last > 0.0 {
                (packets - 1) as f64 / first_to_last
            } else {
                0.0
            },
            socket_drops: drops,
            rcvbuf: self.rcvbuf,
            stopped_by,
        })
    }
}
