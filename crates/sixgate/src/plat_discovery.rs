//! RFC 7050 discovery for a CLAT, the I/O half: ask a DNS server for the AAAA
//! records of `ipv4only.arpa` and settle the PLAT prefix before the data plane
//! starts. Which prefix the records reveal is `sixgate_core::addr::rfc7050`.
//!
//! One UDP query with a random ID from a connected socket (so only the server's
//! datagrams arrive), answers matched to ID and question (others are ignored while
//! the attempt's time runs), [`TIMEOUT`] per attempt and [`ATTEMPTS`] attempts; TCP
//! only when the answer comes back truncated (RFC 7766 §5).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use sixgate_config::{DNS_PORT, Loaded, PlatPrefix};
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::addr::rfc7050::{self, WELL_KNOWN_NAME};
use tracing::{info, warn};

use crate::dns_message::{self, Answer, DecodeError, TYPE_AAAA};

/// How long one attempt waits for its answer.
pub const TIMEOUT: Duration = Duration::from_secs(1);
/// Attempts, each with a fresh ID, before discovery gives up.
pub const ATTEMPTS: u32 = 3;
/// Where the system's resolvers are listed.
pub const RESOLV_CONF: &str = "/etc/resolv.conf";

/// For a CLAT whose `[clat] plat_prefix = "discover"`: find the PLAT prefix and
/// put it into `loaded` (pool6), logging what was found and what is used. On
/// failure, the fallback (`[translator] pool6`) with a warning, or an error when
/// there is none. Other modes and a static prefix: nothing to do.
pub fn settle_plat_prefix(loaded: &mut Loaded) -> Result<(), String> {
    settle_with(loaded, TIMEOUT, ATTEMPTS)
}

fn settle_with(loaded: &mut Loaded, timeout: Duration, attempts: u32) -> Result<(), String> {
    let Some(clat) = &loaded.clat else {
        return Ok(());
    };
    let (dns_server, fallback) = match &clat.plat_prefix {
        PlatPrefix::Static(p) => {
            info!("CLAT: PLAT prefix {p} ([translator] pool6)");
            return Ok(());
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
    let found = server.and_then(|s| discover(s, timeout, attempts).map(|d| (s, d)));
    match (found, fallback) {
        (Ok((server, d)), _) => {
            let list: Vec<String> = d.prefixes.iter().map(|p| p.to_string()).collect();
            info!(
                ttl_s = d.ttl,
                "CLAT: RFC 7050: {WELL_KNOWN_NAME} via {server} reveals PLAT prefix {}; using {} \
                 (kept while running: not looked up again when the TTL runs out)",
                list.join(", "),
                d.prefixes[0]
            );
            loaded.set_plat_prefix(d.prefixes[0]);
            Ok(())
        }
        (Err(why), Some(fb)) => {
            warn!(
                "CLAT: RFC 7050 discovery failed: {why}; using the fallback PLAT prefix {fb} ([translator] pool6)"
            );
            loaded.set_plat_prefix(fb);
            Ok(())
        }
        (Err(why), None) => Err(format!(
            "CLAT: RFC 7050 discovery of the PLAT prefix failed: {why}; and there is no \
             fallback: set [translator] pool6 to the PLAT prefix (used when discovery fails), \
             or [clat] plat_prefix = \"pool6\" to use it without discovery"
        )),
    }
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
        let id = sixgate_dataplane::system::random_u64() as u16;
        let q = dns_message::query(id, name, TYPE_AAAA);
        match udp_exchange(&sock, &q, id, name, timeout) {
            Ok(a) if a.truncated => return tcp_exchange(server, &q, id, name, timeout),
            Ok(a) => return Ok(a),
            Err(why) => {
                last = format!("{name} AAAA via {server}: {why} (attempt {attempt} of {attempts})");
            }
        }
    }
    Err(last)
}

/// Send `q` and wait up to `timeout` for the datagram that answers it.
fn udp_exchange(
    sock: &UdpSocket,
    q: &[u8],
    id: u16,
    name: &str,
    timeout: Duration,
) -> Result<Answer, String> {
    sock.send(q).map_err(|e| format!("send: {e}"))?;
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
        match dns_message::parse_aaaa_answer(&buf[..n], id, name) {
            Ok(a) => return Ok(a),
            // Not ours (an old attempt's answer, a forgery): keep waiting.
            Err(DecodeError::Mismatch(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// RFC 1035 §4.2.2 / RFC 7766: the same query over TCP, two-byte length first.
fn tcp_exchange(
    server: SocketAddr,
    q: &[u8],
    id: u16,
    name: &str,
    timeout: Duration,
) -> Result<Answer, String> {
    let fail =
        |e: std::io::Error| format!("{name} AAAA via TCP {server} (UDP answer truncated): {e}");
    let mut s = TcpStream::connect_timeout(&server, timeout).map_err(fail)?;
    s.set_read_timeout(Some(timeout)).map_err(fail)?;
    s.set_write_timeout(Some(timeout)).map_err(fail)?;
    let mut out = (q.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(q);
    s.write_all(&out).map_err(fail)?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(fail)?;
    let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut msg).map_err(fail)?;
    dns_message::parse_aaaa_answer(&msg, id, name)
        .map_err(|e| format!("{name} AAAA via TCP {server}: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns_message::tests::response;
    use std::net::TcpListener;
    use std::thread;

    fn wka(prefix: &str) -> Vec<Ipv6Addr> {
        let p: Rfc6052Prefix = prefix.parse().unwrap();
        vec![
            p.embed(rfc7050::WKA_PRIMARY),
            p.embed(rfc7050::WKA_SECONDARY),
        ]
    }

    /// How the test responder treats each query it receives, in turn.
    #[derive(Clone)]
    enum Reply {
        /// Say nothing (a lost datagram).
        Drop,
        /// Answer with another ID first, then correctly.
        WrongIdFirst(Vec<Ipv6Addr>),
        /// Answer with these records and these extra flags (RCODE, TC).
        Records(u16, Vec<Ipv6Addr>),
    }

    /// A tiny DNS server on a loopback port: a thread that answers the queries it
    /// gets as `plan` says, and (for truncation) a TCP listener on the same port.
    fn responder(v6: bool, plan: Vec<Reply>, tcp_records: Vec<Ipv6Addr>) -> SocketAddr {
        let ip: IpAddr = if v6 {
            Ipv6Addr::LOCALHOST.into()
        } else {
            Ipv4Addr::LOCALHOST.into()
        };
        let udp = UdpSocket::bind((ip, 0)).unwrap();
        let addr = udp.local_addr().unwrap();
        let tcp = TcpListener::bind(addr).unwrap();
        thread::spawn(move || {
            let mut buf = [0u8; 512];
            for reply in plan {
                let Ok((n, from)) = udp.recv_from(&mut buf) else {
                    return;
                };
                let q = &buf[..n];
                // The question must be exactly ours.
                assert_eq!(
                    &q[2..],
                    &dns_message::query(0, WELL_KNOWN_NAME, TYPE_AAAA)[2..]
                );
                let id = u16::from_be_bytes([q[0], q[1]]);
                match reply {
                    Reply::Drop => {}
                    Reply::WrongIdFirst(r) => {
                        let stray = response(
                            id.wrapping_add(1),
                            WELL_KNOWN_NAME,
                            0,
                            &wka("2001:db8:bad::/96"),
                        );
                        udp.send_to(&stray, from).unwrap();
                        udp.send_to(&response(id, WELL_KNOWN_NAME, 0, &r), from)
                            .unwrap();
                    }
                    Reply::Records(flags, r) => {
                        udp.send_to(&response(id, WELL_KNOWN_NAME, flags, &r), from)
                            .unwrap();
                    }
                }
            }
        });
        thread::spawn(move || {
            if let Ok((mut s, _)) = tcp.accept() {
                let mut len = [0u8; 2];
                s.read_exact(&mut len).unwrap();
                let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
                s.read_exact(&mut q).unwrap();
                let id = u16::from_be_bytes([q[0], q[1]]);
                let r = response(id, WELL_KNOWN_NAME, 0, &tcp_records);
                let mut out = (r.len() as u16).to_be_bytes().to_vec();
                out.extend_from_slice(&r);
                s.write_all(&out).unwrap();
            }
        });
        addr
    }

    const SHORT: Duration = Duration::from_millis(300);

    #[test]
    fn rfc7050_s3_prefix_from_a_dns_server_over_udp() {
        for v6 in [true, false] {
            let server = responder(v6, vec![Reply::Records(0, wka("2001:db8:64::/96"))], vec![]);
            let found = discover(server, SHORT, 1).unwrap().prefixes;
            assert_eq!(found, vec!["2001:db8:64::/96".parse().unwrap()]);
        }
    }

    #[test]
    fn answer_with_another_id_is_ignored() {
        let server = responder(true, vec![Reply::WrongIdFirst(wka("64:ff9b::/96"))], vec![]);
        assert_eq!(
            discover(server, SHORT, 1).unwrap().prefixes,
            vec!["64:ff9b::/96".parse().unwrap()]
        );
    }

    #[test]
    fn lost_query_is_retried_with_a_new_attempt() {
        let server = responder(
            true,
            vec![Reply::Drop, Reply::Records(0, wka("2001:db8:64::/64"))],
            vec![],
        );
        assert_eq!(
            discover(server, SHORT, 2).unwrap().prefixes,
            vec!["2001:db8:64::/64".parse().unwrap()]
        );
        let server = responder(true, vec![Reply::Drop, Reply::Drop], vec![]);
        let e = discover(server, SHORT, 2).unwrap_err();
        assert!(
            e.contains("no answer within 300 ms (attempt 2 of 2)"),
            "{e}"
        );
    }

    #[test]
    fn rfc7766_s5_truncated_answer_is_asked_again_over_tcp() {
        let server = responder(
            true,
            vec![Reply::Records(0x0200, vec![])],
            wka("2001:db8:122:344::/64"),
        );
        assert_eq!(
            discover(server, SHORT, 1).unwrap().prefixes,
            vec!["2001:db8:122:344::/64".parse().unwrap()]
        );
    }

    #[test]
    fn rfc7050_s3_no_nat64_is_an_error_that_says_why() {
        let server = responder(true, vec![Reply::Records(0, vec![])], vec![]);
        let e = discover(server, SHORT, 1).unwrap_err();
        assert!(e.contains("no AAAA record"), "{e}");
        let server = responder(true, vec![Reply::Records(3, vec![])], vec![]);
        let e = discover(server, SHORT, 1).unwrap_err();
        assert!(e.contains("response code 3"), "{e}");
        let server = responder(
            true,
            vec![Reply::Records(0, vec!["2001:db8::1".parse().unwrap()])],
            vec![],
        );
        let e = discover(server, SHORT, 1).unwrap_err();
        assert!(e.contains("1 AAAA record(s), none with 192.0.0.170"), "{e}");
    }

    fn clat(extra: &str) -> Loaded {
        let text = format!(
            "[translator]\nmode = \"clat\"\n{extra}[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n\
             plat_prefix = \"discover\"\n"
        );
        sixgate_config::parse(&text, "t.toml").unwrap()
    }

    fn with_server(mut l: Loaded, server: SocketAddr) -> Loaded {
        if let Some(c) = &mut l.clat
            && let PlatPrefix::Discover { dns_server, .. } = &mut c.plat_prefix
        {
            *dns_server = Some(server);
        }
        l
    }

    #[test]
    fn settle_uses_the_discovered_prefix_over_the_fallback() {
        let server = responder(
            true,
            vec![Reply::Records(0, wka("2001:db8:64::/96"))],
            vec![],
        );
        let mut l = with_server(clat("pool6 = \"64:ff9b::/96\"\n"), server);
        settle_with(&mut l, SHORT, 1).unwrap();
        assert_eq!(
            l.config.map.pool6,
            Some("2001:db8:64::/96".parse().unwrap())
        );
        assert_eq!(
            l.config.icmp_source_v6,
            "2001:db8:64::c000:8".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn settle_falls_back_or_fails_clearly() {
        // Nobody answers on this port: the fallback is used.
        let silent = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
        let server = silent.local_addr().unwrap();
        let mut l = with_server(clat("pool6 = \"64:ff9b::/96\"\n"), server);
        settle_with(&mut l, SHORT, 1).unwrap();
        assert_eq!(l.config.map.pool6, Some("64:ff9b::/96".parse().unwrap()));

        let mut l = with_server(clat(""), server);
        let e = settle_with(&mut l, SHORT, 1).unwrap_err();
        assert!(
            e.contains("RFC 7050 discovery of the PLAT prefix failed"),
            "{e}"
        );
        assert!(e.contains("no fallback: set [translator] pool6"), "{e}");
        assert_eq!(l.config.map.pool6, None);
    }

    #[test]
    fn resolv_conf_first_nameserver() {
        let text = "# comment\nsearch example\nnameserver fe80::1%eth0\nnameserver 2001:db8::53\nnameserver 192.0.2.53\n";
        assert_eq!(
            first_nameserver(text),
            Some("[2001:db8::53]:53".parse().unwrap())
        );
        assert_eq!(
            first_nameserver("nameserver 192.0.2.53"),
            Some("192.0.2.53:53".parse().unwrap())
        );
        assert_eq!(first_nameserver("options ndots:1\n"), None);
    }
}
