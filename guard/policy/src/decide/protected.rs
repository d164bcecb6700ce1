//! A protected runtime is started only by its wrapper (or by itself).

use super::request::{deny, Context, Verdict};
use crate::path::PathBuf;
use crate::reason::Reason;
use crate::sys::{FileInfo, Sys};

pub(super) fn check_protected<S: Sys>(
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
