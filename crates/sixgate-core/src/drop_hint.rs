//! What an operator can do about each [`DropReason`]: the hint the daemon logs
//! the first time a reason is counted (never per packet; see
//! `sixgate_control::first_drops`). Kept next to the drop-reason list so a new
//! reason gets its hint in the same change; a test checks every reason has
//! exactly one.

use crate::DropReason;

/// (reason, hint). Hints say what the drop usually means on a real network and
/// which key or command changes it.
const HINTS: &[(DropReason, &str)] = &[
    (
        DropReason::Malformed,
        "a packet shorter than its headers say, or with inconsistent header fields; a \
         broken sender or a capture/offload problem, nothing to configure",
    ),
    (
        DropReason::UnknownVersion,
        "neither IPv4 nor IPv6 reached the translator; check what is routed into it",
    ),
    (
        DropReason::Ipv4HeaderChecksum,
        "an IPv4 header checksum that does not verify; a corrupting link or sender",
    ),
    (
        DropReason::SourceUntranslatable,
        "the source address has no mapping (no EAM entry, not under pool6); add an EAM \
         entry or widen pool6, or set rfc6791_v4/rfc6791_v6 for ICMP errors from such hosts",
    ),
    (
        DropReason::DestinationUntranslatable,
        "the destination has no mapping (no EAM entry, not under pool6); check that only \
         translated prefixes are routed into the translator, or add an EAM entry",
    ),
    (
        DropReason::WkpNonGlobal,
        "64:ff9b::/96 cannot reach non-global IPv4 addresses (private, shared, \
         documentation; RFC 6052 §3.1); use a network-specific prefix for pool6 (and DNS64), \
         or wkp_strict = false in a lab",
    ),
    (
        DropReason::HopLimitExceeded,
        "TTL or Hop Limit ran out at the translator (a Time Exceeded goes back); a routing \
         loop, or traceroute",
    ),
    (
        DropReason::RoutingHeader,
        "an IPv6 Routing header with segments left (RFC 7915 §5.1); the sender uses source \
         routing, which cannot cross to IPv4",
    ),
    (
        DropReason::UnknownExtensionHeader,
        "an IPv6 extension header the translator does not know; the sender's, nothing to \
         configure",
    ),
    (
        DropReason::ExtensionHeaderChain,
        "an IPv6 header chain that does not fit the first fragment, or a Hop-by-Hop header \
         that is not first (RFC 7112, RFC 8200 §4.3); the sender's, nothing to configure \
         (an administratively prohibited error goes back)",
    ),
    (
        DropReason::Ipv4SourceRoute,
        "an unexpired IPv4 source route option (RFC 7915 §4.1); cannot cross to IPv6",
    ),
    (
        DropReason::IcmpUntranslatable,
        "an ICMP type or code with no counterpart in the other family (RFC 7915 §4.2, \
         §5.2); expected now and then, nothing to configure",
    ),
    (
        DropReason::IcmpInnerUntranslatable,
        "an ICMP error about a packet that cannot be translated itself; usually follows \
         another drop reason",
    ),
    (
        DropReason::IcmpErrorInError,
        "an ICMP error inside an ICMP error; never translated (RFC 7915)",
    ),
    (
        DropReason::UdpZeroChecksum,
        "IPv4 UDP without a checksum that cannot get one (a fragment, or the policy); see \
         udp_zero_checksum",
    ),
    (
        DropReason::FragmentedIcmp,
        "a fragmented ICMP message that cannot be translated (an ICMP error, or a first \
         fragment over 4096 bytes); lower the sender's ping size or the MTU",
    ),
    (
        DropReason::IcmpFragmentExpired,
        "a fragmented ping's last fragment did not come within 2 s; loss on the path, or \
         the fragments took different workers",
    ),
    (
        DropReason::PacketTooBig,
        "a packet over the MTU that may not be fragmented (a Packet Too Big / Fragmentation \
         Needed goes back); check ipv4_mtu/ipv6_mtu and that ICMP errors reach the sender",
    ),
    (
        DropReason::UnknownProtocol,
        "a protocol that cannot cross a translator (ICMPv6 in IPv4, AH, …); the sender's",
    ),
    (
        DropReason::Hairpin,
        "a packet for the translator's own side (RFC 7757 §4); set hairpin, or look for a \
         routing loop",
    ),
    (
        DropReason::NoHeadroom,
        "a buffer without room to translate in: a data-plane bug, please report it",
    ),
    (
        DropReason::BadSource,
        "a source address no router forwards from (0/8, 127/8, 169.254/16, 224/4, 240/4, \
         broadcast, IPv6 multicast, loopback, unspecified; RFC 1812 §5.3.7, RFC 3927 §7), \
         also after mapping an IPv6 source to IPv4; a spoofing or misconfigured host, or a \
         pool6 address that embeds such an IPv4 address",
    ),
    (
        DropReason::BadDestination,
        "a destination no router forwards to (0/8, 127/8, 169.254/16, 224/4, 240/4, \
         broadcast, IPv6 multicast; RFC 1812 §5.3.7, RFC 3927 §7), which cannot be \
         translated",
    ),
    (
        DropReason::HostMulticast,
        "the host's own link-scope IPv6 multicast into the device (MLD, router \
         solicitations from fe80::/10 or ::): harmless, never forwarded, and not logged",
    ),
    (
        DropReason::NoBibEntry,
        "an IPv4 packet for a pool4 address and port nobody is mapped to (RFC 6146 §3.5); \
         normal for scans and late answers, or publish a server with a static BIB entry \
         (sixgate bib add)",
    ),
    (
        DropReason::Filtered,
        "address-dependent filtering refused an IPv4 packet (RFC 6146 §3.5.1); see \
         [nat64] filtering",
    ),
    (
        DropReason::SessionTableFull,
        "the session table is full and new flows are refused; raise [nat64] max_sessions \
         or shorten the timeouts",
    ),
    (
        DropReason::SubscriberLimit,
        "a subscriber reached its session or port limit (RFC 6888 REQ-4); see \
         max_sessions_per_subscriber and max_ports_per_subscriber",
    ),
    (
        DropReason::Pool4Exhausted,
        "no free pool4 port left for a new mapping; add addresses (sixgate pool4 add) or \
         widen their port ranges",
    ),
    (
        DropReason::DeterministicUnmapped,
        "an IPv6 source outside [nat64] deterministic has no pool4 address under RFC 7422 \
         deterministic NAT; widen the prefix or route only its subscribers here",
    ),
    (
        DropReason::DeterministicPortsFull,
        "a subscriber used every port of its deterministic block (RFC 7422 §2) and gets no \
         more; raise port_block_size (a restart, a new formula) if this is common",
    ),
    (
        DropReason::EventLogFull,
        "the NAT event log could not keep up and on_overflow = \"refuse\" turned new \
         sessions away; see sixgate_nat64_events_lost_total, the collectors and \
         docs/logging.md",
    ),
    (
        DropReason::SynHeld,
        "an unsolicited IPv4 SYN is held for a simultaneous open (RFC 6146 §3.5.2.2); \
         normal, answered with Port Unreachable after 6 s",
    ),
    (
        DropReason::HeldSynStoreFull,
        "the store of held IPv4 SYNs is full (a SYN scan?); see [nat64] max_held_syns",
    ),
    (
        DropReason::SyncPending,
        "a packet for a peer's pool4 shard came before the peer's record of its session \
         and the record did not come within 200 ms (or the hold store was full); see \
         sixgate show sync and docs/ha.md",
    ),
    (
        DropReason::ExternalTcp,
        "an unsolicited IPv4 SYN was refused (drop_external_tcp, or its 6 s ran out); \
         publish a server with a static BIB entry to accept them",
    ),
    (
        DropReason::FragmentUntracked,
        "a hairpinned fragment whose first fragment this worker did not see; see \
         docs/architecture.md, Fragments",
    ),
    (
        DropReason::FragmentExpired,
        "a fragment waited 2 s for its datagram's first fragment, which never came to this \
         worker: loss on the path, or fragments steered apart (is the steering program \
         attached? see the start-up log and docs/architecture.md, Fragments)",
    ),
    (
        DropReason::FragmentBufferFull,
        "more fragments arrived before their first than a worker keeps (64, each at most \
         2048 bytes); heavy reordering, a fragment flood, or a link MTU over 2048",
    ),
    (
        DropReason::WrongWorker,
        "a packet reached a worker that does not own its state; the steering program is \
         off (see the start-up log) or a bug, please report it",
    ),
    (
        DropReason::Nat64Unsupported,
        "a protocol NAT64 keeps no state for (neither TCP, UDP nor ICMP queries); \
         RFC 6146 translates only those",
    ),
    (
        DropReason::MaptNoRule,
        "no MAP-T mapping rule covers the address (RFC 7599); check [mapt] bmr/fmr against \
         the CE's addresses",
    ),
    (
        DropReason::MaptAddressMismatch,
        "a MAP address whose interface identifier disagrees with its EA bits (RFC 7597 \
         §5.2); a misconfigured CE",
    ),
    (
        DropReason::MaptSourceOutsidePortSet,
        "a CE sent from a port outside its port set (RFC 7597 §8.1); a misconfigured or \
         spoofing CE",
    ),
    (
        DropReason::MaptPortExcluded,
        "an IPv4 packet to a shared address on a port no PSID owns (0-1023 with the default \
         offset); expected for well-known ports",
    ),
    (
        DropReason::MaptNoPort,
        "a packet without ports to or from an address shared by port sets; cannot be \
         delivered to one CE",
    ),
];

impl DropReason {
    /// What an operator can do about this drop (see [`HINTS`]).
    pub fn hint(self) -> &'static str {
        HINTS.iter().find(|(r, _)| *r == self).map_or(
            "no hint yet; see docs/metrics.md for the drop reasons",
            |h| h.1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason has exactly one hint, and it says something.
    #[test]
    fn every_drop_reason_has_one_hint() {
        for r in DropReason::ALL {
            let n = HINTS.iter().filter(|(h, _)| h == r).count();
            assert_eq!(n, 1, "{}: {n} hints", r.as_str());
            assert!(r.hint().len() > 20, "{}", r.as_str());
            // A string continuation without its backslash leaves the next
            // line's indentation in the text.
            assert!(!r.hint().contains("  "), "{}: {:?}", r.as_str(), r.hint());
        }
        assert_eq!(HINTS.len(), DropReason::COUNT);
        assert!(
            DropReason::WkpNonGlobal
                .hint()
                .contains("wkp_strict = false")
        );
    }
}
