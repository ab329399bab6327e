//! Fuzz the NAT64 state file's decoder; see `sixgate_fuzz::run_state_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sixgate_fuzz::run_state_file(data));
