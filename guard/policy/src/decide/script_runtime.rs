//! A mutable script must not select a protected runtime through its `#!` line.

use super::inspect::identify;
use super::path_search::path_candidates;
use super::request::{deny, Context, Verdict};
use crate::path::{basename, is_loader_name};
use crate::reason::Reason;
use crate::sys::{env_get, StrList, Sys};
use crate::text::words;

/// A mutable script must not select a protected runtime: directly, through the loader, or
/// through `env` (including `-S` and a `PATH=` assignment).
#[inline(never)]
pub(super) fn check_script_runtime<S: Sys, E: StrList + ?Sized>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    interpreter: &[u8],
    argument: Option<&[u8]>,
    envp: &E,
    script: &[u8],
) -> Result<(), Verdict> {
    let refuse = || deny(Reason::ProtectedRuntimeScript, script);
    let is_runtime = |sys: &mut S, path: &[u8]| {
        identify(sys, path).is_some_and(|(info, kpath)| {
            ctx.runtimes
                .runtime_of(ctx.policy, &info, kpath.as_bytes())
                .is_some()
        })
    };
    if is_runtime(sys, interpreter) {
        return Err(refuse());
    }
    if is_loader_name(interpreter) {
        // The loader gets the whole argument as one word; a word without `/` is refused by the
        // loader check of the next hop.
        if let Some(program) = argument {
            if is_runtime(sys, program) {
                return Err(refuse());
            }
        }
        return Ok(());
    }
    if basename(interpreter) != b"env" {
        return Ok(());
    }
    let Some(argument) = argument else {
        return Ok(());
    };
    let ambiguous = || deny(Reason::ShebangAmbiguous, script);
    // Without -S, env sees the argument as one word; with -S it splits it (quotes, escapes and
    // ${VAR} expansions are refused rather than replayed).
    let split = argument
        .strip_prefix(b"--split-string=")
        .or_else(|| argument.strip_prefix(b"-S"))
        .or_else(|| argument.strip_prefix(b"--split-string"));
    let mut path_override: Option<&[u8]> = None;
    let mut command: Option<&[u8]> = None;
    let mut single = [argument];
    let list: &mut dyn Iterator<Item = &[u8]> = match split {
        Some(s) => {
            if s.iter().any(|c| matches!(c, b'\\' | b'\'' | b'"' | b'$')) {
                return Err(ambiguous());
            }
            &mut words(s)
        }
        None => &mut single.iter_mut().map(|w| &**w),
    };
    let mut options = true;
    let mut skip_value = false;
    for word in list {
        if skip_value {
            skip_value = false;
            continue;
        }
        if options && word.starts_with(b"-") {
            match word {
                b"--" => options = false,
                b"-" | b"-i" | b"--ignore-environment" | b"-0" | b"--null" | b"-v" | b"--debug" => {
                }
                b"-u" | b"--unset" => skip_value = true,
                w if w.starts_with(b"-u") || w.starts_with(b"--unset=") => {}
                w if w.starts_with(b"--block-signal")
                    || w.starts_with(b"--default-signal")
                    || w.starts_with(b"--ignore-signal") => {}
                _ => return Err(ambiguous()), // -C/--chdir, nested -S, unknown options
            }
            continue;
        }
        options = false;
        if let Some(eq) = word.iter().position(|&c| c == b'=') {
            if &word[..eq] == b"PATH" {
                path_override = Some(&word[eq + 1..]);
            }
            continue;
        }
        command = Some(word);
        break;
    }
    let Some(command) = command else {
        return Ok(());
    };
    if command.contains(&b'/') {
        return if is_runtime(sys, command) {
            Err(refuse())
        } else {
            Ok(())
        };
    }
    let search = path_override.or_else(|| env_get(envp, b"PATH"));
    for candidate in path_candidates(search, command) {
        if sys.is_executable(candidate.as_bytes()) {
            return if is_runtime(sys, candidate.as_bytes()) {
                Err(refuse())
            } else {
                Ok(())
            };
        }
    }
    Ok(())
}
