//! What became of a packet, and the per-worker counters that record it.
//!
//! A packet is either fully translated or dropped with a named reason (the one
//! wait, [`Verdict::Held`], ends in one or the other). Counters are plain
//! integers owned by one worker; the control
//! plane sums them across workers when it is asked.

/// The outcome of [`crate::Translator::translate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Translated in place: the [`crate::PacketBuf`] now holds the output packet.
    Translated,
    /// Translated into this many packets, held in the [`crate::Scratch`]:
    /// fragments of one datagram (this packet split further, or with others
    /// of its datagram that waited for it: a held ICMP first fragment, or
    /// later fragments that came before their first, RFC 6146 §3.4).
    Fragmented(u8),
    /// Dropped; nothing is sent.
    Dropped(DropReason),
    /// Dropped, and the [`crate::Scratch`] holds one ICMP error owed to the
    /// packet's source (same address family as the input).
    Replied(DropReason),
    /// Kept by the translator, nothing to send yet: the first fragment of a
    /// fragmented ICMP Echo waiting for its last fragment (RFC 7915 §4.2, §5.2;
    /// [`crate::rfc7915::icmp_fragments`]), or, in NAT64 and MAP-T, a later
    /// fragment waiting for its datagram's first (RFC 6146 §3.4), or, in NAT64
    /// with state sync, an IPv4 packet waiting for a peer's record of its
    /// session (docs/ha.md). It goes out with that fragment (or from
    /// [`crate::Translator::tick`] once the record came), or is counted as
    /// `icmp_fragment_expired` / `fragment_expired` / `sync_pending`.
    Held,
}

impl Verdict {
    /// The packets to send for this verdict, in order: `translated` (the
    /// [`crate::PacketBuf`]'s data after the call) for [`Verdict::Translated`];
    /// what the scratch area holds for [`Verdict::Fragmented`] and
    /// [`Verdict::Replied`]; none for [`Verdict::Dropped`] and [`Verdict::Held`].
    #[inline]
    pub fn outputs<'a>(
        self,
        translated: &'a [u8],
        scratch: &'a crate::Scratch,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        (self == Verdict::Translated)
            .then_some(translated)
            .into_iter()
            .chain(self.scratch_outputs(scratch))
    }

    /// The packets this verdict left in the scratch area, in order (fragments,
    /// or one ICMP error): for a data plane that sends a packet translated in
    /// place its own way.
    #[inline]
    pub fn scratch_outputs<'a>(
        self,
        scratch: &'a crate::Scratch,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        let leaves = matches!(self, Verdict::Fragmented(_) | Verdict::Replied(_));
        scratch.packets().take(if leaves { usize::MAX } else { 0 })
    }
}

macro_rules! drop_reasons {
    ($($(#[doc = $doc:literal])* $name:ident => $label:literal,)*) => {
        /// Why a packet was not translated. Every drop path names one of these.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum DropReason { $($(#[doc = $doc])* $name,)* }

        impl DropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$name,)*];
            /// Number of reasons (size of the counter array).
            pub const COUNT: usize = Self::ALL.len();

            /// Stable snake_case name used in summaries, metrics and logs.
            pub const fn as_str(self) -> &'static str {
                match self { $(DropReason::$name => $label,)* }
            }
        }
    };
}

drop_reasons! {
    /// Shorter than its headers claim, or a header field is inconsistent.
    Malformed => "malformed",
    /// Neither IPv4 nor IPv6 (version nibble).
    UnknownVersion => "unknown_version",
    /// IPv4 header checksum does not verify.
    Ipv4HeaderChecksum => "ipv4_header_checksum",
    /// Source address has no mapping (not in EAM, not under pool6).
    SourceUntranslatable => "source_untranslatable",
    /// Destination address has no mapping (not in EAM, not under pool6).
    DestinationUntranslatable => "destination_untranslatable",
    /// RFC 6052 §3.1: the Well-Known Prefix must not embed a non-global IPv4 address.
    WkpNonGlobal => "wkp_non_global",
    /// RFC 7915 §4.1/§5.1: TTL or Hop Limit expired; Time Exceeded owed.
    HopLimitExceeded => "hop_limit_exceeded",
    /// RFC 7915 §5.1: Routing header with Segments Left non-zero; Parameter Problem owed.
    RoutingHeader => "routing_header",
    /// RFC 7915 §5.1: an extension header the translator does not know.
    UnknownExtensionHeader => "unknown_extension_header",
    /// RFC 7112 §5, RFC 7915 §5.1.1, RFC 8200 §4.3: an IPv6 header chain that
    /// cannot be translated: an extension header after the Fragment header, or
    /// a Hop-by-Hop header that is not first. Administratively prohibited owed.
    ExtensionHeaderChain => "extension_header_chain",
    /// RFC 7915 §4.1: IPv4 source route option (LSRR/SSRR) not yet used up.
    Ipv4SourceRoute => "ipv4_source_route",
    /// RFC 7915 §4.2/§5.2: ICMP type or code with no counterpart in the other family.
    IcmpUntranslatable => "icmp_untranslatable",
    /// RFC 7915 §4.3/§5.3: ICMP error whose inner packet cannot be translated.
    IcmpInnerUntranslatable => "icmp_inner_untranslatable",
    /// An ICMP error nested inside an ICMP error.
    IcmpErrorInError => "icmp_error_in_error",
    /// RFC 7915 §4.5: UDP checksum zero on a fragment, or policy says drop.
    UdpZeroChecksum => "udp_zero_checksum",
    /// Fragmented ICMP message that cannot wait for its length: an ICMP error,
    /// or a first fragment over 4096 bytes (RFC 7915 §4.2, §5.2).
    FragmentedIcmp => "fragmented_icmp",
    /// The first fragment of a fragmented ICMP Echo whose last fragment did
    /// not come within 2 s, or that another datagram pushed out of its slot.
    IcmpFragmentExpired => "icmp_fragment_expired",
    /// Packet exceeds the MTU and may not be fragmented; Packet Too Big / Fragmentation Needed owed.
    PacketTooBig => "packet_too_big",
    /// Protocol that cannot cross a translator: one with no meaning in the other
    /// family (an IPv6 extension header number or ICMPv6 inside IPv4, ICMPv4 inside
    /// IPv6), or AH, whose integrity check covers the addresses.
    UnknownProtocol => "unknown_protocol",
    /// Destination is on the translator's own side (RFC 7757 §4 hairpin disabled, or a loop).
    Hairpin => "hairpin",
    /// Buffer has less headroom than translation needs (a data-plane bug, never the sender's).
    NoHeadroom => "no_headroom",
    /// Source address is one a router must never forward from (RFC 1812 §5.3.7,
    /// RFC 3927 §7: 0/8, 127/8, 169.254/16, 224/4, 240/4, broadcast; IPv6
    /// multicast, loopback, unspecified), on either side, IPv4 checked after mapping.
    BadSource => "bad_source",
    /// Destination is one a router must never forward to (the same IPv4 blocks,
    /// IPv6 multicast).
    BadDestination => "bad_destination",
    /// The host's own link-scope IPv6 multicast into the device (MLD reports,
    /// router solicitations, Neighbour Discovery from fe80::/10 or ::): no
    /// forwarding decision, nothing wrong; counted apart so that it neither
    /// hides a real `bad_destination` nor is logged as a first drop.
    HostMulticast => "host_multicast",
    /// NAT64 (RFC 6146 §3.5.1.1, §3.5.2.1): an IPv4 packet for a pool4 transport
    /// address with no BIB entry (or an ICMP error about no known session).
    NoBibEntry => "no_bib_entry",
    /// NAT64 §3.5.1 / RFC 4787: address-dependent filtering refused an IPv4 packet.
    Filtered => "filtered",
    /// NAT64: the worker's share of `max_sessions` is used up; existing sessions
    /// are never evicted for new ones.
    SessionTableFull => "session_table_full",
    /// NAT64, RFC 6888 REQ-4: the subscriber is at its session or port limit.
    SubscriberLimit => "subscriber_limit",
    /// NAT64: no free pool4 port (or identifier) this worker owns, or no pool4.
    Pool4Exhausted => "pool4_exhausted",
    /// NAT64, RFC 7422 deterministic NAT: the IPv6 source lies outside the
    /// `deterministic` prefix, so the formula gives it no pool4 address.
    DeterministicUnmapped => "deterministic_unmapped",
    /// NAT64, RFC 7422 §2: every port of the subscriber's deterministic block
    /// (its share of it, with sync) is in use or cooling; no more are given.
    DeterministicPortsFull => "deterministic_ports_full",
    /// NAT64, RFC 6888 REQ-12 with `[log_export] on_overflow = "refuse"`: the
    /// worker's event ring had no room for the new state's records, and an
    /// unlogged mapping is refused rather than made.
    EventLogFull => "event_log_full",
    /// NAT64 §3.5.2.2: an unsolicited IPv4 SYN is held for a simultaneous open
    /// (up to `syn_hold` seconds; a later IPv6 SYN releases it, else `tick` answers
    /// it with Port Unreachable).
    SynHeld => "syn_held",
    /// NAT64 §3.5.2.2: the store of held IPv4 SYNs is full.
    HeldSynStoreFull => "held_syn_store_full",
    /// NAT64 with state sync (docs/ha.md): an IPv4 packet for a peer's pool4
    /// shard found no mapping here, and its session's record did not come
    /// within 200 ms (or it could not wait: the hold store full, larger than
    /// 1500 bytes). No ICMP error: the peer may have the session.
    SyncPending => "sync_pending",
    /// NAT64 §3.5.2.2: unsolicited IPv4 SYN dropped by policy (`drop_external_tcp`),
    /// or a held one whose time ran out.
    ExternalTcp => "external_tcp",
    /// NAT64 / MAP-T: a non-first fragment whose first fragment was not seen
    /// here and that cannot wait for it (one sent round again by a hairpin).
    /// Others wait (RFC 6146 §3.4; `nat64::early_fragments`).
    FragmentUntracked => "fragment_untracked",
    /// NAT64 / MAP-T, RFC 6146 §3.4: a fragment that came before its first
    /// waited 2 s and its first did not come (lost, or at another worker).
    FragmentExpired => "fragment_expired",
    /// NAT64 / MAP-T, RFC 6146 §3.4 and §5: a fragment that came before its
    /// first found no room to wait (64 per worker, each at most 2048 bytes).
    FragmentBufferFull => "fragment_buffer_full",
    /// NAT64: the packet belongs to another worker (steering missed; see
    /// docs/architecture.md).
    WrongWorker => "wrong_worker",
    /// NAT64: a protocol with no BIB (neither TCP, UDP nor ICMP query), or an ICMP
    /// message that is neither a query nor an error.
    Nat64Unsupported => "nat64_unsupported",
    /// MAP-T (RFC 7599 §5, §7): no Mapping Rule covers an address that needs one
    /// (BR: an IPv6 source or IPv4 destination outside every FMR; CE: an IPv6
    /// destination other than the CE's MAP address).
    MaptNoRule => "mapt_no_rule",
    /// MAP-T, RFC 7597 §5.2: a MAP address whose interface identifier disagrees
    /// with its EA bits.
    MaptAddressMismatch => "mapt_address_mismatch",
    /// MAP-T, RFC 7597 §8.1: a MAP address sent from a port (ICMP identifier)
    /// outside its own port set: spoofing protection.
    MaptSourceOutsidePortSet => "mapt_source_outside_port_set",
    /// MAP-T, RFC 7597 §5.1: an IPv4 packet to a shared address on a port no PSID
    /// owns (0–1023 with the default PSID offset 6).
    MaptPortExcluded => "mapt_port_excluded",
    /// MAP-T: a packet without ports (another protocol, a non-echo ICMP query) to
    /// or from an address shared by port sets.
    MaptNoPort => "mapt_no_port",
}

/// Per-worker packet counters. Plain integers: one owner, summed at read time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counters {
    /// IPv6 packets translated to IPv4 (fragments counted once per input).
    pub translated_6to4: u64,
    /// IPv4 packets translated to IPv6.
    pub translated_4to6: u64,
    /// IP bytes, as received, of the IPv6 packets translated (hairpinned ones
    /// included).
    pub bytes_6to4: u64,
    /// IP bytes, as received, of the IPv4 packets translated.
    pub bytes_4to6: u64,
    /// Packets hairpinned back into IPv6 (RFC 7757 §4).
    pub hairpinned: u64,
    /// Output fragments produced by RFC 7915 §4 fragmentation.
    pub fragments_out: u64,
    /// ICMP errors generated by the translator itself.
    pub icmp_generated: u64,
    /// ICMP errors owed but suppressed by the token bucket (the packet itself is
    /// counted under its own drop reason).
    pub icmp_rate_limited: u64,
    /// Drops, indexed by `DropReason as usize`.
    pub dropped: [u64; DropReason::COUNT],
}

// Written out: arrays longer than 32 have no derived `Default`.
impl Default for Counters {
    fn default() -> Self {
        Counters {
            translated_6to4: 0,
            translated_4to6: 0,
            bytes_6to4: 0,
            bytes_4to6: 0,
            hairpinned: 0,
            fragments_out: 0,
            icmp_generated: 0,
            icmp_rate_limited: 0,
            dropped: [0; DropReason::COUNT],
        }
    }
}

impl Counters {
    /// Drops for one reason.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.dropped[reason as usize]
    }

    /// Total drops across all reasons.
    pub fn total_drops(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// Add another worker's counters into these.
    pub fn merge(&mut self, other: &Counters) {
        self.translated_6to4 += other.translated_6to4;
        self.translated_4to6 += other.translated_4to6;
        self.bytes_6to4 += other.bytes_6to4;
        self.bytes_4to6 += other.bytes_4to6;
        self.hairpinned += other.hairpinned;
        self.fragments_out += other.fragments_out;
        self.icmp_generated += other.icmp_generated;
        self.icmp_rate_limited += other.icmp_rate_limited;
        for (a, b) in self.dropped.iter_mut().zip(other.dropped.iter()) {
            *a += b;
        }
    }

    pub(crate) fn count_drop(&mut self, reason: DropReason) {
        self.dropped[reason as usize] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_names_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for r in DropReason::ALL {
            assert!(seen.insert(r.as_str()));
            assert!(
                r.as_str()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            );
        }
    }
}
