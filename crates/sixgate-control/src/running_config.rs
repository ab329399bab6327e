//! The running configuration (the thesis's running-config): the file's TOML
//! table with every runtime change applied to it. Each change edits the table
//! and validates the result with the same code as `sixgate config check`, so
//! what the daemon runs, what `show config --running` prints and what
//! `config save` writes are one thing, and restarting from the saved file
//! reproduces the running state.

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_config::Loaded;
use toml::{Table, Value};

use crate::api::types::{EamRow, Pool4Row, StaticBibRow};

/// The sections in the order docs/config.md describes them (a test keeps the
/// two in step); rendered in this order.
pub const SECTION_ORDER: &[&str] = &[
    "translator",
    "nat64",
    "daemon",
    "tun",
    "xdp",
    "clat",
    "mapt",
    "dns64",
    "pref64",
    "metrics",
    "log",
    "log_export",
    "sync",
];

/// Where errors in the edited table are said to be.
const ORIGIN: &str = "running configuration";

/// Why a change was not made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejected {
    /// A request field is malformed (HTTP 400); the message names it.
    BadField(String),
    /// The result would not be a valid configuration, or cannot run (409).
    Conflict(String),
    /// Nothing to remove (404).
    NotFound(String),
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::BadField(m) | Rejected::Conflict(m) | Rejected::NotFound(m) => f.write_str(m),
        }
    }
}

/// The running configuration.
#[derive(Clone, Debug)]
pub struct Running {
    table: Table,
    /// The table as last read from the file: what runtime changes changed.
    base: Table,
    /// The table, validated.
    pub loaded: Loaded,
}

impl Running {
    /// From a file's text; `origin` names it in errors (FILE:LINE:COL).
    pub fn parse(text: &str, origin: &str) -> Result<Running, String> {
        let loaded = sixgate_config::parse(text, origin).map_err(|e| e.to_string())?;
        let table: Table = text.parse().map_err(|e| format!("{origin}: {e}"))?;
        Ok(Running {
            base: table.clone(),
            table,
            loaded,
        })
    }

    /// As TOML text: a file that reproduces this state, its sections in the
    /// order docs/config.md describes them ([`SECTION_ORDER`]), not the table's
    /// alphabetical one, so `[translator]` leads as in every sample.
    pub fn render(&self) -> String {
        let mut s = String::from("# sixgate running configuration (sixgate config save)\n");
        let rank = |k: &str| {
            SECTION_ORDER
                .iter()
                .position(|o| *o == k)
                .unwrap_or(usize::MAX)
        };
        let mut keys: Vec<&String> = self.table.keys().collect();
        keys.sort_by_key(|k| rank(k));
        let mut first = true;
        for k in keys {
            let mut one = Table::new();
            one.insert(k.clone(), self.table[k.as_str()].clone());
            if !first {
                s.push('\n');
            }
            first = false;
            s.push_str(&toml::to_string(&one).unwrap_or_default());
        }
        s
    }

    /// A copy with `edit` applied to the table, validated.
    fn edited(
        &self,
        edit: impl FnOnce(&mut Table) -> Result<(), Rejected>,
    ) -> Result<Running, Rejected> {
        let mut table = self.table.clone();
        edit(&mut table)?;
        let text = toml::to_string(&table).map_err(|e| Rejected::Conflict(e.to_string()))?;
        let loaded = sixgate_config::parse(&text, ORIGIN)
            .map_err(|e| Rejected::Conflict(e.message().to_owned()))?;
        Ok(Running {
            table,
            loaded,
            base: self.base.clone(),
        })
    }

    /// The runtime changes (`pool4 add`, `eam remove`, …) that running
    /// `next` (a reloaded file) undoes: those made since the file was last
    /// read that `next` does not make too, as the commands that made them.
    pub fn undone_by(&self, next: &Running) -> Vec<String> {
        let list = |t: &Table, section: &str, key: &str| -> Vec<Value> {
            t.get(section)
                .and_then(|s| s.get(key))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let show = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Table(t) => t
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), str::to_owned)))
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        };
        let mut out = Vec::new();
        for (section, key, what) in [
            ("translator", "eam", "eam"),
            ("nat64", "pool4", "pool4"),
            ("nat64", "static_bib", "bib"),
        ] {
            let (base, cur, new) = (
                list(&self.base, section, key),
                list(&self.table, section, key),
                list(&next.table, section, key),
            );
            for v in cur.iter().filter(|v| !base.contains(v) && !new.contains(v)) {
                out.push(format!("{what} add {}", show(v)));
            }
            for v in base.iter().filter(|v| !cur.contains(v) && new.contains(v)) {
                out.push(format!("{what} remove {}", show(v)));
            }
        }
        out
    }

    /// RFC 7757 §3: one more EAM entry.
    pub fn eam_add(&self, row: &EamRow) -> Result<Running, Rejected> {
        let key = eam_key(row)?;
        self.edited(|t| {
            let list = array(t, "translator", "eam")?;
            if list.iter().any(|v| eam_of(v) == Some(key)) {
                return Err(Rejected::Conflict(format!(
                    "EAM entry {} ↔ {} is already there",
                    row.ipv4, row.ipv6
                )));
            }
            list.push(Value::Table(entry(&[
                ("ipv4", &row.ipv4),
                ("ipv6", &row.ipv6),
            ])));
            Ok(())
        })
    }

    /// RFC 7757 §3: take an EAM entry out.
    pub fn eam_remove(&self, row: &EamRow) -> Result<Running, Rejected> {
        let key = eam_key(row)?;
        self.edited(|t| {
            let list = array(t, "translator", "eam")?;
            let n = list.len();
            list.retain(|v| eam_of(v) != Some(key));
            if list.len() == n {
                return Err(Rejected::NotFound(format!(
                    "no EAM entry {} ↔ {}",
                    row.ipv4, row.ipv6
                )));
            }
            Ok(())
        })
    }

    /// Refuse a NAT64 change (`what`) on a daemon of another mode, in terms of
    /// the daemon: the user edited no file, so the file check's words would mislead.
    fn needs_nat64(&self, what: &str) -> Result<(), Rejected> {
        match self.loaded.mode {
            sixgate_config::Mode::Nat64 => Ok(()),
            m => Err(Rejected::Conflict(format!(
                "{what}: the daemon runs mode {m}, which has no {what}; it belongs to \
                 stateful NAT64 (mode nat64, RFC 6146), and a mode changes only with a restart"
            ))),
        }
    }

    /// RFC 6146 §2: one more pool4 prefix.
    pub fn pool4_add(&self, row: &Pool4Row) -> Result<Running, Rejected> {
        self.needs_nat64("pool4")?;
        let key = v4_prefix("prefix", &row.prefix)?;
        self.edited(|t| {
            let list = array(t, "nat64", "pool4")?;
            if list.iter().any(|v| pool4_of(v) == Some(key)) {
                return Err(Rejected::Conflict(format!(
                    "pool4 {} is already there",
                    row.prefix
                )));
            }
            let mut e = vec![("prefix", row.prefix.as_str())];
            for (k, v) in [("tcp", &row.tcp), ("udp", &row.udp), ("icmp", &row.icmp)] {
                if let Some(v) = v {
                    e.push((k, v.as_str()));
                }
            }
            list.push(if e.len() == 1 {
                Value::String(row.prefix.clone())
            } else {
                Value::Table(entry(&e))
            });
            Ok(())
        })
    }

    /// RFC 6146 §2: take a pool4 prefix out (its sessions drain).
    pub fn pool4_remove(&self, row: &Pool4Row) -> Result<Running, Rejected> {
        self.needs_nat64("pool4")?;
        let key = v4_prefix("prefix", &row.prefix)?;
        self.edited(|t| {
            let list = array(t, "nat64", "pool4")?;
            let n = list.len();
            list.retain(|v| pool4_of(v) != Some(key));
            if list.len() == n {
                return Err(Rejected::NotFound(format!("no pool4 entry {}", row.prefix)));
            }
            Ok(())
        })
    }

    /// RFC 6146 §3.1: one more static BIB entry.
    pub fn bib_add(&self, row: &StaticBibRow) -> Result<Running, Rejected> {
        self.needs_nat64("static BIB")?;
        let key = bib_key(row)?;
        let ipv6 = row
            .ipv6
            .as_deref()
            .ok_or_else(|| Rejected::BadField("ipv6: missing (the IPv6 server)".into()))?;
        ipv6.parse::<Ipv6Addr>()
            .map_err(|_| Rejected::BadField(format!("ipv6: {ipv6:?} is not an IPv6 address")))?;
        let port6 = row
            .port6
            .ok_or_else(|| Rejected::BadField("port6: missing (the server's port)".into()))?;
        self.edited(|t| {
            let list = array(t, "nat64", "static_bib")?;
            if list.iter().any(|v| bib_of(v).as_ref() == Some(&key)) {
                return Err(Rejected::Conflict(format!(
                    "a static BIB entry for {} {}:{} is already there",
                    row.proto, row.ipv4, row.port4
                )));
            }
            let mut e = entry(&[("proto", &row.proto), ("ipv6", ipv6), ("ipv4", &row.ipv4)]);
            e.insert("port6".into(), Value::Integer(i64::from(port6)));
            e.insert("port4".into(), Value::Integer(i64::from(row.port4)));
            list.push(Value::Table(e));
            Ok(())
        })
    }

    /// RFC 6146 §3.1: take a static BIB entry out (by proto, ipv4, port4).
    pub fn bib_remove(&self, row: &StaticBibRow) -> Result<Running, Rejected> {
        self.needs_nat64("static BIB")?;
        let key = bib_key(row)?;
        self.edited(|t| {
            let list = array(t, "nat64", "static_bib")?;
            let n = list.len();
            list.retain(|v| bib_of(v).as_ref() != Some(&key));
            if list.len() == n {
                return Err(Rejected::NotFound(format!(
                    "no static BIB entry for {} {}:{}",
                    row.proto, row.ipv4, row.port4
                )));
            }
            Ok(())
        })
    }
}

/// What a reload may not change: these are set up once, at start.
pub fn check_reload(old: &Loaded, new: &Loaded) -> Result<(), String> {
    let refuse = |key: &str| {
        Err(format!(
            "{key} cannot change while the daemon runs (restart it)"
        ))
    };
    if old.mode != new.mode {
        return refuse("[translator] mode");
    }
    if old.daemon.workers != new.daemon.workers {
        return refuse("[daemon] workers");
    }
    if old.daemon.user != new.daemon.user {
        return refuse("[daemon] user");
    }
    if old.daemon.socket != new.daemon.socket {
        return refuse("[daemon] socket");
    }
    // Read at start, written at stop (docs/restart.md).
    if old.daemon.state_file != new.daemon.state_file {
        return refuse("[daemon] state_file");
    }
    // Used at stop, by what the start set up (docs/restart.md).
    if old.daemon.fastpath_handover != new.daemon.fastpath_handover {
        return refuse("[daemon] fastpath_handover");
    }
    if old.daemon.fastpath_pin_dir != new.daemon.fastpath_pin_dir {
        return refuse("[daemon] fastpath_pin_dir");
    }
    if old.daemon.dataplane != new.daemon.dataplane {
        return refuse("[daemon] dataplane");
    }
    if old.tun != new.tun {
        return refuse("[tun]");
    }
    if old.xdp != new.xdp {
        return refuse("[xdp]");
    }
    if old.clat != new.clat {
        return refuse("[clat]");
    }
    if let (Some(o), Some(n)) = (&old.dns64, &new.dns64)
        && o != n
        && o.prefixes != n.prefixes
        && old.config.map.pool6 != new.config.map.pool6
    {
        // Only DNS64's prefix moved, with pool6: name the key that changed.
        let mut same = n.clone();
        same.prefixes = o.prefixes.clone();
        if same == *o {
            return refuse(
                "[translator] pool6 (which [dns64] prefixes = \"pool6\" synthesizes with)",
            );
        }
    }
    if old.dns64 != new.dns64 {
        return refuse("[dns64]");
    }
    if old.pref64 != new.pref64 {
        return refuse("[pref64]");
    }
    Ok(())
}

/// `[section] key`, an array (created empty if missing).
fn array<'t>(t: &'t mut Table, section: &str, key: &str) -> Result<&'t mut Vec<Value>, Rejected> {
    let sec = t
        .entry(section)
        .or_insert_with(|| Value::Table(Table::new()));
    let Value::Table(sec) = sec else {
        return Err(Rejected::Conflict(format!("[{section}] is not a table")));
    };
    match sec.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(a) => Ok(a),
        _ => Err(Rejected::Conflict(format!(
            "[{section}] {key} is not a list"
        ))),
    }
}

fn entry(kv: &[(&str, &str)]) -> Table {
    kv.iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
        .collect()
}

/// `ADDR[/LEN]`, an IPv4 prefix; the error names `field`.
pub fn v4_prefix(field: &str, s: &str) -> Result<(Ipv4Addr, u8), Rejected> {
    let bad = || Rejected::BadField(format!("{field}: {s:?} is not an IPv4 prefix (ADDR[/LEN])"));
    let (a, len) = s.split_once('/').unwrap_or((s, "32"));
    let a: Ipv4Addr = a.parse().map_err(|_| bad())?;
    let len: u8 = len.parse().map_err(|_| bad())?;
    if len > 32 {
        return Err(bad());
    }
    Ok((a, len))
}

/// `ADDR[/LEN]`, an IPv6 prefix; the error names `field`.
pub fn v6_prefix(field: &str, s: &str) -> Result<(Ipv6Addr, u8), Rejected> {
    let bad = || Rejected::BadField(format!("{field}: {s:?} is not an IPv6 prefix (ADDR[/LEN])"));
    let (a, len) = s.split_once('/').unwrap_or((s, "128"));
    let a: Ipv6Addr = a.parse().map_err(|_| bad())?;
    let len: u8 = len.parse().map_err(|_| bad())?;
    if len > 128 {
        return Err(bad());
    }
    Ok((a, len))
}

type EamKey = ((Ipv4Addr, u8), (Ipv6Addr, u8));

fn eam_key(row: &EamRow) -> Result<EamKey, Rejected> {
    Ok((v4_prefix("ipv4", &row.ipv4)?, v6_prefix("ipv6", &row.ipv6)?))
}

fn eam_of(v: &Value) -> Option<EamKey> {
    let t = v.as_table()?;
    let (a, b) = (t.get("ipv4")?.as_str()?, t.get("ipv6")?.as_str()?);
    Some((v4_prefix("", a).ok()?, v6_prefix("", b).ok()?))
}

fn pool4_of(v: &Value) -> Option<(Ipv4Addr, u8)> {
    let s = match v {
        Value::String(s) => s.as_str(),
        Value::Table(t) => t.get("prefix")?.as_str()?,
        _ => return None,
    };
    v4_prefix("", s).ok()
}

type BibKey = (String, Ipv4Addr, u16);

fn bib_key(row: &StaticBibRow) -> Result<BibKey, Rejected> {
    if !matches!(row.proto.as_str(), "tcp" | "udp" | "icmp") {
        return Err(Rejected::BadField(format!(
            "proto: {:?} is not one of \"tcp\", \"udp\", \"icmp\"",
            row.proto
        )));
    }
    let a = row
        .ipv4
        .parse()
        .map_err(|_| Rejected::BadField(format!("ipv4: {:?} is not an IPv4 address", row.ipv4)))?;
    Ok((row.proto.clone(), a, row.port4))
}

fn bib_of(v: &Value) -> Option<BibKey> {
    let t = v.as_table()?;
    Some((
        t.get("proto")?.as_str()?.to_owned(),
        t.get("ipv4")?.as_str()?.parse().ok()?,
        u16::try_from(t.get("port4")?.as_integer()?).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIIT: &str = "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n\
                        eam = [{ ipv4 = \"198.18.0.0/24\", ipv6 = \"2001:db8:1::/120\" }]\n";
    const NAT64: &str = "[translator]\nmode = \"nat64\"\npool6 = \"64:ff9b::/96\"\n\
                         [nat64]\npool4 = [\"192.0.2.1\"]\n";

    fn eam(a: &str, b: &str) -> EamRow {
        EamRow {
            ipv4: a.into(),
            ipv6: b.into(),
        }
    }

    #[test]
    fn rfc7757_eam_add_and_remove_round_trip_through_the_rendered_file() {
        let r = Running::parse(SIIT, "t.toml").unwrap();
        let r2 = r
            .eam_add(&eam("198.18.1.0/24", "2001:db8:2::/120"))
            .unwrap();
        assert_eq!(r2.loaded.config.map.eam.len(), 2);
        // Restarting from the rendered text gives the same state and text.
        let again = Running::parse(&r2.render(), "saved.toml").unwrap();
        assert_eq!(again.render(), r2.render());
        assert_eq!(
            again.loaded.config.map.eam.entries(),
            r2.loaded.config.map.eam.entries()
        );
        let r3 = r2
            .eam_remove(&eam("198.18.1.0/24", "2001:db8:2::/120"))
            .unwrap();
        assert_eq!(r3.loaded.config.map.eam.len(), 1);
    }

    #[test]
    fn rfc7757_eam_errors_name_the_field_or_the_conflict() {
        let r = Running::parse(SIIT, "t.toml").unwrap();
        let e = r
            .eam_add(&eam("198.18.1.300/24", "2001:db8:2::/120"))
            .unwrap_err();
        assert!(
            matches!(&e, Rejected::BadField(m) if m.starts_with("ipv4:")),
            "{e:?}"
        );
        let e = r
            .eam_add(&eam("198.18.0.0/24", "2001:db8:9::/120"))
            .unwrap_err();
        assert!(matches!(e, Rejected::Conflict(_)), "{e:?}");
        let e = r
            .eam_remove(&eam("10.0.0.0/24", "2001:db8:9::/120"))
            .unwrap_err();
        assert!(matches!(e, Rejected::NotFound(_)), "{e:?}");
    }

    #[test]
    fn rfc6146_pool4_and_static_bib_changes() {
        let r = Running::parse(NAT64, "t.toml").unwrap();
        let add = Pool4Row {
            prefix: "192.0.2.2".into(),
            tcp: Some("2000-3000".into()),
            ..Pool4Row::default()
        };
        let r = r.pool4_add(&add).unwrap();
        let n = r.loaded.config.nat64.as_ref().unwrap();
        assert_eq!(n.pool4.len(), 2);
        assert_eq!((n.pool4[1].tcp.first, n.pool4[1].tcp.last), (2000, 3000));
        let bib = StaticBibRow {
            proto: "tcp".into(),
            ipv6: Some("2001:db8:1::80".into()),
            port6: Some(80),
            ipv4: "192.0.2.1".into(),
            port4: 61080,
        };
        let r = r.bib_add(&bib).unwrap();
        assert_eq!(r.loaded.config.nat64.as_ref().unwrap().static_bib.len(), 1);
        let again = Running::parse(&r.render(), "saved.toml").unwrap();
        assert_eq!(again.render(), r.render());
        let r = r
            .bib_remove(&StaticBibRow {
                ipv6: None,
                port6: None,
                ..bib.clone()
            })
            .unwrap();
        assert!(
            r.loaded
                .config
                .nat64
                .as_ref()
                .unwrap()
                .static_bib
                .is_empty()
        );
        let r = r.pool4_remove(&add).unwrap();
        assert_eq!(r.loaded.config.nat64.as_ref().unwrap().pool4.len(), 1);
        let e = r
            .bib_add(&StaticBibRow {
                proto: "sctp".into(),
                ..bib
            })
            .unwrap_err();
        assert!(
            matches!(&e, Rejected::BadField(m) if m.starts_with("proto:")),
            "{e:?}"
        );
    }

    /// Issue 20: pool4 and BIB changes on a SIIT daemon say what the daemon
    /// runs, not what "this file" has (no file was edited).
    #[test]
    fn nat64_changes_on_another_mode_name_the_daemons_mode() {
        let r = Running::parse(SIIT, "t.toml").unwrap();
        let e = r
            .pool4_add(&Pool4Row {
                prefix: "192.0.2.8/30".into(),
                ..Pool4Row::default()
            })
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("pool4: the daemon runs mode siit"), "{e}");
        assert!(!e.contains("file"), "{e}");
        let e = r
            .bib_remove(&StaticBibRow {
                proto: "tcp".into(),
                ipv6: None,
                port6: None,
                ipv4: "192.0.2.1".into(),
                port4: 80,
            })
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("static BIB: the daemon runs mode siit"),
            "{e}"
        );
    }

    /// Issue 20: `pool4 add ADDR` hands out what its help says, Jool's
    /// 61001-65535, the same as a `pool4` entry in the file without ranges.
    #[test]
    fn pool4_add_without_ports_gets_the_default_range() {
        let r = Running::parse(NAT64, "t.toml").unwrap();
        let r = r
            .pool4_add(&Pool4Row {
                prefix: "192.0.2.8/30".into(),
                ..Pool4Row::default()
            })
            .unwrap();
        let n = r.loaded.config.nat64.as_ref().unwrap();
        let d = sixgate_core::nat64::DEFAULT_POOL4_PORTS;
        for e in &n.pool4 {
            assert_eq!((e.tcp, e.udp, e.icmp), (d, d, d), "{e:?}");
        }
        assert_eq!((d.first, d.last), (61001, 65535));
    }

    /// Issue 20: `show config` lists sections as docs/config.md does,
    /// `[translator]` first and `[daemon]` after `[nat64]`, and the text still
    /// reproduces the state.
    #[test]
    fn rendered_sections_follow_docs_config_md() {
        let md = include_str!("../../../docs/config.md");
        let documented: Vec<&str> = md
            .lines()
            .filter_map(|l| l.strip_prefix("## `[")?.strip_suffix("]`"))
            .collect();
        assert_eq!(documented, SECTION_ORDER);
        let text = format!(
            "[tun]\nname = \"sg0\"\n[daemon]\nworkers = 2\n{NAT64}[log]\nlevel = \"debug\"\n"
        );
        let r = Running::parse(&text, "t.toml").unwrap();
        let out = r.render();
        let heads: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with('[') && !l.starts_with("[["))
            .collect();
        assert_eq!(
            heads,
            ["[translator]", "[nat64]", "[daemon]", "[tun]", "[log]"],
            "{out}"
        );
        let again = Running::parse(&out, "saved.toml").unwrap();
        assert_eq!(again.render(), out);
    }

    #[test]
    fn reload_refuses_keys_set_up_at_start() {
        let old = Running::parse(SIIT, "t.toml").unwrap().loaded;
        let new = Running::parse(&format!("{SIIT}[tun]\nname = \"other0\"\n"), "t.toml")
            .unwrap()
            .loaded;
        let e = check_reload(&old, &new).unwrap_err();
        assert!(e.starts_with("[tun]"), "{e}");
        // The reload path says "unchanged" once for every refusal, not here too.
        assert!(!e.contains("unchanged"), "{e}");
        let xdp = "[daemon]\ndataplane = \"xdp\"\n[xdp]\nipv6_interface = \"a\"\n\
                   ipv4_interface = \"b\"\n";
        let new = Running::parse(&format!("{SIIT}{xdp}"), "t.toml")
            .unwrap()
            .loaded;
        let e = check_reload(&old, &new).unwrap_err();
        assert!(e.starts_with("[daemon] dataplane"), "{e}");
        let other = xdp.replace("\"b\"", "\"c\"");
        let (old, new) = (
            Running::parse(&format!("{SIIT}{xdp}"), "t.toml")
                .unwrap()
                .loaded,
            Running::parse(&format!("{SIIT}{other}"), "t.toml")
                .unwrap()
                .loaded,
        );
        assert!(check_reload(&old, &new).unwrap_err().starts_with("[xdp]"));
        let new = Running::parse(&format!("{SIIT}[daemon]\nworkers = 3\n"), "t.toml")
            .unwrap()
            .loaded;
        assert!(
            check_reload(&old, &new)
                .unwrap_err()
                .starts_with("[daemon] workers")
        );
        let new = Running::parse(&format!("{SIIT}[daemon]\nstate_file = \"off\"\n"), "t.toml")
            .unwrap()
            .loaded;
        assert!(
            check_reload(&old, &new)
                .unwrap_err()
                .starts_with("[daemon] state_file")
        );
    }

    /// Issue 30: a reload that changes only pool6, which DNS64 follows, names
    /// pool6, not [dns64].
    #[test]
    fn reload_names_pool6_when_dns64_only_follows_it() {
        let dns64 = "[dns64]\nupstream = [\"192.0.2.53\"]\n";
        let old = Running::parse(&format!("{NAT64}{dns64}"), "t.toml")
            .unwrap()
            .loaded;
        let new = Running::parse(
            &format!("{NAT64}{dns64}").replace("64:ff9b::/96", "2001:db8:64::/96"),
            "t.toml",
        )
        .unwrap()
        .loaded;
        let e = check_reload(&old, &new).unwrap_err();
        assert!(e.starts_with("[translator] pool6"), "{e}");
    }

    /// Issue 30: a reload says which runtime changes it undoes, as the
    /// commands that made them; one the file now makes too is not undone.
    #[test]
    fn undone_by_lists_the_runtime_changes_a_reload_reverts() {
        let r = Running::parse(NAT64, "t.toml").unwrap();
        let row = |p: &str| Pool4Row {
            prefix: p.into(),
            tcp: None,
            udp: None,
            icmp: None,
        };
        let changed = r
            .pool4_add(&row("198.18.1.0/24"))
            .unwrap()
            .pool4_add(&row("198.18.2.0/24"))
            .unwrap()
            .pool4_remove(&row("192.0.2.1"))
            .unwrap();
        let file = NAT64.replace("\"192.0.2.1\"", "\"192.0.2.1\", \"198.18.2.0/24\"");
        let next = Running::parse(&file, "t.toml").unwrap();
        assert_eq!(
            changed.undone_by(&next),
            ["pool4 add 198.18.1.0/24", "pool4 remove 192.0.2.1"]
        );
        assert!(r.undone_by(&next).is_empty());
    }
}
