//! Flushing the tables on the operator's word (`sixgate session flush`): the
//! sessions, and the dynamic BIB entries they leave, go at once instead of at
//! the end of their lifetime.
//!
//! RFC 6146 §3.5 lets state go only when its lifetime runs out (§3.5.1 UDP,
//! §3.5.2.2 TCP, §3.5.3 ICMP) or a mapping is taken away (§3.1 "manually
//! configured"); an operator's flush is the latter for every session the filter
//! names. It is also what RFC 9693 §4.3 (connection tear-down rate) times on a
//! stateful NATxy gateway: how fast the DUT deletes N connections.
//!
//! Like a listing (`walk`), a flush runs a chunk at a time over the BIB slab's
//! positions, so a worker that owns a million sessions is never held for long:
//! each call does at most `budget` units of work (a position looked at, a
//! session removed), and the cursor it returns may point back at the entry it
//! was emptying. Control plane only; nothing is allocated.

use std::net::Ipv4Addr;

use super::Nat64;
use super::bib::{STATIC, proto_of};
use super::config::Proto;
use super::event::EventKind;
use super::slab::NIL;
use super::walk::Cursor;

/// Which state a flush removes; the default, everything dynamic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushFilter {
    /// Only this protocol's tables.
    pub proto: Option<Proto>,
    /// Only entries whose IPv6 transport address is in this prefix (address,
    /// length; a MAP-T CE's LAN hosts are `::ffff:a.b.c.d`).
    pub ipv6: Option<(u128, u8)>,
    /// Only entries whose IPv4 (pool4) transport address is in this prefix.
    pub ipv4: Option<(Ipv4Addr, u8)>,
}

impl FlushFilter {
    fn keeps(&self, proto: Proto, v6: u128, v4: u32) -> bool {
        let within = |a: u128, p: u128, len: u8, bits: u32| {
            let len = u32::from(len).min(bits);
            len == 0 || (a ^ p) >> (bits - len) == 0
        };
        self.proto.is_none_or(|p| p == proto)
            && self.ipv6.is_none_or(|(p, len)| within(v6, p, len, 128))
            && self
                .ipv4
                .is_none_or(|(p, len)| within(u128::from(v4), u128::from(u32::from(p)), len, 32))
    }
}

/// What a flush removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Sessions (RFC 6146 §3.2).
    pub sessions: u64,
    /// Dynamic BIB entries (§3.1); static ones stay.
    pub bib: u64,
}

impl Flushed {
    /// Add another chunk's or worker's figures.
    pub fn merge(&mut self, o: &Flushed) {
        self.sessions += o.sessions;
        self.bib += o.bib;
    }
}

impl Nat64 {
    /// RFC 9693 §4.3 tear-down, RFC 6146 §3.1/§3.5 deletion: remove the
    /// sessions of the BIB entries at slab positions `from..` that `filter`
    /// names, and those entries unless static, doing at most `budget` units of
    /// work; adds what went to `out` and returns where to go on (`None`: done).
    pub(crate) fn flush(
        &mut self,
        filter: &FlushFilter,
        from: u32,
        budget: u32,
        now_ns: u64,
        out: &mut Flushed,
    ) -> Cursor {
        let now_ms = self.peek_ms(now_ns);
        let len = self.bibs.items.len() as u32;
        let mut left = budget.max(1);
        let mut i = from;
        while i < len {
            if left == 0 {
                return Some(i);
            }
            left -= 1;
            let b = *self.bibs.get(i);
            let live = self.bib_by4(b.proto, b.v4, b.port4) == Some(i);
            if !live || !filter.keeps(proto_of(b.proto), b.v6_int(), b.v4) {
                i += 1;
                continue;
            }
            // Its sessions, first to last; on a budget that runs out, this
            // entry again next time (it is still live with what is left).
            while self.bibs.get(i).sessions != NIL {
                if left == 0 {
                    return Some(i);
                }
                left -= 1;
                let s = self.bibs.get(i).sessions;
                self.session_remove(s, EventKind::SessionFlushed, now_ms, now_ns);
                out.sessions += 1;
                self.sessions_flushed += 1;
                // The last one may have freed a dynamic entry at once
                // (`port_reuse = 0`).
                if self.bib_by4(b.proto, b.v4, b.port4) != Some(i) {
                    break;
                }
            }
            // A dynamic entry goes without its port-reuse wait (RFC 6888 REQ-8
            // protects a port from reuse by strangers; the operator asked).
            if b.flags & STATIC == 0 && self.bib_by4(b.proto, b.v4, b.port4) == Some(i) {
                self.bib_remove(i, EventKind::BibFlushed, now_ns);
            }
            if b.flags & STATIC == 0 {
                out.bib += 1;
            }
            i += 1;
        }
        None
    }
}
