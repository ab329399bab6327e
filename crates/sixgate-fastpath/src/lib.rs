//! sixgate's in-kernel fast path (docs/fastpath.md): a TC ingress program
//! (tcx where the kernel has it, else clsact), or the same translation as
//! an XDP program ([`Hook`]), that translates the common
//! packets of stateless SIIT, a CLAT or a MAP-T BR, and the packets of the
//! stateful NAT64 sessions the workers install ([`Nat64Maps`]), in place and
//! passes every other packet up, unchanged, to the data plane that runs the
//! Rust core.
//!
//! An add-on to a data plane, not a data plane: it owns no packet I/O and no
//! worker, and depends on the core only (for the scope,
//! [`sixgate_core::fastpath`], and the configuration it mirrors), so the TUN
//! plane (or any other) can attach it without importing another data plane.

mod bpf_config;
pub mod choice;
pub mod handover;
mod mapt_rules;
mod nat64_maps;
mod offload;
pub mod probe;
mod program;
mod route_watch;
mod xlat;

pub use bpf_config::BpfConfig;
pub use nat64_maps::{InstallError, MAX_SESSIONS, Nat64Maps, SessionCounters};
pub use offload::Offload;
pub use program::{Counters, FastPath, Hook, Prepared, Unprepared};
