//! Which daemon a control command talks to: its API socket, found without a
//! flag on every line when the gateway does not use the default one. Several
//! gateways on one host are told apart by their files (`--config`) or by one
//! `SIXGATE_SOCKET` set in the shell, as Jool tells its instances by name.
//!
//! Precedence: `--socket PATH` > `--config FILE` (its `[daemon] socket`) >
//! `$SIXGATE_SOCKET` > `/run/sixgate/sixgate.sock`.

use std::path::{Path, PathBuf};

use sixgate_control::client::Client;

/// The environment variable naming the socket when no flag does.
pub const ENV: &str = "SIXGATE_SOCKET";

/// Where the daemon's API listens (`[daemon] socket`).
#[derive(Debug, Default, clap::Args)]
pub struct SocketArg {
    /// The daemon's API socket [default: $SIXGATE_SOCKET, else
    /// /run/sixgate/sixgate.sock].
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// The daemon's configuration file: talk to the socket its [daemon] socket
    /// names (overridden by --socket).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl SocketArg {
    /// The socket, by the precedence above.
    pub fn path(&self) -> Result<PathBuf, String> {
        resolve(
            self.socket.as_deref(),
            self.config.as_deref(),
            std::env::var_os(ENV).map(PathBuf::from),
        )
    }

    /// A client for it.
    pub fn client(&self) -> Result<Client, String> {
        Ok(Client::new(&self.path()?))
    }
}

/// `--socket`, else `--config`'s `[daemon] socket`, else `env`, else the default.
fn resolve(
    socket: Option<&Path>,
    config: Option<&Path>,
    env: Option<PathBuf>,
) -> Result<PathBuf, String> {
    if let Some(s) = socket {
        return Ok(s.to_owned());
    }
    if let Some(file) = config {
        // The whole file is checked: a socket from a file the daemon could not
        // have started with would be a guess.
        let loaded = sixgate_config::load(file).map_err(|e| e.to_string())?;
        return Ok(loaded.daemon.socket);
    }
    Ok(env
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from(sixgate_config::DEFAULT_SOCKET)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_socket_then_config_then_env_then_default() {
        let dir = std::env::temp_dir().join(format!("sixgate-socket-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("gw.toml");
        std::fs::write(
            &file,
            "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n\
             [daemon]\nsocket = \"/run/gw2/api.sock\"\n",
        )
        .unwrap();
        let env = || Some(PathBuf::from("/run/env.sock"));
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            resolve(Some(&p("/x.sock")), Some(&file), env()),
            Ok(p("/x.sock"))
        );
        assert_eq!(
            resolve(None, Some(&file), env()),
            Ok(p("/run/gw2/api.sock"))
        );
        assert_eq!(resolve(None, None, env()), Ok(p("/run/env.sock")));
        assert_eq!(
            resolve(None, None, Some(PathBuf::new())),
            Ok(p(sixgate_config::DEFAULT_SOCKET))
        );
        assert_eq!(
            resolve(None, None, None),
            Ok(p(sixgate_config::DEFAULT_SOCKET))
        );
        // A file without [daemon] socket: the default, not the environment.
        std::fs::write(
            &file,
            "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n",
        )
        .unwrap();
        assert_eq!(
            resolve(None, Some(&file), env()),
            Ok(p(sixgate_config::DEFAULT_SOCKET))
        );
        let e = resolve(None, Some(&dir.join("missing.toml")), env()).unwrap_err();
        assert!(e.contains("missing.toml"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
