//! The NAT64 event log (RFC 6888 REQ-12, RFC 7422) as `tracing` records: target
//! `sixgate::nat64`, one record per event, every field structured, so a log
//! collector can index them. Only with `[nat64] event_log` on; the core decides
//! which events exist (sessions, BIB entries or port blocks).

use sixgate_core::nat64::{Event, EventKind};
use tracing::info;

/// Log one event drained from worker `worker`'s translator.
pub fn log(worker: usize, e: &Event) {
    let kind = e.kind.as_str();
    let proto = e.proto.as_str();
    let t_ms = e.time_ns / 1_000_000;
    match (e.kind, e.remote) {
        (EventKind::BlockAllocated | EventKind::BlockReleased, _) => info!(
            target: "sixgate::nat64",
            event = kind, worker, t_ms, proto,
            subscriber = %e.v6, v4 = %e.v4, port_first = e.port4, port_last = e.port4_last,
            "port block"
        ),
        (_, Some((raddr, rport))) => info!(
            target: "sixgate::nat64",
            event = kind, worker, t_ms, proto,
            v6 = %e.v6, port6 = e.port6, v4 = %e.v4, port4 = e.port4,
            remote = %raddr, remote_port = rport,
            "mapping"
        ),
        (_, None) => info!(
            target: "sixgate::nat64",
            event = kind, worker, t_ms, proto,
            v6 = %e.v6, port6 = e.port6, v4 = %e.v4, port4 = e.port4,
            "mapping"
        ),
    }
}
