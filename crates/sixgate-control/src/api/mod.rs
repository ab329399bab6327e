//! The daemon's API: JSON over HTTP/1.1 on a Unix socket (docs/control.md).

pub mod server;
pub mod types;
