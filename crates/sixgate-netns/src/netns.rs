//! Network namespaces and what lives in them: links, addresses, routes, sysctls,
//! neighbours, and programs run inside.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::process::{self, Background, DEFAULT_TIMEOUT};

/// A network namespace of our own, named `sg-<role>-<pid>-<n>` (see
/// [`crate::unique_name`]), deleted on drop together with every process still in
/// it (they are all ours: nobody else starts programs in our namespaces).
///
/// Everything here goes through `ip`: `ip -n NAME …` for configuration and
/// `ip netns exec NAME PROGRAM …` to run programs, so the bed needs only iproute2
/// and root.
#[derive(Debug)]
pub struct Netns {
    name: String,
    /// Deleted on drop (false for one attached with [`Netns::attach`]).
    owned: bool,
}

/// The state of a network interface, from `ip link show`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    /// Administratively up (`UP` flag).
    pub up: bool,
    /// Carrier present (`LOWER_UP`). For a TUN device: a process has it open.
    pub lower_up: bool,
    /// Its MTU.
    pub mtu: u32,
    /// All flags as `ip` prints them (`POINTOPOINT`, `NOARP`, `UP`, …).
    pub flags: Vec<String>,
}

/// Packet and byte counters of an interface (`/sys/class/net/DEV/statistics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets received by the interface (for a TUN device: written by the program).
    pub rx_packets: u64,
    /// Packets sent by the interface (for a TUN device: handed to the program).
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Received packets dropped.
    pub rx_dropped: u64,
    /// Packets dropped on sending (for a TUN device: its queue was full).
    pub tx_dropped: u64,
}

/// Transport protocol of a listening socket, for [`Netns::wait_listening`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// A TCP socket in LISTEN state.
    Tcp,
    /// A bound UDP socket.
    Udp,
}

impl Netns {
    /// Create a namespace for `role` (a short word: letters and digits, e.g.
    /// `gw`), with the loopback interface up and IPv6 duplicate address detection
    /// off (so that addresses are usable at once; the bed has no duplicates).
    pub fn new(role: &str) -> Result<Netns> {
        Netns::with_index(role, crate::next_index())
    }

    /// Like [`Netns::new`], with the `<n>` of the name chosen by the caller (from
    /// [`crate::next_index`]), so that the namespaces of one bed share it.
    pub fn with_index(role: &str, index: u32) -> Result<Netns> {
        crate::check_role(role)?;
        let name = crate::unique_name(role, index);
        process::run_admin(Command::new("ip").args(["netns", "add", &name]))?;
        // From here on, drop deletes it.
        let ns = Netns { name, owned: true };
        ns.ip(["link", "set", "lo", "up"])?;
        // `default` applies to interfaces created later (the veths), `all` to the
        // existing ones.
        ns.sysctl(&[
            ("net.ipv6.conf.all.accept_dad", "0"),
            ("net.ipv6.conf.default.accept_dad", "0"),
            ("net.ipv6.conf.default.accept_ra", "0"),
        ])?;
        Ok(ns)
    }

    /// A namespace with a fixed `name` chosen by the caller (for beds that outlive
    /// the process, such as `sixgate bench bed up`), set up like [`Netns::new`];
    /// an error if it exists. Deleted on drop unless [`Netns::persist`] is called.
    pub fn named(name: &str) -> Result<Netns> {
        process::run_admin(Command::new("ip").args(["netns", "add", name]))?;
        let ns = Netns {
            name: name.to_owned(),
            owned: true,
        };
        ns.ip(["link", "set", "lo", "up"])?;
        ns.sysctl(&[
            ("net.ipv6.conf.all.accept_dad", "0"),
            ("net.ipv6.conf.default.accept_dad", "0"),
            ("net.ipv6.conf.default.accept_ra", "0"),
        ])?;
        Ok(ns)
    }

    /// Keep the namespace after this value is dropped; returns its name.
    pub fn persist(mut self) -> String {
        self.owned = false;
        std::mem::take(&mut self.name)
    }

    /// The existing namespace `name`, left in place when this value is dropped.
    pub fn attach(name: &str) -> Result<Netns> {
        if !Path::new("/run/netns").join(name).exists() {
            return Err(Error::new(format!("no network namespace {name}")));
        }
        Ok(Netns {
            name: name.to_owned(),
            owned: false,
        })
    }

    /// Delete the namespace `name` made earlier (killing what runs inside), if
    /// it exists.
    pub fn delete(name: &str) {
        if Path::new("/run/netns").join(name).exists() {
            delete_namespace(name);
        }
    }

    /// The namespace's name, as `ip netns list` shows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A command that runs `program` inside the namespace
    /// (`ip netns exec NAME program`); add arguments and run it as you like. `ip`
    /// execs the program, so the child's pid is the program's.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Run `program args…` inside the namespace and capture its output, whatever its
    /// exit status; an error only if it cannot start or runs past
    /// [`DEFAULT_TIMEOUT`].
    pub fn output<I, S>(&self, program: &str, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.output_timeout(program, args, DEFAULT_TIMEOUT)
    }

    /// [`Netns::output`] with a time limit of your choice.
    pub fn output_timeout<I, S>(&self, program: &str, args: I, timeout: Duration) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        process::capture(self.command(program).args(args), timeout)
    }

    /// Run `program args…` inside the namespace; its standard output if it exits
    /// with status 0, else an error with its command line and standard error.
    pub fn run<I, S>(&self, program: &str, args: I) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_timeout(program, args, DEFAULT_TIMEOUT)
    }

    /// [`Netns::run`] with a time limit of your choice.
    pub fn run_timeout<I, S>(&self, program: &str, args: I, timeout: Duration) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        process::run_checked(self.command(program).args(args), timeout)
    }

    /// Start `program args…` inside the namespace in the background; it is stopped
    /// when the returned [`Background`] is dropped (or, at the latest, when the
    /// namespace is).
    pub fn spawn<I, S>(&self, program: &str, args: I) -> Result<Background>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let label = format!("{program} in {}", self.name);
        Background::spawn(self.command(program).args(args), label)
    }

    /// `ip -n NAME args…`: configure the namespace. Returns standard output.
    pub fn ip<I, S>(&self, args: I) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        process::run_admin(Command::new("ip").args(["-n", &self.name]).args(args))
    }

    /// Set sysctls inside the namespace (`net.*` ones are per namespace), e.g.
    /// `[("net.ipv4.ip_forward", "1")]`.
    pub fn sysctl(&self, settings: &[(&str, &str)]) -> Result<()> {
        let args: Vec<String> = std::iter::once("-qw".to_owned())
            .chain(settings.iter().map(|(k, v)| format!("{k}={v}")))
            .collect();
        process::run_admin(self.command("sysctl").args(&args)).map(drop)
    }

    /// Turn IPv4 and IPv6 forwarding on (a router).
    pub fn enable_forwarding(&self) -> Result<()> {
        self.sysctl(&[
            ("net.ipv4.ip_forward", "1"),
            ("net.ipv6.conf.all.forwarding", "1"),
        ])
    }

    /// Bring an interface up.
    pub fn link_up(&self, dev: &str) -> Result<()> {
        self.ip(["link", "set", dev, "up"]).map(drop)
    }

    /// Set an interface's MTU.
    pub fn set_mtu(&self, dev: &str, mtu: u32) -> Result<()> {
        self.ip(["link", "set", dev, "mtu", &mtu.to_string()])
            .map(drop)
    }

    /// Add an address, `ADDRESS/LENGTH`, IPv4 or IPv6 (IPv6 ones without duplicate
    /// address detection, usable at once).
    pub fn add_address(&self, dev: &str, cidr: &str) -> Result<()> {
        let mut args = vec!["addr", "add", cidr, "dev", dev];
        if cidr.contains(':') {
            args.push("nodad");
        }
        self.ip(args).map(drop)
    }

    /// Add a route to `dest` (a prefix, an address or `default`) via the gateway
    /// `via`. The family is taken from `via`.
    pub fn add_route_via(&self, dest: &str, via: &str) -> Result<()> {
        let family = if via.contains(':') { "-6" } else { "-4" };
        self.ip([family, "route", "add", dest, "via", via])
            .map(drop)
    }

    /// Add a route to `dest` straight into the interface `dev` (a TUN device, say).
    pub fn add_route_dev(&self, dest: &str, dev: &str) -> Result<()> {
        let family = if dest.contains(':') { "-6" } else { "-4" };
        self.ip([family, "route", "add", dest, "dev", dev])
            .map(drop)
    }

    /// The routes to exactly `prefix` (`ip route show PREFIX`), one per line; empty
    /// if there are none.
    pub fn routes_to(&self, prefix: &str) -> Result<String> {
        let family = if prefix.contains(':') { "-6" } else { "-4" };
        self.ip([family, "route", "show", prefix])
    }

    /// `ip route get DEST`: the route the kernel would take, with any cached path
    /// MTU (`mtu 1300`).
    pub fn route_get(&self, dest: &str) -> Result<String> {
        self.ip(["route", "get", dest])
    }

    /// The path MTU the kernel has learnt for `dest` (from ICMP Packet Too Big or
    /// Fragmentation Needed), if any.
    pub fn cached_pmtu(&self, dest: &str) -> Result<Option<u32>> {
        let text = self.route_get(dest)?;
        let words: Vec<&str> = text.split_whitespace().collect();
        Ok(words
            .windows(2)
            .find(|w| w[0] == "mtu")
            .and_then(|w| w[1].parse().ok()))
    }

    /// Add a permanent neighbour entry (no ARP or Neighbour Discovery for `ip`).
    pub fn add_neighbour(&self, dev: &str, ip: &str, mac: &str) -> Result<()> {
        self.ip([
            "neigh",
            "replace",
            ip,
            "lladdr",
            mac,
            "dev",
            dev,
            "nud",
            "permanent",
        ])
        .map(drop)
    }

    /// An interface's MAC address.
    pub fn mac(&self, dev: &str) -> Result<String> {
        let text = self.ip(["-o", "link", "show", "dev", dev])?;
        let words: Vec<&str> = text.split_whitespace().collect();
        words
            .windows(2)
            .find(|w| w[0].starts_with("link/"))
            .map(|w| w[1].to_owned())
            .ok_or_else(|| Error::new(format!("no MAC address for {dev} in {}", self.name)))
    }

    /// The state of interface `dev`, `None` if there is no such interface.
    pub fn link(&self, dev: &str) -> Result<Option<LinkState>> {
        let out = process::capture_admin(
            Command::new("ip").args(["-n", &self.name, "-o", "link", "show", "dev", dev]),
        )?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("does not exist") {
                return Ok(None);
            }
            return Err(Error::new(format!(
                "`ip -n {} link show dev {dev}` failed: {}",
                self.name,
                err.trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        parse_link(&text)
            .map(Some)
            .ok_or_else(|| Error::new(format!("cannot parse `ip link show` output: {text}")))
    }

    /// Counters of interface `dev`.
    pub fn link_stats(&self, dev: &str) -> Result<LinkStats> {
        const NAMES: [&str; 6] = [
            "rx_packets",
            "tx_packets",
            "rx_bytes",
            "tx_bytes",
            "rx_dropped",
            "tx_dropped",
        ];
        // `ip netns exec` mounts the namespace's own /sys.
        let files: Vec<String> = NAMES
            .iter()
            .map(|n| format!("/sys/class/net/{dev}/statistics/{n}"))
            .collect();
        let text = process::run_admin(self.command("cat").args(&files))?;
        let v: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().unwrap_or(0))
            .collect();
        if v.len() != NAMES.len() {
            return Err(Error::new(format!(
                "unexpected statistics for {dev}: {text}"
            )));
        }
        Ok(LinkStats {
            rx_packets: v[0],
            tx_packets: v[1],
            rx_bytes: v[2],
            tx_bytes: v[3],
            rx_dropped: v[4],
            tx_dropped: v[5],
        })
    }

    /// Wait until something in the namespace listens on `port` (any address), at
    /// most `timeout`. Use it after spawning a server.
    pub fn wait_listening(&self, proto: Proto, port: u16, timeout: Duration) -> Result<()> {
        let flags = match proto {
            Proto::Tcp => "-Hltn",
            Proto::Udp => "-Hlun",
        };
        let filter = format!("sport = :{port}");
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.run("ss", [flags, &filter])?;
            if !out.trim().is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "nothing listens on {proto:?} port {port} in {} after {} s",
                    self.name,
                    timeout.as_secs_f32()
                )));
            }
            crate::interrupt::check()?;
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Process ids of the processes inside the namespace.
    pub fn pids(&self) -> Vec<u32> {
        pids_of(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        delete_namespace(&self.name);
    }
}

/// Connect two namespaces with a veth pair, `a_dev` in `a` and `b_dev` in `b`
/// (interface names are per namespace, so every bed can use the same ones), and
/// bring both ends up. The pair is created inside the namespaces directly, never in
/// the caller's, and disappears with them.
pub fn veth(a: &Netns, a_dev: &str, b: &Netns, b_dev: &str) -> Result<()> {
    veth_queues(a, a_dev, b, b_dev, 1)
}

/// [`veth`] with `queues` receive and transmit queues on each end (an AF_XDP
/// data plane binds one socket per receive queue).
pub fn veth_queues(a: &Netns, a_dev: &str, b: &Netns, b_dev: &str, queues: u32) -> Result<()> {
    veth_pair(a, (a_dev, None), b, (b_dev, None), queues)
}

/// [`veth_queues`] with fixed MAC addresses (`"02:00:5e:10:00:05"`) on the two
/// ends, as a bed with static neighbours needs.
pub fn veth_with_macs(
    a: &Netns,
    (a_dev, a_mac): (&str, &str),
    b: &Netns,
    (b_dev, b_mac): (&str, &str),
    queues: u32,
) -> Result<()> {
    veth_pair(a, (a_dev, Some(a_mac)), b, (b_dev, Some(b_mac)), queues)
}

fn veth_pair(
    a: &Netns,
    (a_dev, a_mac): (&str, Option<&str>),
    b: &Netns,
    (b_dev, b_mac): (&str, Option<&str>),
    queues: u32,
) -> Result<()> {
    let q = queues.max(1).to_string();
    let end = |dev: &str, mac: Option<&str>| {
        let mut args = vec![dev.to_owned()];
        if let Some(m) = mac {
            args.extend(["address".to_owned(), m.to_owned()]);
        }
        args.extend([
            "numtxqueues".to_owned(),
            q.clone(),
            "numrxqueues".to_owned(),
            q.clone(),
        ]);
        args
    };
    let mut args = vec!["link".to_owned(), "add".to_owned()];
    args.extend(end(a_dev, a_mac));
    args.extend(["type", "veth", "peer", "name"].map(str::to_owned));
    args.extend(end(b_dev, b_mac));
    args.extend(["netns".to_owned(), b.name.clone()]);
    a.ip(args.iter().map(String::as_str))?;
    a.link_up(a_dev)?;
    b.link_up(b_dev)
}

impl Netns {
    /// True if an XDP program is attached to `dev` (`ip -d link` shows `prog/xdp`).
    pub fn has_xdp(&self, dev: &str) -> Result<bool> {
        Ok(self
            .ip(["-d", "link", "show", "dev", dev])?
            .contains("prog/xdp"))
    }
}

fn parse_link(text: &str) -> Option<LinkState> {
    let start = text.find('<')?;
    let end = start + text[start..].find('>')?;
    let flags: Vec<String> = text[start + 1..end]
        .split(',')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    let words: Vec<&str> = text[end..].split_whitespace().collect();
    let mtu = words
        .windows(2)
        .find(|w| w[0] == "mtu")
        .and_then(|w| w[1].parse().ok())?;
    Some(LinkState {
        up: flags.iter().any(|f| f == "UP"),
        lower_up: flags.iter().any(|f| f == "LOWER_UP"),
        mtu,
        flags,
    })
}

fn pids_of(name: &str) -> Vec<u32> {
    process::run_admin(Command::new("ip").args(["netns", "pids", name]))
        .map(|t| {
            t.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Kill what still runs in the namespace (ours), then delete it.
fn delete_namespace(name: &str) {
    for pid in pids_of(name) {
        // SAFETY: plain kill(2) on a pid taken from our own namespace.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    let del = process::run_admin(Command::new("ip").args(["netns", "del", name]));
    if let Err(e) = del {
        eprintln!("sixgate-netns: warning: {e}");
    }
}

/// Names of all network namespaces (`ip netns list`).
pub fn list_namespaces() -> Result<Vec<String>> {
    let text = process::run_admin(Command::new("ip").args(["netns", "list"]))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// Remove what crashed runs left behind: every namespace named `sg-<role>-<pid>-<n>`
/// and every scratch directory named so in the temporary directory, whose `<pid>` is
/// no longer a running process (processes still inside such a namespace are ours
/// and are killed). Beds of live processes, another test run beside this one
/// included, are left alone, and so is everything not named by this crate. Returns
/// what was removed.
pub fn cleanup_stale() -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for name in list_namespaces()? {
        if is_stale(&name) {
            delete_namespace(&name);
            removed.push(format!("namespace {name}"));
        }
    }
    let tmp = std::env::temp_dir();
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if is_stale(&name) && e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(e.path());
                removed.push(format!("directory {}", e.path().display()));
            }
        }
    }
    Ok(removed)
}

/// True for a name this crate makes whose process is gone.
fn is_stale(name: &str) -> bool {
    match crate::parse_unique_name(name) {
        Some((_, pid, _)) => {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        }
        None => false,
    }
}

/// Can this machine run the bed? `Err(reason)` if we are not root, `ip` is
/// missing, or a network namespace cannot be created (a container without the
/// privilege, say). Tests print the reason and skip.
pub fn check_host() -> std::result::Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(format!(
            "not root (effective uid {euid}); the bed needs root"
        ));
    }
    list_namespaces().map_err(|e| format!("`ip netns` is unavailable: {e}"))?;
    Netns::new("probe")
        .map(drop)
        .map_err(|e| format!("cannot create a network namespace: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ip_link_output() {
        let l = parse_link(
            "4: nat64: <POINTOPOINT,MULTICAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc pfifo_fast state UP mode DEFAULT group default qlen 500\\    link/none ",
        )
        .unwrap();
        assert!(l.up && l.lower_up);
        assert_eq!(l.mtu, 1500);
        let l = parse_link("2: nat64: <POINTOPOINT,MULTICAST,NOARP> mtu 1280 qdisc noop").unwrap();
        assert!(!l.up && !l.lower_up);
        assert_eq!(l.mtu, 1280);
        assert_eq!(l.flags, ["POINTOPOINT", "MULTICAST", "NOARP"]);
    }

    #[test]
    fn only_names_of_dead_processes_are_stale() {
        let me = std::process::id();
        assert!(!is_stale(&format!("sg-gw-{me}-3")), "our own bed is live");
        // pid_max is at most 2^22, so this pid cannot exist.
        assert!(is_stale("sg-gw-4294967294-3"));
        assert!(!is_stale("sg-gw-x-3"));
        assert!(!is_stale("other-gw-1-3"));
        assert!(!is_stale("sg-gw-4294967294"));
    }
}
