//! Where a translated packet goes: which of the worker's two sockets, and the
//! Ethernet addresses to put in front of it.
//!
//! A small direct-mapped cache per worker, keyed by the packet's destination,
//! holds the answer: the kernel's route (`RTM_GETROUTE`: output interface and
//! next hop) and the next hop's link-layer address from the neighbour table
//! (`RTM_GETNEIGH`). Entries are refreshed every [`REFRESH_NS`], so a changed
//! route or MAC address is followed within a second. When the next hop is not
//! resolved, or the route leaves through an interface sixgate has no socket on,
//! the answer is [`Hop::Kernel`]: the packet goes through the kernel's stack,
//! which resolves the next hop (ARP, Neighbour Discovery) on the way, and an
//! unresolved entry is asked again after [`RETRY_NS`].

use std::net::IpAddr;

use sixgate_core::packet::IpHeader;

use crate::netlink::{Neighbour, Netlink};

/// How long a resolved entry is trusted.
pub const REFRESH_NS: u64 = 1_000_000_000;
/// How long an unresolved one waits before the kernel is asked again.
pub const RETRY_NS: u64 = 10_000_000;
/// Cache slots (a power of two).
const SLOTS: usize = 1024;

/// One of the worker's interfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Iface {
    /// Interface index.
    pub ifindex: u32,
    /// Its MAC address (the source of what sixgate sends there).
    pub mac: [u8; 6],
}

/// Where a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Out of the socket on interface `side` (0: IPv6 side, 1: IPv4 side), to
    /// `dst` from `src`.
    Xsk {
        /// Index into the worker's interfaces.
        side: usize,
        /// Next hop's MAC.
        dst: [u8; 6],
        /// Our MAC on that interface.
        src: [u8; 6],
    },
    /// Through the kernel's stack.
    Kernel,
}

#[derive(Clone, Copy)]
struct Entry {
    /// Destination, IPv4 as an IPv4-mapped address; 0 = empty slot.
    key: u128,
    until_ns: u64,
    hop: Hop,
}

/// A worker's next-hop cache.
pub struct NextHops {
    nl: Netlink,
    ifaces: [Iface; 2],
    slots: Box<[Entry]>,
    /// Netlink questions asked (cache misses and refreshes).
    pub lookups: u64,
}

impl NextHops {
    /// A cache for a worker with these two interfaces (IPv6 side first).
    pub fn new(ifaces: [Iface; 2]) -> std::io::Result<NextHops> {
        Ok(NextHops {
            nl: Netlink::open()?,
            ifaces,
            slots: vec![
                Entry {
                    key: 0,
                    until_ns: 0,
                    hop: Hop::Kernel
                };
                SLOTS
            ]
            .into_boxed_slice(),
            lookups: 0,
        })
    }

    /// The hop for an IP packet's destination (`pkt` starts at its IP header).
    /// `None` for a packet too short to have one.
    pub fn for_packet(&mut self, pkt: &[u8], now_ns: u64) -> Option<Hop> {
        let dst = IpHeader::of(pkt)?.dst();
        Some(self.hop(dst, now_ns))
    }

    /// The hop for `dst`.
    pub fn hop(&mut self, dst: IpAddr, now_ns: u64) -> Hop {
        let key = match dst {
            IpAddr::V4(a) => u128::from(a.to_ipv6_mapped()),
            IpAddr::V6(a) => u128::from(a),
        };
        let slot = slot_of(key);
        let e = &self.slots[slot];
        if e.key == key && now_ns < e.until_ns {
            return e.hop;
        }
        let (hop, ttl) = self.resolve(dst);
        self.slots[slot] = Entry {
            key,
            until_ns: now_ns + ttl,
            hop,
        };
        hop
    }

    /// Ask the kernel: route, then neighbour.
    fn resolve(&mut self, dst: IpAddr) -> (Hop, u64) {
        self.lookups += 1;
        let route = match self.nl.route(dst) {
            Ok(Some(r)) => r,
            _ => return (Hop::Kernel, REFRESH_NS),
        };
        let Some(side) = self.ifaces.iter().position(|i| i.ifindex == route.oif) else {
            return (Hop::Kernel, REFRESH_NS);
        };
        match self.nl.neighbour(route.next_hop, route.oif) {
            Ok(Neighbour::Known(mac)) => (
                Hop::Xsk {
                    side,
                    dst: mac,
                    src: self.ifaces[side].mac,
                },
                REFRESH_NS,
            ),
            _ => (Hop::Kernel, RETRY_NS),
        }
    }
}

/// Fibonacci hashing of the address's two halves onto the slots.
fn slot_of(key: u128) -> usize {
    let x = (key as u64) ^ ((key >> 64) as u64);
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOTS.trailing_zeros())) as usize
}

/// `ioctl` `req` on interface `name`, returning the filled request.
fn if_ioctl(name: &str, req: libc::c_ulong) -> std::io::Result<libc::ifreq> {
    // SAFETY: plain socket(2), closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: zeroed is a valid ifreq.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes().take(15)) {
        *d = s as libc::c_char;
    }
    // SAFETY: the interface ioctls fill the ifreq we pass.
    let r = unsafe { libc::ioctl(fd, req as _, &mut ifr) };
    let err = std::io::Error::last_os_error();
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
    if r < 0 {
        return Err(err);
    }
    Ok(ifr)
}

/// The MAC address of interface `name` (`SIOCGIFHWADDR`).
pub fn mac_of(name: &str) -> std::io::Result<[u8; 6]> {
    let ifr = if_ioctl(name, libc::SIOCGIFHWADDR as libc::c_ulong)?;
    // SAFETY: after SIOCGIFHWADDR the union holds ifru_hwaddr.
    let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
    Ok(std::array::from_fn(|i| sa.sa_data[i] as u8))
}

/// The MTU of interface `name` (`SIOCGIFMTU`).
pub fn mtu_of(name: &str) -> std::io::Result<u32> {
    let ifr = if_ioctl(name, libc::SIOCGIFMTU as libc::c_ulong)?;
    // SAFETY: after SIOCGIFMTU the union holds ifru_mtu.
    Ok(unsafe { ifr.ifr_ifru.ifru_mtu } as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn slots_spread_and_stay_in_range() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..4096u32 {
            let k = u128::from(Ipv4Addr::from(0xc612_0000 | i).to_ipv6_mapped());
            let s = slot_of(k);
            assert!(s < SLOTS);
            seen.insert(s);
        }
        assert!(seen.len() > SLOTS / 2, "{}", seen.len());
    }

    #[test]
    fn loopback_mac_is_zero_and_mtu_known() {
        assert_eq!(mac_of("lo").unwrap(), [0; 6]);
        assert!(mtu_of("lo").unwrap() >= 1280);
        assert!(mtu_of("no-such-if0").is_err());
    }
}
