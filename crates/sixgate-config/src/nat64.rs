//! `[nat64]`: from the deserialised section to a checked
//! [`Nat64Config`] (RFC 6146 stateful NAT64, RFC 6888 CGN limits, RFC 7422 port
//! blocks).
//!
//! Timeouts are whole seconds. Values under RFC 6146's minimums load, because tests
//! and labs want short timers, but each leaves a warning citing the section; zero
//! is an error (a session that expires as it is made carries nothing).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Range;

use sixgate_core::Config;
use sixgate_core::nat64::{
    Deterministic, EventLog, Filtering, Nat64Config, Pool4Entry, PortRange, Proto, StaticBib,
};
use toml::Spanned;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::{Nat64Section, Pool4Item, StaticBibEntry};
use crate::value::{
    MAX_SESSIONS, Timer, clean_v4_prefix, clean_v6_prefix, int_in, mask_v4, quoted_list, timeout,
    v4_addr, v6_addr,
};

/// Ports and ICMP identifiers of a pool4 entry that gives none: Jool's
/// 61001-65535, the same default as `sixgate pool4 add ADDR` (which writes such
/// an entry) and as the gateway's own address when there is no `pool4` key. The
/// privileged and well-known ports stay out of the dynamic range unless the
/// operator gives them; static BIB entries may still use any port of a pool4
/// address (the range is what the translator hands out by itself).
pub(crate) const DEFAULT_PORTS: PortRange = sixgate_core::nat64::DEFAULT_POOL4_PORTS;

/// Most addresses pool4 may hold in all (a /16).
pub(crate) const POOL4_MAX_ADDRESSES: u64 = 65_536;

/// Most IPv4 SYNs held at once (§3.5.2.2); the store is allocated at start.
pub(crate) const MAX_HELD_SYNS: i64 = 1 << 20;

/// Largest `port_block_size` (RFC 7422 blocks: half the port space).
pub(crate) const MAX_PORT_BLOCK: i64 = 32_768;

const UDP_TIMER: Timer = Timer {
    key: "udp_timeout",
    rfc_min: 120,
    rule: "RFC 6146 §3.5.1: the UDP session lifetime MUST NOT be less than 2 minutes (UDP_MIN)",
};
const TCP_EST_TIMER: Timer = Timer {
    key: "tcp_established_timeout",
    rfc_min: 7440,
    rule: "RFC 6146 §3.5.2.2: the established-connection idle timeout MUST NOT be less \
           than 2 hours 4 minutes (TCP_EST)",
};
const TCP_TRANS_TIMER: Timer = Timer {
    key: "tcp_transitory_timeout",
    rfc_min: 240,
    rule: "RFC 6146 §3.5.2.2: the transitory-connection idle timeout MUST NOT be less \
           than 4 minutes (TCP_TRANS)",
};
const ICMP_TIMER: Timer = Timer {
    key: "icmp_timeout",
    rfc_min: 60,
    rule: "RFC 6146 §3.5.3 and §4: the ICMP query session lifetime is ICMP_DEFAULT, \
           60 seconds",
};
const PORT_REUSE_TIMER: Timer = Timer {
    key: "port_reuse_delay",
    rfc_min: 120,
    rule: "RFC 6888 REQ-8: a freed external port SHOULD NOT be reused for 120 seconds",
};

/// Build the stateful translator's settings. `cfg` is the `[translator]` result
/// (pool6 is needed to check static BIB entries).
pub(crate) fn section(
    cx: &Cx<'_>,
    cfg: &Config,
    n: Nat64Section,
    _header: Range<usize>,
) -> Result<Nat64Config, ConfigError> {
    let mut out = Nat64Config {
        pool4: match &n.pool4 {
            Some(list) => pool4(cx, cfg, list)?,
            None => Vec::new(),
        },
        ..Nat64Config::default()
    };
    // No pool4 key: the default pool4, the gateway's own IPv4 address at ports
    // 61001-65535, which only `sixgate run` can find (an empty `pool4` here says
    // so). A key that is there but empty is a mistake.
    if let Some(list) = &n.pool4
        && out.pool4.is_empty()
    {
        return Err(cx.err(
            list.span(),
            "[nat64] has no pool4 addresses; expected pool4 = a list of the IPv4 addresses \
             (or prefixes) the translator owns, e.g. pool4 = [\"203.0.113.1\"] (RFC 6146 §2), \
             or no pool4 key at all for the gateway's own address at ports 61001-65535",
        ));
    }
    if let Some(f) = &n.filtering {
        cx.check(|| {
            out.filtering = match f.get_ref().as_str() {
                "endpoint-independent" => Filtering::EndpointIndependent,
                "address-dependent" => Filtering::AddressDependent,
                _ => {
                    return Err(cx.bad(
                        "filtering",
                        f,
                        "unknown filtering behaviour",
                        "\"endpoint-independent\" or \"address-dependent\" (RFC 4787 §5, \
                         RFC 6146 §3.5.1)",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(v) = n.drop_external_tcp {
        out.drop_external_tcp = v;
    }
    if let Some(v) = &n.max_held_syns {
        cx.check(|| {
            out.max_held_syns = int_in(cx, "max_held_syns", v, 0, MAX_HELD_SYNS)? as u32;
            Ok(())
        });
    }
    let t = &mut out.timeouts;
    if let Some(v) = &n.udp_timeout {
        cx.check(|| {
            t.udp = timeout(cx, &UDP_TIMER, v, 1)?;
            Ok(())
        });
    }
    if let Some(v) = &n.tcp_established_timeout {
        cx.check(|| {
            t.tcp_established = timeout(cx, &TCP_EST_TIMER, v, 1)?;
            Ok(())
        });
    }
    if let Some(v) = &n.tcp_transitory_timeout {
        cx.check(|| {
            t.tcp_transitory = timeout(cx, &TCP_TRANS_TIMER, v, 1)?;
            Ok(())
        });
    }
    if let Some(v) = &n.icmp_timeout {
        cx.check(|| {
            t.icmp = timeout(cx, &ICMP_TIMER, v, 1)?;
            Ok(())
        });
    }
    if let Some(v) = &n.port_reuse_delay {
        cx.check(|| {
            t.port_reuse = timeout(cx, &PORT_REUSE_TIMER, v, 0)?;
            Ok(())
        });
    }
    if let Some(v) = &n.max_sessions {
        cx.check(|| {
            out.max_sessions = int_in(cx, "max_sessions", v, 1, MAX_SESSIONS)? as u32;
            Ok(())
        });
    }
    if let Some(v) = &n.subscriber_prefix_len {
        cx.check(|| {
            out.subscriber_prefix_len = int_in(cx, "subscriber_prefix_len", v, 0, 128)? as u8;
            Ok(())
        });
    }
    if let Some(v) = &n.max_sessions_per_subscriber {
        cx.check(|| {
            out.max_sessions_per_subscriber =
                int_in(cx, "max_sessions_per_subscriber", v, 0, u32::MAX.into())? as u32;
            Ok(())
        });
    }
    if let Some(v) = &n.max_ports_per_subscriber {
        cx.check(|| {
            out.max_ports_per_subscriber =
                int_in(cx, "max_ports_per_subscriber", v, 0, u32::MAX.into())? as u32;
            Ok(())
        });
    }
    if let Some(v) = &n.port_block_size {
        cx.check(|| {
            let size = int_in(cx, "port_block_size", v, 0, MAX_PORT_BLOCK)?;
            if size != 0 && (size as u64).count_ones() != 1 {
                return Err(cx.bad(
                    "port_block_size",
                    v,
                    "not a power of two",
                    format_args!(
                        "0 (no port blocks) or a power of two from 1 to {MAX_PORT_BLOCK}, \
                         e.g. 512 (RFC 7422)"
                    ),
                ));
            }
            out.port_block_size = size as u16;
            Ok(())
        });
    }
    if let Some(list) = &n.static_bib {
        cx.check(|| {
            if n.pool4.is_none() && !list.is_empty() {
                return Err(cx.err(
                    list[0].span(),
                    "static_bib[0]: a static BIB entry needs an explicit pool4 holding its \
                     address and port (the default pool4, the gateway's own address, is only \
                     found when `sixgate run` starts); expected a pool4 key in [nat64], e.g. \
                     pool4 = [\"203.0.113.1\"]",
                ));
            }
            out.static_bib = static_bib(cx, cfg, &out.pool4, list)?;
            Ok(())
        });
    }
    if let Some(e) = &n.event_log {
        cx.check(|| {
            out.event_log = match e.get_ref().as_str() {
                "off" => EventLog::Off,
                "sessions" => EventLog::Sessions,
                "bib" => EventLog::Bib,
                "all" => EventLog::All,
                _ => {
                    return Err(cx.bad(
                        "event_log",
                        e,
                        "unknown event log",
                        "\"off\", \"sessions\", \"bib\" or \"all\" (RFC 6888 §4)",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(v) = n.log_destinations {
        out.log_destinations = v;
    }
    if let Some(v) = &n.deterministic {
        cx.check(|| deterministic(cx, &n, v, &mut out));
    }
    Ok(out)
}

/// `deterministic`: the prefix, and a formula that holds every subscriber of
/// it (RFC 7422; `Deterministic::plan` says why not).
fn deterministic(
    cx: &Cx<'_>,
    n: &Nat64Section,
    v: &Spanned<String>,
    out: &mut Nat64Config,
) -> Result<(), ConfigError> {
    out.deterministic = Some(clean_v6_prefix(
        cx,
        "deterministic",
        v,
        "an IPv6 prefix whose subscribers get fixed pool4 blocks (RFC 7422), e.g. \
         \"2001:db8:100::/40\"",
    )?);
    if n.pool4.is_none() {
        return Err(cx.err(
            v.span(),
            "deterministic: RFC 7422 deterministic NAT needs an explicit pool4 (the formula \
             numbers its addresses); expected a pool4 key in [nat64]",
        ));
    }
    if cx.failed() {
        // A bad pool4 or port_block_size is reported already.
        return Ok(());
    }
    Deterministic::plan(out).map_err(|why| cx.err(v.span(), format!("deterministic: {why}")))?;
    Ok(())
}

fn proto_name(p: Proto) -> &'static str {
    match p {
        Proto::Tcp => "TCP ports",
        Proto::Udp => "UDP ports",
        Proto::Icmp => "ICMP identifiers",
    }
}

fn pool4(
    cx: &Cx<'_>,
    cfg: &Config,
    list: &Spanned<Vec<Spanned<Pool4Item>>>,
) -> Result<Vec<Pool4Entry>, ConfigError> {
    let mut out: Vec<Pool4Entry> = Vec::new();
    let mut total = 0u64;
    for (i, item) in list.get_ref().iter().enumerate() {
        let entry = match item.get_ref() {
            Pool4Item::Prefix(s) => {
                let key = format!("pool4[{i}]");
                let v = Spanned::new(item.span(), s.clone());
                let (addr, prefix_len) = pool4_prefix(cx, &key, &v)?;
                Pool4Entry {
                    addr,
                    prefix_len,
                    tcp: DEFAULT_PORTS,
                    udp: DEFAULT_PORTS,
                    icmp: DEFAULT_PORTS,
                }
            }
            Pool4Item::Table(t) => {
                let (addr, prefix_len) =
                    pool4_prefix(cx, &format!("pool4[{i}].prefix"), &t.prefix)?;
                let range = |name: &str, v: &Option<Spanned<String>>, dflt: PortRange, lo: u16| {
                    v.as_ref().map_or(Ok(dflt), |v| {
                        port_range(cx, &format!("pool4[{i}].{name}"), v, lo)
                    })
                };
                Pool4Entry {
                    addr,
                    prefix_len,
                    tcp: range("tcp", &t.tcp, DEFAULT_PORTS, 1)?,
                    udp: range("udp", &t.udp, DEFAULT_PORTS, 1)?,
                    icmp: range("icmp", &t.icmp, DEFAULT_PORTS, 0)?,
                }
            }
        };
        crate::lint::wkp_with_lab_ipv4(
            cx,
            cfg,
            item.span(),
            &format!("pool4[{i}]"),
            (entry.addr, entry.prefix_len),
        );
        total += 1u64 << (32 - u32::from(entry.prefix_len));
        if total > POOL4_MAX_ADDRESSES {
            return Err(cx.err(
                item.span(),
                format!(
                    "pool4[{i}]: pool4 would hold {total} addresses; expected at most \
                     {POOL4_MAX_ADDRESSES} in all (a /16)"
                ),
            ));
        }
        if let Some((j, p)) = out.iter().enumerate().find_map(|(j, o)| {
            let p = overlap(o, &entry)?;
            Some((j, p))
        }) {
            let (a, b) = (out[j].range(p), entry.range(p));
            return Err(cx.err(
                item.span(),
                format!(
                    "pool4[{i}] ({}/{}, {} {}-{}) overlaps pool4[{j}] ({}/{}, {} {}-{}); \
                     expected every address and port in pool4 at most once",
                    entry.addr,
                    entry.prefix_len,
                    proto_name(p),
                    b.first,
                    b.last,
                    out[j].addr,
                    out[j].prefix_len,
                    proto_name(p),
                    a.first,
                    a.last,
                ),
            ));
        }
        out.push(entry);
    }
    Ok(out)
}

/// The protocol on which two pool4 entries share an address and a port, if any.
fn overlap(a: &Pool4Entry, b: &Pool4Entry) -> Option<Proto> {
    let len = a.prefix_len.min(b.prefix_len);
    if mask_v4(a.addr, len) != mask_v4(b.addr, len) {
        return None;
    }
    Proto::ALL.into_iter().find(|&p| {
        let (x, y) = (a.range(p), b.range(p));
        x.first <= y.last && y.first <= x.last
    })
}

fn pool4_prefix(
    cx: &Cx<'_>,
    key: &str,
    v: &Spanned<String>,
) -> Result<(Ipv4Addr, u8), ConfigError> {
    let (addr, len) = clean_v4_prefix(
        cx,
        key,
        v,
        "an IPv4 address or prefix ADDR/LEN, e.g. \"203.0.113.0/28\"",
    )?;
    if let Some(block) = NOT_UNICAST_V4
        .iter()
        .find(|&&(net, l)| mask_v4(addr, len.min(l)) == mask_v4(net, len.min(l)))
    {
        return Err(cx.bad(
            key,
            v,
            format_args!(
                "the prefix reaches into {}/{}, which is not unicast",
                block.0, block.1
            ),
            "unicast IPv4 addresses the translator owns, e.g. \"203.0.113.0/28\"",
        ));
    }
    Ok((addr, len))
}

/// IPv4 ranges no host can be mapped to: "this network" and loopback
/// (RFC 1122 §3.2.1.3), multicast and reserved/broadcast (RFC 5771, RFC 1112).
const NOT_UNICAST_V4: [(Ipv4Addr, u8); 4] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8),
    (Ipv4Addr::new(127, 0, 0, 0), 8),
    (Ipv4Addr::new(224, 0, 0, 0), 4),
    (Ipv4Addr::new(240, 0, 0, 0), 4),
];

/// `"FIRST-LAST"` or `"N"`, each from `lo` to 65535, FIRST ≤ LAST.
fn port_range(
    cx: &Cx<'_>,
    key: &str,
    v: &Spanned<String>,
    lo: u16,
) -> Result<PortRange, ConfigError> {
    let expected =
        format!("\"FIRST-LAST\" or \"PORT\" with numbers from {lo} to 65535, e.g. \"1024-65535\"");
    let num = |s: &str| s.trim().parse::<u16>().ok().filter(|&n| n >= lo);
    let (first, last) = match v.get_ref().split_once('-') {
        Some((a, b)) => (num(a), num(b)),
        None => {
            let n = num(v.get_ref());
            (n, n)
        }
    };
    match (first, last) {
        (Some(first), Some(last)) if first <= last => Ok(PortRange { first, last }),
        (Some(_), Some(_)) => Err(cx.bad(key, v, "the range is backwards", expected)),
        _ => Err(cx.bad(key, v, "not a port range", expected)),
    }
}

fn static_bib(
    cx: &Cx<'_>,
    cfg: &Config,
    pool4: &[Pool4Entry],
    list: &[Spanned<StaticBibEntry>],
) -> Result<Vec<StaticBib>, ConfigError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        let s = e.get_ref();
        let proto = match s.proto.get_ref().as_str() {
            "tcp" => Proto::Tcp,
            "udp" => Proto::Udp,
            "icmp" => Proto::Icmp,
            _ => {
                return Err(cx.bad(
                    &format!("static_bib[{i}].proto"),
                    &s.proto,
                    "unknown protocol",
                    quoted_list(&["tcp", "udp", "icmp"]),
                ));
            }
        };
        let lo = if proto == Proto::Icmp { 0 } else { 1 };
        let v6: Ipv6Addr = v6_addr(cx, &format!("static_bib[{i}].ipv6"), &s.ipv6)?;
        if v6.is_unspecified() || v6.is_loopback() || v6.is_multicast() {
            return Err(cx.bad(
                &format!("static_bib[{i}].ipv6"),
                &s.ipv6,
                "not a unicast address",
                "the address of an IPv6 host",
            ));
        }
        if let Some(p) = cfg.map.pool6.filter(|p| p.contains_octets(&v6.octets())) {
            return Err(cx.bad(
                &format!("static_bib[{i}].ipv6"),
                &s.ipv6,
                format_args!(
                    "the address is inside pool6 {}/{}, where IPv6 sees IPv4 hosts",
                    p.addr(),
                    p.len()
                ),
                "the address of an IPv6 host",
            ));
        }
        let port6 = int_in(cx, &format!("static_bib[{i}].port6"), &s.port6, lo, 65535)? as u16;
        let v4: Ipv4Addr = v4_addr(cx, &format!("static_bib[{i}].ipv4"), &s.ipv4)?;
        let port4 = int_in(cx, &format!("static_bib[{i}].port4"), &s.port4, lo, 65535)? as u16;
        // The address must be pool4's (RFC 6146 §3.5.1: BIB entries use pool4's
        // transport addresses); the port may be any: a pool4 range is what the
        // translator hands out by itself, and a published server usually wants a
        // well-known port below it (Jool's default range starts at 61001).
        if !pool4.iter().any(|p| mask_v4(v4, p.prefix_len) == p.addr) {
            return Err(cx.err(
                e.span(),
                format!(
                    "static_bib[{i}] ({} {v4}:{port4}): {v4} is not in pool4; expected an \
                     IPv4 address of pool4 (RFC 6146 §3.5.1: BIB entries use pool4's \
                     transport addresses)",
                    s.proto.get_ref(),
                ),
            ));
        }
        let entry = StaticBib {
            proto,
            v6,
            port6,
            v4,
            port4,
        };
        let same = |o: &StaticBib| {
            if o.proto != proto {
                None
            } else if (o.v4, o.port4) == (v4, port4) {
                Some(format!("IPv4 side {v4}:{port4}"))
            } else if (o.v6, o.port6) == (v6, port6) {
                Some(format!("IPv6 side [{v6}]:{port6}"))
            } else {
                None
            }
        };
        if let Some((j, side)) = out
            .iter()
            .enumerate()
            .find_map(|(j, o)| Some((j, same(o)?)))
        {
            return Err(cx.err(
                e.span(),
                format!(
                    "static_bib[{i}]: the same {} {side} as static_bib[{j}]; expected each \
                     transport address in at most one BIB entry (RFC 6146 §3.5.1)",
                    s.proto.get_ref()
                ),
            ));
        }
        out.push(entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
