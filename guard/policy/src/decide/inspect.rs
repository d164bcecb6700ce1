//! Opening and naming files: one file of the chain read into a [`Hop`], a file identified
//! without reading it, and the lexical normal form of a name.

use super::mutable::redirectable;
use super::request::{deny, Verdict};
use crate::path::{is_under, PathBuf};
use crate::policy::Policy;
use crate::reason::Reason;
use crate::resolve;
use crate::shebang::BINPRM_BUF_SIZE;
use crate::sys::{At, FileInfo, OpenMode, Sys, EACCES};

pub(super) const ELF_MAGIC: &[u8] = b"\x7fELF";

/// One file of the chain, inspected and closed again.
pub(super) struct Hop {
    pub(super) info: FileInfo,
    pub(super) head: [u8; BINPRM_BUF_SIZE],
    pub(super) head_len: usize,
    pub(super) readable: bool,
    /// Could the session make the name this hop was opened by lead elsewhere (it went through
    /// the write set)? Then the kernel must be handed `kpath` instead.
    pub(super) touched: bool,
    pub(super) kpath: PathBuf,
}

impl Hop {
    pub(super) fn new() -> Self {
        Hop {
            info: FileInfo::default(),
            head: [0; BINPRM_BUF_SIZE],
            head_len: 0,
            readable: true,
            touched: false,
            kpath: PathBuf::new(),
        }
    }
}

/// Opens, identifies and reads the head of one file into `hop` (filled in place: a `Hop` is
/// over 4 KiB, and moving it cost more than the checks).
pub(super) fn inspect<S: Sys>(
    sys: &mut S,
    policy: &Policy<'_>,
    at: At<'_>,
    follow: bool,
    hop: &mut Hop,
) -> Result<(), Verdict> {
    hop.head_len = 0;
    hop.readable = true;
    if let (At::Cwd(path), true) = (at, follow) {
        let mut per_process = false;
        let mut in_write_set = |sys: &mut S, p: &[u8]| {
            per_process |= is_under(p, b"/proc");
            redirectable(sys, policy, p)
        };
        let opened =
            resolve::open_resolved_in(sys, path, OpenMode::Read, &mut hop.kpath, &mut in_write_set);
        if let Some((fd, info, touched)) = opened {
            hop.info = info;
            // A name through `/proc` (`/proc/self/fd`, `/dev/fd`...) means what this process's
            // descriptors, cwd and root are when the kernel reads it, which another thread (or
            // a spawn's file actions) can change after this check: hand the kernel the file's
            // own name instead.
            hop.touched = touched || per_process;
            let head = if info.is_regular() {
                sys.read_head(&fd, &mut hop.head)
            } else {
                Ok(0)
            };
            sys.close(fd);
            hop.head_len = head.map_err(Verdict::Kernel)?;
            return Ok(());
        }
    }
    let fd = match sys.open(at, OpenMode::Read, follow) {
        Ok(fd) => fd,
        Err(EACCES) => {
            // Execute-only files can still be identified, though not read.
            hop.readable = false;
            sys.open(at, OpenMode::PathOnly, follow)
                .map_err(Verdict::Kernel)?
        }
        Err(e) => return Err(Verdict::Kernel(e)),
    };
    let result = (|| {
        hop.info = sys.fstat(&fd).map_err(Verdict::Kernel)?;
        if hop.readable && hop.info.is_regular() {
            hop.head_len = sys.read_head(&fd, &mut hop.head).map_err(Verdict::Kernel)?;
        }
        sys.fd_path(&fd, &mut hop.kpath)
            .map_err(|_| deny(Reason::ProcUnavailable, b"/proc/self/fd"))?;
        Ok(())
    })();
    sys.close(fd);
    // Named through /proc: the walk is unknown, so only an absolute name that is already the
    // kernel's own (no symlink, no `..`) counts as one the session cannot redirect.
    let kpath = hop.kpath.as_bytes();
    hop.touched = !is_kernel_name(at, kpath) || redirectable(sys, policy, kpath);
    result
}

/// Is `at` an absolute name that is already the kernel's own for `kpath` (no symlink, no
/// `..`)? Out of line: its buffer is needed only on the `/proc` route.
#[inline(never)]
fn is_kernel_name(at: At<'_>, kpath: &[u8]) -> bool {
    let At::Cwd(p) = at else { return false };
    // Already normal (absolute, no empty, `.` or `..` component): compare as is.
    if p.starts_with(b"/")
        && p[1..]
            .split(|&c| c == b'/')
            .all(|c| !matches!(c, b"" | b"." | b".."))
    {
        return p == kpath;
    }
    lexical_normal(p).is_some_and(|n| n.as_bytes() == kpath)
}

/// A file's identity and kernel name, without reading it.
#[inline(never)]
pub(super) fn identify<S: Sys>(sys: &mut S, path: &[u8]) -> Option<(FileInfo, PathBuf)> {
    let mut kpath = PathBuf::new();
    let info = name_file(sys, path, &mut kpath).ok()?;
    Some((info, kpath))
}

/// Why [`name_file`] could not name a file.
pub(super) enum Unnamed {
    /// The kernel would not open it.
    Unopenable,
    /// It opened, but `/proc` could not name it.
    ProcGone,
}

/// Opens `path` (`O_PATH`, following symlinks) for its identity and, into `kpath`, its
/// kernel name: by the engine's own walk when it can, else through `/proc`.
pub(super) fn name_file<S: Sys>(
    sys: &mut S,
    path: &[u8],
    kpath: &mut PathBuf,
) -> Result<FileInfo, Unnamed> {
    if let Some((fd, info)) = resolve::open_resolved(sys, path, OpenMode::PathOnly, kpath) {
        sys.close(fd);
        return Ok(info);
    }
    let fd = sys
        .open(At::Cwd(path), OpenMode::PathOnly, true)
        .map_err(|_| Unnamed::Unopenable)?;
    let info = sys
        .fstat(&fd)
        .and_then(|info| sys.fd_path(&fd, kpath).map(|()| info));
    sys.close(fd);
    info.map_err(|_| Unnamed::ProcGone)
}

/// `/a/./b/../c` → `/a/c` for absolute paths; `None` for relative or overlong ones.
#[inline(never)]
pub(super) fn lexical_normal(path: &[u8]) -> Option<PathBuf> {
    if !path.starts_with(b"/") {
        return None;
    }
    let mut out = PathBuf::new();
    for part in path.split(|&c| c == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                let cut = out.as_bytes().iter().rposition(|&c| c == b'/').unwrap_or(0);
                out.truncate(cut);
            }
            _ => {
                out.push_bytes(b"/").ok()?;
                out.push_bytes(part).ok()?;
            }
        }
    }
    if out.as_bytes().is_empty() {
        out.push_bytes(b"/").ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical() {
        let n = |p: &[u8]| lexical_normal(p).map(|b| b.as_bytes().to_vec());
        assert_eq!(n(b"/a/./b/../c"), Some(b"/a/c".to_vec()));
        assert_eq!(
            n(b"/usr/../workspace/lib"),
            Some(b"/workspace/lib".to_vec())
        );
        assert_eq!(n(b"/.."), Some(b"/".to_vec()));
        assert_eq!(n(b"rel"), None);
    }
}
