//! What the engine is asked and what it answers: the exec call ([`Target`], [`Request`]), what it
//! needs besides ([`Context`]), and the outcome ([`Verdict`], with the refusal's [`ShownPath`]).

use super::runtime_ids::RuntimeIds;
use crate::memo::Memo;
use crate::policy::Policy;
use crate::reason::Reason;
use crate::sys::{At, Errno, StrList, EACCES};

/// What an exec call names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'r> {
    /// `execve(path)`: absolute, or relative to the cwd.
    Path(&'r [u8]),
    /// `execveat(dirfd, path, flags)` with a relative path.
    At {
        dirfd: i32,
        path: &'r [u8],
        nofollow: bool,
    },
    /// `fexecve(fd)` / `execveat(fd, "", AT_EMPTY_PATH)`.
    Fd(i32),
}

impl<'r> Target<'r> {
    /// Classifies `execveat` arguments the way the kernel does.
    pub fn execveat(dirfd: i32, path: &'r [u8], empty_path: bool, nofollow: bool) -> Self {
        if path.is_empty() && empty_path {
            Target::Fd(dirfd)
        } else if path.starts_with(b"/") {
            Target::Path(path)
        } else {
            Target::At {
                dirfd,
                path,
                nofollow,
            }
        }
    }

    pub(super) fn at(&self) -> (At<'r>, bool) {
        match *self {
            Target::Path(p) => (At::Cwd(p), true),
            Target::At {
                dirfd,
                path,
                nofollow,
            } => (At::Dir(dirfd, path), !nofollow),
            Target::Fd(fd) => (At::Fd(fd), true),
        }
    }

    /// The name the caller used (empty for a bare fd).
    pub fn name(&self) -> &'r [u8] {
        match *self {
            Target::Path(p) | Target::At { path: p, .. } => p,
            Target::Fd(_) => b"",
        }
    }
}

/// One exec call, as the guard sees it.
pub struct Request<'r, A: StrList + ?Sized, E: StrList + ?Sized> {
    /// The file to decide, as a name the guard can resolve.
    pub target: Target<'r>,
    /// The name the caller gave, when `target` is another name for it (a `posix_spawn` whose
    /// file actions change what the name means in the child): a launch's argv carries it, as
    /// the kernel's would.
    pub given_name: Option<&'r [u8]>,
    pub argv: &'r A,
    pub envp: &'r E,
}

/// The path a refusal names, as shown on stderr and in the audit record: at most
/// [`ShownPath::MAX`] bytes (longer ones are cut, and say how much was left out; the decision
/// never depends on it). Kept small because a `Verdict` travels through every check's return
/// slot, and in a fork child each stack page the guard touches is a page fault.
#[derive(Clone)]
pub struct ShownPath {
    buf: [u8; ShownPath::MAX],
    len: usize,
    omitted: usize,
}

impl ShownPath {
    pub const MAX: usize = 512;

    pub fn new(path: &[u8]) -> Self {
        let len = path.len().min(Self::MAX);
        let mut buf = [0u8; Self::MAX];
        buf[..len].copy_from_slice(&path[..len]);
        ShownPath {
            buf,
            len,
            omitted: path.len() - len,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// How many bytes of the path were cut off (0: it is whole).
    pub fn omitted(&self) -> usize {
        self.omitted
    }
}

impl core::fmt::Debug for ShownPath {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}", crate::text::Lossy(self.as_bytes()))
    }
}

/// The outcome.
#[derive(Debug)]
pub enum Verdict {
    /// Let the call through (`Allowed`, or `Breakglass` to be audited).
    Allow(Reason),
    /// Refuse: the caller gets -1 with `errno` (EACCES unless the reason says otherwise), a
    /// line on stderr and an audit record naming `path`, the file that decided.
    Deny {
        reason: Reason,
        errno: Errno,
        path: ShownPath,
    },
    /// Fail exactly as the kernel would have (missing target, directory...), without running
    /// anything and without a refusal message.
    Kernel(Errno),
}

impl Verdict {
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow(_))
    }
}

pub(super) fn deny(reason: Reason, path: &[u8]) -> Verdict {
    deny_errno(reason, EACCES, path)
}

#[cold]
pub(super) fn deny_errno(reason: Reason, errno: Errno, path: &[u8]) -> Verdict {
    Verdict::Deny {
        reason,
        errno,
        path: ShownPath::new(path),
    }
}

/// What the engine needs besides the request.
pub struct Context<'c, 't> {
    pub policy: &'c Policy<'t>,
    pub runtimes: &'c RuntimeIds,
    /// The guard library itself, skipped when it appears in `LD_PRELOAD`.
    pub self_lib: Option<&'c [u8]>,
    /// The process's memory of immutable exec targets ([`crate::memo`]); `None`: inspect
    /// every target afresh.
    pub memo: Option<Memo<'c>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execveat_targets() {
        assert_eq!(Target::execveat(3, b"", true, false), Target::Fd(3));
        assert_eq!(
            Target::execveat(3, b"/bin/x", false, false),
            Target::Path(b"/bin/x")
        );
        assert_eq!(
            Target::execveat(3, b"x", false, true),
            Target::At {
                dirfd: 3,
                path: b"x",
                nofollow: true
            }
        );
    }
}
