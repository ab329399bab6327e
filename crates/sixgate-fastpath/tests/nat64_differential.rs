//! The differential test of stateful NAT64 on the TC fast path
//! (docs/fastpath.md, "NAT64 established sessions"): the shared harness and
//! sessions (tests/common/nat64_differential.rs) through the TC program.

use sixgate_fastpath::Hook;

const HOOK: Hook = Hook::Tc;

#[path = "common/nat64_differential.rs"]
mod nat64_differential;
