//! Configuration changes are atomic per packet (docs/fastpath.md,
//! "Configuration changes"): while one thread runs packets through the
//! program with `BPF_PROG_TEST_RUN` and another swaps between two
//! configurations as fast as it can, every packet comes out as the core
//! translates it under one of the two, never a mixture, and none is passed
//! up because a change was under way.
//!
//! The two configurations translate each test packet differently in both
//! its EAM-mapped address (RFC 7757) and a header key of the config element
//! (RFC 7915 §4.1 Traffic Class, §5.1 Type of Service), so a packet that
//! read one configuration's element and the other's EAM entries would match
//! neither.

use std::net::Ipv6Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sixgate_core::addr::{Eam, Rfc6052Prefix};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_fastpath::FastPath;
use sixgate_testkit::{Ip4, Ip6};

const TC_ACT_OK: u32 = 0;
/// Configuration swaps the writer makes at least while the reader runs
/// packets, and runs the reader makes at least meanwhile. A swap takes an
/// RCU grace period (the kernel waits for one in every update of a map of
/// maps), milliseconds on a busy machine.
const SWAPS: usize = 300;
const RUNS: u64 = 20_000;

fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

/// Configuration A: 198.18.0.0/24 ↔ 2001:db8:1::/120, headers copied.
fn config_a() -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    let e = Eam::new(
        "198.18.0.0".parse().unwrap(),
        24,
        "2001:db8:1::".parse().unwrap(),
        120,
    );
    cfg.map.eam.insert(e.unwrap()).unwrap();
    cfg
}

/// Configuration B: the same IPv6 prefix now ↔ 198.19.0.0/24 (so
/// 198.18.0.5 falls back to pool6), Type of Service and Traffic Class
/// reset (RFC 7915 §5.1, §4.1).
fn config_b() -> Config {
    let mut cfg = Config::with_pool6(Some(pool6()));
    let e = Eam::new(
        "198.19.0.0".parse().unwrap(),
        24,
        "2001:db8:1::".parse().unwrap(),
        120,
    );
    cfg.map.eam.insert(e.unwrap()).unwrap();
    cfg.reset_tos = true;
    cfg.new_tos = 0x20;
    cfg.reset_traffic_class = true;
    cfg
}

/// 4→6 UDP to 198.18.0.5 (A: EAM, B: pool6), TOS 0xb8; 6→4 TCP of 1400
/// bytes (DF=1 and ID 0, so no Identification counter is involved) from
/// 2001:db8:1::5 (A: 198.18.0.5, B: 198.19.0.5), Traffic Class 0xb8.
fn packets() -> [Vec<u8>; 2] {
    let h4 = "192.0.2.33".parse().unwrap();
    let v4 = Ip4::new(h4, "198.18.0.5".parse().unwrap())
        .tos(0xb8)
        .udp(5000, 53, 64);
    let src: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    let v6 = Ip6::new(src, pool6().embed(h4))
        .traffic_class(0xb8)
        .tcp(40000, 80, 1400);
    [v4, v6]
}

fn ether_frame(ip: &[u8]) -> Vec<u8> {
    let ethertype: u16 = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
    let mut frame = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(ip);
    frame
}

/// The frame the program must leave: the core's translation under `cfg`.
fn expected(cfg: Config, ip: &[u8]) -> Vec<u8> {
    let mut t = Translator::new(Arc::new(cfg));
    let mut buf = vec![0u8; HEADROOM + ip.len() + 64];
    buf[HEADROOM..HEADROOM + ip.len()].copy_from_slice(ip);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, ip.len());
    let v = t.translate(&mut pkt, &mut Scratch::new(), 0);
    assert_eq!(v, Verdict::Translated);
    ether_frame(pkt.data())
}

/// `BPF_PROG_TEST_RUN` on a program file descriptor: the return value and
/// the frame left. Raw, because the reader runs while the writer holds the
/// `FastPath` mutably; `union bpf_attr`'s `test` member, zero-padded.
fn test_run(prog: BorrowedFd<'_>, frame: &[u8], out: &mut [u8]) -> (u32, usize) {
    #[repr(C)]
    #[derive(Default)]
    struct TestAttr {
        prog_fd: u32,
        retval: u32,
        data_size_in: u32,
        data_size_out: u32,
        data_in: u64,
        data_out: u64,
        repeat: u32,
        duration: u32,
        rest: [u64; 6],
    }
    const BPF_PROG_TEST_RUN: libc::c_long = 10;
    let mut a = TestAttr {
        prog_fd: prog.as_raw_fd() as u32,
        data_size_in: frame.len() as u32,
        data_size_out: out.len() as u32,
        data_in: frame.as_ptr() as u64,
        data_out: out.as_mut_ptr() as u64,
        repeat: 1,
        ..TestAttr::default()
    };
    // SAFETY: the attribute points at `frame` and `out`, both live for the
    // call, with their true lengths.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_TEST_RUN,
            &mut a as *mut TestAttr,
            std::mem::size_of::<TestAttr>(),
        )
    };
    assert_eq!(
        r,
        0,
        "BPF_PROG_TEST_RUN: {}",
        std::io::Error::last_os_error()
    );
    (a.retval, a.data_size_out as usize)
}

#[test]
fn every_packet_runs_under_the_old_or_the_new_configuration() {
    let mut fp = match FastPath::load(&config_a(), 0) {
        Ok(fp) => fp,
        // SAFETY: geteuid has no preconditions.
        Err(e) if e.contains("not built") || unsafe { libc::geteuid() } != 0 => {
            println!("skipped: the fast path does not load here: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let frames = packets().map(|ip| ether_frame(&ip));
    let want: Vec<[Vec<u8>; 2]> = packets()
        .iter()
        .map(|ip| [expected(config_a(), ip), expected(config_b(), ip)])
        .collect();
    for w in &want {
        assert_ne!(w[0], w[1], "the two configurations must differ");
    }
    let prog = fp.program().fd().expect("loaded").try_clone().expect("dup");
    let done = AtomicBool::new(false);
    let started = Barrier::new(2);
    let runs_so_far = AtomicU64::new(0);
    let (a, b) = (config_a(), config_b());

    let seen = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut seen = [[0u64; 2]; 2];
            let mut out = vec![0u8; 2048];
            started.wait();
            while !done.load(Ordering::Relaxed) {
                for (i, frame) in frames.iter().enumerate() {
                    let (ret, n) = test_run(prog.as_fd(), frame, &mut out);
                    assert_eq!(ret, TC_ACT_OK, "packet {i}");
                    let got = &out[..n];
                    let which = want[i].iter().position(|w| w[..] == *got);
                    let Some(which) = which else {
                        panic!(
                            "packet {i}: neither configuration's translation: {got:02x?}, \
                             passed up: {}",
                            got == &frame[..]
                        );
                    };
                    seen[i][which] += 1;
                }
                runs_so_far.fetch_add(2, Ordering::Relaxed);
            }
            seen
        });
        started.wait();
        // Both at least so many times, whatever the scheduler does (the
        // machine may be busy), within a minute.
        let t0 = Instant::now();
        let mut n = 0;
        while (n < SWAPS || runs_so_far.load(Ordering::Relaxed) < RUNS)
            && t0.elapsed() < Duration::from_secs(60)
            && !reader.is_finished()
        {
            fp.reconfigure(if n % 2 == 0 { &b } else { &a })
                .expect("reconfigure");
            n += 1;
        }
        done.store(true, Ordering::Relaxed);
        (n, reader.join().expect("reader"))
    });
    let (swaps, seen) = seen;

    let runs: u64 = seen.iter().flatten().sum();
    println!("{swaps} swaps; runs by packet (under A, under B): {seen:?}");
    assert!(swaps >= SWAPS && runs >= RUNS, "{swaps} swaps, {runs} runs");
    for (i, s) in seen.iter().enumerate() {
        assert!(
            s[0] > 0 && s[1] > 0,
            "packet {i} did not see both configurations: {s:?}"
        );
    }
    let c = fp.counters().expect("counters");
    assert_eq!(c.received, runs);
    assert_eq!((c.passed, c.aborted), (0, 0), "{c:?}");
    assert_eq!(c.translated_6to4 + c.translated_4to6, runs);
}
