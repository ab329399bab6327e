//! Table sizes for `show` and metrics ([`crate::Translator::nat64_stats`]).

use super::config::Proto;

/// One number per protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerProto {
    /// TCP.
    pub tcp: u64,
    /// UDP.
    pub udp: u64,
    /// ICMP query identifiers.
    pub icmp: u64,
}

impl PerProto {
    /// The value for `p`.
    pub fn get(&self, p: Proto) -> u64 {
        match p {
            Proto::Tcp => self.tcp,
            Proto::Udp => self.udp,
            Proto::Icmp => self.icmp,
        }
    }

    pub(crate) fn get_mut(&mut self, p: Proto) -> &mut u64 {
        match p {
            Proto::Tcp => &mut self.tcp,
            Proto::Udp => &mut self.udp,
            Proto::Icmp => &mut self.icmp,
        }
    }

    /// Sum over protocols.
    pub fn total(&self) -> u64 {
        self.tcp + self.udp + self.icmp
    }

    fn merge(&mut self, o: &PerProto) {
        self.tcp += o.tcp;
        self.udp += o.udp;
        self.icmp += o.icmp;
    }
}

/// One worker's NAT64 state at a glance; [`Stats::merge`] sums workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// BIB entries (static and dynamic, including those waiting out `port_reuse`).
    pub bib: PerProto,
    /// Sessions.
    pub sessions: PerProto,
    /// Pool4 ports (identifiers) held: by BIB entries, or in cooling-down after
    /// release (RFC 6888 port reuse delay).
    pub ports_in_use: PerProto,
    /// Pool4 ports this worker may allocate (its share of pool4).
    pub ports_owned: PerProto,
    /// Subscribers with state.
    pub subscribers: u64,
    /// Port blocks held by subscribers (RFC 7422).
    pub port_blocks: u64,
    /// IPv4 SYNs held for a simultaneous open (§3.5.2.2).
    pub held_syns: u64,
    /// Session capacity of this worker (its share of `max_sessions`).
    pub session_capacity: u64,
    /// Events that did not fit in the event ring.
    pub events_lost: u64,
    /// Sessions removed by an operator's flush (`sixgate session flush`).
    pub sessions_flushed: u64,
    /// A peer node's mapping of an IPv6 transport address this worker maps
    /// to another IPv4 one, kept beside it (docs/ha.md, "Two mappings of one
    /// IPv6 transport address"; RFC 6146 §3.5.1.1 across nodes).
    pub bib_conflicts: u64,
    /// The same, refused (a static entry, a third mapping, no room).
    pub bib_conflicts_refused: u64,
}

impl Stats {
    /// Add another worker's figures.
    pub fn merge(&mut self, o: &Stats) {
        self.bib.merge(&o.bib);
        self.sessions.merge(&o.sessions);
        self.ports_in_use.merge(&o.ports_in_use);
        self.ports_owned.merge(&o.ports_owned);
        self.subscribers += o.subscribers;
        self.port_blocks += o.port_blocks;
        self.held_syns += o.held_syns;
        self.session_capacity += o.session_capacity;
        self.events_lost += o.events_lost;
        self.sessions_flushed += o.sessions_flushed;
        self.bib_conflicts += o.bib_conflicts;
        self.bib_conflicts_refused += o.bib_conflicts_refused;
    }
}
