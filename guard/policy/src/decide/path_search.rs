//! glibc's PATH search, written once: the candidates for a name without `/`, and whether the
//! search goes on after a failed exec.

use crate::path::{PathBuf, PATH_MAX};
use crate::sys::{Errno, EACCES, ESTALE_ETC};

/// glibc's PATH when the environment has none.
pub const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// glibc's PATH search, written once (the preload's `execvp` family and `posix_spawnp`,
/// `execguard run` and `check`, `env` in a `#!` line): the candidates for a name without `/`,
/// in order: `dir/name` for each `:`-separated entry of `path_var` ([`DEFAULT_PATH`] when
/// unset), an empty entry naming the cwd. A candidate longer than `PATH_MAX` is skipped, as
/// glibc skips it.
pub fn path_candidates<'a>(
    path_var: Option<&'a [u8]>,
    name: &'a [u8],
) -> impl Iterator<Item = PathBuf> + 'a {
    path_search(path_var, name).filter_map(|c| PathBuf::join(c.dir, c.name).ok())
}

/// [`path_candidates`] as their parts, for a caller that builds each name in a buffer sized
/// to it (the preload's `execvp`, which keeps the caller's stack small).
pub fn path_search<'a>(
    path_var: Option<&'a [u8]>,
    name: &'a [u8],
) -> impl Iterator<Item = Candidate<'a>> + 'a {
    path_var
        .unwrap_or(DEFAULT_PATH)
        .split(|&c| c == b':')
        .map(move |dir| Candidate { dir, name })
        .filter(|c| c.len() < PATH_MAX)
}

/// One PATH candidate: `dir/name`, or `name` alone for an empty `dir` (the cwd).
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    dir: &'a [u8],
    name: &'a [u8],
}

impl Candidate<'_> {
    /// Length of the name, without a NUL.
    pub fn len(&self) -> usize {
        match self.dir.len() {
            0 => self.name.len(),
            d => d + 1 + self.name.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the name and a NUL into `out` (at least `len() + 1` bytes) and returns the C
    /// string's bytes, NUL included.
    pub fn write_c<'o>(&self, out: &'o mut [u8]) -> &'o [u8] {
        let mut at = 0;
        let slash: &[u8] = if self.dir.is_empty() { b"" } else { b"/" };
        for part in [self.dir, slash, self.name, b"\0"] {
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        &out[..at]
    }
}

/// After the exec of one PATH candidate failed with `errno`, does the search try the next?
/// As glibc's: after `EACCES` (a refusal included: the guard answers as a `noexec` mount
/// would), remembered as the search's answer if nothing runs, and after the "not here" errors.
pub fn search_goes_on(errno: Errno) -> bool {
    errno == EACCES || ESTALE_ETC.contains(&errno)
}
