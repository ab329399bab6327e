//! What a run reports: the JSON document (`--json`), the per-trial CSV
//! (`--csv`) and the human table on standard output.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::measure::{LatencyResult, LossPoint, Stateful, Throughput, TrialRow};

/// The machine a run measured on.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Machine {
    pub cpus: usize,
    pub model: String,
    pub kernel: String,
    pub load_average: String,
}

impl Machine {
    pub fn here() -> Machine {
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_default();
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default();
        let load_average = std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            model,
            kernel,
            load_average,
        }
    }
}

/// A whole run. Only the summary fields are read back by `sixgate bench plot`,
/// so the detailed ones are kept as JSON values there.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: String,
    pub command: String,
    pub started_unix_s: u64,
    pub machine: Machine,
    pub bed: String,
    pub dut: String,
    pub dut_setup: Vec<String>,
    /// The tester's own ceiling (self-test), frames/s per direction.
    pub tester_ceiling_fps: Option<u64>,
    pub settings: crate::measure::Settings,
    pub throughput: Vec<Throughput>,
    pub frame_loss: Vec<LossPoint>,
    pub latency: Vec<LatencyResult>,
    pub stateful: Option<Stateful>,
    pub trials: Vec<TrialRow>,
}

fn k(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.3} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// "background R of S received" (RFC 8219 §5.2), or nothing without any.
fn background(sent: u64, received: u64) -> String {
    if sent == 0 {
        String::new()
    } else {
        format!("background {received} of {sent} received")
    }
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

impl Report {
    /// The per-trial CSV.
    pub fn csv(&self) -> String {
        let mut s = String::from(TrialRow::HEADER);
        s.push('\n');
        for t in &self.trials {
            s.push_str(&t.csv());
            s.push('\n');
        }
        s
    }

    /// The human summary.
    pub fn table(&self) -> String {
        let mut o = String::new();
        let dirs = if self.settings.bidirectional {
            "bidirectional"
        } else {
            "unidirectional"
        };
        let _ = writeln!(
            o,
            "DUT: {} — {}",
            self.dut,
            self.bed.lines().next().unwrap_or("")
        );
        let _ = writeln!(
            o,
            "machine: {} CPUs ({}), kernel {}, load {}; {dirs}, {} s trials",
            self.machine.cpus,
            self.machine.model,
            self.machine.kernel,
            self.machine.load_average,
            self.settings.duration_s
        );
        if self.settings.background_pct > 0.0 {
            let _ = writeln!(
                o,
                "background traffic (RFC 8219 §5.2): {} % of the left tester's frames are native IPv6, forwarded untranslated; in every figure below",
                self.settings.background_pct
            );
        }
        if let Some(c) = self.tester_ceiling_fps {
            let _ = writeln!(
                o,
                "tester ceiling (self-test): {} fps per direction",
                k(c as f64)
            );
        }
        if !self.throughput.is_empty() {
            let _ = writeln!(o, "\nThroughput (RFC 8219 §7.1), frames/s per direction:");
            let _ = writeln!(
                o,
                "{:>8} {:>8} {:>12} {:>12} {:>12} {:>5}  note",
                "IPv6 B", "IPv4 B", "median", "1st pct", "99th pct", "reps"
            );
            for t in &self.throughput {
                let (m, p1, p99, n) = t
                    .fps
                    .map(|s| (k(s.median), k(s.p1), k(s.p99), s.count))
                    .unwrap_or(("-".into(), "-".into(), "-".into(), 0));
                let mut notes = Vec::new();
                if t.tester_limited {
                    notes.push("tester-limited");
                }
                if t.searches.iter().any(|s| s.max_rate_passed) {
                    notes.push("max rate passed: raise --max-rate");
                }
                if t.searches.iter().any(|s| s.timed_out) {
                    notes.push("timed out");
                }
                let background = background(t.background_sent, t.background_received);
                if !background.is_empty() {
                    notes.push(&background);
                }
                let _ = writeln!(
                    o,
                    "{:>8} {:>8} {:>12} {:>12} {:>12} {:>5}  {}",
                    t.frame_size,
                    t.frame_size_v4,
                    m,
                    p1,
                    p99,
                    n,
                    notes.join(", ")
                );
            }
        }
        if !self.frame_loss.is_empty() {
            let _ = writeln!(o, "\nFrame loss rate (RFC 8219 §7.5):");
            let _ = writeln!(
                o,
                "{:>8} {:>12} {:>12} {:>12} {:>9}",
                "IPv6 B", "rate", "sent", "received", "loss %"
            );
            for p in &self.frame_loss {
                let mut notes = vec![background(p.background_sent, p.background_received)];
                if !p.valid {
                    notes.push("invalid (tester behind)".into());
                }
                notes.retain(|n| !n.is_empty());
                let _ = writeln!(
                    o,
                    "{:>8} {:>12} {:>12} {:>12} {:>9.4}{}{}",
                    p.frame_size,
                    k(p.rate as f64),
                    p.sent,
                    p.received,
                    p.loss_pct,
                    if notes.is_empty() { "" } else { "  " },
                    notes.join(", ")
                );
            }
        }
        if !self.latency.is_empty() {
            let _ = writeln!(
                o,
                "\nLatency (RFC 8219 §7.2), PDV (§7.3), IPDV (§7.4), microseconds:"
            );
            let _ = writeln!(
                o,
                "{:>8} {:>10} {:<14} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10}",
                "IPv6 B",
                "rate",
                "direction",
                "tagged",
                "typical",
                "worst",
                "PDV",
                "IPDV med",
                "IPDV 99.9"
            );
            for l in &self.latency {
                let t = l.tagged.unwrap_or_default();
                let a = l.all.unwrap_or_default();
                let _ = writeln!(
                    o,
                    "{:>8} {:>10} {:<14} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10}{}",
                    l.frame_size,
                    k(l.rate as f64),
                    l.direction,
                    t.samples,
                    us(t.typical_ns),
                    us(t.worst_ns),
                    us(a.pdv_ns),
                    us(a.ipdv_median_ns),
                    us(a.ipdv_p999_ns),
                    [
                        if l.tagged_lost > 0 {
                            format!("  {} tagged frames lost", l.tagged_lost)
                        } else {
                            String::new()
                        },
                        match background(l.background_sent, l.background_received) {
                            b if b.is_empty() => b,
                            b => format!("  {b}"),
                        }
                    ]
                    .concat()
                );
            }
        }
        if let Some(s) = &self.stateful {
            let _ = writeln!(o, "\nStateful (RFC 9693):");
            let _ = writeln!(
                o,
                "  phase 1: {} connections offered at {} fps, {} established",
                s.connections,
                k(s.phase1_rate as f64),
                s.established
            );
            if let Some(r) = &s.max_establishment_rate {
                let _ = writeln!(
                    o,
                    "  maximum connection establishment rate: {} connections/s",
                    k(r.rate as f64)
                );
            }
            if let Some(c) = s.table_capacity {
                let _ = writeln!(
                    o,
                    "  connection tracking table capacity: {c} connections (or more: the search's maximum)"
                );
            }
            if let Some(t) = s.teardown_rate {
                let _ = writeln!(o, "  connection tear-down rate: {} connections/s", k(t));
            }
            for n in &s.notes {
                let _ = writeln!(o, "  note: {n}");
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(k(999.0), "999");
        assert_eq!(k(250_400.0), "250.4 k");
        assert_eq!(k(1_250_000.0), "1.250 M");
        assert_eq!(us(1500), "1.5");
    }
}
