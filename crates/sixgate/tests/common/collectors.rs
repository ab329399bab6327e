//! Real log collectors the NAT event log tests start in a namespace
//! (`log_export.rs`, `ha.rs`; docs/logging.md), and what they wrote, read
//! back as sessions.

use std::path::Path;
use std::time::Duration;

use sixgate_netns::{Background, Netns, Proto, ScratchDir};

/// rsyslogd's port, UDP and TCP.
pub const SYSLOG_PORT: u16 = 514;

/// One session as a collector logged it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Logged {
    pub created: bool,
    pub proto: String,
    pub v6: String,
    pub port6: u16,
    pub v4: String,
    pub port4: u16,
    pub unix_ms: u64,
}

/// rsyslogd in `ns`: RFC 5424 on UDP and TCP port 514, each input to its own
/// file, the message as received.
pub fn rsyslogd(ns: &Netns, dir: &ScratchDir) -> Background {
    let d = dir.path().display();
    let conf = format!(
        "global(workDirectory=\"{d}\")\n\
         module(load=\"imudp\")\n\
         module(load=\"imtcp\")\n\
         template(name=\"raw\" type=\"string\" string=\"%rawmsg%\\n\")\n\
         ruleset(name=\"udp\") {{ action(type=\"omfile\" file=\"{d}/udp.log\" template=\"raw\") }}\n\
         ruleset(name=\"tcp\") {{ action(type=\"omfile\" file=\"{d}/tcp.log\" template=\"raw\") }}\n\
         input(type=\"imudp\" port=\"{SYSLOG_PORT}\" ruleset=\"udp\")\n\
         input(type=\"imtcp\" port=\"{SYSLOG_PORT}\" ruleset=\"tcp\")\n"
    );
    let path = dir.write("rsyslog.conf", conf).unwrap();
    let pid = dir.path().join("rsyslogd.pid");
    let bg = ns
        .spawn(
            "rsyslogd",
            [
                "-n",
                "-f",
                path.to_str().unwrap(),
                "-i",
                pid.to_str().unwrap(),
            ],
        )
        .unwrap_or_else(|e| panic!("rsyslogd: {e}"));
    ns.wait_listening(Proto::Tcp, SYSLOG_PORT, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("rsyslogd: {e}"));
    bg
}

/// The SADD / SDEL lines of an rsyslog file (`RAW`), by their structured data.
pub fn syslog(path: &Path) -> Vec<Logged> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let created = l.contains(" SADD [");
            if !created && !l.contains(" SDEL [") {
                return None;
            }
            let p = |k: &str| {
                let at = l.find(&format!(" {k}=\"")).unwrap() + k.len() + 3;
                l[at..].split('"').next().unwrap().to_owned()
            };
            let ts = l.split(' ').nth(1).unwrap();
            Some(Logged {
                created,
                proto: p("proto"),
                v6: p("isaddr"),
                port6: p("isport").parse().unwrap(),
                v4: p("xsaddr"),
                port4: p("xsport").parse().unwrap(),
                unix_ms: sixgate_natlog::time::parse_rfc3339(ts).unwrap(),
            })
        })
        .collect()
}
