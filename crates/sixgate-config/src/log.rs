//! `[log]`: where and how `sixgate run` logs (issue 6): text or JSON lines, to
//! standard error, a file or syslog. The RFC 6888 event log goes the same way.

use std::path::PathBuf;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::LogSection;
use crate::value::quoted_list;

/// The local syslog socket.
pub const DEV_LOG: &str = "/dev/log";

/// Level names a `level` directive may use.
pub const LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

/// How one record is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One human-readable line.
    #[default]
    Text,
    /// One JSON object per line, every field a key.
    Json,
}

/// Where records go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LogTarget {
    /// Standard error.
    #[default]
    Stderr,
    /// Appended to this file (created if missing).
    File(PathBuf),
    /// Datagrams to this syslog socket (normally [`DEV_LOG`]).
    Syslog(PathBuf),
}

/// `[log]`, checked, with its defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSettings {
    /// Text or JSON.
    pub format: LogFormat,
    /// Standard error, a file or syslog.
    pub target: LogTarget,
    /// An `EnvFilter` directive; `RUST_LOG` overrides it.
    pub level: String,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            format: LogFormat::Text,
            target: LogTarget::Stderr,
            level: "info".into(),
        }
    }
}

pub(crate) fn section(cx: &Cx<'_>, l: LogSection) -> Result<LogSettings, ConfigError> {
    let format = match &l.format {
        None => LogFormat::Text,
        Some(v) => match v.get_ref().as_str() {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            _ => return Err(cx.bad("format", v, "unknown format", "\"text\" or \"json\"")),
        },
    };
    let file = l.file.as_ref();
    let target = match l.target.as_ref().map(|v| (v, v.get_ref().as_str())) {
        None | Some((_, "stderr")) => {
            if let Some(f) = file {
                return Err(cx.bad(
                    "file",
                    f,
                    "only used with target = \"file\" or \"syslog\"",
                    "target = \"file\" next to it, or no file",
                ));
            }
            LogTarget::Stderr
        }
        Some((v, "file")) => match file {
            Some(f) if !f.get_ref().is_empty() => LogTarget::File(f.get_ref().into()),
            Some(f) => return Err(cx.bad("file", f, "empty", "a path")),
            None => {
                return Err(cx.bad(
                    "target",
                    v,
                    "needs file",
                    "file = PATH next to it, e.g. file = \"/var/log/sixgate/sixgate.log\"",
                ));
            }
        },
        Some((_, "syslog")) => LogTarget::Syslog(match file {
            Some(f) if !f.get_ref().is_empty() => f.get_ref().into(),
            Some(f) => return Err(cx.bad("file", f, "empty", "a socket path")),
            None => DEV_LOG.into(),
        }),
        Some((v, _)) => {
            return Err(cx.bad(
                "target",
                v,
                "unknown target",
                quoted_list(&["stderr", "file", "syslog"]),
            ));
        }
    };
    let level = match &l.level {
        None => "info".to_string(),
        Some(v) => {
            directive(v.get_ref()).map_err(|why| {
                cx.bad(
                    "level",
                    v,
                    why,
                    format!(
                        "a level ({}), optionally followed by TARGET=LEVEL pairs, \
                         e.g. \"info,sixgate::nat64=warn\"",
                        LEVELS.join(", ")
                    ),
                )
            })?;
            v.get_ref().clone()
        }
    };
    Ok(LogSettings {
        format,
        target,
        level,
    })
}

/// Check `LEVEL` / `TARGET=LEVEL` items, comma-separated: the subset of
/// `RUST_LOG`'s syntax a config file needs.
fn directive(s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("empty".into());
    }
    for item in s.split(',') {
        let item = item.trim();
        let (target, level) = match item.split_once('=') {
            Some((t, l)) => (Some(t), l),
            None => (None, item),
        };
        if let Some(t) = target
            && (t.is_empty()
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_:".contains(c)))
        {
            return Err(format!("`{t}` is not a target name"));
        }
        if !LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!("`{level}` is not a level"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
