//! Stateful NAT64 (RFC 6146): the state one worker owns.
//!
//! - [`config`]: [`Nat64Config`] and its parts (pool4, timeouts, limits);
//! - [`steering`]: which worker owns a port or a subscriber;
//! - [`event`]: the RFC 6888 event log ring;
//! - [`stats`]: table sizes.

pub mod config;
pub mod event;
pub mod stats;
pub mod steering;

pub use config::{
    DEFAULT_POOL4_PORTS, EventLog, Filtering, Nat64Config, Pool4Entry, PortRange, Proto, StaticBib,
    Timeouts,
};
pub use event::{Event, EventKind};
pub use stats::{PerProto, Stats};

use event::EventRing;

/// Events one worker keeps until the data plane drains them.
pub const EVENT_RING_CAPACITY: usize = 4096;

/// One worker's NAT64 state.
#[allow(dead_code)] // filled in by the following commits
pub(crate) struct Nat64 {
    pub(crate) events: EventRing,
    pub(crate) worker: u16,
    pub(crate) workers: u16,
}

impl Nat64 {
    pub(crate) fn new(_cfg: &Nat64Config, worker: u16, workers: u16) -> Self {
        Nat64 {
            events: EventRing::new(EVENT_RING_CAPACITY),
            worker,
            workers,
        }
    }

    /// A reload: new limits and timeouts apply from now on.
    pub(crate) fn reconfigure(&mut self, _cfg: &Nat64Config) {}

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            events_lost: self.events.lost,
            ..Stats::default()
        }
    }
}
