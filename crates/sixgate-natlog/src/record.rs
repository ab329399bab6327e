//! One NAT event with its wall-clock time: what every wire format encodes.

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::nat64::{Event, EventKind, Proto};

/// What a record says happened, as the logs name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A session was created.
    SessionCreated,
    /// A session ended (expired, closed or flushed).
    SessionDeleted,
    /// A dynamic BIB entry (address and port mapping) was created.
    BibCreated,
    /// A dynamic BIB entry was removed.
    BibDeleted,
    /// A port block was allocated to a subscriber (RFC 7422).
    BlockAllocated,
    /// A port block went back to the pool.
    BlockReleased,
    /// A port block still held, logged again (`[log_export] interim`) so that
    /// a collector that lost its allocation learns it.
    BlockActive,
}

impl RecordKind {
    /// The kind of a core event.
    pub const fn of(kind: EventKind) -> RecordKind {
        match kind {
            EventKind::SessionCreated => RecordKind::SessionCreated,
            EventKind::SessionExpired | EventKind::SessionFlushed => RecordKind::SessionDeleted,
            EventKind::BibCreated => RecordKind::BibCreated,
            EventKind::BibExpired | EventKind::BibFlushed => RecordKind::BibDeleted,
            EventKind::BlockAllocated => RecordKind::BlockAllocated,
            EventKind::BlockReleased => RecordKind::BlockReleased,
        }
    }

    /// Stable snake_case name (`[log]`'s `event` field).
    pub const fn as_str(self) -> &'static str {
        match self {
            RecordKind::SessionCreated => "session_created",
            RecordKind::SessionDeleted => "session_deleted",
            RecordKind::BibCreated => "bib_created",
            RecordKind::BibDeleted => "bib_deleted",
            RecordKind::BlockAllocated => "block_allocated",
            RecordKind::BlockReleased => "block_released",
            RecordKind::BlockActive => "block_active",
        }
    }

    /// A port block's record (subscriber prefix and a port range).
    pub const fn is_block(self) -> bool {
        matches!(
            self,
            RecordKind::BlockAllocated | RecordKind::BlockReleased | RecordKind::BlockActive
        )
    }

    /// A session's record.
    pub const fn is_session(self) -> bool {
        matches!(
            self,
            RecordKind::SessionCreated | RecordKind::SessionDeleted
        )
    }

    /// The start of something (as opposed to its end).
    pub const fn is_start(self) -> bool {
        matches!(
            self,
            RecordKind::SessionCreated
                | RecordKind::BibCreated
                | RecordKind::BlockAllocated
                | RecordKind::BlockActive
        )
    }
}

/// One NAT event at a wall-clock time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NatRecord {
    /// What happened.
    pub kind: RecordKind,
    /// Milliseconds since the Unix epoch (UTC).
    pub unix_ms: u64,
    /// TCP, UDP or ICMP.
    pub proto: Proto,
    /// The IPv6 host (blocks: the subscriber's prefix).
    pub inside: Ipv6Addr,
    /// Length of `inside` as a prefix (128 for a host).
    pub prefix_len: u8,
    /// The IPv6 port or ICMP identifier (blocks: 0).
    pub inside_port: u16,
    /// The pool4 address.
    pub outside: Ipv4Addr,
    /// The pool4 port (blocks: the first of the block).
    pub outside_port: u16,
    /// Blocks: the last port of the block; otherwise `outside_port`.
    pub outside_port_last: u16,
    /// Sessions with `log_destinations`: the IPv4 remote address and port.
    pub remote: Option<(Ipv4Addr, u16)>,
}

impl NatRecord {
    /// `e` at `unix_ms`.
    pub fn from_event(e: &Event, unix_ms: u64) -> NatRecord {
        NatRecord {
            kind: RecordKind::of(e.kind),
            unix_ms,
            proto: e.proto,
            inside: e.v6,
            prefix_len: e.prefix_len,
            inside_port: e.port6,
            outside: e.v4,
            outside_port: e.port4,
            outside_port_last: e.port4_last,
            remote: e.remote,
        }
    }

    /// The IANA protocol number (ICMP mappings are ICMPv6 inside, ICMP
    /// outside: the outside number is logged, as the public side is what the
    /// question asks about).
    pub const fn protocol_number(&self) -> u8 {
        match self.proto {
            Proto::Tcp => 6,
            Proto::Udp => 17,
            Proto::Icmp => 1,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A UDP session of 2001:db8::1:40000 on 198.51.100.1:61001, at
    /// 2026-12-04T05:40:00.123Z.
    pub(crate) fn session() -> NatRecord {
        NatRecord {
            kind: RecordKind::SessionCreated,
            unix_ms: 1_796_362_800_123,
            proto: Proto::Udp,
            inside: "2001:db8::1".parse().unwrap(),
            prefix_len: 128,
            inside_port: 40000,
            outside: Ipv4Addr::new(198, 51, 100, 1),
            outside_port: 61001,
            outside_port_last: 61001,
            remote: None,
        }
    }

    /// Block 61440–61503 of 198.51.100.1 for 2001:db8:1::/56.
    pub(crate) fn block() -> NatRecord {
        NatRecord {
            kind: RecordKind::BlockAllocated,
            inside: "2001:db8:1::".parse().unwrap(),
            prefix_len: 56,
            inside_port: 0,
            outside_port: 61440,
            outside_port_last: 61503,
            ..session()
        }
    }

    #[test]
    fn every_core_event_has_a_record_kind() {
        assert_eq!(
            RecordKind::of(EventKind::SessionFlushed),
            RecordKind::SessionDeleted
        );
        assert_eq!(
            RecordKind::of(EventKind::BibFlushed),
            RecordKind::BibDeleted
        );
        assert!(RecordKind::BlockActive.is_block() && RecordKind::BlockActive.is_start());
    }
}
