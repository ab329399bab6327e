//! sixgate's control plane (issue 6): everything an operator talks to while the
//! gateway runs. The data planes never call into it on the packet path; it reads
//! their per-worker counters and publishes new configuration snapshots.
//!
//! - [`api`]: the daemon's JSON API on a Unix socket (`server`) and its
//!   requests and answers (`types`);
//! - [`client`]: what `sixgate show|eam|pool4|bib|config|reload` talk to it with;
//! - [`running_config`]: the running configuration, runtime changes applied;
//! - [`format`]: tables and CSV for the command line;
//! - [`reload_status`]: what became of the reloads;
//! - [`metrics`]: Prometheus `/metrics`, rendered per scrape from the workers'
//!   published counters;
//! - [`logging`] and [`syslog`]: the `[log]` sink (text or JSON; stderr, a file
//!   or `/dev/log`), the RFC 6888 event log included;
//! - [`notify`]: sd_notify readiness for systemd.

pub mod api;
pub mod client;
pub mod first_drops;
pub mod format;
pub mod logging;
pub mod metrics;
pub mod notify;
pub mod reload_status;
pub mod rfc3339;
pub mod running_config;
pub mod syslog;

pub use reload_status::ReloadStatus;
