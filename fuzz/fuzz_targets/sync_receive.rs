//! Fuzz the sync protocol's receive path; see `sixgate_fuzz::run_sync`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sixgate_fuzz::run_sync(data));
