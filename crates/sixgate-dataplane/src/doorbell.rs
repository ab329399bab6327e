//! How workers wake the sync thread (docs/ha.md, "Workers, rings, sole
//! writers"): an eventfd the thread sleeps on, written only when the thread
//! said it is going to sleep, so a busy thread costs the workers nothing and
//! a sleeping one is woken by one `write` per batch that exported changes,
//! never one per packet.
//!
//! The lost-wake-up race is closed as in Dekker's algorithm: the sleeper
//! arms, then looks at the rings once more; a ringer publishes into its ring,
//! then disarms. A full fence between each side's two steps means that
//! either the sleeper sees the value or the ringer sees it armed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering, fence};

/// One eventfd and its armed flag.
pub struct Doorbell {
    fd: OwnedFd,
    armed: AtomicBool,
}

impl Doorbell {
    /// A new, quiet doorbell.
    pub fn new() -> io::Result<Doorbell> {
        // SAFETY: plain eventfd(2).
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Doorbell {
            // SAFETY: a fresh descriptor we own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed: AtomicBool::new(false),
        })
    }

    /// The sleeper, before its last look at what it sleeps for: from now on
    /// a [`Doorbell::ring`] writes.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// The sleeper, awake: reset the counter and stop the writes.
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::Relaxed);
        let mut v = 0u64;
        // SAFETY: an 8-byte read into a valid u64 from our non-blocking eventfd.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// The sleeper, awake without the doorbell having rung (its `poll` said
    /// so): stop the writes, and save the `read` that would find nothing.
    pub fn quiet(&self) {
        self.armed.store(false, Ordering::Relaxed);
    }

    /// A producer, after publishing: wake the sleeper if it is armed (one
    /// `write`, then no more until it arms again).
    pub fn ring(&self) {
        fence(Ordering::SeqCst);
        if self.armed.load(Ordering::Relaxed) && self.armed.swap(false, Ordering::Relaxed) {
            self.wake();
        }
    }

    /// Wake the sleeper whether armed or not (to stop it).
    pub fn wake(&self) {
        let one = 1u64;
        // SAFETY: an 8-byte write from a valid u64 to our eventfd; a full
        // counter is as good as a wake-up.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// For `poll`.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(d: &Doorbell) -> bool {
        let mut p = libc::pollfd {
            fd: d.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn rings_only_when_armed_and_once() {
        let d = Doorbell::new().unwrap();
        d.ring();
        assert!(!readable(&d), "not armed: no write");
        d.arm();
        d.ring();
        assert!(readable(&d));
        d.disarm();
        assert!(!readable(&d));
        d.arm();
        d.ring();
        d.disarm();
        d.ring();
        assert!(!readable(&d), "disarmed by the first ring");
        d.wake();
        assert!(readable(&d));
    }
}
