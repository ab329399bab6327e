//! The differential test of forwarding in the program (docs/fastpath.md,
//! "Forwarding"; bpf/forward.h), for either hook: included by
//! tests/forward.rs (TC) and tests/forward_xdp.rs (XDP), each naming its
//! `crate::HOOK`. In a network namespace of its own, with two
//! veth interfaces (the IPv6 and the IPv4 side, egress MTUs 1400 and 1300)
//! and a third veth standing for the slow path's TUN device, each frame
//! runs through the program with `BPF_PROG_TEST_RUN` as if received on the
//! side it belongs to, and through the Rust core. It requires:
//!
//! - translated ⇔ the core's candidate rule *and* the translated packet (a
//!   GSO packet: each segment) fits the egress MTU: the egress MTU is an
//!   environment fact the core does not know, set up here, and a packet over
//!   it goes up unchanged for the core to answer (RFC 7915 §4, §5: fragments,
//!   Packet Too Big / Fragmentation Needed);
//! - a translated packet is byte-identical to the core's translation after
//!   the Ethernet header, and leaves as the FIB says: `TC_ACT_REDIRECT` with
//!   the next hop's and the egress interface's MAC addresses (neighbour
//!   known), `TC_ACT_REDIRECT` with the MAC addresses untouched
//!   (`bpf_redirect_neigh`: neighbour unresolved, the kernel resolves it),
//!   or `TC_ACT_OK` when the FIB has no forwarding answer (no route, a
//!   blackhole): the kernel decides; with `redirect_only` (strict
//!   rp_filter) those go up untranslated instead;
//! - the counters stay exact: received = translated + passed + aborted, and
//!   translated = redirected + redirected_neigh + to_kernel;
//! - NAT64's installed sessions (bpf/nat64.h) forward the same way, by their
//!   translated addresses and ports (nat64_sessions_forward_by_the_fib);
//! - on XDP the same with XDP_REDIRECT and XDP_PASS, except what XDP cannot
//!   do: an unresolved neighbour (no `bpf_redirect_neigh`) goes up
//!   untranslated, XDP_PASS with the frame unchanged, and GSO (XDP sees wire
//!   frames) is not run.
//!
//! `BPF_PROG_TEST_RUN` runs the program but not the redirect, which the e2e
//! test (crates/sixgate/tests/fastpath.rs) covers. Needs root; skips
//! otherwise.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aya::programs::TestRunOptions;
use sixgate_core::addr::{Eam, Rfc6052Prefix};
use sixgate_core::fastpath::is_fast_path_candidate;
use sixgate_core::fastpath::nat64::program_id_key;
use sixgate_core::nat64::{Nat64Config, Pool4Entry};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_fastpath::{Counters, FastPath, Hook, Offload};
use sixgate_testkit::{Ip4, Ip6};

/// The hook's verdicts: passed up (or to the kernel translated), and
/// redirected (TC_ACT_OK / TC_ACT_REDIRECT, XDP_PASS / XDP_REDIRECT).
const PASS: u32 = match crate::HOOK {
    Hook::Tc => 0,
    Hook::Xdp => 2,
};
const REDIRECT: u32 = match crate::HOOK {
    Hook::Tc => 7,
    Hook::Xdp => 4,
};

/// The frame's own MAC addresses (destination, source), as received.
const FRAME_MACS: [u8; 12] = [2, 0, 0, 0, 0, 0xa, 2, 0, 0, 0, 0, 0xb];
const V6_MAC: [u8; 6] = [2, 0, 0, 0, 6, 1];
const V4_MAC: [u8; 6] = [2, 0, 0, 0, 4, 1];
/// The IPv6 host (EAM ↔ 198.51.100.5), the IPv4 host (pool6), the IPv4 side's
/// router (for 203.0.113.0/24), and their MAC addresses.
const H6: &str = "2001:db8:6::5";
const H6_MAC: [u8; 6] = [2, 0, 0, 0, 6, 5];
const H6_AS_V4: [u8; 4] = [198, 51, 100, 5];
const H4: [u8; 4] = [192, 0, 2, 33];
const H4_MAC: [u8; 6] = [2, 0, 0, 0, 4, 0x33];
const ROUTER4: &str = "192.0.2.254";
const ROUTER4_MAC: [u8; 6] = [2, 0, 0, 0, 4, 0xfe];
const BEHIND_ROUTER: [u8; 4] = [203, 0, 113, 9];
const V6_MTU: usize = 1400;
const V4_MTU: usize = 1300;

fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

fn h6() -> Ipv6Addr {
    H6.parse().unwrap()
}

fn as_v6(v4: [u8; 4]) -> Ipv6Addr {
    pool6().embed(Ipv4Addr::from(v4))
}

/// Run `cmd` (ip, sysctl) in this thread's network namespace; panic on failure.
fn sh(cmd: &str) {
    let mut w = cmd.split_whitespace();
    let out = Command::new(w.next().unwrap())
        .args(w)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mac(m: [u8; 6]) -> String {
    m.map(|b| format!("{b:02x}")).join(":")
}

fn ifindex(name: &str) -> u32 {
    let c = std::ffi::CString::new(name).unwrap();
    // SAFETY: a NUL-terminated string that outlives the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    assert_ne!(i, 0, "no interface {name}");
    i
}

/// This thread into a new network namespace (children it starts follow it),
/// with the bed described at the top. False where it cannot (not root).
fn enter_bed() -> bool {
    // SAFETY: geteuid has no preconditions; unshare affects this thread only.
    if unsafe { libc::geteuid() } != 0 || unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        println!("skipped: needs root and a network namespace of its own");
        return false;
    }
    for cmd in [
        "ip link set lo up",
        "ip link add v6 type veth peer name v6p",
        "ip link add v4 type veth peer name v4p",
        // (A veth: this kernel may have no dummy devices.)
        "ip link add slow type veth peer name slowp",
        &format!("ip link set v6 address {} mtu {V6_MTU} up", mac(V6_MAC)),
        &format!("ip link set v4 address {} mtu {V4_MTU} up", mac(V4_MAC)),
        "ip link set v6p up",
        "ip link set v4p up",
        "ip link set slow up",
        "ip link set slowp up",
        "sysctl -qw net.ipv4.ip_forward=1",
        "sysctl -qw net.ipv6.conf.all.forwarding=1",
        "ip -6 addr add 2001:db8:6::1/64 dev v6 nodad",
        "ip addr add 192.0.2.1/24 dev v4",
        // What the slow path's device receives: pool6, and the IPv6 hosts'
        // IPv4 addresses.
        "ip -6 route add 2001:db8:64::/96 dev slow",
        "ip route add 198.51.100.0/24 dev slow",
        &format!("ip route add 203.0.113.0/24 via {ROUTER4}"),
        "ip route add blackhole 198.18.0.0/24",
        &format!(
            "ip -6 neigh replace {H6} lladdr {} dev v6 nud permanent",
            mac(H6_MAC)
        ),
        &format!(
            "ip neigh replace {} lladdr {} dev v4 nud permanent",
            Ipv4Addr::from(H4),
            mac(H4_MAC)
        ),
        &format!(
            "ip neigh replace {ROUTER4} lladdr {} dev v4 nud permanent",
            mac(ROUTER4_MAC)
        ),
    ] {
        sh(cmd);
    }
    true
}

/// How the program must leave a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    /// Translated, redirected with these MAC addresses (destination, source).
    Redirect([u8; 6], [u8; 6]),
    /// Translated, `bpf_redirect_neigh`: the MAC addresses untouched. On
    /// XDP: not translated, up unchanged (the kernel resolves the neighbour
    /// for the slow path's translation).
    RedirectNeigh,
    /// Translated, `TC_ACT_OK`: the kernel routes it.
    Kernel,
    /// Not translated: up unchanged.
    Passed,
}

struct Bed {
    cfg: Arc<Config>,
    fp: FastPath,
    twin: Translator,
    scratch: Scratch,
    last: Counters,
}

impl Bed {
    fn core(&mut self, ip: &[u8]) -> (Verdict, Vec<u8>) {
        let mut buf = vec![0u8; HEADROOM + ip.len() + 64];
        buf[HEADROOM..HEADROOM + ip.len()].copy_from_slice(ip);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, ip.len());
        let v = self.twin.translate(&mut pkt, &mut self.scratch, 0);
        (v, pkt.data().to_vec())
    }

    /// One `BPF_PROG_TEST_RUN` of `ip` as a frame received on `iface` (a
    /// GSO packet of `gso_size` when not 0): the return value, the frame
    /// that came out and the frame that went in.
    fn run_frame(
        &self,
        what: &str,
        iface: &str,
        ip: &[u8],
        gso_size: u32,
    ) -> (u32, Vec<u8>, Vec<u8>) {
        let ethertype: u16 = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
        let mut frame = FRAME_MACS.to_vec();
        frame.extend_from_slice(&ethertype.to_be_bytes());
        frame.extend_from_slice(ip);
        let i = ifindex(iface).to_ne_bytes();
        let ctx = match crate::HOOK {
            Hook::Tc => {
                // struct __sk_buff: ingress_ifindex at 36, ifindex at 40,
                // gso_segs at 164, gso_size at 176 (the fields a test run
                // may set).
                let mut ctx = vec![0u8; 192];
                ctx[36..40].copy_from_slice(&i);
                ctx[40..44].copy_from_slice(&i);
                if gso_size != 0 {
                    let segs = (ip.len() as u32).div_ceil(gso_size);
                    ctx[164..168].copy_from_slice(&segs.to_ne_bytes());
                    ctx[176..180].copy_from_slice(&gso_size.to_ne_bytes());
                }
                ctx
            }
            Hook::Xdp => {
                // struct xdp_md: data 0, data_end the frame's length (the
                // kernel requires it), ingress_ifindex at 12.
                let mut ctx = vec![0u8; 24];
                ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
                ctx[12..16].copy_from_slice(&i);
                ctx
            }
        };
        let mut out = vec![0u8; frame.len() + 64];
        let r = self
            .fp
            .test_run(TestRunOptions {
                data_in: Some(&frame),
                data_out: Some(&mut out),
                ctx_in: Some(&ctx),
                ..TestRunOptions::default()
            })
            .unwrap_or_else(|e| panic!("{what}: BPF_PROG_TEST_RUN: {e}"));
        out.truncate(r.data_size_out as usize);
        (r.return_value, out, frame)
    }

    /// Run `ip` as received on `iface` (a GSO packet of `gso_size` when not
    /// 0) and check it leaves as `want`.
    fn check(&mut self, what: &str, iface: &str, ip: &[u8], gso_size: u32, want: Want) {
        if crate::HOOK == Hook::Xdp && gso_size != 0 {
            // XDP sees wire frames: there is no GSO packet to test.
            return;
        }
        let want = match (crate::HOOK, want) {
            (Hook::Xdp, Want::RedirectNeigh) => Want::Passed,
            (_, w) => w,
        };
        let (ret, out, frame) = self.run_frame(what, iface, ip, gso_size);

        let candidate = is_fast_path_candidate(&self.cfg, ip);
        if want == Want::Passed {
            assert_eq!(ret, PASS, "{what}: return value");
            assert_eq!(out, frame, "{what}: passed up changed");
        } else {
            // NAT64's candidates are its installed sessions
            // (nat64_differential.rs checks that rule).
            assert!(
                candidate || self.cfg.nat64.is_some(),
                "{what}: the test expects a candidate"
            );
            let (v, core) = self.core(ip);
            assert_eq!(v, Verdict::Translated, "{what}: the core's verdict");
            assert_eq!(
                out[14..],
                core[..],
                "{what}: program (left) and core (right) differ"
            );
            let want_type: u16 = if core[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
            assert_eq!(out[12..14], want_type.to_be_bytes(), "{what}: EtherType");
            let (want_ret, macs) = match want {
                Want::Redirect(d, s) => (REDIRECT, [d, s].concat()),
                Want::RedirectNeigh => (REDIRECT, FRAME_MACS.to_vec()),
                _ => (PASS, FRAME_MACS.to_vec()),
            };
            assert_eq!(ret, want_ret, "{what}: return value");
            assert_eq!(out[..12], macs[..], "{what}: MAC addresses");
        }

        let c = self.fp.counters().expect("counters");
        let d = |now: u64, then: u64| now - then;
        let l = self.last;
        assert_eq!(d(c.received, l.received), 1, "{what}: received");
        assert_eq!(c.aborted, 0, "{what}: aborted");
        let translated = d(
            c.translated_6to4 + c.translated_4to6,
            l.translated_6to4 + l.translated_4to6,
        );
        assert_eq!(
            translated,
            u64::from(want != Want::Passed),
            "{what}: translated"
        );
        let by = (
            d(c.redirected, l.redirected),
            d(c.redirected_neigh, l.redirected_neigh),
            d(c.to_kernel, l.to_kernel),
        );
        let want_by = match want {
            Want::Redirect(..) => (1, 0, 0),
            Want::RedirectNeigh => (0, 1, 0),
            Want::Kernel => (0, 0, 1),
            Want::Passed => (0, 0, 0),
        };
        assert_eq!(
            by, want_by,
            "{what}: redirected, redirected_neigh, to_kernel"
        );
        assert_eq!(
            c.received,
            c.translated_6to4 + c.translated_4to6 + c.passed + c.aborted,
            "{what}: received = translated + passed + aborted"
        );
        assert_eq!(
            c.translated_6to4 + c.translated_4to6,
            c.redirected + c.redirected_neigh + c.to_kernel,
            "{what}: translated = redirected + redirected_neigh + to_kernel"
        );
        self.last = c;
    }
}

/// `BPF_PROG_TEST_RUN` runs on the calling CPU: stay on one, so the
/// program's per-CPU IPv4 ID counters are one table, like the twin's.
fn pin_to_one_cpu() {
    // SAFETY: plain syscalls on this thread with a zeroed cpu_set_t.
    unsafe {
        let cpu = libc::sched_getcpu().max(0) as usize;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The SIIT bed: this thread in the namespace of [`enter_bed`], pool6 and
/// one EAM entry (the IPv6 host), the program loaded with the slow path's
/// device. `None` (said why) where it cannot be.
fn siit_bed() -> Option<Bed> {
    if !enter_bed() {
        return None;
    }
    pin_to_one_cpu();
    let mut cfg = Config::with_pool6(Some(pool6()));
    let eam = Eam::new(H6_AS_V4.into(), 32, h6(), 128).unwrap();
    cfg.map.eam.insert(eam).unwrap();
    let fp = match FastPath::load_on(crate::HOOK, &cfg, ifindex("slow")) {
        Ok(fp) => fp,
        Err(e) if e.contains("not built") => {
            println!("skipped: the fast path does not load here: {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let cfg = Arc::new(cfg);
    Some(Bed {
        twin: Translator::new(cfg.clone()),
        cfg,
        last: fp.counters().unwrap(),
        fp,
        scratch: Scratch::new(),
    })
}

fn run() {
    let Some(mut bed) = siit_bed() else {
        return;
    };
    let p6 = || Ip6::new(h6(), as_v6(H4));
    let p4 = || Ip4::new(H4.into(), H6_AS_V4.into());
    let to_h4 = Want::Redirect(H4_MAC, V4_MAC);
    let to_h6 = Want::Redirect(H6_MAC, V6_MAC);

    // RFC 7915 §5: IPv6 → IPv4, out of v4 (MTU 1300).
    bed.check("6to4 UDP", "v6", &p6().udp(1000, 53, 40), 0, to_h4);
    bed.check(
        "6to4 Echo Request",
        "v6",
        &p6().echo_request(7, 1, 56),
        0,
        to_h4,
    );
    // IPv6 1320 bytes: 1300 after translation, exactly the egress MTU.
    let fits = p6().tcp(40000, 80, 1320 - 60);
    assert_eq!(fits.len(), 1320);
    bed.check("6to4 TCP at the egress MTU", "v6", &fits, 0, to_h4);
    bed.check(
        "6to4 TCP one byte over the egress MTU: up for the core",
        "v6",
        &p6().tcp(40000, 80, 1321 - 60),
        0,
        Want::Passed,
    );
    let via_router = Ip6::new(h6(), as_v6(BEHIND_ROUTER)).udp(1, 2, 8);
    bed.check(
        "6to4 through a router: its MAC address",
        "v6",
        &via_router,
        0,
        Want::Redirect(ROUTER4_MAC, V4_MAC),
    );
    bed.check(
        "6to4 blackhole route: the kernel decides",
        "v6",
        &Ip6::new(h6(), as_v6([198, 18, 0, 9])).udp(1, 2, 8),
        0,
        Want::Kernel,
    );
    bed.check(
        "6to4 no route: the kernel decides",
        "v6",
        &Ip6::new(h6(), as_v6([8, 8, 8, 8])).udp(1, 2, 8),
        0,
        Want::Kernel,
    );

    // RFC 7915 §4: IPv4 → IPv6, out of v6 (MTU 1400).
    bed.check("4to6 UDP", "v4", &p4().udp(53, 1000, 40), 0, to_h6);
    bed.check(
        "4to6 Echo Request",
        "v4",
        &p4().echo_request(7, 1, 56),
        0,
        to_h6,
    );
    let fits = p4().tcp(80, 40000, 1380 - 40);
    assert_eq!(fits.len(), 1380);
    bed.check("4to6 TCP DF at the egress MTU", "v4", &fits, 0, to_h6);
    bed.check(
        "4to6 TCP DF one byte over the egress MTU: up for the core",
        "v4",
        &p4().tcp(80, 40000, 1381 - 40),
        0,
        Want::Passed,
    );

    // GSO: the MTU applies to each segment (headers + gso_size).
    let big = p4().tcp(80, 40000, 3000);
    bed.check("4to6 GSO, segments of 1400", "v4", &big, 1400 - 60, to_h6);
    bed.check(
        "4to6 GSO, segments of 1401: up for the core",
        "v4",
        &big,
        1401 - 60,
        Want::Passed,
    );
    // Two whole segments: a shorter last one would translate to 1260 bytes or
    // less, which RFC 7915 §5.1 gives DF=0 and the core must cut (below).
    let big = p6().tcp(40000, 80, 2 * (1300 - 40));
    bed.check("6to4 GSO, segments of 1300", "v6", &big, 1300 - 40, to_h4);
    bed.check(
        "rfc7915_s5_1: 6to4 GSO with a last segment of 520 bytes: up for the core (DF=0)",
        "v6",
        &p6().tcp(40000, 80, 3000),
        1300 - 40,
        Want::Passed,
    );
    bed.check(
        "rfc7915_s5_1: 6to4 GSO, segments of 1000: up for the core (DF=0)",
        "v6",
        &p6().tcp(40000, 80, 3000),
        1000,
        Want::Passed,
    );
    bed.check(
        "6to4 GSO, segments of 1301: up for the core",
        "v6",
        &big,
        1301 - 40,
        Want::Passed,
    );

    // The next hop's neighbour unresolved: bpf_redirect_neigh.
    sh(&format!("ip neigh del {} dev v4", Ipv4Addr::from(H4)));
    sh(&format!("ip neigh del {ROUTER4} dev v4"));
    sh(&format!("ip -6 neigh del {H6} dev v6"));
    bed.check(
        "6to4 neighbour unresolved",
        "v6",
        &p6().udp(1000, 53, 40),
        0,
        Want::RedirectNeigh,
    );
    bed.check(
        "6to4 router's neighbour unresolved",
        "v6",
        &via_router,
        0,
        Want::RedirectNeigh,
    );
    bed.check(
        "4to6 neighbour unresolved",
        "v4",
        &p4().udp(53, 1000, 40),
        0,
        Want::RedirectNeigh,
    );
    // Still not over the MTU with an unresolved neighbour.
    bed.check(
        "6to4 over the MTU, neighbour unresolved: up for the core",
        "v6",
        &p6().tcp(40000, 80, 1321 - 60),
        0,
        Want::Passed,
    );

    // redirect_only (strict rp_filter): what the FIB has no forwarding
    // answer for goes up untranslated; the rest as before.
    bed.fp.set_redirect_only(true).unwrap();
    bed.check(
        "redirect_only: 6to4 blackhole route, up for the core",
        "v6",
        &Ip6::new(h6(), as_v6([198, 18, 0, 9])).udp(1, 2, 8),
        0,
        Want::Passed,
    );
    bed.check(
        "redirect_only: 6to4 no route, up for the core",
        "v6",
        &Ip6::new(h6(), as_v6([8, 8, 8, 8])).udp(1, 2, 8),
        0,
        Want::Passed,
    );
    bed.check(
        "redirect_only: 4to6 neighbour unresolved, still redirected",
        "v4",
        &p4().udp(53, 1000, 40),
        0,
        Want::RedirectNeigh,
    );
    sh(&format!(
        "ip neigh replace {} lladdr {} dev v4 nud permanent",
        Ipv4Addr::from(H4),
        mac(H4_MAC)
    ));
    bed.check(
        "redirect_only: 6to4 neighbour known, still redirected",
        "v6",
        &p6().udp(1000, 53, 40),
        0,
        to_h4,
    );
    bed.fp.set_redirect_only(false).unwrap();
    bed.check(
        "redirect_only off again: 6to4 no route, the kernel decides",
        "v6",
        &Ip6::new(h6(), as_v6([8, 8, 8, 8])).udp(1, 2, 8),
        0,
        Want::Kernel,
    );
}

impl Bed {
    /// Whether the program translates `ip` (received on `iface`), without
    /// the checks of [`Bed::check`]; the counters move on.
    fn translates(&mut self, iface: &str, ip: &[u8]) -> bool {
        let (_, out, frame) = self.run_frame("a probe", iface, ip, 0);
        self.last = self.fp.counters().expect("counters");
        out != frame
    }

    /// After a change of the kernel's routing: the program answers `want`
    /// for `ip` within 3 s (the route watcher's new generation retires the
    /// route check's kept answers: at once for what rtnetlink announces,
    /// within a second for anything else). Returns how long it took.
    fn follows(&mut self, what: &str, iface: &str, ip: &[u8], want: bool) -> Duration {
        let t0 = Instant::now();
        while self.translates(iface, ip) != want {
            assert!(
                t0.elapsed() < Duration::from_secs(3),
                "{what}: the program still {} after 3 s",
                if want {
                    "passes it up"
                } else {
                    "translates it"
                }
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        t0.elapsed()
    }
}

/// The route check keeps its answers per flow (bpf/route_cache.h) and
/// follows the kernel's routing when it changes: a more specific route out
/// of the slow path's device, the destination becoming the host's own
/// address, the device's MTU; and back.
fn run_route_changes() {
    let Some(mut bed) = siit_bed() else {
        return;
    };
    assert_eq!(bed.fp.route_cache_off(), None, "the route watcher runs");
    let dst = as_v6(H4);
    let small = Ip6::new(h6(), dst).udp(1000, 53, 40);
    // 1300 bytes: fits the IPv4 side's 1300 once translated (1280).
    let big = Ip6::new(h6(), dst).udp(1000, 53, 1300 - 48);
    assert!(
        bed.translates("v6", &small),
        "the first packet asks the FIB"
    );
    assert!(bed.translates("v6", &big), "a bigger one too, then kept");
    let before = bed.fp.counters().unwrap();
    for _ in 0..100 {
        assert!(bed.translates("v6", &small), "a kept answer");
    }
    let after = bed.fp.counters().unwrap();
    let (kept, asked) = (
        after.route_kept - before.route_kept,
        after.route_asked - before.route_asked,
    );
    // The once-a-second new generation may fall in the loop: one more ask.
    assert_eq!(kept + asked, 100, "one route check a packet");
    assert!(asked <= 2, "the FIB asked {asked} times for one flow");

    let mut took = Vec::new();
    sh(&format!("ip -6 route add {dst}/128 dev v6"));
    took.push(bed.follows("a /128 out of v6", "v6", &small, false));
    sh(&format!("ip -6 route del {dst}/128 dev v6"));
    took.push(bed.follows("the /128 gone", "v6", &small, true));

    sh(&format!("ip -6 addr add {dst}/128 dev lo nodad"));
    took.push(bed.follows("the host's own address", "v6", &small, false));
    sh(&format!("ip -6 addr del {dst}/128 dev lo"));
    took.push(bed.follows("no longer the host's", "v6", &small, true));

    assert!(
        bed.translates("v6", &big),
        "1300 bytes into a 1500-byte device"
    );
    sh("ip link set slow mtu 1280");
    took.push(bed.follows("the device's MTU 1280 < 1300", "v6", &big, false));
    assert!(bed.translates("v6", &small), "a small one still fits");
    sh("ip link set slow mtu 1500");
    took.push(bed.follows("the device's MTU back", "v6", &big, true));
    // A generation the watcher stopped renewing ages out (bpf/route_cache.h):
    // one from long ago in every route_gen map (ours, and any other test's
    // beside it, whose watchers renew theirs within a second), then the next
    // packet asks the FIB.
    assert!(bed.translates("v6", &small), "kept again");
    let before = bed.fp.counters().unwrap();
    age_route_generations();
    assert!(bed.translates("v6", &small), "translated, the FIB asked");
    let after = bed.fp.counters().unwrap();
    assert_eq!(
        (
            after.route_kept - before.route_kept,
            after.route_asked - before.route_asked
        ),
        (0, 1),
        "an aged generation keeps no answers"
    );
    println!("route changes followed after {took:?}");
    // rtnetlink's messages, not the once-a-second new generation: each
    // within half a second (six in a row by the timer alone: 1.6 %).
    let slowest = took.iter().max().unwrap();
    assert!(
        *slowest < Duration::from_millis(500),
        "a change took {slowest:?} to follow"
    );
}

/// Generation 1 (CLOCK_MONOTONIC's first nanosecond, long past) into every
/// loaded route_gen map.
fn age_route_generations() {
    use aya::maps::{Array, Map, MapData};
    let mut n = 0;
    for info in aya::maps::loaded_maps().flatten() {
        if info.name_as_str() != Some("route_gen") {
            continue;
        }
        let data = MapData::from_id(info.id()).expect("route_gen by id");
        let mut a: Array<MapData, u64> = Array::try_from(Map::Array(data)).unwrap();
        a.set(0, 1, 0).unwrap();
        n += 1;
    }
    assert!(n > 0, "no route_gen map loaded");
}

#[test]
fn the_route_check_follows_route_changes() {
    std::thread::spawn(run_route_changes).join().unwrap();
}

#[test]
fn forwarding_follows_the_fib_and_the_egress_mtu() {
    // A thread of its own: the network namespace goes with it.
    std::thread::spawn(run).join().unwrap();
}

/// Mode nat64's pool4 address: routed into the slow path's device.
const POOL4: [u8; 4] = [198, 51, 100, 1];

/// NAT64 (RFC 6146 §3.5 with RFC 7915's header rules, bpf/nat64.h): an
/// installed UDP session's packets leave as the stateless ones do, by the
/// FIB of their translated header (the BIB's pool4 address and port 6→4,
/// the IPv6 host's 4→6), redirected to the next hop, and one whose
/// translation would not fit the egress MTU goes up unchanged for the core.
fn run_nat64() {
    if !enter_bed() {
        return;
    }
    pin_to_one_cpu();
    let mut cfg = Config::with_pool6(Some(pool6()));
    cfg.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry::single(POOL4.into())],
        max_sessions: 64,
        ..Nat64Config::default()
    });
    let fp = match FastPath::load_sized_on(crate::HOOK, &cfg, ifindex("slow"), 64) {
        Ok(fp) => fp,
        Err(e) if e.contains("not built") => {
            println!("skipped: the fast path does not load here: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    // The twin holds the session (imported) and counts IPv4 IDs with the
    // program's key, as in nat64_differential.rs.
    let mut twin_cfg = cfg.clone();
    twin_cfg.ipv4_id_key = program_id_key(cfg.ipv4_id_key);
    let cfg = Arc::new(cfg);
    let mut offload = Offload::new(fp.nat64_maps().expect("nat64 maps"), cfg.clone(), 64);
    let mut authority = Translator::new(cfg.clone());
    authority.enable_replica_export(64);
    let mut bed = Bed {
        twin: Translator::new(Arc::new(twin_cfg)),
        cfg,
        last: fp.counters().unwrap(),
        fp,
        scratch: Scratch::new(),
    };
    // The session's first three packets take the slow path (the
    // authority), whose third settles it and so installs it, as a worker
    // does.
    let p6 = |len| Ip6::new(h6(), as_v6(H4)).udp(5000, 53, len);
    let mut buf = vec![0u8; HEADROOM + 200];
    let first = p6(40);
    for _ in 0..3 {
        buf[HEADROOM..HEADROOM + first.len()].copy_from_slice(&first);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, first.len());
        assert_eq!(
            authority.translate(&mut pkt, &mut Scratch::new(), 0),
            Verdict::Translated
        );
    }
    let mut port4 = None;
    authority.drain_replica_changes(|op, r| {
        offload.change(op, r);
        bed.twin.import_replica(op, r, 0).expect("twin import");
        port4 = Some(r.port4);
    });
    offload.flush();
    assert_eq!(offload.len(), 1, "the UDP session installed");
    let p4 = |len| Ip4::new(H4.into(), POOL4.into()).udp(53, port4.unwrap(), len);
    let to_h4 = Want::Redirect(H4_MAC, V4_MAC);
    let to_h6 = Want::Redirect(H6_MAC, V6_MAC);

    bed.check("NAT64 6to4 UDP", "v6", &p6(40), 0, to_h4);
    // IPv6 1320 bytes: 1300 after translation, exactly the egress MTU.
    bed.check(
        "NAT64 6to4 at the egress MTU",
        "v6",
        &p6(1320 - 48),
        0,
        to_h4,
    );
    bed.check(
        "NAT64 6to4 one byte over the egress MTU: up for the core",
        "v6",
        &p6(1321 - 48),
        0,
        Want::Passed,
    );
    bed.check("NAT64 4to6 UDP", "v4", &p4(40), 0, to_h6);
    bed.check(
        "NAT64 4to6 DF at the egress MTU",
        "v4",
        &p4(1380 - 28),
        0,
        to_h6,
    );
    bed.check(
        "NAT64 4to6 DF one byte over the egress MTU: up for the core",
        "v4",
        &p4(1381 - 28),
        0,
        Want::Passed,
    );
    sh(&format!("ip -6 neigh del {H6} dev v6"));
    bed.check(
        "NAT64 4to6 neighbour unresolved",
        "v4",
        &p4(40),
        0,
        Want::RedirectNeigh,
    );
}

#[test]
fn nat64_sessions_forward_by_the_fib() {
    std::thread::spawn(run_nat64).join().unwrap();
}
