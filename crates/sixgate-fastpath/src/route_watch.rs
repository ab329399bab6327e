//! The routing generation of bpf/route_cache.h: the program keeps the
//! route check's "yes, into the slow path's device" per flow and CPU, for
//! one generation of the kernel's routing; this thread starts a new
//! generation whenever the kernel announces something that can change such
//! an answer, and once a second for what it does not announce (a PMTU
//! exception on the device's route). The window in which a packet can still
//! follow the old answer is the time from the kernel's change to this
//! thread's map write: the rtnetlink message's delivery and one system call.
//!
//! What can change an answer: a route (`ip route`), a nexthop object, a
//! policy rule (`ip rule`), an address (a pool6 address becoming the host's
//! own), a link (up, down, MTU, moved), and the forwarding sysctls (netconf).
//! If the socket overflows (`ENOBUFS`, messages lost), that is a change too.

use aya::maps::{Array, MapData};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long an answer may stand without any rtnetlink message.
pub const REFRESH: Duration = Duration::from_secs(1);

/// The rtnetlink groups whose messages start a new generation.
const GROUPS: [u32; 10] = [
    libc::RTNLGRP_LINK,
    libc::RTNLGRP_IPV4_IFADDR,
    libc::RTNLGRP_IPV6_IFADDR,
    libc::RTNLGRP_IPV4_ROUTE,
    libc::RTNLGRP_IPV6_ROUTE,
    libc::RTNLGRP_NEXTHOP,
    libc::RTNLGRP_IPV4_RULE,
    libc::RTNLGRP_IPV6_RULE,
    libc::RTNLGRP_IPV4_NETCONF,
    libc::RTNLGRP_IPV6_NETCONF,
];

/// The thread; dropping it stops the thread and leaves the generation at 0
/// (every packet asks the FIB).
pub struct RouteWatch {
    wake: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl RouteWatch {
    /// Subscribe in the caller's network namespace (the one whose FIB the
    /// program asks), start the first generation and the thread.
    pub fn start(mut generation: Array<MapData, u64>) -> Result<RouteWatch, String> {
        let sock = subscribe().map_err(|e| format!("rtnetlink: {e}"))?;
        // SAFETY: plain eventfd(2).
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(format!("eventfd: {}", io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor we own.
        let wake = unsafe { OwnedFd::from_raw_fd(raw) };
        let stop = wake.try_clone().map_err(|e| format!("eventfd: {e}"))?;
        generation
            .set(0, monotonic_ns(), 0)
            .map_err(|e| format!("route_gen map: {e}"))?;
        let thread = std::thread::Builder::new()
            .name("sixgate-routes".to_owned())
            .spawn(move || watch(&sock, &stop, &mut generation))
            .map_err(|e| format!("cannot start the route watcher: {e}"))?;
        Ok(RouteWatch {
            wake,
            thread: Some(thread),
        })
    }
}

impl Drop for RouteWatch {
    fn drop(&mut self) {
        let one = 1u64;
        // SAFETY: an 8-byte write to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: a new generation after every burst of messages and every
/// [`REFRESH`]; generation 0 when stopped, or when a map write fails (the
/// program then asks the FIB for every packet rather than trust old answers;
/// should that write fail too, the generation ages out in the program).
fn watch(sock: &OwnedFd, stop: &OwnedFd, generation: &mut Array<MapData, u64>) {
    let mut now = monotonic_ns();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, REFRESH.as_millis() as libc::c_int) };
        if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
        if fds[1].revents != 0 {
            break;
        }
        if fds[0].revents != 0 {
            drain(sock, &mut buf);
        }
        // A timeout, messages or an overflow: a new generation each time.
        now = monotonic_ns().max(now + 1);
        if generation.set(0, now, 0).is_err() {
            break;
        }
    }
    let _ = generation.set(0, 0, 0);
}

/// A new generation's number: CLOCK_MONOTONIC, which the program reads
/// (`bpf_ktime_get_coarse_ns`) to age out a generation the thread stopped
/// renewing (bpf/route_cache.h).
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// Read every queued message (their content does not matter: each is a
/// change); `ENOBUFS` (some were lost) ends the burst like the last one.
fn drain(sock: &OwnedFd, buf: &mut [u8]) {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let r = unsafe {
            libc::recv(
                sock.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if r <= 0 {
            let e = io::Error::last_os_error();
            if r < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
    }
}

/// An rtnetlink socket in [`GROUPS`].
fn subscribe() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2).
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: a zeroed sockaddr_nl is valid; bind(2) with its size.
    let r = unsafe {
        let mut sa: libc::sockaddr_nl = std::mem::zeroed();
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    for group in GROUPS {
        // SAFETY: an int option.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_NETLINK,
                libc::NETLINK_ADD_MEMBERSHIP,
                (&group as *const u32).cast(),
                std::mem::size_of::<u32>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(fd)
}
