//! Why a datagram was dropped, and the per-peer counters `sixgate show sync`
//! and the metrics will read. Every drop has a name; none is silent.

/// Why a received datagram (or a record pushed for sending) was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// Shorter than its header or than its header says.
    Truncated,
    /// Does not start with "SGSY": not ours.
    BadMagic,
    /// Another protocol version.
    BadVersion,
    /// Unknown message kind.
    BadKind,
    /// Longer than its header says.
    BadLength,
    /// A field out of range (flags, record, NACK range, body size).
    Malformed,
    /// Missing, unexpected or wrong HMAC tag.
    AuthFailed,
    /// The peer's config hash differs from ours.
    ConfigMismatch,
    /// Addressed to another node id.
    WrongNode,
    /// Sent by a node id that is not this peer's.
    UnknownPeer,
    /// An older epoch, or a packet number already seen or behind the window.
    Replayed,
    /// A sequence number already applied or already held.
    Duplicate,
    /// A sequence number too far ahead to hold.
    OutOfWindow,
    /// A reliable message before this stream's first snapshot.
    Unsynced,
}

/// Counters of one peer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams accepted.
    pub datagrams_in: u64,
    /// Datagrams produced by `poll_transmit` (resends included).
    pub datagrams_out: u64,
    /// Records delivered to the tables.
    pub records_in: u64,
    /// Records sent (first transmission).
    pub records_out: u64,
    /// Datagrams sent again after a NACK.
    pub resent: u64,
    /// NACKs sent.
    pub nacks_sent: u64,
    /// NACKs received.
    pub nacks_received: u64,
    /// Snapshots this node started towards the peer.
    pub resync_started: u64,
    /// Snapshots this node asked the peer for.
    pub resync_requested: u64,
    /// Snapshots received to their end.
    pub snapshots_received: u64,
    /// Records refused because the send queue was full (each schedules a snapshot).
    pub queue_full: u64,
    /// Drops by reason (see [`Drop`]).
    pub truncated: u64,
    /// See [`Drop::BadMagic`].
    pub bad_magic: u64,
    /// See [`Drop::BadVersion`].
    pub bad_version: u64,
    /// See [`Drop::BadKind`].
    pub bad_kind: u64,
    /// See [`Drop::BadLength`].
    pub bad_length: u64,
    /// See [`Drop::Malformed`].
    pub malformed: u64,
    /// See [`Drop::AuthFailed`].
    pub auth_failed: u64,
    /// See [`Drop::ConfigMismatch`].
    pub config_mismatch: u64,
    /// See [`Drop::WrongNode`].
    pub wrong_node: u64,
    /// See [`Drop::UnknownPeer`].
    pub unknown_peer: u64,
    /// See [`Drop::Replayed`].
    pub replayed: u64,
    /// See [`Drop::Duplicate`].
    pub duplicate: u64,
    /// See [`Drop::OutOfWindow`].
    pub out_of_window: u64,
    /// See [`Drop::Unsynced`].
    pub unsynced: u64,
}

impl Drop {
    /// Every reason, in the order of docs/ha.md's "Drop counters".
    pub const ALL: [Drop; 14] = [
        Drop::Truncated,
        Drop::BadMagic,
        Drop::BadVersion,
        Drop::BadKind,
        Drop::BadLength,
        Drop::Malformed,
        Drop::AuthFailed,
        Drop::ConfigMismatch,
        Drop::WrongNode,
        Drop::UnknownPeer,
        Drop::Replayed,
        Drop::Duplicate,
        Drop::OutOfWindow,
        Drop::Unsynced,
    ];

    /// Its name in `show sync --json` and the metrics' `reason` label.
    pub fn name(self) -> &'static str {
        match self {
            Drop::Truncated => "truncated",
            Drop::BadMagic => "bad_magic",
            Drop::BadVersion => "bad_version",
            Drop::BadKind => "bad_kind",
            Drop::BadLength => "bad_length",
            Drop::Malformed => "malformed",
            Drop::AuthFailed => "auth_failed",
            Drop::ConfigMismatch => "config_mismatch",
            Drop::WrongNode => "wrong_node",
            Drop::UnknownPeer => "unknown_peer",
            Drop::Replayed => "replayed",
            Drop::Duplicate => "duplicate",
            Drop::OutOfWindow => "out_of_window",
            Drop::Unsynced => "unsynced",
        }
    }
}

impl Counters {
    fn slot(&mut self, why: Drop) -> &mut u64 {
        match why {
            Drop::Truncated => &mut self.truncated,
            Drop::BadMagic => &mut self.bad_magic,
            Drop::BadVersion => &mut self.bad_version,
            Drop::BadKind => &mut self.bad_kind,
            Drop::BadLength => &mut self.bad_length,
            Drop::Malformed => &mut self.malformed,
            Drop::AuthFailed => &mut self.auth_failed,
            Drop::ConfigMismatch => &mut self.config_mismatch,
            Drop::WrongNode => &mut self.wrong_node,
            Drop::UnknownPeer => &mut self.unknown_peer,
            Drop::Replayed => &mut self.replayed,
            Drop::Duplicate => &mut self.duplicate,
            Drop::OutOfWindow => &mut self.out_of_window,
            Drop::Unsynced => &mut self.unsynced,
        }
    }

    /// Counts one drop.
    pub fn drop(&mut self, why: Drop) {
        *self.slot(why) += 1;
    }

    /// The drops of one reason.
    pub fn dropped_by(&self, why: Drop) -> u64 {
        let mut c = *self;
        *c.slot(why)
    }

    /// All drops together.
    pub fn dropped(&self) -> u64 {
        Drop::ALL.iter().map(|&d| self.dropped_by(d)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/ha.md, "Drop counters": every reason has its own counter and
    /// name, and the total is their sum.
    #[test]
    fn every_drop_reason_has_its_counter_and_name() {
        let mut c = Counters::default();
        let mut names = std::collections::BTreeSet::new();
        for (i, &d) in Drop::ALL.iter().enumerate() {
            for _ in 0..=i {
                c.drop(d);
            }
            assert!(names.insert(d.name()), "{d:?}");
        }
        for (i, &d) in Drop::ALL.iter().enumerate() {
            assert_eq!(c.dropped_by(d), i as u64 + 1, "{d:?}");
        }
        assert_eq!(c.dropped(), (1..=14).sum::<u64>());
    }
}
