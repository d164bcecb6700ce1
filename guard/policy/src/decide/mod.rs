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
//!
//! One concern per file:
//! - this file: [`decide`] and [`decide_launch`], the walk along one exec's `#!` chain;
//! - [`path_search`]: glibc's PATH search;
//! - [`request`]: the request, the context and the verdict;
//! - [`runtime_ids`]: the protected runtimes' identities;
//! - [`protected`]: who may start a protected runtime;
//! - [`recall`]: the glue to the memo of immutable targets;
//! - [`inspect`]: opening, naming and reading one file;
//! - [`mutable`]: the one "mutable" predicate and what the profile allows of mutable code;
//! - [`allow_list`]: the policy's allow-list;
//! - [`launch`]: the argv of the chain, the launch of a mutable script, the canonical name;
//! - [`environment`]: code named by the environment, `dlopen` and `iconv_open`;
//! - [`loader`]: direct loader invocations and programs with their own loader;
//! - [`script_runtime`]: mutable scripts selecting a protected runtime.

mod allow_list;
mod environment;
mod inspect;
mod launch;
mod loader;
mod mutable;
mod path_search;
mod protected;
mod recall;
mod request;
#[cfg(test)]
mod rule_tests;
mod runtime_ids;
mod script_runtime;

pub use environment::{decide_code_dirs, decide_object};
pub use launch::{ExecName, Launch, MAX_CHAIN};
pub use mutable::is_mutable;
pub use path_search::{path_candidates, path_search, search_goes_on, Candidate, DEFAULT_PATH};
pub use request::{Context, Request, ShownPath, Target, Verdict};
pub use runtime_ids::RuntimeIds;

use crate::path::{is_anonymous, is_loader_name};
use crate::reason::Reason;
use crate::shebang::{self, Shebang};
use crate::sys::{At, StrList, Sys, EACCES, ELOOP, ENOEXEC};
use crate::Profile;
use allow_list::check_allowed;
use environment::check_environment;
use inspect::{inspect, Hop, ELF_MAGIC};
use launch::{Chain, Snapshot};
use loader::{check_loader, check_own_loader};
use mutable::{check_native, OncePerDecision};
use protected::check_protected;
use recall::{offer, recall};
use request::{deny, deny_errno};
use script_runtime::check_script_runtime;

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
                check_native(policy, anonymous, Reason::MutableNative, kpath)?;
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
