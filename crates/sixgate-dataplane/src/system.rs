//! What a gateway asks of the operating system besides its packet I/O: CPUs
//! and pinning, forwarding sysctls, users and privilege drop, random seeds,
//! and `ip` (iproute2) for addresses and routes.

use std::ffi::{CStr, CString};
use std::io;
use std::process::Command;

/// The CPUs this process may run on (its affinity mask), in order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if ok != 0 {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pin the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: as above; pid 0 is the calling thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Forwarding sysctls that are off, as (sysctl name, what it breaks).
pub fn forwarding_off() -> Vec<(&'static str, &'static str)> {
    let off = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim() == "0")
            .unwrap_or(false)
    };
    let mut out = Vec::new();
    if off("/proc/sys/net/ipv4/ip_forward") {
        out.push((
            "net.ipv4.ip_forward",
            "translated IPv4 packets for other hosts will be dropped by the kernel",
        ));
    }
    if off("/proc/sys/net/ipv6/conf/all/forwarding") {
        out.push((
            "net.ipv6.conf.all.forwarding",
            "translated IPv6 packets for other hosts will be dropped by the kernel",
        ));
    }
    out
}

/// A user's uid and primary gid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct User {
    /// User id.
    pub uid: libc::uid_t,
    /// Primary group id.
    pub gid: libc::gid_t,
}

/// Look a user up in the password database.
pub fn lookup_user(name: &str) -> Result<User, String> {
    let cname = CString::new(name).map_err(|_| format!("user {name:?}: not a user name"))?;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: passwd is plain data; getpwnam_r writes it and strings into buf.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let r = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if r != 0 {
        return Err(format!(
            "user {name:?}: cannot read the user database: {}",
            io::Error::from_raw_os_error(r)
        ));
    }
    if result.is_null() {
        return Err(format!(
            "user {name:?} does not exist; expected an existing user for [daemon] user \
             (e.g. \"nobody\")"
        ));
    }
    Ok(User {
        uid: pwd.pw_uid,
        gid: pwd.pw_gid,
    })
}

/// The capabilities `[daemon] user` keeps (docs/config.md, "[daemon]"), so
/// that a reload or a runtime change can still do what the start-up did:
/// routes into the device and `pool4 add` (`CAP_NET_ADMIN`, also for the `ip`
/// it runs: hence ambient), and the fast path's new configuration map on
/// every change (`CAP_BPF`, with `CAP_PERFMON` as the kernel asks for it
/// next to `CAP_BPF`). Nothing else: no file access, no `setuid(0)`.
pub const KEPT_CAPS: [(u32, &str); 3] = [
    (CAP_NET_ADMIN, "CAP_NET_ADMIN"),
    (CAP_BPF, "CAP_BPF"),
    (CAP_PERFMON, "CAP_PERFMON"),
];
const CAP_NET_ADMIN: u32 = 12;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_V3: u32 = 0x2008_0522;

/// The calling thread's (effective, permitted) sets as 64-bit masks.
fn caps_now() -> io::Result<(u64, u64)> {
    let mut h = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let mut d = [CapData::default(); 2];
    // SAFETY: capget writes two CapData for version 3.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok((
        join(d[0].effective, d[1].effective),
        join(d[0].permitted, d[1].permitted),
    ))
}

/// Set effective, permitted and inheritable to `mask`, and raise each in
/// the ambient set (so that the `ip` this process runs has them too).
fn keep_only(mask: u64) -> io::Result<()> {
    let mut h = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let (lo, hi) = (mask as u32, (mask >> 32) as u32);
    let d = [
        CapData {
            effective: lo,
            permitted: lo,
            inheritable: lo,
        },
        CapData {
            effective: hi,
            permitted: hi,
            inheritable: hi,
        },
    ];
    // SAFETY: capset reads two CapData for version 3.
    if unsafe { libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for cap in (0..64).filter(|c| mask & (1 << c) != 0) {
        // SAFETY: plain prctl with integer arguments.
        let r = unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_RAISE as libc::c_ulong,
                cap as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Switch the whole process to `user`: no supplementary groups, its primary
/// group, its uid; of root's capabilities it keeps only those of
/// [`KEPT_CAPS`] it holds (returned by name), in the calling thread and the
/// threads it starts from now on. Threads started earlier keep none (the
/// uid change reaches them without `PR_SET_KEEPCAPS`). Call before
/// spawning the threads that change the gateway.
pub fn drop_privileges(user: User) -> io::Result<Vec<&'static str>> {
    let check = |r: libc::c_int| {
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    let (effective, _) = caps_now()?;
    let kept: Vec<(u32, &str)> = KEPT_CAPS
        .iter()
        .copied()
        .filter(|(c, _)| effective & (1 << c) != 0)
        .collect();
    let mask = kept.iter().fold(0u64, |m, (c, _)| m | (1 << c));
    // SAFETY: plain system calls with valid arguments.
    unsafe {
        check(libc::prctl(
            libc::PR_SET_KEEPCAPS,
            1 as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        check(libc::setgroups(0, std::ptr::null()))?;
        check(libc::setgid(user.gid))?;
        check(libc::setuid(user.uid))?;
        check(libc::prctl(
            libc::PR_SET_KEEPCAPS,
            0 as libc::c_ulong,
            0,
            0,
            0,
        ))?;
    }
    // setuid kept the permitted set and cleared the effective one: now
    // down to the kept few, CAP_SETUID among the dropped.
    keep_only(mask)?;
    // Make sure it cannot be undone.
    if user.uid != 0 && unsafe { libc::setuid(0) } == 0 {
        return Err(io::Error::other(
            "setuid(0) still succeeds after dropping privileges",
        ));
    }
    Ok(kept.into_iter().map(|(_, n)| n).collect())
}

/// The names of [`KEPT_CAPS`] the calling thread has in effect.
pub fn kept_caps_in_effect() -> Vec<&'static str> {
    let Ok((effective, _)) = caps_now() else {
        return Vec::new();
    };
    KEPT_CAPS
        .iter()
        .filter(|(c, _)| effective & (1 << c) != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// For an `EPERM` from the kernel: why, when the process lacks
/// `CAP_NET_ADMIN` (it ran `[daemon] user` without it); empty otherwise.
pub fn eperm_hint(err: &str) -> &'static str {
    if !err.contains("Operation not permitted") || kept_caps_in_effect().contains(&"CAP_NET_ADMIN")
    {
        return "";
    }
    " (this process lacks CAP_NET_ADMIN: [daemon] user keeps it only when the daemon starts \
     with it, e.g. in the unit's CapabilityBoundingSet; docs/config.md, [daemon] user)"
}

/// True when the process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// 64 random bits from the kernel (for the IPv4 ID key), or a clock-derived
/// value if getrandom is unavailable.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: writes at most 8 bytes into b.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n == 8 {
        return u64::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

/// The name of a signal, for logs.
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".to_owned(),
        libc::SIGTERM => "SIGTERM".to_owned(),
        other => {
            // SAFETY: strsignal returns a static or thread-local string.
            let p = unsafe { libc::strsignal(other) };
            if p.is_null() {
                format!("signal {other}")
            } else {
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        }
    }
}

/// Run `ip [-6] ARGS`; stdout on success, stderr (or why it could not run) on failure.
pub fn ip(v6: bool, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("ip");
    if v6 {
        cmd.arg("-6");
    }
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip` (iproute2): {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        // One line: an error is shown in a table cell or a log field, where
        // two lines of `ip` would run together.
        let msg = String::from_utf8_lossy(&out.stderr)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        Err(if msg.is_empty() {
            format!("ip exited with {}", out.status)
        } else {
            msg
        })
    }
}

/// This machine's host name (`gethostname`), `"-"` when it has none.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates within it
    // or truncates (the last byte stays 0).
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
    match std::str::from_utf8(&buf[..end]) {
        Ok(h) if r == 0 && !h.is_empty() => h.to_owned(),
        _ => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_are_found() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
    }

    #[test]
    fn root_user_exists_and_nonsense_does_not() {
        assert_eq!(lookup_user("root").unwrap(), User { uid: 0, gid: 0 });
        let e = lookup_user("no-such-user-sixgate").unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn random_differs() {
        assert_ne!(random_u64(), random_u64());
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    }
}
