//! Handing a packet to the worker that owns it (docs/xdp.md, "Handoff").
//!
//! An AF_XDP socket only receives from its own queue, so a packet can reach a
//! worker that does not own its state (stateful NAT64: another subscriber's or
//! another port group's). That worker copies the IP packet into a [`Ring`] to
//! the owner: one ring per (from, to) pair of workers, single producer, single
//! consumer, a fixed number of pre-allocated slots, no lock and no system call
//! per packet. A full ring is a counted drop.
//!
//! Why a copy and not the frame's address: a frame belongs to its worker's
//! UMEM, which only that worker's sockets can transmit from and only that
//! worker refills its fill rings with; the owner must send the translated
//! packet from its own UMEM anyway. Copying (at most an MTU) into a slot keeps
//! every frame with one worker and each free list single-threaded.
//!
//! Publication is batched: the producer writes slots and publishes its tail
//! once per round ([`Producer::publish`]); the consumer takes a batch and
//! publishes its head once ([`Consumer::drain`]). Wake-ups: the owner may sleep
//! in `poll`; it polls an eventfd ([`Doorbell`]) that a producer rings only
//! when its publish found the ring empty (the owner may have gone to sleep on
//! it), so a busy owner costs its producers no system call.

use std::cell::UnsafeCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering, fence};

/// Cache-line alignment, so the producer's and consumer's indexes do not share
/// a line.
#[repr(align(64))]
struct Padded(AtomicU32);

/// The shared part of one ring.
struct Shared {
    /// Next slot the producer writes (published with Release).
    tail: Padded,
    /// Next slot the consumer reads (published with Release).
    head: Padded,
    /// `size` slots of `slot` bytes each: a 2-byte length, then the packet.
    slots: Box<[UnsafeCell<u8>]>,
    slot: usize,
    size: u32,
}

// SAFETY: a slot is written only by the producer while it is outside
// head..tail, and read only by the consumer while inside; the Release/Acquire
// pairs on tail and head order those accesses.
unsafe impl Sync for Shared {}

/// Bytes of a slot before the packet: its length.
const LEN: usize = 2;

/// A single-producer single-consumer ring of packets, split into its two ends.
pub struct Ring;

impl Ring {
    /// A ring of `size` (a power of two) slots for packets of up to `max_len`
    /// bytes, and the eventfd that wakes its consumer.
    #[allow(clippy::new_ret_no_self)] // a ring is its two ends
    pub fn new(size: u32, max_len: usize, doorbell: Arc<Doorbell>) -> (Producer, Consumer) {
        let size = size.max(2).next_power_of_two();
        let slot = (LEN + max_len).next_multiple_of(64);
        let slots = (0..slot * size as usize)
            .map(|_| UnsafeCell::new(0))
            .collect();
        let shared = Arc::new(Shared {
            tail: Padded(AtomicU32::new(0)),
            head: Padded(AtomicU32::new(0)),
            slots,
            slot,
            size,
        });
        (
            Producer {
                shared: shared.clone(),
                tail: 0,
                head: 0,
                published: 0,
                doorbell,
                full: 0,
                too_big: 0,
                sent: 0,
                rings: 0,
            },
            Consumer {
                shared,
                head: 0,
                tail: 0,
            },
        )
    }
}

impl Shared {
    /// The bytes of slot `i` (any index; masked).
    #[allow(clippy::mut_from_ref)]
    fn slot(&self, i: u32) -> &mut [u8] {
        let at = (i & (self.size - 1)) as usize * self.slot;
        // SAFETY: in bounds; exclusive by the protocol described on `Shared`.
        unsafe {
            let first = UnsafeCell::raw_get(self.slots.as_ptr().add(at));
            std::slice::from_raw_parts_mut(first, self.slot)
        }
    }
}

/// The sending worker's end.
pub struct Producer {
    shared: Arc<Shared>,
    /// Next slot to write (not yet published past `published`).
    tail: u32,
    /// The consumer's head as last read.
    head: u32,
    /// The tail as last published.
    published: u32,
    doorbell: Arc<Doorbell>,
    /// Packets dropped because the ring was full.
    pub full: u64,
    /// Packets dropped because they were longer than a slot.
    pub too_big: u64,
    /// Packets handed over.
    pub sent: u64,
    /// Times the doorbell was rung.
    pub rings: u64,
}

impl Producer {
    /// Copy `pkt` into the next slot; false (counted in `full` or `too_big`)
    /// when it does not fit. Not visible to the consumer before
    /// [`Producer::publish`].
    pub fn push(&mut self, pkt: &[u8]) -> bool {
        let s = &*self.shared;
        if pkt.len() > s.slot - LEN {
            self.too_big += 1;
            return false;
        }
        if self.tail.wrapping_sub(self.head) == s.size {
            self.head = s.head.0.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.head) == s.size {
                self.full += 1;
                return false;
            }
        }
        let slot = s.slot(self.tail);
        slot[..LEN].copy_from_slice(&(pkt.len() as u16).to_ne_bytes());
        slot[LEN..LEN + pkt.len()].copy_from_slice(pkt);
        self.tail = self.tail.wrapping_add(1);
        self.sent += 1;
        true
    }

    /// Make the pushed packets visible, and ring the doorbell if the consumer
    /// had emptied the ring (it may be asleep).
    pub fn publish(&mut self) {
        if self.tail == self.published {
            return;
        }
        let s = &*self.shared;
        s.tail.0.store(self.tail, Ordering::Release);
        // Store tail, then load head; the consumer stores head, then loads
        // tail (Consumer::is_empty): with a full fence on both sides one of
        // them sees the other's store, so a sleeping consumer is always rung.
        fence(Ordering::SeqCst);
        self.head = s.head.0.load(Ordering::Acquire);
        if self.head == self.published {
            self.doorbell.ring();
            self.rings += 1;
        }
        self.published = self.tail;
    }
}

/// The owning worker's end.
pub struct Consumer {
    shared: Arc<Shared>,
    /// Next slot to read.
    head: u32,
    /// The producer's tail as last read.
    tail: u32,
}

impl Consumer {
    /// Up to `max` packets, oldest first, each given to `f` (which copies it
    /// out); then the slots are released. Returns how many.
    pub fn drain(&mut self, max: u32, mut f: impl FnMut(&[u8]) -> bool) -> u32 {
        let s = &*self.shared;
        if self.tail.wrapping_sub(self.head) < max {
            self.tail = s.tail.0.load(Ordering::Acquire);
        }
        let n = self.tail.wrapping_sub(self.head).min(max);
        let mut taken = 0;
        while taken < n {
            let slot = s.slot(self.head);
            let len = usize::from(u16::from_ne_bytes([slot[0], slot[1]]));
            if !f(&slot[LEN..LEN + len]) {
                break;
            }
            self.head = self.head.wrapping_add(1);
            taken += 1;
        }
        if taken > 0 {
            s.head.0.store(self.head, Ordering::Release);
        }
        taken
    }

    /// True when nothing is waiting: the last check before sleeping (pairs
    /// with the fence in [`Producer::publish`]).
    pub fn is_empty(&mut self) -> bool {
        fence(Ordering::SeqCst);
        self.tail = self.shared.tail.0.load(Ordering::Acquire);
        self.tail == self.head
    }
}

/// An eventfd a worker polls while it sleeps, rung by the workers that hand it
/// packets.
pub struct Doorbell(OwnedFd);

impl Doorbell {
    /// A new, quiet doorbell.
    pub fn new() -> io::Result<Doorbell> {
        // SAFETY: plain eventfd(2).
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        Ok(Doorbell(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Wake the owner (one `write`; a full counter is as good as a wake-up).
    pub fn ring(&self) {
        let one = 1u64;
        // SAFETY: an 8-byte write from a valid u64 to our eventfd.
        let _ = unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Reset after a wake-up, so that `poll` sleeps again.
    pub fn clear(&self) {
        let mut v = 0u64;
        // SAFETY: an 8-byte read into a valid u64 from our non-blocking eventfd.
        let _ = unsafe { libc::read(self.0.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// For `poll`.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(size: u32) -> (Producer, Consumer, Arc<Doorbell>) {
        let bell = Arc::new(Doorbell::new().unwrap());
        let (p, c) = Ring::new(size, 100, bell.clone());
        (p, c, bell)
    }

    fn rung(bell: &Doorbell) -> bool {
        let mut fds = [libc::pollfd {
            fd: bell.fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: a valid pollfd array, no wait.
        unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) == 1 }
    }

    #[test]
    fn packets_come_out_in_order_across_the_wrap_around() {
        let (mut p, mut c, _) = ring(4);
        let mut next_in = 0u8;
        let mut next_out = 0u8;
        // 3 in, 3 out, 25 times: the indexes wrap the 4 slots many times.
        for _ in 0..25 {
            for _ in 0..3 {
                assert!(p.push(&[next_in; 7][..usize::from(next_in % 7) + 1]));
                next_in = next_in.wrapping_add(1);
            }
            p.publish();
            let n = c.drain(64, |pkt| {
                assert_eq!(pkt.len(), usize::from(next_out % 7) + 1);
                assert!(pkt.iter().all(|&b| b == next_out));
                next_out = next_out.wrapping_add(1);
                true
            });
            assert_eq!(n, 3);
        }
        assert_eq!((p.sent, p.full), (75, 0));
        assert!(c.is_empty());
    }

    #[test]
    fn a_full_ring_is_a_counted_drop_and_an_oversized_packet_too() {
        let (mut p, mut c, _) = ring(4);
        for i in 0..4 {
            assert!(p.push(&[i]));
        }
        assert!(!p.push(&[9]), "the fifth packet has no slot");
        assert!(!p.push(&[0; 200]), "longer than a slot");
        assert_eq!((p.sent, p.full, p.too_big), (4, 1, 1));
        // Unpublished packets are not seen; published ones are.
        assert_eq!(c.drain(64, |_| true), 0);
        p.publish();
        let mut got = Vec::new();
        assert_eq!(
            c.drain(2, |pkt| {
                got.push(pkt[0]);
                true
            }),
            2
        );
        // Two slots free again: room for two, not three.
        assert!(p.push(&[4]) && p.push(&[5]));
        assert!(!p.push(&[6]));
        assert_eq!(p.full, 2);
        p.publish();
        c.drain(64, |pkt| {
            got.push(pkt[0]);
            true
        });
        assert_eq!(got, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_consumer_that_refuses_keeps_the_packet() {
        let (mut p, mut c, _) = ring(4);
        p.push(&[1]);
        p.push(&[2]);
        p.publish();
        assert_eq!(c.drain(64, |pkt| pkt[0] == 1), 1);
        assert_eq!(c.drain(64, |pkt| pkt[0] == 2), 1);
        assert!(c.is_empty());
    }

    #[test]
    fn the_doorbell_rings_only_when_the_ring_was_empty() {
        let (mut p, mut c, bell) = ring(8);
        p.push(&[1]);
        p.publish();
        assert!(rung(&bell), "empty -> non-empty rings");
        bell.clear();
        assert!(!rung(&bell));
        // The consumer has not drained: a second batch does not ring again.
        p.push(&[2]);
        p.publish();
        assert!(!rung(&bell));
        assert_eq!(c.drain(64, |_| true), 2);
        assert!(c.is_empty());
        p.push(&[3]);
        p.publish();
        assert!(rung(&bell));
        assert_eq!(p.rings, 2);
    }

    #[test]
    fn two_threads_hand_over_every_packet_in_order() {
        let (mut p, mut c, bell) = ring(64);
        let n = 100_000u32;
        let t = std::thread::spawn(move || {
            let mut i = 0u32;
            while i < n {
                if !p.push(&i.to_ne_bytes()) {
                    p.publish();
                    continue;
                }
                i += 1;
                if i.is_multiple_of(16) {
                    p.publish();
                }
            }
            p.publish();
            p.full
        });
        let mut want = 0u32;
        while want < n {
            c.drain(32, |pkt| {
                assert_eq!(u32::from_ne_bytes(pkt.try_into().unwrap()), want);
                want += 1;
                true
            });
            bell.clear();
        }
        t.join().unwrap();
    }
}
