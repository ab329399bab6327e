//! sixgate's offline data plane: read a capture, run every packet through the
//! translator core, write what comes out to another capture.
//!
//! Each input packet is copied into one reusable buffer at [`HEADROOM`], wrapped in a
//! [`PacketBuf`] and handed to [`Translator::translate`] with the capture timestamp as
//! the clock, so rate limits (and so the output) are the same on every run. Outputs
//! are written as LINKTYPE_RAW with the input packet's timestamp, in order.
//!
//! In mode nat64 the capture's clock also drives the translator's timers
//! ([`Translator::tick`]): before each packet the clock advances from the previous
//! packet's time in [`TICK_NS`] steps (coarser across gaps longer than
//! [`MAX_TICKS_PER_GAP`] steps), so sessions expire and held SYNs are answered
//! (RFC 6146 §3.5.2.2) at the capture time they fall due, and what the timers send
//! is written with that time. Time does not run past the last packet.
//!
//! Input: pcap or pcapng with link type RAW (101), IPV4 (228), IPV6 (229),
//! ETHERNET (1, one 802.1Q tag), LINUX_SLL (113) or LINUX_SLL2 (276).

use std::fmt;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};
use serde::Serialize;
use sixgate_core::{Config, DropReason, HEADROOM, PacketBuf, Scratch, Translator, Verdict};

mod classic;
mod cut_short;
mod link;
mod source;

pub use classic::MAX_CAPLEN;
pub use cut_short::CutShort;

use link::{L3, Link};
use source::{Frame, Source};

/// Largest IP packet the offline mode takes (the IPv4 and IPv6 length fields' limit).
pub const MAX_PACKET: usize = 65_535;

/// Snap length of the output capture: room for the largest packet after growth.
const OUTPUT_SNAPLEN: u32 = 262_144;

/// Timer resolution: the data planes call [`Translator::tick`] at least this often.
pub const TICK_NS: u64 = 100_000_000;

/// Most clock steps between two packets; a longer gap is crossed in larger steps,
/// so a capture with a day-long pause costs no more than one with a 1000 s pause.
pub const MAX_TICKS_PER_GAP: u64 = 10_000;

/// What a run did. Counts of translation outcomes come from the translator's own counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Frames read from the input.
    pub input_packets: u64,
    /// Frames that carried no IP packet (e.g. ARP); not given to the translator.
    pub skipped_non_ip: u64,
    /// Frames the capture cut short (captured length < length on the wire); not translated.
    pub skipped_truncated: u64,
    /// IP packets longer than [`MAX_PACKET`]; not translated.
    pub skipped_oversize: u64,
    /// IPv6 packets translated to IPv4.
    pub translated_6to4: u64,
    /// IPv4 packets translated to IPv6.
    pub translated_4to6: u64,
    /// Packets hairpinned back into IPv6 (RFC 7757 §4).
    pub hairpinned: u64,
    /// Fragments produced by RFC 7915 fragmentation.
    pub fragments_out: u64,
    /// ICMP errors the translator generated.
    pub icmp_generated: u64,
    /// Packets the translator's timers sent (NAT64: ICMP Port Unreachable for a
    /// held IPv4 SYN whose 6 s ran out, RFC 6146 §3.5.2.2); also in `packets_written`.
    pub timer_packets: u64,
    /// Packets written to the output.
    pub packets_written: u64,
    /// Packets dropped by the translator, all reasons.
    pub dropped_total: u64,
    /// Drops per reason ([`DropReason::as_str`] names), non-zero only, in counter order.
    pub dropped: DropCounts,
    /// NAT64 tables when the capture ended (mode nat64 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nat64: Option<Nat64Tables>,
    /// Where the capture stopped before its end (the packets before it were
    /// translated); absent for a capture read to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<CutShort>,
}

/// The NAT64 state left when the capture ended (RFC 6146 §3.1 tables).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Nat64Tables {
    /// BIB entries, all protocols (static ones included).
    pub bib_entries: u64,
    /// Sessions, all protocols.
    pub sessions: u64,
    /// IPv4 SYNs still held for a simultaneous open.
    pub held_syns: u64,
}

/// Drops per reason, in [`DropReason::ALL`] order; serialised as a JSON object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DropCounts(pub Vec<(&'static str, u64)>);

impl Serialize for DropCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Why an offline run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum OfflineError {
    /// The input starts with neither a pcap nor a pcapng magic number.
    NotACapture(String),
    /// The input could not be read or parsed.
    ReadInput(String),
    /// The capture's link layer is not one the offline mode understands.
    UnsupportedLinkType {
        /// Link type number (LINKTYPE_*).
        code: u32,
        /// Its name, as pcap-file knows it.
        name: String,
    },
    /// The output could not be written.
    WriteOutput(String),
}

impl OfflineError {
    fn from_read(e: &PcapError) -> Self {
        OfflineError::ReadInput(describe_pcap_error(e))
    }

    fn from_write(e: &PcapError) -> Self {
        OfflineError::WriteOutput(describe_pcap_error(e))
    }

    fn unsupported(dl: DataLink) -> Self {
        OfflineError::UnsupportedLinkType {
            code: u32::from(dl),
            name: format!("{dl:?}"),
        }
    }
}

fn describe_pcap_error(e: &PcapError) -> String {
    match e {
        PcapError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the capture ends in the middle of a header or packet record".to_owned()
        }
        PcapError::IoError(io) => io.to_string(),
        PcapError::IncompleteBuffer => {
            "the capture ends in the middle of a header or packet record".to_owned()
        }
        other => other.to_string(),
    }
}

impl fmt::Display for OfflineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OfflineError::NotACapture(why) => {
                write!(f, "input is not a pcap or pcapng capture: {why}")
            }
            OfflineError::ReadInput(why) => write!(f, "cannot read input capture: {why}"),
            OfflineError::UnsupportedLinkType { code, name } => write!(
                f,
                "unsupported link type {name} ({code}); expected {}",
                link::SUPPORTED
            ),
            OfflineError::WriteOutput(why) => write!(f, "cannot write output capture: {why}"),
        }
    }
}

impl std::error::Error for OfflineError {}

/// IP version of an input packet, from its first nibble.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
    /// Neither (or no IP packet at all).
    Other,
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
            Family::Other => "-",
        })
    }
}

/// What happened to one input packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Given to the translator, which returned this.
    Verdict(Verdict),
    /// Not IP; the ethertype if the frame had one.
    SkippedNonIp(Option<u16>),
    /// Captured length shorter than the length on the wire.
    SkippedTruncated {
        /// Bytes captured.
        captured: u32,
        /// Bytes on the wire.
        wire: u32,
    },
    /// IP packet longer than [`MAX_PACKET`].
    SkippedOversize(usize),
    /// Not an input packet: the translator's timers sent a packet (the trace's
    /// addresses are the sent packet's; its `index` is the last input packet before).
    Timer(DropReason),
}

/// One line of the per-packet trace (`sixgate translate --verbose`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketTrace {
    /// 1-based position in the input, as Wireshark numbers frames.
    pub index: u64,
    /// Capture time, nanoseconds since the epoch.
    pub ts_ns: u64,
    /// IP version of the input packet.
    pub family: Family,
    /// Source address, if the header was long enough to hold it.
    pub src: Option<IpAddr>,
    /// Destination address, if the header was long enough to hold it.
    pub dst: Option<IpAddr>,
    /// What became of it.
    pub outcome: Outcome,
    /// Packets written for it.
    pub written: usize,
}

impl fmt::Display for PacketTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = |a: Option<IpAddr>| a.map_or_else(|| "?".to_owned(), |a| a.to_string());
        if matches!(self.outcome, Outcome::Timer(_)) {
            write!(f, "{:>6} {} ", "timer", self.family)?;
        } else {
            write!(f, "{:>6} {} ", self.index, self.family)?;
        }
        if self.family != Family::Other {
            write!(f, "{} -> {} ", addr(self.src), addr(self.dst))?;
        }
        match self.outcome {
            Outcome::Verdict(Verdict::Translated) => write!(f, "translated"),
            Outcome::Verdict(Verdict::Fragmented(n)) => write!(f, "translated into {n} fragments"),
            Outcome::Verdict(Verdict::Dropped(r)) => write!(f, "dropped: {}", r.as_str()),
            Outcome::Verdict(Verdict::Replied(r)) => {
                write!(f, "dropped: {}, answered with an ICMP error", r.as_str())
            }
            Outcome::Verdict(Verdict::Held) => {
                write!(
                    f,
                    "held: first fragment of an ICMP Echo, until its last one"
                )
            }
            Outcome::SkippedNonIp(Some(et)) => write!(f, "skipped: not IP (ethertype {et:#06x})"),
            Outcome::SkippedNonIp(None) => {
                write!(f, "skipped: frame too short for its link header")
            }
            Outcome::SkippedTruncated { captured, wire } => {
                write!(f, "skipped: truncated capture ({captured} of {wire} bytes)")
            }
            Outcome::SkippedOversize(n) => {
                write!(f, "skipped: {n}-byte packet exceeds {MAX_PACKET}")
            }
            Outcome::Timer(r) => write!(f, "sent by a timer ({})", r.as_str()),
        }
    }
}

/// Translate the capture `input` into `output` (pcap, LINKTYPE_RAW).
pub fn translate_pcap(
    cfg: Arc<Config>,
    input: impl Read,
    output: impl Write,
) -> Result<Summary, OfflineError> {
    translate_pcap_traced(cfg, input, output, |_| {})
}

/// [`translate_pcap`], calling `trace` once per input packet, in order.
pub fn translate_pcap_traced(
    cfg: Arc<Config>,
    input: impl Read,
    output: impl Write,
    mut trace: impl FnMut(&PacketTrace),
) -> Result<Summary, OfflineError> {
    let mut source = Source::open(input)?;
    if let Some(dl) = source.file_link() {
        Link::from_datalink(dl).ok_or_else(|| OfflineError::unsupported(dl))?;
    }
    let mut out = Output::new(output, source.ts_resolution())?;
    let mut engine = Engine::new(cfg);
    while source
        .next_frame(|frame| engine.process(frame, &mut out, &mut trace))?
        .is_some()
    {}
    out.finish()?;
    Ok(Summary {
        cut_short: source.cut_short(),
        ..engine.summary()
    })
}

/// The output capture: pcap, LINKTYPE_RAW, little-endian, the input's timestamp resolution.
struct Output<W: Write> {
    writer: PcapWriter<W>,
    written: u64,
}

impl<W: Write> Output<W> {
    fn new(w: W, ts_resolution: TsResolution) -> Result<Self, OfflineError> {
        let header = PcapHeader {
            datalink: DataLink::RAW,
            snaplen: OUTPUT_SNAPLEN,
            ts_resolution,
            endianness: Endianness::Little,
            ..PcapHeader::default()
        };
        let writer =
            PcapWriter::with_header(w, header).map_err(|e| OfflineError::from_write(&e))?;
        Ok(Output { writer, written: 0 })
    }

    fn write(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), OfflineError> {
        let p = PcapPacket::new(Duration::from_nanos(ts_ns), data.len() as u32, data);
        self.writer
            .write_packet(&p)
            .map_err(|e| OfflineError::from_write(&e))?;
        self.written += 1;
        Ok(())
    }

    fn finish(self) -> Result<W, OfflineError> {
        let mut w = self.writer.into_writer();
        w.flush()
            .map_err(|e| OfflineError::WriteOutput(e.to_string()))?;
        Ok(w)
    }
}

/// The per-run state: translator, buffers and the counts the translator does not keep.
struct Engine {
    translator: Translator,
    scratch: Scratch,
    buf: Box<[u8]>,
    input_packets: u64,
    skipped_non_ip: u64,
    skipped_truncated: u64,
    skipped_oversize: u64,
    packets_written: u64,
    timer_packets: u64,
    /// The timers' clock: the capture time they were last run at (NAT64 only).
    clock_ns: Option<u64>,
    timers: bool,
}

impl Engine {
    fn new(cfg: Arc<Config>) -> Self {
        Engine {
            // A MAP-T CE's NAPT44 has NAT64's tables and timers.
            timers: cfg.nat64.is_some() || cfg.mapt.as_ref().is_some_and(|m| m.ce().is_some()),
            timer_packets: 0,
            clock_ns: None,
            translator: Translator::new(cfg),
            scratch: Scratch::new(),
            buf: vec![0; HEADROOM + MAX_PACKET].into_boxed_slice(),
            input_packets: 0,
            skipped_non_ip: 0,
            skipped_truncated: 0,
            skipped_oversize: 0,
            packets_written: 0,
        }
    }

    fn process<W: Write>(
        &mut self,
        frame: Frame<'_>,
        out: &mut Output<W>,
        trace: &mut impl FnMut(&PacketTrace),
    ) -> Result<(), OfflineError> {
        self.advance_clock(frame.ts_ns, out, trace)?;
        self.input_packets += 1;
        let link =
            Link::from_datalink(frame.link).ok_or_else(|| OfflineError::unsupported(frame.link))?;
        let mut t = PacketTrace {
            index: self.input_packets,
            ts_ns: frame.ts_ns,
            family: Family::Other,
            src: None,
            dst: None,
            outcome: Outcome::SkippedNonIp(None),
            written: 0,
        };
        if (frame.data.len() as u64) < u64::from(frame.orig_len) {
            self.skipped_truncated += 1;
            t.outcome = Outcome::SkippedTruncated {
                captured: frame.data.len() as u32,
                wire: frame.orig_len,
            };
            trace(&t);
            return Ok(());
        }
        let ip = match link::l3(link, frame.data) {
            L3::Ip(ip) => ip,
            L3::NotIp(et) => {
                self.skipped_non_ip += 1;
                t.outcome = Outcome::SkippedNonIp(et);
                trace(&t);
                return Ok(());
            }
        };
        (t.family, t.src, t.dst) = addresses(ip);
        if ip.len() > MAX_PACKET {
            self.skipped_oversize += 1;
            t.outcome = Outcome::SkippedOversize(ip.len());
            trace(&t);
            return Ok(());
        }

        self.buf[HEADROOM..HEADROOM + ip.len()].copy_from_slice(ip);
        let mut pkt = PacketBuf::new(&mut self.buf, HEADROOM, ip.len());
        let verdict = self
            .translator
            .translate(&mut pkt, &mut self.scratch, frame.ts_ns);
        for p in verdict.outputs(pkt.data(), &self.scratch) {
            out.write(frame.ts_ns, p)?;
            t.written += 1;
        }
        self.packets_written += t.written as u64;
        t.outcome = Outcome::Verdict(verdict);
        trace(&t);
        Ok(())
    }

    /// Run the timers up to `ts_ns` in [`TICK_NS`] steps (RFC 6146 §3.5: the
    /// data plane's side of session expiry and held SYNs), writing what they send.
    fn advance_clock<W: Write>(
        &mut self,
        ts_ns: u64,
        out: &mut Output<W>,
        trace: &mut impl FnMut(&PacketTrace),
    ) -> Result<(), OfflineError> {
        if !self.timers {
            return Ok(());
        }
        let Some(mut now) = self.clock_ns else {
            self.clock_ns = Some(ts_ns);
            return self.run_timers(ts_ns, out, trace);
        };
        // A capture may go back in time; the timers' clock does not.
        let gap = ts_ns.saturating_sub(now);
        let step = TICK_NS.max(gap.div_ceil(MAX_TICKS_PER_GAP));
        while now < ts_ns {
            now = now.saturating_add(step).min(ts_ns);
            self.run_timers(now, out, trace)?;
        }
        self.clock_ns = Some(now);
        Ok(())
    }

    /// [`Translator::tick`] at `now` until it has nothing more to do.
    fn run_timers<W: Write>(
        &mut self,
        now: u64,
        out: &mut Output<W>,
        trace: &mut impl FnMut(&PacketTrace),
    ) -> Result<(), OfflineError> {
        while let Some(v) = self.translator.tick(now, &mut self.scratch) {
            let Verdict::Replied(reason) = v else {
                continue;
            };
            for p in self.scratch.packets() {
                out.write(now, p)?;
                self.timer_packets += 1;
                self.packets_written += 1;
                let (family, src, dst) = addresses(p);
                trace(&PacketTrace {
                    index: self.input_packets,
                    ts_ns: now,
                    family,
                    src,
                    dst,
                    outcome: Outcome::Timer(reason),
                    written: 1,
                });
            }
        }
        Ok(())
    }

    fn summary(&self) -> Summary {
        let c = self.translator.counters();
        Summary {
            input_packets: self.input_packets,
            skipped_non_ip: self.skipped_non_ip,
            skipped_truncated: self.skipped_truncated,
            skipped_oversize: self.skipped_oversize,
            translated_6to4: c.translated_6to4,
            translated_4to6: c.translated_4to6,
            hairpinned: c.hairpinned,
            fragments_out: c.fragments_out,
            icmp_generated: c.icmp_generated,
            timer_packets: self.timer_packets,
            packets_written: self.packets_written,
            dropped_total: c.total_drops(),
            dropped: DropCounts(
                DropReason::ALL
                    .iter()
                    .map(|&r| (r.as_str(), c.drops(r)))
                    .filter(|&(_, n)| n > 0)
                    .collect(),
            ),
            nat64: self.timers.then(|| {
                let s = if self.translator.config().nat64.is_some() {
                    self.translator.nat64_stats()
                } else {
                    self.translator.napt44_stats()
                };
                Nat64Tables {
                    bib_entries: s.bib.total(),
                    sessions: s.sessions.total(),
                    held_syns: s.held_syns,
                }
            }),
            cut_short: None,
        }
    }
}

/// Family and addresses of an IP packet, as far as its bytes go.
fn addresses(ip: &[u8]) -> (Family, Option<IpAddr>, Option<IpAddr>) {
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let a = |at: usize| {
                let b: [u8; 4] = ip.get(at..at + 4)?.try_into().ok()?;
                Some(IpAddr::V4(Ipv4Addr::from(b)))
            };
            (Family::V4, a(12), a(16))
        }
        Some(6) => {
            let a = |at: usize| {
                let b: [u8; 16] = ip.get(at..at + 16)?.try_into().ok()?;
                Some(IpAddr::V6(Ipv6Addr::from(b)))
            };
            (Family::V6, a(8), a(24))
        }
        _ => (Family::Other, None, None),
    }
}

#[cfg(test)]
mod tests;
