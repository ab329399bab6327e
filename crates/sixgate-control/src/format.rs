//! Output of `sixgate show`: aligned tables (the default), CSV, or JSON.

use std::fmt::Write;

/// How `sixgate show` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Aligned columns with a header line.
    Table,
    /// RFC 4180 CSV with a header line.
    Csv,
    /// JSON, as the API gives it.
    Json,
}

/// A table: a header and rows of cells, all as text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| (*s).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Add a row.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// Columns padded to their widest cell, two spaces apart; numbers right-aligned.
    pub fn aligned(&self) -> String {
        let widths = widths(&self.header, &self.rows);
        let numeric: Vec<bool> = (0..self.header.len())
            .map(|c| {
                !self.rows.is_empty()
                    && self
                        .rows
                        .iter()
                        .all(|r| r.get(c).is_some_and(|x| x.parse::<u64>().is_ok()))
            })
            .collect();
        let mut out = String::new();
        line(&mut out, &self.header, &widths, &numeric);
        for r in &self.rows {
            line(&mut out, r, &widths, &numeric);
        }
        out
    }

    /// CSV with a header line.
    pub fn csv(&self) -> String {
        let mut out = csv_line(&self.header);
        for r in &self.rows {
            out.push_str(&csv_line(r));
        }
        out
    }
}

fn widths(header: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(x) = w.get_mut(i) {
                *x = (*x).max(c.chars().count());
            }
        }
    }
    w
}

fn line(out: &mut String, cells: &[String], widths: &[usize], numeric: &[bool]) {
    let mut s = String::new();
    for (i, c) in cells.iter().enumerate() {
        let w = widths.get(i).copied().unwrap_or(0);
        if i > 0 {
            s.push_str("  ");
        }
        if numeric.get(i).copied().unwrap_or(false) {
            let _ = write!(s, "{c:>w$}");
        } else {
            let _ = write!(s, "{c:<w$}");
        }
    }
    out.push_str(s.trim_end());
    out.push('\n');
}

/// One CSV record (RFC 4180: quote fields with a comma, quote or line break).
pub fn csv_line(cells: &[String]) -> String {
    let mut out = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if c.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&c.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(c);
        }
    }
    out.push('\n');
    out
}

/// One row of a streamed table, padded to fixed `widths` (the table is never
/// all in memory, so widths come from what the columns can hold).
pub fn fixed_line(cells: &[String], widths: &[usize]) -> String {
    let numeric = vec![false; cells.len()];
    let mut out = String::new();
    line(&mut out, cells, widths, &numeric);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_columns_right_align_numbers() {
        let mut t = Table::new(&["reason", "count"]);
        t.push(vec!["hop_limit_exceeded".into(), "7".into()]);
        t.push(vec!["malformed".into(), "12345".into()]);
        assert_eq!(
            t.aligned(),
            "reason              count\n\
             hop_limit_exceeded      7\n\
             malformed           12345\n"
        );
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let mut t = Table::new(&["a", "b"]);
        t.push(vec!["x,y".into(), "say \"hi\"".into()]);
        assert_eq!(t.csv(), "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n");
    }

    #[test]
    fn fixed_width_rows_line_up() {
        let w = [4, 6];
        assert_eq!(fixed_line(&["tcp".into(), "1".into()], &w), "tcp   1\n");
        assert_eq!(
            fixed_line(&["icmp".into(), "65535".into()], &w),
            "icmp  65535\n"
        );
    }
}
