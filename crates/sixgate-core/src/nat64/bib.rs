//! RFC 6146 §3.1: the Binding Information Base. One record per mapping of an IPv6
//! transport address to an IPv4 one, in a slab, found through two index maps of
//! `u32` (by either side). A dynamic entry lives while it has sessions, then waits
//! out `port_reuse` (RFC 6888 REQ-8) on the cooling list before its port is free.

use super::Nat64;
use super::config::Proto;
use super::event::{Event, EventKind};
use super::slab::{Link, LinkOf, NIL, Slot};
use std::hash::BuildHasher;
use std::net::{Ipv4Addr, Ipv6Addr};

pub(crate) const STATIC: u8 = 1;
pub(crate) const COOLING: u8 = 2;
/// Not in the IPv6-side index: a peer's mapping of the same IPv6 transport
/// address won it (`replica_conflict`).
pub(crate) const ALT: u8 = 4;

/// One BIB entry (44 bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bib {
    pub v6: [u8; 16],
    pub v4: u32,
    pub port6: u16,
    pub port4: u16,
    pub proto: u8,
    pub flags: u8,
    /// First of this entry's sessions (linked through `Session::by_bib`).
    pub sessions: u32,
    /// Cooling list (or the slab's free list).
    pub cool: Link,
    /// When cooling ends.
    pub cool_until: u32,
    /// The generation of its owner's snapshot that last restated it
    /// (`replica_snapshot`; 0: never). In what was padding: the record stays
    /// 44 bytes.
    pub mark: u8,
}

/// Bytes of one BIB record.
pub const BIB_RECORD_BYTES: usize = size_of::<Bib>();

impl Slot for Bib {
    fn free_link(&mut self) -> &mut Link {
        &mut self.cool
    }
}

pub(crate) const COOL_LINK: LinkOf<Bib> = |b| &mut b.cool;

pub(crate) fn proto_of(b: u8) -> Proto {
    match b {
        0 => Proto::Tcp,
        1 => Proto::Udp,
        _ => Proto::Icmp,
    }
}

/// The IPv6 transport address folded into one word to hash (one multiply in
/// foldhash instead of one per field; equality is checked on the record).
#[inline]
pub(crate) fn key6(proto: u8, v6: u128, port: u16) -> u128 {
    v6 ^ (u128::from(port) << 8 | u128::from(proto)) << 64
}

/// The IPv4 transport address as one word to hash.
#[inline]
fn key4(proto: u8, v4: u32, port: u16) -> u64 {
    u64::from(v4) << 32 | u64::from(port) << 8 | u64::from(proto)
}

impl Bib {
    pub fn v6_int(&self) -> u128 {
        u128::from_be_bytes(self.v6)
    }
}

impl Nat64 {
    #[inline]
    pub(crate) fn hash6(&self, proto: u8, v6: u128, port: u16) -> u64 {
        self.hasher.hash_one(key6(proto, v6, port))
    }

    #[inline]
    pub(crate) fn hash4(&self, proto: u8, v4: u32, port: u16) -> u64 {
        self.hasher.hash_one(key4(proto, v4, port))
    }

    /// §3.5.1.1: the BIB entry of IPv6 transport address (`v6`, `port`).
    #[inline]
    pub(crate) fn bib_by6(&self, proto: u8, v6: u128, port: u16) -> Option<u32> {
        let h = self.hash6(proto, v6, port);
        let items = &self.bibs.items;
        let key = v6.to_be_bytes();
        self.bib6
            .find(h, |&i| {
                let b = &items[i as usize];
                b.port6 == port && b.proto == proto && b.v6 == key
            })
            .copied()
    }

    /// §3.5.1.1: the BIB entry of IPv4 transport address (`v4`, `port`).
    #[inline]
    pub(crate) fn bib_by4(&self, proto: u8, v4: u32, port: u16) -> Option<u32> {
        let h = self.hash4(proto, v4, port);
        let items = &self.bibs.items;
        self.bib4
            .find(h, |&i| {
                let b = &items[i as usize];
                b.port4 == port && b.proto == proto && b.v4 == v4
            })
            .copied()
    }

    /// Whether IPv4 transport address (`v4`, `port`) is taken: by a BIB entry of
    /// this worker (cooling ones included) or by any static entry.
    pub(crate) fn port_taken(&self, proto: u8, v4: u32, port: u16) -> bool {
        self.bib_by4(proto, v4, port).is_some()
            || self.reserved.binary_search(&(proto, v4, port)).is_ok()
    }

    /// Add a BIB entry; `None` when the BIB is full.
    pub(crate) fn bib_insert(&mut self, b: Bib, now_ns: u64) -> Option<u32> {
        let i = self.bibs.alloc(b)?;
        let h6 = self.hash6(b.proto, b.v6_int(), b.port6);
        let h4 = self.hash4(b.proto, b.v4, b.port4);
        let hasher = self.hasher.clone();
        let items = &self.bibs.items;
        self.bib6.insert_unique(h6, i, |&j| {
            let b = &items[j as usize];
            hasher.hash_one(key6(b.proto, b.v6_int(), b.port6))
        });
        self.bib4.insert_unique(h4, i, |&j| {
            let b = &items[j as usize];
            hasher.hash_one(key4(b.proto, b.v4, b.port4))
        });
        self.port_map.mark(b.proto, b.v4, b.port4);
        *self.bib_count.get_mut(proto_of(b.proto)) += 1;
        if b.flags & STATIC == 0 && self.cfg.event_log.bib() && !self.subs.blocks_on() {
            self.log_bib(EventKind::BibCreated, &b, now_ns);
        }
        Some(i)
    }

    /// Remove BIB entry `i` for good: its port is free again. `why` is what the
    /// event log says ([`EventKind::BibExpired`] or [`EventKind::BibFlushed`]).
    pub(crate) fn bib_remove(&mut self, i: u32, why: EventKind, now_ns: u64) {
        let b = *self.bibs.get(i);
        let h4 = self.hash4(b.proto, b.v4, b.port4);
        self.unindex6(i, &b);
        if let Ok(e) = self.bib4.find_entry(h4, |&j| j == i) {
            e.remove();
        }
        if b.flags & COOLING != 0 {
            self.cooling.remove(&mut self.bibs.items, i, COOL_LINK);
        }
        self.bibs.free(i);
        if self
            .reserved
            .binary_search(&(b.proto, b.v4, b.port4))
            .is_err()
        {
            self.port_map.unmark(b.proto, b.v4, b.port4);
        }
        *self.bib_count.get_mut(proto_of(b.proto)) -= 1;
        if b.flags & STATIC == 0 {
            // With sync, the end is the maker's to log, whether this node
            // ends it on its own or on the maker's record
            // (`replica_snapshot::logs_end`); a block's by its first port.
            let muted = self.events.muted;
            let first = b.port4 & !self.subs.block_size().saturating_sub(1);
            self.events.muted = !self.logs_end(b.v4, first);
            self.subs
                .port_released(&b, now_ns, &mut self.events, &self.cfg);
            self.events.muted = !self.logs_end(b.v4, b.port4);
            if self.cfg.event_log.bib() && !self.subs.blocks_on() {
                self.log_bib(why, &b, now_ns);
            }
            self.events.muted = muted;
        }
    }

    /// The last session of dynamic entry `i` is gone: start its port-reuse wait.
    pub(crate) fn bib_idle(&mut self, i: u32, now_ms: u32, now_ns: u64) {
        let b = self.bibs.get(i);
        if b.flags & STATIC != 0 || b.sessions != NIL {
            return;
        }
        if self.port_reuse_ms == 0 {
            self.bib_remove(i, EventKind::BibExpired, now_ns);
            return;
        }
        let b = self.bibs.get_mut(i);
        b.flags |= COOLING;
        b.cool_until = now_ms.wrapping_add(self.port_reuse_ms);
        self.cooling.push_back(&mut self.bibs.items, i, COOL_LINK);
    }

    /// A cooling entry gets a session again: it keeps its port.
    pub(crate) fn bib_revive(&mut self, i: u32) {
        if self.bibs.get(i).flags & COOLING != 0 {
            self.cooling.remove(&mut self.bibs.items, i, COOL_LINK);
            self.bibs.get_mut(i).flags &= !COOLING;
        }
    }

    /// Free entries whose port-reuse wait is over; at most `budget`.
    pub(crate) fn expire_cooling(&mut self, now_ms: u32, now_ns: u64, budget: &mut u32) {
        while *budget > 0 && self.cooling.head != NIL {
            let i = self.cooling.head;
            if !super::reached(now_ms, self.bibs.get(i).cool_until) {
                return;
            }
            self.bib_remove(i, EventKind::BibExpired, now_ns);
            *budget -= 1;
        }
    }

    /// Static entries this worker serves: those whose IPv6 side it owns.
    pub(crate) fn install_static_bib(&mut self) {
        for s in self.cfg.static_bib.clone() {
            let v6 = u128::from(s.v6);
            if !self.owns_subscriber(v6) {
                continue;
            }
            let p = s.proto as u8;
            if self.bib_by6(p, v6, s.port6).is_some()
                || self.bib_by4(p, u32::from(s.v4), s.port4).is_some()
            {
                continue; // duplicates are the config's to reject; keep the first
            }
            let b = super::runtime::static_record(&s);
            let _ = self.bib_insert(b, 0);
        }
    }

    fn log_bib(&mut self, kind: EventKind, b: &Bib, now_ns: u64) {
        self.events.push(Event {
            kind,
            time_ns: now_ns,
            proto: proto_of(b.proto),
            v6: Ipv6Addr::from(b.v6),
            prefix_len: 128,
            port6: b.port6,
            v4: Ipv4Addr::from(b.v4),
            port4: b.port4,
            port4_last: b.port4,
            remote: None,
        });
    }
}
