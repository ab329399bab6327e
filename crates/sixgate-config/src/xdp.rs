//! `[xdp]`: the AF_XDP data plane (`[daemon] dataplane = "xdp"`).

use std::ops::Range;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::XdpSection;
use crate::value::{int_in, interface_name_problem};

/// `[xdp] attach_mode`: how the XDP program is attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XdpAttach {
    /// Native (driver) XDP, falling back to generic with a warning.
    #[default]
    Auto,
    /// Native only: an error if the driver has no XDP support.
    Native,
    /// Generic (SKB) XDP only.
    Generic,
}

/// `[xdp] zero_copy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZeroCopy {
    /// Zero-copy where the driver supports it, else copy mode.
    #[default]
    Auto,
    /// Zero-copy or an error.
    Require,
    /// Copy mode always.
    Off,
}

/// `[xdp]`: the AF_XDP data plane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpSettings {
    /// Interface facing the IPv6 side.
    pub ipv6_interface: String,
    /// Interface facing the IPv4 side.
    pub ipv4_interface: String,
    /// Native or generic XDP.
    pub attach_mode: XdpAttach,
    /// Zero-copy sockets.
    pub zero_copy: ZeroCopy,
    /// UMEM frames per worker (shared by its two sockets).
    pub frames: u32,
}

/// Default `[xdp] frames`.
pub const DEFAULT_XDP_FRAMES: u32 = 4096;

impl Default for XdpSettings {
    fn default() -> Self {
        XdpSettings {
            ipv6_interface: String::new(),
            ipv4_interface: String::new(),
            attach_mode: XdpAttach::Auto,
            zero_copy: ZeroCopy::Auto,
            frames: DEFAULT_XDP_FRAMES,
        }
    }
}

pub(crate) fn section(
    cx: &Cx<'_>,
    x: XdpSection,
    span: Range<usize>,
) -> Result<XdpSettings, ConfigError> {
    let mut out = XdpSettings::default();
    let iface = |key: &str, v: &Option<toml::Spanned<String>>| -> Result<String, ConfigError> {
        match v {
            None => Err(cx.err(
                span.clone(),
                format!("[xdp] needs {key}; expected {key} = an interface name, e.g. \"eth0\""),
            )),
            Some(n) => match interface_name_problem(n.get_ref()) {
                Some(p) => Err(cx.bad(
                    key,
                    n,
                    p,
                    "an interface name of 1 to 15 ASCII characters without '/', ':' or spaces, \
                     e.g. \"eth0\"",
                )),
                None => Ok(n.get_ref().clone()),
            },
        }
    };
    out.ipv6_interface = iface("ipv6_interface", &x.ipv6_interface)?;
    out.ipv4_interface = iface("ipv4_interface", &x.ipv4_interface)?;
    if out.ipv6_interface == out.ipv4_interface
        && let Some(v) = &x.ipv4_interface
    {
        return Err(cx.bad(
            "ipv4_interface",
            v,
            "the same interface as ipv6_interface",
            "two different interfaces, one facing each side",
        ));
    }
    if let Some(v) = &x.attach_mode {
        cx.check(|| {
            out.attach_mode = match v.get_ref().as_str() {
                "auto" => XdpAttach::Auto,
                "native" => XdpAttach::Native,
                "generic" => XdpAttach::Generic,
                other => {
                    return Err(cx.bad(
                        "attach_mode",
                        v,
                        format!("unknown attach mode {other:?}"),
                        "\"auto\", \"native\" or \"generic\"",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(v) = &x.zero_copy {
        cx.check(|| {
            out.zero_copy = match v.get_ref().as_str() {
                "auto" => ZeroCopy::Auto,
                "require" => ZeroCopy::Require,
                "off" => ZeroCopy::Off,
                other => {
                    return Err(cx.bad(
                        "zero_copy",
                        v,
                        format!("unknown zero-copy setting {other:?}"),
                        "\"auto\", \"require\" or \"off\"",
                    ));
                }
            };
            Ok(())
        });
    }
    if let Some(f) = &x.frames {
        cx.check(|| {
            let n = int_in(cx, "frames", f, 512, 65536)?;
            if !(n as u64).is_power_of_two() {
                return Err(cx.bad(
                    "frames",
                    f,
                    format!("{n} is not a power of two"),
                    "a power of two from 512 to 65536, e.g. 4096",
                ));
            }
            out.frames = n as u32;
            Ok(())
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
