//! sixgate.toml(5): the configuration file's manual page, rendered from
//! docs/config.md itself (compiled in), so the page and the document are one
//! text and cannot drift apart. Only the Markdown that document uses is
//! understood: headings, paragraphs, `-` lists, fenced code, tables (each row
//! becomes a tagged paragraph: the key in bold, the other columns under it),
//! `code`, **bold** and [links](…) (their text is kept).

/// The document the page is made from.
pub const SOURCE: &str = include_str!("../../../docs/config.md");

/// The page, in roff (man(7) macros).
pub fn page(version: &str) -> String {
    render(SOURCE, version)
}

/// `markdown` as the sixgate.toml(5) page.
pub fn render(markdown: &str, version: &str) -> String {
    let mut out = format!(
        ".TH SIXGATE.TOML 5 \"\" \"sixgate {version}\" \"File formats\"\n\
         .SH NAME\nsixgate.toml \\- sixgate configuration file\n\
         .SH SYNOPSIS\n\\fB/etc/sixgate/sixgate.toml\\fR, or any file given to \
         \\fBsixgate run \\-\\-config\\fR, \\fBsixgate translate \\-\\-config\\fR, \
         \\fBsixgate dns64 \\-\\-config\\fR or \\fBsixgate config check\\fR\n\
         .SH DESCRIPTION\n"
    );
    let mut lines = markdown.lines().peekable();
    let mut header: Vec<String> = Vec::new();
    let mut in_para = false;
    while let Some(line) = lines.next() {
        if let Some(fence) = line.strip_prefix("```") {
            let _ = fence; // the language tag
            out.push_str(".PP\n.RS 4\n.nf\n");
            for code in lines.by_ref() {
                if code.starts_with("```") {
                    break;
                }
                out.push_str(&escape_line(code));
                out.push('\n');
            }
            out.push_str(".fi\n.RE\n");
            in_para = false;
        } else if line.starts_with("# ") {
            // The title: NAME above says it.
        } else if let Some(h) = line.strip_prefix("### ") {
            out.push_str(&format!(".SS \"{}\"\n", inline(h)));
            in_para = false;
        } else if let Some(h) = line.strip_prefix("## ") {
            // Not upper-cased: the headings are section names of the file.
            out.push_str(&format!(".SH \"{}\"\n", inline(h)));
            in_para = false;
        } else if line.starts_with('|') {
            let cells = cells(line);
            if cells
                .iter()
                .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
            {
                continue; // |---|---|
            }
            if header.is_empty() {
                header = cells;
                continue;
            }
            out.push_str(&format!(".TP\n{}\n", inline(&cells[0])));
            let middle: Vec<String> = cells
                .iter()
                .enumerate()
                .skip(1)
                .take(cells.len().saturating_sub(2))
                .map(|(i, c)| {
                    let name = header.get(i).map_or("", String::as_str);
                    format!("{}: {}", inline(name), inline(c))
                })
                .collect();
            if !middle.is_empty() {
                out.push_str(&format!("{}.\n.br\n", middle.join("; ")));
            }
            if cells.len() > 1 {
                out.push_str(&inline(&cells[cells.len() - 1]));
                out.push('\n');
            }
            in_para = false;
            if !lines.peek().is_some_and(|l| l.starts_with('|')) {
                header.clear();
            }
        } else if let Some(item) = line.strip_prefix("- ") {
            out.push_str(".IP \\(bu 2\n");
            out.push_str(&inline(item));
            out.push('\n');
            in_para = true;
        } else if line.trim().is_empty() {
            in_para = false;
        } else {
            if !in_para {
                out.push_str(".PP\n");
                in_para = true;
            }
            out.push_str(&inline(line.trim_start()));
            out.push('\n');
        }
    }
    out.push_str(
        ".SH SEE ALSO\n\\fBsixgate\\fR(1), \\fBsixgate\\-run\\fR(1), \
         \\fBsixgate\\-config\\-check\\fR(1)\n",
    );
    out
}

/// The cells of a table row, split at `|` but not at `\|`.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_owned()).collect()
}

/// Inline Markdown to roff: `code` and **bold** in bold, a link as its text.
fn inline(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '`'
            && let Some(end) = rest[1..].find('`')
        {
            out.push_str(&format!("\\fB{}\\fR", escape(&rest[1..1 + end])));
            rest = &rest[end + 2..];
        } else if rest.starts_with("**")
            && let Some(end) = rest[2..].find("**")
        {
            out.push_str(&format!("\\fB{}\\fR", escape(&rest[2..2 + end])));
            rest = &rest[end + 4..];
        } else if c == '['
            && let Some(close) = rest.find("](")
            && let Some(end) = rest[close..].find(')')
        {
            // [text](target): the text (itself possibly `code`).
            out.push_str(&inline(&rest[1..close]));
            rest = &rest[close + end + 1..];
        } else {
            out.push_str(&escape(&rest[..c.len_utf8()]));
            rest = &rest[c.len_utf8()..];
        }
    }
    // A line that starts with a control character would be a request.
    if out.starts_with('.') || out.starts_with('\'') {
        out.insert_str(0, "\\&");
    }
    out
}

/// Text for roff: backslashes and hyphens escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

/// A line of a code block, kept as it is.
fn escape_line(s: &str) -> String {
    let e = escape(s);
    if e.starts_with('.') || e.starts_with('\'') {
        format!("\\&{e}")
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backticked first cells of docs/config.md's tables: its keys.
    fn documented_keys() -> Vec<String> {
        SOURCE
            .lines()
            .filter(|l| l.starts_with('|'))
            .filter_map(|l| cells(l).into_iter().next())
            .filter_map(|c| Some(c.strip_prefix('`')?.strip_suffix('`')?.to_owned()))
            .collect()
    }

    /// Issue 20: sixgate.toml(5) and docs/config.md agree: every section and
    /// every key of the document is in the page, nothing of the Markdown shows.
    #[test]
    fn config_page_has_every_section_and_key_of_docs_config_md() {
        let page = page("0.0.0");
        assert!(page.starts_with(".TH SIXGATE.TOML 5"), "{page}");
        let keys = documented_keys();
        assert!(keys.len() > 80, "{keys:?}");
        for key in &keys {
            let tag = format!("\n\\fB{}\\fR\n", escape(key));
            assert!(page.contains(&tag), "key {key} is not a tag of the page");
        }
        for h in SOURCE.lines().filter_map(|l| l.strip_prefix("## ")) {
            let sh = format!(".SH \"{}\"", inline(h));
            assert!(page.contains(&sh), "section {h} missing: {sh}");
        }
        for raw in ["`", "|---", "](", "**"] {
            assert!(!page.contains(raw), "Markdown {raw:?} left in the page");
        }
        // No line may start a roff request by accident.
        for l in page.lines() {
            if l.starts_with('.') {
                let m = l.split_whitespace().next().unwrap();
                assert!(
                    [
                        ".TH", ".SH", ".SS", ".PP", ".TP", ".IP", ".RS", ".RE", ".nf", ".fi", ".br"
                    ]
                    .contains(&m),
                    "stray request: {l}"
                );
            }
        }
    }

    #[test]
    fn table_rows_and_inline_markup() {
        let md = "## `[x]`\n\n| Key | Type | Default | Meaning |\n|---|---|---|---|\n\
                  | `a` | int | `1` | See [b](#b); `x\\|y`. |\n\n.dot line\n";
        let p = render(md, "1");
        assert!(p.contains(".SH \"\\fB[x]\\fR\""), "{p}");
        assert!(
            p.contains(
                ".TP\n\\fBa\\fR\nType: int; Default: \\fB1\\fR.\n.br\nSee b; \\fBx|y\\fR.\n"
            ),
            "{p}"
        );
        assert!(p.contains("\\&.dot line"), "{p}");
    }

    /// docs/config.md (and so the page) describes every mode as working.
    #[test]
    fn config_md_names_every_mode_and_none_as_unsupported() {
        assert!(!SOURCE.contains("not supported yet"));
        let row = SOURCE
            .lines()
            .find(|l| l.starts_with("| `mode` |"))
            .expect("the mode row");
        for m in sixgate_config::KNOWN_MODES {
            assert!(row.contains(&format!("`\"{m}\"`")), "{m}: {row}");
        }
    }
}
