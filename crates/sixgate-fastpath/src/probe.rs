//! Can this kernel run the fast path? Asked before loading it, so that a
//! kernel without what the program needs gets one warning naming what is
//! missing, and the TUN plane alone, instead of a verifier dump
//! (docs/fastpath.md, "Kernel requirements").
//!
//! Each feature is probed the way libbpf probes it (aya's `sys` probes): a
//! program type by loading a trivial program of it, a helper by loading a
//! program of type `sched_cls` that calls it and reading the verifier's
//! verdict, a map type by creating one. The LPM trie as the inner map of an
//! `ARRAY_OF_MAPS` (the configuration slot, bpf/config_maps.h) is created
//! as the loader will create it. The probes cost a few system calls, once,
//! at start. Loading the program itself remains the last word: a kernel that
//! passes every probe and still refuses it is reported the same way.

use std::fmt;
use std::os::fd::{FromRawFd, OwnedFd};

use aya::maps::MapType;
use aya::programs::ProgramType;
use aya::sys::{BpfHelper, is_helper_supported, is_map_supported, is_program_supported};

/// Test hook: a comma-separated list of [`FEATURES`] names to report as
/// missing whatever the kernel says, so that the fallback can be tested on a
/// kernel that has everything (`crates/sixgate/tests/fastpath.rs`).
pub const PRETEND_MISSING_ENV: &str = "SIXGATE_FASTPATH_PRETEND_MISSING";

/// The program type: a TC classifier (`sched_cls`), attached with tcx or
/// under a `clsact` qdisc.
pub const PROGRAM_TYPE: &str = "sched_cls";

/// Every helper bpf/siit_tc.c (the TC program: bpf/siit.h behind
/// bpf/hook_tc.h) calls, by the name the kernel documents
/// (`bpf-helpers(7)`). `helpers_cover_the_object` checks this list against
/// the built object, so a helper added to the C is added here too.
pub const HELPERS: &[(BpfHelper, &str)] = &[
    (BpfHelper::BPF_FUNC_map_lookup_elem, "bpf_map_lookup_elem"),
    (BpfHelper::BPF_FUNC_skb_store_bytes, "bpf_skb_store_bytes"),
    (BpfHelper::BPF_FUNC_l4_csum_replace, "bpf_l4_csum_replace"),
    // RFC 7915 §4.1 / §5.1: the header swap, GSO super-packets included.
    (BpfHelper::BPF_FUNC_skb_change_proto, "bpf_skb_change_proto"),
    (BpfHelper::BPF_FUNC_skb_change_tail, "bpf_skb_change_tail"),
    (BpfHelper::BPF_FUNC_skb_pull_data, "bpf_skb_pull_data"),
    // The flow hash change_proto clears, given back (bpf/hook_tc.h; Linux 4.13).
    (BpfHelper::BPF_FUNC_set_hash, "bpf_set_hash"),
    // "Would the kernel route it into the TUN device?", and where the
    // translation goes (bpf/forward.h).
    (BpfHelper::BPF_FUNC_fib_lookup, "bpf_fib_lookup"),
    // NAT64: a session entry's coarse last-seen (bpf/nat64.h).
    (BpfHelper::BPF_FUNC_ktime_get_ns, "bpf_ktime_get_ns"),
    // The route check's kept answers age out (bpf/route_cache.h; Linux 5.11).
    (
        BpfHelper::BPF_FUNC_ktime_get_coarse_ns,
        "bpf_ktime_get_coarse_ns",
    ),
    // Forwarding the translation (bpf/forward.h): out with the FIB's MAC
    // addresses, or with the kernel resolving the next hop (Linux 5.10).
    (BpfHelper::BPF_FUNC_redirect, "bpf_redirect"),
    (BpfHelper::BPF_FUNC_redirect_neigh, "bpf_redirect_neigh"),
];

/// The XDP program type (`xdp`; native mode is the attach's question, not
/// the probe's).
pub const PROGRAM_TYPE_XDP: &str = "xdp";

/// Every helper bpf/siit_xdp.c calls, checked against its object as
/// [`HELPERS`] against the TC one.
pub const HELPERS_XDP: &[(BpfHelper, &str)] = &[
    (BpfHelper::BPF_FUNC_map_lookup_elem, "bpf_map_lookup_elem"),
    // RFC 7915 §4.1 / §5.1: the header swap (±20 bytes at the front) and
    // link-layer padding trimmed.
    (BpfHelper::BPF_FUNC_xdp_adjust_head, "bpf_xdp_adjust_head"),
    (BpfHelper::BPF_FUNC_xdp_adjust_tail, "bpf_xdp_adjust_tail"),
    // A multi-buffer frame's whole length (Linux 5.18).
    (BpfHelper::BPF_FUNC_xdp_get_buff_len, "bpf_xdp_get_buff_len"),
    (BpfHelper::BPF_FUNC_fib_lookup, "bpf_fib_lookup"),
    (BpfHelper::BPF_FUNC_ktime_get_ns, "bpf_ktime_get_ns"),
    (
        BpfHelper::BPF_FUNC_ktime_get_coarse_ns,
        "bpf_ktime_get_coarse_ns",
    ),
    (BpfHelper::BPF_FUNC_redirect, "bpf_redirect"),
];

/// The map types the object declares.
pub const MAPS: &[(MapType, &str)] = &[
    // fwd_config (bpf/forward.h).
    (MapType::Array, "BPF_MAP_TYPE_ARRAY"),
    (MapType::PerCpuArray, "BPF_MAP_TYPE_PERCPU_ARRAY"),
    (MapType::LpmTrie, "BPF_MAP_TYPE_LPM_TRIE"),
    (MapType::ArrayOfMaps, "BPF_MAP_TYPE_ARRAY_OF_MAPS"),
    // NAT64's session maps (bpf/nat64.h).
    (MapType::Hash, "BPF_MAP_TYPE_HASH"),
];

/// The configuration slot: an array of maps whose inner map is an LPM trie.
pub const LPM_IN_ARRAY_OF_MAPS: &str = "BPF_MAP_TYPE_ARRAY_OF_MAPS holding an LPM trie";

/// Every feature name the probe may report, in the order it probes them.
pub fn features() -> impl Iterator<Item = &'static str> {
    std::iter::once(PROGRAM_TYPE)
        .chain(HELPERS.iter().map(|(_, n)| *n))
        .chain(MAPS.iter().map(|(_, n)| *n))
        .chain(std::iter::once(LPM_IN_ARRAY_OF_MAPS))
}

/// Every feature name [`kernel_xdp`] may report, in the order it probes
/// them.
pub fn xdp_features() -> impl Iterator<Item = &'static str> {
    std::iter::once(PROGRAM_TYPE_XDP)
        .chain(HELPERS_XDP.iter().map(|(_, n)| *n))
        .chain(MAPS.iter().map(|(_, n)| *n))
        .chain(std::iter::once(LPM_IN_ARRAY_OF_MAPS))
}

/// Why this kernel cannot run the fast path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// Features the kernel lacks (names from [`features`]).
    Missing(Vec<&'static str>),
    /// A probe could not tell (no permission, an unexpected error): the
    /// feature, and the error.
    Unknown(&'static str, String),
}

impl Unsupported {
    /// The line for the `hook`'s program ("TC", "XDP").
    pub fn for_hook(&self, hook: &str) -> String {
        match self {
            Unsupported::Missing(m) => format!(
                "this kernel lacks what the {hook} fast path needs: {}",
                m.join(", ")
            ),
            Unsupported::Unknown(what, e) => format!(
                "cannot probe the kernel for the {hook} fast path ({what}: {e}; probing needs \
                 CAP_BPF and CAP_NET_ADMIN, or root)"
            ),
        }
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.for_hook("TC"))
    }
}

/// Probe this kernel for everything the program needs; `Err` names what is
/// missing (all of it, not the first). Honours [`PRETEND_MISSING_ENV`].
pub fn kernel() -> Result<(), Unsupported> {
    let pretend = std::env::var(PRETEND_MISSING_ENV).unwrap_or_default();
    kernel_pretending(&pretend.split(',').map(str::trim).collect::<Vec<_>>())
}

/// [`kernel`] for the XDP program (bpf/siit_xdp.c). Honours
/// [`PRETEND_MISSING_ENV`] with [`xdp_features`]' names.
pub fn kernel_xdp() -> Result<(), Unsupported> {
    let pretend = std::env::var(PRETEND_MISSING_ENV).unwrap_or_default();
    probe_pretending(
        (ProgramType::Xdp, PROGRAM_TYPE_XDP),
        HELPERS_XDP,
        &pretend.split(',').map(str::trim).collect::<Vec<_>>(),
    )
}

/// [`kernel`], with the features in `pretend` reported missing unprobed.
pub(crate) fn kernel_pretending(pretend: &[&str]) -> Result<(), Unsupported> {
    probe_pretending(
        (ProgramType::SchedClassifier, PROGRAM_TYPE),
        HELPERS,
        pretend,
    )
}

/// The program type, its helpers (called from a program of that type),
/// the maps and the configuration slot; `pretend` reported missing.
pub(crate) fn probe_pretending(
    (program, program_name): (ProgramType, &'static str),
    helpers: &[(BpfHelper, &'static str)],
    pretend: &[&str],
) -> Result<(), Unsupported> {
    let mut missing = Vec::new();
    let mut has = |name: &'static str, probe: &dyn Fn() -> Result<bool, String>| {
        if pretend.contains(&name) {
            missing.push(name);
            return Ok(());
        }
        match probe() {
            Ok(true) => Ok(()),
            Ok(false) => {
                missing.push(name);
                Ok(())
            }
            Err(e) => Err(Unsupported::Unknown(name, e)),
        }
    };
    has(program_name, &|| {
        is_program_supported(program).map_err(|e| e.to_string())
    })?;
    for &(helper, name) in helpers {
        has(name, &|| {
            is_helper_supported(program, helper).map_err(|e| e.to_string())
        })?;
    }
    for &(map, name) in MAPS {
        has(name, &|| is_map_supported(map).map_err(|e| e.to_string()))?;
    }
    has(LPM_IN_ARRAY_OF_MAPS, &lpm_in_array_of_maps)?;
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Unsupported::Missing(missing))
    }
}

/// `BPF_MAP_CREATE`'s attributes up to `inner_map_fd`; the kernel reads the
/// rest as zero.
#[repr(C)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
}

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_TYPE_LPM_TRIE: u32 = 11;
const BPF_MAP_TYPE_ARRAY_OF_MAPS: u32 = 12;
const BPF_F_NO_PREALLOC: u32 = 1;

fn map_create(attr: &MapCreate) -> std::io::Result<OwnedFd> {
    // SAFETY: BPF_MAP_CREATE reads `size_of::<MapCreate>()` bytes of a live
    // struct; the descriptor it returns is ours to close.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_CREATE,
            attr as *const MapCreate,
            size_of::<MapCreate>() as u32,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// An LPM trie shaped like the configuration trie, then an array of maps
/// with it as the inner map's template, as the loader creates `xlat`.
fn lpm_in_array_of_maps() -> Result<bool, String> {
    use std::os::fd::AsRawFd;
    let trie = map_create(&MapCreate {
        map_type: BPF_MAP_TYPE_LPM_TRIE,
        key_size: 8,
        value_size: 1,
        max_entries: 1,
        map_flags: BPF_F_NO_PREALLOC,
        inner_map_fd: 0,
    });
    let trie = match trie {
        Ok(t) => t,
        // The trie itself is probed (and reported) on its own.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(false),
        Err(e) => return Err(format!("creating an LPM trie: {e}")),
    };
    match map_create(&MapCreate {
        map_type: BPF_MAP_TYPE_ARRAY_OF_MAPS,
        key_size: 4,
        value_size: 4,
        max_entries: 1,
        map_flags: 0,
        inner_map_fd: trie.as_raw_fd() as u32,
    }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(false),
        Err(e) => Err(format!("creating an array of maps: {e}")),
    }
}

#[cfg(test)]
mod tests;
