//! The protected runtimes and their wrappers, identified once per process ([`RuntimeIds`]).

use crate::path::is_under;
use crate::policy::{FileId, Policy, MAX_RUNTIMES};
use crate::sys::{FileInfo, Sys};

/// Device and inode of every protected runtime and its wrapper, resolved once per process.
/// A runtime `path` that is a directory protects every file beneath it (all of git's exec-path
/// copies, whatever their inodes).
#[derive(Clone, Copy, Debug)]
pub struct RuntimeIds {
    runtime: [Option<FileId>; MAX_RUNTIMES],
    wrapper: [Option<FileId>; MAX_RUNTIMES],
    n: usize,
}

impl FileId {
    fn of(info: FileInfo) -> Self {
        FileId {
            dev: info.dev,
            ino: info.ino,
            dir: info.is_dir(),
        }
    }

    fn is(&self, file: &FileInfo) -> bool {
        self.dev == file.dev && self.ino == file.ino
    }
}

impl RuntimeIds {
    pub const NONE: RuntimeIds = RuntimeIds {
        runtime: [None; MAX_RUNTIMES],
        wrapper: [None; MAX_RUNTIMES],
        n: 0,
    };

    /// The identity of every runtime and wrapper path: the one the policy carries (learned by
    /// `execguard run` at start), else a `stat`, each path asked once (a session's policy names
    /// one wrapper for every copy of git); a missing file protects (or approves) nothing.
    ///
    /// A carried identity counts only under the seal and for a path outside the write set:
    /// the seal lets nothing in the session change a file there (Landlock grants writes only in
    /// the write set, and the mount namespace is the session's), so what `execguard run` saw
    /// at start is what a `stat` would say now. A policy forged in the environment gains
    /// nothing: the process that could forge it could as well exec without the guard, which
    /// only the kernel's layers stand against. If the host replaces a runtime in the meantime
    /// (a package upgrade), the runtime is still known by its path ([`Self::runtime_of`]) and
    /// its wrapper is no longer recognised: refused, never let through.
    pub fn resolve<S: Sys>(sys: &mut S, policy: &Policy<'_>) -> Self {
        let mut ids = Self::NONE;
        // A path met before (one wrapper for every copy of git) takes what its first entry
        // found, before its carried identity is parsed and its place in the write set asked.
        let mut learn =
            |ids: &Self, i: usize, path: &[u8], carried: &dyn Fn() -> Option<FileId>| {
                ids.asked_before(policy, i, path).unwrap_or_else(|| {
                    carried()
                        .filter(|_| policy.seal() && !policy.in_write_set(path))
                        .or_else(|| sys.stat(path).ok().map(FileId::of))
                })
            };
        for (i, rt) in policy.runtimes().enumerate() {
            ids.runtime[i] = learn(&ids, i, rt.path, &|| rt.path_id());
            ids.wrapper[i] = learn(&ids, i, rt.wrapper, &|| rt.wrapper_id());
            ids.n = i + 1;
        }
        ids
    }

    /// What the first `i` entries found at `path`, if one of them named it.
    fn asked_before(&self, policy: &Policy<'_>, i: usize, path: &[u8]) -> Option<Option<FileId>> {
        policy.runtimes().take(i).enumerate().find_map(|(j, rt)| {
            if rt.path == path {
                Some(self.runtime[j])
            } else if rt.wrapper == path {
                Some(self.wrapper[j])
            } else {
                None
            }
        })
    }

    fn matches(id: &Option<FileId>, rt_path: &[u8], file: &FileInfo, kpath: &[u8]) -> bool {
        match id {
            Some(dir) if dir.dir => {
                file.is_regular() && kpath.len() > rt_path.len() && is_under(kpath, rt_path)
            }
            // By its path too: a file the host put there since the session started.
            Some(r) => r.is(file) || (file.is_regular() && kpath == rt_path),
            None => false,
        }
    }

    /// Which runtime entry is this file (`kpath`: the kernel's name for it), if any?
    pub fn runtime_of(&self, policy: &Policy<'_>, file: &FileInfo, kpath: &[u8]) -> Option<usize> {
        policy
            .runtimes()
            .zip(&self.runtime[..self.n])
            .position(|(rt, id)| Self::matches(id, rt.path, file, kpath))
    }

    /// Does any runtime called `name` protect a whole directory?
    pub(super) fn has_dir(&self, policy: &Policy<'_>, name: &[u8]) -> bool {
        policy
            .runtimes()
            .zip(&self.runtime[..self.n])
            .any(|(rt, id)| rt.name == name && id.is_some_and(|d| d.dir))
    }

    /// May a process running `caller` (its kernel name: `caller_path`) start a runtime called
    /// `name`? Its wrapper may, and so may the runtime itself (git starting git).
    pub fn caller_may_start(
        &self,
        policy: &Policy<'_>,
        name: &[u8],
        caller: &FileInfo,
        caller_path: &[u8],
    ) -> bool {
        policy
            .runtimes()
            .zip(self.runtime[..self.n].iter().zip(&self.wrapper[..self.n]))
            .any(|(rt, (id, wrapper))| {
                rt.name == name
                    && (wrapper.is_some_and(|w| w.is(caller))
                        || Self::matches(id, rt.path, caller, caller_path))
            })
    }
}
