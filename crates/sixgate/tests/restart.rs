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

/// A TCP echo server on the IPv4 side and `n` connections from the IPv6
/// side doing echo rounds ([`TCP_ROUNDS_CLIENT`]) until the file `stop`
/// exists: the server and the client.
fn tcp_rounds(
    bed: &common::ha::Bed,
    n: usize,
    stop: &str,
) -> (sixgate_netns::Background, sixgate_netns::Background) {
    let echo = bed
        .server
        .spawn(
            "python3",
            ["-c", TCP_ECHO_THREADED, SERVER4, &TCP_PORT.to_string()],
        )
        .unwrap();
    bed.server
        .wait_listening(Proto::Tcp, TCP_PORT, Duration::from_secs(10))
        .unwrap();
    let client = bed
        .client
        .spawn(
            "python3",
            [
                "-c",
                TCP_ROUNDS_CLIENT,
                SERVER6,
                &TCP_PORT.to_string(),
                &n.to_string(),
                stop,
            ],
        )
        .unwrap();
    (echo, client)
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
    let stop = stop_file.to_string_lossy().into_owned();
    let (_tcp_echo, tcp) = tcp_rounds(&bed, 3, &stop);
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

/// argv[3] UDP flows, each from its own socket, one datagram every
/// millisecond in turn; from the moment the file argv[4] exists each
/// datagram is counted (its id "flow.seq" kept as sent, and as echoed when
/// its echo comes back); at the file argv[5] the flows stop, echoes are
/// awaited for a second, and the ids are printed.
const UDP_FLOWS: &str = r#"
import os, select, socket, sys, time
host, port, n, mark, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
socks = []
for i in range(n):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setblocking(False)
    s.connect((host, port))
    socks.append(s)
byfd = {s.fileno(): s for s in socks}
p = select.poll()
for s in socks:
    p.register(s, select.POLLIN)
sent, echoed, answered, errors = [], set(), set(), 0
def drain(ms):
    for fd, _ in p.poll(ms):
        while True:
            try:
                d = byfd[fd].recv(2000)
            except OSError:
                break
            answered.add(fd)
            if d.startswith(b"c "):
                echoed.add(d[2:].decode())
print("started", flush=True)
seq, counting, told, t = 0, False, False, time.monotonic()
while not os.path.exists(stop):
    counting = counting or os.path.exists(mark)
    i = seq % n
    ident = "%d.%d" % (i, seq)
    if counting:
        sent.append(ident)
    try:
        socks[i].send((b"c " if counting else b"w ") + ident.encode())
    except OSError:
        errors += 1
    seq += 1
    t += 0.001
    drain(max(0, int((t - time.monotonic()) * 1000)))
    if not told and len(answered) == n:
        print("every flow answered", flush=True)
        told = True
end = time.monotonic() + 1.0
while time.monotonic() < end:
    drain(50)
print("errors", errors, flush=True)
print("sent", " ".join(sent), flush=True)
print("echoed", " ".join(sorted(echoed)), flush=True)
print("done", flush=True)
"#;

/// A UDP echo on argv[1]:argv[2] that keeps the ids of the counted
/// datagrams ([`UDP_FLOWS`]) and prints them when the file argv[3] exists.
const UDP_COUNTING_ECHO: &str = r#"
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(0.1)
got = set()
while not os.path.exists(sys.argv[3]):
    try:
        d, a = s.recvfrom(2000)
    except socket.timeout:
        continue
    s.sendto(d, a)
    if d.startswith(b"c "):
        got.add(d[2:].decode())
print("got", " ".join(sorted(got)), flush=True)
print("done", flush=True)
"#;

/// The space-separated words after `key` on its line of `out`.
fn ids<'a>(out: &'a str, key: &str) -> std::collections::BTreeSet<&'a str> {
    out.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or("")
        .split_whitespace()
        .collect()
}

/// A bpf file system of the test's own (the daemons run under `ip netns
/// exec`, whose sysfs has none at /sys/fs/bpf), for `[daemon]
/// fastpath_pin_dir`; unmounted, with whatever pins are left, at the end.
struct Bpffs(std::path::PathBuf);

impl Bpffs {
    fn mount(at: std::path::PathBuf) -> Result<Bpffs, String> {
        std::fs::create_dir_all(&at).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "bpf", "bpf"])
            .arg(&at)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(Bpffs(at))
    }
}

impl Drop for Bpffs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.join("sixgate"));
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// docs/restart.md, "With the fast path": `[daemon] fastpath_handover`.
/// 200 UDP flows (and 200 TCP connections) through gw1 with the TC fast
/// path; every packet from a mark on is counted where it arrives, the
/// IPv4 server for the flows' datagrams and the IPv6 client for the echoes;
/// SIGTERM, start again: not one datagram lost either way, the TCP
/// connections carry data. Then with no start after the stop: the program
/// alone (no daemon) goes on carrying an established flow until the
/// handover's end and not after it; and a start without the key takes the
/// program over and stops cleanly, leaving no pin behind.
#[test]
fn restart_with_the_fast_path_handed_over_loses_no_packet() {
    handover(
        "restart_with_the_fast_path_handed_over_loses_no_packet",
        "tc",
        false,
    );
}

/// The same with the XDP program (native mode on the bed's veth).
#[test]
fn restart_with_the_xdp_fast_path_handed_over_loses_no_packet() {
    handover(
        "restart_with_the_xdp_fast_path_handed_over_loses_no_packet",
        "xdp",
        false,
    );
}

/// The same with `[daemon] user = "nobody"`: the stop pins as that user,
/// who cannot look into the bpf file system's root (mode 1700 root on most
/// hosts), through the directory the start opened while privileged.
#[test]
fn restart_as_an_unprivileged_user_with_the_fast_path_handed_over_loses_no_packet() {
    handover(
        "restart_as_an_unprivileged_user_with_the_fast_path_handed_over_loses_no_packet",
        "tc",
        true,
    );
}

/// [`restart_with_the_fast_path_handed_over_loses_no_packet`] with `fastpath
/// = "tc"` or `"xdp"` (`hook`), as root or as `nobody` (`user`).
fn handover(test: &str, hook: &str, user: bool) {
    let hook_name = hook.to_uppercase();
    let Some((turn, bed)) = take_bed(test, SyncPath::Direct) else {
        return;
    };
    if hook == "xdp" {
        // An XDP frame carries no CHECKSUM_PARTIAL: the hosts send complete
        // checksums; and a veth takes frames redirected into it only with
        // NAPI, which GRO turns on (as in tests/fastpath.rs).
        for (ns, dev) in [(&bed.client, "c1"), (&bed.server, "s1")] {
            ns.run("ethtool", ["-K", dev, "tx", "off", "gro", "on"])
                .unwrap_or_else(|e| panic!("{test}: {e}"));
        }
    }
    bed.server
        .ip(["route", "replace", "198.18.0.0/31", "via", "10.1.0.1"])
        .unwrap();
    let netns_ino = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(format!("/run/netns/{}", bed.gw1.name()))
            .unwrap()
            .ino()
    };
    let dir = ScratchDir::new("handover").unwrap();
    let bpffs = match Bpffs::mount(dir.path().join("bpffs")) {
        Ok(b) => b,
        Err(why) => {
            println!("skipped: {test}: cannot mount a bpf file system: {why}");
            drop(bed);
            turn.finish();
            return;
        }
    };
    let pins = bpffs
        .0
        .join("sixgate")
        .join(format!("net{netns_ino}-sixgate0"));
    // As the user: in a directory sixgate makes and gives to it.
    let state = match user {
        true => dir.path().join("state").join("nat64.state"),
        false => dir.path().join("nat64.state"),
    };
    if user {
        // The bpf file system's root as most hosts mount /sys/fs/bpf.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bpffs.0, std::fs::Permissions::from_mode(0o1700)).unwrap();
    }
    let routes = ["2001:db8:64::/96", "198.18.0.0/31"];
    let toml = |handover: u16| {
        config(&state, 300, Variant::FastPath)
            .replace("fastpath = \"tc\"", &format!("fastpath = \"{hook}\""))
            .replace(
                "state_file = ",
                &format!(
                    "fastpath_handover = {handover}\nfastpath_pin_dir = \"{}\"\n{}state_file = ",
                    bpffs.0.join("sixgate").display(),
                    if user { "user = \"nobody\"\n" } else { "" }
                ),
            )
    };
    let (mark, stop, dump) = (
        dir.path().join("mark"),
        dir.path().join("stop"),
        dir.path().join("dump"),
    );
    let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
    const FLOWS: usize = 200;

    let gw = start_routed(&bed.gw1, 1, &toml(10), &routes);
    if !gw.log().contains(&format!("{hook_name} program")) || !pins.exists() {
        println!(
            "skipped: {test}: the fast path does not run here:\n{}",
            gw.log()
        );
        stop_cleanly(test, "gw1", gw);
        drop(bed);
        turn.finish();
        return;
    }
    let echo = bed
        .server
        .spawn(
            "python3",
            [
                "-c",
                UDP_COUNTING_ECHO,
                SERVER4,
                &UDP_PORT.to_string(),
                &path(&dump),
            ],
        )
        .unwrap();
    bed.server
        .wait_listening(Proto::Udp, UDP_PORT, Duration::from_secs(10))
        .unwrap();
    let (_tcp_echo, tcp) = tcp_rounds(&bed, FLOWS, &path(&stop));
    let udp = bed
        .client
        .spawn(
            "python3",
            [
                "-c",
                UDP_FLOWS,
                SERVER6,
                &UDP_PORT.to_string(),
                &FLOWS.to_string(),
                &path(&mark),
                &path(&stop),
            ],
        )
        .unwrap();
    turn.run(
        || format!("{}\nudp: {}\ntcp: {}", gw.log(), udp.stderr(), tcp.stderr()),
        || {
            more_rounds(test, &tcp, "before the restart");
            wait_for(
                20,
                || format!("every UDP flow answered: {}", udp.stdout()),
                || udp.stdout().contains("every flow answered"),
            );
            // Every session in the kernel: each UDP flow at its third
            // packet, each TCP connection at ESTABLISHED.
            wait_for(
                20,
                || format!("installed: {}", stat(&gw, "fastpath_nat64_installed")),
                || stat(&gw, "fastpath_nat64_installed") >= 2 * FLOWS as u64,
            );
        },
    );
    std::fs::write(&mark, b"").unwrap();
    std::thread::sleep(Duration::from_millis(300));

    // SIGTERM with the handover: the program stays, and the device.
    let t_term = Instant::now();
    let stopped = gw.stop_leaving_tun().unwrap();
    let stop_ms = t_term.elapsed().as_millis();
    assert!(stopped.status.success(), "{}", stopped.stderr);
    common::line_with(
        &stopped.stderr,
        &format!("fast path: handed over: the {hook_name} program stays on"),
    );
    common::line_with(
        &stopped.stderr,
        &format!("state: wrote {} NAT64 sessions", 2 * FLOWS),
    );
    assert!(
        stopped.tun_left_behind,
        "the device stays for the next start"
    );
    assert!(pins.join(format!("{hook}-lan")).exists() && pins.join(format!("{hook}-wan")).exists());

    let gw = start_routed(&bed.gw1, 1, &toml(2), &routes);
    let took_ms = turn.run(
        || gw.log(),
        || {
            wait_for(
                10,
                || gw.log(),
                || gw.log().contains("fast path: took over"),
            );
            let took = t_term.elapsed().as_millis();
            common::line_with(&gw.log(), "took over from the previous run on lan, wan");
            let restored = common::line_with(&gw.log(), "state: restored").to_owned();
            assert!(
                restored.contains(&format!("restored {} NAT64", 2 * FLOWS)),
                "{restored}"
            );
            assert!(
                !pins.join(format!("{hook}-lan")).exists(),
                "the pins go at the take-over"
            );
            took
        },
    );
    turn.run(
        || format!("{}\nudp: {}\ntcp: {}", gw.log(), udp.stderr(), tcp.stderr()),
        || {
            more_rounds(test, &tcp, "after the restart");
            std::thread::sleep(Duration::from_millis(500));
            std::fs::write(&stop, b"").unwrap();
            wait_for(
                20,
                || format!("the clients: {} {}", udp.stderr(), tcp.stderr()),
                || udp.stdout().contains("done") && tcp.stdout().contains("done"),
            );
            std::fs::write(&dump, b"").unwrap();
            // The whole line: "done" comes after it.
            wait_for(10, || echo.stderr(), || echo.stdout().contains("\ndone"));
            let (out, got) = (udp.stdout(), echo.stdout());
            let sent = ids(&out, "sent ");
            let echoed = ids(&out, "echoed ");
            let arrived = ids(&got, "got ");
            let lost_there: Vec<_> = sent.difference(&arrived).take(10).collect();
            let lost_back: Vec<_> = arrived.difference(&echoed).take(10).collect();
            println!(
                "{test}: {FLOWS} UDP flows, {} datagrams counted from 300 ms before SIGTERM: \
                 {} arrived at the IPv4 server, {} echoes at the IPv6 client; the old daemon \
                 stopped in {stop_ms} ms, the new one took over {took_ms} ms after SIGTERM",
                sent.len(),
                arrived.len(),
                echoed.len()
            );
            assert!(sent.len() > 500, "{} counted", sent.len());
            assert_eq!(
                out.lines().find(|l| l.starts_with("errors")),
                Some("errors 0")
            );
            assert!(
                lost_there.is_empty(),
                "lost on the way to IPv4: {lost_there:?}"
            );
            assert!(lost_back.is_empty(), "lost on the way back: {lost_back:?}");
            assert_eq!(arrived.len(), sent.len());
        },
    );

    // A stop with no start after it: the program alone carries an
    // established flow until the handover's end (2 s), then nothing.
    let flow_stop = dir.path().join("flow-stop");
    let _echo = udp_echo_on(&bed.server, UDP_PORT + 1);
    let flow = bed
        .client
        .spawn(
            "python3",
            [
                "-c",
                UDP_FLOW,
                SERVER6,
                &(UDP_PORT + 1).to_string(),
                &path(&flow_stop),
            ],
        )
        .unwrap();
    turn.run(
        || format!("{}\nflow: {}", gw.log(), flow.stderr()),
        || {
            let before = stat(&gw, "fastpath_nat64_installed");
            wait_for(10, || flow.stdout(), || replies(&flow.stdout()).len() >= 5);
            wait_for(
                10,
                || gw.log(),
                || stat(&gw, "fastpath_nat64_installed") > before,
            );
        },
    );
    let wall_term = wall();
    let stopped = gw.stop_leaving_tun().unwrap();
    common::line_with(&stopped.stderr, "fast path: handed over");
    std::thread::sleep(Duration::from_millis(3500));
    let echoes = replies(&flow.stdout());
    let during = echoes
        .iter()
        .filter(|&&t| t > wall_term + 0.5 && t < wall_term + 1.5)
        .count();
    let after = echoes.iter().filter(|&&t| t > wall_term + 2.5).count();
    println!(
        "{test}: no daemon: {during} echoes 0.5-1.5 s after SIGTERM (the program alone), {after} \
         after 2.5 s (the handover ended at 2 s)"
    );
    assert!(during >= 50, "the program alone carries the flow: {during}");
    assert_eq!(after, 0, "nothing after the handover's end");

    // A start without the key takes the program over, and its stop is clean.
    let no_handover = toml(0);
    let gw = start_routed(&bed.gw1, 1, &no_handover, &routes);
    turn.run(
        || gw.log(),
        || {
            wait_for(
                10,
                || gw.log(),
                || gw.log().contains("fast path: took over"),
            );
            wait_for(
                10,
                || flow.stdout(),
                || replies(&flow.stdout()).iter().any(|&t| t > wall_term + 3.5),
            );
        },
    );
    std::fs::write(&flow_stop, b"").unwrap();
    let stopped = stop_cleanly(test, "gw1", gw);
    assert!(
        !stopped.stderr.contains("handed over"),
        "{}",
        stopped.stderr
    );
    let left: Vec<_> = std::fs::read_dir(&pins)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "pins left: {left:?}");
    drop(bed);
    turn.finish();
}
