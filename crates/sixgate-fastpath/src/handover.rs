//! The fast path across a restart (`[daemon] fastpath_handover`,
//! docs/restart.md, "With the fast path"): a stopping daemon pins its
//! program's links in bpffs instead of detaching them
//! ([`crate::FastPath::hand_over`]), so the kernel goes on translating the
//! established flows in the program's session maps while no daemon runs;
//! the next start finds them here ([`HandedOver::find`]) and replaces the
//! old program with its own in each link in one `BPF_LINK_UPDATE`
//! ([`crate::FastPath::take_over`]), once its workers have put the restored
//! sessions into the new program's maps. Whatever it does not take over it
//! releases: the old program leaves those interfaces.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use aya::programs::links::{FdLink, PinnedLink};

use crate::Hook;

/// Where the links of the daemon whose TUN device is `device` are pinned,
/// under `root` (`[daemon] fastpath_pin_dir`): one directory per network
/// namespace and device, so that daemons in other namespaces (a bpf file
/// system is the host's, not a namespace's) or with other devices never
/// meet.
pub fn dir_for(root: &Path, device: &str) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let netns = std::fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino());
    root.join(format!("net{netns}-{device}"))
}

/// `BPF_FS_MAGIC`: `statfs`'s type of a bpf file system.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// Make `dir` (mode 0700) while privileged, for the stop to pin into, give
/// it to `owner` (`[daemon] user`), who pins at the stop, and open it: the
/// stop pins through `/proc/self/fd/N` ([`pin_path`]), since a user cannot
/// even look into `/sys/fs/bpf` (mode 1700 root). Refused when it is not on
/// a bpf file system (under `ip netns exec`, which mounts a sysfs of its
/// own, `/sys/fs/bpf` is not).
pub fn prepare_dir(dir: &Path, owner: Option<(u32, u32)>) -> Result<OwnedFd, String> {
    let parent = dir.parent().unwrap_or(dir);
    let mut up = parent;
    // The nearest existing ancestor tells the file system.
    while !up.exists() {
        up = up.parent().unwrap_or(Path::new("/"));
    }
    if !on_bpf_fs(up) {
        return Err(format!(
            "{} is not on a bpf file system (mount one there: `mount -t bpf bpf DIR`, or \
             set [daemon] fastpath_pin_dir)",
            parent.display()
        ));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))
            .map_err(|e| format!("cannot give {} to [daemon] user: {e}", dir.display()))?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map(OwnedFd::from)
        .map_err(|e| format!("cannot open {}: {e}", dir.display()))
}

/// The directory [`prepare_dir`] opened, as a path this process can pin
/// into whatever user it runs as: `/proc/self/fd/N` (a process may always
/// follow its own descriptors; only the directory's own mode is checked).
pub fn pin_path(dir: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()))
}

fn on_bpf_fs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path and a zeroed statfs to fill.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == BPF_FS_MAGIC
    }
}

/// The pin's file name for `hook` on `interface`.
pub(crate) fn pin_name(hook: Hook, interface: &str) -> String {
    let tag = match hook {
        Hook::Tc => "tc",
        Hook::Xdp => "xdp",
    };
    format!("{tag}-{interface}")
}

/// The links a stopped run left pinned for this start, unpinned at once
/// (while privileged: [`HandedOver::find`] runs before the privilege drop):
/// this process's descriptors hold them, so the old program goes on until
/// they are taken over or dropped, and a crash of this start releases them.
#[derive(Default)]
pub struct HandedOver {
    links: Vec<(Hook, String, FdLink)>,
    /// Pins that could not be removed (no permission): they keep their link,
    /// whatever this process does with it.
    pub stuck: Vec<PathBuf>,
}

impl HandedOver {
    /// The links pinned in `dir` (none when it is missing). A file that is
    /// not a link is left alone.
    pub fn find(dir: &Path) -> HandedOver {
        let mut found = HandedOver::default();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return found;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        names.sort();
        for name in names {
            let (hook, iface) = match name.split_once('-') {
                Some(("tc", i)) => (Hook::Tc, i),
                Some(("xdp", i)) => (Hook::Xdp, i),
                _ => continue,
            };
            let path = dir.join(&name);
            if let Ok(pinned) = PinnedLink::from_pin(&path) {
                let link = match std::fs::remove_file(&path) {
                    Ok(()) => FdLink::from(pinned),
                    Err(_) => {
                        found.stuck.push(path);
                        FdLink::from(pinned)
                    }
                };
                found.links.push((hook, iface.to_owned(), link));
            }
        }
        found
    }

    /// Nothing was handed over.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The interfaces with a link, of either hook.
    pub fn interfaces(&self) -> impl Iterator<Item = &str> {
        self.links.iter().map(|(_, i, _)| i.as_str())
    }

    /// The link of `hook` on `interface`, to take over.
    pub(crate) fn take(&mut self, hook: Hook, interface: &str) -> Option<FdLink> {
        let at = self
            .links
            .iter()
            .position(|(h, i, _)| *h == hook && i == interface)?;
        Some(self.links.swap_remove(at).2)
    }

    /// Drop what was not taken over: each link detaches with its last
    /// descriptor, its program with it. Returns the interfaces the old
    /// program left, as "HOOK on IFACE".
    pub fn release(&mut self) -> Vec<String> {
        self.links
            .drain(..)
            .map(|(hook, iface, _)| format!("{} on {iface}", hook.name()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/restart.md: one directory per network namespace and device.
    #[test]
    fn the_directory_names_namespace_and_device() {
        let root = Path::new("/sys/fs/bpf/sixgate");
        let d = dir_for(root, "sixgate0");
        let s = d.to_string_lossy();
        assert!(s.starts_with("/sys/fs/bpf/sixgate/net"), "{s}");
        assert!(s.ends_with("-sixgate0"), "{s}");
        assert_ne!(dir_for(root, "sixgate1"), d);
        assert_eq!(pin_name(Hook::Tc, "eth0"), "tc-eth0");
        assert_eq!(pin_name(Hook::Xdp, "eth0"), "xdp-eth0");
    }

    /// A missing directory hands nothing over; files that are not links are
    /// not taken for links.
    #[test]
    fn nothing_pinned_hands_nothing_over() {
        let h = HandedOver::find(Path::new("/nonexistent/sixgate-handover"));
        assert!(h.is_empty());
        let dir = std::env::temp_dir().join(format!("sixgate-handover-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("tc-eth0"), b"not a link").unwrap();
        let mut h = HandedOver::find(&dir);
        assert!(h.is_empty());
        assert!(h.release().is_empty());
        // Not a bpf file system: refused, saying so.
        let e = prepare_dir(&dir.join("net1-x"), None).unwrap_err();
        assert!(e.contains("not on a bpf file system"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
