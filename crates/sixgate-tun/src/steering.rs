//! Queue steering for stateful NAT64 (docs/architecture.md, "Multi-core without a
//! shared table"): the eBPF program `bpf/steer.c`, loaded with aya and attached to
//! the TUN device with `TUNSETSTEERINGEBPF`, so that the kernel hands every packet
//! to the worker that owns its state.
//!
//! The MAP-T BR runs the same program in [`Mode::Flow`]: every fragment of a
//! datagram to one worker (its fragment table, RFC 7599 §8), the rest by 5-tuple
//! (`sixgate_core::mapt::steering`).
//!
//! The program is the data-plane copy of `sixgate_core::nat64::steering`
//! (`port_owner`, `subscriber_worker`); its constants come from the configuration
//! at load time, and its `static_bib` map sends the IPv4 side of each static BIB
//! entry to the worker of its IPv6 side. `tests/steering.rs` checks it against the
//! Rust functions over random packets with `BPF_PROG_TEST_RUN`.

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use aya::maps::HashMap;
use aya::programs::SocketFilter;
use aya::{Ebpf, EbpfLoader};
use sixgate_core::nat64::{Deterministic, Nat64Config, Proto, steering};

/// The compiled program (empty when clang was missing at build time).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/steer.o"));

/// The program's name in the object.
const PROGRAM: &str = "sixgate_steer";
/// `TUNSETSTEERINGEBPF` = `_IOR('T', 224, int)`.
const TUNSETSTEERINGEBPF: libc::c_ulong = 0x8004_54e0;

/// What the program steers by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Stateful NAT64: to the worker that owns the packet's state.
    #[default]
    Nat64,
    /// MAP-T BR: fragments of a datagram together, the rest by 5-tuple.
    Flow,
}

impl Mode {
    /// The mode of sixgate that uses it, for the log.
    pub fn user(self) -> &'static str {
        match self {
            Mode::Nat64 => "nat64",
            Mode::Flow => "mapt-br",
        }
    }
}

/// What the program needs to know, fixed for its lifetime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// What it steers by.
    pub mode: Mode,
    /// Number of workers (= TUN queues).
    pub workers: u16,
    /// IPv6 prefix length of one subscriber.
    pub subscriber_prefix_len: u8,
    /// Ports per group in `port_owner`.
    pub port_group: u16,
    /// Static BIB entries: their IPv4 side and the worker of their IPv6 side.
    pub static_bib: Vec<StaticEntry>,
    /// RFC 7422 deterministic NAT: its subscribers to their block's worker.
    pub deterministic: Option<Deterministic>,
}

impl Params {
    /// The program's view of `cfg` with `workers` workers.
    pub fn new(cfg: &Nat64Config, workers: u16) -> Params {
        let len = cfg.subscriber_prefix_len;
        let owner = steering::PacketOwner::new(cfg, workers);
        Params {
            mode: Mode::Nat64,
            workers,
            subscriber_prefix_len: len,
            port_group: steering::port_group(cfg.port_block_size),
            deterministic: Deterministic::plan(cfg).ok().flatten(),
            static_bib: cfg
                .static_bib
                .iter()
                .map(|b| StaticEntry {
                    proto: match b.proto {
                        Proto::Tcp => 6,
                        Proto::Udp => 17,
                        Proto::Icmp => 1,
                    },
                    addr: b.v4,
                    port: b.port4,
                    worker: owner.subscriber(u128::from(b.v6)),
                })
                .collect(),
        }
    }

    /// The MAP-T BR's steering ([`Mode::Flow`]) with `workers` workers.
    pub fn flow(workers: u16) -> Params {
        Params {
            mode: Mode::Flow,
            workers,
            subscriber_prefix_len: 128,
            port_group: 2,
            static_bib: Vec::new(),
            deterministic: None,
        }
    }
}

/// One static BIB entry as the program sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticEntry {
    /// 6 (TCP), 17 (UDP) or 1 (ICMP).
    pub proto: u8,
    /// IPv4 address (pool4).
    pub addr: Ipv4Addr,
    /// Port or ICMP identifier.
    pub port: u16,
    /// `subscriber_worker` of the entry's IPv6 address.
    pub worker: u16,
}

/// `struct static_bib_key` in steer.c.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Key {
    /// Network order.
    addr: u32,
    port: u16,
    proto: u8,
    pad: u8,
}

// SAFETY: plain integers, no padding (4 + 2 + 1 + 1 bytes), any bit pattern valid.
unsafe impl aya::Pod for Key {}

/// The loaded program and its map.
pub struct Steering {
    ebpf: Ebpf,
}

impl Steering {
    /// Load the program with `p`'s constants and fill its static BIB map. The
    /// error says why (no CAP_BPF, no clang at build time, verifier).
    pub fn load(p: &Params) -> Result<Steering, String> {
        if OBJECT.is_empty() {
            return Err(
                "the steering program was not built (clang was missing when sixgate \
                        was compiled)"
                    .to_owned(),
            );
        }
        let workers = u32::from(p.workers.max(1));
        let len = u32::from(p.subscriber_prefix_len.min(128));
        let group = u32::from(p.port_group.max(1));
        let mode: u32 = match p.mode {
            Mode::Nat64 => 0,
            Mode::Flow => 1,
        };
        // RFC 7422 deterministic NAT: the formula's constants (det_addrs 0: off).
        let (det_hi, det_lo, det_len, det_first_group, det_addrs) = match &p.deterministic {
            Some(d) => {
                let (a, l) = d.prefix();
                let a = u128::from(a);
                let (hi, lo) = ((a >> 64) as u64, a as u64);
                (hi, lo, u32::from(l), d.first_group(), d.addresses())
            }
            None => (0, 0, 0, 0, 0),
        };
        let mut ebpf = EbpfLoader::new()
            .override_global("workers", &workers, true)
            .override_global("mode", &mode, true)
            .override_global("subscriber_prefix_len", &len, true)
            .override_global("port_group", &group, true)
            .override_global("det_hi", &det_hi, true)
            .override_global("det_lo", &det_lo, true)
            .override_global("det_len", &det_len, true)
            .override_global("det_first_group", &det_first_group, true)
            .override_global("det_addrs", &det_addrs, true)
            .load(OBJECT)
            .map_err(|e| format!("cannot load the steering program: {}", chain(&e)))?;
        let prog: &mut SocketFilter = ebpf
            .program_mut(PROGRAM)
            .ok_or("the steering object has no program sixgate_steer")?
            .try_into()
            .map_err(|e| format!("steering program: {e}"))?;
        prog.load()
            .map_err(|e| format!("the kernel refused the steering program: {}", chain(&e)))?;
        let mut s = Steering { ebpf };
        s.update_static_bib(&[], &p.static_bib)?;
        Ok(s)
    }

    /// Static BIB entries changed at runtime (`sixgate bib add|remove`, reload):
    /// take `old` ones that are not in `new` out of the map, put `new` ones in.
    pub fn update_static_bib(
        &mut self,
        old: &[StaticEntry],
        new: &[StaticEntry],
    ) -> Result<(), String> {
        let map = self
            .ebpf
            .map_mut("static_bib")
            .ok_or("the steering object has no map static_bib")?;
        let mut map: HashMap<_, Key, u32> =
            HashMap::try_from(map).map_err(|e| format!("static_bib map: {e}"))?;
        let key = |e: &StaticEntry| Key {
            addr: u32::from(e.addr).to_be(),
            port: e.port,
            proto: e.proto,
            pad: 0,
        };
        for e in old.iter().filter(|e| !new.contains(e)) {
            let _ = map.remove(&key(e));
        }
        for e in new {
            map.insert(key(e), u32::from(e.worker), 0).map_err(|err| {
                format!(
                    "cannot add static BIB entry {}:{} (protocol {}) to the steering map: {err}",
                    e.addr, e.port, e.proto
                )
            })?;
        }
        Ok(())
    }

    /// The loaded program (for `BPF_PROG_TEST_RUN` in tests).
    pub fn program(&self) -> &SocketFilter {
        self.ebpf
            .program(PROGRAM)
            .and_then(|p| <&SocketFilter>::try_from(p).ok())
            .expect("loaded in Steering::load")
    }

    /// Attach to the TUN device that `queue` (any attached queue) belongs to.
    /// The kernel keeps its own reference: the program stays attached after
    /// `self` is dropped, until [`detach`] or the device goes.
    pub fn attach(&self, queue: BorrowedFd<'_>) -> Result<(), String> {
        let fd = self
            .program()
            .fd()
            .map_err(|e| format!("steering program: {e}"))?
            .as_fd()
            .as_raw_fd();
        set_steering(queue, fd)
            .map_err(|e| format!("cannot attach the steering program (TUNSETSTEERINGEBPF): {e}"))
    }
}

/// Take the steering program off the device (before leaving a persistent device
/// behind, so that a later run starts from plain queue selection).
pub fn detach(queue: BorrowedFd<'_>) -> Result<(), String> {
    set_steering(queue, -1).map_err(|e| format!("cannot detach the steering program: {e}"))
}

fn set_steering(queue: BorrowedFd<'_>, prog_fd: i32) -> std::io::Result<()> {
    let fd: libc::c_int = prog_fd;
    // SAFETY: TUNSETSTEERINGEBPF reads one int (a BPF program fd, or -1) through
    // the pointer, on an attached TUN queue descriptor.
    let r = unsafe {
        libc::ioctl(
            queue.as_raw_fd(),
            TUNSETSTEERINGEBPF as _,
            &fd as *const libc::c_int,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// An error with its causes, one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let m = c.to_string();
        // The verifier log can be long: its last lines say why.
        let m = if m.lines().count() > 6 {
            let lines: Vec<&str> = m.lines().collect();
            format!("... {}", lines[lines.len() - 6..].join(" | "))
        } else {
            m
        };
        // aya repeats its cause in its own message: say it once.
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = c.source();
    }
    s
}
