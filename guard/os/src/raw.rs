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
