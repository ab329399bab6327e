//! The 464XLAT chain (RFC 6877; the set-up of Lencse & Nagy 2022): an IPv4-only
//! client behind a CLAT, an IPv6-only core network, a PLAT and an IPv4-only
//! server, each in its own namespace, all on documentation prefixes.
//!
//! ```text
//!  client           clat                        core                        plat                          server
//!  eth0 ──────── eth4     eth6 ──────────── eth0    eth1 ──────────── eth6     eth4 ───────────── eth0
//!  192.0.0.2/29  192.0.0.1/29                2001:db8:a::1/64             2001:db8:b::2/64              203.0.113.7/24
//!                2001:db8:a::2/64            2001:db8:b::1/64             203.0.113.1/24
//!  default via   CLAT (TUN):                 c1a7::/125 via clat          PLAT (TUN):                   default via
//!  192.0.0.1     0.0.0.0/0 and               64::/96 via plat             2001:db8:64::/96 and          203.0.113.1
//!                2001:db8:c1a7::/125 in it   DNS: ipv4only.arpa AAAA      the IPv4 pool in it
//! ```
//!
//! The same five namespaces carry MAP-T (RFC 7599; [`Chain::build_mapt`], see
//! [`mapt`]): the client is a LAN host behind a MAP-T CE where the CLAT was, the
//! core routes the CE's End-user prefix to it, and a MAP-T BR stands where the
//! PLAT was, with the DMR where the PLAT prefix was. [`Chain::add_mapt_customer`]
//! adds a second client and CE on a third core link, for two CEs sharing one IPv4
//! address.
//!
//! The CLAT maps the client range 192.0.0.0/29 to its IPv6 prefix
//! 2001:db8:c1a7::/125 (RFC 6877 §6.3) and embeds IPv4 destinations in the PLAT
//! prefix 2001:db8:64::/96, which it learns from the core's DNS server (RFC 7050:
//! `ipv4only.arpa` AAAA `2001:db8:64::192.0.0.170` and `…171`, served by dnsmasq).
//! The PLAT is sixgate in `nat64` mode (pool4 [`addr::PLAT_POOL4`]), or, as a
//! stand-in, sixgate in `siit` mode with one EAM entry mapping the CLAT prefix to
//! [`addr::PLAT_EAM_V4`]; either way the server sees the client as an address of
//! 198.18.0.0/24, which the server's default route sends back to the PLAT.

use std::path::Path;
use std::time::Duration;

use crate::dut::{Dataplane, RunningDut, SIXGATE_TUN, start_sixgate_with_config};
use crate::error::{Context, Result};
use crate::netns::{Netns, Proto, veth, veth_queues};
use crate::process::Background;

/// Addresses and prefixes of the chain.
pub mod addr {
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// The IPv4-only client, inside the CLAT's IPv4 range.
    pub const CLIENT: Ipv4Addr = Ipv4Addr::new(192, 0, 0, 2);
    /// The CLAT gateway on the client's link (the client's default router).
    pub const CLAT_LAN: Ipv4Addr = Ipv4Addr::new(192, 0, 0, 1);
    /// The customer-side IPv4 range (RFC 7335), `[clat] ipv4`.
    pub const CLAT_V4: &str = "192.0.0.0/29";
    /// Prefix length of the client's link.
    pub const CLAT_LAN_LEN: u8 = 29;
    /// The CLAT's dedicated IPv6 prefix (RFC 6877 §6.3), `[clat] ipv6`.
    pub const CLAT_V6: &str = "2001:db8:c1a7::/125";
    /// The client as the IPv6 network sees it.
    pub const CLIENT_AS_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc1a7, 0, 0, 0, 0, 2);

    /// The CLAT gateway on the core link.
    pub const CLAT_UPLINK: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 2);
    /// The core router on the CLAT's link; also the DNS server.
    pub const CORE_CLAT_SIDE: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 1);
    /// The core router on the PLAT's link.
    pub const CORE_PLAT_SIDE: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xb, 0, 0, 0, 0, 1);
    /// The PLAT gateway on the core link.
    pub const PLAT_UPLINK: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xb, 0, 0, 0, 0, 2);
    /// Prefix length of the IPv6 links.
    pub const V6_LINK_LEN: u8 = 64;
    /// The DNS server the CLAT asks for `ipv4only.arpa` (RFC 7050).
    pub const DNS_SERVER: Ipv6Addr = CORE_CLAT_SIDE;

    /// The PLAT prefix (RFC 6052), what discovery must find.
    pub const PLAT_PREFIX: &str = "2001:db8:64::/96";
    /// A different prefix, the CLAT's fallback: traffic only gets through if
    /// discovery found [`PLAT_PREFIX`].
    pub const FALLBACK_PREFIX: &str = "64:ff9b::/96";

    /// The PLAT gateway on the server's link (the server's default router).
    pub const PLAT_LAN: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
    /// The IPv4-only server.
    pub const SERVER: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 7);
    /// Prefix length of the server's link.
    pub const SERVER_LINK_LEN: u8 = 24;
    /// The server as the IPv6 core sees it: embedded in the PLAT prefix.
    pub const SERVER_AS_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xcb00, 0x7107);

    /// pool4 of the NAT64 PLAT.
    pub const PLAT_POOL4: &str = "198.18.0.0/24";
    /// The IPv4 side of the stand-in PLAT's EAM entry (for [`CLAT_V6`]).
    pub const PLAT_EAM_V4: &str = "198.18.0.0/29";
    /// The client as the server sees it through the stand-in PLAT.
    pub const CLIENT_AS_V4_SIIT: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
}

/// Interface names of the chain.
pub mod ifname {
    /// The client's interface.
    pub const CLIENT: &str = "eth0";
    /// The CLAT's interface to the client (IPv4).
    pub const CLAT_LAN: &str = "eth4";
    /// The CLAT's interface to the core (IPv6).
    pub const CLAT_UPLINK: &str = "eth6";
    /// The core's interface to the CLAT.
    pub const CORE_CLAT: &str = "eth0";
    /// The core's interface to the PLAT.
    pub const CORE_PLAT: &str = "eth1";
    /// The PLAT's interface to the core (IPv6).
    pub const PLAT_UPLINK: &str = "eth6";
    /// The PLAT's interface to the server (IPv4).
    pub const PLAT_LAN: &str = "eth4";
    /// The server's interface.
    pub const SERVER: &str = "eth0";
}

/// The CLAT's configuration: discovery from the core's DNS server, with a
/// fallback that does not work on this chain (so only discovery makes it work).
pub const CLAT_TOML: &str = r#"[translator]
mode = "clat"
pool6 = "64:ff9b::/96"

[clat]
ipv4 = "192.0.0.0/29"
ipv6 = "2001:db8:c1a7::/125"
plat_prefix = "discover"
dns_server = "2001:db8:a::1"

[tun]
name = "sixgate0"
"#;

/// The stand-in PLAT: SIIT with the CLAT prefix as an EAM entry.
pub const PLAT_SIIT_TOML: &str = r#"[translator]
mode = "siit"
pool6 = "2001:db8:64::/96"
eam = [ { ipv4 = "198.18.0.0/29", ipv6 = "2001:db8:c1a7::/125" } ]

[tun]
name = "sixgate0"
"#;

/// The PLAT proper: stateful NAT64 (RFC 6146).
pub const PLAT_NAT64_TOML: &str = r#"[translator]
mode = "nat64"
pool6 = "2001:db8:64::/96"

[nat64]
pool4 = ["198.18.0.0/24"]

[tun]
name = "sixgate0"
"#;

/// Which translator the PLAT gateway runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plat {
    /// sixgate `mode = "nat64"` ([`PLAT_NAT64_TOML`]): the real 464XLAT PLAT.
    Nat64,
    /// sixgate `mode = "siit"` with an EAM entry for the CLAT prefix
    /// ([`PLAT_SIIT_TOML`]): stateless, enough to carry the chain.
    SiitStandIn,
}

impl Plat {
    /// Its configuration file.
    pub fn toml(self) -> &'static str {
        match self {
            Plat::Nat64 => PLAT_NAT64_TOML,
            Plat::SiitStandIn => PLAT_SIIT_TOML,
        }
    }

    /// The routes into its TUN device that say it is ready.
    pub fn routes(self) -> [&'static str; 2] {
        match self {
            Plat::Nat64 => [addr::PLAT_PREFIX, addr::PLAT_POOL4],
            Plat::SiitStandIn => [addr::PLAT_PREFIX, addr::PLAT_EAM_V4],
        }
    }

    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            Plat::Nat64 => "sixgate nat64 (RFC 6146)",
            Plat::SiitStandIn => "sixgate siit stand-in (EAM for the CLAT prefix)",
        }
    }
}

/// A hosts(5) file for [`Chain::start_dns_from`]: `ipv4only.arpa` at the two
/// Well-Known IPv4 Addresses (RFC 7050 §2) in the /96 prefix `prefix` ("2001:db8:64::").
pub fn ipv4only_hosts(prefix: &str) -> String {
    format!("{prefix}c000:aa ipv4only.arpa\n{prefix}c000:ab ipv4only.arpa\n")
}

/// The five namespaces of the chain, configured and routed, without translators.
/// Everything is removed on drop.
#[derive(Debug)]
pub struct Chain {
    /// The IPv4-only client.
    pub client: Netns,
    /// The CLAT gateway (forwarding on); the MAP-T CE in a MAP-T chain.
    pub clat: Netns,
    /// The IPv6-only core router, with the DNS server.
    pub core: Netns,
    /// The PLAT gateway (forwarding on); the MAP-T BR in a MAP-T chain.
    pub plat: Netns,
    /// The IPv4-only server.
    pub server: Netns,
    /// Built by [`Chain::build_mapt`]: the gateways are a MAP-T CE and BR.
    mapt: bool,
}

impl Chain {
    /// Create and wire the namespaces. On error, whatever was made is removed.
    pub fn build() -> Result<Chain> {
        let c = Chain::namespaces_named(["client", "clat", "core", "plat", "server"], false)?;
        c.wire(addr::CLAT_V6)
            .context("building the 464XLAT chain")?;
        Ok(c)
    }

    /// The MAP-T chain (RFC 7599): the same namespaces and links, the core routing
    /// the first CE's End-user prefix ([`mapt::addr::CE1_END_USER`]) to the CE.
    pub fn build_mapt() -> Result<Chain> {
        let c =
            Chain::namespaces_named(["maptlan", "maptce", "maptcore", "maptbr", "maptsrv"], true)?;
        c.wire(mapt::addr::CE1_END_USER)
            .context("building the MAP-T chain")?;
        Ok(c)
    }

    fn namespaces_named(roles: [&str; 5], mapt: bool) -> Result<Chain> {
        let n = crate::next_index();
        Ok(Chain {
            client: Netns::with_index(roles[0], n)?,
            clat: Netns::with_index(roles[1], n)?,
            core: Netns::with_index(roles[2], n)?,
            plat: Netns::with_index(roles[3], n)?,
            server: Netns::with_index(roles[4], n)?,
            mapt,
        })
    }

    /// `customer`: the IPv6 prefix the core routes to the customer gateway.
    fn wire(&self, customer: &str) -> Result<()> {
        use addr::*;
        veth(&self.client, ifname::CLIENT, &self.clat, ifname::CLAT_LAN)?;
        veth(
            &self.clat,
            ifname::CLAT_UPLINK,
            &self.core,
            ifname::CORE_CLAT,
        )?;
        // A MAP-T BR's links have two queues: on XDP it then runs two
        // workers, and fragments meet on one through the handoff.
        let q = if self.mapt { 2 } else { 1 };
        veth_queues(
            &self.core,
            ifname::CORE_PLAT,
            &self.plat,
            ifname::PLAT_UPLINK,
            q,
        )?;
        veth_queues(
            &self.plat,
            ifname::PLAT_LAN,
            &self.server,
            ifname::SERVER,
            q,
        )?;

        let v6 = |a: std::net::Ipv6Addr| format!("{a}/{V6_LINK_LEN}");
        self.client
            .add_address(ifname::CLIENT, &format!("{CLIENT}/{CLAT_LAN_LEN}"))?;
        self.client
            .add_route_via("default", &CLAT_LAN.to_string())?;

        for gw in [&self.clat, &self.plat] {
            gw.enable_forwarding()?;
            // Errors of the gateways themselves are not rate limited: tests must
            // not depend on timing.
            gw.sysctl(&[
                ("net.ipv6.icmp.ratelimit", "0"),
                ("net.ipv4.icmp_ratelimit", "0"),
            ])?;
        }
        self.clat
            .add_address(ifname::CLAT_LAN, &format!("{CLAT_LAN}/{CLAT_LAN_LEN}"))?;
        self.clat
            .add_address(ifname::CLAT_UPLINK, &v6(CLAT_UPLINK))?;
        self.clat
            .add_route_via("default", &CORE_CLAT_SIDE.to_string())?;

        self.core.enable_forwarding()?;
        self.core
            .add_address(ifname::CORE_CLAT, &v6(CORE_CLAT_SIDE))?;
        self.core
            .add_address(ifname::CORE_PLAT, &v6(CORE_PLAT_SIDE))?;
        self.core
            .add_route_via(customer, &CLAT_UPLINK.to_string())?;
        self.core
            .add_route_via(PLAT_PREFIX, &PLAT_UPLINK.to_string())?;

        self.plat
            .add_address(ifname::PLAT_UPLINK, &v6(PLAT_UPLINK))?;
        self.plat
            .add_route_via("default", &CORE_PLAT_SIDE.to_string())?;
        self.plat
            .add_address(ifname::PLAT_LAN, &format!("{PLAT_LAN}/{SERVER_LINK_LEN}"))?;

        self.server
            .add_address(ifname::SERVER, &format!("{SERVER}/{SERVER_LINK_LEN}"))?;
        self.server.add_route_via("default", &PLAT_LAN.to_string())
    }

    /// The five namespaces, from the client to the server.
    pub fn namespaces(&self) -> [&Netns; 5] {
        [
            &self.client,
            &self.clat,
            &self.core,
            &self.plat,
            &self.server,
        ]
    }

    /// The DNS server of the core: dnsmasq answering `ipv4only.arpa` AAAA with
    /// the two Well-Known IPv4 Addresses in the PLAT prefix, as a DNS64 would
    /// (RFC 7050 §2), TTL 300 s, and nothing else. Ready when it listens on port 53.
    pub fn start_dns(&self) -> Result<Background> {
        self.start_dnsmasq(&[
            "--local-ttl=300",
            "--host-record=ipv4only.arpa,2001:db8:64::c000:aa",
            "--host-record=ipv4only.arpa,2001:db8:64::c000:ab",
        ])
    }

    /// [`Chain::start_dns`] answering from `hosts` (see [`ipv4only_hosts`]) with
    /// TTL `ttl`: rewrite the file and send the server SIGHUP, and the answer
    /// changes (RFC 7050 §3 refresh).
    pub fn start_dns_from(&self, hosts: &Path, ttl: u32) -> Result<Background> {
        self.start_dnsmasq(&[
            &format!("--local-ttl={ttl}"),
            &format!("--addn-hosts={}", hosts.display()),
        ])
    }

    fn start_dnsmasq(&self, answers: &[&str]) -> Result<Background> {
        let server = addr::DNS_SERVER.to_string();
        let listen = format!("--listen-address={server}");
        let mut args = vec![
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            &listen,
            "--user=root",
            "--pid-file",
            "--log-facility=-",
            "--log-queries",
        ];
        args.extend_from_slice(answers);
        let dns = self.core.spawn("dnsmasq", args)?;
        self.core
            .wait_listening(Proto::Udp, 53, Duration::from_secs(10))
            .context("waiting for dnsmasq")?;
        Ok(dns)
    }

    /// Start the CLAT ([`CLAT_TOML`]) and wait until its routes point into it
    /// (after discovery: sixgate asks the DNS server before it sets anything up).
    pub fn start_clat<'a>(&'a self, binary: &Path) -> Result<RunningDut<'a>> {
        self.start_clat_on(binary, Dataplane::Tun)
    }

    /// [`Chain::start_clat`] on data plane `dataplane`. On XDP its interfaces
    /// are `eth6` (core side) and `eth4` (client side), and the client and the
    /// server send complete checksums (`ethtool -K eth0 tx off`: veth would hand
    /// the CLAT partial ones, docs/xdp.md).
    pub fn start_clat_on<'a>(
        &'a self,
        binary: &Path,
        dataplane: Dataplane,
    ) -> Result<RunningDut<'a>> {
        match dataplane {
            Dataplane::Tun => start_sixgate_with_config(
                &self.clat,
                binary,
                CLAT_TOML,
                &["0.0.0.0/0", addr::CLAT_V6],
            ),
            Dataplane::Xdp => {
                self.complete_checksums(&self.client)?;
                let config = on_xdp(CLAT_TOML);
                start_sixgate_with_config(&self.clat, binary, &config, &[])
            }
        }
    }

    /// Before a translator on XDP: the client `lan_host` and the server send
    /// complete checksums (`ethtool -K eth0 tx off`: veth would hand the
    /// translator partial ones, docs/xdp.md).
    fn complete_checksums(&self, lan_host: &Netns) -> Result<()> {
        lan_host.run("ethtool", ["-K", ifname::CLIENT, "tx", "off"])?;
        self.server
            .run("ethtool", ["-K", ifname::SERVER, "tx", "off"])?;
        Ok(())
    }

    /// Start the PLAT.
    pub fn start_plat<'a>(&'a self, binary: &Path, plat: Plat) -> Result<RunningDut<'a>> {
        start_sixgate_with_config(&self.plat, binary, plat.toml(), &plat.routes())
    }

    /// A table of the chain for people: role, namespace, addresses.
    pub fn describe(&self) -> String {
        use addr::*;
        let (customer, provider) = if self.mapt {
            (
                format!(
                    "MAP-T CE: LAN {CLAT_V4}, End-user prefix {}",
                    mapt::addr::CE1_END_USER
                ),
                format!(
                    "MAP-T BR: DMR {}, rule {}",
                    mapt::addr::DMR,
                    mapt::addr::RULE_V4
                ),
            )
        } else {
            (
                format!("CLAT: {CLAT_V4} <-> {CLAT_V6}"),
                format!("PLAT: pool6 {PLAT_PREFIX}"),
            )
        };
        let rows = [
            (
                "IPv4-only client",
                &self.client,
                format!("{CLIENT}/{CLAT_LAN_LEN}"),
            ),
            (
                "customer gateway",
                &self.clat,
                format!("{CLAT_LAN}/{CLAT_LAN_LEN} | {CLAT_UPLINK}/{V6_LINK_LEN}, {customer}"),
            ),
            (
                "IPv6-only core",
                &self.core,
                format!("{CORE_CLAT_SIDE}/{V6_LINK_LEN} | {CORE_PLAT_SIDE}/{V6_LINK_LEN}"),
            ),
            (
                "provider gateway",
                &self.plat,
                format!("{PLAT_UPLINK}/{V6_LINK_LEN} | {PLAT_LAN}/{SERVER_LINK_LEN}, {provider}"),
            ),
            (
                "IPv4-only server",
                &self.server,
                format!("{SERVER}/{SERVER_LINK_LEN}"),
            ),
        ];
        let w = rows.iter().map(|r| r.1.name().len()).max().unwrap_or(0);
        rows.iter()
            .map(|(role, ns, a)| format!("  {role:<16} {:<w$}  {a}\n", ns.name()))
            .collect()
    }
}

/// A chain translator's TUN configuration `toml` moved to XDP: its `[tun]`
/// section replaced by `[xdp]` on the gateway's `eth6` (uplink, IPv6) and `eth4`
/// (LAN, IPv4), and `dataplane = "xdp"` in its `[daemon]` (added if it has
/// none); both gateways of the chain name their interfaces alike.
pub fn on_xdp(toml: &str) -> String {
    let xdp = format!(
        "[xdp]\nipv6_interface = \"{}\"\nipv4_interface = \"{}\"\n",
        ifname::CLAT_UPLINK,
        ifname::CLAT_LAN
    );
    let tun = format!("[tun]\nname = \"{CHAIN_TUN}\"\n");
    if toml.contains("[daemon]\n") {
        toml.replace(&tun, &xdp)
            .replacen("[daemon]\n", "[daemon]\ndataplane = \"xdp\"\n", 1)
    } else {
        toml.replace(&tun, &format!("[daemon]\ndataplane = \"xdp\"\n\n{xdp}"))
    }
}

/// The TUN device both translators of the chain use (one per namespace).
pub const CHAIN_TUN: &str = SIXGATE_TUN;

/// MAP-T on the chain (RFC 7599): Lencse & Nagy's example domain with the chain's
/// addresses. BMR 2001:db8:ce::/51 ↔ 198.18.0.0/24, 13 EA bits, PSID offset 0:
/// 5-bit PSIDs, 2048 ports each. Both CEs are 198.18.0.8; the first has PSID 27
/// (ports 55296–57343), the second PSID 28 (57344–59391). The DMR is the PLAT
/// prefix, so the server has the same IPv6 face as in 464XLAT.
pub mod mapt {
    use super::*;

    /// Addresses of the MAP-T chain (the rest are [`super::addr`]'s).
    pub mod addr {
        use std::net::{Ipv4Addr, Ipv6Addr};

        /// The Default Mapping Rule (= the PLAT prefix of the 464XLAT chain).
        pub const DMR: &str = super::super::addr::PLAT_PREFIX;
        /// The BMR's IPv4 prefix, routed into the BR.
        pub const RULE_V4: &str = "198.18.0.0/24";
        /// The IPv4 address both CEs share.
        pub const SHARED_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 8);
        /// The first CE's End-user prefix: EA bits 0x11b (suffix 8, PSID 27).
        pub const CE1_END_USER: &str = "2001:db8:ce:11b::/64";
        /// Its MAP address (RFC 7597 §5.2).
        pub const CE1_MAP: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11b, 0, 0xc612, 8, 0x1b);
        /// Its ports.
        pub const CE1_PORTS: std::ops::RangeInclusive<u16> = 55296..=57343;
        /// The second CE's End-user prefix: PSID 28.
        pub const CE2_END_USER: &str = "2001:db8:ce:11c::/64";
        /// Its MAP address.
        pub const CE2_MAP: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xce, 0x11c, 0, 0xc612, 8, 0x1c);
        /// Its ports.
        pub const CE2_PORTS: std::ops::RangeInclusive<u16> = 57344..=59391;
        /// The second CE's uplink and the core on that link.
        pub const CE2_UPLINK: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 2);
        /// The core router on the second CE's link.
        pub const CORE_CE2_SIDE: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 1);
        /// The core's interface to the second CE.
        pub const CORE_CE2_IF: &str = "eth2";
    }

    const RULE: &str = "bmr = [ { ipv6_prefix = \"2001:db8:ce::/51\", ipv4_prefix = \"198.18.0.0/24\", ea_bits = 13, psid_offset = 0 } ]";

    /// The BR's configuration.
    pub fn br_toml() -> String {
        format!(
            "[translator]\nmode = \"mapt-br\"\n\n[mapt]\ndmr = \"{}\"\n{RULE}\n\n[tun]\nname = \"{CHAIN_TUN}\"\n",
            addr::DMR
        )
    }

    /// A CE's configuration, for End-user prefix `end_user`.
    pub fn ce_toml(end_user: &str) -> String {
        format!(
            "[translator]\nmode = \"mapt-ce\"\n\n[mapt]\ndmr = \"{}\"\n{RULE}\nend_user_prefix = \"{end_user}\"\nlan = \"{}\"\n\n[tun]\nname = \"{CHAIN_TUN}\"\n",
            addr::DMR,
            super::addr::CLAT_V4
        )
    }

    /// A second customer: a client behind a CE on a link of its own to the core,
    /// with the same LAN addresses as the first. Removed on drop.
    #[derive(Debug)]
    pub struct Customer {
        /// The LAN host.
        pub client: Netns,
        /// Its CE.
        pub ce: Netns,
    }

    impl Chain {
        /// Add the second customer ([`addr::CE2_END_USER`]) to a MAP-T chain.
        pub fn add_mapt_customer(&self) -> Result<Customer> {
            let n = crate::next_index();
            let c = Customer {
                client: Netns::with_index("maptlan", n)?,
                ce: Netns::with_index("maptce", n)?,
            };
            self.wire_customer(&c)
                .context("adding the second MAP-T customer")?;
            Ok(c)
        }

        fn wire_customer(&self, c: &Customer) -> Result<()> {
            use super::addr::*;
            veth(&c.client, ifname::CLIENT, &c.ce, ifname::CLAT_LAN)?;
            veth(&c.ce, ifname::CLAT_UPLINK, &self.core, addr::CORE_CE2_IF)?;
            c.client
                .add_address(ifname::CLIENT, &format!("{CLIENT}/{CLAT_LAN_LEN}"))?;
            c.client.add_route_via("default", &CLAT_LAN.to_string())?;
            c.ce.enable_forwarding()?;
            c.ce.sysctl(&[
                ("net.ipv6.icmp.ratelimit", "0"),
                ("net.ipv4.icmp_ratelimit", "0"),
            ])?;
            c.ce.add_address(ifname::CLAT_LAN, &format!("{CLAT_LAN}/{CLAT_LAN_LEN}"))?;
            c.ce.add_address(
                ifname::CLAT_UPLINK,
                &format!("{}/{V6_LINK_LEN}", addr::CE2_UPLINK),
            )?;
            c.ce.add_route_via("default", &addr::CORE_CE2_SIDE.to_string())?;
            self.core.add_address(
                addr::CORE_CE2_IF,
                &format!("{}/{V6_LINK_LEN}", addr::CORE_CE2_SIDE),
            )?;
            self.core
                .add_route_via(addr::CE2_END_USER, &addr::CE2_UPLINK.to_string())
        }

        /// Start the BR in the PLAT's place; ready when the DMR and the rule's
        /// IPv4 prefix are routed into it.
        pub fn start_mapt_br<'a>(&'a self, binary: &Path) -> Result<RunningDut<'a>> {
            self.start_mapt_br_on(binary, Dataplane::Tun, "")
        }

        /// [`Chain::start_mapt_br`] with `extra` TOML after the BR's configuration
        /// (e.g. `[daemon]` `workers = 2`).
        pub fn start_mapt_br_with<'a>(
            &'a self,
            binary: &Path,
            extra: &str,
        ) -> Result<RunningDut<'a>> {
            self.start_mapt_br_on(binary, Dataplane::Tun, extra)
        }

        /// [`Chain::start_mapt_br_with`] on `dataplane` (XDP: `eth6` to the
        /// core, `eth4` to the server, which sends complete checksums).
        pub fn start_mapt_br_on<'a>(
            &'a self,
            binary: &Path,
            dataplane: Dataplane,
            extra: &str,
        ) -> Result<RunningDut<'a>> {
            let config = format!("{}{extra}", br_toml());
            match dataplane {
                Dataplane::Tun => start_sixgate_with_config(
                    &self.plat,
                    binary,
                    &config,
                    &[addr::DMR, addr::RULE_V4],
                ),
                Dataplane::Xdp => {
                    self.complete_checksums(&self.client)?;
                    start_sixgate_with_config(&self.plat, binary, &on_xdp(&config), &[])
                }
            }
        }

        /// Start the first CE in the CLAT's place.
        pub fn start_mapt_ce<'a>(&'a self, binary: &Path) -> Result<RunningDut<'a>> {
            self.start_mapt_ce_on(binary, Dataplane::Tun)
        }

        /// [`Chain::start_mapt_ce`] on `dataplane`.
        pub fn start_mapt_ce_on<'a>(
            &'a self,
            binary: &Path,
            dataplane: Dataplane,
        ) -> Result<RunningDut<'a>> {
            if dataplane == Dataplane::Xdp {
                self.complete_checksums(&self.client)?;
            }
            start_ce(
                &self.clat,
                binary,
                addr::CE1_END_USER,
                addr::CE1_MAP,
                dataplane,
            )
        }
    }

    impl Customer {
        /// Start its CE.
        pub fn start_ce<'a>(&'a self, binary: &Path) -> Result<RunningDut<'a>> {
            self.start_ce_on(binary, Dataplane::Tun)
        }

        /// [`Customer::start_ce`] on `dataplane` (XDP: its LAN host sends
        /// complete checksums).
        pub fn start_ce_on<'a>(
            &'a self,
            binary: &Path,
            dataplane: Dataplane,
        ) -> Result<RunningDut<'a>> {
            if dataplane == Dataplane::Xdp {
                self.client
                    .run("ethtool", ["-K", ifname::CLIENT, "tx", "off"])?;
            }
            start_ce(
                &self.ce,
                binary,
                addr::CE2_END_USER,
                addr::CE2_MAP,
                dataplane,
            )
        }
    }

    fn start_ce<'a>(
        ns: &'a Netns,
        binary: &Path,
        end_user: &str,
        map: std::net::Ipv6Addr,
        dataplane: Dataplane,
    ) -> Result<RunningDut<'a>> {
        let map = format!("{map}/128");
        match dataplane {
            Dataplane::Tun => {
                start_sixgate_with_config(ns, binary, &ce_toml(end_user), &["0.0.0.0/0", &map])
            }
            Dataplane::Xdp => {
                start_sixgate_with_config(ns, binary, &on_xdp(&ce_toml(end_user)), &[])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_match_the_addresses() {
        for t in [CLAT_TOML, PLAT_SIIT_TOML, PLAT_NAT64_TOML] {
            assert!(t.contains(addr::PLAT_PREFIX) || t.contains(addr::FALLBACK_PREFIX));
            assert!(t.contains(&format!("name = \"{CHAIN_TUN}\"")));
        }
        assert!(CLAT_TOML.contains(addr::CLAT_V4) && CLAT_TOML.contains(addr::CLAT_V6));
        assert!(CLAT_TOML.contains(&format!("dns_server = \"{}\"", addr::DNS_SERVER)));
        assert!(CLAT_TOML.contains(addr::FALLBACK_PREFIX));
        assert!(
            PLAT_SIIT_TOML.contains(addr::PLAT_EAM_V4) && PLAT_SIIT_TOML.contains(addr::CLAT_V6)
        );
        assert!(PLAT_NAT64_TOML.contains(addr::PLAT_POOL4));
        assert_eq!(addr::CLIENT_AS_V6.to_string(), "2001:db8:c1a7::2");
        assert_eq!(addr::SERVER_AS_V6.to_string(), "2001:db8:64::cb00:7107");
        // MAP-T: the configurations load, and their numbers are the ones named.
        let br = sixgate_config::parse(&mapt::br_toml(), "br").unwrap();
        assert!(br.config.mapt.is_some());
        for (eup, map) in [
            (mapt::addr::CE1_END_USER, mapt::addr::CE1_MAP),
            (mapt::addr::CE2_END_USER, mapt::addr::CE2_MAP),
        ] {
            let l = sixgate_config::parse(&mapt::ce_toml(eup), "ce").unwrap();
            let ce = l.config.mapt.as_ref().unwrap().ce().unwrap().clone();
            assert_eq!((ce.map_address, ce.ipv4), (map, mapt::addr::SHARED_V4));
        }
    }
}
