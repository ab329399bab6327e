//! sixgate's control plane (issue 6): everything an operator talks to while the
//! gateway runs. The data planes never call into it on the packet path; it reads
//! their per-worker counters and publishes new configuration snapshots.

pub mod logging;
pub mod metrics;
pub mod notify;
pub mod reload_status;
pub mod syslog;

pub use reload_status::ReloadStatus;
