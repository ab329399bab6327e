//! Fuzz the stateful NAT64 (RFC 6146): packet sequences through one translator,
//! with time and timers; see `sixgate_fuzz::run_nat64`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sixgate_fuzz::run_nat64(data));
