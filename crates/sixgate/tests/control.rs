//! The daemon's API and the commands that talk to it (docs/control.md), against
//! `sixgate run` in a namespace bed: every `show`, runtime EAM / pool4 / static
//! BIB changes with traffic through them, `config save` and a restart from the
//! saved file, reloads (API and SIGHUP, a broken file in the middle) while
//! iperf3 runs through the gateway, malformed requests, and a non-root client.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use sixgate_netns::{
    Dataplane, Dut, Netns, RunningDut, ScratchDir, Topology, TopologyOptions, addr, check_host,
};

mod common;
use common::{
    HTTP_PORT, fetch_and_compare, http_client_seen, http_server, iperf3, pattern, run_bed,
};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// sixgate with `extra` TOML, or `None` (after printing why) on a machine that
/// cannot run the bed.
fn sixgate_or_skip(test: &str, extra: &str) -> Option<Dut> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    Some(Dut::Sixgate {
        binary: BIN.into(),
        dataplane: Dataplane::Tun,
        extra_toml: extra.to_owned(),
    })
}

/// NAT64 on two workers with pool4 198.18.0.0/25; the bed routes all of
/// 198.18.0.0/24 into the device (`manage_routes = false`), so a pool4 prefix
/// added there needs no new route.
const NAT64_25: &str = "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n\
                        [nat64]\npool4 = [\"198.18.0.0/25\"]\n[daemon]\nworkers = 2\n\
                        [tun]\nmanage_routes = false\n";

fn socket<'a>(tr: &'a RunningDut) -> &'a Path {
    tr.api_socket().expect("sixgate has an API socket")
}

/// `sixgate ARGS --socket SOCKET`: success, standard output, standard error.
fn cli(sock: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .arg("--socket")
        .arg(sock)
        .output()
        .expect("run sixgate");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn cli_ok(sock: &Path, args: &[&str]) -> String {
    let (ok, out, err) = cli(sock, args);
    assert!(ok, "sixgate {args:?} failed: {err}{out}");
    out
}

fn cli_err(sock: &Path, args: &[&str]) -> String {
    let (ok, out, err) = cli(sock, args);
    assert!(!ok, "sixgate {args:?} should have failed: {out}");
    err
}

/// A raw request with curl: HTTP status and body.
fn curl(sock: &Path, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut c = Command::new("curl");
    c.args(["-s", "-o", "-", "-w", "\n%{http_code}", "--unix-socket"])
        .arg(sock)
        .args(["-X", method]);
    if let Some(b) = body {
        c.args(["-H", "Content-Type: application/json", "-d", b]);
    }
    let out = c
        .arg(format!("http://sixgate{path}"))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

fn ping_from(ns: &Netns, src: Option<&str>, dest: &str) -> bool {
    let mut args = vec!["-n", "-c", "3", "-i", "0.3", "-W", "2"];
    if let Some(s) = src {
        args.extend(["-I", s]);
    }
    args.push(dest);
    ns.output_timeout("ping", &args, Duration::from_secs(10))
        .is_ok_and(|o| o.status.success())
}

/// Pings that must get through: one retry, for a loaded machine.
fn ping_ok(ns: &Netns, src: Option<&str>, dest: &str) -> bool {
    ping_from(ns, src, dest) || {
        std::thread::sleep(Duration::from_secs(1));
        ping_from(ns, src, dest)
    }
}

fn status(sock: &Path) -> serde_json::Value {
    serde_json::from_str(&cli_ok(sock, &["show", "status", "--json"])).unwrap()
}

/// Lines that differ between two beds: each has its own socket and state
/// file, and a restarted bed routes the /24 itself (its EAM IPv4 prefixes are
/// /25s).
fn bed_specific(line: &str) -> bool {
    line.starts_with("socket = ")
        || line.starts_with("state_file = ")
        || line.starts_with("manage_routes = ")
}

/// Give the v6 host `2001:db8:1::105` (the second EAM /25's `198.18.0.133`) and
/// let neighbour discovery run, both ways, before pings that are timed.
fn second_v6_address(bed: &Topology) {
    bed.v6host
        .ip([
            "-6",
            "addr",
            "add",
            "2001:db8:1::105/64",
            "dev",
            "eth0",
            "nodad",
        ])
        .unwrap();
    assert!(ping_ok(
        &bed.v6host,
        Some("2001:db8:1::105"),
        "2001:db8:1::1"
    ));
}

/// RFC 6146 §3.5.2 static BIB entry added at runtime: an IPv4 client reaches
/// the IPv6 host's web server through pool4 address 198.18.0.200 (listed as
/// static) while the entry is there, and not after `bib remove`.
fn static_bib_reaches_v6_server(sock: &Path, bed: &Topology, content: &[u8]) {
    let v6 = addr::V6_HOST.to_string();
    let port = HTTP_PORT.to_string();
    let www6 = ScratchDir::new("www6").unwrap();
    www6.write("f.bin", content).unwrap();
    let server6 = http_server(&bed.v6host, addr::V6_HOST.into(), &www6);
    assert!(http_fails(&bed.v4host, "198.18.0.200"));
    cli_ok(
        sock,
        &["bib", "add", "tcp", &v6, &port, "198.18.0.200", &port],
    );
    fetch_and_compare(&bed.v4host, "198.18.0.200", &www6, "f.bin", content);
    assert_eq!(http_client_seen(&server6), addr::V4_HOST_AS_V6.to_string());
    let statics = cli_ok(
        sock,
        &["show", "bib", "--address", "198.18.0.200", "--json"],
    );
    assert!(statics.contains("\"static\":true"), "{statics}");
    cli_ok(sock, &["bib", "remove", "tcp", "198.18.0.200", &port]);
    assert!(http_fails(&bed.v4host, "198.18.0.200"));
}

/// RFC 7757 EAM at runtime: removing the bed's /24 entry stops the mapping;
/// two /25 entries in its place (the second to a second IPv6 host address)
/// make pings work again both ways.
fn eam_split_changes_what_pings(sock: &Path, bed: &Topology) {
    cli_ok(
        sock,
        &["eam", "remove", "198.18.0.0/24", "2001:db8:1::/120"],
    );
    assert!(!ping_from(
        &bed.v6host,
        None,
        &addr::V4_HOST_AS_V6.to_string()
    ));
    cli_ok(sock, &["eam", "add", "198.18.0.0/25", "2001:db8:1::/121"]);
    cli_ok(
        sock,
        &["eam", "add", "198.18.0.128/25", "2001:db8:1::100/121"],
    );
    second_v6_address(bed);
    assert!(ping_ok(&bed.v6host, None, &addr::V4_HOST_AS_V6.to_string()));
    assert!(ping_ok(
        &bed.v6host,
        Some("2001:db8:1::105"),
        &addr::V4_HOST_AS_V6.to_string()
    ));
    assert!(ping_ok(&bed.v4host, None, "198.18.0.133"));
}

/// The running configuration without its bed-specific lines.
fn running_without_socket(sock: &Path) -> String {
    cli_ok(sock, &["show", "config", "--running"])
        .lines()
        .filter(|l| !bed_specific(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn control_siit_show_eam_changes_save_and_restart() {
    let test = "control_siit_show_eam_changes_save_and_restart";
    let Some(tr) = sixgate_or_skip(test, "[daemon]\nworkers = 2\n") else {
        return;
    };
    let saved = ScratchDir::new("saved").unwrap();
    let saved_path = saved.path().join("saved.toml");
    let mut running = String::new();
    run_bed(test, TopologyOptions::default(), &tr, |bed, tr| {
        let sock = socket(tr);
        // Every show, in every format.
        let s = status(sock);
        assert_eq!(
            (s["mode"].as_str(), s["workers"].as_u64()),
            (Some("siit"), Some(2))
        );
        assert_eq!(s["device"].as_str(), Some(tr.tun()));
        let table = cli_ok(sock, &["show", "status"]);
        assert!(table.starts_with("field "), "{table}");
        assert!(cli_ok(sock, &["show", "status", "--csv"]).starts_with("field,value\n"));
        assert!(ping_ok(&bed.v6host, None, &addr::V4_HOST_AS_V6.to_string()));
        let stats = cli_ok(sock, &["show", "stats"]);
        assert!(
            stats.starts_with("counter ") && stats.contains("w1"),
            "{stats}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&cli_ok(sock, &["show", "stats", "--json"])).unwrap();
        // The ping's translations, fast and slow path together: with the
        // fast path on (the default, "auto") the program translates it and
        // the workers' translated_6to4 stays 0 (docs/fastpath.md,
        // "Counters").
        let rows = v["counters"].as_array().unwrap();
        let row = |name: &str| rows.iter().find(|r| r["name"] == name);
        let rx = row("translated_fast_and_slow_6to4")
            .or_else(|| row("translated_6to4"))
            .unwrap()["total"]
            .as_u64()
            .unwrap();
        assert!(rx >= 1, "{v}");
        let all = cli_ok(sock, &["show", "counters", "--all", "--csv"]);
        assert!(all.starts_with("reason,count\nmalformed,"), "{all}");
        cli_ok(sock, &["show", "counters"]);
        let eam = cli_ok(sock, &["show", "eam"]);
        assert!(
            eam.contains("198.18.0.0/24") && eam.contains("2001:db8:1::/120"),
            "{eam}"
        );
        let err = cli_err(sock, &["show", "bib"]);
        assert!(err.contains("not in nat64 or mapt-ce mode"), "{err}");
        let err = cli_err(sock, &["session", "flush"]);
        assert!(err.contains("no sessions to flush"), "{err}");
        // A second daemon on the same socket refuses to start.
        let cfg = std::fs::read_to_string(tr.config_path()).unwrap();
        let dup = tr.config_path().with_file_name("dup.toml");
        std::fs::write(
            &dup,
            cfg.replace("name = \"sixgate0\"", "name = \"sgdup0\""),
        )
        .unwrap();
        let out = bed
            .gateway
            .output_timeout(
                BIN,
                ["run", "--config", dup.to_str().unwrap()],
                Duration::from_secs(20),
            )
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("another daemon answers"),
            "{err}"
        );
        cli_err(sock, &["show", "pool4"]);

        // eam remove stops the mapping; eam add makes new ones work.
        eam_split_changes_what_pings(sock, bed);
        let routes = bed.gateway.ip(["route", "show", "dev", tr.tun()]).unwrap();
        assert!(routes.contains("198.18.0.128/25"), "{routes}");
        assert!(!routes.contains("198.18.0.0/24"), "{routes}");
        // A conflicting entry is refused and changes nothing.
        let err = cli_err(sock, &["eam", "add", "198.18.0.128/25", "2001:db8:9::/121"]);
        assert!(err.contains("the same IPv4 or IPv6 prefix"), "{err}");

        // Malformed requests: 4xx with a message naming the field.
        let (code, body) = curl(
            sock,
            "POST",
            "/v1/eam/add",
            Some(r#"{"ipv4":"10.0.0.0/24"}"#),
        );
        assert_eq!(code, 400, "{body}");
        assert!(body.contains("ipv6"), "{body}");
        let (code, body) = curl(
            sock,
            "POST",
            "/v1/eam/add",
            Some(r#"{"ipv4":"10.0.0.300/24","ipv6":"2001:db8:5::/120"}"#),
        );
        assert_eq!(code, 400, "{body}");
        assert!(body.contains("\"error\":\"ipv4:"), "{body}");
        let (code, body) = curl(sock, "POST", "/v1/pool4/add", Some("not json"));
        assert_eq!(code, 400, "{body}");
        let (code, body) = curl(sock, "GET", "/v1/counters?everything=1", None);
        assert_eq!(code, 400, "{body}");
        assert!(body.contains("everything"), "{body}");
        let (code, body) = curl(sock, "GET", "/v1/no-such-thing", None);
        assert_eq!(code, 404, "{body}");
        let (code, body) = curl(sock, "GET", "/v1/eam/add", None);
        assert_eq!(code, 405, "{body}");
        assert!(body.contains("\"error\""), "{body}");
        let (code, body) = curl(
            sock,
            "POST",
            "/v1/eam/remove",
            Some(r#"{"ipv4":"10.9.0.0/24","ipv6":"2001:db8:5::/120"}"#),
        );
        assert_eq!(code, 404, "{body}");

        // Not root: refused, by the socket's mode and by SO_PEERCRED.
        let nobody = |caps: &[&str]| {
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .args(caps)
                .args([BIN, "show", "status", "--socket"])
                .arg(sock)
                .output()
                .unwrap()
        };
        let out = nobody(&[]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
        let out = nobody(&["--inh-caps=+dac_override", "--ambient-caps=+dac_override"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("root only"), "{err}");

        // A reload that would change a start-up key is refused, naming it.
        let cfg = std::fs::read_to_string(tr.config_path()).unwrap();
        std::fs::write(tr.config_path(), cfg.replace("workers = 2", "workers = 3")).unwrap();
        let err = cli_err(sock, &["reload"]);
        assert!(err.contains("[daemon] workers"), "{err}");
        assert_eq!(err.matches("unchanged").count(), 1, "{err}");
        std::fs::write(tr.config_path(), &cfg).unwrap();
        assert_eq!(status(sock)["reload"]["failed"].as_u64(), Some(1));
        // Issue 20: times for people are RFC 3339, not Unix seconds.
        let table = cli_ok(sock, &["show", "status"]);
        let row = |k: &str| {
            table
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::trim)
                .unwrap_or_else(|| panic!("no {k}: {table}"))
                .to_owned()
        };
        let (started, last) = (row("started "), row("last_reload "));
        assert!(started.len() == 20 && started.ends_with('Z'), "{table}");
        assert!(
            last.starts_with("FAILED at 20") && last.contains("Z: [daemon] workers"),
            "{table}"
        );

        // config save: stdout and FILE are the running configuration, which
        // `show config` shows with or without --running.
        let shown = cli_ok(sock, &["show", "config", "--running"]);
        assert_eq!(cli_ok(sock, &["show", "config"]), shown);
        assert!(shown.lines().nth(1) == Some("[translator]"), "{shown}");
        assert_eq!(cli_ok(sock, &["config", "save"]), shown);
        cli_ok(sock, &["config", "save", saved_path.to_str().unwrap()]);
        assert_eq!(std::fs::read_to_string(&saved_path).unwrap(), shown);
        assert!(shown.contains("198.18.0.128/25"), "{shown}");
        running = running_without_socket(sock);
    });

    // Restart from the saved file (its own socket): the same running configuration.
    let mut text: toml::Table = std::fs::read_to_string(&saved_path)
        .unwrap()
        .parse()
        .unwrap();
    text["daemon"].as_table_mut().unwrap().remove("socket");
    text.entry("tun")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .unwrap()
        .insert("manage_routes".into(), toml::Value::Boolean(false));
    let text = toml::to_string(&text).unwrap();
    let again = sixgate_or_skip(test, &text).unwrap();
    run_bed(
        &format!("{test} (restarted)"),
        TopologyOptions::default(),
        &again,
        |bed, tr| {
            assert_eq!(running_without_socket(socket(tr)), running);
            second_v6_address(bed);
            assert!(ping_ok(&bed.v4host, None, "198.18.0.133"));
        },
    );
}

/// curl from `client` to `host:HTTP_PORT`, which must fail (within 3 s).
fn http_fails(client: &Netns, host: &str) -> bool {
    let url = format!("http://{host}:{HTTP_PORT}/x");
    client
        .output_timeout(
            "curl",
            ["-s", "-m", "3", "-o", "/dev/null", &url],
            Duration::from_secs(10),
        )
        .is_ok_and(|o| !o.status.success())
}

/// Fetch a file from the v4 host through the NAT64; the address it saw.
fn fetch_through(bed: &Topology, dir: &ScratchDir, content: &[u8]) -> String {
    let server = http_server(&bed.v4host, addr::V4_HOST.into(), dir);
    fetch_and_compare(
        &bed.v6host,
        &format!("[{}]", addr::V4_HOST_AS_V6),
        dir,
        "f.bin",
        content,
    );
    http_client_seen(&server)
}

#[test]
fn control_nat64_pool4_bib_sessions() {
    let test = "control_nat64_pool4_bib_sessions";
    // A socket file left by a dead daemon: removed at start.
    let stale = ScratchDir::new("stale").unwrap();
    let stale_sock = stale.path().join("run").join("api.sock");
    std::fs::create_dir_all(stale_sock.parent().unwrap()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&stale_sock).unwrap());
    let extra = NAT64_25.replace(
        "workers = 2\n",
        &format!("workers = 2\nsocket = \"{}\"\n", stale_sock.display()),
    );
    let Some(tr) = sixgate_or_skip(test, &extra) else {
        return;
    };
    run_bed(test, TopologyOptions::default(), &tr, |bed, tr| {
        let sock = socket(tr);
        assert_eq!(sock, stale_sock);
        let dir = ScratchDir::new("www4").unwrap();
        let content = pattern(32 * 1024);
        dir.write("f.bin", &content).unwrap();
        let seen = fetch_through(bed, &dir, &content);
        let last = |a: &str| a.rsplit('.').next().unwrap().parse::<u8>().unwrap();
        assert!(seen.starts_with("198.18.0.") && last(&seen) < 128, "{seen}");

        // Tables, filtered, in every format.
        let pool4 = cli_ok(sock, &["show", "pool4"]);
        assert!(
            pool4.starts_with("prefix ") && pool4.contains("198.18.0.0/25"),
            "{pool4}"
        );
        let v6 = addr::V6_HOST.to_string();
        let rows = cli_ok(
            sock,
            &[
                "show",
                "sessions",
                "--protocol",
                "tcp",
                "--address",
                &v6,
                "--json",
            ],
        );
        let rows: serde_json::Value = serde_json::from_str(&rows).unwrap();
        let rows = rows.as_array().unwrap();
        assert!(!rows.is_empty());
        assert!(
            rows.iter().all(|r| r["ipv6"] == v6 && r["proto"] == "tcp"),
            "{rows:?}"
        );
        assert!(
            rows.iter()
                .any(|r| r["remote4"] == addr::V4_HOST.to_string()),
            "{rows:?}"
        );
        let none = cli_ok(sock, &["show", "sessions", "--protocol", "icmp", "--csv"]);
        assert_eq!(none.lines().count(), 1, "only the header: {none}");
        let t = cli_ok(
            sock,
            &["show", "sessions", "--port", &HTTP_PORT.to_string()],
        );
        assert!(t.starts_with("worker") && t.lines().count() >= 2, "{t}");
        let b = cli_ok(sock, &["show", "bib", "--protocol", "tcp"]);
        assert!(b.contains(&v6), "{b}");
        let err = cli_err(sock, &["show", "sessions", "--protocol", "sctp"]);
        assert!(err.contains("protocol"), "{err}");

        // pool4: add a prefix, remove the old one: new flows take the new one.
        // Issue 30: `show stats` right after the change counts its ports.
        let owned = || -> u64 {
            let t = cli_ok(sock, &["show", "stats"]);
            t.lines()
                .find(|l| l.split_whitespace().next() == Some("pool4_ports_owned"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
                .unwrap_or_else(|| panic!("no pool4_ports_owned: {t}"))
        };
        let before = owned();
        cli_ok(sock, &["pool4", "add", "198.18.0.128/25"]);
        assert!(owned() > before, "pool4_ports_owned still {before}");
        cli_ok(sock, &["pool4", "remove", "198.18.0.0/25"]);
        let seen = fetch_through(bed, &dir, &content);
        assert!(last(&seen) >= 128, "{seen}");
        let pool4 = cli_ok(sock, &["show", "pool4", "--csv"]);
        assert_eq!(pool4.lines().count(), 2, "{pool4}");

        // A static BIB entry outside pool4 is refused; inside it, it works both ways.
        let port = HTTP_PORT.to_string();
        let err = cli_err(
            sock,
            &["bib", "add", "tcp", &v6, &port, "198.18.0.100", &port],
        );
        assert!(err.contains("pool4"), "{err}");
        static_bib_reaches_v6_server(sock, bed, &content);
        let text = cli_ok(sock, &["show", "config", "--running"]);
        assert!(
            text.contains("198.18.0.128/25") && !text.contains("static_bib = [{"),
            "{text}"
        );
    });
}

/// The config `good` with `[nat64] udp_timeout = 600`: a real change to reload.
fn with_udp_timeout_600(good: &str) -> String {
    let mut t: toml::Table = good.parse().unwrap();
    t["nat64"]
        .as_table_mut()
        .unwrap()
        .insert("udp_timeout".into(), toml::Value::Integer(600));
    toml::to_string(&t).unwrap()
}

/// The pid of `sixgate run` in `ns`.
fn daemon_pid(ns: &Netns) -> u32 {
    ns.pids()
        .into_iter()
        .find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("run\0--config"))
        })
        .expect("sixgate run in the gateway")
}

/// SIGHUP to the daemon `pid`, then wait until `show status` counts
/// `succeeded` successful reloads.
fn sighup_reloads(sock: &Path, pid: u32, succeeded: u64) {
    // SAFETY: a signal to the daemon this test started.
    unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    let t0 = Instant::now();
    while status(sock)["reload"]["succeeded"].as_u64() != Some(succeeded) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "SIGHUP did not reload"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn control_reload_during_iperf3_keeps_flows() {
    let test = "control_reload_during_iperf3_keeps_flows";
    let Some(tr) = sixgate_or_skip(test, NAT64_25) else {
        return;
    };
    run_bed(test, TopologyOptions::default(), &tr, |bed, tr| {
        let sock = socket(tr).to_owned();
        let path = tr.config_path().to_owned();
        let good = std::fs::read_to_string(&path).unwrap();
        let pid = daemon_pid(&bed.gateway);
        std::thread::scope(|s| {
            let reloads = s.spawn(|| {
                std::thread::sleep(Duration::from_millis(1500));
                // A real change: a longer UDP timeout.
                std::fs::write(&path, with_udp_timeout_600(&good)).unwrap();
                cli_ok(&sock, &["reload"]);
                std::thread::sleep(Duration::from_millis(1000));
                // A broken file: refused with FILE:LINE:COL, the old one runs on.
                std::fs::write(&path, format!("{good}\n[nat64\n")).unwrap();
                let err = cli_err(&sock, &["reload"]);
                assert!(err.contains(&format!("{}:", path.display())), "{err}");
                std::thread::sleep(Duration::from_millis(1000));
                std::fs::write(&path, &good).unwrap();
                // SIGHUP reloads too.
                sighup_reloads(&sock, pid, 2);
            });
            // 8 s of TCP through the NAT64, with the three reloads in the middle:
            // the helper fails on any error (a reset ends the test early).
            let r = iperf3(
                &bed.v6host,
                &bed.v4host,
                addr::V4_HOST.into(),
                addr::V4_HOST_AS_V6.into(),
                &["-t", "8"],
            );
            assert!(r.mbit_s > 0.0, "{}", r.detail);
            println!(
                "{test}: iperf3 {:.0} Mbit/s across 3 reloads ({})",
                r.mbit_s, r.detail
            );
            reloads.join().unwrap();
        });
        let s = status(&sock);
        assert_eq!(
            (
                s["reload"]["succeeded"].as_u64(),
                s["reload"]["failed"].as_u64()
            ),
            (Some(2), Some(1)),
            "{s}"
        );
        assert_eq!(s["reload"]["last_ok"].as_bool(), Some(true));
    });
}

/// The total of counter `name` in `show stats --json`.
fn stat(sock: &Path, name: &str) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&cli_ok(sock, &["show", "stats", "--json"])).unwrap();
    v["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v}"))["total"]
        .as_u64()
        .unwrap()
}

/// Rows of `show sessions|bib --csv ARGS` (without the header).
fn rows(sock: &Path, table: &str, args: &[&str]) -> usize {
    let mut a = vec!["show", table, "--csv"];
    a.extend_from_slice(args);
    cli_ok(sock, &a).lines().count() - 1
}

#[test]
fn control_nat64_session_flush() {
    let test = "control_nat64_session_flush";
    let Some(tr) = sixgate_or_skip(test, NAT64_25) else {
        return;
    };
    run_bed(test, TopologyOptions::default(), &tr, |bed, tr| {
        let sock = socket(tr);
        let dir = ScratchDir::new("www4").unwrap();
        let content = pattern(16 * 1024);
        dir.write("f.bin", &content).unwrap();
        // TCP and ICMP sessions, and a static BIB entry that must stay.
        fetch_through(bed, &dir, &content);
        assert!(ping_ok(&bed.v6host, None, &addr::V4_HOST_AS_V6.to_string()));
        let v6 = addr::V6_HOST.to_string();
        cli_ok(
            sock,
            &["bib", "add", "udp", &v6, "53", "198.18.0.100", "53"],
        );
        let (tcp, icmp) = (
            rows(sock, "sessions", &["--protocol", "tcp"]),
            rows(sock, "sessions", &["--protocol", "icmp"]),
        );
        assert!(tcp >= 1 && icmp >= 1, "tcp {tcp} icmp {icmp}");

        // Filtered: ICMP only; a pool4 address that has none flushes nothing.
        let out = cli_ok(sock, &["session", "flush", "--proto", "icmp"]);
        assert_eq!(
            out.trim(),
            format!("flushed {icmp} sessions, {icmp} BIB entries")
        );
        assert_eq!(rows(sock, "sessions", &["--protocol", "icmp"]), 0);
        assert_eq!(rows(sock, "sessions", &["--protocol", "tcp"]), tcp);
        let out = cli_ok(
            sock,
            &[
                "session",
                "flush",
                "--ipv4",
                "198.18.0.128/25",
                "--ipv6",
                &v6,
            ],
        );
        assert_eq!(out.trim(), "flushed 0 sessions, 0 BIB entries");
        let err = cli_err(sock, &["session", "flush", "--proto", "sctp"]);
        assert!(err.contains("protocol"), "{err}");
        let err = cli_err(sock, &["session", "flush", "--ipv6", "2001:db8::/200"]);
        assert!(err.contains("ipv6"), "{err}");
        let (code, body) = curl(
            sock,
            "POST",
            "/v1/sessions/flush",
            Some(r#"{"proto":"tcp"}"#),
        );
        assert_eq!(code, 400, "{body}");

        // Everything: the tables are empty but for the static entry.
        let out = cli_ok(sock, &["session", "flush"]);
        assert!(
            out.starts_with(&format!("flushed {tcp} sessions, ")),
            "{out}"
        );
        assert_eq!(rows(sock, "sessions", &[]), 0);
        let bib = cli_ok(sock, &["show", "bib", "--csv"]);
        assert_eq!(bib.lines().count(), 2, "only the static entry: {bib}");
        assert!(bib.contains("198.18.0.100,53,yes"), "{bib}");
        let (code, body) = curl(sock, "POST", "/v1/sessions/flush", None);
        assert_eq!(code, 200, "{body}");
        assert_eq!(body, r#"{"sessions":0,"bib":0}"#);
        // Counted (the tables are published every 100 ms).
        let t0 = Instant::now();
        while stat(sock, "sessions_flushed") != (tcp + icmp) as u64 {
            assert!(t0.elapsed() < Duration::from_secs(3), "not counted");
            std::thread::sleep(Duration::from_millis(50));
        }

        // Traffic works after it, with new sessions.
        fetch_through(bed, &dir, &content);
        assert!(ping_ok(&bed.v6host, None, &addr::V4_HOST_AS_V6.to_string()));
        assert!(rows(sock, "sessions", &[]) >= 2);
    });
}

// --- the API on the XDP data plane (docs/xdp.md) ------------------------------------

/// sixgate on XDP with `extra`, or `None` when the machine cannot run the bed
/// or `SIXGATE_E2E_DATAPLANE` leaves XDP out (as the e2e suite does).
fn xdp_or_skip(test: &str, extra: &str) -> Option<Dut> {
    let planes = std::env::var(sixgate_netns::ENV_DATAPLANE).unwrap_or_default();
    if !planes.trim().is_empty() && !planes.split(',').any(|p| p.trim() == "xdp") {
        println!("skipped: {test}: {}={planes}", sixgate_netns::ENV_DATAPLANE);
        return None;
    }
    let mut tr = sixgate_or_skip(test, extra)?;
    if let Dut::Sixgate { dataplane, .. } = &mut tr {
        *dataplane = Dataplane::Xdp;
    }
    Some(tr)
}

/// SIIT on XDP, two workers: every show answers; `eam remove` stops a mapping
/// and `eam add` makes new ones ping, both ways (the program's tries follow);
/// a reload that would change `[xdp]` is refused naming it, and SIGHUP reloads.
#[test]
fn control_xdp_siit_show_eam_reload() {
    let test = "control_xdp_siit_show_eam_reload";
    let Some(tr) = xdp_or_skip(test, "[daemon]\nworkers = 2\n") else {
        return;
    };
    let options = tr.bed_options(TopologyOptions::default());
    run_bed(test, options, &tr, |bed, tr| {
        let sock = socket(tr);
        let s = status(sock);
        assert_eq!(
            (s["mode"].as_str(), s["workers"].as_u64()),
            (Some("siit"), Some(2)),
            "{s}"
        );
        assert!(ping_ok(&bed.v6host, None, &addr::V4_HOST_AS_V6.to_string()));
        big_ping_gets_fragmentation_needed(bed, "at start");
        let stats = cli_ok(sock, &["show", "stats"]);
        assert!(
            stats.starts_with("counter ") && stats.contains("w1"),
            "{stats}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&cli_ok(sock, &["show", "stats", "--json"])).unwrap();
        let translated = |dir: &str| {
            v["counters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == dir)
                .unwrap()["total"]
                .as_u64()
                .unwrap()
        };
        assert!(
            translated("translated_6to4") >= 1 && translated("translated_4to6") >= 1,
            "{v}"
        );
        let eam = cli_ok(sock, &["show", "eam"]);
        assert!(eam.contains("198.18.0.0/24"), "{eam}");
        let err = cli_err(sock, &["show", "bib"]);
        assert!(err.contains("not in nat64 or mapt-ce mode"), "{err}");

        eam_split_changes_what_pings(sock, bed);
        let err = cli_err(sock, &["eam", "add", "198.18.0.128/25", "2001:db8:9::/121"]);
        assert!(err.contains("the same IPv4 or IPv6 prefix"), "{err}");

        // [xdp] is set up at start: a reload changing it is refused.
        let path = tr.config_path().to_owned();
        let cfg = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, cfg.replace("\"eth4\"", "\"eth9\"")).unwrap();
        let err = cli_err(sock, &["reload"]);
        assert!(err.contains("[xdp]"), "{err}");
        // SIGHUP reloads the file (the EAM of the file: the /24 again).
        std::fs::write(&path, &cfg).unwrap();
        sighup_reloads(sock, daemon_pid(&bed.gateway), 1);
        let eam = cli_ok(sock, &["show", "eam"]);
        assert!(
            eam.contains("198.18.0.0/24") && !eam.contains("198.18.0.128/25"),
            "{eam}"
        );
        // From the first address: the second is outside the /120.
        let v6 = addr::V6_HOST.to_string();
        assert!(ping_ok(
            &bed.v6host,
            Some(&v6),
            &addr::V4_HOST_AS_V6.to_string()
        ));
        assert!(!ping_from(&bed.v4host, None, "198.18.0.133"));
        // The reloaded file sets no MTU: the interfaces' still hold (the
        // kernel does not check what an AF_XDP socket sends).
        big_ping_gets_fragmentation_needed(bed, "after the reload");
    });
}

/// A 1500-byte ping with DF=1 from the IPv4 host to the IPv6 host: its IPv6
/// form is 1520 bytes, too big for the IPv6 link, so the translator answers
/// with a Fragmentation Needed naming MTU 1480 (RFC 7915 §4.4), which on XDP
/// it knows from the interface's MTU.
fn big_ping_gets_fragmentation_needed(bed: &Topology, when: &str) {
    // Forget the path MTU an earlier call learned: the answer must come anew.
    bed.v4host.ip(["route", "flush", "cache"]).unwrap();
    let dest = addr::V6_HOST_AS_V4.to_string();
    let args = ["-c", "1", "-W", "3", "-s", "1472", "-M", "do", &dest];
    let out = bed.v4host.output("ping", args).unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("mtu = 1480") || text.contains("mtu=1480"),
        "1500-byte ping with DF {when}: {text}"
    );
}

/// NAT64 on XDP, two workers (packets handed to their owner): BIB and
/// sessions listed from the workers, pool4 changed at runtime (new flows take
/// the new prefix), a static BIB entry added and removed (its owner follows),
/// a reload during traffic, a session flush.
#[test]
fn control_xdp_nat64_bib_pool4_reload() {
    let test = "control_xdp_nat64_bib_pool4_reload";
    let Some(tr) = xdp_or_skip(test, NAT64_25) else {
        return;
    };
    let options = tr.bed_options(TopologyOptions::default());
    run_bed(test, options, &tr, |bed, tr| {
        let sock = socket(tr);
        assert_eq!(status(sock)["workers"].as_u64(), Some(2));
        let dir = ScratchDir::new("www4").unwrap();
        let content = pattern(32 * 1024);
        dir.write("f.bin", &content).unwrap();
        let seen = fetch_through(bed, &dir, &content);
        let last = |a: &str| a.rsplit('.').next().unwrap().parse::<u8>().unwrap();
        assert!(seen.starts_with("198.18.0.") && last(&seen) < 128, "{seen}");
        let v6 = addr::V6_HOST.to_string();
        let b = cli_ok(sock, &["show", "bib", "--protocol", "tcp"]);
        assert!(b.contains(&v6), "{b}");
        let t = cli_ok(
            sock,
            &["show", "sessions", "--port", &HTTP_PORT.to_string()],
        );
        assert!(t.starts_with("worker") && t.lines().count() >= 2, "{t}");

        cli_ok(sock, &["pool4", "add", "198.18.0.128/25"]);
        cli_ok(sock, &["pool4", "remove", "198.18.0.0/25"]);
        let seen = fetch_through(bed, &dir, &content);
        assert!(last(&seen) >= 128, "{seen}");

        static_bib_reaches_v6_server(sock, bed, &content);

        // A reload (the file's pool4, a longer UDP timeout) while TCP runs.
        let path = tr.config_path().to_owned();
        let good = std::fs::read_to_string(&path).unwrap();
        std::thread::scope(|s| {
            let reload = s.spawn(|| {
                std::thread::sleep(Duration::from_millis(1500));
                std::fs::write(&path, with_udp_timeout_600(&good)).unwrap();
                cli_ok(sock, &["reload"]);
            });
            let r = iperf3(
                &bed.v6host,
                &bed.v4host,
                addr::V4_HOST.into(),
                addr::V4_HOST_AS_V6.into(),
                &["-t", "4"],
            );
            assert!(r.mbit_s > 0.0, "{}", r.detail);
            reload.join().unwrap();
        });
        let text = cli_ok(sock, &["show", "config", "--running"]);
        assert!(text.contains("udp_timeout = 600"), "{text}");

        // session flush reaches the XDP workers too.
        let out = cli_ok(sock, &["session", "flush"]);
        assert!(out.starts_with("flushed "), "{out}");
        let rows = cli_ok(sock, &["show", "sessions", "--csv"]);
        assert_eq!(rows.lines().count(), 1, "only the header: {rows}");
    });
}
