//! AF_XDP sockets over one UMEM (Linux `Documentation/networking/af_xdp.rst`),
//! written against the kernel ABI that `libc` declares.
//!
//! A worker owns one [`Umem`] and two [`Xsk`]s, one per interface, bound to the
//! same queue index. The first socket registers the UMEM; the second binds with
//! `XDP_SHARED_UMEM` and its own fill and completion rings (Linux 5.10+), so a
//! frame received on one interface is transmitted on the other as it is, with
//! no copy in user space. (Why not the `xdp` or `xdpilone` crates: sharing one
//! UMEM between two interfaces' sockets with per-socket fill rings, and placing
//! the translated packet anywhere in its frame, is this whole module, and the
//! ABI is small and stable.)
//!
//! Rings are single-producer single-consumer: the producer publishes with a
//! release store of its index, the consumer reads it with an acquire load, and
//! each side caches the other's index so that most operations touch no shared
//! cache line.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Size of one UMEM frame. A received packet starts after the kernel's
/// `XDP_PACKET_HEADROOM` (256 bytes), which leaves room for the Ethernet header
/// and the core's [`sixgate_core::HEADROOM`] in front of the IP header.
pub const FRAME_SIZE: u32 = 4096;

/// Memory registered with the kernel, cut into [`FRAME_SIZE`] frames.
pub struct Umem {
    area: NonNull<u8>,
    len: usize,
    frames: u32,
}

// SAFETY: the area is plain memory owned by this value; the worker that owns
// the Umem is the only user-space thread that touches it.
unsafe impl Send for Umem {}

impl Umem {
    /// Map `frames` frames of anonymous memory, populated up front.
    pub fn new(frames: u32) -> io::Result<Umem> {
        let len = frames as usize * FRAME_SIZE as usize;
        // SAFETY: a fresh anonymous mapping; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Umem {
            area: NonNull::new(p.cast()).expect("mmap returned non-null"),
            len,
            frames,
        })
    }

    /// Number of frames.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// The frame that UMEM address `addr` falls in, as `(frame base, slice)`.
    pub fn frame_mut(&mut self, addr: u64) -> (u64, &mut [u8]) {
        let base = addr & !u64::from(FRAME_SIZE - 1);
        let base = base.min(self.len as u64 - u64::from(FRAME_SIZE));
        // SAFETY: base + FRAME_SIZE <= len, and &mut self makes this the only
        // user-space reference into the area.
        let s = unsafe {
            std::slice::from_raw_parts_mut(
                self.area.as_ptr().add(base as usize),
                FRAME_SIZE as usize,
            )
        };
        (base, s)
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new(); the sockets using it are closed
        // first (they are dropped before the Umem by their owner).
        unsafe { libc::munmap(self.area.as_ptr().cast(), self.len) };
    }
}

/// One ring of a socket, as mapped from the kernel.
struct Ring<T> {
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut T,
    mask: u32,
    size: u32,
    /// Our copy of the index we own, published on submit/release.
    local: u32,
    /// The other side's index, as last read.
    cached: u32,
    map: *mut libc::c_void,
    map_len: usize,
}

// SAFETY: the mapping is owned by the ring, used by one thread at a time.
unsafe impl<T> Send for Ring<T> {}

impl<T: std::marker::Copy> Ring<T> {
    /// Map ring `pgoff` of `fd`, laid out as `off` says.
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, size: u32, pgoff: u64) -> io::Result<Self> {
        let map_len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        // SAFETY: mapping a ring of an AF_XDP socket whose size was set.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff as libc::off_t,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let at = |o: u64| unsafe { map.cast::<u8>().add(o as usize) };
        Ok(Ring {
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            desc: at(off.desc).cast(),
            mask: size - 1,
            size,
            local: 0,
            cached: 0,
            map,
            map_len,
        })
    }

    fn needs_wakeup(&self) -> bool {
        // SAFETY: flags points into the live mapping.
        unsafe { (*self.flags).load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0 }
    }

    // Producer side (fill, tx): `local` is the producer index.

    /// Free slots, reading the consumer index only when the cache says full.
    fn free(&mut self, want: u32) -> u32 {
        let mut free = self.size - self.local.wrapping_sub(self.cached);
        if free < want {
            // SAFETY: consumer points into the live mapping.
            self.cached = unsafe { (*self.consumer).load(Ordering::Acquire) };
            free = self.size - self.local.wrapping_sub(self.cached);
        }
        free
    }

    fn push(&mut self, v: T) {
        // SAFETY: the index is masked into the ring; the caller checked free().
        unsafe { self.desc.add((self.local & self.mask) as usize).write(v) };
        self.local = self.local.wrapping_add(1);
    }

    fn submit(&self) {
        // SAFETY: producer points into the live mapping.
        unsafe { (*self.producer).store(self.local, Ordering::Release) };
    }

    // Consumer side (rx, completion): `local` is the consumer index.

    /// Entries ready, reading the producer index only when the cache is empty.
    fn ready(&mut self) -> u32 {
        let mut n = self.cached.wrapping_sub(self.local);
        if n == 0 {
            // SAFETY: producer points into the live mapping.
            self.cached = unsafe { (*self.producer).load(Ordering::Acquire) };
            n = self.cached.wrapping_sub(self.local);
        }
        n
    }

    fn pop(&mut self) -> T {
        // SAFETY: masked index; the caller checked ready().
        let v = unsafe { self.desc.add((self.local & self.mask) as usize).read() };
        self.local = self.local.wrapping_add(1);
        v
    }

    fn release(&self) {
        // SAFETY: consumer points into the live mapping.
        unsafe { (*self.consumer).store(self.local, Ordering::Release) };
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping made in map().
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// How a socket ended up bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The driver writes into the UMEM directly.
    ZeroCopy,
    /// The kernel copies (veth, generic XDP).
    Copy,
}

/// One AF_XDP socket: its rx and tx rings and its UMEM fill and completion rings.
pub struct Xsk {
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    /// Descriptors pushed on tx but not yet announced with sendto.
    tx_pending: u32,
    fd: OwnedFd,
    /// Zero-copy or copy mode.
    pub mode: Mode,
}

/// Where and how to bind a socket.
#[derive(Clone, Copy, Debug)]
pub struct Bind {
    /// Interface index.
    pub ifindex: u32,
    /// Receive (and transmit) queue.
    pub queue: u32,
    /// Entries in each of the four rings (a power of two).
    pub ring_size: u32,
    /// Try zero-copy first.
    pub try_zero_copy: bool,
    /// Fail unless zero-copy.
    pub require_zero_copy: bool,
}

fn setsockopt<T>(fd: RawFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: v is a valid T of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Xsk {
    /// A socket on `b`: registering `umem` (`shared_with: None`), or sharing the
    /// UMEM of the socket `shared_with` (another interface, same worker).
    pub fn open(umem: &Umem, b: &Bind, shared_with: Option<&Xsk>) -> Result<Xsk, String> {
        let attempts: &[bool] = match (shared_with, b.try_zero_copy, b.require_zero_copy) {
            (Some(_), _, _) => &[false],
            (None, _, true) => &[true],
            (None, true, false) => &[true, false],
            (None, false, false) => &[false],
        };
        let mut last = String::new();
        for &zc in attempts {
            match Self::open_once(umem, b, shared_with, zc) {
                Ok(x) => return Ok(x),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn open_once(umem: &Umem, b: &Bind, shared: Option<&Xsk>, zc: bool) -> Result<Xsk, String> {
        let what = |step: &str, e: io::Error| format!("AF_XDP socket ({step}): {e}");
        // SAFETY: plain socket(2).
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EPERM) {
                "cannot open an AF_XDP socket: not permitted (needs root, or CAP_NET_RAW + \
                 CAP_NET_ADMIN + CAP_BPF)"
                    .to_owned()
            } else {
                what("socket", e)
            });
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if shared.is_none() {
            let reg = libc::xdp_umem_reg {
                addr: umem.area.as_ptr() as u64,
                len: umem.len as u64,
                chunk_size: FRAME_SIZE,
                headroom: 0,
                flags: 0,
                tx_metadata_len: 0,
            };
            setsockopt(raw, libc::XDP_UMEM_REG, &reg).map_err(|e| what("UMEM registration", e))?;
        }
        let size = b.ring_size;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            setsockopt(raw, opt, &size).map_err(|e| what("ring size", e))?;
        }
        // SAFETY: zeroed is a valid xdp_mmap_offsets; the kernel fills it.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: off has room for len bytes.
        let r = unsafe {
            libc::getsockopt(
                raw,
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&mut off as *mut libc::xdp_mmap_offsets).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(what("ring offsets", io::Error::last_os_error()));
        }
        let rx = Ring::map(raw, &off.rx, size, libc::XDP_PGOFF_RX_RING as u64)
            .map_err(|e| what("mapping the rx ring", e))?;
        let tx = Ring::map(raw, &off.tx, size, libc::XDP_PGOFF_TX_RING as u64)
            .map_err(|e| what("mapping the tx ring", e))?;
        let fill = Ring::map(raw, &off.fr, size, libc::XDP_UMEM_PGOFF_FILL_RING)
            .map_err(|e| what("mapping the fill ring", e))?;
        let comp = Ring::map(raw, &off.cr, size, libc::XDP_UMEM_PGOFF_COMPLETION_RING)
            .map_err(|e| what("mapping the completion ring", e))?;
        // Flags are the first socket's: a socket sharing a UMEM may set none.
        let (flags, shared_fd) = match shared {
            Some(s) => (libc::XDP_SHARED_UMEM, s.fd.as_raw_fd() as u32),
            None => (
                libc::XDP_USE_NEED_WAKEUP
                    | if zc {
                        libc::XDP_ZEROCOPY
                    } else {
                        libc::XDP_COPY
                    },
                0,
            ),
        };
        let sa = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: b.ifindex,
            sxdp_queue_id: b.queue,
            sxdp_shared_umem_fd: shared_fd,
        };
        // SAFETY: sa is a valid sockaddr_xdp of the length passed.
        let r = unsafe {
            libc::bind(
                raw,
                (&sa as *const libc::sockaddr_xdp).cast(),
                std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            let mode = if zc { "zero-copy" } else { "copy mode" };
            return Err(format!(
                "cannot bind an AF_XDP socket to queue {} of interface index {} ({mode}): {e}{}",
                b.queue,
                b.ifindex,
                if e.raw_os_error() == Some(libc::EINVAL) {
                    " (does the interface have that many queues?)"
                } else {
                    ""
                }
            ));
        }
        let mode = match shared {
            Some(s) => s.mode,
            None if zc => Mode::ZeroCopy,
            None => Mode::Copy,
        };
        Ok(Xsk {
            rx,
            tx,
            fill,
            comp,
            tx_pending: 0,
            fd,
            mode,
        })
    }

    /// The socket's descriptor (for the XSKMAP and `poll`).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Give the kernel up to `frames.len()` frames to receive into; returns how
    /// many it took (the fill ring may be full).
    pub fn fill(&mut self, free: &mut Vec<u64>, want: u32) -> u32 {
        let n = self.fill.free(want).min(want).min(free.len() as u32);
        for _ in 0..n {
            let a = free.pop().expect("counted above");
            self.fill.push(a);
        }
        if n > 0 {
            self.fill.submit();
        }
        n
    }

    /// True when the kernel asks for a wakeup to go on filling (zero-copy
    /// drivers); then a `poll` on the socket does it.
    pub fn fill_needs_wakeup(&self) -> bool {
        self.fill.needs_wakeup()
    }

    /// Received descriptors, at most `max`: `f(addr, len)` for each, then the
    /// slots are released.
    pub fn receive(&mut self, max: u32, mut f: impl FnMut(u64, u32)) -> u32 {
        let n = self.rx.ready().min(max);
        for _ in 0..n {
            let d = self.rx.pop();
            f(d.addr, d.len);
        }
        if n > 0 {
            self.rx.release();
        }
        n
    }

    /// Room for this many descriptors on the tx ring.
    pub fn tx_room(&mut self, want: u32) -> u32 {
        self.tx.free(want)
    }

    /// Queue one frame (`addr`: UMEM address of the first byte) for transmission.
    /// The caller checked [`Xsk::tx_room`].
    pub fn transmit(&mut self, addr: u64, len: u32) {
        self.tx.push(libc::xdp_desc {
            addr,
            len,
            options: 0,
        });
        self.tx_pending += 1;
    }

    /// Publish the queued descriptors and, if the kernel wants it (always in copy
    /// mode), kick it with one `sendto`. Errors other than "busy, try again" are
    /// returned.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.tx_pending == 0 {
            return Ok(());
        }
        self.tx.submit();
        self.tx_pending = 0;
        if self.mode == Mode::Copy || self.tx.needs_wakeup() {
            self.kick()?;
        }
        Ok(())
    }

    /// `sendto` with no data: the kernel transmits what the tx ring holds (in
    /// copy mode, a batch per call).
    pub fn kick(&self) -> io::Result<()> {
        // SAFETY: a zero-length send on our socket.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => Ok(()),
                _ => Err(e),
            };
        }
        Ok(())
    }

    /// True while transmitted frames have not all come back on the completion
    /// ring (in copy mode the kernel may need another kick).
    pub fn tx_outstanding(&mut self) -> bool {
        // SAFETY: consumer points into the live mapping.
        let consumed = unsafe { (*self.tx.consumer).load(Ordering::Acquire) };
        consumed != self.tx.local
    }

    /// The kernel's counters of this socket (`XDP_STATISTICS`): packets it
    /// dropped before sixgate saw them (rx ring full, fill ring empty) and
    /// descriptors it refused.
    pub fn statistics(&self) -> io::Result<libc::xdp_statistics> {
        // SAFETY: zeroed is a valid xdp_statistics; the kernel fills it.
        let mut st: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: st has room for len bytes.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&mut st as *mut libc::xdp_statistics).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }

    /// Frames whose transmission is complete, back onto `free`. The ring
    /// gives back the address transmitted (the frame's base plus where the
    /// packet started): the free list holds frame bases.
    pub fn complete(&mut self, free: &mut Vec<u64>) -> u32 {
        let n = self.comp.ready();
        for _ in 0..n {
            free.push(self.comp.pop() & !u64::from(FRAME_SIZE - 1));
        }
        if n > 0 {
            self.comp.release();
        }
        n
    }
}
