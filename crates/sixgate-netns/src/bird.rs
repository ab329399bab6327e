//! A BIRD 2 routing daemon (Debian `bird2`) inside a namespace, with its own
//! configuration, control socket and pid file in a scratch directory: never
//! the system's `bird.service` nor `/etc/bird`. The scale-out bed
//! ([`crate::ecmp`]) runs one per router and per gateway.
//!
//! `bird -f -c CONF -s SOCKET -P PIDFILE` stays in the foreground, so it is a
//! [`Background`] child: its log (`log stderr all;` in the configs) is
//! collected, and dropping it stops it (SIGTERM). `birdc -s SOCKET` talks to
//! it from outside the namespace (the socket is a file).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::netns::Netns;
use crate::process::{Background, ScratchDir, run_checked};

/// Can this machine run BIRD? `Err(reason)` when `bird` or `birdc` is
/// missing (scripts/setup.sh installs Debian's `bird2`). Tests skip with it.
pub fn check_bird() -> std::result::Result<(), String> {
    for tool in ["bird", "birdc"] {
        Command::new(tool).arg("--version").output().map_err(|e| {
            format!("`{tool}` is unavailable ({e}): scripts/setup.sh installs bird2")
        })?;
    }
    Ok(())
}

/// `bird -p -c PATH`: parse `path` and exit, the check that keeps a
/// configuration (dist/bird/*.conf) valid. The error names the file, line
/// and column as BIRD reports them.
pub fn parse_check(path: &Path) -> Result<()> {
    run_checked(
        Command::new("bird").arg("-p").arg("-c").arg(path),
        Duration::from_secs(10),
    )
    .map(drop)
    .map_err(|e| Error::new(format!("bird -p -c {}: {e}", path.display())))
}

/// A running BIRD. Dropped: stopped with SIGTERM, its files removed.
#[derive(Debug)]
pub struct Bird {
    label: String,
    process: Background,
    socket: PathBuf,
    dir: ScratchDir,
}

impl Bird {
    /// Start BIRD in `ns` with `config` (checked with `bird -p` first, so a
    /// typo is an error naming the line, not a daemon that never answers),
    /// and wait until its control socket answers. `label` names it in
    /// messages ("router6", "gw1").
    pub fn start(ns: &Netns, label: &str, config: &str) -> Result<Bird> {
        let dir = ScratchDir::new("bird")?;
        let conf = dir.write("bird.conf", config)?;
        parse_check(&conf).map_err(|e| Error::new(format!("{label}: {e}\n{config}")))?;
        let socket = dir.path().join("bird.ctl");
        let pid = dir.path().join("bird.pid");
        let mut cmd = ns.command("bird");
        cmd.arg("-f")
            .arg("-c")
            .arg(&conf)
            .arg("-s")
            .arg(&socket)
            .arg("-P")
            .arg(&pid);
        let process = Background::spawn(&mut cmd, format!("bird ({label}) in {}", ns.name()))?;
        let mut bird = Bird {
            label: label.to_owned(),
            process,
            socket,
            dir,
        };
        let t0 = Instant::now();
        while bird.birdc(&["show", "status"]).is_err() {
            if let Some(status) = bird.process.exited() {
                return Err(Error::new(format!(
                    "bird ({label}) exited with {status}:\n{}",
                    bird.log()
                )));
            }
            if t0.elapsed() > Duration::from_secs(10) {
                return Err(Error::new(format!(
                    "bird ({label}): control socket {} did not answer within 10 s:\n{}",
                    bird.socket.display(),
                    bird.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(bird)
    }

    /// The label given at start.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its process id (the one to `kill -9`).
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Its configuration file.
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("bird.conf")
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        self.process.stderr()
    }

    /// `birdc -s SOCKET args…`: its answer.
    pub fn birdc(&self, args: &[&str]) -> Result<String> {
        run_checked(
            Command::new("birdc").arg("-s").arg(&self.socket).args(args),
            Duration::from_secs(10),
        )
    }

    /// The state column of `show protocols NAME` ("up", "start", …) and its
    /// info ("Established", "Idle", …), e.g. `up Established`.
    pub fn protocol(&self, name: &str) -> Result<String> {
        let out = self.birdc(&["show", "protocols", name])?;
        // Name Proto Table State Since Info
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let info = w.get(5..).map(|i| i.join(" ")).unwrap_or_default();
                format!("{} {info}", w.get(3).copied().unwrap_or_default())
            })
            .ok_or_else(|| Error::new(format!("{}: no protocol {name}:\n{out}", self.label)))
    }

    /// Wait until each BGP session in `names` is Established.
    pub fn wait_established(&self, names: &[&str], timeout: Duration) -> Result<()> {
        let t0 = Instant::now();
        loop {
            let states: Vec<String> = names
                .iter()
                .map(|n| self.protocol(n).unwrap_or_else(|e| e.to_string()))
                .collect();
            if states.iter().all(|s| s.starts_with("up Established")) {
                return Ok(());
            }
            if t0.elapsed() > timeout {
                return Err(Error::new(format!(
                    "{}: BGP sessions {names:?} not Established within {} s: {states:?}\n{}",
                    self.label,
                    timeout.as_secs(),
                    self.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until `show bfd sessions` lists `count` sessions, all Up (so a
    /// failure is detected by BFD, not by the BGP hold timer).
    pub fn wait_bfd_up(&self, count: usize, timeout: Duration) -> Result<()> {
        let t0 = Instant::now();
        loop {
            let out = self.birdc(&["show", "bfd", "sessions"])?;
            // IP address  Interface  State  Since  Interval  Timeout
            let states: Vec<&str> = out
                .lines()
                .filter_map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    (w.len() >= 3 && w[0].parse::<std::net::IpAddr>().is_ok()).then(|| w[2])
                })
                .collect();
            if states.len() == count && states.iter().all(|s| *s == "Up") {
                return Ok(());
            }
            if t0.elapsed() > timeout {
                return Err(Error::new(format!(
                    "{}: not {count} BFD sessions Up within {} s:\n{out}",
                    self.label,
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop it with SIGTERM; its log.
    pub fn stop(self) -> String {
        let f = self.process.stop(Duration::from_secs(3));
        f.stderr
    }
}
