//! The shipped monitoring, proven (issue 27, docs/monitoring.md):
//!
//! - `dist/prometheus/sixgate-rules.yml` passes `promtool check rules`, and
//!   `promtool test rules` runs its unit tests
//!   (`dist/prometheus/sixgate-rules.test.yml`: every alert fires on its
//!   series, and only then);
//! - `dist/grafana/sixgate.json` is an import-ready Grafana dashboard (an
//!   `__inputs` data source, a uid, every panel on it), and every query of
//!   every panel returns data from a real Prometheus server (Debian's
//!   `prometheus`) scraping a live pair of `sixgate run` NAT64 nodes with
//!   state sync, a NAT log collector and the fast path, after traffic went
//!   through them.
//!
//! The live test needs root, `ip netns` and the `prometheus` binary
//! (`scripts/setup.sh` installs it); without them it prints `skipped:` and
//! passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::ha::{
    SyncPath, gateway_toml, start_toml, take_bed, udp_echo, udp_exchange, wait_for, wait_synced,
};
use common::stop_cleanly;
use sixgate_netns::{Background, Netns, Proto, ScratchDir};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dashboard() -> serde_json::Value {
    let path = repo().join("dist/grafana/sixgate.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every query of the dashboard: (panel title, refId, expr).
fn panel_queries(dash: &serde_json::Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        if p["type"] == "row" {
            continue;
        }
        for t in p["targets"].as_array().unwrap() {
            out.push((
                p["title"].as_str().unwrap().to_owned(),
                t["refId"].as_str().unwrap().to_owned(),
                t["expr"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

/// A panel query as Grafana sends it with every instance selected.
fn expand(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$__range", "5m")
        .replace("$instance", ".*")
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `promtool check rules` and `promtool test rules` on the shipped files.
#[test]
fn alert_rules_pass_promtool_check_and_unit_tests() {
    let test = "alert_rules_pass_promtool_check_and_unit_tests";
    if !have("promtool") {
        println!("skipped: {test}: promtool not installed (scripts/setup.sh installs prometheus)");
        return;
    }
    let dir = repo().join("dist/prometheus");
    for args in [
        ["check", "rules", "sixgate-rules.yml"],
        ["test", "rules", "sixgate-rules.test.yml"],
    ] {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        assert!(text.contains("SUCCESS"), "promtool {args:?}:\n{text}");
        println!("promtool {}: {}", args.join(" "), text.trim());
    }
    // Every alert of the rules file has a unit test.
    let rules = std::fs::read_to_string(dir.join("sixgate-rules.yml")).unwrap();
    let tests = std::fs::read_to_string(dir.join("sixgate-rules.test.yml")).unwrap();
    let alerts: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(alerts.len() >= 15, "{alerts:?}");
    for a in &alerts {
        assert!(
            tests.contains(&format!("alertname: {a}\n")),
            "no promtool test of {a}"
        );
    }
}

/// The dashboard is what Grafana's import takes: an `__inputs` data source
/// that every panel and query uses, a uid, a title, a schema version,
/// unique panel ids, grid positions, and every metric it names is one
/// sixgate serves (docs/metrics.md).
#[test]
fn grafana_dashboard_is_import_ready() {
    let dash = dashboard();
    assert_eq!(dash["uid"], "sixgate-overview");
    assert_eq!(dash["title"], "sixgate");
    assert!(dash["schemaVersion"].as_u64().unwrap() >= 36);
    assert!(dash["id"].is_null(), "an exported dashboard has no id");
    let inputs = dash["__inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0]["name"], "DS_PROMETHEUS");
    assert_eq!(inputs[0]["pluginId"], "prometheus");
    let ds = serde_json::json!({"type": "prometheus", "uid": "${DS_PROMETHEUS}"});
    let metrics_md = std::fs::read_to_string(repo().join("docs/metrics.md")).unwrap();
    let mut ids = std::collections::BTreeSet::new();
    let mut titles = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        assert!(ids.insert(p["id"].as_u64().unwrap()), "duplicate id: {p}");
        for k in ["h", "w", "x", "y"] {
            assert!(p["gridPos"][k].is_u64(), "gridPos.{k}: {p}");
        }
        if p["type"] == "row" {
            continue;
        }
        titles.push(p["title"].as_str().unwrap());
        assert!(
            ["timeseries", "stat"].contains(&p["type"].as_str().unwrap()),
            "{p}"
        );
        assert_eq!(p["datasource"], ds, "{}", p["title"]);
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{}", p["title"]);
        for t in targets {
            assert_eq!(t["datasource"], ds, "{}", p["title"]);
            let expr = t["expr"].as_str().unwrap();
            assert!(expr.contains("instance=~\"$instance\""), "{expr}");
            for name in expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("sixgate_"))
            {
                assert!(
                    metrics_md.contains(&format!("`{name}`")),
                    "{}: {name} is not in docs/metrics.md",
                    p["title"]
                );
            }
        }
    }
    // The variable the queries use.
    let vars = dash["templating"]["list"].as_array().unwrap();
    assert!(vars.iter().any(|v| v["name"] == "instance"));
    // What the dashboard is for (issue 27).
    for want in [
        "Translation rate",
        "Drops by reason",
        "Sessions and BIB entries",
        "Pool4 use",
        "Records per collector",
        "Sync peers",
        "Sync lag",
        "Fast path active",
    ] {
        assert!(titles.contains(&want), "no panel {want:?}: {titles:?}");
    }
}

const PROM_PORT: u16 = 9090;

/// Prometheus in `ns` on 127.0.0.1:9090, scraping `targets` every second
/// (job `sixgate`), its data in `dir`; ready.
fn prometheus(ns: &Netns, dir: &ScratchDir, targets: &[&str]) -> Background {
    let list = targets
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         rule_files: [\"{}\"]\n\
         scrape_configs:\n  - job_name: sixgate\n    static_configs:\n      - targets: [{list}]\n",
        repo().join("dist/prometheus/sixgate-rules.yml").display()
    );
    let path = dir.write("prometheus.yml", config).unwrap();
    let data = dir.path().join("data");
    let bg = ns
        .spawn(
            "prometheus",
            [
                format!("--config.file={}", path.display()),
                format!("--storage.tsdb.path={}", data.display()),
                format!("--web.listen-address=127.0.0.1:{PROM_PORT}"),
                "--log.level=warn".into(),
            ],
        )
        .unwrap_or_else(|e| panic!("prometheus: {e}"));
    ns.wait_listening(Proto::Tcp, PROM_PORT, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("prometheus: {e}\n{}", bg.stderr()));
    bg
}

/// `GET path` of the Prometheus in `ns`, as JSON.
fn api(ns: &Netns, path: &str) -> serde_json::Value {
    let url = format!("http://127.0.0.1:{PROM_PORT}{path}");
    let out = ns
        .run_timeout(
            "curl",
            ["-sS", "--max-time", "10", &url],
            Duration::from_secs(15),
        )
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("GET {path}: {e}: {out}"))
}

/// An instant query against the Prometheus in `ns`: its `data.result`.
fn query(ns: &Netns, expr: &str) -> Vec<serde_json::Value> {
    let url = format!("http://127.0.0.1:{PROM_PORT}/api/v1/query");
    let out = ns
        .run_timeout(
            "curl",
            [
                "-sS",
                "--max-time",
                "10",
                "-G",
                &url,
                "--data-urlencode",
                &format!("query={expr}"),
            ],
            Duration::from_secs(15),
        )
        .unwrap_or_else(|e| panic!("query {expr}: {e}"));
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("query {expr}: {e}: {out}"));
    assert_eq!(v["status"], "success", "query {expr}: {v}");
    v["data"]["result"].as_array().unwrap().clone()
}

/// The live proof: a pair of NAT64 nodes with state sync (gw1 also
/// announcing into a routing table, exporting its NAT events to a syslog
/// collector over UDP, both with the fast path `auto`), Prometheus in gw1's
/// namespace scraping both (gw2 over the sync link), UDP flows across the
/// pair; then every panel query returns at least one series.
#[test]
fn grafana_panels_have_data_from_prometheus_scraping_sixgate() {
    let test = "grafana_panels_have_data_from_prometheus_scraping_sixgate";
    if !have("prometheus") {
        println!(
            "skipped: {test}: the prometheus binary is not installed (scripts/setup.sh installs Debian's prometheus)"
        );
        return;
    }
    let Some((turn, bed)) = take_bed(test, SyncPath::Direct) else {
        return;
    };
    let t0 = Instant::now();
    let dir = ScratchDir::new("prometheus").unwrap();
    // gw1: the NAT event log to a collector in the server's namespace
    // (a UDP syslog sink), and announce_table so the node's routing hook
    // series exist.
    let gw1_toml = format!(
        "{}announce_table = 100\n\
         [log_export]\n\
         [[log_export.collector]]\nprotocol = \"syslog\"\naddress = \"10.1.0.2:5514\"\n",
        gateway_toml(1, SyncPath::Direct).replace(
            "pool4 = [\"198.18.0.0/31\"]\n",
            "pool4 = [\"198.18.0.0/31\"]\nevent_log = \"all\"\n"
        )
    );
    // gw2 serves its metrics on the sync link, where gw1's Prometheus
    // reaches them.
    let gw2_toml = gateway_toml(2, SyncPath::Direct)
        .replace("listen = \"127.0.0.1:9464\"", "listen = \"10.5.0.2:9464\"");
    let gw1 = start_toml(&bed.gw1, 1, &gw1_toml);
    let gw2 = start_toml(&bed.gw2, 2, &gw2_toml);
    let sink = bed
        .server
        .spawn(
            "python3",
            [
                "-c",
                "import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
                 s.bind(('10.1.0.2',5514))\nwhile True: s.recv(65536)\n",
            ],
        )
        .unwrap();
    bed.server
        .wait_listening(Proto::Udp, 5514, Duration::from_secs(10))
        .unwrap();
    let logs = || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log());
    let dash = dashboard();
    let queries = panel_queries(&dash);
    let mut prom = None;
    turn.run(logs, || {
        wait_synced(&gw1, &gw2);
        prom = Some(prometheus(
            &bed.gw1,
            &dir,
            &["127.0.0.1:9464", "10.5.0.2:9464"],
        ));
        // Both targets scraped.
        wait_for(
            30,
            || format!("both targets up: {:?}", query(&bed.gw1, "up")),
            || {
                let up = query(&bed.gw1, "up == 1");
                up.len() == 2
            },
        );
        println!(
            "{test}: Prometheus scrapes both nodes after {:.1} s",
            t0.elapsed().as_secs_f32()
        );
        // Traffic across the pair: flows from several source ports, over
        // a few seconds so the rates have samples on both sides.
        let _echo = udp_echo(&bed);
        for _ in 0..5 {
            udp_exchange(&bed);
            std::thread::sleep(Duration::from_millis(500));
        }
        // A few more scrapes after the last packet.
        std::thread::sleep(Duration::from_secs(4));
        let mut empty = Vec::new();
        for (title, ref_id, expr) in &queries {
            let q = expand(expr);
            let result = query(&bed.gw1, &q);
            println!("{title} [{ref_id}]: {} series", result.len());
            if result.is_empty() {
                empty.push(format!("{title} [{ref_id}]: {q}"));
            }
        }
        assert!(
            empty.is_empty(),
            "panel queries without data:\n{}\nsixgate on gw1:\n{}",
            empty.join("\n"),
            bed.gw1
                .run(
                    "curl",
                    ["-sS", "--max-time", "5", "http://127.0.0.1:9464/metrics"]
                )
                .unwrap_or_default()
        );
        // The traffic is in the figures, not only zeros: translated
        // packets, UDP sessions, exported NAT events and records sent to the
        // collector, sync records from gw1 to gw2, both peers up, the
        // fast path attached on both nodes.
        for (what, expr) in [
            (
                "packets translated",
                "sum(sixgate_translated_fast_and_slow_packets_total) > 0",
            ),
            (
                "UDP sessions on gw1",
                "sum(sixgate_nat64_sessions{instance=\"127.0.0.1:9464\", protocol=\"udp\"}) > 0",
            ),
            (
                "NAT events exported",
                "sum(sixgate_nat64_events_exported_total) > 0",
            ),
            (
                "records to the collector",
                "sum(sixgate_log_export_records_sent_total) > 0",
            ),
            (
                "sync records gw1 -> gw2",
                "sum(sixgate_sync_records_total{instance=\"10.5.0.2:9464\", direction=\"in\"}) > 0",
            ),
            ("both peers up", "count(sixgate_sync_peer_up == 1) == 2"),
            (
                "gw1 announcing",
                "sixgate_sync_announcing{instance=\"127.0.0.1:9464\"} == 1",
            ),
            (
                "fast path active on both",
                "count(sixgate_fastpath_active == 1) == 2",
            ),
        ] {
            let r = query(&bed.gw1, expr);
            assert!(!r.is_empty(), "{what}: {expr}: no data");
            println!("{test}: {what}: {}", r[0]["value"][1]);
        }
        // The rules load, and none fires on this healthy pair.
        let firing = query(&bed.gw1, "ALERTS{alertstate=\"firing\"}");
        assert!(
            firing.is_empty(),
            "alerts firing on a healthy pair: {firing:?}"
        );
        let rules = api(&bed.gw1, "/api/v1/rules");
        let loaded: Vec<&serde_json::Value> = rules["data"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap())
            .collect();
        assert!(loaded.len() >= 15, "{rules}");
        for r in &loaded {
            assert_eq!(r["health"], "ok", "{r}");
        }
        println!(
            "{test}: {} alert rules loaded, all healthy, none firing",
            loaded.len()
        );
    });
    drop(prom);
    drop(sink);
    stop_cleanly(test, "gw1", gw1);
    stop_cleanly(test, "gw2", gw2);
    drop(bed);
    turn.finish();
    println!("{test}: {} panel queries, all with data", queries.len());
}
