//! The translator's run-time configuration, already validated.
//!
//! This is the core's view: typed, checked values. The TOML schema, defaults and
//! error messages live in the `sixgate-config` crate, which builds one of these.

use crate::addr::{EamTable, Mapper, Rfc6052Prefix};
use std::net::{Ipv4Addr, Ipv6Addr};

/// RFC 7915 §4.5: what to do with an unfragmented IPv4 UDP packet whose checksum is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UdpZeroChecksum {
    /// Compute the checksum (full sum: the only place the core sums a whole payload).
    #[default]
    Compute,
    /// Drop the packet and count it.
    Drop,
}

/// RFC 1812 §5.3.7: what to do with a packet whose source or destination is in
/// 240.0.0.0/4 ("Class E", reserved by RFC 1112 §4), 255.255.255.255 aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClassE {
    /// Drop it as no router forwards it (`bad_source` / `bad_destination`):
    /// RFC 1812 §5.3.7 lets a router switch the check off, but "it MUST
    /// default to performing the checks".
    #[default]
    Drop,
    /// Translate it like any unicast address (networks that number hosts in
    /// 240/4). The limited broadcast 255.255.255.255 is still dropped, and so is
    /// 240/4 embedded in the Well-Known Prefix (RFC 6052 §3.1, `wkp_strict`).
    Translate,
}

/// RFC 7757 §4: how packets from an EAM'd IPv6 address to an EAM'd IPv4 address return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HairpinMode {
    /// Never hairpin: such packets are dropped (`hairpin`).
    Off,
    /// §4.2 "simple": hairpin only ICMP errors whose source is the IPv6 side of an EAM.
    Simple,
    /// §4.3 "intrinsic": hairpin every packet whose IPv4 destination is an EAM's IPv4 side.
    #[default]
    Intrinsic,
}

/// Validated translator configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address mapping: pool6 (RFC 6052), EAM (RFC 7757), the §3.1 well-known-prefix rule.
    pub map: Mapper,
    /// RFC 7757 §4 hairpinning.
    pub hairpin: HairpinMode,
    /// RFC 6791: IPv4 sources for translated ICMPv6 errors whose IPv6 source cannot be
    /// mapped. Chosen by a hash of the original source, never by an RNG per packet.
    /// Empty: use `icmp_source_v4`.
    pub rfc6791_v4: Vec<Ipv4Addr>,
    /// IPv6 source for translated ICMPv4 errors whose IPv4 source cannot be mapped.
    /// `None`: such errors are dropped (`source_untranslatable`).
    pub rfc6791_v6: Option<Ipv6Addr>,
    /// Source of ICMPv4 errors the translator generates. Default 192.0.0.8 (RFC 7600).
    pub icmp_source_v4: Ipv4Addr,
    /// Source of ICMPv6 errors the translator generates.
    pub icmp_source_v6: Ipv6Addr,
    /// RFC 7915 §4.1: set the IPv6 Traffic Class to zero instead of copying the TOS.
    pub reset_traffic_class: bool,
    /// RFC 7915 §5.1: set the IPv4 TOS to `new_tos` instead of copying the Traffic Class.
    pub reset_tos: bool,
    /// TOS used when `reset_tos` is set.
    pub new_tos: u8,
    /// RFC 7915 §4 / §1.2: IPv4 packets with DF=0 are fragmented so that no IPv6 packet
    /// exceeds this; and the floor for MTUs in translated Packet Too Big messages.
    pub lowest_ipv6_mtu: u16,
    /// MTU of the link translated IPv4 packets leave by. `None`: the operating system
    /// enforces it (TUN). When set, an IPv6 packet without a Fragment header
    /// whose IPv4 form exceeds it gets an ICMPv6 Packet Too Big (RFC 7915 §5.1,
    /// §5.4); an IPv6 fragment is fragmented further.
    pub ipv4_mtu: Option<u16>,
    /// MTU of the link translated IPv6 packets leave by. `None`: the operating system
    /// enforces it. When set, DF=1 IPv4 packets that would exceed it get an ICMPv4
    /// Fragmentation Needed (RFC 7915 §4.4) and DF=0 ones are fragmented to fit.
    pub ipv6_mtu: Option<u16>,
    /// RFC 7915 §4.2 / RFC 1191 §7: plateaus used when a Fragmentation Needed carries MTU 0.
    /// Sorted descending.
    pub mtu_plateaus: Vec<u16>,
    /// RFC 7915 §4.5 policy for zero UDP checksums.
    pub udp_zero_checksum: UdpZeroChecksum,
    /// RFC 1812 §5.3.7 for 240.0.0.0/4, in both directions and for the packet
    /// an ICMP error quotes (RFC 7915 §4.3, §5.3).
    pub class_e: ClassE,
    /// Decrement TTL / Hop Limit (RFC 7915 §4.1/§5.1). Off only for a translator that
    /// sits on a host, not a router.
    pub decrement_hop_limit: bool,
    /// Token bucket for generated ICMP errors: sustained rate per second (0 disables them).
    pub icmp_errors_per_sec: u32,
    /// Token bucket depth.
    pub icmp_error_burst: u32,
    /// Key for the per-flow IPv4 ID start values (RFC 6864). Data planes seed it from
    /// the OS at start; the offline mode keeps it fixed so output is reproducible.
    pub ipv4_id_key: u64,
    /// Stateful NAT64 (RFC 6146). `None`: SIIT only.
    pub nat64: Option<crate::nat64::Nat64Config>,
    /// MAP-T (RFC 7599), BR or CE. `None`: no MAP-T. Its DMR is also `map.pool6`.
    pub mapt: Option<crate::mapt::MaptConfig>,
}

/// Jool's default plateaus (RFC 1191 §7 table).
pub const DEFAULT_MTU_PLATEAUS: [u16; 11] = [
    65535, 32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68,
];

/// RFC 7600 IPv4 Dummy Address, for ICMPv4 errors from a translator with no IPv4 address.
pub const IPV4_DUMMY_ADDRESS: Ipv4Addr = Ipv4Addr::new(192, 0, 0, 8);

impl Config {
    /// RFC 7915 §4 / §1.2: the longest IPv6 packet an IPv4 packet with DF=0
    /// becomes unfragmented; a longer one is fragmented by the translator.
    /// `lowest_ipv6_mtu`, or `ipv6_mtu` when that is lower. Asked by the data
    /// planes that must know beforehand (checksum offload on TUN).
    #[inline]
    pub fn v6_fragment_limit(&self) -> usize {
        let lowest = self.lowest_ipv6_mtu;
        usize::from(self.ipv6_mtu.map_or(lowest, |m| m.min(lowest)))
    }

    /// RFC 1812 §5.3.7 as configured: true if no router forwards from or to
    /// `a` (host order), [`ipv4::never_forwarded`] but with 240.0.0.0/4
    /// forwarded under [`ClassE::Translate`]. Off the hot path: callers ask
    /// [`ipv4::may_be_never_forwarded`] first.
    ///
    /// [`ipv4::never_forwarded`]: crate::packet::ipv4::never_forwarded
    /// [`ipv4::may_be_never_forwarded`]: crate::packet::ipv4::may_be_never_forwarded
    #[inline]
    pub fn never_forwarded(&self, a: u32) -> bool {
        crate::packet::ipv4::never_forwarded_unless_class_e(a, self.class_e == ClassE::Translate)
    }

    /// A configuration with the given pool6 and every other value at its default.
    pub fn with_pool6(pool6: Option<Rfc6052Prefix>) -> Self {
        let icmp_source_v6 = pool6
            .map(|p| p.embed(IPV4_DUMMY_ADDRESS))
            .unwrap_or(Ipv6Addr::UNSPECIFIED);
        Config {
            map: Mapper {
                pool6,
                eam: EamTable::new(),
                wkp_strict: true,
            },
            hairpin: HairpinMode::default(),
            rfc6791_v4: Vec::new(),
            rfc6791_v6: None,
            icmp_source_v4: IPV4_DUMMY_ADDRESS,
            icmp_source_v6,
            reset_traffic_class: false,
            reset_tos: false,
            new_tos: 0,
            lowest_ipv6_mtu: 1280,
            ipv4_mtu: None,
            ipv6_mtu: None,
            mtu_plateaus: DEFAULT_MTU_PLATEAUS.to_vec(),
            udp_zero_checksum: UdpZeroChecksum::default(),
            class_e: ClassE::default(),
            decrement_hop_limit: true,
            icmp_errors_per_sec: 100,
            icmp_error_burst: 50,
            ipv4_id_key: 0x5157_6761_7465_0001,
            nat64: None,
            mapt: None,
        }
    }
}
