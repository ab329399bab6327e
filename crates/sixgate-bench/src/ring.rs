//! AF_PACKET rings shared with the kernel (packet(7), Documentation/networking/
//! packet_mmap): a `PACKET_TX_RING` (TPACKET_V2) with `PACKET_QDISC_BYPASS` for
//! sending, a `PACKET_RX_RING` (TPACKET_V3, whole blocks handed over at once) for
//! receiving. No copy through a socket buffer and one system call per batch:
//! the tester must be faster than what it measures.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{Ordering, fence};

/// Bytes per TX slot (a full-size frame and the slot header fit).
const TX_FRAME: usize = 2048;
/// TX slots.
const TX_FRAMES: usize = 2048;
/// RX ring: blocks of 1 MiB, retired to user space when full or after 1 ms.
const RX_BLOCK: usize = 1 << 20;
const RX_BLOCKS: usize = 64;
const RX_RETIRE_MS: u32 = 1;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setsockopt<T>(fd: &OwnedFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: value is a live T of the size passed.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

fn ifindex(iface: &str) -> io::Result<libc::c_int> {
    let name = std::ffi::CString::new(iface)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"))?;
    // SAFETY: name is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {iface} in this namespace"),
        ));
    }
    Ok(index as libc::c_int)
}

fn packet_socket(protocol: u16) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::c_int::from(protocol.to_be()),
        )
    })?;
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bind(fd: &OwnedFd, index: libc::c_int, protocol: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; all-zero is valid.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_ifindex = index;
    sll.sll_protocol = protocol.to_be();
    // SAFETY: sll is a valid sockaddr_ll of the size passed.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&raw const sll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A shared mapping, unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory shared with the kernel; each ring is used
// by one thread at a time (&mut self methods).
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(fd: &OwnedFd, len: usize) -> io::Result<Mapping> {
        // SAFETY: mapping a packet ring the kernel just set up for this fd.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        let p = if p == libc::MAP_FAILED {
            // MAP_LOCKED may exceed RLIMIT_MEMLOCK: try without.
            // SAFETY: as above.
            unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd.as_raw_fd(),
                    0,
                )
            }
        } else {
            p
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: NonNull::new(p.cast()).expect("mmap returned null"),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping what new() mapped, once.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Volatile access to a slot's status word, which the kernel writes too.
///
/// # Safety
/// `p` must point at a live, aligned u32 inside a ring mapping.
unsafe fn status(p: *const u32) -> u32 {
    // SAFETY: per the caller.
    let v = unsafe { p.read_volatile() };
    fence(Ordering::Acquire);
    v
}

/// # Safety
/// `p` must point at a live, aligned u32 inside a ring mapping.
unsafe fn set_status(p: *mut u32, v: u32) {
    fence(Ordering::Release);
    // SAFETY: per the caller.
    unsafe { p.write_volatile(v) };
}

/// The sending ring of one tester port.
pub struct TxRing {
    fd: OwnedFd,
    map: Mapping,
    next: usize,
    /// Slots filled since the last kick.
    pending: usize,
}

/// Where a TPACKET_V2 slot's frame starts: after the aligned header (the
/// kernel's `TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)`).
const TX_DATA: usize = (std::mem::size_of::<libc::tpacket2_hdr>() + 15) & !15;

impl TxRing {
    /// A TX ring on `iface` (in the calling thread's namespace), bypassing the
    /// queueing discipline. Bound with protocol 0: it receives nothing.
    pub fn open(iface: &str) -> io::Result<TxRing> {
        let index = ifindex(iface)?;
        let fd = packet_socket(0)?;
        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        setsockopt(&fd, libc::PACKET_VERSION, &version)?;
        setsockopt(&fd, libc::PACKET_QDISC_BYPASS, &1 as &libc::c_int)?;
        let req = libc::tpacket_req {
            tp_block_size: (TX_FRAME * 16) as u32,
            tp_block_nr: (TX_FRAMES / 16) as u32,
            tp_frame_size: TX_FRAME as u32,
            tp_frame_nr: TX_FRAMES as u32,
        };
        setsockopt(&fd, libc::PACKET_TX_RING, &req)?;
        let map = Mapping::new(&fd, TX_FRAME * TX_FRAMES)?;
        bind(&fd, index, 0)?;
        Ok(TxRing {
            fd,
            map,
            next: 0,
            pending: 0,
        })
    }

    fn slot(&self, i: usize) -> *mut u8 {
        // SAFETY: i < TX_FRAMES, so the offset stays inside the mapping.
        unsafe { self.map.ptr.as_ptr().add(i * TX_FRAME) }
    }

    fn slot_free(&self) -> bool {
        let hdr = self.slot(self.next).cast::<libc::tpacket2_hdr>();
        // SAFETY: hdr is the aligned header of a slot in the mapping.
        let st = unsafe { status(&raw const (*hdr).tp_status) };
        st == libc::TP_STATUS_AVAILABLE || st == libc::TP_STATUS_WRONG_FORMAT
    }

    /// The next slot's frame buffer, once the kernel has given it back
    /// (kicking the ring while it waits; an error after a second).
    pub fn next_slot(&mut self) -> io::Result<&mut [u8]> {
        let mut waited = None;
        while !self.slot_free() {
            self.kick()?;
            let since = *waited.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > std::time::Duration::from_secs(1) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "TX ring: the kernel kept every slot for a second",
                ));
            }
            std::hint::spin_loop();
        }
        // SAFETY: the slot is ours until commit() hands it over; the data
        // area is TX_FRAME - TX_DATA bytes inside the mapping.
        Ok(unsafe {
            std::slice::from_raw_parts_mut(self.slot(self.next).add(TX_DATA), TX_FRAME - TX_DATA)
        })
    }

    /// Hand the slot from [`TxRing::next_slot`] to the kernel with `len` bytes.
    pub fn commit(&mut self, len: usize) {
        let hdr = self.slot(self.next).cast::<libc::tpacket2_hdr>();
        // SAFETY: we own the slot (next_slot said so) and hdr is its header.
        unsafe {
            (*hdr).tp_len = len as u32;
            set_status(&raw mut (*hdr).tp_status, libc::TP_STATUS_SEND_REQUEST);
        }
        self.next = (self.next + 1) % TX_FRAMES;
        self.pending += 1;
    }

    /// Ask the kernel to send every committed slot (one system call).
    pub fn kick(&mut self) -> io::Result<()> {
        if self.pending == 0 {
            return Ok(());
        }
        // SAFETY: a zero-length send on our own socket: it flushes the ring.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) && e.raw_os_error() != Some(libc::ENOBUFS)
            {
                return Err(e);
            }
        }
        self.pending = 0;
        Ok(())
    }
}

/// A frame the receiving ring handed over.
pub struct RxFrame<'a> {
    pub data: &'a [u8],
    /// Kernel receive timestamp, nanoseconds of `CLOCK_REALTIME`.
    pub rx_ns: u64,
}

/// The receiving ring of one tester port.
pub struct RxRing {
    fd: OwnedFd,
    map: Mapping,
    next: usize,
}

impl RxRing {
    /// An RX ring on `iface` seeing every frame that arrives (not those this
    /// host sends).
    pub fn open(iface: &str) -> io::Result<RxRing> {
        let index = ifindex(iface)?;
        let all = libc::ETH_P_ALL as u16;
        let fd = packet_socket(all)?;
        let version = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
        setsockopt(&fd, libc::PACKET_VERSION, &version)?;
        // Older kernels lack it; outgoing frames are skipped below anyway.
        let _ = setsockopt(&fd, libc::PACKET_IGNORE_OUTGOING, &1 as &libc::c_int);
        let req = libc::tpacket_req3 {
            tp_block_size: RX_BLOCK as u32,
            tp_block_nr: RX_BLOCKS as u32,
            tp_frame_size: TX_FRAME as u32,
            tp_frame_nr: (RX_BLOCK * RX_BLOCKS / TX_FRAME) as u32,
            tp_retire_blk_tov: RX_RETIRE_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setsockopt(&fd, libc::PACKET_RX_RING, &req)?;
        let map = Mapping::new(&fd, RX_BLOCK * RX_BLOCKS)?;
        bind(&fd, index, all)?;
        Ok(RxRing { fd, map, next: 0 })
    }

    fn block(&self, i: usize) -> *mut libc::tpacket_block_desc {
        // SAFETY: i < RX_BLOCKS: inside the mapping.
        unsafe { self.map.ptr.as_ptr().add(i * RX_BLOCK).cast() }
    }

    /// Hand every frame of the next retired block to `each`; returns false
    /// (after waiting up to `wait_ms` for one) if no block was ready.
    pub fn poll_block(&mut self, wait_ms: i32, mut each: impl FnMut(RxFrame<'_>)) -> bool {
        let bd = self.block(self.next);
        // SAFETY: bd is the descriptor of a block in the mapping.
        let st = unsafe { status(&raw const (*bd).hdr.bh1.block_status) };
        if st & libc::TP_STATUS_USER == 0 {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            // SAFETY: one live pollfd.
            unsafe { libc::poll(&mut pfd, 1, wait_ms) };
            return false;
        }
        let base = bd.cast::<u8>();
        // SAFETY: the kernel handed the block over (TP_STATUS_USER): its
        // header and packets are ours to read until we give it back.
        unsafe {
            let h = &(*bd).hdr.bh1;
            let mut off = h.offset_to_first_pkt as usize;
            for _ in 0..h.num_pkts {
                let p = base.add(off).cast::<libc::tpacket3_hdr>();
                let mac = usize::from((*p).tp_mac);
                let len = (*p).tp_snaplen as usize;
                if off + mac + len <= RX_BLOCK {
                    let data = std::slice::from_raw_parts(base.add(off + mac), len);
                    let rx_ns = u64::from((*p).tp_sec) * 1_000_000_000 + u64::from((*p).tp_nsec);
                    each(RxFrame { data, rx_ns });
                }
                let next = (*p).tp_next_offset as usize;
                if next == 0 {
                    break;
                }
                off += next;
            }
            set_status(&raw mut (*bd).hdr.bh1.block_status, libc::TP_STATUS_KERNEL);
        }
        self.next = (self.next + 1) % RX_BLOCKS;
        true
    }

    /// Frames the kernel dropped because the ring was full since the last call
    /// (`PACKET_STATISTICS`): the tester's own loss, not the DUT's.
    pub fn drops(&self) -> u64 {
        let mut st = libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
        // SAFETY: st and len are live and sized as the kernel expects.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&raw mut st).cast(),
                &raw mut len,
            )
        };
        if r < 0 { 0 } else { u64::from(st.tp_drops) }
    }
}
