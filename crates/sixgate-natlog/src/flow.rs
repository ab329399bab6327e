//! What IPFIX (RFC 7011) and NetFlow v9 (RFC 3954) share: templates of
//! information elements, data sets of fixed-length records, and messages cut
//! to a size. The two differ in the message header, the template set's id and
//! the `natEvent` numbering ([`Dialect`]).

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::{NatRecord, RecordKind};

/// Information element identifiers (IANA "IPFIX Information Elements"; the
/// same numbers as NetFlow v9 field types for these).
pub mod ie {
    /// protocolIdentifier, 1 octet.
    pub const PROTOCOL_IDENTIFIER: u16 = 4;
    /// sourceTransportPort, 2 octets.
    pub const SOURCE_TRANSPORT_PORT: u16 = 7;
    /// sourceIPv6Address, 16 octets.
    pub const SOURCE_IPV6_ADDRESS: u16 = 27;
    /// sourceIPv6PrefixLength, 1 octet.
    pub const SOURCE_IPV6_PREFIX_LENGTH: u16 = 29;
    /// postNATSourceIPv4Address, 4 octets.
    pub const POST_NAT_SOURCE_IPV4_ADDRESS: u16 = 225;
    /// postNATDestinationIPv4Address, 4 octets.
    pub const POST_NAT_DESTINATION_IPV4_ADDRESS: u16 = 226;
    /// postNAPTSourceTransportPort, 2 octets.
    pub const POST_NAPT_SOURCE_TRANSPORT_PORT: u16 = 227;
    /// postNAPTDestinationTransportPort, 2 octets.
    pub const POST_NAPT_DESTINATION_TRANSPORT_PORT: u16 = 228;
    /// natEvent, 1 octet (RFC 8158 §4.1).
    pub const NAT_EVENT: u16 = 230;
    /// observationTimeMilliseconds, 8 octets (dateTimeMilliseconds).
    pub const OBSERVATION_TIME_MILLISECONDS: u16 = 323;
    /// portRangeStart, 2 octets.
    pub const PORT_RANGE_START: u16 = 361;
    /// portRangeEnd, 2 octets.
    pub const PORT_RANGE_END: u16 = 362;
}

/// A template: its id and its (information element, length) fields.
#[derive(Debug, PartialEq, Eq)]
pub struct Template {
    /// Template id (≥ 256).
    pub id: u16,
    /// The fields, in record order.
    pub fields: &'static [(u16, u16)],
}

impl Template {
    /// Octets of one data record.
    pub const fn record_len(&self) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < self.fields.len() {
            n += self.fields[i].1 as usize;
            i += 1;
        }
        n
    }
}

use ie::*;

/// RFC 8158 §5.1 NAT64 session create/delete (and BIB entries: §5.3), without
/// the destination: 34 octets a record.
pub const MAPPING: Template = Template {
    id: 256,
    fields: &[
        (OBSERVATION_TIME_MILLISECONDS, 8),
        (NAT_EVENT, 1),
        (PROTOCOL_IDENTIFIER, 1),
        (SOURCE_IPV6_ADDRESS, 16),
        (SOURCE_TRANSPORT_PORT, 2),
        (POST_NAT_SOURCE_IPV4_ADDRESS, 4),
        (POST_NAPT_SOURCE_TRANSPORT_PORT, 2),
    ],
};

/// [`MAPPING`] with the IPv4 destination (`log_destinations`): 40 octets.
pub const MAPPING_WITH_DESTINATION: Template = Template {
    id: 257,
    fields: &[
        (OBSERVATION_TIME_MILLISECONDS, 8),
        (NAT_EVENT, 1),
        (PROTOCOL_IDENTIFIER, 1),
        (SOURCE_IPV6_ADDRESS, 16),
        (SOURCE_TRANSPORT_PORT, 2),
        (POST_NAT_SOURCE_IPV4_ADDRESS, 4),
        (POST_NAPT_SOURCE_TRANSPORT_PORT, 2),
        (POST_NAT_DESTINATION_IPV4_ADDRESS, 4),
        (POST_NAPT_DESTINATION_TRANSPORT_PORT, 2),
    ],
};

/// RFC 8158 §5.8 port block allocation / de-allocation, with the subscriber's
/// prefix: 35 octets.
pub const PORT_BLOCK: Template = Template {
    id: 258,
    fields: &[
        (OBSERVATION_TIME_MILLISECONDS, 8),
        (NAT_EVENT, 1),
        (PROTOCOL_IDENTIFIER, 1),
        (SOURCE_IPV6_ADDRESS, 16),
        (SOURCE_IPV6_PREFIX_LENGTH, 1),
        (POST_NAT_SOURCE_IPV4_ADDRESS, 4),
        (PORT_RANGE_START, 2),
        (PORT_RANGE_END, 2),
    ],
};

/// Every template, in the order a template set carries them.
pub const TEMPLATES: [&Template; 3] = [&MAPPING, &MAPPING_WITH_DESTINATION, &PORT_BLOCK];

/// The template a record is written with.
pub fn template_of(r: &NatRecord) -> &'static Template {
    if r.kind.is_block() {
        &PORT_BLOCK
    } else if r.remote.is_some() {
        &MAPPING_WITH_DESTINATION
    } else {
        &MAPPING
    }
}

/// What tells IPFIX and NetFlow v9 apart.
pub trait Dialect {
    /// The template set's (flowset's) id.
    const TEMPLATE_SET_ID: u16;
    /// Pad data sets to 4 octets.
    const PAD_SETS: bool;
    /// `natEvent` values: session create, session delete, BIB create, BIB
    /// delete, port block allocation, port block de-allocation.
    const NAT_EVENTS: [u8; 6];

    /// The `natEvent` value of a record kind (an interim record restates the
    /// allocation, as Juniper and A10 do).
    fn nat_event(kind: RecordKind) -> u8 {
        let e = Self::NAT_EVENTS;
        match kind {
            RecordKind::SessionCreated => e[0],
            RecordKind::SessionDeleted => e[1],
            RecordKind::BibCreated => e[2],
            RecordKind::BibDeleted => e[3],
            RecordKind::BlockAllocated | RecordKind::BlockActive => e[4],
            RecordKind::BlockReleased => e[5],
        }
    }

    /// The record kind of a `natEvent` value (decoding).
    fn record_kind(v: u8) -> Option<RecordKind> {
        const KINDS: [RecordKind; 6] = [
            RecordKind::SessionCreated,
            RecordKind::SessionDeleted,
            RecordKind::BibCreated,
            RecordKind::BibDeleted,
            RecordKind::BlockAllocated,
            RecordKind::BlockReleased,
        ];
        let i = Self::NAT_EVENTS.iter().position(|&e| e == v)?;
        Some(KINDS[i])
    }
}

/// Write `r`'s value of field `(ie, len)`.
fn put_field<D: Dialect>(ie: u16, r: &NatRecord, out: &mut Vec<u8>) {
    let (remote, rport) = r.remote.unwrap_or((Ipv4Addr::UNSPECIFIED, 0));
    match ie {
        OBSERVATION_TIME_MILLISECONDS => out.extend_from_slice(&r.unix_ms.to_be_bytes()),
        NAT_EVENT => out.push(D::nat_event(r.kind)),
        PROTOCOL_IDENTIFIER => out.push(r.protocol_number()),
        SOURCE_IPV6_ADDRESS => out.extend_from_slice(&r.inside.octets()),
        SOURCE_IPV6_PREFIX_LENGTH => out.push(r.prefix_len),
        SOURCE_TRANSPORT_PORT => out.extend_from_slice(&r.inside_port.to_be_bytes()),
        POST_NAT_SOURCE_IPV4_ADDRESS => out.extend_from_slice(&r.outside.octets()),
        POST_NAPT_SOURCE_TRANSPORT_PORT | PORT_RANGE_START => {
            out.extend_from_slice(&r.outside_port.to_be_bytes())
        }
        PORT_RANGE_END => out.extend_from_slice(&r.outside_port_last.to_be_bytes()),
        POST_NAT_DESTINATION_IPV4_ADDRESS => out.extend_from_slice(&remote.octets()),
        POST_NAPT_DESTINATION_TRANSPORT_PORT => out.extend_from_slice(&rport.to_be_bytes()),
        _ => unreachable!("no template has information element {ie}"),
    }
}

/// Append a template set with every template.
pub(crate) fn put_template_set<D: Dialect>(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&D::TEMPLATE_SET_ID.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    for t in TEMPLATES {
        out.extend_from_slice(&t.id.to_be_bytes());
        out.extend_from_slice(&(t.fields.len() as u16).to_be_bytes());
        for &(ie, len) in t.fields {
            out.extend_from_slice(&ie.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
        }
    }
    let len = (out.len() - start) as u16;
    out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
    TEMPLATES.len()
}

/// Append data sets for as many of `records` as fit in `max_len` octets of
/// message (the header included, already in `out` from `msg_start`); the
/// number of records written.
pub(crate) fn put_data_sets<D: Dialect>(
    records: &[NatRecord],
    msg_start: usize,
    max_len: usize,
    out: &mut Vec<u8>,
) -> usize {
    let mut n = 0;
    let mut set: Option<(usize, u16)> = None;
    for r in records {
        let t = template_of(r);
        let used = out.len() - msg_start;
        let need = t.record_len()
            + if set.is_some_and(|s| s.1 == t.id) {
                0
            } else {
                4 + 3
            };
        if used + need > max_len {
            break;
        }
        if set.is_none_or(|s| s.1 != t.id) {
            if let Some((at, _)) = set {
                close_set::<D>(at, out);
            }
            set = Some((out.len(), t.id));
            out.extend_from_slice(&t.id.to_be_bytes());
            out.extend_from_slice(&[0, 0]);
        }
        for &(ie, _) in t.fields {
            put_field::<D>(ie, r, out);
        }
        n += 1;
    }
    if let Some((at, _)) = set {
        close_set::<D>(at, out);
    }
    n
}

/// Pad (NetFlow v9) and write the set's length.
fn close_set<D: Dialect>(at: usize, out: &mut Vec<u8>) {
    if D::PAD_SETS {
        while !(out.len() - at).is_multiple_of(4) {
            out.push(0);
        }
    }
    let len = (out.len() - at) as u16;
    out[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// Decode the data records of one message's sets (after its header) with the
/// templates learnt so far, learning the message's own. Records of unknown
/// templates, or with fields this decoder does not read, are skipped.
pub(crate) fn decode_sets<D: Dialect>(
    mut sets: &[u8],
    templates: &mut Vec<(u16, Vec<(u16, u16)>)>,
    out: &mut Vec<NatRecord>,
) -> Result<(), String> {
    while sets.len() >= 4 {
        let id = u16::from_be_bytes([sets[0], sets[1]]);
        let len = usize::from(u16::from_be_bytes([sets[2], sets[3]]));
        if len < 4 || len > sets.len() {
            return Err(format!("set {id}: length {len} of {} left", sets.len()));
        }
        let mut body = &sets[4..len];
        sets = &sets[len..];
        if id == D::TEMPLATE_SET_ID {
            while body.len() >= 4 {
                let tid = u16::from_be_bytes([body[0], body[1]]);
                let count = usize::from(u16::from_be_bytes([body[2], body[3]]));
                if body.len() < 4 + 4 * count {
                    return Err(format!("template {tid}: {count} fields do not fit"));
                }
                let fields = (0..count)
                    .map(|i| {
                        let f = &body[4 + 4 * i..8 + 4 * i];
                        (
                            u16::from_be_bytes([f[0], f[1]]),
                            u16::from_be_bytes([f[2], f[3]]),
                        )
                    })
                    .collect();
                body = &body[4 + 4 * count..];
                templates.retain(|t| t.0 != tid);
                templates.push((tid, fields));
            }
            continue;
        }
        if id < 256 {
            continue; // options templates: not ours
        }
        let Some((_, fields)) = templates.iter().find(|t| t.0 == id) else {
            continue;
        };
        let rlen: usize = fields.iter().map(|f| usize::from(f.1)).sum();
        if rlen == 0 {
            continue;
        }
        while body.len() >= rlen {
            if let Some(r) = decode_record::<D>(fields, &body[..rlen]) {
                out.push(r);
            }
            body = &body[rlen..];
        }
    }
    Ok(())
}

fn decode_record<D: Dialect>(fields: &[(u16, u16)], mut rec: &[u8]) -> Option<NatRecord> {
    let mut r = NatRecord {
        kind: RecordKind::SessionCreated,
        unix_ms: 0,
        proto: sixgate_core::nat64::Proto::Udp,
        inside: Ipv6Addr::UNSPECIFIED,
        prefix_len: 128,
        inside_port: 0,
        outside: Ipv4Addr::UNSPECIFIED,
        outside_port: 0,
        outside_port_last: 0,
        remote: None,
    };
    let mut kind = None;
    let mut last = None;
    let mut remote = (None, 0u16);
    for &(ie, len) in fields {
        let (v, rest) = rec.split_at(usize::from(len));
        rec = rest;
        let be = |v: &[u8]| v.iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
        match (ie, len) {
            (OBSERVATION_TIME_MILLISECONDS, 8) => r.unix_ms = be(v),
            (NAT_EVENT, 1) => kind = D::record_kind(v[0]),
            (PROTOCOL_IDENTIFIER, 1) => {
                r.proto = match v[0] {
                    6 => sixgate_core::nat64::Proto::Tcp,
                    17 => sixgate_core::nat64::Proto::Udp,
                    1 | 58 => sixgate_core::nat64::Proto::Icmp,
                    _ => return None,
                }
            }
            (SOURCE_IPV6_ADDRESS, 16) => r.inside = Ipv6Addr::from(<[u8; 16]>::try_from(v).ok()?),
            (SOURCE_IPV6_PREFIX_LENGTH, 1) => r.prefix_len = v[0],
            (SOURCE_TRANSPORT_PORT, 2) => r.inside_port = be(v) as u16,
            (POST_NAT_SOURCE_IPV4_ADDRESS, 4) => r.outside = Ipv4Addr::from(be(v) as u32),
            (POST_NAPT_SOURCE_TRANSPORT_PORT | PORT_RANGE_START, 2) => {
                r.outside_port = be(v) as u16
            }
            (PORT_RANGE_END, 2) => last = Some(be(v) as u16),
            (POST_NAT_DESTINATION_IPV4_ADDRESS, 4) => remote.0 = Some(Ipv4Addr::from(be(v) as u32)),
            (POST_NAPT_DESTINATION_TRANSPORT_PORT, 2) => remote.1 = be(v) as u16,
            _ => {}
        }
    }
    r.kind = kind?;
    r.outside_port_last = last.unwrap_or(r.outside_port);
    r.remote = remote.0.map(|a| (a, remote.1));
    Some(r)
}
