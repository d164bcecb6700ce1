//! Loaders: direct `ld-linux*.so` invocations, and programs with a loader of their own
//! (valgrind, qemu-user: the policy's `own_loaders`).

use super::allow_list::check_allowed;
use super::environment::{check_library_dirs, check_objects};
use super::inspect::{inspect, Hop, ELF_MAGIC};
use super::mutable::{check_native, is_mutable};
use super::path_search::path_candidates;
use super::protected::check_protected;
use super::request::{deny, Context, Verdict};
use crate::path::{basename, is_anonymous};
use crate::reason::Reason;
use crate::sys::{env_get, At, StrList, Sys};

// NUL-separated words rather than tables of slices: a table of `&[u8]` is pointers the
// loader relocates in every process that loads the guard (tests/guard_load.rs keeps those on
// one page), and a `match` of byte strings is several times the code.
const LOADER_FLAGS: &[u8] =
    b"--list\0--verify\0--inhibit-cache\0--list-tunables\0--list-diagnostics";
const LOADER_VALUED: &[u8] = b"--library-path\0--inhibit-rpath\0--audit\0--preload\0--argv0\0\
    --glibc-hwcaps-prepend\0--glibc-hwcaps-mask";

/// Whether `word` is one of `list`'s NUL-separated words.
fn listed(list: &[u8], word: &[u8]) -> bool {
    list.split(|&c| c == 0).any(|w| w == word)
}

/// `ld-linux*.so [options] PROGRAM ...`: the loader maps PROGRAM and the objects its options
/// name. Options are matched exactly, as glibc's rtld does; the first other word is PROGRAM.
#[inline(never)]
pub(super) fn check_loader<'a, S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    mut args: impl Iterator<Item = &'a [u8]>,
) -> Result<(), Verdict> {
    while let Some(arg) = args.next() {
        if listed(LOADER_FLAGS, arg) {
            continue;
        }
        if arg == b"--help" || arg == b"--version" {
            return Ok(());
        }
        if listed(LOADER_VALUED, arg) {
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
            check_native(ctx.policy, anonymous, Reason::MutableNative, kpath)?;
        }
        return Ok(());
    }
    Ok(())
}

/// qemu-user's options that take a separate value (valgrind's never do: `--opt=value`).
const QEMU_VALUED: &[u8] =
    b"-g\0-L\0-s\0-cpu\0-E\0-U\0-0\0-r\0-d\0-D\0-dfilter\0-p\0-seed\0-trace\0-plugin\0-B\0-R";

/// A program with its own loader (valgrind, qemu-user, ...; the policy's `own_loaders`) maps
/// the program named by its first non-option argument without exec'ing it: refused, as for
/// the dynamic loader, when that is an ELF file from a mutable root. A name without `/` is
/// looked up both as a file in the current directory (qemu) and on `PATH` (valgrind).
#[inline(never)]
pub(super) fn check_own_loader<'a, S: Sys, E: StrList + ?Sized>(
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
        if qemu && listed(QEMU_VALUED, arg) {
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
        check_native(ctx.policy, anonymous, Reason::MutableNative, kpath)?;
    }
    Ok(())
}
