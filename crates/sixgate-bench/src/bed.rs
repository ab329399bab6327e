//! The test bed of RFC 8219 §4.1 (single DUT) and §4.2 (dual DUT) on one
//! machine: network namespaces joined by veth pairs.
//!
//! ```text
//! single:  sgb-left [tl] ---- [dl] sgb-dut [dr] ---- [tr] sgb-right
//!          IPv6 tester port        DUT               IPv4 tester port
//! dual:    sgb-left [tl] -- [dl] sgb-dut1 [dm] -- [dm] sgb-dut2 [dr] -- [tr] sgb-right
//!          IPv4             4→6 translator   IPv6   6→4 translator          IPv4
//! self-test: sgb-left [tl] ----------------------------------------- [tr] sgb-right
//! ```
//!
//! The tester namespaces have no addresses and IPv6 off: they only send and
//! receive frames through packet sockets, so their own stacks add no traffic.
//! The DUT side has documentation addresses of both families on each link
//! and static neighbours for every tester address (no ARP/ND during trials).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sixgate_netns::{Netns, Result as NsResult};

use crate::frame::Mac;

/// Receive and transmit queues of every veth: sixgate's XDP data plane binds
/// one AF_XDP socket (worker) per queue, so `workers = 2` needs two (a veth
/// receives on the queue its peer sent on). The kernel's own forwarding, TUN
/// and TAYGA do not care. A preset with fewer XDP workers lowers the queues in
/// use to its workers (`ethtool -L`) for its run.
pub const QUEUES: u16 = 2;

/// Every namespace name starts with this.
pub const PREFIX: &str = "sgb-";

/// Interface names (per namespace, so every bed can use the same).
pub const TESTER_LEFT_IF: &str = "tl";
pub const TESTER_RIGHT_IF: &str = "tr";
pub const DUT_LEFT_IF: &str = "dl";
pub const DUT_RIGHT_IF: &str = "dr";
pub const DUT_MIDDLE_IF: &str = "dm";

pub const MAC_TESTER_LEFT: Mac = Mac([0x02, 0x00, 0x5e, 0x10, 0x00, 0x05]);
pub const MAC_DUT_LEFT: Mac = Mac([0x02, 0x00, 0x5e, 0x10, 0x00, 0x01]);
pub const MAC_DUT_RIGHT: Mac = Mac([0x02, 0x00, 0x5e, 0x20, 0x00, 0x01]);
pub const MAC_TESTER_RIGHT: Mac = Mac([0x02, 0x00, 0x5e, 0x20, 0x00, 0x07]);
pub const MAC_DUT1_MIDDLE: Mac = Mac([0x02, 0x00, 0x5e, 0x30, 0x00, 0x01]);
pub const MAC_DUT2_MIDDLE: Mac = Mac([0x02, 0x00, 0x5e, 0x30, 0x00, 0x02]);

/// Addresses (documentation ranges, RFC 3849 / RFC 5737).
pub mod addr {
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// Left link, IPv6: the DUT and the tester (plus host offsets).
    pub const LEFT6_DUT: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);
    pub const LEFT6_TESTER: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5);
    /// Left link, IPv4 (kernel-v4, nat44, dual DUT).
    pub const LEFT4_DUT: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    pub const LEFT4_TESTER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 5);
    /// Right link, IPv4.
    pub const RIGHT4_DUT: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
    pub const RIGHT4_TESTER: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
    /// Right link, IPv6: kernel-v6's destination, and every preset's native
    /// IPv6 background traffic (RFC 8219 §5.2, plain forwarding).
    pub const RIGHT6_DUT: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 1);
    pub const RIGHT6_TESTER: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 7);
    pub const RIGHT6_NET: &str = "2001:db8:2::/64";
    /// Middle link of the dual-DUT bed.
    pub const MIDDLE6_DUT1: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 3, 0, 0, 0, 0, 1);
    pub const MIDDLE6_DUT2: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 3, 0, 0, 0, 0, 2);
    pub const MIDDLE4_DUT1: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
    pub const MIDDLE4_DUT2: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 2);
    /// The translators' pool6 (RFC 6052 /96) and EAM (RFC 7757).
    pub const POOL6: &str = "2001:db8:64::/96";
    pub const EAM4: &str = "198.18.0.0/24";
    pub const EAM6: &str = "2001:db8:1::/120";
    /// The dual bed's first translator maps the left IPv4 link into IPv6.
    pub const EAM4_LEFT: &str = "192.0.2.0/24";
    /// The stateful translators' IPv4 pool.
    pub const POOL4: &str = "198.18.0.0/24";

    /// MAP-T (RFC 7597 §5): the Basic Mapping Rule of `bench/configs/mapt-*.toml`
    /// (IPv4 side 198.18.0.0/24, 13 EA bits, PSID offset 0: 2048 ports a CE) and
    /// the one CE the tester plays, EA bits 0x101: IPv4 suffix 8, PSID 1. The
    /// DMR is [`POOL6`].
    pub const MAPT_RULE6: &str = "2001:db8:1::/51";
    /// The CE's End-user prefix.
    pub const MAPT_CE_PREFIX: &str = "2001:db8:1:101::/64";
    /// Its MAP address (RFC 7597 §5.2): the left tester's source in the
    /// single bed.
    pub const MAPT_CE6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0x101, 0, 0xc612, 8, 1);
    /// Its IPv4 address and port set.
    pub const MAPT_CE4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 8);
    pub const MAPT_CE_PORTS: (u16, u16) = (2048, 4095);
}

/// The RFC 6052 /96 address of `v4` in [`addr::POOL6`].
pub fn in_pool6(v4: Ipv4Addr) -> Ipv6Addr {
    let o = v4.octets();
    Ipv6Addr::new(
        0x2001,
        0xdb8,
        0x64,
        0,
        0,
        0,
        u16::from_be_bytes([o[0], o[1]]),
        u16::from_be_bytes([o[2], o[3]]),
    )
}

/// Which bed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Kind {
    /// RFC 8219 §4.1: one DUT between the tester's ports.
    Single,
    /// RFC 8219 §4.2: two translators in series, IPv4 at both tester ports.
    Dual,
    /// No DUT: the tester's ports joined directly (its own ceiling).
    Loop,
}

/// Options of `bed up`.
#[derive(Debug, Clone)]
pub struct BedOptions {
    /// Middle part of the names: `sgb-NAME-left`…; empty: `sgb-left`….
    pub name: String,
    pub kind: Kind,
    /// Tester addresses per family on each side (pseudorandom addresses
    /// option): static neighbours for host offsets 0..hosts.
    pub hosts: u16,
}

impl Default for BedOptions {
    fn default() -> Self {
        BedOptions {
            name: String::new(),
            kind: Kind::Single,
            hosts: 1,
        }
    }
}

/// A bed's namespaces (created, or attached to an existing bed).
#[derive(Debug)]
pub struct Bed {
    pub kind: Kind,
    pub left: Netns,
    pub right: Netns,
    /// The DUTs: none (loop), one, or two (dual).
    pub duts: Vec<Netns>,
}

/// The namespace name of `role` in bed `name`.
pub fn ns_name(name: &str, role: &str) -> String {
    if name.is_empty() {
        format!("{PREFIX}{role}")
    } else {
        format!("{PREFIX}{name}-{role}")
    }
}

fn roles(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Single => &["left", "dut", "right"],
        Kind::Dual => &["left", "dut1", "dut2", "right"],
        Kind::Loop => &["left", "right"],
    }
}

fn exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// A command error from the bed, as text.
fn err(e: sixgate_netns::Error) -> String {
    e.to_string()
}

impl Bed {
    /// Create the bed; it stays when the value is dropped only after
    /// [`Bed::persist`] (otherwise drop removes it).
    pub fn up(opts: &BedOptions) -> Result<Bed, String> {
        for kind in [Kind::Single, Kind::Dual, Kind::Loop] {
            for role in roles(kind) {
                let n = ns_name(&opts.name, role);
                if exists(&n) {
                    return Err(format!(
                        "namespace {n} exists: a bed is already up (`sixgate bench bed down{}` removes it)",
                        name_flag(&opts.name)
                    ));
                }
            }
        }
        let mk = |role: &str| Netns::named(&ns_name(&opts.name, role)).map_err(err);
        let left = mk("left")?;
        let duts: Vec<Netns> = match opts.kind {
            Kind::Single => vec![mk("dut")?],
            Kind::Dual => vec![mk("dut1")?, mk("dut2")?],
            Kind::Loop => vec![],
        };
        let right = mk("right")?;
        let bed = Bed {
            kind: opts.kind,
            left,
            right,
            duts,
        };
        bed.configure(opts.hosts).map_err(err)?;
        Ok(bed)
    }

    /// The bed `name` that is up (whichever kind).
    pub fn attach(name: &str) -> Result<Bed, String> {
        for kind in [Kind::Single, Kind::Dual, Kind::Loop] {
            let names: Vec<String> = roles(kind).iter().map(|r| ns_name(name, r)).collect();
            if names.iter().all(|n| exists(n)) {
                let mut ns: Vec<Netns> = names
                    .iter()
                    .map(|n| Netns::attach(n).map_err(err))
                    .collect::<Result<_, _>>()?;
                let right = ns.pop().expect("two or more roles");
                let left = ns.remove(0);
                return Ok(Bed {
                    kind,
                    left,
                    right,
                    duts: ns,
                });
            }
        }
        Err(format!(
            "no bed is up (`sixgate bench bed up{}` makes one)",
            name_flag(name)
        ))
    }

    /// Keep the namespaces after this value is dropped.
    pub fn persist(self) -> Vec<String> {
        let mut names = vec![self.left.persist()];
        names.extend(self.duts.into_iter().map(Netns::persist));
        names.push(self.right.persist());
        names
    }

    /// Remove bed `name` (any kind), killing what runs inside; returns what
    /// was removed.
    pub fn down(name: &str) -> Vec<String> {
        let mut removed = Vec::new();
        for kind in [Kind::Single, Kind::Dual, Kind::Loop] {
            for role in roles(kind) {
                let n = ns_name(name, role);
                if exists(&n) && !removed.contains(&n) {
                    Netns::delete(&n);
                    removed.push(n);
                }
            }
        }
        removed
    }

    /// The namespaces, left to right.
    pub fn namespaces(&self) -> Vec<&Netns> {
        let mut v = vec![&self.left];
        v.extend(self.duts.iter());
        v.push(&self.right);
        v
    }

    fn configure(&self, hosts: u16) -> NsResult<()> {
        for t in [&self.left, &self.right] {
            t.sysctl(&[
                ("net.ipv6.conf.all.disable_ipv6", "1"),
                ("net.ipv6.conf.default.disable_ipv6", "1"),
            ])?;
        }
        let hosts = hosts.max(1);
        match self.kind {
            Kind::Loop => link(
                &self.left,
                TESTER_LEFT_IF,
                MAC_TESTER_LEFT,
                &self.right,
                TESTER_RIGHT_IF,
                MAC_TESTER_RIGHT,
            ),
            Kind::Single => {
                let dut = &self.duts[0];
                dut_sysctls(dut)?;
                link(
                    &self.left,
                    TESTER_LEFT_IF,
                    MAC_TESTER_LEFT,
                    dut,
                    DUT_LEFT_IF,
                    MAC_DUT_LEFT,
                )?;
                link(
                    dut,
                    DUT_RIGHT_IF,
                    MAC_DUT_RIGHT,
                    &self.right,
                    TESTER_RIGHT_IF,
                    MAC_TESTER_RIGHT,
                )?;
                let mut b = Batch::default();
                b.addr(DUT_LEFT_IF, &format!("{}/64", addr::LEFT6_DUT));
                b.addr(DUT_LEFT_IF, &format!("{}/24", addr::LEFT4_DUT));
                b.addr(DUT_RIGHT_IF, &format!("{}/24", addr::RIGHT4_DUT));
                b.addr(DUT_RIGHT_IF, &format!("{}/64", addr::RIGHT6_DUT));
                for k in 0..hosts {
                    b.tester_neigh(Side::Left, addr::LEFT6_TESTER.into(), k);
                    b.tester_neigh(Side::Left, addr::LEFT4_TESTER.into(), k);
                    b.tester_neigh(Side::Right, addr::RIGHT4_TESTER.into(), k);
                    b.tester_neigh(Side::Right, addr::RIGHT6_TESTER.into(), k);
                }
                b.run(dut)
            }
            Kind::Dual => {
                let (d1, d2) = (&self.duts[0], &self.duts[1]);
                dut_sysctls(d1)?;
                dut_sysctls(d2)?;
                link(
                    &self.left,
                    TESTER_LEFT_IF,
                    MAC_TESTER_LEFT,
                    d1,
                    DUT_LEFT_IF,
                    MAC_DUT_LEFT,
                )?;
                link(
                    d1,
                    DUT_MIDDLE_IF,
                    MAC_DUT1_MIDDLE,
                    d2,
                    DUT_MIDDLE_IF,
                    MAC_DUT2_MIDDLE,
                )?;
                link(
                    d2,
                    DUT_RIGHT_IF,
                    MAC_DUT_RIGHT,
                    &self.right,
                    TESTER_RIGHT_IF,
                    MAC_TESTER_RIGHT,
                )?;
                let mut b1 = Batch::default();
                b1.addr(DUT_LEFT_IF, &format!("{}/24", addr::LEFT4_DUT));
                b1.addr(DUT_MIDDLE_IF, &format!("{}/64", addr::MIDDLE6_DUT1));
                b1.addr(DUT_MIDDLE_IF, &format!("{}/24", addr::MIDDLE4_DUT1));
                b1.neigh(DUT_MIDDLE_IF, addr::MIDDLE6_DUT2.into(), MAC_DUT2_MIDDLE);
                b1.neigh(DUT_MIDDLE_IF, addr::MIDDLE4_DUT2.into(), MAC_DUT2_MIDDLE);
                let mut b2 = Batch::default();
                b2.addr(DUT_RIGHT_IF, &format!("{}/24", addr::RIGHT4_DUT));
                b2.addr(DUT_MIDDLE_IF, &format!("{}/64", addr::MIDDLE6_DUT2));
                b2.addr(DUT_MIDDLE_IF, &format!("{}/24", addr::MIDDLE4_DUT2));
                b2.neigh(DUT_MIDDLE_IF, addr::MIDDLE6_DUT1.into(), MAC_DUT1_MIDDLE);
                b2.neigh(DUT_MIDDLE_IF, addr::MIDDLE4_DUT1.into(), MAC_DUT1_MIDDLE);
                // Native IPv6 background traffic (RFC 8219 §5.2): the left
                // tester's IPv6 frames reach the right one's IPv6 address by
                // plain forwarding through both DUTs.
                b1.route(addr::RIGHT6_NET, addr::MIDDLE6_DUT2.into());
                b2.addr(DUT_RIGHT_IF, &format!("{}/64", addr::RIGHT6_DUT));
                for k in 0..hosts {
                    b1.tester_neigh(Side::Left, addr::LEFT4_TESTER.into(), k);
                    b2.tester_neigh(Side::Right, addr::RIGHT4_TESTER.into(), k);
                    b2.tester_neigh(Side::Right, addr::RIGHT6_TESTER.into(), k);
                }
                b1.run(d1)?;
                b2.run(d2)
            }
        }
    }

    /// A short description: namespaces, links and addresses.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.namespaces().iter().map(|n| n.name()).collect();
        let layout = match self.kind {
            Kind::Single => format!(
                "RFC 8219 §4.1 single DUT: {l}/{tl} -- {d}/{dl} [{d}] {d}/{dr} -- {r}/{tr}\n  \
                 left link {l6}/64 (DUT ::1, tester ::5), {l4}/24 (DUT .1, tester .5); \
                 right link {r4}/24 (DUT .1, tester .7), {r6}/64 (DUT ::1, tester ::7)",
                l = names[0],
                d = names[1],
                r = names[2],
                tl = TESTER_LEFT_IF,
                dl = DUT_LEFT_IF,
                dr = DUT_RIGHT_IF,
                tr = TESTER_RIGHT_IF,
                l6 = "2001:db8:1::",
                l4 = "192.0.2.0",
                r4 = "198.51.100.0",
                r6 = "2001:db8:2::",
            ),
            Kind::Dual => format!(
                "RFC 8219 §4.2 dual DUT: {} -- {} -- {} -- {}; IPv4 192.0.2.0/24 at the left, \
                 2001:db8:3::/64 (and 203.0.113.0/24) between the DUTs, 198.51.100.0/24 at the right",
                names[0], names[1], names[2], names[3]
            ),
            Kind::Loop => format!(
                "self-test loop: {}/{} -- {}/{} (no DUT)",
                names[0], TESTER_LEFT_IF, names[1], TESTER_RIGHT_IF
            ),
        };
        format!(
            "{layout}\n  static neighbours on every DUT link; tester namespaces have no addresses and IPv6 off"
        )
    }
}

/// RFC 8219 §5.2 background traffic: native IPv6 from the left tester port to
/// the right one's IPv6 address, forwarded by the DUT(s) without translation
/// (single bed: the DUT's right link has `2001:db8:2::/64`; dual bed: DUT1
/// routes it over the middle link to DUT2, which has that link).
pub fn background_flow() -> (IpAddr, IpAddr) {
    (addr::LEFT6_TESTER.into(), addr::RIGHT6_TESTER.into())
}

fn name_flag(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" --name {name}")
    }
}

/// `ip` + host offset `k` on the last 16 bits.
pub fn offset(ip: IpAddr, k: u16) -> IpAddr {
    match ip {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a).wrapping_add(u32::from(k)))),
        IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a).wrapping_add(u128::from(k)))),
    }
}

fn dut_sysctls(dut: &Netns) -> NsResult<()> {
    dut.sysctl(&[
        ("net.ipv6.conf.all.forwarding", "1"),
        ("net.ipv4.ip_forward", "1"),
        ("net.ipv4.conf.all.rp_filter", "0"),
        ("net.ipv4.conf.default.rp_filter", "0"),
        ("net.ipv6.conf.all.accept_ra", "0"),
        ("net.ipv6.conf.default.accept_ra", "0"),
    ])
}

/// A veth pair with fixed MAC addresses and [`QUEUES`] queues, both ends up.
fn link(a: &Netns, a_dev: &str, a_mac: Mac, b: &Netns, b_dev: &str, b_mac: Mac) -> NsResult<()> {
    let (a_mac, b_mac) = (a_mac.to_string(), b_mac.to_string());
    sixgate_netns::veth_with_macs(a, (a_dev, &a_mac), b, (b_dev, &b_mac), u32::from(QUEUES))
}

/// Which tester a DUT interface faces.
#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

/// `ip -batch` lines, so a bed with many host addresses is built in one call.
#[derive(Default)]
struct Batch(String);

impl Batch {
    fn addr(&mut self, dev: &str, cidr: &str) {
        let nodad = if cidr.contains(':') { " nodad" } else { "" };
        self.0
            .push_str(&format!("addr add {cidr} dev {dev}{nodad}\n"));
    }
    fn neigh(&mut self, dev: &str, ip: IpAddr, mac: Mac) {
        self.0.push_str(&format!(
            "neigh replace {ip} lladdr {mac} dev {dev} nud permanent\n"
        ));
    }
    /// The neighbour entry for tester host `k` (`first` + `k`) on the DUT's
    /// link to that side's tester.
    fn tester_neigh(&mut self, side: Side, first: IpAddr, k: u16) {
        let (dev, mac) = match side {
            Side::Left => (DUT_LEFT_IF, MAC_TESTER_LEFT),
            Side::Right => (DUT_RIGHT_IF, MAC_TESTER_RIGHT),
        };
        self.neigh(dev, offset(first, k), mac);
    }
    fn route(&mut self, prefix: &str, via: IpAddr) {
        self.0
            .push_str(&format!("route replace {prefix} via {via}\n"));
    }
    fn run(self, ns: &Netns) -> NsResult<()> {
        let dir = sixgate_netns::ScratchDir::new("sgb")?;
        let path = dir.write("batch", &self.0)?;
        ns.ip(["-batch", &path.to_string_lossy()]).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_offsets() {
        assert_eq!(ns_name("", "left"), "sgb-left");
        assert_eq!(ns_name("t1", "dut"), "sgb-t1-dut");
        assert_eq!(
            offset("2001:db8:1::5".parse().unwrap(), 3),
            "2001:db8:1::8".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            offset("192.0.2.5".parse().unwrap(), 250),
            "192.0.2.255".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            in_pool6(addr::RIGHT4_TESTER),
            "2001:db8:64::c633:6407".parse::<Ipv6Addr>().unwrap()
        );
    }
}
