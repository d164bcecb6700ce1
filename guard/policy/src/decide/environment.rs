//! Code the new environment names (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `GCONV_PATH`...) and the
//! objects and code directories a running process loads (`dlopen`, `iconv_open`).

use super::inspect::{lexical_normal, name_file, Unnamed};
use super::mutable::{check_native, is_mutable, OncePerDecision};
use super::request::{deny, Context, Verdict};
use crate::env::{code_use, EnvUse};
use crate::path::{is_anonymous, PathBuf};
use crate::reason::Reason;
use crate::sys::{StrList, Sys};
use crate::Profile;

/// Shared objects and code directories named by the new environment: every variable glibc
/// loads code from ([`crate::env`]), every occurrence (the loader honours the last `LD_*`
/// entry, getenv the first).
pub(super) fn check_environment<S: Sys, E: StrList + ?Sized>(
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
pub(super) fn check_objects<S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    list: &[u8],
) -> Result<(), Verdict> {
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
pub(super) fn check_library_dirs<S: Sys>(
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
        check_native(ctx.policy, anonymous, reason, kp)?;
    }
    Ok(())
}
