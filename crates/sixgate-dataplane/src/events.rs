//! The NAT64 event log (RFC 6888 REQ-12, RFC 7422) as `tracing` records, when
//! there is no `[log_export]`: target `sixgate::nat64`, one record per event,
//! every field structured, so a log collector can index them. Written by the
//! exporter thread ([`crate::event_export`]), never by a worker; the core
//! decides which events exist (`[nat64] event_log`).

use sixgate_natlog::NatRecord;
use sixgate_natlog::time::rfc3339_ms_string;
use tracing::info;

/// Log one event.
pub fn log(r: &NatRecord) {
    let event = r.kind.as_str();
    let proto = r.proto.as_str();
    let time = rfc3339_ms_string(r.unix_ms);
    match r.remote {
        _ if r.kind.is_block() => info!(
            target: "sixgate::nat64",
            event, time, proto,
            subscriber = %format_args!("{}/{}", r.inside, r.prefix_len),
            v4 = %r.outside, port_first = r.outside_port, port_last = r.outside_port_last,
            "port block"
        ),
        Some((raddr, rport)) => info!(
            target: "sixgate::nat64",
            event, time, proto,
            v6 = %r.inside, port6 = r.inside_port, v4 = %r.outside, port4 = r.outside_port,
            remote = %raddr, remote_port = rport,
            "mapping"
        ),
        None => info!(
            target: "sixgate::nat64",
            event, time, proto,
            v6 = %r.inside, port6 = r.inside_port, v4 = %r.outside, port4 = r.outside_port,
            "mapping"
        ),
    }
}
