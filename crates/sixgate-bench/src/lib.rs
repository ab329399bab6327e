//! `sixgate bench`: a tester for IPv4/IPv6 translators after RFC 8219
//! (benchmarking IPv6 transition technologies) and RFC 9693 (stateful NATxy
//! gateways), measuring sixgate, TAYGA, the kernel or anything else on one
//! Linux machine.
//!
//! - [`bed`]: the namespace test bed (tester-left, DUT, tester-right; dual-DUT).
//! - [`dut`]: DUT presets that configure and start the device under test.
//! - [`frame`]: test frames with RFC 8219 §5.1 sizes and the tester's tag.
//! - [`ring`] and [`engine`]: AF_PACKET TX/RX rings, paced pinned senders.
//! - [`search`]: the RFC 8219 §7.1 throughput binary search.
//! - [`stats`]: percentiles, latency, PDV and IPDV (RFC 8219 §7.2–7.4).
//! - [`measure`]: the measurements (throughput, frame loss rate, latency, PDV,
//!   RFC 9693 stateful), [`report`] and [`plot`]: their output.
//! - [`cli`]: the `sixgate bench` command line.
//!
//! Linux only, and root (namespaces, packet sockets).

pub mod bed;
pub mod cli;
pub mod dut;
pub mod engine;
pub mod frame;
pub mod measure;
pub mod plot;
pub mod report;
pub mod ring;
pub mod search;
pub mod stats;
