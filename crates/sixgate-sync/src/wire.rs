//! The datagram (docs/ha.md, "Wire protocol"): a 44-byte header, a body, an
//! optional HMAC tag. [`decode`] checks every length and field before anything
//! is trusted and borrows the body (zero-copy); it never panics.

use crate::auth::{Key, TAG_LEN};
use crate::counters::Drop;
use crate::record::{RECORD_LEN, Record};

/// "SGSY".
pub const MAGIC: [u8; 4] = *b"SGSY";
/// The protocol version this crate speaks.
pub const VERSION: u8 = 1;
/// Header size.
pub const HEADER_LEN: usize = 44;
/// Flag: an HMAC tag follows the body.
pub const FLAG_TAG: u8 = 0x01;
/// Flag: the ack field is valid.
pub const FLAG_ACK: u8 = 0x02;
/// Body of a DRAIN: drain id (u32), records queued before it (u64).
pub const DRAIN_LEN: usize = 12;
/// Most NACK ranges in one datagram.
pub const MAX_NACK_RANGES: usize = 16;

/// Message kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Records (reliable).
    Data = 1,
    /// Sequence ranges missing at the receiver.
    Nack = 2,
    /// Nothing to say but the ack and the next sequence number.
    Keepalive = 3,
    /// A snapshot starts (reliable); earlier sequence numbers are void.
    SnapBegin = 4,
    /// A snapshot ends (reliable).
    SnapEnd = 5,
    /// Please send me a snapshot.
    ResyncRequest = 6,
    /// The sender drains (reliable): it announces nothing and allocates
    /// nothing any more; the receiver keeps its entries (docs/ha.md,
    /// "Planned drain").
    Drain = 7,
}

impl Kind {
    fn from_wire(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Data,
            2 => Kind::Nack,
            3 => Kind::Keepalive,
            4 => Kind::SnapBegin,
            5 => Kind::SnapEnd,
            6 => Kind::ResyncRequest,
            7 => Kind::Drain,
            _ => return None,
        })
    }

    /// Kinds that take a sequence number and are resent until acked.
    pub fn is_reliable(self) -> bool {
        matches!(
            self,
            Kind::Data | Kind::SnapBegin | Kind::SnapEnd | Kind::Drain
        )
    }
}

/// Why a peer asks for a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResyncReason {
    /// This node has no state of the stream yet (start, join).
    Joined = 1,
    /// A gap was NACKed too often without being repaired.
    Gap = 2,
    /// This node's import ring was full.
    ImportFull = 3,
    /// The peer restarted (new epoch).
    PeerRestarted = 4,
}

/// The header fields (magic, version, flags and lengths are implied).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message kind.
    pub kind: Kind,
    /// Hash of the configuration both nodes must share.
    pub config_hash: u64,
    /// The sender's start, ns: orders restarts, never used as a clock.
    pub epoch: u64,
    /// Sender node id.
    pub sender: u16,
    /// Receiver node id.
    pub receiver: u16,
    /// Per-datagram number (replay window).
    pub packet_number: u32,
    /// Reliable kinds: their sequence number; others: the sender's next one.
    pub seq: u32,
    /// Next sequence number expected from the receiver's stream, if any.
    pub ack: Option<u32>,
}

/// A decoded, checked body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// Records, all already checked.
    Data(Records<'a>),
    /// Missing ranges, all checked (`first` ≤ `last` in serial order).
    Nack(NackRanges<'a>),
    /// Empty.
    Keepalive,
    /// Snapshot id.
    SnapBegin(u32),
    /// Snapshot id and the number of records it carried.
    SnapEnd(u32, u64),
    /// Why the peer wants a snapshot.
    ResyncRequest(ResyncReason),
    /// The sender drains: its drain id and the records it queued to the
    /// receiver in this epoch before it.
    Drain(u32, u64),
}

/// A checked datagram borrowing the received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// The header.
    pub header: Header,
    /// The body.
    pub body: Body<'a>,
}

/// The records of a DATA body (validated at decode: iteration cannot fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Records<'a>(&'a [u8]);

impl<'a> Records<'a> {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.0.len() / RECORD_LEN
    }

    /// Whether there are none (never, for a decoded DATA body).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The records in order.
    pub fn iter(&self) -> impl Iterator<Item = Record> + 'a {
        self.0.chunks_exact(RECORD_LEN).filter_map(|c| {
            <&[u8; RECORD_LEN]>::try_from(c)
                .ok()
                .and_then(Record::decode)
        })
    }

    /// The raw body.
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// The ranges of a NACK body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NackRanges<'a>(&'a [u8]);

impl<'a> NackRanges<'a> {
    /// `(first, last)` inclusive.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.0.chunks_exact(8).map(|c| {
            (
                u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
    }
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn be64(b: &[u8], o: usize) -> u64 {
    (u64::from(be32(b, o)) << 32) | u64::from(be32(b, o + 4))
}

/// Checks and decodes one datagram. With `key`, a valid tag is required;
/// without, a tag is refused. The config hash, node ids and replay window are
/// the peer's business ([`crate::Peer::receive`]).
pub fn decode<'a>(buf: &'a [u8], key: Option<&Key>) -> Result<Datagram<'a>, Drop> {
    if buf.len() < HEADER_LEN {
        return Err(if buf.len() >= 4 && buf[..4] != MAGIC {
            Drop::BadMagic
        } else {
            Drop::Truncated
        });
    }
    if buf[..4] != MAGIC {
        return Err(Drop::BadMagic);
    }
    if buf[4] != VERSION {
        return Err(Drop::BadVersion);
    }
    let kind = Kind::from_wire(buf[5]).ok_or(Drop::BadKind)?;
    let flags = buf[6];
    if flags & !(FLAG_TAG | FLAG_ACK) != 0 || buf[7] != 0 {
        return Err(Drop::Malformed);
    }
    let body_len = usize::from(be16(buf, 40));
    let count = usize::from(be16(buf, 42));
    let tagged = flags & FLAG_TAG != 0;
    let total = HEADER_LEN + body_len + if tagged { TAG_LEN } else { 0 };
    if buf.len() < total {
        return Err(Drop::Truncated);
    }
    if buf.len() > total {
        return Err(Drop::BadLength);
    }
    // Authenticate before reading the body.
    match (key, tagged) {
        (Some(k), true) => {
            if !k.verify(&buf[..total - TAG_LEN], &buf[total - TAG_LEN..]) {
                return Err(Drop::AuthFailed);
            }
        }
        (None, false) => {}
        _ => return Err(Drop::AuthFailed),
    }
    let header = Header {
        kind,
        config_hash: be64(buf, 8),
        epoch: be64(buf, 16),
        sender: be16(buf, 24),
        receiver: be16(buf, 26),
        packet_number: be32(buf, 28),
        seq: be32(buf, 32),
        ack: (flags & FLAG_ACK != 0).then(|| be32(buf, 36)),
    };
    // One encoding per message: an ack field without its flag must be zero.
    let stray_ack = header.ack.is_none() && be32(buf, 36) != 0;
    if header.sender == 0 || header.receiver == 0 || stray_ack || (kind != Kind::Data && count != 0)
    {
        return Err(Drop::Malformed);
    }
    let body = &buf[HEADER_LEN..HEADER_LEN + body_len];
    let body = match kind {
        Kind::Data => {
            if count == 0 || body_len != count * RECORD_LEN {
                return Err(Drop::Malformed);
            }
            for c in body.chunks_exact(RECORD_LEN) {
                let ok = <&[u8; RECORD_LEN]>::try_from(c)
                    .ok()
                    .and_then(Record::decode)
                    .is_some();
                if !ok {
                    return Err(Drop::Malformed);
                }
            }
            Body::Data(Records(body))
        }
        Kind::Nack => {
            let n = body_len / 8;
            if body_len % 8 != 0 || n == 0 || n > MAX_NACK_RANGES {
                return Err(Drop::Malformed);
            }
            let ranges = NackRanges(body);
            if ranges
                .iter()
                .any(|(first, last)| crate::replay::before(last, first))
            {
                return Err(Drop::Malformed);
            }
            Body::Nack(ranges)
        }
        Kind::Keepalive => {
            if body_len != 0 {
                return Err(Drop::Malformed);
            }
            Body::Keepalive
        }
        Kind::SnapBegin => {
            if body_len != 4 {
                return Err(Drop::Malformed);
            }
            Body::SnapBegin(be32(body, 0))
        }
        Kind::SnapEnd => {
            if body_len != 12 {
                return Err(Drop::Malformed);
            }
            Body::SnapEnd(be32(body, 0), be64(body, 4))
        }
        Kind::ResyncRequest => {
            let reason = match (body_len, body.first()) {
                (1, Some(1)) => ResyncReason::Joined,
                (1, Some(2)) => ResyncReason::Gap,
                (1, Some(3)) => ResyncReason::ImportFull,
                (1, Some(4)) => ResyncReason::PeerRestarted,
                _ => return Err(Drop::Malformed),
            };
            Body::ResyncRequest(reason)
        }
        Kind::Drain => {
            if body_len != DRAIN_LEN {
                return Err(Drop::Malformed);
            }
            Body::Drain(be32(body, 0), be64(body, 4))
        }
    };
    Ok(Datagram { header, body })
}

/// Writes a datagram with an already encoded `body` (`count` records for
/// DATA, else 0) into `out`; returns its length, or `None` when `out` is too
/// small or the body longer than 65535 bytes.
pub fn encode(
    out: &mut [u8],
    h: &Header,
    body: &[u8],
    count: u16,
    key: Option<&Key>,
) -> Option<usize> {
    let body_len = u16::try_from(body.len()).ok()?;
    let total = HEADER_LEN + body.len() + if key.is_some() { TAG_LEN } else { 0 };
    let out = out.get_mut(..total)?;
    let mut flags = 0;
    if key.is_some() {
        flags |= FLAG_TAG;
    }
    if h.ack.is_some() {
        flags |= FLAG_ACK;
    }
    out[..4].copy_from_slice(&MAGIC);
    out[4] = VERSION;
    out[5] = h.kind as u8;
    out[6] = flags;
    out[7] = 0;
    out[8..16].copy_from_slice(&h.config_hash.to_be_bytes());
    out[16..24].copy_from_slice(&h.epoch.to_be_bytes());
    out[24..26].copy_from_slice(&h.sender.to_be_bytes());
    out[26..28].copy_from_slice(&h.receiver.to_be_bytes());
    out[28..32].copy_from_slice(&h.packet_number.to_be_bytes());
    out[32..36].copy_from_slice(&h.seq.to_be_bytes());
    out[36..40].copy_from_slice(&h.ack.unwrap_or(0).to_be_bytes());
    out[40..42].copy_from_slice(&body_len.to_be_bytes());
    out[42..44].copy_from_slice(&count.to_be_bytes());
    out[HEADER_LEN..HEADER_LEN + body.len()].copy_from_slice(body);
    if let Some(k) = key {
        let tag = k.sign(&out[..total - TAG_LEN]);
        out[total - TAG_LEN..].copy_from_slice(&tag);
    }
    Some(total)
}

/// How many records fit a datagram of at most `max_datagram` bytes (the
/// link MTU minus the IP and UDP headers).
pub fn records_per_datagram(max_datagram: usize, tagged: bool) -> usize {
    max_datagram.saturating_sub(HEADER_LEN + if tagged { TAG_LEN } else { 0 }) / RECORD_LEN
}

#[cfg(test)]
mod tests;
