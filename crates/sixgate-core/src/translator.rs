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
}

impl Translator {
    /// A translator for one worker.
    pub fn new(cfg: Arc<Config>) -> Self {
        Translator {
            ids: Ipv4IdGenerator::new(cfg.ipv4_id_key),
            icmp_bucket: TokenBucket::new(cfg.icmp_errors_per_sec, cfg.icmp_error_burst),
            counters: Counters::default(),
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
        scratch.clear();
        let verdict = match pkt.data().first().map(|b| b >> 4) {
            Some(6) => rfc7915::v6_to_v4::translate(self, pkt, scratch, now_ns),
            Some(4) => rfc7915::v4_to_v6::translate(self, pkt, scratch, now_ns),
            Some(_) => Verdict::Dropped(DropReason::UnknownVersion),
            None => Verdict::Dropped(DropReason::Malformed),
        };
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
