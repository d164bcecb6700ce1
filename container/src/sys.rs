//! File-system primitives that never follow symlinks: every path is walked one component at a
//! time with `openat(.., O_NOFOLLOW)` relative to the directory fd of its parent, so a symlink
//! anywhere in the path is refused (`ELOOP`/`ENOTDIR`) instead of followed, and nothing is checked
//! by name and then used by name.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path};

fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)` for a single path component.
pub fn openat(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    if name.is_empty() || name.as_bytes().contains(&b'/') || name == ".." {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let c = cstring(name)?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call and `dir` is a live fd
    // borrowed for the duration of the call; openat does not retain either pointer.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the directory `name` below `dir` without following a symlink.
pub fn open_dir_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    openat(dir, name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
}

/// Opens an absolute path, refusing a symlink in any component (including the last).
/// `flags` apply to the last component; O_NOFOLLOW and O_CLOEXEC are always added.
pub fn open_nofollow(path: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let (parent, name) = open_parent(path)?;
    openat(parent_fd(&parent), name, flags, mode)
}

/// Opens an absolute directory path without following symlinks in any component.
pub fn open_dir_nofollow(path: &Path) -> io::Result<OwnedFd> {
    if path == Path::new("/") {
        return open_root();
    }
    open_nofollow(path, libc::O_RDONLY | libc::O_DIRECTORY, 0)
}

fn open_root() -> io::Result<OwnedFd> {
    let c = CString::new("/").map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: open returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn parent_fd(fd: &OwnedFd) -> BorrowedFd<'_> {
    use std::os::fd::AsFd;
    fd.as_fd()
}

/// Opens the parent directory of an absolute path (walking without symlinks) and returns it with
/// the last component.
pub fn open_parent(path: &Path) -> io::Result<(OwnedFd, &OsStr)> {
    if !path.is_absolute() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut parts: Vec<&OsStr> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => parts.push(n),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(io::Error::from_raw_os_error(libc::EINVAL))
            }
        }
    }
    let Some(last) = parts.pop() else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let mut dir = open_root()?;
    for p in parts {
        dir = open_dir_at(parent_fd(&dir), p)?;
    }
    Ok((dir, last))
}

/// `mkdirat(dir, name, mode)`; `Ok(false)` when it already existed.
pub fn mkdirat(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> io::Result<bool> {
    let c = cstring(name)?;
    // SAFETY: `c` is NUL-terminated and outlives the call; `dir` is a live borrowed fd.
    let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EEXIST) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// `unlinkat(dir, name, 0)`; a missing file is not an error.
pub fn unlinkat(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let c = cstring(name)?;
    // SAFETY: `c` is NUL-terminated and outlives the call; `dir` is a live borrowed fd.
    let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ENOENT) {
        Ok(())
    } else {
        Err(err)
    }
}

/// `renameat2` within one directory; with `no_replace` an existing target is `EEXIST`.
/// Renaming replaces a symlink at the target itself and never follows it.
pub fn renameat(dir: BorrowedFd<'_>, from: &OsStr, to: &OsStr, no_replace: bool) -> io::Result<()> {
    let f = cstring(from)?;
    let t = cstring(to)?;
    let flags = if no_replace {
        libc::RENAME_NOREPLACE
    } else {
        0
    };
    // SAFETY: both names are NUL-terminated and outlive the call; `dir` is a live borrowed fd.
    let rc = unsafe {
        libc::renameat2(
            dir.as_raw_fd(),
            f.as_ptr(),
            dir.as_raw_fd(),
            t.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `fchown` on an open descriptor.
pub fn fchown(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: `fd` is a live borrowed descriptor; fchown takes plain integers.
    let rc = unsafe { libc::fchown(fd.as_raw_fd(), uid, gid) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `fchmod` on an open descriptor.
pub fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    // SAFETY: `fd` is a live borrowed descriptor; fchmod takes plain integers.
    let rc = unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Metadata of an open descriptor (fstat).
pub fn fstat(fd: &OwnedFd) -> io::Result<std::fs::Metadata> {
    let dup = fd.try_clone()?;
    File::from(dup).metadata()
}

/// What a freshly written file should look like.
#[derive(Clone, Copy, Debug)]
pub struct NewFile {
    pub mode: u32,
    /// `Some((uid, gid))` to chown the file before it becomes visible.
    pub owner: Option<(u32, u32)>,
    /// Refuse to replace an existing target (write-once).
    pub no_replace: bool,
}

/// Writes `contents` to `name` in `dir` atomically: a temporary file created with
/// `O_CREAT|O_EXCL|O_NOFOLLOW`, fully written, chmod/chown-ed and fsync-ed, then renamed into
/// place. Readers see the old file or the complete new one, never a partial one.
pub fn write_atomic_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    contents: &[u8],
    new: NewFile,
) -> io::Result<()> {
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".tmp{}", std::process::id()));
    // A stale temporary from an earlier crash is removed (unlinkat never follows symlinks).
    unlinkat(dir, &tmp)?;
    let fd = openat(
        dir,
        &tmp,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        0o600,
    )?;
    let mut file = File::from(fd);
    let result = (|| {
        file.write_all(contents)?;
        {
            use std::os::fd::AsFd;
            if let Some((uid, gid)) = new.owner {
                fchown(file.as_fd(), uid, gid)?;
            }
            fchmod(file.as_fd(), new.mode)?;
        }
        file.sync_all()?;
        renameat(dir, &tmp, name, new.no_replace)
    })();
    if result.is_err() {
        // Best effort: the temporary name is ours; the error that matters is returned below.
        if let Err(cleanup) = unlinkat(dir, &tmp) {
            eprintln!("execguard: could not remove temporary {tmp:?}: {cleanup}");
        }
    }
    result
}

/// Reads a whole file from an fd, refusing anything larger than `limit` bytes.
pub fn read_limited(fd: OwnedFd, limit: usize) -> io::Result<Vec<u8>> {
    execguard_load::read::read_capped(File::from(fd), limit)
}

/// Effective uid of this process.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Pid of this process.
pub fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

/// Pid of the parent process.
pub fn getppid() -> i32 {
    // SAFETY: getppid has no preconditions and cannot fail.
    unsafe { libc::getppid() }
}

/// True when `meta` is owned by root and writable by nobody but its owner (the one trust rule,
/// [`execguard_os::trusted_mode`]).
pub fn is_root_owned_not_shared(meta: &std::fs::Metadata) -> bool {
    execguard_os::trusted_mode(meta.uid(), meta.mode())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn tempdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("execguard-sys-{tag}-{}", std::process::id()));
        let _ignored = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn symlinks_are_refused_in_every_component() {
        let d = tempdir("links");
        std::fs::create_dir(d.join("real")).unwrap();
        std::fs::write(d.join("real/file"), b"x").unwrap();
        std::os::unix::fs::symlink(d.join("real"), d.join("link")).unwrap();
        std::os::unix::fs::symlink(d.join("real/file"), d.join("real/flink")).unwrap();
        assert!(open_nofollow(&d.join("real/file"), libc::O_RDONLY, 0).is_ok());
        let mid = open_nofollow(&d.join("link/file"), libc::O_RDONLY, 0).unwrap_err();
        assert!(
            matches!(mid.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)),
            "{mid}"
        );
        let last = open_nofollow(&d.join("real/flink"), libc::O_RDONLY, 0).unwrap_err();
        assert_eq!(last.raw_os_error(), Some(libc::ELOOP));
        assert!(open_nofollow(Path::new("relative"), libc::O_RDONLY, 0).is_err());
        assert!(open_nofollow(&d.join("real/../real/file"), libc::O_RDONLY, 0).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn atomic_write_replaces_a_symlink_instead_of_following_it() {
        let d = tempdir("atomic");
        std::fs::write(d.join("victim"), b"keep").unwrap();
        std::os::unix::fs::symlink(d.join("victim"), d.join("target")).unwrap();
        let dir = open_dir_nofollow(&d).unwrap();
        let new = NewFile {
            mode: 0o444,
            owner: None,
            no_replace: false,
        };
        write_atomic_at(dir.as_fd(), OsStr::new("target"), b"new\n", new).unwrap();
        assert_eq!(std::fs::read(d.join("victim")).unwrap(), b"keep");
        assert_eq!(std::fs::read(d.join("target")).unwrap(), b"new\n");
        assert!(!std::fs::symlink_metadata(d.join("target"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::metadata(d.join("target")).unwrap().mode() & 0o777,
            0o444
        );
        let once = NewFile {
            no_replace: true,
            ..new
        };
        let err = write_atomic_at(dir.as_fd(), OsStr::new("target"), b"again", once).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EEXIST));
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "no temporary left behind"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
