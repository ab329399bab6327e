//! Prometheus metrics (issue 6): `GET /metrics` on a TCP address of `[metrics]`.
//!
//! Nothing is counted here. The workers keep bumping their own plain counters and
//! publish them after every batch (`sixgate_dataplane::WorkerStats`); a scrape reads
//! those, the DNS64 server's atomics and the reload status into a [`Scrape`], and
//! [`render`] builds a fresh registry from it. Every metric and its meaning is in
//! docs/metrics.md (a test keeps the two in step).

mod render;
mod series;
mod server;

pub use render::{CONTENT_TYPE, render};
pub use server::MetricsServer;

use crate::reload_status::ReloadReading;

/// Everything one scrape reports, read from the running daemon.
#[derive(Clone, Debug, Default)]
pub struct Scrape {
    /// The translator mode (`[translator] mode`: `siit`, `nat64`, `clat`, `mapt-br`,
    /// `mapt-ce`), for `sixgate_build_info`.
    pub mode: String,
    /// Each worker's counters, in worker order (empty before the gateway is up).
    pub workers: Vec<sixgate_dataplane::Snapshot>,
    /// The DNS64 server's counters, when `[dns64]` runs in the daemon.
    pub dns64: Option<sixgate_dns64::StatsSnapshot>,
    /// Configuration reloads so far.
    pub reload: ReloadReading,
    /// The in-kernel fast path's counters, when one is attached.
    pub fastpath: Option<sixgate_dataplane::FastPathCounters>,
    /// Whether the fast path asked for is attached and translating (`None`:
    /// none asked for), for `sixgate_fastpath_active`.
    pub fastpath_active: Option<bool>,
    /// NAT64 state sync, when `[sync]` runs (docs/ha.md).
    pub sync: Option<sixgate_dataplane::sync_thread::SyncReport>,
    /// The NAT64 event exporter, when the event log is on (docs/logging.md).
    pub log_export: Option<sixgate_dataplane::event_export::ExportReport>,
}

/// What the endpoint calls for every scrape.
pub type Collect = std::sync::Arc<dyn Fn() -> Scrape + Send + Sync>;
