//! Rendering checks: the exposition format parsed back line by line.

use std::collections::{BTreeMap, BTreeSet};

use sixgate_core::{Counters, DropReason, nat64};
use sixgate_dataplane::{IoCounters, Snapshot};
use sixgate_dns64::StatsSnapshot;

use super::*;
use crate::reload_status::ReloadReading;

/// A scrape with every part present and distinct values.
pub(crate) fn full_scrape() -> Scrape {
    let worker = |k: u64| {
        let mut core = Counters {
            translated_6to4: 10 * k,
            translated_4to6: 20 * k,
            bytes_6to4: 1000 * k,
            bytes_4to6: 2000 * k,
            icmp_generated: k,
            ..Counters::default()
        };
        core.dropped[DropReason::ALL[0] as usize] = k;
        Snapshot {
            core,
            io: IoCounters {
                rx_packets: 30 * k,
                rx_bytes: 3000 * k,
                ..IoCounters::default()
            },
            nat64: Some(nat64::Stats {
                sessions: nat64::PerProto {
                    tcp: 2,
                    udp: 1,
                    icmp: k,
                },
                ports_in_use: nat64::PerProto {
                    tcp: 2,
                    udp: 1,
                    icmp: 1,
                },
                ports_owned: nat64::PerProto {
                    tcp: 100,
                    udp: 100,
                    icmp: 0,
                },
                subscribers: 1,
                ..nat64::Stats::default()
            }),
        }
    };
    let mut latency = [0; LATENCY_BUCKETS_MS.len() + 1];
    latency[0] = 3;
    latency[2] = 1;
    latency[LATENCY_BUCKETS_MS.len()] = 1;
    Scrape {
        mode: "nat64".into(),
        workers: vec![worker(1), worker(2)],
        dns64: Some(StatsSnapshot {
            queries: 7,
            synthesized: 4,
            latency,
            latency_sum_us: 2_504_000,
            ..StatsSnapshot::default()
        }),
        reload: ReloadReading {
            succeeded: 2,
            failed: 1,
            last_ok: false,
            last_unix_s: 1_700_000_000,
            last_error: Some("x".into()),
        },
        fastpath: Some(sixgate_dataplane::FastPathCounters {
            received: 10,
            translated_6to4: 4,
            translated_4to6: 3,
            passed: 3,
            aborted: 0,
            nat64_sessions: sixgate_dataplane::FastPathSessions {
                installed: 5,
                removed: 2,
                refreshed: 7,
                map_full: 1,
                map_errors: 0,
            },
            redirected: 5,
            redirected_neigh: 1,
            to_kernel: 1,
            route_kept: 6,
            route_asked: 1,
        }),
        fastpath_active: Some(true),
        sync: Some(sixgate_dataplane::sync_thread::SyncReport {
            node_id: 1,
            peers: vec![(
                2,
                "10.5.0.2:7464".parse().unwrap(),
                sixgate_sync::Status {
                    up: true,
                    synced: true,
                    next_seq: 5,
                    expected: Some(3),
                    unacked: 1,
                    snapshot_running: false,
                    draining: false,
                    drain_acked: false,
                    peer_drained: true,
                    counters: sixgate_sync::Counters {
                        records_in: 7,
                        records_out: 9,
                        auth_failed: 2,
                        ..Default::default()
                    },
                },
            )],
            link: Default::default(),
            workers: [9, 0, 7, 0, 0],
            state: sixgate_dataplane::sync_node::NodeState::Ready,
            announce: Some((100, vec!["2001:db8:64::/96".into()])),
            announcing: true,
        }),
        log_export: Some(sixgate_dataplane::event_export::ExportReport {
            events: 40,
            interim: 2,
            file_errors: 0,
            collectors: vec![sixgate_dataplane::event_export::CollectorReport {
                protocol: "ipfix",
                transport: "udp",
                address: "192.0.2.10:4739".into(),
                records_sent: 38,
                records_dropped: 2,
                messages_sent: 3,
                errors: 1,
                connects: 0,
                connected: true,
            }],
        }),
    }
}

#[test]
fn log_export_counts_per_collector() {
    let text = render(&full_scrape());
    for line in [
        "sixgate_nat64_events_exported_total 40",
        "sixgate_log_export_records_sent_total{collector=\"192.0.2.10:4739\",protocol=\"ipfix\",transport=\"udp\"} 38",
        "sixgate_log_export_records_dropped_total{collector=\"192.0.2.10:4739\",protocol=\"ipfix\",transport=\"udp\"} 2",
        "sixgate_log_export_connected{collector=\"192.0.2.10:4739\",protocol=\"ipfix\",transport=\"udp\"} 1",
    ] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
    let without = Scrape {
        log_export: None,
        ..full_scrape()
    };
    assert!(!render(&without).contains("log_export"));
}

/// One sample line: `name{labels} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parse the text format strictly enough to catch a malformed line: HELP and
/// TYPE comments, samples `name{k="v",…} value`, and `# EOF` last.
fn parse(text: &str) -> (BTreeMap<String, String>, Vec<Sample>) {
    let mut types = BTreeMap::new();
    let mut helps = BTreeSet::new();
    let mut samples = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"));
    for l in &lines[..lines.len() - 1] {
        if let Some(rest) = l.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect(l);
            assert!(!help.trim().is_empty(), "{l}");
            helps.insert(name.to_string());
        } else if let Some(rest) = l.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(l);
            assert!(helps.contains(name), "TYPE before HELP: {l}");
            types.insert(name.to_string(), kind.to_string());
        } else {
            assert!(!l.starts_with('#'), "{l}");
            let (series, value) = l.rsplit_once(' ').expect(l);
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("value: {l}"));
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => {
                    let body = rest.strip_suffix('}').expect(l);
                    let labels = body
                        .split(',')
                        .map(|kv| {
                            let (k, v) = kv.split_once('=').expect(l);
                            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"'));
                            (k.to_string(), v.expect(l).to_string())
                        })
                        .collect();
                    (n, labels)
                }
                None => (series, BTreeMap::new()),
            };
            assert!(
                name.starts_with("sixgate_")
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{l}"
            );
            samples.push(Sample {
                name: name.to_string(),
                labels,
                value,
            });
        }
    }
    (types, samples)
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}");
    found[0].value
}

/// The names a PromQL query uses: counters with `_total`, histograms by base name.
pub(crate) fn exposed_names(text: &str) -> BTreeSet<String> {
    let (types, _) = parse(text);
    types
        .into_iter()
        .map(|(n, kind)| {
            if kind == "counter" {
                format!("{n}_total")
            } else {
                n
            }
        })
        .collect()
}

#[test]
fn every_line_parses_and_every_metric_has_help_and_a_unit_suffix() {
    let text = render(&full_scrape());
    let (types, samples) = parse(&text);
    for (name, kind) in &types {
        match kind.as_str() {
            "counter" => assert!(
                samples.iter().any(|s| s.name == format!("{name}_total")),
                "{name}"
            ),
            "gauge" | "histogram" => {}
            k => panic!("{name}: unexpected type {k}"),
        }
        assert!(
            !name.ends_with("_total"),
            "{name}: the encoder adds _total itself"
        );
    }
    for s in &samples {
        let base = types.keys().any(|t| {
            s.name == *t
                || s.name == format!("{t}_total")
                || ["_bucket", "_sum", "_count"]
                    .iter()
                    .any(|suf| s.name == format!("{t}{suf}"))
        });
        assert!(base, "sample without TYPE: {s:?}");
    }
}

#[test]
fn every_drop_reason_is_present_even_at_zero() {
    let s = full_scrape();
    let (_, samples) = parse(&render(&s));
    let reasons: BTreeSet<&str> = samples
        .iter()
        .filter(|x| x.name == "sixgate_dropped_packets_total")
        .map(|x| x.labels["reason"].as_str())
        .collect();
    assert_eq!(reasons.len(), DropReason::COUNT);
    for r in DropReason::ALL {
        let want = s.workers.iter().map(|w| w.core.drops(*r)).sum::<u64>() as f64;
        assert_eq!(
            value(
                &samples,
                "sixgate_dropped_packets_total",
                &[("reason", r.as_str())]
            ),
            want
        );
    }
}

#[test]
fn packets_per_worker_and_direction() {
    let (_, samples) = parse(&render(&full_scrape()));
    let t = "sixgate_translated_packets_total";
    assert_eq!(
        value(&samples, t, &[("worker", "0"), ("direction", "6to4")]),
        10.0
    );
    assert_eq!(
        value(&samples, t, &[("worker", "1"), ("direction", "4to6")]),
        40.0
    );
    assert_eq!(
        value(&samples, "sixgate_tun_rx_bytes_total", &[("worker", "1")]),
        6000.0
    );
    let b = "sixgate_translated_bytes_total";
    assert_eq!(
        value(&samples, b, &[("worker", "1"), ("direction", "6to4")]),
        2000.0
    );
    assert_eq!(
        value(&samples, b, &[("worker", "0"), ("direction", "4to6")]),
        2000.0
    );
    assert_eq!(
        value(
            &samples,
            "sixgate_icmp_errors_generated_total",
            &[("worker", "0")]
        ),
        1.0
    );
    assert_eq!(value(&samples, "sixgate_workers", &[]), 2.0);
    assert_eq!(
        value(
            &samples,
            "sixgate_build_info",
            &[("mode", "nat64"), ("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
}

#[test]
fn nat64_tables_summed_with_utilisation() {
    let (_, samples) = parse(&render(&full_scrape()));
    assert_eq!(
        value(&samples, "sixgate_nat64_sessions", &[("protocol", "icmp")]),
        3.0
    );
    assert_eq!(
        value(&samples, "sixgate_nat64_sessions", &[("protocol", "tcp")]),
        4.0
    );
    assert_eq!(
        value(
            &samples,
            "sixgate_nat64_pool4_ports",
            &[("protocol", "udp")]
        ),
        200.0
    );
    assert_eq!(
        value(
            &samples,
            "sixgate_nat64_pool4_utilization_ratio",
            &[("protocol", "tcp")]
        ),
        0.02
    );
    // No ports owned: 0, not NaN.
    assert_eq!(
        value(
            &samples,
            "sixgate_nat64_pool4_utilization_ratio",
            &[("protocol", "icmp")]
        ),
        0.0
    );
    assert_eq!(value(&samples, "sixgate_nat64_subscribers", &[]), 2.0);
    // Without NAT64 state (siit), no nat64 series at all.
    let mut siit = full_scrape();
    siit.workers.iter_mut().for_each(|w| w.nat64 = None);
    siit.log_export = None;
    assert!(!render(&siit).contains("sixgate_nat64_"));
}

#[test]
fn reloads_and_last_status() {
    let (_, samples) = parse(&render(&full_scrape()));
    assert_eq!(
        value(&samples, "sixgate_reloads_total", &[("result", "ok")]),
        2.0
    );
    assert_eq!(
        value(&samples, "sixgate_reloads_total", &[("result", "failed")]),
        1.0
    );
    assert_eq!(value(&samples, "sixgate_last_reload_success", &[]), 0.0);
    assert_eq!(
        value(&samples, "sixgate_last_reload_timestamp_seconds", &[]),
        1.7e9
    );
}

#[test]
fn dns64_counters_and_a_cumulative_latency_histogram() {
    let (types, samples) = parse(&render(&full_scrape()));
    assert_eq!(types["sixgate_dns64_upstream_latency_seconds"], "histogram");
    assert_eq!(value(&samples, "sixgate_dns64_queries_total", &[]), 7.0);
    assert_eq!(
        value(&samples, "sixgate_dns64_synthesized_answers_total", &[]),
        4.0
    );
    let h = "sixgate_dns64_upstream_latency_seconds";
    assert_eq!(
        value(&samples, &format!("{h}_bucket"), &[("le", "0.001")]),
        3.0
    );
    assert_eq!(
        value(&samples, &format!("{h}_bucket"), &[("le", "0.002")]),
        3.0
    );
    assert_eq!(
        value(&samples, &format!("{h}_bucket"), &[("le", "0.005")]),
        4.0
    );
    assert_eq!(
        value(&samples, &format!("{h}_bucket"), &[("le", "+Inf")]),
        5.0
    );
    assert_eq!(value(&samples, &format!("{h}_count"), &[]), 5.0);
    assert_eq!(value(&samples, &format!("{h}_sum"), &[]), 2.504);
    let mut none = full_scrape();
    none.dns64 = None;
    assert!(!render(&none).contains("dns64"));
}

#[test]
fn an_empty_scrape_still_renders() {
    let (_, samples) = parse(&render(&Scrape::default()));
    assert_eq!(value(&samples, "sixgate_workers", &[]), 0.0);
    assert_eq!(
        samples
            .iter()
            .filter(|s| s.name == "sixgate_dropped_packets_total")
            .count(),
        DropReason::COUNT
    );
}

/// docs/metrics.md lists exactly what is rendered: the backticked first cell of
/// each table row.
#[test]
fn docs_metrics_md_lists_every_metric() {
    let md = include_str!("../../../../../docs/metrics.md");
    let documented: BTreeSet<String> = md
        .lines()
        .filter_map(|l| l.trim().strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .filter_map(|c| {
            let c = c.trim();
            c.strip_prefix('`')?.strip_suffix('`').map(str::to_owned)
        })
        .filter(|c| c.starts_with("sixgate_"))
        .collect();
    let rendered = exposed_names(&render(&full_scrape()));
    let missing: Vec<_> = rendered.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&rendered).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/metrics.md and the endpoint disagree: undocumented {missing:?}, not rendered {extra:?}"
    );
}

#[test]
#[ignore = "prints a full scrape, for writing docs"]
fn print_full_scrape() {
    println!("{}", render(&full_scrape()));
}

/// docs/metrics.md's `sixgate_build_info` row names every mode its `mode` label
/// can take: each `[translator] mode` the file format knows.
#[test]
fn docs_metrics_md_build_info_lists_every_mode() {
    let md = include_str!("../../../../../docs/metrics.md");
    let row = md
        .lines()
        .find(|l| l.starts_with("| `sixgate_build_info`"))
        .expect("a sixgate_build_info row");
    for mode in sixgate_config::KNOWN_MODES {
        assert!(
            row.contains(&format!("`{mode}`")),
            "mode {mode} missing: {row}"
        );
    }
}

/// docs/fastpath.md: one series per verdict, only with a fast path.
#[test]
fn fastpath_packets_by_verdict() {
    let s = full_scrape();
    let (types, samples) = parse(&render(&s));
    assert_eq!(types["sixgate_fastpath_packets"], "counter");
    let t = "sixgate_fastpath_packets_total";
    for (verdict, n) in [
        ("received", 10.0),
        ("translated_6to4", 4.0),
        ("translated_4to6", 3.0),
        ("passed", 3.0),
        ("aborted", 0.0),
    ] {
        assert_eq!(value(&samples, t, &[("verdict", verdict)]), n, "{verdict}");
    }
    let t = "sixgate_fastpath_nat64_sessions_total";
    for (event, n) in [
        ("installed", 5.0),
        ("removed", 2.0),
        ("refreshed", 7.0),
        ("map_full", 1.0),
        ("map_error", 0.0),
    ] {
        assert_eq!(value(&samples, t, &[("event", event)]), n, "{event}");
    }
    // bpf/forward.h: how the 7 translated packets left.
    let t = "sixgate_fastpath_forwarded_packets_total";
    for (via, n) in [("redirect", 5.0), ("redirect_neigh", 1.0), ("kernel", 1.0)] {
        assert_eq!(value(&samples, t, &[("via", via)]), n, "{via}");
    }
    // bpf/route_cache.h: how the route checks were answered.
    let t = "sixgate_fastpath_route_checks_total";
    for (answer, n) in [("kept", 6.0), ("asked", 1.0)] {
        assert_eq!(value(&samples, t, &[("answer", answer)]), n, "{answer}");
    }
    // Translated, fast and slow path together: the program's 4 and 3 plus
    // the workers'.
    let t = "sixgate_translated_fast_and_slow_packets_total";
    let workers = |f: fn(&sixgate_core::Counters) -> u64| -> f64 {
        s.workers.iter().map(|w| f(&w.core)).sum::<u64>() as f64
    };
    assert_eq!(
        value(&samples, t, &[("direction", "6to4")]),
        4.0 + workers(|c| c.translated_6to4)
    );
    assert_eq!(
        value(&samples, t, &[("direction", "4to6")]),
        3.0 + workers(|c| c.translated_4to6)
    );
    assert!(
        workers(|c| c.translated_6to4) > 0.0,
        "the scrape has worker counts"
    );
    let without = Scrape {
        fastpath: None,
        fastpath_active: None,
        ..full_scrape()
    };
    assert!(!render(&without).contains("sixgate_fastpath_"));
    assert!(!render(&without).contains("fast_and_slow"));
}

#[test]
fn sync_series_per_peer_and_absent_without_sync() {
    let (_, samples) = parse(&render(&full_scrape()));
    let t = "sixgate_sync_records_total";
    assert_eq!(
        value(&samples, t, &[("peer", "2"), ("direction", "in")]),
        7.0
    );
    assert_eq!(
        value(&samples, t, &[("peer", "2"), ("direction", "out")]),
        9.0
    );
    assert_eq!(
        value(&samples, "sixgate_sync_peer_up", &[("peer", "2")]),
        1.0
    );
    assert_eq!(
        value(&samples, "sixgate_sync_peer_drained", &[("peer", "2")]),
        1.0
    );
    for (s, v) in [
        ("joining", 0.0),
        ("ready", 1.0),
        ("draining", 0.0),
        ("drained", 0.0),
    ] {
        assert_eq!(
            value(&samples, "sixgate_sync_node_state", &[("state", s)]),
            v,
            "{s}"
        );
    }
    assert_eq!(value(&samples, "sixgate_sync_announcing", &[]), 1.0);
    assert_eq!(value(&samples, "sixgate_sync_announce_table", &[]), 100.0);
    // docs/ha.md, "Drop counters": one series per reason, each reason there.
    let d = "sixgate_sync_dropped_datagrams_total";
    for why in sixgate_sync::Drop::ALL {
        let expected = if why == sixgate_sync::Drop::AuthFailed {
            2.0
        } else {
            0.0
        };
        assert_eq!(
            value(&samples, d, &[("peer", "2"), ("reason", why.name())]),
            expected,
            "{why:?}"
        );
    }
    let without = Scrape {
        sync: None,
        ..full_scrape()
    };
    assert!(!render(&without).contains("sixgate_sync_"));
}

/// Issue 30: whether the fast path translates, as a gauge to alert on; none
/// without a fast path asked for.
#[test]
fn fastpath_active_gauge() {
    let on = render(&full_scrape());
    assert!(on.contains("# TYPE sixgate_fastpath_active gauge"), "{on}");
    assert!(on.contains("\nsixgate_fastpath_active 1\n"), "{on}");
    let off = render(&Scrape {
        fastpath_active: Some(false),
        ..full_scrape()
    });
    assert!(off.contains("\nsixgate_fastpath_active 0\n"), "{off}");
    let none = render(&Scrape {
        fastpath_active: None,
        ..full_scrape()
    });
    assert!(!none.contains("sixgate_fastpath_active"));
}
