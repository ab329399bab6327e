//! Reading the tables a chunk at a time (`sixgate show bib|sessions`): a cursor
//! over the slab positions, so a caller can list millions of entries without
//! holding the worker for long or copying the tables. Control plane only, never
//! on the packet path.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::Nat64;
use super::bib::{STATIC, proto_of};
use super::config::Proto;
use super::tcp::TcpState;

/// One RFC 6146 §3.1 BIB entry, as the control plane sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BibView {
    /// Its protocol's table.
    pub proto: Proto,
    /// IPv6 transport address.
    pub v6: Ipv6Addr,
    /// Port (ICMP: identifier).
    pub port6: u16,
    /// IPv4 transport address (pool4).
    pub v4: Ipv4Addr,
    /// Port (ICMP: identifier).
    pub port4: u16,
    /// Manually configured (never expires).
    pub is_static: bool,
}

/// One RFC 6146 §3.2 session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionView {
    /// The BIB entry it belongs to.
    pub bib: BibView,
    /// The IPv4 remote (its IPv6 side is its pool6 form).
    pub remote4: Ipv4Addr,
    /// The remote's port (ICMP: identifier).
    pub rport: u16,
    /// §3.5.2 state, for TCP.
    pub tcp_state: Option<TcpState>,
    /// Milliseconds until it expires unless refreshed.
    pub expires_in_ms: u32,
}

/// One subscriber (RFC 6888: the sources sharing `subscriber_prefix_len`
/// bits), with what it holds; tracked only with per-subscriber limits or
/// port blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberView {
    /// Its prefix.
    pub prefix: Ipv6Addr,
    /// `subscriber_prefix_len`.
    pub prefix_len: u8,
    /// Sessions it has.
    pub sessions: u32,
    /// Pool4 ports it holds (BIB entries, or blocks × block size).
    pub ports: u32,
    /// Its RFC 7422 port blocks: protocol, address, first and last port, and
    /// the BIB entries in each.
    pub blocks: Vec<BlockView>,
}

/// One RFC 7422 port block of a subscriber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockView {
    /// Its protocol.
    pub proto: Proto,
    /// The pool4 address.
    pub v4: Ipv4Addr,
    /// First port.
    pub first: u16,
    /// Last port.
    pub last: u16,
    /// BIB entries in it (cooling ones included).
    pub used: u16,
}

/// Where a walk goes on: `None` when it is over.
pub type Cursor = Option<u32>;

impl Nat64 {
    fn bib_view(&self, i: u32) -> BibView {
        let b = self.bibs.get(i);
        BibView {
            proto: proto_of(b.proto),
            v6: Ipv6Addr::from(b.v6),
            port6: b.port6,
            v4: Ipv4Addr::from(b.v4),
            port4: b.port4,
            is_static: b.flags & STATIC != 0,
        }
    }

    /// Hand `f` the live BIB entries among slab positions `from..from + span`.
    pub(crate) fn walk_bib(&self, from: u32, span: u32, mut f: impl FnMut(BibView)) -> Cursor {
        let len = self.bibs.items.len() as u32;
        let end = from.saturating_add(span).min(len);
        for i in from..end {
            let b = self.bibs.get(i);
            if self.bib_by4(b.proto, b.v4, b.port4) == Some(i) {
                f(self.bib_view(i));
            }
        }
        (end < len).then_some(end)
    }

    /// Hand `f` the live sessions among slab positions `from..from + span`;
    /// `now_ms` is table time.
    pub(crate) fn walk_sessions(
        &self,
        from: u32,
        span: u32,
        now_ms: u32,
        mut f: impl FnMut(SessionView),
    ) -> Cursor {
        let len = self.sessions.items.len() as u32;
        let end = from.saturating_add(span).min(len);
        for i in from..end {
            let s = self.sessions.get(i);
            if self.session_find(s.bib, s.remote4, s.rport) != Some(i) {
                continue;
            }
            let bib = self.bib_view(s.bib);
            f(SessionView {
                tcp_state: (bib.proto == Proto::Tcp).then(|| TcpState::from_u8(s.state)),
                bib,
                remote4: Ipv4Addr::from(s.remote4),
                rport: s.rport,
                expires_in_ms: (s.deadline.wrapping_sub(now_ms) as i32).max(0) as u32,
            });
        }
        (end < len).then_some(end)
    }

    /// Hand `f` the live subscribers among slab positions `from..from + span`.
    pub(crate) fn walk_subscribers(
        &self,
        from: u32,
        span: u32,
        mut f: impl FnMut(SubscriberView),
    ) -> Cursor {
        let subs = &self.subs.subs;
        let len = subs.items.len() as u32;
        let end = from.saturating_add(span).min(len);
        let k = self.subs.block_size();
        for i in from..end {
            let s = subs.get(i);
            if self.subs.find(u128::from_be_bytes(s.prefix)) != Some(i) {
                continue;
            }
            let mut blocks = Vec::new();
            let mut bi = s.blocks;
            while bi != super::slab::NIL {
                let b = self.subs.blocks.get(bi);
                blocks.push(BlockView {
                    proto: proto_of(b.proto),
                    v4: Ipv4Addr::from(b.v4),
                    first: b.first,
                    last: b.first.saturating_add(k.saturating_sub(1)),
                    used: b.used,
                });
                bi = b.next;
            }
            f(SubscriberView {
                prefix: Ipv6Addr::from(s.prefix),
                prefix_len: self.cfg.subscriber_prefix_len,
                sessions: s.sessions,
                ports: s.ports,
                blocks,
            });
        }
        (end < len).then_some(end)
    }

    /// Table time at `now_ns` without starting the clock.
    pub(crate) fn peek_ms(&self, now_ns: u64) -> u32 {
        self.epoch_ns
            .map_or(0, |e| (now_ns.saturating_sub(e) / 1_000_000) as u32)
    }
}
