//! Running programs: to completion with a time limit ([`capture`]), or in the
//! background until dropped ([`Background`]); scratch directories; Ctrl-C.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The time limit of [`crate::Netns::run`] and friends: long enough for any setup
/// command, short enough that a hung one fails the test instead of the whole run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How a command line is shown in messages: the program and its arguments, quoted
/// where they contain spaces.
pub fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| {
            let a = a.to_string_lossy();
            if a.is_empty() || a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `cmd` to completion and capture its output. Standard input is empty. The
/// command is killed if it runs longer than `timeout`, or if an interruption was
/// requested (see [`interrupt`]); both are errors. (The bed's own configuration and
/// teardown commands are not interruptible, so cleaning up after Ctrl-C works.) A non-zero exit status is *not*
/// an error here: look at `Output::status` (or use [`run_checked`]).
pub fn capture(cmd: &mut Command, timeout: Duration) -> Result<Output> {
    capture_with(cmd, timeout, true)
}

/// Run `cmd` with [`run_checked`]'s rules, but not interruptible: for configuring
/// and tearing down the bed, which must finish even after Ctrl-C.
pub(crate) fn run_admin(cmd: &mut Command) -> Result<String> {
    let out = capture_admin(cmd)?;
    check(cmd, &out)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// [`capture`], not interruptible (see [`run_admin`]).
pub(crate) fn capture_admin(cmd: &mut Command) -> Result<Output> {
    capture_with(cmd, DEFAULT_TIMEOUT, false)
}

fn capture_with(cmd: &mut Command, timeout: Duration, interruptible: bool) -> Result<Output> {
    let interrupted = || interruptible && interrupt::requested();
    let what = describe(cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(format!("cannot start `{what}`: {e}")))?;
    let out = Sink::attach(child.stdout.take());
    let err = Sink::attach(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(Error::new(format!("waiting for `{what}`: {e}"))),
        }
        if interrupted() || Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            if interrupted() {
                return Err(Error::interrupted());
            }
            return Err(Error::new(format!(
                "`{what}` did not finish within {} s; its output so far:\n{}{}",
                timeout.as_secs_f32(),
                out.text(),
                err.text()
            )));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    Ok(Output {
        status,
        stdout: out.finish(),
        stderr: err.finish(),
    })
}

/// Run `cmd` with [`capture`] and return its standard output; a non-zero exit status
/// is an error whose message holds the command line and its standard error.
pub fn run_checked(cmd: &mut Command, timeout: Duration) -> Result<String> {
    let out = capture(cmd, timeout)?;
    check(cmd, &out)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An error if `out` says the command failed.
pub(crate) fn check(cmd: &Command, out: &Output) -> Result<()> {
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let detail = if stderr.trim().is_empty() {
        stdout.trim()
    } else {
        stderr.trim()
    };
    Err(Error::new(format!(
        "`{}` failed ({}): {detail}",
        describe(cmd),
        out.status
    )))
}

/// Collects one output stream of a child on a thread of its own.
struct Sink {
    buf: Arc<Mutex<Vec<u8>>>,
    eof: Arc<AtomicBool>,
}

impl Sink {
    fn attach<R: Read + Send + 'static>(stream: Option<R>) -> Sink {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let eof = Arc::new(AtomicBool::new(stream.is_none()));
        if let Some(mut stream) = stream {
            let (b, e) = (buf.clone(), eof.clone());
            // Detached: a grandchild that inherited the pipe may keep it open after the
            // child is gone, and nobody should wait for that.
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                loop {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => lock(&b).extend_from_slice(&chunk[..n]),
                    }
                }
                e.store(true, Ordering::SeqCst);
            });
        }
        Sink { buf, eof }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.buf)).into_owned()
    }

    /// Everything the stream held, after waiting briefly for its end.
    fn finish(&self) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_millis(500);
        while !self.eof.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        lock(&self.buf).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A program running in the background (a server, the translator). It runs in a
/// process group of its own, so a Ctrl-C at the terminal reaches only the program
/// that owns the bed, which then stops it in order. Its standard output and error
/// are collected and can be read at any time.
///
/// Dropping it stops it: SIGTERM, then SIGKILL after three seconds.
pub struct Background {
    label: String,
    child: Child,
    out: Sink,
    err: Sink,
    status: Option<ExitStatus>,
}

/// What a [`Background`] program left behind when it ended.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// True if it ignored SIGTERM for the whole grace period and was killed.
    pub killed: bool,
    /// Everything it wrote to standard output.
    pub stdout: String,
    /// Everything it wrote to standard error.
    pub stderr: String,
}

impl Background {
    /// Start `cmd` (standard input empty, output collected). `label` names it in
    /// messages.
    pub fn spawn(cmd: &mut Command, label: impl Into<String>) -> Result<Background> {
        use std::os::unix::process::CommandExt;
        let label = label.into();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| Error::new(format!("cannot start {label} (`{}`): {e}", describe(cmd))))?;
        let out = Sink::attach(child.stdout.take());
        let err = Sink::attach(child.stderr.take());
        Ok(Background {
            label,
            child,
            out,
            err,
            status: None,
        })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The label given to [`Background::spawn`].
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Standard output so far.
    pub fn stdout(&self) -> String {
        self.out.text()
    }

    /// Standard error so far.
    pub fn stderr(&self) -> String {
        self.err.text()
    }

    /// `Some(status)` once it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Send a signal (`libc::SIGTERM`, …). Does nothing once it has exited.
    pub fn signal(&mut self, signal: i32) -> Result<()> {
        if self.exited().is_some() {
            return Ok(());
        }
        // The child is not reaped yet, so its pid cannot have been reused.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        if rc != 0 {
            return Err(Error::new(format!(
                "cannot signal {} (pid {}): {}",
                self.label,
                self.child.id(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }

    /// Send SIGINT, as Ctrl-C at a terminal would.
    pub fn interrupt(&mut self) -> Result<()> {
        self.signal(libc::SIGINT)
    }

    /// Wait until it exits by itself, at most `timeout`; if it is still running
    /// then, it is stopped and that is an error.
    pub fn wait(mut self, timeout: Duration) -> Result<Finished> {
        let deadline = Instant::now() + timeout;
        while self.exited().is_none() {
            if Instant::now() >= deadline {
                let label = self.label.clone();
                let f = self.stop(Duration::from_secs(1));
                return Err(Error::new(format!(
                    "{label} did not finish within {} s; output:\n{}{}",
                    timeout.as_secs_f32(),
                    f.stdout,
                    f.stderr
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(self.finished(false))
    }

    /// Stop it: SIGTERM, then SIGKILL if it is still running after `grace`.
    pub fn stop(mut self, grace: Duration) -> Finished {
        let killed = self.terminate(grace);
        self.finished(killed)
    }

    fn terminate(&mut self, grace: Duration) -> bool {
        if self.exited().is_some() {
            return false;
        }
        let _ = self.signal(libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        self.status = self.child.wait().ok();
        true
    }

    fn finished(&mut self, killed: bool) -> Finished {
        let status = match self.status {
            Some(s) => s,
            None => {
                let s = self.child.wait().expect("wait for a child");
                self.status = Some(s);
                s
            }
        };
        Finished {
            status,
            killed,
            stdout: String::from_utf8_lossy(&self.out.finish()).into_owned(),
            stderr: String::from_utf8_lossy(&self.err.finish()).into_owned(),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(3));
    }
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("label", &self.label)
            .field("pid", &self.child.id())
            .field("status", &self.status)
            .finish()
    }
}

/// A directory under the system temporary directory, named
/// `sg-<tag>-<pid>-<n>`, removed with its contents on drop. Files the bed writes
/// (translator configs, served files) go here; programs inside namespaces see the
/// same file system.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Create a fresh directory. `tag` is a short word (letters, digits).
    pub fn new(tag: &str) -> Result<ScratchDir> {
        crate::check_role(tag)?;
        let path = std::env::temp_dir().join(crate::unique_name(tag, crate::next_index()));
        std::fs::create_dir_all(&path)
            .map_err(|e| Error::new(format!("cannot create {}: {e}", path.display())))?;
        Ok(ScratchDir { path })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write a file into it and return its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<PathBuf> {
        let p = self.path.join(name);
        std::fs::write(&p, contents)
            .map_err(|e| Error::new(format!("cannot write {}: {e}", p.display())))?;
        Ok(p)
    }

    /// Write an executable script into it (mode 0755) and return its path
    /// once it can be run. Another test's fork can hold a copy of our write
    /// descriptor until its child execs, and running the file fails with
    /// `ETXTBSY` meanwhile; once one run has started, no copy is left. The
    /// script is run with `probe` as its arguments until it starts: it must
    /// do nothing lasting with them.
    pub fn write_script(
        &self,
        name: &str,
        contents: impl AsRef<[u8]>,
        probe: &[&str],
    ) -> Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let p = self.write(name, contents)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::new(format!("cannot chmod {}: {e}", p.display())))?;
        for _ in 0..200 {
            let run = std::process::Command::new(&p)
                .args(probe)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            match run {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                _ => break,
            }
        }
        Ok(p)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP as a flag instead of death, so that a
/// program can tear its bed down before it exits.
///
/// After [`install`], those signals set a flag. Every wait in this crate
/// ([`capture`], translator readiness) checks it and returns
/// [`Error::interrupted`], so the error travels up through `?` and the RAII guards
/// clean up on the way out. Programs started with [`capture`] run in the caller's
/// process group and get the terminal's SIGINT as well, so a running `ping` ends at
/// once; [`Background`] programs do not, and are stopped in order by their drop.
pub mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::error::{Error, Result};

    static REQUESTED: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_signal(_signal: libc::c_int) {
        // Only an atomic store: async-signal-safe.
        REQUESTED.store(true, Ordering::SeqCst);
    }

    /// Catch SIGINT, SIGTERM and SIGHUP from now on.
    pub fn install() -> Result<()> {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler only stores to an atomic.
            if unsafe { libc::signal(signal, handler) } == libc::SIG_ERR {
                return Err(Error::new(format!(
                    "cannot install a handler for signal {signal}: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
        Ok(())
    }

    /// True once one of the signals arrived.
    pub fn requested() -> bool {
        REQUESTED.load(Ordering::SeqCst)
    }

    /// `Err(Error::interrupted())` once one of the signals arrived.
    pub fn check() -> Result<()> {
        if requested() {
            Err(Error::interrupted())
        } else {
            Ok(())
        }
    }
}
