//! `[daemon]`: how `sixgate run` runs (workers, user, API socket, data plane).

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::DaemonSection;
use crate::value::{int_in, interface_name_problem};

/// `[daemon]`: how `sixgate run` runs. Only the live data plane reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonSettings {
    /// Worker threads, one TUN queue each. `0`: one per online CPU.
    pub workers: u16,
    /// Switch to this user (and its primary group, no supplementary groups)
    /// once the device, its queues and the routes are set up.
    pub user: Option<String>,
    /// The Unix socket of the daemon's API (`sixgate show`, `reload`, …).
    pub socket: std::path::PathBuf,
    /// Which live data plane `sixgate run` uses.
    pub dataplane: Dataplane,
    /// The in-kernel fast path in front of it (docs/fastpath.md).
    pub fastpath: FastPathMode,
    /// The interfaces whose ingress the fast path watches (the IPv6-side and
    /// IPv4-side ones); empty with `fastpath = "off"`.
    pub fastpath_interfaces: Vec<String>,
    /// Where `sixgate run` writes its NAT64 state when it stops and reads it
    /// back when it starts (docs/restart.md); `None`: it does neither.
    pub state_file: Option<std::path::PathBuf>,
    /// Seconds the fast path keeps translating established flows after a
    /// stop, for the next start to take it over (docs/restart.md, "With the
    /// fast path"); 0: none, the fast path stops with the daemon.
    pub fastpath_handover: u16,
    /// Where a handover's links are pinned: a directory on a bpf file
    /// system, under which each daemon takes `net<netns>-<device>`.
    pub fastpath_pin_dir: std::path::PathBuf,
}

/// `[daemon] fastpath`: translate the common packets in the kernel first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastPathMode {
    /// Every packet takes the data plane.
    Off,
    /// A TC ingress eBPF program (tcx where the kernel has it) translates
    /// the common packets of the modes in scope and passes the rest up; where
    /// it cannot run, a warning and the data plane alone.
    Tc,
    /// The same translation as an XDP program, attached in native (driver)
    /// mode: for NICs with native XDP and small-packet rate. Where the XDP
    /// program cannot run or attach (generic XDP only, an old kernel), a
    /// warning and the TC program instead (docs/fastpath.md, "XDP").
    Xdp,
    /// `Tc` where the kernel has what the program needs, the mode is in scope
    /// and `fastpath_interfaces` are named; otherwise off, with an info line
    /// saying why (never refused by `config check`).
    Auto,
}

/// `fastpath` when the file leaves it out: `"auto"`, the fast path where it
/// works (issue 18), the TUN plane alone elsewhere (docs/config.md).
pub const FASTPATH_DEFAULT: FastPathMode = FastPathMode::Auto;

impl Default for FastPathMode {
    fn default() -> Self {
        FASTPATH_DEFAULT
    }
}

impl FastPathMode {
    /// The name in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            FastPathMode::Off => "off",
            FastPathMode::Tc => "tc",
            FastPathMode::Xdp => "xdp",
            FastPathMode::Auto => "auto",
        }
    }
}

/// `[daemon] dataplane`: how packets reach the translator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dataplane {
    /// A TUN device the kernel routes into (`[tun]`, docs/tun.md).
    #[default]
    Tun,
    /// AF_XDP sockets on two Ethernet interfaces (`[xdp]`, docs/xdp.md).
    Xdp,
}

impl Dataplane {
    /// The name in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Dataplane::Tun => "tun",
            Dataplane::Xdp => "xdp",
        }
    }
}

/// Where the daemon's API listens unless `[daemon] socket` says otherwise.
pub const DEFAULT_SOCKET: &str = "/run/sixgate/sixgate.sock";

/// Where NAT64 state is kept across a restart unless `[daemon] state_file`
/// says otherwise (docs/restart.md).
pub const DEFAULT_STATE_FILE: &str = "/var/lib/sixgate/nat64.state";

impl Default for DaemonSettings {
    fn default() -> Self {
        DaemonSettings {
            workers: 0,
            user: None,
            socket: DEFAULT_SOCKET.into(),
            dataplane: Dataplane::Tun,
            fastpath: FASTPATH_DEFAULT,
            fastpath_interfaces: Vec::new(),
            state_file: Some(DEFAULT_STATE_FILE.into()),
            fastpath_handover: 0,
            fastpath_pin_dir: DEFAULT_FASTPATH_PIN_DIR.into(),
        }
    }
}

/// `[daemon] fastpath_pin_dir` when the file leaves it out.
pub const DEFAULT_FASTPATH_PIN_DIR: &str = "/sys/fs/bpf/sixgate";

/// Most seconds of `[daemon] fastpath_handover`: ten minutes, longer than
/// any restart, short enough that a stop is never forgotten for long.
pub const MAX_FASTPATH_HANDOVER: i64 = 600;

/// Most worker threads (and TUN queues: the kernel's limit is 256).
pub(crate) const MAX_WORKERS: i64 = 256;

pub(crate) fn section(cx: &Cx<'_>, d: DaemonSection) -> Result<DaemonSettings, ConfigError> {
    let mut out = DaemonSettings::default();
    if let Some(w) = &d.workers {
        cx.check(|| {
            out.workers = int_in(cx, "workers", w, 0, MAX_WORKERS)? as u16;
            Ok(())
        });
    }
    if let Some(u) = &d.user {
        cx.check(|| {
            let name = u.get_ref();
            // POSIX portable user names, plus what Debian's adduser accepts.
            let ok = !name.is_empty()
                && name.len() <= 32
                && !name.starts_with('-')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'));
            if !ok {
                return Err(cx.bad(
                    "user",
                    u,
                    "not a user name",
                    "a user name of 1 to 32 letters, digits, '_', '-', '.', e.g. \"nobody\"",
                ));
            }
            out.user = Some(name.clone());
            Ok(())
        });
    }
    if let Some(p) = &d.socket {
        cx.check(|| {
            let path = p.get_ref();
            // sun_path holds 108 bytes with the terminating NUL.
            if !path.starts_with('/') || path.len() > 107 || path.ends_with('/') {
                return Err(cx.bad(
                    "socket",
                    p,
                    "not an absolute socket path of at most 107 bytes",
                    "an absolute path such as \"/run/sixgate/sixgate.sock\"",
                ));
            }
            out.socket = path.into();
            Ok(())
        });
    }
    if let Some(v) = &d.dataplane {
        cx.check(|| {
            out.dataplane = match v.get_ref().as_str() {
                "tun" => Dataplane::Tun,
                "xdp" => Dataplane::Xdp,
                other => {
                    return Err(cx.bad(
                        "dataplane",
                        v,
                        format!("unknown data plane {other:?}"),
                        "\"tun\" or \"xdp\"",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(v) = &d.fastpath {
        cx.check(|| {
            out.fastpath = match v.get_ref().as_str() {
                "off" => FastPathMode::Off,
                "tc" => FastPathMode::Tc,
                "xdp" => FastPathMode::Xdp,
                "auto" => FastPathMode::Auto,
                other => {
                    return Err(cx.bad(
                        "fastpath",
                        v,
                        format!("unknown fast path {other:?}"),
                        "\"off\", \"tc\", \"xdp\" or \"auto\"",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(list) = &d.fastpath_interfaces {
        cx.check(|| {
            for n in list.get_ref() {
                if let Some(p) = interface_name_problem(n.get_ref()) {
                    return Err(cx.bad(
                        "fastpath_interfaces",
                        n,
                        p,
                        "interface names of 1 to 15 ASCII characters without '/', ':' or \
                         spaces, e.g. [\"eth0\", \"eth1\"]",
                    ));
                }
                if !out.fastpath_interfaces.contains(n.get_ref()) {
                    out.fastpath_interfaces.push(n.get_ref().clone());
                }
            }
            Ok(())
        });
    }
    if let Some(v) = &d.fastpath_handover {
        cx.check(|| {
            out.fastpath_handover =
                int_in(cx, "fastpath_handover", v, 0, MAX_FASTPATH_HANDOVER)? as u16;
            Ok(())
        });
    }
    // Valid but without effect: a warning (crate::lint's kind).
    if let Some(v) = &d.fastpath_handover
        && out.fastpath_handover > 0
    {
        let why = match (out.dataplane, out.fastpath) {
            (Dataplane::Xdp, _) => {
                Some("the AF_XDP data plane (dataplane = \"xdp\") has no fast path")
            }
            (_, FastPathMode::Off) => Some("fastpath = \"off\""),
            _ => None,
        };
        if let Some(why) = why {
            cx.warn(
                v.span(),
                format!(
                    "fastpath_handover = {}: nothing is handed over at a stop: {why} \
                     (docs/restart.md)",
                    out.fastpath_handover
                ),
            );
        }
    }
    if let Some(p) = &d.fastpath_pin_dir {
        cx.check(|| {
            let path = p.get_ref();
            if !path.starts_with('/') || path.len() > 200 || path.contains('\0') {
                return Err(cx.bad(
                    "fastpath_pin_dir",
                    p,
                    "not an absolute path of a directory",
                    "a directory on a bpf file system, such as \"/sys/fs/bpf/sixgate\"",
                ));
            }
            out.fastpath_pin_dir = path.into();
            Ok(())
        });
    }
    if let Some(p) = &d.state_file {
        cx.check(|| {
            let path = p.get_ref();
            if path.is_empty() || path == "off" {
                out.state_file = None;
                return Ok(());
            }
            let name = path.rsplit('/').next().unwrap_or("");
            if !path.starts_with('/')
                || path.len() > 4000
                || path.contains('\0')
                || name.is_empty()
                || name == "."
                || name == ".."
            {
                return Err(cx.bad(
                    "state_file",
                    p,
                    "not an absolute path of a file",
                    "an absolute path such as \"/var/lib/sixgate/nat64.state\", or \"off\"",
                ));
            }
            out.state_file = Some(path.into());
            Ok(())
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
