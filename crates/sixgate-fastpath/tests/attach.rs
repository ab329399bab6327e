//! Attaching and detaching the TC fast path (docs/fastpath.md): in a
//! throw-away network namespace of this thread, the program appears on the
//! interface's tcx ingress after `attach` and is gone after `detach_all`,
//! and a second attachment point (the other interface) works the same way.

use aya::programs::SchedClassifier;
use aya::programs::tc::TcAttachType;
use sixgate_core::Config;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_fastpath::FastPath;

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
