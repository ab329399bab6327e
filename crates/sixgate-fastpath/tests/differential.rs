//! The differential test of the TC fast path (docs/fastpath.md): the shared
//! harness and vectors (tests/common/differential.rs) run through the TC
//! program.

use sixgate_fastpath::Hook;

const HOOK: Hook = Hook::Tc;

#[path = "common/differential.rs"]
mod differential;
