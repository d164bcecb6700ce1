//! The session's partition of the file system (docs/write-set.md): the write set, the exec
//! dirs inside it, and the roots granted both rights.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The session's partition of the file system (docs/write-set.md). Paths are canonical.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partition {
    /// Where the session may write and never execute. `/dev` is always added.
    pub write_set: Vec<PathBuf>,
    /// Directories inside the write set that stay executable and become read-only.
    pub exec_dirs: Vec<PathBuf>,
    /// Write-set roots granted both rights: the workspace of the `development` and `build`
    /// profiles (reduced assurance, reported).
    pub both: Vec<PathBuf>,
    /// Directories the session must not even read (the kept audit's signing key): an empty
    /// read-only file system is mounted on each in the session's mount namespace. Each lies
    /// in an exec dir (read-only already) or outside the write set.
    pub hidden: Vec<PathBuf>,
}

fn realpath(p: &Path) -> Option<PathBuf> {
    p.canonicalize().ok()
}

/// Adds `p`, by its canonical name when it has one, unless it is there already.
fn add_unique(list: &mut Vec<PathBuf>, p: PathBuf, canonical: &dyn Fn(&Path) -> Option<PathBuf>) {
    let p = canonical(&p).unwrap_or(p);
    if !list.contains(&p) {
        list.push(p);
    }
}

impl Partition {
    /// A partition with these write-set roots (canonicalised when they exist) and `/dev`.
    pub fn new(write_set: impl IntoIterator<Item = PathBuf>) -> Self {
        Self::resolved(write_set, [], [], &realpath)
    }

    /// A partition whose names are resolved by `canonical`: the CLI's, which answers for a
    /// name what it answered when the CLI checked it. Resolved again later, a name could lead
    /// elsewhere by then (another session can put a link where a directory of `$HOME` or the
    /// workspace's parent was), and the partition would follow it: the workspace's write grant
    /// onto an exec dir, say.
    pub fn resolved(
        write_set: impl IntoIterator<Item = PathBuf>,
        exec_dirs: impl IntoIterator<Item = PathBuf>,
        both: impl IntoIterator<Item = PathBuf>,
        canonical: &dyn Fn(&Path) -> Option<PathBuf>,
    ) -> Self {
        let mut p = Partition::default();
        for root in write_set.into_iter().chain([PathBuf::from("/dev")]) {
            add_unique(&mut p.write_set, root, canonical);
        }
        for d in exec_dirs {
            add_unique(&mut p.exec_dirs, d, canonical);
        }
        for d in both {
            add_unique(&mut p.both, d, canonical);
        }
        p
    }

    pub fn with_exec_dirs(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        for d in dirs {
            add_unique(&mut self.exec_dirs, d, &realpath);
        }
        self
    }

    pub fn with_both(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        for d in dirs {
            add_unique(&mut self.both, d, &realpath);
        }
        self
    }

    /// Is `path` (canonical) in the write set?
    pub fn in_write_set(&self, path: &Path) -> bool {
        self.write_set.iter().any(|r| beneath(path, r))
    }
}

/// Is `path` `root` or beneath it? Both are canonical, as everything this crate compares is
/// (the partition's roots, the kernel's mount points, the entries listed beneath them), so the
/// engine's byte comparison answers, where `Path::starts_with` would parse every component of
/// both (a cost that showed in every session's start).
pub(crate) fn beneath(path: &Path, root: &Path) -> bool {
    let root = root.as_os_str().as_bytes();
    root == b"/" || execguard_policy::path::is_under(path.as_os_str().as_bytes(), root)
}
