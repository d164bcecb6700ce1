//! The engine's [`Sys`] seam over raw libc calls: no allocation, no locks, no std. Shared by
//! the preload library, the CLI and the wrappers, so all of them see files the same way.
#![no_std]

pub mod audit;
pub mod raw;

use core::ffi::CStr;
use core::mem::MaybeUninit;
use execguard_policy::path::PathBuf;
use execguard_policy::sys::{At, Errno, FileInfo, OpenMode, StrList, Sys, ENAMETOOLONG};
use libc::{c_char, c_int, c_long};

/// A NUL-terminated copy of `path` on the stack (only the path and its NUL are written).
pub struct CPath {
    buf: PathBuf,
}

impl CPath {
    // Inlined so the 4 KiB buffer is built where it is used, not copied out of a Result.
    #[inline(always)]
    pub fn new(path: &[u8]) -> Result<Self, Errno> {
        let mut buf = PathBuf::from_bytes(path).map_err(|_| ENAMETOOLONG)?;
        buf.as_c_bytes();
        Ok(CPath { buf })
    }
    /// The NUL-terminated path (`new` wrote the NUL right after it).
    pub fn ptr(&self) -> *const c_char {
        self.buf.as_bytes().as_ptr().cast()
    }
}

/// `path` as a C string in `buf` (filled in place: moving a 4 KiB buffer costs more than the
/// system call it feeds).
pub fn c_path(buf: &mut PathBuf, path: &[u8]) -> Result<*const c_char, Errno> {
    buf.push_bytes(path).map_err(|_| ENAMETOOLONG)?;
    Ok(buf.as_c_bytes().as_ptr().cast())
}

/// Calls `f` with `path` as a C string. Short paths (the common case) are copied into a small
/// stack buffer: the exec path runs in fork children, where every stack page written is a page
/// fault, so a 4 KiB buffer per system call costs more than the call.
#[inline(always)]
pub fn with_c_path<R>(path: &[u8], f: impl FnOnce(*const c_char) -> R) -> Result<R, Errno> {
    const SHORT: usize = 256;
    if path.len() >= SHORT {
        return with_long_c_path(path, f);
    }
    let mut buf = [MaybeUninit::<u8>::uninit(); SHORT];
    for (slot, &b) in buf.iter_mut().zip(path) {
        slot.write(b);
    }
    buf[path.len()].write(0);
    Ok(f(buf.as_ptr().cast()))
}

#[inline(never)]
fn with_long_c_path<R>(path: &[u8], f: impl FnOnce(*const c_char) -> R) -> Result<R, Errno> {
    let mut buf = PathBuf::new();
    let c = c_path(&mut buf, path)?;
    Ok(f(c))
}

/// `/proc/self/fd/N` as a C string.
pub fn proc_fd_path(fd: c_int, out: &mut [u8; 32]) -> *const c_char {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    out[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 20];
    let digits = execguard_policy::text::decimal(u64::from(fd.unsigned_abs()), &mut digits);
    let len = digits.len();
    out[PREFIX.len()..PREFIX.len() + len].copy_from_slice(digits);
    out[PREFIX.len() + len] = 0;
    out.as_ptr().cast()
}

fn info(st: &libc::stat) -> FileInfo {
    FileInfo {
        dev: st.st_dev,
        ino: st.st_ino,
        nlink: st.st_nlink,
        mode: st.st_mode,
        uid: st.st_uid,
        ctime_ns: (st.st_ctime as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(st.st_ctime_nsec as u64),
        size: st.st_size as u64,
    }
}

/// `newfstatat(dirfd, path, flags)` as a [`FileInfo`].
fn stat_at(dirfd: c_int, path: *const c_char, flags: c_int) -> Result<FileInfo, Errno> {
    // SAFETY: all-zero is a valid `stat`.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is writable; the kernel's `struct stat` is
    // libc's on the architectures this crate builds for.
    let ret = unsafe {
        raw::syscall6(
            libc::SYS_newfstatat,
            [
                dirfd as c_long,
                path as c_long,
                &mut st as *mut libc::stat as c_long,
                flags as c_long,
                0,
                0,
            ],
        )
    };
    raw::result(ret).map(|_| info(&st))
}

/// `readlinkat(dir, link)` into the `room` bytes at `buf`; a result that fills them may be
/// cut, so it is an error.
///
/// # Safety
/// `link` is a NUL-terminated string and `buf` is writable for `room` bytes.
unsafe fn read_link_raw(
    dir: c_int,
    link: *const c_char,
    buf: *mut u8,
    room: usize,
) -> Result<usize, Errno> {
    // SAFETY: the caller's contract; readlinkat writes at most `room` bytes at `buf`.
    let ret = unsafe {
        raw::syscall6(
            libc::SYS_readlinkat,
            [
                dir as c_long,
                link as c_long,
                buf as c_long,
                room as c_long,
                0,
                0,
            ],
        )
    };
    let n = raw::result(ret)? as usize;
    if n >= room {
        return Err(ENAMETOOLONG);
    }
    Ok(n)
}

/// `readlink(link)` into `out`; a result that fills the buffer may be cut, so it is an error.
fn read_link(link: *const c_char, out: &mut PathBuf) -> Result<(), Errno> {
    let (buf, room) = out.spare();
    // SAFETY: `link` is NUL-terminated (the callers' C strings); `spare` is writable.
    let n = unsafe { read_link_raw(libc::AT_FDCWD, link, buf, room) }?;
    // SAFETY: the kernel wrote `n` bytes, and n < room < PATH_MAX.
    unsafe { out.set_len(n) };
    Ok(())
}

/// `readlinkat(dir, name)` into `out`: a link in an open directory costs one lookup, not a
/// walk of its whole path. A result that fills `out` may be cut, so it is an error.
pub fn read_link_at(dir: c_int, name: &[u8], out: &mut [u8]) -> Result<usize, Errno> {
    let (buf, room) = (out.as_mut_ptr(), out.len());
    // SAFETY: `c` is NUL-terminated; `out` is writable for its length.
    with_c_path(name, |c| unsafe { read_link_raw(dir, c, buf, room) })?
}

/// System call `nr(AT_FDCWD, path, a, b)`, with `path` made a C string.
///
/// # Safety
/// `a` and `b` must be valid arguments for system call `nr`.
unsafe fn call_at_cwd(nr: c_long, path: &[u8], a: c_long, b: c_long) -> Result<c_long, Errno> {
    let at = libc::AT_FDCWD as c_long;
    // SAFETY: `c` is NUL-terminated and lives during the call; the caller vouches for a and b.
    let ret = with_c_path(path, |c| unsafe {
        raw::syscall6(nr, [at, c as c_long, a, b, 0, 0])
    })?;
    raw::result(ret)
}

fn open_flags(mode: OpenMode) -> c_int {
    match mode {
        OpenMode::Read => libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC,
        OpenMode::PathOnly => libc::O_PATH | libc::O_CLOEXEC,
    }
}

/// The real OS.
pub struct LibcSys;

impl Sys for LibcSys {
    type Fd = c_int;

    fn open(&mut self, at: At<'_>, mode: OpenMode, follow: bool) -> Result<c_int, Errno> {
        let mut flags = open_flags(mode);
        if !follow {
            flags |= libc::O_NOFOLLOW;
        }
        let ret = match at {
            At::Cwd(p) | At::Dir(_, p) => {
                let dirfd = if let At::Dir(d, _) = at {
                    d
                } else {
                    libc::AT_FDCWD
                };
                // SAFETY: `c` is NUL-terminated and valid during the call.
                with_c_path(p, |c| unsafe {
                    raw::syscall6(
                        libc::SYS_openat,
                        [dirfd as c_long, c as c_long, flags as c_long, 0, 0, 0],
                    )
                })?
            }
            At::Fd(n) => {
                let mut buf = [0u8; 32];
                let c = proc_fd_path(n, &mut buf);
                // SAFETY: `c` points into `buf`, NUL-terminated, alive for the call.
                unsafe {
                    raw::syscall6(
                        libc::SYS_openat,
                        [
                            libc::AT_FDCWD as c_long,
                            c as c_long,
                            flags as c_long,
                            0,
                            0,
                            0,
                        ],
                    )
                }
            }
        };
        raw::result(ret).map(|fd| fd as c_int)
    }

    fn fstat(&mut self, fd: &c_int) -> Result<FileInfo, Errno> {
        stat_at(*fd, c"".as_ptr(), libc::AT_EMPTY_PATH)
    }

    fn read_head(&mut self, fd: &c_int, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut done = 0;
        while done < buf.len() {
            let rest = &mut buf[done..];
            // SAFETY: the destination range lies inside `buf`.
            let ret = unsafe {
                raw::syscall6(
                    libc::SYS_pread64,
                    [
                        *fd as c_long,
                        rest.as_mut_ptr() as c_long,
                        rest.len() as c_long,
                        done as c_long,
                        0,
                        0,
                    ],
                )
            };
            match raw::result(ret) {
                Ok(0) => break,
                Ok(n) => done += n as usize,
                Err(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn fd_path(&mut self, fd: &c_int, out: &mut PathBuf) -> Result<(), Errno> {
        let mut link = [0u8; 32];
        let c = proc_fd_path(*fd, &mut link);
        read_link(c, out)
    }

    fn close(&mut self, fd: c_int) {
        // SAFETY: `fd` was opened by `open` above and is closed once. A failed close of a
        // read-only descriptor loses nothing.
        unsafe { raw::syscall6(libc::SYS_close, [fd as c_long, 0, 0, 0, 0, 0]) };
    }

    fn stat(&mut self, path: &[u8]) -> Result<FileInfo, Errno> {
        with_c_path(path, |c| stat_at(libc::AT_FDCWD, c, 0))?
    }

    fn caller_exe_path(&mut self, out: &mut PathBuf) -> Result<(), Errno> {
        read_link(c"/proc/self/exe".as_ptr(), out)
    }

    fn caller_exe(&mut self) -> Result<FileInfo, Errno> {
        self.stat(b"/proc/self/exe")
    }

    fn is_executable(&mut self, path: &[u8]) -> bool {
        let Ok(c) = CPath::new(path) else {
            return false;
        };
        // SAFETY: `c` is NUL-terminated.
        let ok = unsafe { raw::executable(c.ptr()) };
        ok && self.stat(path).is_ok_and(|i| i.is_regular())
    }

    fn may_write(&mut self, path: &[u8]) -> Result<(), Errno> {
        // SAFETY: `c` is NUL-terminated.
        with_c_path(path, |c| unsafe { raw::writable(c) })?
    }

    fn effective_uid(&mut self) -> u32 {
        raw::geteuid()
    }

    fn owns_every_file(&mut self) -> bool {
        // CAP_CHOWN can make any file its own, then change its mode as the owner.
        raw::has_any_effective_cap(&[raw::CAP_FOWNER, raw::CAP_CHOWN])
    }

    fn bypasses_permissions(&mut self) -> bool {
        // Root owns the system's files (its owner bits let it write them); CAP_DAC_OVERRIDE
        // (root's, or one kept across setuid before an exec) makes every access check pass.
        raw::geteuid() == 0 || raw::has_any_effective_cap(&[raw::CAP_DAC_OVERRIDE])
    }

    fn read_link(&mut self, path: &[u8], out: &mut [u8]) -> Result<usize, Errno> {
        let (buf, room) = (out.as_mut_ptr() as c_long, out.len() as c_long);
        // SAFETY: readlinkat writes at most `room` bytes at `buf`.
        unsafe { call_at_cwd(libc::SYS_readlinkat, path, buf, room) }.map(|n| n as usize)
    }

    fn cwd(&mut self, out: &mut PathBuf) -> Result<(), Errno> {
        let (buf, room) = out.spare();
        // SAFETY: getcwd writes at most `room` bytes at `buf`, NUL included.
        let ret = unsafe {
            raw::syscall6(
                libc::SYS_getcwd,
                [buf as c_long, room as c_long, 0, 0, 0, 0],
            )
        };
        // The kernel returns the length with the NUL.
        let n = raw::result(ret)? as usize;
        // SAFETY: the kernel wrote `n` bytes, the last of them the NUL; n <= room < PATH_MAX.
        unsafe { out.set_len(n.saturating_sub(1)) };
        Ok(())
    }

    fn open_exact(&mut self, path: &[u8], mode: OpenMode) -> Result<c_int, Errno> {
        open_no_links(path, open_flags(mode), 0)
    }
}

/// `path` opened with `flags` (and `mode`, for `O_CREAT`) only if none of its components is a
/// link (`openat2`, `RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`): the one `openat2` call of
/// the guard and the seal.
pub fn open_no_links(path: &[u8], flags: c_int, mode: u64) -> Result<c_int, Errno> {
    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    // struct open_how { flags, mode, resolve }
    let how: [u64; 3] = [
        flags as u64,
        mode,
        RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    ];
    let size = core::mem::size_of_val(&how) as c_long;
    // SAFETY: `how` is a readable open_how of the size passed.
    unsafe { call_at_cwd(libc::SYS_openat2, path, how.as_ptr() as c_long, size) }
        .map(|fd| fd as c_int)
}

/// Why a control file (the policy, the runtime-profile state, a manifest) is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distrust {
    /// It does not exist (`ENOENT`): callers decide whether that is an error.
    Missing,
    /// It cannot be opened (a symlink at the last component gives `ELOOP`), with the errno.
    Unopenable(Errno),
    /// Not a regular file.
    NotRegular,
    /// Not owned by root, or writable by group or others.
    Writable,
    /// A directory above it is not owned by root or is writable by group or others: someone
    /// else could replace the file.
    Replaceable,
}

/// The one trust rule for control files' metadata: owned by root and writable by root alone.
pub fn trusted_mode(uid: u32, mode: u32) -> bool {
    uid == 0 && mode & 0o022 == 0
}

/// Opens a control file only root can have written (the one trust predicate, for the policy
/// file, the runtime-profile state and the container's manifests): opened without following a
/// symlink at the last component (`O_NOFOLLOW`), regular, [`trusted_mode`], and every
/// directory above it [`trusted_mode`] too (or root-owned and sticky, as `/tmp` is). Returns the open descriptor (the caller reads and
/// closes it) and its status. `path` must be absolute.
pub fn trusted_file(path: &[u8]) -> Result<(c_int, libc::stat), Distrust> {
    if !path.starts_with(b"/") {
        return Err(Distrust::Unopenable(libc::EINVAL));
    }
    let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    // A short copy of the name (`with_c_path`), not a 4 KiB one: the first exec of every
    // process asks for the system policy on a fresh stack, where each page touched faults.
    // SAFETY: `c` is NUL-terminated.
    let opened =
        with_c_path(path, |c| unsafe { raw::open(c, flags, 0) }).map_err(Distrust::Unopenable)?;
    let fd = match opened {
        Ok(fd) => fd,
        Err(libc::ENOENT) => return Err(Distrust::Missing),
        Err(e) => return Err(Distrust::Unopenable(e)),
    };
    let verdict = (|| {
        let st = raw::fstat(fd).map_err(Distrust::Unopenable)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(Distrust::NotRegular);
        }
        if !trusted_mode(st.st_uid, st.st_mode) {
            return Err(Distrust::Writable);
        }
        let mut dir = path;
        while let Some(cut) = dir.iter().rposition(|&b| b == b'/') {
            dir = if cut == 0 { b"/" } else { &dir[..cut] };
            let info = LibcSys.stat(dir).map_err(|_| Distrust::Replaceable)?;
            // A sticky root-owned directory (`/tmp`) lets no one else rename or remove the
            // root-owned entry below it, which the previous step checked.
            let sticky = info.uid == 0 && info.mode & libc::S_ISVTX != 0;
            if !trusted_mode(info.uid, info.mode) && !sticky {
                return Err(Distrust::Replaceable);
            }
            if cut == 0 {
                break;
            }
        }
        Ok(st)
    })();
    match verdict {
        Ok(st) => Ok((fd, st)),
        Err(e) => {
            raw::close(fd);
            Err(e)
        }
    }
}

/// `argv`/`envp` as the engine's [`StrList`]: a NULL-terminated array of C strings (NULL itself
/// is the empty list, as the kernel treats it).
#[derive(Clone, Copy)]
pub struct CList {
    ptr: *const *const c_char,
    len: usize,
}

impl CList {
    /// # Safety
    /// `ptr` is NULL or a NULL-terminated array of valid C strings that outlives the list.
    pub unsafe fn new(ptr: *const *const c_char) -> Self {
        let mut len = 0;
        if !ptr.is_null() {
            // SAFETY: the caller guarantees a NULL terminator.
            while unsafe { !(*ptr.add(len)).is_null() } {
                len += 1;
            }
        }
        CList { ptr, len }
    }
    pub fn as_ptr(&self) -> *const *const c_char {
        self.ptr
    }
}

impl StrList for CList {
    fn len(&self) -> usize {
        self.len
    }
    fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        // SAFETY: i < len, so the entry is a non-NULL valid C string (constructor contract).
        Some(unsafe { CStr::from_ptr(*self.ptr.add(i)) }.to_bytes())
    }
    fn first_byte(&self, i: usize) -> Option<u8> {
        if i >= self.len {
            return None;
        }
        // SAFETY: i < len, so the entry is a non-NULL valid C string: its first byte (the NUL
        // of an empty one) is readable.
        let b = unsafe { **self.ptr.add(i) } as u8;
        (b != 0).then_some(b)
    }
}

/// The bytes of a C string (empty for NULL).
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string that outlives the result.
pub unsafe fn c_bytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        b""
    } else {
        // SAFETY: non-NULL and valid per the contract.
        unsafe { CStr::from_ptr(p) }.to_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_c_list_gives_each_entry_and_its_first_byte_without_measuring_it() {
        let entries: [&[u8]; 3] = [b"LD_PRELOAD=/g.so\0", b"\0", b"PATH=/usr/bin\0"];
        let ptrs: [*const c_char; 4] = [
            entries[0].as_ptr().cast(),
            entries[1].as_ptr().cast(),
            entries[2].as_ptr().cast(),
            core::ptr::null(),
        ];
        // SAFETY: a NULL-terminated array of NUL-terminated strings that outlive the list.
        let list = unsafe { CList::new(ptrs.as_ptr()) };
        assert_eq!(list.len(), 3);
        assert_eq!(list.get(0), Some(&b"LD_PRELOAD=/g.so"[..]));
        assert_eq!(list.first_byte(0), Some(b'L'));
        assert_eq!(list.get(1), Some(&b""[..]));
        assert_eq!(list.first_byte(1), None, "an empty entry has no first byte");
        assert_eq!(list.first_byte(2), Some(b'P'));
        assert_eq!(list.first_byte(3), None, "past the end");
        assert_eq!(list.get(3), None);
        // SAFETY: NULL is the empty list.
        let empty = unsafe { CList::new(core::ptr::null()) };
        assert_eq!((empty.len(), empty.first_byte(0)), (0, None));
    }
}
