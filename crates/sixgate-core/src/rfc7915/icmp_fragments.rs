//! RFC 7915 §4.2 and §5.2 on a fragmented ICMP Echo (a ping larger than the
//! path MTU): the checksum gains or loses the ICMPv6 pseudo-header, whose
//! Upper-Layer Packet Length is the whole message's (RFC 8200 §8.1). Only the
//! last fragment tells that length (its offset plus its size), and the
//! checksum field is in the first. So the first fragment waits here, copied,
//! until the last one has come; every other fragment is translated at once.
//! When the last fragment comes first, its length waits for the first.
//!
//! A worker keeps [`SLOTS`] slots, allocated once, indexed by a keyed hash of
//! (source, destination, Identification): no allocation per packet. A held
//! first fragment waits at most [`HOLD_NS`]; one that is pushed out of its
//! slot by another datagram, or found expired when the slot is next used, is
//! counted as `icmp_fragment_expired`. In NAT64 and MAP-T the first
//! fragment's mapping is made before it waits, so the later fragments follow
//! it at once; it is looked up again (and its Echo identifier rewritten)
//! when it goes. Later fragments that come before the first wait in
//! `nat64::early_fragments`.

use crate::hash;
use crate::packet::HEADROOM;
use crate::packet::ipv4::Ipv4Header;
use crate::packet::ipv6;
use crate::translator::Translator;
use crate::verdict::{Counters, DropReason, Verdict};
use zerocopy::FromBytes;

/// Slots per worker.
pub const SLOTS: usize = 64;
/// Largest first fragment that can wait (a 1500-byte link's, and more).
pub const HOLD_BYTES: usize = 4096;
/// How long a first fragment waits for its last one.
pub const HOLD_NS: u64 = 2_000_000_000;

// The callers pass scalars, not their parsed headers: taking a header's
// address would keep it in memory on every packet's path.

/// §4.2: an IPv4 fragment (`packet`, no longer than its Total Length) of an
/// ICMP message that is not an error, `l4_len` ICMP bytes. `None`: translate
/// it now (for a first fragment, with [`IcmpFragments::total`]); `Some`: what
/// became of it instead.
#[cold]
#[inline(never)]
pub(crate) fn on_v4(
    t: &mut Translator,
    packet: &[u8],
    l4_len: usize,
    now_ns: u64,
) -> Option<Verdict> {
    let h = Ipv4Header::ref_from_prefix(packet).ok()?.0;
    let key = Key {
        src: u128::from(u32::from_be_bytes(h.src)),
        dst: u128::from(u32::from_be_bytes(h.dst)),
        id: u32::from(h.id.get()),
        v6: false,
    };
    let last = (!h.mf()).then(|| (h.frag_offset() + l4_len) as u32);
    step(t, key, h.frag_offset() == 0, last, packet, now_ns)
}

/// §5.2: an IPv6 fragment (`packet`, no longer than its Payload Length says)
/// of an ICMPv6 message that is not an error, as [`on_v4`].
#[cold]
#[inline(never)]
pub(crate) fn on_v6(t: &mut Translator, packet: &[u8], now_ns: u64) -> Option<Verdict> {
    let p = ipv6::parse(packet, false).ok()?;
    let f = p.frag?;
    if !p.is_fragmented() {
        return None; // an atomic fragment: the whole message
    }
    let key = Key {
        src: u128::from_be_bytes(p.hdr.src),
        dst: u128::from_be_bytes(p.hdr.dst),
        id: f.id,
        v6: true,
    };
    let last = (!f.more).then(|| (f.offset + p.total_len - p.l4_off) as u32);
    step(t, key, f.offset == 0, last, packet, now_ns)
}

/// In NAT64 and MAP-T the first fragment's mapping was made (and remembered
/// for the later fragments) before it comes here to wait; its identifier is
/// rewritten when it is translated at last.
fn step(
    t: &mut Translator,
    key: Key,
    first: bool,
    last: Option<u32>,
    packet: &[u8],
    now_ns: u64,
) -> Option<Verdict> {
    let frags = &mut t.icmp_fragments;
    match frags.step(key, first, last, packet, now_ns, &mut t.counters) {
        Ok(Step::Go) => None,
        Ok(Step::Held) => Some(Verdict::Held),
        Err(r) => Some(Verdict::Dropped(r)),
    }
}

/// One datagram: its addresses (IPv4 ones as integers) and Identification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Key {
    pub src: u128,
    pub dst: u128,
    pub id: u32,
    pub v6: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Empty,
    /// The first fragment, `len` bytes at `buf[HEADROOM..]`.
    Held {
        len: usize,
    },
    /// The whole message's ICMP length, learned from the last fragment.
    Length {
        total: u32,
    },
    /// Both: the first fragment can go.
    Ready {
        len: usize,
        total: u32,
    },
}

struct Slot {
    key: Key,
    state: State,
    until_ns: u64,
    /// `HEADROOM` free bytes (the translation grows the packet in place),
    /// then the held fragment.
    buf: Box<[u8]>,
}

/// What the caller does with a fragment of an ICMP Echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Translate it. For a first fragment the message's ICMP length is in
    /// [`IcmpFragments::total`]; after a last fragment whose first was held,
    /// [`IcmpFragments::has_ready`] says to send that one too
    /// ([`crate::Translator::release_held`]).
    Go,
    /// It was copied here and waits for the last fragment: nothing to send.
    Held,
}

/// A held first fragment whose last fragment came, taken out to translate:
/// `len` bytes at `buf[HEADROOM..]`. Give `buf` back with
/// [`IcmpFragments::put_back`].
pub(crate) struct Ready {
    pub slot: usize,
    pub buf: Box<[u8]>,
    pub len: usize,
}

/// One worker's table.
pub(crate) struct IcmpFragments {
    slots: Box<[Slot]>,
    key: u64,
    /// The slot whose held fragment can go now.
    ready: Option<usize>,
    /// The ICMP length of the message whose first fragment is being
    /// translated (the checksum's pseudo-header needs it).
    pub(crate) total: Option<u32>,
}

impl IcmpFragments {
    pub(crate) fn new(hash_key: u64) -> Self {
        IcmpFragments {
            slots: (0..SLOTS)
                .map(|_| Slot {
                    key: Key::default(),
                    state: State::Empty,
                    until_ns: 0,
                    buf: vec![0; HEADROOM + HOLD_BYTES].into_boxed_slice(),
                })
                .collect(),
            key: hash_key,
            ready: None,
            total: None,
        }
    }

    fn index(&self, k: &Key) -> usize {
        let h = hash::keyed(
            self.key,
            &[
                k.src as u64 ^ (k.src >> 64) as u64,
                k.dst as u64 ^ (k.dst >> 64) as u64,
                u64::from(k.id) | (u64::from(k.v6) << 32),
            ],
        );
        (h as usize) % SLOTS
    }

    /// Slot `i` is about to hold something else: a first fragment still
    /// waiting there is lost.
    fn evict(&mut self, i: usize, counters: &mut Counters) {
        if let State::Held { .. } | State::Ready { .. } = self.slots[i].state {
            counters.count_drop(DropReason::IcmpFragmentExpired);
        }
        self.slots[i].state = State::Empty;
    }

    /// A fragment of an ICMP Echo: the `first` (offset 0), the last one
    /// (`last_total`: its offset plus its ICMP bytes), or a middle one
    /// (neither). `packet` is the whole IP packet, copied when it must wait.
    pub(crate) fn step(
        &mut self,
        k: Key,
        first: bool,
        last_total: Option<u32>,
        packet: &[u8],
        now_ns: u64,
        counters: &mut Counters,
    ) -> Result<Step, DropReason> {
        // A first fragment made ready by a last fragment that was dropped
        // after all: it cannot go.
        if let Some(stale) = self.ready.take() {
            self.evict(stale, counters);
        }
        let i = self.index(&k);
        let s = &self.slots[i];
        let live = s.state != State::Empty && s.until_ns > now_ns;
        let mine = live && s.key == k;
        let state = s.state;
        self.total = None;
        if first {
            if mine && let State::Length { total } = state {
                self.slots[i].state = State::Empty;
                self.total = Some(total);
                return Ok(Step::Go);
            }
            if packet.len() > HOLD_BYTES {
                return Err(DropReason::FragmentedIcmp);
            }
            self.evict(i, counters);
            let s = &mut self.slots[i];
            s.buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(packet);
            s.key = k;
            s.state = State::Held { len: packet.len() };
            s.until_ns = now_ns + HOLD_NS;
            return Ok(Step::Held);
        }
        let Some(total) = last_total else {
            return Ok(Step::Go);
        };
        match state {
            State::Held { len } if mine => {
                self.slots[i].state = State::Ready { len, total };
                self.ready = Some(i);
            }
            // Another datagram's first fragment waits here: leave it (this
            // datagram's first, if it comes, pushes it out).
            State::Held { .. } if live => {}
            _ => {
                self.evict(i, counters);
                let s = &mut self.slots[i];
                s.key = k;
                s.state = State::Length { total };
                s.until_ns = now_ns + HOLD_NS;
            }
        }
        Ok(Step::Go)
    }

    /// A held first fragment can go ([`IcmpFragments::take_ready`]).
    #[inline(always)]
    pub(crate) fn has_ready(&self) -> bool {
        self.ready.is_some()
    }

    /// The held first fragment the last [`IcmpFragments::step`] made ready,
    /// if any. Its slot now says the length, so translating it finds it.
    pub(crate) fn take_ready(&mut self) -> Option<Ready> {
        let i = self.ready.take()?;
        let s = &mut self.slots[i];
        let State::Ready { len, total } = s.state else {
            return None;
        };
        s.state = State::Length { total };
        // An empty boxed slice does not allocate.
        let buf = std::mem::take(&mut s.buf);
        Some(Ready { slot: i, buf, len })
    }

    /// Give a slot its buffer back after [`IcmpFragments::take_ready`].
    pub(crate) fn put_back(&mut self, r: Ready) {
        let s = &mut self.slots[r.slot];
        s.buf = r.buf;
        // Translating it used the length (or was dropped before looking).
        s.state = State::Empty;
    }
}
