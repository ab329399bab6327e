//! Packaging (issue 6): the systemd unit and example configuration in `dist/`,
//! and what `cargo install --path crates/sixgate` needs. The manual pages and
//! completions are checked next to their generator (`cmd/generate.rs`). The
//! Debian package (issue 27, `scripts/package.sh`): built, linted, installed,
//! reinstalled, removed and purged.

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

/// `cmd ARGS`: (exit status success, stdout + stderr).
fn sh(cmd: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `dpkg ARGS`, which must succeed; waits (up to 60 s) while another dpkg or
/// apt holds the lock.
fn dpkg(args: &[&str]) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let (ok, said) = sh("dpkg", args);
        if ok {
            return said;
        }
        let locked = said.contains("lock");
        assert!(
            locked && t0.elapsed() < std::time::Duration::from_secs(60),
            "dpkg {args:?}: {said}"
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// Whatever happens, the package is purged at the end of the test.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = sh("dpkg", &["--purge", "sixgate"]);
    }
}

/// The Debian package (issue 27, docs/packaging.md): `scripts/package.sh`
/// packages the test build (`--binary`, `--fast`: no release build), lintian
/// finds no error and only the warnings docs/packaging.md justifies; `dpkg -i`
/// installs the binary, the units, the conffile (group nogroup, 0640), the
/// manual pages, completions and examples, and the state directory; the
/// unit's start condition keeps it from starting on the commented-out file and
/// lets it start on a configured one; a reinstall (the upgrade path) keeps the
/// administrator's change to the conffile; `dpkg -r` leaves the conffile,
/// `dpkg -P` leaves nothing.
///
/// It installs into this machine's root file system, so it needs root, dpkg
/// and cargo-deb (`scripts/setup.sh` installs it), and is skipped where a
/// `sixgate` package is installed already.
#[test]
fn deb_package_installs_upgrades_removes_and_purges() {
    let test = "deb_package_installs_upgrades_removes_and_purges";
    let t0 = std::time::Instant::now();
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: {test}: needs root (dpkg -i)");
        return;
    }
    if !sh("sh", &["-c", "command -v dpkg"]).0 {
        println!("skipped: {test}: not a Debian system (no dpkg)");
        return;
    }
    if !sh("cargo", &["deb", "--version"]).0 {
        println!("skipped: {test}: cargo-deb is not installed (scripts/setup.sh installs it)");
        return;
    }
    if sh("dpkg-query", &["-W", "-f=${Status}", "sixgate"])
        .1
        .contains("installed")
    {
        println!("skipped: {test}: a sixgate package is installed on this machine already");
        return;
    }
    let out = std::env::temp_dir().join(format!("sixgate-deb-{}", std::process::id()));
    let built = Command::new(repo().join("scripts/package.sh"))
        .args(["--binary", BIN, "--fast", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&built.stdout);
    assert!(
        built.status.success(),
        "scripts/package.sh: {stdout}{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let deb = stdout.lines().last().unwrap_or("").trim().to_owned();
    assert!(deb.ends_with(".deb"), "{stdout}");
    println!("{test}: built {deb} in {:.1} s", t0.elapsed().as_secs_f32());

    // What is in it.
    let (_, listing) = sh("dpkg-deb", &["--contents", &deb]);
    for path in [
        "./usr/bin/sixgate",
        "/systemd/system/sixgate.service",
        "/systemd/system/sixgate@.service",
        "./etc/sixgate/sixgate.toml",
        "./etc/logrotate.d/sixgate",
        "./usr/share/man/man1/sixgate.1.gz",
        "./usr/share/man/man1/sixgate-run.1.gz",
        "./usr/share/man/man5/sixgate.toml.5.gz",
        "./usr/share/bash-completion/completions/sixgate",
        "./usr/share/zsh/vendor-completions/_sixgate",
        "./usr/share/fish/vendor_completions.d/sixgate.fish",
        "./usr/share/doc/sixgate/copyright",
        "./usr/share/doc/sixgate/changelog.Debian.gz",
        "./usr/share/doc/sixgate/examples/sixgate.toml",
        "./usr/share/doc/sixgate/examples/bird/sixgate-gw1.conf",
        "./usr/share/doc/sixgate/examples/prometheus/sixgate-rules.yml",
        "./usr/share/doc/sixgate/examples/grafana/sixgate.json",
    ] {
        assert!(
            listing.contains(path),
            "{path} not in the package:\n{listing}"
        );
    }
    let (_, conffiles) = sh("dpkg-deb", &["--info", &deb, "conffiles"]);
    assert!(
        conffiles.contains("/etc/sixgate/sixgate.toml"),
        "{conffiles}"
    );

    // lintian: no error; every warning is one docs/packaging.md justifies.
    if sh("sh", &["-c", "command -v lintian"]).0 {
        let (_, said) = sh("lintian", &[&deb]);
        println!("{test}: lintian:\n{said}");
        let doc = read("docs/packaging.md");
        for line in said.lines() {
            assert!(!line.starts_with("E:"), "lintian error: {line}");
            if let Some(rest) = line.strip_prefix("W: sixgate: ") {
                let tag = rest.split_whitespace().next().unwrap();
                assert!(
                    doc.contains(&format!("`{tag}`")),
                    "lintian warning {tag} is not justified in docs/packaging.md"
                );
            }
        }
    } else {
        println!("{test}: lintian not installed: not run (scripts/setup.sh installs it)");
    }

    let _purge = Purge;
    dpkg(&["--install", &deb]);
    let (ok, version) = sh("/usr/bin/sixgate", &["--version"]);
    assert!(ok && version.starts_with("sixgate "), "{version}");
    let meta = std::fs::metadata("/etc/sixgate/sixgate.toml").unwrap();
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    let (_, group) = sh("stat", &["-c", "%G", "/etc/sixgate/sixgate.toml"]);
    assert_eq!(group.trim(), "nogroup");
    let state = std::fs::metadata("/var/lib/sixgate").unwrap();
    assert!(state.is_dir() && state.mode() & 0o777 == 0o750);
    assert!(std::path::Path::new("/usr/share/man/man1/sixgate-run.1.gz").exists());

    // The unit: the package's paths, verified by systemd-analyze where it is
    // installed, and a start condition that holds only for a configured file.
    let unit_path = [
        "/usr/lib/systemd/system/sixgate.service",
        "/lib/systemd/system/sixgate.service",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .expect("sixgate.service installed");
    let unit = std::fs::read_to_string(unit_path).unwrap();
    let s = settings(&unit);
    assert_eq!(
        get(&s, "ExecStart"),
        ["/usr/bin/sixgate run --config /etc/sixgate/sixgate.toml"]
    );
    assert!(!unit.contains("/usr/local"), "{unit}");
    assert_eq!(get(&s, "StateDirectory"), ["sixgate"]);
    let condition = get(&s, "ExecCondition");
    assert_eq!(condition.len(), 1, "{unit}");
    let (ok, _) = sh("sh", &["-c", condition[0]]);
    assert!(
        !ok,
        "the unit would start on the package's unconfigured file"
    );
    let configured = out.join("configured.toml");
    std::fs::copy(repo().join("dist/sixgate.toml"), &configured).unwrap();
    let on_configured =
        condition[0].replace("/etc/sixgate/sixgate.toml", configured.to_str().unwrap());
    assert!(sh("sh", &["-c", &on_configured]).0, "{on_configured}");
    let (ok, said) = sh(
        "/usr/bin/sixgate",
        &["config", "check", "/etc/sixgate/sixgate.toml"],
    );
    assert!(!ok && said.contains("no [translator] section"), "{said}");
    if sh("systemd-analyze", &["--version"]).0 {
        let (ok, said) = sh("systemd-analyze", &["verify", "--man=no", unit_path]);
        let ours: Vec<&str> = said.lines().filter(|l| l.contains("sixgate")).collect();
        assert!(
            ok && ours.is_empty(),
            "systemd-analyze verify {unit_path}: {said}"
        );
    }

    // Reinstall (the upgrade path: postinst configure with the old version):
    // the administrator's change to the conffile stays.
    let mut conf = std::fs::read_to_string("/etc/sixgate/sixgate.toml").unwrap();
    conf.push_str("# changed by the administrator\n");
    std::fs::write("/etc/sixgate/sixgate.toml", &conf).unwrap();
    dpkg(&["--install", &deb]);
    assert_eq!(
        std::fs::read_to_string("/etc/sixgate/sixgate.toml").unwrap(),
        conf
    );

    // Remove: the program goes, the configuration stays.
    dpkg(&["--remove", "sixgate"]);
    assert!(!std::path::Path::new("/usr/bin/sixgate").exists());
    assert!(std::path::Path::new("/etc/sixgate/sixgate.toml").exists());
    let (_, status) = sh("dpkg-query", &["-W", "-f=${Status}", "sixgate"]);
    assert_eq!(status, "deinstall ok config-files");

    // Purge: nothing left.
    dpkg(&["--purge", "sixgate"]);
    for gone in [
        "/etc/sixgate",
        "/var/lib/sixgate",
        "/var/log/sixgate",
        "/etc/logrotate.d/sixgate",
        "/etc/systemd/system/multi-user.target.wants/sixgate.service",
        "/usr/lib/systemd/system/sixgate.service",
    ] {
        assert!(
            !std::path::Path::new(gone).exists(),
            "{gone} left after purge"
        );
    }
    let (known, _) = sh("dpkg-query", &["-W", "sixgate"]);
    assert!(!known, "dpkg still knows sixgate after purge");
    let _ = std::fs::remove_dir_all(&out);
    println!("{test}: passed in {:.1} s", t0.elapsed().as_secs_f32());
}
