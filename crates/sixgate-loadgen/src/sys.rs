//! The few system calls std does not offer: raw sockets, socket options,
//! `sendmmsg`/`recvmmsg`, timer slack.

use std::io;
use std::mem;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A `sockaddr_storage` holding `addr`, and its length.
pub fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&raw mut storage).cast::<libc::sockaddr_in>(), sin) };
            mem::size_of::<libc::sockaddr_in>()
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
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast::<libc::sockaddr_in6>(), sin6) };
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A raw IPv4 or IPv6 socket for UDP (the kernel writes the IP header, we write
/// the UDP header), bound to `src` and connected to `dst`, so that `sendmmsg`
/// needs no addresses. Needs CAP_NET_RAW.
pub fn raw_udp_socket(src: IpAddr, dst: IpAddr) -> io::Result<OwnedFd> {
    let family = match dst {
        IpAddr::V4(_) => libc::AF_INET,
        IpAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = check(unsafe {
        libc::socket(
            family,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::IPPROTO_UDP,
        )
    })?;
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // Raw sockets take port 0 (for IPv6, a non-zero port must equal the protocol).
    let (a, len) = sockaddr(SocketAddr::new(src, 0));
    // SAFETY: `a` is a valid sockaddr of `len` bytes.
    check(unsafe { libc::bind(fd.as_raw_fd(), (&raw const a).cast(), len) })?;
    let (a, len) = sockaddr(SocketAddr::new(dst, 0));
    // SAFETY: as above.
    check(unsafe { libc::connect(fd.as_raw_fd(), (&raw const a).cast(), len) })?;
    // This socket would also get a copy of every UDP datagram arriving at the
    // host; it never reads, so keep that queue as small as the kernel allows.
    let _ = set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 0);
    Ok(fd)
}

/// A UDP socket bound to `addr` with SO_REUSEPORT set before the bind, so that
/// several receivers share the port.
pub fn udp_bind_reuse_port(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = check(unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    let (a, len) = sockaddr(addr);
    // SAFETY: `a` is a valid sockaddr of `len` bytes.
    check(unsafe { libc::bind(fd.as_raw_fd(), (&raw const a).cast(), len) })?;
    Ok(std::net::UdpSocket::from(fd))
}

/// A packet socket that sends whole Ethernet frames out of `iface`, past the
/// queueing discipline (`PACKET_QDISC_BYPASS`). It is bound with protocol 0, so
/// it receives nothing. Needs CAP_NET_RAW.
pub fn packet_socket(iface: &str) -> io::Result<OwnedFd> {
    let name = std::ffi::CString::new(iface)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"))?;
    // SAFETY: name is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd =
        check(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as libc::c_ushort;
    sll.sll_ifindex = index as libc::c_int;
    // SAFETY: sll is a valid sockaddr_ll of the size passed.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&raw const sll).cast(),
            mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    set_int(
        fd.as_raw_fd(),
        libc::SOL_PACKET,
        libc::PACKET_QDISC_BYPASS,
        1,
    )?;
    Ok(fd)
}

/// `setsockopt` with an `int` value.
pub fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: i32) -> io::Result<()> {
    // SAFETY: the option value is a live c_int of the size passed.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&raw const value).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// `getsockopt` with an `int` value.
pub fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut value: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value and len are live and sized as the kernel expects.
    check(unsafe { libc::getsockopt(fd, level, name, (&raw mut value).cast(), &raw mut len) })?;
    Ok(value)
}

/// Sets a socket buffer size (`SO_SNDBUF`/`SO_RCVBUF`), above the system limit
/// if privileged (`…FORCE`), and returns what the kernel granted.
pub fn set_buffer(fd: RawFd, receive: bool, bytes: usize) -> io::Result<usize> {
    let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
    let (force, plain) = if receive {
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF)
    } else {
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)
    };
    if set_int(fd, libc::SOL_SOCKET, force, bytes).is_err() {
        set_int(fd, libc::SOL_SOCKET, plain, bytes)?;
    }
    Ok(get_int(fd, libc::SOL_SOCKET, plain)? as usize)
}

/// `sendmmsg` on a connected socket: returns how many of `msgs` were sent.
/// Retries on EINTR.
pub fn sendmmsg(fd: RawFd, msgs: &mut [libc::mmsghdr]) -> io::Result<usize> {
    loop {
        // SAFETY: every mmsghdr in `msgs` points at live iovecs and buffers
        // (the caller keeps them alive and unmoved for the call).
        let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), msgs.len() as libc::c_uint, 0) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `recvmmsg` with `MSG_WAITFORONE` (on a blocking socket: block for the first
/// datagram, up to the socket's receive timeout, then take what is queued; on
/// a non-blocking one: take what is queued) and `MSG_TRUNC` (each `msg_len` is
/// the datagram's real length even if the buffer was shorter). Returns `Ok(0)`
/// on timeout or an empty queue; retries on EINTR.
pub fn recvmmsg(fd: RawFd, msgs: &mut [libc::mmsghdr]) -> io::Result<usize> {
    loop {
        // SAFETY: every mmsghdr in `msgs` points at live, writable iovecs,
        // buffers and control buffers of the lengths it states.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                libc::MSG_WAITFORONE | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => return Ok(0),
            _ => return Err(e),
        }
    }
}

/// The `SO_RXQ_OVFL` drop counter carried in a received message's control
/// data, if there is one.
pub fn rxq_ovfl(msg: &libc::msghdr) -> Option<u32> {
    // SAFETY: msg's control buffer was filled by recvmmsg and msg_controllen
    // says how much of it is valid; the CMSG_* macros stay inside it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_RXQ_OVFL {
                return Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// Control-buffer space for one `SO_RXQ_OVFL` message (a u32).
pub fn rxq_ovfl_space() -> usize {
    // SAFETY: CMSG_SPACE is pure arithmetic.
    unsafe { libc::CMSG_SPACE(mem::size_of::<u32>() as u32) as usize }
}

/// Makes sleeps of this thread precise to about a microsecond instead of the
/// default 50 µs timer slack (the pacer sleeps for ~100 µs at a time).
pub fn tight_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}
