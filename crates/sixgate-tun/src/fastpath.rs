//! The in-kernel fast path in front of the TUN device (`[daemon] fastpath =
//! "tc"`, docs/fastpath.md): a TC ingress program on the interfaces named
//! for it translates stateless SIIT's common packets and forwards them itself
//! by the kernel's FIB (redirect); every other packet goes up unchanged and
//! reaches the device by the routes as before. Started before the privilege drop and
//! stopped before the device goes. A program that cannot be loaded or
//! attached is a warning: the TUN plane alone still translates everything.
//! With strict reverse-path filtering on an interface the program translates
//! only what it forwards itself (the kernel would drop a translated packet
//! it routes).

use sixgate_config::{FastPathMode, Loaded};
use sixgate_core::Config;
use sixgate_fastpath::FastPath;
use tracing::{info, warn};

/// Load and attach, or say why not (`cfg`: the plan's configuration, with
/// the IPv4 Identification key the workers use; `device`: the TUN device,
/// where the kernel routes what the program may translate).
pub fn start(loaded: &Loaded, cfg: &Config, device: &str) -> Option<FastPath> {
    if loaded.daemon.fastpath != FastPathMode::Tc {
        return None;
    }
    // Strict reverse-path filtering would drop a translated packet the
    // program hands to the kernel: then it translates only what it forwards.
    let strict = loaded
        .daemon
        .fastpath_interfaces
        .iter()
        .find_map(|i| strict_rp_filter(i));
    let Some(ifindex) = ifindex(device) else {
        warn!(
            "fastpath = \"tc\": no interface index for {device}; every packet takes the TUN device"
        );
        return None;
    };
    let mut fp = match FastPath::load(cfg, ifindex) {
        Ok(fp) => fp,
        Err(why) => {
            warn!("fastpath = \"tc\": {why}; every packet takes the TUN device");
            return None;
        }
    };
    if let Some(why) = &strict {
        if let Err(e) = fp.set_redirect_only(true) {
            warn!("fastpath = \"tc\": {why}, and {e}; every packet takes the TUN device");
            return None;
        }
        info!(
            "fast path: {why}: it translates only the packets it forwards itself; the rest \
             goes up untranslated to the TUN device"
        );
    }
    for iface in &loaded.daemon.fastpath_interfaces {
        if let Err(why) = fp.attach(iface) {
            warn!("fastpath = \"tc\": {why}; every packet takes the TUN device");
            fp.detach_all();
            return None;
        }
    }
    let on: Vec<&str> = fp.interfaces().collect();
    info!(
        "fast path: TC program attached to the ingress of {} (stateless SIIT's TCP, UDP and \
         ICMP Echo translated in the kernel; the rest goes up to the TUN device)",
        on.join(", ")
    );
    Some(fp)
}

/// Detach, and say what it carried.
pub fn stop(fp: &mut Option<FastPath>) {
    let Some(mut f) = fp.take() else {
        return;
    };
    if let Ok(c) = f.counters() {
        info!("{}", summary(&c));
    }
    f.detach_all();
}

/// One line for humans: the program's counters.
pub fn summary(c: &sixgate_fastpath::Counters) -> String {
    format!(
        "fast path: received {}, translated 6to4 {} 4to6 {}, passed to the slow path {}, \
         aborted {}; translated packets redirected {}, redirected to an unresolved neighbour \
         {}, routed by the kernel {}",
        c.received,
        c.translated_6to4,
        c.translated_4to6,
        c.passed,
        c.aborted,
        c.redirected,
        c.redirected_neigh,
        c.to_kernel
    )
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
