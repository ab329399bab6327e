//! sixgate's AF_XDP data plane: `sixgate run` with `[daemon] dataplane = "xdp"`
//! (docs/xdp.md).
//!
//! [`Gateway::start`] sets up, in order, undoing everything on failure: the
//! runtime's [`Plan`] (default pool4, user, workers, keys); signal
//! handlers; the XDP program ([`program`]), loaded once per interface with the
//! destinations to translate (the prefixes the TUN data plane would route into
//! its device: pool6, EAM, pool4, the CLAT's); per worker a UMEM and two AF_XDP
//! sockets on its queue, one per interface ([`xsk`]), entered into the
//! program's socket map; the program attached (native, or generic); the
//! privilege drop; then one pinned worker thread per queue, the runtime's
//! worker loop over the sockets ([`worker`]), each following the control
//! plane's [`Live`] handle ([`plane::XdpPlane`] edits the program's tries on a
//! runtime change).
//! Workers translate in place and transmit on the other interface's socket,
//! addressing frames from the kernel's route and neighbour tables
//! ([`nexthop`], [`netlink`]); what cannot go out directly goes through the
//! kernel ([`kernel_path`]). A packet that another worker owns ([`owner`]:
//! stateful NAT64's subscriber or port group) is handed to it through a
//! user-space ring ([`handoff`]). [`Gateway::stop`] detaches the programs first (the
//! kernel then handles every packet again), then stops the workers.
//!
//! The counters, the signal handling, [`sixgate_dataplane::Stop`] and [`Report`] are the
//! runtime's ([`sixgate_dataplane`]), so that `sixgate run` stops and reports
//! every data plane alike.

use std::sync::Arc;

use sixgate_config::{Loaded, ZeroCopy};
use sixgate_core::{Scratch, Translator};
use sixgate_dataplane::signals::Signals;
use sixgate_dataplane::{Crew, IoCounters, Live, Plan, Report, SetupError, destinations};
use tracing::{info, warn};

pub mod handoff;
pub mod kernel_path;
pub mod netlink;
pub mod nexthop;
pub mod owner;
pub mod plane;
pub mod program;
mod worker;
pub mod xsk;

use program::{Destinations, Program};

/// Memory for all the handoff rings together (n × (n − 1) rings): 2048 slots
/// each with up to four workers at MTU 1500, 256 (the floor) from ten up.
const HANDOFF_BYTES: usize = 64 << 20;

/// Slots per handoff ring for `n` workers and slots of `slot_bytes`: a power
/// of two from 256 (four batches) to 2048.
fn handoff_slots(n: usize, slot_bytes: usize) -> u32 {
    let rings = (n * n.saturating_sub(1)).max(1);
    let fit = HANDOFF_BYTES / rings / slot_bytes.max(1);
    let fit = fit.clamp(256, 2048) as u32;
    // Round down to a power of two.
    1 << (31 - fit.leading_zeros())
}

/// The running XDP gateway.
pub struct Gateway {
    interfaces: [String; 2],
    programs: Vec<Program>,
    crew: Crew,
    /// The control plane's handle, once the workers are built.
    live: Option<Arc<Live>>,
}

fn ifindex(name: &str, key: &str) -> Result<u32, String> {
    let c = std::ffi::CString::new(name).map_err(|_| format!("[xdp] {key}: bad name"))?;
    // SAFETY: a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(format!(
            "[xdp] {key} = {name:?}: no such interface in this network namespace"
        ));
    }
    Ok(i)
}

/// Receive queues of an interface (`/sys/class/net/NAME/queues/rx-*`).
fn rx_queues(name: &str) -> usize {
    std::fs::read_dir(format!("/sys/class/net/{name}/queues"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count()
        })
        .unwrap_or(1)
        .max(1)
}

impl Gateway {
    /// Set up and start.
    pub fn start(loaded: &Loaded) -> Result<Gateway, SetupError> {
        Self::setup(loaded).map_err(SetupError::from)
    }

    fn setup(loaded: &Loaded) -> Result<Gateway, String> {
        let x = &loaded.xdp;
        // The default pool4's ports 61001-65535 only: the program passes the
        // rest to the host.
        let mut plan = Plan::new(loaded)?;
        let if6 = ifindex(&x.ipv6_interface, "ipv6_interface")?;
        let if4 = ifindex(&x.ipv4_interface, "ipv4_interface")?;
        let n = plan.workers;
        let queues = rx_queues(&x.ipv6_interface).min(rx_queues(&x.ipv4_interface));
        if n > queues {
            warn!(
                "{n} workers asked for, but the interfaces have {queues} receive queue(s) \
                 (veth: `ip link add ... numrxqueues N numtxqueues N`); running {queues}"
            );
            plan.workers = queues;
        }
        let n = plan.workers;
        if n < queues {
            warn!(
                "the interfaces have {queues} receive queues but only {n} worker(s): packets \
                 arriving on queues {n} and up go to the kernel untranslated; set [daemon] \
                 workers = {queues}, or `ethtool -L IFACE rx {n} tx {n}`"
            );
        }

        // Signals first, so that a SIGTERM during set-up still ends in a clean stop.
        let signals = Signals::install()?;
        let mut gw = Gateway {
            interfaces: [x.ipv6_interface.clone(), x.ipv4_interface.clone()],
            programs: Vec::new(),
            crew: Crew::new(signals, n)?,
            live: None,
        };
        match gw.build(loaded, &mut plan, [if6, if4]) {
            Ok(()) => Ok(gw),
            Err(e) => {
                let _ = gw.stop();
                Err(e)
            }
        }
    }

    fn build(
        &mut self,
        loaded: &Loaded,
        plan: &mut Plan,
        ifindexes: [u32; 2],
    ) -> Result<(), String> {
        let x = &loaded.xdp;
        let n = plan.workers;
        let routes = destinations::wanted_for(loaded);
        let mut dst = Destinations::from_prefixes(routes.iter().map(|r| r.prefix.as_str()))?;
        for name in &self.interfaces {
            let (v4, v6) = program::local_addresses(name)?;
            dst.local_v4.extend(v4);
            dst.local_v6.extend(v6);
        }
        dst.pool4_default = plan.default_pool4;
        for name in &self.interfaces {
            self.programs.push(Program::load(name, &dst)?);
        }
        let link_mtu = plane::link_mtus(&self.interfaces, &mut plan.config)?;
        let cfg = Arc::new(plan.config.clone());
        let macs = [
            nexthop::mac_of(&self.interfaces[0])
                .map_err(|e| format!("{}: cannot read its MAC address: {e}", self.interfaces[0]))?,
            nexthop::mac_of(&self.interfaces[1])
                .map_err(|e| format!("{}: cannot read its MAC address: {e}", self.interfaces[1]))?,
        ];
        // The control plane: runtime changes edit the programs' tries (not
        // those of a CLAT or a MAP-T CE, whose destinations are their own).
        let tries = self
            .programs
            .iter_mut()
            .filter_map(Program::take_tries)
            .collect();
        let follow = loaded.clat.is_none() && cfg.mapt.as_ref().is_none_or(|m| m.ce().is_none());
        let (live, followers) = Live::new(
            cfg.clone(),
            self.crew.stats().to_vec(),
            Box::new(plane::XdpPlane::new(
                tries,
                &dst,
                follow,
                self.interfaces.clone(),
            )),
            plan.default_pool4,
        )
        .map_err(|e| format!("cannot create the control channels: {e}"))?;
        self.live = Some(live);
        let mut followers = followers.into_iter();
        let ring = (x.frames / 2).max(64);
        let owner = owner::Owner::for_config(&cfg, n as u16);
        let mut handoffs = Self::handoff_rings(&owner, n, link_mtu as usize)?;
        let mut workers = Vec::with_capacity(n);
        let mut mode = None;
        for i in 0..n {
            let umem = xsk::Umem::new(x.frames)
                .map_err(|e| format!("worker {i}: cannot map {} UMEM frames: {e}", x.frames))?;
            let bind = |ifindex| xsk::Bind {
                ifindex,
                queue: i as u32,
                ring_size: ring,
                try_zero_copy: x.zero_copy != ZeroCopy::Off,
                require_zero_copy: x.zero_copy == ZeroCopy::Require,
            };
            let x6 = xsk::Xsk::open(&umem, &bind(ifindexes[0]), None)
                .map_err(|e| format!("{}: {e}", self.interfaces[0]))?;
            let x4 = xsk::Xsk::open(&umem, &bind(ifindexes[1]), Some(&x6)).map_err(|e| {
                format!(
                    "{}: {e} (sharing worker {i}'s UMEM with {}; needs Linux 5.10+)",
                    self.interfaces[1], self.interfaces[0]
                )
            })?;
            mode = Some(x6.mode);
            self.programs[0].set_socket(i as u32, x6.fd())?;
            self.programs[1].set_socket(i as u32, x4.fd())?;
            let hops = nexthop::NextHops::new([
                nexthop::Iface {
                    ifindex: ifindexes[0],
                    mac: macs[0],
                },
                nexthop::Iface {
                    ifindex: ifindexes[1],
                    mac: macs[1],
                },
            ])
            .map_err(|e| format!("cannot open a netlink socket: {e}"))?;
            let kernel = kernel_path::KernelPath::open()
                .map_err(|e| format!("cannot open raw sockets: {e}"))?;
            let mut free = Vec::with_capacity(x.frames as usize);
            free.extend(
                (0..u64::from(x.frames))
                    .rev()
                    .map(|f| f * u64::from(xsk::FRAME_SIZE)),
            );
            let mut io = worker::XdpIo {
                index: i,
                sockets: worker::Sockets {
                    umem,
                    xsks: [x6, x4],
                    free,
                    filled: [0, 0],
                    fill_target: x.frames / 4,
                    hops,
                    kernel,
                    counters: IoCounters::default(),
                },
                translator: Translator::for_worker(cfg.clone(), i as u16, n as u16),
                scratch: Scratch::new(),
                handoff: handoffs.next(),
            };
            // Fill rings first: the program redirects from the moment it is
            // attached, and a socket with nothing to receive into drops.
            io.sockets.housekeeping()?;
            let follower = followers.next().ok_or("a follower per worker")?;
            workers.push(self.crew.worker(i, plan.cpu(i), io, follower, plan)?);
        }
        for p in &mut self.programs {
            p.attach(x.attach_mode)?;
        }
        for (name, p) in self.interfaces.iter().zip(&self.programs) {
            info!(
                interface = %name,
                mode = p.attached.map_or("?", |a| a.as_str()),
                "XDP program {} attached", program::PROGRAM
            );
        }
        info!(
            sockets = n * 2,
            frames = x.frames,
            "AF_XDP sockets bound ({}), one UMEM per worker shared by its two sockets",
            match mode {
                Some(xsk::Mode::ZeroCopy) => "zero-copy",
                _ => "copy mode",
            }
        );
        plan.drop_privileges()?;
        for w in workers {
            let i = w.index;
            self.crew
                .spawn(format!("sixgate-x{i}"), w)
                .map_err(|e| format!("cannot start worker {i}: {e}"))?;
        }
        plan.log_started(n);
        Ok(())
    }

    /// Each worker's ends of the handoff rings, one ring per (from, to) pair
    /// ([`handoff`]); empty when `owner` keeps packets where received.
    fn handoff_rings(
        owner: &owner::Owner,
        n: usize,
        link_mtu: usize,
    ) -> Result<impl Iterator<Item = worker::Handoff>, String> {
        let mut ends = Vec::new();
        if owner.hands_off() {
            // A slot takes the longest packet a link delivers (the copy lands
            // in a frame behind the same headroom as a received one).
            let max_len =
                link_mtu.clamp(1280, (xsk::FRAME_SIZE as usize) - worker::COPY_OFFSET - 14);
            for _ in 0..n {
                ends.push(worker::Handoff {
                    owner: owner.clone(),
                    to: (0..n).map(|_| None).collect(),
                    from: Vec::with_capacity(n - 1),
                    doorbell: Arc::new(
                        handoff::Doorbell::new()
                            .map_err(|e| format!("cannot create an eventfd: {e}"))?,
                    ),
                });
            }
            let slots = handoff_slots(n, max_len);
            for from in 0..n {
                for to in (0..n).filter(|&t| t != from) {
                    let (p, c) = handoff::Ring::new(slots, max_len, ends[to].doorbell.clone());
                    ends[from].to[to] = Some(p);
                    ends[to].from.push(c);
                }
            }
            info!(
                workers = n,
                slots,
                slot_bytes = max_len,
                "{n} workers: packets reach the worker owning their state (NAT64 flows, MAP-T \
                 BR fragments) through user-space handoff rings"
            );
        }
        Ok(ends.into_iter())
    }

    /// The two interfaces, IPv6 side first.
    pub fn interfaces(&self) -> &[String; 2] {
        &self.interfaces
    }

    /// The control plane's handle: configuration changes, table listings,
    /// counters ([`sixgate_dataplane::live`]).
    pub fn live(&self) -> Option<Arc<Live>> {
        self.live.clone()
    }

    /// The workers: their counters ([`Crew::stats_handle`]), and
    /// [`Crew::wait`] for SIGINT/SIGTERM or a worker failure.
    pub fn crew(&self) -> &Crew {
        &self.crew
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.crew.stats().len()
    }

    /// Detach the programs (the kernel handles all traffic again), stop the
    /// workers, close the sockets.
    pub fn stop(mut self) -> Report {
        let mut errors = Vec::new();
        for (name, p) in self.interfaces.iter().zip(&mut self.programs) {
            if p.attached.is_some() {
                match p.detach() {
                    Ok(()) => info!(interface = %name, "XDP program detached"),
                    Err(e) => errors.push(e),
                }
            }
        }
        self.crew.join(&mut errors);
        self.crew.report(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_rings_shrink_with_the_square_of_the_workers() {
        assert_eq!(handoff_slots(2, 1536), 2048);
        assert_eq!(handoff_slots(4, 1536), 2048);
        assert_eq!(handoff_slots(8, 1536), 512);
        assert_eq!(handoff_slots(16, 1536), 256);
        assert_eq!(handoff_slots(64, 9000), 256);
    }
}
