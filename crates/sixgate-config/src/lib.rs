//! sixgate's configuration file: TOML in, a validated [`sixgate_core::Config`] out.
//!
//! ```toml
//! [translator]
//! mode = "siit"
//! pool6 = "2001:db8:64::/96"
//! eam = [ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]
//! ```
//!
//! The schema of every section lives in [`schema`]. Each section has one file
//! with its checks and its settings type, and its tests beside it in
//! `SECTION/tests.rs` (`translator`, `clat`, `nat64`, `mapt`, `daemon`, `tun`,
//! `xdp`, [`dns64`], [`pref64`], [`metrics`], [`log`], [`sync`]); they share the value
//! parsers of `value` and the context of `cx` (which collects every error), and
//! `builder` runs them in turn. `lint` warns about valid values that are likely
//! mistakes. Every error, syntax or semantic, is reported as `FILE:LINE:COLUMN:
//! message`, where the message names the key, the bad value and what was expected.
//! `docs/config.md` documents every key; a test keeps it in step with the schema.

use std::path::Path;

pub use builder::{Dns64File, Loaded};
pub use clat::{ClatSettings, DNS_PORT, PlatPrefix};
pub use daemon::{
    DEFAULT_SOCKET, DEFAULT_STATE_FILE, DaemonSettings, Dataplane, FASTPATH_DEFAULT, FastPathMode,
};
pub use dns64::Dns64Settings;
pub use error::{ConfigError, ConfigWarning, Position};
pub use log::{LogFormat, LogSettings, LogTarget};
pub use log_export::{Collector, ExportProtocol, LogExportSettings, Overflow, Transport};
pub use metrics::MetricsSettings;
pub use pref64::Pref64Settings;
pub use sync::{Shard, SyncKey, SyncPeer, SyncSettings};
pub use translator::{KNOWN_MODES, Mode, PLANNED_MODES};
pub use tun::{DEFAULT_TUN_MTU, DEFAULT_TUN_NAME, TunSettings};
pub use xdp::{DEFAULT_XDP_FRAMES, XdpAttach, XdpSettings, ZeroCopy};

mod builder;
mod check;
mod clat;
mod cx;
mod daemon;
pub mod dns64;
mod error;
mod lint;
pub mod log;
pub mod log_export;
mod mapt;
pub mod metrics;
mod nat64;
pub mod pref64;
pub mod schema;
pub mod sync;
mod translator;
mod tun;
mod value;
mod xdp;

/// Read and validate the file at `path`; errors name it as given.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let (text, origin) = read(path)?;
    parse(&text, &origin)
}

/// Parse and validate `text`; `origin` (usually the file name) prefixes every error.
pub fn parse(text: &str, origin: &str) -> Result<Loaded, ConfigError> {
    builder::build(toml_file(text, origin)?, text, origin)
}

/// The file at `path` and its name as given, for errors.
fn read(path: &Path) -> Result<(String, String), ConfigError> {
    let origin = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((text, origin)),
        Err(e) => Err(ConfigError::unreadable(&origin, e)),
    }
}

/// `text` as TOML in the shape of [`schema::File`].
fn toml_file(text: &str, origin: &str) -> Result<schema::File, ConfigError> {
    toml::from_str(text).map_err(|e| error::syntax_error(&e, text, origin))
}

/// Read a file for `sixgate dns64`: it must have `[dns64]`; a `[translator]`
/// is optional, and when present the whole file is checked as for `sixgate run`
/// (so `prefixes = "pool6"` means the same prefix the translator uses).
pub fn load_dns64(path: &Path) -> Result<Dns64File, ConfigError> {
    let (text, origin) = read(path)?;
    parse_dns64(&text, &origin)
}

/// [`load_dns64`] on text.
pub fn parse_dns64(text: &str, origin: &str) -> Result<Dns64File, ConfigError> {
    builder::build_dns64(toml_file(text, origin)?, text, origin)
}

/// A file `sixgate config check` accepts.
#[derive(Clone, Debug)]
pub enum Checked {
    /// A gateway's file (with `[translator]`), as `sixgate run` reads it.
    Gateway(Box<Loaded>),
    /// A DNS64-only file (no `[translator]`), as `sixgate dns64 --config` reads it.
    Dns64(Dns64File),
}

impl Checked {
    /// The warnings of the file.
    pub fn warnings(&self) -> &[ConfigWarning] {
        match self {
            Checked::Gateway(l) => &l.warnings,
            Checked::Dns64(d) => &d.warnings,
        }
    }

    /// One line for humans, as [`Loaded::describe`].
    pub fn describe(&self) -> String {
        match self {
            Checked::Gateway(l) => l.describe(),
            Checked::Dns64(d) => {
                let (l, u) = (d.dns64.listen.len(), d.dns64.upstream.len());
                format!(
                    "DNS64 only, on {l} address{} to {u} upstream{}",
                    if l == 1 { "" } else { "es" },
                    if u == 1 { "" } else { "s" }
                )
            }
        }
    }
}

/// Read and check the file at `path` as `sixgate config check` does.
pub fn check_file(path: &Path) -> Result<Checked, Vec<ConfigError>> {
    let (text, origin) = read(path).map_err(|e| vec![e])?;
    check(&text, &origin)
}

/// Check `text` as `sixgate config check` does: a file with `[translator]` as
/// `sixgate run` reads it, one with only `[dns64]` as `sixgate dns64` does.
/// Every error the file has (a TOML syntax error stops at the first), in file
/// order, not only the first.
pub fn check(text: &str, origin: &str) -> Result<Checked, Vec<ConfigError>> {
    // Not TOML at all: the first syntax error is all there is to say.
    if let Err(e) = text.parse::<toml::Table>() {
        return Err(vec![error::syntax_error(&e, text, origin)]);
    }
    // Unknown keys and wrong types, each blanked out after it is recorded,
    // so the values after them are checked too (check.rs).
    let check::Blanked {
        file,
        mut errors,
        keys: blanked,
        text: work,
    } = check::file(text, origin);
    let Some(file) = file else {
        return Err(in_file_order(errors));
    };
    // The same positions, without what serde refused.
    let work = work.as_str();
    if file.translator.is_none() && file.dns64.is_some() {
        return match builder::build_dns64(file, work, origin) {
            Ok(d) if errors.is_empty() => Ok(Checked::Dns64(d)),
            Ok(_) => Err(in_file_order(errors)),
            Err(e) => {
                errors.push(e);
                Err(in_file_order(errors))
            }
        };
    }
    let (loaded, more) = builder::build_all(file, work, origin);
    // A key blanked out is not "missing" too.
    errors.extend(more.into_iter().filter(|e| {
        !blanked
            .iter()
            .any(|k| e.message().contains(&format!("missing key `{k}`")))
    }));
    errors.extend(check::host(loaded.as_ref(), text, origin));
    match loaded {
        Some(l) if errors.is_empty() => Ok(Checked::Gateway(Box::new(l))),
        _ => Err(in_file_order(errors)),
    }
}

/// In file order; an error with no position last.
fn in_file_order(mut errors: Vec<ConfigError>) -> Vec<ConfigError> {
    errors.sort_by_key(|e| {
        e.position()
            .map_or((usize::MAX, usize::MAX), |p| (p.line, p.column))
    });
    errors
}

#[cfg(test)]
mod tests;
