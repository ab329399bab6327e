//! `[log]`: keys and errors.

use super::*;
use crate::tests::ok;

const SIIT: &str = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n";

fn with(keys: &str) -> Result<crate::Loaded, ConfigError> {
    crate::parse(&format!("{SIIT}[log]\n{keys}"), "t.toml")
}

#[test]
fn defaults_text_to_stderr_at_info() {
    assert_eq!(ok(SIIT).log, LogSettings::default());
    assert_eq!(with("").unwrap().log, LogSettings::default());
}

#[test]
fn json_to_a_file_and_syslog_socket() {
    let l = with("format = \"json\"\ntarget = \"file\"\nfile = \"/tmp/x.log\"\n").unwrap();
    assert_eq!(l.log.format, LogFormat::Json);
    assert_eq!(l.log.target, LogTarget::File("/tmp/x.log".into()));
    let l = with("target = \"syslog\"\nlevel = \"warn,sixgate::nat64=info\"\n").unwrap();
    assert_eq!(l.log.target, LogTarget::Syslog(DEV_LOG.into()));
    assert_eq!(l.log.level, "warn,sixgate::nat64=info");
}

#[test]
fn bad_values_name_the_key_and_position() {
    let e = with("format = \"xml\"\n").unwrap_err().to_string();
    assert!(e.contains("t.toml:5:10") && e.contains("format"), "{e}");
    let e = with("target = \"file\"\n").unwrap_err().to_string();
    assert!(e.contains("needs file"), "{e}");
    let e = with("file = \"/tmp/x\"\n").unwrap_err().to_string();
    assert!(e.contains("only used with"), "{e}");
    let e = with("target = \"journal\"\n").unwrap_err().to_string();
    assert!(e.contains("unknown target"), "{e}");
    let e = with("level = \"loud\"\n").unwrap_err().to_string();
    assert!(e.contains("`loud` is not a level"), "{e}");
    let e = with("level = \"info,a b=warn\"\n").unwrap_err().to_string();
    assert!(e.contains("not a target name"), "{e}");
}
