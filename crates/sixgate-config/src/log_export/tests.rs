//! `[log_export]`: keys, defaults and errors.

use super::*;
use crate::tests::{err_at, ok};

const NAT64: &str = "[translator]\nmode = \"nat64\"\npool6 = \"64:ff9b::/96\"\n\
                     [nat64]\npool4 = [\"198.51.100.0/30\"]\nevent_log = \"all\"\n";

#[test]
fn collectors_with_their_defaults() {
    let l = ok(&format!(
        "{NAT64}[log_export]\n\
         [[log_export.collector]]\nprotocol = \"ipfix\"\naddress = \"192.0.2.10\"\n\
         [[log_export.collector]]\nprotocol = \"syslog\"\ntransport = \"tcp\"\naddress = \"[2001:db8::9]:6514\"\n\
         [[log_export.collector]]\nprotocol = \"netflow9\"\naddress = \"192.0.2.10:9995\"\nmtu = 9000\ntemplate_refresh = 5\n"
    ));
    let le = l.log_export.unwrap();
    assert_eq!(le.on_overflow, Overflow::Drop);
    assert_eq!(le.interim, 0);
    let [ipfix, syslog, v9] = le.collectors.as_slice() else {
        panic!("{:?}", le.collectors)
    };
    assert_eq!(
        (
            ipfix.transport,
            ipfix.address,
            ipfix.mtu,
            ipfix.template_refresh
        ),
        (Transport::Udp, "192.0.2.10:4739".parse().unwrap(), 1500, 60)
    );
    assert_eq!(ipfix.max_message(), 1472);
    assert_eq!(syslog.transport, Transport::Tcp);
    assert_eq!(syslog.address, "[2001:db8::9]:6514".parse().unwrap());
    assert_eq!((v9.mtu, v9.template_refresh), (9000, 5));
    assert!(!l.config.nat64.unwrap().refuse_unlogged);
}

#[test]
fn refuse_reaches_the_core_and_the_other_keys_load() {
    let l = ok(&format!(
        "{NAT64}[log_export]\nfile = \"/var/log/sixgate/nat.json\"\non_overflow = \"refuse\"\n\
         interim = 300\nobservation_domain = 7\nhostname = \"gw1\"\n"
    ));
    assert!(l.config.nat64.unwrap().refuse_unlogged);
    let le = l.log_export.unwrap();
    assert_eq!(le.file.unwrap().to_str(), Some("/var/log/sixgate/nat.json"));
    assert_eq!(
        (le.interim, le.observation_domain, le.hostname.as_deref()),
        (300, Some(7), Some("gw1"))
    );
}

#[test]
fn every_bad_value_is_named_in_one_run() {
    let text = format!(
        "{NAT64}[log_export]\non_overflow = \"block\"\ninterim = -1\n\
         [[log_export.collector]]\nprotocol = \"netflow5\"\naddress = \"192.0.2.1\"\n\
         [[log_export.collector]]\nprotocol = \"ipfix\"\naddress = \"nowhere\"\n\
         [[log_export.collector]]\nprotocol = \"netflow9\"\ntransport = \"tcp\"\naddress = \"192.0.2.1\"\n"
    );
    let errors = crate::check(&text, "t.toml").unwrap_err();
    let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
    for part in [
        "collector.protocol = \"netflow5\": unknown protocol",
        "collector.address = \"nowhere\": not an address",
        "NetFlow v9 collectors listen on UDP",
        "on_overflow = \"block\"",
        "interim = -1: out of range",
    ] {
        assert!(
            all.iter().any(|e| e.contains(part)),
            "{part} not in {all:#?}"
        );
    }
}

#[test]
fn needs_a_nat64_with_an_event_log_and_somewhere_to_send() {
    err_at(
        "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n[log_export]\nfile = \"x\"\n",
        4,
        1,
        &["expected mode = \"nat64\""],
    );
    err_at(
        "[translator]\nmode = \"nat64\"\npool6 = \"64:ff9b::/96\"\n[nat64]\n[log_export]\nfile = \"x\"\n",
        5,
        1,
        &["event_log is \"off\""],
    );
    err_at(
        &format!("{NAT64}[log_export]\n"),
        7,
        1,
        &["no collector and no file"],
    );
    err_at(
        &format!(
            "{NAT64}[log_export]\n[[log_export.collector]]\nprotocol = \"ipfix\"\n\
             transport = \"tcp\"\naddress = \"192.0.2.1\"\nmtu = 1500\n"
        ),
        12,
        7,
        &["collector.mtu", "only for UDP"],
    );
    err_at(
        &format!(
            "{NAT64}[log_export]\n[[log_export.collector]]\nprotocol = \"syslog\"\n\
             address = \"192.0.2.1\"\ntemplate_refresh = 5\n"
        ),
        11,
        20,
        &["template_refresh", "syslog has none"],
    );
    err_at(
        &format!("{NAT64}[log_export]\nfile = \"x\"\nhostname = \"gw 1\"\n"),
        9,
        12,
        &["not an RFC 5424 HOSTNAME"],
    );
}
