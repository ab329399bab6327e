//! sixgate's data-plane runtime: everything a live data plane shares, so that
//! the TUN data plane (`sixgate-tun`), the AF_XDP one (`sixgate-xdp`) and the
//! control plane (`sixgate-control`) sit side by side above it and none
//! imports another.
//!
//! - [`plan`]: what a gateway decides from the loaded configuration before it
//!   creates anything (default pool4, user, workers, keys).
//! - [`worker`]: the one worker loop (timers, runtime changes, a batch of
//!   packets, counters, sleep), generic over a data plane's [`PacketIo`];
//!   [`crew`]: a gateway's workers, started, stopped and reported as one.
//! - [`live`]: the running configuration and its followers; a data plane's
//!   [`Plane`] puts a change's destinations in place.
//! - [`stats`], [`IoCounters`]: per-worker counters, read without a lock.
//! - [`signals`]: SIGINT/SIGTERM, SIGHUP, the stop pipe.
//! - [`destinations`]: the prefixes a gateway must receive;
//!   [`pool4_default`]: the default pool4's address.
//! - [`event_export`]: the NAT64 event log, from the workers' rings to
//!   collectors or [`events`] (`[log]`) on one thread; [`system`]: CPUs,
//!   users, sysctls, `ip`.
//! - [`offload`]: a worker's sessions on an in-kernel fast path.
//! - [`replica`]: a worker's side of NAT64 state sync (docs/ha.md), over
//!   [`spsc`] rings, [`sync_link`], the sync thread's UDP link to the
//!   peers (a run of datagrams per `sendmsg`, `udp_gso`), [`sync_thread`],
//!   and the [`doorbell`] workers wake it with.
//! - [`restart`]: a NAT64 node's sessions across its own restart
//!   (`[daemon] state_file`, docs/restart.md).

use std::fmt;

pub mod announce;
pub mod crew;
pub mod destinations;
pub mod doorbell;
pub mod event_export;
pub mod events;
mod io_counters;
pub mod live;
pub mod offload;
pub mod plan;
pub mod pool4_default;
pub mod replica;
pub mod restart;
pub mod signals;
pub mod spsc;
pub mod stats;
pub mod sync_link;
pub mod sync_node;
pub mod sync_thread;
pub mod system;
mod udp_gso;
pub mod worker;

pub use crew::Crew;
pub use io_counters::IoCounters;
pub use live::{Follower, Follows, Live, Plane, Refusal};
pub use plan::Plan;
pub use stats::{FastPathCounters, FastPathSessions, Snapshot, StatsHandle, WorkerStats};
pub use worker::{PacketIo, Sleep, TICK_NS, Worker};

/// Why the gateway could not start. Nothing it created is left behind.
#[derive(Debug)]
pub struct SetupError(String);

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

impl From<String> for SetupError {
    fn from(why: String) -> Self {
        SetupError(why)
    }
}

/// Why a gateway's `wait` returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT or SIGTERM (the signal number).
    Signal(i32),
    /// A worker failed; the message says why.
    WorkerFailed(String),
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Signal(s) => write!(f, "received {}", system::signal_name(*s)),
            Stop::WorkerFailed(why) => write!(f, "a worker failed: {why}"),
        }
    }
}

/// What a run ended with.
#[derive(Debug)]
pub struct Report {
    /// All workers' counters, summed.
    pub totals: Snapshot,
    /// Each worker's counters, by worker index.
    pub workers: Vec<Snapshot>,
    /// Worker failures, and problems taking routes down; empty on a clean stop.
    pub errors: Vec<String>,
    /// The in-kernel fast path's final counters, if one was attached
    /// (docs/fastpath.md); its translations are not in `totals`.
    pub fast_path: Option<FastPathCounters>,
}
