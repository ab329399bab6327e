//! `sixgate demo --mode nat64`: the usual IPv6-only deployment, in one command.
//! An IPv6-only client, the gateway running `sixgate run` with stateful NAT64
//! (RFC 6146) and its DNS64 (RFC 6147), and an IPv4-only server with a DNS
//! name that has only an A record. The client resolves it, gets the
//! synthesized AAAA, fetches the page; then the demo shows the live sessions
//! and BIB, adds a pool4 prefix at runtime, and prints the counters, with the
//! control commands an operator would type. Same bed, same cleanup as the SIIT
//! demo (`demo.rs`): everything goes, also on failure and on Ctrl-C.

use std::path::Path;
use std::time::{Duration, Instant};

use sixgate_netns::{Error, Proto, ScratchDir, addr, interrupt, start_sixgate_with_config};

use super::demo::{
    HTTP_PORT, indent, network, ping, seen_client, show_started, step, stop, tear_down, web_server,
};

/// pool4 at start, and the prefix `pool4 add` brings at runtime: the two
/// halves of what the IPv4 router sends to the gateway.
const POOL4: &str = "198.18.0.0/25";
const POOL4_ADDED: &str = "198.18.0.128/25";

/// The name the client resolves (only an A record, on the IPv4-only host).
const NAME: &str = "web.example";

/// An authoritative DNS server for `example.` in a few lines of Python (the
/// demo needs python3 for its web server already): `web.example` has an A
/// record and nothing else; every other question gets NODATA with the zone's
/// SOA (RFC 2308), so the DNS64 synthesizes (RFC 6147 §5.1.1).
const DNS_SERVER_PY: &str = r#"
import socket, struct, sys
addr, name, v4 = sys.argv[1], sys.argv[2], sys.argv[3]
def labels(n):
    return b"".join(bytes([len(p)]) + p.encode() for p in n.split(".")) + b"\0"
soa = labels("ns.example") + labels("hostmaster.example") + struct.pack(">IIIII", 1, 3600, 600, 86400, 60)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
while True:
    q, peer = s.recvfrom(512)
    if len(q) < 17 or q[2] & 0x80:
        continue
    i = 12
    while i < len(q) and q[i]:
        i += q[i] + 1
    qname = q[12:i + 1]
    qtype, qclass = struct.unpack(">HH", q[i + 1:i + 5])
    question = q[12:i + 5]
    parts, j = [], 0
    while qname[j]:
        parts.append(qname[j + 1:j + 1 + qname[j]].decode(errors="replace"))
        j += qname[j] + 1
    asked = ".".join(parts).lower()
    an, ns = b"", b""
    if asked == name and qtype == 1:
        an = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + socket.inet_aton(v4)
    else:
        ns = labels("example") + struct.pack(">HHIH", 6, 1, 60, len(soa)) + soa
    flags = 0x8400 | (struct.unpack(">H", q[2:4])[0] & 0x0100)
    head = q[0:2] + struct.pack(">HHHHH", flags, 1, 1 if an else 0, 1 if ns else 0, 0)
    s.sendto(head + question + an + ns, peer)
"#;

/// A DNS client for the IPv6-only host: AAAA `name` from `server`; prints
/// each AAAA record as "ADDRESS TTL".
const DNS_CLIENT_PY: &str = r#"
import socket, struct, sys
server, name = sys.argv[1], sys.argv[2]
q = struct.pack(">HHHHHH", 0x5a5a, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 28, 1)
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q, (server, 53))
r = s.recv(4096)
count = struct.unpack(">H", r[6:8])[0]
i = 12
while r[i]:
    i += r[i] + 1
i += 5
for _ in range(count):
    if r[i] & 0xc0 == 0xc0:
        i += 2
    else:
        while r[i]:
            i += r[i] + 1
        i += 1
    rtype, rclass, ttl, rdlen = struct.unpack(">HHIH", r[i:i + 10])
    i += 10
    if rtype == 28:
        print(socket.inet_ntop(socket.AF_INET6, r[i:i + rdlen]), ttl)
    i += rdlen
"#;

/// The gateway's configuration: NAT64 with a network-specific pool6 and the
/// DNS64 next to it, answering the IPv6-only link.
fn config() -> String {
    format!(
        "[translator]\nmode = \"nat64\"\npool6 = \"{pool6}\"\n\n\
         [nat64]\npool4 = [\"{POOL4}\"]\n\n\
         [dns64]\nlisten = [\"[{gw6}]:53\"]\nupstream = [\"{v4}\"]\nacl = [\"2001:db8:1::/64\"]\n",
        pool6 = addr::POOL6,
        gw6 = addr::GATEWAY_V6,
        v4 = addr::V4_HOST,
    )
}

/// The whole NAT64 demo; `binary` is the sixgate that runs in the gateway and
/// answers the control commands. Every early return drops the translator and
/// the bed, which removes them.
pub fn demo(binary: &Path) -> sixgate_netns::Result<()> {
    let t0 = Instant::now();
    println!(
        "sixgate demo --mode nat64: an IPv6-only host reaches an IPv4-only web server by \
         name, through a stateful NAT64\n(RFC 6146) with DNS64 (RFC 6147), both inside \
         `sixgate run`. Everything runs in network namespaces on this machine\nand is \
         removed at the end (also on Ctrl-C)."
    );
    let (bed, names) = network()?;
    println!(
        "  The IPv6 host's default router is the gateway; the IPv4 router sends 198.18.0.0/24 \
         (room for pool4) to the gateway."
    );

    step(2, "The plan: prefixes, pool4 and DNS64")?;
    println!(
        "  pool6 {} (RFC 6052), a network-specific prefix: IPv4 address a.b.c.d is \
         2001:db8:64::a.b.c.d to IPv6.",
        addr::POOL6
    );
    println!(
        "  Why not the well-known prefix 64:ff9b::/96? The server {} is a documentation \
         address (RFC 5737),\n  not a global one, and RFC 6052 §3.1 forbids 64:ff9b::/96 to \
         embed non-global IPv4 addresses:\n  sixgate would drop such packets (counted as \
         wkp_non_global). A lab, or a network with private IPv4\n  servers, needs a prefix \
         of its own (or `wkp_strict = false`).",
        addr::V4_HOST
    );
    println!(
        "  pool4 {POOL4} (RFC 6146): the IPv6 hosts share these IPv4 addresses and ports; \
         each flow gets a\n  binding (BIB entry) and a session."
    );
    println!(
        "  DNS64 on [{}]:53: {NAME} has only an A record; the DNS64 makes the AAAA from it \
         with pool6.",
        addr::GATEWAY_V6
    );

    step(3, "The IPv4-only host: a DNS server and a web server")?;
    let dir = ScratchDir::new("nat64demo")?;
    let v4 = addr::V4_HOST.to_string();
    let dns = bed
        .v4host
        .spawn("python3", ["-c", DNS_SERVER_PY, &v4, NAME, &v4])
        .map_err(|e| Error::new(format!("starting the DNS server: {e}")))?;
    bed.v4host
        .wait_listening(Proto::Udp, 53, Duration::from_secs(10))?;
    println!("  DNS: authoritative for example., {NAME} A {v4} (and no AAAA)");
    dir.write(
        "index.html",
        format!(
            "Hello from {v4}, an IPv4-only web server. You reached it by name over IPv6, \
             through sixgate's NAT64 and DNS64.\n"
        ),
    )?;
    let web = web_server(&bed, &v4, &dir)?;
    println!("  web: python3 -m http.server on {v4}:{HTTP_PORT}");

    step(4, "Starting sixgate in the gateway: NAT64 and DNS64")?;
    let running =
        start_sixgate_with_config(&bed.gateway, binary, &config(), &[addr::POOL6, POOL4])?;
    show_started(&running);
    println!(
        "  Ready after {} ms: TUN device {} is up, {} and {POOL4} are routed into it.",
        running.ready_after().as_millis(),
        running.tun(),
        addr::POOL6,
    );
    let socket = running
        .api_socket()
        .ok_or_else(|| Error::new("sixgate has no API socket"))?
        .to_owned();
    let control = |args: &[&str]| control(binary, &socket, args);

    step(
        5,
        &format!("The IPv6-only host asks the DNS64 for {NAME} AAAA"),
    )?;
    let gw6 = addr::GATEWAY_V6.to_string();
    let answer = bed.v6host.run_timeout(
        "python3",
        ["-c", DNS_CLIENT_PY, &gw6, NAME],
        Duration::from_secs(10),
    )?;
    let synthesized = answer.split_whitespace().next().unwrap_or("").to_owned();
    println!("  {NAME} AAAA {}", answer.trim());
    if synthesized != addr::V4_HOST_AS_V6.to_string() {
        return Err(Error::new(format!(
            "expected the AAAA {} (the A record in pool6), the DNS64 answered {answer:?}",
            addr::V4_HOST_AS_V6
        )));
    }
    println!(
        "  Synthesized: the A record {v4} embedded in pool6 (RFC 6147 §5.1.7); the name \
         never had an AAAA."
    );

    step(6, "A web page, fetched at the synthesized address")?;
    let url = format!("http://[{synthesized}]:{HTTP_PORT}/");
    println!("  $ curl -g {url}");
    let page = bed.v6host.run_timeout(
        "curl",
        ["-g", "-sS", "--fail", "--max-time", "10", &url],
        Duration::from_secs(15),
    )?;
    println!("  {}", page.lines().next().unwrap_or(""));
    let client = seen_client(&web);
    println!(
        "  The server's access log shows the client as {client}: a pool4 address, shared by \
         the IPv6 hosts."
    );
    ping(&bed.v6host, addr::V4_HOST_AS_V6.into())?;

    step(7, "The NAT64 state, live (sixgate show)")?;
    for args in [&["show", "sessions"][..], &["show", "bib"]] {
        println!("  $ sixgate {}", args.join(" "));
        print!("{}", indent(&control(args)?));
    }
    println!(
        "  One binding per flow: the TCP connection of the page and the ping's ICMP \
         identifier, each with its pool4 address and port."
    );

    step(8, "More IPv4 addresses while it runs (sixgate pool4 add)")?;
    for args in [&["pool4", "add", POOL4_ADDED][..], &["show", "pool4"]] {
        println!("  $ sixgate {}", args.join(" "));
        print!("{}", indent(&control(args)?));
    }
    println!(
        "  New mappings may use it at once; the sessions above go on untouched. Ports \
         61001-65535 are the default, as in Jool."
    );

    step(9, "The counters (sixgate show stats)")?;
    println!("  $ sixgate show stats   (the non-zero ones)");
    let stats = control(&["show", "stats"])?;
    let mut lines = stats.lines();
    let header = lines.next().unwrap_or("");
    let mut kept = vec![header];
    kept.extend(lines.filter(|l| l.split_whitespace().nth(1).is_some_and(|t| t != "0")));
    print!("{}", indent(&kept.join("\n")));
    println!("  $ sixgate show counters   (drops by reason)");
    let drops = control(&["show", "counters"])?;
    print!("{}", indent(&drops));
    if drops.contains("host_multicast") {
        println!(
            "  host_multicast: the gateway's kernel sends its own IPv6 multicast (MLD, router \
             solicitations) into\n  every interface, the TUN device too; it is never \
             forwarded. No client traffic was lost."
        );
    }
    let log = running.log();
    let first: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("first ") && l.contains(" drop ("))
        .collect();
    if !first.is_empty() {
        println!("  The daemon logged the first drop of each kind once, with a hint:");
        for l in first {
            println!("    {}", l.trim());
        }
    }
    stop(running)?;
    drop(dns);

    step(10, "Tearing down")?;
    tear_down(bed, &names, t0)
}

/// `sixgate ARGS --socket SOCKET`, its standard output (or its error).
fn control(binary: &Path, socket: &Path, args: &[&str]) -> sixgate_netns::Result<String> {
    interrupt::check()?;
    let out = std::process::Command::new(binary)
        .args(args)
        .arg("--socket")
        .arg(socket)
        .output()
        .map_err(|e| Error::new(format!("sixgate {}: {e}", args.join(" "))))?;
    if !out.status.success() {
        return Err(Error::new(format!(
            "sixgate {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
