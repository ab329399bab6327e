//! `sixgate show …`: what the running daemon is doing, from its API socket
//! (docs/control.md). Tables by default, `--csv` or `--json` for scripts.

use std::io::Write;

use sixgate_control::api::types::{
    BibRow, Counters, Eam, Pool4, RunningConfig, SessionRow, Stats, Status, SubscriberRow,
    SyncState,
};
use sixgate_control::client::Client;
use sixgate_control::format::{Output, Table, csv_line, fixed_line};

use super::CmdResult;
use super::socket::SocketArg;

/// Arguments of `sixgate show`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
    /// Print JSON (as the API answers).
    #[arg(long, global = true, conflicts_with = "csv")]
    json: bool,
    /// Print CSV with a header line.
    #[arg(long, global = true)]
    csv: bool,
    #[command(flatten)]
    target: SocketArg,
}

/// Filters of `show bib` and `show sessions`.
#[derive(Debug, Default, clap::Args)]
pub struct TableFilter {
    /// Only rows with this address (IPv4 or IPv6) on either side.
    #[arg(long, value_name = "ADDR")]
    address: Option<String>,
    /// Only rows with this port (or ICMP identifier) on either side.
    #[arg(long)]
    port: Option<u16>,
    /// Only this protocol: tcp, udp or icmp.
    #[arg(long, value_name = "PROTO")]
    protocol: Option<String>,
}

impl TableFilter {
    fn query(&self) -> String {
        let mut q = Vec::new();
        if let Some(a) = &self.address {
            q.push(format!("address={}", encode(a)));
        }
        if let Some(p) = self.port {
            q.push(format!("port={p}"));
        }
        if let Some(p) = &self.protocol {
            q.push(format!("protocol={}", encode(p)));
        }
        if q.is_empty() {
            String::new()
        } else {
            format!("?{}", q.join("&"))
        }
    }
}

/// Percent-encoding for a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Version, mode, uptime, workers, device, configuration file, reloads.
    Status,
    /// Every counter, summed and per worker.
    Stats,
    /// Drops by reason (non-zero ones; --all for every reason).
    Counters {
        /// Every drop reason, zero or not.
        #[arg(long)]
        all: bool,
    },
    /// The NAT64 Binding Information Base (RFC 6146 §3.1), streamed.
    Bib(TableFilter),
    /// The NAT64 sessions (RFC 6146 §3.2), streamed.
    Sessions(TableFilter),
    /// NAT64 subscribers (RFC 6888) with their sessions, ports and RFC 7422
    /// port blocks, streamed (tracked with per-subscriber limits or
    /// port_block_size). --address: one of its hosts or a block's address;
    /// --port: in one of its blocks.
    Subscribers(TableFilter),
    /// The NAT64 pool4 in use.
    Pool4,
    /// The RFC 7757 EAM table in use.
    Eam,
    /// NAT64 state sync with the peers (docs/ha.md): state, sequence numbers,
    /// lag, records, resyncs, drops; --json adds the node's ring counters.
    Sync,
    /// The running configuration, as a file that reproduces it.
    Config {
        /// The running configuration: the default, and the only one the daemon
        /// has (kept for scripts that say so).
        #[arg(long)]
        running: bool,
    },
}

pub fn run(args: &Args) -> CmdResult {
    let c = args.target.client()?;
    let out = if args.json {
        Output::Json
    } else if args.csv {
        Output::Csv
    } else {
        Output::Table
    };
    match &args.what {
        What::Status => {
            let s: Status = c.get("/v1/status")?;
            let r = &s.reload;
            // Times for people: RFC 3339 (UTC); the JSON keeps Unix seconds.
            let at = sixgate_control::rfc3339::utc;
            let last = match (&r.last_error, r.last_unix_s) {
                (_, 0) => "never".to_owned(),
                (None, t) => format!("ok at {}", at(t)),
                // One cell: the lines of several errors apart, not run together.
                (Some(e), t) => format!("FAILED at {}: {}", at(t), e.replace('\n', "; ")),
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let mut t = Table::new(&["field", "value"]);
            for (k, v) in [
                ("version", s.version.clone()),
                ("mode", s.mode.clone()),
                ("started", at(now.saturating_sub(s.uptime_s))),
                ("uptime_s", s.uptime_s.to_string()),
                ("workers", s.workers.to_string()),
                ("device", s.device.clone()),
                ("config_file", s.config_file.clone()),
                ("reloads_ok", r.succeeded.to_string()),
                ("reloads_failed", r.failed.to_string()),
                ("last_reload", last),
                ("fastpath", s.fastpath.clone()),
            ] {
                t.push(vec![k.into(), v]);
            }
            print(out, &s, &t)
        }
        What::Sync => {
            let s: SyncState = c.get("/v1/sync")?;
            let mut t = Table::new(&[
                "peer",
                "address",
                "state",
                "next_seq",
                "expected",
                "lag",
                "records_in",
                "records_out",
                "resyncs",
                "dropped",
            ]);
            for p in &s.peers {
                let state = match (p.up, p.synced, p.drained) {
                    (false, ..) => "down",
                    (true, _, true) => "drained",
                    (true, false, _) => "joining",
                    (true, true, _) => "synced",
                };
                t.push(vec![
                    p.node_id.to_string(),
                    p.address.clone(),
                    state.into(),
                    p.next_seq.to_string(),
                    p.expected.map_or("-".into(), |e| e.to_string()),
                    p.unacked.to_string(),
                    p.records_in.to_string(),
                    p.records_out.to_string(),
                    (p.resyncs_started + p.resyncs_requested).to_string(),
                    p.dropped.to_string(),
                ]);
            }
            print(out, &s, &t)?;
            match out {
                Output::Table => emit(&format!("{}\n", node_line(&s))),
                _ => Ok(()),
            }
        }
        What::Stats => {
            let s: Stats = c.get("/v1/stats")?;
            let n = s.counters.first().map_or(0, |r| r.workers.len());
            let mut header = vec!["counter".to_owned(), "total".to_owned()];
            header.extend((0..n).map(|i| format!("w{i}")));
            let mut t = Table {
                header,
                rows: Vec::new(),
            };
            for r in &s.counters {
                let mut row = vec![r.name.clone(), r.total.to_string()];
                row.extend(r.workers.iter().map(u64::to_string));
                // Totals-only rows (the fast path's) leave the worker columns empty.
                row.resize(2 + n, "-".into());
                t.push(row);
            }
            print(out, &s, &t)?;
            match (out, &s.fastpath_off) {
                (Output::Table, Some(why)) => emit(&format!("fast path off: {why}\n")),
                _ => Ok(()),
            }
        }
        What::Counters { all } => {
            let s: Counters = c.get(&format!("/v1/counters?all={all}"))?;
            let mut t = Table::new(&["reason", "count"]);
            for r in &s.drops {
                t.push(vec![r.reason.clone(), r.count.to_string()]);
            }
            print(out, &s, &t)
        }
        What::Bib(f) => {
            const COLS: [&str; 7] = [
                "worker", "proto", "ipv6", "port6", "ipv4", "port4", "static",
            ];
            const WIDTHS: [usize; 7] = [6, 5, 39, 5, 15, 5, 6];
            stream(
                &c,
                &format!("/v1/bib{}", f.query()),
                out,
                &COLS,
                &WIDTHS,
                |b: &BibRow| {
                    vec![
                        b.worker.to_string(),
                        b.proto.clone(),
                        b.ipv6.clone(),
                        b.port6.to_string(),
                        b.ipv4.clone(),
                        b.port4.to_string(),
                        if b.is_static { "yes" } else { "no" }.into(),
                    ]
                },
            )
        }
        What::Sessions(f) => {
            const COLS: [&str; 10] = [
                "worker",
                "proto",
                "ipv6",
                "port6",
                "ipv4",
                "port4",
                "remote4",
                "rport",
                "state",
                "expires_s",
            ];
            const WIDTHS: [usize; 10] = [6, 5, 39, 5, 15, 5, 15, 5, 17, 9];
            stream(
                &c,
                &format!("/v1/sessions{}", f.query()),
                out,
                &COLS,
                &WIDTHS,
                |s: &SessionRow| {
                    vec![
                        s.worker.to_string(),
                        s.proto.clone(),
                        s.ipv6.clone(),
                        s.port6.to_string(),
                        s.ipv4.clone(),
                        s.port4.to_string(),
                        s.remote4.clone(),
                        s.rport.to_string(),
                        s.state.clone(),
                        s.expires_s.to_string(),
                    ]
                },
            )
        }
        What::Subscribers(f) => {
            const COLS: [&str; 5] = ["worker", "subscriber", "sessions", "ports", "blocks"];
            const WIDTHS: [usize; 5] = [6, 43, 8, 6, 6];
            stream(
                &c,
                &format!("/v1/subscribers{}", f.query()),
                out,
                &COLS,
                &WIDTHS,
                |s: &SubscriberRow| {
                    // The blocks themselves: --json, or `whois`.
                    vec![
                        s.worker.to_string(),
                        s.subscriber.clone(),
                        s.sessions.to_string(),
                        s.ports.to_string(),
                        s.blocks.len().to_string(),
                    ]
                },
            )
        }
        What::Pool4 => {
            let s: Pool4 = c.get("/v1/pool4")?;
            let mut t = Table::new(&["prefix", "tcp", "udp", "icmp"]);
            let or = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
            for p in &s.pool4 {
                t.push(vec![p.prefix.clone(), or(&p.tcp), or(&p.udp), or(&p.icmp)]);
            }
            print(out, &s, &t)
        }
        What::Eam => {
            let s: Eam = c.get("/v1/eam")?;
            let mut t = Table::new(&["ipv4", "ipv6"]);
            for e in &s.eam {
                t.push(vec![e.ipv4.clone(), e.ipv6.clone()]);
            }
            print(out, &s, &t)
        }
        What::Config { .. } => {
            let s: RunningConfig = c.get("/v1/config")?;
            match out {
                Output::Json => emit(&format!("{}\n", to_json(&s)?)),
                _ => emit(&s.toml),
            }
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, String> {
    serde_json::to_string_pretty(v).map_err(|e| e.to_string())
}

fn print<T: serde::Serialize>(out: Output, v: &T, t: &Table) -> CmdResult {
    emit(&match out {
        Output::Json => format!("{}\n", to_json(v)?),
        Output::Csv => t.csv(),
        Output::Table => t.aligned(),
    })
}

/// Standard output; a reader that went away (`| head`) is not an error.
fn emit(text: &str) -> CmdResult {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}

/// A streamed table: each row printed as it arrives, never all in memory.
fn stream<T: serde::de::DeserializeOwned + serde::Serialize>(
    c: &Client,
    path: &str,
    out: Output,
    cols: &[&str],
    widths: &[usize],
    cells: impl Fn(&T) -> Vec<String>,
) -> CmdResult {
    match stream_rows(c, path, out, cols, widths, cells) {
        Err(e) if e.is_empty() => Ok(()), // the reader went away (`| head`)
        r => r,
    }
}

fn stream_rows<T: serde::de::DeserializeOwned + serde::Serialize>(
    c: &Client,
    path: &str,
    out: Output,
    cols: &[&str],
    widths: &[usize],
    cells: impl Fn(&T) -> Vec<String>,
) -> CmdResult {
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let header: Vec<String> = cols.iter().map(|s| (*s).to_owned()).collect();
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::BrokenPipe => "".to_owned(),
        _ => e.to_string(),
    };
    // The header goes out with the first row (or at the end): a refusal prints
    // only its message.
    let head = |w: &mut dyn Write| match out {
        Output::Json => write!(w, "["),
        Output::Csv => write!(w, "{}", csv_line(&header)),
        Output::Table => write!(w, "{}", fixed_line(&header, widths)),
    };
    let mut rows = 0u64;
    c.lines(path, |row: T| {
        if rows == 0 {
            head(&mut w).map_err(io)?;
        }
        let r = match out {
            Output::Json => {
                let sep = if rows == 0 { "\n  " } else { ",\n  " };
                write!(
                    w,
                    "{sep}{}",
                    serde_json::to_string(&row).unwrap_or_default()
                )
            }
            Output::Csv => write!(w, "{}", csv_line(&cells(&row))),
            Output::Table => write!(w, "{}", fixed_line(&cells(&row), widths)),
        };
        rows += 1;
        r.map_err(io)
    })?;
    if rows == 0 {
        head(&mut w).map_err(io)?;
    }
    if out == Output::Json {
        writeln!(w, "{}]", if rows == 0 { "" } else { "\n" }).map_err(io)?;
    }
    w.flush().map_err(io)
}

/// `show sync`'s line about the node itself: its state, the drain's
/// progress, and what it announces (docs/ha.md, "Failover and scale-out").
pub fn node_line(s: &SyncState) -> String {
    let mut line = format!("node {}: {}", s.node_id, s.state);
    if s.state == "draining" || s.state == "drained" {
        let live = s.peers.iter().filter(|p| p.up || p.drain_acked).count();
        let acked = s.peers.iter().filter(|p| p.drain_acked).count();
        line += &format!(", {acked} of {live} live peers acknowledged the drain");
    }
    match s.announce_table {
        Some(t) if s.announcing => {
            line += &format!(", announcing {} in table {t}", s.announce_routes.join(", "))
        }
        Some(t) => line += &format!(", not announcing (table {t})"),
        None => line += ", announcing: no (no announce_table)",
    }
    line
}
