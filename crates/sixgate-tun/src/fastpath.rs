//! The in-kernel fast path in front of the TUN device (`[daemon] fastpath =
//! "tc"`, docs/fastpath.md): a TC ingress program on the interfaces named
//! for it translates stateless SIIT's common packets, which the kernel then
//! forwards by its routes; every other packet goes up unchanged and reaches
//! the device by the routes as before. Started before the privilege drop and
//! stopped before the device goes. A program that cannot be loaded or
//! attached is a warning: the TUN plane alone still translates everything.

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
         aborted {}",
        c.received, c.translated_6to4, c.translated_4to6, c.passed, c.aborted
    )
}

fn ifindex(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: a NUL-terminated string that outlives the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}
