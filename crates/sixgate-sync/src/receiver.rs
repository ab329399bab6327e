//! The receiving half of a stream (docs/ha.md, "Reliability"): reliable
//! messages are applied in sequence order; up to [`EARLY`] that arrive ahead of
//! a gap are held; a SNAP_BEGIN voids everything before it.

use crate::Event;
use crate::counters::{Counters, Drop};
use crate::record::{RECORD_LEN, Record};
use crate::replay::before;
use crate::wire::{Kind, MAX_NACK_RANGES};

/// Messages held ahead of a gap.
pub const EARLY: u32 = 64;

#[derive(Debug, Default)]
struct Held {
    used: bool,
    seq: u32,
    kind: Option<Kind>,
    body: Vec<u8>,
}

#[derive(Debug)]
pub(crate) struct Receiver {
    /// Next sequence number to apply; `None` until the first SNAP_BEGIN.
    pub(crate) expected: Option<u32>,
    held: Vec<Held>,
    /// Highest sequence number known to exist (received, or announced by a
    /// keepalive).
    pub(crate) highest: Option<u32>,
    /// The running snapshot: id, records received in it, and whether it may
    /// sweep (the peer had our snapshot when it began).
    snapshot: Option<(u32, u64, bool)>,
    /// A snapshot of this stream has been received to its end.
    pub(crate) synced: bool,
    /// The peer sent DRAIN in this epoch.
    pub(crate) drained: bool,
    /// The peer holds what this node carries for it: false from its restart
    /// until it acknowledged a whole snapshot of ours sent since (kept by
    /// [`crate::Peer`]). A peer first heard of had nothing taken from it.
    pub(crate) peer_has_ours: bool,
}

impl Receiver {
    pub(crate) fn new(body_capacity: usize) -> Receiver {
        Receiver {
            expected: None,
            held: (0..EARLY)
                .map(|_| Held {
                    body: Vec::with_capacity(body_capacity),
                    ..Held::default()
                })
                .collect(),
            highest: None,
            snapshot: None,
            synced: false,
            drained: false,
            peer_has_ours: true,
        }
    }

    /// Forgets the stream (the peer restarted, and with it what it had).
    pub(crate) fn reset(&mut self) {
        self.drained = false;
        self.peer_has_ours = false;
        self.expected = None;
        self.highest = None;
        self.snapshot = None;
        self.synced = false;
        for h in &mut self.held {
            h.used = false;
        }
    }

    fn saw(&mut self, seq: u32) {
        if self.highest.is_none_or(|h| before(h, seq)) {
            self.highest = Some(seq);
        }
    }

    /// A keepalive or NACK said the sender's next sequence number is `next`.
    pub(crate) fn announced(&mut self, next: u32) {
        if let Some(e) = self.expected
            && before(e, next)
        {
            // Only believe it within the window: an announcement cannot make
            // us NACK more than we could hold.
            let last = next.wrapping_sub(1);
            if last.wrapping_sub(e) < EARLY {
                self.saw(last);
            }
        }
    }

    /// One reliable message.
    pub(crate) fn on_reliable(
        &mut self,
        seq: u32,
        kind: Kind,
        body: &[u8],
        counters: &mut Counters,
        ev: &mut impl FnMut(Event),
    ) -> Result<(), Drop> {
        let Some(e) = self.expected else {
            if kind != Kind::SnapBegin {
                return Err(Drop::Unsynced);
            }
            return self.start_at(seq, body, counters, ev);
        };
        if kind == Kind::SnapBegin && !before(seq, e) {
            return self.start_at(seq, body, counters, ev);
        }
        if before(seq, e) {
            return Err(Drop::Duplicate);
        }
        if seq.wrapping_sub(e) >= EARLY {
            return Err(Drop::OutOfWindow);
        }
        self.saw(seq);
        if seq == e {
            self.apply(kind, body, counters, ev);
            self.expected = Some(e.wrapping_add(1));
            self.drain(counters, ev);
            return Ok(());
        }
        let h = &mut self.held[(seq % EARLY) as usize];
        if h.used && h.seq == seq {
            return Err(Drop::Duplicate);
        }
        h.used = true;
        h.seq = seq;
        h.kind = Some(kind);
        h.body.clear();
        h.body.extend_from_slice(body);
        Ok(())
    }

    /// SNAP_BEGIN: everything before `seq` is void.
    fn start_at(
        &mut self,
        seq: u32,
        body: &[u8],
        counters: &mut Counters,
        ev: &mut impl FnMut(Event),
    ) -> Result<(), Drop> {
        for h in &mut self.held {
            if h.used && before(h.seq, seq) {
                h.used = false;
            }
        }
        if self.highest.is_none_or(|h| before(h, seq)) {
            self.highest = Some(seq);
        }
        self.apply(Kind::SnapBegin, body, counters, ev);
        self.expected = Some(seq.wrapping_add(1));
        self.drain(counters, ev);
        Ok(())
    }

    fn drain(&mut self, counters: &mut Counters, ev: &mut impl FnMut(Event)) {
        while let Some(e) = self.expected {
            let i = (e % EARLY) as usize;
            let h = &mut self.held[i];
            if !(h.used && h.seq == e) {
                break;
            }
            h.used = false;
            let kind = h.kind;
            // Take the body out to apply it without borrowing self twice; it
            // goes back so its capacity is kept.
            let body = std::mem::take(&mut h.body);
            if let Some(kind) = kind {
                self.apply(kind, &body, counters, ev);
            }
            self.held[i].body = body;
            self.expected = Some(e.wrapping_add(1));
        }
    }

    fn apply(
        &mut self,
        kind: Kind,
        body: &[u8],
        counters: &mut Counters,
        ev: &mut impl FnMut(Event),
    ) {
        match kind {
            Kind::Data => {
                for c in body.chunks_exact(RECORD_LEN) {
                    let Some(r) = <&[u8; RECORD_LEN]>::try_from(c)
                        .ok()
                        .and_then(Record::decode)
                    else {
                        continue; // checked at decode
                    };
                    counters.records_in += 1;
                    if let Some((_, n, _)) = &mut self.snapshot {
                        *n += 1;
                    }
                    ev(Event::Record(r));
                }
            }
            Kind::SnapBegin => {
                let id = body
                    .get(..4)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                self.snapshot = Some((id, 0, self.peer_has_ours));
                ev(Event::SnapshotBegin { id });
            }
            Kind::SnapEnd => {
                let Some(b) = body.get(..12) else { return };
                let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                let announced =
                    u64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
                if let Some((begun, received, had_ours)) = self.snapshot
                    && begun == id
                {
                    self.snapshot = None;
                    // A peer's tables are complete only once it has what we
                    // carry for it: not at its first snapshot of an epoch
                    // (restarted empty, or drained and restarted), nor at
                    // one begun before ours reached it (docs/ha.md,
                    // "A restarted node's snapshot").
                    let sweep = self.synced && had_ours;
                    self.synced = true;
                    counters.snapshots_received += 1;
                    ev(Event::SnapshotEnd {
                        id,
                        announced,
                        received,
                        sweep,
                    });
                }
            }
            Kind::Drain => {
                let Some(b) = body.get(..crate::wire::DRAIN_LEN) else {
                    return;
                };
                self.drained = true;
                ev(Event::PeerDrained {
                    id: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                    records: u64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]),
                });
            }
            _ => {}
        }
    }

    /// Whether something is missing before what we hold or know of.
    pub(crate) fn gap(&self) -> bool {
        match (self.expected, self.highest) {
            (Some(e), Some(h)) => !before(h, e),
            _ => false,
        }
    }

    /// The missing ranges, at most [`MAX_NACK_RANGES`], into `out`; returns
    /// how many.
    pub(crate) fn missing(&self, out: &mut [(u32, u32); MAX_NACK_RANGES]) -> usize {
        let (Some(e), Some(h)) = (self.expected, self.highest) else {
            return 0;
        };
        if before(h, e) {
            return 0;
        }
        let span = h.wrapping_sub(e).min(EARLY - 1);
        let mut n = 0;
        let mut open: Option<(u32, u32)> = None;
        for k in 0..=span {
            let s = e.wrapping_add(k);
            let held =
                self.held[(s % EARLY) as usize].used && self.held[(s % EARLY) as usize].seq == s;
            match (held, &mut open) {
                (false, Some((_, last))) => *last = s,
                (false, None) => open = Some((s, s)),
                (true, Some(r)) => {
                    if n < MAX_NACK_RANGES {
                        out[n] = *r;
                        n += 1;
                    }
                    open = None;
                }
                (true, None) => {}
            }
        }
        if let Some(r) = open
            && n < MAX_NACK_RANGES
        {
            out[n] = r;
            n += 1;
        }
        n
    }
}
