//! The seam between the pure engine and the operating system.
//!
//! The engine never calls the OS itself: the preload library implements [`Sys`] with raw libc
//! calls (no allocation), the CLI with std, and tests can record or fake calls.

use crate::path::PathBuf;

/// An `errno` value (Linux numbering; the same on every architecture we build for).
pub type Errno = i32;

pub const ENOENT: Errno = 2;
pub const E2BIG: Errno = 7;
pub const ENOEXEC: Errno = 8;
pub const EBADF: Errno = 9;
pub const EFAULT: Errno = 14;
pub const EACCES: Errno = 13;
pub const ENOTDIR: Errno = 20;
pub const EINVAL: Errno = 22;
pub const ENAMETOOLONG: Errno = 36;
pub const ELOOP: Errno = 40;
pub const ENODEV: Errno = 19;
pub const ETIMEDOUT: Errno = 110;
pub const ESTALE: Errno = 116;

/// Errors after which glibc's PATH search tries the next directory.
pub const ESTALE_ETC: [Errno; 5] = [ENOENT, ESTALE, ENOTDIR, ENODEV, ETIMEDOUT];

pub const S_IFMT: u32 = 0o170000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFDIR: u32 = 0o040000;

/// What `fstat` says about a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileInfo {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub uid: u32,
    /// The last change of contents or metadata, in nanoseconds since the epoch, and the
    /// size: a file the guard remembers is the same only while these are ([`crate::memo`]).
    pub ctime_ns: u64,
    pub size: u64,
}

impl FileInfo {
    pub fn is_regular(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }
    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }
    /// Same file (device and inode)?
    pub fn same_file(&self, other: &FileInfo) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// Where a path is resolved from, as the exec family resolves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At<'p> {
    /// A path relative to the current directory (or absolute).
    Cwd(&'p [u8]),
    /// A path relative to a directory fd (`execveat`).
    Dir(i32, &'p [u8]),
    /// The file behind an open descriptor (`fexecve`, `AT_EMPTY_PATH`); reopened through
    /// `/proc/self/fd/N` so that `O_PATH` descriptors can be read too.
    Fd(i32),
}

/// How to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// `O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC`: to read the first bytes.
    Read,
    /// `O_PATH | O_CLOEXEC`: to identify a file or directory that cannot be read.
    PathOnly,
}

/// The OS calls the engine needs. Every method reports failure as the `errno` the kernel gave.
pub trait Sys {
    type Fd;
    fn open(&mut self, at: At<'_>, mode: OpenMode, follow: bool) -> Result<Self::Fd, Errno>;
    fn fstat(&mut self, fd: &Self::Fd) -> Result<FileInfo, Errno>;
    /// Reads from offset 0 (`pread`), up to `buf.len()` bytes or end of file.
    fn read_head(&mut self, fd: &Self::Fd, buf: &mut [u8]) -> Result<usize, Errno>;
    /// The kernel's name for the open file (`readlink /proc/self/fd/N`).
    fn fd_path(&mut self, fd: &Self::Fd, out: &mut PathBuf) -> Result<(), Errno>;
    fn close(&mut self, fd: Self::Fd);
    /// `stat` following symlinks.
    fn stat(&mut self, path: &[u8]) -> Result<FileInfo, Errno>;
    /// The running executable (`stat /proc/self/exe`).
    fn caller_exe(&mut self) -> Result<FileInfo, Errno>;
    /// The kernel's name for the running executable (`readlink /proc/self/exe`).
    fn caller_exe_path(&mut self, out: &mut PathBuf) -> Result<(), Errno>;
    /// Would a PATH search stop here (a regular file the caller may execute)?
    fn is_executable(&mut self, path: &[u8]) -> bool;
    /// May this process write `path` now (`faccessat(W_OK, AT_EACCESS)`: owner, group and
    /// other bits, ACLs)? The kernel's errno when not: `EACCES` for permissions, `EROFS` for a
    /// read-only mount, `EPERM` for an immutable file.
    fn may_write(&mut self, path: &[u8]) -> Result<(), Errno>;
    /// The effective user id (a file's owner may make it writable, whatever its mode).
    fn effective_uid(&mut self) -> u32;
    /// May this process change the mode of any file, as its owner could (`CAP_FOWNER`, or
    /// `CAP_CHOWN`, which makes any file its own first)?
    fn owns_every_file(&mut self) -> bool;
    /// Does this process bypass file permissions (effective uid 0, or `CAP_DAC_OVERRIDE`)?
    /// Then permissions cannot say what it may change, and only the write set counts.
    fn bypasses_permissions(&mut self) -> bool;
    /// The text of the symlink at `path` (`readlink`) written to the start of `out`, and its
    /// length; `EINVAL` when `path` is not a symlink.
    fn read_link(&mut self, path: &[u8], out: &mut [u8]) -> Result<usize, Errno>;
    /// The current directory (`getcwd`).
    fn cwd(&mut self, out: &mut PathBuf) -> Result<(), Errno>;
    /// Opens `path` only if none of its components is a symlink (`openat2` with
    /// `RESOLVE_NO_SYMLINKS`), so the file opened is the one at exactly that name.
    fn open_exact(&mut self, path: &[u8], mode: OpenMode) -> Result<Self::Fd, Errno>;
}

/// A list of C strings (`argv`, `envp`), without allocating.
pub trait StrList {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> Option<&[u8]>;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The first byte of entry `i` (`None` past the end or for an empty entry). A scan for a
    /// few names reads one byte of every other entry instead of measuring it.
    fn first_byte(&self, i: usize) -> Option<u8> {
        self.get(i).and_then(|e| e.first().copied())
    }
}

impl StrList for [&[u8]] {
    fn len(&self) -> usize {
        <[&[u8]]>::len(self)
    }
    fn get(&self, i: usize) -> Option<&[u8]> {
        <[&[u8]]>::get(self, i).copied()
    }
}

/// The value of `NAME` in an environment list (`NAME=value`), first match as glibc's getenv.
pub fn env_get<'a, L: StrList + ?Sized>(envp: &'a L, name: &[u8]) -> Option<&'a [u8]> {
    let first = name.first().copied();
    (0..envp.len())
        .filter(|&i| envp.first_byte(i) == first)
        .filter_map(|i| envp.get(i))
        .find_map(|e| {
            (e.len() > name.len() && e.starts_with(name) && e[name.len()] == b'=')
                .then(|| &e[name.len() + 1..])
        })
}

/// Every value of `NAME` in an environment list, in order. The dynamic loader honours the last
/// `LD_*` entry while getenv finds the first, so checks must look at all of them.
pub fn env_values<'a, L: StrList + ?Sized>(
    envp: &'a L,
    name: &'a [u8],
) -> impl Iterator<Item = &'a [u8]> + 'a {
    let first = name.first().copied();
    (0..envp.len())
        .filter(move |&i| envp.first_byte(i) == first)
        .filter_map(move |i| envp.get(i))
        .filter(move |e| e.len() > name.len() && e.starts_with(name) && e[name.len()] == b'=')
        .map(move |e| &e[name.len() + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_lookups_skip_other_names_by_their_first_byte() {
        let env: &[&[u8]] = &[
            b"",
            b"PATHX=/no",
            b"PWD=/w",
            b"PATH=/a",
            b"LD_PRELOAD=/x",
            b"PATH=/b",
        ];
        assert_eq!(env_get(env, b"PATH"), Some(&b"/a"[..]));
        assert_eq!(env_get(env, b"HOME"), None);
        assert_eq!(env_get(env, b""), None);
        let all: Vec<&[u8]> = env_values(env, b"PATH").collect();
        assert_eq!(all, [&b"/a"[..], &b"/b"[..]]);
        assert_eq!(env.first_byte(0), None);
        assert_eq!(env.first_byte(4), Some(b'L'));
        assert_eq!(env.first_byte(6), None);
    }
}
