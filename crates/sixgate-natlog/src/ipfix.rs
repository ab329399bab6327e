//! IPFIX (RFC 7011) messages carrying the RFC 8158 NAT events.
//!
//! Three templates ([`crate::flow::TEMPLATES`]): a mapping (session or BIB
//! entry, 34 octets), a mapping with its IPv4 destination (40 octets, with
//! `log_destinations`), and a port block with the subscriber's prefix (35
//! octets). Times are `observationTimeMilliseconds`. The sequence number
//! counts data records (RFC 7011 §3.1); over UDP the templates are sent again
//! every `template_refresh` seconds (§8.4), over TCP once per connection.

use crate::NatRecord;
use crate::flow::{self, Dialect};

pub use crate::flow::{MAPPING, MAPPING_WITH_DESTINATION, PORT_BLOCK, TEMPLATES, Template, ie};

/// RFC 7011 §3.1: the version of the message header.
pub const VERSION: u16 = 10;

/// The IANA port for IPFIX over UDP and TCP (RFC 7011 §10.3.4).
pub const PORT: u16 = 4739;

/// Octets of the message header.
pub const HEADER_LEN: usize = 16;

/// RFC 8158 §4.1 (IANA "NAT Event Type"): the `natEvent` values.
pub mod nat_event {
    /// NAT64 session create.
    pub const NAT64_SESSION_CREATE: u8 = 6;
    /// NAT64 session delete.
    pub const NAT64_SESSION_DELETE: u8 = 7;
    /// NAT64 BIB create.
    pub const NAT64_BIB_CREATE: u8 = 10;
    /// NAT64 BIB delete.
    pub const NAT64_BIB_DELETE: u8 = 11;
    /// Port block allocation.
    pub const PORT_BLOCK_ALLOCATION: u8 = 16;
    /// Port block de-allocation.
    pub const PORT_BLOCK_DEALLOCATION: u8 = 17;
}

/// The IPFIX dialect of [`flow`].
pub struct Ipfix;

impl Dialect for Ipfix {
    const TEMPLATE_SET_ID: u16 = 2;
    const PAD_SETS: bool = false;
    const NAT_EVENTS: [u8; 6] = [
        nat_event::NAT64_SESSION_CREATE,
        nat_event::NAT64_SESSION_DELETE,
        nat_event::NAT64_BIB_CREATE,
        nat_event::NAT64_BIB_DELETE,
        nat_event::PORT_BLOCK_ALLOCATION,
        nat_event::PORT_BLOCK_DEALLOCATION,
    ];
}

/// One exporting process's stream to one collector.
#[derive(Debug)]
pub struct Encoder {
    domain: u32,
    sequence: u32,
    max_len: usize,
}

impl Encoder {
    /// A stream for observation domain `domain`, messages at most `max_len`
    /// octets (a UDP collector: the path MTU less the IP and UDP headers).
    pub fn new(domain: u32, max_len: usize) -> Encoder {
        Encoder {
            domain,
            sequence: 0,
            max_len: max_len.clamp(HEADER_LEN + 256, usize::from(u16::MAX)),
        }
    }

    /// Data records sent so far (modulo 2^32): the next message's sequence
    /// number.
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    /// Append one message to `out`: the templates first when `templates`,
    /// then as many of `records` as fit; the number of records it holds.
    /// `export_secs`: the Unix time the message leaves.
    pub fn message(
        &mut self,
        export_secs: u32,
        templates: bool,
        records: &[NatRecord],
        out: &mut Vec<u8>,
    ) -> usize {
        let start = out.len();
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&export_secs.to_be_bytes());
        out.extend_from_slice(&self.sequence.to_be_bytes());
        out.extend_from_slice(&self.domain.to_be_bytes());
        if templates {
            flow::put_template_set::<Ipfix>(out);
        }
        let n = flow::put_data_sets::<Ipfix>(records, start, self.max_len, out);
        let len = (out.len() - start) as u16;
        out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
        self.sequence = self.sequence.wrapping_add(n as u32);
        n
    }
}

/// What [`Decoder::message`] found in one message.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The observation domain.
    pub domain: u32,
    /// The header's sequence number.
    pub sequence: u32,
    /// The export time (Unix seconds).
    pub export_secs: u32,
    /// The NAT records, in message order.
    pub records: Vec<NatRecord>,
}

/// A collector's view of one stream: the templates learnt so far (for
/// `sixgate nat64 whois` over a capture of the export, and the tests).
#[derive(Debug, Default)]
pub struct Decoder {
    templates: Vec<(u16, Vec<(u16, u16)>)>,
}

impl Decoder {
    /// Decode one message; `Err` names what is malformed.
    pub fn message(&mut self, msg: &[u8]) -> Result<Decoded, String> {
        if msg.len() < HEADER_LEN {
            return Err(format!("{} octets: shorter than the header", msg.len()));
        }
        let word = |i: usize| u32::from_be_bytes([msg[i], msg[i + 1], msg[i + 2], msg[i + 3]]);
        let version = u16::from_be_bytes([msg[0], msg[1]]);
        if version != VERSION {
            return Err(format!("version {version}, not {VERSION}"));
        }
        let len = usize::from(u16::from_be_bytes([msg[2], msg[3]]));
        if len < HEADER_LEN || len > msg.len() {
            return Err(format!("length {len} of {} octets", msg.len()));
        }
        let mut d = Decoded {
            export_secs: word(4),
            sequence: word(8),
            domain: word(12),
            records: Vec::new(),
        };
        flow::decode_sets::<Ipfix>(&msg[HEADER_LEN..len], &mut self.templates, &mut d.records)?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordKind;
    use crate::record::tests::{block, session};

    #[test]
    fn rfc8158_templates_are_at_most_40_octets_a_record() {
        assert_eq!(MAPPING.record_len(), 34);
        assert_eq!(MAPPING_WITH_DESTINATION.record_len(), 40);
        assert_eq!(PORT_BLOCK.record_len(), 35);
    }

    #[test]
    fn rfc7011_s3_1_header_and_sequence_count_data_records() {
        let mut e = Encoder::new(7, 1472);
        let mut out = Vec::new();
        let recs = [session(), session(), block()];
        assert_eq!(e.message(1_796_362_800, true, &recs, &mut out), 3);
        assert_eq!(&out[0..2], &[0, 10]);
        assert_eq!(usize::from(u16::from_be_bytes([out[2], out[3]])), out.len());
        assert_eq!(
            &out[8..12],
            &[0, 0, 0, 0],
            "no record before the first message"
        );
        assert_eq!(&out[12..16], &7u32.to_be_bytes());
        let mut second = Vec::new();
        e.message(1_796_362_801, false, &[session()], &mut second);
        assert_eq!(&second[8..12], &3u32.to_be_bytes());
        // Without templates: header, one set header, one 34-octet record.
        assert_eq!(second.len(), 16 + 4 + 34);
    }

    #[test]
    fn rfc8158_s4_1_records_decode_to_what_was_sent() {
        let mut e = Encoder::new(1, 1472);
        let mut with_dst = session();
        with_dst.kind = RecordKind::SessionDeleted;
        with_dst.remote = Some(("203.0.113.5".parse().unwrap(), 443));
        let recs = [session(), with_dst, block()];
        let mut out = Vec::new();
        e.message(1, true, &recs, &mut out);
        let d = Decoder::default().message(&out).unwrap();
        assert_eq!(d.records, recs);
        // The natEvent octet of each.
        let mut only = Vec::new();
        Encoder::new(1, 1472).message(1, false, &[session()], &mut only);
        assert_eq!(only[20 + 8], nat_event::NAT64_SESSION_CREATE);
    }

    #[test]
    fn rfc7011_s10_3_3_messages_fit_the_path_mtu() {
        let mut e = Encoder::new(1, 576 - 28);
        let recs = vec![session(); 100];
        let mut sent = 0;
        while sent < recs.len() {
            let mut out = Vec::new();
            let n = e.message(1, sent == 0, &recs[sent..], &mut out);
            assert!(
                n > 0 && out.len() <= 548,
                "{n} records in {} octets",
                out.len()
            );
            sent += n;
        }
        assert_eq!(e.sequence(), 100);
    }

    #[test]
    fn decoder_refuses_malformed_messages_without_panicking() {
        let mut out = Vec::new();
        Encoder::new(1, 1472).message(1, true, &[session(), block()], &mut out);
        let mut d = Decoder::default();
        for cut in 0..out.len() {
            let _ = d.message(&out[..cut]);
        }
        let mut bad = out.clone();
        bad[1] = 9;
        assert!(d.message(&bad).unwrap_err().contains("version"));
        let mut bad = out.clone();
        bad[16 + 3] = 2; // a set length under 4
        assert!(d.message(&bad).is_err());
    }
}
