//! Several sync datagrams to one peer in one `sendmsg` (docs/ha.md, "Workers,
//! rings, sole writers"): UDP segmentation offload (`UDP_SEGMENT`, Linux
//! 4.18). The datagrams of a busy link are all one size (full batches of
//! 56-byte records), and the kernel cuts a buffer of them at that size, the
//! last one may be shorter; so the socket, routing, IP output and device
//! layers run once per run of datagrams instead of once per datagram, which
//! was most of the sync thread's cost per record. What goes on the wire is
//! the same datagrams, each with its own UDP and IP header: the peer reads
//! them as before.
//!
//! A kernel or route that refuses (`EIO`: the device has no checksum
//! offload, as after `ethtool -K tx off`; `EINVAL`, `ENOPROTOOPT`) gets the
//! run sent one datagram at a time, and no more attempts.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Most datagrams in one send (the kernel's `UDP_MAX_SEGMENTS` is 64).
pub const MAX_SEGMENTS: usize = 32;
/// Most bytes in one send (IPv4's and IPv6's 16-bit lengths, less headers).
const MAX_BYTES: usize = 65000;

/// A run of datagrams to one address, waiting for [`Gso::flush`].
pub struct Gso {
    buf: Vec<u8>,
    /// The run's datagram size (all but the last are this long).
    seg: usize,
    count: usize,
    to: Option<SocketAddr>,
    /// False once the kernel refused: one datagram per send from then on.
    pub on: bool,
}

impl Default for Gso {
    fn default() -> Gso {
        Gso {
            buf: Vec::with_capacity(MAX_BYTES),
            seg: 0,
            count: 0,
            to: None,
            on: true,
        }
    }
}

impl Gso {
    /// Adds datagram `d` for `to`, sending the run first when `d` cannot
    /// join it (another address, longer than the run's size, no room). Send
    /// errors are counted in `errors`, one per datagram.
    pub fn push(&mut self, fd: RawFd, to: SocketAddr, d: &[u8], errors: &mut u64) {
        let joins = self.count > 0
            && self.to == Some(to)
            && d.len() <= self.seg
            && self.count < MAX_SEGMENTS
            && self.buf.len() + d.len() <= MAX_BYTES;
        if self.count > 0 && !joins {
            self.flush(fd, errors);
        }
        if self.count == 0 {
            self.seg = d.len();
            self.to = Some(to);
        }
        self.buf.extend_from_slice(d);
        self.count += 1;
        // A shorter datagram can only be the last of a run.
        if d.len() < self.seg || !self.on {
            self.flush(fd, errors);
        }
    }

    /// Sends the run.
    pub fn flush(&mut self, fd: RawFd, errors: &mut u64) {
        let Some(to) = self.to else {
            return;
        };
        if self.count > 1 {
            match send(fd, to, &self.buf, Some(self.seg)) {
                Ok(()) => {}
                Err(e) if refused(&e) => {
                    self.on = false;
                    for d in self.buf.chunks(self.seg) {
                        *errors += u64::from(send(fd, to, d, None).is_err());
                    }
                }
                Err(_) => *errors += self.count as u64,
            }
        } else if self.count == 1 {
            *errors += u64::from(send(fd, to, &self.buf, None).is_err());
        }
        self.buf.clear();
        self.count = 0;
        self.to = None;
    }
}

/// The kernel cannot segment here: send one at a time.
fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
    )
}

/// One `sendmsg` of `data` to `to`, cut into `seg`-byte datagrams when given.
fn send(fd: RawFd, to: SocketAddr, data: &[u8], seg: Option<usize>) -> io::Result<()> {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let addr_len = match to {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: a sockaddr_in fits in a sockaddr_storage.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: a sockaddr_in6 fits in a sockaddr_storage.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // One cmsg of a u16: room for its header and the aligned value.
    let mut control = [0u64; 4];
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = addr_len as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(seg) = seg {
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE only computes a size.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as _;
        // SAFETY: the control buffer holds CMSG_SPACE(2) bytes, so the first
        // header and its 2-byte value are inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = libc::UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg as u16);
        }
    }
    // SAFETY: msg names a valid address, one iovec over `data` and (with
    // `seg`) a control buffer, all alive for the call.
    let n = unsafe { libc::sendmsg(fd, &msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// What the peer reads: the same datagrams, one by one, whether they
    /// went as runs (full ones, a shorter last, a longer one starting a new
    /// run, two addresses) or, refused, one at a time.
    #[test]
    fn runs_arrive_as_the_datagrams_they_were() {
        for refuse in [false, true] {
            let a = UdpSocket::bind("127.0.0.1:0").unwrap();
            let b = UdpSocket::bind("127.0.0.1:0").unwrap();
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            for s in [&a, &b] {
                s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                    .unwrap();
            }
            let mut g = Gso {
                on: !refuse,
                ..Gso::default()
            };
            let mut errors = 0;
            let dgram = |i: usize, len: usize| vec![i as u8; len];
            let plan: Vec<(usize, usize)> = (0..40)
                .map(|i| (i, 1400))
                .chain([(40, 300), (41, 1400), (42, 1400), (43, 1452), (44, 80)])
                .collect();
            for &(i, len) in &plan {
                let to = if i == 42 { &b } else { &a };
                g.push(
                    tx.as_raw_fd(),
                    to.local_addr().unwrap(),
                    &dgram(i, len),
                    &mut errors,
                );
            }
            g.flush(tx.as_raw_fd(), &mut errors);
            assert_eq!(errors, 0);
            assert_eq!(g.on, !refuse, "the loopback segments");
            let mut buf = [0u8; 2048];
            for &(i, len) in &plan {
                let from = if i == 42 { &b } else { &a };
                let n = from.recv(&mut buf).unwrap();
                assert_eq!(
                    &buf[..n],
                    &dgram(i, len)[..],
                    "datagram {i} (refuse {refuse})"
                );
            }
        }
    }
}
