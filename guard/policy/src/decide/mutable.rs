//! The one "mutable" predicate ([`is_mutable`], docs/write-set.md), the permission walk it
//! needs when unsealed, and what the profile lets mutable native code do.

use super::request::{deny, Verdict};
use crate::path::{is_anonymous, PathBuf};
use crate::policy::Policy;
use crate::reason::Reason;
use crate::sys::{At, Errno, FileInfo, OpenMode, Sys, EACCES};

/// The one "mutable" predicate (docs/write-set.md): may the session change the file the kernel
/// names `kpath`? It may when the file lies in the write set (outside the exec dirs), and, when
/// the kernel does not enforce the partition (no seal), when the session's user could write it
/// or any directory above it by permission (a directory it can write lets it replace the file).
/// A file with no name on disk is mutable too. Used for targets, interpreters, loader
/// programs, preloaded objects, library directories and `dlopen`.
pub fn is_mutable<S: Sys>(sys: &mut S, policy: &Policy<'_>, kpath: &[u8], nlink: u64) -> bool {
    is_anonymous(kpath)
        || nlink == 0
        || policy.mutable_root_of(kpath).is_some()
        || (!policy.seal() && writable_by_session(sys, kpath))
}

/// A [`Sys`] that asks [`Sys::bypasses_permissions`] and [`Sys::effective_uid`] once per
/// decision (the answers cannot change within one, and a decision asks for every file and
/// every directory it walks).
pub(super) struct OncePerDecision<'s, S: Sys> {
    sys: &'s mut S,
    bypass: Option<bool>,
    euid: Option<u32>,
    fowner: Option<bool>,
}

impl<'s, S: Sys> OncePerDecision<'s, S> {
    pub(super) fn new(sys: &'s mut S) -> Self {
        OncePerDecision {
            sys,
            bypass: None,
            euid: None,
            fowner: None,
        }
    }
}

impl<S: Sys> Sys for OncePerDecision<'_, S> {
    type Fd = S::Fd;
    fn open(&mut self, at: At<'_>, mode: OpenMode, follow: bool) -> Result<S::Fd, Errno> {
        self.sys.open(at, mode, follow)
    }
    fn fstat(&mut self, fd: &S::Fd) -> Result<FileInfo, Errno> {
        self.sys.fstat(fd)
    }
    fn read_head(&mut self, fd: &S::Fd, buf: &mut [u8]) -> Result<usize, Errno> {
        self.sys.read_head(fd, buf)
    }
    fn fd_path(&mut self, fd: &S::Fd, out: &mut PathBuf) -> Result<(), Errno> {
        self.sys.fd_path(fd, out)
    }
    fn close(&mut self, fd: S::Fd) {
        self.sys.close(fd)
    }
    fn stat(&mut self, path: &[u8]) -> Result<FileInfo, Errno> {
        self.sys.stat(path)
    }
    fn caller_exe(&mut self) -> Result<FileInfo, Errno> {
        self.sys.caller_exe()
    }
    fn caller_exe_path(&mut self, out: &mut PathBuf) -> Result<(), Errno> {
        self.sys.caller_exe_path(out)
    }
    fn is_executable(&mut self, path: &[u8]) -> bool {
        self.sys.is_executable(path)
    }
    fn may_write(&mut self, path: &[u8]) -> Result<(), Errno> {
        self.sys.may_write(path)
    }
    fn effective_uid(&mut self) -> u32 {
        *self.euid.get_or_insert_with(|| self.sys.effective_uid())
    }
    fn owns_every_file(&mut self) -> bool {
        *self
            .fowner
            .get_or_insert_with(|| self.sys.owns_every_file())
    }
    fn bypasses_permissions(&mut self) -> bool {
        *self
            .bypass
            .get_or_insert_with(|| self.sys.bypasses_permissions())
    }
    fn read_link(&mut self, path: &[u8], out: &mut [u8]) -> Result<usize, Errno> {
        self.sys.read_link(path, out)
    }
    fn cwd(&mut self, out: &mut PathBuf) -> Result<(), Errno> {
        self.sys.cwd(out)
    }
    fn open_exact(&mut self, path: &[u8], mode: OpenMode) -> Result<S::Fd, Errno> {
        self.sys.open_exact(path, mode)
    }
}

/// May the session's user (not root: it bypasses permissions) change `path` or a directory
/// above it?
fn writable_by_session<S: Sys>(sys: &mut S, path: &[u8]) -> bool {
    if !path.starts_with(b"/") || sys.bypasses_permissions() {
        return false;
    }
    let mut p = path;
    loop {
        if may_change(sys, p) {
            return true;
        }
        match p.iter().rposition(|&c| c == b'/') {
            Some(0) if p.len() > 1 => p = b"/",
            Some(i) if i > 0 => p = &p[..i],
            _ => return false,
        }
    }
}

/// May the session's user write `path`, now or after a `chmod`? The kernel answers for the
/// write (mode bits, ACLs, and file systems whose permissions are not the mode bits: FUSE,
/// NFS, CIFS); when it says `EACCES`, the file's owner (or a process with `CAP_FOWNER`) may
/// still give itself write access, unless the mount is read-only or the file immutable.
fn may_change<S: Sys>(sys: &mut S, path: &[u8]) -> bool {
    match sys.may_write(path) {
        Ok(()) => true,
        Err(EACCES) => {
            sys.owns_every_file()
                || sys
                    .stat(path)
                    .is_ok_and(|info| info.uid == sys.effective_uid())
        }
        Err(_) => false, // EROFS, EPERM (immutable): nobody's chmod changes that
    }
}

/// Could the session make a name that goes through `prefix` lead elsewhere (the write set,
/// or, unsealed, a directory it can change)?
pub(super) fn redirectable<S: Sys>(sys: &mut S, policy: &Policy<'_>, prefix: &[u8]) -> bool {
    policy.in_write_set(prefix)
        || (!policy.seal() && !sys.bypasses_permissions() && may_change(sys, prefix))
}

/// What the profile lets mutable native code do. A file-backed program the profile would run
/// but the kernel will not (development's write-only places: `/dev/shm`, the runtime
/// directory, a shared `/tmp`, [`Policy::runs_written`]) is refused here, so the person sees
/// the guard's line and its way forward rather than the kernel's bare "Permission denied".
pub(super) fn check_native(
    policy: &Policy<'_>,
    anonymous: bool,
    reason: Reason,
    path: &[u8],
) -> Result<(), Verdict> {
    let profile = policy.profile();
    if anonymous && !profile.allows_anonymous_native() {
        let reason = if reason == Reason::MutableNative {
            Reason::AnonymousNative
        } else {
            reason
        };
        return Err(deny(reason, path));
    }
    if !anonymous && !profile.allows_mutable_native() {
        return Err(deny(reason, path));
    }
    if !anonymous && reason == Reason::MutableNative && !policy.runs_written(path) {
        return Err(deny(reason, path));
    }
    Ok(())
}
