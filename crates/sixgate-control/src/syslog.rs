//! A log sink to the local syslog socket (`/dev/log`): one datagram per record in
//! the form glibc's syslog(3) sends, RFC 3164 §4.1 without the hostname:
//! `<PRI>Mmm dd hh:mm:ss sixgate[PID]: MESSAGE`. Facility `daemon` (RFC 5424
//! §6.2.1 table 1: 3), severity from the record's level. The socket is
//! non-blocking: when the syslog daemon falls behind, a record is dropped
//! rather than stalling the thread that logs it (a worker, for NAT64 events).

use std::io::{self, Write};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// RFC 5424 §6.2.1: facility 3, "system daemons".
const FACILITY_DAEMON: u8 = 3;

/// RFC 5424 §6.2.1 table 2 severity for a tracing level.
pub fn severity(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// One datagram: `<PRI>TIMESTAMP TAG: MSG` (RFC 3164 §4.1.1 PRI = facility × 8 +
/// severity; §4.1.2 TIMESTAMP, local time, day padded with a space).
pub fn frame(severity: u8, timestamp: &str, tag: &str, msg: &str) -> Vec<u8> {
    let pri = u16::from(FACILITY_DAEMON) * 8 + u16::from(severity);
    format!("<{pri}>{timestamp} {tag}: {}", msg.trim_end_matches('\n')).into_bytes()
}

/// The RFC 3164 TIMESTAMP of now, local time: `Nov  2 13:56:42`.
fn timestamp() -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // SAFETY: `time` with a null pointer only returns the time; `localtime_r`
    // writes into our own `tm` and returns null on failure, which we check.
    let tm = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return "Jan  1 00:00:00".into();
        }
        tm
    };
    format!(
        "{} {:>2} {:02}:{:02}:{:02}",
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// The sink: a `MakeWriter` for tracing-subscriber's fmt layer.
#[derive(Debug)]
pub struct Syslog {
    sock: UnixDatagram,
    path: PathBuf,
    tag: String,
}

impl Syslog {
    /// Connect to the syslog socket at `path`; an error names it.
    pub fn open(path: &Path) -> Result<Syslog, String> {
        let e = |e: io::Error| format!("[log] syslog socket {}: {e}", path.display());
        let sock = UnixDatagram::unbound().map_err(e)?;
        sock.connect(path).map_err(e)?;
        sock.set_nonblocking(true).map_err(e)?;
        Ok(Syslog {
            sock,
            path: path.to_path_buf(),
            tag: format!("sixgate[{}]", std::process::id()),
        })
    }

    fn send(&self, severity: u8, msg: &[u8]) {
        let d = frame(
            severity,
            &timestamp(),
            &self.tag,
            &String::from_utf8_lossy(msg),
        );
        if let Err(e) = self.sock.send(&d)
            && e.kind() != io::ErrorKind::WouldBlock
        {
            // The daemon restarted (its socket is new): connect again, once.
            if self.sock.connect(&self.path).is_ok() {
                let _ = self.sock.send(&d);
            }
        }
    }
}

/// One record being formatted; sent when the fmt layer drops it.
pub struct Line<'a> {
    sink: &'a Syslog,
    severity: u8,
    buf: Vec<u8>,
}

impl Write for Line<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            self.sink.send(self.severity, &self.buf);
        }
    }
}

impl<'a> MakeWriter<'a> for Syslog {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        self.make_line(6)
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Line<'a> {
        self.make_line(severity(meta.level()))
    }
}

impl Syslog {
    fn make_line(&self, severity: u8) -> Line<'_> {
        Line {
            sink: self,
            severity,
            buf: Vec::with_capacity(256),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3164_s4_1_1_pri_is_facility_times_8_plus_severity() {
        let d = frame(
            severity(&Level::WARN),
            "Nov 22 13:56:42",
            "sixgate[7]",
            "hi\n",
        );
        assert_eq!(d, b"<28>Nov 22 13:56:42 sixgate[7]: hi");
        assert_eq!(frame(3, "x", "t", "m")[..4], *b"<27>");
        assert_eq!(severity(&Level::INFO), 6);
        assert_eq!(severity(&Level::TRACE), 7);
    }

    #[test]
    fn rfc3164_s4_1_2_timestamp_shape() {
        let t = timestamp();
        assert_eq!(t.len(), 15, "{t:?}");
        assert_eq!(&t[3..4], " ");
        assert_eq!(&t[9..10], ":");
    }

    #[test]
    fn one_datagram_per_record_with_its_severity() {
        let dir = std::env::temp_dir().join(format!("sixgate-syslog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.sock");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        let sink = Syslog::open(&path).unwrap();
        {
            let mut l = sink.make_line(3);
            l.write_all(b"ERROR worker 0 ").unwrap();
            l.write_all(b"failed\n").unwrap();
        }
        let mut b = [0u8; 256];
        let n = rx.recv(&mut b).unwrap();
        let got = String::from_utf8_lossy(&b[..n]).to_string();
        assert!(got.starts_with("<27>"), "{got}");
        assert!(
            got.ends_with(&format!(
                "sixgate[{}]: ERROR worker 0 failed",
                std::process::id()
            )),
            "{got}"
        );
        let e = Syslog::open(&dir.join("missing.sock")).unwrap_err();
        assert!(e.contains("missing.sock"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
