//! "Which subscriber had public address A, port P, at time T?" (RFC 6888
//! REQ-12, RFC 7422) answered from log records: `sixgate nat64 whois`. Pure:
//! the caller reads the logs (JSON lines, syslog lines, IPFIX or NetFlow v9
//! messages) into [`NatRecord`]s with the parsers here and in [`crate::ipfix`].

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::nat64::Proto;

use crate::{NatRecord, RecordKind, time};

/// The question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Question {
    /// The public (pool4) address.
    pub outside: Ipv4Addr,
    /// Its port (ICMP: identifier).
    pub port: u16,
    /// Only this protocol, if given.
    pub proto: Option<Proto>,
    /// Only what was held at this time (Unix ms), if given.
    pub at_ms: Option<u64>,
}

/// What held the address and port, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// A session, a BIB entry or a port block.
    pub what: &'static str,
    /// Its protocol.
    pub proto: Proto,
    /// The subscriber: the IPv6 host (a block: its prefix).
    pub inside: Ipv6Addr,
    /// `inside`'s prefix length (128: a host).
    pub prefix_len: u8,
    /// The IPv6 port (blocks: 0).
    pub inside_port: u16,
    /// The outside ports: the port, or a block's first and last.
    pub ports: (u16, u16),
    /// The start, when the logs have it (Unix ms).
    pub from_ms: Option<u64>,
    /// The end, when the logs have it.
    pub until_ms: Option<u64>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = |ms: Option<u64>, none: &str| ms.map_or(none.to_owned(), time::rfc3339_ms_string);
        write!(
            f,
            "{} .. {}  {} {}",
            t(self.from_ms, "(before the logs)"),
            t(self.until_ms, "(no end logged)"),
            self.proto.as_str(),
            self.what
        )?;
        if self.prefix_len == 128 {
            write!(f, "  subscriber {} port {}", self.inside, self.inside_port)?;
        } else {
            write!(f, "  subscriber {}/{}", self.inside, self.prefix_len)?;
        }
        if self.ports.0 == self.ports.1 {
            write!(f, "  (outside port {})", self.ports.0)
        } else {
            write!(f, "  (outside ports {}-{})", self.ports.0, self.ports.1)
        }
    }
}

fn category(k: RecordKind) -> &'static str {
    if k.is_session() {
        "session"
    } else if k.is_block() {
        "port block"
    } else {
        "BIB entry"
    }
}

/// The holders of `q`'s address and port in `records` (any order): each
/// start paired with its end, oldest first; with `at_ms`, only those whose
/// span holds it.
pub fn answer(q: &Question, records: &[NatRecord]) -> Vec<Holder> {
    let mut rs: Vec<&NatRecord> = records
        .iter()
        .filter(|r| {
            r.outside == q.outside
                && q.proto.is_none_or(|p| p == r.proto)
                && if r.kind.is_block() {
                    (r.outside_port..=r.outside_port_last).contains(&q.port)
                } else {
                    r.outside_port == q.port
                }
        })
        .collect();
    rs.sort_by_key(|r| r.unix_ms);
    let mut out: Vec<Holder> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for r in rs {
        let same = |h: &Holder| {
            h.what == category(r.kind)
                && h.proto == r.proto
                && h.inside == r.inside
                && h.inside_port == r.inside_port
                && h.ports == (r.outside_port, r.outside_port_last)
        };
        let found = open.iter().position(|&i| same(&out[i]));
        match r.kind {
            // An interim record only says it was still held.
            RecordKind::BlockActive if found.is_some() => {}
            k if k.is_start() => {
                if let Some(p) = found {
                    open.remove(p); // a start without its end: a new span
                }
                open.push(out.len());
                out.push(Holder {
                    what: category(k),
                    proto: r.proto,
                    inside: r.inside,
                    prefix_len: r.prefix_len,
                    inside_port: r.inside_port,
                    ports: (r.outside_port, r.outside_port_last),
                    from_ms: Some(r.unix_ms),
                    until_ms: None,
                });
            }
            _ => match found {
                Some(p) => {
                    let i = open.remove(p);
                    out[i].until_ms = Some(r.unix_ms);
                }
                None => out.push(Holder {
                    what: category(r.kind),
                    proto: r.proto,
                    inside: r.inside,
                    prefix_len: r.prefix_len,
                    inside_port: r.inside_port,
                    ports: (r.outside_port, r.outside_port_last),
                    from_ms: None,
                    until_ms: Some(r.unix_ms),
                }),
            },
        }
    }
    if let Some(at) = q.at_ms {
        out.retain(|h| h.from_ms.is_none_or(|f| f <= at) && h.until_ms.is_none_or(|u| u >= at));
    }
    out
}

fn proto_named(s: &str) -> Option<Proto> {
    Some(match s {
        "tcp" => Proto::Tcp,
        "udp" => Proto::Udp,
        "icmp" => Proto::Icmp,
        _ => return None,
    })
}

fn kind_of_msgid(id: &str) -> Option<RecordKind> {
    Some(match id {
        "SADD" => RecordKind::SessionCreated,
        "SDEL" => RecordKind::SessionDeleted,
        "MADD" => RecordKind::BibCreated,
        "MDEL" => RecordKind::BibDeleted,
        "BADD" => RecordKind::BlockAllocated,
        "BDEL" => RecordKind::BlockReleased,
        "BACT" => RecordKind::BlockActive,
        _ => return None,
    })
}

/// `"ADDR/LEN"`.
fn prefix(s: &str) -> Option<(Ipv6Addr, u8)> {
    let (a, l) = s.split_once('/')?;
    Some((a.parse().ok()?, l.parse().ok().filter(|l| *l <= 128)?))
}

/// One line of the JSON-lines log ([`crate::json`]); `None` for anything else.
pub fn parse_json_line(line: &str) -> Option<NatRecord> {
    let field = |k: &str| -> Option<&str> {
        let key = format!("\"{k}\":");
        let at = line.find(&key)? + key.len();
        let rest = &line[at..];
        match rest.strip_prefix('"') {
            Some(s) => s.split('"').next(),
            None => rest.split([',', '}']).next(),
        }
    };
    let kind = kind_of_msgid(field("event")?)?;
    let num = |k: &str| field(k)?.parse::<u16>().ok();
    let mut r = NatRecord {
        kind,
        unix_ms: time::parse_rfc3339(field("time")?)?,
        proto: proto_named(field("proto")?)?,
        inside: Ipv6Addr::UNSPECIFIED,
        prefix_len: 128,
        inside_port: 0,
        outside: field("v4")?.parse().ok()?,
        outside_port: num("port4")?,
        outside_port_last: 0,
        remote: None,
    };
    if kind.is_block() {
        (r.inside, r.prefix_len) = prefix(field("subscriber")?)?;
        r.outside_port_last = num("port4_last")?;
    } else {
        r.inside = field("v6")?.parse().ok()?;
        r.inside_port = num("port6")?;
        r.outside_port_last = r.outside_port;
        if let (Some(a), Some(p)) = (field("remote"), num("remote_port")) {
            r.remote = Some((a.parse().ok()?, p));
        }
    }
    Some(r)
}

/// One RFC 5424 message of the syslog export ([`crate::syslog`]), as a
/// collector wrote it (an octet count or a relay's prefix before `<PRI>` is
/// skipped); `None` for anything else.
pub fn parse_syslog_line(line: &str) -> Option<NatRecord> {
    let msg = &line[line.find('<')?..];
    let mut head = msg.splitn(7, ' ');
    let (_pri, ts, _host, app, _pid, id) = (
        head.next()?,
        head.next()?,
        head.next()?,
        head.next()?,
        head.next()?,
        head.next()?,
    );
    if app != "sixgate" {
        return None;
    }
    let kind = kind_of_msgid(id)?;
    let sd = head.next()?;
    let sd = &sd[..sd.find(']')?];
    let param = |k: &str| -> Option<&str> {
        let key = format!(" {k}=\"");
        let at = sd.find(&key)? + key.len();
        sd[at..].split('"').next()
    };
    let num = |k: &str| param(k)?.parse::<u16>().ok();
    let mut r = NatRecord {
        kind,
        unix_ms: time::parse_rfc3339(ts)?,
        proto: proto_named(param("proto")?)?,
        inside: Ipv6Addr::UNSPECIFIED,
        prefix_len: 128,
        inside_port: 0,
        outside: param("xsaddr")?.parse().ok()?,
        outside_port: num("xsport")?,
        outside_port_last: 0,
        remote: None,
    };
    if kind.is_block() {
        (r.inside, r.prefix_len) = prefix(param("isprefix")?)?;
        r.outside_port_last = num("xeport")?;
    } else {
        r.inside = param("isaddr")?.parse().ok()?;
        r.inside_port = num("isport")?;
        r.outside_port_last = r.outside_port;
        if let (Some(a), Some(p)) = (param("xdaddr"), num("xdport")) {
            r.remote = Some((a.parse().ok()?, p));
        }
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::{block, session};
    use crate::{json, syslog};

    fn q(port: u16, at_ms: Option<u64>) -> Question {
        Question {
            outside: Ipv4Addr::new(198, 51, 100, 1),
            port,
            proto: None,
            at_ms,
        }
    }

    #[test]
    fn rfc6888_req12_a_session_span_answers_inside_it_only() {
        let start = session();
        let mut end = session();
        end.kind = RecordKind::SessionDeleted;
        end.unix_ms += 60_000;
        let recs = [end, start];
        let a = answer(&q(61001, Some(start.unix_ms + 1000)), &recs);
        assert_eq!(a.len(), 1);
        assert_eq!((a[0].inside, a[0].inside_port), (start.inside, 40000));
        assert_eq!(
            (a[0].from_ms, a[0].until_ms),
            (Some(start.unix_ms), Some(end.unix_ms))
        );
        assert!(answer(&q(61001, Some(end.unix_ms + 1)), &recs).is_empty());
        assert!(answer(&q(61002, None), &recs).is_empty(), "never used");
        let shown = a[0].to_string();
        assert!(
            shown.contains("2026-12-04T05:40:00.123Z .. 2026-12-04T05:41:00.123Z"),
            "{shown}"
        );
    }

    #[test]
    fn rfc7422_a_block_answers_for_every_port_in_it_and_interim_keeps_it() {
        let mut interim = block();
        interim.kind = RecordKind::BlockActive;
        interim.unix_ms += 3_600_000;
        let a = answer(
            &q(61470, Some(block().unix_ms + 7_200_000)),
            &[block(), interim],
        );
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!((a[0].prefix_len, a[0].ports), (56, (61440, 61503)));
        assert_eq!(a[0].until_ms, None);
        // Only the interim record (the allocation was lost): from it on.
        let a = answer(&q(61470, None), &[interim]);
        assert_eq!(a[0].from_ms, Some(interim.unix_ms));
    }

    #[test]
    fn the_logs_own_formats_parse_back() {
        let mut with_dst = session();
        with_dst.remote = Some(("203.0.113.5".parse().unwrap(), 443));
        for r in [session(), with_dst, block()] {
            let mut j = String::new();
            json::line(&r, &mut j);
            assert_eq!(parse_json_line(j.trim_end()), Some(r), "{j}");
            let mut s = String::new();
            syslog::message(&syslog::Header::new(16, "gw1", 1), &r, &mut s);
            assert_eq!(parse_syslog_line(&s), Some(r), "{s}");
            assert_eq!(
                parse_syslog_line(&format!("213 {s}")),
                Some(r),
                "octet-counted"
            );
        }
        for junk in ["", "{}", "<134>1 x", "{\"event\":\"SADD\"}", "hello <134>"] {
            assert_eq!(parse_json_line(junk), None);
            assert_eq!(parse_syslog_line(junk), None);
        }
    }
}

/// Hostile input: random bytes, and real messages with random bytes
/// flipped, through every decoder and parser here never panic.
#[cfg(test)]
mod hostile {
    use crate::record::tests::{block, session};
    use crate::{ipfix, netflow9};

    #[test]
    fn decoders_and_parsers_take_any_bytes() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut good = Vec::new();
        ipfix::Encoder::new(1, 1472).message(1, true, &[session(), block()], &mut good);
        let mut v9 = Vec::new();
        netflow9::Encoder::new(1, 1472).packet(1, 1, true, &[session(), block()], &mut v9);
        for round in 0..20_000 {
            let base = [&good, &v9][round % 2];
            let mut m = base.clone();
            if round % 3 == 0 {
                m.truncate((next() as usize) % (m.len() + 1));
            }
            for _ in 0..(next() % 8) {
                let i = (next() as usize) % m.len().max(1);
                if let Some(b) = m.get_mut(i) {
                    *b = next() as u8;
                }
            }
            let _ = ipfix::Decoder::default().message(&m);
            let _ = netflow9::decode(&m, &mut Vec::new());
            let text = String::from_utf8_lossy(&m);
            let _ = super::parse_json_line(&text);
            let _ = super::parse_syslog_line(&text);
        }
    }
}
