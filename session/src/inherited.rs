//! The descriptors a session inherits: which of them write a file (those files join the write
//! set) and, once the session is sealed, each one opened again through the session's mounts
//! (or copied, sealed) so that none leads through the old, executable mounts.

use crate::sys::{SessionSys, MFD_NOEXEC_SEAL};
use anyhow::{bail, Result};
use std::os::fd::AsRawFd;
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
    sys: &dyn SessionSys,
    carry: Option<&std::os::fd::OwnedFd>,
) -> Result<(), execguard_seal::SealError> {
    let all = inherited();
    // Each takes the new description of the first that shares its own, compared before
    // anything is replaced.
    let first_sharing: Vec<Option<usize>> = (0..all.len())
        .map(|i| (0..i).find(|&j| same_description(sys, &all[j], &all[i])))
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
            (None, true) => sealed_copy(sys, d).map_err(|e| execguard_seal::SealError::Apply {
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
fn sealed_copy(sys: &dyn SessionSys, d: &Inherited) -> Result<std::fs::File, String> {
    use std::io::Write;
    if d.file.len() > SEALED_COPY_MAX {
        return Err(format!(
            "it has no name on disk and is larger than {} MiB",
            SEALED_COPY_MAX >> 20
        ));
    }
    let name = c"execguard-inherited";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    let copy = match sys.memfd_create(name, flags | MFD_NOEXEC_SEAL) {
        // A kernel before 6.3: sealed against writes all the same.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => sys.memfd_create(name, flags),
        made => made,
    };
    let mut copy = std::fs::File::from(copy.map_err(|e| format!("memfd_create: {e}"))?);
    let fd = copy.as_raw_fd();
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
fn same_description(sys: &dyn SessionSys, a: &Inherited, b: &Inherited) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let Ok(same) = sys.same_file_description(a.fd, b.fd) {
        return same;
    }
    // SAFETY: lseek on descriptor numbers only reads their offsets.
    let offset = |fd| unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    (a.file.dev(), a.file.ino(), a.status_flags, offset(a.fd))
        == (b.file.dev(), b.file.ino(), b.status_flags, offset(b.fd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::RecordingSessionSys;
    use std::os::fd::IntoRawFd;

    fn inherited(file: std::fs::File, path: &std::path::Path) -> Inherited {
        let file_meta = file.metadata().unwrap();
        let fd = file.into_raw_fd();
        // SAFETY: F_GETFL on a descriptor this test owns.
        let status_flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        Inherited {
            fd,
            path: path.to_path_buf(),
            status_flags,
            file: file_meta,
        }
    }

    fn close(d: Inherited) {
        // SAFETY: the test owns `d.fd` and closes it once.
        unsafe { libc::close(d.fd) };
    }

    /// A file no name leads to any more is copied into a memfd sealed against every change:
    /// made noexec where the kernel can (6.3), without that flag where it refuses it (EINVAL),
    /// and any other failure refuses the start.
    #[test]
    fn a_sealed_copy_falls_back_only_from_a_kernel_without_noexec_memfds() {
        let t = crate::test_dirs::tmp("sealed-copy");
        let path = t.join("given");
        std::fs::write(&path, b"what the session was given").unwrap();
        let (noexec, plain) = (0xb, 0x3);
        let made = |flags: u32| format!("memfd_create(execguard-inherited, {flags:#x})");
        type Row = (Vec<(u32, i32)>, Vec<u32>, Result<(), &'static str>);
        let rows: Vec<Row> = vec![
            (vec![], vec![noexec], Ok(())),
            (vec![(noexec, libc::EINVAL)], vec![noexec, plain], Ok(())),
            (
                vec![(noexec, libc::EMFILE)],
                vec![noexec],
                Err("memfd_create: "),
            ),
            (
                vec![(noexec, libc::EINVAL), (plain, libc::ENOMEM)],
                vec![noexec, plain],
                Err("memfd_create: "),
            ),
        ];
        for (fails, calls, want) in rows {
            let sys = RecordingSessionSys {
                memfd_errno: fails.clone(),
                ..Default::default()
            };
            let d = inherited(std::fs::File::open(&path).unwrap(), &path);
            let got = sealed_copy(&sys, &d);
            let want_calls: Vec<String> = calls.iter().map(|&f| made(f)).collect();
            assert_eq!(sys.calls(), want_calls, "{fails:?}");
            match (want, got) {
                (Ok(()), Ok(copy)) => {
                    let mut text = [0u8; 26];
                    std::os::unix::fs::FileExt::read_exact_at(&copy, &mut text, 0).unwrap();
                    assert_eq!(&text, b"what the session was given");
                    // SAFETY: F_GET_SEALS on a descriptor `copy` owns.
                    let seals = unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_GET_SEALS) };
                    assert_ne!(seals & libc::F_SEAL_WRITE, 0, "sealed against writes");
                }
                (Err(w), Err(e)) => assert!(e.starts_with(w), "{fails:?}: {e}"),
                (want, got) => panic!("{fails:?}: want {want:?}, got {:?}", got.map(|_| ())),
            }
            close(d);
        }
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// Two descriptors share one description when the kernel says so (`kcmp`); without
    /// `kcmp` (ENOSYS, EPERM), when they are of the same file with the same flags and offset.
    #[test]
    fn shared_descriptions_are_asked_of_the_kernel_then_compared() {
        let t = crate::test_dirs::tmp("same-description");
        let path = t.join("file");
        std::fs::write(&path, b"0123456789").unwrap();
        let open = || inherited(std::fs::File::open(&path).unwrap(), &path);
        // (kcmp's answer, the second descriptor's offset, shared?)
        let rows = [
            (Some(Ok(true)), 0, true),
            (Some(Ok(false)), 0, false),
            (Some(Err(libc::ENOSYS)), 0, true),
            (Some(Err(libc::EPERM)), 4, false),
        ];
        for (kcmp, offset, want) in rows {
            let sys = RecordingSessionSys {
                kcmp,
                ..Default::default()
            };
            let (a, b) = (open(), open());
            // SAFETY: lseek on a descriptor this test owns.
            unsafe { libc::lseek(b.fd, offset, libc::SEEK_SET) };
            assert_eq!(same_description(&sys, &a, &b), want, "{kcmp:?} {offset}");
            assert_eq!(sys.calls(), [format!("kcmp({}, {})", a.fd, b.fd)]);
            close(a);
            close(b);
        }
        std::fs::remove_dir_all(&t).unwrap();
    }
}
