//! The exported libc entry points. Each is a thin shell over [`guarded`]; the variadic ones
//! (`execl`, `execle`, `execlp`, `syscall`) live in `shim.c` and call in here.

use crate::guard::{guarded, guarded_as, Entry, EnvRewrite, Search};
use core::sync::atomic::{AtomicUsize, Ordering};
use execguard_os::raw::{self, libc_result, set_errno, KernelCall};
use execguard_os::{c_bytes, CList, LibcSys};
use execguard_policy::path::PathBuf;
use execguard_policy::spawn::{child_path, ChildPath, SpawnAction};
use execguard_policy::sys::{StrList, Sys, EACCES, ENOENT};
use execguard_policy::{path_search, search_goes_on, Candidate, Reason, Target};
use libc::{c_char, c_int, c_long, pid_t, posix_spawn_file_actions_t, posix_spawnattr_t, FILE};

extern "C" {
    static mut environ: *const *const c_char;
}

fn current_environ() -> *const *const c_char {
    // SAFETY: reading the pointer value of libc's `environ`; it is only dereferenced through
    // CList, which walks to its NULL terminator.
    unsafe { environ }
}

/// A libc function resolved once with `dlsym(RTLD_NEXT)`, lock-free afterwards. Two threads
/// racing to resolve it store the same address, so a plain atomic suffices (once_cell's `race`
/// module does the same, but its `std` feature, switched on by other workspace members, would
/// link std into this library).
///
/// Only the address is in the static: a name stored beside it would be a pointer the loader
/// relocates, a write into `.data` at every load (a page fault of its own; the optimiser may
/// or may not move it out, tests/guard_load.rs checks where relocations land).
struct Real(AtomicUsize);

impl Real {
    const fn new() -> Self {
        Real(AtomicUsize::new(0))
    }
    fn get(&self, name: &'static core::ffi::CStr) -> Option<usize> {
        match self.0.load(Ordering::Acquire) {
            0 => {
                // SAFETY: the name is NUL-terminated; RTLD_NEXT looks past this library (libc's
                // own dlsym: the guard's would answer with the guard's own functions).
                let p = crate::symbols::real_dlsym().map_or(0, |dlsym| unsafe {
                    dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize
                });
                self.0.store(p, Ordering::Release);
                (p != 0).then_some(p)
            }
            p => Some(p),
        }
    }
}

// In .data rather than .bss: a .bss would make the loader zero the tail of the last data page
// in every process that loads the guard, a copy-on-write page fault for nothing.
#[link_section = ".data"]
static REAL_POSIX_SPAWN: Real = Real::new();
#[link_section = ".data"]
static REAL_SYSTEM: Real = Real::new();
#[link_section = ".data"]
static REAL_POPEN: Real = Real::new();
#[link_section = ".data"]
static REAL_DLOPEN: Real = Real::new();
#[link_section = ".data"]
static REAL_DLMOPEN: Real = Real::new();
#[link_section = ".data"]
static REAL_WORDEXP: Real = Real::new();
#[link_section = ".data"]
static REAL_ICONV_OPEN: Real = Real::new();
#[link_section = ".data"]
static REAL_FORK: Real = Real::new();

type PosixSpawnFn = unsafe extern "C" fn(
    *mut pid_t,
    *const c_char,
    *const posix_spawn_file_actions_t,
    *const posix_spawnattr_t,
    *const *mut c_char,
    *const *mut c_char,
) -> c_int;

fn fail_errno(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// execve by path, through the guard.
///
/// # Safety
/// libc's contract for `execve`.
unsafe fn exec_path(
    entry: Entry,
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { exec_path_in(entry, None, path, argv, envp) }
}

/// [`exec_path`] for one candidate of a `PATH` search.
///
/// # Safety
/// libc's contract for `execve`.
unsafe fn exec_path_in(
    entry: Entry,
    search: Option<&Search>,
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    if path.is_null() {
        return fail_errno(libc::EFAULT);
    }
    // SAFETY: non-NULL C string per libc's contract.
    let target = Target::Path(unsafe { c_bytes(path) });
    // SAFETY: libc's contract for argv/envp.
    unsafe {
        guarded_as(
            entry,
            target,
            None,
            search,
            argv,
            envp,
            EnvRewrite::Allowed,
            // SAFETY: the kernel validates the pointers; execve returns only on failure.
            |exec| {
                let (program, argv) = exec.program_or(path, argv);
                fail_errno(-(raw::execve(program, argv, exec.env) as c_int))
            },
            fail_errno,
        )
    }
}

/// # Safety
/// libc's contract for `execveat`.
unsafe fn exec_at(
    entry: Entry,
    dirfd: c_int,
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    flags: c_int,
) -> c_int {
    if path.is_null() {
        return fail_errno(libc::EFAULT);
    }
    // SAFETY: non-NULL C string per libc's contract.
    let name = unsafe { c_bytes(path) };
    let target = Target::execveat(
        dirfd,
        name,
        flags & libc::AT_EMPTY_PATH != 0,
        flags & libc::AT_SYMLINK_NOFOLLOW != 0,
    );
    // SAFETY: libc's contract for argv/envp.
    unsafe {
        guarded(
            entry,
            target,
            argv,
            envp,
            EnvRewrite::Allowed,
            // SAFETY: the kernel validates the pointers; execveat returns only on failure. Only
            // path targets get a launch, and a launch's program is resolved from the cwd; a
            // canonical name is absolute.
            |exec| {
                if exec.by_path() {
                    let (program, argv) = exec.program_or(path, argv);
                    fail_errno(-(raw::execve(program, argv, exec.env) as c_int))
                } else {
                    fail_errno(-(raw::execveat(dirfd, path, argv, exec.env, flags) as c_int))
                }
            },
            fail_errno,
        )
    }
}

/// glibc's `execvpe`: PATH search with the caller's PATH (default `/bin:/usr/bin`), each
/// candidate through the guard, `ENOEXEC` retried with `/bin/sh`, `EACCES` remembered.
///
/// # Safety
/// libc's contract for `execvpe`.
unsafe fn exec_search(
    entry: Entry,
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    if file.is_null() {
        return fail_errno(libc::EFAULT);
    }
    // SAFETY: non-NULL C string.
    let name = unsafe { c_bytes(file) };
    if name.is_empty() {
        return fail_errno(ENOENT);
    }
    if name.contains(&b'/') {
        // SAFETY: forwarded contract.
        unsafe {
            exec_path(entry, file, argv, envp);
            return retry_as_script(entry, None, file, argv, envp);
        }
    }
    if name.len() > libc::FILENAME_MAX as usize {
        return fail_errno(libc::ENAMETOOLONG);
    }
    let mut got_eacces = false;
    let search = Search::default();
    for candidate in path_search(variable(b"PATH="), name) {
        let tried = with_candidate(candidate, |c| {
            let c = c.as_ptr().cast();
            // SAFETY: `c` is NUL-terminated and lives until the end of this closure.
            unsafe {
                exec_path_in(entry, Some(&search), c, argv, envp);
                retry_as_script(entry, Some(&search), c, argv, envp);
            }
        });
        if tried.is_none() {
            return fail_errno(libc::ENOMEM);
        }
        match errno() {
            EACCES => got_eacces = true,
            e if search_goes_on(e) => {}
            _ => return -1,
        }
    }
    if got_eacces {
        set_errno(EACCES);
    }
    -1
}

fn errno() -> c_int {
    // SAFETY: this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// The value of the first `environ` entry starting with `prefix` (`NAME=`), as getenv finds it.
fn variable(prefix: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: `environ` is NULL or a NULL-terminated array of C strings (libc's contract).
    let env = unsafe { CList::new(current_environ()) };
    (0..env.len())
        .filter_map(|i| env.get(i))
        .find_map(|entry| entry.strip_prefix(prefix))
        // SAFETY: the entry lives in the environment, which outlives this call.
        .map(|v| unsafe { core::slice::from_raw_parts(v.as_ptr(), v.len()) })
}

/// After `ENOEXEC`, glibc runs the file with `/bin/sh file args...`.
///
/// # Safety
/// As [`exec_path`].
unsafe fn retry_as_script(
    entry: Entry,
    search: Option<&Search>,
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    if errno() != libc::ENOEXEC {
        return -1;
    }
    const MAX_ARGS: usize = 1024;
    // SAFETY: argv is NULL or NULL-terminated per contract.
    let caller = unsafe { CList::new(argv) };
    let rest = caller.len().saturating_sub(1);
    if rest > MAX_ARGS {
        return fail_errno(libc::E2BIG);
    }
    // `/bin/sh file args... NULL`, in a buffer sized to them.
    crate::scratch::with_words(rest + 3, |args| {
        args[0].write(c"/bin/sh".as_ptr() as usize);
        args[1].write(file as usize);
        for i in 1..=rest {
            // SAFETY: i is before argv's terminator.
            args[i + 1].write(unsafe { *argv.add(i) } as usize);
        }
        args[rest + 2].write(0);
        // SAFETY: `args` is NULL-terminated and its strings outlive the call.
        unsafe {
            exec_path_in(
                entry,
                search,
                c"/bin/sh".as_ptr().cast(),
                args.as_ptr().cast(),
                envp,
            )
        }
    })
    .unwrap_or_else(|| fail_errno(libc::ENOMEM))
}

#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: libc's contract.
    unsafe { exec_path(Entry::Execve, path, argv, envp) }
}

#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: libc's contract.
    unsafe { exec_path(Entry::Execv, path, argv, current_environ()) }
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: libc's contract.
    unsafe { exec_search(Entry::Execvp, file, argv, current_environ()) }
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: libc's contract.
    unsafe { exec_search(Entry::Execvpe, file, argv, envp) }
}

#[no_mangle]
pub unsafe extern "C" fn execveat(
    dirfd: c_int,
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: libc's contract.
    unsafe { exec_at(Entry::Execveat, dirfd, path, argv, envp, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn fexecve(
    fd: c_int,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    if fd < 0 || argv.is_null() || envp.is_null() {
        return fail_errno(libc::EINVAL);
    }
    // SAFETY: libc's contract; "" with AT_EMPTY_PATH names the fd itself, as glibc does.
    unsafe {
        exec_at(
            Entry::Fexecve,
            fd,
            c"".as_ptr().cast(),
            argv,
            envp,
            libc::AT_EMPTY_PATH,
        )
    }
}

/// Called by the C shim for `execl`, `execle` (argv built on its stack).
#[no_mangle]
pub unsafe extern "C" fn __execguard_execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    le: c_int,
) -> c_int {
    let entry = if le != 0 { Entry::Execle } else { Entry::Execl };
    // SAFETY: the shim passes libc's contract through.
    unsafe { exec_path(entry, path, argv, envp) }
}

/// Called by the C shim for `execlp`.
#[no_mangle]
pub unsafe extern "C" fn __execguard_execvp(
    file: *const c_char,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: the shim passes libc's contract through.
    unsafe { exec_search(Entry::Execlp, file, argv, current_environ()) }
}

/// Called by the C shim for `syscall()`: exec numbers go through the guard, `memfd_create` gets
/// the same seal as the direct hook, the rest goes straight to the kernel. Numbers are read as
/// the kernel reads them ([`raw::kernel_call`]: the low 32 bits, and x86-64's x32 bit).
#[no_mangle]
pub unsafe extern "C" fn __execguard_syscall(
    nr: c_long,
    a: c_long,
    b: c_long,
    c: c_long,
    d: c_long,
    e: c_long,
    f: c_long,
) -> c_long {
    // SAFETY: for exec numbers the arguments are execve's / execveat's (the caller's contract
    // with syscall()); other numbers are forwarded untouched, as glibc's syscall() does.
    unsafe {
        match raw::kernel_call(nr) {
            KernelCall::Execve => c_long::from(exec_path(Entry::Syscall, a as _, b as _, c as _)),
            KernelCall::Execveat => c_long::from(exec_at(
                Entry::Syscall,
                a as c_int,
                b as _,
                c as _,
                d as _,
                e as c_int,
            )),
            KernelCall::MemfdCreate => libc_result(memfd_create_as(nr, a as _, b as _)),
            KernelCall::X32Exec => {
                crate::guard::refuse(Entry::Syscall, Reason::SyscallX32, b"");
                c_long::from(fail_errno(EACCES))
            }
            KernelCall::Other => libc_result(raw::syscall6(nr, [a, b, c, d, e, f])),
        }
    }
}

/// # Safety
/// libc's contract for `posix_spawn`.
#[allow(clippy::too_many_arguments)]
unsafe fn spawn(
    entry: Entry,
    search: Option<&Search>,
    pid: *mut pid_t,
    path: *const c_char,
    actions: *const posix_spawn_file_actions_t,
    attr: *const posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(real) = REAL_POSIX_SPAWN.get(c"posix_spawn") else {
        return libc::ENOSYS;
    };
    // SAFETY: dlsym returned glibc's posix_spawn, whose type this is.
    let real: PosixSpawnFn = unsafe { core::mem::transmute::<usize, PosixSpawnFn>(real) };
    if path.is_null() {
        return libc::EFAULT;
    }
    // SAFETY: libc's contract.
    let given = unsafe { c_bytes(path) };
    let spawn_as = |target: Target<'_>, given_name: Option<&[u8]>| {
        // SAFETY: libc's contract; the real posix_spawn gets the same arguments and the
        // (possibly rewritten) environment, valid for the duration of the call.
        unsafe {
            guarded_as(
                entry,
                target,
                given_name,
                search,
                argv,
                envp,
                EnvRewrite::Allowed,
                |exec| {
                    let (program, argv) = exec.program_or(path, argv);
                    real(pid, program, actions, attr, argv.cast(), exec.env.cast())
                },
                |e| e,
            )
        }
    };
    if actions.is_null() {
        return spawn_as(Target::Path(given), None);
    }
    // SAFETY: glibc's file actions, per posix_spawn's contract.
    unsafe { spawn_with_actions(entry, actions, given, spawn_as) }
}

/// The child applies the file actions before its exec: decide what it will reach (out of
/// line: the replayed name's buffer is on the stack only when there are actions).
///
/// # Safety
/// `actions` is glibc's initialised `posix_spawn_file_actions_t`.
#[inline(never)]
unsafe fn spawn_with_actions(
    entry: Entry,
    actions: *const posix_spawn_file_actions_t,
    given: &[u8],
    spawn_as: impl FnOnce(Target<'_>, Option<&[u8]>) -> c_int,
) -> c_int {
    let mut in_child = PathBuf::new();
    // SAFETY: forwarded contract.
    let replayed = match unsafe { spawn_actions(actions) } {
        None => ChildPath::Same,
        Some(list) => crate::decision_stack::run(|| child_path(list, given, &mut in_child)),
    };
    match replayed {
        ChildPath::Same => spawn_as(Target::Path(given), None),
        ChildPath::Rewritten => spawn_as(Target::Path(in_child.as_bytes()), Some(given)),
        // The child's exec would fail: nothing runs, and glibc would report this.
        ChildPath::Fails(e) => e,
        ChildPath::TooComplex => {
            crate::guard::refuse(entry, Reason::SpawnActions, given);
            EACCES
        }
    }
}

/// glibc's `posix_spawn_file_actions_t` (spawn.h). Each recorded action is its private
/// `struct __spawn_action` (posix/spawn_int.h, unchanged since 2.35): an `int` tag, then a
/// union aligned to 8 bytes, 32 bytes in all.
#[repr(C)]
struct GlibcFileActions {
    allocated: c_int,
    used: c_int,
    actions: *const u8,
}

/// The file actions as the engine's [`SpawnAction`]s, in the order the child applies them;
/// `None` for no actions. A kind this guard does not know is `Unknown`, which the replay
/// refuses.
///
/// # Safety
/// `actions` is NULL or an initialised glibc `posix_spawn_file_actions_t`.
unsafe fn spawn_actions<'a>(
    actions: *const posix_spawn_file_actions_t,
) -> Option<impl Iterator<Item = SpawnAction<'a>>> {
    if actions.is_null() {
        return None;
    }
    // SAFETY: glibc's public layout of the type (spawn.h).
    let fa = unsafe { &*actions.cast::<GlibcFileActions>() };
    if fa.used <= 0 || fa.actions.is_null() {
        return None;
    }
    let base = fa.actions;
    Some((0..fa.used as usize).map(move |i| {
        // SAFETY: `used` actions of 32 bytes each were recorded by glibc at `actions`; the
        // union starts at offset 8.
        unsafe {
            let a = base.add(i * 32);
            let tag = core::ptr::read_unaligned(a.cast::<c_int>());
            let int_at = |off: usize| core::ptr::read_unaligned(a.add(8 + off).cast::<c_int>());
            let str_at = |off: usize| {
                c_bytes(core::ptr::read_unaligned(
                    a.add(8 + off).cast::<*const c_char>(),
                ))
            };
            match tag {
                0 => SpawnAction::Close(int_at(0)),
                1 => SpawnAction::Dup2 {
                    from: int_at(0),
                    to: int_at(4),
                },
                2 => SpawnAction::Open {
                    fd: int_at(0),
                    path: str_at(8),
                },
                3 => SpawnAction::Chdir(str_at(0)),
                4 => SpawnAction::Fchdir(int_at(0)),
                5 => SpawnAction::CloseFrom(int_at(0)),
                6 => SpawnAction::Other,
                _ => SpawnAction::Unknown,
            }
        }
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut pid_t,
    path: *const c_char,
    actions: *const posix_spawn_file_actions_t,
    attr: *const posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: libc's contract.
    unsafe {
        spawn(
            Entry::PosixSpawn,
            None,
            pid,
            path,
            actions,
            attr,
            argv,
            envp,
        )
    }
}

/// glibc's posix_spawnp searches PATH inside the child, out of the guard's sight, so the
/// search happens here: the first executable candidate is decided and spawned by path.
#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut pid_t,
    file: *const c_char,
    actions: *const posix_spawn_file_actions_t,
    attr: *const posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    if file.is_null() {
        return libc::EFAULT;
    }
    // SAFETY: non-NULL C string.
    let name = unsafe { c_bytes(file) };
    if name.is_empty() {
        return ENOENT;
    }
    if name.contains(&b'/') {
        // SAFETY: libc's contract.
        return unsafe {
            spawn(
                Entry::PosixSpawnp,
                None,
                pid,
                file,
                actions,
                attr,
                argv,
                envp,
            )
        };
    }
    let mut result = ENOENT;
    let search = Search::default();
    for candidate in path_search(variable(b"PATH="), name) {
        let tried = with_candidate(candidate, |c| {
            let bytes = &c[..c.len() - 1];
            let (runnable, exists) = crate::decision_stack::run(|| {
                let runnable = LibcSys.is_executable(bytes);
                (runnable, runnable || LibcSys.stat(bytes).is_ok())
            });
            if !runnable {
                // Exists but not executable: glibc's child would get EACCES.
                return Err(if exists { EACCES } else { ENOENT });
            }
            // SAFETY: `c` is NUL-terminated and alive for the call.
            Ok(unsafe {
                spawn(
                    Entry::PosixSpawnp,
                    Some(&search),
                    pid,
                    c.as_ptr().cast(),
                    actions,
                    attr,
                    argv,
                    envp,
                )
            })
        });
        match tried {
            None => return libc::ENOMEM,
            Some(Err(EACCES)) => result = EACCES,
            Some(Err(_)) => {}
            Some(Ok(EACCES)) => result = EACCES, // refused: keep searching, as for a noexec mount
            Some(Ok(e)) if e != 0 && search_goes_on(e) => {}
            Some(Ok(other)) => return other,
        }
    }
    result
}

/// Calls `f` with one PATH candidate as a C string (NUL included), in a buffer sized to it:
/// the exec or spawn that follows runs on the caller's stack. `None` if no memory.
fn with_candidate<R>(candidate: Candidate<'_>, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    crate::scratch::with_words(crate::scratch::words_for(candidate.len() + 1), |w| {
        // SAFETY: write_c writes every byte it returns, and nothing else is read.
        f(candidate.write_c(unsafe { crate::scratch::bytes(w) }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn system(command: *const c_char) -> c_int {
    // SAFETY: system's contract.
    unsafe { guarded_system(command) }
}

/// libc's private alias of `system` (exported, so reachable by `dlsym`).
#[no_mangle]
pub unsafe extern "C" fn __libc_system(command: *const c_char) -> c_int {
    // SAFETY: system's contract.
    unsafe { guarded_system(command) }
}

/// # Safety
/// system's contract.
unsafe fn guarded_system(command: *const c_char) -> c_int {
    let Some(real) = REAL_SYSTEM.get(c"system") else {
        return fail_errno(libc::ENOSYS);
    };
    // SAFETY: dlsym returned glibc's system.
    let real: unsafe extern "C" fn(*const c_char) -> c_int =
        unsafe { core::mem::transmute::<usize, _>(real) };
    if command.is_null() {
        // SAFETY: system(NULL) only asks whether a shell exists.
        return unsafe { real(command) };
    }
    // SAFETY: `command` is a C string per system's contract.
    unsafe { through_shell(Entry::System, command, || real(command), fail_errno) }
}

/// `system` and `popen` run `/bin/sh -c COMMAND` with `environ` from inside glibc, out of the
/// guard's reach: decide that exec here, with the environment glibc will pass (which must
/// already carry the guard in host mode: it cannot be rewritten).
///
/// # Safety
/// `command` is a valid C string.
unsafe fn through_shell<R>(
    entry: Entry,
    command: *const c_char,
    run: impl FnOnce() -> R,
    fail: impl FnOnce(c_int) -> R,
) -> R {
    let argv: [*const c_char; 4] = [c"sh".as_ptr(), c"-c".as_ptr(), command, core::ptr::null()];
    // SAFETY: argv is NULL-terminated and its strings outlive the call; `environ` is libc's.
    unsafe {
        guarded(
            entry,
            Target::Path(b"/bin/sh"),
            argv.as_ptr(),
            current_environ(),
            EnvRewrite::Forbidden,
            |_| run(),
            fail,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn popen(command: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: popen's contract.
    unsafe { guarded_popen(command, mode) }
}

/// libc's old name for `popen`, still exported.
#[no_mangle]
pub unsafe extern "C" fn _IO_popen(command: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: popen's contract.
    unsafe { guarded_popen(command, mode) }
}

/// # Safety
/// popen's contract.
unsafe fn guarded_popen(command: *const c_char, mode: *const c_char) -> *mut FILE {
    let Some(real) = REAL_POPEN.get(c"popen") else {
        set_errno(libc::ENOSYS);
        return core::ptr::null_mut();
    };
    // SAFETY: dlsym returned glibc's popen.
    let real: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE =
        unsafe { core::mem::transmute::<usize, _>(real) };
    if command.is_null() {
        // SAFETY: glibc reports the error itself.
        return unsafe { real(command, mode) };
    }
    // SAFETY: `command` is a C string per popen's contract.
    unsafe {
        through_shell(
            Entry::Popen,
            command,
            || real(command, mode),
            |e| {
                set_errno(e);
                core::ptr::null_mut()
            },
        )
    }
}

/// wordexp runs `/bin/sh` from inside libc for a command substitution (`$(...)` or a
/// backquote) unless `WRDE_NOCMD` forbids it: decided like `system`.
#[no_mangle]
pub unsafe extern "C" fn wordexp(
    words: *const c_char,
    result: *mut libc::c_void,
    flags: c_int,
) -> c_int {
    const WRDE_NOCMD: c_int = 1 << 2;
    const WRDE_NOSPACE: c_int = 1;
    let Some(real) = REAL_WORDEXP.get(c"wordexp") else {
        return WRDE_NOSPACE;
    };
    // SAFETY: dlsym returned glibc's wordexp.
    let real: unsafe extern "C" fn(*const c_char, *mut libc::c_void, c_int) -> c_int =
        unsafe { core::mem::transmute::<usize, _>(real) };
    // SAFETY: NULL or a C string per wordexp's contract.
    let text = unsafe { c_bytes(words) };
    let substitutes = text.windows(2).any(|w| w == b"$(") || text.contains(&b'`');
    if flags & WRDE_NOCMD != 0 || !substitutes {
        // SAFETY: forwarded as the caller made it.
        return unsafe { real(words, result, flags) };
    }
    // SAFETY: `words` is a C string; forwarded as the caller made it.
    unsafe {
        through_shell(
            Entry::Wordexp,
            words,
            || real(words, result, flags),
            |e| {
                set_errno(e);
                WRDE_NOSPACE
            },
        )
    }
}

/// iconv_open: glibc loads conversion modules from the directories in `GCONV_PATH`, read from
/// the environment at this point (a process may have set it itself), with its internal
/// `dlopen`, which no hook sees. A mutable directory there is refused (`EACCES`).
#[no_mangle]
pub unsafe extern "C" fn iconv_open(to: *const c_char, from: *const c_char) -> *mut libc::c_void {
    let failed = usize::MAX as *mut libc::c_void; // (iconv_t) -1
    let Some(real) = REAL_ICONV_OPEN.get(c"iconv_open") else {
        set_errno(libc::ENOSYS);
        return failed;
    };
    // SAFETY: dlsym returned glibc's iconv_open.
    let real: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut libc::c_void =
        unsafe { core::mem::transmute::<usize, _>(real) };
    if let Some(dirs) = variable(b"GCONV_PATH=") {
        if !crate::guard::allow_gconv_path(dirs) {
            set_errno(EACCES);
            return failed;
        }
    }
    // SAFETY: forwarded as the caller made it.
    unsafe { real(to, from) }
}

/// memfd_create: unless the caller asks for an executable memfd (`MFD_EXEC`), add
/// `MFD_NOEXEC_SEAL` (Linux 6.3+) where the profile forbids anonymous native code, so the
/// kernel itself refuses to execute it (Landlock does not restrict memfds). Older kernels
/// reject the flag with EINVAL; the call is then repeated as the caller made it.
#[no_mangle]
pub unsafe extern "C" fn memfd_create(name: *const c_char, flags: libc::c_uint) -> c_int {
    // SAFETY: memfd_create's arguments forwarded.
    libc_result(unsafe { memfd_create_as(libc::SYS_memfd_create, name, flags) }) as c_int
}

/// The `memfd_create` system call `nr` (the caller's own number, so `syscall()` keeps its ABI)
/// with the seal added as [`memfd_create`] describes; returns the kernel's value.
///
/// # Safety
/// `nr` is a `memfd_create` number ([`raw::kernel_call`]); the kernel validates `name`.
unsafe fn memfd_create_as(nr: c_long, name: *const c_char, flags: libc::c_uint) -> c_long {
    const MFD_NOEXEC_SEAL: libc::c_uint = 0x0008;
    const MFD_EXEC: libc::c_uint = 0x0010;
    let seal = flags & (MFD_EXEC | MFD_NOEXEC_SEAL) == 0
        && crate::state::with(|loaded| {
            loaded
                .policy()
                .map_or(true, |p| !p.profile().allows_anonymous_native())
        });
    let call = |f: libc::c_uint| {
        // SAFETY: memfd_create's arguments forwarded; the kernel validates `name`.
        unsafe { raw::syscall6(nr, [name as c_long, f as c_long, 0, 0, 0, 0]) }
    };
    let mut ret = if seal {
        call(flags | MFD_NOEXEC_SEAL)
    } else {
        call(flags)
    };
    if seal && ret == -c_long::from(libc::EINVAL) {
        ret = call(flags);
    }
    ret
}

/// dlopen of a file by path: a shared object from a mutable root is native code from a mutable
/// place. Refused objects are reported like execs and the call fails through the real dlopen
/// of a path that cannot exist, so `dlerror()` names the refusal.
#[no_mangle]
pub unsafe extern "C" fn dlopen(filename: *const c_char, flags: c_int) -> *mut libc::c_void {
    let Some(real) = REAL_DLOPEN.get(c"dlopen") else {
        return core::ptr::null_mut();
    };
    // SAFETY: dlsym returned glibc's dlopen.
    let real: unsafe extern "C" fn(*const c_char, c_int) -> *mut libc::c_void =
        unsafe { core::mem::transmute::<usize, _>(real) };
    // SAFETY: NULL or a C string per dlopen's contract.
    let name = unsafe { c_bytes(filename) };
    if !name.contains(&b'/') {
        // SAFETY: forwarded; names without a slash are searched in library directories, which
        // the guard checks at exec time (LD_LIBRARY_PATH).
        return unsafe { real(filename, flags) };
    }
    match crate::guard::decide_dlopen(Entry::Dlopen, name) {
        // SAFETY: forwarded as the caller made it.
        None => unsafe { real(filename, flags) },
        // SAFETY: a NUL-terminated path that does not exist; dlopen fails with its own message.
        Some(denied) => unsafe { real(denied.as_ptr().cast(), flags) },
    }
}

/// dlmopen: dlopen into a link-map namespace, decided like [`dlopen`].
#[no_mangle]
pub unsafe extern "C" fn dlmopen(
    namespace: libc::c_long,
    filename: *const c_char,
    flags: c_int,
) -> *mut libc::c_void {
    let Some(real) = REAL_DLMOPEN.get(c"dlmopen") else {
        return core::ptr::null_mut();
    };
    // SAFETY: dlsym returned glibc's dlmopen.
    let real: unsafe extern "C" fn(libc::c_long, *const c_char, c_int) -> *mut libc::c_void =
        unsafe { core::mem::transmute::<usize, _>(real) };
    // SAFETY: NULL or a C string per dlmopen's contract.
    let name = unsafe { c_bytes(filename) };
    if !name.contains(&b'/') {
        // SAFETY: forwarded, as for dlopen.
        return unsafe { real(namespace, filename, flags) };
    }
    match crate::guard::decide_dlopen(Entry::Dlmopen, name) {
        // SAFETY: forwarded as the caller made it.
        None => unsafe { real(namespace, filename, flags) },
        // SAFETY: a NUL-terminated path that does not exist.
        Some(denied) => unsafe { real(namespace, denied.as_ptr().cast(), flags) },
    }
}

/// fork: load the policy in the parent first, so that every child inherits it ready. A shell
/// or make that forks and execs hundreds of times would otherwise load it once per child.
/// Loading is lock-free and allocation-free, so this is safe wherever fork is.
#[no_mangle]
pub unsafe extern "C" fn fork() -> pid_t {
    crate::state::prime();
    let Some(real) = REAL_FORK.get(c"fork") else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: dlsym returned glibc's fork, whose type this is.
    let real: unsafe extern "C" fn() -> pid_t = unsafe { core::mem::transmute::<usize, _>(real) };
    // SAFETY: forwarded as the caller made it.
    let pid = unsafe { real() };
    if pid == 0 {
        crate::decision_stack::after_fork_in_child();
    }
    pid
}

/// The `access` family, asked whether a file may be executed: a mutable script that the guard
/// starts through its interpreter is executable, although the seal or a `noexec` mount makes
/// the kernel say no (git skips a hook, and bash a command on `PATH`, that `access(X_OK)`
/// calls non-executable). Every other answer is the kernel's; a "no" the guard itself would
/// give the exec is reported like the exec's refusal (make asks before it runs a program).
///
/// # Safety
/// `path` is a valid NUL-terminated string (the callers' contract).
unsafe fn access_as_exec_will(
    entry: Entry,
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    match unsafe { raw::faccessat(dirfd, path, mode, flags) } {
        Ok(()) => 0,
        Err(libc::EACCES) if mode & libc::X_OK != 0 => {
            // SAFETY: forwarded contract.
            let name = unsafe { c_bytes(path) };
            let decidable = dirfd == libc::AT_FDCWD || name.starts_with(b"/");
            // Only the execute part was refused? Then the interpreter launch decides it.
            // SAFETY: forwarded contract.
            let rest_ok = unsafe { raw::faccessat(dirfd, path, mode & !libc::X_OK, flags) }.is_ok();
            if decidable
                && rest_ok
                && crate::guard::access_as_exec_will(entry, name, flags & libc::AT_EACCESS != 0)
            {
                0
            } else {
                fail_errno(libc::EACCES)
            }
        }
        Err(e) => fail_errno(e),
    }
}

#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: access's contract.
    unsafe { access_as_exec_will(Entry::Access, libc::AT_FDCWD, path, mode, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn faccessat(
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: faccessat's contract.
    unsafe { access_as_exec_will(Entry::Faccessat, dirfd, path, mode, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn eaccess(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: eaccess's contract.
    unsafe { access_as_exec_will(Entry::Eaccess, libc::AT_FDCWD, path, mode, libc::AT_EACCESS) }
}

#[no_mangle]
pub unsafe extern "C" fn euidaccess(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: euidaccess's contract.
    unsafe { access_as_exec_will(Entry::Eaccess, libc::AT_FDCWD, path, mode, libc::AT_EACCESS) }
}
