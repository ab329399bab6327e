//! NetFlow v9 (RFC 3954) with the NAT event logging numbering of
//! draft-ietf-behave-ipfix-nat-logging, as Cisco (NEL) and Juniper document
//! it, for collectors that expect that: the same templates and field types as
//! [`crate::ipfix`] (225–228 translated address and ports, 230 `natEvent`,
//! 323 event time in milliseconds, 361–362 port range), another `natEvent`
//! numbering, and the v9 header.

use crate::NatRecord;
use crate::flow::{self, Dialect};

/// RFC 3954 §5.1: the version of the packet header.
pub const VERSION: u16 = 9;

/// The customary NetFlow port.
pub const PORT: u16 = 2055;

/// Octets of the packet header.
pub const HEADER_LEN: usize = 20;

/// The draft numbering of `natEvent` (Juniper's table).
pub mod nat_event {
    /// NAT64 session create.
    pub const NAT64_SESSION_CREATE: u8 = 4;
    /// NAT64 session delete.
    pub const NAT64_SESSION_DELETE: u8 = 5;
    /// NAT64 BIB create.
    pub const NAT64_BIB_CREATE: u8 = 8;
    /// NAT64 BIB delete.
    pub const NAT64_BIB_DELETE: u8 = 9;
    /// Port block allocation.
    pub const PORT_BLOCK_ALLOCATION: u8 = 14;
    /// Port block de-allocation.
    pub const PORT_BLOCK_DEALLOCATION: u8 = 15;
}

/// The NetFlow v9 dialect of [`flow`].
pub struct NetFlow9;

impl Dialect for NetFlow9 {
    const TEMPLATE_SET_ID: u16 = 0;
    const PAD_SETS: bool = true;
    const NAT_EVENTS: [u8; 6] = [
        nat_event::NAT64_SESSION_CREATE,
        nat_event::NAT64_SESSION_DELETE,
        nat_event::NAT64_BIB_CREATE,
        nat_event::NAT64_BIB_DELETE,
        nat_event::PORT_BLOCK_ALLOCATION,
        nat_event::PORT_BLOCK_DEALLOCATION,
    ];
}

/// One exporter's stream to one collector.
#[derive(Debug)]
pub struct Encoder {
    source_id: u32,
    packets: u32,
    max_len: usize,
}

impl Encoder {
    /// A stream with source id `source_id`, packets at most `max_len` octets.
    pub fn new(source_id: u32, max_len: usize) -> Encoder {
        Encoder {
            source_id,
            packets: 0,
            max_len: max_len.clamp(HEADER_LEN + 256, usize::from(u16::MAX)),
        }
    }

    /// Append one export packet: the templates first when `templates`, then
    /// as many of `records` as fit; the number of records it holds.
    /// `uptime_ms`: milliseconds since the exporter started; `unix_secs`: now.
    pub fn packet(
        &mut self,
        uptime_ms: u32,
        unix_secs: u32,
        templates: bool,
        records: &[NatRecord],
        out: &mut Vec<u8>,
    ) -> usize {
        let start = out.len();
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&uptime_ms.to_be_bytes());
        out.extend_from_slice(&unix_secs.to_be_bytes());
        out.extend_from_slice(&self.packets.to_be_bytes());
        out.extend_from_slice(&self.source_id.to_be_bytes());
        let t = if templates {
            flow::put_template_set::<NetFlow9>(out)
        } else {
            0
        };
        let n = flow::put_data_sets::<NetFlow9>(records, start, self.max_len, out);
        // RFC 3954 §5.1: Count is the records of the packet, templates included.
        out[start + 2..start + 4].copy_from_slice(&((t + n) as u16).to_be_bytes());
        self.packets = self.packets.wrapping_add(1);
        n
    }
}

/// Decode one v9 packet with the templates learnt so far.
pub fn decode(
    packet: &[u8],
    templates: &mut Vec<(u16, Vec<(u16, u16)>)>,
) -> Result<Vec<NatRecord>, String> {
    if packet.len() < HEADER_LEN || u16::from_be_bytes([packet[0], packet[1]]) != VERSION {
        return Err("not a NetFlow v9 packet".into());
    }
    let mut out = Vec::new();
    flow::decode_sets::<NetFlow9>(&packet[HEADER_LEN..], templates, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::{block, session};

    #[test]
    fn rfc3954_s5_1_count_includes_templates_and_sets_are_padded() {
        let mut e = Encoder::new(3, 1472);
        let mut out = Vec::new();
        assert_eq!(e.packet(10, 1, true, &[session(), block()], &mut out), 2);
        assert_eq!(&out[0..2], &[0, 9]);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 3 + 2);
        assert!(out.len().is_multiple_of(4));
        let mut t = Vec::new();
        assert_eq!(decode(&out, &mut t).unwrap(), [session(), block()]);
        let mut next = Vec::new();
        e.packet(20, 1, false, &[session()], &mut next);
        assert_eq!(&next[12..16], &1u32.to_be_bytes(), "packets, not records");
        assert_eq!(next[HEADER_LEN + 4 + 8], nat_event::NAT64_SESSION_CREATE);
    }
}
