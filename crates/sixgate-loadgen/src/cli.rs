//! The command line: `sixgate-loadgen send …` and `sixgate-loadgen recv …`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::frame::Mac;
use crate::ports::PortRange;
use crate::recv::RecvOptions;
use crate::send::{SendOptions, Via};

/// UDP packet generator and receiver for data-plane benchmarks (Linux,
/// sendmmsg/recvmmsg in batches).
#[derive(Debug, Parser)]
#[command(name = "sixgate-loadgen", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send UDP datagrams at a paced rate and report the rate offered.
    Send(SendArgs),
    /// Count the UDP datagrams arriving on a socket and report the rate delivered.
    Recv(RecvArgs),
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Destination, e.g. 198.51.100.7:5001 or [2001:db8:64::c633:6407]:5001.
    #[arg(long)]
    pub dst: SocketAddr,
    /// Packets per second (suffixes k and M allowed: 250k, 1.5M); 0 = as fast as possible.
    #[arg(long, value_parser = parse_rate)]
    pub rate: u64,
    /// Trial length in seconds (fractions allowed).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Duration,
    /// UDP payload bytes. 18 gives RFC 8219's smallest frames: a 46-byte IPv4
    /// packet (64-byte Ethernet frame) and a 66-byte IPv6 packet (84-byte frame).
    #[arg(long, default_value_t = 18, value_parser = clap::value_parser!(u16).range(0..=9000))]
    pub size: u16,
    /// Give each packet a pseudorandom source port from A-B (RFC 4814); uses a raw
    /// socket (needs CAP_NET_RAW). Without it, one UDP socket's port is used.
    #[arg(long, value_name = "A-B")]
    pub src_port_range: Option<PortRange>,
    /// Send whole Ethernet frames out of this interface through a packet socket
    /// (needs CAP_NET_RAW and --dst-mac): the sender's own IP stack is skipped,
    /// so more load can be offered. The source address is the one the kernel
    /// would use for --dst.
    #[arg(long, value_name = "IFACE", requires = "dst_mac")]
    pub via: Option<String>,
    /// With --via: the next hop's Ethernet address (the gateway's, or the
    /// destination's on the same link).
    #[arg(long, value_name = "MAC", requires = "via")]
    pub dst_mac: Option<Mac>,
    /// With --via: spread the source address over N hosts: each packet's source
    /// is the address the kernel would use plus a pseudorandom 0..N-1 in its last
    /// 16 bits (RFC 4814's spread applied to addresses: several subscribers).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "via",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub src_hosts: u16,
    /// With --via: the source Ethernet address (default: the interface's).
    #[arg(long, value_name = "MAC", requires = "via")]
    pub src_mac: Option<Mac>,
    /// Packets per sendmmsg call (the token bucket's depth).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub batch: u16,
    /// Seed for the pseudorandom ports (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RecvArgs {
    /// Address and port to listen on, e.g. 0.0.0.0:5001 or [::]:5001.
    #[arg(long)]
    pub bind: SocketAddr,
    /// Stop after this many seconds.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Duration,
    /// Also stop once this many seconds pass without a datagram (after the first).
    #[arg(long, value_parser = parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// Also stop once this many datagrams have arrived.
    #[arg(long)]
    pub expect: Option<u64>,
    /// Datagrams per recvmmsg call.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub batch: u16,
    /// Poll instead of blocking: sleep this many microseconds whenever the queue
    /// is drained (so that senders do not pay a wake-up per datagram); 0 blocks.
    #[arg(long, default_value_t = 200)]
    pub poll_us: u64,
    /// Socket receive buffer to ask for (bytes; privileged callers get it even
    /// above net.core.rmem_max).
    #[arg(long, default_value_t = 16 << 20)]
    pub rcvbuf: usize,
    /// Write the bound address to this file once listening (for scripts to wait on).
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
    /// Set SO_REUSEPORT, so that several receivers on several CPUs share the
    /// port (the kernel spreads flows over them by hash).
    #[arg(long)]
    pub reuse_port: bool,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl SendArgs {
    pub fn options(&self) -> SendOptions {
        SendOptions {
            dst: self.dst,
            rate: self.rate,
            duration: self.duration,
            size: usize::from(self.size),
            src_ports: self.src_port_range,
            via: self.via.as_ref().map(|iface| Via {
                iface: iface.clone(),
                dst_mac: self.dst_mac.expect("clap requires --dst-mac with --via"),
                src_mac: self.src_mac,
            }),
            src_hosts: self.src_hosts,
            batch: usize::from(self.batch),
            seed: self.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            }),
        }
    }
}

impl RecvArgs {
    pub fn options(&self) -> RecvOptions {
        RecvOptions {
            bind: self.bind,
            duration: self.duration,
            idle_timeout: self.idle_timeout,
            expect: self.expect,
            batch: usize::from(self.batch),
            poll: (self.poll_us > 0).then(|| Duration::from_micros(self.poll_us)),
            rcvbuf: self.rcvbuf,
            ready_file: self.ready_file.clone(),
            reuse_port: self.reuse_port,
        }
    }
}

/// A rate in packets per second: `300000`, `300k`, `1.5M`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.as_bytes().last() {
        Some(b'k' | b'K') => (&t[..t.len() - 1], 1e3),
        Some(b'm' | b'M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a rate (e.g. 250000, 250k, 1.5M)"))?;
    if !v.is_finite() || v < 0.0 || v * mult > 1e9 {
        return Err(format!("rate `{s}` out of range (0 to 1G pps)"));
    }
    Ok((v * mult).round() as u64)
}

/// Seconds, fractions allowed: `3`, `0.5`; a trailing `s` is accepted.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim().trim_end_matches('s');
    let v: f64 = t
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 || v > 86_400.0 {
        return Err(format!("duration `{s}` out of range (0 < s <= 86400)"));
    }
    Ok(Duration::from_secs_f64(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("sixgate-loadgen").chain(args.iter().copied()))
    }

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("300000"), Ok(300_000));
        assert_eq!(parse_rate("250k"), Ok(250_000));
        assert_eq!(parse_rate("1.5M"), Ok(1_500_000));
        assert_eq!(parse_rate("0"), Ok(0));
        assert!(parse_rate("-5").is_err());
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("5G").is_err());
        assert!(parse_rate("2000M").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn send_arguments() {
        let cli = parse(&[
            "send",
            "--dst",
            "[2001:db8:64::c633:6407]:5001",
            "--rate",
            "250k",
            "--duration",
            "3",
            "--src-port-range",
            "1024-65535",
            "--json",
        ])
        .unwrap();
        let Command::Send(a) = cli.command else {
            panic!("not send")
        };
        let o = a.options();
        assert_eq!(o.dst, "[2001:db8:64::c633:6407]:5001".parse().unwrap());
        assert_eq!(o.rate, 250_000);
        assert_eq!(o.duration, Duration::from_secs(3));
        assert_eq!(o.size, 18, "default payload gives 64-byte IPv4 frames");
        assert_eq!(o.batch, 32);
        assert_eq!(o.src_ports, Some("1024-65535".parse().unwrap()));
        assert!(o.via.is_none());
        assert!(a.json);
    }

    #[test]
    fn send_via_a_packet_socket() {
        let cli = parse(&[
            "send",
            "--dst",
            "[2001:db8:64::c633:6407]:5001",
            "--rate",
            "0",
            "--duration",
            "1",
            "--via",
            "v6h",
            "--dst-mac",
            "02:00:5e:00:06:01",
        ])
        .unwrap();
        let Command::Send(a) = cli.command else {
            panic!("not send")
        };
        let via = a.options().via.unwrap();
        assert_eq!(via.iface, "v6h");
        assert_eq!(via.dst_mac, "02:00:5e:00:06:01".parse().unwrap());
        assert_eq!(via.src_mac, None);
        // --via and --dst-mac need each other; MACs must parse.
        let base = [
            "send",
            "--dst",
            "198.51.100.7:9",
            "--rate",
            "1",
            "--duration",
            "1",
        ];
        let with = |extra: &[&str]| parse(&[&base[..], extra].concat());
        assert!(with(&["--via", "eth0"]).is_err());
        assert!(with(&["--dst-mac", "02:00:5e:00:06:01"]).is_err());
        assert!(with(&["--via", "eth0", "--dst-mac", "nope"]).is_err());
        assert!(
            with(&[
                "--via",
                "eth0",
                "--dst-mac",
                "2:0:0:0:0:1",
                "--src-mac",
                "2:0:0:0:0:2"
            ])
            .is_ok()
        );
    }

    #[test]
    fn send_rejects_bad_arguments() {
        let base = ["send", "--dst", "198.51.100.7:9", "--duration", "1"];
        let with = |extra: &[&str]| parse(&[&base[..], extra].concat());
        assert!(with(&["--rate", "1k"]).is_ok());
        assert!(with(&[]).is_err(), "rate is required");
        assert!(with(&["--rate", "1k", "--size", "9001"]).is_err());
        assert!(with(&["--rate", "1k", "--batch", "0"]).is_err());
        assert!(with(&["--rate", "1k", "--src-port-range", "9-1"]).is_err());
        assert!(
            parse(&[
                "send",
                "--dst",
                "198.51.100.7",
                "--rate",
                "1",
                "--duration",
                "1"
            ])
            .is_err()
        );
    }

    #[test]
    fn recv_arguments() {
        let cli = parse(&[
            "recv",
            "--bind",
            "0.0.0.0:5001",
            "--duration",
            "5",
            "--idle-timeout",
            "0.3",
            "--expect",
            "1000",
        ])
        .unwrap();
        let Command::Recv(a) = cli.command else {
            panic!("not recv")
        };
        let o = a.options();
        assert_eq!(o.bind, "0.0.0.0:5001".parse().unwrap());
        assert_eq!(o.duration, Duration::from_secs(5));
        assert_eq!(o.idle_timeout, Some(Duration::from_millis(300)));
        assert_eq!(o.expect, Some(1000));
        assert_eq!(o.batch, 256);
        assert_eq!(o.poll, Some(Duration::from_micros(200)));
        assert!(!a.json);
        assert!(
            parse(&["recv", "--duration", "5"]).is_err(),
            "bind is required"
        );
    }
}
