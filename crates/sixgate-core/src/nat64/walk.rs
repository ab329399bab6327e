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

    /// Table time at `now_ns` without starting the clock.
    pub(crate) fn peek_ms(&self, now_ns: u64) -> u32 {
        self.epoch_ns
            .map_or(0, |e| (now_ns.saturating_sub(e) / 1_000_000) as u32)
    }
}
