//! The TUN device: created (or reused, when a persistent one is left from a
//! `keep` run), multi-queue, one queue per worker, MTU set, up; with a
//! virtio-net header and offloads when the kernel accepts them.

use std::fmt;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use sixgate_config::TunSettings;
use tun_rs::{DeviceBuilder, SyncDevice};

// linux/if_tun.h
const IFF_TUN: u32 = 0x0001;
const IFF_MULTI_QUEUE: u32 = 0x0100;
const IFF_PERSIST: u32 = 0x0800;
/// `TUNSETPERSIST` = `_IOW('T', 203, int)`.
const TUNSETPERSIST: libc::c_ulong = 0x4004_54cb;

/// What offloads the queues run with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Offload {
    /// `[tun] offload = false`: plain packets.
    Off,
    /// Asked for, refused by the kernel: plain packets. The refusal.
    Refused(String),
    /// Virtio-net header, checksum offload, TSO4/TSO6; the kernel refused USO.
    Tcp,
    /// Virtio-net header, checksum offload, TSO4/TSO6 and USO4/USO6.
    TcpUdp,
}

impl Offload {
    /// True when packets carry a virtio-net header.
    pub fn vnet(&self) -> bool {
        matches!(self, Offload::Tcp | Offload::TcpUdp)
    }
}

impl fmt::Display for Offload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Offload::Off => f.write_str("off (plain packets)"),
            Offload::Refused(why) => write!(f, "refused by the kernel ({why}); plain packets"),
            Offload::Tcp => f.write_str("vnet header, csum, TSO4, TSO6 (USO refused)"),
            Offload::TcpUdp => f.write_str("vnet header, csum, TSO4, TSO6, USO4, USO6"),
        }
    }
}

/// The open device and its queues.
pub struct Device {
    /// Interface name, as the kernel has it.
    pub name: String,
    /// One per worker.
    pub queues: Vec<SyncDevice>,
    /// Offload state of every queue.
    pub offload: Offload,
    /// The device existed (persistent) before this process.
    pub reused: bool,
    /// A duplicate of the first queue's descriptor, for device-wide ioctls after
    /// the queues went to the workers. Holds that queue attached until dropped.
    control: OwnedFd,
}

impl Device {
    /// Create or reuse the device `s.name` with `n` queues, set its MTU, bring it up.
    pub fn open(s: &TunSettings, n: usize) -> Result<Device, String> {
        let reused = check_existing(&s.name)?;
        let build = |offload: bool| {
            DeviceBuilder::new()
                .name(s.name.clone())
                .mtu(s.mtu)
                .with(|b| {
                    b.multi_queue(true);
                    b.offload(offload);
                })
                .build_sync()
        };
        let (first, offload) = if s.offload {
            match build(true) {
                Ok(d) if d.udp_gso() => (d, Offload::TcpUdp),
                Ok(d) => (d, Offload::Tcp),
                Err(e) => match build(false) {
                    Ok(d) => (d, Offload::Refused(e.to_string())),
                    Err(e) => return Err(open_error(&s.name, &e)),
                },
            }
        } else {
            (
                build(false).map_err(|e| open_error(&s.name, &e))?,
                Offload::Off,
            )
        };
        let name = first.name().unwrap_or_else(|_| s.name.clone());
        let mut queues = Vec::with_capacity(n);
        for i in 1..n {
            let q = first
                .try_clone()
                .map_err(|e| format!("{name}: cannot open queue {i} of {n}: {e}"))?;
            queues.push(q);
        }
        queues.insert(0, first);
        for q in &queues {
            q.set_nonblocking(true)
                .map_err(|e| format!("{name}: cannot make a queue non-blocking: {e}"))?;
        }
        let control = queues[0]
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("{name}: cannot duplicate a queue descriptor: {e}"))?;
        Ok(Device {
            name,
            queues,
            offload,
            reused,
            control,
        })
    }

    /// Attach the NAT64 steering program: from now on the kernel picks each
    /// packet's queue with it.
    pub fn attach_steering(&self, s: &crate::steering::Steering) -> Result<(), String> {
        s.attach(self.control.as_fd())
            .map_err(|e| format!("{}: {e}", self.name))
    }

    /// Take any steering program off the device (before leaving it behind).
    pub fn detach_steering(&self) -> Result<(), String> {
        crate::steering::detach(self.control.as_fd()).map_err(|e| format!("{}: {e}", self.name))
    }

    /// Make the device outlive this process (`keep`), or not.
    pub fn set_persist(&self, persist: bool) -> Result<(), String> {
        let fd = self.control.as_raw_fd();
        // SAFETY: TUNSETPERSIST takes an int by value on an attached TUN fd.
        let r = unsafe { libc::ioctl(fd, TUNSETPERSIST as _, libc::c_ulong::from(persist)) };
        if r < 0 {
            return Err(format!(
                "{}: cannot {} the device persistent: {}",
                self.name,
                if persist { "make" } else { "stop making" },
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
}

fn open_error(name: &str, e: &std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " (creating a TUN device needs root or CAP_NET_ADMIN)"
        }
        Some(libc::ENOENT) | Some(libc::ENODEV) => " (is /dev/net/tun there? modprobe tun)",
        _ => "",
    };
    format!("{name}: cannot create TUN device: {e}{hint}")
}

/// Refuse an interface of that name unless it is a persistent, multi-queue TUN
/// device nobody holds (left by `keep`); `Ok(true)` when there is one to reuse.
fn check_existing(name: &str) -> Result<bool, String> {
    let dir = Path::new("/sys/class/net").join(name);
    if !dir.exists() {
        return Ok(false);
    }
    let Ok(flags) = std::fs::read_to_string(dir.join("tun_flags")) else {
        return Err(format!(
            "{name}: an interface of that name exists and is not a TUN device; \
             expected [tun] name to name a free interface"
        ));
    };
    let flags = u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16).unwrap_or(0);
    if flags & IFF_TUN == 0 {
        return Err(format!(
            "{name}: an interface of that name exists and is a TAP device"
        ));
    }
    if flags & IFF_PERSIST == 0 {
        return Err(format!(
            "{name}: a TUN device of that name exists and is in use by another process"
        ));
    }
    if flags & IFF_MULTI_QUEUE == 0 {
        return Err(format!(
            "{name}: a persistent TUN device of that name exists without multi-queue \
             support; remove it with `ip link del {name}`"
        ));
    }
    // The kernel turns the carrier on while any queue is attached.
    let attached = std::fs::read_to_string(dir.join("carrier")).is_ok_and(|c| c.trim() == "1");
    if attached {
        return Err(format!(
            "{name}: a TUN device of that name exists and is in use by another process"
        ));
    }
    Ok(true)
}
