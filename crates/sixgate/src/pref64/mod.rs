//! `[pref64]`: the gateway advertises its NAT64 prefix in Router Advertisements
//! (RFC 8781) on one link. The encoding is pure ([`option`], [`advertisement`]);
//! this module is the sender: a thread with one raw ICMPv6 socket that multicasts
//! an RA to all nodes at start-up and then periodically (RFC 4861 §6.2.4), and
//! earlier when a Router Solicitation arrives (§6.2.6).

pub mod advertisement;
pub mod option;

use std::io;
use std::mem::size_of;
use std::net::Ipv6Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use sixgate_config::Pref64Settings;

/// RFC 4291 §2.7.1: all-nodes, where RAs go.
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// RFC 4291 §2.7.1: all-routers, where Router Solicitations go.
const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
/// RFC 4861 §10: MAX_INITIAL_RTR_ADVERT_INTERVAL and MAX_INITIAL_RTR_ADVERTISEMENTS.
const MAX_INITIAL_INTERVAL: Duration = Duration::from_secs(16);
const MAX_INITIAL_ADVERTISEMENTS: u64 = 3;
/// RFC 4861 §10: MIN_DELAY_BETWEEN_RAS.
const MIN_DELAY_BETWEEN_RAS: Duration = Duration::from_secs(3);
/// How often the thread looks at its stop flag while waiting for solicitations.
const POLL: Duration = Duration::from_millis(200);

/// What the sender did, for the exit summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pref64Stats {
    /// Router Advertisements sent.
    pub sent: u64,
    /// Router Solicitations received (and answered, within the rate limit).
    pub solicitations: u64,
    /// Sends that failed (logged).
    pub send_errors: u64,
}

impl Pref64Stats {
    /// One line for the exit summary.
    pub fn summary(&self) -> String {
        format!(
            "{} Router Advertisements sent, {} solicitations answered, {} send errors",
            self.sent, self.solicitations, self.send_errors
        )
    }
}

/// The running sender; [`Pref64Thread::stop`] ends it.
pub struct Pref64Thread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Pref64Stats>,
}

impl Pref64Thread {
    /// Encode the RA, open the socket on `[pref64] interface` (it must exist) and
    /// start sending. Errors name the interface or the encoding problem.
    pub fn spawn(p: &Pref64Settings) -> Result<Pref64Thread, String> {
        let pref64 = option::pref64_option(p.prefix.addr(), p.prefix.len(), p.lifetime)
            .map_err(|e| format!("[pref64]: {e}"))?;
        let ra = advertisement::router_advertisement(p.router_lifetime, &pref64);
        let sock = RaSocket::open(&p.interface)
            .map_err(|e| format!("[pref64] interface {:?}: {e}", p.interface))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let interval = Duration::from_secs(u64::from(p.interval));
        let handle = std::thread::Builder::new()
            .name("pref64".into())
            .spawn(move || advertise(&sock, &ra, interval, &flag))
            .map_err(|e| format!("[pref64]: thread: {e}"))?;
        Ok(Pref64Thread { stop, handle })
    }

    /// Stop the thread and return its counters.
    pub fn stop(self) -> Pref64Stats {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// The sender's loop: an RA now, then at the next periodic time or, after a
/// solicitation, as soon as the rate limit allows.
fn advertise(sock: &RaSocket, ra: &[u8], interval: Duration, stop: &AtomicBool) -> Pref64Stats {
    let mut stats = Pref64Stats::default();
    let mut jitter = Jitter::seeded();
    let mut next = Instant::now();
    let mut last: Option<Instant> = None;
    let mut buf = [0u8; 1500];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next {
            match sock.send_all_nodes(ra) {
                Ok(()) => stats.sent += 1,
                Err(e) => {
                    stats.send_errors += 1;
                    tracing::warn!("pref64: sending a Router Advertisement: {e}");
                }
            }
            last = Some(now);
            next = now + next_interval(interval, stats.sent + stats.send_errors, &mut jitter);
        }
        let wait = next.saturating_duration_since(Instant::now()).min(POLL);
        match sock.recv(&mut buf, wait) {
            Ok(n) if advertisement::is_router_solicitation(&buf[..n]) => {
                stats.solicitations += 1;
                // §6.2.6: answer with the multicast RA, no sooner than
                // MIN_DELAY_BETWEEN_RAS after the last one.
                let soonest = last.map_or(Instant::now(), |l| l + MIN_DELAY_BETWEEN_RAS);
                next = next.min(soonest.max(Instant::now()));
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::warn!("pref64: receiving: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
    stats
}

/// RFC 4861 §6.2.4: a random time between 0.75 and 1 × the interval
/// (MinRtrAdvInterval's default), and at most 16 s for the first three.
fn next_interval(interval: Duration, sent: u64, jitter: &mut Jitter) -> Duration {
    let t = interval.mul_f64(0.75 + 0.25 * jitter.next_unit());
    if sent < MAX_INITIAL_ADVERTISEMENTS {
        t.min(MAX_INITIAL_INTERVAL)
    } else {
        t
    }
}

/// Xorshift, enough to keep routers on a link from advertising in lockstep.
struct Jitter(u64);

impl Jitter {
    fn seeded() -> Jitter {
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Jitter(t | 1)
    }

    /// In [0, 1).
    fn next_unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A raw ICMPv6 socket that sends to all-nodes on one interface from its
/// link-local address with hop limit 255 (RFC 4861 §6.1.2), and receives only
/// Router Solicitations sent to all-routers there.
struct RaSocket {
    fd: OwnedFd,
    ifindex: u32,
}

impl RaSocket {
    fn open(interface: &str) -> io::Result<RaSocket> {
        let name = std::ffi::CString::new(interface)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
        // SAFETY: a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such interface"));
        }
        // SAFETY: plain socket(2); the descriptor is owned at once.
        let raw = unsafe {
            libc::socket(
                libc::AF_INET6,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::IPPROTO_ICMPV6,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let s = RaSocket { fd, ifindex };
        // Bound to the link: solicitations from other links are not ours.
        s.setsockopt(
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            name.as_bytes_with_nul(),
        )?;
        let hops: libc::c_int = 255;
        s.setsockopt(libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, &hops)?;
        s.setsockopt(libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, &hops)?;
        let index = ifindex as libc::c_int;
        s.setsockopt(libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_IF, &index)?;
        let no: libc::c_int = 0;
        s.setsockopt(libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP, &no)?;
        let group = libc::ipv6_mreq {
            ipv6mr_multiaddr: libc::in6_addr {
                s6_addr: ALL_ROUTERS.octets(),
            },
            ipv6mr_interface: ifindex,
        };
        s.setsockopt(libc::IPPROTO_IPV6, libc::IPV6_ADD_MEMBERSHIP, &group)?;
        // RFC 3542 §3.2 ICMP6_FILTER (Linux: a set bit blocks): pass only RS.
        let mut filter = [u32::MAX; 8];
        let rs = usize::from(advertisement::ROUTER_SOLICITATION);
        filter[rs >> 5] &= !(1 << (rs & 31));
        const ICMP6_FILTER: libc::c_int = 1;
        s.setsockopt(libc::IPPROTO_ICMPV6, ICMP6_FILTER, &filter)?;
        Ok(s)
    }

    fn setsockopt<T: ?Sized>(&self, level: i32, name: i32, value: &T) -> io::Result<()> {
        // SAFETY: value points to size_of_val(value) readable bytes.
        let r = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                (value as *const T).cast(),
                std::mem::size_of_val(value) as libc::socklen_t,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    fn send_all_nodes(&self, ra: &[u8]) -> io::Result<()> {
        // SAFETY: zeroed sockaddr_in6 is valid; fields set below.
        let mut to: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        to.sin6_family = libc::AF_INET6 as libc::sa_family_t;
        to.sin6_addr.s6_addr = ALL_NODES.octets();
        to.sin6_scope_id = self.ifindex;
        // SAFETY: ra and to are valid for the lengths given.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                ra.as_ptr().cast(),
                ra.len(),
                0,
                (&to as *const libc::sockaddr_in6).cast(),
                size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// One ICMPv6 message (raw IPv6 sockets deliver no IP header), waiting at
    /// most `wait`.
    fn recv(&self, buf: &mut [u8], wait: Duration) -> io::Result<usize> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = wait.as_millis().clamp(1, 1000) as libc::c_int;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        if r == 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
        // SAFETY: buf is valid for its length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4861_s6_2_4_intervals_randomized_and_first_three_short() {
        let mut j = Jitter(12345);
        let i = Duration::from_secs(600);
        for sent in 0..MAX_INITIAL_ADVERTISEMENTS {
            assert!(next_interval(i, sent, &mut j) <= MAX_INITIAL_INTERVAL);
        }
        for _ in 0..100 {
            let t = next_interval(i, MAX_INITIAL_ADVERTISEMENTS, &mut j);
            assert!(t >= Duration::from_secs(450) && t <= i, "{t:?}");
        }
        let short = Duration::from_secs(4);
        let t = next_interval(short, 0, &mut j);
        assert!(t >= Duration::from_secs(3) && t <= short);
    }
}
