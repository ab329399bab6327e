//! Load the TC or the XDP program (one translation, bpf/siit.h, behind
//! either hook), fill its maps, attach it to interfaces and read its
//! counters. Both objects declare the same maps, so everything but the load
//! and the attach is the same for either.

use aya::maps::{Array, ArrayOfMaps, MapData, PerCpuArray, PerCpuValues};
use aya::programs::links::{FdLink, PinnedLink};
use aya::programs::tc::{self, SchedClassifierLink, SchedClassifierLinkId, TcAttachType};
use aya::programs::xdp::{XdpLink, XdpLinkId};
use aya::programs::{
    ProgramError, SchedClassifier, TestRun, TestRunOptions, TestRunResult, Xdp, XdpMode,
};
use aya::util::KernelVersion;
use aya::{Ebpf, EbpfLoader};
use sixgate_core::Config;
use sixgate_core::ipv4_id::{Ipv4IdGenerator, SLOTS};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use crate::BpfConfig;
use crate::handover::{self, HandedOver};
use crate::nat64_maps::{self, Nat64Maps, SessionCounters};
use crate::route_watch::RouteWatch;
use crate::xlat::{self, Trie};

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/siit_tc.o"));
static OBJECT_XDP: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/siit_xdp.o"));
const PROGRAM: &str = "sixgate_fastpath";
const PROGRAM_XDP: &str = "sixgate_fastpath_xdp";

/// Where the program runs (docs/fastpath.md, "XDP").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// TC ingress (tcx, or under clsact): every driver, GSO super-packets
    /// whole, `bpf_redirect_neigh` for unresolved next hops.
    Tc,
    /// XDP in the driver (native mode only), before any skb: the
    /// small-packet rate of NICs with native XDP; multi-buffer frames.
    Xdp,
}

impl Hook {
    /// How the logs name it.
    pub fn name(self) -> &'static str {
        match self {
            Hook::Tc => "TC",
            Hook::Xdp => "XDP",
        }
    }

    fn object(self) -> &'static [u8] {
        match self {
            Hook::Tc => OBJECT,
            Hook::Xdp => OBJECT_XDP,
        }
    }

    fn program(self) -> &'static str {
        match self {
            Hook::Tc => PROGRAM,
            Hook::Xdp => PROGRAM_XDP,
        }
    }
}

/// One attachment, to undo at detach.
enum Link {
    Tc(SchedClassifierLinkId),
    Xdp(XdpLinkId),
}
const PERMISSION_HINT: &str = " (loading eBPF needs CAP_BPF and CAP_NET_ADMIN, or root)";

/// `struct ids` of bpf/siit.h: one CPU's IPv4 Identification counters.
#[repr(C)]
#[derive(Clone, Copy)]
struct Ids([u16; SLOTS]);
// SAFETY: an array of integers, no padding.
unsafe impl aya::Pod for Ids {}

/// `struct fwd_config` of bpf/forward.h.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FwdConfig {
    redirect_only: u32,
    _pad: u32,
    /// CLOCK_MONOTONIC ns after which a handed-over program translates
    /// nothing; 0: no end.
    until_ns: u64,
}
// SAFETY: integers, repr(C), padding spelt out.
unsafe impl aya::Pod for FwdConfig {}

/// The program's per-verdict counters, summed over CPUs.
/// `received == translated_6to4 + translated_4to6 + passed + aborted`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every packet the program saw.
    pub received: u64,
    /// Translated IPv6 → IPv4 on the fast path.
    pub translated_6to4: u64,
    /// Translated IPv4 → IPv6 on the fast path.
    pub translated_4to6: u64,
    /// Passed up unchanged: the slow path's (or not for sixgate at all).
    pub passed: u64,
    /// Dropped half-translated after a helper failed (never expected).
    pub aborted: u64,
    /// NAT64: sessions the workers installed in the program's maps.
    pub sessions_installed: u64,
    /// NAT64: sessions removed again (deleted by the core, or no longer
    /// ESTABLISHED).
    pub sessions_removed: u64,
    /// NAT64: sessions the core refreshed because the program saw them.
    pub sessions_refreshed: u64,
    /// NAT64: sessions left on the slow path because a map was full.
    pub map_full: u64,
    /// NAT64: other failed map calls (the session stays on the slow path).
    pub map_errors: u64,
    /// Sent out of the egress interface by the program, the next hop's MAC
    /// address from the kernel's neighbour table. How the translated packets
    /// left (bpf/forward.h): `translated_6to4 + translated_4to6 ==
    /// redirected + redirected_neigh + to_kernel`.
    pub redirected: u64,
    /// Sent out by the program through `bpf_redirect_neigh`: the next hop's
    /// neighbour was unresolved, and the kernel resolves it.
    pub redirected_neigh: u64,
    /// Handed to the kernel's routing (`TC_ACT_OK`): the FIB had no
    /// forwarding answer (a local destination, no route, forwarding off, …).
    pub to_kernel: u64,
    /// The route check ("would the kernel route it into the slow path's
    /// device?") answered from the answer kept for the flow in this routing
    /// generation (bpf/route_cache.h).
    pub route_kept: u64,
    /// The route check asked the kernel's FIB.
    pub route_asked: u64,
}

/// The loaded fast path: one program, attached to any number of interfaces.
pub struct FastPath {
    hook: Hook,
    ebpf: Ebpf,
    links: Vec<(String, Link)>,
    /// Links a stopped run handed over, to take over once the workers hold
    /// the restored sessions ([`FastPath::take_over`]).
    deferred: Vec<(String, FdLink)>,
    /// Interfaces that got a clsact qdisc from us (kernels without tcx).
    clsact_added: Vec<String>,
    /// The `xlat` slot: the configuration trie the program reads.
    xlat: ArrayOfMaps<MapData, Trie>,
    /// An empty trie, installed to pass everything up.
    off: Trie,
    /// The configuration the program runs (or ran last, when `off`).
    current: BpfConfig,
    /// What the workers did to the NAT64 session maps.
    sessions: Arc<SessionCounters>,
    /// The route check's per-flow answers (bpf/route_cache.h), kept valid
    /// by this thread; `Err`: not kept, every packet asks the FIB.
    routes: Result<RouteWatch, String>,
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(e) = src {
        s.push_str(": ");
        s.push_str(&e.to_string());
        src = e.source();
    }
    s
}

impl FastPath {
    /// Load the program for `cfg`: its configuration map, and the per-CPU
    /// Identification counters seeded as the core seeds a worker's. An error
    /// says why (an unsupported configuration, no clang at build time, no
    /// permission, a kernel that refuses it); the caller runs without it.
    /// `slow_ifindex`: the slow path's device (the TUN device), 0 for none
    /// (tests: every candidate is translated).
    pub fn load(cfg: &Config, slow_ifindex: u32) -> Result<FastPath, String> {
        Self::load_on(Hook::Tc, cfg, slow_ifindex)
    }

    /// [`FastPath::load`] for `hook`.
    pub fn load_on(hook: Hook, cfg: &Config, slow_ifindex: u32) -> Result<FastPath, String> {
        // NAT64's preallocated session maps, sized for the sessions (one
        // entry elsewhere: SIIT never reads them).
        let sessions = cfg
            .nat64
            .as_ref()
            .map_or(1, |n| n.max_sessions.clamp(1, nat64_maps::MAX_SESSIONS));
        Self::load_sized_on(hook, cfg, slow_ifindex, sessions)
    }

    /// [`FastPath::load`] with NAT64 session maps of `sessions` entries each.
    pub fn load_sized(cfg: &Config, slow_ifindex: u32, sessions: u32) -> Result<FastPath, String> {
        Self::load_sized_on(Hook::Tc, cfg, slow_ifindex, sessions)
    }

    /// [`FastPath::load_sized`] for `hook`.
    pub fn load_sized_on(
        hook: Hook,
        cfg: &Config,
        slow_ifindex: u32,
        sessions: u32,
    ) -> Result<FastPath, String> {
        let mut bpf_cfg = BpfConfig::from_config(cfg).map_err(str::to_owned)?;
        bpf_cfg.slow_ifindex = slow_ifindex;
        let name = hook.name();
        if hook.object().is_empty() {
            return Err(format!(
                "the {name} fast path was not built (clang was missing when sixgate was \
                 compiled; scripts/setup.sh installs it)"
            ));
        }
        let mut ebpf = EbpfLoader::new()
            .map_max_entries("nat64_6to4", sessions)
            .map_max_entries("nat64_4to6", sessions)
            .load(hook.object())
            .map_err(|e| {
                format!(
                    "cannot load the {name} fast path: {}{PERMISSION_HINT}",
                    chain(&e)
                )
            })?;
        let prog = ebpf
            .program_mut(hook.program())
            .ok_or_else(|| format!("the fast path object has no program {}", hook.program()))?;
        let loaded = match hook {
            Hook::Tc => <&mut SchedClassifier>::try_from(prog)
                .map_err(|e| format!("fast path program: {e}"))?
                .load(),
            Hook::Xdp => <&mut Xdp>::try_from(prog)
                .map_err(|e| format!("fast path program: {e}"))?
                .load(),
        };
        loaded.map_err(|e| {
            format!(
                "the kernel refused the {name} fast path: {}{PERMISSION_HINT}",
                chain(&e)
            )
        })?;
        let xlat = ebpf
            .take_map("xlat")
            .ok_or("the fast path object has no map xlat")?;
        let xlat = ArrayOfMaps::try_from(xlat).map_err(|e| format!("xlat map: {e}"))?;
        let routes = if slow_ifindex == 0 {
            Err("no route check".to_owned())
        } else {
            ebpf.take_map("route_gen")
                .ok_or_else(|| "the fast path object has no map route_gen".to_owned())
                .and_then(|m| Array::try_from(m).map_err(|e| format!("route_gen map: {e}")))
                .and_then(RouteWatch::start)
        };
        let mut fp = FastPath {
            hook,
            ebpf,
            links: Vec::new(),
            deferred: Vec::new(),
            clsact_added: Vec::new(),
            xlat,
            off: xlat::build(cfg, None)?,
            current: bpf_cfg,
            sessions: Arc::default(),
            routes,
        };
        // NAT64 seeds with the program's own key (BpfConfig::from_config).
        fp.seed_ids(bpf_cfg.ipv4_id_key)?;
        fp.install(&xlat::build(cfg, Some(&bpf_cfg))?)?;
        Ok(fp)
    }

    /// Follow a configuration change (a reload, `sixgate eam add|remove`):
    /// build the new configuration trie whole, then swap it in with one map
    /// update, so that every packet runs wholly under the old configuration
    /// or wholly under `cfg` and none is passed up for the change. A
    /// configuration it cannot serve, or a trie it cannot build, leaves it
    /// passing everything up (`Err` says why).
    pub fn reconfigure(&mut self, cfg: &Config) -> Result<(), String> {
        match self.prepare(cfg) {
            Ok(next) => self.commit(next),
            Err(Unprepared::Unservable(why) | Unprepared::NoMap(why)) => self.off_because(why),
        }
    }

    /// The first half of [`FastPath::reconfigure`], which changes nothing:
    /// the new trie, or why there is none. [`Unprepared::NoMap`] (the kernel
    /// would not create the map, e.g. without `CAP_BPF`) is for the caller
    /// to refuse the change on: the program keeps the old configuration.
    pub fn prepare(&self, cfg: &Config) -> Result<Prepared, Unprepared> {
        let mut next =
            BpfConfig::from_config(cfg).map_err(|e| Unprepared::Unservable(e.to_owned()))?;
        next.slow_ifindex = self.current.slow_ifindex;
        let trie = xlat::build(cfg, Some(&next)).map_err(|e| {
            if e.starts_with(xlat::CANNOT_CREATE) {
                Unprepared::NoMap(e)
            } else {
                Unprepared::Unservable(e)
            }
        })?;
        Ok(Prepared { next, trie })
    }

    /// The second half: swap `p` in.
    pub fn commit(&mut self, p: Prepared) -> Result<(), String> {
        // The daemon keeps its key across changes (Live); a new key reseeds
        // the counters just before the swap, which moves only where the next
        // IDs start.
        if p.next.ipv4_id_key != self.current.ipv4_id_key {
            self.seed_ids(p.next.ipv4_id_key)?;
        }
        self.install(&p.trie)?;
        self.current = p.next;
        Ok(())
    }

    /// A configuration it cannot serve: pass everything up (the old
    /// configuration must not translate under the new one), and say why.
    pub fn off_because(&mut self, why: String) -> Result<(), String> {
        Err(match self.pass_all_up() {
            Ok(()) => why,
            Err(e) => format!("{why}; and {e}"),
        })
    }

    /// Install the empty trie: the program passes everything up.
    fn pass_all_up(&mut self) -> Result<(), String> {
        self.xlat
            .set(0, &self.off, 0)
            .map_err(|e| format!("xlat map: {e}"))
    }

    /// The one update that swaps configurations: the kernel keeps the old
    /// trie alive (RCU) for the packets still reading it, and frees it once
    /// the outer map and our handle are gone.
    fn install(&mut self, trie: &Trie) -> Result<(), String> {
        self.xlat
            .set(0, trie, 0)
            .map_err(|e| format!("xlat map: {e}"))
    }

    /// `true`: translate only the packets the program forwards itself
    /// (bpf/forward.h, `fwd_config`), and pass up untranslated those the
    /// kernel's FIB has no forwarding answer for (a local destination, no
    /// route). For interfaces with strict reverse-path filtering, which
    /// would drop such a packet translated 6→4 (its source is routed into
    /// the TUN device). Off after [`FastPath::load`]. Set once at start: it
    /// follows a fact of the host (the sysctl), not the configuration, so
    /// it sits outside the swapped configuration trie and a reload keeps it.
    pub fn set_redirect_only(&mut self, on: bool) -> Result<(), String> {
        self.change_fwd_config(|c| c.redirect_only = u32::from(on))
    }

    fn change_fwd_config(&mut self, f: impl FnOnce(&mut FwdConfig)) -> Result<(), String> {
        let mut a: Array<_, FwdConfig> =
            Array::try_from(self.ebpf.map_mut("fwd_config").ok_or("no map fwd_config")?)
                .map_err(|e| format!("fwd_config map: {e}"))?;
        let mut c = a.get(&0, 0).map_err(|e| format!("fwd_config map: {e}"))?;
        f(&mut c);
        a.set(0, c, 0).map_err(|e| format!("fwd_config map: {e}"))
    }

    /// Every CPU's Identification counters back to the core's start values
    /// for `key` (RFC 6864; `Ipv4IdGenerator::start_values`).
    fn seed_ids(&mut self, key: u64) -> Result<(), String> {
        let cpus = aya::util::nr_cpus().map_err(|(what, e)| format!("{what}: {e}"))?;
        let start = Ids(Ipv4IdGenerator::start_values(key));
        let mut m: PerCpuArray<_, Ids> =
            PerCpuArray::try_from(self.ebpf.map_mut("ids").ok_or("no map ids")?)
                .map_err(|e| format!("ids map: {e}"))?;
        let v = PerCpuValues::try_from(vec![start; cpus]).map_err(|e| format!("ids map: {e}"))?;
        m.set(0, v, 0).map_err(|e| format!("ids map: {e}"))
    }

    /// Why the route check asks the FIB for every packet rather than keep
    /// its answers per flow (bpf/route_cache.h), if it does.
    pub fn route_cache_off(&self) -> Option<&str> {
        self.routes.as_ref().err().map(String::as_str)
    }

    /// The hook it was loaded for.
    pub fn hook(&self) -> Hook {
        self.hook
    }

    /// Attach to `interface`'s ingress. TC: tcx on kernels that have it
    /// (6.6+), else a clsact qdisc's filter (the qdisc added if missing).
    /// XDP: in native (driver) mode only; a driver without it is an error
    /// (generic XDP would cost more than TC and lose GSO).
    pub fn attach(&mut self, interface: &str) -> Result<(), String> {
        let name = self.hook.name();
        // The program reads an Ethernet header first (ARPHRD_ETHER, veth
        // included); an L3 device (tun, WireGuard) would be misread.
        let kind = link_type(interface)
            .map_err(|e| format!("cannot attach the {name} fast path to {interface}: {e}"))?;
        if kind != libc::ARPHRD_ETHER {
            return Err(format!(
                "cannot attach the {name} fast path to {interface}: not an Ethernet interface \
                 (link type {kind}); expected the IPv6-side and IPv4-side Ethernet interfaces"
            ));
        }
        if self.hook == Hook::Xdp {
            let id = self
                .xdp_mut()
                .attach(interface, XdpMode::Driver)
                .map_err(|e| {
                    format!(
                        "cannot attach the XDP fast path to {interface} in native (driver) \
                         mode: {}",
                        chain(&e)
                    )
                })?;
            self.links.push((interface.to_owned(), Link::Xdp(id)));
            return Ok(());
        }
        // Without tcx (Linux < 6.6) aya attaches through netlink, under a
        // clsact qdisc: add one if missing, and remove it again at detach.
        let tcx = KernelVersion::current().is_ok_and(|v| v >= KernelVersion::new(6, 6, 0));
        if !tcx && tc::qdisc_add_clsact(interface).is_ok() {
            self.clsact_added.push(interface.to_owned());
        }
        let id = self
            .program_mut()
            .attach(interface, TcAttachType::Ingress)
            .map_err(|e| {
                format!(
                    "cannot attach the TC fast path to {interface}: {}",
                    chain(&e)
                )
            })?;
        self.links.push((interface.to_owned(), Link::Tc(id)));
        Ok(())
    }

    /// [`FastPath::attach`], unless a stopped run handed over a link of this
    /// hook on `interface` (`handed`): then its program goes on there until
    /// [`FastPath::take_over`].
    pub fn attach_or_defer(
        &mut self,
        interface: &str,
        handed: &mut HandedOver,
    ) -> Result<(), String> {
        match handed.take(self.hook, interface) {
            Some(link) => {
                self.deferred.push((interface.to_owned(), link));
                Ok(())
            }
            None => self.attach(interface),
        }
    }

    /// Put this program in the links a stopped run handed over
    /// ([`FastPath::attach_or_defer`]), each in one `BPF_LINK_UPDATE`: a
    /// packet meets the old program or this one, never neither; call it once
    /// the workers hold the restored sessions in this program's maps. A link
    /// that cannot be updated (gone meanwhile) is replaced by an ordinary
    /// attach. Returns each interface, with why when it was attached anew;
    /// `Err` if such an attach failed.
    pub fn take_over(&mut self) -> Result<Vec<(String, Option<String>)>, String> {
        let mut taken = Vec::new();
        for (iface, fd) in std::mem::take(&mut self.deferred) {
            let updated = match self.hook {
                Hook::Tc => SchedClassifierLink::try_from(fd)
                    .map_err(|e| e.to_string())
                    .and_then(|l| {
                        self.program_mut()
                            .attach_to_link(l)
                            .map(Link::Tc)
                            .map_err(|e| chain(&e))
                    }),
                Hook::Xdp => XdpLink::try_from(fd)
                    .map_err(|e| e.to_string())
                    .and_then(|l| {
                        self.xdp_mut()
                            .attach_to_link(l)
                            .map(Link::Xdp)
                            .map_err(|e| chain(&e))
                    }),
            };
            // Failing the update, the link is dropped: the old program
            // leaves, and ours is attached anew.
            match updated {
                Ok(link) => {
                    self.links.push((iface.clone(), link));
                    taken.push((iface, None));
                }
                Err(why) => {
                    self.attach(&iface)?;
                    taken.push((iface, Some(why)));
                }
            }
        }
        Ok(taken)
    }

    /// At a stop (`[daemon] fastpath_handover`): leave the program attached
    /// for the next start, its links pinned in `dir` and its translation
    /// ending `for_ns` from now unless that start takes it over first. All
    /// or nothing: a link that cannot be pinned (a `clsact` filter, Linux <
    /// 6.6) undoes the others, and `Err` says why. Returns the interfaces.
    pub fn hand_over(&mut self, dir: &std::path::Path, for_ns: u64) -> Result<Vec<String>, String> {
        let until = crate::route_watch::monotonic_ns().saturating_add(for_ns);
        self.change_fwd_config(|c| c.until_ns = until)?;
        let mut pinned: Vec<(String, PinnedLink)> = Vec::new();
        let mut failed = None;
        for (iface, link) in std::mem::take(&mut self.links) {
            let path = dir.join(handover::pin_name(self.hook, &iface));
            let _ = std::fs::remove_file(&path);
            let fd: Result<FdLink, String> = match link {
                Link::Tc(id) => self
                    .program_mut()
                    .take_link(id)
                    .map_err(|e| chain(&e))
                    .and_then(|l| {
                        FdLink::try_from(l).map_err(|_| {
                            "attached through a clsact qdisc (Linux < 6.6 has no tcx):                              such a filter cannot be pinned"
                                .to_owned()
                        })
                    }),
                Link::Xdp(id) => self
                    .xdp_mut()
                    .take_link(id)
                    .map_err(|e| chain(&e))
                    .and_then(|l| {
                        FdLink::try_from(l)
                            .map_err(|_| "attached through netlink: cannot be pinned".to_owned())
                    }),
            };
            match fd.and_then(|l| l.pin(&path).map_err(|e| format!("{}: {e}", path.display()))) {
                Ok(p) => pinned.push((iface, p)),
                Err(why) => {
                    failed = Some(format!("{iface}: {why}"));
                    break;
                }
            }
        }
        if let Some(why) = failed {
            for (_, p) in pinned {
                let _ = p.unpin();
            }
            let _ = self.change_fwd_config(|c| c.until_ns = 0);
            return Err(why);
        }
        // Dropping the handles closes our descriptors; the pins hold the links.
        Ok(pinned.into_iter().map(|(i, _)| i).collect())
    }

    /// Detach from every interface (also done when dropped; links handed over
    /// and not yet taken over are released), and remove the
    /// clsact qdiscs [`FastPath::attach`] added.
    pub fn detach_all(&mut self) {
        // Links handed over and not taken over: the old program leaves too.
        self.deferred.clear();
        for (_, link) in std::mem::take(&mut self.links) {
            let _ = match link {
                Link::Tc(id) => self.program_mut().detach(id),
                Link::Xdp(id) => self.xdp_mut().detach(id),
            };
        }
        for iface in std::mem::take(&mut self.clsact_added) {
            // aya has no qdisc removal; tc(8) does it. Failing that, an
            // empty clsact qdisc is harmless.
            let _ = std::process::Command::new("tc")
                .args(["qdisc", "del", "dev", &iface, "clsact"])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }

    /// The interfaces it is attached to.
    pub fn interfaces(&self) -> impl Iterator<Item = &str> {
        self.links
            .iter()
            .map(|(i, _)| i.as_str())
            .chain(self.deferred.iter().map(|(i, _)| i.as_str()))
    }

    /// The per-verdict counters, summed over CPUs.
    pub fn counters(&self) -> Result<Counters, String> {
        let m: PerCpuArray<_, u64> =
            PerCpuArray::try_from(self.ebpf.map("counters").ok_or("no map counters")?)
                .map_err(|e| format!("counters map: {e}"))?;
        let f: PerCpuArray<_, u64> =
            PerCpuArray::try_from(self.ebpf.map("fwd_counters").ok_or("no map fwd_counters")?)
                .map_err(|e| format!("fwd_counters map: {e}"))?;
        let r: PerCpuArray<_, u64> = PerCpuArray::try_from(
            self.ebpf
                .map("route_counters")
                .ok_or("no map route_counters")?,
        )
        .map_err(|e| format!("route_counters map: {e}"))?;
        let sum = |m: &PerCpuArray<_, u64>, i: u32| -> Result<u64, String> {
            let v = m.get(&i, 0).map_err(|e| format!("counters map: {e}"))?;
            Ok(v.iter().sum())
        };
        Ok(Counters {
            received: sum(&m, 0)?,
            translated_6to4: sum(&m, 1)?,
            translated_4to6: sum(&m, 2)?,
            passed: sum(&m, 3)?,
            aborted: sum(&m, 4)?,
            redirected: sum(&f, 0)?,
            redirected_neigh: sum(&f, 1)?,
            to_kernel: sum(&f, 2)?,
            route_kept: sum(&r, 0)?,
            route_asked: sum(&r, 1)?,
            sessions_installed: self.sessions.installed.load(Relaxed),
            sessions_removed: self.sessions.removed.load(Relaxed),
            sessions_refreshed: self.sessions.refreshed.load(Relaxed),
            map_full: self.sessions.map_full.load(Relaxed),
            map_errors: self.sessions.map_errors.load(Relaxed),
        })
    }

    /// A handle on the NAT64 session maps for one worker (duplicated
    /// descriptors: take them before dropping privileges), or why not.
    pub fn nat64_maps(&self) -> Result<Nat64Maps, String> {
        let get = |name: &str| {
            let m = self.ebpf.map(name).ok_or(format!("no map {name}"))?;
            nat64_maps::dup(m).map_err(|e| format!("{name} map: {e}"))
        };
        Nat64Maps::new(
            get("nat64_6to4")?,
            get("nat64_4to6")?,
            self.sessions.clone(),
        )
    }

    /// One `BPF_PROG_TEST_RUN` of the loaded program, either hook (tests).
    pub fn test_run(&self, opts: TestRunOptions<'_>) -> Result<TestRunResult, ProgramError> {
        match self.hook {
            Hook::Tc => self.program().test_run(opts),
            Hook::Xdp => self.xdp().test_run(opts),
        }
    }

    /// The loaded XDP program (for `BPF_PROG_TEST_RUN` in tests); panics on
    /// the TC hook.
    pub fn xdp(&self) -> &Xdp {
        self.ebpf
            .program(PROGRAM_XDP)
            .and_then(|p| <&Xdp>::try_from(p).ok())
            .expect("loaded in FastPath::load_on(Hook::Xdp, ..)")
    }

    fn xdp_mut(&mut self) -> &mut Xdp {
        self.ebpf
            .program_mut(PROGRAM_XDP)
            .and_then(|p| <&mut Xdp>::try_from(p).ok())
            .expect("loaded in FastPath::load_on(Hook::Xdp, ..)")
    }

    /// The loaded TC program (for `BPF_PROG_TEST_RUN` in tests); panics on
    /// the XDP hook.
    pub fn program(&self) -> &SchedClassifier {
        self.ebpf
            .program(PROGRAM)
            .and_then(|p| <&SchedClassifier>::try_from(p).ok())
            .expect("loaded in FastPath::load")
    }

    fn program_mut(&mut self) -> &mut SchedClassifier {
        self.ebpf
            .program_mut(PROGRAM)
            .and_then(|p| <&mut SchedClassifier>::try_from(p).ok())
            .expect("loaded in FastPath::load")
    }
}

impl Drop for FastPath {
    fn drop(&mut self) {
        self.detach_all();
    }
}

/// The interface's link type (`ARPHRD_*`), from `SIOCGIFHWADDR` in the
/// caller's network namespace.
fn link_type(interface: &str) -> Result<u16, String> {
    let name = interface.as_bytes();
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err("not an interface name".to_owned());
    }
    // SAFETY: plain socket and ioctl calls on a zeroed ifreq whose name is
    // NUL-terminated; the socket is closed before returning.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(name) {
            *d = *s as libc::c_char;
        }
        let r = libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if r < 0 {
            return Err(err.to_string());
        }
        Ok(req.ifr_ifru.ifru_hwaddr.sa_family)
    }
}

/// A new configuration, built and not yet installed ([`FastPath::prepare`]).
pub struct Prepared {
    next: BpfConfig,
    trie: Trie,
}

/// Why [`FastPath::prepare`] has no new configuration.
#[derive(Debug)]
pub enum Unprepared {
    /// The configuration is beyond the fast path (it passes everything up
    /// under it; the TUN device translates).
    Unservable(String),
    /// The kernel would not create the map (a missing capability, memory).
    NoMap(String),
}
