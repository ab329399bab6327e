//! MAP-T (RFC 7599): stateless translation between a MAP domain's IPv6 and the
//! IPv4 Internet, with IPv4 addresses shared by port sets (RFC 7597 §5).
//!
//! The translation itself is RFC 7915 (RFC 7599 §6); MAP-T only changes how
//! addresses are found: with ports, from the Mapping Rules. This module supplies
//! that step to the [`crate::rfc7915`] paths, as [`crate::nat64`] does for NAT64:
//!
//! - [`rule`]: one Mapping Rule (§5: EA bits, PSID, port sets, MAP addresses);
//! - [`config`]: [`MaptConfig`], the domain (DMR, FMRs) and the role, BR or CE;
//! - `xlate`: the address-and-port step both roles add to RFC 7915, the §8.1
//!   spoofing check and fragments (later fragments reuse what the first got);
//! - `napt44`: the CE's NAPT44 (RFC 7599 §1: the CE shares its one IPv4 address
//!   and port set among its LAN hosts);
//! - [`steering`]: which worker a BR packet goes to (every fragment of a
//!   datagram to one worker, for the fragment table), and reading it from a
//!   packet for data planes that hand packets between workers.

pub mod config;
pub(crate) mod napt44;
pub mod rule;
pub mod steering;
pub(crate) mod xlate;

pub use config::{CeConfig, MaptConfig, Napt44Config, Role};
pub use rule::{DEFAULT_PSID_OFFSET, MapRule, RuleError};

use crate::nat64::Nat64;
use crate::nat64::fragments::FragmentTable;

/// One worker's MAP-T state: the fragment table (both roles) and, on a CE, the
/// NAPT44 tables.
pub(crate) struct Mapt {
    /// Milliseconds clock for the fragment table: `now_ns` of the first call is 0.
    epoch_ns: Option<u64>,
    frags: FragmentTable,
    key: u64,
    /// The CE's NAPT44 (RFC 6146's tables with the LAN hosts as "IPv6" side).
    pub(crate) napt: Option<Box<Nat64>>,
}

impl Mapt {
    pub(crate) fn new(cfg: &MaptConfig) -> Self {
        Mapt {
            epoch_ns: None,
            frags: FragmentTable::new(),
            key: cfg.hash_key,
            napt: cfg
                .ce()
                .map(|ce| Box::new(Nat64::new(&napt44::nat64_config(ce, cfg.hash_key), 0, 1))),
        }
    }

    fn now_ms(&mut self, now_ns: u64) -> u32 {
        let epoch = *self.epoch_ns.get_or_insert(now_ns);
        (now_ns.saturating_sub(epoch) / 1_000_000) as u32
    }

    /// Remember where the later fragments of a datagram go (RFC 7599 §8).
    pub(crate) fn fragment_remember(&mut self, id: &[u64], addr: u128, now_ns: u64) {
        let now = self.now_ms(now_ns);
        self.frags
            .remember(crate::hash::keyed(self.key, id), addr, now);
    }

    /// Where a later fragment goes (`None`: its first fragment was not seen).
    pub(crate) fn fragment_recall(&mut self, id: &[u64], now_ns: u64) -> Option<u128> {
        let now = self.now_ms(now_ns);
        self.frags.recall(crate::hash::keyed(self.key, id), now)
    }
}
