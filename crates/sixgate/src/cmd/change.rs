//! Runtime changes through the daemon's API (docs/control.md):
//! `sixgate eam|pool4|bib add|remove`, `sixgate session flush` and `sixgate reload`. Each prints what the
//! daemon did; a refusal prints its message and exits non-zero.

use sixgate_control::api::types::{Done, EamRow, FlushDone, FlushRequest, Pool4Row, StaticBibRow};

use super::CmdResult;
use super::socket::SocketArg;

/// `sixgate eam …`: the RFC 7757 EAM table.
#[derive(Debug, clap::Subcommand)]
pub enum Eam {
    /// Add an entry: IPV4[/LEN] IPV6[/LEN].
    Add(EamArgs),
    /// Remove an entry.
    Remove(EamArgs),
}

/// One EAM entry.
#[derive(Debug, clap::Args)]
pub struct EamArgs {
    /// IPv4 prefix, e.g. 198.18.1.0/24.
    ipv4: String,
    /// IPv6 prefix, e.g. 2001:db8:2::/120.
    ipv6: String,
    #[command(flatten)]
    socket: SocketArg,
}

/// `sixgate pool4 …`: the NAT64 pool4 (RFC 6146 §2).
#[derive(Debug, clap::Subcommand)]
pub enum Pool4 {
    /// Add ADDR[/LEN] (ports 61001-65535 unless given).
    Add {
        /// IPv4 prefix or address.
        prefix: String,
        /// TCP ports, FIRST-LAST (default 61001-65535).
        #[arg(long, value_name = "RANGE")]
        tcp: Option<String>,
        /// UDP ports, FIRST-LAST (default 61001-65535).
        #[arg(long, value_name = "RANGE")]
        udp: Option<String>,
        /// ICMP identifiers, FIRST-LAST (default 61001-65535).
        #[arg(long, value_name = "RANGE")]
        icmp: Option<String>,
        #[command(flatten)]
        socket: SocketArg,
    },
    /// Remove ADDR[/LEN]: no new mappings; its sessions live until they expire.
    Remove {
        /// IPv4 prefix or address.
        prefix: String,
        #[command(flatten)]
        socket: SocketArg,
    },
}

/// `sixgate bib …`: static BIB entries (RFC 6146 §3.1).
#[derive(Debug, clap::Subcommand)]
pub enum Bib {
    /// Add PROTO IPV6 PORT6 IPV4 PORT4: IPv4 hosts reach IPV6:PORT6 at IPV4:PORT4.
    Add {
        /// tcp, udp or icmp.
        proto: String,
        /// The IPv6 server.
        ipv6: String,
        /// Its port (ICMP: identifier).
        port6: u16,
        /// The pool4 address.
        ipv4: String,
        /// The pool4 port.
        port4: u16,
        #[command(flatten)]
        socket: SocketArg,
    },
    /// Remove PROTO IPV4 PORT4 (and its sessions).
    Remove {
        /// tcp, udp or icmp.
        proto: String,
        /// The pool4 address.
        ipv4: String,
        /// The pool4 port.
        port4: u16,
        #[command(flatten)]
        socket: SocketArg,
    },
}

fn report(d: Done) -> CmdResult {
    println!("{}", d.done);
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}

pub fn eam(cmd: &Eam) -> CmdResult {
    let (route, a) = match cmd {
        Eam::Add(a) => ("/v1/eam/add", a),
        Eam::Remove(a) => ("/v1/eam/remove", a),
    };
    let row = EamRow {
        ipv4: a.ipv4.clone(),
        ipv6: a.ipv6.clone(),
    };
    report(a.socket.client()?.post(route, &row)?)
}

pub fn pool4(cmd: &Pool4) -> CmdResult {
    let (route, row, socket) = match cmd {
        Pool4::Add {
            prefix,
            tcp,
            udp,
            icmp,
            socket,
        } => (
            "/v1/pool4/add",
            Pool4Row {
                prefix: prefix.clone(),
                tcp: tcp.clone(),
                udp: udp.clone(),
                icmp: icmp.clone(),
            },
            socket,
        ),
        Pool4::Remove { prefix, socket } => (
            "/v1/pool4/remove",
            Pool4Row {
                prefix: prefix.clone(),
                ..Pool4Row::default()
            },
            socket,
        ),
    };
    report(socket.client()?.post(route, &row)?)
}

pub fn bib(cmd: &Bib) -> CmdResult {
    let (route, row, socket) = match cmd {
        Bib::Add {
            proto,
            ipv6,
            port6,
            ipv4,
            port4,
            socket,
        } => (
            "/v1/bib/add",
            StaticBibRow {
                proto: proto.clone(),
                ipv6: Some(ipv6.clone()),
                port6: Some(*port6),
                ipv4: ipv4.clone(),
                port4: *port4,
            },
            socket,
        ),
        Bib::Remove {
            proto,
            ipv4,
            port4,
            socket,
        } => (
            "/v1/bib/remove",
            StaticBibRow {
                proto: proto.clone(),
                ipv6: None,
                port6: None,
                ipv4: ipv4.clone(),
                port4: *port4,
            },
            socket,
        ),
    };
    report(socket.client()?.post(route, &row)?)
}

/// `sixgate session …`: the RFC 6146 §3.2 sessions.
#[derive(Debug, clap::Subcommand)]
pub enum Session {
    /// Remove sessions and their dynamic BIB entries on every worker (static
    /// entries stay); all of them, or those the options name.
    Flush {
        /// Only tcp, udp or icmp sessions (as `show sessions --protocol`;
        /// `--proto` is still understood).
        #[arg(long = "protocol", alias = "proto", value_name = "PROTO")]
        proto: Option<String>,
        /// Only sessions of IPv6 hosts in ADDR[/LEN] (a MAP-T CE: LAN hosts
        /// as ::ffff:a.b.c.d).
        #[arg(long, value_name = "PREFIX")]
        ipv6: Option<String>,
        /// Only sessions on pool4 addresses in ADDR[/LEN].
        #[arg(long, value_name = "PREFIX")]
        ipv4: Option<String>,
        #[command(flatten)]
        socket: SocketArg,
    },
}

pub fn session(cmd: &Session) -> CmdResult {
    let Session::Flush {
        proto,
        ipv6,
        ipv4,
        socket,
    } = cmd;
    let req = FlushRequest {
        protocol: proto.clone(),
        ipv6: ipv6.clone(),
        ipv4: ipv4.clone(),
    };
    let d: FlushDone = socket.client()?.post("/v1/sessions/flush", &req)?;
    println!("flushed {} sessions, {} BIB entries", d.sessions, d.bib);
    Ok(())
}

/// Arguments of `sixgate reload`.
#[derive(Debug, clap::Args)]
pub struct ReloadArgs {
    #[command(flatten)]
    socket: SocketArg,
}

pub fn reload(a: &ReloadArgs) -> CmdResult {
    report(
        a.socket
            .client()?
            .post("/v1/reload", &serde_json::json!({}))?,
    )
}
