//! Zero-copy packet views and the buffers the translator works in.

pub mod buf;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod l4;

pub use buf::{HEADROOM, MAX_OUTPUTS, PacketBuf, Scratch};
pub use ip::IpHeader;
/// IANA protocol numbers: one registry for IPv4's Protocol field and IPv6's
/// Next Header.
pub use ipv6::nh as proto;
