//! `noexec` for the write set: the one kernel control that stops `mmap(PROT_EXEC)` of a file
//! (the loader, `dlopen`, iconv modules, FFI), whoever asks. Landlock checks execute only at
//! `execve`.
//!
//! A root start (the launcher's way) holds `CAP_SYS_ADMIN` only until the session starts: the
//! entrypoint bind-mounts each write-set root that is not a mount of its own onto itself and
//! remounts it `noexec,nosuid,nodev` ([`harden`]); the capability goes with the privilege drop.
//! Whatever the start, [`verify`] then reads `/proc/self/mountinfo`: a strict session whose
//! writable write-set mounts are not all `noexec` refuses to start (`noexec_unavailable`) unless
//! the operator accepted exec mappings (recorded as `reduced:exec-mappings`).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One line of `/proc/self/mountinfo`, the fields this module reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    /// Per-mount options (`rw,nosuid,nodev,noexec,relatime`).
    pub options: Vec<String>,
}

impl Mount {
    pub fn has(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }
    pub fn writable(&self) -> bool {
        !self.has("ro")
    }
}

impl From<execguard_seal::mountinfo::Mount> for Mount {
    fn from(m: execguard_seal::mountinfo::Mount) -> Self {
        Mount {
            mount_point: m.point,
            options: m.options.split(',').map(str::to_owned).collect(),
        }
    }
}

/// Parses `/proc/self/mountinfo` bytes (the seal's parser: names are bytes, escapes undone).
pub fn parse_mountinfo(bytes: &[u8]) -> Vec<Mount> {
    execguard_seal::mountinfo::parse_mountinfo(bytes)
        .into_iter()
        .map(Mount::from)
        .collect()
}

/// The mount that holds `path` (the last listed mount whose point is `path` or above it: later
/// mounts cover earlier ones).
pub fn containing<'m>(mounts: &'m [Mount], path: &Path) -> Option<&'m Mount> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())
}

/// What one writable write-set mount has, as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountCheck {
    /// The write-set root it serves.
    pub root: PathBuf,
    pub mount_point: PathBuf,
    pub noexec: bool,
    pub nosuid: bool,
    pub nodev: bool,
}

/// Every writable mount of the write set: the mount holding each root (the caller passes the
/// roots that exist) and every mount beneath it. `exec_allowed` roots (the workspace outside strict) are left out: exec there is
/// what those profiles stand for. Read-only mounts cannot be written, so they are not listed.
pub fn write_set_mounts(
    mounts: &[Mount],
    roots: &[PathBuf],
    exec_allowed: &[PathBuf],
) -> Vec<MountCheck> {
    let mut out: Vec<MountCheck> = Vec::new();
    for root in roots {
        if exec_allowed.contains(root) {
            continue;
        }
        let below = mounts
            .iter()
            .filter(|m| m.mount_point.starts_with(root) && m.mount_point != *root);
        // A root no listed mount holds (its mount lies outside this process's root directory,
        // a chroot) has unknown flags: counted as exec, so a strict start fails closed.
        if containing(mounts, root).is_none() {
            out.push(MountCheck {
                root: root.clone(),
                mount_point: root.clone(),
                noexec: false,
                nosuid: false,
                nodev: false,
            });
        }
        for m in containing(mounts, root).into_iter().chain(below) {
            if !m.writable() || out.iter().any(|c| c.mount_point == m.mount_point) {
                continue;
            }
            out.push(MountCheck {
                root: root.clone(),
                mount_point: m.mount_point.clone(),
                noexec: m.has("noexec"),
                nosuid: m.has("nosuid"),
                nodev: m.has("nodev"),
            });
        }
    }
    out
}

/// Reads `/proc/self/mountinfo`.
pub fn read_mounts() -> std::io::Result<Vec<Mount>> {
    Ok(execguard_seal::mountinfo::read_mountinfo()?
        .into_iter()
        .map(Mount::from)
        .collect())
}

/// The flags a remount of `m` must give to keep them (the seal's map, from `statvfs`).
fn mount_flags(m: &Mount) -> std::io::Result<libc::c_ulong> {
    execguard_seal::kept_flags(&m.mount_point).map_err(std::io::Error::other)
}

/// `mount(source, target, NULL, flags, NULL)`.
pub(crate) fn mount_call(
    source: &Path,
    target: &Path,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let src = CString::new(source.as_os_str().as_bytes())?;
    let dst = CString::new(target.as_os_str().as_bytes())?;
    // SAFETY: both strings are NUL-terminated and live across the call; fstype and data are NULL,
    // which mount(2) accepts for bind mounts and remounts.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        execguard_seal::mountinfo::forget();
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Adds `nosuid,nodev` (and `noexec`, which a root in `exec_allowed` loses instead) to every
/// writable write-set mount that lacks them; a root that is not a mount of its own is
/// bind-mounted onto itself first, so only it changes. Needs `CAP_SYS_ADMIN`; returns the first failure (the
/// verification then reports what the kernel has).
pub fn harden(roots: &[PathBuf], exec_allowed: &[PathBuf]) -> std::io::Result<()> {
    for root in roots {
        let mounts = read_mounts()?;
        let allow_exec = exec_allowed.contains(root);
        if !root.is_dir() {
            continue;
        }
        let holder = containing(&mounts, root);
        // An exec-allowed root (development's workspace and /tmp) loses a `noexec` the
        // runtime gave it (docker's --tmpfs), so its programs run.
        let (wanted, unwanted) = if allow_exec {
            (libc::MS_NOSUID | libc::MS_NODEV, libc::MS_NOEXEC)
        } else {
            (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC, 0)
        };
        let settled = |flags: libc::c_ulong| flags & wanted == wanted && flags & unwanted == 0;
        let mut targets: Vec<Mount> = mounts
            .iter()
            .filter(|m| m.mount_point.starts_with(root) && m.mount_point != *root)
            .cloned()
            .collect();
        let needs = match holder {
            None => true,
            Some(h) => h.writable() && !settled(mount_flags(h)?),
        };
        if needs {
            if let Some(holder) = holder.filter(|h| h.mount_point == *root) {
                targets.insert(0, holder.clone());
            } else {
                mount_call(root, root, libc::MS_BIND)?;
                let own = read_mounts()?;
                let Some(m) = containing(&own, root).cloned() else {
                    continue;
                };
                targets.insert(0, m);
            }
        }
        for m in targets {
            if !m.writable() {
                continue;
            }
            let kept = mount_flags(&m)?;
            if settled(kept) {
                continue;
            }
            let flags = libc::MS_REMOUNT | libc::MS_BIND | (kept & !unwanted) | wanted;
            mount_call(Path::new("none"), &m.mount_point, flags)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 0:21 / / ro,relatime master:1 - overlay overlay rw,lowerdir=x
23 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
24 22 0:23 / /tmp rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=524288k
25 22 8:1 /srv/work /workspace rw,relatime - ext4 /dev/vda rw
26 25 0:24 / /workspace/cache rw,relatime - tmpfs tmpfs rw
27 22 0:25 / /state rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw
28 22 8:1 /srv/ro /state/ro ro,relatime - ext4 /dev/vda rw
29 22 8:1 /srv/my\\040dir /my\\040dir rw - ext4 /dev/vda rw
";

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn mountinfo_fields_and_escapes_parse() {
        let m = parse_mountinfo(INFO.as_bytes());
        assert_eq!(m.len(), 8);
        assert_eq!(m[2].mount_point, p("/tmp"));
        assert!(m[2].has("noexec") && m[2].writable());
        assert!(!m[0].writable());
        assert_eq!(m[7].mount_point, p("/my dir"));
    }

    #[test]
    fn the_holder_of_a_path_is_the_deepest_mount_above_it() {
        let m = parse_mountinfo(INFO.as_bytes());
        let at = |x: &str| containing(&m, Path::new(x)).unwrap().mount_point.clone();
        assert_eq!(at("/workspace/src/a.c"), p("/workspace"));
        assert_eq!(at("/workspace/cache/x"), p("/workspace/cache"));
        assert_eq!(at("/var/tmp"), p("/"));
        assert_eq!(at("/tmpx"), p("/"), "a name prefix is not a parent");
    }

    /// Table: which writable mounts of the write set are listed, and with what.
    #[test]
    fn write_set_mounts_lists_every_writable_mount_at_or_below_a_root() {
        let m = parse_mountinfo(INFO.as_bytes());
        let roots = [
            p("/workspace"),
            p("/tmp"),
            p("/state"),
            p("/var/tmp"),
            p("/my dir"),
        ];
        let listed = write_set_mounts(&m, &roots, &[]);
        let got: Vec<(String, bool)> = listed
            .iter()
            .map(|c| (c.mount_point.display().to_string(), c.noexec))
            .collect();
        let want: Vec<(String, bool)> = [
            ("/workspace", false),
            ("/workspace/cache", false),
            ("/tmp", true),
            ("/state", true),
            ("/my dir", false),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), *b))
        .collect();
        // /var/tmp is on the read-only root and /state/ro is read-only: neither can be written.
        assert_eq!(got, want);
        // A root whose exec is allowed (development's workspace) is left out, its submounts too.
        let dev = write_set_mounts(&m, &roots, &[p("/workspace")]);
        assert!(dev.iter().all(|c| c.root != p("/workspace")), "{dev:?}");
        // A root that no visible mount holds (a chroot) counts as exec: strict fails closed.
        let chroot = write_set_mounts(&m[1..], &[p("/var/tmp")], &[]);
        assert_eq!(chroot.len(), 1);
        assert!(!chroot[0].noexec);
    }
}
