//! The little of the DNS message format (RFC 1035 §4) that RFC 7050 discovery
//! needs: one query with one question, and the AAAA records (RFC 3596) of the
//! answer to it.
//!
//! Hand-written rather than `hickory-proto`: one question type, answers read but
//! never built, about 200 lines against a dependency tree of its own. Every read is
//! bounds-checked; a malformed message is an error, never a panic.

use std::fmt;
use std::net::Ipv6Addr;

/// RFC 3596 §2.1: the AAAA record type.
pub const TYPE_AAAA: u16 = 28;
/// RFC 1035 §3.2.2: CNAME.
pub const TYPE_CNAME: u16 = 5;
/// RFC 1035 §3.2.4: the Internet class.
pub const CLASS_IN: u16 = 1;
/// RFC 1035 §4.1.1: header length.
const HEADER_LEN: usize = 12;
/// RFC 1035 §2.3.4: longest name on the wire.
const MAX_NAME_LEN: usize = 255;
/// Compression pointers followed per name before the message counts as a loop.
const MAX_POINTERS: usize = 32;

/// Why a message is not the answer to our question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// Not a response (QR = 0), or not a standard query's (opcode ≠ 0).
    NotAResponse,
    /// Another query's ID.
    Id(u16),
    /// Another question (or none).
    Question,
}

/// Why a message could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not the answer to our query: a stray or forged datagram, to be ignored.
    Mismatch(Mismatch),
    /// Ends early, a bad name or a compression loop.
    Malformed(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Mismatch(Mismatch::NotAResponse) => f.write_str("not a response"),
            DecodeError::Mismatch(Mismatch::Id(id)) => write!(f, "another query's ID {id}"),
            DecodeError::Mismatch(Mismatch::Question) => f.write_str("another question"),
            DecodeError::Malformed(why) => write!(f, "malformed DNS message: {why}"),
        }
    }
}

/// What the answer to an AAAA query says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// RFC 1035 §4.1.1 RCODE: 0 no error, 3 name error (NXDOMAIN), …
    pub rcode: u8,
    /// TC: the answer was cut to fit a datagram; ask again over TCP.
    pub truncated: bool,
    /// The AAAA records for the name asked (or a name it is a CNAME of), in order.
    pub aaaa: Vec<Ipv6Addr>,
    /// The smallest TTL among them, seconds.
    pub min_ttl: Option<u32>,
}

/// RFC 1035 §4.1: a standard query (RD set, one question of class IN).
pub fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut m = Vec::with_capacity(HEADER_LEN + name.len() + 6);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00]); // QR=0, opcode 0, RD=1
    m.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QDCOUNT 1, AN/NS/AR 0
    for label in name.trim_end_matches('.').split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&CLASS_IN.to_be_bytes());
    m
}

/// Read `msg` as the answer to `query(id, name, TYPE_AAAA)`: the header and the
/// question must match it (RFC 5452 §9.1: ID and question), then the AAAA records
/// of the answer section whose owner is `name` or a CNAME target of it are kept.
pub fn parse_aaaa_answer(msg: &[u8], id: u16, name: &str) -> Result<Answer, DecodeError> {
    let header = msg
        .get(..HEADER_LEN)
        .ok_or(DecodeError::Malformed("shorter than a header"))?;
    let got_id = u16::from_be_bytes([header[0], header[1]]);
    let flags = u16::from_be_bytes([header[2], header[3]]);
    if flags & 0x8000 == 0 || (flags >> 11) & 0xf != 0 {
        return Err(DecodeError::Mismatch(Mismatch::NotAResponse));
    }
    if got_id != id {
        return Err(DecodeError::Mismatch(Mismatch::Id(got_id)));
    }
    let count = |i: usize| u16::from_be_bytes([header[i], header[i + 1]]);
    let (qdcount, ancount) = (count(4), count(6));
    if qdcount != 1 {
        return Err(DecodeError::Mismatch(Mismatch::Question));
    }
    let mut pos = HEADER_LEN;
    let (qname, after) = read_name(msg, pos)?;
    pos = after;
    let qtype = read_u16(msg, pos)?;
    let qclass = read_u16(msg, pos + 2)?;
    pos += 4;
    let want = name.trim_end_matches('.');
    if !qname.eq_ignore_ascii_case(want) || qtype != TYPE_AAAA || qclass != CLASS_IN {
        return Err(DecodeError::Mismatch(Mismatch::Question));
    }

    let mut owners = vec![qname];
    let mut aaaa = Vec::new();
    let mut min_ttl: Option<u32> = None;
    for _ in 0..ancount {
        let (owner, after) = read_name(msg, pos)?;
        pos = after;
        let rtype = read_u16(msg, pos)?;
        let rclass = read_u16(msg, pos + 2)?;
        let ttl = read_u32(msg, pos + 4)?;
        let rdlen = usize::from(read_u16(msg, pos + 8)?);
        pos += 10;
        let rdata = msg
            .get(pos..pos + rdlen)
            .ok_or(DecodeError::Malformed("record data past the end"))?;
        let ours = owners.iter().any(|o| o.eq_ignore_ascii_case(&owner));
        if ours && rclass == CLASS_IN {
            match rtype {
                TYPE_AAAA if rdlen == 16 => {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(rdata);
                    aaaa.push(Ipv6Addr::from(b));
                    min_ttl = Some(min_ttl.map_or(ttl, |t| t.min(ttl)));
                }
                TYPE_CNAME => owners.push(read_name(msg, pos)?.0),
                _ => {}
            }
        }
        pos += rdlen;
    }
    Ok(Answer {
        rcode: (flags & 0xf) as u8,
        truncated: flags & 0x0200 != 0,
        aaaa,
        min_ttl,
    })
}

fn read_u16(msg: &[u8], at: usize) -> Result<u16, DecodeError> {
    msg.get(at..at + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
        .ok_or(DecodeError::Malformed("ends inside a record"))
}

fn read_u32(msg: &[u8], at: usize) -> Result<u32, DecodeError> {
    msg.get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(DecodeError::Malformed("ends inside a record"))
}

/// RFC 1035 §4.1.4: a name at `at`, following compression pointers; returns it
/// (dotted, no trailing dot) and where the name ends at `at`.
fn read_name(msg: &[u8], mut at: usize) -> Result<(String, usize), DecodeError> {
    let mut name = String::new();
    let mut end = None;
    let mut pointers = 0;
    loop {
        let len = *msg
            .get(at)
            .ok_or(DecodeError::Malformed("name past the end"))?;
        match len & 0xc0 {
            0x00 if len == 0 => {
                return Ok((name, end.unwrap_or(at + 1)));
            }
            0x00 => {
                let label = msg
                    .get(at + 1..at + 1 + usize::from(len))
                    .ok_or(DecodeError::Malformed("label past the end"))?;
                if !name.is_empty() {
                    name.push('.');
                }
                // Bytes outside printable ASCII cannot match the name we asked.
                name.extend(label.iter().map(|&b| {
                    if b.is_ascii_graphic() {
                        char::from(b)
                    } else {
                        '?'
                    }
                }));
                if name.len() > MAX_NAME_LEN {
                    return Err(DecodeError::Malformed("name longer than 255 bytes"));
                }
                at += 1 + usize::from(len);
            }
            0xc0 => {
                let low = *msg
                    .get(at + 1)
                    .ok_or(DecodeError::Malformed("pointer past the end"))?;
                pointers += 1;
                if pointers > MAX_POINTERS {
                    return Err(DecodeError::Malformed("compression loop"));
                }
                end.get_or_insert(at + 2);
                at = usize::from(u16::from_be_bytes([len & 0x3f, low]));
            }
            _ => return Err(DecodeError::Malformed("unknown label type")),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A response to `query(id, name, AAAA)` carrying `records` (owner: a pointer
    /// to the question name), built by hand the RFC 1035 way.
    pub(crate) fn response(id: u16, name: &str, flags: u16, records: &[Ipv6Addr]) -> Vec<u8> {
        let mut m = query(id, name, TYPE_AAAA);
        m[2..4].copy_from_slice(&(0x8180 | flags).to_be_bytes()); // QR, RD, RA
        m[6..8].copy_from_slice(&(records.len() as u16).to_be_bytes());
        for r in records {
            m.extend_from_slice(&[0xc0, 12]); // owner: the question's name
            m.extend_from_slice(&TYPE_AAAA.to_be_bytes());
            m.extend_from_slice(&CLASS_IN.to_be_bytes());
            m.extend_from_slice(&300u32.to_be_bytes());
            m.extend_from_slice(&16u16.to_be_bytes());
            m.extend_from_slice(&r.octets());
        }
        m
    }

    fn wka() -> Vec<Ipv6Addr> {
        vec![
            "64:ff9b::c000:aa".parse().unwrap(),
            "64:ff9b::c000:ab".parse().unwrap(),
        ]
    }

    #[test]
    fn rfc1035_s4_1_query_layout() {
        let q = query(0xbeef, "ipv4only.arpa", TYPE_AAAA);
        let mut want = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        want.extend_from_slice(b"\x08ipv4only\x04arpa\x00");
        want.extend_from_slice(&[0, 28, 0, 1]);
        assert_eq!(q, want);
        assert_eq!(query(1, "ipv4only.arpa.", TYPE_AAAA)[2..], q[2..]);
    }

    #[test]
    fn rfc3596_aaaa_records_of_the_answer() {
        let m = response(7, "ipv4only.arpa", 0, &wka());
        let a = parse_aaaa_answer(&m, 7, "ipv4only.arpa").unwrap();
        assert_eq!(a.aaaa, wka());
        assert_eq!((a.rcode, a.truncated, a.min_ttl), (0, false, Some(300)));
        // DNS names compare without regard to case (RFC 4343).
        let m = response(7, "IPv4Only.ARPA", 0, &wka());
        assert_eq!(
            parse_aaaa_answer(&m, 7, "ipv4only.arpa").unwrap().aaaa,
            wka()
        );
    }

    #[test]
    fn rfc5452_s9_1_answer_must_match_id_and_question() {
        let m = response(7, "ipv4only.arpa", 0, &wka());
        assert_eq!(
            parse_aaaa_answer(&m, 8, "ipv4only.arpa"),
            Err(DecodeError::Mismatch(Mismatch::Id(7)))
        );
        assert_eq!(
            parse_aaaa_answer(&m, 7, "example.arpa"),
            Err(DecodeError::Mismatch(Mismatch::Question))
        );
        let q = query(7, "ipv4only.arpa", TYPE_AAAA);
        assert_eq!(
            parse_aaaa_answer(&q, 7, "ipv4only.arpa"),
            Err(DecodeError::Mismatch(Mismatch::NotAResponse))
        );
        let mut a = response(7, "ipv4only.arpa", 0, &wka());
        let qtype_at = 12 + "ipv4only.arpa".len() + 2;
        a[qtype_at + 1] = 1; // type A
        assert_eq!(
            parse_aaaa_answer(&a, 7, "ipv4only.arpa"),
            Err(DecodeError::Mismatch(Mismatch::Question))
        );
    }

    #[test]
    fn rfc1035_s4_1_1_rcode_and_truncation() {
        let m = response(7, "ipv4only.arpa", 0x0003, &[]);
        let a = parse_aaaa_answer(&m, 7, "ipv4only.arpa").unwrap();
        assert_eq!((a.rcode, a.aaaa.len()), (3, 0));
        let m = response(7, "ipv4only.arpa", 0x0200, &wka()[..1]);
        assert!(parse_aaaa_answer(&m, 7, "ipv4only.arpa").unwrap().truncated);
    }

    #[test]
    fn rfc1034_s3_6_2_records_of_other_owners_are_ignored_cname_followed() {
        let mut m = response(7, "ipv4only.arpa", 0, &[]);
        m[6..8].copy_from_slice(&3u16.to_be_bytes());
        // ipv4only.arpa CNAME x.example
        m.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 11]);
        let target_at = m.len();
        m.extend_from_slice(b"\x01x\x07example\x00");
        // y.example AAAA (not ours)
        m.extend_from_slice(b"\x01y\x07example\x00");
        m.extend_from_slice(&[0, 28, 0, 1, 0, 0, 0, 60, 0, 16]);
        m.extend_from_slice(&"2001:db8::bad".parse::<Ipv6Addr>().unwrap().octets());
        // x.example AAAA (via the CNAME), owner compressed
        m.extend_from_slice(&[0xc0, target_at as u8, 0, 28, 0, 1, 0, 0, 0, 30, 0, 16]);
        m.extend_from_slice(&wka()[0].octets());
        let a = parse_aaaa_answer(&m, 7, "ipv4only.arpa").unwrap();
        assert_eq!(a.aaaa, wka()[..1]);
        assert_eq!(a.min_ttl, Some(30));
    }

    /// Every truncation and every single-byte corruption of a good answer is an
    /// error or an answer, never a panic; a pointer loop is caught.
    #[test]
    fn malformed_messages_never_panic() {
        let good = response(7, "ipv4only.arpa", 0, &wka());
        for len in 0..good.len() {
            let _ = parse_aaaa_answer(&good[..len], 7, "ipv4only.arpa");
        }
        for i in 0..good.len() {
            for v in [0x00, 0x3f, 0xc0, 0xff] {
                let mut m = good.clone();
                m[i] = v;
                let _ = parse_aaaa_answer(&m, 7, "ipv4only.arpa");
            }
        }
        let mut looped = good.clone();
        let owner = 12 + "ipv4only.arpa".len() + 2 + 4;
        looped[owner..owner + 2].copy_from_slice(&[0xc0, owner as u8]);
        assert_eq!(
            parse_aaaa_answer(&looped, 7, "ipv4only.arpa"),
            Err(DecodeError::Malformed("compression loop"))
        );
    }
}
