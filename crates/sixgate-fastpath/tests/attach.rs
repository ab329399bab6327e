//! Attaching and detaching the TC fast path (docs/fastpath.md): in a
//! throw-away network namespace of this thread, the program appears on the
//! interface's tcx ingress after `attach` and is gone after `detach_all`,
//! and a second attachment point (the other interface) works the same way;
//! the XDP program attaches in native mode (veth has it) and nowhere else (a
//! bridge has only generic XDP: refused, for the TUN plane's fallback to TC).

use aya::programs::SchedClassifier;
use aya::programs::tc::TcAttachType;
use sixgate_core::Config;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_fastpath::{FastPath, Hook};

/// The two tests one at a time: a child one forks (`ip`) holds a copy of
/// the other's descriptors until it execs, so a link the other just closed
/// may still be attached when it counts (1 run in 8 failed so).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// In a new network namespace of this thread only: a veth pair.
fn private_namespace() -> Result<(), String> {
    // SAFETY: unshare affects only the calling thread's network namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "no network namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    let ok = std::process::Command::new("ip")
        .args(["link", "add", "fp6", "type", "veth", "peer", "name", "fp4"])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(()).ok_or("cannot add a veth pair".into())
}

fn programs_on(iface: &str) -> usize {
    SchedClassifier::query_tcx(iface, TcAttachType::Ingress).map_or(0, |(_, p)| p.len())
}

#[test]
fn attach_and_detach_leave_nothing_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    std::thread::spawn(run).join().expect("test thread");
}

fn run() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: attach_and_detach_leave_nothing_behind: not root");
        return;
    }
    if let Err(why) = private_namespace() {
        println!("skipped: attach_and_detach_leave_nothing_behind: {why}");
        return;
    }
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
    let mut fp = match FastPath::load(&Config::with_pool6(Some(pool6)), 0) {
        Ok(fp) => fp,
        Err(e) if e.contains("not built") => {
            println!("skipped: attach_and_detach_leave_nothing_behind: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    if SchedClassifier::query_tcx("fp6", TcAttachType::Ingress).is_err() {
        println!("skipped: attach_and_detach_leave_nothing_behind: no tcx (Linux < 6.6)");
        return;
    }
    assert_eq!(programs_on("fp6"), 0);
    fp.attach("fp6").unwrap();
    fp.attach("fp4").unwrap();
    assert_eq!(fp.interfaces().collect::<Vec<_>>(), ["fp6", "fp4"]);
    assert_eq!((programs_on("fp6"), programs_on("fp4")), (1, 1));
    assert!(fp.attach("no-such-if").is_err());
    // Not Ethernet: the program would misread its packets.
    let e = fp.attach("lo").unwrap_err();
    assert!(e.contains("not an Ethernet interface"), "{e}");
    fp.detach_all();
    assert_eq!((programs_on("fp6"), programs_on("fp4")), (0, 0));
    // Dropped while attached: detached too.
    fp.attach("fp6").unwrap();
    drop(fp);
    assert_eq!(programs_on("fp6"), 0);
}

/// `ip -d link show IFACE`: what the kernel says is attached.
fn link(iface: &str) -> String {
    let out = std::process::Command::new("ip")
        .args(["-d", "link", "show", iface])
        .output()
        .expect("ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn xdp_attaches_in_native_mode_only_and_detaches() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    std::thread::spawn(run_xdp).join().expect("test thread");
}

fn run_xdp() {
    let test = "xdp_attaches_in_native_mode_only_and_detaches";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: {test}: not root");
        return;
    }
    if let Err(why) = private_namespace() {
        println!("skipped: {test}: {why}");
        return;
    }
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
    let cfg = Config::with_pool6(Some(pool6));
    let mut fp = match FastPath::load_on(Hook::Xdp, &cfg, 0) {
        Ok(fp) => fp,
        Err(e) if e.contains("not built") => {
            println!("skipped: {test}: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(fp.hook(), Hook::Xdp);
    fp.attach("fp6").unwrap();
    fp.attach("fp4").unwrap();
    for i in ["fp6", "fp4"] {
        let l = link(i);
        // Native: "xdp" (generic would say "xdpgeneric").
        assert!(l.contains("prog/xdp") && !l.contains("xdpgeneric"), "{l}");
    }
    let e = fp.attach("lo").unwrap_err();
    assert!(e.contains("not an Ethernet interface"), "{e}");
    let bridge = std::process::Command::new("ip")
        .args(["link", "add", "fpbr", "type", "bridge"])
        .status()
        .is_ok_and(|s| s.success());
    if bridge {
        let e = fp.attach("fpbr").unwrap_err();
        assert!(e.contains("native (driver) mode"), "{e}");
        assert!(!link("fpbr").contains("prog/xdp"));
    } else {
        println!("{test}: no bridge devices here; the refusal is not checked");
    }
    fp.detach_all();
    assert!(!link("fp6").contains("prog/xdp") && !link("fp4").contains("prog/xdp"));
    fp.attach("fp6").unwrap();
    drop(fp);
    assert!(!link("fp6").contains("prog/xdp"), "{}", link("fp6"));
}
