//! `sixgate config check`: every error of a file in one run. serde stops at
//! the first unknown key or wrong type, so each such error is recorded and
//! its entry blanked out (spaces, so every later position stays true) before
//! the next try; then the file's values are checked as `sixgate run` does,
//! and what only the host can tell: `[daemon] user` exists, and no two
//! listeners want the same port.

use std::net::SocketAddr;
use std::ops::Range;

use crate::builder::Loaded;
use crate::error::{ConfigError, syntax_error};
use crate::schema::File;

/// At most this many serde errors before the rest of the check.
const MAX_BLANKED: usize = 100;

/// [`file`]'s answer.
pub(crate) struct Blanked {
    /// The file, if what is left deserializes.
    pub file: Option<File>,
    /// serde's errors, each at its place in the original text.
    pub errors: Vec<ConfigError>,
    /// The keys (or section headers) blanked out.
    pub keys: Vec<String>,
    /// The text with them blanked: every position as in the original.
    pub text: String,
}

/// `text` as a [`File`] with every entry serde refused blanked out.
pub(crate) fn file(text: &str, origin: &str) -> Blanked {
    let mut b = Blanked {
        file: None,
        errors: Vec::new(),
        keys: Vec::new(),
        text: text.to_owned(),
    };
    loop {
        let e = match toml::from_str::<File>(&b.text) {
            Ok(f) => {
                b.file = Some(f);
                return b;
            }
            Err(e) => e,
        };
        b.errors.push(syntax_error(&e, text, origin));
        let Some(span) = e.span() else {
            return b;
        };
        let before = b.text.clone();
        // Stop where blanking cannot help: no entry there (an error about
        // the whole file or a table), nothing changed, or the rest is no
        // longer TOML (an entry it could not delimit).
        let Some(key) = blank_entry(&mut b.text, span.start) else {
            return b;
        };
        if b.text == before
            || b.text.parse::<toml::Table>().is_err()
            || b.errors.len() >= MAX_BLANKED
        {
            return b;
        }
        b.keys.push(key);
    }
}

/// Replace the entry at byte `at` with spaces (newlines kept): a section
/// header up to the next one, or a `key = value` line with the lines its
/// value goes on over. Returns the key (or header) blanked; `None` where the
/// line holds neither (a comment, an empty line).
fn blank_entry(work: &mut String, at: usize) -> Option<String> {
    let at = at.min(work.len());
    let start = work[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = |from: usize| work[from..].find('\n').map_or(work.len(), |i| from + i);
    let first = work[start..line_end(start)].trim_start();
    if first.is_empty() || first.starts_with('#') {
        return None;
    }
    let (end, key) = if first.starts_with('[') {
        // A header: its table goes on until the next header.
        let mut end = line_end(start);
        while end < work.len() {
            let next = end + 1;
            if work[next..line_end(next)].trim_start().starts_with('[') {
                break;
            }
            end = line_end(next);
        }
        (end, first.trim_end().to_owned())
    } else {
        let key = first
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"')
            .to_owned();
        (value_end(work, start), key)
    };
    let blank: String = work[start..end]
        .bytes()
        .map(|b| if b == b'\n' { '\n' } else { ' ' })
        .collect();
    work.replace_range(start..end, &blank);
    Some(key)
}

/// Where the line at `start` ends, with the lines an open array or inline
/// table carries it over (strings and comments skipped).
fn value_end(text: &str, start: usize) -> usize {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0i32, start);
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' && q == b'"' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'[' | b'{' => depth += 1,
                b']' | b'}' => depth -= 1,
                b'#' => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'\n' if depth <= 0 => return i,
                _ => {}
            },
        }
        i += 1;
    }
    b.len()
}

/// What only the host can tell: `[daemon] user` exists (read from the
/// text, so it is checked next to any other error), and, of a file that
/// loads, no two listeners want one port.
pub(crate) fn host(loaded: Option<&Loaded>, text: &str, origin: &str) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    let user = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("daemon")?.get("user")?.as_str().map(str::to_owned));
    if let Some(name) = &user {
        match user_exists(name) {
            Ok(true) => {}
            Ok(false) => errors.push(ConfigError::at(
                origin,
                text,
                key_span(text, "daemon", "user"),
                format!(
                    "[daemon] user: user {name:?} does not exist on this host; expected an \
                     existing user (e.g. \"nobody\"), or create it first"
                ),
            )),
            Err(e) => errors.push(ConfigError::at(
                origin,
                text,
                key_span(text, "daemon", "user"),
                format!("[daemon] user: cannot read the user database for {name:?}: {e}"),
            )),
        }
    }
    let Some(loaded) = loaded else {
        return errors;
    };
    // (where, protocol, address) of every listener the daemon binds.
    let mut wants: Vec<(&str, &str, SocketAddr)> = Vec::new();
    if let Some(d) = &loaded.dns64 {
        for a in &d.listen {
            wants.push(("dns64", "UDP", *a));
            wants.push(("dns64", "TCP", *a));
        }
    }
    if let Some(m) = &loaded.metrics {
        wants.push(("metrics", "TCP", m.listen));
    }
    for (i, (s1, p1, a1)) in wants.iter().enumerate() {
        for (s2, p2, a2) in &wants[i + 1..] {
            // DNS64 against itself: its UDP clash says it for its TCP too.
            let again = *p1 == "TCP" && s1 == s2 && *s1 == "dns64";
            if !again && p1 == p2 && a1.port() == a2.port() && a1.port() != 0 && overlap(a1, a2) {
                errors.push(ConfigError::at(
                    origin,
                    text,
                    key_span(text, s2, "listen"),
                    format!(
                        "[{s2}] listen: {p2} {a2} collides with [{s1}] listen {a1} (one port, \
                         and the same address or a wildcard of the same family; \"[::]\" is \
                         IPv6 only); expected another port or address"
                    ),
                ));
            }
        }
    }
    errors
}

/// Two binds of one port and family that the kernel refuses together: the
/// same address, or either one the wildcard ("[::]" binds IPv6 only).
fn overlap(a: &SocketAddr, b: &SocketAddr) -> bool {
    a.is_ipv4() == b.is_ipv4()
        && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
}

/// The span of `key` in `[section]` (the section's header when the key is
/// not found, the file's start without the section).
fn key_span(text: &str, section: &str, key: &str) -> Range<usize> {
    let header = format!("[{section}]");
    let mut offset = 0;
    let mut inside = false;
    let mut at_header = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('[') {
            inside = t.starts_with(&header);
            if inside {
                at_header = Some(offset..offset + line.trim_end().len());
            }
        } else if inside
            && t.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        {
            let lead = line.len() - t.len();
            return offset + lead..offset + lead + key.len();
        }
        offset += line.len();
    }
    at_header.unwrap_or(0..0)
}

/// Whether the user database has `name` (getpwnam_r).
fn user_exists(name: &str) -> Result<bool, std::io::Error> {
    let Ok(cname) = std::ffi::CString::new(name) else {
        return Ok(false);
    };
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: passwd is plain data; getpwnam_r writes it and strings into buf.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let r = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r));
    }
    Ok(!result.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanking_keeps_every_position() {
        let mut w = "[a]\nx = [\n  1,\n  2,\n] # c\ny = 1\n[b]\nz = 2\n".to_owned();
        let n = w.len();
        assert_eq!(blank_entry(&mut w, 4).as_deref(), Some("x"));
        assert_eq!(w.len(), n);
        assert!(w.contains("\ny = 1\n"), "{w}");
        assert!(!w.contains("2,"), "{w}");
        let b = w.find("[b]").unwrap();
        assert_eq!(blank_entry(&mut w, b).as_deref(), Some("[b]"));
        // A comment or an empty line is no entry: nothing to blank.
        let mut c = "# c\n\nx = 1\n".to_owned();
        assert_eq!(blank_entry(&mut c, 0), None);
        assert_eq!(blank_entry(&mut c, 4), None);
        assert!(!w.contains("z = 2"), "{w}");
        assert!(w.parse::<toml::Table>().is_ok());
    }

    #[test]
    fn listeners_collide_on_one_port_of_one_family() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(overlap(&a("0.0.0.0:53"), &a("127.0.0.1:53")));
        assert!(overlap(&a("[::]:53"), &a("[::1]:53")));
        assert!(!overlap(&a("[::]:53"), &a("127.0.0.1:53")));
        assert!(!overlap(&a("127.0.0.1:53"), &a("127.0.0.2:53")));
    }
}
