//! `sixgate translate`: the offline data plane, from one capture file to another.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sixgate_pcap::{OfflineError, PacketTrace, Summary};

use super::CmdResult;

/// Arguments of `sixgate translate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (TOML, see docs/config.md).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Capture to translate: pcap or pcapng; link type raw IP, Ethernet or Linux SLL.
    #[arg(long, value_name = "IN.pcap")]
    pub input: PathBuf,
    /// Where to write the translated packets (pcap, raw IP). Replaced if it exists.
    #[arg(long, value_name = "OUT.pcap")]
    pub output: PathBuf,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print one line per input packet: number, family, source -> destination, verdict
    /// (on standard error with --json, so the JSON stays clean).
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn run(args: &Args) -> CmdResult {
    let loaded = sixgate_config::load(&args.config).map_err(|e| e.to_string())?;
    for w in &loaded.warnings {
        eprintln!("{w}");
    }
    // Offline there is no network to discover a CLAT's PLAT prefix (RFC 7050) from.
    if loaded.clat.is_some() && loaded.config.map.pool6.is_none() {
        return Err(format!(
            "{}: the CLAT discovers its PLAT prefix at run time, which the offline mode \
             cannot; expected [translator] pool6 (the fallback) to translate with",
            args.config.display()
        ));
    }
    // Likewise the default pool4 is the gateway's own address, found at run time.
    if loaded
        .config
        .nat64
        .as_ref()
        .is_some_and(|n| n.pool4.is_empty())
    {
        return Err(format!(
            "{}: [nat64] has no pool4 key; its default (the gateway's own IPv4 address, \
             ports 61001-65535) is found by `sixgate run`, which the offline mode cannot; \
             expected [nat64] pool4, e.g. pool4 = [\"203.0.113.1\"]",
            args.config.display()
        ));
    }
    let input = File::open(&args.input)
        .map_err(|e| format!("{}: cannot open input capture: {e}", args.input.display()))?;
    if same_file(&args.input, &args.output) {
        return Err(format!(
            "{}: --output names the input capture; expected a different file",
            args.output.display()
        ));
    }
    let output = File::create(&args.output).map_err(|e| {
        format!(
            "{}: cannot create output capture: {e}",
            args.output.display()
        )
    })?;

    let json = args.json;
    let trace = |t: &PacketTrace| {
        if json {
            eprintln!("{t}");
        } else {
            println!("{t}");
        }
    };
    let trace: &mut dyn FnMut(&PacketTrace) = if args.verbose {
        &mut { trace }
    } else {
        &mut |_| {}
    };
    // A MAP-T CE's NAPT44 keeps NAT64's tables: the summary names them so.
    let tables = match loaded.mode {
        sixgate_config::Mode::MaptCe => "NAPT44",
        _ => "NAT64",
    };
    let result = sixgate_pcap::translate_pcap_traced(
        Arc::new(loaded.config),
        BufReader::new(input),
        BufWriter::new(output),
        trace,
    );
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            // Leave no half-written capture behind.
            let _ = std::fs::remove_file(&args.output);
            let file = match e {
                OfflineError::WriteOutput(_) => &args.output,
                _ => &args.input,
            };
            return Err(format!("{}: {e}", file.display()));
        }
    };

    if json {
        let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", table(&summary, args, tables));
    }
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    // A capture cut short (a killed tcpdump) is normal: a warning. A damaged
    // record header is not: the output and summary stand, the exit status is 1.
    match summary.cut_short {
        Some(c) if c.bad_caplen.is_some() => Err(format!("{}: {c}", args.input.display())),
        Some(c) => {
            eprintln!("{}: warning: {c}", args.input.display());
            Ok(())
        }
        None => Ok(()),
    }
}

/// True if both paths name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The human summary: one aligned row per count, drops broken down by reason;
/// `tables` names the stateful tables (NAT64, or a MAP-T CE's NAPT44).
fn table(s: &Summary, args: &Args, tables: &str) -> String {
    let mut rows: Vec<(String, u64)> = vec![
        ("input packets".into(), s.input_packets),
        ("skipped, not IP".into(), s.skipped_non_ip),
        ("skipped, truncated".into(), s.skipped_truncated),
    ];
    if s.skipped_oversize > 0 {
        rows.push(("skipped, over 65535 bytes".into(), s.skipped_oversize));
    }
    rows.extend([
        ("translated 6->4".into(), s.translated_6to4),
        ("translated 4->6".into(), s.translated_4to6),
        ("hairpinned".into(), s.hairpinned),
        ("fragments out".into(), s.fragments_out),
        ("ICMP errors generated".into(), s.icmp_generated),
    ]);
    if s.timer_packets > 0 {
        rows.push(("sent by timers".into(), s.timer_packets));
    }
    rows.extend([
        ("packets written".into(), s.packets_written),
        ("dropped".into(), s.dropped_total),
    ]);
    rows.extend(s.dropped.0.iter().map(|&(r, n)| (format!("  {r}"), n)));
    if let Some(n) = s.nat64 {
        rows.extend([
            (format!("{tables} BIB entries at end"), n.bib_entries),
            (format!("{tables} sessions at end"), n.sessions),
            (format!("{tables} held SYNs at end"), n.held_syns),
        ]);
    }

    let label_w = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let num_w = rows
        .iter()
        .map(|(_, n)| n.to_string().len())
        .max()
        .unwrap_or(1);
    let mut out = format!("{} -> {}\n", args.input.display(), args.output.display());
    for (label, n) in rows {
        out.push_str(&format!("  {label:<label_w$}  {n:>num_w$}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sixgate_pcap::DropCounts;

    #[test]
    fn table_is_aligned_and_lists_drop_reasons() {
        let s = Summary {
            input_packets: 12,
            translated_6to4: 3,
            dropped_total: 120,
            dropped: DropCounts(vec![("hop_limit_exceeded", 1), ("routing_header", 119)]),
            ..Summary::default()
        };
        let args = Args {
            config: "c.toml".into(),
            input: "in.pcap".into(),
            output: "out.pcap".into(),
            json: false,
            verbose: false,
        };
        let t = table(&s, &args, "NAT64");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "in.pcap -> out.pcap");
        assert!(lines.contains(&"  input packets           12"), "{t}");
        assert!(lines.contains(&"    routing_header       119"), "{t}");
        assert!(lines.contains(&"    hop_limit_exceeded     1"), "{t}");
        // Every value ends in the same column.
        let ends: Vec<usize> = lines[1..].iter().map(|l| l.len()).collect();
        assert!(ends.windows(2).all(|w| w[0] == w[1]), "{t}");
        assert!(!t.contains("over 65535"), "oversize row only when non-zero");
        assert!(!t.contains("timers") && !t.contains("NAT64"), "{t}");

        let s = Summary {
            timer_packets: 1,
            nat64: Some(sixgate_pcap::Nat64Tables {
                bib_entries: 2,
                sessions: 3,
                held_syns: 0,
            }),
            ..s
        };
        let t = table(&s, &args, "NAT64");
        assert!(t.contains("  sent by timers              1\n"), "{t}");
        assert!(t.contains("  NAT64 sessions at end       3\n"), "{t}");
    }
}
