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
    pub fn of(&self, ip: &[u8], receiver: u16) -> u16 {
        match self {
            Owner::Receiver => receiver,
            Owner::Nat64 { rule, .. } => rule.of(ip),
            Owner::MaptBr { workers } => fragment_owner(ip, *workers).unwrap_or(receiver),
        }
    }

    /// For a translated packet `out` that must be translated again (NAT64
    /// hairpinning, RFC 6146 §3.8: an IPv4 packet to pool4, which the core
    /// loops back itself only when its own worker owns the destination), the
    /// worker to do it; `None` for a packet that leaves.
    #[inline]
    pub fn hairpin(&self, out: &[u8]) -> Option<u16> {
        match self {
            // A BR turns a packet back into the domain itself.
            Owner::Receiver | Owner::MaptBr { .. } => None,
            Owner::Nat64 { rule, pool4 } => {
                let dst = out.get(16..20).filter(|_| out[0] >> 4 == 4)?;
                let dst = u32::from_be_bytes([dst[0], dst[1], dst[2], dst[3]]);
                pool4.iter().any(|p| p.contains(dst)).then(|| rule.of(out))
            }
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
        for o in [Owner::new(None, 4), Owner::new(Some(&nat64()), 1)] {
            assert!(!o.hands_off());
            assert_eq!(o.of(&pkt, 3), 3);
            assert_eq!(o.hairpin(&pkt), None);
        }
    }

    /// RFC 6146 §3.8 hairpinning: IPv4 output to pool4 goes to its port's owner;
    /// to anywhere else it leaves.
    #[test]
    fn rfc6146_3_8_hairpinned_output_goes_to_the_destination_ports_owner() {
        let o = Owner::new(Some(&nat64()), 2);
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
        let o = Owner::for_config(&toml("br"), 2);
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
