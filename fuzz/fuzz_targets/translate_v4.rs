//! Fuzz `Translator::translate` with IPv4 input; see `sixgate_fuzz::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sixgate_fuzz::run(data, 4));
