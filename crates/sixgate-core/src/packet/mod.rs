//! Zero-copy packet views and the buffers the translator works in.

pub mod buf;
pub mod ipv4;
pub mod ipv6;
pub mod l4;

pub use buf::{HEADROOM, MAX_OUTPUTS, PacketBuf, Scratch};
