//! Fuzz `Translator::translate` with IPv6 input; see `sixgate_fuzz::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sixgate_fuzz::run(data, 6));
