//! IPv4 packets a worker holds until a session exists for them:
//!
//! - RFC 6146 §3.5.2.2: unsolicited IPv4 SYNs, held up to `syn_hold` seconds
//!   in case the IPv6 host opens the same connection (simultaneous open, NAT
//!   traversal). An IPv6 SYN for the same pair of transport addresses in time
//!   discards the held packet (the IPv4 host's own handshake carries on);
//!   otherwise `tick` answers it with ICMP Port Unreachable. Only the first
//!   [`HELD_BYTES`] are kept: they are only ever quoted.
//! - docs/ha.md, "A packet of a session this node does not own": with state
//!   shared between nodes, a packet for a peer's pool4 shard that finds no
//!   mapping here (the first reply of a session the peer made less than one
//!   sync latency ago) is held whole, for [`SYNC_HOLD_MS`], and translated
//!   when the peer's record of its session arrives; if none does, it is
//!   dropped silently (`sync_pending`).
//!
//! Preallocated: `max_held_syns` slots share both uses (one limit, one
//! `held_syns` gauge); whole packets take one of [`SYNC_HOLD_BUFFERS`]
//! buffers, allocated when sync is turned on. A linear scan: the store is
//! small and usually empty.

use super::config::Proto;
use crate::HEADROOM;

/// Bytes kept of a held SYN: IPv4 header with options and TCP header with
/// options (60 + 60) fit; an ICMP error quotes no more than that anyway.
pub const HELD_BYTES: usize = 120;

/// Largest packet held whole for a peer's record: an Ethernet MTU. Larger
/// ones are dropped (`sync_pending`).
pub const SYNC_HELD_BYTES: usize = 1500;

/// Most packets one worker holds whole for a peer's record (fewer if
/// `max_held_syns` is smaller): 64 × about 1.5 KB.
pub const SYNC_HOLD_BUFFERS: usize = 64;

/// How long a packet waits for a peer's record: well over one sync latency
/// (docs/ha.md: ~100 µs with the doorbell, a NACK repair tens of ms), well
/// under an end host's first retransmission (TCP's 1 s), so holding is
/// never slower than dropping.
pub const SYNC_HOLD_MS: u32 = 200;

/// No whole-packet buffer.
const NO_BUF: u16 = u16::MAX;

#[derive(Clone, Copy)]
struct Held {
    live: bool,
    /// Held whole for a peer's record (else a §3.5.2.2 SYN).
    sync: bool,
    /// Its session exists now: translate it at the next `tick`.
    ready: bool,
    /// `Proto as u8`.
    proto: u8,
    /// Pool4 address and port (ICMP: identifier) the packet was sent to.
    v4: u32,
    port4: u16,
    /// The IPv4 host (ICMP: port 0).
    remote4: u32,
    rport: u16,
    deadline: u32,
    len: u16,
    /// Index into `whole` (sync), or [`NO_BUF`].
    buf: u16,
    data: [u8; HELD_BYTES],
}

/// (pool4 address, pool4 port, remote address, remote port).
pub(crate) type Key = (u32, u16, u32, u16);

pub(crate) struct SynStore {
    slots: Vec<Held>,
    len: u32,
    /// Live slots marked ready.
    ready: u32,
    /// Buffers for whole packets (`HEADROOM` in front, so a release is
    /// translated in place); empty until [`SynStore::enable_whole`].
    whole: Vec<Box<[u8]>>,
    /// Free indices into `whole` (capacity reserved: no allocation).
    free: Vec<u16>,
    /// Whole packets whose record did not come in time, not yet counted.
    pub(crate) sync_expired: u64,
    /// The buffer of the last whole packet held.
    last: u16,
}

/// A ready packet taken out to translate: its buffer (the packet at
/// `HEADROOM`) and length. Give the buffer back with [`SynStore::put_back`].
pub(crate) struct Ready {
    pub buf: Box<[u8]>,
    pub len: usize,
    index: u16,
}

impl SynStore {
    pub fn new(cap: u32) -> Self {
        let blank = Held {
            live: false,
            sync: false,
            ready: false,
            proto: 0,
            v4: 0,
            port4: 0,
            remote4: 0,
            rport: 0,
            deadline: 0,
            len: 0,
            buf: NO_BUF,
            data: [0; HELD_BYTES],
        };
        SynStore {
            slots: vec![blank; cap as usize],
            len: 0,
            ready: 0,
            whole: Vec::new(),
            free: Vec::new(),
            sync_expired: 0,
            last: NO_BUF,
        }
    }

    /// Allocates the buffers for whole packets (sync turned on; never on
    /// the packet path). Idempotent.
    pub fn enable_whole(&mut self) {
        if !self.whole.is_empty() {
            return;
        }
        let n = SYNC_HOLD_BUFFERS.min(self.slots.len());
        self.whole = (0..n)
            .map(|_| vec![0u8; HEADROOM + SYNC_HELD_BYTES].into_boxed_slice())
            .collect();
        self.free = (0..n as u16).rev().collect();
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether a held packet's session exists now (the next `tick` sends it).
    #[inline]
    pub fn ready(&self) -> u32 {
        self.ready
    }

    fn free_slot(&mut self) -> Option<usize> {
        let i = self.slots.iter().position(|h| !h.live)?;
        self.len += 1;
        Some(i)
    }

    fn drop_slot(&mut self, i: usize) {
        let h = &mut self.slots[i];
        h.live = false;
        if h.ready {
            self.ready -= 1;
        }
        h.ready = false;
        if h.buf != NO_BUF {
            self.free.push(h.buf);
            h.buf = NO_BUF;
        }
        self.len -= 1;
    }

    /// Hold `pkt` (a SYN to `v4:port4` from `remote4:rport`). A retransmission
    /// replaces the held copy and keeps its deadline. `false`: the store is full.
    pub fn hold(&mut self, key: Key, pkt: &[u8], deadline: u32) -> bool {
        let (v4, port4, remote4, rport) = key;
        let same = |h: &Held| {
            h.live
                && !h.sync
                && h.v4 == v4
                && h.port4 == port4
                && h.remote4 == remote4
                && h.rport == rport
        };
        let slot = match self.slots.iter().position(same) {
            Some(i) => i,
            None => match self.free_slot() {
                Some(i) => {
                    self.slots[i].deadline = deadline;
                    i
                }
                None => return false,
            },
        };
        let h = &mut self.slots[slot];
        let n = pkt.len().min(HELD_BYTES);
        h.live = true;
        h.sync = false;
        h.proto = Proto::Tcp as u8;
        (h.v4, h.port4, h.remote4, h.rport) = key;
        h.len = n as u16;
        h.data[..n].copy_from_slice(&pkt[..n]);
        true
    }

    /// Hold all of `pkt` (`proto` is `Proto as u8`, sent to `key`) until its session
    /// exists or `deadline`. `false`: no room (slots, buffers) or too large.
    pub fn hold_whole(&mut self, proto: u8, key: Key, pkt: &[u8], deadline: u32) -> bool {
        if pkt.len() > SYNC_HELD_BYTES || self.free.is_empty() {
            return false;
        }
        let Some(i) = self.free_slot() else {
            return false;
        };
        let Some(b) = self.free.pop() else {
            return false; // not reached: checked above
        };
        self.whole[usize::from(b)][HEADROOM..HEADROOM + pkt.len()].copy_from_slice(pkt);
        let h = &mut self.slots[i];
        h.live = true;
        h.sync = true;
        h.ready = false;
        h.proto = proto;
        (h.v4, h.port4, h.remote4, h.rport) = key;
        h.deadline = deadline;
        h.len = pkt.len() as u16;
        h.buf = b;
        self.last = b;
        true
    }

    /// The packet [`SynStore::hold_whole`] just took has a partial TCP or
    /// UDP checksum (the field holds the pseudo-header sum, Linux
    /// `CHECKSUM_PARTIAL`; an unfragmented IPv4 packet): finish it, as the
    /// offload would have.
    pub fn finish_last_checksum(&mut self) {
        let Some(buf) = self.whole.get_mut(usize::from(self.last)) else {
            return;
        };
        let p = &mut buf[HEADROOM..];
        let ihl = usize::from(p[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([p[2], p[3]])).min(SYNC_HELD_BYTES);
        let at = match p[9] {
            6 => ihl + 16,
            17 => ihl + 6,
            _ => return,
        };
        if at + 2 > total {
            return;
        }
        let mut c = !crate::checksum::sum(&p[ihl..total]);
        if p[9] == 17 && c == 0 {
            c = 0xffff; // RFC 768: zero means "no checksum"
        }
        p[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// The session of `key` (`Proto as u8`) exists now: a held SYN is
    /// forgotten (§3.5.2.2: the IPv6 side opened it), whole packets become
    /// ready to translate. ICMP queries match on the identifier and the
    /// remote address only (their session has no remote port).
    pub fn session_made(&mut self, proto: u8, key: Key) {
        if self.len == 0 {
            return;
        }
        let icmp = proto == Proto::Icmp as u8;
        for i in 0..self.slots.len() {
            let h = &self.slots[i];
            let hit = h.live
                && !h.ready
                && h.proto == proto
                && (h.v4, h.port4, h.remote4) == (key.0, key.1, key.2)
                && (icmp || h.rport == key.3);
            if !hit {
                continue;
            }
            if h.sync {
                self.slots[i].ready = true;
                self.ready += 1;
            } else {
                self.drop_slot(i);
            }
        }
    }

    /// Take one ready packet out to translate.
    pub fn take_ready(&mut self) -> Option<Ready> {
        if self.ready == 0 {
            return None;
        }
        let i = self.slots.iter().position(|h| h.live && h.ready)?;
        let (b, len) = (self.slots[i].buf, usize::from(self.slots[i].len));
        // Its buffer is free again only at `put_back` (the translation in
        // between may hold another packet).
        self.slots[i].buf = NO_BUF;
        self.drop_slot(i);
        let buf = std::mem::take(&mut self.whole[usize::from(b)]);
        Some(Ready { buf, len, index: b })
    }

    /// The buffer of a [`Ready`] packet, after its translation.
    pub fn put_back(&mut self, r: Ready) {
        self.whole[usize::from(r.index)] = r.buf;
        self.free.push(r.index);
    }

    /// Take one held SYN whose time ran out, copying its bytes into `out`.
    /// Whole packets whose time ran out are freed on the way and counted in
    /// `sync_expired` (no error: docs/ha.md).
    pub fn take_expired(&mut self, now_ms: u32, out: &mut [u8; HELD_BYTES]) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        for i in 0..self.slots.len() {
            let h = &self.slots[i];
            if !h.live || h.ready || !super::reached(now_ms, h.deadline) {
                continue;
            }
            if h.sync {
                self.drop_slot(i);
                self.sync_expired += 1;
                continue;
            }
            let n = usize::from(h.len);
            out[..n].copy_from_slice(&h.data[..n]);
            self.drop_slot(i);
            return Some(n);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: u8 = Proto::Tcp as u8;
    const UDP: u8 = Proto::Udp as u8;

    #[test]
    fn rfc6146_3_5_2_2_store_is_bounded_and_releases() {
        let mut s = SynStore::new(2);
        assert!(s.hold((1, 2, 3, 4), &[0x45; 40], 6000));
        assert!(s.hold((1, 2, 3, 4), &[0x45; 40], 9000)); // retransmission
        assert!(s.hold((1, 2, 3, 5), &[0x45; 40], 6000));
        assert!(!s.hold((1, 2, 3, 6), &[0x45; 40], 6000));
        s.session_made(TCP, (1, 2, 3, 5));
        assert_eq!(s.len(), 1);
        let mut out = [0; HELD_BYTES];
        assert_eq!(s.take_expired(5999, &mut out), None);
        assert_eq!(s.take_expired(6000, &mut out), Some(40));
        assert_eq!(s.len(), 0);
    }

    /// docs/ha.md: whole packets share the slots, wait for their session,
    /// and expire silently.
    #[test]
    fn whole_packets_wait_for_their_session_or_expire_silently() {
        let mut s = SynStore::new(3);
        assert!(
            !s.hold_whole(UDP, (1, 2, 3, 4), &[0x45; 100], 200),
            "no buffers before sync is on"
        );
        s.enable_whole();
        assert!(s.hold_whole(UDP, (1, 2, 3, 4), &[0x45; 100], 200));
        assert!(s.hold_whole(UDP, (1, 2, 3, 4), &[0x46; 100], 200));
        assert!(!s.hold_whole(UDP, (1, 2, 3, 5), &[0x45; SYNC_HELD_BYTES + 1], 200));
        assert!(s.hold((1, 2, 3, 9), &[0x45; 40], 6000));
        assert!(!s.hold_whole(UDP, (1, 2, 3, 5), &[0x45; 100], 200), "full");
        // Another protocol's session releases nothing.
        s.session_made(TCP, (1, 2, 3, 4));
        assert_eq!(s.ready(), 0);
        s.session_made(UDP, (1, 2, 3, 4));
        assert_eq!(s.ready(), 2);
        let r = s.take_ready().unwrap();
        assert_eq!((r.len, r.buf[HEADROOM]), (100, 0x45));
        s.put_back(r);
        let r = s.take_ready().unwrap();
        assert_eq!(r.buf[HEADROOM], 0x46);
        s.put_back(r);
        assert!(s.take_ready().is_none());
        assert_eq!(s.len(), 1);
        // One that nobody claims goes at its deadline, without a packet.
        assert!(s.hold_whole(Proto::Icmp as u8, (1, 7, 3, 0), &[0x45; 60], 200));
        let mut out = [0; HELD_BYTES];
        assert_eq!(s.take_expired(200, &mut out), None);
        assert_eq!(s.sync_expired, 1);
        assert_eq!(s.take_expired(6000, &mut out), Some(40));
        assert_eq!(s.len(), 0);
    }
}
