//! One NAT64 node restarted without losing its sessions (docs/restart.md,
//! `[daemon] state_file`), end to end in namespaces on the bed of
//! `common/ha.rs` with gw1 alone (the server's route to pool4 moved to gw1,
//! gw2 idle, no `[sync]`).
//!
//! - `restart_keeps_tcp_and_udp_sessions`: three TCP connections and a UDP
//!   flow open through gw1; SIGTERM, start again with the same
//!   configuration: the restart log line says how many sessions came back,
//!   `show sessions` lists the same sessions (same pool4 address and port),
//!   and the same TCP connections and UDP socket carry data again. The gap
//!   (SIGTERM to the first UDP reply forwarded by the new daemon) is
//!   printed. Then SIGTERM again and a start with another UDP timeout: one
//!   log line refuses the file (another configuration) and the tables are
//!   empty.
//! - `restart_with_the_fast_path_puts_restored_sessions_back_in_the_kernel`:
//!   the same with `fastpath = "tc"` on gw1's two interfaces: the restored
//!   sessions are installed in the new program and it translates their
//!   packets
//!   (docs/restart.md, "With the fast path": during the restart itself the
//!   flows stop, as without it).
//! - `restart_as_an_unprivileged_user_keeps_the_sessions`: the same with
//!   `[daemon] user = "nobody"` and the state file in a directory sixgate
//!   makes at start and gives to that user.
//! - `restart_on_the_af_xdp_data_plane_keeps_the_sessions`: the same on the
//!   AF_XDP data plane (one worker).
//! - `restart_of_a_synced_node_with_its_state_file`: the HA pair (docs/ha.md)
//!   with a state file each; gw1 restarted with SIGTERM restores its three
//!   UDP sessions from its file before its peer's snapshot, and afterwards
//!   both nodes list the same sessions with nothing refused on either.
//!
//! Root and `ip netns` needed (else `skipped:`), and python3.

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::ha::{
    SERVER4, SERVER6, SyncPath, TCP_ECHO_THREADED, TCP_ROUNDS_CLIENT, UDP_PORT, cli, gateway_toml,
    more_rounds, sessions, start_routed, start_toml, sync_state, take_bed, udp_echo, udp_echo_on,
    udp_exchange, wait_for, wait_synced,
};
use common::stop_cleanly;
use sixgate_netns::{Proto, ScratchDir};

const TCP_PORT: u16 = 7100;

/// A UDP flow from one socket: a datagram every 10 ms until the file
/// argv[3] exists; each echo that comes back is printed with its wall-clock
/// time.
const UDP_FLOW: &str = r#"
import os, socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setblocking(False)
dest, stop, n = (sys.argv[1], int(sys.argv[2])), sys.argv[3], 0
print("started", flush=True)
while not os.path.exists(stop):
    try:
        s.sendto(b"flow %d" % n, dest)
    except OSError:
        pass
    n += 1
    time.sleep(0.01)
    while True:
        try:
            s.recvfrom(2000)
        except OSError:
            break
        print("reply %.4f" % time.time(), flush=True)
print("done", n, flush=True)
"#;

/// How the gateway runs in a variant of the test.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// Root, no fast path.
    Plain,
    /// `fastpath = "tc"` on gw1's two interfaces.
    FastPath,
    /// `user = "nobody"`, the state file in a directory sixgate makes.
    Unprivileged,
    /// The AF_XDP data plane on gw1's two interfaces, one worker.
    Xdp,
}

fn config(state: &std::path::Path, udp_timeout: u32, v: Variant) -> String {
    let fastpath = match v {
        Variant::FastPath => "fastpath = \"tc\"\nfastpath_interfaces = [\"lan\", \"wan\"]\n",
        _ => "fastpath = \"off\"\n",
    };
    let user = match v {
        Variant::Unprivileged => "user = \"nobody\"\n",
        _ => "",
    };
    let text = format!(
        r#"[translator]
mode = "nat64"
pool6 = "2001:db8:64::/96"

[nat64]
pool4 = ["198.18.0.0/31"]
udp_timeout = {udp_timeout}

[daemon]
workers = 2
state_file = "{}"
{fastpath}{user}
[tun]
name = "sixgate0"
"#,
        state.display()
    );
    match v {
        Variant::Xdp => text
            .replace("workers = 2\n", "dataplane = \"xdp\"\nworkers = 1\n")
            .replace("fastpath = \"off\"\n", "")
            .replace(
                "[tun]\nname = \"sixgate0\"\n",
                "[xdp]\nipv6_interface = \"lan\"\nipv4_interface = \"wan\"\n",
            ),
        _ => text,
    }
}

fn wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The UDP flow's reply times.
fn replies(out: &str) -> Vec<f64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("reply "))
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// The start's one `state:` line is in the log (the last worker made logs
/// it; the routes that make the daemon "ready" come before the workers).
fn wait_state_line(gw: &sixgate_netns::RunningDut) {
    wait_for(10, || gw.log(), || gw.log().contains("state:"));
}

/// A `show stats` row's total (0 when there is no such row).
fn stat(gw: &sixgate_netns::RunningDut, name: &str) -> u64 {
    cli(gw, &["show", "stats"])
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn restart_keeps_tcp_and_udp_sessions() {
    restart("restart_keeps_tcp_and_udp_sessions", Variant::Plain);
}

#[test]
fn restart_with_the_fast_path_puts_restored_sessions_back_in_the_kernel() {
    restart(
        "restart_with_the_fast_path_puts_restored_sessions_back_in_the_kernel",
        Variant::FastPath,
    );
}

#[test]
fn restart_as_an_unprivileged_user_keeps_the_sessions() {
    restart(
        "restart_as_an_unprivileged_user_keeps_the_sessions",
        Variant::Unprivileged,
    );
}

#[test]
fn restart_on_the_af_xdp_data_plane_keeps_the_sessions() {
    restart(
        "restart_on_the_af_xdp_data_plane_keeps_the_sessions",
        Variant::Xdp,
    );
}

fn restart(test: &str, variant: Variant) {
    let fast = variant == Variant::FastPath;
    let Some((turn, bed)) = take_bed(test, common::ha::SyncPath::Direct) else {
        return;
    };
    if variant == Variant::Xdp {
        // AF_XDP gets no checksum offload metadata: the hosts send complete
        // checksums, as in the other XDP beds.
        for (ns, dev) in [(&bed.client, "c1"), (&bed.server, "s1")] {
            ns.run("ethtool", ["-K", dev, "tx", "off"])
                .unwrap_or_else(|e| panic!("{test}: {e}"));
        }
    }
    // Both directions through gw1.
    bed.server
        .ip(["route", "replace", "198.18.0.0/31", "via", "10.1.0.1"])
        .unwrap();
    let dir = ScratchDir::new("restart").unwrap();
    // Unprivileged: in a directory sixgate makes (still root) and gives to
    // the user, who writes the file at stop and reads it at start.
    let state = match variant {
        Variant::Unprivileged => dir.path().join("state").join("nat64.state"),
        _ => dir.path().join("nat64.state"),
    };
    let stop_file = dir.path().join("stop");
    let routes = ["2001:db8:64::/96", "198.18.0.0/31"];
    let toml = config(&state, 300, variant);

    let gw = start_routed(&bed.gw1, 1, &toml, &routes);
    if fast && !gw.log().contains("TC program attached") {
        println!(
            "skipped: {test}: the fast path does not run here:\n{}",
            gw.log()
        );
        stop_cleanly(test, "gw1", gw);
        drop(bed);
        turn.finish();
        return;
    }
    let first_log = turn.run(
        || gw.log(),
        || {
            wait_state_line(&gw);
            common::line_with(&gw.log(), "state: no ");
            gw.log()
        },
    );
    assert!(first_log.contains("starting with empty NAT64 tables"));

    let _echo = udp_echo_on(&bed.server, UDP_PORT);
    let _tcp_echo = bed
        .server
        .spawn(
            "python3",
            ["-c", TCP_ECHO_THREADED, SERVER4, &TCP_PORT.to_string()],
        )
        .unwrap();
    bed.server
        .wait_listening(Proto::Tcp, TCP_PORT, Duration::from_secs(10))
        .unwrap();
    let stop = stop_file.to_string_lossy().into_owned();
    let tcp = bed
        .client
        .spawn(
            "python3",
            [
                "-c",
                TCP_ROUNDS_CLIENT,
                SERVER6,
                &TCP_PORT.to_string(),
                "3",
                &stop,
            ],
        )
        .unwrap();
    let udp = bed
        .client
        .spawn(
            "python3",
            ["-c", UDP_FLOW, SERVER6, &UDP_PORT.to_string(), &stop],
        )
        .unwrap();

    let before = turn.run(
        || format!("{}\ntcp: {} {}", gw.log(), tcp.stdout(), tcp.stderr()),
        || {
            more_rounds(test, &tcp, "before the restart");
            wait_for(
                10,
                || format!("UDP echoes: {} {}", udp.stdout(), udp.stderr()),
                || replies(&udp.stdout()).len() >= 20,
            );
            let s = sessions(&gw);
            // Three TCP connections and the UDP flow, all on pool4.
            assert_eq!(s.len(), 4, "{s:?}");
            assert!(s.iter().all(|l| l.contains("198.18.0.")), "{s:?}");
            s
        },
    );
    println!("{test}: before: {before:?}");

    // SIGTERM: the state goes to the file.
    let t_term = Instant::now();
    let wall_term = wall();
    let stopped = stop_cleanly(test, "gw1", gw);
    let stop_ms = t_term.elapsed().as_millis();
    let wrote = common::line_with(&stopped.stderr, "state: wrote ");
    if fast {
        let (t64, t46, passed, aborted) = common::fastpath_counters(&stopped);
        println!(
            "{test}: before the restart fast path: 6to4 {t64}, 4to6 {t46}, passed {passed}, \
             aborted {aborted}"
        );
    }
    assert!(wrote.contains("wrote 4 NAT64 sessions"), "{wrote}");
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&state).expect("the state file");
        assert_eq!(m.mode() & 0o777, 0o600);
        if variant == Variant::Unprivileged {
            assert_ne!(m.uid(), 0, "written as the user");
        }
    }

    // The same configuration again.
    let wall_spawn = wall();
    let gw = start_routed(&bed.gw1, 1, &toml, &routes);
    let ready_ms = t_term.elapsed().as_millis();
    let restored = turn.run(
        || gw.log(),
        || {
            wait_state_line(&gw);
            common::line_with(&gw.log(), "state: restored").to_owned()
        },
    );
    assert!(
        restored.contains("restored 4 NAT64 sessions from") && restored.contains("0 of 4 refused"),
        "{restored}"
    );
    assert_eq!(
        gw.log().matches("state:").count(),
        1,
        "one line at start:\n{}",
        gw.log()
    );
    assert!(!state.exists(), "the file is consumed at start");
    turn.run(
        || format!("{}\ntcp: {} {}", gw.log(), tcp.stdout(), tcp.stderr()),
        || {
            // Restored before a packet: the same sessions, the same pool4
            // addresses and ports.
            assert_eq!(sessions(&gw), before, "show sessions after the restart");
            // The same UDP socket gets echoes again, through the new daemon.
            wait_for(
                10,
                || format!("UDP echoes after the restart: {}", udp.stderr()),
                || replies(&udp.stdout()).iter().any(|&t| t > wall_spawn),
            );
            let first = replies(&udp.stdout())
                .into_iter()
                .find(|&t| t > wall_spawn)
                .unwrap();
            let last_before = replies(&udp.stdout())
                .into_iter()
                .filter(|&t| t < wall_term)
                .fold(0.0, f64::max);
            more_rounds(test, &tcp, "after the restart");
            let tcp_ms = t_term.elapsed().as_millis();
            println!(
                "{test}: gap: SIGTERM to the first UDP packet forwarded after the restart \
                 {:.0} ms (old daemon stopped after {stop_ms} ms, new one ready after \
                 {ready_ms} ms; last echo before SIGTERM {:.0} ms before it); three more TCP \
                 rounds on every connection by {tcp_ms} ms after SIGTERM",
                (first - wall_term) * 1e3,
                (wall_term - last_before) * 1e3,
            );
            assert_eq!(sessions(&gw), before, "no new session for the old flows");
            if fast {
                // Every restored session back in the kernel (at start; at
                // their first packet's exported refresh otherwise): the
                // three TCP ones and the UDP one.
                let installed = stat(&gw, "fastpath_nat64_installed");
                println!("{test}: fast path: {installed} sessions installed after the restart");
                assert!(installed >= 4, "installed {installed}");
            }
        },
    );

    // The clients stop (the TCP client checks every echo and closes).
    std::fs::write(&stop_file, b"").unwrap();
    wait_for(
        15,
        || format!("the clients: {} {}", tcp.stdout(), tcp.stderr()),
        || tcp.stdout().contains("done") && udp.stdout().contains("done"),
    );
    // "done" only after every echo of every round came back whole.
    println!(
        "{test}: TCP client: {}",
        tcp.stdout().lines().last().unwrap_or("")
    );

    // Another configuration: the file is refused in one line, tables empty.
    let stopped = stop_cleanly(test, "gw1", gw);
    common::line_with(&stopped.stderr, "state: wrote ");
    if fast {
        // The restarted daemon's program carried the restored flows (in
        // this bed mostly the IPv6 side's packets, before the restart too).
        let (t64, t46, passed, aborted) = common::fastpath_counters(&stopped);
        println!(
            "{test}: after the restart fast path: 6to4 {t64}, 4to6 {t46}, passed {passed}, \
             aborted {aborted}"
        );
        assert!(t64 + t46 >= 20, "too little on the fast path");
        assert_eq!(aborted, 0);
    }
    let gw = start_routed(&bed.gw1, 1, &config(&state, 600, variant), &routes);
    turn.run(
        || gw.log(),
        || {
            wait_state_line(&gw);
            let log = gw.log();
            let lines: Vec<&str> = log.lines().filter(|l| l.contains("state:")).collect();
            assert_eq!(lines.len(), 1, "{log}");
            println!("{}", lines[0].trim());
            assert!(
                lines[0].contains(
                    "refused, starting with empty NAT64 tables: written under \
                     another configuration"
                ),
                "{}",
                lines[0]
            );
            assert!(lines[0].contains(&state.display().to_string()));
            assert!(sessions(&gw).is_empty(), "{:?}", sessions(&gw));
        },
    );
    let mut aside = state.clone().into_os_string();
    aside.push(".refused");
    assert!(std::path::Path::new(&aside).exists());
    stop_cleanly(test, "gw1", gw);
    drop(bed);
    turn.finish();
}

#[test]
fn restart_of_a_synced_node_with_its_state_file() {
    let test = "restart_of_a_synced_node_with_its_state_file";
    let Some((turn, bed)) = take_bed(test, SyncPath::Direct) else {
        return;
    };
    let dir = ScratchDir::new("restartha").unwrap();
    let toml = |node: u16| {
        let state = dir.path().join(format!("gw{node}.state"));
        let t = gateway_toml(node, SyncPath::Direct).replace(
            "workers = 2\n",
            &format!("workers = 2\nstate_file = \"{}\"\n", state.display()),
        );
        assert!(t.contains("state_file"), "{t}");
        t
    };
    let gw1 = start_toml(&bed.gw1, 1, &toml(1));
    let gw2 = start_toml(&bed.gw2, 2, &toml(2));
    turn.run(
        || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log()),
        || wait_synced(&gw1, &gw2),
    );
    let _echo = udp_echo(&bed);
    let before = turn.run(
        || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log()),
        || {
            for _ in 0..3 {
                udp_exchange(&bed);
            }
            wait_for(
                5,
                || format!("gw2 lists gw1's sessions: {:?}", sessions(&gw2)),
                || sessions(&gw2).len() == 3,
            );
            sessions(&gw1)
        },
    );
    assert_eq!(before.len(), 3, "{before:?}");
    let stopped = stop_cleanly(test, "gw1", gw1);
    common::line_with(&stopped.stderr, "state: wrote 3 NAT64 sessions");
    let gw1 = start_toml(&bed.gw1, 1, &toml(1));
    turn.run(
        || format!("gw1:\n{}\ngw2:\n{}", gw1.log(), gw2.log()),
        || {
            wait_state_line(&gw1);
            let log = gw1.log();
            let line = common::line_with(&log, "state: restored");
            assert!(line.contains("restored 3 NAT64 sessions"), "{line}");
            assert_eq!(sessions(&gw1), before, "gw1 before its peer's snapshot");
            wait_for(
                10,
                || gw1.log(),
                || gw1.log().contains("snapshot from peer 2 received"),
            );
            // gw2 got gw1's snapshot after its restart too.
            wait_for(
                10,
                || gw2.log(),
                || gw2.log().matches("snapshot from peer 1 received").count() >= 2,
            );
            assert_eq!(sessions(&gw1), before);
            assert_eq!(sessions(&gw2), before);
            for gw in [&gw1, &gw2] {
                let v = sync_state(gw);
                assert_eq!(v["import_refused"], 0, "{v}");
            }
            // And the flows go on through the restarted node.
            udp_exchange(&bed);
            println!("{test}: after gw1's restart both nodes list {before:?}");
        },
    );
    stop_cleanly(test, "gw1", gw1);
    stop_cleanly(test, "gw2", gw2);
    drop(bed);
    turn.finish();
}
