//! Forwarding from the TC fast path (docs/fastpath.md, "Forwarding"): the
//! shared namespace bed and cases (tests/common/forward.rs) through the TC
//! program. Needs root; skips otherwise.

use sixgate_fastpath::Hook;

const HOOK: Hook = Hook::Tc;

#[path = "common/forward.rs"]
mod forward;
