//! Which worker must translate a packet: the hook the workers ask before
//! translating (docs/xdp.md, "Handoff"). A packet another worker owns goes to it
//! through a [`crate::handoff`] ring; with [`Owner::Receiver`] no ring is built
//! and nothing is asked.
//!
//! Modes with per-worker state say here how a packet finds its owner; the rings
//! and the wake-ups do not depend on the mode.

use sixgate_core::Config;
use sixgate_core::mapt::steering::fragment_owner;
use sixgate_core::nat64::steering::PacketOwner;
use sixgate_core::nat64::{Nat64Config, Pool4Entry};

/// The ownership rule of the running mode.
#[derive(Clone, Debug)]
pub enum Owner {
    /// Any worker translates what it receives (no per-flow state: SIIT, CLAT;
    /// or a single worker).
    Receiver,
    /// Stateful NAT64 (docs/architecture.md, "Multi-core without a shared
    /// table"): the worker the TUN data plane's steering program would pick.
    Nat64 {
        /// `subscriber_worker` / `port_owner` over the packet.
        rule: PacketOwner,
        /// Pool4, for hairpinned output (RFC 6146 §3.8).
        pool4: Vec<Pool4Entry>,
        /// Where this worker sent recent IPv4 first fragments: their later
        /// fragments (no port) follow them.
        memo: FragmentMemo,
    },
    /// A MAP-T BR on several workers: a fragment goes to the worker its
    /// source, destination, Identification and protocol pick (as the TUN
    /// steering program's `flow` mode), so that later fragments find what
    /// their first got (RFC 7599 §8); a whole packet stays where it was
    /// received.
    MaptBr {
        /// Workers the fragments spread over.
        workers: u16,
    },
}

impl Owner {
    /// The rule of the running configuration `cfg` over `workers` workers.
    pub fn for_config(cfg: &Config, workers: u16) -> Owner {
        match &cfg.mapt {
            Some(m) if workers > 1 && m.ce().is_none() => Owner::MaptBr { workers },
            _ => Owner::new(cfg.nat64.as_ref(), workers),
        }
    }

    /// The rule for `workers` workers: [`Owner::Receiver`] unless stateful NAT64
    /// runs on more than one.
    pub fn new(nat64: Option<&Nat64Config>, workers: u16) -> Owner {
        match nat64 {
            Some(cfg) if workers > 1 => Owner::Nat64 {
                rule: PacketOwner::new(cfg, workers),
                pool4: cfg.pool4.clone(),
                memo: FragmentMemo::new(),
            },
            _ => Owner::Receiver,
        }
    }

    /// Whether packets ever change workers (rings are needed).
    pub fn hands_off(&self) -> bool {
        !matches!(self, Owner::Receiver)
    }

    /// The worker that must translate the received IP packet `ip`;
    /// `receiver` is the worker that got it.
    #[inline]
    pub fn of(&mut self, ip: &[u8], receiver: u16) -> u16 {
        match self {
            Owner::Receiver => receiver,
            Owner::Nat64 { rule, memo, .. } => nat64_owner(rule, memo, ip),
            Owner::MaptBr { workers } => fragment_owner(ip, *workers).unwrap_or(receiver),
        }
    }

    /// For a translated packet `out` that must be translated again (NAT64
    /// hairpinning, RFC 6146 §3.8: an IPv4 packet to pool4, which the core
    /// loops back itself only when its own worker owns the destination), the
    /// worker to do it; `None` for a packet that leaves.
    /// A hairpinned datagram's fragments follow its first as received ones do.
    #[inline]
    pub fn hairpin(&mut self, out: &[u8]) -> Option<u16> {
        match self {
            // A BR turns a packet back into the domain itself.
            Owner::Receiver | Owner::MaptBr { .. } => None,
            Owner::Nat64 { rule, pool4, memo } => {
                let dst = out.get(16..20).filter(|_| out[0] >> 4 == 4)?;
                let dst = u32::from_be_bytes([dst[0], dst[1], dst[2], dst[3]]);
                pool4
                    .iter()
                    .any(|p| p.contains(dst))
                    .then(|| nat64_owner(rule, memo, out))
            }
        }
    }
}

/// NAT64's owner of IP packet `ip`: by [`PacketOwner`], but an IPv4
/// fragment (MF or an offset) through the memo (RFC 6146 §3.4).
#[inline]
fn nat64_owner(rule: &PacketOwner, memo: &mut FragmentMemo, ip: &[u8]) -> u16 {
    match ip {
        [0x40..=0x4f, _, _, _, _, _, f0, f1, ..]
            if u16::from_be_bytes([*f0, *f1]) & 0x3fff != 0 && ip.len() >= 20 =>
        {
            memo.owner(ip, || rule.of(ip))
        }
        _ => rule.of(ip),
    }
}

/// Entries of a worker's [`FragmentMemo`].
const MEMO_SLOTS: usize = 256;

/// RFC 6146 §3.4 on the handoff: an IPv4 datagram's later fragments carry no
/// port, so the worker that received its first fragment remembers which
/// worker that went to (by source, destination, protocol and
/// Identification, direct-mapped, allocated once) and sends the later ones
/// the same way. This needs every fragment of a datagram to arrive at one
/// queue, which holds on veth (one queue per sending socket) and with RSS
/// hashing fragments by addresses only (the 2-tuple hash NICs use for
/// IPv4 fragments); docs/xdp.md. A later fragment with no entry goes by its
/// Identification, as the TUN steering program's fallback.
#[derive(Clone)]
pub struct FragmentMemo {
    /// (source << 32 | destination, Identification << 8 | protocol, worker).
    slots: Box<[(u64, u32, u16)]>,
}

impl std::fmt::Debug for FragmentMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FragmentMemo")
    }
}

impl Default for FragmentMemo {
    fn default() -> Self {
        Self::new()
    }
}

impl FragmentMemo {
    /// An empty memo (allocated here, never on the packet path).
    pub fn new() -> Self {
        FragmentMemo {
            slots: vec![(0, 0, u16::MAX); MEMO_SLOTS].into_boxed_slice(),
        }
    }

    /// The owner of IPv4 fragment `ip` (at least 20 bytes): a first
    /// fragment's is `by_ports()`, remembered; a later one's is its first's.
    #[inline]
    fn owner(&mut self, ip: &[u8], by_ports: impl FnOnce() -> u16) -> u16 {
        let be32 = |at: usize| {
            u64::from(u32::from_be_bytes([
                ip[at],
                ip[at + 1],
                ip[at + 2],
                ip[at + 3],
            ]))
        };
        let addrs = be32(12) << 32 | be32(16);
        let id = u32::from(u16::from_be_bytes([ip[4], ip[5]])) << 8 | u32::from(ip[9]);
        let h = (addrs ^ u64::from(id)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = &mut self.slots[(h >> 56) as usize % MEMO_SLOTS];
        let first = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
        if first {
            let w = by_ports();
            *slot = (addrs, id, w);
            return w;
        }
        match *slot {
            (a, i, w) if a == addrs && i == id && w != u16::MAX => w,
            _ => by_ports(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sixgate_core::nat64::steering::{port_owner, subscriber_worker};
    use sixgate_testkit::{Ip4, Ip6};
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn nat64() -> Nat64Config {
        Nat64Config {
            pool4: vec![Pool4Entry {
                prefix_len: 24,
                ..Pool4Entry::single(Ipv4Addr::new(198, 18, 0, 0))
            }],
            ..Nat64Config::default()
        }
    }

    #[test]
    fn stateless_modes_and_one_worker_keep_what_they_receive() {
        let pkt = Ip4::new(Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 18, 0, 1)).udp(1, 3, 8);
        for mut o in [Owner::new(None, 4), Owner::new(Some(&nat64()), 1)] {
            assert!(!o.hands_off());
            assert_eq!(o.of(&pkt, 3), 3);
            assert_eq!(o.hairpin(&pkt), None);
        }
    }

    /// RFC 6146 §3.8 hairpinning: IPv4 output to pool4 goes to its port's owner;
    /// to anywhere else it leaves.
    #[test]
    fn rfc6146_3_8_hairpinned_output_goes_to_the_destination_ports_owner() {
        let mut o = Owner::new(Some(&nat64()), 2);
        assert!(o.hands_off());
        let (a, b) = (Ipv4Addr::new(198, 18, 0, 7), Ipv4Addr::new(198, 18, 0, 9));
        for port in [80u16, 82, 443, 444] {
            let out = Ip4::new(a, b).tcp(1000, port, 0);
            assert_eq!(o.hairpin(&out), Some(port_owner(port, 0, 2)));
        }
        let out = Ip4::new(a, Ipv4Addr::new(203, 0, 113, 1)).tcp(1000, 80, 0);
        assert_eq!(o.hairpin(&out), None);
        let v6: Ipv6Addr = "2001:db8:5::1".parse().unwrap();
        let pkt = Ip6::new(v6, "2001:db8:64::cb00:7101".parse().unwrap()).udp(1, 2, 8);
        assert_eq!(o.hairpin(&pkt), None);
        assert_eq!(o.of(&pkt, 1), subscriber_worker(u128::from(v6), 64, 2));
    }

    /// RFC 6146 §3.4: the later fragments of an IPv4 datagram go where its
    /// first fragment went (the owner of its port), not by Identification;
    /// one whose first was not seen goes by Identification.
    #[test]
    fn rfc6146_3_4_later_fragments_follow_their_first() {
        let mut o = Owner::new(Some(&nat64()), 4);
        let (server, pool) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 18, 0, 1));
        for port in 61001u16..61033 {
            let want = port_owner(port, 0, 4);
            let id = (port..).find(|i| i % 4 != want).unwrap();
            let from = Ip4::new(server, pool).id(id).df(false);
            let mut udp = vec![0, 53];
            udp.extend_from_slice(&port.to_be_bytes());
            udp.extend_from_slice(&[0, 40, 0, 0]);
            udp.extend_from_slice(&[0; 16]);
            let first = from.fragment(17, 0, true, &udp);
            let later = from.fragment(17, 24, false, &[0; 16]);
            let stray = Ip4::new(server, pool)
                .id(id)
                .df(false)
                .fragment(6, 24, false, &[0; 8]);
            assert_eq!(o.of(&stray, 0), id % 4, "by Identification");
            assert_eq!(o.of(&first, 0), want);
            assert_eq!(o.of(&later, 2), want);
        }
    }

    /// RFC 7599 §8: a MAP-T BR on several workers hands each fragment to the
    /// worker its datagram's fields pick (first and later ones alike), keeps
    /// whole packets where they arrived and never hairpins; a CE, or one
    /// worker, hands nothing off.
    #[test]
    fn rfc7599_8_br_fragments_of_a_datagram_meet_on_one_worker() {
        let toml = |role: &str| {
            let text = format!(
                "[translator]\nmode = \"mapt-{role}\"\n[mapt]\ndmr = \"2001:db8:64::/96\"\n\
                 bmr = [ {{ ipv6_prefix = \"2001:db8:ce::/51\", ipv4_prefix = \
                 \"198.18.0.0/24\", ea_bits = 13, psid_offset = 0 }} ]\n{}",
                if role == "ce" {
                    "end_user_prefix = \"2001:db8:ce:11b::/64\"\nlan = \"192.0.0.0/29\"\n"
                } else {
                    ""
                }
            );
            sixgate_config::parse(&text, "t.toml")
                .unwrap_or_else(|e| panic!("{e}"))
                .config
        };
        let mut o = Owner::for_config(&toml("br"), 2);
        assert!(o.hands_off());
        let (a, b) = (Ipv4Addr::new(203, 0, 113, 7), Ipv4Addr::new(198, 18, 0, 8));
        let whole = Ip4::new(a, b).udp(80, 55300, 8);
        assert_eq!((o.of(&whole, 0), o.of(&whole, 1)), (0, 1));
        assert_eq!(o.hairpin(&whole), None);
        let id = 7u16;
        let first = Ip4::new(a, b)
            .df(false)
            .id(id)
            .fragment(17, 0, true, &[0; 16]);
        let later = Ip4::new(a, b)
            .df(false)
            .id(id)
            .fragment(17, 16, false, &[0; 8]);
        let want =
            sixgate_core::mapt::steering::fragment4_worker(u32::from(a), u32::from(b), id, 17, 2);
        for receiver in [0, 1] {
            assert_eq!(o.of(&first, receiver), want);
            assert_eq!(o.of(&later, receiver), want);
        }
        for o in [
            Owner::for_config(&toml("ce"), 2),
            Owner::for_config(&toml("br"), 1),
        ] {
            assert!(!o.hands_off());
        }
    }
}
