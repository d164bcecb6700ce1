//! One guarded exec: load the policy, fix the child environment (host mode), decide, report,
//! then run or refuse. Shared by every entry point.

use crate::state::{self, Loaded, Source, POLICY_PREFIX, PRELOAD_PREFIX};
use crate::{decision_stack, once, scratch};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use execguard_os::{raw, CList, LibcSys};
use execguard_policy::audit::{format_denial, Decision, DENIAL_MAX};
use execguard_policy::path::PATH_MAX;
use execguard_policy::sys::{StrList, EACCES};
use execguard_policy::{
    decide_launch, Context, ExecName, Launch, Memo, MemoTable, Policy, Reason, Request, Target,
    Verdict,
};
use libc::{c_char, c_int};

/// The libc entry point that was called (audit records name it).
#[derive(Clone, Copy)]
pub enum Entry {
    Execve,
    Execv,
    Execvp,
    Execvpe,
    Execl,
    Execle,
    Execlp,
    Execveat,
    Fexecve,
    PosixSpawn,
    PosixSpawnp,
    Syscall,
    System,
    Popen,
    Wordexp,
    Dlopen,
    Dlmopen,
    IconvOpen,
    Access,
    Faccessat,
    Eaccess,
}

impl Entry {
    fn name(self) -> &'static str {
        match self {
            Entry::Execve => "execve",
            Entry::Execv => "execv",
            Entry::Execvp => "execvp",
            Entry::Execvpe => "execvpe",
            Entry::Execl => "execl",
            Entry::Execle => "execle",
            Entry::Execlp => "execlp",
            Entry::Execveat => "execveat",
            Entry::Fexecve => "fexecve",
            Entry::PosixSpawn => "posix_spawn",
            Entry::PosixSpawnp => "posix_spawnp",
            Entry::Syscall => "syscall",
            Entry::System => "system",
            Entry::Popen => "popen",
            Entry::Wordexp => "wordexp",
            Entry::Dlopen => "dlopen",
            Entry::Dlmopen => "dlmopen",
            Entry::IconvOpen => "iconv_open",
            Entry::Access => "access",
            Entry::Faccessat => "faccessat",
            Entry::Eaccess => "eaccess",
        }
    }
}

/// Environment entries the guard can rewrite in host mode (a larger environment is refused
/// with `environment_too_large` rather than passed on without the guard).
const MAX_ENV: usize = 2048;

/// Whether the caller can hand a rewritten environment to the exec (`system`/`popen` cannot:
/// glibc passes `environ` itself).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum EnvRewrite {
    Allowed,
    Forbidden,
}

/// What to exec after an allow: exactly what was decided. The caller's own program and argv;
/// or the interpreter of a mutable script with the argv the kernel would have built; and in
/// either case, when the name given went through the write set, the file's canonical name.
pub struct Exec {
    pub env: *const *const c_char,
    /// `Some((program, argv))` when the guard starts a mutable script through its interpreter.
    pub launch: Option<(*const c_char, *const *const c_char)>,
    /// `Some(name)`: hand the kernel this name instead of the caller's (or the launch's).
    pub name: Option<*const c_char>,
}

impl Exec {
    /// The program and argv to start: the launch if there is one, else the caller's own; by
    /// the canonical name when there is one.
    pub fn program_or(
        &self,
        path: *const c_char,
        argv: *const *const c_char,
    ) -> (*const c_char, *const *const c_char) {
        let (program, argv) = self.launch.unwrap_or((path, argv));
        (self.name.unwrap_or(program), argv)
    }

    /// Must the exec be made by path ([`Exec::program_or`]) rather than as the caller asked
    /// (`execveat` with its dirfd and flags)?
    pub fn by_path(&self) -> bool {
        self.launch.is_some() || self.name.is_some()
    }
}

/// One `PATH` search (`execvp`, `posix_spawnp`): one decision, so its first refusal is
/// reported (line and record) and the refusals of the candidates after it are not.
#[derive(Default)]
pub struct Search {
    reported: core::cell::Cell<bool>,
}

impl Search {
    /// Should this refusal be reported? Once per search.
    fn first_refusal(&self) -> bool {
        !self.reported.replace(true)
    }
}

/// Decides one exec. On allow, `run` gets the environment to pass (the caller's, or the
/// rewritten one in host mode) and, under the seal, the interpreter launch; on refusal, `fail`
/// gets the errno.
///
/// # Safety
/// `argv` and `envp` are NULL or NULL-terminated arrays of valid C strings.
pub unsafe fn guarded<R>(
    entry: Entry,
    target: Target<'_>,
    argv: *const *const c_char,
    envp: *const *const c_char,
    rewrite: EnvRewrite,
    run: impl FnOnce(Exec) -> R,
    fail: impl FnOnce(c_int) -> R,
) -> R {
    // SAFETY: forwarded contract.
    unsafe { guarded_as(entry, target, None, None, argv, envp, rewrite, run, fail) }
}

/// [`guarded`] for a target inspected under another name than the one given (posix_spawn
/// file actions: `given_name` is what the child will exec), and for one candidate of a
/// `PATH` search (`search`).
///
/// # Safety
/// As [`guarded`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn guarded_as<R>(
    entry: Entry,
    target: Target<'_>,
    given_name: Option<&[u8]>,
    search: Option<&Search>,
    argv: *const *const c_char,
    envp: *const *const c_char,
    rewrite: EnvRewrite,
    run: impl FnOnce(Exec) -> R,
    fail: impl FnOnce(c_int) -> R,
) -> R {
    // The decision is one function for every caller: generic over `run` and `fail`, it was a
    // copy per entry point (13 of them, a tenth of the library's code).
    let ask = (entry, target, given_name, search);
    once::through_dyn(
        |decided| match decided {
            Ok(exec) => run(exec),
            Err(errno) => fail(errno),
        },
        // SAFETY: caller's contract.
        |finish| unsafe { guarded_once(ask, argv, envp, rewrite, finish) },
    )
}

/// [`guarded_as`]'s decision, which calls `finish` once: with the exec to run, or the errno.
///
/// # Safety
/// As [`guarded`].
#[inline(never)]
unsafe fn guarded_once(
    (entry, target, given_name, search): (Entry, Target<'_>, Option<&[u8]>, Option<&Search>),
    argv: *const *const c_char,
    envp: *const *const c_char,
    rewrite: EnvRewrite,
    finish: &mut dyn FnMut(Result<Exec, c_int>),
) {
    state::with(|loaded| {
        // SAFETY: caller's contract.
        let argv = unsafe { CList::new(argv) };
        // SAFETY: caller's contract.
        let envp = unsafe { CList::new(envp) };
        with_child_env(loaded, envp, rewrite, |child_env| {
            // Only what the exec itself needs stays on the caller's stack.
            let mut exec_as = ExecName::new();
            let mut launch = None;
            let decided = decision_stack::run(|| {
                let ask = Ask {
                    entry,
                    target,
                    given_name,
                    search,
                    argv: &argv,
                    env: &child_env,
                };
                decide_and_report(loaded, &ask, &mut exec_as, &mut launch)
            });
            let env = match decided {
                Ok(env) => env,
                Err(errno) => return finish(Err(errno)),
            };
            let name = (!exec_as.as_bytes().is_empty())
                .then(|| exec_as.as_c_bytes().as_ptr().cast::<c_char>());
            match &launch {
                None => finish(Ok(Exec {
                    env: env.as_ptr(),
                    launch: None,
                    name,
                })),
                Some(launch) => with_launch_argv(launch, &argv, |program, new_argv| {
                    finish(Ok(Exec {
                        env: env.as_ptr(),
                        launch: Some((program, new_argv)),
                        name,
                    }))
                })
                .unwrap_or_else(|| finish(Err(libc::E2BIG))),
            }
        })
    })
}

/// One exec as the caller asked for it.
struct Ask<'r> {
    entry: Entry,
    target: Target<'r>,
    given_name: Option<&'r [u8]>,
    search: Option<&'r Search>,
    argv: &'r CList,
    env: &'r Result<CList, Reason>,
}

/// The decision and its report, on the decision stack: `Ok` with the environment to run with
/// (the canonical name and the interpreter launch are in `exec_as` and `launch`), or the errno
/// to fail with.
fn decide_and_report<'r>(
    loaded: &Loaded,
    ask: &Ask<'r>,
    exec_as: &mut ExecName,
    launch: &mut Option<Launch<'r, CList>>,
) -> Result<CList, c_int> {
    let (entry, target) = (ask.entry, ask.target);
    let policy = match loaded.policy() {
        Ok(p) => p,
        Err(reason) => {
            report(None, entry, false, reason, b"", 0, target.name());
            return Err(EACCES);
        }
    };
    let env = match ask.env {
        Ok(env) => env,
        Err(reason) => {
            let reason = *reason;
            report(
                Some(&policy),
                entry,
                false,
                reason,
                target.name(),
                0,
                target.name(),
            );
            return Err(EACCES);
        }
    };
    let ctx = Context {
        policy: &policy,
        runtimes: &loaded.runtimes,
        self_lib: loaded.self_lib(),
        memo: Some(Memo::new(&MEMO, decision_stack::last_seen())),
    };
    let req = Request {
        target,
        given_name: ask.given_name,
        argv: ask.argv,
        envp: env,
    };
    match decide_launch(&mut LibcSys, &ctx, &req, exec_as, launch) {
        Verdict::Allow(reason) => {
            let audit = policy.audit_allow() || reason == Reason::Breakglass;
            if audit
                && !report(
                    Some(&policy),
                    entry,
                    true,
                    reason,
                    target.name(),
                    0,
                    target.name(),
                )
            {
                return Err(EACCES);
            }
            Ok(*env)
        }
        // A mutable file that is neither ELF nor #! gets the kernel's own answer, which makes
        // execvp and shells run it with /bin/sh: not a refusal, nothing to report.
        Verdict::Deny {
            reason: Reason::MutableUnknownFormat,
            errno,
            ..
        } => Err(errno),
        Verdict::Deny {
            reason,
            errno,
            path,
        } => {
            if ask.search.is_none_or(Search::first_refusal) {
                report(
                    Some(&policy),
                    entry,
                    false,
                    reason,
                    path.as_bytes(),
                    path.omitted(),
                    target.name(),
                );
            }
            Err(errno)
        }
        Verdict::Kernel(errno) => Err(errno),
    }
}

/// The process's memory of immutable exec targets (`execguard_policy::memo`). In `.data`,
/// not `.bss`: a `.bss` that outgrew the data segment's last file page would cost every
/// process another mapping at load.
#[link_section = ".data"]
static MEMO: MemoTable = MemoTable::new();

/// Most caller arguments a sealed script launch can carry (more: `E2BIG`).
const MAX_LAUNCH_ARGS: usize = 1024;

/// Builds the C argv of a [`Launch`]: the added arguments copied with NULs, then the caller's
/// own `argv[1..]` pointers, in a buffer sized to them ([`scratch::with_words`]). `None` when
/// there are too many or no memory.
#[inline(never)]
fn with_launch_argv<R>(
    launch: &Launch<'_, CList>,
    argv: &CList,
    f: impl FnOnce(*const c_char, *const *const c_char) -> R,
) -> Option<R> {
    let rest = argv.len().saturating_sub(1);
    if rest > MAX_LAUNCH_ARGS {
        return None;
    }
    let (mut added, mut text_len) = (0, 0);
    for a in launch.added_args() {
        added += 1;
        text_len += a.len() + 1;
    }
    let n_ptrs = added + rest + 1;
    scratch::with_words(n_ptrs + scratch::words_for(text_len), |words| {
        let (ptrs, text) = words.split_at_mut(n_ptrs);
        // SAFETY: only the bytes copied in below are read (at least `text_len` of them fit).
        let text = unsafe { scratch::bytes(text) };
        let (mut used, mut n) = (0, 0);
        for a in launch.added_args() {
            text[used..used + a.len()].copy_from_slice(a);
            text[used + a.len()] = 0;
            ptrs[n].write(text[used..].as_ptr() as usize);
            used += a.len() + 1;
            n += 1;
        }
        for i in 1..argv.len() {
            ptrs[n].write(argv.get(i)?.as_ptr() as usize);
            n += 1;
        }
        ptrs[n].write(0);
        let ptrs = ptrs.as_ptr().cast::<*const c_char>();
        // SAFETY: `ptrs[..=n]` was written above, the last entry NULL.
        Some(f(unsafe { *ptrs }, ptrs))
    })
    .flatten()
}

/// Host mode: every child gets the guard in `LD_PRELOAD` and the same inline policy, whatever
/// environment the caller built. Image mode (`/etc/ld.so.preload`): the environment is used as is.
fn with_child_env<R>(
    loaded: &Loaded,
    envp: CList,
    rewrite: EnvRewrite,
    f: impl FnOnce(Result<CList, Reason>) -> R,
) -> R {
    if loaded.source == Source::System {
        return f(Ok(envp));
    }
    let Some(lib) = loaded.self_lib() else {
        return f(Err(Reason::EnvironmentNotSticky));
    };
    // One pass over the environment (this runs on every exec of a host session).
    let (mut preloads, mut policies) = (0, 0);
    let (mut last_preload, mut first_policy) = (None, None);
    let named = |i: &usize| {
        envp.first_byte(*i)
            .is_some_and(|c| c == PRELOAD_PREFIX[0] || c == POLICY_PREFIX[0])
    };
    for e in (0..envp.len()).filter(named).filter_map(|i| envp.get(i)) {
        if let Some(v) = e.strip_prefix(PRELOAD_PREFIX) {
            preloads += 1;
            last_preload = Some(v);
        } else if let Some(v) = e.strip_prefix(POLICY_PREFIX) {
            policies += 1;
            first_policy = first_policy.or(Some(v));
        }
    }
    let has_lib =
        last_preload.is_some_and(|v| v.split(|&c| c == b':' || c == b' ').any(|e| e == lib));
    let same_policy = first_policy == Some(loaded.text());
    if has_lib && same_policy && preloads == 1 && policies == 1 {
        return f(Ok(envp));
    }
    if rewrite == EnvRewrite::Forbidden {
        return f(Err(Reason::EnvironmentNotSticky));
    }
    rewrite_env(loaded, envp, lib, last_preload, f)
}

/// The slow path of [`with_child_env`], in its own frame, with its buffers sized to the
/// environment ([`scratch::with_words`]: on the stack for ordinary environments).
#[inline(never)]
fn rewrite_env<R>(
    loaded: &Loaded,
    envp: CList,
    lib: &[u8],
    last_preload: Option<&[u8]>,
    f: impl FnOnce(Result<CList, Reason>) -> R,
) -> R {
    // LD_PRELOAD=<guard>[:<what the loader would have used>]
    let rest = last_preload.filter(|v| !v.is_empty());
    let preload_len = PRELOAD_PREFIX.len() + lib.len() + rest.map_or(0, |r| r.len() + 1) + 1;
    if preload_len > PATH_MAX || envp.len() > MAX_ENV {
        return f(Err(Reason::EnvironmentTooLarge));
    }
    let n_ptrs = envp.len() + 3;
    let mut f = Some(f);
    let done = scratch::with_words(n_ptrs + scratch::words_for(preload_len), |words| {
        let (ptrs, text) = words.split_at_mut(n_ptrs);
        // SAFETY: only the bytes copied in below are read (at least `preload_len` fit).
        let text = unsafe { scratch::bytes(text) };
        let mut at = 0;
        for part in [PRELOAD_PREFIX, lib]
            .into_iter()
            .chain(rest.into_iter().flat_map(|r| [&b":"[..], r]))
        {
            text[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        text[at] = 0;
        let mut n = 0;
        for i in 0..envp.len() {
            let Some(e) = envp.get(i) else { break };
            if e.starts_with(PRELOAD_PREFIX) || e.starts_with(POLICY_PREFIX) {
                continue;
            }
            ptrs[n].write(e.as_ptr() as usize);
            n += 1;
        }
        ptrs[n].write(text.as_ptr() as usize);
        ptrs[n + 1].write(loaded.entry_ptr() as usize);
        ptrs[n + 2].write(0);
        // SAFETY: `ptrs[..n + 3]` is written and NULL-terminated; every entry is a C string
        // that outlives `f`: the caller's own entries, the preload entry in `text`, and the
        // cache's policy entry.
        let list = unsafe { CList::new(ptrs.as_ptr().cast()) };
        let f = f.take().expect("called once");
        f(Ok(list))
    });
    match (done, f) {
        (Some(r), _) => r,
        (None, Some(f)) => f(Err(Reason::EnvironmentTooLarge)),
        (None, None) => unreachable_after_run(),
    }
}

#[cold]
fn unreachable_after_run() -> ! {
    // with_words returns None only before calling its closure.
    raw::abort()
}

/// Refuses a call the engine cannot decide (the policy's audit log still gets the record).
#[inline(never)]
#[cold]
pub fn refuse(entry: Entry, reason: Reason, target: &[u8]) {
    decision_stack::run(|| {
        state::with(|loaded| {
            let policy = loaded.policy().ok();
            report(policy.as_ref(), entry, false, reason, b"", 0, target);
        })
    })
}

#[inline(never)]
#[cold]
/// Writes the refusal line (for denials) and the audit record. Returns false when a record
/// was due and could not be written (callers then refuse: nothing is lost). Called on the
/// decision stack (by a decision, or by [`refuse`]).
fn report(
    policy: Option<&Policy<'_>>,
    entry: Entry,
    allowed: bool,
    reason: Reason,
    path: &[u8],
    omitted: usize,
    target: &[u8],
) -> bool {
    // The whole path and the way forward (on the decision stack: this is never the caller's).
    let mut line = [0u8; DENIAL_MAX];
    let profile = policy.map(|p| p.profile());
    if !allowed {
        let n = format_denial(
            "execguard",
            reason,
            profile,
            if path.is_empty() { target } else { path },
            omitted,
            &mut line,
        );
        write_all(2, &line[..n]);
    }
    let Some(policy) = policy else {
        return true;
    };
    let record = execguard_os::audit::stamp(
        "guard",
        entry.name(),
        if allowed {
            Decision::Allow
        } else {
            Decision::Deny
        },
        reason.code(),
        profile,
        path,
        target,
    );
    // To the writer outside the session when the policy names one, else appended to the log:
    // whole or not at all either way (a fragment would glue itself to the next record).
    match execguard_os::audit::deliver(policy, &record) {
        None | Some(Ok(())) => true,
        Some(Err(_)) => {
            let to = policy.audit_socket().or(policy.audit_log()).unwrap_or(b"");
            let n = format_denial(
                "execguard",
                Reason::AuditUnwritable,
                profile,
                to,
                0,
                &mut line,
            );
            write_all(2, &line[..n]);
            false
        }
    }
}

fn write_all(fd: c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        match raw::write(fd, bytes) {
            Ok(n) if n > 0 => bytes = &bytes[n..],
            Err(libc::EINTR) => {}
            _ => return, // stderr closed: the errno still tells the caller
        }
    }
}

/// The `iconv_open` check of the process's current `GCONV_PATH`: may glibc load conversion
/// modules from these directories? Reports a refusal.
pub fn allow_gconv_path(dirs: &[u8]) -> bool {
    decision_stack::run(|| {
        state::with(|loaded| {
            let policy = match loaded.policy() {
                Ok(p) => p,
                Err(reason) => {
                    report(None, Entry::IconvOpen, false, reason, dirs, 0, dirs);
                    return false;
                }
            };
            let ctx = Context {
                policy: &policy,
                runtimes: &loaded.runtimes,
                self_lib: loaded.self_lib(),
                memo: None,
            };
            match execguard_policy::decide_code_dirs(&mut LibcSys, &ctx, dirs) {
                Verdict::Deny { reason, path, .. } => {
                    report(
                        Some(&policy),
                        Entry::IconvOpen,
                        false,
                        reason,
                        path.as_bytes(),
                        path.omitted(),
                        dirs,
                    );
                    false
                }
                _ => true,
            }
        })
    })
}

/// The dlopen check: `None` to let the call through, or the path the failing call is made with
/// (`/proc/execguard/denied/<reason>`, which cannot exist).
pub fn decide_dlopen(entry: Entry, path: &[u8]) -> Option<[u8; 64]> {
    decision_stack::run(|| {
        state::with(|loaded| {
            let verdict = match loaded.policy() {
                Ok(policy) => {
                    let ctx = Context {
                        policy: &policy,
                        runtimes: &loaded.runtimes,
                        self_lib: loaded.self_lib(),
                        memo: None,
                    };
                    let v = execguard_policy::decide_object(&mut LibcSys, &ctx, path);
                    if let Verdict::Deny {
                        reason,
                        path: ref decided,
                        ..
                    } = v
                    {
                        report(
                            Some(&policy),
                            entry,
                            false,
                            reason,
                            decided.as_bytes(),
                            decided.omitted(),
                            path,
                        );
                    }
                    v
                }
                Err(reason) => {
                    report(None, entry, false, reason, path, 0, path);
                    Verdict::Deny {
                        reason,
                        errno: EACCES,
                        path: execguard_policy::ShownPath::new(b""),
                    }
                }
            };
            match verdict {
                Verdict::Deny { reason, .. } => {
                    let mut out = [0u8; 64];
                    let prefix = b"/proc/execguard/denied/";
                    let code = reason.code().as_bytes();
                    out[..prefix.len()].copy_from_slice(prefix);
                    let n = code.len().min(out.len() - prefix.len() - 1);
                    out[prefix.len()..prefix.len() + n].copy_from_slice(&code[..n]);
                    Some(out)
                }
                _ => None,
            }
        })
    })
}

/// The guard's answer to an `access(X_OK)` the kernel refused (the seal or a `noexec` mount
/// refuses every file of the write set). True for a mutable script the guard starts through
/// its interpreter, when its mode lets the caller execute it: `access(X_OK)` then answers as
/// the exec will (git runs hooks and shells find scripts only when that check passes). False
/// otherwise; when the guard itself would refuse the exec (`mutable_native` in strict, say),
/// the refusal is reported as an exec's is, with `entry` as the entry point: make asks
/// `access(X_OK)` before it runs a program and stops there, so without this nobody would see
/// why. Reported once per file per process: a probe in a loop is one decision, not a flood.
/// Decided by the engine's own launch plan.
pub fn access_as_exec_will(entry: Entry, path: &[u8], effective_ids: bool) -> bool {
    decision_stack::run(|| access_decision(entry, path, effective_ids))
}

fn access_decision(entry: Entry, path: &[u8], effective_ids: bool) -> bool {
    let Ok(c) = execguard_os::CPath::new(path) else {
        return false;
    };
    // SAFETY: `c` is NUL-terminated.
    let st = match unsafe { raw::stat(c.ptr()) } {
        Ok(st) if mode_lets_caller_execute(&st, effective_ids) => st,
        _ => return false,
    };
    state::with(|loaded| {
        let Ok(policy) = loaded.policy() else {
            return false;
        };
        let ctx = Context {
            policy: &policy,
            runtimes: &loaded.runtimes,
            self_lib: loaded.self_lib(),
            memo: None,
        };
        // C lists, as every exec's: a decision over other list types is another copy of the
        // engine in the library.
        let (argv, no_env) = ([c.ptr(), core::ptr::null()], [core::ptr::null()]);
        // SAFETY: both are NULL-terminated; `c` outlives them.
        let (argv, no_env) = unsafe { (CList::new(argv.as_ptr()), CList::new(no_env.as_ptr())) };
        let req = Request {
            target: Target::Path(path),
            given_name: None,
            argv: &argv,
            envp: &no_env,
        };
        let mut exec_as = ExecName::new();
        let mut launch = None;
        match decide_launch(&mut LibcSys, &ctx, &req, &mut exec_as, &mut launch) {
            Verdict::Allow(_) => policy.seal() && launch.is_some(),
            // The kernel's own answer for a file that is neither ELF nor #!.
            Verdict::Deny {
                reason: Reason::MutableUnknownFormat,
                ..
            } => false,
            Verdict::Deny {
                reason,
                path: decided,
                ..
            } => {
                if TOLD.first_time(st.st_dev, st.st_ino) {
                    report(
                        Some(&policy),
                        entry,
                        false,
                        reason,
                        decided.as_bytes(),
                        decided.omitted(),
                        path,
                    );
                }
                false
            }
            Verdict::Kernel(_) => false,
        }
    })
}

/// The files whose `access(X_OK)` refusal this process has reported (device and inode), so
/// that each is reported once. A full table starts over: a file may then be reported again,
/// never left unreported. In `.data`, like the memo.
struct Told {
    files: [(AtomicU64, AtomicU64); TOLD_FILES],
    next: AtomicUsize,
}

const TOLD_FILES: usize = 16;

impl Told {
    const fn new() -> Told {
        Told {
            files: [const { (AtomicU64::new(0), AtomicU64::new(0)) }; TOLD_FILES],
            next: AtomicUsize::new(0),
        }
    }

    /// Is this the first report of the file? Remembers it. Two threads racing on one file may
    /// both report it: a duplicate, never a loss.
    fn first_time(&self, dev: u64, ino: u64) -> bool {
        // Inode 0 is no file's: an unused slot never matches a real one.
        let seen = self.files.iter().any(|(d, i)| {
            i.load(Ordering::Relaxed) == ino && ino != 0 && d.load(Ordering::Relaxed) == dev
        });
        if seen {
            return false;
        }
        let slot = &self.files[self.next.fetch_add(1, Ordering::Relaxed) % TOLD_FILES];
        slot.0.store(dev, Ordering::Relaxed);
        slot.1.store(ino, Ordering::Relaxed);
        true
    }
}

#[link_section = ".data"]
static TOLD: Told = Told::new();

/// The kernel's permission check for executing a regular file, from its mode (the part of
/// `generic_permission` a `noexec` mount or Landlock stops the kernel from answering): root
/// needs one execute bit, others the bit of their class. `access()` asks for the real ids,
/// `AT_EACCESS` for the effective ones.
fn mode_lets_caller_execute(st: &libc::stat, effective_ids: bool) -> bool {
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return false;
    }
    let uid = if effective_ids {
        raw::geteuid()
    } else {
        raw::getuid()
    };
    if uid == 0 {
        return st.st_mode & 0o111 != 0;
    }
    if uid == st.st_uid {
        return st.st_mode & 0o100 != 0;
    }
    if raw::in_group(st.st_gid, effective_ids) {
        return st.st_mode & 0o010 != 0;
    }
    st.st_mode & 0o001 != 0
}
