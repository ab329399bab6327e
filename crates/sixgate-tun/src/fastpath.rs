//! The in-kernel fast path in front of the TUN device (`[daemon] fastpath =
//! "tc"`, `"xdp"` or `"auto"`, docs/fastpath.md): a TC ingress program (or
//! the same translation as an XDP program in native mode, falling back to
//! TC where that cannot attach) on the interfaces named for it translates the common packets of stateless SIIT, a
//! CLAT or a MAP-T BR, and those of the NAT64 sessions the workers install in
//! it ([`offloads`]), and forwards them itself by the kernel's FIB (redirect);
//! every other packet goes up unchanged and reaches the device by the routes
//! as before. Started before the privilege drop and stopped before the device
//! goes. A program that cannot be loaded or attached, or a kernel that lacks
//! what it needs (probed first), is a warning (an info line under "auto"):
//! the TUN plane alone still translates everything. With strict reverse-path
//! filtering on an interface the program translates only what it forwards
//! itself (the kernel would drop a translated packet it routes).

use std::sync::Arc;

use sixgate_config::{FastPathMode, Loaded};
use sixgate_core::nat64::{Replica, ReplicaOp};
use sixgate_core::{Config, Translator};
use sixgate_dataplane::offload::SessionOffload;
use sixgate_dataplane::{FastPathCounters, FastPathSessions};
use sixgate_fastpath::choice::{self, Forwarding, Off, Want};
use sixgate_fastpath::handover::HandedOver;
use sixgate_fastpath::probe;
use sixgate_fastpath::{FastPath, Hook, MAX_SESSIONS, Offload};
use tracing::{info, warn};

/// Load and attach, or say why not (`cfg`: the plan's configuration, with
/// the IPv4 Identification key the workers use; `device`: the TUN device,
/// where the kernel routes what the program may translate). `Err`: the fast
/// path asked for does not run, and why (logged here: a warning for "tc"
/// and "xdp", an info line for "auto"; `show stats` repeats it).
/// `handed`: what a stopped run handed over (`[daemon] fastpath_handover`):
/// its program goes on where this one would attach with the same hook, until
/// [`FastPath::take_over`].
pub fn start(
    loaded: &Loaded,
    cfg: &Config,
    device: &str,
    handed: &mut HandedOver,
) -> Result<Option<FastPath>, Off> {
    let want = match loaded.daemon.fastpath {
        FastPathMode::Off => return Ok(None),
        FastPathMode::Tc => Want::Tc,
        FastPathMode::Xdp => Want::Xdp,
        FastPathMode::Auto => Want::Auto,
    };
    let started = attach(want, loaded, cfg, device, handed);
    match &started {
        Err(off) if off.is_warning() => warn!("{off}"),
        Err(off) => info!("{off}"),
        Ok(fp) => info!(
            "fast path: {} {} ({} translated and forwarded in the kernel; the rest \
             goes up to the TUN device)",
            match fp.hook() {
                Hook::Tc => "TC program attached to the ingress of",
                Hook::Xdp => "XDP program (native mode) attached to",
            },
            fp.interfaces().collect::<Vec<_>>().join(", "),
            match cfg.nat64 {
                Some(_) => {
                    "the workers' established NAT64 TCP, UDP and ICMP Echo sessions"
                }
                None => "stateless TCP, UDP and ICMP Echo",
            }
        ),
    }
    if let Ok(fp) = &started
        && let Some(why) = fp.route_cache_off()
    {
        warn!("fast path: the route check asks the FIB for every packet: {why}");
    }
    started.map(Some)
}

/// The decision (scope, interfaces, the kernel probe, how to forward), then
/// the load and the attach; the first refusal is the answer. Under "xdp",
/// what stops the XDP program (the kernel probe, the load, a driver without
/// native XDP) is a warning, and the TC program is tried instead: the scope
/// and the interfaces are the same for both, so they are not.
fn attach(
    want: Want,
    loaded: &Loaded,
    cfg: &Config,
    device: &str,
    handed: &mut HandedOver,
) -> Result<FastPath, Off> {
    let named = &loaded.daemon.fastpath_interfaces;
    let found;
    let interfaces = if named.is_empty() && want == Want::Auto {
        found = ethernet_interfaces_up(device);
        &found
    } else {
        named
    };
    let strict = interfaces.iter().find_map(|i| strict_rp_filter(i));
    let ifindex =
        ifindex(device).ok_or_else(|| want.off(format!("no interface index for {device}")))?;
    if want == Want::Xdp {
        // Scope and interfaces first: refused there, TC would be too.
        let forwarding = choice::choose(want, interfaces, cfg, strict.clone(), || Ok(()))?;
        let xdp = probe::kernel_xdp()
            .map_err(|u| want.off(u.for_hook("XDP")))
            .and_then(|()| {
                load_and_attach(
                    Hook::Xdp,
                    want,
                    &forwarding,
                    interfaces,
                    cfg,
                    ifindex,
                    handed,
                )
            });
        match xdp {
            Ok(fp) => return Ok(fp),
            Err(off) => warn!("fastpath = \"xdp\": {}; the TC program instead", off.why),
        }
    }
    let forwarding = choice::choose(want, interfaces, cfg, strict, probe::kernel)?;
    load_and_attach(
        Hook::Tc,
        want,
        &forwarding,
        interfaces,
        cfg,
        ifindex,
        handed,
    )
}

/// Load the `hook`'s program (the probe passed; a kernel that still refuses
/// it says why), set how it forwards, and attach it to every interface (all
/// or none).
fn load_and_attach(
    hook: Hook,
    want: Want,
    forwarding: &Forwarding,
    interfaces: &[String],
    cfg: &Config,
    ifindex: u32,
    handed: &mut HandedOver,
) -> Result<FastPath, Off> {
    let mut fp = FastPath::load_on(hook, cfg, ifindex).map_err(|why| want.off(why))?;
    if let Forwarding::RedirectOnly(why) = forwarding {
        fp.set_redirect_only(true)
            .map_err(|e| want.off(format!("{why}, and {e}")))?;
        info!(
            "fast path: {why}: it translates only the packets it forwards itself; the rest \
             goes up untranslated to the TUN device"
        );
    }
    for iface in interfaces {
        if let Err(why) = fp.attach_or_defer(iface, handed) {
            fp.detach_all();
            return Err(want.off(why));
        }
    }
    Ok(fp)
}

/// Detach, say what it carried, and return its final counters (read after
/// the detach: nothing changes them any more).
pub fn stop(fp: &mut Option<FastPath>) -> Option<FastPathCounters> {
    let mut f = fp.take()?;
    f.detach_all();
    let c = counters(&f)?;
    info!("{}", c.summary());
    info!("{}", c.forwarding_summary());
    Some(c)
}

/// The program's counters, as the data plane reports them.
pub fn counters(fp: &FastPath) -> Option<FastPathCounters> {
    let c = fp.counters().ok()?;
    Some(FastPathCounters {
        received: c.received,
        translated_6to4: c.translated_6to4,
        translated_4to6: c.translated_4to6,
        passed: c.passed,
        aborted: c.aborted,
        nat64_sessions: FastPathSessions {
            installed: c.sessions_installed,
            removed: c.sessions_removed,
            refreshed: c.sessions_refreshed,
            map_full: c.map_full,
            map_errors: c.map_errors,
        },
        redirected: c.redirected,
        redirected_neigh: c.redirected_neigh,
        to_kernel: c.to_kernel,
        route_kept: c.route_kept,
        route_asked: c.route_asked,
    })
}

/// A worker's NAT64 sessions on the fast path, as the worker loop drives
/// them (docs/fastpath.md, "NAT64 established sessions").
struct TunOffload(Offload);

impl SessionOffload for TunOffload {
    fn change(&mut self, op: ReplicaOp, r: &Replica) {
        self.0.change(op, r);
    }
    fn flush(&mut self) {
        self.0.flush();
    }
    fn tick(&mut self, t: &mut Translator, now_ns: u64) {
        self.0.tick(t, now_ns);
    }
    fn reconfigure(&mut self, cfg: &Config) {
        self.0.reconfigure(cfg);
    }
}

/// In mode nat64 with a fast path: one offload per worker, each with its own
/// handle on the session maps and its share of them (taken before the
/// privilege drop). Otherwise, or if a handle cannot be had (said once),
/// none: every NAT64 packet takes the TUN device.
pub fn offloads(
    fp: Option<&FastPath>,
    cfg: &Arc<Config>,
    workers: usize,
) -> Vec<Option<Box<dyn SessionOffload>>> {
    let none = || (0..workers).map(|_| None).collect();
    let (Some(fp), Some(n)) = (fp, cfg.nat64.as_ref()) else {
        return none();
    };
    let share = n.max_sessions.clamp(1, MAX_SESSIONS) as usize;
    let share = share.div_ceil(workers.max(1));
    let mut out: Vec<Option<Box<dyn SessionOffload>>> = Vec::with_capacity(workers);
    for _ in 0..workers {
        match fp.nat64_maps() {
            Ok(m) => out.push(Some(Box::new(TunOffload(Offload::new(
                m,
                cfg.clone(),
                share,
            ))))),
            Err(why) => {
                warn!("fast path: {why}; NAT64 sessions stay on the TUN device");
                return none();
            }
        }
    }
    out
}

/// `"auto"` without `fastpath_interfaces` (docs/config.md): every Ethernet
/// interface that is up, but the TUN device (not Ethernet anyway). The
/// program passes up unchanged whatever the kernel would not route into the
/// TUN device, so an interface that carries no translated traffic costs a
/// configuration look-up per packet and changes nothing. Sorted, so the
/// start line is stable.
fn ethernet_interfaces_up(device: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    let read = |name: &str, what: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{name}/{what}")).unwrap_or_default()
    };
    let mut found: Vec<String> = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            // ARPHRD_ETHER; IFF_UP.
            let flags = read(name, "flags");
            let flags = u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16);
            name != device && read(name, "type").trim() == "1" && flags.is_ok_and(|f| f & 1 != 0)
        })
        .collect();
    found.sort();
    found
}

fn ifindex(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: a NUL-terminated string that outlives the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// Why the program must not hand translated packets to the kernel, if
/// `iface` has strict reverse-path filtering: the effective value is the
/// larger of `all` and the interface's, and with 1 the kernel drops the IPv4
/// packets the program translated from IPv6 on `iface` and handed to it
/// (those it does not redirect: a local destination, no route), whose IPv4
/// source is routed into the TUN device, not out of `iface`.
fn strict_rp_filter(iface: &str) -> Option<String> {
    let read = |dev: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/conf/{dev}/rp_filter"))
            .ok()
            .and_then(|v| v.trim().parse::<u8>().ok())
            .unwrap_or(0)
    };
    (read("all").max(read(iface)) == 1).then(|| {
        format!(
            "{iface} has strict reverse-path filtering (net.ipv4.conf.{{all,{iface}}}.rp_filter \
             = 1), which would drop the IPv4 packets translated on it and routed by the kernel"
        )
    })
}

#[cfg(test)]
mod tests {
    /// docs/config.md `fastpath_interfaces`: "auto" without them never
    /// picks the loopback (not Ethernet) or the TUN device itself; the
    /// namespace test (`default_config_takes_the_fast_path_on_every_ethernet_interface`)
    /// checks what it does pick.
    #[test]
    fn auto_interfaces_skip_loopback_and_the_device() {
        let all = super::ethernet_interfaces_up("");
        assert!(!all.iter().any(|i| i == "lo"), "{all:?}");
        if let Some(first) = all.first() {
            assert!(!super::ethernet_interfaces_up(first).contains(first));
        }
        assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted: {all:?}");
    }
}
