//! `sixgate nat64 whois ADDR:PORT`: which subscriber had a public address and
//! port (at a time), from the running daemon's tables and from exported logs
//! (docs/logging.md, "Answering an abuse request").

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use sixgate_control::api::types::{BibRow, RunningConfig, SessionRow};
use sixgate_core::nat64::{Deterministic, Proto};
use sixgate_natlog::whois::{self, Question};
use sixgate_natlog::{NatRecord, ipfix, netflow9, time};

use super::CmdResult;
use super::socket::SocketArg;

/// `sixgate nat64 …`.
#[derive(Debug, clap::Subcommand)]
pub enum Nat64 {
    /// Who had public address ADDR and port PORT: the subscriber, the inside
    /// address and port, and the time span, from the running daemon's tables
    /// (without --log) or from exported logs (--log: JSON lines, RFC 5424
    /// syslog files, or pcap captures of the IPFIX / NetFlow v9 export). With
    /// RFC 7422 deterministic NAT ([nat64] deterministic) the formula of the
    /// running configuration (or of --config FILE) names the subscriber first.
    Whois(WhoisArgs),
}

/// Arguments of `sixgate nat64 whois`.
#[derive(Debug, clap::Args)]
pub struct WhoisArgs {
    /// The public (pool4) address and port, `ADDR:PORT` (ICMP: the identifier).
    #[arg(value_name = "ADDR:PORT")]
    pub target: String,
    /// Only this protocol: tcp, udp or icmp.
    #[arg(long, value_name = "PROTO")]
    pub protocol: Option<String>,
    /// Only what held it at this time: RFC 3339 (`2026-12-04T05:40:00Z`,
    /// `2026-12-04 06:40:00+01:00`) or Unix seconds.
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// Exported logs to search (repeat for several files).
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,
    #[command(flatten)]
    pub socket: SocketArg,
}

/// Run `sixgate nat64 …`.
pub fn run(c: &Nat64) -> CmdResult {
    match c {
        Nat64::Whois(a) => whois_cmd(a),
    }
}

fn whois_cmd(a: &WhoisArgs) -> CmdResult {
    let q = question(a)?;
    if let Some(d) = formula(a)? {
        match d.owner_of(q.outside, q.port) {
            Some(s) => println!(
                "deterministic  subscriber {}/{}  ports {}-{} of {} (RFC 7422 formula of the \
                 configuration; every protocol, whenever it was in force)",
                s.subscriber,
                d.subscriber_len(),
                s.first_port,
                s.last_port,
                s.address
            ),
            None => println!(
                "deterministic  no subscriber: {}:{} is outside every block of the RFC 7422 \
                 formula ({d})",
                q.outside, q.port
            ),
        }
    }
    if a.logs.is_empty() {
        return live(a, &q);
    }
    let mut records = Vec::new();
    for f in &a.logs {
        read_log(f, &mut records)?;
    }
    let found = whois::answer(&q, &records);
    if found.is_empty() {
        println!(
            "no record of {}:{}{} in {} record(s) of {} file(s)",
            q.outside,
            q.port,
            at_text(&q),
            records.len(),
            a.logs.len()
        );
        return Ok(());
    }
    for h in found {
        println!("{h}");
    }
    Ok(())
}

/// The RFC 7422 formula: of `--config FILE`, else (asking the daemon) of the
/// running configuration; `None` without `[nat64] deterministic`.
fn formula(a: &WhoisArgs) -> Result<Option<Deterministic>, String> {
    let loaded = match (
        &a.socket.config,
        a.socket.socket.is_some() || a.logs.is_empty(),
    ) {
        (Some(file), _) => sixgate_config::load(file).map_err(|e| e.to_string())?,
        (None, true) => {
            let c: RunningConfig = a.socket.client()?.get("/v1/config")?;
            sixgate_config::parse(&c.toml, "running configuration").map_err(|e| e.to_string())?
        }
        (None, false) => return Ok(None),
    };
    let Some(n) = &loaded.config.nat64 else {
        return Ok(None);
    };
    Deterministic::plan(n).map_err(|e| format!("[nat64] deterministic: {e}"))
}

fn at_text(q: &Question) -> String {
    q.at_ms
        .map(|t| format!(" at {}", time::rfc3339_ms_string(t)))
        .unwrap_or_default()
}

fn question(a: &WhoisArgs) -> Result<Question, String> {
    let (outside, port) = match a.target.parse::<SocketAddr>() {
        Ok(SocketAddr::V4(s)) => (*s.ip(), s.port()),
        _ => {
            return Err(format!(
                "sixgate nat64 whois: {:?}: expected a pool4 ADDR:PORT, e.g. 198.51.100.1:61001",
                a.target
            ));
        }
    };
    let proto = match a.protocol.as_deref() {
        None => None,
        Some("tcp") => Some(Proto::Tcp),
        Some("udp") => Some(Proto::Udp),
        Some("icmp") => Some(Proto::Icmp),
        Some(p) => {
            return Err(format!(
                "sixgate nat64 whois: --protocol {p:?}: expected tcp, udp or icmp"
            ));
        }
    };
    let at_ms = match a.at.as_deref() {
        None => None,
        Some(t) => Some(
            time::parse_rfc3339(t)
                .or_else(|| t.parse::<u64>().ok().map(|s| s * 1000))
                .ok_or_else(|| {
                    format!(
                        "sixgate nat64 whois: --at {t:?}: expected RFC 3339 \
                         (2026-12-04T05:40:00Z) or Unix seconds"
                    )
                })?,
        ),
    };
    Ok(Question {
        outside,
        port,
        proto,
        at_ms,
    })
}

/// The running daemon's sessions and BIB entries on the address and port.
fn live(a: &WhoisArgs, q: &Question) -> CmdResult {
    let c = a.socket.client()?;
    let mut filter = format!("?address={}&port={}", q.outside, q.port);
    if let Some(p) = q.proto {
        filter.push_str(&format!("&protocol={}", p.as_str()));
    }
    let mut n = 0;
    let ours = |ipv4: &str, port4: u16| ipv4 == q.outside.to_string() && port4 == q.port;
    c.lines(&format!("/v1/bib{filter}"), |b: BibRow| {
        if ours(&b.ipv4, b.port4) {
            n += 1;
            println!(
                "now  {} BIB entry{}  subscriber {} port {}",
                b.proto,
                if b.is_static { " (static)" } else { "" },
                b.ipv6,
                b.port6
            );
        }
        Ok(())
    })?;
    c.lines(&format!("/v1/sessions{filter}"), |s: SessionRow| {
        if ours(&s.ipv4, s.port4) {
            n += 1;
            println!(
                "now  {} session  subscriber {} port {}  to {}:{}  ({}, expires in {} s)",
                s.proto, s.ipv6, s.port6, s.remote4, s.rport, s.state, s.expires_s
            );
        }
        Ok(())
    })?;
    if n == 0 {
        println!(
            "no mapping of {}:{} in the running tables (for the past, give --log FILE)",
            q.outside, q.port
        );
    }
    Ok(())
}

/// The NAT records of one log file, by its content.
fn read_log(path: &Path, out: &mut Vec<NatRecord>) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let capture = matches!(
        bytes.get(..4),
        Some(
            [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xc3, 0xd4]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x0a, 0x0d, 0x0d, 0x0a]
        )
    );
    if capture {
        return read_capture(path, &bytes, out);
    }
    let text = String::from_utf8_lossy(&bytes);
    for line in text.lines() {
        let r = if line.trim_start().starts_with('{') {
            whois::parse_json_line(line)
        } else {
            whois::parse_syslog_line(line)
        };
        out.extend(r);
    }
    Ok(())
}

/// UDP payloads of a capture (pcap or pcapng) of the export, decoded as
/// IPFIX or NetFlow v9 with templates learnt per exporter.
fn read_capture(path: &Path, bytes: &[u8], out: &mut Vec<NatRecord>) -> Result<(), String> {
    let mut d = Decoders::default();
    let bad = |e: pcap_file::PcapError| format!("{}: {e}", path.display());
    if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        use pcap_file::pcapng::{Block, PcapNgReader};
        let mut r = PcapNgReader::new(bytes).map_err(bad)?;
        let mut links = Vec::new();
        while let Some(Ok(b)) = r.next_block() {
            match b {
                Block::SectionHeader(_) => links.clear(),
                Block::InterfaceDescription(i) => links.push(i.linktype),
                Block::EnhancedPacket(p) => {
                    if let Some(&link) = links.get(p.interface_id as usize) {
                        d.frame(link, &p.data, out);
                    }
                }
                _ => {}
            }
        }
    } else {
        let mut r = pcap_file::pcap::PcapReader::new(bytes).map_err(bad)?;
        let link = r.header().datalink;
        while let Some(Ok(p)) = r.next_packet() {
            d.frame(link, &p.data, out);
        }
    }
    Ok(())
}

/// A NetFlow v9 exporter's templates: (id, fields).
type V9Templates = Vec<(u16, Vec<(u16, u16)>)>;

/// Templates learnt per exporter (source address).
#[derive(Default)]
struct Decoders {
    ipfix: Vec<(IpAddr, ipfix::Decoder)>,
    v9: Vec<(IpAddr, V9Templates)>,
}

impl Decoders {
    fn frame(&mut self, link: pcap_file::DataLink, frame: &[u8], out: &mut Vec<NatRecord>) {
        let Some((src, payload)) = udp_payload(link, frame) else {
            return;
        };
        let (ipfix, v9) = (&mut self.ipfix, &mut self.v9);
        match payload.get(..2) {
            Some([0, 10]) => {
                let d = match ipfix.iter().position(|e| e.0 == src) {
                    Some(i) => &mut ipfix[i].1,
                    None => {
                        ipfix.push((src, ipfix::Decoder::default()));
                        &mut ipfix.last_mut().expect("pushed").1
                    }
                };
                if let Ok(m) = d.message(payload) {
                    out.extend(m.records);
                }
            }
            Some([0, 9]) => {
                let t = match v9.iter().position(|e| e.0 == src) {
                    Some(i) => &mut v9[i].1,
                    None => {
                        v9.push((src, Vec::new()));
                        &mut v9.last_mut().expect("pushed").1
                    }
                };
                if let Ok(recs) = netflow9::decode(payload, t) {
                    out.extend(recs);
                }
            }
            _ => {}
        }
    }
}

/// The source address and UDP payload of a frame (Ethernet, Linux cooked or
/// raw IP).
fn udp_payload(link: pcap_file::DataLink, frame: &[u8]) -> Option<(IpAddr, &[u8])> {
    use pcap_file::DataLink;
    let ip = match link {
        DataLink::ETHERNET => {
            let mut at = 12;
            let mut ty = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
            while ty == 0x8100 || ty == 0x88a8 {
                at += 4;
                ty = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
            }
            frame.get(at + 2..)?
        }
        DataLink::LINUX_SLL => frame.get(16..)?,
        DataLink::LINUX_SLL2 => frame.get(20..)?,
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => frame,
        _ => return None,
    };
    let (src, proto, l4) = match ip.first()? >> 4 {
        4 => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let src = Ipv4Addr::from(<[u8; 4]>::try_from(ip.get(12..16)?).ok()?);
            (IpAddr::V4(src), *ip.get(9)?, ip.get(ihl..)?)
        }
        6 => {
            let src = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(ip.get(8..24)?).ok()?);
            (IpAddr::V6(src), *ip.get(6)?, ip.get(40..)?)
        }
        _ => return None,
    };
    (proto == 17).then_some(())?;
    Some((src, l4.get(8..)?))
}
