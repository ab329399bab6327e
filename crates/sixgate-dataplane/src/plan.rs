//! Gateway set-up planning: what a live data plane decides from the loaded
//! configuration before it creates anything, the same on every data plane.
//! The default pool4 is found, the user to switch to looked up, the worker
//! count chosen, and the keys drawn; a failure here leaves nothing behind.

use std::net::Ipv4Addr;

use sixgate_config::Loaded;
use sixgate_core::Config;
use sixgate_core::nat64::EventLog;
use tracing::{info, warn};

use crate::{pool4_default, system};

/// A gateway's plan.
pub struct Plan {
    /// The translator configuration to run: the loaded one with the default
    /// pool4 filled in and the hash keys drawn (the data plane may fill in
    /// more, e.g. MTUs).
    pub config: Config,
    /// The address found for a NAT64 with no `pool4` key.
    pub default_pool4: Option<Ipv4Addr>,
    /// `[daemon] user`: the name and who it is.
    pub user: Option<(String, system::User)>,
    /// The CPUs workers are pinned to, in turn.
    pub cpus: Vec<usize>,
    /// Workers to start (`[daemon] workers`, 0: one per CPU); a data plane
    /// may lower it (one worker where nothing brings a flow to its owner).
    pub workers: usize,
    /// Stateful: NAT64, or a MAP-T CE's NAPT44; the workers run the timers.
    pub stateful: bool,
    /// `[nat64] event_log` is on.
    pub event_log: bool,
    /// `[sync]` (NAT64 only): the workers exchange with a sync thread.
    pub sync: Option<sixgate_config::SyncSettings>,
    /// `[daemon] state_file` (NAT64 only): the sessions kept across a
    /// restart (docs/restart.md, [`crate::restart`]).
    pub state_file: Option<std::path::PathBuf>,
}

/// The state file's directory, made now (still privileged) if it is
/// missing, so that the workers can write the file when they stop. With
/// `[daemon] user` the file is written and read back as that user: the
/// directory is given to it (mode 0750) when sixgate made it or it is the
/// default one, `/var/lib/sixgate`, which systemd's `StateDirectory=` hands
/// back to root at every start; the file a stop left, too. Another directory
/// the user cannot write is a warning: the daemon runs, and the stop says it
/// cannot write.
fn state_directory(file: &std::path::Path, user: Option<&system::User>) {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return;
    };
    let created = !dir.exists();
    if created
        && let Err(e) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(dir)
    {
        warn!(
            "state: cannot create {} for [daemon] state_file: {e}; NAT64 sessions will not be \
             kept across a restart",
            dir.display()
        );
        return;
    }
    let Some(u) = user else {
        return;
    };
    let default_dir = std::path::Path::new(sixgate_config::DEFAULT_STATE_FILE).parent();
    if (created || Some(dir) == default_dir)
        && let Err(e) = std::os::unix::fs::chown(dir, Some(u.uid), Some(u.gid))
    {
        warn!("state: cannot give {} to [daemon] user: {e}", dir.display());
    }
    // The last stop's file, to be read after the privilege drop.
    if std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file())
        && let Err(e) = std::os::unix::fs::lchown(file, Some(u.uid), Some(u.gid))
    {
        warn!(
            "state: cannot give {} to [daemon] user: {e}",
            file.display()
        );
    }
    let writable = std::fs::metadata(dir).is_ok_and(|m| {
        let mode = m.mode();
        (m.uid() == u.uid && mode & 0o300 == 0o300)
            || (m.gid() == u.gid && mode & 0o030 == 0o030)
            || mode & 0o003 == 0o003
    });
    if !writable {
        warn!(
            "state: {} is not writable by [daemon] user (uid {}): NAT64 sessions will not be \
             kept across a restart (chown it, or name another state_file)",
            dir.display(),
            u.uid
        );
    }
}

impl Plan {
    /// The plan for `loaded`.
    pub fn new(loaded: &Loaded) -> Result<Plan, String> {
        let mut config = loaded.config.clone();
        // The default pool4 (no pool4 key): the gateway's own IPv4 address,
        // found before anything is created.
        let default_pool4 = match &mut config.nat64 {
            Some(nat) if nat.pool4.is_empty() => {
                let a = pool4_default::gateway_address()?;
                info!(
                    address = %a,
                    "nat64: no pool4 configured; pool4 is the gateway's own address, ports \
                     and ICMP identifiers {}-{}",
                    pool4_default::PORTS.first,
                    pool4_default::PORTS.last
                );
                if let Some(w) = pool4_default::local_port_range_overlap() {
                    warn!("nat64: {w}");
                }
                nat.pool4 = vec![pool4_default::entry(a)];
                Some(a)
            }
            _ => None,
        };
        // A missing user is an error before anything is created.
        let user = match &loaded.daemon.user {
            Some(name) => Some((name.clone(), system::lookup_user(name)?)),
            None => None,
        };
        let cpus = system::allowed_cpus();
        let mut workers = match loaded.daemon.workers {
            0 => cpus.len().max(1),
            w => usize::from(w),
        };
        // A MAP-T CE's NAPT44 is stateful and nothing brings a flow's packets
        // to one worker (no steering, no handoff rule for a CE): its tables
        // live in one.
        let ce = config.mapt.as_ref().is_some_and(|m| m.ce().is_some());
        if workers > 1 && ce {
            warn!(
                "mapt-ce: the NAPT44 tables belong to one worker and nothing steers a flow's \
                 packets to it; running ONE worker instead of {workers}"
            );
            workers = 1;
        }
        // Keys no one else may know: IPv4 Identification, port choice.
        config.ipv4_id_key = system::random_u64();
        if let Some(nat) = &mut config.nat64 {
            nat.hash_key = system::random_u64();
        }
        if let Some(m) = &mut config.mapt {
            m.hash_key = system::random_u64();
        }
        let stateful = config.nat64.is_some() || ce;
        let event_log = config
            .nat64
            .as_ref()
            .is_some_and(|n| n.event_log != EventLog::Off);
        let sync = loaded.sync.clone().filter(|_| config.nat64.is_some());
        let state_file = loaded
            .daemon
            .state_file
            .clone()
            .filter(|_| config.nat64.is_some());
        if let Some(p) = &state_file {
            state_directory(p, user.as_ref().map(|(_, u)| u));
        }
        Ok(Plan {
            sync,
            state_file,
            config,
            default_pool4,
            user,
            cpus,
            workers,
            stateful,
            event_log,
        })
    }

    /// The CPU worker `index` is pinned to.
    pub fn cpu(&self, index: usize) -> Option<usize> {
        (!self.cpus.is_empty()).then(|| self.cpus[index % self.cpus.len()])
    }

    /// Switch to `[daemon] user`, if set. True when privileges were dropped.
    pub fn drop_privileges(&self) -> Result<bool, String> {
        let Some((name, u)) = &self.user else {
            return Ok(false);
        };
        let kept = system::drop_privileges(*u)
            .map_err(|e| format!("cannot switch to user {name:?}: {e}"))?;
        info!(
            user = %name,
            uid = u.uid,
            gid = u.gid,
            "dropped privileges, keeping {} for runtime changes and reloads",
            if kept.is_empty() { "no capability".to_owned() } else { kept.join(", ") }
        );
        Ok(true)
    }

    /// Logs the workers started and their CPUs.
    pub fn log_started(&self, workers: usize) {
        info!(
            workers,
            cpus = ?self.cpus.iter().cycle().take(workers).collect::<Vec<_>>(),
            "workers started, one per queue, each pinned to a CPU"
        );
    }
}
