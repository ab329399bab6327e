//! The crew's side of a restart (docs/restart.md), without a data plane:
//! two workers' tables saved, written, read back into two new workers (each
//! record to its owner); a refused file leaves the tables empty and is set
//! aside.

use super::*;
use sixgate_core::Config;
use sixgate_core::nat64::steering::subscriber_worker;
use sixgate_core::nat64::tcp::TcpState;
use sixgate_core::nat64::{Nat64Config, Pool4Entry, Proto, ReplicaOp};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

const NOW: u64 = 1_000_000_000;

fn config(udp_timeout: u32) -> Arc<Config> {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
    let mut cfg = Config::with_pool6(Some(pool6));
    let mut n = Nat64Config {
        pool4: vec![Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 1))],
        max_sessions: 4096,
        ..Nat64Config::default()
    };
    n.timeouts.udp = udp_timeout;
    cfg.nat64 = Some(n);
    Arc::new(cfg)
}

fn workers(cfg: &Arc<Config>) -> Vec<Translator> {
    (0..2)
        .map(|w| Translator::for_worker(cfg.clone(), w, 2))
        .collect()
}

/// Session `i`, on the pool4 port its subscriber's worker owns.
fn session(i: u16) -> (usize, Replica) {
    let v6 = Ipv6Addr::new(0x2001, 0xdb8, i, 0, 0, 0, 0, 1);
    let w = subscriber_worker(u128::from(v6), 64, 2);
    let tcp = i.is_multiple_of(2);
    let r = Replica {
        proto: if tcp { Proto::Tcp } else { Proto::Udp },
        tcp_state: tcp.then_some(TcpState::Established),
        remaining_ms: 100_000,
        v6,
        port6: 40_000 + i,
        v4: Ipv4Addr::new(192, 0, 2, 1),
        port4: 62_000 + 4 * i + 2 * w,
        remote4: Ipv4Addr::new(198, 51, 100, 7),
        rport: 443,
    };
    (usize::from(w), r)
}

fn sessions_of(t: &Translator) -> Vec<Replica> {
    let mut v = Vec::new();
    t.walk_sessions(0, u32::MAX, NOW, |s| {
        v.push(sixgate_sync::tables::from_view(&s))
    });
    v.sort_by_key(|r| r.port4);
    v
}

fn scratch_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sixgate-restart-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("nat64.state")
}

/// A run that starts (no file), gets `n` sessions and stops: the file.
fn a_run_that_stops(path: &Path, n: u16) -> Vec<Vec<Replica>> {
    let cfg = config(300);
    let mut ts = workers(&cfg);
    let mut r = Restart::new(path.to_owned(), 2, None);
    for (i, t) in ts.iter_mut().enumerate() {
        r.restore(i, t, NOW);
    }
    assert!(matches!(r.outcome, Outcome::Absent));
    for i in 0..n {
        let (w, s) = session(i);
        ts[w]
            .import_replica(ReplicaOp::Upsert, &s, NOW)
            .expect("imported");
    }
    for (i, t) in ts.iter().enumerate() {
        r.save_slot(i).save(t, NOW);
    }
    r.write();
    ts.iter().map(sessions_of).collect()
}

#[test]
fn two_workers_tables_come_back_to_their_owners() {
    let path = scratch_file("round-trip");
    let before = a_run_that_stops(&path, 40);
    assert_eq!(before.iter().map(Vec::len).sum::<usize>(), 40);
    assert!(
        before.iter().all(|w| !w.is_empty()),
        "both workers have some"
    );
    // Written whole, mode 0600, no temporary file left (the lock stays).
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 40 + 40 * 56 + 32);
    let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".nat64.state.lock", "nat64.state"]);

    let cfg = config(300);
    let mut ts = workers(&cfg);
    let mut r = Restart::new(path.clone(), 2, None);
    for (i, t) in ts.iter_mut().enumerate() {
        r.restore(i, t, NOW);
    }
    assert!(matches!(r.outcome, Outcome::Read { total: 40, .. }));
    assert_eq!(r.imported, 40);
    assert_eq!(r.refused, [0; 5]);
    for (w, t) in ts.iter().enumerate() {
        let after = sessions_of(t);
        assert_eq!(after.len(), before[w].len(), "worker {w}");
        for (a, b) in after.iter().zip(&before[w]) {
            // Less the time between writing and reading (real time).
            assert!(a.remaining_ms <= b.remaining_ms && a.remaining_ms + 10_000 > b.remaining_ms);
            let strip = |r: &Replica| Replica {
                remaining_ms: 0,
                ..*r
            };
            assert_eq!(strip(a), strip(b));
        }
    }
    // Consumed: a start after a crash does not take it again.
    assert!(!path.exists());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

fn restore_fresh(path: &Path, cfg: &Arc<Config>) -> (Restart, Vec<Translator>) {
    let mut ts = workers(cfg);
    let mut r = Restart::new(path.to_owned(), 2, None);
    for (i, t) in ts.iter_mut().enumerate() {
        r.restore(i, t, NOW);
    }
    (r, ts)
}

fn refused_why(r: &Restart) -> String {
    match &r.outcome {
        Outcome::Refused(why, _) => why.clone(),
        _ => panic!("not refused"),
    }
}

#[test]
fn a_damaged_or_foreign_file_leaves_the_tables_empty_and_is_set_aside() {
    let path = scratch_file("refused");
    let refused = |damage: &dyn Fn(&Path), cfg: Arc<Config>| {
        a_run_that_stops(&path, 10);
        damage(&path);
        let (r, ts) = restore_fresh(&path, &cfg);
        assert!(ts.iter().all(|t| sessions_of(t).is_empty()));
        assert_eq!(r.imported, 0);
        assert!(!path.exists());
        let mut aside = path.clone().into_os_string();
        aside.push(".refused");
        assert!(Path::new(&aside).exists());
        refused_why(&r)
    };
    let flip = |p: &Path| {
        let mut b = std::fs::read(p).unwrap();
        b[100] ^= 4;
        std::fs::write(p, b).unwrap();
    };
    assert_eq!(
        refused(&flip, config(300)),
        "checksum mismatch: the file is damaged"
    );
    let cut = |p: &Path| {
        let b = std::fs::read(p).unwrap();
        std::fs::write(p, &b[..b.len() - 57]).unwrap();
    };
    assert!(refused(&cut, config(300)).starts_with("truncated"));
    let foreign = |p: &Path| std::fs::write(p, b"{\"sessions\": []}\n").unwrap();
    assert!(refused(&foreign, config(300)).contains("not a sixgate NAT64 state file"));
    let keep = |_: &Path| {};
    assert!(refused(&keep, config(600)).starts_with("written under another configuration"));
    // More bytes than tables of 4096 sessions can fill: not even read.
    let huge = |p: &Path| {
        let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        f.set_len(1 << 30).unwrap();
    };
    let why = refused(&huge, config(300));
    assert!(
        why.contains("1073741824 bytes, more than a state file of these tables can be"),
        "{why}"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_worker_that_handed_nothing_over_means_no_file() {
    let path = scratch_file("partial");
    let cfg = config(300);
    let ts = workers(&cfg);
    let r = Restart::new(path.clone(), 2, None);
    r.save_slot(0).save(&ts[0], NOW);
    r.write();
    assert!(!path.exists());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// A session on a static BIB entry (a server behind the NAT64) comes back to
/// the worker that holds the entry, its IPv6 side's, even where its pool4
/// port would steer to the other worker.
#[test]
fn a_static_entrys_session_comes_back_to_the_worker_holding_the_entry() {
    use sixgate_core::nat64::StaticBib;
    use sixgate_core::nat64::steering::port_owner;
    // A server whose IPv6 side is worker 1's, on port 80 (worker 0's).
    let server = (0..100u16)
        .map(|i| Ipv6Addr::new(0x2001, 0xdb8, 0x80, i, 0, 0, 0, 80))
        .find(|a| subscriber_worker(u128::from(*a), 64, 2) == 1)
        .unwrap();
    assert_eq!(port_owner(80, 0, 2), 0);
    let mut cfg = (*config(300)).clone();
    cfg.nat64.as_mut().unwrap().static_bib = vec![StaticBib {
        proto: Proto::Tcp,
        v6: server,
        port6: 80,
        v4: Ipv4Addr::new(192, 0, 2, 1),
        port4: 80,
    }];
    let cfg = Arc::new(cfg);
    let path = scratch_file("static");
    let session = Replica {
        proto: Proto::Tcp,
        tcp_state: Some(TcpState::Established),
        remaining_ms: 100_000,
        v6: server,
        port6: 80,
        v4: Ipv4Addr::new(192, 0, 2, 1),
        port4: 80,
        remote4: Ipv4Addr::new(198, 51, 100, 9),
        rport: 50_000,
    };
    {
        let mut ts = workers(&cfg);
        ts[1]
            .import_replica(ReplicaOp::Upsert, &session, NOW)
            .expect("a session on the static entry, in its worker");
        let r = Restart::new(path.clone(), 2, None);
        for (i, t) in ts.iter().enumerate() {
            r.save_slot(i).save(t, NOW);
        }
        r.write();
    }
    let (r, ts) = restore_fresh(&path, &cfg);
    assert_eq!(r.imported, 1, "refused: {:?}", r.refused);
    assert_eq!(sessions_of(&ts[1]).len(), 1);
    assert!(sessions_of(&ts[0]).is_empty());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// Two daemons naming one state file: the second neither takes the first's
/// sessions nor overwrites its file (the first holds the lock).
#[test]
fn a_second_daemon_on_the_same_file_keeps_off_it() {
    let path = scratch_file("locked");
    let cfg = config(300);
    // The first daemon's start: it takes the lock and keeps it.
    let mut first_ts = workers(&cfg);
    let mut first = Restart::new(path.clone(), 2, None);
    for (i, t) in first_ts.iter_mut().enumerate() {
        first.restore(i, t, NOW);
    }
    assert!(matches!(first.outcome, Outcome::Absent));
    std::fs::write(&path, b"the first daemon's file").unwrap();
    let (second, ts) = restore_fresh(&path, &cfg);
    assert!(matches!(second.outcome, Outcome::Locked));
    assert!(ts.iter().all(|t| sessions_of(t).is_empty()));
    for (i, t) in ts.iter().enumerate() {
        second.save_slot(i).save(t, NOW);
    }
    second.write();
    assert_eq!(std::fs::read(&path).unwrap(), b"the first daemon's file");
    drop(first);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// A directory where the file should be (a mistaken `state_file`): refused,
/// and left where it is, never renamed.
#[test]
fn a_directory_at_the_path_is_refused_and_left_alone() {
    let path = scratch_file("dir");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("inside"), b"x").unwrap();
    let (r, ts) = restore_fresh(&path, &config(300));
    assert!(matches!(&r.outcome, Outcome::Refused(why, false) if why == "not a regular file"));
    assert!(ts.iter().all(|t| sessions_of(t).is_empty()));
    assert!(path.join("inside").exists());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// RFC 6888 REQ-8 across a restart: BIB entries whose sessions ended and
/// that wait out their port-reuse delay are written after the sessions and
/// come back to the worker that owns their port, still cooling (no session,
/// their port held).
#[test]
fn cooling_bib_entries_come_back_to_their_owners() {
    let path = scratch_file("cooling");
    let cfg = config(300);
    let mut ts = workers(&cfg);
    let mut r = Restart::new(path.clone(), 2, None);
    for (i, t) in ts.iter_mut().enumerate() {
        r.restore(i, t, NOW);
    }
    for i in 0..10 {
        let (w, s) = session(i);
        ts[w].import_replica(ReplicaOp::Upsert, &s, NOW).unwrap();
        // Half of them end: their BIB entries start cooling.
        if i % 2 == 1 {
            ts[w].import_replica(ReplicaOp::Delete, &s, NOW).unwrap();
        }
    }
    let bibs = |ts: &[Translator]| -> u64 {
        ts.iter()
            .map(|t| {
                let b = t.nat64_stats().bib;
                b.tcp + b.udp + b.icmp
            })
            .sum()
    };
    assert_eq!(bibs(&ts), 10);
    for (i, t) in ts.iter().enumerate() {
        r.save_slot(i).save(t, NOW);
    }
    r.write();
    drop(r); // its lock on the file, as the process's exit
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 40 + 10 * 56 + 32);

    let mut ts = workers(&cfg);
    let mut r = Restart::new(path.clone(), 2, None);
    for (i, t) in ts.iter_mut().enumerate() {
        r.restore(i, t, NOW);
    }
    match &r.outcome {
        Outcome::Read { total, cooling, .. } => assert_eq!((*total, *cooling), (5, 5)),
        _ => panic!("{}", refused_why(&r)),
    }
    assert_eq!((r.imported, r.cooled, r.cool_refused), (5, 5, 0));
    assert_eq!(bibs(&ts), 10, "the cooling entries hold their ports again");
    for t in &ts {
        let mut c = 0;
        t.walk_cooling_bib(NOW, |_| c += 1);
        assert_eq!(
            c,
            t.nat64_stats().bib.tcp + t.nat64_stats().bib.udp - sessions_of(t).len() as u64
        );
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
