//! The 56-byte record: one change of one NAT64 table entry (docs/ha.md,
//! "Record"). Both tuples travel, so the receiver needs neither the sender's
//! pool6 nor its clock: the lifetime is a remaining time.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Encoded size of a record.
pub const RECORD_LEN: usize = 56;

/// The core caps lifetimes at 10^6 s; a record above that is malformed.
pub const MAX_LIFETIME_MS: u32 = 1_000_000_000;

/// What the record does to the receiver's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Create or overwrite a session (and its BIB entry). Idempotent.
    SessionUpsert = 1,
    /// Remove a session (sent by the owner of its pool4 address).
    SessionDelete = 2,
    /// Only the lifetime changed (coalesced before it is sent).
    SessionRefresh = 3,
    /// A BIB entry left its cooling period; remote fields are zero.
    BibDelete = 4,
    /// A dynamic BIB entry without sessions, waiting out its port-reuse
    /// delay (RFC 6888 REQ-8); remote fields are zero, the lifetime is the
    /// rest of the wait. Written to state files only (docs/restart.md);
    /// never sent to a peer, which would ignore it.
    BibCooling = 5,
}

/// Protocol of the mapping, as its IANA number on the IPv4 side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    /// ICMP query (identifier in the port fields).
    Icmp = 1,
    /// TCP.
    Tcp = 6,
    /// UDP.
    Udp = 17,
}

/// RFC 6146 §3.5.2 TCP states, numbered as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcpState {
    /// An IPv4 SYN created the session.
    V4Init = 1,
    /// An IPv6 SYN created the session.
    V6Init = 2,
    /// Both SYNs seen.
    Established = 3,
    /// FIN seen from the IPv4 side.
    V4FinRcv = 4,
    /// FIN seen from the IPv6 side.
    V6FinRcv = 5,
    /// FINs seen from both sides.
    V4FinV6FinRcv = 6,
    /// RST seen, or the established lifetime ran out.
    Trans = 7,
}

impl TcpState {
    fn from_wire(b: u8) -> Option<Option<TcpState>> {
        Some(Some(match b {
            0 => return Some(None),
            1 => TcpState::V4Init,
            2 => TcpState::V6Init,
            3 => TcpState::Established,
            4 => TcpState::V4FinRcv,
            5 => TcpState::V6FinRcv,
            6 => TcpState::V4FinV6FinRcv,
            7 => TcpState::Trans,
            _ => return None,
        }))
    }
}

/// One table change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// What to do.
    pub op: Op,
    /// Protocol.
    pub proto: Proto,
    /// TCP state; `None` for UDP and ICMP.
    pub tcp_state: Option<TcpState>,
    /// Remaining lifetime in milliseconds at the sender.
    pub lifetime_ms: u32,
    /// The IPv6 host (subscriber) address.
    pub v6_host: Ipv6Addr,
    /// The IPv4 remote in its pool6 form.
    pub v6_remote: Ipv6Addr,
    /// Pool4 address.
    pub v4_pool: Ipv4Addr,
    /// IPv4 remote address.
    pub v4_remote: Ipv4Addr,
    /// IPv6 port or ICMP identifier.
    pub port6: u16,
    /// Pool4 port or ICMP identifier.
    pub port4: u16,
    /// Remote port (ICMP: 0).
    pub remote_port: u16,
}

impl Record {
    /// The session key on the IPv4 side, unique across nodes because only the
    /// owner of a pool4 address allocates on it.
    pub fn key(&self) -> (Proto, Ipv4Addr, u16, Ipv4Addr, u16) {
        (
            self.proto,
            self.v4_pool,
            self.port4,
            self.v4_remote,
            self.remote_port,
        )
    }

    /// Writes the record into `out` (exactly [`RECORD_LEN`] bytes).
    pub fn encode(&self, out: &mut [u8; RECORD_LEN]) {
        out[0] = self.op as u8;
        out[1] = self.proto as u8;
        out[2] = self.tcp_state.map_or(0, |s| s as u8);
        out[3] = 0;
        out[4..8].copy_from_slice(&self.lifetime_ms.to_be_bytes());
        out[8..24].copy_from_slice(&self.v6_host.octets());
        out[24..40].copy_from_slice(&self.v6_remote.octets());
        out[40..44].copy_from_slice(&self.v4_pool.octets());
        out[44..48].copy_from_slice(&self.v4_remote.octets());
        out[48..50].copy_from_slice(&self.port6.to_be_bytes());
        out[50..52].copy_from_slice(&self.port4.to_be_bytes());
        out[52..54].copy_from_slice(&self.remote_port.to_be_bytes());
        out[54..56].copy_from_slice(&[0, 0]);
    }

    /// Reads a record; `None` when any field is out of its range (unknown op,
    /// protocol or state, a TCP state on UDP/ICMP or none on TCP, non-zero
    /// reserved bytes, a lifetime above [`MAX_LIFETIME_MS`]).
    pub fn decode(b: &[u8; RECORD_LEN]) -> Option<Record> {
        let op = match b[0] {
            1 => Op::SessionUpsert,
            2 => Op::SessionDelete,
            3 => Op::SessionRefresh,
            4 => Op::BibDelete,
            5 => Op::BibCooling,
            _ => return None,
        };
        let proto = match b[1] {
            1 => Proto::Icmp,
            6 => Proto::Tcp,
            17 => Proto::Udp,
            _ => return None,
        };
        let tcp_state = TcpState::from_wire(b[2])?;
        // Only a TCP session has a state; a BIB entry has none.
        let needs_state = proto == Proto::Tcp && !matches!(op, Op::BibDelete | Op::BibCooling);
        if needs_state != tcp_state.is_some() || b[3] != 0 || b[54] != 0 || b[55] != 0 {
            return None;
        }
        let lifetime_ms = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        if lifetime_ms > MAX_LIFETIME_MS {
            return None;
        }
        let v6 = |o: usize| Ipv6Addr::from(<[u8; 16]>::try_from(&b[o..o + 16]).unwrap_or([0; 16]));
        let v4 = |o: usize| Ipv4Addr::new(b[o], b[o + 1], b[o + 2], b[o + 3]);
        let u16at = |o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
        Some(Record {
            op,
            proto,
            tcp_state,
            lifetime_ms,
            v6_host: v6(8),
            v6_remote: v6(24),
            v4_pool: v4(40),
            v4_remote: v4(44),
            port6: u16at(48),
            port4: u16at(50),
            remote_port: u16at(52),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
