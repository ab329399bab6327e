//! End-to-end tests of `sixgate bench` (docs/bench.md): the bed comes up and
//! goes down without leaving a namespace, and a short RFC 8219 §7.1 throughput
//! search against `kernel-v6` and against sixgate SIIT gives sane figures.
//!
//! Sane, not fast: these tests never judge speed (figures belong in
//! docs/PERFORMANCE.md). They check that the tester measured something
//! (> 1 kpps through the DUT) and that a translator does not appear much faster
//! than plain kernel forwarding on the same bed (≤ 1.5×, or the tester would be
//! miscounting). The machine may be busy, so the sender's 0.001 % schedule
//! rule is relaxed here (`--behind-limit 100`) and a 0.1 % loss goal is used.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn sixgate() -> &'static str {
    env!("CARGO_BIN_EXE_sixgate")
}

fn can_run() -> bool {
    match sixgate_netns::check_host() {
        Ok(()) => true,
        Err(why) => {
            println!("skipped: {why}");
            false
        }
    }
}

fn bed_name(tag: &str) -> String {
    format!("{tag}{}", std::process::id())
}

fn namespaces_of(name: &str) -> Vec<String> {
    let prefix = format!("sgb-{name}-");
    sixgate_netns::list_namespaces()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

fn bench(args: &[&str]) -> std::process::Output {
    let out = Command::new(sixgate())
        .arg("bench")
        .args(args)
        .output()
        .expect("run sixgate bench");
    println!(
        "$ sixgate bench {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A short throughput search; returns the zero-loss rate (frames/s per
/// direction) from the JSON result.
fn throughput(name: &str, dut: &[&str], json: &Path) -> u64 {
    let mut args = vec![
        "throughput",
        "--name",
        name,
        "--duration",
        "1",
        "--steps",
        "7",
        "--max-rate",
        "300000",
        "--min-rate",
        "2000",
        "--loss-goal",
        "0.1",
        "--behind-limit",
        "100",
        "--unidirectional",
        "--quiet",
        "--json",
    ];
    let json_s = json.to_string_lossy().into_owned();
    args.push(&json_s);
    args.extend_from_slice(dut);
    let out = bench(&args);
    assert!(out.status.success(), "sixgate bench throughput failed");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let t = &v["throughput"][0];
    assert_eq!(t["frame_size"], 84);
    assert_eq!(t["frame_size_v4"], 64);
    assert!(!v["trials"].as_array().unwrap().is_empty());
    t["fps"]["median"].as_f64().unwrap() as u64
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn bed_up_and_down_leave_no_namespace() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for dual in [false, true] {
        let name = bed_name(if dual { "bd" } else { "bs" });
        let mut up = vec!["bed", "up", "--name", &name, "--hosts", "4"];
        if dual {
            up.push("--dual");
        }
        assert!(bench(&up).status.success());
        let ns = namespaces_of(&name);
        assert_eq!(ns.len(), if dual { 4 } else { 3 }, "{ns:?}");
        // A second bed of the same name is refused, naming the way out.
        let again = bench(&up);
        assert!(!again.status.success());
        assert!(String::from_utf8_lossy(&again.stderr).contains("bed down"));
        assert!(bench(&["bed", "down", "--name", &name]).status.success());
        assert!(
            namespaces_of(&name).is_empty(),
            "{:?}",
            namespaces_of(&name)
        );
    }
}

/// RFC 9693 §4.3 against sixgate NAT64: phase 1 opens 2000 sessions and
/// `sixgate session flush`, through the DUT's API socket, deletes them all;
/// a rate is given (its size is not judged).
#[test]
fn stateful_sixgate_nat64_tear_down_is_measured() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = bed_name("fltd");
    let dir = std::env::temp_dir().join(format!("sgb-fltd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("td.json");
    let config = repo().join("bench/configs/nat64.toml");
    let out = bench(&[
        "stateful",
        "--name",
        &name,
        "--dut",
        "sixgate",
        "--config",
        &config.to_string_lossy(),
        "--no-establishment",
        "--no-throughput",
        "--connections",
        "2000",
        "--phase1-rate",
        "5000",
        "--behind-limit",
        "100",
        "--quiet",
        "--json",
        &json.to_string_lossy(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "sixgate bench stateful failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // On a busy machine phase 1 may lose a few; most must be there to delete.
    let deleted: u64 = stdout
        .split("note: tear-down rate: ")
        .nth(1)
        .and_then(|t| t.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no tear-down note:\n{stdout}"));
    assert!(deleted > 1000, "{stdout}");
    assert!(
        stdout.contains("sessions (of 2000 connections) deleted with `sixgate session flush`"),
        "{stdout}"
    );
    assert!(namespaces_of(&name).is_empty(), "namespaces left behind");
}

#[test]
fn throughput_kernel_v6_and_sixgate_siit_are_sane() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = bed_name("tp");
    let dir = std::env::temp_dir().join(format!("sgb-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(bench(&["bed", "up", "--name", &name]).status.success());
    let result = std::panic::catch_unwind(|| {
        let kernel = throughput(&name, &["--dut", "kernel-v6"], &dir.join("kernel.json"));
        let config = repo().join("bench/configs/siit.toml");
        let config = config.to_string_lossy().into_owned();
        let siit = throughput(
            &name,
            &["--dut", "sixgate", "--config", &config],
            &dir.join("siit.json"),
        );
        println!("kernel-v6 {kernel} fps, sixgate SIIT {siit} fps");
        assert!(kernel > 1000, "kernel-v6: {kernel} fps");
        assert!(siit > 1000, "sixgate SIIT: {siit} fps");
        assert!(
            siit as f64 <= 1.5 * kernel as f64,
            "sixgate {siit} fps vs kernel {kernel} fps: the tester miscounts"
        );
        // The charts render from the result.
        let svg = dir.join("siit.svg");
        let json = dir.join("siit.json");
        let out = bench(&[
            "plot",
            &json.to_string_lossy(),
            "--out",
            &svg.to_string_lossy(),
        ]);
        assert!(out.status.success());
        assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    });
    assert!(bench(&["bed", "down", "--name", &name]).status.success());
    assert!(namespaces_of(&name).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
