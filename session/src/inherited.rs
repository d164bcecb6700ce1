//! The descriptors a session inherits: which of them write a file (those files join the write
//! set) and, once the session is sealed, each one opened again through the session's mounts
//! (or copied, sealed) so that none leads through the old, executable mounts.

use anyhow::{bail, Result};
use std::path::PathBuf;

/// A descriptor this process passes on (no close-on-exec), with its file (judged by the
/// descriptor's own file, whatever its name says).
struct Inherited {
    fd: i32,
    /// What `/proc/self/fd/N` names it: deleted files and memfds have no real path.
    path: PathBuf,
    status_flags: i32,
    file: std::fs::Metadata,
}

impl Inherited {
    /// Open for writing on a regular file: through it a session could write a program into a
    /// file on the execute side, then load it by `/proc/self/fd/N`.
    fn writes_a_file(&self) -> bool {
        self.status_flags & libc::O_ACCMODE != libc::O_RDONLY && self.file.is_file()
    }
}

fn inherited() -> Vec<Inherited> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    // The directory's own descriptor is listed too (close-on-exec, so skipped below).
    entries
        .flatten()
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse::<i32>().ok()?;
            // SAFETY: fcntl on a descriptor number only reads its flags; a closed one fails.
            let (fd_flags, status_flags) = unsafe {
                (
                    libc::fcntl(fd, libc::F_GETFD),
                    libc::fcntl(fd, libc::F_GETFL),
                )
            };
            if fd_flags < 0 || status_flags < 0 || fd_flags & libc::FD_CLOEXEC != 0 {
                return None;
            }
            let file = {
                use std::os::fd::FromRawFd;
                // SAFETY: `fd` is open (fcntl answered); the File is never dropped, so the
                // descriptor it borrows stays open.
                let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
                f.metadata().ok()?
            };
            // Only files, directories and O_PATH descriptors are ever opened again or named
            // in a refusal. A name that cannot be read (longer than PATH_MAX) is no name:
            // never skipped.
            let named = file.is_file() || file.is_dir() || status_flags & libc::O_PATH != 0;
            let path = if named {
                std::fs::read_link(e.path())
                    .unwrap_or_else(|e| PathBuf::from(format!("(no name: {e})")))
            } else {
                PathBuf::from("(not a file)")
            };
            Some(Inherited {
                fd,
                path,
                status_flags,
                file,
            })
        })
        .collect()
}

fn inherited_writers() -> Vec<Inherited> {
    inherited()
        .into_iter()
        .filter(Inherited::writes_a_file)
        .collect()
}

pub(crate) fn inherited_writable_files() -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for w in inherited_writers() {
        if !w.path.is_absolute() || !w.path.is_file() {
            // Deleted, a memfd or an O_TMPFILE: no name the partition could cover, so a
            // program written through it could be run from /proc/self/fd.
            bail!(
                "inherited_fd_unnamed: descriptor {fd} is open for writing on a file with no name on disk ({}); close it before execguard run (e.g. {fd}>&-)",
                w.path.display(),
                fd = w.fd
            );
        }
        // The kernel's name for it: canonical, and kept as it is now.
        crate::paths::remember_canonical(&w.path);
        out.push(w.path);
    }
    Ok(out)
}

/// An inherited descriptor opened before the session's `noexec` binds still refers to the
/// file through its old mount, where the loader may map it executable (`ld.so
/// /proc/self/fd/3`), or a program that maps it itself (FFI `mmap`) after rewriting the file;
/// a directory's still leads into the old mounts (`/proc/self/fd/3/x`). So each is replaced,
/// same number, access and flags, by a description through the session's mounts:
/// - every directory and `O_PATH` descriptor, and every file opened for appending (none
///   carries an offset that matters), opened again by its name;
/// - when `carry` can take the new descriptions to the supervisor ([`crate::carry`]), every
///   other regular file the session's user could write ([`session_could_write`]), from the
///   offset the old one had: opened again by its name, or, when no name leads to it any more
///   (deleted, a memfd, a detached mount, a name longer than `PATH_MAX`) and the descriptor
///   only reads, a sealed copy of it. Without `carry` (an unsupervised session) such a file is
///   left as it is (README, known limits).
///
/// Descriptors that shared one description (`>log 2>&1`) share the new one. A descriptor that
/// cannot be replaced refuses the session.
pub(crate) fn reopen_inherited(
    carry: Option<&std::os::fd::OwnedFd>,
) -> Result<(), execguard_seal::SealError> {
    let all = inherited();
    // Each takes the new description of the first that shares its own, compared before
    // anything is replaced.
    let first_sharing: Vec<Option<usize>> = (0..all.len())
        .map(|i| (0..i).find(|&j| same_description(&all[j], &all[i])))
        .collect();
    let mut replaced = vec![false; all.len()];
    let mut carried = Vec::new();
    for (i, d) in all.iter().enumerate() {
        if let Some(first) = first_sharing[i] {
            if replaced[first] {
                // SAFETY: both are open descriptors of this single-threaded process; dup2
                // replaces `d.fd` atomically with the description `all[first].fd` now has.
                unsafe { libc::dup2(all[first].fd, d.fd) };
            }
            continue;
        }
        let walks = d.file.is_dir() || d.status_flags & libc::O_PATH != 0;
        let appends = d.writes_a_file() && d.status_flags & libc::O_APPEND != 0;
        let carries =
            !walks && !appends && d.file.is_file() && carry.is_some() && session_could_write(d);
        if !walks && !appends && !carries {
            continue;
        }
        let reads_only = d.status_flags & libc::O_ACCMODE == libc::O_RDONLY;
        let new = match (open_again(d, walks, appends), carries && reads_only) {
            (Some(new), _) => new,
            (None, true) => sealed_copy(d).map_err(|e| execguard_seal::SealError::Apply {
                step: "copy an inherited file that no name leads to any more",
                detail: format!(
                    "descriptor {fd} ({}): {e}; close it before execguard run (e.g. {fd}<&-), or pass the file through a pipe",
                    d.path.display(),
                    fd = d.fd
                ),
            })?,
            (None, false) if walks || carries => {
                return Err(execguard_seal::SealError::Apply {
                    step: "open an inherited descriptor again through the session's mounts",
                    detail: format!(
                        "descriptor {fd} ({}) no longer leads there, or is a file with no name on disk; close it before execguard run (e.g. {fd}<&-), or pass the file through a pipe",
                        d.path.display(),
                        fd = d.fd
                    ),
                });
            }
            (None, false) => continue,
        };
        use std::os::fd::IntoRawFd;
        let new = new.into_raw_fd();
        // SAFETY: `d.fd` and `new` are open descriptors of this single-threaded process; lseek
        // takes numbers; dup2 replaces `d.fd` atomically (a directory's or an appending
        // descriptor's offset is not carried over, and matters to neither).
        unsafe {
            if carries {
                libc::lseek(new, libc::lseek(d.fd, 0, libc::SEEK_CUR), libc::SEEK_SET);
            }
            libc::dup2(new, d.fd);
            libc::close(new);
        }
        replaced[i] = true;
        if carries {
            carried.push(d.fd);
        }
    }
    if let (Some(to), false) = (carry, carried.is_empty()) {
        crate::carry::send(to, &carried).map_err(|e| execguard_seal::SealError::Apply {
            step: "hand the inherited files' new descriptions to the supervisor",
            detail: format!(
                "{} descriptors: {e}; close some before execguard run",
                carried.len()
            ),
        })?;
    }
    Ok(())
}

/// Could the session's user change the bytes of `d`'s file, by a name or through
/// `/proc/self/fd/N`: as its owner (who may give themselves the right), or with the right the
/// kernel grants (root, a group, other, an ACL). A file nobody here may write keeps its
/// description: mapped executable, it runs what the operator handed over.
fn session_could_write(d: &Inherited) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    // Root may write any file it can make writable (an immutable one included: chattr -i).
    if euid == 0 || d.file.uid() == euid {
        return true;
    }
    let Ok(link) = std::ffi::CString::new(format!("/proc/self/fd/{}", d.fd)) else {
        return true;
    };
    // SAFETY: `link` is a NUL-terminated path that outlives the call; faccessat only reads it.
    unsafe { libc::faccessat(libc::AT_FDCWD, link.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// `d`'s file opened again by its name through the session's mounts, when that name still
/// leads to the same file.
fn open_again(d: &Inherited, walks: bool, appends: bool) -> Option<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    if !d.path.is_absolute() {
        return None;
    }
    let mut open = std::fs::OpenOptions::new();
    let access = d.status_flags & libc::O_ACCMODE;
    if walks {
        open.read(true);
    } else {
        open.read(access != libc::O_WRONLY)
            .write(access != libc::O_RDONLY)
            .append(appends);
    }
    let dir = if d.file.is_dir() {
        libc::O_DIRECTORY
    } else {
        0
    };
    // The flags that change how the file is read and written come along (not O_NOATIME:
    // only the file's owner may set it).
    let kept = libc::O_PATH | libc::O_NONBLOCK | libc::O_SYNC | libc::O_DSYNC | libc::O_DIRECT;
    open.custom_flags(libc::O_NOFOLLOW | dir | (d.status_flags & kept));
    open.open(&d.path).ok().filter(|f| {
        f.metadata()
            .is_ok_and(|m| (m.dev(), m.ino()) == (d.file.dev(), d.file.ino()))
    })
}

/// The largest file without a name copied for a session (here-documents, memfds).
const SEALED_COPY_MAX: u64 = 64 << 20;

/// A copy of `d`'s file in a memfd sealed against every change, for a read-only descriptor
/// that no name leads to any more: the session reads what it was given, and can neither
/// rewrite it nor reach the old mount through it.
fn sealed_copy(d: &Inherited) -> Result<std::fs::File, String> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    if d.file.len() > SEALED_COPY_MAX {
        return Err(format!(
            "it has no name on disk and is larger than {} MiB",
            SEALED_COPY_MAX >> 20
        ));
    }
    const MFD_NOEXEC_SEAL: libc::c_uint = 0x8;
    let name = c"execguard-inherited";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: `name` is a NUL-terminated string; memfd_create returns a new descriptor or -1.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), flags | MFD_NOEXEC_SEAL) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // A kernel before 6.3: sealed against writes all the same.
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a new descriptor this function owns.
    let mut copy = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut buf = vec![0u8; 64 * 1024];
    let mut at: i64 = 0;
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes; pread leaves `d.fd`'s offset, shared
        // with the processes outside, where it is.
        let n = unsafe { libc::pread(d.fd, buf.as_mut_ptr().cast(), buf.len(), at) };
        if n < 0 {
            return Err(format!("read: {}", std::io::Error::last_os_error()));
        }
        if n == 0 {
            break;
        }
        copy.write_all(&buf[..n as usize])
            .map_err(|e| e.to_string())?;
        at += n as i64;
        if at as u64 > SEALED_COPY_MAX {
            return Err(format!("larger than {} MiB", SEALED_COPY_MAX >> 20));
        }
    }
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl(F_ADD_SEALS) takes the descriptor and an integer.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } != 0 {
        return Err(format!("seal: {}", std::io::Error::last_os_error()));
    }
    Ok(copy)
}

/// Do two inherited descriptors share one open file description? Asked of the kernel
/// (`kcmp`); where it cannot answer, two descriptors of the same file with the same flags and
/// offset count as one.
fn same_description(a: &Inherited, b: &Inherited) -> bool {
    use std::os::unix::fs::MetadataExt;
    const KCMP_FILE: libc::c_long = 0;
    // SAFETY: kcmp compares two descriptor numbers of this process; it reads no memory of ours.
    let answer = unsafe {
        let pid = libc::getpid() as libc::c_long;
        libc::syscall(
            libc::SYS_kcmp,
            pid,
            pid,
            KCMP_FILE,
            a.fd as libc::c_long,
            b.fd as libc::c_long,
        )
    };
    if answer >= 0 {
        return answer == 0;
    }
    // SAFETY: lseek on descriptor numbers only reads their offsets.
    let offset = |fd| unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    (a.file.dev(), a.file.ino(), a.status_flags, offset(a.fd))
        == (b.file.dev(), b.file.ino(), b.status_flags, offset(b.fd))
}
