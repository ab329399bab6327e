//! Runtime changes to a running NAT64 (`sixgate pool4|bib add|remove`, reload):
//! what a new configuration does to the tables one worker owns.
//!
//! - pool4 (RFC 6146 §3.5.1.1 takes new mappings from it): added addresses are
//!   usable at once. A removed address takes no new mapping, but its BIB entries
//!   and sessions stay until they expire: it is *draining*, still recognised as
//!   ours on the IPv4 side (so the established sessions keep working), and
//!   forgotten once its last BIB entry went: found by the timers' bounded scan
//!   ([`Nat64::scan_draining`]), or at the next change. Jool flushes them
//!   instead; we don't, so a pool4 change never cuts an established flow.
//! - static BIB entries (RFC 6146 §3.1 "manually configured"): added ones are
//!   installed by the worker that owns their IPv6 side; a removed one goes with
//!   its sessions (the operator took that mapping away).
//! - Table capacities, port blocks, the subscriber prefix and the hash key stay
//!   (tables and steering are built on them); the daemon refuses a change to them
//!   before it gets here.

use super::Nat64;
use super::bib::{Bib, STATIC};
use super::config::{Nat64Config, Pool4Entry, StaticBib};
use super::event::EventKind;
use super::slab::{Link, NIL};

/// BIB slots one step of [`Nat64::scan_draining`] looks at: a pass over a
/// million-entry table in some 25 s of 100 ms timer rounds, microseconds a
/// step, and only while a removed prefix drains.
const DRAIN_SCAN_STEP: usize = 4096;

impl Nat64 {
    /// Apply `cfg`: limits, timeouts, filtering and logging from now on; pool4
    /// and static BIB entries as described in the module documentation.
    pub(crate) fn reconfigure(&mut self, cfg: &Nat64Config) {
        let old = std::mem::replace(&mut self.cfg, cfg.clone());
        // Built on at start: kept (the daemon refuses changing them).
        self.cfg.max_sessions = old.max_sessions;
        self.cfg.port_block_size = old.port_block_size;
        self.cfg.subscriber_prefix_len = old.subscriber_prefix_len;
        self.cfg.hash_key = old.hash_key;
        self.subs.set_limits(&self.cfg);
        self.set_timeouts();
        self.pool4_changed(&old.pool4);
        self.own_pool4_rebuild();
        let reserved = self.reserved.clone();
        self.static_bib_changed(&old.static_bib);
        self.port_map_changed(&reserved);
    }

    /// Keep the port map (`port_map`) in step: built afresh when the pool4
    /// entries new mappings use changed, else the static entries' ports that
    /// came and went (`reserved` is the list before the change; the entries
    /// this worker installed or removed already went through the BIB).
    pub(crate) fn port_map_changed(&mut self, reserved: &[(u8, u32, u16)]) {
        if !self.port_map.covers(self.alloc_pool4()) {
            self.port_map_rebuild();
            return;
        }
        for &(p, v4, port) in reserved {
            if self.reserved.binary_search(&(p, v4, port)).is_err()
                && self.bib_by4(p, v4, port).is_none()
            {
                self.port_map.unmark(p, v4, port);
            }
        }
        for &(p, v4, port) in &self.reserved {
            self.port_map.mark(p, v4, port);
        }
    }

    /// RFC 6146 §3.5.1.1: removed pool4 prefixes drain, re-added ones are live.
    fn pool4_changed(&mut self, old: &[Pool4Entry]) {
        for p in old {
            if !self
                .cfg
                .pool4
                .iter()
                .any(|n| n.addr == p.addr && n.prefix_len == p.prefix_len)
                && !self.draining.contains(p)
            {
                self.draining.push(*p);
            }
        }
        let pool4 = std::mem::take(&mut self.cfg.pool4);
        self.draining.retain(|d| {
            !pool4
                .iter()
                .any(|n| n.addr == d.addr && n.prefix_len == d.prefix_len)
        });
        self.cfg.pool4 = pool4;
        // Forget the drained ones: no BIB entry left on them.
        let mut draining = std::mem::take(&mut self.draining);
        draining.retain(|d| self.live_bibs().any(|(_, b)| d.contains(b.v4)));
        self.draining = draining;
        (self.drain_next, self.drain_seen) = (0, 0);
    }

    /// Removed pool4 prefixes that still have BIB entries here.
    pub(crate) fn draining(&self) -> &[Pool4Entry] {
        &self.draining
    }

    /// One bounded step ([`DRAIN_SCAN_STEP`] BIB slots) of the timers' scan for
    /// drained pool4 prefixes: a removed prefix none of whose addresses holds a
    /// BIB entry through a whole pass over the BIB slab is forgotten, as the
    /// next change would (no new entry can appear on it meanwhile: it takes no
    /// new mapping). Only the first 64 draining prefixes are tracked; more wait
    /// for a change. True when a pass forgot one.
    pub(crate) fn scan_draining(&mut self) -> bool {
        if self.draining.is_empty() {
            return false;
        }
        let len = self.bibs.items.len();
        let from = (self.drain_next as usize).min(len);
        let to = (from + DRAIN_SCAN_STEP).min(len);
        let mut seen = self.drain_seen;
        for (i, b) in self.bibs.items[from..to].iter().enumerate() {
            for (k, d) in self.draining.iter().take(64).enumerate() {
                if d.contains(b.v4)
                    && self.bib_by4(b.proto, b.v4, b.port4) == Some((from + i) as u32)
                {
                    seen |= 1 << k;
                }
            }
        }
        if to < len {
            (self.drain_next, self.drain_seen) = (to as u32, seen);
            return false;
        }
        let before = self.draining.len();
        let mut k = 0;
        self.draining.retain(|_| {
            k += 1;
            k > 64 || seen & (1 << (k - 1)) != 0
        });
        (self.drain_next, self.drain_seen) = (0, 0);
        self.draining.len() < before
    }

    /// RFC 6146 §3.1: static entries added and removed.
    fn static_bib_changed(&mut self, old: &[StaticBib]) {
        let new = self.cfg.static_bib.clone();
        for s in old.iter().filter(|s| !new.contains(s)) {
            let p = s.proto as u8;
            let Some(i) = self.bib_by4(p, u32::from(s.v4), s.port4) else {
                continue; // another worker's
            };
            if self.bibs.get(i).flags & STATIC == 0 {
                continue;
            }
            while self.bibs.get(i).sessions != NIL {
                let first = self.bibs.get(i).sessions;
                self.session_remove(first, EventKind::SessionFlushed, 0, 0);
            }
            self.bib_remove(i, EventKind::BibFlushed, 0);
        }
        self.reserved = new
            .iter()
            .map(|s| (s.proto as u8, u32::from(s.v4), s.port4))
            .collect();
        self.reserved.sort_unstable();
        self.install_static_bib();
    }

    /// Indices and records of the BIB entries in use.
    pub(crate) fn live_bibs(&self) -> impl Iterator<Item = (u32, &Bib)> {
        self.bibs
            .items
            .iter()
            .enumerate()
            .map(|(i, b)| (i as u32, b))
            .filter(|&(i, b)| self.bib_by4(b.proto, b.v4, b.port4) == Some(i))
    }

    /// Whether `a` is a removed pool4 address that still has BIB entries.
    #[inline]
    pub(crate) fn draining_has(&self, a: u32) -> bool {
        !self.draining.is_empty() && self.draining.iter().any(|p| p.contains(a))
    }
}

/// A fresh static BIB record for `s`.
pub(crate) fn static_record(s: &StaticBib) -> Bib {
    Bib {
        v6: s.v6.octets(),
        v4: u32::from(s.v4),
        port6: s.port6,
        port4: s.port4,
        proto: s.proto as u8,
        flags: STATIC,
        sessions: NIL,
        cool: Link::NONE,
        cool_until: 0,
        mark: 0,
    }
}
