//! RFC 6146 §3.4 ("the NAT64 MUST handle fragments arriving out of order"),
//! and RFC 7599 §8 for MAP-T: a non-first fragment carries no ports, so it can
//! only follow what its datagram's first fragment got (`nat64::fragments`).
//! One that arrives before that first fragment has been translated waits
//! here, a copy in a preallocated slot, and is translated right after it
//! (`Translator::release_early`), in the same verdict.
//!
//! Bounds (RFC 6146 §3.4 and §5: a NAT64 limits what fragments may cost it):
//! [`SLOTS`] fragments of at most [`SLOT_BYTES`] bytes per worker, all
//! allocated with the translator, none per packet; a fragment waits at most
//! [`HOLD_NS`] (FRAGMENT_MIN, 2 s). One that finds no room is dropped
//! (`fragment_buffer_full`), one whose first fragment does not come in time
//! is dropped when it is found stale (`fragment_expired`). Used in the
//! stateful modes only (NAT64, MAP-T); SIIT translates any fragment at once.
//!
//! A datagram is named by what RFC 791 §3.2 and RFC 8200 §4.5 name it by:
//! source, destination, protocol (IPv4) and Identification, hashed with the
//! worker's key.

use crate::hash;
use crate::packet::HEADROOM;
use crate::packet::ipv4::Ipv4Header;
use crate::packet::ipv6::Ipv6Packet;
use crate::translator::Translator;
use crate::verdict::{Counters, DropReason, Verdict};

/// A fragment of datagram `key` (`packet`, the whole IP packet) came before
/// its first: it waits ([`Verdict::Held`]), or is dropped if it cannot.
#[cold]
#[inline(never)]
pub(crate) fn hold(t: &mut Translator, key: u64, packet: &[u8], now_ns: u64) -> Verdict {
    match t.early.hold(key, packet, now_ns, &mut t.counters) {
        Ok(()) => Verdict::Held,
        Err(r) => Verdict::Dropped(r),
    }
}

/// Fragments that can wait, per worker.
pub const SLOTS: usize = 64;
/// Largest fragment that can wait (a 1500-byte link's fragments, and more).
pub const SLOT_BYTES: usize = 2048;
/// How long a fragment waits for its first (RFC 6146 §4: FRAGMENT_MIN 2 s).
pub const HOLD_NS: u64 = 2_000_000_000;

struct Slot {
    /// The datagram (see [`key4`], [`key6`]).
    key: u64,
    until_ns: u64,
    /// Bytes held at `buf[HEADROOM..]`; 0: free.
    len: usize,
    /// `HEADROOM` free bytes (translation grows the packet in place), then
    /// the fragment.
    buf: Box<[u8]>,
}

/// A fragment taken out to translate: `len` bytes at `buf[HEADROOM..]`.
/// Give `buf` back with [`EarlyFragments::put_back`].
pub(crate) struct Taken {
    pub slot: usize,
    pub buf: Box<[u8]>,
    pub len: usize,
}

/// One worker's waiting fragments.
pub(crate) struct EarlyFragments {
    slots: Box<[Slot]>,
    hash_key: u64,
    /// Slots in use: the packet path looks no further while it is 0.
    waiting: usize,
    /// A datagram whose first fragment just got its state and which has
    /// fragments waiting here: the translator releases them after it.
    pub(crate) release: Option<u64>,
}

impl EarlyFragments {
    /// `enabled`: a stateful mode (the slots are allocated); otherwise
    /// nothing can wait.
    pub(crate) fn new(hash_key: u64, enabled: bool) -> Self {
        let n = if enabled { SLOTS } else { 0 };
        EarlyFragments {
            slots: (0..n)
                .map(|_| Slot {
                    key: 0,
                    until_ns: 0,
                    len: 0,
                    buf: vec![0; HEADROOM + SLOT_BYTES].into_boxed_slice(),
                })
                .collect(),
            hash_key,
            waiting: 0,
            release: None,
        }
    }

    /// Whether a stateful mode's slots exist.
    pub(crate) fn enabled(&self) -> bool {
        !self.slots.is_empty()
    }

    /// The datagram of an IPv4 fragment.
    pub(crate) fn key4(&self, h: &Ipv4Header) -> u64 {
        let (s, d) = (u32::from_be_bytes(h.src), u32::from_be_bytes(h.dst));
        hash::keyed(
            self.hash_key,
            &[
                4,
                u64::from(s) << 32 | u64::from(d),
                u64::from(h.proto) << 16 | u64::from(h.id.get()),
            ],
        )
    }

    /// The datagram of an IPv6 fragment.
    pub(crate) fn key6(&self, p: &Ipv6Packet) -> u64 {
        let (s, d) = (
            u128::from_be_bytes(p.hdr.src),
            u128::from_be_bytes(p.hdr.dst),
        );
        hash::keyed(
            self.hash_key,
            &[
                6,
                (s >> 64) as u64,
                s as u64,
                (d >> 64) as u64,
                d as u64,
                u64::from(p.frag.map_or(0, |f| f.id)),
            ],
        )
    }

    /// Keep a copy of `packet`, a fragment of datagram `key` that came
    /// before its first. `Err`: it cannot wait (counted by the caller).
    pub(crate) fn hold(
        &mut self,
        key: u64,
        packet: &[u8],
        now_ns: u64,
        counters: &mut Counters,
    ) -> Result<(), DropReason> {
        if self.slots.is_empty() || packet.len() > SLOT_BYTES {
            return Err(DropReason::FragmentBufferFull);
        }
        self.expire(now_ns, counters);
        let Some(s) = self.slots.iter_mut().find(|s| s.len == 0) else {
            return Err(DropReason::FragmentBufferFull);
        };
        s.buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(packet);
        s.key = key;
        s.len = packet.len();
        s.until_ns = now_ns + HOLD_NS;
        self.waiting += 1;
        Ok(())
    }

    /// The first fragment of datagram `key` got its state: if fragments of
    /// it wait here, have them released (true: the translator must look).
    /// Cheap while nothing waits.
    #[inline]
    pub(crate) fn first_translated(&mut self, key: impl FnOnce(&Self) -> u64) -> bool {
        if self.waiting == 0 {
            return false;
        }
        let k = key(self);
        if self.slots.iter().any(|s| s.len != 0 && s.key == k) {
            self.release = Some(k);
        }
        self.release.is_some()
    }

    /// Take out the next waiting fragment of datagram `key`.
    pub(crate) fn take(&mut self, key: u64, now_ns: u64) -> Option<Taken> {
        let (i, s) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.len != 0 && s.key == key && s.until_ns > now_ns)?;
        let len = std::mem::take(&mut s.len);
        self.waiting -= 1;
        // An empty boxed slice does not allocate.
        let buf = std::mem::take(&mut s.buf);
        Some(Taken { slot: i, buf, len })
    }

    /// Give a slot its buffer back after [`EarlyFragments::take`].
    pub(crate) fn put_back(&mut self, t: Taken) {
        self.slots[t.slot].buf = t.buf;
    }

    /// Drop (counted) the fragments whose first did not come in time.
    pub(crate) fn expire(&mut self, now_ns: u64, counters: &mut Counters) {
        if self.waiting == 0 {
            return;
        }
        for s in self.slots.iter_mut() {
            if s.len != 0 && s.until_ns <= now_ns {
                s.len = 0;
                self.waiting -= 1;
                counters.count_drop(DropReason::FragmentExpired);
            }
        }
    }

    /// Fragments waiting now.
    #[inline]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6146_s3_4_holds_within_bounds() {
        let mut c = Counters::default();
        let mut e = EarlyFragments::new(1, true);
        let pkt = [0x45u8; 100];
        for i in 0..SLOTS as u64 {
            e.hold(i, &pkt, 0, &mut c).unwrap();
        }
        assert_eq!(
            e.hold(99, &pkt, 0, &mut c),
            Err(DropReason::FragmentBufferFull)
        );
        assert_eq!(
            EarlyFragments::new(1, true).hold(1, &[0; SLOT_BYTES + 1], 0, &mut c),
            Err(DropReason::FragmentBufferFull)
        );
        // After 2 s the stale ones make room, counted.
        e.hold(99, &pkt, HOLD_NS, &mut c).unwrap();
        assert_eq!(c.drops(DropReason::FragmentExpired), SLOTS as u64);
        assert!(e.first_translated(|_| 99));
        assert_eq!(e.release, Some(99));
        let t = e.take(99, HOLD_NS).unwrap();
        assert_eq!(t.len, 100);
        e.put_back(t);
        assert_eq!(e.waiting(), 0);
        assert!(e.take(99, HOLD_NS).is_none());
    }

    #[test]
    fn stateless_modes_hold_nothing() {
        let mut c = Counters::default();
        let mut e = EarlyFragments::new(1, false);
        assert!(!e.enabled());
        assert!(e.hold(1, &[0; 40], 0, &mut c).is_err());
    }
}
