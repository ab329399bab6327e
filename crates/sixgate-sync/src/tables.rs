//! Records to and from the core's table view (`sixgate_core::nat64::replica`):
//! what a node's sync thread does between a worker's export ring and the wire,
//! and between the wire and a worker's import.

use crate::record::{self, Op, Proto, Record};
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{self, Replica, ReplicaOp, tcp::TcpState as CoreState};

fn state_to_wire(s: CoreState) -> record::TcpState {
    match s {
        CoreState::V4Init => record::TcpState::V4Init,
        CoreState::V6Init => record::TcpState::V6Init,
        CoreState::Established => record::TcpState::Established,
        CoreState::V4FinRcv => record::TcpState::V4FinRcv,
        CoreState::V6FinRcv => record::TcpState::V6FinRcv,
        CoreState::V4FinV6FinRcv => record::TcpState::V4FinV6FinRcv,
        CoreState::Trans => record::TcpState::Trans,
    }
}

fn state_from_wire(s: record::TcpState) -> CoreState {
    match s {
        record::TcpState::V4Init => CoreState::V4Init,
        record::TcpState::V6Init => CoreState::V6Init,
        record::TcpState::Established => CoreState::Established,
        record::TcpState::V4FinRcv => CoreState::V4FinRcv,
        record::TcpState::V6FinRcv => CoreState::V6FinRcv,
        record::TcpState::V4FinV6FinRcv => CoreState::V4FinV6FinRcv,
        record::TcpState::Trans => CoreState::Trans,
    }
}

/// The record of an exported change; `pool6` gives the remote's IPv6 form.
pub fn to_record(op: ReplicaOp, r: &Replica, pool6: &Rfc6052Prefix) -> Record {
    let proto = match r.proto {
        nat64::Proto::Tcp => Proto::Tcp,
        nat64::Proto::Udp => Proto::Udp,
        nat64::Proto::Icmp => Proto::Icmp,
    };
    Record {
        op: match op {
            // A settled session is an upsert to a peer (the workers keep the
            // hint to themselves; the same session again is harmless).
            ReplicaOp::Upsert | ReplicaOp::Settled => Op::SessionUpsert,
            ReplicaOp::Delete => Op::SessionDelete,
        },
        proto,
        // The wire requires a state on every TCP session record.
        tcp_state: (proto == Proto::Tcp)
            .then(|| r.tcp_state.map_or(record::TcpState::Trans, state_to_wire)),
        lifetime_ms: r.remaining_ms.min(record::MAX_LIFETIME_MS),
        v6_host: r.v6,
        v6_remote: pool6.embed(r.remote4),
        v4_pool: r.v4,
        v4_remote: r.remote4,
        port6: r.port6,
        port4: r.port4,
        remote_port: r.rport,
    }
}

/// The import of a received record; `None` for what the tables do not take
/// yet (BIB_DELETE: the entry cools by itself once its sessions are gone).
pub fn to_replica(rec: &Record) -> Option<(ReplicaOp, Replica)> {
    let op = match rec.op {
        Op::SessionUpsert | Op::SessionRefresh => ReplicaOp::Upsert,
        Op::SessionDelete => ReplicaOp::Delete,
        Op::BibDelete | Op::BibCooling => return None,
    };
    Some((op, replica_of(rec)))
}

/// The entry a record describes, whatever its op (a BIB record's remote
/// fields are zero).
pub fn replica_of(rec: &Record) -> Replica {
    Replica {
        proto: match rec.proto {
            Proto::Tcp => nat64::Proto::Tcp,
            Proto::Udp => nat64::Proto::Udp,
            Proto::Icmp => nat64::Proto::Icmp,
        },
        tcp_state: rec.tcp_state.map(state_from_wire),
        remaining_ms: rec.lifetime_ms,
        v6: rec.v6_host,
        port6: rec.port6,
        v4: rec.v4_pool,
        port4: rec.port4,
        remote4: rec.v4_remote,
        rport: rec.remote_port,
    }
}

/// A session from a walk of the tables, for a snapshot.
pub fn from_view(s: &nat64::SessionView) -> Replica {
    Replica {
        proto: s.bib.proto,
        tcp_state: s.tcp_state,
        remaining_ms: s.expires_in_ms,
        v6: s.bib.v6,
        port6: s.bib.port6,
        v4: s.bib.v4,
        port4: s.bib.port4,
        remote4: s.remote4,
        rport: s.rport,
    }
}
