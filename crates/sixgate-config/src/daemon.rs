//! `[daemon]`: how `sixgate run` runs (workers, user, API socket, data plane).

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::DaemonSection;
use crate::value::int_in;

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

impl Default for DaemonSettings {
    fn default() -> Self {
        DaemonSettings {
            workers: 0,
            user: None,
            socket: DEFAULT_SOCKET.into(),
            dataplane: Dataplane::Tun,
        }
    }
}

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
    Ok(out)
}

#[cfg(test)]
mod tests;
