//! sixgate-loadgen: a UDP packet generator and receiver for measuring packet
//! rates through a data plane (RFC 8219 style: 64-byte frames, binary search
//! on the offered rate is left to the calling script, `bench/tun-compare.sh`).
//!
//! - [`send`]: paced `sendmmsg` batches ([`pacing`]), optionally with RFC 4814
//!   pseudorandom source ports ([`ports`]) through a raw socket, or as whole
//!   Ethernet frames ([`frame`]) through a packet socket;
//! - [`recv`]: `recvmmsg` batches, counting datagrams, bytes and the socket's
//!   own drops.
//!
//! Linux only.

#[cfg(not(target_os = "linux"))]
compile_error!("sixgate-loadgen uses Linux system calls (sendmmsg, recvmmsg, SO_RXQ_OVFL)");

pub mod checksum;
pub mod cli;
pub mod frame;
pub mod pacing;
pub mod ports;
pub mod recv;
pub mod send;
mod sys;
