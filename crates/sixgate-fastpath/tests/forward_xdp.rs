//! Forwarding from the XDP fast path (docs/fastpath.md, "Forwarding"): the
//! shared namespace bed and cases (tests/common/forward.rs) through the XDP
//! program. Needs root; skips otherwise.

use sixgate_fastpath::Hook;

const HOOK: Hook = Hook::Xdp;

#[path = "common/forward.rs"]
mod forward;
