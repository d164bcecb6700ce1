//! Every file the hand-back reads, moves or writes, reached with no symlink anywhere on its
//! way (`openat2`, `RESOLVE_NO_SYMLINKS`): the supervisor runs outside the session, as root for
//! a root session, and a link the session put in place of a checkout, a git dir or a hooks
//! directory must lead it nowhere (it would read the operator's other repository as the
//! session's, or move its files). `..` is walked as it is on disk.

use std::ffi::CString;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use execguard_policy::sys::{OpenMode, Sys};

/// `p` opened with no link on the way (`OpenMode::Read`: `O_NONBLOCK`, so a FIFO never blocks;
/// `PathOnly`: an `O_PATH` handle).
pub(crate) fn open(p: &Path, mode: OpenMode) -> io::Result<OwnedFd> {
    let fd = execguard_os::LibcSys
        .open_exact(p.as_os_str().as_bytes(), mode)
        .map_err(|errno| {
            let e = io::Error::from_raw_os_error(errno);
            io::Error::new(
                e.kind(),
                format!("{} (a link on the way is refused): {e}", p.display()),
            )
        })?;
    // SAFETY: open_exact returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Is `p` a directory reached with no link on the way?
pub(crate) fn is_dir(p: &Path) -> bool {
    open(p, OpenMode::PathOnly)
        .map(fs::File::from)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.is_dir())
}

/// The metadata of `p` itself (a link is a link), reached with no link before it.
pub(crate) fn lstat(p: &Path) -> io::Result<fs::Metadata> {
    let parent = p.parent().unwrap_or(Path::new("/"));
    open(parent, OpenMode::PathOnly)?;
    fs::symlink_metadata(p)
}

/// The whole bytes of the regular file `p` when it is at most `max` bytes, with its metadata.
pub(crate) fn read(p: &Path, max: u64) -> io::Result<(Vec<u8>, fs::Metadata)> {
    let mut f = fs::File::from(open(p, OpenMode::Read)?);
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    if m.len() > max {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    }
    let mut bytes = Vec::new();
    (&mut f).take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    }
    Ok((bytes, m))
}

/// The names in the directory `p` (none when it is not one, or a link is on the way), with
/// whether each is a directory (`d_type`: no link is followed).
pub(crate) fn list(p: &Path) -> Vec<(PathBuf, fs::FileType)> {
    if !is_dir(p) {
        return Vec::new();
    }
    match fs::read_dir(p) {
        Ok(rd) => rd
            .flatten()
            .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The entry names of the directory `p` with their types (`d_type`), or `None` when it is no
/// directory reached with no link on the way.
pub(crate) fn entries(p: &Path) -> Option<Vec<(std::ffi::OsString, fs::FileType)>> {
    if !is_dir(p) {
        return None;
    }
    Some(
        fs::read_dir(p)
            .ok()?
            .flatten()
            .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
            .collect(),
    )
}

/// The directory of `p`, opened with no link on the way, and `p`'s name in it.
pub(crate) fn open_parent(p: &Path) -> io::Result<(OwnedFd, CString)> {
    let (Some(dir), Some(name)) = (p.parent(), p.file_name()) else {
        return Err(io::Error::other(format!("{}: no directory", p.display())));
    };
    let name = CString::new(name.as_bytes()).map_err(io::Error::other)?;
    Ok((open(dir, OpenMode::PathOnly)?, name))
}

/// Writes `bytes` as a new file at `p` (mode, then owner): one that appeared at `p` since (a
/// link another session made) fails the write rather than being written through.
pub(crate) fn create(p: &Path, bytes: &[u8], mode: u32, owner: (u32, u32)) -> io::Result<()> {
    let (dir, name) = open_parent(p)?;
    // SAFETY: `dir` is an open directory and `name` NUL-terminated; openat returns a new
    // descriptor or -1.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{}: {e}", p.display())));
    }
    // SAFETY: a new descriptor this function owns.
    let mut f = unsafe { fs::File::from_raw_fd(fd) };
    f.write_all(bytes)?;
    f.set_permissions(fs::Permissions::from_mode(mode))?;
    // Back to its owner when the supervisor is root; a no-op for the same user.
    let _ = std::os::unix::fs::fchown(&f, Some(owner.0), Some(owner.1));
    Ok(())
}

/// Renames `from` to `to` (the entry itself: a symlink moves as it is), both reached with no
/// link on the way.
pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    let (fd_from, old) = open_parent(from)?;
    let (fd_to, new) = open_parent(to)?;
    // SAFETY: both descriptors are open directories and both names NUL-terminated.
    if unsafe {
        libc::renameat(
            fd_from.as_raw_fd(),
            old.as_ptr(),
            fd_to.as_raw_fd(),
            new.as_ptr(),
        )
    } != 0
    {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("{} -> {}: {e}", from.display(), to.display()),
        ));
    }
    Ok(())
}

/// Removes the file `p` (never what a link names).
pub(crate) fn remove_file(p: &Path) -> io::Result<()> {
    let (dir, name) = open_parent(p)?;
    // SAFETY: `dir` is an open directory and `name` NUL-terminated.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the directory `p` (a link in its place fails: mkdir never follows one).
pub(crate) fn mkdir(p: &Path, mode: u32) -> io::Result<()> {
    let (dir, name) = open_parent(p)?;
    // SAFETY: `dir` is an open directory and `name` NUL-terminated.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes a file kept for the operator to read, not to run: mode 0600 (a link is left as it
/// is, never followed).
pub(crate) fn keep_unrunnable(p: &Path) {
    let Ok((dir, name)) = open_parent(p) else {
        return;
    };
    // SAFETY: `dir` is an open directory and `name` NUL-terminated; openat returns a new
    // descriptor or -1.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd >= 0 {
        // SAFETY: a new descriptor this function owns.
        let f = unsafe { fs::File::from_raw_fd(fd) };
        if f.metadata().is_ok_and(|m| m.is_file()) {
            let _ = f.set_permissions(fs::Permissions::from_mode(0o600));
        }
    }
}

/// The exclusive lock of one repository, held from the record at session start to the end of
/// its hand-back (`flock` on its common directory, reached with no link on the way): a second
/// session in the same repository waits, so it never records what the first planted as the
/// operator's, nor restores it after the first's hand-back.
#[derive(Debug)]
pub struct RepositoryLock {
    _fd: OwnedFd,
}

impl RepositoryLock {
    pub(crate) fn take(common_dir: &Path) -> io::Result<RepositoryLock> {
        let fd = open(common_dir, OpenMode::Read)?;
        // SAFETY: flock takes an open descriptor and a flag.
        if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            eprintln!(
                "execguard: waiting for the other session working in {} to end (one session per repository, from its record to its hand-back)",
                common_dir.display()
            );
            loop {
                // SAFETY: as above, blocking.
                if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX) } == 0 {
                    break;
                }
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    return Err(e);
                }
            }
        }
        Ok(RepositoryLock { _fd: fd })
    }
}

/// The device and inode of the directory `p`, reached with no link on the way.
pub(crate) fn identity(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::File::from(open(p, OpenMode::PathOnly).ok()?)
        .metadata()
        .ok()?;
    Some((m.dev(), m.ino()))
}
