//! What loading reports: errors and warnings, each at a file position.

use std::fmt;
use std::ops::Range;

/// A value that loads but goes against a standard, with where it is in the file.
/// Printed as `FILE:LINE:COLUMN: warning: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigWarning {
    origin: String,
    position: Position,
    message: String,
}

impl ConfigWarning {
    /// A warning at byte range `span` of `text`.
    pub(crate) fn at(origin: &str, text: &str, span: Range<usize>, message: String) -> Self {
        ConfigWarning {
            origin: origin.to_owned(),
            position: Position::of_offset(text, span.start),
            message,
        }
    }

    /// Where in the file.
    pub fn position(&self) -> Position {
        self.position
    }

    /// The message without the `FILE:LINE:COLUMN: warning: ` prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.position;
        write!(
            f,
            "{}:{}:{}: warning: {}",
            self.origin, p.line, p.column, self.message
        )
    }
}

/// A line and column in the file, both counted from 1 (columns in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text`.
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        // Step back to a character boundary so the slice below is valid.
        let offset = (0..=offset)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// Why a configuration could not be loaded.
#[derive(Debug)]
pub struct ConfigError {
    origin: String,
    position: Option<Position>,
    message: String,
    source: Option<std::io::Error>,
}

impl ConfigError {
    /// An error at byte range `span` of `text`.
    pub(crate) fn at(
        origin: &str,
        text: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            origin: origin.to_owned(),
            position: Some(Position::of_offset(text, span.start)),
            message: message.into(),
            source: None,
        }
    }

    /// The file could not be read.
    pub(crate) fn unreadable(origin: &str, e: std::io::Error) -> Self {
        ConfigError {
            message: format!("cannot read config file: {e}"),
            origin: origin.to_owned(),
            position: None,
            source: Some(e),
        }
    }

    /// The file name (or other origin) the error is in.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Where in the file, if the error is about its content.
    pub fn position(&self) -> Option<Position> {
        self.position
    }

    /// The message without the `FILE:LINE:COLUMN: ` prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(
                f,
                "{}:{}:{}: {}",
                self.origin, p.line, p.column, self.message
            ),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A TOML syntax or type error, with the key it is about when toml knows it.
pub(crate) fn syntax_error(e: &toml::de::Error, text: &str, origin: &str) -> ConfigError {
    let span = e.span().unwrap_or(0..0);
    // serde speaks of Rust types; say it in TOML's words.
    let mut message = e
        .message()
        .trim_end()
        .replace("expected i64", "expected an integer")
        .replace("expected a sequence", "expected an array")
        .replace("expected struct TranslatorSection", "expected a table")
        .replace("expected struct DaemonSection", "expected a table")
        .replace("expected struct TunSection", "expected a table")
        .replace("expected struct XdpSection", "expected a table")
        .replace("expected struct ClatSection", "expected a table")
        .replace("expected struct Nat64Section", "expected a table")
        .replace("expected struct Dns64Section", "expected a table")
        .replace("expected struct MaptSection", "expected a table")
        .replace(
            "expected struct MapRuleEntry",
            "expected a table { ipv6_prefix, ipv4_prefix, ea_bits, psid_offset }",
        )
        .replace(
            "expected struct StaticBibEntry",
            "expected a table { proto, ipv6, port6, ipv4, port4 }",
        )
        .replace(
            "expected struct Pool4Table",
            "expected a table { prefix, tcp, udp, icmp }",
        )
        .replace(
            "expected struct EamEntry",
            "expected a table { ipv4, ipv6 }",
        );
    let key = key_path(e);
    if message == "duplicate key" {
        let name = text.get(span.clone()).unwrap_or("").trim();
        message = format!("duplicate key `{name}`; expected each key at most once per table");
    } else if message.starts_with("unknown field") {
        let what = if key.is_none() {
            "unknown section"
        } else {
            "unknown key"
        };
        message = message.replacen("unknown field", what, 1);
    } else if message.starts_with("missing field") {
        message = message.replacen("missing field", "missing key", 1);
    }
    let message = match key {
        Some(key) => format!("{key}: {message}"),
        None => message,
    };
    ConfigError::at(origin, text, span, message)
}

/// The dotted key path toml recorded for an error. toml only shows it in its
/// `Display` when it has no input to quote, so render it that way and pick it out.
fn key_path(e: &toml::de::Error) -> Option<String> {
    let mut e = e.clone();
    e.set_input(None);
    e.to_string()
        .lines()
        .find_map(|l| l.strip_prefix("in `")?.strip_suffix('`').map(str::to_owned))
        .filter(|k| !k.is_empty())
}
