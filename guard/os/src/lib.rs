//! The engine's [`Sys`] seam over raw libc calls: no allocation, no locks, no std. Shared by
//! the preload library, the CLI and the wrappers, so all of them see files the same way.
#![no_std]

use core::ffi::CStr;
use core::mem::MaybeUninit;
use execguard_policy::path::PathBuf;
use execguard_policy::sys::{At, Errno, FileInfo, OpenMode, StrList, Sys, ENAMETOOLONG};
use libc::{c_char, c_int};

fn errno() -> Errno {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

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
    let mut digits = [0u8; 12];
    let mut n = fd.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    out[PREFIX.len()..PREFIX.len() + len].copy_from_slice(&digits[i..]);
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
    }
}

/// The real OS.
pub struct LibcSys;

impl Sys for LibcSys {
    type Fd = c_int;

    fn open(&mut self, at: At<'_>, mode: OpenMode, follow: bool) -> Result<c_int, Errno> {
        let mut flags = match mode {
            OpenMode::Read => libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC,
            OpenMode::PathOnly => libc::O_PATH | libc::O_CLOEXEC,
        };
        if !follow {
            flags |= libc::O_NOFOLLOW;
        }
        let fd = match at {
            At::Cwd(p) | At::Dir(_, p) => {
                let dirfd = if let At::Dir(d, _) = at {
                    d
                } else {
                    libc::AT_FDCWD
                };
                // SAFETY: `c` is NUL-terminated and valid during the call.
                with_c_path(p, |c| unsafe { libc::openat(dirfd, c, flags) })?
            }
            At::Fd(n) => {
                let mut buf = [0u8; 32];
                let c = proc_fd_path(n, &mut buf);
                // SAFETY: `c` points into `buf`, NUL-terminated, alive for the call.
                unsafe { libc::openat(libc::AT_FDCWD, c, flags) }
            }
        };
        if fd < 0 {
            Err(errno())
        } else {
            Ok(fd)
        }
    }

    fn fstat(&mut self, fd: &c_int) -> Result<FileInfo, Errno> {
        // SAFETY: all-zero is a valid `stat`; fstat fills it or fails.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: `st` is a valid, writable `stat`.
        if unsafe { libc::fstat(*fd, &mut st) } < 0 {
            return Err(errno());
        }
        Ok(info(&st))
    }

    fn read_head(&mut self, fd: &c_int, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut done = 0;
        while done < buf.len() {
            // SAFETY: the destination range lies inside `buf`.
            let n = unsafe {
                libc::pread(
                    *fd,
                    buf[done..].as_mut_ptr().cast(),
                    buf.len() - done,
                    done as libc::off_t,
                )
            };
            match n {
                0 => break,
                n if n > 0 => done += n as usize,
                _ if errno() == libc::EINTR => continue,
                _ => return Err(errno()),
            }
        }
        Ok(done)
    }

    fn fd_path(&mut self, fd: &c_int, out: &mut PathBuf) -> Result<(), Errno> {
        let mut link = [0u8; 32];
        let c = proc_fd_path(*fd, &mut link);
        let (buf, room) = out.spare();
        // SAFETY: `c` is NUL-terminated; readlink writes at most `room` bytes at `buf`.
        let n = unsafe { libc::readlink(c, buf.cast(), room) };
        if n < 0 {
            return Err(errno());
        }
        if n as usize >= room {
            return Err(ENAMETOOLONG); // possibly cut: never guess
        }
        // SAFETY: readlink wrote `n` bytes, and n < room < PATH_MAX.
        unsafe { out.set_len(n as usize) };
        Ok(())
    }

    fn close(&mut self, fd: c_int) {
        // SAFETY: `fd` was opened by `open` above and is closed once. A failed close of a
        // read-only descriptor loses nothing.
        unsafe { libc::close(fd) };
    }

    fn stat(&mut self, path: &[u8]) -> Result<FileInfo, Errno> {
        // SAFETY: all-zero is a valid `stat`.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: `c` is NUL-terminated and valid during the call; `st` is writable.
        if with_c_path(path, |c| unsafe { libc::stat(c, &mut st) })? < 0 {
            return Err(errno());
        }
        Ok(info(&st))
    }

    fn caller_exe_path(&mut self, out: &mut PathBuf) -> Result<(), Errno> {
        let (buf, room) = out.spare();
        // SAFETY: the link name is NUL-terminated; readlink writes at most `room` bytes at `buf`.
        let n = unsafe { libc::readlink(c"/proc/self/exe".as_ptr(), buf.cast(), room) };
        if n < 0 {
            return Err(errno());
        }
        if n as usize >= room {
            return Err(ENAMETOOLONG);
        }
        // SAFETY: readlink wrote `n` bytes, and n < room < PATH_MAX.
        unsafe { out.set_len(n as usize) };
        Ok(())
    }

    fn caller_exe(&mut self) -> Result<FileInfo, Errno> {
        self.stat(b"/proc/self/exe")
    }

    fn is_executable(&mut self, path: &[u8]) -> bool {
        let Ok(c) = CPath::new(path) else {
            return false;
        };
        // SAFETY: `c` is NUL-terminated.
        let ok =
            unsafe { libc::faccessat(libc::AT_FDCWD, c.ptr(), libc::X_OK, libc::AT_EACCESS) } == 0;
        ok && self.stat(path).is_ok_and(|i| i.is_regular())
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
