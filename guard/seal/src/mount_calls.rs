//! The raw calls on mounts and names: `mount`, `mount_setattr`, `statx` for a mount's id,
//! `statvfs` for its flags, and `openat2` for a name opened without following links.

use crate::error::SealError;
use crate::mountinfo::{forget, Mount};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `path` opened `O_PATH`: through symlinks when `follow`, else only when none of its
/// components is one (`execguard_os::open_no_links`).
pub(crate) fn open_path(path: &Path, follow: bool) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    if follow {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(path)?;
        return Ok(file.into());
    }
    let fd = execguard_os::open_no_links(
        path.as_os_str().as_bytes(),
        libc::O_PATH | libc::O_CLOEXEC,
        0,
    )
    .map_err(std::io::Error::from_raw_os_error)?;
    // SAFETY: the descriptor was just opened here and nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

fn cstr(p: &Path) -> Result<CString, SealError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SealError::Noexec {
        detail: format!("{}: a NUL in the path", p.display()),
    })
}

pub(crate) fn fail(step: &str, p: &Path) -> SealError {
    SealError::Noexec {
        detail: format!(
            "{step} {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        ),
    }
}

/// `mount(src, dst, NULL, flags, NULL)`.
pub(crate) fn mount(src: Option<&Path>, dst: &Path, flags: libc::c_ulong) -> Result<(), SealError> {
    let dst_c = cstr(dst)?;
    let src_c = src.map(cstr).transpose()?;
    // SAFETY: every pointer is a valid NUL-terminated string or NULL, as mount(2) accepts;
    // the call changes only this process's (private) mount namespace.
    let rc = unsafe {
        libc::mount(
            src_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            dst_c.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(fail(if src.is_some() { "bind" } else { "remount" }, dst));
    }
    forget();
    Ok(())
}

/// Mounts an empty, read-only tmpfs on `dir`: what it holds cannot be read, listed or reached
/// from the session (the seccomp filter refuses the umount that would uncover it).
pub(crate) fn hide(dir: &Path) -> Result<(), SealError> {
    let dst = cstr(dir)?;
    // SAFETY: every pointer is a valid NUL-terminated string; the call changes only this
    // process's (private) mount namespace.
    let rc = unsafe {
        libc::mount(
            c"execguard-hidden".as_ptr(),
            dst.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"size=4k,mode=000".as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(fail("hide", dir));
    }
    forget();
    Ok(())
}

/// `mount_setattr`'s flags (`<linux/mount.h>`), which the libc crate does not name.
pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;

pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;

pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;

pub(crate) const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// A descriptor of what `path` reaches now, and the id of its mount (the ids of
/// `/proc/self/mountinfo`).
pub(crate) fn reach(path: &Path) -> std::io::Result<(std::os::fd::OwnedFd, u64)> {
    use std::os::fd::AsRawFd;
    let fd = open_path(path, true)?;
    // SAFETY: statx writes only into the zeroed struct it is given.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open, the empty path is NUL-terminated, `st` is writable.
    let rc = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_MNT_ID,
            &mut st,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if st.stx_mask & libc::STATX_MNT_ID == 0 {
        return Err(std::io::Error::from_raw_os_error(libc::ENOSYS));
    }
    Ok((fd, st.stx_mnt_id))
}

/// The flags (`ST_*`) of the mount `fd` is on, as `statvfs` gives them.
pub(crate) fn flags_of(fd: &std::os::fd::OwnedFd) -> Option<libc::c_ulong> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatvfs writes only into the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is writable.
    (unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut st) } == 0).then_some(st.f_flag)
}

/// Adds `attrs` to the mount that `table` places at `point`, through a descriptor of what the
/// name reaches, checked to be that mount. The write set is shared with every other session: a
/// directory above `point` that another process moves between the table's read and this step
/// must not lead the name to another mount and leave this one executable. Adding
/// (`mount_setattr`, Linux 5.12) keeps every flag the mount has, locked ones included.
pub(crate) fn add_attrs_at(point: &Path, table: &[Mount], attrs: u64) -> Result<(), SealError> {
    use std::os::fd::AsFd;
    let (fd, id) = match reach(point) {
        Ok(reached) => reached,
        Err(_) if gone(point, table) => return Ok(()),
        Err(e) => {
            return Err(SealError::Noexec {
                detail: format!("{}: {e}", point.display()),
            })
        }
    };
    if !table
        .iter()
        .any(|m| u64::from(m.id) == id && m.point == point)
    {
        if gone(point, table) {
            return Ok(());
        }
        return Err(SealError::Noexec {
            detail: format!(
                "{}: a directory above this mount was moved while the session was sealed; start the session again",
                point.display()
            ),
        });
    }
    set_attrs(fd.as_fd(), attrs).map_err(|e| SealError::Noexec {
        detail: format!("mount_setattr {}: {e}", point.display()),
    })?;
    forget();
    Ok(())
}

/// Did every mount `table` places at `point` leave this namespace since? The kernel detaches
/// a mount whose point is removed outside (another session's socket, covered by the world,
/// going away with it): it is reached by no name, so there is nothing left to change. A mount
/// moved by a directory above it stays in the table and is still refused.
fn gone(point: &Path, table: &[Mount]) -> bool {
    forget();
    let Ok(now) = crate::mountinfo::read_mountinfo() else {
        return false;
    };
    let mut placed = table.iter().filter(|m| m.point == point).peekable();
    placed.peek().is_some() && placed.all(|m| !now.iter().any(|n| n.id == m.id))
}

/// Adds `attrs` to the mount `fd` is on (`mount_setattr(2)`, Linux 5.12): every flag the
/// mount has stays, locked ones included.
pub(crate) fn set_attrs(fd: std::os::fd::BorrowedFd<'_>, attrs: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    /// `struct mount_attr`.
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `fd` is open for the call (borrowed), the empty path is NUL-terminated, and
    // `attr` is a readable mount_attr of the size passed; the call changes only the mount
    // `fd` is on, in this process's own namespace (or a detached one).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// statvfs's flag for a `nosymfollow` mount (Linux 5.10, `<linux/statfs.h>`), which the libc
/// crate does not name. A remount that left it out would follow symlinks there again.
const ST_NOSYMFOLLOW: libc::c_ulong = 0x2000;

/// The flags of the mount `path` reaches, as a remount of it must give them to keep them: a
/// mount inherited into a user namespace has them locked. (Also the container's, for its
/// remounts: one map of the flags.)
pub fn kept_flags(path: &Path) -> Result<libc::c_ulong, SealError> {
    let c = cstr(path)?;
    // SAFETY: statvfs writes only into the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` is writable.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(fail("statvfs", path));
    }
    let map = [
        (libc::ST_RDONLY, libc::MS_RDONLY),
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
        (ST_NOSYMFOLLOW, libc::MS_NOSYMFOLLOW),
    ];
    let flags = map
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms);
    // statvfs has no flag for strictatime: it is neither noatime nor relatime. A remount that
    // does not say so gets relatime, which a locked mount refuses (EPERM).
    Ok(match st.f_flag & (libc::ST_NOATIME | libc::ST_RELATIME) {
        0 => flags | libc::MS_STRICTATIME,
        _ => flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mountinfo::{mount_of, read_mountinfo};

    /// `kept_flags` (statvfs) against the kernel's other account of the same flags, the option
    /// strings of `/proc/self/mountinfo`, for every mount of this process that a path reaches.
    #[test]
    fn kept_flags_match_the_mount_table() {
        let mounts = read_mountinfo().unwrap();
        let names = [
            ("ro", libc::MS_RDONLY),
            ("nosuid", libc::MS_NOSUID),
            ("nodev", libc::MS_NODEV),
            ("noexec", libc::MS_NOEXEC),
            ("noatime", libc::MS_NOATIME),
            ("nodiratime", libc::MS_NODIRATIME),
            ("relatime", libc::MS_RELATIME),
            ("nosymfollow", libc::MS_NOSYMFOLLOW),
        ];
        let mut checked = 0;
        for m in &mounts {
            // Only the mount a path reaches now (not one covered by a later mount).
            if !std::ptr::eq(mount_of(&mounts, &m.point).unwrap(), m) {
                continue;
            }
            let Ok(kept) = kept_flags(&m.point) else {
                continue; // not reachable by this process (a permission, a gone path)
            };
            let opts: Vec<&str> = m.options.split(',').collect();
            let mut want = names
                .iter()
                .filter(|(n, _)| opts.contains(n))
                .fold(0, |acc, (_, f)| acc | f);
            if !opts.contains(&"noatime") && !opts.contains(&"relatime") {
                want |= libc::MS_STRICTATIME;
            }
            assert_eq!(kept, want, "{}: {}", m.point.display(), m.options);
            checked += 1;
        }
        assert!(checked > 0, "no mount was checked");
    }
}
