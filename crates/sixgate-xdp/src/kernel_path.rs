//! The slow path: a translated packet handed to the kernel's own stack, which
//! routes it, resolves its next hop (ARP, Neighbour Discovery) and sends it.
//! Used when the worker's next-hop cache has no link-layer address yet, or the
//! route leaves through an interface sixgate has no socket on. Raw sockets with
//! `IPPROTO_RAW` take the IP header as written (`IP_HDRINCL`, and for IPv6
//! `IPV6_HDRINCL`, implied by the protocol), so the packet leaves unchanged.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// One raw socket per family.
pub struct KernelPath {
    v4: OwnedFd,
    v6: OwnedFd,
}

fn raw(family: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2).
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            libc::IPPROTO_RAW,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl KernelPath {
    /// Open both sockets (needs CAP_NET_RAW; done before any privilege drop).
    pub fn open() -> io::Result<KernelPath> {
        Ok(KernelPath {
            v4: raw(libc::AF_INET)?,
            v6: raw(libc::AF_INET6)?,
        })
    }

    /// Send `pkt` (an IP packet, header included) into the stack.
    pub fn send(&self, pkt: &[u8]) -> io::Result<()> {
        let r = match pkt.first().map(|b| b >> 4) {
            Some(4) if pkt.len() >= 20 => {
                let dst = Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]);
                // SAFETY: zeroed is a valid sockaddr_in.
                let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                sa.sin_family = libc::AF_INET as libc::sa_family_t;
                sa.sin_addr.s_addr = u32::from(dst).to_be();
                // SAFETY: pkt and sa are valid for the lengths passed.
                unsafe {
                    libc::sendto(
                        self.v4.as_raw_fd(),
                        pkt.as_ptr().cast(),
                        pkt.len(),
                        0,
                        (&sa as *const libc::sockaddr_in).cast(),
                        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                    )
                }
            }
            Some(6) if pkt.len() >= 40 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(&pkt[24..40]);
                let dst = Ipv6Addr::from(a);
                // SAFETY: zeroed is a valid sockaddr_in6.
                let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sa.sin6_addr.s6_addr = dst.octets();
                // SAFETY: pkt and sa are valid for the lengths passed.
                unsafe {
                    libc::sendto(
                        self.v6.as_raw_fd(),
                        pkt.as_ptr().cast(),
                        pkt.len(),
                        0,
                        (&sa as *const libc::sockaddr_in6).cast(),
                        std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                    )
                }
            }
            _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
