//! RFC 6146 §3.2: the session table. A session belongs to one BIB entry, so its
//! key is (BIB, remote IPv4 address, remote port): the IPv6 side of the remote is
//! its pool6 form and the local side is the BIB's, in both directions, so one index
//! serves 6→4 and 4→6. Expiry: one FIFO per lifetime class (no per-flow timers).

use super::Nat64;
use super::bib::{COOLING, proto_of};
use super::config::{Proto, Timeouts};
use super::event::{Event, EventKind};
use super::replica::{ReplicaOp, SETTLE_AFTER};
use super::slab::{Link, LinkOf, NIL, Slot};
use super::tcp::{self, Lifetime, TcpState};
use std::hash::BuildHasher;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Lifetime classes, each with its own FIFO.
pub(crate) const CLASSES: usize = 5;
pub(crate) const UDP: u8 = 0;
pub(crate) const ICMP: u8 = 1;
pub(crate) const TCP_EST: u8 = 2;
pub(crate) const TCP_TRANS: u8 = 3;
pub(crate) const TCP_SYN: u8 = 4;

/// Lifetime of each class, in seconds.
pub(crate) fn lifetimes(t: &Timeouts) -> [u32; CLASSES] {
    [
        t.udp,
        t.icmp,
        t.tcp_established,
        t.tcp_transitory,
        t.syn_hold,
    ]
}

pub(crate) fn class_of(l: Lifetime) -> u8 {
    match l {
        Lifetime::Established => TCP_EST,
        Lifetime::Transitory => TCP_TRANS,
        Lifetime::IncomingSyn => TCP_SYN,
    }
}

/// One session (32 bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Session {
    pub bib: u32,
    pub remote4: u32,
    pub rport: u16,
    /// [`TcpState`] for TCP; for UDP and ICMP, the packets after the first,
    /// up to [`SETTLE_AFTER`] (`session_again`).
    pub state: u8,
    pub class: u8,
    pub deadline: u32,
    /// Position in its class FIFO (or the slab's free list).
    pub timer: Link,
    /// Position among its BIB entry's sessions.
    pub by_bib: Link,
}

/// Bytes of one session record.
pub const SESSION_RECORD_BYTES: usize = size_of::<Session>();

impl Slot for Session {
    fn free_link(&mut self) -> &mut Link {
        &mut self.timer
    }
}

/// A session's key as one word to hash.
#[inline]
fn session_key(bib: u32, remote4: u32, rport: u16) -> u128 {
    u128::from(bib) << 64 | u128::from(remote4) << 16 | u128::from(rport)
}

const TIMER: LinkOf<Session> = |s| &mut s.timer;

impl Nat64 {
    #[inline]
    fn session_hash(&self, bib: u32, remote4: u32, rport: u16) -> u64 {
        self.hasher.hash_one(session_key(bib, remote4, rport))
    }

    /// §3.5.1.1 / §3.5.2.1: the session of BIB entry `bib` with remote
    /// (`remote4`, `rport`).
    #[inline]
    pub(crate) fn session_find(&self, bib: u32, remote4: u32, rport: u16) -> Option<u32> {
        let h = self.session_hash(bib, remote4, rport);
        let items = &self.sessions.items;
        self.session_idx
            .find(h, |&i| {
                let s = &items[i as usize];
                s.bib == bib && s.remote4 == remote4 && s.rport == rport
            })
            .copied()
    }

    /// Address-dependent filtering (RFC 4787 §5): does BIB entry `bib` have a
    /// session with remote address `remote4`, any port?
    pub(crate) fn bib_has_remote(&self, bib: u32, remote4: u32) -> bool {
        let mut i = self.bibs.get(bib).sessions;
        while i != NIL {
            let s = self.sessions.get(i);
            if s.remote4 == remote4 {
                return true;
            }
            i = s.by_bib.next;
        }
        false
    }

    /// Room for one more session?
    pub(crate) fn session_room(&self) -> bool {
        !self.sessions.is_full()
    }

    /// RFC 6888 REQ-12 with `on_overflow = "refuse"`: room in the event ring
    /// for everything a new session may log (a port block or BIB entry, and
    /// the session). Always true when nothing is logged or loss is allowed.
    #[inline]
    pub(crate) fn log_room(&self) -> bool {
        const NEW_SESSION_EVENTS: usize = 3;
        !self.cfg.refuse_unlogged
            || self.cfg.event_log == super::EventLog::Off
            || self.events.room() >= NEW_SESSION_EVENTS
    }

    /// Create a session of BIB `bib` in lifetime class `class` (the caller checked
    /// room and limits).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn session_insert(
        &mut self,
        bib: u32,
        remote4: u32,
        rport: u16,
        state: u8,
        class: u8,
        now_ms: u32,
        now_ns: u64,
    ) -> Option<u32> {
        let s = Session {
            bib,
            remote4,
            rport,
            state,
            class,
            deadline: now_ms.wrapping_add(self.lifetimes_ms[class as usize]),
            timer: Link::NONE,
            by_bib: Link::NONE,
        };
        let i = self.sessions.alloc(s)?;
        let h = self.session_hash(bib, remote4, rport);
        let hasher = self.hasher.clone();
        let items = &self.sessions.items;
        self.session_idx.insert_unique(h, i, |&j| {
            let s = &items[j as usize];
            hasher.hash_one(session_key(s.bib, s.remote4, s.rport))
        });
        self.timers[class as usize].push_back(&mut self.sessions.items, i, TIMER);
        // Front of the BIB entry's list.
        self.bib_revive(bib);
        let head = self.bibs.get(bib).sessions;
        self.sessions.get_mut(i).by_bib.next = head;
        if head != NIL {
            self.sessions.get_mut(head).by_bib.prev = i;
        }
        self.bibs.get_mut(bib).sessions = i;
        let b = *self.bibs.get(bib);
        let proto = proto_of(b.proto);
        *self.session_count.get_mut(proto) += 1;
        self.subs.session_added(u128::from_be_bytes(b.v6));
        if self.cfg.event_log.sessions() {
            self.log_session(EventKind::SessionCreated, i, now_ns);
        }
        self.export(ReplicaOp::Upsert, i, now_ms);
        Some(i)
    }

    /// Restart session `i`'s lifetime in class `class`.
    #[inline]
    pub(crate) fn session_refresh(&mut self, i: u32, class: u8, now_ms: u32) {
        let deadline = now_ms.wrapping_add(self.lifetimes_ms[class as usize]);
        let old = self.sessions.get(i).class;
        let export = self.changes.is_some() && self.refresh_due(i, old, now_ms);
        let s = self.sessions.get_mut(i);
        s.deadline = deadline;
        // Already last in its FIFO: nothing to move (the common case of a busy flow).
        if old != class || s.timer.next != NIL {
            s.class = class;
            self.timers[old as usize].remove(&mut self.sessions.items, i, TIMER);
            self.timers[class as usize].push_back(&mut self.sessions.items, i, TIMER);
        }
        if export {
            self.export(ReplicaOp::Upsert, i, now_ms);
        }
    }

    /// §3.5.1.1, §3.5.2.2 (UDP), §3.5.3 (ICMP query): a packet of existing
    /// session `i` restarts its lifetime; its [`SETTLE_AFTER`]-th packet
    /// after the first also exports it as [`ReplicaOp::Settled`] (one byte
    /// compared per packet; no record while nothing reads them).
    #[inline]
    pub(crate) fn session_again(&mut self, i: u32, class: u8, now_ms: u32) {
        self.session_refresh(i, class, now_ms);
        let s = self.sessions.get_mut(i);
        if s.state < SETTLE_AFTER {
            s.state += 1;
            if s.state == SETTLE_AFTER {
                self.export(ReplicaOp::Settled, i, now_ms);
            }
        }
    }

    /// §3.5.2.2: a TCP packet on session `i` from `side`.
    #[inline]
    pub(crate) fn session_tcp(&mut self, i: u32, side: tcp::Side, f: tcp::Flags, now_ms: u32) {
        let st = TcpState::from_u8(self.sessions.get(i).state);
        let step = tcp::on_packet(st, side, f);
        self.sessions.get_mut(i).state = step.state as u8;
        if let Some(l) = step.refresh {
            self.session_refresh(i, class_of(l), now_ms);
        }
        if step.state != st {
            self.export(ReplicaOp::Upsert, i, now_ms);
        }
    }

    /// Delete session `i`; `why` is what the event log says
    /// ([`EventKind::SessionExpired`] or [`EventKind::SessionFlushed`]).
    pub(crate) fn session_remove(&mut self, i: u32, why: EventKind, now_ms: u32, now_ns: u64) {
        if self.cfg.event_log.sessions() {
            // With sync, the end is the maker's to log, whether this node
            // ends it on its own or on the maker's record
            // (`replica_snapshot::logs_end`).
            let b = self.bibs.get(self.sessions.get(i).bib);
            let quiet = !self.logs_end(b.v4, b.port4);
            let muted = std::mem::replace(&mut self.events.muted, quiet);
            self.log_session(why, i, now_ns);
            self.events.muted = muted;
        }
        self.export(ReplicaOp::Delete, i, now_ms);
        let s = *self.sessions.get(i);
        let h = self.session_hash(s.bib, s.remote4, s.rport);
        if let Ok(e) = self.session_idx.find_entry(h, |&j| j == i) {
            e.remove();
        }
        self.timers[s.class as usize].remove(&mut self.sessions.items, i, TIMER);
        // Unlink from the BIB entry's list.
        if s.by_bib.prev != NIL {
            self.sessions.get_mut(s.by_bib.prev).by_bib.next = s.by_bib.next;
        } else {
            self.bibs.get_mut(s.bib).sessions = s.by_bib.next;
        }
        if s.by_bib.next != NIL {
            self.sessions.get_mut(s.by_bib.next).by_bib.prev = s.by_bib.prev;
        }
        self.sessions.free(i);
        let b = *self.bibs.get(s.bib);
        *self.session_count.get_mut(proto_of(b.proto)) -= 1;
        self.subs.session_removed(u128::from_be_bytes(b.v6));
        if b.sessions == NIL && b.flags & COOLING == 0 {
            self.bib_idle(s.bib, now_ms, now_ns);
        }
    }

    /// Expire sessions whose lifetime ran out; at most `budget`.
    pub(crate) fn expire_sessions(&mut self, now_ms: u32, now_ns: u64, budget: &mut u32) {
        for class in 0..CLASSES {
            while *budget > 0 {
                let i = self.timers[class].head;
                if i == NIL || !super::reached(now_ms, self.sessions.get(i).deadline) {
                    break;
                }
                *budget -= 1;
                let s = *self.sessions.get(i);
                let is_tcp = proto_of(self.bibs.get(s.bib).proto) == Proto::Tcp;
                match is_tcp
                    .then(|| tcp::on_expiry(TcpState::from_u8(s.state)))
                    .flatten()
                {
                    Some(step) => {
                        self.sessions.get_mut(i).state = step.state as u8;
                        let l = step.refresh.unwrap_or(Lifetime::Transitory);
                        self.session_refresh(i, class_of(l), now_ms);
                        self.export(ReplicaOp::Upsert, i, now_ms);
                    }
                    None => self.session_remove(i, EventKind::SessionExpired, now_ms, now_ns),
                }
            }
        }
    }

    fn log_session(&mut self, kind: EventKind, i: u32, now_ns: u64) {
        let s = *self.sessions.get(i);
        let b = *self.bibs.get(s.bib);
        let remote = self
            .cfg
            .log_destinations
            .then_some((Ipv4Addr::from(s.remote4), s.rport));
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
            remote,
        });
    }
}
