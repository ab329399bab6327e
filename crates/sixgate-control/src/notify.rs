//! Readiness for systemd (`Type=notify`, sd_notify(3)): one datagram with
//! `READY=1` once the gateway forwards, `STOPPING=1` when it begins to stop.
//! The protocol is a datagram of `KEY=VALUE` lines to the Unix socket named in
//! `$NOTIFY_SOCKET` (a leading `@` means the abstract namespace); without that
//! variable there is no service manager to tell, and nothing is sent.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;

/// The environment variable systemd sets for `Type=notify` services.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Send `state` (e.g. `"READY=1"`) to `$NOTIFY_SOCKET`. `Ok(false)`: not run by
/// a service manager.
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var_os(NOTIFY_SOCKET) {
        Some(path) if !path.is_empty() => notify_to(&path, state).map(|()| true),
        _ => Ok(false),
    }
}

/// Send `state` to the notification socket `socket`.
pub fn notify_to(socket: &OsStr, state: &str) -> io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let bytes = socket.as_bytes();
    let sent = if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        sock.send_to_addr(state.as_bytes(), &addr)?
    } else {
        sock.send_to(state.as_bytes(), socket)?
    };
    if sent != state.len() {
        return Err(io::Error::other("short write to the notification socket"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sd_notify_sends_one_datagram_per_state() {
        let dir = std::env::temp_dir().join(format!("sixgate-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        notify_to(path.as_os_str(), "READY=1").unwrap();
        notify_to(path.as_os_str(), "STOPPING=1").unwrap();
        let mut b = [0u8; 64];
        let n = rx.recv(&mut b).unwrap();
        assert_eq!(&b[..n], b"READY=1");
        let n = rx.recv(&mut b).unwrap();
        assert_eq!(&b[..n], b"STOPPING=1");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sd_notify_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("sixgate-notify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        notify_to(OsStr::new(&format!("@{name}")), "READY=1").unwrap();
        let mut b = [0u8; 16];
        let n = rx.recv(&mut b).unwrap();
        assert_eq!(&b[..n], b"READY=1");
    }

    #[test]
    fn a_missing_socket_is_an_error_not_a_panic() {
        assert!(notify_to(OsStr::new("/nonexistent/sixgate.sock"), "READY=1").is_err());
    }
}
