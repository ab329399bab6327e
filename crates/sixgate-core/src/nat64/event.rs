//! RFC 6888 REQ-12 / RFC 7422: the event log. Events go into a bounded ring the
//! data plane drains ([`crate::Translator::drain_events`]); when it is full, new
//! events are counted as lost, never allocated.

use super::config::Proto;
use std::net::{Ipv4Addr, Ipv6Addr};

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A dynamic BIB entry was created.
    BibCreated,
    /// A dynamic BIB entry was removed (its port is free after `port_reuse`).
    BibExpired,
    /// A dynamic BIB entry was removed by a flush (RFC 9693 §4.3 tear-down,
    /// `sixgate session flush`), its port free at once.
    BibFlushed,
    /// A session was created.
    SessionCreated,
    /// A session expired or was closed.
    SessionExpired,
    /// A session was removed by a flush or with the static BIB entry it used.
    SessionFlushed,
    /// A port block was given to a subscriber (RFC 7422).
    BlockAllocated,
    /// A port block went back to the pool.
    BlockReleased,
}

impl EventKind {
    /// Stable snake_case name for logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::BibCreated => "bib_created",
            EventKind::BibExpired => "bib_expired",
            EventKind::BibFlushed => "bib_flushed",
            EventKind::SessionCreated => "session_created",
            EventKind::SessionExpired => "session_expired",
            EventKind::SessionFlushed => "session_flushed",
            EventKind::BlockAllocated => "block_allocated",
            EventKind::BlockReleased => "block_released",
        }
    }
}

/// One log record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// Time (the `now_ns` of the packet or tick that caused it).
    pub time_ns: u64,
    /// Protocol of the mapping.
    pub proto: Proto,
    /// IPv6 side: the host's address (for blocks: the subscriber's prefix).
    pub v6: Ipv6Addr,
    /// Length of [`Event::v6`] as a prefix: 128 for a host, the
    /// subscriber prefix length (`subscriber_prefix_len`) for a block.
    pub prefix_len: u8,
    /// IPv6 port or ICMP identifier (blocks: 0).
    pub port6: u16,
    /// Pool4 address.
    pub v4: Ipv4Addr,
    /// Pool4 port (blocks: first port of the block).
    pub port4: u16,
    /// Blocks: last port of the block; otherwise equal to `port4`.
    pub port4_last: u16,
    /// Session events with `log_destinations` on: the IPv4 remote address and port.
    pub remote: Option<(Ipv4Addr, u16)>,
}

/// Bounded ring of events.
#[allow(dead_code)]
pub(crate) struct EventRing {
    buf: Vec<Event>,
    head: usize,
    len: usize,
    pub(crate) lost: u64,
    /// Nothing is logged: a peer's record is being applied (what it makes
    /// here its maker logged), or an end is another node's to log
    /// (docs/logging.md, "With `[sync]`").
    pub(crate) muted: bool,
}

impl EventRing {
    /// A ring for `cap` events (allocated now, never grown).
    pub(crate) fn new(cap: usize) -> Self {
        let blank = Event {
            kind: EventKind::BibCreated,
            time_ns: 0,
            proto: Proto::Tcp,
            v6: Ipv6Addr::UNSPECIFIED,
            prefix_len: 128,
            port6: 0,
            v4: Ipv4Addr::UNSPECIFIED,
            port4: 0,
            port4_last: 0,
            remote: None,
        };
        EventRing {
            buf: vec![blank; cap],
            head: 0,
            len: 0,
            lost: 0,
            muted: false,
        }
    }

    pub(crate) fn push(&mut self, e: Event) {
        if self.muted {
            return;
        }
        if self.len == self.buf.len() {
            self.lost += 1;
            return;
        }
        let at = (self.head + self.len) % self.buf.len();
        self.buf[at] = e;
        self.len += 1;
    }

    /// Free slots: `[log_export] on_overflow = "refuse"` creates no state
    /// whose events would not fit.
    #[inline]
    pub(crate) fn room(&self) -> usize {
        self.buf.len() - self.len
    }

    pub(crate) fn drain(&mut self, mut f: impl FnMut(&Event)) {
        self.drain_while(|e| {
            f(e);
            true
        });
    }

    /// Hand events to `f`, oldest first, until it returns false (the event
    /// it refused stays, first in line).
    pub(crate) fn drain_while(&mut self, mut f: impl FnMut(&Event) -> bool) {
        while self.len > 0 {
            if !f(&self.buf[self.head]) {
                return;
            }
            self.head = (self.head + 1) % self.buf.len();
            self.len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6888_req12_ring_counts_what_does_not_fit() {
        let mut r = EventRing::new(2);
        let mut e = r.buf[0];
        for i in 0..3 {
            e.port4 = i;
            r.push(e);
        }
        assert_eq!(r.lost, 1);
        let mut seen = Vec::new();
        r.drain(|e| seen.push(e.port4));
        assert_eq!(seen, [0, 1]);
        r.push(e);
        r.drain(|e| seen.push(e.port4));
        assert_eq!(seen, [0, 1, 2]);
    }

    #[test]
    fn rfc6888_req12_a_refused_event_stays_first_in_line() {
        let mut r = EventRing::new(4);
        let mut e = r.buf[0];
        for i in 0..3 {
            e.port4 = i;
            r.push(e);
        }
        assert_eq!(r.room(), 1);
        let mut seen = Vec::new();
        r.drain_while(|e| {
            seen.push(e.port4);
            seen.len() < 2
        });
        assert_eq!(seen, [0, 1], "the second was offered and refused");
        r.drain(|e| seen.push(e.port4));
        assert_eq!(seen, [0, 1, 1, 2]);
        assert_eq!(r.room(), 4);
    }
}
