//! NAT64 state sync between sixgate nodes: the protocol of docs/ha.md, pure
//! (no I/O, no clock: every call takes `now` in nanoseconds).
//!
//! - [`record`]: the 56-byte table-change record;
//! - [`wire`]: the datagram, [`wire::decode`] and [`wire::encode`];
//! - [`auth`]: HMAC-SHA256 tags;
//! - [`replay`]: the anti-replay window;
//! - [`Peer`]: one peer's stream both ways (sender, receiver, snapshot, timers);
//! - [`Counters`]: every drop by reason;
//! - [`tables`]: records to and from the core's `nat64::Replica`;
//! - [`state_file`]: the NAT64 state a node keeps across its own restart
//!   (docs/restart.md), in the same records.
//!
//! The transport (a UDP socket on the sync link, a thread) and the tables'
//! export and import are the runtime's; see docs/ha.md, "Status".

pub mod auth;
mod counters;
pub mod hash;
mod peer;
mod receiver;
pub mod record;
pub mod replay;
mod sender;
pub mod state_file;
pub mod tables;
pub mod wire;

pub use auth::Key;
pub use counters::{Counters, Drop};
pub use peer::{Peer, PeerConfig, Status};
pub use record::Record;
pub use wire::ResyncReason;

/// What the peer's messages mean for this node's tables and operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Apply this record (in stream order).
    Record(Record),
    /// A snapshot starts: mark the peer's entries, records follow.
    SnapshotBegin {
        /// Snapshot id.
        id: u32,
    },
    /// The snapshot ended: remove the peer's entries it did not restate.
    SnapshotEnd {
        /// Snapshot id.
        id: u32,
        /// Records the sender says it sent.
        announced: u64,
        /// Records received between BEGIN and END.
        received: u64,
        /// Remove the peer's entries the snapshot did not restate. `false`
        /// for the peer's first snapshot of its epoch (a restarted peer's
        /// tables are empty, while this node may carry its sessions: killed,
        /// or drained) and for one it began before it had acknowledged ours
        /// (docs/ha.md, "A restarted node's snapshot").
        sweep: bool,
    },
    /// The peer drains (a DRAIN message, in stream order after everything
    /// it sent before): it no longer announces its routes nor allocates, and
    /// this node keeps its entries, expiring them as its own.
    PeerDrained {
        /// The peer's drain id.
        id: u32,
        /// Records it says it queued to us in its epoch before the DRAIN.
        records: u64,
    },
    /// The peer wants a snapshot of our tables ([`Peer::start_snapshot`]).
    SnapshotRequested(ResyncReason),
    /// First datagram from the peer, or the first after it was down.
    PeerUp,
    /// Nothing heard from the peer for `dead_ns`.
    PeerDown,
    /// The peer's epoch changed: it restarted and lost its tables.
    PeerRestarted,
    /// The peer runs another configuration (logged once per hash).
    ConfigMismatch {
        /// Our hash.
        ours: u64,
        /// The peer's.
        theirs: u64,
    },
}
