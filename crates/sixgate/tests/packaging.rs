//! Packaging (issue 6): the systemd unit and example configuration in `dist/`,
//! and what `cargo install --path crates/sixgate` needs. The manual pages and
//! completions are checked next to their generator (`cmd/generate.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `KEY=VALUE` settings of a unit file (comments and sections left out).
fn settings(unit: &str) -> Vec<(String, String)> {
    unit.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with('[') && !l.is_empty())
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn get<'a>(s: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    s.iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

#[test]
fn unit_is_notify_restarts_on_failure_and_is_hardened() {
    let s = settings(&read("dist/sixgate.service"));
    assert_eq!(get(&s, "Type"), ["notify"]);
    assert_eq!(get(&s, "Restart"), ["on-failure"]);
    for (key, value) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("DeviceAllow", "/dev/net/tun rw"),
        ("RuntimeDirectory", "sixgate"),
    ] {
        assert_eq!(get(&s, key), [value], "{key}");
    }
    let caps = get(&s, "CapabilityBoundingSet").join(" ");
    for cap in [
        "CAP_NET_ADMIN",
        "CAP_NET_RAW",
        "CAP_BPF",
        "CAP_PERFMON",
        "CAP_SYS_ADMIN",
    ] {
        assert!(caps.contains(cap), "{cap} missing from {caps}");
    }
    // The file the unit starts with is the shipped example's install path.
    assert!(
        get(&s, "ExecStart")[0].ends_with("run --config /etc/sixgate/sixgate.toml"),
        "{s:?}"
    );
    // docs/ha.md: after a crash or SIGKILL the node's routes leave
    // [sync] announce_table (a failure of it does not fail the unit).
    assert_eq!(
        get(&s, "ExecStopPost"),
        ["-/usr/local/bin/sixgate sync withdraw --config /etc/sixgate/sixgate.toml"]
    );
}

/// `systemd-analyze verify` (with ExecStart pointing at the built binary, which
/// it checks exists) must accept the unit without a single complaint.
#[test]
fn unit_passes_systemd_analyze_verify() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipped: systemd-analyze is not installed (Debian package systemd)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sixgate-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The template (issue 30) as one of its instances.
    for (file, as_unit) in [
        ("dist/sixgate.service", "sixgate.service"),
        ("dist/sixgate@.service", "sixgate@edge2.service"),
    ] {
        let unit = dir.join(as_unit);
        std::fs::write(&unit, read(file).replace("/usr/local/bin/sixgate", BIN)).unwrap();
        let out = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&unit)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Complaints about the unit name its path; other lines (e.g. about
        // units of the host's) are not ours.
        let ours: Vec<&str> = said.lines().filter(|l| l.contains("sixgate")).collect();
        assert!(
            out.status.success() && ours.is_empty(),
            "systemd-analyze verify {file}: {said}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 30: the template runs one file per instance, with a runtime
/// directory of its own, and is otherwise the unit.
#[test]
fn template_unit_is_the_unit_per_instance() {
    let (one, many) = (read("dist/sixgate.service"), read("dist/sixgate@.service"));
    let t = settings(&many);
    assert_eq!(
        get(&t, "ExecStart"),
        ["/usr/local/bin/sixgate run --config /etc/sixgate/%i.toml"]
    );
    assert_eq!(get(&t, "RuntimeDirectory"), ["sixgate-%i"]);
    let same = |s: &[(String, String)]| -> Vec<(String, String)> {
        s.iter()
            .filter(|(k, _)| {
                ![
                    "ExecStartPre",
                    "ExecStart",
                    "ExecStopPost",
                    "RuntimeDirectory",
                    "Description",
                ]
                .contains(&k.as_str())
            })
            .cloned()
            .collect()
    };
    assert_eq!(same(&settings(&one)), same(&t));
    // And the logrotate file rotates what the example logs.
    let rotate = read("dist/sixgate.logrotate");
    assert!(rotate.contains("/var/log/sixgate/*.log") && rotate.contains("copytruncate"));
}

#[test]
fn example_config_checks_and_turns_on_metrics_and_logs() {
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(repo().join("dist/sixgate.toml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("metrics on 127.0.0.1:9464"), "{text}");
    let l = sixgate_config::load(&repo().join("dist/sixgate.toml")).unwrap();
    assert_eq!(l.log.format, sixgate_config::LogFormat::Json);
}

/// Issue 20: the example's DNS64 says it serves the IPv6-only hosts; every
/// client range its ACL allows must be able to reach one of its listen
/// addresses (a remote range needs a listener that is not loopback-only).
#[test]
fn example_dns64_listens_where_its_clients_are() {
    let l = sixgate_config::load(&repo().join("dist/sixgate.toml")).unwrap();
    let d = l.dns64.expect("dist/sixgate.toml has [dns64]");
    assert!(!d.acl.is_empty());
    for net in &d.acl {
        let client = net.network();
        let reachable = d.listen.iter().any(|s| {
            let a = s.ip();
            a.is_ipv4() == client.is_ipv4()
                && (a.is_unspecified() || a.is_loopback() == client.is_loopback())
        });
        assert!(
            reachable,
            "acl {net}: no listen address in {:?} that such a client can reach",
            d.listen
        );
    }
}

/// `cargo install --path crates/sixgate` builds the `sixgate` binary; every
/// workspace dependency on a sibling crate carries a version next to its path,
/// as a registry would need too.
#[test]
fn installable_with_cargo_install() {
    let manifest = read("crates/sixgate/Cargo.toml");
    assert!(
        manifest.contains("[[bin]]\nname = \"sixgate\""),
        "{manifest}"
    );
    let root = read("Cargo.toml");
    for line in root.lines().filter(|l| l.contains("path = \"crates/")) {
        assert!(line.contains("version = "), "path-only dependency: {line}");
    }
    for krate in std::fs::read_dir(repo().join("crates")).unwrap() {
        let path = krate.unwrap().path().join("Cargo.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let stray: Vec<&str> = text.lines().filter(|l| l.contains("path = \"..")).collect();
        assert!(
            stray.is_empty(),
            "{}: path dependencies outside the workspace table: {stray:?}",
            path.display()
        );
    }
}
