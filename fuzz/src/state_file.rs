//! The `state_file` harness: `sixgate_sync::state_file::decode` on any bytes
//! (docs/restart.md, "When a file is refused").
//!
//! Input layout: a knob byte, then the file. Knob bit 0: the harness rewrites
//! the checksum over what precedes it (`state_file::reseal`), so that the
//! fuzzer gets past it to the records; bit 1: the daemon expects the config
//! hash and finds the clock at the write time that the file itself carries
//! (else the hash of the seeds and a clock at 1.8·10^12 ms), so the checks
//! after the checksum are reached too; bits 2..8: the file's age in seconds.
//!
//! Invariants:
//! - nothing panics (debug assertions and overflow checks are on), and
//!   nothing is allocated beyond what the input holds;
//! - an accepted file is exactly header + 56 bytes per record + checksum,
//!   with no more records than the tables hold, every one either restored
//!   (a remaining lifetime in 1..=10^9 ms) or counted expired;
//! - its sessions, written again at its age 0, read back the same.

use sixgate_sync::state_file::{self, Expect, HEADER_LEN, TRAILER_LEN};

/// The config hash the seeds carry.
pub const STATE_HASH: u64 = 0x5157_0002;
/// The write time the seeds carry, ms since the Unix epoch.
pub const STATE_WRITTEN: u64 = 1_800_000_000_000;
/// The most sessions the harness's tables hold.
pub const STATE_MAX: u64 = 4096;

/// One run: see the module docs.
pub fn run_state_file(data: &[u8]) {
    let Some((&knobs, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if knobs & 1 != 0 {
        state_file::reseal(&mut file);
    }
    let field = |o: usize| {
        file.get(o..o + 8)
            .map(|b| u64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
    };
    let (hash, written) = if knobs & 2 != 0 {
        (
            field(16).unwrap_or(STATE_HASH),
            field(24).unwrap_or(STATE_WRITTEN),
        )
    } else {
        (STATE_HASH, STATE_WRITTEN)
    };
    let age_ms = u64::from(knobs >> 2) * 1000;
    let expect = Expect {
        config_hash: hash,
        now_unix_ms: written.saturating_add(age_ms),
        max_age_ms: 60_000,
        max_records: STATE_MAX,
    };
    let Ok(r) = state_file::decode(&file, &expect) else {
        return;
    };
    let n = (file.len() - HEADER_LEN - TRAILER_LEN) / 56;
    assert_eq!(HEADER_LEN + 56 * n + TRAILER_LEN, file.len());
    assert!(n as u64 <= STATE_MAX);
    assert_eq!(
        (r.sessions.len() + r.cooling.len()) as u64 + r.expired,
        n as u64
    );
    // Its age is the clock less its write time (0 when a little ahead).
    let file_written = field(24).unwrap_or(0);
    assert_eq!(r.written_unix_ms, file_written);
    assert_eq!(r.age_ms, expect.now_unix_ms.saturating_sub(file_written));
    for s in &r.sessions {
        assert!(s.remaining_ms > 0 && s.remaining_ms <= 1_000_000_000);
    }
    for c in &r.cooling {
        assert!(c.remaining_ms > 0 && c.rport == 0 && c.tcp_state.is_none());
    }
    let again = state_file::encode(hash, expect.now_unix_ms, &r.sessions, &r.cooling, None);
    let back = state_file::decode(&again, &expect).expect("what it wrote, it reads");
    assert_eq!(back.sessions, r.sessions);
    assert_eq!(back.cooling, r.cooling);
    assert_eq!(back.expired, 0);
}
