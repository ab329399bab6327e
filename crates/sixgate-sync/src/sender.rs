//! The sending half of a stream (docs/ha.md, "Reliability"): records are
//! batched into DATA messages of at most one datagram, every reliable message
//! gets the next sequence number and stays in a bounded resend queue until the
//! peer acks it. All memory is allocated here, at construction.

use crate::record::{RECORD_LEN, Record};
use crate::replay::before;
use crate::wire::Kind;
use std::collections::VecDeque;

/// A reliable message waiting for its ack.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) seq: u32,
    pub(crate) kind: Kind,
    pub(crate) count: u16,
    pub(crate) body: Vec<u8>,
    /// Sent at least once.
    pub(crate) sent: bool,
    /// NACKed and not yet resent.
    pub(crate) resend: bool,
    /// Times resent.
    pub(crate) resends: u8,
}

/// What a NACK asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NackOutcome {
    /// The missing messages are queued for resending.
    Queued,
    /// A message was resent too often, or is gone: the stream must be resynced.
    GiveUp,
}

#[derive(Debug)]
pub(crate) struct Sender {
    pub(crate) next_seq: u32,
    /// Records not yet in a message.
    pending: Vec<u8>,
    pending_count: u16,
    pub(crate) pending_since: Option<u64>,
    per_datagram: usize,
    /// Sent or ready-to-send reliable messages, oldest first, contiguous seqs.
    pub(crate) queue: VecDeque<Slot>,
    capacity: usize,
    /// Spare body buffers, so sealing a message never allocates.
    spare: Vec<Vec<u8>>,
    max_resends: u8,
    /// Slots at the front of `queue` sent at least once (the unsent ones are
    /// a suffix): the next new message is found without a scan.
    sent: usize,
    /// Slots marked for resending.
    resends_due: usize,
}

impl Sender {
    pub(crate) fn new(per_datagram: usize, capacity: usize, max_resends: u8) -> Sender {
        let body = per_datagram.max(1) * RECORD_LEN;
        Sender {
            next_seq: 1,
            pending: Vec::with_capacity(body),
            pending_count: 0,
            pending_since: None,
            per_datagram: per_datagram.max(1),
            queue: VecDeque::with_capacity(capacity),
            capacity,
            spare: (0..capacity).map(|_| Vec::with_capacity(body)).collect(),
            max_resends,
            sent: 0,
            resends_due: 0,
        }
    }

    /// Records that can still be pushed before [`Sender::push`] refuses.
    pub(crate) fn room(&self) -> usize {
        let free_slots = self.capacity - self.queue.len();
        (free_slots * self.per_datagram).saturating_sub(usize::from(self.pending_count))
    }

    /// Appends a record; `false` when the queue is full.
    pub(crate) fn push(&mut self, now: u64, r: &Record) -> bool {
        if usize::from(self.pending_count) == self.per_datagram && !self.seal() {
            return false;
        }
        let mut buf = [0u8; RECORD_LEN];
        r.encode(&mut buf);
        self.pending.extend_from_slice(&buf);
        self.pending_count += 1;
        self.pending_since.get_or_insert(now);
        true
    }

    /// Whether the pending batch is full.
    pub(crate) fn batch_full(&self) -> bool {
        usize::from(self.pending_count) >= self.per_datagram
    }

    pub(crate) fn has_pending(&self) -> bool {
        self.pending_count > 0
    }

    /// Turns the pending records into a DATA message; `false` when the queue
    /// has no room.
    pub(crate) fn seal(&mut self) -> bool {
        if self.pending_count == 0 {
            return true;
        }
        let Some(mut body) = self.spare.pop() else {
            return false;
        };
        body.clear();
        body.extend_from_slice(&self.pending);
        let count = self.pending_count;
        self.enqueue(Kind::Data, body, count);
        self.pending.clear();
        self.pending_count = 0;
        self.pending_since = None;
        true
    }

    /// Queues a control message (SNAP_BEGIN, SNAP_END); `false` when full.
    pub(crate) fn push_control(&mut self, kind: Kind, payload: &[u8]) -> bool {
        if !self.seal() {
            return false;
        }
        let Some(mut body) = self.spare.pop() else {
            return false;
        };
        body.clear();
        body.extend_from_slice(payload);
        self.enqueue(kind, body, 0);
        true
    }

    fn enqueue(&mut self, kind: Kind, body: Vec<u8>, count: u16) {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.queue.push_back(Slot {
            seq,
            kind,
            count,
            body,
            sent: false,
            resend: false,
            resends: 0,
        });
    }

    /// The peer has everything before `next`: free those slots. An ack of a
    /// sequence number not sent yet is ignored (forged or stale).
    pub(crate) fn on_ack(&mut self, next: u32) {
        if before(self.next_seq, next) {
            return;
        }
        while let Some(front) = self.queue.front() {
            if !before(front.seq, next) {
                break;
            }
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        if let Some(slot) = self.queue.pop_front() {
            // An ack may cover messages not sent yet only if the peer lies;
            // the counts stay consistent either way.
            self.sent = self.sent.saturating_sub(1);
            if slot.resend {
                self.resends_due -= 1;
            }
            self.spare.push(slot.body);
        }
    }

    /// Marks the NACKed messages for resending.
    pub(crate) fn on_nack(&mut self, ranges: impl Iterator<Item = (u32, u32)>) -> NackOutcome {
        // Sequence numbers before the queue were acked (a stale NACK) or
        // voided by a snapshot's SNAP_BEGIN: nothing to do for them.
        for (first, last) in ranges {
            for slot in self.queue.iter_mut() {
                let inside = !before(slot.seq, first) && !before(last, slot.seq);
                if inside && slot.sent && !slot.resend {
                    if slot.resends >= self.max_resends {
                        return NackOutcome::GiveUp;
                    }
                    slot.resend = true;
                    self.resends_due += 1;
                }
            }
        }
        NackOutcome::Queued
    }

    /// Forgets everything queued and pending (a snapshot restates it).
    pub(crate) fn clear(&mut self) {
        while !self.queue.is_empty() {
            self.pop_front();
        }
        self.pending.clear();
        self.pending_count = 0;
        self.pending_since = None;
    }

    /// Oldest queued message already sent and not acked.
    pub(crate) fn unacked(&self) -> bool {
        self.queue.front().is_some_and(|s| s.sent)
    }

    /// The index of the next message to transmit (a resend first), marked as
    /// sent, and whether it is a resend.
    pub(crate) fn next_to_send(&mut self) -> Option<(usize, bool)> {
        let i = if self.resends_due > 0 {
            self.queue.iter().position(|s| s.resend)?
        } else if self.sent < self.queue.len() {
            self.sent
        } else {
            return None;
        };
        let slot = self.queue.get_mut(i)?;
        let resend = slot.resend;
        if resend {
            slot.resend = false;
            slot.resends = slot.resends.saturating_add(1);
            self.resends_due -= 1;
        } else {
            self.sent += 1;
        }
        slot.sent = true;
        Some((i, resend))
    }
}
