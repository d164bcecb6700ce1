//! Raw system calls. The guard never calls libc's exec functions or `syscall()` (it replaces
//! them), so the final exec and the pass-through of `syscall()` are made here directly; the
//! decision's own calls are raw too, so a fork child running it touches no libc code pages
//! (each such page is a page fault there) and the library imports fewer symbols.

use core::arch::asm;
use libc::{c_char, c_int, c_long};

/// A raw six-argument system call; returns the kernel's value (`-errno` on failure).
///
/// # Safety
/// The caller must pass arguments that are valid for system call `nr`.
#[cfg(target_arch = "x86_64")]
pub unsafe fn syscall6(nr: c_long, a: [c_long; 6]) -> c_long {
    let ret: c_long;
    // SAFETY: the x86_64 Linux syscall ABI: number in rax, arguments in rdi, rsi, rdx, r10,
    // r8, r9; the kernel clobbers rcx and r11. The caller vouches for the arguments.
    unsafe {
        asm!("syscall", inlateout("rax") nr => ret, in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
             in("r10") a[3], in("r8") a[4], in("r9") a[5], lateout("rcx") _, lateout("r11") _,
             options(nostack));
    }
    ret
}

/// A raw six-argument system call; returns the kernel's value (`-errno` on failure).
///
/// # Safety
/// The caller must pass arguments that are valid for system call `nr`.
#[cfg(target_arch = "aarch64")]
pub unsafe fn syscall6(nr: c_long, a: [c_long; 6]) -> c_long {
    let ret: c_long;
    // SAFETY: the aarch64 Linux syscall ABI: number in x8, arguments in x0-x5, result in x0.
    // The caller vouches for the arguments.
    unsafe {
        asm!("svc 0", in("x8") nr, inlateout("x0") a[0] => ret, in("x1") a[1], in("x2") a[2],
             in("x3") a[3], in("x4") a[4], in("x5") a[5], options(nostack));
    }
    ret
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("execguard's preload library supports x86_64 and aarch64 Linux");

pub fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, valid for the thread's life.
    unsafe { *libc::__errno_location() = e };
}

/// Turns a raw result into the libc convention: -1 and errno, or the value.
pub fn libc_result(ret: c_long) -> c_long {
    if (-4095..0).contains(&ret) {
        set_errno(-ret as c_int);
        -1
    } else {
        ret
    }
}

/// `execve` without libc: returns `-errno` (it only returns on failure).
///
/// # Safety
/// Pointers must be valid NUL-terminated strings / NULL-terminated arrays (or NULL).
pub unsafe fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_long {
    // SAFETY: forwarded as-is; the kernel validates user pointers and fails with EFAULT.
    unsafe {
        syscall6(
            libc::SYS_execve,
            [path as c_long, argv as c_long, envp as c_long, 0, 0, 0],
        )
    }
}

/// `execveat` without libc: returns `-errno` (it only returns on failure).
///
/// # Safety
/// As for [`execve`]; `dirfd` is any integer (the kernel checks it).
pub unsafe fn execveat(
    dirfd: c_int,
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    flags: c_int,
) -> c_long {
    // SAFETY: forwarded as-is; the kernel validates user pointers and fails with EFAULT.
    unsafe {
        syscall6(
            libc::SYS_execveat,
            [
                dirfd as c_long,
                path as c_long,
                argv as c_long,
                envp as c_long,
                flags as c_long,
                0,
            ],
        )
    }
}

/// A system call's raw result as `Result`: the value, or the errno.
pub fn result(ret: c_long) -> Result<c_long, c_int> {
    if (-4095..0).contains(&ret) {
        Err(-ret as c_int)
    } else {
        Ok(ret)
    }
}

/// Calls a system call that takes up to six arguments and returns `Ok(value)` or `Err(errno)`.
///
/// # Safety
/// As for [`syscall6`].
unsafe fn call(nr: c_long, a: [c_long; 6]) -> Result<c_long, c_int> {
    // SAFETY: forwarded contract.
    result(unsafe { syscall6(nr, a) })
}

/// `openat(AT_FDCWD, path, flags, mode)`.
///
/// # Safety
/// `path` is a valid NUL-terminated string.
pub unsafe fn open(path: *const c_char, flags: c_int, mode: libc::mode_t) -> Result<c_int, c_int> {
    let a = [
        libc::AT_FDCWD as c_long,
        path as c_long,
        flags as c_long,
        mode as c_long,
        0,
        0,
    ];
    // SAFETY: forwarded contract.
    unsafe { call(libc::SYS_openat, a) }.map(|fd| fd as c_int)
}

/// `read(fd, buf)`.
pub fn read(fd: c_int, buf: &mut [u8]) -> Result<usize, c_int> {
    let a = [
        fd as c_long,
        buf.as_mut_ptr() as c_long,
        buf.len() as c_long,
        0,
        0,
        0,
    ];
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    unsafe { call(libc::SYS_read, a) }.map(|n| n as usize)
}

/// `write(fd, buf)`.
pub fn write(fd: c_int, buf: &[u8]) -> Result<usize, c_int> {
    let a = [
        fd as c_long,
        buf.as_ptr() as c_long,
        buf.len() as c_long,
        0,
        0,
        0,
    ];
    // SAFETY: the kernel reads at most `buf.len()` bytes from `buf`.
    unsafe { call(libc::SYS_write, a) }.map(|n| n as usize)
}

/// `lseek(fd, offset, whence)`: the resulting offset.
pub fn lseek(fd: c_int, offset: i64, whence: c_int) -> Result<u64, c_int> {
    let a = [fd as c_long, offset as c_long, whence as c_long, 0, 0, 0];
    // SAFETY: lseek takes no pointers; the kernel checks the descriptor.
    unsafe { call(libc::SYS_lseek, a) }.map(|o| o as u64)
}

/// `ftruncate(fd, len)`.
pub fn ftruncate(fd: c_int, len: u64) -> Result<(), c_int> {
    let a = [fd as c_long, len as c_long, 0, 0, 0, 0];
    // SAFETY: ftruncate takes no pointers; the kernel checks the descriptor.
    unsafe { call(libc::SYS_ftruncate, a) }.map(|_| ())
}

/// `close(fd)`. A failed close of a descriptor the caller opened loses nothing.
pub fn close(fd: c_int) {
    // SAFETY: closing an integer; the kernel checks it.
    let _ = unsafe { call(libc::SYS_close, [fd as c_long, 0, 0, 0, 0, 0]) };
}

/// `fstat(fd)`.
pub fn fstat(fd: c_int) -> Result<libc::stat, c_int> {
    // SAFETY: all-zero is a valid `stat`.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    let a = [
        fd as c_long,
        c"".as_ptr() as c_long,
        &mut st as *mut libc::stat as c_long,
        libc::AT_EMPTY_PATH as c_long,
        0,
        0,
    ];
    // SAFETY: the path is an empty C string and `st` is writable; the kernel's `struct stat`
    // is libc's on the architectures this crate builds for.
    unsafe { call(libc::SYS_newfstatat, a) }.map(|_| st)
}

pub fn getpid() -> libc::pid_t {
    // SAFETY: getpid takes no arguments and cannot fail.
    unsafe { syscall6(libc::SYS_getpid, [0; 6]) as libc::pid_t }
}

pub fn getuid() -> libc::uid_t {
    // SAFETY: getuid takes no arguments and cannot fail.
    unsafe { syscall6(libc::SYS_getuid, [0; 6]) as libc::uid_t }
}

/// `CLOCK_REALTIME` as (seconds, nanoseconds); zero if the clock cannot be read.
pub fn realtime() -> (i64, i64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let a = [
        libc::CLOCK_REALTIME as c_long,
        &mut ts as *mut libc::timespec as c_long,
        0,
        0,
        0,
        0,
    ];
    // SAFETY: `ts` is writable.
    let _ = unsafe { call(libc::SYS_clock_gettime, a) };
    (ts.tv_sec, ts.tv_nsec)
}

/// Whether the effective user may execute `path` (`faccessat(..., X_OK, AT_EACCESS)`).
///
/// # Safety
/// `path` is a valid NUL-terminated string.
pub unsafe fn executable(path: *const c_char) -> bool {
    // SAFETY: forwarded contract.
    unsafe { access(path, libc::X_OK) }.is_ok()
}

/// Whether the effective user may write `path` (`faccessat(..., W_OK, AT_EACCESS)`): the
/// kernel's answer, with ACLs, and its errno (`EROFS` for a read-only mount).
///
/// # Safety
/// `path` is a valid NUL-terminated string.
pub unsafe fn writable(path: *const c_char) -> Result<(), c_int> {
    // SAFETY: forwarded contract.
    unsafe { access(path, libc::W_OK) }
}

/// # Safety
/// `path` is a valid NUL-terminated string.
unsafe fn access(path: *const c_char, mode: c_int) -> Result<(), c_int> {
    let at = libc::AT_FDCWD as c_long;
    let a = [
        at,
        path as c_long,
        mode as c_long,
        libc::AT_EACCESS as c_long,
        0,
        0,
    ];
    // SAFETY: `path` is NUL-terminated per the contract.
    match unsafe { call(libc::SYS_faccessat2, a) } {
        // Kernels before 5.8 lack faccessat2. Their faccessat checks the real ids, which are
        // the effective ones except in set-id programs (where glibc emulates the check).
        // SAFETY: as above.
        Err(libc::ENOSYS) => unsafe { call(libc::SYS_faccessat, [at, a[1], a[2], 0, 0, 0]) },
        other => other,
    }
    .map(drop)
}

/// `CAP_DAC_OVERRIDE` (linux/capability.h): bypass file read, write and execute checks.
pub const CAP_DAC_OVERRIDE: u32 = 1;
/// `CAP_CHOWN`: give any file to any owner.
pub const CAP_CHOWN: u32 = 0;
/// `CAP_FOWNER`: act as the owner of any file (change its mode, among others).
pub const CAP_FOWNER: u32 = 3;

/// Is any of `caps` (e.g. [`CAP_DAC_OVERRIDE`]) in this thread's effective set? (One
/// `capget`; false if the kernel will not say.)
///
/// A raw `capget`, not the `caps` crate the std crates use: this runs inside the preload's
/// decision (no_std, no allocation, no libc), and `caps` needs std and returns a `HashSet`.
pub fn has_any_effective_cap(caps: &[u32]) -> bool {
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    // struct __user_cap_header_struct { version, pid } and two __user_cap_data_struct
    // { effective, permitted, inheritable } (64 capability bits).
    let mut header = [LINUX_CAPABILITY_VERSION_3, 0u32];
    let mut data = [0u32; 6];
    let a = [
        header.as_mut_ptr() as c_long,
        data.as_mut_ptr() as c_long,
        0,
        0,
        0,
        0,
    ];
    // SAFETY: both pointers refer to live, writable arrays of the sizes the kernel expects.
    if unsafe { call(libc::SYS_capget, a) }.is_err() {
        return false;
    }
    caps.iter()
        .filter(|&&cap| cap < 64)
        .any(|&cap| data[(cap / 32) as usize * 3] & (1 << (cap % 32)) != 0)
}

pub fn geteuid() -> libc::uid_t {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { syscall6(libc::SYS_geteuid, [0; 6]) as libc::uid_t }
}

/// Ends the process with `SIGABRT` (as `abort()` does), without libc: default action,
/// unblocked, raised in this thread; if the signal is somehow survived, `exit_group(134)`.
pub fn abort() -> ! {
    let sigabrt = libc::SIGABRT as c_long;
    // The kernel's sigaction with every field zero is SIG_DFL on every architecture.
    let default_action = [0u64; 4];
    let mask: u64 = 1 << (libc::SIGABRT - 1);
    // SAFETY: pointers to live locals of the sizes the kernel expects (sigset of 8 bytes).
    unsafe {
        syscall6(
            libc::SYS_rt_sigaction,
            [sigabrt, default_action.as_ptr() as c_long, 0, 8, 0, 0],
        );
        syscall6(
            libc::SYS_rt_sigprocmask,
            [
                libc::SIG_UNBLOCK as c_long,
                &mask as *const u64 as c_long,
                0,
                8,
                0,
                0,
            ],
        );
        // To this thread, as raise() does: kill() may deliver it to another thread while
        // this one goes on to exit_group.
        let tid = syscall6(libc::SYS_gettid, [0; 6]);
        syscall6(
            libc::SYS_tgkill,
            [getpid() as c_long, tid, sigabrt, 0, 0, 0],
        );
        loop {
            syscall6(libc::SYS_exit_group, [134, 0, 0, 0, 0, 0]);
        }
    }
}

/// An anonymous private read-write mapping of `len` bytes (zero-filled), or the errno.
pub fn map_anonymous(len: usize) -> Result<*mut u8, c_int> {
    let a = [
        0,
        len as c_long,
        (libc::PROT_READ | libc::PROT_WRITE) as c_long,
        (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as c_long,
        -1,
        0,
    ];
    // SAFETY: a new anonymous mapping at an address the kernel picks aliases no live memory.
    unsafe { call(libc::SYS_mmap, a) }.map(|p| p as *mut u8)
}

/// Unmaps what [`map_anonymous`] returned.
///
/// # Safety
/// `ptr`/`len` came from one `map_anonymous` call and nothing refers to that memory any more.
pub unsafe fn unmap(ptr: *mut u8, len: usize) {
    // SAFETY: forwarded contract; a failure leaves a mapping, which loses nothing.
    let _ = unsafe { call(libc::SYS_munmap, [ptr as c_long, len as c_long, 0, 0, 0, 0]) };
}

/// Blocks every signal in this thread and returns the mask it replaced (the kernel's 8-byte
/// sigset), for [`restore_signals`]. The kernel never lets SIGKILL and SIGSTOP be blocked.
pub fn block_all_signals() -> u64 {
    let (all, mut old) = (u64::MAX, 0u64);
    // SAFETY: pointers to live locals of the size given (8 bytes).
    unsafe {
        syscall6(
            libc::SYS_rt_sigprocmask,
            [
                libc::SIG_SETMASK as c_long,
                &all as *const u64 as c_long,
                &mut old as *mut u64 as c_long,
                8,
                0,
                0,
            ],
        );
    }
    old
}

/// Puts back a mask [`block_all_signals`] returned.
pub fn restore_signals(mask: u64) {
    // SAFETY: a pointer to a live local of the size given (8 bytes).
    unsafe {
        syscall6(
            libc::SYS_rt_sigprocmask,
            [
                libc::SIG_SETMASK as c_long,
                &mask as *const u64 as c_long,
                0,
                8,
                0,
                0,
            ],
        );
    }
}

/// Makes `len` bytes at `ptr` inaccessible (a guard region).
///
/// # Safety
/// `ptr`/`len` lie inside one [`map_anonymous`] mapping, page-aligned, and nothing refers to
/// that memory.
pub unsafe fn protect_none(ptr: *mut u8, len: usize) -> Result<(), c_int> {
    let a = [
        ptr as c_long,
        len as c_long,
        libc::PROT_NONE as c_long,
        0,
        0,
        0,
    ];
    // SAFETY: forwarded contract: no live reference can fault on the range.
    unsafe { call(libc::SYS_mprotect, a) }.map(drop)
}

/// A `syscall()` number as the kernel reads it: what the guard must decide before passing it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelCall {
    /// `execve` (native ABI).
    Execve,
    /// `execveat` (native ABI).
    Execveat,
    /// `memfd_create` (any ABI: the arguments are the same registers).
    MemfdCreate,
    /// `execve`/`execveat` of the x32 ABI: argv and envp are arrays of 32-bit pointers, which
    /// the guard does not decode.
    X32Exec,
    /// Anything else: passed to the kernel untouched.
    Other,
}

/// x86-64's x32 ABI marker bit (`__X32_SYSCALL_BIT`).
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;

/// Classifies `nr` as the kernel's system call entry does: it takes the low 32 bits of the
/// register (both x86-64's `do_syscall_64` and arm64's `el0_svc_common` read an `int`), so
/// `SYS_execve + (1 << 32)` is `execve`; on x86-64 the x32 bit selects the x32 table, where
/// `execve` is 520, `execveat` 545 and `memfd_create` the common 319.
pub fn kernel_call(nr: c_long) -> KernelCall {
    let low = nr as u32;
    #[cfg(target_arch = "x86_64")]
    if low & X32_BIT != 0 {
        return match low & !X32_BIT {
            520 | 545 => KernelCall::X32Exec,
            n if c_long::from(n) == libc::SYS_memfd_create => KernelCall::MemfdCreate,
            _ => KernelCall::Other,
        };
    }
    match c_long::from(low) {
        libc::SYS_execve => KernelCall::Execve,
        libc::SYS_execveat => KernelCall::Execveat,
        libc::SYS_memfd_create => KernelCall::MemfdCreate,
        _ => KernelCall::Other,
    }
}

/// `faccessat2(dirfd, path, mode, flags)` as glibc's `faccessat` answers it: `Ok(())` or the
/// errno. Kernels before 5.8 lack faccessat2; without flags, plain faccessat is the same call.
///
/// # Safety
/// `path` is a valid NUL-terminated string.
pub unsafe fn faccessat(
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> Result<(), c_int> {
    let a = [
        dirfd as c_long,
        path as c_long,
        mode as c_long,
        flags as c_long,
        0,
        0,
    ];
    // SAFETY: `path` is NUL-terminated per the contract.
    match unsafe { call(libc::SYS_faccessat2, a) } {
        Err(libc::ENOSYS) if flags == 0 => {
            // SAFETY: as above.
            unsafe { call(libc::SYS_faccessat, [a[0], a[1], a[2], 0, 0, 0]) }.map(|_| ())
        }
        r => r.map(|_| ()),
    }
}

/// `stat(path)` (following symlinks).
///
/// # Safety
/// `path` is a valid NUL-terminated string.
pub unsafe fn stat(path: *const c_char) -> Result<libc::stat, c_int> {
    // SAFETY: all-zero is a valid `stat`.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    let a = [
        libc::AT_FDCWD as c_long,
        path as c_long,
        &mut st as *mut libc::stat as c_long,
        0,
        0,
        0,
    ];
    // SAFETY: `path` is NUL-terminated and `st` writable; the kernel's `struct stat` is libc's
    // on the architectures this crate builds for.
    unsafe { call(libc::SYS_newfstatat, a) }.map(|_| st)
}

/// Is `gid` the effective (or, for `access()`, the real) group or one of the supplementary
/// groups, as the kernel's `in_group_p` asks? At most 256 supplementary groups are looked at.
pub fn in_group(gid: libc::gid_t, effective: bool) -> bool {
    let own = if effective {
        libc::SYS_getegid
    } else {
        libc::SYS_getgid
    };
    // SAFETY: getegid/getgid take no arguments and cannot fail.
    if unsafe { syscall6(own, [0; 6]) } as libc::gid_t == gid {
        return true;
    }
    let mut groups = [0 as libc::gid_t; 256];
    // SAFETY: the kernel writes at most `groups.len()` entries.
    let n = unsafe {
        syscall6(
            libc::SYS_getgroups,
            [
                groups.len() as c_long,
                groups.as_mut_ptr() as c_long,
                0,
                0,
                0,
                0,
            ],
        )
    };
    n > 0 && groups[..n as usize].contains(&gid)
}

/// `socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)`.
pub fn socket_unix_seqpacket() -> Result<c_int, c_int> {
    let a = [
        libc::AF_UNIX as c_long,
        (libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC) as c_long,
        0,
        0,
        0,
        0,
    ];
    // SAFETY: socket takes integers only.
    unsafe { call(libc::SYS_socket, a) }.map(|fd| fd as c_int)
}

/// `SO_RCVTIMEO` and `SO_SNDTIMEO` of `secs` seconds on `fd`.
pub fn set_timeouts(fd: c_int, secs: i64) -> Result<(), c_int> {
    let tv = libc::timeval {
        tv_sec: secs,
        tv_usec: 0,
    };
    for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        let a = [
            fd as c_long,
            libc::SOL_SOCKET as c_long,
            opt as c_long,
            &tv as *const libc::timeval as c_long,
            core::mem::size_of::<libc::timeval>() as c_long,
            0,
        ];
        // SAFETY: `tv` is a valid timeval of the size given, alive for the call.
        unsafe { call(libc::SYS_setsockopt, a) }?;
    }
    Ok(())
}

/// `connect(fd, addr, len)`, resumed after a signal (`EINTR`: the kernel goes on connecting a
/// UNIX socket; `EISCONN` then says it is done).
///
/// # Safety
/// `addr` points at `len` readable bytes of a socket address.
pub unsafe fn connect(fd: c_int, addr: *const libc::sockaddr, len: u32) -> Result<(), c_int> {
    let a = [fd as c_long, addr as c_long, len as c_long, 0, 0, 0];
    let mut again = false;
    loop {
        // SAFETY: forwarded contract.
        match unsafe { call(libc::SYS_connect, a) } {
            Ok(_) => return Ok(()),
            Err(libc::EINTR) => again = true,
            Err(libc::EISCONN) if again => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// `send(fd, buf, MSG_NOSIGNAL)` of all of `buf` as one message (a writer that went away
/// raises no `SIGPIPE`).
pub fn send(fd: c_int, buf: &[u8]) -> Result<(), c_int> {
    let a = [
        fd as c_long,
        buf.as_ptr() as c_long,
        buf.len() as c_long,
        libc::MSG_NOSIGNAL as c_long,
        0,
        0,
    ];
    loop {
        // SAFETY: the kernel reads at most `buf.len()` bytes from `buf`; no address is given.
        match unsafe { call(libc::SYS_sendto, a) } {
            Ok(n) if n as usize == buf.len() => return Ok(()),
            Ok(_) => return Err(libc::EMSGSIZE),
            Err(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// `recv(fd, buf, 0)`, resumed after a signal.
pub fn recv(fd: c_int, buf: &mut [u8]) -> Result<usize, c_int> {
    let a = [
        fd as c_long,
        buf.as_mut_ptr() as c_long,
        buf.len() as c_long,
        0,
        0,
        0,
    ];
    loop {
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`; no address is asked.
        match unsafe { call(libc::SYS_recvfrom, a) } {
            Ok(n) => return Ok(n as usize),
            Err(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_numbers_are_read_as_the_kernel_reads_them() {
        let hi = 1 << 32;
        let cases: &[(c_long, KernelCall)] = &[
            (libc::SYS_execve, KernelCall::Execve),
            (libc::SYS_execve + hi, KernelCall::Execve),
            (libc::SYS_execve | !0xffff_ffff, KernelCall::Execve),
            (libc::SYS_execveat + hi, KernelCall::Execveat),
            (libc::SYS_memfd_create, KernelCall::MemfdCreate),
            (libc::SYS_memfd_create + (7 << 33), KernelCall::MemfdCreate),
            (libc::SYS_getpid, KernelCall::Other),
            (libc::SYS_getpid + hi, KernelCall::Other),
            (-1, KernelCall::Other),
        ];
        for &(nr, want) in cases {
            assert_eq!(kernel_call(nr), want, "nr {nr:#x}");
        }
        #[cfg(target_arch = "x86_64")]
        {
            let x32 = X32_BIT as c_long;
            assert_eq!(kernel_call(x32 | 520), KernelCall::X32Exec);
            assert_eq!(kernel_call(x32 | 545 | hi), KernelCall::X32Exec);
            assert_eq!(kernel_call(x32 | 319), KernelCall::MemfdCreate);
            // x32 has no execve at the native number (59 is 64-bit only).
            assert_eq!(kernel_call(x32 | libc::SYS_execve), KernelCall::Other);
        }
    }
}
