//! How `sixgate run` attaches its XDP program (docs/xdp.md, "Attaching,
//! detaching, crashes"), on interfaces that cannot do what a veth does:
//!
//! - `xdp_auto_falls_back_to_generic_with_a_warning`: a bridge has no native
//!   (driver) XDP; `attach_mode = "auto"` says so and attaches in the
//!   kernel's generic path, and nothing is left attached after the stop;
//! - `xdp_native_on_an_interface_without_it_is_a_clear_error`: `"native"` there
//!   stops with an error naming the interface, and nothing is left attached;
//! - `xdp_without_bpf_permission_is_a_clear_error`: without CAP_BPF (capsh drops
//!   it) the start fails with an error that says what is needed.
//!
//! Skips (printing `skipped: <test>: <reason>`) only when the machine cannot
//! make namespaces or bridges, or, for the last test, when unprivileged BPF is allowed
//! (dropping capabilities then proves nothing).

use std::path::{Path, PathBuf};

use sixgate_netns::{Netns, ScratchDir, check_host};

mod common;
use common::{line_with, run_for, unprivileged_bpf_disabled};

/// A namespace with two empty bridges, `d6` and `d4`, up (Ethernet
/// interfaces with one queue and no native XDP), and a SIIT configuration on
/// them with `attach_mode`; `None` after printing why when namespaces or
/// bridges cannot be made.
fn bridges(test: &str, attach_mode: &str) -> Option<(Netns, ScratchDir, PathBuf)> {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return None;
    }
    let ns = Netns::new("xdpat").unwrap_or_else(|e| panic!("{e}"));
    for dev in ["d6", "d4"] {
        if let Err(e) = ns.ip(["link", "add", dev, "type", "bridge"]) {
            println!("skipped: {test}: no bridge interfaces here: {e}");
            return None;
        }
        ns.link_up(dev).unwrap_or_else(|e| panic!("{e}"));
    }
    let dir = ScratchDir::new("xdpat").unwrap();
    // Its own API socket: the tests run side by side.
    let socket = dir.path().join("api.sock");
    let config = format!(
        "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\
         eam = [ {{ ipv4 = \"198.18.0.0/24\", ipv6 = \"2001:db8:1::/120\" }} ]\n\
         [daemon]\ndataplane = \"xdp\"\nworkers = 1\nsocket = \"{}\"\n\
         [xdp]\nipv6_interface = \"d6\"\nipv4_interface = \"d4\"\nattach_mode = \"{attach_mode}\"\n",
        socket.display()
    );
    let path = dir.write("sixgate.toml", config).unwrap();
    Some((ns, dir, path))
}

/// Run it for `secs` (dropping the BPF capabilities with `drop_bpf`): (exit
/// code, standard error).
fn run(ns: &Netns, config: &Path, secs: u32, drop_bpf: bool) -> (Option<i32>, String) {
    let out = run_for(ns, config, secs, drop_bpf);
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), log)
}

/// The start fails (no worker started, nothing left attached) with an error
/// line containing `needle`, which is returned.
fn start_fails(ns: &Netns, config: &Path, drop_bpf: bool, needle: &str) -> String {
    let (code, log) = run(ns, config, 5, drop_bpf);
    assert!(
        code != Some(0) && code != Some(124),
        "exit {code:?}:\n{log}"
    );
    assert!(!log.contains("workers started"), "{log}");
    nothing_attached(ns);
    line_with(&log, needle).to_owned()
}

/// No XDP program left on either interface.
fn nothing_attached(ns: &Netns) {
    for dev in ["d6", "d4"] {
        let link = ns
            .ip(["-d", "link", "show", "dev", dev])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !link.contains("prog/xdp"),
            "left attached on {dev}:\n{link}"
        );
    }
}

#[test]
fn xdp_auto_falls_back_to_generic_with_a_warning() {
    let test = "xdp_auto_falls_back_to_generic_with_a_warning";
    let Some((ns, _dir, config)) = bridges(test, "auto") else {
        return;
    };
    // timeout exits 124 when it had to stop the command.
    let (code, log) = run(&ns, &config, 2, false);
    let warning = line_with(&log, "falling back to generic XDP");
    assert!(warning.contains("WARN"), "{warning}");
    for dev in ["d6", "d4"] {
        assert!(
            log.lines()
                .any(|l| l.contains("XDP program sixgate_xdp attached")
                    && l.contains(&format!("interface={dev}"))
                    && l.contains("mode=\"generic\"")),
            "{dev} not attached in generic mode:\n{log}"
        );
    }
    assert!(log.contains("workers started"), "{log}");
    assert_eq!(code, Some(124), "it ran until stopped:\n{log}");
    assert!(log.contains("XDP program detached"), "{log}");
    nothing_attached(&ns);
}

#[test]
fn xdp_native_on_an_interface_without_it_is_a_clear_error() {
    let test = "xdp_native_on_an_interface_without_it_is_a_clear_error";
    let Some((ns, _dir, config)) = bridges(test, "native") else {
        return;
    };
    let error = start_fails(
        &ns,
        &config,
        false,
        "cannot attach the XDP program to d6 in native mode",
    );
    assert!(
        error.contains("attach_mode = \"auto\""),
        "says what to do: {error}"
    );
}

#[test]
fn xdp_without_bpf_permission_is_a_clear_error() {
    let test = "xdp_without_bpf_permission_is_a_clear_error";
    if !unprivileged_bpf_disabled() {
        println!("skipped: {test}: kernel.unprivileged_bpf_disabled = 0");
        return;
    }
    let Some((ns, _dir, config)) = bridges(test, "auto") else {
        return;
    };
    let error = start_fails(&ns, &config, true, "needs root, or CAP_BPF + CAP_NET_ADMIN");
    assert!(error.contains("Operation not permitted"), "{error}");
}
