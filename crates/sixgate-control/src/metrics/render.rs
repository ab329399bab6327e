//! A [`Scrape`] in the Prometheus text format: a registry built for this one
//! scrape, names `sixgate_*`, units in the names, `_total` on counters, a HELP
//! line each. Series with a fixed label set (every drop reason, every worker,
//! every protocol) are all present, zeros included.

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use sixgate_core::DropReason;
use sixgate_core::nat64::PerProto;
use sixgate_dns64::stats::LATENCY_BUCKETS_MS;

use super::Scrape;
use super::series::{Histogram, Labels, Ratios, Samples};

/// The `Content-Type` of [`render`]'s output (OpenMetrics text, which
/// Prometheus reads; it ends with `# EOF`).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Render one scrape.
pub fn render(s: &Scrape) -> String {
    let mut r = Registry::with_prefix("sixgate");
    build_info(&mut r, s);
    data_plane(&mut r, s);
    drops(&mut r, s);
    tun(&mut r, s);
    nat64(&mut r, s);
    reloads(&mut r, s);
    if let Some(a) = s.fastpath_active {
        r.register(
            "fastpath_active",
            "1 while the in-kernel fast path asked for ([daemon] fastpath) is attached and \
             translating; 0 when it did not start or passes every packet up (show stats: \
             fastpath_off says why)",
            Samples::gauge().value(u64::from(a)),
        );
    }
    if let Some(f) = &s.fastpath {
        fastpath(&mut r, f, s);
    }
    if let Some(y) = &s.sync {
        sync(&mut r, y);
    }
    if let Some(d) = &s.dns64 {
        dns64(&mut r, d);
    }
    if let Some(x) = &s.log_export {
        log_export(&mut r, x);
    }
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &r);
    out
}

fn worker(i: usize) -> Labels {
    vec![("worker", i.to_string())]
}

/// One counter per worker, read by `f`.
fn per_worker(s: &Scrape, f: impl Fn(&sixgate_dataplane::Snapshot) -> u64) -> Samples {
    s.workers
        .iter()
        .enumerate()
        .fold(Samples::counter(), |m, (i, w)| m.with(worker(i), f(w)))
}

fn build_info(r: &mut Registry, s: &Scrape) {
    r.register(
        "build_info",
        "Always 1; the labels say which sixgate runs and in which translator mode",
        Samples::gauge().with(
            vec![
                ("version", env!("CARGO_PKG_VERSION").to_string()),
                ("mode", s.mode.clone()),
            ],
            1,
        ),
    );
    r.register(
        "workers",
        "Data-plane worker threads (one TUN queue each)",
        Samples::gauge().value(s.workers.len() as u64),
    );
}

fn data_plane(r: &mut Registry, s: &Scrape) {
    let mut translated = Samples::counter();
    for (i, w) in s.workers.iter().enumerate() {
        for (dir, n) in [
            ("6to4", w.core.translated_6to4),
            ("4to6", w.core.translated_4to6),
        ] {
            let mut l = worker(i);
            l.push(("direction", dir.to_string()));
            translated = translated.with(l, n);
        }
    }
    r.register(
        "translated_packets",
        "Packets translated, per worker and direction (6to4: IPv6 to IPv4); a \
         fragmented or segmented input counts once",
        translated,
    );
    let mut bytes = Samples::counter();
    for (i, w) in s.workers.iter().enumerate() {
        for (dir, n) in [("6to4", w.core.bytes_6to4), ("4to6", w.core.bytes_4to6)] {
            let mut l = worker(i);
            l.push(("direction", dir.to_string()));
            bytes = bytes.with(l, n);
        }
    }
    r.register(
        "translated_bytes",
        "IP bytes, as received, of the packets translated, per worker and direction",
        bytes,
    );
    r.register(
        "hairpinned_packets",
        "IPv6 packets hairpinned back into IPv6 (RFC 7757 section 4), per worker",
        per_worker(s, |w| w.core.hairpinned),
    );
    r.register(
        "fragments_sent",
        "Fragments produced by RFC 7915 fragmentation, per worker",
        per_worker(s, |w| w.core.fragments_out),
    );
    r.register(
        "icmp_errors_generated",
        "ICMP errors sixgate generated itself (Time Exceeded, Packet Too Big, ...), per worker",
        per_worker(s, |w| w.core.icmp_generated),
    );
    r.register(
        "icmp_errors_rate_limited",
        "ICMP errors owed but suppressed by the token bucket, per worker",
        per_worker(s, |w| w.core.icmp_rate_limited),
    );
}

fn drops(r: &mut Registry, s: &Scrape) {
    let mut m = Samples::counter();
    for reason in DropReason::ALL {
        let n = s.workers.iter().map(|w| w.core.drops(*reason)).sum();
        m = m.with(vec![("reason", reason.as_str().to_string())], n);
    }
    r.register(
        "dropped_packets",
        "Packets the translator dropped, by reason (all workers; see DropReason)",
        m,
    );
}

fn tun(r: &mut Registry, s: &Scrape) {
    type Field = fn(&sixgate_dataplane::IoCounters) -> u64;
    let io: [(&str, &str, Field); 12] = [
        (
            "tun_rx_packets",
            "Packets read from the TUN device (a GSO super-packet counts once)",
            |c| c.rx_packets,
        ),
        ("tun_rx_bytes", "Bytes read from the TUN device", |c| {
            c.rx_bytes
        }),
        (
            "tun_tx_packets",
            "Packets written to the TUN device (a super-packet counts once)",
            |c| c.tx_packets,
        ),
        ("tun_tx_bytes", "Bytes written to the TUN device", |c| {
            c.tx_bytes
        }),
        ("tun_rx_errors", "Failed reads from the TUN device", |c| {
            c.rx_errors
        }),
        ("tun_tx_errors", "Failed writes to the TUN device", |c| {
            c.tx_errors
        }),
        (
            "tun_rx_truncated_packets",
            "Reads dropped as truncated or shorter than the virtio-net header",
            |c| c.rx_truncated,
        ),
        ("tun_gso_packets", "GSO super-packets read", |c| c.gso_in),
        (
            "tun_gso_whole_packets",
            "Super-packets translated as one",
            |c| c.gso_whole,
        ),
        (
            "tun_gso_split_packets",
            "Super-packets segmented in software before translation",
            |c| c.gso_split,
        ),
        (
            "tun_checksum_software_packets",
            "Partial checksums finished in software",
            |c| c.csum_sw,
        ),
        (
            "tun_offload_dropped_packets",
            "Packets dropped by the offload handling (bad virtio-net header, unsupported GSO)",
            |c| c.offload_dropped,
        ),
    ];
    for (name, help, f) in io {
        let help = format!("{help}, per worker");
        r.register(name, help, per_worker(s, |w| f(&w.io)));
    }
    xdp(r, s);
}

/// The AF_XDP data plane's handoff between workers (docs/xdp.md, "Handoff");
/// 0 on TUN.
fn xdp(r: &mut Registry, s: &Scrape) {
    r.register(
        "xdp_handoff_packets",
        "Received packets handed to the worker that owns them (XDP data plane), per receiving worker",
        per_worker(s, |w| w.io.handoff),
    );
    r.register(
        "xdp_handoff_dropped_packets",
        "Packets for another worker dropped because its handoff ring was full (XDP data plane), per receiving worker",
        per_worker(s, |w| w.io.handoff_full),
    );
}

fn nat64(r: &mut Registry, s: &Scrape) {
    let mut n = sixgate_core::nat64::Stats::default();
    let mut any = false;
    for w in &s.workers {
        if let Some(x) = &w.nat64 {
            n.merge(x);
            any = true;
        }
    }
    if !any {
        return;
    }
    let per_proto = |p: &PerProto| {
        [("tcp", p.tcp), ("udp", p.udp), ("icmp", p.icmp)]
            .into_iter()
            .fold(Samples::gauge(), |m, (proto, v)| {
                m.with(vec![("protocol", proto.to_string())], v)
            })
    };
    r.register(
        "nat64_sessions",
        "NAT64 sessions (RFC 6146), per protocol",
        per_proto(&n.sessions),
    );
    r.register(
        "nat64_bib_entries",
        "NAT64 BIB entries, static and dynamic, per protocol",
        per_proto(&n.bib),
    );
    r.register(
        "nat64_pool4_ports_in_use",
        "Pool4 ports (ICMP: identifiers) held by BIB entries or resting before reuse, per protocol",
        per_proto(&n.ports_in_use),
    );
    r.register(
        "nat64_pool4_ports",
        "Pool4 ports (ICMP: identifiers) the workers may hand out, per protocol",
        per_proto(&n.ports_owned),
    );
    let ratio = |used: u64, owned: u64| {
        if owned == 0 {
            0.0
        } else {
            used as f64 / owned as f64
        }
    };
    r.register(
        "nat64_pool4_utilization_ratio",
        "Pool4 ports in use over pool4 ports, per protocol (0 to 1)",
        Ratios(
            [
                ("tcp", n.ports_in_use.tcp, n.ports_owned.tcp),
                ("udp", n.ports_in_use.udp, n.ports_owned.udp),
                ("icmp", n.ports_in_use.icmp, n.ports_owned.icmp),
            ]
            .into_iter()
            .map(|(p, u, o)| (vec![("protocol", p.to_string())], ratio(u, o)))
            .collect(),
        ),
    );
    let gauges = [
        (
            "nat64_session_capacity",
            "Most sessions the tables hold (max_sessions)",
            n.session_capacity,
        ),
        (
            "nat64_subscribers",
            "Subscribers (RFC 6888) with state",
            n.subscribers,
        ),
        (
            "nat64_port_blocks",
            "Port blocks held by subscribers (RFC 7422)",
            n.port_blocks,
        ),
        (
            "nat64_held_syns",
            "IPv4 SYNs held for a simultaneous open (RFC 6146 section 3.5.2.2)",
            n.held_syns,
        ),
    ];
    for (name, help, v) in gauges {
        r.register(name, help, Samples::gauge().value(v));
    }
    r.register(
        "nat64_events_lost",
        "RFC 6888 log events that did not fit in the event ring",
        Samples::counter().value(n.events_lost),
    );
    r.register(
        "nat64_sessions_flushed",
        "Sessions removed by sixgate session flush",
        Samples::counter().value(n.sessions_flushed),
    );
    r.register(
        "nat64_bib_conflicts",
        "A peer node's mapping of an IPv6 transport address mapped otherwise here, by outcome (docs/ha.md)",
        Samples::counter()
            .with(vec![("outcome", "kept".into())], n.bib_conflicts)
            .with(
                vec![("outcome", "refused".into())],
                n.bib_conflicts_refused,
            ),
    );
}

fn reloads(r: &mut Registry, s: &Scrape) {
    let l = &s.reload;
    r.register(
        "reloads",
        "Configuration reloads (sixgate reload, SIGHUP), by result",
        Samples::counter()
            .with(vec![("result", "ok".into())], l.succeeded)
            .with(vec![("result", "failed".into())], l.failed),
    );
    r.register(
        "last_reload_success",
        "1 if the last reload took effect (or none was tried), 0 if it was refused",
        Samples::gauge().value(u64::from(l.last_ok)),
    );
    r.register(
        "last_reload_timestamp_seconds",
        "When the last reload was tried, seconds since the Unix epoch (0: never)",
        Samples::gauge().value(l.last_unix_s),
    );
}

/// docs/fastpath.md: the TC program's verdicts; `received` is the sum of the
/// others, and the packets `passed` are the ones the workers then count.
/// Then how the translated packets left (bpf/forward.h), and what was
/// translated, the program's and the workers' together.
fn fastpath(r: &mut Registry, f: &sixgate_dataplane::FastPathCounters, s: &Scrape) {
    let v = |name: &str| vec![("verdict", name.to_string())];
    r.register(
        "fastpath_packets",
        "Packets the in-kernel fast path saw, by verdict (received = translated_6to4 + \
         translated_4to6 + passed + aborted; passed ones go on to the TUN device or the host)",
        Samples::counter()
            .with(v("received"), f.received)
            .with(v("translated_6to4"), f.translated_6to4)
            .with(v("translated_4to6"), f.translated_4to6)
            .with(v("passed"), f.passed)
            .with(v("aborted"), f.aborted),
    );
    let n = &f.nat64_sessions;
    let e = |name: &str| vec![("event", name.to_string())];
    r.register(
        "fastpath_nat64_sessions",
        "NAT64 sessions on the in-kernel fast path, by what the workers did: installed in the \
         program's maps, removed, refreshed in the core because the program saw them, or left \
         on the slow path for a full map (map_full) or another failed map call (map_error)",
        Samples::counter()
            .with(e("installed"), n.installed)
            .with(e("removed"), n.removed)
            .with(e("refreshed"), n.refreshed)
            .with(e("map_full"), n.map_full)
            .with(e("map_error"), n.map_errors),
    );
    let via = |name: &str| vec![("via", name.to_string())];
    r.register(
        "fastpath_forwarded_packets",
        "The fast path's translated packets by how they left (bpf/forward.h): redirected \
         (the program sent them out), redirect_neigh (sent out, the kernel resolving the \
         next hop), kernel (handed to the kernel's routing); the sum is translated_6to4 + \
         translated_4to6",
        Samples::counter()
            .with(via("redirect"), f.redirected)
            .with(via("redirect_neigh"), f.redirected_neigh)
            .with(via("kernel"), f.to_kernel),
    );
    let answer = |name: &str| vec![("answer", name.to_string())];
    r.register(
        "fastpath_route_checks",
        "The fast path's route checks (would the kernel route the packet into the slow \
         path's device?) by how they were answered (bpf/route_cache.h): kept (the flow's \
         answer in this routing generation), asked (of the kernel's FIB)",
        Samples::counter()
            .with(answer("kept"), f.route_kept)
            .with(answer("asked"), f.route_asked),
    );
    let mut slow = sixgate_dataplane::Snapshot::default();
    for w in &s.workers {
        slow.merge(w);
    }
    let [v6to4, v4to6] = f.with_slow(&slow);
    let d = |name: &str| vec![("direction", name.to_string())];
    r.register(
        "translated_fast_and_slow_packets",
        "Packets translated, by the fast path and the workers together, per direction \
         (sixgate_fastpath_packets_total translated_* plus sixgate_translated_packets_total)",
        Samples::counter()
            .with(d("6to4"), v6to4)
            .with(d("4to6"), v4to6),
    );
}

/// docs/ha.md: each peer's protocol state and counters, the workers' rings
/// and the link's own counters.
/// The NAT64 event exporter (docs/logging.md, docs/metrics.md).
fn log_export(r: &mut Registry, x: &sixgate_dataplane::event_export::ExportReport) {
    r.register(
        "nat64_events_exported",
        "NAT64 events the exporter thread read from the workers' rings",
        Samples::counter().value(x.events),
    );
    r.register(
        "nat64_events_interim",
        "Interim records of port blocks still held ([log_export] interim)",
        Samples::counter().value(x.interim),
    );
    r.register(
        "log_export_file_errors",
        "Records that could not be written to [log_export] file",
        Samples::counter().value(x.file_errors),
    );
    let who = |c: &sixgate_dataplane::event_export::CollectorReport| {
        vec![
            ("collector", c.address.clone()),
            ("protocol", c.protocol.to_string()),
            ("transport", c.transport.to_string()),
        ]
    };
    let each =
        |m: Samples, f: &dyn Fn(&sixgate_dataplane::event_export::CollectorReport) -> u64| {
            x.collectors.iter().fold(m, |m, c| m.with(who(c), f(c)))
        };
    r.register(
        "log_export_records_sent",
        "NAT event records handed to the collector's socket",
        each(Samples::counter(), &|c| c.records_sent),
    );
    r.register(
        "log_export_records_dropped",
        "NAT event records lost on the way to the collector (refused by the socket, a full TCP queue, a cut connection)",
        each(Samples::counter(), &|c| c.records_dropped),
    );
    r.register(
        "log_export_errors",
        "Failed sends, and failed or lost TCP connections, to the collector",
        each(Samples::counter(), &|c| c.errors),
    );
    r.register(
        "log_export_connected",
        "1 while the collector is connected (TCP; UDP always 1)",
        each(Samples::gauge(), &|c| u64::from(c.connected)),
    );
}

fn sync(r: &mut Registry, y: &sixgate_dataplane::sync_thread::SyncReport) {
    let peer = |id: u16| vec![("peer", id.to_string())];
    let both =
        |id: u16, k: &'static str, v: &str| vec![("peer", id.to_string()), (k, v.to_string())];
    let per_peer = |m: Samples, f: &dyn Fn(&sixgate_sync::Status) -> u64| {
        y.peers
            .iter()
            .fold(m, |m, (id, _, st)| m.with(peer(*id), f(st)))
    };
    r.register(
        "sync_peer_up",
        "1 while the peer was heard from within 3 s",
        per_peer(Samples::gauge(), &|st| u64::from(st.up)),
    );
    r.register(
        "sync_peer_synced",
        "1 once the peer's stream reached the end of a snapshot since either side started",
        per_peer(Samples::gauge(), &|st| u64::from(st.synced)),
    );
    r.register(
        "sync_peer_drained",
        "1 once the peer sent DRAIN in its current epoch (it keeps no routes; we keep its entries)",
        per_peer(Samples::gauge(), &|st| u64::from(st.peer_drained)),
    );
    let state = |s: &str| vec![("state", s.to_string())];
    r.register(
        "sync_node_state",
        "1 for this node's state in its group (joining, ready, draining, drained), 0 for the others",
        sixgate_dataplane::sync_node::NodeState::ALL
            .iter()
            .fold(Samples::gauge(), |m, s| {
                m.with(state(s.as_str()), u64::from(*s == y.state))
            }),
    );
    r.register(
        "sync_announcing",
        "1 while this node's routes are in [sync] announce_table for the routing daemon",
        Samples::gauge().value(u64::from(y.announcing)),
    );
    // Only with announce_table: what tells "not announcing" (an alert) from
    // "nothing to announce" (no routing daemon hook configured).
    if let Some((table, _)) = &y.announce {
        r.register(
            "sync_announce_table",
            "[sync] announce_table, the kernel routing table the node announces its routes in (present only when set)",
            Samples::gauge().value(u64::from(*table)),
        );
    }
    r.register(
        "sync_peer_unacked_messages",
        "Lag: our messages to the peer it has not acknowledged yet",
        per_peer(Samples::gauge(), &|st| st.unacked as u64),
    );
    let dir = |m: Samples, f: &dyn Fn(&sixgate_sync::Counters) -> (u64, u64)| {
        y.peers.iter().fold(m, |m, (id, _, st)| {
            let (i, o) = f(&st.counters);
            m.with(both(*id, "direction", "in"), i)
                .with(both(*id, "direction", "out"), o)
        })
    };
    r.register(
        "sync_records",
        "Records received from the peer (in) and queued for it (out)",
        dir(Samples::counter(), &|c| (c.records_in, c.records_out)),
    );
    r.register(
        "sync_datagrams",
        "Datagrams accepted from the peer (in) and sent to it (out)",
        dir(Samples::counter(), &|c| (c.datagrams_in, c.datagrams_out)),
    );
    r.register(
        "sync_resyncs",
        "Snapshots of our tables started for the peer (started) and asked of it (requested)",
        y.peers.iter().fold(Samples::counter(), |m, (id, _, st)| {
            m.with(both(*id, "kind", "started"), st.counters.resync_started)
                .with(both(*id, "kind", "requested"), st.counters.resync_requested)
        }),
    );
    r.register(
        "sync_snapshots_received",
        "Snapshots received from the peer",
        per_peer(Samples::counter(), &|st| st.counters.snapshots_received),
    );
    r.register(
        "sync_resent_messages",
        "Messages sent to the peer again after a NACK",
        per_peer(Samples::counter(), &|st| st.counters.resent),
    );
    r.register(
        "sync_queue_full",
        "Records the peer's full resend queue refused (each makes a snapshot due)",
        per_peer(Samples::counter(), &|st| st.counters.queue_full),
    );
    r.register(
        "sync_dropped_datagrams",
        "Datagrams from the peer dropped, by reason (docs/ha.md's drop counters)",
        y.peers.iter().fold(Samples::counter(), |m, (id, _, st)| {
            sixgate_sync::Drop::ALL.iter().fold(m, |m, &d| {
                m.with(both(*id, "reason", d.name()), st.counters.dropped_by(d))
            })
        }),
    );
    let [exported, export_lost, imported, import_refused, swept] = y.workers;
    let what = |w: &str| vec![("what", w.to_string())];
    r.register(
        "sync_worker_changes",
        "The workers' side: changes exported, lost before the sync thread (a snapshot follows), \
         records imported, refused by the tables, entries swept after a snapshot",
        Samples::counter()
            .with(what("exported"), exported)
            .with(what("export_lost"), export_lost)
            .with(what("imported"), imported)
            .with(what("import_refused"), import_refused)
            .with(what("swept"), swept),
    );
    let l = &y.link;
    r.register(
        "sync_link_errors",
        "The link's own troubles: datagrams from no peer, records a full import ring refused, \
         records the tables cannot take, failed sends",
        Samples::counter()
            .with(what("unknown_peer"), l.unknown_peer)
            .with(what("import_full"), l.import_full)
            .with(what("not_imported"), l.not_imported)
            .with(what("send_errors"), l.send_errors),
    );
}

fn dns64(r: &mut Registry, d: &sixgate_dns64::StatsSnapshot) {
    let counters = [
        (
            "dns64_queries",
            "DNS queries received, well-formed or not",
            d.queries,
        ),
        (
            "dns64_synthesized_answers",
            "AAAA answers synthesized from A records (RFC 6147 section 5.1.7)",
            d.synthesized,
        ),
        (
            "dns64_ptr_synthesized_answers",
            "PTR queries under a prefix answered with a CNAME (RFC 6147 section 5.3.1)",
            d.ptr_synthesized,
        ),
        (
            "dns64_ipv4only_answers",
            "ipv4only.arpa queries answered locally (RFC 8880 section 7.2)",
            d.ipv4only,
        ),
        (
            "dns64_cache_hits",
            "Answers served from the cache",
            d.cache_hits,
        ),
        (
            "dns64_cache_misses",
            "Lookups the cache could not serve",
            d.cache_misses,
        ),
        (
            "dns64_upstream_queries",
            "Queries sent upstream (each try counts)",
            d.upstream_queries,
        ),
        (
            "dns64_upstream_errors",
            "Upstream I/O errors and unparsable answers",
            d.upstream_errors,
        ),
        (
            "dns64_upstream_timeouts",
            "Upstream tries that got no answer in time",
            d.upstream_timeouts,
        ),
        (
            "dns64_upstream_mismatched_answers",
            "Upstream datagrams ignored: wrong source, ID or question",
            d.upstream_mismatched,
        ),
        (
            "dns64_upstream_tcp_retries",
            "Truncated upstream answers asked again over TCP",
            d.upstream_tcp_retries,
        ),
        (
            "dns64_servfail_answers",
            "SERVFAIL answers sent because no upstream answered",
            d.servfail,
        ),
        (
            "dns64_formerr_answers",
            "Malformed queries answered FORMERR",
            d.formerr,
        ),
        (
            "dns64_malformed_dropped",
            "Malformed datagrams dropped unanswered",
            d.dropped_malformed,
        ),
        (
            "dns64_refused_answers",
            "Queries refused by the ACL",
            d.refused,
        ),
        (
            "dns64_truncated_answers",
            "UDP answers sent truncated (TC=1)",
            d.truncated,
        ),
    ];
    for (name, help, v) in counters {
        r.register(name, help, Samples::counter().value(v));
    }
    let mut buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_MS
        .iter()
        .zip(&d.latency)
        .map(|(&ms, &n)| (ms as f64 / 1000.0, n))
        .collect();
    buckets.push((f64::INFINITY, d.latency[LATENCY_BUCKETS_MS.len()]));
    r.register(
        "dns64_upstream_latency_seconds",
        "Upstream round-trip time of answered tries",
        Histogram {
            sum: d.latency_sum_us as f64 / 1e6,
            buckets,
        },
    );
}

#[cfg(test)]
mod tests;
