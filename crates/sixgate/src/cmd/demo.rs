//! `sixgate demo`: the translator at work, in one command, on this machine.
//!
//! Builds the namespace bed of `sixgate-netns` (IPv6-only host — gateway —
//! IPv4 router — IPv4-only web server), starts the translator in the gateway
//! (`sixgate run`, i.e. this very binary, or TAYGA), and narrates: the addresses
//! and how each side sees the other, pings both ways, a web page fetched over
//! IPv6 from the IPv4-only server, the translator's counters. Then it tears
//! everything down, also on failure and on Ctrl-C (SIGINT, SIGTERM, SIGHUP).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sixgate_netns::{
    Background, Context, Dut, Error, Netns, Proto, RunningDut, ScratchDir, Topology,
    TopologyOptions, addr, check_host, cleanup_stale, interrupt, list_namespaces,
};

use super::CmdResult;

/// Arguments of `sixgate demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to show: `siit` (stateless, the default) or `nat64` (stateful NAT64
    /// with DNS64: the client resolves a name that has only an A record).
    #[arg(long, value_enum, default_value_t = Mode::Siit)]
    pub mode: Mode,
    /// The translator to run in the gateway: `sixgate` (this program's `run`) or
    /// `tayga` (TAYGA, the reference translator, to compare; SIIT only).
    #[arg(long, value_enum, default_value_t = Which::Sixgate)]
    pub translator: Which,
    /// Run this executable as sixgate instead of this program (for testing the
    /// demo with another build or a stand-in).
    #[arg(long, value_name = "PATH", hide = true)]
    pub sixgate_binary: Option<PathBuf>,
}

/// Which demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Stateless SIIT (RFC 7915) with EAM: pings both ways and a web page.
    Siit,
    /// Stateful NAT64 (RFC 6146) and DNS64 (RFC 6147) inside `sixgate run`.
    Nat64,
}

/// Which translator the demo runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// `sixgate run` (this binary).
    Sixgate,
    /// TAYGA.
    Tayga,
}

pub(super) const HTTP_PORT: u16 = 8080;

pub fn run(args: &Args) -> CmdResult {
    if args.mode == Mode::Nat64 && args.translator == Which::Tayga {
        return Err(
            "sixgate demo: --mode nat64 needs a stateful translator; TAYGA is \
                    stateless (SIIT only): leave --translator out"
                .to_owned(),
        );
    }
    interrupt::install().map_err(|e| format!("sixgate demo: {e}"))?;
    let translator = match args.translator {
        Which::Sixgate => {
            let exe = match &args.sixgate_binary {
                Some(path) => path.clone(),
                None => std::env::current_exe()
                    .map_err(|e| format!("sixgate demo: cannot find this program: {e}"))?,
            };
            Dut::sixgate(exe)
        }
        Which::Tayga => Dut::Tayga,
    };
    if let Err(why) = translator.check_available() {
        return Err(match args.translator {
            Which::Sixgate => "sixgate demo: this build of sixgate has no `run` command yet (the \
                 TUN gateway daemon), so there is no live translator to show.\n\
                 `sixgate demo --translator tayga` runs the same demo with TAYGA in its place."
                .to_owned(),
            Which::Tayga => format!("sixgate demo: {why}"),
        });
    }
    check_host().map_err(|why| format!("sixgate demo: {why}"))?;
    let result = match (args.mode, &translator) {
        (Mode::Nat64, Dut::Sixgate { binary, .. }) => super::demo_nat64::demo(binary),
        _ => demo(&translator),
    };
    match result {
        Ok(()) => Ok(()),
        Err(e) if e.is_interrupted() => Err(
            "sixgate demo: interrupted; everything the demo created has been removed".to_owned(),
        ),
        Err(e) => Err(format!(
            "sixgate demo: {e}\n(everything the demo created has been removed)"
        )),
    }
}

pub(super) fn step(n: u32, title: &str) -> sixgate_netns::Result<()> {
    interrupt::check()?;
    println!("\n== {n}. {title}");
    Ok(())
}

pub(super) fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// The whole demo. Every early return (`?`) drops the translator and the bed, which
/// removes them.
fn demo(translator: &Dut) -> sixgate_netns::Result<()> {
    let t0 = Instant::now();
    let who = match translator {
        Dut::Sixgate { .. } => "sixgate",
        Dut::Tayga => "TAYGA",
    };
    println!(
        "sixgate demo: an IPv6-only host and an IPv4-only web server talk through a stateless \
         IPv4/IPv6 translator ({who}, SIIT, RFC 7915).\n\
         Everything runs in network namespaces on this machine and is removed at the end \
         (also on Ctrl-C)."
    );
    let (bed, names) = network()?;
    println!(
        "  The IPv6 host's default router is the gateway. The gateway routes {} via the IPv4 \
         router,\n  and the router routes {} (the IPv6 hosts, as IPv4 sees them) back to the \
         gateway.",
        addr::V4_NET,
        addr::EAM_V4
    );

    step(2, "How each side sees the other")?;
    println!(
        "  pool6 {} (RFC 6052): every IPv4 address a.b.c.d is 2001:db8:64::a.b.c.d to IPv6.",
        addr::POOL6
    );
    println!(
        "  EAM {} <-> {} (RFC 7757): the IPv6 hosts get IPv4 addresses, one for one.",
        addr::EAM_V4,
        addr::EAM_V6
    );
    println!(
        "  The IPv6-only host {} appears to IPv4 as {}.",
        addr::V6_HOST,
        addr::V6_HOST_AS_V4
    );
    println!(
        "  The IPv4-only web server {} appears to IPv6 as {} (also written 2001:db8:64::{}).",
        addr::V4_HOST,
        addr::V4_HOST_AS_V6,
        addr::V4_HOST
    );

    step(3, "Starting the translator in the gateway")?;
    let running = bed.start(translator)?;
    show_started(&running);
    println!(
        "  Ready after {} ms: TUN device {} is up, and {} and {} are routed into it.",
        running.ready_after().as_millis(),
        running.tun(),
        addr::POOL6,
        addr::EAM_V4
    );

    step(
        4,
        &format!(
            "ping from the IPv6-only host to {} (the IPv4 server)",
            addr::V4_HOST_AS_V6
        ),
    )?;
    ping(&bed.v6host, addr::V4_HOST_AS_V6.into())?;

    step(
        5,
        &format!(
            "ping from the IPv4-only server to {} (the IPv6 host)",
            addr::V6_HOST_AS_V4
        ),
    )?;
    ping(&bed.v4host, addr::V6_HOST_AS_V4.into())?;

    step(6, "A web page, fetched over IPv6 from the IPv4-only server")?;
    web(&bed, who)?;

    step(7, "What went through the translator")?;
    let stats = running.tun_stats()?;
    println!(
        "  TUN {}: {} packets ({} bytes) routed into the translator, {} packets ({} bytes) \
         written back.",
        running.tun(),
        stats.tx_packets,
        stats.tx_bytes,
        stats.rx_packets,
        stats.rx_bytes
    );
    stop(running)?;

    step(8, "Tearing down")?;
    tear_down(bed, &names, t0)?;
    if who == "sixgate" {
        println!(
            "Next: `sixgate demo --mode nat64` shows stateful NAT64 with DNS64, the usual \
             IPv6-only deployment."
        );
    }
    Ok(())
}

/// Step 1 of both demos: remove what an interrupted run left, build the bed
/// and describe it. Returns the bed and its namespace names.
pub(super) fn network() -> sixgate_netns::Result<(Topology, Vec<String>)> {
    for what in cleanup_stale()? {
        println!("(removed a leftover of an earlier, interrupted run: {what})");
    }

    step(1, "The network")?;
    let bed = Topology::build(TopologyOptions::default())?;
    let names = names(&bed);
    print!("{}", bed.describe());
    Ok((bed, names))
}

/// The bed's namespace names, to check later that none is left.
pub(super) fn names(bed: &Topology) -> Vec<String> {
    bed.namespaces()
        .iter()
        .map(|n| n.name().to_owned())
        .collect()
}

/// Remove the bed, check that none of `names` is left, and say so.
pub(super) fn tear_down(bed: Topology, names: &[String], t0: Instant) -> sixgate_netns::Result<()> {
    drop(bed);
    let listed = list_namespaces()?;
    let left: Vec<&String> = names.iter().filter(|n| listed.contains(n)).collect();
    if !left.is_empty() {
        return Err(Error::new(format!("namespaces left behind: {left:?}")));
    }
    println!(
        "  Removed the {} namespaces, their links and everything that ran in them.",
        names.len()
    );
    println!(
        "\nsixgate demo: done in {:.1} s. Everything worked.",
        t0.elapsed().as_secs_f32()
    );
    Ok(())
}

/// Three pings, one line per reply.
pub(super) fn ping(from: &Netns, to: IpAddr) -> sixgate_netns::Result<()> {
    let out = from.output_timeout(
        "ping",
        ["-n", "-c", "3", "-i", "0.3", "-W", "2", &to.to_string()],
        Duration::from_secs(15),
    )?;
    interrupt::check()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut replies = 0;
    for line in text.lines().filter(|l| l.contains("time=")) {
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or("?")
                .to_owned()
        };
        println!(
            "  reply from {to}: icmp_seq={} ttl={} time={} ms",
            field("icmp_seq="),
            field("ttl="),
            field("time=")
        );
        replies += 1;
    }
    if replies == 0 || !out.status.success() {
        return Err(Error::new(format!(
            "ping {to} got {replies} of 3 replies:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

/// Serve a page from the IPv4-only host and fetch it with curl from the IPv6 host.
fn web(bed: &Topology, who: &str) -> sixgate_netns::Result<()> {
    let dir = ScratchDir::new("www")?;
    dir.write(
        "index.html",
        format!(
            "Hello from {}, an IPv4-only web server. You reached it over IPv6, through {who}.\n\
             <p>Served by python3 -m http.server in the IPv4-only namespace.</p>\n",
            addr::V4_HOST
        ),
    )?;
    let server = web_server(bed, &addr::V4_HOST.to_string(), &dir)?;
    println!(
        "  web server: python3 -m http.server on {}:{HTTP_PORT}",
        addr::V4_HOST
    );
    let url = format!("http://[{}]:{HTTP_PORT}/", addr::V4_HOST_AS_V6);
    println!("  $ curl -g {url}");
    let page = bed.v6host.run_timeout(
        "curl",
        ["-g", "-sS", "--fail", "--max-time", "10", "-D", "-", &url],
        Duration::from_secs(15),
    )?;
    let (head, body) = page
        .split_once("\r\n\r\n")
        .ok_or_else(|| Error::new(format!("unexpected curl output:\n{page}")))?;
    println!("  {}", head.lines().next().unwrap_or(""));
    println!(
        "  first line of the page: {}",
        body.lines().next().unwrap_or("")
    );
    let client = seen_client(&server);
    println!("  The server's access log shows the client as {client}: the IPv6 host, translated.");
    Ok(())
}

/// `python3 -m http.server` on the IPv4-only host, serving `dir` at
/// `bind`:[`HTTP_PORT`], once it listens.
pub(super) fn web_server(
    bed: &Topology,
    bind: &str,
    dir: &ScratchDir,
) -> sixgate_netns::Result<Background> {
    let server = bed
        .v4host
        .spawn(
            "python3",
            [
                "-m",
                "http.server",
                "--bind",
                bind,
                "--directory",
                &dir.path().to_string_lossy(),
                &HTTP_PORT.to_string(),
            ],
        )
        .context("starting the web server")?;
    bed.v4host
        .wait_listening(Proto::Tcp, HTTP_PORT, Duration::from_secs(10))?;
    Ok(server)
}

/// The client address in the web server's first access-log line (python's
/// http.server logs each request to stderr, client address first), or "?"
/// after 2 s.
pub(super) fn seen_client(server: &Background) -> String {
    let t = Instant::now();
    loop {
        if let Some(line) = server.stderr().lines().find(|l| l.contains("\"GET ")) {
            return line.split_whitespace().next().unwrap_or("?").to_owned();
        }
        if t.elapsed() > Duration::from_secs(2) {
            return "?".to_owned();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The translator's command line and configuration, as it started.
pub(super) fn show_started(running: &RunningDut<'_>) {
    println!("  $ {}", running.command_line());
    println!("  {}:", running.config_path().display());
    print!("{}", indent(running.config()));
}

/// Stop the translator and show what it reported.
pub(super) fn stop(running: RunningDut<'_>) -> sixgate_netns::Result<()> {
    let name = running.name();
    let stopped = running.stop()?;
    match name {
        "tayga" => println!(
            "  TAYGA keeps no counters of its own; the TUN counters above are what it did."
        ),
        _ => {
            let summary = if stopped.stdout.trim().is_empty() {
                let lines: Vec<&str> = stopped.stderr.lines().collect();
                lines[lines.len().saturating_sub(20)..].join("\n")
            } else {
                // Everything translated first: with the fast path on, the
                // workers' line alone reads "translated 0".
                let (together, rest): (Vec<&str>, Vec<&str>) = stopped
                    .stdout
                    .lines()
                    .partition(|l| l.contains("fast and slow path together"));
                together
                    .into_iter()
                    .chain(rest)
                    .collect::<Vec<_>>()
                    .join("\n")
                    + "\n"
            };
            println!("  sixgate's counters, from the summary it printed on exit:");
            print!("{}", indent(&summary));
            if summary.contains("fast and slow path together") {
                println!(
                    "  The in-kernel fast path translated most packets itself; the \"rx\" line \
                     counts only\n  what reached the TUN device (docs/fastpath.md, \
                     \"Counters\")."
                );
            }
            if summary.contains("host_multicast") {
                println!(
                    "  host_multicast: the kernel's own IPv6 multicast (MLD) into the new \
                     device, never forwarded."
                );
            }
        }
    }
    stopped.check_clean()?;
    println!(
        "  Stopped the translator (SIGTERM): {}; its TUN device is gone.",
        stopped.status
    );
    Ok(())
}
