//! The bed itself, without a translator: it routes what it should, and leaves
//! nothing behind. Skipped (with a printed reason) where namespaces cannot be made.

use std::time::Duration;

use sixgate_netns::{Netns, Topology, TopologyOptions, addr, check_host, list_namespaces};

fn host_ok(test: &str) -> bool {
    match check_host() {
        Ok(()) => true,
        Err(why) => {
            println!("skipped: {test}: {why}");
            false
        }
    }
}

fn ping(ns: &Netns, dest: &str) {
    ns.run_timeout("ping", ["-c1", "-W2", dest], Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn bed_routes_each_family_and_cleans_up() {
    if !host_ok("bed_routes_each_family_and_cleans_up") {
        return;
    }
    let bed = Topology::build(TopologyOptions {
        v4_link_mtu: Some(1280),
        v6_link_mtu: Some(1400),
        static_neighbours: true,
        ..TopologyOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = bed
        .namespaces()
        .iter()
        .map(|n| n.name().to_owned())
        .collect();
    let listed = list_namespaces().unwrap();
    assert!(names.iter().all(|n| listed.contains(n)), "{listed:?}");

    // Without a translator each family works up to the gateway, IPv4 across the
    // router.
    ping(&bed.v6host, &addr::GATEWAY_V6.to_string());
    ping(&bed.gateway, &addr::V4_HOST.to_string());
    ping(&bed.v4host, &addr::GATEWAY_V4.to_string());
    // The router sends the EAM range back to the gateway.
    let r = bed
        .router
        .route_get(&addr::V6_HOST_AS_V4.to_string())
        .unwrap();
    assert!(r.contains(&format!("via {}", addr::GATEWAY_V4)), "{r}");

    let mtu = |ns: &Netns, dev| ns.link(dev).unwrap().unwrap().mtu;
    assert_eq!(mtu(&bed.router, "eth1"), 1280);
    assert_eq!(
        mtu(&bed.v4host, "eth0"),
        1500,
        "only the router's side is lowered"
    );
    assert_eq!(mtu(&bed.gateway, "eth6"), 1400);
    assert_eq!(mtu(&bed.v6host, "eth0"), 1500);
    let neigh = bed.gateway.ip(["neigh", "show", "dev", "eth4"]).unwrap();
    assert!(neigh.contains("PERMANENT"), "{neigh}");

    drop(bed);
    let listed = list_namespaces().unwrap();
    assert!(names.iter().all(|n| !listed.contains(n)), "{listed:?}");
}

#[test]
fn dropping_a_namespace_ends_what_runs_inside() {
    if !host_ok("dropping_a_namespace_ends_what_runs_inside") {
        return;
    }
    let ns = Netns::new("t").unwrap();
    let sleeper = ns.spawn("sleep", ["300"]).unwrap();
    let pid = sleeper.pid();
    // `ip netns exec` enters the namespace, then execs `sleep` under the same pid.
    let t0 = std::time::Instant::now();
    while ns.pids() != [pid] {
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", ns.pids());
        std::thread::sleep(Duration::from_millis(5));
    }
    // Leak the handle, as a crashing test would: the namespace still ends it.
    std::mem::forget(sleeper);
    drop(ns);
    // Killed, and a zombie until reaped; reap it as the leaked Child cannot.
    let mut status = 0;
    let reaped = unsafe { libc::waitpid(pid as i32, &mut status, 0) };
    assert_eq!(reaped, pid as i32);
    assert!(libc::WIFSIGNALED(status));
}

#[test]
fn background_output_and_stop() {
    if !host_ok("background_output_and_stop") {
        return;
    }
    let ns = Netns::new("t").unwrap();
    let p = ns
        .spawn(
            "sh",
            ["-c", "echo ready; echo oops >&2; trap 'echo bye; exit 0' TERM; while :; do sleep 0.01; done"],
        )
        .unwrap();
    let t0 = std::time::Instant::now();
    while !p.stdout().contains("ready") {
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(5));
    }
    let f = p.stop(Duration::from_secs(5));
    assert!(f.status.success() && !f.killed, "{f:?}");
    assert_eq!(f.stdout, "ready\nbye\n");
    assert_eq!(f.stderr, "oops\n");
}

#[test]
fn cleanup_stale_takes_dead_runs_only() {
    if !host_ok("cleanup_stale_takes_dead_runs_only") {
        return;
    }
    // A namespace named by a process that cannot exist (pid above pid_max).
    let dead = format!("sg-t-4294967294-{}", std::process::id());
    sixgate_netns::run_checked(
        std::process::Command::new("ip").args(["netns", "add", &dead]),
        Duration::from_secs(10),
    )
    .unwrap();
    let live = Netns::new("t").unwrap();
    let removed = sixgate_netns::cleanup_stale().unwrap();
    assert!(
        removed.contains(&format!("namespace {dead}")),
        "{removed:?}"
    );
    let listed = list_namespaces().unwrap();
    assert!(!listed.contains(&dead));
    assert!(listed.iter().any(|n| n == live.name()), "our own bed stays");
}
