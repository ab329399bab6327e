//! The stateful NAT64's run-time configuration (RFC 6146 §3, RFC 6888, RFC 7422),
//! already validated. The TOML section `[nat64]` in `sixgate-config` builds it.

use std::net::{Ipv4Addr, Ipv6Addr};

/// A transport protocol with BIB and session tables (RFC 6146 §3.1: TCP, UDP and
/// ICMP query identifiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proto {
    /// TCP (§3.5.2 state machine).
    Tcp,
    /// UDP (§3.5.1).
    Udp,
    /// ICMP Echo identifiers (§3.5.3).
    Icmp,
}

impl Proto {
    /// All three, in table order.
    pub const ALL: [Proto; 3] = [Proto::Tcp, Proto::Udp, Proto::Icmp];

    /// Index of this protocol's table (0, 1, 2).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Stable lower-case name (`tcp`, `udp`, `icmp`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Icmp => "icmp",
        }
    }
}

/// An inclusive range of ports (or ICMP identifiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    /// First port of the range.
    pub first: u16,
    /// Last port of the range (inclusive, `>= first`).
    pub last: u16,
}

impl PortRange {
    /// `first..=last`.
    pub const fn new(first: u16, last: u16) -> Self {
        PortRange { first, last }
    }

    /// Whether `port` lies in the range.
    pub const fn contains(&self, port: u16) -> bool {
        self.first <= port && port <= self.last
    }

    /// Number of ports in the range.
    pub const fn len(&self) -> u32 {
        if self.last < self.first {
            0
        } else {
            self.last as u32 - self.first as u32 + 1
        }
    }

    /// True when the range holds no port.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One pool4 prefix (RFC 6146 §3: the IPv4 transport addresses the NAT64 owns),
/// with the port ranges handed out per protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool4Entry {
    /// Network address of the prefix.
    pub addr: Ipv4Addr,
    /// Prefix length (32: one address).
    pub prefix_len: u8,
    /// TCP ports to allocate.
    pub tcp: PortRange,
    /// UDP ports to allocate.
    pub udp: PortRange,
    /// ICMP identifiers to allocate.
    pub icmp: PortRange,
}

/// Jool's default pool4 port range, also ours (the low ports stay the host's).
pub const DEFAULT_POOL4_PORTS: PortRange = PortRange::new(61001, 65535);

impl Pool4Entry {
    /// One address, every protocol at [`DEFAULT_POOL4_PORTS`] (ICMP: every identifier).
    pub const fn single(addr: Ipv4Addr) -> Self {
        Pool4Entry {
            addr,
            prefix_len: 32,
            tcp: DEFAULT_POOL4_PORTS,
            udp: DEFAULT_POOL4_PORTS,
            icmp: PortRange::new(0, 65535),
        }
    }

    /// The range for `proto`.
    pub const fn range(&self, proto: Proto) -> PortRange {
        match proto {
            Proto::Tcp => self.tcp,
            Proto::Udp => self.udp,
            Proto::Icmp => self.icmp,
        }
    }

    /// Number of addresses in the prefix.
    pub fn addr_count(&self) -> u32 {
        let host_bits = 32 - u32::from(self.prefix_len.min(32));
        if host_bits == 32 {
            u32::MAX
        } else {
            1 << host_bits
        }
    }

    /// First address (the prefix with host bits cleared), as an integer.
    pub fn first_addr(&self) -> u32 {
        let len = u32::from(self.prefix_len.min(32));
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        u32::from(self.addr) & mask
    }

    /// Whether `a` lies in the prefix.
    pub fn contains(&self, a: u32) -> bool {
        let len = u32::from(self.prefix_len.min(32));
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        a & mask == self.first_addr()
    }
}

/// RFC 6146 §3.5.1 / RFC 4787: which IPv4 packets may reach an IPv6 host that has a
/// BIB entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Filtering {
    /// Any IPv4 source may use an existing BIB entry (RFC 4787 REQ-8 recommends it
    /// for transparency).
    #[default]
    EndpointIndependent,
    /// Only IPv4 addresses the IPv6 host has sent to (any port).
    AddressDependent,
}

/// Session lifetimes in seconds (RFC 6146 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// UDP session lifetime (`UDP_DEFAULT`, at least 2 minutes; default 300).
    pub udp: u32,
    /// TCP established lifetime (`TCP_EST`, at least 2 h 4 min; default 7440).
    pub tcp_established: u32,
    /// TCP transitory lifetime (`TCP_TRANS`, at least 4 min; default 240).
    pub tcp_transitory: u32,
    /// ICMP query lifetime (`ICMP_DEFAULT`; default 60).
    pub icmp: u32,
    /// How long an unsolicited IPv4 SYN is held, and the V4 INIT lifetime
    /// (`TCP_INCOMING_SYN`; default 6).
    pub syn_hold: u32,
    /// RFC 6888 REQ-8: a released pool4 port waits this long before another
    /// mapping may use it (default 120).
    pub port_reuse: u32,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            udp: 300,
            tcp_established: 7440,
            tcp_transitory: 240,
            icmp: 60,
            syn_hold: 6,
            port_reuse: 120,
        }
    }
}

/// A static BIB entry (RFC 6146 §3.1: "manually configured"), which lets IPv4
/// hosts open connections to an IPv6 server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticBib {
    /// Protocol of the mapping.
    pub proto: Proto,
    /// IPv6 address of the server.
    pub v6: Ipv6Addr,
    /// IPv6 port (ICMP: identifier).
    pub port6: u16,
    /// IPv4 address (should be in pool4).
    pub v4: Ipv4Addr,
    /// IPv4 port (ICMP: identifier).
    pub port4: u16,
}

/// RFC 6888 REQ-12 / RFC 7422: what the NAT64 logs (through
/// [`crate::Translator::drain_events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EventLog {
    /// Nothing.
    #[default]
    Off,
    /// Every session's creation and deletion.
    Sessions,
    /// Every BIB entry's creation and deletion; with `port_block_size > 0`, every
    /// port block's allocation and release instead (RFC 7422: one line per block).
    Bib,
    /// Both: sessions, and BIB entries or port blocks.
    All,
}

impl EventLog {
    /// Sessions are logged.
    #[inline]
    pub const fn sessions(self) -> bool {
        matches!(self, EventLog::Sessions | EventLog::All)
    }

    /// BIB entries (or, with port blocks, the blocks) are logged.
    #[inline]
    pub const fn bib(self) -> bool {
        matches!(self, EventLog::Bib | EventLog::All)
    }
}

/// The stateful NAT64 (RFC 6146). `Config::nat64 = Some(_)` turns it on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nat64Config {
    /// The IPv4 transport addresses the NAT64 maps IPv6 hosts to.
    pub pool4: Vec<Pool4Entry>,
    /// §3.5.1 filtering of IPv4 packets that match a BIB entry.
    pub filtering: Filtering,
    /// §3.5.2.2: drop unsolicited IPv4 SYNs instead of holding them for a
    /// simultaneous open.
    pub drop_external_tcp: bool,
    /// Capacity of the store of held IPv4 SYNs, per worker (default 64). Full:
    /// further SYNs are dropped (`held_syn_store_full`).
    pub max_held_syns: u32,
    /// Session lifetimes.
    pub timeouts: Timeouts,
    /// Most sessions for the whole gateway; each of `n` workers gets
    /// `ceil(max_sessions / n)`. Tables are sized for it at start, so memory is
    /// bounded and the packet path never grows them.
    pub max_sessions: u32,
    /// Prefix length that makes one subscriber (RFC 6888: limits are per
    /// subscriber; default 64).
    pub subscriber_prefix_len: u8,
    /// RFC 6888 REQ-4: most sessions per subscriber (0: no limit).
    pub max_sessions_per_subscriber: u32,
    /// RFC 6888 REQ-4: most pool4 ports (BIB entries, or blocks × block size) per
    /// subscriber (0: no limit).
    pub max_ports_per_subscriber: u32,
    /// RFC 7422: hand ports to subscribers in blocks of this many (a power of two;
    /// 0: port by port).
    pub port_block_size: u16,
    /// RFC 7422 deterministic NAT: the IPv6 prefix whose subscribers each get
    /// one pool4 address and one fixed block of `port_block_size` ports by a
    /// formula ([`super::deterministic`]); sources outside it are refused.
    pub deterministic: Option<(Ipv6Addr, u8)>,
    /// Manually configured BIB entries.
    pub static_bib: Vec<StaticBib>,
    /// What to log.
    pub event_log: EventLog,
    /// RFC 6888 REQ-12: put the IPv4 destination in session events (off by
    /// default: a CGN should not log where subscribers go).
    pub log_destinations: bool,
    /// `[log_export] on_overflow = "refuse"`: no new session (nor BIB entry or
    /// port block) whose events the event ring has no room for
    /// ([`crate::DropReason::EventLogFull`]); false: the events are lost and
    /// counted.
    pub refuse_unlogged: bool,
    /// RFC 6056 secret for port selection; the data plane seeds it from the OS.
    pub hash_key: u64,
}

impl Default for Nat64Config {
    fn default() -> Self {
        Nat64Config {
            pool4: Vec::new(),
            filtering: Filtering::default(),
            drop_external_tcp: false,
            max_held_syns: 64,
            timeouts: Timeouts::default(),
            max_sessions: 1 << 20,
            subscriber_prefix_len: 64,
            max_sessions_per_subscriber: 0,
            max_ports_per_subscriber: 0,
            port_block_size: 0,
            deterministic: None,
            static_bib: Vec::new(),
            event_log: EventLog::default(),
            log_destinations: false,
            refuse_unlogged: false,
            hash_key: 0x6e61_7436_345f_6b65,
        }
    }
}
