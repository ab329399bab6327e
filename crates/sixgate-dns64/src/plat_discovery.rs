//! RFC 7050 discovery for a CLAT: ask a DNS server for the AAAA records of
//! `ipv4only.arpa`, settle the PLAT prefix before the data plane starts, and
//! (§3) ask again before the answer's TTL runs out, following a change. Which
//! prefix the records reveal is `sixgate_core::addr::rfc7050`; the messages are
//! `hickory-proto`'s, as everywhere in this crate.
//!
//! One UDP query with a random ID from a connected socket (so only the server's
//! datagrams arrive), answers matched to ID and question (RFC 5452; others are
//! ignored while the attempt's time runs), [`TIMEOUT`] per attempt and
//! [`ATTEMPTS`] attempts; TCP only when the answer comes back truncated
//! (RFC 7766 §5). Blocking: it runs once before the data plane starts, then on a
//! thread of its own.

use std::fmt;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, Query};
use hickory_proto::rr::{DNSClass, Name, RData, RecordType};
use sixgate_config::{DNS_PORT, Loaded, PlatPrefix};
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::addr::rfc7050::{self, WELL_KNOWN_NAME};
use tracing::{info, warn};

use crate::upstream;

/// How long one attempt waits for its answer.
pub const TIMEOUT: Duration = Duration::from_secs(1);
/// Attempts, each with a fresh ID, before discovery gives up.
pub const ATTEMPTS: u32 = 3;
/// Where the system's resolvers are listed.
pub const RESOLV_CONF: &str = "/etc/resolv.conf";
/// RFC 7050 §3: ask again this long before the answer's TTL runs out.
pub const REFRESH_AHEAD: Duration = Duration::from_secs(10);
/// Shortest wait between two discoveries (an answer with TTL 0 or 1).
pub const MIN_REFRESH: Duration = Duration::from_secs(1);
/// After a failed re-discovery (or when only the fallback is known), the next
/// try; the prefix in use stays meanwhile.
pub const RETRY: Duration = Duration::from_secs(30);

/// What the answer to an AAAA query says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// RFC 1035 §4.1.1 RCODE: 0 no error, 3 name error (NXDOMAIN), …
    pub rcode: u16,
    /// TC: the answer was cut to fit a datagram; ask again over TCP.
    pub truncated: bool,
    /// The AAAA records for the name asked (or a name it is a CNAME of), in order.
    pub aaaa: Vec<Ipv6Addr>,
    /// The smallest TTL among them, seconds.
    pub min_ttl: Option<u32>,
}

/// Why a message is not an answer to our query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnswerError {
    /// Not a response to our query (another ID or question, or a query): a stray
    /// or forged datagram, to be ignored.
    Mismatch,
    /// Not a DNS message.
    Malformed(String),
}

impl fmt::Display for AnswerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnswerError::Mismatch => f.write_str("not the answer to our query"),
            AnswerError::Malformed(why) => write!(f, "malformed DNS message: {why}"),
        }
    }
}

/// RFC 1035 §4.1: a recursive AAAA query for `name` (fully qualified) with a
/// fresh random ID.
pub fn aaaa_query(name: &str) -> Result<Message, String> {
    let fqdn = format!("{}.", name.trim_end_matches('.'));
    let name = Name::from_ascii(&fqdn).map_err(|e| format!("{name:?}: {e}"))?;
    Ok(upstream::request(
        &Query::query(name, RecordType::AAAA),
        false,
        false,
    ))
}

/// Read `wire` as the answer to `query` (RFC 5452 §9.1: ID and question must
/// match), keeping the AAAA records of the answer section whose owner is the
/// name asked or a CNAME target of it (RFC 1034 §3.6.2).
pub fn aaaa_answer(wire: &[u8], query: &Message) -> Result<Answer, AnswerError> {
    let m = Message::from_vec(wire).map_err(|e| AnswerError::Malformed(e.to_string()))?;
    if !upstream::matches(query, &m) {
        return Err(AnswerError::Mismatch);
    }
    let mut owners = vec![m.queries[0].name.clone()];
    let mut aaaa = Vec::new();
    let mut min_ttl: Option<u32> = None;
    for r in &m.answers {
        if r.dns_class != DNSClass::IN || !owners.contains(&r.name) {
            continue;
        }
        match &r.data {
            RData::AAAA(a) => {
                aaaa.push(a.0);
                min_ttl = Some(min_ttl.map_or(r.ttl, |t| t.min(r.ttl)));
            }
            RData::CNAME(c) => owners.push(c.0.clone()),
            _ => {}
        }
    }
    Ok(Answer {
        rcode: u16::from(m.metadata.response_code),
        truncated: m.metadata.truncation,
        aaaa,
        min_ttl,
    })
}

/// What discovery found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovery {
    /// Every Pref64::/n of the answer, in its order; at least one.
    pub prefixes: Vec<Rfc6052Prefix>,
    /// The smallest TTL of the AAAA records, seconds: how long the answer holds.
    pub ttl: Option<u32>,
}

/// RFC 7050 §3: the prefixes the AAAA records of `ipv4only.arpa` reveal, at least
/// one, asked of `server`.
pub fn discover(server: SocketAddr, timeout: Duration, attempts: u32) -> Result<Discovery, String> {
    let answer = query_aaaa(server, WELL_KNOWN_NAME, timeout, attempts)?;
    let prefixes = rfc7050::discover(&answer.aaaa);
    if prefixes.is_empty() {
        let what = match (answer.rcode, answer.aaaa.len()) {
            (0, 0) => "no AAAA record (no DNS64 on the way?)".to_owned(),
            (0, n) => format!(
                "{n} AAAA record(s), none with 192.0.0.170 or 192.0.0.171 at an RFC 6052 position"
            ),
            (rcode, _) => format!("response code {rcode}"),
        };
        return Err(format!("{WELL_KNOWN_NAME} AAAA via {server}: {what}"));
    }
    Ok(Discovery {
        prefixes,
        ttl: answer.min_ttl,
    })
}

/// One AAAA question to `server`: `attempts` tries of `timeout` each over UDP,
/// then TCP if the UDP answer was truncated.
pub fn query_aaaa(
    server: SocketAddr,
    name: &str,
    timeout: Duration,
    attempts: u32,
) -> Result<Answer, String> {
    let local: IpAddr = match server {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let sock = UdpSocket::bind((local, 0)).map_err(|e| format!("UDP socket: {e}"))?;
    sock.connect(server)
        .map_err(|e| format!("cannot reach DNS server {server}: {e}"))?;
    let mut last = String::from("no attempt made");
    for attempt in 1..=attempts.max(1) {
        let q = aaaa_query(name)?;
        let wire = q.to_vec().map_err(|e| format!("{name} AAAA: {e}"))?;
        match udp_exchange(&sock, &wire, &q, timeout) {
            Ok(a) if a.truncated => return tcp_exchange(server, &wire, &q, name, timeout),
            Ok(a) => return Ok(a),
            Err(why) => {
                last = format!("{name} AAAA via {server}: {why} (attempt {attempt} of {attempts})");
            }
        }
    }
    Err(last)
}

/// Send `wire` and wait up to `timeout` for the datagram that answers `q`.
fn udp_exchange(
    sock: &UdpSocket,
    wire: &[u8],
    q: &Message,
    timeout: Duration,
) -> Result<Answer, String> {
    sock.send(wire).map_err(|e| format!("send: {e}"))?;
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no answer within {} ms", timeout.as_millis()));
        }
        sock.set_read_timeout(Some(left))
            .map_err(|e| format!("socket: {e}"))?;
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) => return Err(format!("receive: {e}")),
        };
        match aaaa_answer(&buf[..n], q) {
            Ok(a) => return Ok(a),
            // Not ours (an old attempt's answer, a forgery): keep waiting.
            Err(AnswerError::Mismatch) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// RFC 1035 §4.2.2 / RFC 7766: the same query over TCP, two-byte length first.
fn tcp_exchange(
    server: SocketAddr,
    wire: &[u8],
    q: &Message,
    name: &str,
    timeout: Duration,
) -> Result<Answer, String> {
    let fail =
        |e: std::io::Error| format!("{name} AAAA via TCP {server} (UDP answer truncated): {e}");
    let mut s = TcpStream::connect_timeout(&server, timeout).map_err(fail)?;
    s.set_read_timeout(Some(timeout)).map_err(fail)?;
    s.set_write_timeout(Some(timeout)).map_err(fail)?;
    let mut out = (wire.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(wire);
    s.write_all(&out).map_err(fail)?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(fail)?;
    let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut msg).map_err(fail)?;
    aaaa_answer(&msg, q).map_err(|e| format!("{name} AAAA via TCP {server}: {e}"))
}

/// The first `nameserver` of /etc/resolv.conf.
fn system_nameserver() -> Result<SocketAddr, String> {
    let text = std::fs::read_to_string(RESOLV_CONF)
        .map_err(|e| format!("no dns_server given and cannot read {RESOLV_CONF}: {e}"))?;
    first_nameserver(&text)
        .ok_or_else(|| format!("no dns_server given and {RESOLV_CONF} lists no usable nameserver"))
}

/// resolv.conf(5): the first `nameserver ADDRESS` line, port 53. A link-local
/// IPv6 address with a `%zone` is skipped (a zone needs an interface index).
pub fn first_nameserver(resolv_conf: &str) -> Option<SocketAddr> {
    resolv_conf.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        if words.next()? != "nameserver" {
            return None;
        }
        let addr: IpAddr = words.next()?.parse().ok()?;
        Some(SocketAddr::new(addr, DNS_PORT))
    })
}

/// A discovered PLAT prefix and what it takes to discover it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    /// The DNS server asked.
    pub server: SocketAddr,
    /// The prefix in use.
    pub prefix: Rfc6052Prefix,
    /// The answer's TTL; `None`: discovery failed and the fallback is in use.
    pub ttl: Option<u32>,
}

/// For a CLAT whose `[clat] plat_prefix = "discover"`: find the PLAT prefix and
/// put it into `loaded` (pool6), logging what was found and what is used. On
/// failure, the fallback (`[translator] pool6`) with a warning, or an error when
/// there is none. `Some` when there is something to refresh ([`Refresher`]);
/// other modes and a static prefix: `None`, nothing to do.
pub fn settle_plat_prefix(loaded: &mut Loaded) -> Result<Option<Settled>, String> {
    settle_with(loaded, TIMEOUT, ATTEMPTS)
}

fn settle_with(
    loaded: &mut Loaded,
    timeout: Duration,
    attempts: u32,
) -> Result<Option<Settled>, String> {
    let Some(clat) = &loaded.clat else {
        return Ok(None);
    };
    let (dns_server, fallback) = match &clat.plat_prefix {
        PlatPrefix::Static(p) => {
            info!("CLAT: PLAT prefix {p} ([translator] pool6)");
            return Ok(None);
        }
        PlatPrefix::Discover {
            dns_server,
            fallback,
        } => (*dns_server, *fallback),
    };
    let server = match dns_server {
        Some(s) => Ok(s),
        None => system_nameserver(),
    };
    let found = server
        .clone()
        .and_then(|s| discover(s, timeout, attempts).map(|d| (s, d)));
    match (found, fallback) {
        (Ok((server, d)), _) => {
            let list: Vec<String> = d.prefixes.iter().map(|p| p.to_string()).collect();
            info!(
                ttl_s = d.ttl,
                "CLAT: RFC 7050: {WELL_KNOWN_NAME} via {server} reveals PLAT prefix {}; using {}",
                list.join(", "),
                d.prefixes[0]
            );
            loaded.set_plat_prefix(d.prefixes[0]);
            Ok(Some(Settled {
                server,
                prefix: d.prefixes[0],
                ttl: d.ttl,
            }))
        }
        (Err(why), Some(fb)) => {
            warn!(
                "CLAT: RFC 7050 discovery failed: {why}; using the fallback PLAT prefix {fb} \
                 ([translator] pool6) and trying again every {} s",
                RETRY.as_secs()
            );
            loaded.set_plat_prefix(fb);
            Ok(server.ok().map(|server| Settled {
                server,
                prefix: fb,
                ttl: None,
            }))
        }
        (Err(why), None) => Err(format!(
            "CLAT: RFC 7050 discovery of the PLAT prefix failed: {why}; and there is no \
             fallback: set [translator] pool6 to the PLAT prefix (used when discovery fails), \
             or [clat] plat_prefix = \"pool6\" to use it without discovery"
        )),
    }
}

/// RFC 7050 §3: when to ask again after an answer with `ttl`: [`REFRESH_AHEAD`]
/// before it runs out (half the TTL for short ones), never sooner than
/// [`MIN_REFRESH`]; after a failure (`None`), [`RETRY`].
pub fn refresh_in(ttl: Option<u32>) -> Duration {
    let Some(ttl) = ttl else {
        return RETRY;
    };
    let ttl = Duration::from_secs(u64::from(ttl));
    ttl.saturating_sub(REFRESH_AHEAD.min(ttl / 2))
        .max(MIN_REFRESH)
}

/// RFC 7050 §3 on a thread: discovery again before each answer's TTL runs out;
/// a changed prefix is handed to `apply`. A failed re-discovery keeps the prefix
/// in use (with a warning) and tries again after [`RETRY`]. Stopped on drop.
pub struct Refresher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl Refresher {
    /// Start refreshing `settled`; `apply` runs a new prefix and says why it
    /// could not.
    pub fn spawn(
        settled: Settled,
        apply: impl FnMut(Rfc6052Prefix) -> Result<(), String> + Send + 'static,
    ) -> std::io::Result<Refresher> {
        Self::spawn_with(settled, TIMEOUT, ATTEMPTS, refresh_in, apply)
    }

    fn spawn_with(
        mut settled: Settled,
        timeout: Duration,
        attempts: u32,
        schedule: fn(Option<u32>) -> Duration,
        mut apply: impl FnMut(Rfc6052Prefix) -> Result<(), String> + Send + 'static,
    ) -> std::io::Result<Refresher> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("sixgate-rfc7050".into())
            .spawn(move || {
                let (lock, cv) = &*flag;
                loop {
                    let wait = schedule(settled.ttl);
                    let stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                    let (stopped, _) = cv
                        .wait_timeout_while(stopped, wait, |s| !*s)
                        .unwrap_or_else(|p| p.into_inner());
                    if *stopped {
                        return;
                    }
                    drop(stopped);
                    let d = match discover(settled.server, timeout, attempts) {
                        Ok(d) => d,
                        Err(why) => {
                            warn!(
                                "CLAT: RFC 7050 re-discovery failed: {why}; keeping PLAT prefix {}",
                                settled.prefix
                            );
                            settled.ttl = None;
                            continue;
                        }
                    };
                    settled.ttl = d.ttl;
                    let new = d.prefixes[0];
                    if new == settled.prefix {
                        continue;
                    }
                    match apply(new) {
                        Ok(()) => {
                            info!(
                                "CLAT: RFC 7050: the PLAT prefix changed from {} to {new}; using it",
                                settled.prefix
                            );
                            settled.prefix = new;
                        }
                        Err(why) => warn!(
                            "CLAT: RFC 7050: the PLAT prefix changed to {new}, but it cannot be \
                             run: {why}; keeping {}",
                            settled.prefix
                        ),
                    }
                }
            })?;
        Ok(Refresher {
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests;
