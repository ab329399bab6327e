//! The entry point every data plane shares: one packet in, one [`Verdict`] out.

use std::sync::Arc;

use crate::config::Config;
use crate::ipv4_id::Ipv4IdGenerator;
use crate::packet::{PacketBuf, Scratch};
use crate::rate_limit::TokenBucket;
use crate::rfc7915;
use crate::verdict::{Counters, DropReason, Verdict};

/// One worker's translator: shared read-only configuration plus the worker's own
/// mutable state (counters, IPv4 ID table, ICMP token bucket). Never shared between
/// threads, so the packet path takes no lock.
pub struct Translator {
    pub(crate) cfg: Arc<Config>,
    pub(crate) counters: Counters,
    pub(crate) ids: Ipv4IdGenerator,
    pub(crate) icmp_bucket: TokenBucket,
    /// Set for the duration of one [`Translator::translate_with`] call: the TCP/UDP
    /// checksum field holds a partial (pseudo-header) sum, not a final checksum.
    pub(crate) partial_csum: bool,
}

impl Translator {
    /// A translator for one worker.
    pub fn new(cfg: Arc<Config>) -> Self {
        Translator {
            ids: Ipv4IdGenerator::new(cfg.ipv4_id_key),
            icmp_bucket: TokenBucket::new(cfg.icmp_errors_per_sec, cfg.icmp_error_burst),
            counters: Counters::default(),
            partial_csum: false,
            cfg,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Swap in a new configuration (a reload); counters and ID state are kept.
    pub fn set_config(&mut self, cfg: Arc<Config>) {
        self.icmp_bucket = TokenBucket::new(cfg.icmp_errors_per_sec, cfg.icmp_error_burst);
        self.cfg = cfg;
    }

    /// This worker's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Translate one packet (IPv4 or IPv6, by its version nibble) at time `now_ns`
    /// (any monotonic clock; only differences matter).
    ///
    /// On [`Verdict::Translated`] the packet buffer holds the result; on
    /// [`Verdict::Fragmented`] and [`Verdict::Replied`] the scratch area does.
    pub fn translate(
        &mut self,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
    ) -> Verdict {
        self.translate_with(pkt, scratch, now_ns, false)
    }

    /// [`Translator::translate`] for a packet whose TCP or UDP checksum is left to
    /// offload hardware (Linux `CHECKSUM_PARTIAL`, virtio `VIRTIO_NET_HDR_F_NEEDS_CSUM`).
    ///
    /// With `partial_csum` set, the checksum field of an outer TCP or UDP header is
    /// taken to hold the folded pseudo-header sum, *not* complemented; whoever
    /// finishes the checksum adds the segment's bytes to it and complements the
    /// result. New addresses then change it by `field - old_sum + new_sum` (ones'
    /// complement) instead of the RFC 1624 update of a final checksum, and a zero
    /// UDP field is not "no checksum" (RFC 7915 §4.5 does not apply).
    ///
    /// The data plane must only pass `true` for an unfragmented TCP or UDP packet
    /// whose checksum starts at its transport header, and must not fragment the
    /// result (a fragment cannot carry a partial checksum): it finishes the checksum
    /// itself for anything else (ICMP, IPv4 DF=0 packets that could be fragmented).
    /// ICMP errors the translator generates always carry complete checksums.
    pub fn translate_with(
        &mut self,
        pkt: &mut PacketBuf<'_>,
        scratch: &mut Scratch,
        now_ns: u64,
        partial_csum: bool,
    ) -> Verdict {
        scratch.clear();
        self.partial_csum = partial_csum;
        let verdict = match pkt.data().first().map(|b| b >> 4) {
            Some(6) => rfc7915::v6_to_v4::translate(self, pkt, scratch, now_ns),
            Some(4) => rfc7915::v4_to_v6::translate(self, pkt, scratch, now_ns),
            Some(_) => Verdict::Dropped(DropReason::UnknownVersion),
            None => Verdict::Dropped(DropReason::Malformed),
        };
        self.partial_csum = false;
        match verdict {
            Verdict::Dropped(r) | Verdict::Replied(r) => self.counters.count_drop(r),
            Verdict::Translated | Verdict::Fragmented(_) => {}
        }
        if let Verdict::Replied(_) = verdict {
            self.counters.icmp_generated += 1;
        }
        verdict
    }
}
