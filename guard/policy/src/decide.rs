//! The decision: would this exec map native code from a mutable place, or start a protected
//! runtime from the wrong caller?
//!
//! It follows what the kernel would do for the call: open the target, read its first bytes,
//! follow the `#!` chain (the kernel starts each interpreter without going back through libc),
//! look inside direct loader invocations, and check the shared objects the new environment
//! names. Every file is identified by the kernel's own name for the open file, so symlinks,
//! `..`, relative paths, dirfds and `/proc/self/fd/N` resolve exactly as they will for the exec.

// No heap in the exec path: a denial carries the deciding path inline, so Verdict is large by design.
#![allow(clippy::large_enum_variant, clippy::result_large_err)]

use crate::env::{code_use, EnvUse};
use crate::memo::Memo;
use crate::path::{basename, is_anonymous, is_loader_name, is_under, PathBuf, PATH_MAX};
use crate::policy::{Policy, MAX_RUNTIMES};
use crate::reason::Reason;
use crate::resolve;
use crate::shebang::{self, Shebang, BINPRM_BUF_SIZE};
use crate::sys::{
    env_get, At, Errno, FileInfo, OpenMode, StrList, Sys, EACCES, ELOOP, ENOEXEC, ESTALE_ETC,
};
use crate::text::words;
use crate::Profile;

/// Files the kernel examines for one exec: the target and up to five interpreters.
pub const MAX_CHAIN: usize = 6;

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

    fn at(&self) -> (At<'r>, bool) {
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
/// [`ShownPath::MAX`] bytes (longer ones are cut; the decision never depends on it). Kept small
/// because a `Verdict` travels through every check's return slot, and in a fork child each
/// stack page the guard touches is a page fault.
#[derive(Clone)]
pub struct ShownPath {
    buf: [u8; ShownPath::MAX],
    len: usize,
}

impl ShownPath {
    pub const MAX: usize = 512;

    pub fn new(path: &[u8]) -> Self {
        let len = path.len().min(Self::MAX);
        let mut buf = [0u8; Self::MAX];
        buf[..len].copy_from_slice(&path[..len]);
        ShownPath { buf, len }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
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

fn deny(reason: Reason, path: &[u8]) -> Verdict {
    deny_errno(reason, EACCES, path)
}

#[cold]
fn deny_errno(reason: Reason, errno: Errno, path: &[u8]) -> Verdict {
    Verdict::Deny {
        reason,
        errno,
        path: ShownPath::new(path),
    }
}

/// Device and inode of every protected runtime and its wrapper, resolved once per process.
/// A runtime `path` that is a directory protects every file beneath it (all of git's exec-path
/// copies, whatever their inodes).
#[derive(Clone, Copy, Debug)]
pub struct RuntimeIds {
    runtime: [Option<FileId>; MAX_RUNTIMES],
    wrapper: [Option<FileId>; MAX_RUNTIMES],
    n: usize,
}

/// What [`RuntimeIds`] keeps of a file: its identity, and whether it is a directory (the
/// cache holds 64 of them, so no more).
#[derive(Clone, Copy, Debug)]
struct FileId {
    dev: u64,
    ino: u64,
    dir: bool,
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

    /// Stats every runtime and wrapper path; a missing file protects (or approves) nothing.
    pub fn resolve<S: Sys>(sys: &mut S, policy: &Policy<'_>) -> Self {
        let mut ids = Self::NONE;
        for (i, rt) in policy.runtimes().enumerate() {
            ids.runtime[i] = sys.stat(rt.path).ok().map(FileId::of);
            ids.wrapper[i] = sys.stat(rt.wrapper).ok().map(FileId::of);
            ids.n = i + 1;
        }
        ids
    }

    fn matches(id: &Option<FileId>, rt_path: &[u8], file: &FileInfo, kpath: &[u8]) -> bool {
        match id {
            Some(dir) if dir.dir => {
                file.is_regular() && kpath.len() > rt_path.len() && is_under(kpath, rt_path)
            }
            Some(r) => r.is(file),
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
    fn has_dir(&self, policy: &Policy<'_>, name: &[u8]) -> bool {
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

impl Profile {
    /// May file-backed native code from mutable roots run?
    pub fn allows_mutable_native(self) -> bool {
        !matches!(self, Profile::Strict)
    }
    /// May native code with no name on disk (memfd, deleted) run?
    pub fn allows_anonymous_native(self) -> bool {
        matches!(self, Profile::Build | Profile::Breakglass)
    }
}

/// Fills `hop` from the memo ([`crate::memo`]) when the target is remembered there and a
/// `stat` of it still gives the same identity, size and change time.
fn recall<S: Sys>(sys: &mut S, ctx: &Context<'_, '_>, target: Target<'_>, hop: &mut Hop) -> bool {
    let (Some(memo), Target::Path(path)) = (&ctx.memo, target) else {
        return false;
    };
    if !ctx.policy.seal() || !path.starts_with(b"/") {
        return false;
    }
    let Some(kept) = memo.recall(path, &mut hop.kpath) else {
        return false;
    };
    match sys.stat(path) {
        Ok(now) if now == kept => {}
        _ => return false,
    }
    hop.info = kept;
    hop.head[..ELF_MAGIC.len()].copy_from_slice(ELF_MAGIC);
    hop.head_len = ELF_MAGIC.len();
    hop.readable = true;
    hop.touched = false;
    true
}

/// Offers a freshly inspected target to the memo, if it is what the memo may keep: sealed, a
/// readable ELF outside the write set (the caller's `mutable` said no), named by a normal
/// absolute path (no empty, `.` or `..` component) that the session cannot redirect and that
/// means the same in every process (`touched`: nothing walked one by one in the write set,
/// nothing on the way in `/proc`).
fn offer(ctx: &Context<'_, '_>, target: Target<'_>, hop: &Hop) {
    let (Some(memo), Target::Path(path)) = (&ctx.memo, target) else {
        return;
    };
    if ctx.policy.seal()
        && is_normal_absolute(path)
        && !is_under(path, b"/proc")
        && hop.readable
        && !hop.touched
        && hop.info.is_regular()
        && hop.info.nlink > 0
        && hop.head[..hop.head_len].starts_with(ELF_MAGIC)
    {
        memo.offer(path, hop.kpath.as_bytes(), &hop.info);
    }
}

const ELF_MAGIC: &[u8] = b"\x7fELF";

/// An absolute path with no empty, `.` or `..` component.
fn is_normal_absolute(path: &[u8]) -> bool {
    path.len() > 1
        && path[0] == b'/'
        && path[1..]
            .split(|&c| c == b'/')
            .all(|c| !matches!(c, b"" | b"." | b".."))
}

/// One file of the chain, inspected and closed again.
struct Hop {
    info: FileInfo,
    head: [u8; BINPRM_BUF_SIZE],
    head_len: usize,
    readable: bool,
    /// Could the session make the name this hop was opened by lead elsewhere (it went through
    /// the write set)? Then the kernel must be handed `kpath` instead.
    touched: bool,
    kpath: PathBuf,
}

impl Hop {
    fn new() -> Self {
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
struct OncePerDecision<'s, S: Sys> {
    sys: &'s mut S,
    bypass: Option<bool>,
    euid: Option<u32>,
    fowner: Option<bool>,
}

impl<'s, S: Sys> OncePerDecision<'s, S> {
    fn new(sys: &'s mut S) -> Self {
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
fn redirectable<S: Sys>(sys: &mut S, policy: &Policy<'_>, prefix: &[u8]) -> bool {
    policy.in_write_set(prefix)
        || (!policy.seal() && !sys.bypasses_permissions() && may_change(sys, prefix))
}

/// Opens, identifies and reads the head of one file into `hop` (filled in place: a `Hop` is
/// over 4 KiB, and moving it cost more than the checks).
fn inspect<S: Sys>(
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

/// The canonical name the kernel is handed instead of the caller's ([`decide_launch`]), at
/// most [`ExecName::MAX`] bytes: it sits on the caller's stack for every exec, and a preload
/// library must not need more stack than the call it replaces. A longer one is refused
/// (`path_too_long`) rather than handed to the kernel by a name the session could redirect.
pub struct ExecName {
    buf: [core::mem::MaybeUninit<u8>; ExecName::MAX + 1],
    len: usize,
}

impl ExecName {
    pub const MAX: usize = 1023;

    #[inline(always)]
    pub fn new() -> Self {
        // SAFETY: an array of MaybeUninit is valid uninitialised.
        let buf = unsafe {
            core::mem::MaybeUninit::<[core::mem::MaybeUninit<u8>; ExecName::MAX + 1]>::uninit()
                .assume_init()
        };
        ExecName { buf, len: 0 }
    }

    fn set(&mut self, name: &[u8]) -> bool {
        if name.len() > Self::MAX {
            return false;
        }
        for (slot, &b) in self.buf.iter_mut().zip(name) {
            slot.write(b);
        }
        self.buf[name.len()].write(0);
        self.len = name.len();
        true
    }

    /// The name (empty: hand the kernel the caller's own).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `buf[..len]` was written by `set` (len is 0 otherwise).
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) }
    }

    /// The name with its NUL (valid once [`ExecName::as_bytes`] is not empty).
    pub fn as_c_bytes(&self) -> &[u8] {
        // SAFETY: `set` wrote the NUL at `len`; an empty name is just read as "".
        if self.len == 0 {
            return b"\0";
        }
        // SAFETY: `buf[..=len]` was written by `set`.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len + 1) }
    }
}

impl Default for ExecName {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a piece of the argv that an interpreter will see is stored.
#[derive(Clone, Copy)]
enum Piece {
    Arena(usize, usize),
    Target,
}

/// The argv each file of the chain receives: the kernel turns `script args` into
/// `interpreter [arg] script args`, once per `#!` level.
struct Chain<'r, A: StrList + ?Sized> {
    arena: [u8; MAX_CHAIN * BINPRM_BUF_SIZE],
    used: usize,
    /// Arguments between the current argv[0] and the caller's argv[1..].
    prefix: [Piece; 2 * MAX_CHAIN],
    n: usize,
    /// The name the current file was started by (the exec path, then each interpreter).
    current: Piece,
    argv: &'r A,
    target: &'r [u8],
}

/// Where a launch starts: the chain's argv state at its first file outside the mutable roots.
/// (The arena only grows, so the final chain's arena still holds what this names.)
struct Snapshot {
    prefix: [Piece; 2 * MAX_CHAIN],
    n: usize,
    current: Piece,
}

impl<'r, A: StrList + ?Sized> Chain<'r, A> {
    fn new<E: StrList + ?Sized>(req: &Request<'r, A, E>) -> Self {
        Chain {
            arena: [0; MAX_CHAIN * BINPRM_BUF_SIZE],
            used: 0,
            prefix: [Piece::Target; 2 * MAX_CHAIN],
            n: 0,
            current: Piece::Target,
            argv: req.argv,
            target: req.given_name.unwrap_or(req.target.name()),
        }
    }

    fn get(&self, p: Piece) -> &[u8] {
        match p {
            Piece::Arena(s, n) => &self.arena[s..s + n],
            Piece::Target => self.target,
        }
    }

    fn store(&mut self, s: &[u8]) -> Piece {
        let start = self.used;
        self.arena[start..start + s.len()].copy_from_slice(s);
        self.used += s.len();
        Piece::Arena(start, s.len())
    }

    /// The kernel runs `interpreter [argument] <current name> <prefix...> argv[1..]`.
    fn enter_interpreter(&mut self, interpreter: &[u8], argument: Option<&[u8]>) {
        let mut front = [Piece::Target; 2];
        let mut k = 0;
        if let Some(a) = argument {
            front[k] = self.store(a);
            k += 1;
        }
        front[k] = self.current;
        k += 1;
        self.prefix.copy_within(0..self.n, k);
        self.prefix[..k].copy_from_slice(&front[..k]);
        self.n += k;
        self.current = self.store(interpreter);
    }

    /// argv[1..] of the current file.
    fn args(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.prefix[..self.n]
            .iter()
            .map(|&p| self.get(p))
            .chain((1..self.argv.len()).filter_map(|i| self.argv.get(i)))
    }
}

/// How to start an allowed mutable script when the kernel itself refuses to execute files in
/// mutable roots (the Landlock seal): exec its first interpreter outside the mutable roots with
/// the argv the kernel's `binfmt_script` would have built.
pub struct Launch<'r, A: StrList + ?Sized>(Chain<'r, A>);

impl<A: StrList + ?Sized> Launch<'_, A> {
    /// The program to exec (an interpreter named in a `#!` line).
    pub fn program(&self) -> &[u8] {
        self.0.get(self.0.current)
    }
    /// The arguments the kernel would add before the caller's `argv[1..]`: the program, then
    /// the `#!` arguments and script names (at most `2 * MAX_CHAIN + 1`).
    pub fn added_args(&self) -> impl Iterator<Item = &[u8]> + '_ {
        core::iter::once(self.program())
            .chain(self.0.prefix[..self.0.n].iter().map(|&p| self.0.get(p)))
    }
    /// Its full argv: [`Launch::added_args`], then the caller's `argv[1..]`.
    pub fn argv(&self) -> impl Iterator<Item = &[u8]> + '_ {
        core::iter::once(self.program()).chain(self.0.args())
    }
}

/// Decides one exec call.
pub fn decide<S, A, E>(sys: &mut S, ctx: &Context<'_, '_>, req: &Request<'_, A, E>) -> Verdict
where
    S: Sys,
    A: StrList + ?Sized,
    E: StrList + ?Sized,
{
    let mut chain = Chain::new(req);
    let sys = &mut OncePerDecision::new(sys);
    match decide_chain(sys, ctx, req, &mut chain, &mut None, None) {
        Ok(reason) => Verdict::Allow(reason),
        Err(verdict) => verdict,
    }
}

/// [`decide`], and what to hand the kernel so that it runs exactly what was decided, whatever
/// the session renames in the meantime:
/// - for an allowed exec whose target is a script in a mutable root (directly or through nested
///   mutable scripts), the [`Launch`] that starts it through its interpreter (which reads the
///   script as text, so a swap leaves nothing native to run). Only path targets are rewritten:
///   for fd targets the kernel's own script name is a `/dev/fd/N` path the interpreter usually
///   cannot open;
/// - in `exec_as`, when the name given (the target's, or the launch interpreter's) went
///   through the write set, the file's canonical name, which lies wholly outside it; left
///   empty when the given name is already one the session cannot redirect (or for fd targets,
///   which the kernel runs by the descriptor).
pub fn decide_launch<'r, S, A, E>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    req: &Request<'r, A, E>,
    exec_as: &mut ExecName,
    launch: &mut Option<Launch<'r, A>>,
) -> Verdict
where
    S: Sys,
    A: StrList + ?Sized,
    E: StrList + ?Sized,
{
    let mut snapshot = None;
    exec_as.len = 0;
    *launch = None;
    let mut chain = Chain::new(req);
    let sys = &mut OncePerDecision::new(sys);
    match decide_chain(sys, ctx, req, &mut chain, &mut snapshot, Some(exec_as)) {
        Ok(reason) => {
            if let Some(at) = snapshot {
                // The arena only grows, so what the snapshot names is still there.
                chain.prefix = at.prefix;
                chain.n = at.n;
                chain.current = at.current;
                *launch = Some(Launch(chain));
            }
            Verdict::Allow(reason)
        }
        Err(verdict) => verdict,
    }
}

fn decide_chain<'r, S, A, E>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    req: &Request<'r, A, E>,
    chain: &mut Chain<'r, A>,
    launch: &mut Option<Snapshot>,
    mut exec_as: Option<&mut ExecName>,
) -> Result<Reason, Verdict>
where
    S: Sys,
    A: StrList + ?Sized,
    E: StrList + ?Sized,
{
    let policy = ctx.policy;
    let profile = policy.profile();
    if req.argv.is_empty() {
        return Err(deny(Reason::ArgvEmpty, req.target.name()));
    }
    if profile == Profile::Breakglass {
        return Ok(Reason::Breakglass);
    }
    check_environment(sys, ctx, req.envp)?;

    let mut hop = Hop::new();
    let remembered = recall(sys, ctx, req.target, &mut hop);
    if !remembered {
        let (at, follow) = req.target.at();
        inspect(sys, policy, at, follow, &mut hop)?;
    }
    // While every file so far is a mutable script, a launch may be needed.
    let mut all_mutable_scripts = matches!(req.target, Target::Path(_));
    for depth in 0..MAX_CHAIN {
        if !hop.info.is_regular() {
            return Err(Verdict::Kernel(EACCES));
        }
        let kpath = hop.kpath.as_bytes();
        let anonymous = is_anonymous(kpath) || hop.info.nlink == 0;
        let mutable = is_mutable(sys, policy, kpath, hop.info.nlink);
        if depth == 0 && !remembered && !mutable {
            offer(ctx, req.target, &hop);
        }
        let mut launched_here = false;
        if all_mutable_scripts && !mutable {
            all_mutable_scripts = false;
            if depth > 0 {
                *launch = Some(Snapshot {
                    prefix: chain.prefix,
                    n: chain.n,
                    current: chain.current,
                });
                launched_here = true;
            }
        }
        // The file the kernel is handed by name (the target, or a launch's interpreter): by
        // its canonical name when the given one could lead elsewhere later. A descriptor
        // target too (`fexecve`): another thread can `dup2` over the descriptor after this
        // check, so a file with a name is run by that name.
        let by_fd = depth == 0 && matches!(req.target, Target::Fd(_));
        let handed = (depth == 0 && !by_fd) || launched_here;
        // A relative name means what the cwd is when the kernel reads it, and another thread
        // can `chdir` after this check. An ELF keeps its `argv[0]` when run by its canonical
        // name; a script would not keep its `$0` (the kernel passes the name it was given,
        // and `bzcmp`, `xzegrep` choose what to do by it), so a relative script keeps its name.
        let relative_elf = depth == 0
            && matches!(req.target, Target::Path(p) if !p.starts_with(b"/"))
            && hop.head[..hop.head_len].starts_with(ELF_MAGIC);
        if ((handed && (hop.touched || relative_elf)) || (by_fd && !anonymous)) && !mutable {
            if let Some(out) = exec_as.take() {
                if !out.set(kpath) {
                    return Err(deny(Reason::PathTooLong, kpath));
                }
            }
        }
        let requested = chain.get(chain.current);
        check_allowed(policy, requested, hop.touched, kpath)?;
        check_protected(sys, ctx, &hop.info, kpath)?;
        if depth == 0 && policy.is_own_loader(requested, kpath) {
            check_own_loader(sys, ctx, requested, chain.args(), req.envp)?;
        }
        if !hop.readable {
            return if mutable {
                Err(deny(Reason::UnreadableMutable, kpath))
            } else {
                Ok(Reason::Allowed)
            };
        }
        let buf = shebang::pad(&hop.head[..hop.head_len]);
        if buf.starts_with(ELF_MAGIC) {
            if mutable {
                check_native(profile, anonymous, Reason::MutableNative, kpath)?;
            }
            if is_loader_name(kpath) || is_loader_name(requested) {
                check_loader(sys, ctx, chain.args())?;
            }
            return Ok(Reason::Allowed);
        }
        let Shebang::Script {
            interpreter,
            argument,
        } = shebang::parse(&buf)
        else {
            // Neither ELF nor a valid #!: the kernel answers ENOEXEC unless binfmt_misc knows the
            // format. The guard cannot know binfmt_misc's handlers cheaply, so for mutable files
            // it gives the kernel's ordinary answer and runs nothing.
            return if mutable && !profile.allows_mutable_native() {
                Err(deny_errno(Reason::MutableUnknownFormat, ENOEXEC, kpath))
            } else {
                Ok(Reason::Allowed)
            };
        };
        if interpreter.is_empty() {
            return Err(Verdict::Kernel(EACCES)); // `#!` alone: the kernel's own answer
        }
        if depth + 1 == MAX_CHAIN {
            return Err(deny_errno(Reason::ShebangTooDeep, ELOOP, kpath));
        }
        if mutable {
            check_script_runtime(sys, ctx, interpreter, argument, req.envp, kpath)?;
        }
        chain.enter_interpreter(interpreter, argument);
        let next = chain.get(chain.current);
        inspect(sys, policy, At::Cwd(next), true, &mut hop)?;
    }
    unreachable_chain()
}

#[cold]
fn unreachable_chain() -> Result<Reason, Verdict> {
    // The loop returns at depth MAX_CHAIN - 1 at the latest.
    Err(deny(Reason::InternalError, b""))
}

fn check_native(
    profile: Profile,
    anonymous: bool,
    reason: Reason,
    path: &[u8],
) -> Result<(), Verdict> {
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
    Ok(())
}

/// Is the command on the allow-list? By the file's kernel name, or by the name it was asked
/// for when the session could not have made that name (`redirectable`: it went through the
/// write set, where `ln -s /usr/bin/perl ls` would make any program an allowed `ls`).
fn check_allowed(
    policy: &Policy<'_>,
    requested: &[u8],
    redirectable: bool,
    kpath: &[u8],
) -> Result<(), Verdict> {
    if !policy.has_allow_list() {
        return Ok(());
    }
    let asked = (!redirectable).then_some(requested);
    let ok = policy.allow_commands().any(|entry| {
        if entry.contains(&b'/') {
            asked == Some(entry) || entry == kpath
        } else {
            asked.is_some_and(|r| entry == basename(r)) || entry == basename(kpath)
        }
    });
    if ok {
        Ok(())
    } else {
        Err(deny(
            Reason::CommandNotAllowed,
            if requested.is_empty() {
                kpath
            } else {
                requested
            },
        ))
    }
}

fn check_protected<S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    file: &FileInfo,
    kpath: &[u8],
) -> Result<(), Verdict> {
    match ctx.runtimes.runtime_of(ctx.policy, file, kpath) {
        None => Ok(()),
        Some(i) => check_runtime_caller(sys, ctx, i, kpath),
    }
}

/// The target is protected runtime `i`: is the caller allowed to start it? (Out of line: its
/// buffers stay off the stack of ordinary execs.)
#[inline(never)]
#[cold]
fn check_runtime_caller<S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    i: usize,
    kpath: &[u8],
) -> Result<(), Verdict> {
    let Some(rt) = ctx.policy.runtimes().nth(i) else {
        return Err(deny(Reason::InternalError, kpath));
    };
    let proc_gone = |_| deny(Reason::ProcUnavailable, b"/proc/self/exe");
    let caller = sys.caller_exe().map_err(proc_gone)?;
    let mut caller_path = PathBuf::new();
    if ctx.runtimes.has_dir(ctx.policy, rt.name) {
        sys.caller_exe_path(&mut caller_path).map_err(proc_gone)?;
    }
    if ctx
        .runtimes
        .caller_may_start(ctx.policy, rt.name, &caller, caller_path.as_bytes())
    {
        Ok(())
    } else {
        Err(deny(Reason::ProtectedRuntimeDirect, kpath))
    }
}

/// A file's identity and kernel name, without reading it.
#[inline(never)]
fn identify<S: Sys>(sys: &mut S, path: &[u8]) -> Option<(FileInfo, PathBuf)> {
    let mut kpath = PathBuf::new();
    let info = name_file(sys, path, &mut kpath).ok()?;
    Some((info, kpath))
}

/// Why [`name_file`] could not name a file.
enum Unnamed {
    /// The kernel would not open it.
    Unopenable,
    /// It opened, but `/proc` could not name it.
    ProcGone,
}

/// Opens `path` (`O_PATH`, following symlinks) for its identity and, into `kpath`, its
/// kernel name: by the engine's own walk when it can, else through `/proc`.
fn name_file<S: Sys>(sys: &mut S, path: &[u8], kpath: &mut PathBuf) -> Result<FileInfo, Unnamed> {
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

/// Shared objects and code directories named by the new environment: every variable glibc
/// loads code from ([`crate::env`]), every occurrence (the loader honours the last `LD_*`
/// entry, getenv the first).
fn check_environment<S: Sys, E: StrList + ?Sized>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    envp: &E,
) -> Result<(), Verdict> {
    // Every code variable starts with `G` or `L` (`code_use`): the others are not measured.
    let may_load = |i: &usize| matches!(envp.first_byte(*i), Some(b'G' | b'L'));
    for entry in (0..envp.len()).filter(may_load).filter_map(|i| envp.get(i)) {
        match code_use(entry) {
            None | Some((EnvUse::NoCode(_), _)) => {}
            Some((EnvUse::Objects, list)) => check_objects(sys, ctx, list)?,
            Some((EnvUse::CodeDirs, dirs)) => check_library_dirs(sys, ctx, dirs)?,
        }
    }
    Ok(())
}

/// `LD_PRELOAD`/`LD_AUDIT`/`--preload`/`--audit` lists: entries split at `:` and blanks.
/// Names without `/` are searched in library directories, which are checked on their own.
fn check_objects<S: Sys>(sys: &mut S, ctx: &Context<'_, '_>, list: &[u8]) -> Result<(), Verdict> {
    let entries = list.split(|&c| c == b':' || c == b' ' || c == b'\t');
    for entry in entries.filter(|e| e.contains(&b'/')) {
        if Some(entry) == ctx.self_lib {
            continue;
        }
        check_mutable_object(sys, ctx, entry, Reason::PreloadMutable)?;
    }
    Ok(())
}

/// Decides a shared object about to be mapped into the running process (`dlopen` with a path).
pub fn decide_object<S: Sys>(sys: &mut S, ctx: &Context<'_, '_>, path: &[u8]) -> Verdict {
    if ctx.policy.profile() == Profile::Breakglass {
        return Verdict::Allow(Reason::Breakglass);
    }
    let sys = &mut OncePerDecision::new(sys);
    match check_mutable_object(sys, ctx, path, Reason::MutableNative) {
        Ok(()) => Verdict::Allow(Reason::Allowed),
        Err(v) => v,
    }
}

/// Decides a list of code directories a running process is about to load from (`GCONV_PATH`
/// read by `iconv_open`).
pub fn decide_code_dirs<S: Sys>(sys: &mut S, ctx: &Context<'_, '_>, dirs: &[u8]) -> Verdict {
    if ctx.policy.profile() == Profile::Breakglass {
        return Verdict::Allow(Reason::Breakglass);
    }
    let sys = &mut OncePerDecision::new(sys);
    match check_library_dirs(sys, ctx, dirs) {
        Ok(()) => Verdict::Allow(Reason::Allowed),
        Err(v) => v,
    }
}

/// `LD_LIBRARY_PATH`/`GCONV_PATH`/`--library-path`: entries split at `:` and `;`; an empty
/// entry is the cwd.
fn check_library_dirs<S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    list: &[u8],
) -> Result<(), Verdict> {
    for dir in list.split(|&c| c == b':' || c == b';') {
        let dir = if dir.is_empty() { &b"."[..] } else { dir };
        check_mutable_object(sys, ctx, dir, Reason::LibraryPathMutable)?;
    }
    Ok(())
}

/// Refuses an object or directory that resolves into a mutable root (or has no name on disk).
/// One that cannot be opened is refused too, unless it is absolute and lexically outside every
/// mutable root: otherwise it could be created there between this check and the loader's open.
#[inline(never)]
fn check_mutable_object<S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    entry: &[u8],
    reason: Reason,
) -> Result<(), Verdict> {
    let profile = ctx.policy.profile();
    let mut kpath = PathBuf::new();
    let info = match name_file(sys, entry, &mut kpath) {
        Ok(info) => info,
        Err(Unnamed::Unopenable) => {
            return match lexical_normal(entry) {
                Some(p) if ctx.policy.mutable_root_of(p.as_bytes()).is_none() => Ok(()),
                _ if profile.allows_mutable_native() => Ok(()),
                _ => Err(deny(reason, entry)),
            };
        }
        Err(Unnamed::ProcGone) => return Err(deny(Reason::ProcUnavailable, entry)),
    };
    let kp = kpath.as_bytes();
    let anonymous = is_anonymous(kp) || info.nlink == 0;
    if is_mutable(sys, ctx.policy, kp, info.nlink) {
        check_native(profile, anonymous, reason, kp)?;
    }
    Ok(())
}

/// `/a/./b/../c` → `/a/c` for absolute paths; `None` for relative or overlong ones.
#[inline(never)]
fn lexical_normal(path: &[u8]) -> Option<PathBuf> {
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

const LOADER_FLAGS: [&[u8]; 5] = [
    b"--list",
    b"--verify",
    b"--inhibit-cache",
    b"--list-tunables",
    b"--list-diagnostics",
];
const LOADER_VALUED: [&[u8]; 7] = [
    b"--library-path",
    b"--inhibit-rpath",
    b"--audit",
    b"--preload",
    b"--argv0",
    b"--glibc-hwcaps-prepend",
    b"--glibc-hwcaps-mask",
];

/// `ld-linux*.so [options] PROGRAM ...`: the loader maps PROGRAM and the objects its options
/// name. Options are matched exactly, as glibc's rtld does; the first other word is PROGRAM.
#[inline(never)]
fn check_loader<'a, S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    mut args: impl Iterator<Item = &'a [u8]>,
) -> Result<(), Verdict> {
    while let Some(arg) = args.next() {
        if LOADER_FLAGS.contains(&arg) {
            continue;
        }
        if arg == b"--help" || arg == b"--version" {
            return Ok(());
        }
        if LOADER_VALUED.contains(&arg) {
            let Some(value) = args.next() else {
                return Ok(());
            }; // rtld then treats the option as the program name and fails
            match arg {
                b"--library-path" => check_library_dirs(sys, ctx, value)?,
                b"--audit" | b"--preload" => check_objects(sys, ctx, value)?,
                _ => {}
            }
            continue;
        }
        // The program. Without a `/` rtld searches library directories for it: refuse, since
        // the guard would have to replay that search to know which file runs.
        if !arg.contains(&b'/') {
            return Err(deny(Reason::LoaderAmbiguous, arg));
        }
        let mut hop = Hop::new();
        inspect(sys, ctx.policy, At::Cwd(arg), true, &mut hop).map_err(|v| match v {
            Verdict::Kernel(_) => deny(Reason::LoaderAmbiguous, arg),
            other => other,
        })?;
        let kpath = hop.kpath.as_bytes();
        check_allowed(ctx.policy, arg, hop.touched, kpath)?;
        check_protected(sys, ctx, &hop.info, kpath)?;
        let anonymous = is_anonymous(kpath) || hop.info.nlink == 0;
        if is_mutable(sys, ctx.policy, kpath, hop.info.nlink) {
            check_native(
                ctx.policy.profile(),
                anonymous,
                Reason::MutableNative,
                kpath,
            )?;
        }
        return Ok(());
    }
    Ok(())
}

/// qemu-user's options that take a separate value (valgrind's never do: `--opt=value`).
const QEMU_VALUED: [&[u8]; 17] = [
    b"-g",
    b"-L",
    b"-s",
    b"-cpu",
    b"-E",
    b"-U",
    b"-0",
    b"-r",
    b"-d",
    b"-D",
    b"-dfilter",
    b"-p",
    b"-seed",
    b"-trace",
    b"-plugin",
    b"-B",
    b"-R",
];

/// A program with its own loader (valgrind, qemu-user, ...; the policy's `own_loaders`) maps
/// the program named by its first non-option argument without exec'ing it: refused, as for
/// the dynamic loader, when that is an ELF file from a mutable root. A name without `/` is
/// looked up both as a file in the current directory (qemu) and on `PATH` (valgrind).
#[inline(never)]
fn check_own_loader<'a, S: Sys, E: StrList + ?Sized>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    loader: &[u8],
    mut args: impl Iterator<Item = &'a [u8]>,
    envp: &E,
) -> Result<(), Verdict> {
    let qemu = basename(loader).starts_with(b"qemu-");
    let program = loop {
        let Some(arg) = args.next() else {
            return Ok(());
        };
        if arg == b"--" {
            match args.next() {
                Some(p) => break p,
                None => return Ok(()),
            }
        }
        if !arg.starts_with(b"-") || arg == b"-" {
            break arg;
        }
        if qemu && QEMU_VALUED.contains(&arg) {
            args.next();
        }
    };
    check_loaded_program(sys, ctx, program)?;
    if !program.contains(&b'/') {
        for candidate in path_candidates(env_get(envp, b"PATH"), program) {
            if sys.is_executable(candidate.as_bytes()) {
                return check_loaded_program(sys, ctx, candidate.as_bytes());
            }
        }
    }
    Ok(())
}

/// One program a loader of its own would map: refused when it is a mutable (or anonymous) ELF.
fn check_loaded_program<S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    program: &[u8],
) -> Result<(), Verdict> {
    let mut hop = Hop::new();
    if inspect(sys, ctx.policy, At::Cwd(program), true, &mut hop).is_err() || !hop.info.is_regular()
    {
        return Ok(()); // nothing there to map: the loader fails on its own
    }
    let kpath = hop.kpath.as_bytes();
    let anonymous = is_anonymous(kpath) || hop.info.nlink == 0;
    let elf = hop.head[..hop.head_len].starts_with(ELF_MAGIC);
    if (elf || !hop.readable) && is_mutable(sys, ctx.policy, kpath, hop.info.nlink) {
        check_native(
            ctx.policy.profile(),
            anonymous,
            Reason::MutableNative,
            kpath,
        )?;
    }
    Ok(())
}

/// A mutable script must not select a protected runtime: directly, through the loader, or
/// through `env` (including `-S` and a `PATH=` assignment).
#[inline(never)]
fn check_script_runtime<S: Sys, E: StrList + ?Sized>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    interpreter: &[u8],
    argument: Option<&[u8]>,
    envp: &E,
    script: &[u8],
) -> Result<(), Verdict> {
    let refuse = || deny(Reason::ProtectedRuntimeScript, script);
    let is_runtime = |sys: &mut S, path: &[u8]| {
        identify(sys, path).is_some_and(|(info, kpath)| {
            ctx.runtimes
                .runtime_of(ctx.policy, &info, kpath.as_bytes())
                .is_some()
        })
    };
    if is_runtime(sys, interpreter) {
        return Err(refuse());
    }
    if is_loader_name(interpreter) {
        // The loader gets the whole argument as one word; a word without `/` is refused by the
        // loader check of the next hop.
        if let Some(program) = argument {
            if is_runtime(sys, program) {
                return Err(refuse());
            }
        }
        return Ok(());
    }
    if basename(interpreter) != b"env" {
        return Ok(());
    }
    let Some(argument) = argument else {
        return Ok(());
    };
    let ambiguous = || deny(Reason::ShebangAmbiguous, script);
    // Without -S, env sees the argument as one word; with -S it splits it (quotes, escapes and
    // ${VAR} expansions are refused rather than replayed).
    let split = argument
        .strip_prefix(b"--split-string=")
        .or_else(|| argument.strip_prefix(b"-S"))
        .or_else(|| argument.strip_prefix(b"--split-string"));
    let mut path_override: Option<&[u8]> = None;
    let mut command: Option<&[u8]> = None;
    let mut single = [argument];
    let list: &mut dyn Iterator<Item = &[u8]> = match split {
        Some(s) => {
            if s.iter().any(|c| matches!(c, b'\\' | b'\'' | b'"' | b'$')) {
                return Err(ambiguous());
            }
            &mut words(s)
        }
        None => &mut single.iter_mut().map(|w| &**w),
    };
    let mut options = true;
    let mut skip_value = false;
    for word in list {
        if skip_value {
            skip_value = false;
            continue;
        }
        if options && word.starts_with(b"-") {
            match word {
                b"--" => options = false,
                b"-" | b"-i" | b"--ignore-environment" | b"-0" | b"--null" | b"-v" | b"--debug" => {
                }
                b"-u" | b"--unset" => skip_value = true,
                w if w.starts_with(b"-u") || w.starts_with(b"--unset=") => {}
                w if w.starts_with(b"--block-signal")
                    || w.starts_with(b"--default-signal")
                    || w.starts_with(b"--ignore-signal") => {}
                _ => return Err(ambiguous()), // -C/--chdir, nested -S, unknown options
            }
            continue;
        }
        options = false;
        if let Some(eq) = word.iter().position(|&c| c == b'=') {
            if &word[..eq] == b"PATH" {
                path_override = Some(&word[eq + 1..]);
            }
            continue;
        }
        command = Some(word);
        break;
    }
    let Some(command) = command else {
        return Ok(());
    };
    if command.contains(&b'/') {
        return if is_runtime(sys, command) {
            Err(refuse())
        } else {
            Ok(())
        };
    }
    let search = path_override.or_else(|| env_get(envp, b"PATH"));
    for candidate in path_candidates(search, command) {
        if sys.is_executable(candidate.as_bytes()) {
            return if is_runtime(sys, candidate.as_bytes()) {
                Err(refuse())
            } else {
                Ok(())
            };
        }
    }
    Ok(())
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

/// The rules, table-driven against the in-memory [`crate::memsys::MemSys`] (no processes):
/// each row is a file tree, a policy, one exec call and what the engine must answer, including
/// what it hands the kernel (the launch argv, the canonical name).
#[cfg(test)]
mod rule_tests {
    use super::*;
    use crate::memsys::MemSys;
    use crate::sys::ENOENT;
    use std::vec::Vec;

    #[derive(Debug, PartialEq)]
    enum Want {
        Allow,
        Deny(Reason),
        Kernel(Errno),
        /// Allowed, started through this argv (program first).
        Launch(&'static [&'static [u8]]),
        /// Allowed, handed to the kernel by this canonical name.
        ExecAs(&'static [u8]),
    }

    struct Row {
        what: &'static str,
        tree: fn(&mut MemSys),
        policy: &'static str,
        target: &'static [u8],
        argv: &'static [&'static [u8]],
        envp: &'static [&'static [u8]],
        want: Want,
    }

    const WS: &str = "version = 1\nworkspace = \"/ws\"\n";

    fn base(s: &mut MemSys) {
        s.elf(b"/usr/bin/ls")
            .elf(b"/usr/bin/dash")
            .symlink(b"/bin", b"usr/bin")
            .symlink(b"/usr/bin/sh", b"dash")
            .elf(b"/usr/bin/valgrind")
            .elf(b"/ws/payload")
            .elf(b"/ws/evil.so")
            .script(b"/ws/build.sh", b"#!/bin/sh\necho hi\n")
            .script(b"/ws/evil.sh", b"#!/ws/payload\n")
            .symlink(b"/ws/link", b"/usr/bin/ls")
            .dir(b"/tmp")
            .dir(b"/opt")
            .elf(b"/opt/tool")
            .cwd_at(b"/ws");
    }

    /// `/ws/x`, a plain directory the session may replace by a symlink; `/ws/ls`, a symlink
    /// it made, named after a command the allow-list names.
    fn ws_tricks(s: &mut MemSys) {
        base(s);
        s.dir(b"/ws/x").symlink(b"/ws/ls", b"/usr/bin/dash");
    }

    /// `/opt` belongs to the session's user, mode `r-x`: it may `chmod` it and replace the tool.
    fn owned_opt(s: &mut MemSys) {
        base(s);
        s.owned(b"/opt");
    }

    fn owned_opt_root(s: &mut MemSys) {
        owned_opt(s);
        s.as_root();
    }

    fn writable_opt(s: &mut MemSys) {
        base(s);
        s.writable(b"/opt");
    }

    fn writable_opt_root(s: &mut MemSys) {
        writable_opt(s);
        s.as_root();
    }

    const ROWS: &[Row] = &[
        Row {
            what: "system ELF",
            tree: base,
            policy: WS,
            target: b"/usr/bin/ls",
            argv: &[b"ls"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "workspace ELF",
            tree: base,
            policy: WS,
            target: b"/ws/payload",
            argv: &[b"payload"],
            envp: &[],
            want: Want::Deny(Reason::MutableNative),
        },
        Row {
            what: "relative workspace ELF",
            tree: base,
            policy: WS,
            target: b"./payload",
            argv: &[b"payload"],
            envp: &[],
            want: Want::Deny(Reason::MutableNative),
        },
        Row {
            what: "development allows it",
            tree: base,
            policy: "version = 1\nworkspace = \"/ws\"\nprofile = \"development\"\n",
            target: b"/ws/payload",
            argv: &[b"payload"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "missing",
            tree: base,
            policy: WS,
            target: b"/ws/nothing",
            argv: &[b"x"],
            envp: &[],
            want: Want::Kernel(ENOENT),
        },
        Row {
            what: "workspace script starts through its interpreter",
            tree: base,
            policy: WS,
            target: b"/ws/build.sh",
            argv: &[b"build.sh", b"a"],
            envp: &[],
            want: Want::Launch(&[b"/bin/sh", b"/ws/build.sh", b"a"]),
        },
        Row {
            what: "script naming a workspace ELF",
            tree: base,
            policy: WS,
            target: b"/ws/evil.sh",
            argv: &[b"evil.sh"],
            envp: &[],
            want: Want::Deny(Reason::MutableNative),
        },
        Row {
            what: "workspace symlink to a system program: canonical name",
            tree: base,
            policy: WS,
            target: b"/ws/link",
            argv: &[b"link"],
            envp: &[],
            want: Want::ExecAs(b"/usr/bin/ls"),
        },
        Row {
            what: "relative name through the workspace: canonical name",
            tree: base,
            policy: WS,
            target: b"link",
            argv: &[b"link"],
            envp: &[],
            want: Want::ExecAs(b"/usr/bin/ls"),
        },
        Row {
            what: "system symlink: the caller's own name",
            tree: base,
            policy: WS,
            target: b"/bin/sh",
            argv: &[b"sh"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "LD_PRELOAD from the workspace",
            tree: base,
            policy: WS,
            target: b"/usr/bin/ls",
            argv: &[b"ls"],
            envp: &[b"LD_PRELOAD=/ws/evil.so"],
            want: Want::Deny(Reason::PreloadMutable),
        },
        Row {
            what: "the last LD_PRELOAD counts too",
            tree: base,
            policy: WS,
            target: b"/usr/bin/ls",
            argv: &[b"ls"],
            envp: &[b"LD_PRELOAD=", b"LD_PRELOAD=/ws/evil.so"],
            want: Want::Deny(Reason::PreloadMutable),
        },
        Row {
            what: "GCONV_PATH in the workspace",
            tree: base,
            policy: WS,
            target: b"/usr/bin/ls",
            argv: &[b"ls"],
            envp: &[b"GCONV_PATH=/ws"],
            want: Want::Deny(Reason::LibraryPathMutable),
        },
        Row {
            what: "LD_ORIGIN_PATH in the workspace",
            tree: base,
            policy: WS,
            target: b"/usr/bin/ls",
            argv: &[b"ls"],
            envp: &[b"LD_ORIGIN_PATH=/ws"],
            want: Want::Deny(Reason::LibraryPathMutable),
        },
        Row {
            what: "data variables name the workspace freely",
            tree: base,
            policy: WS,
            target: b"/usr/bin/ls",
            argv: &[b"ls"],
            envp: &[b"TMPDIR=/tmp", b"LOCPATH=/ws", b"NLSPATH=/ws"],
            want: Want::Allow,
        },
        Row {
            what: "valgrind of a workspace ELF",
            tree: base,
            policy: WS,
            target: b"/usr/bin/valgrind",
            argv: &[b"valgrind", b"-q", b"./payload"],
            envp: &[],
            want: Want::Deny(Reason::MutableNative),
        },
        Row {
            what: "valgrind of a system program",
            tree: base,
            policy: WS,
            target: b"/usr/bin/valgrind",
            argv: &[b"valgrind", b"/usr/bin/ls", b"/ws/payload"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "own_loaders = [] names none",
            tree: base,
            policy: "version = 1\nworkspace = \"/ws\"\nown_loaders = []\n",
            target: b"/usr/bin/valgrind",
            argv: &[b"valgrind", b"./payload"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "allow-list",
            tree: base,
            policy: "version = 1\nworkspace = \"/ws\"\nallow_commands = [\"dash\"]\n",
            target: b"/usr/bin/ls",
            argv: &[b"ls"],
            envp: &[],
            want: Want::Deny(Reason::CommandNotAllowed),
        },
        Row {
            what: "a program the user can replace, unsealed",
            tree: writable_opt,
            policy: WS,
            target: b"/opt/tool",
            argv: &[b"tool"],
            envp: &[],
            want: Want::Deny(Reason::MutableNative),
        },
        Row {
            what: "the same for root: only the write set",
            tree: writable_opt_root,
            policy: WS,
            target: b"/opt/tool",
            argv: &[b"tool"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "the same sealed: the kernel's partition",
            tree: writable_opt,
            policy: "version = 1\nworkspace = \"/ws\"\nseal = true\n",
            target: b"/opt/tool",
            argv: &[b"tool"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "a program in a directory the user owns, write bits off, unsealed",
            tree: owned_opt,
            policy: WS,
            target: b"/opt/tool",
            argv: &[b"tool"],
            envp: &[],
            want: Want::Deny(Reason::MutableNative),
        },
        Row {
            what: "the same for root: only the write set",
            tree: owned_opt_root,
            policy: WS,
            target: b"/opt/tool",
            argv: &[b"tool"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "the same sealed",
            tree: owned_opt,
            policy: "version = 1\nworkspace = \"/ws\"\nseal = true\n",
            target: b"/opt/tool",
            argv: &[b"tool"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "a `..` after a directory in the write set: handed by its kernel name",
            tree: ws_tricks,
            policy: WS,
            target: b"/ws/x/../../usr/bin/ls",
            argv: &[b"ls"],
            envp: &[],
            want: Want::ExecAs(b"/usr/bin/ls"),
        },
        Row {
            what: "allow-list: a symlink the session made, named after an allowed command",
            tree: ws_tricks,
            policy: "version = 1\nworkspace = \"/ws\"\nallow_commands = [\"ls\"]\n",
            target: b"/ws/ls",
            argv: &[b"ls"],
            envp: &[],
            want: Want::Deny(Reason::CommandNotAllowed),
        },
        Row {
            what: "allow-list: a name through symlinks outside the write set counts",
            tree: ws_tricks,
            policy: "version = 1\nworkspace = \"/ws\"\nallow_commands = [\"sh\"]\n",
            target: b"/bin/sh",
            argv: &[b"sh"],
            envp: &[],
            want: Want::Allow,
        },
        Row {
            what: "empty argv",
            tree: base,
            policy: WS,
            target: b"/usr/bin/ls",
            argv: &[],
            envp: &[],
            want: Want::Deny(Reason::ArgvEmpty),
        },
    ];

    /// What the engine answered for `row`, in the row's terms (`None`: as wanted).
    fn mismatch(row: &Row) -> Option<std::string::String> {
        let mut sys = MemSys::new();
        (row.tree)(&mut sys);
        let policy = Policy::parse(row.policy.as_bytes()).unwrap();
        let ctx = Context {
            policy: &policy,
            runtimes: &RuntimeIds::NONE,
            self_lib: None,
            memo: None,
        };
        let req = Request {
            target: Target::Path(row.target),
            given_name: None,
            argv: row.argv,
            envp: row.envp,
        };
        let mut exec_as = ExecName::new();
        let mut launch = None;
        let verdict = decide_launch(&mut sys, &ctx, &req, &mut exec_as, &mut launch);
        let launch: Option<Vec<Vec<u8>>> = launch.map(|l| l.argv().map(<[u8]>::to_vec).collect());
        let ok = match (&row.want, &verdict) {
            (Want::Allow, Verdict::Allow(_)) => launch.is_none() && exec_as.as_bytes().is_empty(),
            (Want::Launch(w), Verdict::Allow(_)) => launch
                .as_ref()
                .is_some_and(|l| l.iter().map(Vec::as_slice).eq(w.iter().copied())),
            (Want::ExecAs(w), Verdict::Allow(_)) => launch.is_none() && exec_as.as_bytes() == *w,
            (Want::Deny(r), Verdict::Deny { reason, .. }) => r == reason,
            (Want::Kernel(e), Verdict::Kernel(k)) => e == k,
            _ => false,
        };
        (!ok).then(|| {
            std::format!(
                "{}: want {:?}, got {verdict:?}, launch {launch:?}, exec as {:?}",
                row.what,
                row.want,
                crate::text::Lossy(exec_as.as_bytes())
            )
        })
    }

    #[test]
    fn every_rule_row() {
        let failed: Vec<_> = ROWS.iter().filter_map(mismatch).collect();
        assert!(failed.is_empty(), "{failed:#?}");
    }

    #[test]
    fn the_double_records_every_call() {
        let mut sys = MemSys::new();
        base(&mut sys);
        let policy = Policy::parse(WS.as_bytes()).unwrap();
        let ctx = Context {
            policy: &policy,
            runtimes: &RuntimeIds::NONE,
            self_lib: None,
            memo: None,
        };
        let req = Request {
            target: Target::Path(b"/usr/bin/ls"),
            given_name: None,
            argv: &[&b"ls"[..]][..],
            envp: &[][..],
        };
        assert!(decide(&mut sys, &ctx, &req).is_allow());
        // Unsealed and not root: the permission walk asked the kernel about the file and
        // every directory, and who owns each (its owner could make it writable).
        for p in ["/usr/bin/ls", "/usr/bin", "/usr", "/"] {
            for call in ["may_write", "stat"] {
                assert!(
                    sys.calls.iter().any(|c| *c == std::format!("{call} {p}")),
                    "{call} {p}: {:?}",
                    sys.calls
                );
            }
        }
    }

    /// Decides `target` (argv `[target]`, no environment) `n` times with one memo, and returns
    /// the verdicts and how many times the target was opened.
    fn decide_with_memo(
        sys: &mut MemSys,
        policy: &str,
        target: &[u8],
        table: &crate::memo::MemoTable,
        seen: &core::sync::atomic::AtomicU64,
        n: usize,
    ) -> (Vec<Verdict>, usize) {
        let policy = Policy::parse(policy.as_bytes()).unwrap();
        let ctx = Context {
            policy: &policy,
            runtimes: &RuntimeIds::NONE,
            self_lib: None,
            memo: Some(Memo::new(table, Some(seen))),
        };
        let argv = [target];
        let req = Request {
            target: Target::Path(target),
            given_name: None,
            argv: &argv[..],
            envp: &[][..],
        };
        let opened = std::format!("open {}", crate::text::Lossy(target));
        let count = |sys: &MemSys| sys.calls.iter().filter(|c| **c == opened).count();
        let before = count(sys);
        let verdicts = (0..n).map(|_| decide(sys, &ctx, &req)).collect();
        let opens = count(sys) - before;
        (verdicts, opens)
    }

    const SEALED: &str = "version = 1\nworkspace = \"/ws\"\nseal = true\n";

    #[test]
    fn a_sealed_session_remembers_an_immutable_elf_decided_twice_in_a_row() {
        let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
        let mut sys = MemSys::new();
        base(&mut sys);
        let (v, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 5);
        assert!(v.iter().all(Verdict::is_allow), "{v:?}");
        // Opened by the first two decisions; the next three asked for a stat only.
        assert_eq!(opens, 2, "{:?}", sys.calls);
    }

    #[test]
    fn a_name_through_symlinks_outside_the_write_set_is_remembered_with_its_kernel_name() {
        // `/bin/sh` reaches `/usr/bin/dash` through two symlinks; the allow-list names the
        // kernel's file, so a remembered decision must still know it.
        for (allow, want_allow) in [("dash", true), ("ls", false)] {
            let policy = std::format!("{SEALED}allow_commands = [\"{allow}\"]\n");
            let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
            let mut sys = MemSys::new();
            base(&mut sys);
            let (v, _) = decide_with_memo(&mut sys, &policy, b"/bin/sh", &table, &seen, 5);
            let opened = sys
                .calls
                .iter()
                .filter(|c| *c == "open /usr/bin/dash")
                .count();
            assert_eq!(opened, 2, "{:?}", sys.calls);
            assert!(
                v.iter().all(|v| v.is_allow() == want_allow),
                "{allow}: {v:?}"
            );
        }
    }

    #[test]
    fn a_remembered_file_changed_or_replaced_is_inspected_again() {
        let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
        let mut sys = MemSys::new();
        base(&mut sys);
        let (_, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 3);
        assert_eq!(opens, 2);
        // Written or chmod'ed in place: a later change time.
        sys.touch(b"/usr/bin/ls");
        let (v, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 1);
        assert_eq!(opens, 1, "{:?}", sys.calls);
        assert!(v[0].is_allow());
        // Replaced by a script whose interpreter is a workspace ELF: decided afresh, refused.
        let (_, _) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 2);
        sys.script(b"/usr/bin/ls", b"#!/ws/payload\n");
        let (v, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 1);
        assert_eq!(opens, 1, "{:?}", sys.calls);
        assert!(
            matches!(
                v[0],
                Verdict::Deny {
                    reason: Reason::MutableNative,
                    ..
                }
            ),
            "{v:?}"
        );
    }

    #[test]
    fn unsealed_sessions_and_mutable_targets_are_never_remembered() {
        for (policy, target) in [
            (WS, &b"/usr/bin/ls"[..]),
            (SEALED, &b"/ws/payload"[..]),
            (SEALED, &b"../usr/bin/ls"[..]), // relative: another file in another cwd
            (SEALED, &b"/ws/link"[..]),      // a symlink in the write set
            (SEALED, &b"/usr/bin/../bin/ls"[..]), // not a normal name
            (SEALED, &b"/usr//bin/ls"[..]),
        ] {
            let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
            let mut sys = MemSys::new();
            base(&mut sys);
            let opens = |sys: &MemSys| sys.calls.iter().filter(|c| c.starts_with("open ")).count();
            decide_with_memo(&mut sys, policy, target, &table, &seen, 1);
            let first = opens(&sys);
            decide_with_memo(&mut sys, policy, target, &table, &seen, 3);
            // Opened as often by every later decision as by the first.
            assert!(first > 0, "{}: {:?}", crate::text::Lossy(target), sys.calls);
            assert_eq!(
                opens(&sys),
                4 * first,
                "{}: {:?}",
                crate::text::Lossy(target),
                sys.calls
            );
        }
    }
}
