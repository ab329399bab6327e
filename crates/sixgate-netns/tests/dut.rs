//! The `Dut::Sixgate` machinery (config, readiness, stop checks), exercised
//! before `sixgate run` exists: a shell script stands in for the binary and runs
//! TAYGA behind sixgate's command line. Skipped where namespaces cannot be made.

use std::path::{Path, PathBuf};

use sixgate_netns::{Dataplane, Dut, ScratchDir, Topology, TopologyOptions, addr, check_host};

/// A stand-in for `sixgate run`: `run --help` succeeds; `run --config FILE` reads
/// `[tun] name`, makes that TUN device with TAYGA, routes it (unless told
/// `manage_routes = false`), and on SIGTERM stops TAYGA, removes the device
/// (unless LEAVE_TUN is in the config) and prints a summary.
const STAND_IN: &str = include_str!("stand-in-sixgate.sh");

fn stand_in(test: &str) -> Option<(ScratchDir, PathBuf)> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    // TAYGA is installed by scripts/setup.sh: its absence is a failure.
    Dut::Tayga
        .check_available()
        .unwrap_or_else(|why| panic!("{test}: {why}"));
    let dir = ScratchDir::new("standin").unwrap();
    let path = dir
        .write_script("sixgate", STAND_IN, &["run", "--help"])
        .unwrap();
    Some((dir, path))
}

fn sixgate(binary: &Path, extra: &str) -> Dut {
    Dut::Sixgate {
        binary: binary.to_path_buf(),
        dataplane: Dataplane::Tun,
        extra_toml: extra.into(),
    }
}

fn ping_through(bed: &Topology) {
    bed.v6host
        .run("ping", ["-c1", "-W2", &addr::V4_HOST_AS_V6.to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn sixgate_variant_runs_stops_and_reports() {
    let Some((_dir, bin)) = stand_in("sixgate_variant_runs_stops_and_reports") else {
        return;
    };
    let t = sixgate(&bin, "[tun]\nname = \"sgx0\"\n");
    t.check_available().unwrap();
    let bed = Topology::build(TopologyOptions::default()).unwrap();
    let running = bed.start(&t).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(running.tun(), "sgx0");
    assert!(running.config().contains("pool6 = \"2001:db8:64::/96\""));
    ping_through(&bed);
    assert!(running.tun_stats().unwrap().tx_packets > 0);
    let stopped = running.stop().unwrap();
    stopped.check_clean().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stopped.stdout, "stand-in summary: stopped\n");
    assert!(bed.gateway.link("sgx0").unwrap().is_none());
}

#[test]
fn bed_adds_routes_when_sixgate_does_not_manage_them() {
    let Some((_dir, bin)) = stand_in("bed_adds_routes_when_sixgate_does_not_manage_them") else {
        return;
    };
    let t = sixgate(&bin, "[tun]\nmanage_routes = false\n");
    let bed = Topology::build(TopologyOptions::default()).unwrap();
    let running = bed.start(&t).unwrap_or_else(|e| panic!("{e}"));
    ping_through(&bed);
    running.stop().unwrap().check_clean().unwrap();
}

#[test]
fn translator_dying_at_start_is_an_error_with_its_output() {
    let Some((_dir, bin)) = stand_in("translator_dying_at_start_is_an_error_with_its_output")
    else {
        return;
    };
    let t = sixgate(&bin, "[daemon]\nnote = \"DIE\"\n");
    let bed = Topology::build(TopologyOptions::default()).unwrap();
    let e = bed.start(&t).unwrap_err().to_string();
    assert!(e.contains("config says DIE"), "{e}");
    assert!(e.contains("starting sixgate in sg-gw-"), "{e}");
}

#[test]
fn tun_left_behind_is_reported_and_removed() {
    let Some((_dir, bin)) = stand_in("tun_left_behind_is_reported_and_removed") else {
        return;
    };
    let t = sixgate(&bin, "[daemon]\nnote = \"LEAVE_TUN\"\n");
    let bed = Topology::build(TopologyOptions::default()).unwrap();
    let running = bed.start(&t).unwrap_or_else(|e| panic!("{e}"));
    let stopped = running.stop().unwrap();
    assert!(stopped.tun_left_behind);
    let e = stopped.check_clean().unwrap_err().to_string();
    assert!(e.contains("left its TUN device behind"), "{e}");
    assert!(
        bed.gateway.link("sixgate0").unwrap().is_none(),
        "the bed removed it"
    );
}
