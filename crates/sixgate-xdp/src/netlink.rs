//! Two questions to the kernel over rtnetlink (RFC 3549; Linux `rtnetlink(7)`),
//! asked only when a worker's next-hop cache misses or an entry is due for
//! refreshing, never per packet:
//!
//! - `RTM_GETROUTE` for a destination: the output interface and the gateway
//!   (the next hop), as `ip route get` shows them;
//! - `RTM_GETNEIGH` for a next hop on an interface: its link-layer address and
//!   state (Linux 4.19+ answers a single-entry get), as `ip neigh get` shows.

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const RTM_NEWNEIGH: u16 = 28;
const RTM_GETNEIGH: u16 = 30;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;

const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;

/// `rtm_type` of a route that forwards (`RTN_UNICAST`).
const RTN_UNICAST: u8 = 1;

/// Neighbour states (`NUD_*`) whose link-layer address can be used: reachable,
/// stale, delay, probe, permanent, noarp.
const NUD_USABLE: u16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80;

/// The kernel's route to a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Output interface.
    pub oif: u32,
    /// The next hop: the gateway, or the destination itself on a link.
    pub next_hop: IpAddr,
}

/// What the kernel knows of a next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Neighbour {
    /// Usable link-layer address.
    Known([u8; 6]),
    /// No entry, or one still being (or failed to be) resolved.
    Unresolved,
}

/// An rtnetlink socket, one per worker.
pub struct Netlink {
    fd: OwnedFd,
    seq: u32,
    buf: Box<[u8]>,
}

impl Netlink {
    /// Open the socket.
    pub fn open() -> io::Result<Netlink> {
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
        // A reply that never comes (it always does) must not hang a worker.
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 200_000,
        };
        // SAFETY: tv is a valid timeval.
        unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        Ok(Netlink {
            fd,
            seq: 0,
            buf: vec![0; 8192].into_boxed_slice(),
        })
    }

    /// `ip route get DST`: `None` when there is no unicast route (unreachable,
    /// local, blackhole...).
    pub fn route(&mut self, dst: IpAddr) -> io::Result<Option<Route>> {
        let (family, addr, bits) = family_of(dst);
        // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope,
        // type, flags (u32).
        let mut body = [0u8; 12];
        body[0] = family;
        body[1] = bits;
        let Some(reply) = self.ask(RTM_GETROUTE, &body, RTA_DST, &addr[..usize::from(bits / 8)])?
        else {
            return Ok(None);
        };
        let (ty, body, attrs) = reply;
        if ty != RTM_NEWROUTE || body.len() < 12 || body[7] != RTN_UNICAST {
            return Ok(None);
        }
        let mut oif = None;
        let mut gw = None;
        for (t, v) in Attrs(attrs) {
            match t {
                RTA_OIF if v.len() == 4 => oif = Some(u32::from_ne_bytes([v[0], v[1], v[2], v[3]])),
                RTA_GATEWAY => gw = ip_from(v),
                _ => {}
            }
        }
        Ok(oif.map(|oif| Route {
            oif,
            next_hop: gw.unwrap_or(dst),
        }))
    }

    /// `ip neigh get ADDR dev IFINDEX`.
    pub fn neighbour(&mut self, addr: IpAddr, ifindex: u32) -> io::Result<Neighbour> {
        let (family, a, bits) = family_of(addr);
        // struct ndmsg: family, pad1, pad2 (u16), ifindex (i32), state (u16),
        // flags, type.
        let mut body = [0u8; 12];
        body[0] = family;
        body[4..8].copy_from_slice(&(ifindex as i32).to_ne_bytes());
        let Some((ty, body, attrs)) =
            self.ask(RTM_GETNEIGH, &body, NDA_DST, &a[..usize::from(bits / 8)])?
        else {
            return Ok(Neighbour::Unresolved);
        };
        if ty != RTM_NEWNEIGH || body.len() < 12 {
            return Ok(Neighbour::Unresolved);
        }
        let state = u16::from_ne_bytes([body[8], body[9]]);
        if state & NUD_USABLE == 0 {
            return Ok(Neighbour::Unresolved);
        }
        for (t, v) in Attrs(attrs) {
            if t == NDA_LLADDR && v.len() == 6 {
                return Ok(Neighbour::Known([v[0], v[1], v[2], v[3], v[4], v[5]]));
            }
        }
        Ok(Neighbour::Unresolved)
    }

    /// Send one request (`body` then one attribute) and read its answer: the
    /// reply's type, fixed body and attributes, or `None` for an error reply
    /// (no such route or neighbour).
    #[allow(clippy::type_complexity)]
    fn ask(
        &mut self,
        ty: u16,
        body: &[u8],
        attr: u16,
        value: &[u8],
    ) -> io::Result<Option<(u16, &[u8], &[u8])>> {
        self.seq = self.seq.wrapping_add(1);
        let attr_len = 4 + value.len();
        let len = 16 + body.len() + align4(attr_len);
        let mut msg = [0u8; 64];
        msg[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
        msg[4..6].copy_from_slice(&ty.to_ne_bytes());
        msg[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        msg[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        msg[16..16 + body.len()].copy_from_slice(body);
        let a = 16 + body.len();
        msg[a..a + 2].copy_from_slice(&(attr_len as u16).to_ne_bytes());
        msg[a + 2..a + 4].copy_from_slice(&attr.to_ne_bytes());
        msg[a + 4..a + 4 + value.len()].copy_from_slice(value);
        // SAFETY: msg[..len] is initialised; the kernel is the default peer.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), msg.as_ptr().cast(), len, 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            // SAFETY: buf is writable for its length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = n as usize;
            if n < 16 {
                return Err(io::Error::other("short netlink reply"));
            }
            let mlen =
                (u32::from_ne_bytes(self.buf[0..4].try_into().expect("4 bytes")) as usize).min(n);
            let rty = u16::from_ne_bytes([self.buf[4], self.buf[5]]);
            let seq = u32::from_ne_bytes(self.buf[8..12].try_into().expect("4 bytes"));
            if seq != self.seq {
                continue; // an answer to an earlier, timed-out request
            }
            if rty == NLMSG_ERROR {
                return Ok(None);
            }
            let body_end = (16 + body.len()).min(mlen);
            return Ok(Some((
                rty,
                &self.buf[16..body_end],
                &self.buf[align4(body_end).min(mlen)..mlen],
            )));
        }
    }
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn family_of(a: IpAddr) -> (u8, [u8; 16], u8) {
    match a {
        IpAddr::V4(v) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v.octets());
            (libc::AF_INET as u8, b, 32)
        }
        IpAddr::V6(v) => (libc::AF_INET6 as u8, v.octets(), 128),
    }
}

fn ip_from(v: &[u8]) -> Option<IpAddr> {
    match v.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(v).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(v).ok()?)),
        _ => None,
    }
}

/// Route attributes (`struct rtattr`: length, type, value, padded to 4).
struct Attrs<'a>(&'a [u8]);

impl<'a> Iterator for Attrs<'a> {
    type Item = (u16, &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([self.0[0], self.0[1]]));
        let ty = u16::from_ne_bytes([self.0[2], self.0[3]]) & 0x3fff;
        if len < 4 || len > self.0.len() {
            return None;
        }
        let v = &self.0[4..len];
        self.0 = &self.0[align4(len).min(self.0.len())..];
        Some((ty, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_walked_with_padding() {
        // RTA_OIF = 7, then RTA_GATEWAY 192.0.2.1, then a 5-byte value padded to 8.
        let mut b = Vec::new();
        b.extend_from_slice(&8u16.to_ne_bytes());
        b.extend_from_slice(&RTA_OIF.to_ne_bytes());
        b.extend_from_slice(&7u32.to_ne_bytes());
        b.extend_from_slice(&8u16.to_ne_bytes());
        b.extend_from_slice(&RTA_GATEWAY.to_ne_bytes());
        b.extend_from_slice(&[192, 0, 2, 1]);
        b.extend_from_slice(&5u16.to_ne_bytes());
        b.extend_from_slice(&99u16.to_ne_bytes());
        b.extend_from_slice(&[1, 0, 0, 0]);
        let got: Vec<_> = Attrs(&b).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (RTA_OIF, &7u32.to_ne_bytes()[..]));
        assert_eq!(ip_from(got[1].1), Some("192.0.2.1".parse().unwrap()));
        assert_eq!(got[2], (99, &[1u8][..]));
        // A length past the end stops the walk instead of reading beyond it.
        let bad = [200u8, 0, 1, 0];
        assert_eq!(Attrs(&bad).count(), 0);
    }

    /// The loopback route answers in any network namespace.
    #[test]
    fn route_to_loopback() {
        let Ok(mut nl) = Netlink::open() else {
            println!("skipped: route_to_loopback: no netlink socket");
            return;
        };
        // 127.0.0.1 is a local route, not unicast: None.
        assert_eq!(nl.route("127.0.0.1".parse().unwrap()).unwrap(), None);
    }
}
