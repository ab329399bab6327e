//! The daemon's log sink (issue 6), from `[log]`: text or JSON lines to standard
//! error, a file or syslog, through one `tracing` subscriber. Everything logs
//! through it, the RFC 6888 NAT64 event log too (target `sixgate::nat64`, from
//! the workers once per timer tick, never per packet), so operators filter it
//! by target: `level = "info,sixgate::nat64=off"`.

use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use sixgate_config::{LogFormat, LogSettings, LogTarget};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::syslog::Syslog;

/// The layer [`init`] installs, for tests that want it on a scoped subscriber.
pub type BoxedLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Build the layer for `settings`: the filter (`RUST_LOG` when set, else
/// `level`), the format and the sink. Opens the file or socket now, so a bad
/// path is an error at start (and before privileges are dropped).
pub fn layer(settings: &LogSettings) -> Result<BoxedLayer, String> {
    layer_with(settings, std::env::var("RUST_LOG").ok())
}

/// [`layer`] with `rust_log` in place of the environment's `RUST_LOG`.
fn layer_with(settings: &LogSettings, rust_log: Option<String>) -> Result<BoxedLayer, String> {
    let filter = match rust_log {
        Some(v) if !v.is_empty() => {
            EnvFilter::try_new(&v).map_err(|e| format!("RUST_LOG={v}: {e}"))?
        }
        _ => EnvFilter::try_new(&settings.level)
            .map_err(|e| format!("[log] level = \"{}\": {e}", settings.level))?,
    };
    let (writer, to_terminal, syslog) = match &settings.target {
        LogTarget::Stderr => (
            BoxMakeWriter::new(std::io::stderr),
            std::io::stderr().is_terminal(),
            false,
        ),
        LogTarget::File(path) => {
            // Run by hand, nothing made the directory (the unit's
            // LogsDirectory= does): make it, as the daemon is still root here.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
                && !dir.exists()
            {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o750)
                    .create(dir)
                    .map_err(|e| {
                        format!(
                            "[log] file = \"{}\": its directory does not exist and cannot be \
                             created: {e} (the systemd unit's LogsDirectory= creates it)",
                            path.display()
                        )
                    })?;
            }
            // O_APPEND: one write per record stays whole, and logrotate's
            // copytruncate works.
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o640)
                .open(path)
                .map_err(|e| format!("[log] file = \"{}\": {e}", path.display()))?;
            (BoxMakeWriter::new(Mutex::new(f)), false, false)
        }
        LogTarget::Syslog(path) => (BoxMakeWriter::new(Syslog::open(path)?), false, true),
    };
    let fmt = tracing_subscriber::fmt::layer().with_ansi(to_terminal);
    let layer: BoxedLayer = match settings.format {
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(writer)
            .with_filter(filter)
            .boxed(),
        // syslog stamps its own time.
        LogFormat::Text if syslog => fmt
            .without_time()
            .with_writer(writer)
            .with_filter(filter)
            .boxed(),
        // On standard error the target is left out, as before [log] existed;
        // in a file it tells NAT64 events from the rest.
        LogFormat::Text => fmt
            .with_target(!matches!(settings.target, LogTarget::Stderr))
            .with_writer(writer)
            .with_filter(filter)
            .boxed(),
    };
    Ok(layer)
}

/// Install the process-wide subscriber for `settings`. A second call keeps the
/// first subscriber.
pub fn init(settings: &LogSettings) -> Result<(), String> {
    let l = layer(settings)?;
    if tracing_subscriber::registry().with(l).try_init().is_ok() {
        ELSEWHERE.store(settings.target != LogTarget::Stderr, Ordering::Relaxed);
    }
    Ok(())
}

static ELSEWHERE: AtomicBool = AtomicBool::new(false);

/// True once [`init`] sent the log somewhere other than standard error (a
/// file, syslog): an error that ends the process belongs there too.
pub fn logs_elsewhere() -> bool {
    ELSEWHERE.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sixgate-logging-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    #[test]
    fn json_lines_parse_and_carry_every_field() {
        let path = temp("json.log");
        let _ = std::fs::remove_file(&path);
        let settings = LogSettings {
            format: LogFormat::Json,
            target: LogTarget::File(path.clone()),
            level: "info".into(),
        };
        let sub = tracing_subscriber::registry().with(layer_with(&settings, None).unwrap());
        tracing::subscriber::with_default(sub, || {
            tracing::info!(target: "sixgate::nat64", event = "session_created", port4 = 61001u16, "mapping");
            tracing::debug!("not at info");
            tracing::warn!("second \"line\"");
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["target"], "sixgate::nat64");
        assert_eq!(lines[0]["event"], "session_created");
        assert_eq!(lines[0]["port4"], 61001);
        assert_eq!(lines[0]["message"], "mapping");
        assert_eq!(lines[0]["level"], "INFO");
        assert!(lines[0]["timestamp"].is_string());
        assert_eq!(lines[1]["message"], "second \"line\"");
    }

    #[test]
    fn text_lines_name_the_target_and_honour_directives() {
        let path = temp("text.log");
        let _ = std::fs::remove_file(&path);
        let settings = LogSettings {
            format: LogFormat::Text,
            target: LogTarget::File(path.clone()),
            level: "info,sixgate::nat64=off".into(),
        };
        let sub = tracing_subscriber::registry().with(layer_with(&settings, None).unwrap());
        tracing::subscriber::with_default(sub, || {
            tracing::info!(target: "sixgate::nat64", "silenced");
            tracing::info!(target: "sixgate::run", "kept");
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("silenced"), "{text}");
        assert!(text.contains("INFO sixgate::run: kept"), "{text}");
        assert!(!text.contains('\u{1b}'), "no colours in a file: {text}");
    }

    #[test]
    fn syslog_target_sends_datagrams() {
        let path = temp("syslog.sock");
        let _ = std::fs::remove_file(&path);
        let rx = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        let settings = LogSettings {
            format: LogFormat::Text,
            target: LogTarget::Syslog(path.clone()),
            level: "info".into(),
        };
        let sub = tracing_subscriber::registry().with(layer_with(&settings, None).unwrap());
        tracing::subscriber::with_default(sub, || tracing::warn!("disk full"));
        let mut b = [0u8; 512];
        let n = rx.recv(&mut b).unwrap();
        let got = String::from_utf8_lossy(&b[..n]);
        assert!(got.starts_with("<28>"), "{got}");
        assert!(got.contains("WARN") && got.ends_with("disk full"), "{got}");
    }

    #[test]
    fn a_bad_path_is_an_error_naming_it() {
        // A directory that cannot be made (under a file, even for root).
        let s = LogSettings {
            target: LogTarget::File("/dev/null/dir/x.log".into()),
            ..LogSettings::default()
        };
        let e = layer_with(&s, None).err().unwrap();
        assert!(e.contains("/dev/null/dir/x.log"), "{e}");
        assert!(e.contains("LogsDirectory="), "{e}");
        // Issue 30: one that does not exist yet is made (run by hand, no
        // systemd to make it).
        let dir = temp("made");
        let _ = std::fs::remove_dir_all(&dir);
        let s = LogSettings {
            target: LogTarget::File(dir.join("sub/x.log")),
            ..LogSettings::default()
        };
        assert!(layer_with(&s, None).is_ok());
        assert!(dir.join("sub/x.log").exists());
        let _ = std::fs::remove_dir_all(&dir);
        // RUST_LOG wins over `level`, and a bad one is named too.
        let e = layer_with(&LogSettings::default(), Some("info,=x=y".into()))
            .err()
            .unwrap();
        assert!(e.starts_with("RUST_LOG=info,=x=y"), "{e}");
    }
}
