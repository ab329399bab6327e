//! A single-producer single-consumer ring of `Copy` values, allocated once:
//! how a worker and the sync thread pass table changes without a lock or a
//! system call (docs/ha.md, "Workers, rings, sole writers"). A full ring
//! refuses the value; the caller counts it.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Cache-line alignment, so the two indexes do not share a line.
#[repr(align(64))]
struct Padded(AtomicUsize);

struct Shared<T> {
    /// Next slot the producer writes (Release when published).
    tail: Padded,
    /// Next slot the consumer reads (Release when published).
    head: Padded,
    /// Written before they are read (head..tail only).
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
    mask: usize,
}

// SAFETY: a slot is written only by the producer while it is outside
// head..tail, and read only by the consumer while inside; the Release/Acquire
// pairs on `tail` and `head` order those accesses. Each end is owned by one
// thread (`Producer` and `Consumer` are `Send`, not `Clone`).
unsafe impl<T: Send> Sync for Shared<T> {}

/// The writing end.
pub struct Producer<T> {
    shared: Arc<Shared<T>>,
}

/// The reading end.
pub struct Consumer<T> {
    shared: Arc<Shared<T>>,
}

/// A ring of `capacity` (rounded up to a power of two, at least 2) values.
pub fn ring<T: Copy + Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let size = capacity.max(2).next_power_of_two();
    let shared = Arc::new(Shared {
        tail: Padded(AtomicUsize::new(0)),
        head: Padded(AtomicUsize::new(0)),
        slots: (0..size)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect(),
        mask: size - 1,
    });
    (
        Producer {
            shared: shared.clone(),
        },
        Consumer { shared },
    )
}

impl<T: Copy> Producer<T> {
    /// Appends `v`; `false` when the ring is full.
    pub fn push(&mut self, v: T) -> bool {
        let s = &*self.shared;
        let tail = s.tail.0.load(Ordering::Relaxed);
        let head = s.head.0.load(Ordering::Acquire);
        if tail.wrapping_sub(head) > s.mask {
            return false;
        }
        // SAFETY: slot `tail` is outside head..tail, so the consumer does not
        // read it until the Release store below publishes it.
        unsafe { (*s.slots[tail & s.mask].get()).write(v) };
        s.tail.0.store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Whether the consumer has taken everything pushed.
    pub fn is_empty(&self) -> bool {
        let s = &*self.shared;
        s.tail.0.load(Ordering::Relaxed) == s.head.0.load(Ordering::Acquire)
    }

    /// Free slots now.
    pub fn room(&self) -> usize {
        let s = &*self.shared;
        let used = s
            .tail
            .0
            .load(Ordering::Relaxed)
            .wrapping_sub(s.head.0.load(Ordering::Acquire));
        s.mask + 1 - used
    }
}

impl<T: Copy> Consumer<T> {
    /// Whether nothing is waiting (a value published before the caller's
    /// last fence is seen).
    pub fn is_empty(&self) -> bool {
        let s = &*self.shared;
        s.head.0.load(Ordering::Relaxed) == s.tail.0.load(Ordering::Acquire)
    }

    /// The oldest value, if any.
    pub fn pop(&mut self) -> Option<T> {
        let s = &*self.shared;
        let head = s.head.0.load(Ordering::Relaxed);
        let tail = s.tail.0.load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        // SAFETY: slot `head` is inside head..tail: written and published by
        // the producer (Acquire above), so initialised, and not written again
        // until `head` moves past it.
        let v = unsafe { (*s.slots[head & s.mask].get()).assume_init() };
        s.head.0.store(head.wrapping_add(1), Ordering::Release);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_full_and_empty() {
        let (mut p, mut c) = ring::<u32>(3);
        assert_eq!(p.room(), 4);
        for i in 0..4 {
            assert!(p.push(i));
        }
        assert!(!p.push(9), "full");
        assert_eq!(c.pop(), Some(0));
        assert!(p.push(4));
        assert_eq!(
            (1..=4).map(|_| c.pop().unwrap()).collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        assert_eq!(c.pop(), None);
    }

    #[test]
    fn two_threads_see_every_value_in_order() {
        let (mut p, mut c) = ring::<u64>(64);
        let n = 200_000u64;
        let t = std::thread::spawn(move || {
            let mut i = 0;
            while i < n {
                if p.push(i) {
                    i += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        let mut want = 0;
        while want < n {
            if let Some(v) = c.pop() {
                assert_eq!(v, want);
                want += 1;
            }
        }
        t.join().unwrap();
    }
}
