//! `sixgate run` end to end: the real binary in a network namespace of its own,
//! translating through its TUN device.
//!
//! Each test makes a namespace `sg-tun-test-<pid>-<n>` with two addresses on its
//! loopback: 2001:db8:1::5 (an IPv6 host, EAM'd to 198.18.0.5) and 203.0.113.1
//! (an IPv4 host, 2001:db8:64::cb00:7101 through pool6). Traffic between them
//! leaves through the routes sixgate installs, crosses the translator twice
//! (request and answer) and is delivered locally. The namespace, and with it
//! everything inside, is removed when the test ends, pass or fail.
//!
//! The tests need root, /dev/net/tun and `ip netns`; without them they print why
//! and pass without checking anything.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

const HOST6: &str = "2001:db8:1::5";
const HOST4: &str = "203.0.113.1";
/// HOST4 as the IPv6 host sees it (pool6).
const HOST4_VIA6: &str = "2001:db8:64::cb00:7101";
/// HOST6 as the IPv4 host sees it (EAM).
const HOST6_VIA4: &str = "198.18.0.5";

const CONFIG: &str = r#"[translator]
mode = "siit"
pool6 = "2001:db8:64::/96"
eam = [ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]
"#;

/// Why these tests cannot run here, if they cannot.
fn unsupported() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        _ => Some("`ip netns` does not work".into()),
    }
}

macro_rules! require_root_netns {
    () => {
        if let Some(why) = unsupported() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn sh(args: &[&str]) -> Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"))
}

#[track_caller]
fn sh_ok(args: &[&str]) -> String {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A network namespace with the two hosts on its loopback, and a config file;
/// removed (with any sixgate still running in it) on drop.
struct Netns {
    name: String,
    dir: PathBuf,
}

impl Netns {
    fn new() -> Netns {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "sg-tun-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let _ = sh(&["ip", "netns", "del", &name]);
        sh_ok(&["ip", "netns", "add", &name]);
        let dir = std::env::temp_dir().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let ns = Netns { name, dir };
        ns.ip(&["link", "set", "lo", "up"]);
        ns.ip(&["addr", "add", &format!("{HOST6}/128"), "dev", "lo", "nodad"]);
        ns.ip(&["addr", "add", &format!("{HOST4}/32"), "dev", "lo"]);
        ns
    }

    /// `ip -n NAME ARGS`, which must succeed.
    #[track_caller]
    fn ip(&self, args: &[&str]) -> String {
        let mut a = vec!["ip", "-n", &self.name];
        a.extend_from_slice(args);
        sh_ok(&a)
    }

    /// `ip -n NAME ARGS`, whatever the outcome.
    fn ip_try(&self, args: &[&str]) -> Output {
        let mut a = vec!["ip", "-n", &self.name];
        a.extend_from_slice(args);
        sh(&a)
    }

    fn link_exists(&self, dev: &str) -> bool {
        self.ip_try(&["link", "show", dev]).status.success()
    }

    fn route(&self, v6: bool, prefix: &str) -> String {
        let fam = if v6 { "-6" } else { "-4" };
        let o = self.ip_try(&[fam, "route", "show", "exact", prefix]);
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    /// Write a config file (CONFIG plus `extra`) and return its path.
    fn config(&self, extra: &str) -> String {
        self.config_as("sixgate", extra)
    }

    /// Write config file `NAME.toml` (CONFIG plus `extra`, with its own API
    /// socket `NAME.sock` beside it) and return its path.
    fn config_as(&self, name: &str, extra: &str) -> String {
        let p = self.dir.join(format!("{name}.toml"));
        // Its own state file too: never the host's (docs/restart.md).
        let socket = format!(
            "socket = \"{}\"\nstate_file = \"{}\"\n",
            self.dir.join(format!("{name}.sock")).display(),
            self.dir.join(format!("{name}.state")).display()
        );
        let extra = match extra.split_once("[daemon]\n") {
            Some((a, b)) => format!("{a}[daemon]\n{socket}{b}"),
            None => format!("{extra}[daemon]\n{socket}"),
        };
        std::fs::write(&p, format!("{CONFIG}{extra}")).unwrap();
        p.to_str().unwrap().to_owned()
    }

    /// Start `sixgate run ARGS` in the namespace.
    fn sixgate(&self, args: &[&str]) -> Gateway {
        self.sixgate_env(args, &[])
    }

    /// Start `sixgate run ARGS` in the namespace with `env` added to its environment.
    fn sixgate_env(&self, args: &[&str], env: &[(&str, &str)]) -> Gateway {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.name, BIN, "run"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sixgate");
        Gateway::new(child)
    }

    /// Run `f` on a thread that has entered the namespace (sockets made there
    /// belong to it).
    fn thread<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
        let path = format!("/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).unwrap();
            // SAFETY: setns on a valid namespace fd, for this thread only.
            let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Any sixgate in it was killed by its Gateway guard (dropped first).
        let _ = sh(&["ip", "netns", "del", &self.name]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running `sixgate run`, its standard error collected as it comes.
struct Gateway {
    child: Option<Child>,
    stderr: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Gateway {
    fn new(mut child: Child) -> Gateway {
        let err = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Gateway {
            child: Some(child),
            stderr,
            reader: Some(reader),
        }
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait until the log shows `what`; panics (with the log) after 20 s or if
    /// the process ends first.
    #[track_caller]
    fn wait_for(&mut self, what: &str) {
        let t0 = Instant::now();
        while !self.log().contains(what) {
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(100));
                panic!("sixgate exited ({st}) before {what:?}:\n{}", self.log());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no {what:?} after 20 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send SIGTERM and wait for the exit; returns (success, stdout, stderr).
    fn terminate(self) -> (bool, String, String) {
        self.signal(libc::SIGTERM)
    }

    /// Send `sig` and wait for the exit.
    fn signal(self, sig: libc::c_int) -> (bool, String, String) {
        let child = self.child.as_ref().unwrap();
        // SAFETY: signalling our own child by its pid (`ip netns exec` execs sixgate).
        unsafe { libc::kill(child.id() as i32, sig) };
        self.finish()
    }

    /// Wait (at most 20 s) for the exit; returns (success, stdout, stderr).
    fn finish(mut self) -> (bool, String, String) {
        let mut child = self.child.take().unwrap();
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("sixgate did not exit within 20 s:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        self.reader.take().unwrap().join().unwrap();
        (status.success(), out, self.log())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `ping -6` from the IPv6 host to the IPv4 host: 3 echo requests, each
/// translated to IPv4, answered by the kernel, translated back. Returns the
/// RTT line.
#[track_caller]
fn ping_6to4(ns: &Netns) -> String {
    let out = sh(&[
        "ip", "netns", "exec", &ns.name, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "-I",
        HOST6, HOST4_VIA6,
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && text.contains("3 received"),
        "ping failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find(|l| l.starts_with("rtt"))
        .unwrap_or("")
        .to_owned()
}

/// `ping -4` from the IPv4 host to the IPv6 host (through EAM).
#[track_caller]
fn ping_4to6(ns: &Netns) {
    let out = sh(&[
        "ip", "netns", "exec", &ns.name, "ping", "-4", "-c", "3", "-i", "0.2", "-W", "2", "-I",
        HOST4, HOST6_VIA4,
    ]);
    assert!(
        out.status.success(),
        "ping -4 failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A payload whose bytes depend on their position (so reordering or
/// corruption shows).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 + i / 65521) as u8).collect()
}

/// TCP over the translator: a client on one side sends `len` bytes to a server
/// on the other, which checks them. Returns Mbit/s.
fn tcp_transfer(
    ns: &Netns,
    server: SocketAddr,
    bind: SocketAddr,
    connect: SocketAddr,
    len: usize,
) -> f64 {
    let (tx, rx) = std::sync::mpsc::channel();
    let srv = ns.thread(move || {
        let l = TcpListener::bind(server).unwrap();
        tx.send(()).unwrap();
        let (mut c, _) = l.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let mut got = Vec::with_capacity(len);
        c.read_to_end(&mut got).unwrap();
        got
    });
    rx.recv().unwrap();
    let t0 = Instant::now();
    let cli = ns.thread(move || {
        let s = socket2_bind_connect(bind, connect);
        let mut s = s;
        s.write_all(&pattern(len)).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
    });
    cli.join().unwrap();
    let got = srv.join().unwrap();
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(got.len(), len, "bytes received");
    assert!(got == pattern(len), "payload corrupted on the way");
    len as f64 * 8.0 / secs / 1e6
}

/// A TCP connection from a given source address (std cannot bind before
/// connect, so via libc).
fn socket2_bind_connect(bind: SocketAddr, connect: SocketAddr) -> TcpStream {
    use std::os::fd::FromRawFd;
    let fam = if bind.is_ipv6() {
        libc::AF_INET6
    } else {
        libc::AF_INET
    };
    // SAFETY: plain socket calls on a fresh descriptor with valid sockaddrs.
    unsafe {
        let fd = libc::socket(fam, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let (sa, len) = sockaddr(bind);
        assert_eq!(
            libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len),
            0
        );
        let (sa, len) = sockaddr(connect);
        let r = libc::connect(fd, &sa as *const _ as *const libc::sockaddr, len);
        assert_eq!(r, 0, "connect: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data large enough for either family.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            let sin = &mut ss as *mut _ as *mut libc::sockaddr_in;
            unsafe {
                (*sin).sin_family = libc::AF_INET as _;
                (*sin).sin_port = v4.port().to_be();
                (*sin).sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            }
            (ss, std::mem::size_of::<libc::sockaddr_in>() as _)
        }
        SocketAddr::V6(v6) => {
            let sin6 = &mut ss as *mut _ as *mut libc::sockaddr_in6;
            unsafe {
                (*sin6).sin6_family = libc::AF_INET6 as _;
                (*sin6).sin6_port = v6.port().to_be();
                (*sin6).sin6_addr.s6_addr = v6.ip().octets();
            }
            (ss, std::mem::size_of::<libc::sockaddr_in6>() as _)
        }
    }
}

fn v4(a: &str, port: u16) -> SocketAddr {
    SocketAddr::new(a.parse::<Ipv4Addr>().unwrap().into(), port)
}

fn v6(a: &str, port: u16) -> SocketAddr {
    SocketAddr::new(a.parse::<Ipv6Addr>().unwrap().into(), port)
}

/// The number after `key` in the summary line.
fn counter(summary: &str, key: &str) -> u64 {
    let at = summary
        .find(key)
        .unwrap_or_else(|| panic!("{key:?} not in {summary:?}"));
    summary[at + key.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn ping_and_tcp_through_the_tun_both_ways_with_offloads() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config("[daemon]\nworkers = 2\n");
    let mut gw = ns.sixgate(&["--config", &cfg]);
    gw.wait_for("workers started");
    assert!(ns.link_exists("sixgate0"));
    assert!(ns.route(true, "2001:db8:64::/96").contains("dev sixgate0"));
    assert!(ns.route(false, "198.18.0.0/24").contains("dev sixgate0"));

    let rtt = ping_6to4(&ns);
    eprintln!("ping -6 {HOST4_VIA6}: {rtt}");
    ping_4to6(&ns);
    let len = 8 << 20;
    let up = tcp_transfer(
        &ns,
        v4(HOST4, 5001),
        v6(HOST6, 0),
        v6(HOST4_VIA6, 5001),
        len,
    );
    let down = tcp_transfer(
        &ns,
        v6(HOST6, 5002),
        v4(HOST4, 0),
        v4(HOST6_VIA4, 5002),
        len,
    );
    eprintln!("TCP 6->4 {up:.0} Mbit/s, 4->6 {down:.0} Mbit/s");

    let offload_all = gw
        .log()
        .contains("offload: vnet header, csum, TSO4, TSO6, USO4, USO6");
    let (ok, out, log) = gw.terminate();
    eprintln!("{out}");
    assert!(ok, "exit status not 0:\n{log}");
    assert!(log.contains("received SIGTERM"), "{log}");
    let summary = out
        .lines()
        .find(|l| l.starts_with("sixgate: "))
        .expect("summary line");
    assert!(counter(summary, "translated 6to4 ") >= 6, "{summary}");
    assert!(counter(summary, " 4to6 ") >= 6, "{summary}");
    if offload_all {
        // Local TCP hands the TUN 64 KiB super-packets, which go through whole.
        assert!(counter(summary, "gso in ") > 0, "{summary}");
        assert!(counter(summary, " whole ") > 0, "{summary}");
    }
    assert!(!ns.link_exists("sixgate0"), "device left behind");
    assert_eq!(ns.route(true, "2001:db8:64::/96"), "");
}

#[test]
fn udp_segmentation_offload_keeps_datagrams() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config("[daemon]\nworkers = 1\n");
    let mut gw = ns.sixgate(&["--config", &cfg]);
    gw.wait_for("workers started");
    let uso = gw.log().contains("USO4, USO6");

    let (tx, rx) = std::sync::mpsc::channel();
    let srv = ns.thread(move || {
        let s = UdpSocket::bind(v4(HOST4, 6001)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        tx.send(()).unwrap();
        let mut sizes = Vec::new();
        let mut buf = [0u8; 65536];
        while sizes.len() < 10 {
            match s.recv(&mut buf) {
                Ok(n) => {
                    assert_eq!(&buf[..n], &pattern(13_000)[sizes.len() * 1300..][..n]);
                    sizes.push(n);
                }
                Err(_) => break,
            }
        }
        sizes
    });
    rx.recv().unwrap();
    ns.thread(|| {
        let s = UdpSocket::bind(v6(HOST6, 0)).unwrap();
        // UDP_SEGMENT: one 13000-byte send leaves as ten 1300-byte datagrams
        // (each over 1260 bytes as IPv4, so DF=1 and the super-packet can go
        // whole; 1200-byte ones would be cut for DF=0, RFC 7915 §5.1).
        let seg: libc::c_int = 1300;
        // SAFETY: setsockopt with a valid int option.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_UDP,
                libc::UDP_SEGMENT,
                &seg as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as _,
            )
        };
        assert_eq!(r, 0);
        s.send_to(&pattern(13_000), v6(HOST4_VIA6, 6001)).unwrap();
    })
    .join()
    .unwrap();
    let sizes = srv.join().unwrap();
    assert_eq!(sizes, vec![1300; 10], "datagram boundaries");

    let (ok, out, log) = gw.terminate();
    assert!(ok, "{log}");
    let summary = out.lines().find(|l| l.starts_with("sixgate: ")).unwrap();
    eprintln!("{summary}");
    if uso {
        assert!(counter(summary, " whole ") >= 1, "{summary}");
    }
}

#[test]
fn plain_mode_without_offloads_translates_too() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns
        .config("[daemon]\nworkers = 1\n[tun]\noffload = false\nname = \"sg-plain\"\nmtu = 1400\n");
    let mut gw = ns.sixgate(&["--config", &cfg]);
    gw.wait_for("workers started");
    assert!(gw.log().contains("offload: off"), "{}", gw.log());
    assert!(ns.ip(&["link", "show", "sg-plain"]).contains("mtu 1400"));
    ping_6to4(&ns);
    tcp_transfer(
        &ns,
        v4(HOST4, 5003),
        v6(HOST6, 0),
        v6(HOST4_VIA6, 5003),
        1 << 20,
    );
    // Ctrl-C stops it as cleanly as SIGTERM.
    let (ok, out, log) = gw.signal(libc::SIGINT);
    assert!(ok, "{log}");
    assert!(log.contains("received SIGINT"), "{log}");
    let summary = out.lines().find(|l| l.starts_with("sixgate: ")).unwrap();
    assert_eq!(counter(summary, "gso in "), 0, "{summary}");
    assert!(!ns.link_exists("sg-plain"));
}

#[test]
fn route_conflict_is_a_clear_error_and_leaves_nothing_behind() {
    require_root_netns!();
    let ns = Netns::new();
    // Someone else already routes the EAM prefix.
    ns.ip(&["route", "add", "198.18.0.0/24", "dev", "lo"]);
    let cfg = ns.config("");
    let gw = ns.sixgate(&["--config", &cfg]);
    let (ok, out, log) = gw.finish();
    assert!(!ok, "must fail:\n{out}{log}");
    assert!(
        log.contains("route 198.18.0.0/24 already exists via lo"),
        "unclear error:\n{log}"
    );
    // The pool6 route, added before the conflict was found, is gone again, and
    // so is the device; the other route is untouched.
    assert_eq!(ns.route(true, "2001:db8:64::/96"), "");
    assert!(!ns.link_exists("sixgate0"), "device left behind");
    assert!(ns.route(false, "198.18.0.0/24").contains("dev lo"));
}

#[test]
fn keep_leaves_device_and_routes_and_a_later_run_reuses_them() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config("[daemon]\nworkers = 2\n");
    let mut gw = ns.sixgate(&["--config", &cfg, "--keep"]);
    gw.wait_for("workers started");
    ping_6to4(&ns);
    let (ok, _, log) = gw.terminate();
    assert!(ok, "{log}");
    assert!(log.contains("keep: leaving the device"), "{log}");
    assert!(ns.link_exists("sixgate0"), "--keep removed the device");
    assert!(ns.route(true, "2001:db8:64::/96").contains("dev sixgate0"));
    assert!(ns.route(false, "198.18.0.0/24").contains("dev sixgate0"));

    // A second run takes the kept device and routes as they are, and without
    // keep, removes them on exit.
    let mut gw = ns.sixgate(&["--config", &cfg]);
    gw.wait_for("workers started");
    let log = gw.log();
    assert!(log.contains("reused=true"), "{log}");
    assert!(log.contains("already present through the device"), "{log}");
    ping_6to4(&ns);
    let (ok, _, log) = gw.terminate();
    assert!(ok, "{log}");
    assert!(!ns.link_exists("sixgate0"), "device left behind:\n{log}");
    assert_eq!(ns.route(true, "2001:db8:64::/96"), "");
}

#[test]
fn a_running_device_is_not_taken_over() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config("[daemon]\nworkers = 1\n");
    let mut first = ns.sixgate(&["--config", &cfg]);
    first.wait_for("workers started");
    // The same file: refused at its API socket.
    let (ok, _, log) = ns.sixgate(&["--config", &cfg]).finish();
    assert!(!ok);
    assert!(log.contains("another daemon answers"), "{log}");
    // Another socket, the same device: refused at the device.
    let other = ns.config_as("second", "[daemon]\nworkers = 1\n");
    let (ok, _, log) = ns.sixgate(&["--config", &other]).finish();
    assert!(!ok);
    assert!(log.contains("in use by another process"), "{log}");
    // The first one is unharmed.
    ping_6to4(&ns);
    let (ok, _, log) = first.terminate();
    assert!(ok, "{log}");
}

#[test]
fn privilege_drop_to_nobody() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config("[daemon]\nworkers = 1\nuser = \"nobody\"\n");
    let mut gw = ns.sixgate(&["--config", &cfg]);
    gw.wait_for("workers started");
    assert!(gw.log().contains("dropped privileges"), "{}", gw.log());
    ping_6to4(&ns);
    // Issue 30: a reload re-reads the file as nobody. One only root may read
    // is refused, saying which mode would do; readable again, it reloads.
    use std::os::unix::fs::PermissionsExt;
    let sock = ns.dir.join("sixgate.sock");
    let reload = || sh(&[BIN, "reload", "--socket", sock.to_str().unwrap()]);
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = reload();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success());
    assert!(
        err.contains("Permission denied") && err.contains("chmod 0640"),
        "{err}"
    );
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = reload();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    ping_6to4(&ns);
    let (ok, _, log) = gw.terminate();
    assert!(ok, "{log}");
    assert!(
        log.contains("the kernel removes the routes with the device"),
        "{log}"
    );
    assert!(!ns.link_exists("sixgate0"));
    assert_eq!(ns.route(false, "198.18.0.0/24"), "");

    // A user that does not exist: an error before anything is created.
    let cfg = ns.config("[daemon]\nuser = \"no-such-user-sg\"\n");
    let (ok, _, log) = ns.sixgate(&["--config", &cfg]).finish();
    assert!(!ok);
    assert!(
        log.contains("user \"no-such-user-sg\" does not exist"),
        "{log}"
    );
    assert!(!ns.link_exists("sixgate0"));
}

#[test]
fn bad_config_fails_before_touching_anything() {
    // Runs without root too: the config is checked first.
    let dir = std::env::temp_dir().join(format!("sg-run-badcfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.toml");
    std::fs::write(&p, format!("{CONFIG}[tun]\nmtu = 100\n")).unwrap();
    let o = sh(&[BIN, "run", "--config", p.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml:6:7: mtu = 100: out of range"),
        "{err}"
    );
}

#[test]
fn device_removed_under_it_stops_with_an_error() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config("[daemon]\nworkers = 1\n");
    let mut gw = ns.sixgate(&["--config", &cfg]);
    gw.wait_for("workers started");
    ns.ip(&["link", "del", "sixgate0"]);
    let (ok, out, log) = gw.finish();
    assert!(!ok, "exit status 0 after losing the device");
    assert!(
        log.contains("stopped: a worker failed") && log.contains("device removed?"),
        "{log}"
    );
    assert!(
        out.starts_with("sixgate: rx "),
        "summary still printed: {out}"
    );
}

/// `GET PATH` on `port` of 127.0.0.1 inside the namespace: (status line, body).
fn http_get(ns: &Netns, port: u16, path: &str) -> (String, String) {
    let path = path.to_owned();
    ns.thread(move || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to /metrics");
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: sixgate\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
        (
            head.lines().next().unwrap_or("").to_owned(),
            body.to_owned(),
        )
    })
    .join()
    .unwrap()
}

/// The value of the sample `series` (name and labels exactly as rendered).
fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in:\n{metrics}"))
        .parse()
        .unwrap()
}

/// `[metrics]`: the endpoint counts a ping per worker and direction, lists every
/// drop reason at zero, answers 404 elsewhere; with `[dns64]`, a dig query moves
/// the DNS64 counters (`ipv4only.arpa` is answered locally, RFC 8880 §7.2, so no
/// upstream is needed).
#[test]
fn metrics_endpoint_counts_ping_per_worker_and_dns64_queries() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config(
        "[daemon]\nworkers = 2\n\n[metrics]\nlisten = \"127.0.0.1:9464\"\n\n\
         [dns64]\nlisten = [\"127.0.0.1:5353\"]\nupstream = [\"127.0.0.1:5354\"]\n",
    );
    let mut gw = ns.sixgate(&["--config", &cfg]);
    gw.wait_for("workers started");
    assert!(
        gw.log()
            .contains("metrics on http://127.0.0.1:9464/metrics"),
        "{}",
        gw.log()
    );
    ping_6to4(&ns);
    ping_4to6(&ns);
    let dig = Command::new("ip")
        .args([
            "netns", "exec", &ns.name, "dig", "+short", "+time=2", "+tries=1",
        ])
        .args(["@127.0.0.1", "-p", "5353", "AAAA", "ipv4only.arpa"])
        .output();
    let dug = match dig {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            assert!(text.contains("2001:db8:64::c000:aa"), "dig: {text}");
            true
        }
        Err(e) => {
            eprintln!("dig part skipped: cannot run dig ({e})");
            false
        }
    };
    // Workers publish after every batch: the counters are there at once, but
    // allow a moment for the last echo reply's batch.
    std::thread::sleep(Duration::from_millis(300));
    let (status, m) = http_get(&ns, 9464, "/metrics");
    assert!(status.contains("200"), "{status}");
    eprintln!(
        "{}",
        m.lines()
            .filter(|l| l.contains("translated"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let per_worker = |dir: &str| -> Vec<f64> {
        (0..2)
            .map(|w| {
                sample(
                    &m,
                    &format!(
                        "sixgate_translated_packets_total{{worker=\"{w}\",direction=\"{dir}\"}}"
                    ),
                )
            })
            .collect()
    };
    // 3 requests one way and 3 replies back, each direction, over the workers.
    assert!(per_worker("6to4").iter().sum::<f64>() >= 6.0, "{m}");
    assert!(per_worker("4to6").iter().sum::<f64>() >= 6.0, "{m}");
    let rx: f64 = (0..2)
        .map(|w| {
            sample(
                &m,
                &format!("sixgate_tun_rx_packets_total{{worker=\"{w}\"}}"),
            )
        })
        .sum();
    assert!(rx >= 12.0, "{m}");
    let drops: Vec<&str> = m
        .lines()
        .filter(|l| l.starts_with("sixgate_dropped_packets_total{"))
        .collect();
    assert_eq!(drops.len(), sixgate_core::DropReason::COUNT, "{m}");
    // host_multicast may count the kernel's own link-local traffic on the new
    // device (docs/tun.md, troubleshooting); the pings cause no drop, and
    // that traffic is no bad_destination (issue 30).
    assert!(
        drops
            .iter()
            .all(|l| l.ends_with(" 0") || l.contains("\"host_multicast\"")),
        "drops: {drops:?}"
    );
    assert_eq!(sample(&m, "sixgate_workers"), 2.0);
    assert!(m.contains("sixgate_build_info{version=\""), "{m}");
    if dug {
        assert!(sample(&m, "sixgate_dns64_queries_total") >= 1.0, "{m}");
        assert!(
            sample(&m, "sixgate_dns64_ipv4only_answers_total") >= 1.0,
            "{m}"
        );
    }
    let (status, _) = http_get(&ns, 9464, "/");
    assert!(status.contains("404"), "{status}");
    let (ok, _, log) = gw.terminate();
    assert!(ok, "{log}");
}

/// A port already taken for `[metrics]` stops `sixgate run` before it touches
/// anything, with the address in the message.
#[test]
fn metrics_port_in_use_is_a_clear_error() {
    require_root_netns!();
    let ns = Netns::new();
    let holder = ns
        .thread(|| TcpListener::bind("127.0.0.1:9464").unwrap())
        .join()
        .unwrap();
    let cfg = ns.config("[metrics]\nlisten = \"127.0.0.1:9464\"\n");
    let gw = ns.sixgate(&["--config", &cfg]);
    let (ok, _, log) = gw.finish();
    drop(holder);
    assert!(!ok);
    assert!(
        log.contains("[metrics] listen = \"127.0.0.1:9464\": cannot bind"),
        "{log}"
    );
    assert!(!ns.link_exists("sixgate0"));

    // Issue 30: with [log] target = "file" the error is in that file too,
    // where the operator reads the daemon's log.
    let holder = ns
        .thread(|| TcpListener::bind("127.0.0.1:9464").unwrap())
        .join()
        .unwrap();
    let file = ns.dir.join("logs/sixgate.log");
    let cfg = ns.config_as(
        "filelog",
        &format!(
            "[metrics]\nlisten = \"127.0.0.1:9464\"\n[log]\ntarget = \"file\"\nfile = \"{}\"\n",
            file.display()
        ),
    );
    let (ok, _, stderr) = ns.sixgate(&["--config", &cfg]).finish();
    drop(holder);
    assert!(!ok);
    let logged = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(logged.contains("cannot bind"), "{logged}\n{stderr}");
    assert!(stderr.contains("cannot bind"), "{stderr}");
}

/// `sixgate run` under a service manager (`Type=notify`): READY=1 once the
/// gateway forwards, STOPPING=1 on SIGTERM, to the socket in $NOTIFY_SOCKET.
#[test]
fn sd_notify_ready_and_stopping_under_a_fake_notify_socket() {
    require_root_netns!();
    let ns = Netns::new();
    let sock_path = ns.dir.join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let cfg = ns.config("");
    let gw = ns.sixgate_env(
        &["--config", &cfg],
        &[("NOTIFY_SOCKET", sock_path.to_str().unwrap())],
    );
    let mut b = [0u8; 64];
    let n = sock.recv(&mut b).expect("READY=1 within 20 s");
    assert_eq!(&b[..n], b"READY=1");
    // Ready means forwarding.
    assert!(ns.route(true, "2001:db8:64::/96").contains("dev sixgate0"));
    ping_6to4(&ns);
    let (ok, _, log) = gw.terminate();
    assert!(ok, "{log}");
    let n = sock.recv(&mut b).expect("STOPPING=1");
    assert_eq!(&b[..n], b"STOPPING=1");
}

/// `[log] format = "json" target = "file"` in mode nat64 with the RFC 6888 event
/// log on: the file holds one JSON object per line, the session events among
/// them, and standard error stays quiet.
#[test]
fn json_log_file_carries_the_nat64_session_events() {
    require_root_netns!();
    let ns = Netns::new();
    let log_path = ns.dir.join("sixgate.json.log");
    let cfg = ns.dir.join("nat64.toml");
    std::fs::write(
        &cfg,
        format!(
            "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n\n\
             [nat64]\npool4 = [\"198.18.0.0/24\"]\nevent_log = \"sessions\"\n\n\
             [daemon]\nsocket = \"{}\"\nstate_file = \"off\"\n\n\
             [log]\nformat = \"json\"\ntarget = \"file\"\nfile = \"{}\"\n",
            ns.dir.join("nat64.sock").display(),
            log_path.display()
        ),
    )
    .unwrap();
    let gw = ns.sixgate(&["--config", cfg.to_str().unwrap()]);
    // Ready: the routes are in (the log is in the file, not on stderr).
    let t0 = Instant::now();
    while !ns.route(false, "198.18.0.0/24").contains("dev sixgate0") {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "not ready:\n{}",
            gw.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    ping_6to4(&ns);
    // Issue 20: pings to a pool4 address nobody is mapped to are dropped
    // (no_bib_entry); the first-drop log says so once, with its hint.
    for _ in 0..2 {
        sh(&[
            "ip",
            "netns",
            "exec",
            &ns.name,
            "ping",
            "-4",
            "-c",
            "2",
            "-i",
            "0.2",
            "-W",
            "1",
            "-I",
            HOST4,
            "198.18.0.77",
        ]);
    }
    // Events are drained every timer tick (100 ms); drops are looked at every second.
    std::thread::sleep(sixgate_control::first_drops::EVERY + Duration::from_millis(700));
    let (ok, _, stderr) = gw.terminate();
    assert!(ok, "{stderr}");
    assert!(
        stderr.trim().is_empty(),
        "logs went to stderr too:\n{stderr}"
    );
    let text = std::fs::read_to_string(&log_path).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        records.iter().any(|r| r["message"]
            .as_str()
            .is_some_and(|m| m.contains("starting"))),
        "{text}"
    );
    let created: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["target"] == "sixgate::nat64" && r["event"] == "session_created")
        .collect();
    assert!(!created.is_empty(), "no session_created event:\n{text}");
    assert_eq!(created[0]["proto"], "icmp", "{text}");
    assert_eq!(created[0]["v6"], HOST6, "{text}");
    let first: Vec<&str> = records
        .iter()
        .filter(|r| r["target"] == "sixgate::drops")
        .filter_map(|r| r["message"].as_str())
        .filter(|m| m.starts_with("first no_bib_entry drop"))
        .collect();
    assert_eq!(first.len(), 1, "logged once:\n{text}");
    assert!(
        first[0].contains("static BIB entry"),
        "with its hint: {}",
        first[0]
    );
}

/// RFC 6146 §3.5.1.1 with `manage_routes`: a pool4 prefix removed at runtime
/// keeps its route while its ICMP session lives, and loses it once the
/// session (5 s) has gone, with no further change; the prefix added instead
/// is routed at once.
#[test]
fn removed_pool4_route_goes_with_its_last_session() {
    require_root_netns!();
    let ns = Netns::new();
    let sock = ns.dir.join("nat64.sock");
    let cfg = ns.dir.join("nat64.toml");
    std::fs::write(
        &cfg,
        format!(
            "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n\n\
             [nat64]\npool4 = [\"198.18.0.0/24\"]\nicmp_timeout = 5\nport_reuse_delay = 0\n\n\
             [daemon]\nsocket = \"{}\"\nstate_file = \"off\"\n",
            sock.display()
        ),
    )
    .unwrap();
    let mut gw = ns.sixgate(&["--config", cfg.to_str().unwrap()]);
    gw.wait_for("workers started");
    ping_6to4(&ns);
    let cli = |args: &[&str]| {
        let o = Command::new(BIN)
            .args(args)
            .arg("--socket")
            .arg(&sock)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
    };
    cli(&["pool4", "add", "198.51.100.0/24"]);
    cli(&["pool4", "remove", "198.18.0.0/24"]);
    assert!(ns.route(false, "198.51.100.0/24").contains("dev sixgate0"));
    assert!(
        ns.route(false, "198.18.0.0/24").contains("dev sixgate0"),
        "removed while its session lives:\n{}",
        gw.log()
    );
    gw.wait_for("pool4 198.18.0.0/24 drained");
    assert_eq!(ns.route(false, "198.18.0.0/24"), "", "{}", gw.log());
    let (ok, _, log) = gw.terminate();
    assert!(ok, "{log}");
}

/// Whether process `pid` catches signal `sig` (`SigCgt` in /proc/PID/status).
fn catches(pid: u32, sig: libc::c_int) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("SigCgt:"))?;
            u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok()
        })
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

/// SIGHUP's default action ends a process; the API reloads on it once it is
/// up. SIGHUPs from the first moment `sixgate run` catches them until the API
/// listens are ignored with a log line, and the daemon runs on (it died here
/// before `control::Hangups`).
#[test]
fn sighup_during_start_up_is_harmless() {
    require_root_netns!();
    let ns = Netns::new();
    let cfg = ns.config("[daemon]\nworkers = 2\n");
    let mut gw = ns.sixgate(&["--config", &cfg]);
    let pid = gw.child.as_ref().unwrap().id();
    // `ip netns exec` execs sixgate: wait until it has (a SIGHUP to `ip`
    // would end `ip`), and its handler is in.
    let t0 = Instant::now();
    while !catches(pid, libc::SIGHUP) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "sixgate never caught SIGHUP:\n{}",
            gw.log()
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(
        !gw.log().contains("API listening"),
        "SIGHUP was caught only once the API was up:\n{}",
        gw.log()
    );
    let mut sent = 0;
    while !gw.log().contains("API listening") {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(pid as i32, libc::SIGHUP) };
        sent += 1;
        if let Some(st) = gw.child.as_mut().unwrap().try_wait().unwrap() {
            panic!("sixgate died ({st}) after {sent} SIGHUPs:\n{}", gw.log());
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{}", gw.log());
        std::thread::sleep(Duration::from_millis(2));
    }
    gw.wait_for("SIGHUP during start-up");
    ping_6to4(&ns);
    let (ok, _, log) = gw.terminate();
    assert!(ok, "{log}");
}

/// Issue 30: every configuration shipped (dist/, samples/) starts, as it
/// is, but for what a namespace needs: its own API socket, the log file
/// under the scratch directory (in a directory that does not exist yet:
/// `run` makes it) and, for the CLAT, a PLAT prefix given rather than
/// discovered ("pool6"). The dist file's DNS64 on "[::]:53" and "127.0.0.1:53" once
/// failed here (a dual-stack TCP socket).
#[test]
fn every_shipped_config_starts() {
    require_root_netns!();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = ["dist", "samples"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    for file in files {
        let ns = Netns::new();
        let text = std::fs::read_to_string(&file).unwrap();
        let mut t: toml::Table = text.parse().unwrap();
        let table = |t: &mut toml::Table, k: &str| -> toml::Table {
            t.get(k)
                .and_then(|v| v.as_table())
                .cloned()
                .unwrap_or_default()
        };
        let mut daemon = table(&mut t, "daemon");
        daemon.insert(
            "socket".into(),
            ns.dir.join("api.sock").display().to_string().into(),
        );
        t.insert("daemon".into(), daemon.into());
        let log_file = ns.dir.join("log/sixgate.log");
        if t.contains_key("log") {
            let mut log = table(&mut t, "log");
            if log.contains_key("file") {
                log.insert("file".into(), log_file.display().to_string().into());
            }
            t.insert("log".into(), log.into());
        }
        if let Some(clat) = t.get_mut("clat").and_then(|c| c.as_table_mut()) {
            clat.insert("plat_prefix".into(), "pool6".into());
        }
        let path = ns.dir.join("shipped.toml");
        std::fs::write(&path, toml::to_string(&t).unwrap()).unwrap();
        let mut gw = ns.sixgate(&["--config", path.to_str().unwrap()]);
        let t0 = Instant::now();
        let both = |gw: &Gateway| {
            format!(
                "{}{}",
                gw.log(),
                std::fs::read_to_string(&log_file).unwrap_or_default()
            )
        };
        while !both(&gw).contains("workers started") {
            if gw.child.as_mut().unwrap().try_wait().unwrap().is_some() {
                std::thread::sleep(Duration::from_millis(100));
                panic!("{} does not start:\n{}", file.display(), both(&gw));
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{}: not started after 20 s:\n{}",
                file.display(),
                both(&gw)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let (ok, _, log) = gw.terminate();
        assert!(ok, "{}: {log}", file.display());
        println!("{}: starts", file.display());
    }
}
