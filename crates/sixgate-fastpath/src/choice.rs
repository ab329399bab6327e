//! Whether to load the fast path: what the file asks (`[daemon] fastpath`),
//! whether the configuration is in scope ([`sixgate_core::fastpath::unsupported`])
//! and whether this kernel can run the program ([`crate::probe`]). Pure, so
//! the decision is tested with made-up probe results.
//!
//! Asked for by name (`"tc"`), a fast path that cannot run is a warning;
//! under `"auto"` it is an info line, since "off" is one of the answers
//! `"auto"` asked for. Either way the TUN plane alone translates everything:
//! never a failed start.
//!
//! Strict reverse-path filtering on an attached interface does not leave the
//! fast path off: the program then translates only what it forwards itself
//! ([`Forwarding::RedirectOnly`], bpf/forward.h), and the kernel's filter
//! never sees a translated packet.

use std::fmt;

use sixgate_core::Config;

use crate::probe::Unsupported;

/// What the file asks for (`"off"` never gets here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// `fastpath = "tc"`: the TC program, or a warning saying why not.
    Tc,
    /// `fastpath = "xdp"`: the XDP program in native mode, or a warning and
    /// the TC program (the data plane's fallback,
    /// `sixgate-tun/src/fastpath.rs`), or a warning saying why neither.
    Xdp,
    /// `fastpath = "auto"`: the TC program where it can run, else off with
    /// an info line saying why.
    Auto,
}

impl Want {
    /// The value in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Want::Tc => "tc",
            Want::Xdp => "xdp",
            Want::Auto => "auto",
        }
    }

    /// Off, for `why`.
    pub fn off(self, why: impl Into<String>) -> Off {
        Off {
            want: self,
            why: why.into(),
        }
    }
}

/// The fast path asked for does not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Off {
    /// What the file asked.
    pub want: Want,
    /// Why not.
    pub why: String,
}

impl Off {
    /// A warning (asked for by name), or an info line (`auto`).
    pub fn is_warning(&self) -> bool {
        self.want != Want::Auto
    }
}

impl fmt::Display for Off {
    /// The log line: `fastpath = "tc": WHY; every packet takes the TUN device`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fastpath = \"{}\": {}; every packet takes the TUN device",
            self.want.as_str(),
            self.why
        )
    }
}

/// How the loaded program hands on what it translated (docs/fastpath.md,
/// "Forwarding").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forwarding {
    /// Out of the egress interface where the kernel's FIB answers, else to
    /// the kernel's routing (a local destination, no route, …).
    Redirect,
    /// Strict reverse-path filtering (why, naming the interface): the
    /// kernel would drop a packet translated 6→4 and handed to it (its
    /// source is routed into the TUN device), so only what the program
    /// forwards itself is translated; the rest goes up untranslated.
    RedirectOnly(String),
}

/// Load the program (then attach it) forwarding as answered, or run without
/// it and say why. `strict_rp_filter`: why an interface's reverse-path
/// filtering is strict, if it is. The kernel is probed only when the rest
/// allows a fast path.
pub fn choose(
    want: Want,
    interfaces: &[String],
    cfg: &Config,
    strict_rp_filter: Option<String>,
    kernel: impl FnOnce() -> Result<(), Unsupported>,
) -> Result<Forwarding, Off> {
    if interfaces.is_empty() {
        return Err(want.off(
            "no fastpath_interfaces to attach to (name the IPv6-side and IPv4-side interfaces)",
        ));
    }
    if let Some(why) = sixgate_core::fastpath::unsupported(cfg) {
        return Err(want.off(why));
    }
    kernel().map_err(|u| want.off(u.to_string()))?;
    Ok(strict_rp_filter.map_or(Forwarding::Redirect, Forwarding::RedirectOnly))
}

#[cfg(test)]
mod tests;
