//! One peer: our stream to it and its stream to us, the timers that drive
//! acks, NACKs, keepalives and resync requests, and the snapshot bookkeeping
//! (docs/ha.md, "Reliability"). The caller owns the socket and the clock:
//! [`Peer::receive`] takes a datagram, [`Peer::poll_transmit`] produces one,
//! [`Peer::handle_timeout`] runs the timers.

use crate::Event;
use crate::auth::Key;
use crate::counters::{Counters, Drop};
use crate::receiver::Receiver;
use crate::record::{RECORD_LEN, Record};
use crate::replay::ReplayWindow;
use crate::sender::{NackOutcome, Sender};
use crate::wire::{self, Body, Header, Kind, MAX_NACK_RANGES, ResyncReason};

const MS: u64 = 1_000_000;

/// Settings of one peer; [`PeerConfig::new`] gives the documented defaults.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    /// Our node id.
    pub node: u16,
    /// The peer's node id.
    pub peer: u16,
    /// Our start time, ns (orders our restarts for the peer).
    pub epoch: u64,
    /// Hash of the configuration both must share.
    pub config_hash: u64,
    /// Largest datagram (link MTU minus IP and UDP headers).
    pub max_datagram: usize,
    /// Reliable messages kept until acked.
    pub queue_capacity: usize,
    /// Resends of one message before the stream is resynced.
    pub max_resends: u8,
    /// Longest a record waits for its datagram to fill.
    pub flush_delay_ns: u64,
    /// Longest a record waits on an idle link: one with nothing sent
    /// waiting for its ack (as Nagle's algorithm). The first record after a
    /// quiet spell (a new session's) then leaves at once, ahead of its
    /// session's first replies that cross the other node (docs/ha.md); a
    /// busy link still fills datagrams.
    pub idle_flush_delay_ns: u64,
    /// Keepalive after this much silence.
    pub keepalive_ns: u64,
    /// Keepalive (carrying the next sequence number) after this much silence
    /// while something is unacked: finds a lost last message.
    pub probe_ns: u64,
    /// The peer is down after this much silence.
    pub dead_ns: u64,
    /// A gap is NACKed once it is this old (reordering settles first).
    pub nack_delay_ns: u64,
    /// A gap is NACKed again after this long.
    pub nack_interval_ns: u64,
    /// NACKs of one gap before a resync is requested.
    pub max_nacks: u8,
    /// A resync request is repeated after this long.
    pub resync_retry_ns: u64,
    /// An ack waits at most this long for a datagram to ride on.
    pub ack_delay_ns: u64,
    /// An ack is sent at once after this many messages.
    pub ack_every: u32,
}

impl PeerConfig {
    /// Defaults of docs/ha.md for a 1500-byte IPv6 link.
    pub fn new(node: u16, peer: u16, epoch: u64, config_hash: u64) -> PeerConfig {
        PeerConfig {
            node,
            peer,
            epoch,
            config_hash,
            max_datagram: 1452,
            queue_capacity: 1024,
            max_resends: 4,
            flush_delay_ns: MS,
            idle_flush_delay_ns: 0,
            keepalive_ns: 1000 * MS,
            probe_ns: 100 * MS,
            dead_ns: 3000 * MS,
            nack_delay_ns: 10 * MS,
            nack_interval_ns: 50 * MS,
            max_nacks: 3,
            resync_retry_ns: 1000 * MS,
            ack_delay_ns: 2 * MS,
            ack_every: 16,
        }
    }
}

/// What `sixgate show sync` shows of a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// Heard from within `dead_ns`.
    pub up: bool,
    /// Its stream reached the end of a snapshot since it (or we) started.
    pub synced: bool,
    /// Our next sequence number to it.
    pub next_seq: u32,
    /// Its next sequence number we expect.
    pub expected: Option<u32>,
    /// Our messages it has not acked.
    pub unacked: usize,
    /// A snapshot to it is running.
    pub snapshot_running: bool,
    /// We drain ([`Peer::drain`]): our DRAIN is queued or sent.
    pub draining: bool,
    /// It acknowledged our DRAIN and everything before it.
    pub drain_acked: bool,
    /// It sent us DRAIN in its current epoch.
    pub peer_drained: bool,
    /// Counters.
    pub counters: Counters,
}

/// One peer's streams.
#[derive(Debug)]
pub struct Peer {
    cfg: PeerConfig,
    key: Option<Key>,
    tx: Sender,
    rx: Receiver,
    replay: ReplayWindow,
    peer_epoch: Option<u64>,
    next_pn: u32,
    last_sent: Option<u64>,
    last_heard: Option<u64>,
    up: bool,
    /// Our running snapshot: id, records pushed.
    snapshot: Option<(u32, u64)>,
    /// Our running snapshot began in the peer's current epoch.
    snapshot_this_epoch: bool,
    /// The sequence number of such a snapshot's SNAP_END, until acked.
    snapshot_end: Option<u32>,
    next_snapshot_id: u32,
    snapshot_wanted: Option<ResyncReason>,
    /// A resync request to send, and when the last one went.
    resync_to_send: Option<ResyncReason>,
    last_resync_request: Option<u64>,
    gap_since: Option<u64>,
    last_nack: Option<u64>,
    nacks: u8,
    nack_due: bool,
    /// The ack we last sent, and since when a newer one waits.
    ack_sent: Option<u32>,
    ack_waiting_since: Option<u64>,
    mismatch_logged: Option<u64>,
    /// Our drain, once asked for.
    drain: Option<OurDrain>,
    next_drain_id: u32,
    counters: Counters,
}

/// Our DRAIN to the peer (docs/ha.md, "Planned drain").
#[derive(Clone, Copy, Debug)]
struct OurDrain {
    id: u32,
    /// Its sequence number once queued; `None`: to be queued (after a
    /// running snapshot, which voids what was queued before it).
    seq: Option<u32>,
    acked: bool,
}

impl Peer {
    /// A peer; allocates its queues now.
    pub fn new(cfg: PeerConfig, key: Option<Key>) -> Peer {
        let per = wire::records_per_datagram(cfg.max_datagram, key.is_some()).max(1);
        Peer {
            tx: Sender::new(per, cfg.queue_capacity.max(1), cfg.max_resends),
            rx: Receiver::new(per * RECORD_LEN),
            cfg,
            key,
            replay: ReplayWindow::default(),
            peer_epoch: None,
            next_pn: 1,
            last_sent: None,
            last_heard: None,
            up: false,
            snapshot: None,
            snapshot_this_epoch: false,
            snapshot_end: None,
            next_snapshot_id: 1,
            snapshot_wanted: None,
            resync_to_send: None,
            last_resync_request: None,
            gap_since: None,
            last_nack: None,
            nacks: 0,
            nack_due: false,
            ack_sent: None,
            ack_waiting_since: None,
            mismatch_logged: None,
            drain: None,
            next_drain_id: 1,
            counters: Counters::default(),
        }
    }

    /// One received datagram. Drops are counted and returned; events for the
    /// tables and the log go to `ev`.
    pub fn receive(
        &mut self,
        now: u64,
        buf: &[u8],
        ev: &mut impl FnMut(Event),
    ) -> Result<(), Drop> {
        let r = self.receive_inner(now, buf, ev);
        if let Err(why) = r {
            self.counters.drop(why);
        }
        r
    }

    fn receive_inner(
        &mut self,
        now: u64,
        buf: &[u8],
        ev: &mut impl FnMut(Event),
    ) -> Result<(), Drop> {
        let d = wire::decode(buf, self.key.as_ref())?;
        let h = d.header;
        if h.config_hash != self.cfg.config_hash {
            if self.mismatch_logged != Some(h.config_hash) {
                self.mismatch_logged = Some(h.config_hash);
                ev(Event::ConfigMismatch {
                    ours: self.cfg.config_hash,
                    theirs: h.config_hash,
                });
            }
            return Err(Drop::ConfigMismatch);
        }
        if h.receiver != self.cfg.node {
            return Err(Drop::WrongNode);
        }
        if h.sender != self.cfg.peer {
            return Err(Drop::UnknownPeer);
        }
        match self.peer_epoch {
            Some(e) if h.epoch < e => return Err(Drop::Replayed),
            Some(e) if h.epoch > e => {
                // A restart: its stream starts over, and it has lost our state.
                self.rx.reset();
                self.replay = ReplayWindow::default();
                self.reset_rx_timers();
                self.peer_epoch = Some(h.epoch);
                // What we sent before reached the old process, not this one.
                self.snapshot_this_epoch = false;
                self.snapshot_end = None;
                ev(Event::PeerRestarted);
            }
            Some(_) => {}
            None => self.peer_epoch = Some(h.epoch),
        }
        if !self.replay.accept(h.packet_number) {
            return Err(Drop::Replayed);
        }
        // Authentic and fresh: the peer is alive, whatever its body says.
        self.last_heard = Some(now);
        if !self.up {
            self.up = true;
            ev(Event::PeerUp);
        }
        // Our snapshot acknowledged by this datagram counts from the next
        // one on: a SNAP_BEGIN riding with the ack may have been queued
        // before our records were in the peer's tables.
        let mut has_ours = false;
        if let Some(ack) = h.ack {
            self.tx.on_ack(ack);
            if let Some(seq) = self.snapshot_end
                && crate::replay::before(seq, ack)
                && !crate::replay::before(self.tx.next_seq, ack)
            {
                self.snapshot_end = None;
                has_ours = true;
            }
            if let Some(d) = &mut self.drain
                && let Some(seq) = d.seq
                && crate::replay::before(seq, ack)
                && !crate::replay::before(self.tx.next_seq, ack)
            {
                d.acked = true;
            }
        }
        let before_expected = self.rx.expected;
        let result = match d.body {
            Body::Data(records) => {
                self.rx
                    .on_reliable(h.seq, Kind::Data, records.bytes(), &mut self.counters, ev)
            }
            Body::SnapBegin(id) => self.rx.on_reliable(
                h.seq,
                Kind::SnapBegin,
                &id.to_be_bytes(),
                &mut self.counters,
                ev,
            ),
            Body::SnapEnd(id, n) => {
                let mut b = [0u8; 12];
                b[..4].copy_from_slice(&id.to_be_bytes());
                b[4..].copy_from_slice(&n.to_be_bytes());
                self.rx
                    .on_reliable(h.seq, Kind::SnapEnd, &b, &mut self.counters, ev)
            }
            Body::Drain(id, n) => {
                let mut b = [0u8; wire::DRAIN_LEN];
                b[..4].copy_from_slice(&id.to_be_bytes());
                b[4..].copy_from_slice(&n.to_be_bytes());
                self.rx
                    .on_reliable(h.seq, Kind::Drain, &b, &mut self.counters, ev)
            }
            Body::Keepalive => {
                self.rx.announced(h.seq);
                Ok(())
            }
            Body::Nack(ranges) => {
                self.counters.nacks_received += 1;
                if self.tx.on_nack(ranges.iter()) == NackOutcome::GiveUp {
                    // Even a running snapshot is broken by a lost message.
                    self.must_snapshot(ResyncReason::Gap, ev);
                }
                Ok(())
            }
            Body::ResyncRequest(reason) => {
                self.want_snapshot(reason, ev);
                Ok(())
            }
        };
        self.rx.peer_has_ours |= has_ours;
        if self.rx.expected != before_expected {
            self.ack_waiting_since.get_or_insert(now);
            if !self.rx.gap() {
                self.gap_since = None;
                self.nacks = 0;
            }
        }
        // One verdict per datagram: accepted, or one drop reason.
        if result.is_ok() {
            self.counters.datagrams_in += 1;
        }
        result
    }

    fn reset_rx_timers(&mut self) {
        self.gap_since = None;
        self.last_nack = None;
        self.nacks = 0;
        self.nack_due = false;
        self.ack_sent = None;
        self.ack_waiting_since = None;
        self.last_resync_request = None;
    }

    /// The peer asked: a running snapshot already restates everything.
    fn want_snapshot(&mut self, reason: ResyncReason, ev: &mut impl FnMut(Event)) {
        if self.snapshot.is_none() {
            self.must_snapshot(reason, ev);
        }
    }

    /// Something is lost for good: a new snapshot is due, even if one runs.
    fn must_snapshot(&mut self, reason: ResyncReason, ev: &mut impl FnMut(Event)) {
        if self.snapshot_wanted.is_none() {
            self.snapshot_wanted = Some(reason);
            ev(Event::SnapshotRequested(reason));
        }
    }

    /// Queues a record of a table change. `false`: the queue is full; the
    /// drop is counted and a snapshot is wanted ([`Peer::snapshot_wanted`]),
    /// so nothing is lost for good.
    pub fn push(&mut self, now: u64, r: &Record) -> bool {
        if !self.tx.push(now, r) {
            self.counters.queue_full += 1;
            // Also during a snapshot: its walk may have passed this entry.
            self.snapshot_wanted.get_or_insert(ResyncReason::Gap);
            return false;
        }
        self.counters.records_out += 1;
        if let Some((_, n)) = &mut self.snapshot {
            *n += 1;
        }
        true
    }

    /// Records that can be pushed now without refusal: a snapshot's producer
    /// pushes at most this many (pacing by the peer's acks).
    pub fn room(&self) -> usize {
        self.tx.room()
    }

    /// Asks the peer for a snapshot of its tables (sent with the next
    /// [`Peer::poll_transmit`]): this node lost records after they arrived,
    /// e.g. a full import ring ([`ResyncReason::ImportFull`]).
    pub fn request_resync(&mut self, reason: ResyncReason) {
        self.resync_to_send = Some(reason);
    }

    /// Our configuration changed (a reload): datagrams carry `hash` from now
    /// on, and a peer still on another one is logged again.
    pub fn set_config_hash(&mut self, hash: u64) {
        self.cfg.config_hash = hash;
        self.mismatch_logged = None;
    }

    /// Makes a snapshot of our tables due (this node lost changes before
    /// they reached the queue, e.g. a worker's full export ring).
    pub fn snapshot_due(&mut self, reason: ResyncReason) {
        self.snapshot_wanted.get_or_insert(reason);
    }

    /// Why a snapshot of our tables is due, if one is.
    pub fn snapshot_wanted(&self) -> Option<ResyncReason> {
        self.snapshot_wanted
    }

    /// Whether our snapshot to the peer is running.
    pub fn snapshot_running(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Starts a snapshot (or restarts a running one, when
    /// [`Peer::snapshot_wanted`] says so): what is queued is dropped (the
    /// snapshot restates it) and SNAP_BEGIN is queued. Then push every entry as
    /// [`Op::SessionUpsert`](crate::record::Op) within [`Peer::room`], and
    /// call [`Peer::end_snapshot`]. Returns the snapshot id.
    pub fn start_snapshot(&mut self) -> u32 {
        self.tx.clear();
        // SNAP_BEGIN voids an unacked DRAIN: it goes again after SNAP_END.
        if let Some(d) = &mut self.drain
            && !d.acked
        {
            d.seq = None;
        }
        let id = self.next_snapshot_id;
        self.next_snapshot_id = self.next_snapshot_id.wrapping_add(1);
        // The queue was just emptied, so SNAP_BEGIN always fits.
        let _ = self.tx.push_control(Kind::SnapBegin, &id.to_be_bytes());
        self.snapshot = Some((id, 0));
        self.snapshot_this_epoch = true;
        self.snapshot_end = None;
        self.snapshot_wanted = None;
        self.counters.resync_started += 1;
        id
    }

    /// Ends the running snapshot; `false` when the queue has no room yet
    /// (call again later) or none runs.
    pub fn end_snapshot(&mut self) -> bool {
        let Some((id, n)) = self.snapshot else {
            return false;
        };
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&id.to_be_bytes());
        b[4..].copy_from_slice(&n.to_be_bytes());
        if !self.tx.push_control(Kind::SnapEnd, &b) {
            return false;
        }
        if self.snapshot_this_epoch {
            self.snapshot_end = Some(self.tx.next_seq.wrapping_sub(1));
        }
        self.snapshot = None;
        self.queue_drain();
        true
    }

    /// Drains towards this peer (`sixgate sync drain`, docs/ha.md, "Planned
    /// drain"): queues a DRAIN after every record pushed so far, so that
    /// once the peer acknowledges it ([`Peer::drain_acked`]) it has all of
    /// them and keeps our entries. Records pushed later still flow. A second
    /// call while draining does nothing.
    pub fn drain(&mut self) {
        if self.drain.is_some() {
            return;
        }
        let id = self.next_drain_id;
        self.next_drain_id = self.next_drain_id.wrapping_add(1);
        self.drain = Some(OurDrain {
            id,
            seq: None,
            acked: false,
        });
        self.queue_drain();
    }

    /// Queues our DRAIN if it waits and can go now (no snapshot running,
    /// room in the queue); else a later call does.
    fn queue_drain(&mut self) {
        let Some(d) = self.drain else { return };
        if d.seq.is_some() || d.acked || self.snapshot.is_some() {
            return;
        }
        let mut b = [0u8; wire::DRAIN_LEN];
        b[..4].copy_from_slice(&d.id.to_be_bytes());
        b[4..].copy_from_slice(&self.counters.records_out.to_be_bytes());
        if self.tx.push_control(Kind::Drain, &b) {
            let seq = self.tx.next_seq.wrapping_sub(1);
            self.drain = Some(OurDrain {
                seq: Some(seq),
                ..d
            });
        }
    }

    /// Whether the peer acknowledged our DRAIN, and so every record before it.
    pub fn drain_acked(&self) -> bool {
        self.drain.is_some_and(|d| d.acked)
    }

    /// Runs the timers: peer down, NACK of a gap, resync requests.
    pub fn handle_timeout(&mut self, now: u64, ev: &mut impl FnMut(Event)) {
        if self.up
            && self
                .last_heard
                .is_some_and(|t| now.saturating_sub(t) >= self.cfg.dead_ns)
        {
            self.up = false;
            ev(Event::PeerDown);
        }
        let retry_due = self
            .last_resync_request
            .is_none_or(|t| now.saturating_sub(t) >= self.cfg.resync_retry_ns);
        if self.rx.expected.is_none() {
            // Nothing to build on until the peer's snapshot starts.
            if self.up && retry_due {
                self.resync_to_send = Some(ResyncReason::Joined);
            }
            return;
        }
        if !self.rx.gap() {
            self.gap_since = None;
            self.nacks = 0;
            return;
        }
        let since = *self.gap_since.get_or_insert(now);
        if now.saturating_sub(since) < self.cfg.nack_delay_ns {
            return;
        }
        if self
            .last_nack
            .is_some_and(|t| now.saturating_sub(t) < self.cfg.nack_interval_ns)
        {
            return;
        }
        if self.nacks >= self.cfg.max_nacks {
            if retry_due {
                self.resync_to_send = Some(ResyncReason::Gap);
                self.nacks = 0;
                self.gap_since = Some(now);
            }
            return;
        }
        self.nack_due = true;
    }

    /// The next datagram for the peer, written into `out` (at least
    /// `max_datagram` bytes); its length, or `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: u64, out: &mut [u8]) -> Option<usize> {
        if self.drain.is_some_and(|d| d.seq.is_none()) {
            self.queue_drain();
        }
        if let Some(reason) = self.resync_to_send.take() {
            self.last_resync_request = Some(now);
            self.counters.resync_requested += 1;
            return self.emit(
                now,
                out,
                Kind::ResyncRequest,
                self.tx.next_seq,
                &[reason as u8],
                0,
            );
        }
        if self.nack_due {
            self.nack_due = false;
            let mut ranges = [(0u32, 0u32); MAX_NACK_RANGES];
            let n = self.rx.missing(&mut ranges);
            if n > 0 {
                let mut body = [0u8; MAX_NACK_RANGES * 8];
                for (i, (first, last)) in ranges[..n].iter().enumerate() {
                    body[i * 8..i * 8 + 4].copy_from_slice(&first.to_be_bytes());
                    body[i * 8 + 4..i * 8 + 8].copy_from_slice(&last.to_be_bytes());
                }
                self.last_nack = Some(now);
                self.nacks += 1;
                self.counters.nacks_sent += 1;
                return self.emit(now, out, Kind::Nack, self.tx.next_seq, &body[..n * 8], 0);
            }
        }
        let flush = self.tx.batch_full()
            || self
                .tx
                .pending_since
                .is_some_and(|t| now.saturating_sub(t) >= self.flush_delay())
            || self.snapshot.is_some() && self.tx.has_pending();
        if flush {
            let _ = self.tx.seal();
        }
        if let Some((i, resend)) = self.tx.next_to_send() {
            if resend {
                self.counters.resent += 1;
            }
            let slot = self.tx.queue.get(i)?;
            let h = self.header(slot.kind, slot.seq);
            let n = wire::encode(out, &h, &slot.body, slot.count, self.key.as_ref())?;
            self.sent(now);
            return Some(n);
        }
        let silent_for = self.last_sent.map_or(u64::MAX, |t| now.saturating_sub(t));
        let ack_due = self.rx.expected.is_some()
            && self.rx.expected != self.ack_sent
            && (self
                .ack_waiting_since
                .is_some_and(|t| now.saturating_sub(t) >= self.cfg.ack_delay_ns)
                || self.ack_lag() >= self.cfg.ack_every);
        let probe_due = self.tx.unacked() && silent_for >= self.cfg.probe_ns;
        if ack_due || probe_due || silent_for >= self.cfg.keepalive_ns {
            return self.emit(now, out, Kind::Keepalive, self.tx.next_seq, &[], 0);
        }
        None
    }

    /// Records wait for their datagram to fill, up to a deadline in
    /// [`Peer::next_timeout`]: whoever feeds this peer need not hurry until
    /// then (the sync thread sleeps to it without its doorbell, and takes
    /// the workers' records of the meantime in one step).
    pub fn lingering(&self) -> bool {
        self.tx.has_pending() && !self.tx.batch_full() && self.flush_delay() > 0
    }

    /// How long the pending records may wait: `idle_flush_delay_ns` on an
    /// idle link (nothing sent is waiting for its ack, as Nagle's
    /// algorithm), else `flush_delay_ns`.
    fn flush_delay(&self) -> u64 {
        if self.tx.unacked() {
            self.cfg.flush_delay_ns
        } else {
            self.cfg.idle_flush_delay_ns
        }
    }

    fn ack_lag(&self) -> u32 {
        match (self.rx.expected, self.ack_sent) {
            (Some(e), Some(a)) => e.wrapping_sub(a),
            (Some(_), None) => u32::MAX,
            _ => 0,
        }
    }

    fn emit(
        &mut self,
        now: u64,
        out: &mut [u8],
        kind: Kind,
        seq: u32,
        body: &[u8],
        count: u16,
    ) -> Option<usize> {
        let h = self.header(kind, seq);
        let n = wire::encode(out, &h, body, count, self.key.as_ref())?;
        self.sent(now);
        Some(n)
    }

    fn header(&self, kind: Kind, seq: u32) -> Header {
        Header {
            kind,
            config_hash: self.cfg.config_hash,
            epoch: self.cfg.epoch,
            sender: self.cfg.node,
            receiver: self.cfg.peer,
            packet_number: self.next_pn,
            seq,
            ack: self.rx.expected,
        }
    }

    fn sent(&mut self, now: u64) {
        self.next_pn = self.next_pn.wrapping_add(1);
        self.last_sent = Some(now);
        self.ack_sent = self.rx.expected;
        self.ack_waiting_since = None;
        self.counters.datagrams_out += 1;
    }

    /// The earliest time a timer of this peer may have something to do.
    pub fn next_timeout(&self, now: u64) -> u64 {
        let mut t = self
            .last_sent
            .map_or(now, |s| s.saturating_add(self.cfg.keepalive_ns));
        if let Some(p) = self.tx.pending_since {
            t = t.min(p.saturating_add(self.flush_delay()));
        }
        if let Some(a) = self.ack_waiting_since {
            t = t.min(a.saturating_add(self.cfg.ack_delay_ns));
        }
        if self.tx.unacked() {
            t = t.min(
                self.last_sent
                    .map_or(now, |s| s.saturating_add(self.cfg.probe_ns)),
            );
        }
        if self.rx.gap() {
            let g = self
                .gap_since
                .map_or(now, |g| g.saturating_add(self.cfg.nack_delay_ns));
            let n = self
                .last_nack
                .map_or(g, |l| l.saturating_add(self.cfg.nack_interval_ns));
            t = t.min(g.max(n));
        }
        if let Some(h) = self.last_heard
            && self.up
        {
            t = t.min(h.saturating_add(self.cfg.dead_ns));
        }
        t.max(now)
    }

    /// Whether the peer's stream has been synced by a snapshot.
    pub fn synced(&self) -> bool {
        self.rx.synced
    }

    /// Whether the peer was heard from within `dead_ns` (as of the last
    /// [`Peer::handle_timeout`]).
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// For `sixgate show sync`.
    pub fn status(&self) -> Status {
        Status {
            up: self.up,
            synced: self.rx.synced,
            next_seq: self.tx.next_seq,
            expected: self.rx.expected,
            unacked: self.tx.queue.len(),
            snapshot_running: self.snapshot.is_some(),
            draining: self.drain.is_some(),
            drain_acked: self.drain_acked(),
            peer_drained: self.rx.drained,
            counters: self.counters,
        }
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}
