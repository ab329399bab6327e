//! Fuzz MAP-T (RFC 7599), BR and CE: packet sequences through one translator,
//! with time and timers; see `sixgate_fuzz::run_mapt`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sixgate_fuzz::run_mapt(data));
