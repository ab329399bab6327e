//! sixgate's control plane (issue 6): everything an operator talks to while the
//! gateway runs. The data planes never call into it on the packet path; it reads
//! their per-worker counters and publishes new configuration snapshots.
//!
//! - [`api`]: the daemon's JSON API on a Unix socket (`server`) and its
//!   requests and answers (`types`);
//! - [`client`]: what `sixgate show|eam|pool4|bib|config|reload` talk to it with;
//! - [`running_config`]: the running configuration, runtime changes applied;
//! - [`format`]: tables and CSV for the command line;
//! - [`reload_status`]: what became of the reloads.

pub mod api;
pub mod client;
pub mod format;
pub mod reload_status;
pub mod running_config;

pub use reload_status::ReloadStatus;
