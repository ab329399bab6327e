//! The XDP program `bpf/xdp_redirect.c`: loaded with aya once per interface
//! (each copy has its own socket map), its destination tries filled from the
//! configuration, attached natively or generically, and detached on exit.
//!
//! aya attaches through a BPF link where the kernel has them (5.9+): the kernel
//! then detaches the program by itself when the process dies, however it dies.
//! A program attached the old way (netlink) by a crashed run stays on the
//! interface; [`Program::attach`] finds it by name and takes it off first.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::RawFd;
use std::process::Command;

use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{Array, MapData, XskMap};
use aya::programs::{Xdp, XdpMode};
use aya::{Ebpf, EbpfLoader};
use sixgate_config::XdpAttach;
use tracing::warn;

/// The compiled program (empty when clang was missing at build time).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/xdp_redirect.o"));

/// The program's name in the object and in the kernel (`bpftool prog` shows it).
pub const PROGRAM: &str = "sixgate_xdp";

/// The destinations to redirect, as the daemon fills them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Destinations {
    /// IPv4 prefixes.
    pub v4: Vec<(Ipv4Addr, u8)>,
    /// IPv6 prefixes.
    pub v6: Vec<(Ipv6Addr, u8)>,
    /// The host's own IPv4 addresses: never redirected, whatever prefix
    /// covers them.
    pub local_v4: Vec<Ipv4Addr>,
    /// The host's own IPv6 addresses, likewise.
    pub local_v6: Vec<Ipv6Addr>,
    /// The default pool4's address (nat64 with no `pool4`, the host's own):
    /// only packets for its ports and ICMP identifiers are redirected, the
    /// rest is the host's.
    pub pool4_default: Option<Ipv4Addr>,
}

impl Destinations {
    /// Parse `ADDR/LEN` strings (from `sixgate_dataplane::destinations::wanted_for`).
    pub fn from_prefixes<'a>(prefixes: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut d = Destinations::default();
        for p in prefixes {
            let (a, l) = p.split_once('/').unwrap_or((p, ""));
            let bad = || format!("not a prefix: {p:?}");
            if let Ok(v4) = a.parse::<Ipv4Addr>() {
                let l = if l.is_empty() {
                    32
                } else {
                    l.parse().map_err(|_| bad())?
                };
                d.v4.push((v4, l));
            } else {
                let v6 = a.parse::<Ipv6Addr>().map_err(|_| bad())?;
                let l = if l.is_empty() {
                    128
                } else {
                    l.parse().map_err(|_| bad())?
                };
                d.v6.push((v6, l));
            }
        }
        Ok(d)
    }
}

/// The addresses configured on `interface` (`ip -o addr show dev`).
pub fn local_addresses(interface: &str) -> Result<(Vec<Ipv4Addr>, Vec<Ipv6Addr>), String> {
    let text = ip_show(&["-o", "addr"], interface)?;
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        let Some(a) = words.clone().next().and_then(|a| a.split('/').next()) else {
            continue;
        };
        match w {
            "inet" => v4.extend(a.parse::<Ipv4Addr>().ok()),
            "inet6" => v6.extend(a.parse::<Ipv6Addr>().ok()),
            _ => {}
        }
    }
    Ok((v4, v6))
}

/// The output of `ip ARGS show dev INTERFACE`; an error names the interface
/// and says what `ip` said (no such device, typically).
fn ip_show(args: &[&str], interface: &str) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .args(["show", "dev", interface])
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "interface {interface}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A trie value: the kernel's packet.
pub const PASS: u8 = 0;
/// A trie value: redirected to sixgate.
pub const TRANSLATE: u8 = 1;
/// A trie value (IPv4, the default pool4's address): redirected when the TCP or
/// UDP destination port, the Echo Reply's identifier or the port an ICMP error
/// quotes is one of [`sixgate_dataplane::pool4_default::PORTS`]; the kernel's
/// otherwise.
pub const OWN_PORTS: u8 = 2;

/// The program's destination tries, which stay with the daemon after the
/// program is loaded: runtime changes (a new EAM entry, pool4 prefix) edit them
/// while the program runs.
pub struct Tries {
    v4: LpmTrie<MapData, u32, u8>,
    v6: LpmTrie<MapData, [u8; 16], u8>,
}

impl Tries {
    /// Redirect (or pass, per `value`) `addr/len`.
    pub fn set_v4(&mut self, addr: Ipv4Addr, len: u8, value: u8) -> Result<(), String> {
        self.v4
            .insert(&Key::new(u32::from(len), u32::from(addr).to_be()), value, 0)
            .map_err(|e| format!("cannot add {addr}/{len} to the XDP program: {e}"))
    }

    /// Forget `addr/len` (absent: nothing to do).
    pub fn remove_v4(&mut self, addr: Ipv4Addr, len: u8) -> Result<(), String> {
        match self
            .v4
            .remove(&Key::new(u32::from(len), u32::from(addr).to_be()))
        {
            Err(e) if !absent(&e) => Err(format!(
                "cannot remove {addr}/{len} from the XDP program: {e}"
            )),
            _ => Ok(()),
        }
    }

    /// Redirect (or pass, per `value`) `addr/len`.
    pub fn set_v6(&mut self, addr: Ipv6Addr, len: u8, value: u8) -> Result<(), String> {
        self.v6
            .insert(&Key::new(u32::from(len), addr.octets()), value, 0)
            .map_err(|e| format!("cannot add {addr}/{len} to the XDP program: {e}"))
    }

    /// Forget `addr/len` (absent: nothing to do).
    pub fn remove_v6(&mut self, addr: Ipv6Addr, len: u8) -> Result<(), String> {
        match self.v6.remove(&Key::new(u32::from(len), addr.octets())) {
            Err(e) if !absent(&e) => Err(format!(
                "cannot remove {addr}/{len} from the XDP program: {e}"
            )),
            _ => Ok(()),
        }
    }

    /// Everything in `dst`: the prefixes, then the host's own addresses (pass),
    /// then the default pool4's address (its ports only).
    fn fill(&mut self, dst: &Destinations) -> Result<(), String> {
        for &(a, l) in &dst.v4 {
            self.set_v4(a, l, TRANSLATE)?;
        }
        for &a in &dst.local_v4 {
            self.set_v4(a, 32, PASS)?;
        }
        if let Some(a) = dst.pool4_default {
            self.set_v4(a, 32, OWN_PORTS)?;
        }
        for &(a, l) in &dst.v6 {
            self.set_v6(a, l, TRANSLATE)?;
        }
        for &a in &dst.local_v6 {
            self.set_v6(a, 128, PASS)?;
        }
        Ok(())
    }
}

/// A removal that found nothing (the kernel's ENOENT).
fn absent(e: &aya::maps::MapError) -> bool {
    match e {
        aya::maps::MapError::KeyNotFound => true,
        aya::maps::MapError::SyscallError(s) => s.io_error.raw_os_error() == Some(libc::ENOENT),
        _ => false,
    }
}

/// How the program ended up attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attached {
    /// In the driver.
    Native,
    /// In the kernel's generic (SKB) path.
    Generic,
}

impl Attached {
    /// `native` or `generic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Attached::Native => "native",
            Attached::Generic => "generic",
        }
    }
}

/// One interface's loaded (and, after [`Program::attach`], attached) program.
pub struct Program {
    ebpf: Ebpf,
    tries: Option<Tries>,
    interface: String,
    link: Option<aya::programs::xdp::XdpLinkId>,
    /// How it is attached, once it is.
    pub attached: Option<Attached>,
}

impl Program {
    /// Load the program for `interface` and fill its destination tries.
    pub fn load(interface: &str, dst: &Destinations) -> Result<Program, String> {
        if OBJECT.is_empty() {
            return Err(
                "the XDP program was not built (clang was missing when sixgate was \
                        compiled; scripts/setup.sh installs it)"
                    .to_owned(),
            );
        }
        let mut ebpf = EbpfLoader::new().load(OBJECT).map_err(|e| {
            format!(
                "cannot load the XDP program: {}{}",
                chain(&e),
                PERMISSION_HINT
            )
        })?;
        let prog: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .ok_or("the XDP object has no program sixgate_xdp")?
            .try_into()
            .map_err(|e| format!("XDP program: {e}"))?;
        prog.load().map_err(|e| {
            format!(
                "the kernel refused the XDP program: {}{}",
                chain(&e),
                PERMISSION_HINT
            )
        })?;
        let trie = |ebpf: &mut Ebpf, name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| format!("the XDP object has no map {name}"))
        };
        let mut tries = Tries {
            v4: LpmTrie::try_from(trie(&mut ebpf, "dst4")?).map_err(|e| format!("dst4: {e}"))?,
            v6: LpmTrie::try_from(trie(&mut ebpf, "dst6")?).map_err(|e| format!("dst6: {e}"))?,
        };
        tries.fill(dst)?;
        {
            // The default pool4's ports: FIRST << 16 | LAST.
            let mut a: Array<_, u32> =
                Array::try_from(ebpf.map_mut("pool4_ports").ok_or("no map pool4_ports")?)
                    .map_err(|e| format!("pool4_ports: {e}"))?;
            let p = sixgate_dataplane::pool4_default::PORTS;
            a.set(0, u32::from(p.first) << 16 | u32::from(p.last), 0)
                .map_err(|e| format!("pool4_ports: {e}"))?;
        }
        Ok(Program {
            ebpf,
            tries: Some(tries),
            interface: interface.to_owned(),
            link: None,
            attached: None,
        })
    }

    /// The loaded program (for `BPF_PROG_TEST_RUN` in tests).
    pub fn program(&self) -> &Xdp {
        self.ebpf
            .program(PROGRAM)
            .and_then(|p| <&Xdp>::try_from(p).ok())
            .expect("loaded in Program::load")
    }

    /// The destination tries, for the daemon to edit (once).
    pub fn take_tries(&mut self) -> Option<Tries> {
        self.tries.take()
    }

    /// Put the AF_XDP socket `fd` at `queue` of the socket map: from now on the
    /// program redirects that queue's packets to it.
    pub fn set_socket(&mut self, queue: u32, fd: RawFd) -> Result<(), String> {
        let mut m: XskMap<_> = XskMap::try_from(self.ebpf.map_mut("xsks").ok_or("no map xsks")?)
            .map_err(|e| format!("xsks: {e}"))?;
        m.set(queue, fd, 0)
            .map_err(|e| format!("cannot add the socket of queue {queue} to the XDP program: {e}"))
    }

    /// Attach to the interface: native, generic, or native falling back to
    /// generic with a warning. A stale sixgate program left on the interface is
    /// taken off first (with a warning); any other XDP program is an error.
    pub fn attach(&mut self, mode: XdpAttach) -> Result<Attached, String> {
        remove_stale(&self.interface)?;
        let iface = self.interface.clone();
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(PROGRAM)
            .expect("loaded")
            .try_into()
            .expect("an XDP program");
        let native = |p: &mut Xdp| p.attach(&iface, XdpMode::Driver);
        let generic = |p: &mut Xdp| p.attach(&iface, XdpMode::Skb);
        let (link, how) = match mode {
            XdpAttach::Native => (
                native(prog).map_err(|e| {
                    // EOPNOTSUPP: the driver has no XDP of its own.
                    let hint = if os_error(&e) == Some(libc::EOPNOTSUPP) {
                        " (the driver has no native XDP: set [xdp] attach_mode = \"auto\" or \
                         \"generic\" for the kernel's generic path, slower)"
                    } else {
                        ""
                    };
                    format!(
                        "cannot attach the XDP program to {iface} in native mode: {}{hint}",
                        chain(&e)
                    )
                })?,
                Attached::Native,
            ),
            XdpAttach::Generic => (
                generic(prog).map_err(|e| {
                    format!(
                        "cannot attach the XDP program to {iface} in generic mode: {}",
                        chain(&e)
                    )
                })?,
                Attached::Generic,
            ),
            XdpAttach::Auto => match native(prog) {
                Ok(l) => (l, Attached::Native),
                Err(e) => {
                    warn!(
                        interface = %iface,
                        "native XDP not available ({}); falling back to generic XDP (slower)",
                        chain(&e)
                    );
                    (
                        generic(prog).map_err(|e| {
                            format!("cannot attach the XDP program to {iface}: {}", chain(&e))
                        })?,
                        Attached::Generic,
                    )
                }
            },
        };
        self.link = Some(link);
        self.attached = Some(how);
        Ok(how)
    }

    /// Take the program off the interface.
    pub fn detach(&mut self) -> Result<(), String> {
        let Some(link) = self.link.take() else {
            return Ok(());
        };
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(PROGRAM)
            .expect("loaded")
            .try_into()
            .expect("an XDP program");
        prog.detach(link)
            .map_err(|e| format!("cannot detach the XDP program from {}: {e}", self.interface))
    }
}

const PERMISSION_HINT: &str = " (loading XDP programs needs root, or CAP_BPF + CAP_NET_ADMIN)";

/// The XDP program on `interface`, if any: its id, from `ip -d link show`.
fn attached_id(interface: &str) -> Result<Option<u32>, String> {
    let text = ip_show(&["-d", "link"], interface)?;
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w.starts_with("prog/xdp") && words.next() == Some("id") {
            return Ok(words.next().and_then(|id| id.parse().ok()));
        }
    }
    Ok(None)
}

/// Take a sixgate program left by a crashed run off `interface`.
fn remove_stale(interface: &str) -> Result<(), String> {
    let Some(id) = attached_id(interface)? else {
        return Ok(());
    };
    let name = aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .find(|p| p.id() == id)
        .and_then(|p| p.name_as_str().map(str::to_owned))
        .unwrap_or_default();
    if name != PROGRAM {
        return Err(format!(
            "interface {interface} already has an XDP program attached ({} id {id}); sixgate \
             does not replace another program (remove it with `ip link set dev {interface} xdp \
             off`)",
            if name.is_empty() { "unnamed" } else { &name }
        ));
    }
    for off in ["xdp", "xdpgeneric", "xdpdrv"] {
        let _ = Command::new("ip")
            .args(["link", "set", "dev", interface, off, "off"])
            .output();
    }
    if attached_id(interface)?.is_some() {
        return Err(format!(
            "interface {interface} has sixgate's XDP program attached (id {id}) and it cannot be \
             removed: is another sixgate running on it?"
        ));
    }
    warn!(
        interface,
        id, "removed a stale sixgate XDP program (left by a run that did not stop cleanly)"
    );
    Ok(())
}

/// An error with its causes, one line.
/// The first system error code in `e`'s chain of causes.
fn os_error(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut at = Some(e);
    while let Some(c) = at {
        if let Some(code) = c
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(code);
        }
        at = c.source();
    }
    None
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_from_route_prefixes() {
        let d = Destinations::from_prefixes(["2001:db8:64::/96", "198.18.0.0/24", "0.0.0.0/0"])
            .unwrap();
        assert_eq!(d.v6, [("2001:db8:64::".parse().unwrap(), 96)]);
        assert_eq!(
            d.v4,
            [
                ("198.18.0.0".parse().unwrap(), 24),
                (Ipv4Addr::UNSPECIFIED, 0)
            ]
        );
        assert!(Destinations::from_prefixes(["nonsense/3"]).is_err());
    }
}
