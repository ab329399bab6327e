//! `[log_export]`: where the NAT64 event log (RFC 6888 REQ-12, `[nat64]
//! event_log`) goes: IPFIX (RFC 7011 / RFC 8158), NetFlow v9 or syslog
//! (RFC 5424) collectors over UDP or TCP, and a JSON-lines file; what a full
//! event ring does; interim records of held port blocks. docs/logging.md.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use toml::Spanned;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::{CollectorEntry, LogExportSection};
use crate::value::{int_in, quoted_list};

/// A collector's wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportProtocol {
    /// IPFIX with the RFC 8158 information elements.
    Ipfix,
    /// NetFlow v9 with the NEL / draft numbering.
    NetFlow9,
    /// RFC 5424 syslog.
    Syslog,
}

impl ExportProtocol {
    /// The name in the file.
    pub const fn as_str(self) -> &'static str {
        match self {
            ExportProtocol::Ipfix => "ipfix",
            ExportProtocol::NetFlow9 => "netflow9",
            ExportProtocol::Syslog => "syslog",
        }
    }

    /// The port an address without one gets.
    pub const fn default_port(self) -> u16 {
        match self {
            ExportProtocol::Ipfix => 4739,
            ExportProtocol::NetFlow9 => 2055,
            ExportProtocol::Syslog => 514,
        }
    }
}

/// UDP or TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One message a datagram, nothing resent.
    Udp,
    /// A connection, re-made with backoff when it drops.
    Tcp,
}

/// What a worker does with an event its ring has no room for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Lose it and count it (`sixgate_nat64_events_lost_total`).
    #[default]
    Drop,
    /// Refuse the new session that would need it (`event_log_full`).
    Refuse,
}

/// One `[[log_export.collector]]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collector {
    /// Wire format.
    pub protocol: ExportProtocol,
    /// UDP or TCP.
    pub transport: Transport,
    /// Where to.
    pub address: SocketAddr,
    /// UDP: the largest datagram, IP and UDP headers included.
    pub mtu: u16,
    /// IPFIX / NetFlow v9 over UDP: seconds between template resends.
    pub template_refresh: u32,
}

impl Collector {
    /// The largest message: the MTU less the IP and UDP headers (TCP: a
    /// full IPFIX message).
    pub fn max_message(&self) -> usize {
        match self.transport {
            Transport::Tcp => usize::from(u16::MAX),
            Transport::Udp => {
                let ip = if self.address.is_ipv4() { 20 } else { 40 };
                usize::from(self.mtu) - ip - 8
            }
        }
    }
}

/// Default `mtu`.
pub const DEFAULT_MTU: u16 = 1500;

/// Default `template_refresh` (RFC 7011 §8.4 leaves it to the exporter; 60 s
/// lets a restarted collector decode again within a minute).
pub const DEFAULT_TEMPLATE_REFRESH: u32 = 60;

/// `[log_export]`, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogExportSettings {
    /// The collectors.
    pub collectors: Vec<Collector>,
    /// JSON lines appended here.
    pub file: Option<PathBuf>,
    /// A full event ring: drop or refuse.
    pub on_overflow: Overflow,
    /// Seconds between interim records of held port blocks; 0: none.
    pub interim: u32,
    /// IPFIX observation domain / NetFlow v9 source id; `None`: `[sync]
    /// node_id`, else 1.
    pub observation_domain: Option<u32>,
    /// Syslog HOSTNAME; `None`: the system's host name.
    pub hostname: Option<String>,
}

pub(crate) fn section(
    cx: &Cx<'_>,
    s: LogExportSection,
    span: std::ops::Range<usize>,
    event_log_on: Option<bool>,
) -> Result<LogExportSettings, ConfigError> {
    match event_log_on {
        None => {
            return Err(cx.err(
                span,
                "[log_export] exports the stateful NAT64's event log; expected mode = \"nat64\" \
                 in [translator]",
            ));
        }
        Some(false) => {
            return Err(cx.err(
                span,
                "[log_export] has nothing to export: [nat64] event_log is \"off\"; expected \
                 event_log = \"sessions\", \"bib\" or \"all\" in [nat64]",
            ));
        }
        Some(true) => {}
    }
    let mut out = LogExportSettings::default();
    for c in s.collector.iter().flatten() {
        if let Some(c) = cx.keep(collector(cx, c.get_ref())) {
            out.collectors.push(c);
        }
    }
    if let Some(f) = &s.file {
        cx.check(|| {
            if f.get_ref().is_empty() {
                return Err(cx.bad("file", f, "empty", "a path"));
            }
            out.file = Some(f.get_ref().into());
            Ok(())
        });
    }
    if out.collectors.is_empty() && out.file.is_none() && !cx.failed() {
        return Err(cx.err(
            span,
            "[log_export] has no collector and no file; expected [[log_export.collector]] \
             tables or file = PATH (without [log_export] the events go to [log])",
        ));
    }
    if let Some(v) = &s.on_overflow {
        cx.check(|| {
            out.on_overflow = match v.get_ref().as_str() {
                "drop" => Overflow::Drop,
                "refuse" => Overflow::Refuse,
                _ => {
                    return Err(cx.bad(
                        "on_overflow",
                        v,
                        "unknown choice",
                        quoted_list(&["drop", "refuse"]),
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(v) = &s.interim {
        cx.check(|| {
            out.interim = int_in(cx, "interim", v, 0, 86_400)? as u32;
            Ok(())
        });
    }
    if let Some(v) = &s.observation_domain {
        cx.check(|| {
            out.observation_domain =
                Some(int_in(cx, "observation_domain", v, 0, i64::from(u32::MAX))? as u32);
            Ok(())
        });
    }
    if let Some(v) = &s.hostname {
        cx.check(|| {
            let h = v.get_ref();
            if h.is_empty() || h.len() > 255 || !h.chars().all(|c| c.is_ascii_graphic()) {
                return Err(cx.bad(
                    "hostname",
                    v,
                    "not an RFC 5424 HOSTNAME",
                    "1 to 255 printable ASCII characters, no space",
                ));
            }
            out.hostname = Some(h.clone());
            Ok(())
        });
    }
    Ok(out)
}

fn collector(cx: &Cx<'_>, c: &CollectorEntry) -> Result<Collector, ConfigError> {
    let protocol = match c.protocol.get_ref().as_str() {
        "ipfix" => ExportProtocol::Ipfix,
        "netflow9" => ExportProtocol::NetFlow9,
        "syslog" => ExportProtocol::Syslog,
        _ => {
            return Err(cx.bad(
                "collector.protocol",
                &c.protocol,
                "unknown protocol",
                quoted_list(&["ipfix", "netflow9", "syslog"]),
            ));
        }
    };
    let transport = match c.transport.as_ref().map(|t| (t, t.get_ref().as_str())) {
        None | Some((_, "udp")) => Transport::Udp,
        Some((t, "tcp")) => {
            if protocol == ExportProtocol::NetFlow9 {
                return Err(cx.bad(
                    "collector.transport",
                    t,
                    "NetFlow v9 collectors listen on UDP",
                    "\"udp\", or protocol = \"ipfix\" over TCP",
                ));
            }
            Transport::Tcp
        }
        Some((t, _)) => {
            return Err(cx.bad(
                "collector.transport",
                t,
                "unknown transport",
                quoted_list(&["udp", "tcp"]),
            ));
        }
    };
    let address = address(cx, &c.address, protocol.default_port())?;
    let mtu = match &c.mtu {
        None => DEFAULT_MTU,
        Some(v) => {
            if transport == Transport::Tcp {
                return Err(cx.bad("collector.mtu", v, "only for UDP", "no mtu with TCP"));
            }
            int_in(cx, "collector.mtu", v, 576, 65_535)? as u16
        }
    };
    let template_refresh = match &c.template_refresh {
        None => DEFAULT_TEMPLATE_REFRESH,
        Some(v) => {
            if transport == Transport::Tcp || protocol == ExportProtocol::Syslog {
                return Err(cx.bad(
                    "collector.template_refresh",
                    v,
                    "only for IPFIX or NetFlow v9 over UDP (TCP sends the templates once per \
                     connection, syslog has none)",
                    "no template_refresh here",
                ));
            }
            int_in(cx, "collector.template_refresh", v, 1, 86_400)? as u32
        }
    };
    Ok(Collector {
        protocol,
        transport,
        address,
        mtu,
        template_refresh,
    })
}

/// `ADDR:PORT`, `[V6]:PORT`, or a bare address with the protocol's port.
fn address(cx: &Cx<'_>, v: &Spanned<String>, port: u16) -> Result<SocketAddr, ConfigError> {
    let s = v.get_ref();
    let a = s
        .parse::<SocketAddr>()
        .ok()
        .or_else(|| s.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, port)))
        .ok_or_else(|| {
            cx.bad(
                "collector.address",
                v,
                "not an address",
                format!("\"ADDR:PORT\", \"[V6]:PORT\" or an address alone (port {port})"),
            )
        })?;
    if a.ip().is_unspecified() || a.port() == 0 {
        return Err(cx.bad(
            "collector.address",
            v,
            "unspecified address or port 0",
            "the collector's address and port",
        ));
    }
    Ok(a)
}

#[cfg(test)]
mod tests;
