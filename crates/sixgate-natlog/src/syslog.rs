//! NAT events as RFC 5424 syslog messages: one compact line per event for
//! people, the same facts as structured data for machines.
//!
//! ```text
//! <134>1 2026-12-04T05:40:00.123Z gw1 sixgate 812 SADD [nat@32473 proto="udp" isaddr="2001:db8::1" isport="40000" xsaddr="198.51.100.1" xsport="61001"] SADD udp 2001:db8::1 40000 198.51.100.1 61001
//! ```
//!
//! MSGID (and the line's first word): `SADD` / `SDEL` a session created /
//! ended, `MADD` / `MDEL` a BIB entry (address and port mapping), `BADD` /
//! `BDEL` a port block allocated / released, `BACT` a block still held
//! (interim). Parameters: `proto`, `isaddr` / `isport` the inside (IPv6)
//! source, `xsaddr` / `xsport` the translated (IPv4) source, with
//! destinations `xdaddr` / `xdport`, for blocks `isprefix` (the subscriber's
//! prefix) and `xsport` / `xeport` (the block's first and last port). The
//! SD-ID `nat@32473` uses the documentation enterprise number (RFC 5612).
//! UDP carries one message a datagram (RFC 5426); TCP frames each with its
//! length (RFC 6587 §3.4.1, octet counting).

use crate::text::{push_dec, push_v4, push_v6};
use crate::{NatRecord, RecordKind, time};

/// The IANA syslog port (UDP, RFC 5426; also the customary TCP one).
pub const PORT: u16 = 514;

/// The structured data's SD-ID.
pub const SD_ID: &str = "nat@32473";

/// RFC 5424 §6.2.1: facility local0.
pub const DEFAULT_FACILITY: u8 = 16;

/// Severity 6, informational.
const SEVERITY_INFO: u8 = 6;

/// The MSGID of a record kind.
pub const fn msgid(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::SessionCreated => "SADD",
        RecordKind::SessionDeleted => "SDEL",
        RecordKind::BibCreated => "MADD",
        RecordKind::BibDeleted => "MDEL",
        RecordKind::BlockAllocated => "BADD",
        RecordKind::BlockReleased => "BDEL",
        RecordKind::BlockActive => "BACT",
    }
}

/// What every message of one exporter shares (RFC 5424 §6.2).
#[derive(Clone, Debug)]
pub struct Header {
    /// Facility (0–23).
    pub facility: u8,
    /// HOSTNAME: printable US-ASCII, no space (others become `-`).
    pub hostname: String,
    /// PROCID.
    pub procid: u32,
}

impl Header {
    /// A header for `hostname` (cleaned to RFC 5424's PRINTUSASCII, at most 255
    /// characters; empty: the NILVALUE).
    pub fn new(facility: u8, hostname: &str, procid: u32) -> Header {
        let mut h: String = hostname
            .chars()
            .take(255)
            .map(|c| if c.is_ascii_graphic() { c } else { '-' })
            .collect();
        if h.is_empty() {
            h.push('-');
        }
        Header {
            facility: facility.min(23),
            hostname: h,
            procid,
        }
    }
}

/// Append `r` as one RFC 5424 message (no framing, no newline).
pub fn message(h: &Header, r: &NatRecord, out: &mut String) {
    let id = msgid(r.kind);
    let proto = r.proto.as_str();
    // Pushed piece by piece, not `write!`: this is the exporter's inner loop
    // (the text is the same, `rfc5424_s6_a_session_line`).
    out.push('<');
    push_dec(out, u64::from(h.facility) * 8 + u64::from(SEVERITY_INFO), 1);
    out.push_str(">1 ");
    time::rfc3339_ms(r.unix_ms, out);
    out.push(' ');
    out.push_str(&h.hostname);
    out.push_str(" sixgate ");
    push_dec(out, u64::from(h.procid), 1);
    out.push(' ');
    out.push_str(id);
    out.push_str(" [");
    out.push_str(SD_ID);
    out.push_str(" proto=\"");
    out.push_str(proto);
    out.push('"');
    // The addresses as text once, for the structured data and the message.
    let from = out.len();
    push_v6(out, r.inside);
    let inside = out[from..].to_owned();
    out.truncate(from);
    let mut outside = String::with_capacity(15);
    push_v4(&mut outside, r.outside);
    let attr = |out: &mut String, name: &str, value: &str| {
        out.push(' ');
        out.push_str(name);
        out.push_str("=\"");
        out.push_str(value);
        out.push('"');
    };
    let mut num = String::with_capacity(5);
    let mut dec = |v: u16| {
        num.clear();
        push_dec(&mut num, u64::from(v), 1);
        num.clone()
    };
    if r.kind.is_block() {
        let len = dec(u16::from(r.prefix_len));
        let (first, last) = (dec(r.outside_port), dec(r.outside_port_last));
        attr(out, "isprefix", &format!("{inside}/{len}"));
        attr(out, "xsaddr", &outside);
        attr(out, "xsport", &first);
        attr(out, "xeport", &last);
        for part in [
            "] ", id, " ", proto, " ", &inside, "/", &len, " ", &outside, " ", &first, "-", &last,
        ] {
            out.push_str(part);
        }
        return;
    }
    let (iport, xport) = (dec(r.inside_port), dec(r.outside_port));
    attr(out, "isaddr", &inside);
    attr(out, "isport", &iport);
    attr(out, "xsaddr", &outside);
    attr(out, "xsport", &xport);
    let remote = r.remote.map(|(a, p)| {
        let mut t = String::with_capacity(15);
        push_v4(&mut t, a);
        (t, dec(p))
    });
    if let Some((a, p)) = &remote {
        attr(out, "xdaddr", a);
        attr(out, "xdport", p);
    }
    for part in [
        "] ", id, " ", proto, " ", &inside, " ", &iport, " ", &outside, " ", &xport,
    ] {
        out.push_str(part);
    }
    if let Some((a, p)) = &remote {
        for part in [" ", a, " ", p] {
            out.push_str(part);
        }
    }
}

/// RFC 6587 §3.4.1 octet counting: `LEN SP MESSAGE`, appended to `out`.
pub fn frame_octet_counted(msg: &str, out: &mut Vec<u8>) {
    let mut len = String::with_capacity(8);
    push_dec(&mut len, msg.len() as u64, 1);
    out.extend_from_slice(len.as_bytes());
    out.push(b' ');
    out.extend_from_slice(msg.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::{block, session};

    fn line(r: &NatRecord) -> String {
        let mut s = String::new();
        message(&Header::new(DEFAULT_FACILITY, "gw 1", 812), r, &mut s);
        s
    }

    #[test]
    fn rfc5424_s6_a_session_line() {
        assert_eq!(
            line(&session()),
            "<134>1 2026-12-04T05:40:00.123Z gw-1 sixgate 812 SADD [nat@32473 proto=\"udp\" \
             isaddr=\"2001:db8::1\" isport=\"40000\" xsaddr=\"198.51.100.1\" xsport=\"61001\"] \
             SADD udp 2001:db8::1 40000 198.51.100.1 61001"
        );
        let mut r = session();
        r.kind = RecordKind::SessionDeleted;
        r.remote = Some(("203.0.113.5".parse().unwrap(), 443));
        let l = line(&r);
        assert!(l.contains(" SDEL [") && l.contains("xdaddr=\"203.0.113.5\" xdport=\"443\"]"));
        assert!(l.ends_with("198.51.100.1 61001 203.0.113.5 443"), "{l}");
    }

    #[test]
    fn rfc7422_a_block_line_names_the_subscriber_prefix() {
        let l = line(&block());
        assert!(
            l.contains(" BADD [nat@32473 proto=\"udp\" isprefix=\"2001:db8:1::/56\""),
            "{l}"
        );
        assert!(
            l.ends_with("BADD udp 2001:db8:1::/56 198.51.100.1 61440-61503"),
            "{l}"
        );
    }

    #[test]
    fn rfc6587_s3_4_1_octet_counting() {
        let mut out = Vec::new();
        frame_octet_counted("<134>1 x", &mut out);
        assert_eq!(out, b"8 <134>1 x");
    }
}
