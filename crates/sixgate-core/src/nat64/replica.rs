//! Sessions shared with other gateway nodes (docs/ha.md): the export of this
//! worker's table changes into a bounded ring, and the import of a peer's
//! records into these tables, with this worker as their sole writer. The wire
//! format is `sixgate-sync`'s; this is the table side, free of I/O.
//!
//! - Export ([`crate::Translator::enable_replica_export`],
//!   [`crate::Translator::drain_replica_changes`]): a session created, its TCP
//!   state changed, a session deleted, and refreshes coalesced to about one
//!   per eighth to quarter lifetime ([`Nat64::refresh_due`]). A full ring counts the
//!   change as lost, so the caller can schedule a snapshot; it never allocates.
//! - Import ([`crate::Translator::import_replica`]): an upsert creates or
//!   updates the session and its BIB entry on the peer's pool4 address; a
//!   delete removes the session. Imports are not exported again. A peer's
//!   mapping of an IPv6 transport address mapped otherwise here is kept
//!   beside it (`replica_conflict`); the mark and sweep after a peer's
//!   snapshot are `replica_snapshot`'s.

use super::Nat64;
use super::bib::{Bib, COOL_LINK, COOLING, STATIC, proto_of};
use super::config::Proto;
use super::event::EventKind;
use super::session::{CLASSES, ICMP, TCP_EST, TCP_SYN, TCP_TRANS, UDP};
use super::slab::{Link, NIL};
use super::tcp::TcpState;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One session as another node sees it: both transport addresses, protocol,
/// TCP state and the remaining lifetime (never a wall-clock time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replica {
    /// Protocol.
    pub proto: Proto,
    /// §3.5.2 state, for TCP.
    pub tcp_state: Option<TcpState>,
    /// Milliseconds until it expires unless refreshed.
    pub remaining_ms: u32,
    /// IPv6 host.
    pub v6: Ipv6Addr,
    /// Its port (ICMP: identifier).
    pub port6: u16,
    /// Pool4 address.
    pub v4: Ipv4Addr,
    /// Pool4 port (ICMP: identifier).
    pub port4: u16,
    /// IPv4 remote.
    pub remote4: Ipv4Addr,
    /// Remote port (ICMP: the identifier again, as the session key has it).
    pub rport: u16,
}

/// What a change does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaOp {
    /// Create or overwrite.
    Upsert,
    /// Remove.
    Delete,
    /// A UDP or ICMP query session carried its third packet
    /// ([`SETTLE_AFTER`]): an in-kernel fast path may take it now
    /// (docs/fastpath.md). This node's own hint: never sent to peers, never
    /// imported.
    Settled,
}

/// Packets a UDP or ICMP query session carries on the slow path before it is
/// [`ReplicaOp::Settled`]: its third one settles it, so that a request and its
/// reply (a DNS query, one ping) never cost the fast path's map writes, as a
/// TCP session is installed only once its handshake is done.
pub const SETTLE_AFTER: u8 = 2;

/// Why an imported record was not applied (counted by the caller; the tables
/// are unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportError {
    /// No NAT64 tables (SIIT, MAP-T BR).
    NotNat64,
    /// Another worker serves this subscriber or pool4 port: route it there.
    WrongWorker,
    /// The pool4 address is not in pool4 (another configuration).
    NotInPool4,
    /// The IPv4 transport address is mapped to another IPv6 one here (a
    /// static entry, a misconfiguration), or the IPv6 one to another IPv4 one
    /// that cannot be kept beside it (static, already two, no room:
    /// `replica_conflict`).
    Conflict,
    /// No room in the BIB or session table.
    TableFull,
}

/// A bounded ring of exported changes.
pub(crate) struct ChangeRing {
    buf: Vec<(ReplicaOp, Replica)>,
    head: usize,
    len: usize,
    pub(crate) lost: u64,
}

impl ChangeRing {
    pub(crate) fn new(cap: usize) -> Self {
        ChangeRing {
            buf: Vec::with_capacity(cap.max(1)),
            head: 0,
            len: 0,
            lost: 0,
        }
    }

    fn push(&mut self, c: (ReplicaOp, Replica)) {
        let cap = self.buf.capacity();
        if self.len == cap {
            self.lost += 1;
            return;
        }
        let at = (self.head + self.len) % cap;
        if at < self.buf.len() {
            self.buf[at] = c;
        } else {
            self.buf.push(c); // within capacity: no allocation
        }
        self.len += 1;
    }

    pub(crate) fn drain(&mut self, mut f: impl FnMut(ReplicaOp, &Replica)) {
        let cap = self.buf.capacity();
        while self.len > 0 {
            let (op, r) = self.buf[self.head];
            f(op, &r);
            self.head = (self.head + 1) % cap;
            self.len -= 1;
        }
    }
}

fn proto_byte(p: Proto) -> u8 {
    match p {
        Proto::Tcp => 0,
        Proto::Udp => 1,
        Proto::Icmp => 2,
    }
}

/// The lifetime class of a TCP state (RFC 6146 §3.5.2.2: V4 INIT waits
/// TCP_INCOMING_SYN, the FIN RCV states keep TCP_EST, the others TCP_TRANS).
fn tcp_class(s: TcpState) -> u8 {
    match s {
        TcpState::V4Init => TCP_SYN,
        TcpState::Established | TcpState::V4FinRcv | TcpState::V6FinRcv => TCP_EST,
        TcpState::V6Init | TcpState::V4FinV6FinRcv | TcpState::Trans => TCP_TRANS,
    }
}

/// docs/ha.md, "A packet of a session this node does not own": the two
/// opening states join to ESTABLISHED, the two FIN states to both FINs;
/// otherwise the record's state wins.
fn merge(local: TcpState, remote: TcpState) -> TcpState {
    use TcpState::*;
    match (local, remote) {
        (V4Init, V6Init) | (V6Init, V4Init) => Established,
        (V4FinRcv, V6FinRcv) | (V6FinRcv, V4FinRcv) => V4FinV6FinRcv,
        _ => remote,
    }
}

impl Nat64 {
    /// Turns on the export of changes into a ring of `cap` (allocated now).
    pub(crate) fn enable_export(&mut self, cap: usize) {
        self.changes = Some(ChangeRing::new(cap));
    }

    /// Session `i` as a replica, its lifetime counted from `now_ms`.
    fn replica_of(&self, i: u32, now_ms: u32) -> Replica {
        let s = *self.sessions.get(i);
        let b = *self.bibs.get(s.bib);
        let proto = proto_of(b.proto);
        Replica {
            proto,
            tcp_state: (proto == Proto::Tcp).then(|| TcpState::from_u8(s.state)),
            remaining_ms: s
                .deadline
                .wrapping_sub(now_ms)
                .min(super::MAX_TIMEOUT_S * 1000),
            v6: Ipv6Addr::from(b.v6),
            port6: b.port6,
            v4: Ipv4Addr::from(b.v4),
            port4: b.port4,
            remote4: Ipv4Addr::from(s.remote4),
            rport: s.rport,
        }
    }

    /// docs/ha.md, "refreshes coalesced": a refresh of session `i` is
    /// exported when its previous refresh fell in an earlier period, a period
    /// being the largest power of two of milliseconds not over a quarter of
    /// its lifetime (at least 1024 ms), so a busy flow sends at most one
    /// record per eighth to quarter lifetime, and a replica (which expires
    /// after the remaining time it was sent) never runs out while the flow
    /// lives. A power of two, so that the test is two shifts, not two
    /// divisions, on every packet of a session. No per-session memory: the
    /// previous refresh is the deadline less the lifetime.
    #[inline]
    pub(crate) fn refresh_due(&self, i: u32, class: u8, now_ms: u32) -> bool {
        let life = self.lifetime_ms(class);
        let shift = (life / 4).max(1024).ilog2();
        let last = self.sessions.get(i).deadline.wrapping_sub(life);
        (last >> shift) != (now_ms >> shift)
    }

    /// RFC 7422: an imported mapping counts in its subscriber's block, made
    /// here if it is the block's first (not logged: the peer did; but
    /// logged when restoring this node's own state, docs/restart.md).
    fn import_block(&mut self, p: u8, v6: u128, v4: u32, port4: u16, now_ns: u64) {
        let bi = match self.subs.block_of(p, v4, port4) {
            Some(bi) => Some(bi),
            None => {
                let first = port4 & !(self.subs.block_size() - 1);
                let log = self.cfg.event_log;
                // A restart's own block: logged again, since the stop logged
                // it released (a peer's is the peer's to log).
                let muted = self.events.muted;
                self.events.muted = muted && !self.restoring;
                let bi = self.subs.get_or_create(v6).and_then(|sub| {
                    self.subs
                        .block_add(sub, p, v4, first, now_ns, &mut self.events, log)
                });
                self.events.muted = muted;
                bi
            }
        };
        // No room for the block record: the mapping stands, unaccounted
        // (its release finds no block), as with no blocks at all.
        if let Some(bi) = bi {
            self.subs.blocks.get_mut(bi).used += 1;
        }
    }

    /// A peer's records are being applied: nothing is exported back, and
    /// no start is logged (the peer logged it); an end is logged by the
    /// node that made the entry (`replica_snapshot::logs_end`), so each
    /// event is one record for the whole group (docs/logging.md).
    pub(crate) fn set_importing(&mut self, on: bool) {
        self.importing = on;
        self.events.muted = on;
    }

    /// Records a change of session `i` for export (not while importing).
    /// The test is inline; the record is built out of line, so that a NAT64
    /// without export (and the TCP state machine's callers) does not carry it.
    #[inline(always)]
    pub(crate) fn export(&mut self, op: ReplicaOp, i: u32, now_ms: u32) {
        if self.importing || self.changes.is_none() {
            return;
        }
        self.export_now(op, i, now_ms);
    }

    #[cold]
    #[inline(never)]
    fn export_now(&mut self, op: ReplicaOp, i: u32, now_ms: u32) {
        let mut r = self.replica_of(i, now_ms);
        if op == ReplicaOp::Delete {
            r.remaining_ms = 0;
        }
        if let Some(c) = self.changes.as_mut() {
            c.push((op, r));
        }
    }

    /// Applies a record from peer `from` (`None`: not said), as the sole
    /// writer of these tables.
    pub(crate) fn import(
        &mut self,
        from: Option<u16>,
        op: ReplicaOp,
        r: &Replica,
        now_ns: u64,
    ) -> Result<(), ImportError> {
        let now = self.now_ms(now_ns);
        let v6 = u128::from(r.v6);
        let v4 = u32::from(r.v4);
        let p = proto_byte(r.proto);
        // A static BIB entry lives with its IPv6 side, whatever worker its
        // port would steer to: a session on it is this worker's.
        let on_static = || {
            self.bib_by4(p, v4, r.port4).is_some_and(|b| {
                let e = self.bibs.get(b);
                e.flags & STATIC != 0 && e.v6 == v6.to_be_bytes() && e.port6 == r.port6
            })
        };
        if self.workers > 1
            && (!self.owns_subscriber(v6) || !(self.owns_port(r.port4) || on_static()))
        {
            return Err(ImportError::WrongWorker);
        }
        if !self.in_pool4(v4) {
            return Err(ImportError::NotInPool4);
        }
        self.set_importing(true);
        let out = match op {
            ReplicaOp::Delete => {
                if let Some(b) = self.bib_by4(p, v4, r.port4)
                    && let Some(s) = self.session_find(b, u32::from(r.remote4), r.rport)
                {
                    self.session_remove(s, EventKind::SessionExpired, now, now_ns);
                }
                Ok(())
            }
            ReplicaOp::Upsert => self.import_upsert(p, r, now, now_ns).map(|b| {
                self.mark_restated(b, from);
            }),
            // A node's own hint, nothing to apply.
            ReplicaOp::Settled => Ok(()),
        };
        self.set_importing(false);
        out
    }

    fn import_upsert(
        &mut self,
        p: u8,
        r: &Replica,
        now: u32,
        now_ns: u64,
    ) -> Result<u32, ImportError> {
        let (v6, v4, remote4) = (u128::from(r.v6), u32::from(r.v4), u32::from(r.remote4));
        let class = match (r.proto, r.tcp_state) {
            (Proto::Tcp, Some(s)) => tcp_class(s),
            (Proto::Tcp, None) => TCP_TRANS,
            (Proto::Udp, _) => UDP,
            (Proto::Icmp, _) => ICMP,
        };
        debug_assert!((class as usize) < CLASSES);
        let b = match self.bib_by4(p, v4, r.port4) {
            Some(b) => {
                let e = self.bibs.get(b);
                if e.v6 != v6.to_be_bytes() || e.port6 != r.port6 {
                    return Err(ImportError::Conflict);
                }
                b
            }
            None => self.import_bib(p, r, now_ns)?,
        };
        let s = match self.session_find(b, remote4, r.rport) {
            Some(s) => {
                if let Some(remote) = r.tcp_state {
                    let local = TcpState::from_u8(self.sessions.get(s).state);
                    self.sessions.get_mut(s).state = merge(local, remote) as u8;
                }
                let class = match r.tcp_state {
                    Some(_) => tcp_class(TcpState::from_u8(self.sessions.get(s).state)),
                    None => class,
                };
                self.session_refresh(s, class, now);
                s
            }
            None => {
                if !self.session_room() {
                    if self.bibs.get(b).sessions == NIL
                        && self.bibs.get(b).flags & (COOLING | STATIC) == 0
                    {
                        self.bib_idle(b, now, now_ns);
                    }
                    return Err(ImportError::TableFull);
                }
                let state = r.tcp_state.map_or(0, |s| s as u8);
                match self.session_insert(b, remote4, r.rport, state, class, now, now_ns) {
                    Some(s) => s,
                    None => {
                        self.bib_idle(b, now, now_ns);
                        return Err(ImportError::TableFull);
                    }
                }
            }
        };
        // The peer's remaining time, never more than the class lifetime: the
        // class FIFO then expires it late at worst, never early.
        let full = self.lifetime_ms(self.sessions.get(s).class);
        self.sessions.get_mut(s).deadline = now.wrapping_add(r.remaining_ms.min(full));
        // The session exists here now: an IPv4 SYN held for it is forgotten
        // (the peer's IPv6 SYN opened it, §3.5.2.2), and packets held for
        // this record (its first replies, which overtook it) are translated
        // at the next tick.
        self.held.session_made(p, (v4, r.port4, remote4, r.rport));
        Ok(b)
    }
    /// A dynamic BIB entry for record `r` (none exists at its IPv4 side),
    /// with the import's checks: no other mapping holds the port, room in
    /// the tables and the subscriber's share, and with RFC 7422 the port in
    /// a block of its own subscriber.
    fn import_bib(&mut self, p: u8, r: &Replica, now_ns: u64) -> Result<u32, ImportError> {
        let (v6, v4) = (u128::from(r.v6), u32::from(r.v4));
        if self.port_taken(p, v4, r.port4) {
            return Err(ImportError::Conflict);
        }
        // This IPv6 transport address mapped otherwise here: both
        // stay if they can (`replica_conflict`).
        let holder = self.bib_by6(p, v6, r.port6);
        if let Some(h) = holder
            && !self.may_keep_both(h)
        {
            self.bib_conflicts_refused += 1;
            return Err(ImportError::Conflict);
        }
        if self.bibs.is_full() || !self.session_room() || !self.subs.has_room_for(v6) {
            return Err(ImportError::TableFull);
        }
        // RFC 7422: the port lies in a block of its subscriber; here
        // too no other subscriber may have that block.
        if self.subs.blocks_on()
            && let Some(bi) = self.subs.block_of(p, v4, r.port4)
            && self.subs.find(v6) != Some(self.subs.blocks.get(bi).sub)
        {
            return Err(ImportError::Conflict);
        }
        let entry = Bib {
            v6: v6.to_be_bytes(),
            v4,
            port6: r.port6,
            port4: r.port4,
            proto: p,
            flags: 0,
            sessions: NIL,
            cool: Link::NONE,
            cool_until: 0,
            mark: 0,
        };
        let b = self
            .bib_insert(entry, now_ns)
            .ok_or(ImportError::TableFull)?;
        self.subs.port_taken(v6);
        if self.subs.blocks_on() {
            self.import_block(p, v6, v4, r.port4, now_ns);
        }
        if let Some(h) = holder {
            self.keep_both(h, b);
        }
        Ok(b)
    }

    /// A dynamic BIB entry this node had cooling before a restart (RFC 6888
    /// REQ-8, `port_reuse_delay`; docs/restart.md): made again, without
    /// sessions, cooling for what `r.remaining_ms` says (at most the delay),
    /// so that its port is not given to another subscriber sooner than
    /// without the restart. Not logged (the run that made it did; its end is
    /// logged here). One already at its IPv4 side for the same mapping (a
    /// restored session made it) is left as it is.
    pub(crate) fn restore_cooling(&mut self, r: &Replica, now_ns: u64) -> Result<(), ImportError> {
        let now = self.now_ms(now_ns);
        let (v6, v4, p) = (u128::from(r.v6), u32::from(r.v4), proto_byte(r.proto));
        if self.workers > 1 && (!self.owns_subscriber(v6) || !self.owns_port(r.port4)) {
            return Err(ImportError::WrongWorker);
        }
        if !self.in_pool4(v4) {
            return Err(ImportError::NotInPool4);
        }
        if let Some(b) = self.bib_by4(p, v4, r.port4) {
            let e = self.bibs.get(b);
            return if e.v6 == v6.to_be_bytes() && e.port6 == r.port6 {
                Ok(())
            } else {
                Err(ImportError::Conflict)
            };
        }
        if self.port_reuse_ms == 0 {
            return Ok(());
        }
        self.set_importing(true);
        self.restoring = true;
        let out = self.import_bib(p, r, now_ns).map(|b| {
            let e = self.bibs.get_mut(b);
            e.flags |= COOLING;
            e.cool_until = now.wrapping_add(r.remaining_ms.min(self.port_reuse_ms));
            // Restored before any entry starts cooling, shortest first: the
            // list stays in order (or an entry ends late, never early).
            self.cooling.push_back(&mut self.bibs.items, b, COOL_LINK);
        });
        self.restoring = false;
        self.set_importing(false);
        out
    }

    /// The dynamic BIB entries cooling (RFC 6888 REQ-8), as records with no
    /// remote and their remaining wait, for the state file.
    pub(crate) fn walk_cooling(&self, now_ns: u64, mut f: impl FnMut(Replica)) {
        let now = self.peek_ms(now_ns);
        let mut i = self.cooling.head;
        while i != NIL {
            let b = self.bibs.get(i);
            let left = b.cool_until.wrapping_sub(now);
            // Already due (the next tick frees it): nothing to keep.
            if left > 0 && left <= self.port_reuse_ms {
                f(Replica {
                    proto: proto_of(b.proto),
                    tcp_state: None,
                    remaining_ms: left,
                    v6: Ipv6Addr::from(b.v6),
                    port6: b.port6,
                    v4: Ipv4Addr::from(b.v4),
                    port4: b.port4,
                    remote4: Ipv4Addr::UNSPECIFIED,
                    rport: 0,
                });
            }
            i = b.cool.next;
        }
    }
}
