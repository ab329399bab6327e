//! End-to-end tests of `sixgate bench` (docs/bench.md): the bed comes up and
//! goes down without leaving a namespace, a short RFC 8219 §7.1 throughput
//! search against `kernel-v6`, sixgate SIIT, the sixgate MAP-T BR (the tester
//! playing one CE) and the MAP-T CE + BR chain (dual bed) gives sane figures
//! (and its charts, SVG and PNG), and native-IPv6 background traffic (§5.2)
//! comes back beside the translated frames.
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

/// A short throughput search, left to right only; returns the zero-loss rate
/// (frames/s per direction) from the JSON result.
fn throughput(name: &str, dut: &[&str], json: &Path) -> u64 {
    let mut with = vec!["--unidirectional"];
    with.extend_from_slice(dut);
    search(name, &with, json)
}

/// A short throughput search with `extra` options (the DUT and more).
fn search(name: &str, extra: &[&str], json: &Path) -> u64 {
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
        "--quiet",
        "--json",
    ];
    let json_s = json.to_string_lossy().into_owned();
    args.push(&json_s);
    args.extend_from_slice(extra);
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

#[test]
fn throughput_kernel_v6_and_sixgate_siit_are_sane() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = bed_name("tp");
    with_bed(&name, &[], |dir| {
        let kernel = throughput(&name, &["--dut", "kernel-v6"], &dir.join("kernel.json"));
        let config = repo().join("bench/configs/siit.toml");
        let config = config.to_string_lossy().into_owned();
        let log = dir.join("dut.log");
        let siit = throughput(
            &name,
            &[
                "--dut",
                "sixgate",
                "--config",
                &config,
                "--dut-log",
                &log.to_string_lossy(),
            ],
            &dir.join("siit.json"),
        );
        // What the DUT said is kept (its start-up line and exit counters).
        let log = std::fs::read_to_string(&log).unwrap();
        assert!(log.contains("starting: mode siit"), "{log}");
        println!("kernel-v6 {kernel} fps, sixgate SIIT {siit} fps");
        assert!(kernel > 1000, "kernel-v6: {kernel} fps");
        assert!(siit > 1000, "sixgate SIIT: {siit} fps");
        assert!(
            siit as f64 <= 1.5 * kernel as f64,
            "sixgate {siit} fps vs kernel {kernel} fps: the tester miscounts"
        );
        // The charts render from the result, in both formats.
        let json = dir.join("siit.json");
        for (file, magic) in [
            ("siit.svg", &b"<svg"[..]),
            ("siit.png", b"\x89PNG\r\n\x1a\n"),
        ] {
            let chart = dir.join(file);
            let out = bench(&[
                "plot",
                &json.to_string_lossy(),
                "--out",
                &chart.to_string_lossy(),
            ]);
            assert!(out.status.success(), "plot {file}");
            assert!(std::fs::read(&chart).unwrap().starts_with(magic), "{file}");
        }
    });
}

/// RFC 8219 §5.2 background traffic: with `--background 50`, half the left
/// tester's frames are native IPv6 that sixgate SIIT's DUT namespace forwards
/// untranslated beside the translated ones; both kinds come back and are
/// reported apart.
#[test]
fn background_traffic_comes_back_beside_translated_frames() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = bed_name("b5bg");
    let dir = std::env::temp_dir().join(format!("sgb-bg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("bg.json");
    let config = repo().join("bench/configs/siit.toml");
    let out = bench(&[
        "throughput",
        "--name",
        &name,
        "--dut",
        "sixgate",
        "--config",
        &config.to_string_lossy(),
        "--background",
        "50",
        "--duration",
        "1",
        "--steps",
        "1",
        "--max-rate",
        "5000",
        "--loss-goal",
        "1",
        "--behind-limit",
        "100",
        "--quiet",
        "--json",
        &json.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "sixgate bench throughput failed");
    assert!(namespaces_of(&name).is_empty(), "the run's own bed is gone");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["settings"]["background_pct"], 50.0);
    let t = &v["trials"][0];
    assert_eq!(t["direction"], "left-to-right");
    let (sent, received) = (t["sent"].as_u64().unwrap(), t["received"].as_u64().unwrap());
    let (bg_sent, bg_received) = (
        t["background_sent"].as_u64().unwrap(),
        t["background_received"].as_u64().unwrap(),
    );
    println!("left to right: {received} of {sent}, background {bg_received} of {bg_sent}");
    assert_eq!(bg_sent, sent / 2, "exactly half are background frames");
    assert!(bg_received > bg_sent / 2, "native IPv6 came back");
    assert!(
        received - bg_received > bg_sent / 2,
        "translated frames came back"
    );
    // Only the left tester sends background traffic.
    assert_eq!(v["trials"][1]["background_sent"], 0);
    assert!(v["throughput"][0]["background_received"].as_u64().unwrap() > 0);
}

/// A short RFC 9693 run (phase 1, maximum connection establishment rate,
/// table capacity, phase 2 throughput) against `dut`; returns the JSON result.
fn stateful(name: &str, dut: &[&str], json: &Path) -> serde_json::Value {
    let json_s = json.to_string_lossy().into_owned();
    let mut args = vec![
        "stateful",
        "--name",
        name,
        "--connections",
        "1000",
        "--phase1-rate",
        "5000",
        "--capacity-max",
        "4000",
        "--duration",
        "1",
        "--steps",
        "3",
        "--max-rate",
        "20000",
        "--min-rate",
        "1000",
        "--loss-goal",
        "1",
        "--behind-limit",
        "100",
        "--quiet",
        "--json",
        &json_s,
    ];
    args.extend_from_slice(dut);
    let out = bench(&args);
    assert!(out.status.success(), "sixgate bench stateful failed");
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// RFC 9693 end to end against kernel NAT44 (conntrack) and sixgate NAT64:
/// phase 1 establishes connections, the establishment-rate search and the
/// capacity search find something, phase 2 (the IPv4 side answering only the
/// connections phase 1 opened) has a non-zero throughput, and the §4.3
/// tear-down (`conntrack -F`, `sixgate session flush` through the DUT's API
/// socket) deletes what phase 1 opened. Sane, not fast.
#[test]
fn stateful_nat44_and_sixgate_nat64_give_sane_rfc9693_results() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let config = repo().join("bench/configs/nat64.toml");
    let config = config.to_string_lossy().into_owned();
    let duts: [(&str, Vec<&str>); 2] = [
        ("nat44", vec!["--dut", "nat44"]),
        ("nat64", vec!["--dut", "sixgate", "--config", &config]),
    ];
    let name = bed_name("b5st");
    with_bed(&name, &[], |dir| {
        for (label, dut) in &duts {
            let v = stateful(&name, dut, &dir.join(format!("{label}.json")));
            let st = &v["stateful"];
            let established = st["established"].as_u64().unwrap();
            let connections = st["connections"].as_u64().unwrap();
            let est_rate = st["max_establishment_rate"]["rate"].as_u64().unwrap();
            let capacity = st["table_capacity"].as_u64().unwrap();
            let phase2 = v["throughput"][0]["fps"]["median"].as_f64().unwrap();
            println!(
                "{label}: {established} of {connections} established, establishment rate {est_rate}/s, capacity >= {capacity}, phase 2 {phase2} fps"
            );
            assert_eq!(connections, 1000, "{label}");
            // A busy machine may lose a few frames of phase 1.
            assert!(established >= 900, "{label}: {established} established");
            assert!(est_rate >= 1000, "{label}: establishment rate {est_rate}");
            assert!(
                (1000..=4000).contains(&capacity),
                "{label}: capacity {capacity}"
            );
            assert!(phase2 > 0.0, "{label}: phase 2 throughput {phase2}");
            // Phase 2's answers keep going for the whole trial (not one
            // frame per learned connection).
            let reverse = v["trials"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["test"] == "throughput" && t["direction"] == "right-to-left")
                .map(|t| t["sent"].as_u64().unwrap())
                .max()
                .unwrap();
            assert!(reverse > connections, "{label}: {reverse} answers sent");
            // §4.3: the delete command found the connections (the rate itself
            // is noise at 1000: the command's start-up dominates).
            let deleted: u64 = st["notes"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|n| n.as_str()?.strip_prefix("tear-down rate: "))
                .find_map(|t| t.split(' ').next()?.parse().ok())
                .unwrap_or_else(|| panic!("{label}: no tear-down note: {st}"));
            assert!(deleted >= 900, "{label}: {deleted} deleted");
        }
    });
}

/// A bed `name` (`--dual` in `up` if asked) around `body`, always taken down.
fn with_bed(name: &str, up: &[&str], body: impl FnOnce(&Path)) {
    let dir = std::env::temp_dir().join(format!("sgb-e2e-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut args = vec!["bed", "up", "--name", name];
    args.extend_from_slice(up);
    assert!(bench(&args).status.success());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&dir)));
    assert!(bench(&["bed", "down", "--name", name]).status.success());
    assert!(namespaces_of(name).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// The MAP-T BR (RFC 7599) with two workers, both directions: the left tester
/// is one CE (its MAP address, source ports of its set), the right tester
/// answers to that CE's IPv4 address and ports. Every frame must have been
/// translated, so a sane non-zero rate means both directions' address and port
/// steps worked.
#[test]
fn throughput_sixgate_mapt_br_is_sane() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = bed_name("m9br");
    with_bed(&name, &[], |dir| {
        let config = repo().join("bench/configs/mapt-br-2w.toml");
        let config = config.to_string_lossy().into_owned();
        let json = dir.join("mapt.json");
        let br = search(&name, &["--dut", "sixgate", "--config", &config], &json);
        println!("sixgate MAP-T BR, 2 workers: {br} fps per direction");
        assert!(br > 1000, "MAP-T BR: {br} fps");
        assert!(
            br <= 300_000,
            "MAP-T BR: {br} fps above the search's maximum"
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let trials = v["trials"].as_array().unwrap();
        // Both directions ran.
        assert!(
            trials.iter().any(|t| t["direction"] == "right-to-left"),
            "{trials:?}"
        );
    });
}

/// The MAP-T chain on the dual bed (RFC 8219 §4.2): IPv4 left tester → sixgate
/// CE (NAPT44 + RFC 7915) → IPv6 → sixgate BR → IPv4 right tester; the answers
/// only to what phase 1 opened (the CE is stateful, RFC 9693).
#[test]
fn throughput_sixgate_mapt_ce_br_dual_is_sane() {
    if !can_run() {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = bed_name("m9cb");
    with_bed(&name, &["--dual"], |dir| {
        let config = repo().join("bench/configs/mapt-br.toml");
        let config = config.to_string_lossy().into_owned();
        let rate = search(
            &name,
            &[
                "--dut",
                "sixgate",
                "--config",
                &config,
                "--connections",
                "500",
            ],
            &dir.join("dual.json"),
        );
        println!("sixgate MAP-T CE + BR: {rate} fps per direction");
        assert!(rate > 1000, "MAP-T CE + BR: {rate} fps");
    });
}
