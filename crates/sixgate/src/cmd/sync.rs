//! `sixgate sync drain`: the planned drain of a NAT64 sync node (docs/ha.md,
//! "Planned drain"; docs/control.md). The daemon withdraws its routes from
//! `[sync] announce_table`, stops allocating, flushes its queue and tells its
//! peers (DRAIN); this command waits until every live peer has acknowledged
//! it, printing the progress `show sync` shows.

use std::time::{Duration, Instant};

use sixgate_control::api::types::SyncState;

use super::CmdResult;
use super::socket::SocketArg;

/// `sixgate sync …`.
#[derive(Debug, clap::Subcommand)]
pub enum Sync {
    /// Drain this node before stopping it: withdraw its routes (the routing
    /// daemon moves its traffic to the peers, which have every session), make
    /// no new mappings, and wait until every live peer has acknowledged all
    /// of its records and keeps its entries. It cannot be undone but by a
    /// restart.
    Drain {
        /// Wait at most this many seconds for the peers (0: return at once;
        /// `sixgate show sync` shows the progress).
        #[arg(long, value_name = "SECS", default_value_t = 30)]
        wait: u64,
        #[command(flatten)]
        socket: SocketArg,
    },
    /// Remove this node's routes from `[sync] announce_table` without a
    /// running daemon: for a unit's `ExecStopPost`, so that a node that
    /// crashed (or was killed with SIGKILL) is not announced by the routing
    /// daemon any longer (routes through the TUN device go with it; the
    /// blackhole routes of AF_XDP or `[tun] keep` stay). Does nothing
    /// without `announce_table`.
    Withdraw {
        /// The configuration file the node ran with.
        #[arg(long, value_name = "FILE")]
        config: std::path::PathBuf,
    },
}

pub fn run(cmd: &Sync) -> CmdResult {
    let (wait, socket) = match cmd {
        Sync::Drain { wait, socket } => (wait, socket),
        Sync::Withdraw { config } => return withdraw(config),
    };
    let c = socket.client()?;
    let _: SyncState = c.post("/v1/sync/drain", &serde_json::json!({}))?;
    let t0 = Instant::now();
    let mut said = String::new();
    loop {
        let s: SyncState = c.get("/v1/sync")?;
        let line = super::show::node_line(&s);
        if line != said {
            println!("{line}");
            said = line;
        }
        if s.state == "drained" {
            return Ok(());
        }
        if t0.elapsed() >= Duration::from_secs(*wait) {
            return if *wait == 0 {
                Ok(())
            } else {
                Err(format!(
                    "sixgate sync drain: not drained after {wait} s (a peer has not \
                     acknowledged yet); `sixgate show sync` shows the progress"
                ))
            };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `sixgate sync withdraw --config FILE`.
fn withdraw(path: &std::path::Path) -> CmdResult {
    let loaded = sixgate_config::load(path).map_err(|e| e.to_string())?;
    let (Some(s), Some(pool6)) = (&loaded.sync, loaded.config.map.pool6) else {
        println!(
            "sixgate sync withdraw: no [sync] in {}: nothing to do",
            path.display()
        );
        return Ok(());
    };
    let Some(table) = s.announce_table else {
        println!(
            "sixgate sync withdraw: no [sync] announce_table in {}: nothing to do",
            path.display()
        );
        return Ok(());
    };
    let mut a = sixgate_dataplane::announce::Announcer::new(
        table,
        (pool6.addr(), pool6.len()),
        &s.own_shards(),
        None,
    );
    let problems = a.withdraw_all();
    if problems.is_empty() {
        println!(
            "sixgate sync withdraw: {} route(s) of node {} gone from table {table}",
            a.routes().len(),
            s.node_id
        );
        Ok(())
    } else {
        Err(format!("sixgate sync withdraw: {}", problems.join("; ")))
    }
}
