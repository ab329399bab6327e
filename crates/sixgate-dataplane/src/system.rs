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

/// Switch the whole process to `user`: no supplementary groups, its primary group,
/// its uid. A root process that changes every uid to a non-zero one loses all
/// capabilities, so nothing privileged is kept. Call before spawning threads.
pub fn drop_privileges(user: User) -> io::Result<()> {
    let check = |r: libc::c_int| {
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    // SAFETY: plain system calls with valid arguments.
    unsafe {
        check(libc::setgroups(0, std::ptr::null()))?;
        check(libc::setgid(user.gid))?;
        check(libc::setuid(user.uid))?;
    }
    // Make sure it cannot be undone.
    if user.uid != 0 && unsafe { libc::setuid(0) } == 0 {
        return Err(io::Error::other(
            "setuid(0) still succeeds after dropping privileges",
        ));
    }
    Ok(())
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
        let msg = String::from_utf8_lossy(&out.stderr).trim().to_owned();
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
