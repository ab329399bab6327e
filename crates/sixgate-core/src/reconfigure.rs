//! Runtime configuration changes (`sixgate reload`, `eam|pool4|bib add|remove`):
//! which changes a running translator takes, and taking them.
//!
//! The stateless parts (pool6, the RFC 7757 EAM table, the RFC 6791 pool, MTUs,
//! ICMP policy) are plain values in [`Config`] and swap with it. NAT64 state is
//! kept: see `nat64::runtime` for pool4 and static BIB entries. What the tables
//! or the kernel's steering were built on cannot change while running:
//! [`check`] names the key.

use std::fmt;
use std::sync::Arc;

use crate::Translator;
use crate::config::Config;

/// A change a running translator cannot take; the old configuration stays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The key, as in the file (`[translator] mode`, `[nat64] max_sessions`, …).
    pub key: &'static str,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cannot change while the translator runs (restart it); the running \
             configuration is unchanged",
            self.key
        )
    }
}

impl std::error::Error for Refused {}

/// Whether a translator running `old` can switch to `new`.
pub fn check(old: &Config, new: &Config) -> Result<(), Refused> {
    let refuse = |key| Err(Refused { key });
    // A MAP-T node's rules decide its port set, and a CE's NAPT44 tables were
    // built on it: the whole [mapt] section is fixed while running.
    match (&old.mapt, &new.mapt) {
        (None, None) => {}
        (Some(o), Some(n)) if o == n => {}
        (Some(_), Some(_)) => return refuse("[mapt]"),
        _ => return refuse("[translator] mode"),
    }
    match (&old.nat64, &new.nat64) {
        (None, None) => Ok(()),
        (Some(_), None) | (None, Some(_)) => refuse("[translator] mode"),
        (Some(o), Some(n)) => {
            // Sessions hold remotes by their IPv4 address and map them back
            // through pool6.
            if old.map.pool6 != new.map.pool6 {
                return refuse("[translator] pool6 (in nat64 mode)");
            }
            if o.max_sessions != n.max_sessions {
                return refuse("[nat64] max_sessions");
            }
            if o.port_block_size != n.port_block_size {
                return refuse("[nat64] port_block_size");
            }
            if o.subscriber_prefix_len != n.subscriber_prefix_len {
                return refuse("[nat64] subscriber_prefix_len");
            }
            // RFC 7422: the formula is what answers "who had it?" and what
            // steers subscribers to workers; it changes only with a restart
            // (docs/logging.md, "Deterministic NAT").
            if o.deterministic != n.deterministic {
                return refuse("[nat64] deterministic");
            }
            if o.deterministic.is_some() && o.pool4 != n.pool4 {
                return refuse("[nat64] pool4 (with deterministic)");
            }
            Ok(())
        }
    }
}

impl Translator {
    /// Switch to `cfg` after [`check`]: counters, IPv4 ID state and the NAT64
    /// tables are kept (established sessions survive); new pool4 addresses, EAM
    /// entries and static BIB entries take effect with the next packet.
    pub fn reconfigure(&mut self, cfg: Arc<Config>) -> Result<(), Refused> {
        check(&self.cfg, &cfg)?;
        self.set_config(cfg);
        Ok(())
    }

    /// The NAT64 tables, or a MAP-T CE's NAPT44 (the same tables).
    fn tables(&self) -> Option<&crate::nat64::Nat64> {
        match self.nat64.as_deref() {
            Some(n) => Some(n),
            None => self.mapt.as_deref()?.napt.as_deref(),
        }
    }

    fn tables_mut(&mut self) -> Option<&mut crate::nat64::Nat64> {
        match self.nat64.as_deref_mut() {
            Some(n) => Some(n),
            None => self.mapt.as_deref_mut()?.napt.as_deref_mut(),
        }
    }

    /// RFC 6146 §3.1 BIB entries of this worker (a MAP-T CE: its NAPT44's) at
    /// slab positions `from..from + span`; the cursor to go on from (`None`:
    /// done). Without such tables there are none.
    pub fn walk_bib(
        &self,
        from: u32,
        span: u32,
        f: impl FnMut(crate::nat64::BibView),
    ) -> crate::nat64::walk::Cursor {
        self.tables().and_then(|n| n.walk_bib(from, span, f))
    }

    /// RFC 6888 subscribers of this worker with their RFC 7422 port blocks,
    /// like [`Translator::walk_bib`] (none unless per-subscriber limits or
    /// port blocks are configured).
    pub fn walk_subscribers(
        &self,
        from: u32,
        span: u32,
        f: impl FnMut(crate::nat64::walk::SubscriberView),
    ) -> crate::nat64::walk::Cursor {
        self.tables()
            .and_then(|n| n.walk_subscribers(from, span, f))
    }

    /// RFC 6146 §3.2 sessions of this worker, like [`Translator::walk_bib`];
    /// `now_ns` is the clock the packets are translated with.
    pub fn walk_sessions(
        &self,
        from: u32,
        span: u32,
        now_ns: u64,
        f: impl FnMut(crate::nat64::SessionView),
    ) -> crate::nat64::walk::Cursor {
        self.tables()
            .and_then(|n| n.walk_sessions(from, span, n.peek_ms(now_ns), f))
    }

    /// RFC 9693 §4.3 connection tear-down (`sixgate session flush`): remove the
    /// sessions `filter` names and their dynamic BIB entries (RFC 6146 §3.5:
    /// as if their lifetime had run out; static entries stay), from BIB slab
    /// position `from` on, with at most `budget` units of work (positions and
    /// sessions), adding the figures to `out`. Returns the cursor to go on from
    /// (`None`: done). A MAP-T CE flushes its NAPT44; without tables, nothing.
    pub fn flush(
        &mut self,
        filter: &crate::nat64::FlushFilter,
        from: u32,
        budget: u32,
        now_ns: u64,
        out: &mut crate::nat64::Flushed,
    ) -> crate::nat64::walk::Cursor {
        self.tables_mut()
            .and_then(|n| n.flush(filter, from, budget, now_ns, out))
    }
}
