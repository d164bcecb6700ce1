//! The kernel's name for an exec target without asking `/proc`.
//!
//! Reading `/proc/self/fd/N` makes the kernel build procfs entries for the calling process;
//! in a fresh `vfork` or `fork` child that is about to exec, that one call cost more than the
//! whole rest of the decision (about 15 µs, measured on the shell-loop benchmark). So the
//! engine names the file itself: it opens the path with `openat2(RESOLVE_NO_SYMLINKS)`, which
//! succeeds only when no component is a symlink, so the (absolute, normalised) path is the
//! kernel's name. When a symlink is in the way, it walks the path as the kernel does, one
//! `readlink` per component up to the symlink, splices in its text, and tries again; at the end
//! it checks that the kernel's own walk of the original path reaches the very same file. Any
//! doubt (a component missing or unreadable, a loop, a magic link, a long name, a race) gives
//! `None`, and the caller asks `/proc` as before: this path can only agree with that one.

use crate::path::PathBuf;
use crate::sys::{FileInfo, OpenMode, Sys, EINVAL, ELOOP};

/// The kernel's limit on symlinks followed in one path walk.
const MAX_LINKS: usize = 40;
/// Paths (with the symlink text spliced in) longer than this take the `/proc` route.
const PENDING_MAX: usize = 1024;

/// Opens the file an exec of `path` (relative to the cwd, following symlinks) would start,
/// writing its absolute, symlink-free name into `name`. `None`: ask the kernel instead.
pub fn open_resolved<S: Sys>(
    sys: &mut S,
    path: &[u8],
    mode: OpenMode,
    name: &mut PathBuf,
) -> Option<(S::Fd, FileInfo)> {
    open_resolved_in(sys, path, mode, name, &mut |_, _| false).map(|(fd, info, _)| (fd, info))
}

/// [`open_resolved`], also saying whether the session could make the same path name another
/// file later: a walk through a place `in_write_set` names (the cwd of a relative path, the
/// directory of any component walked one by one: of a symlink, or of a directory a `..`
/// leaves). (A plain path opened in one go that goes through a directory it can
/// change puts the file itself in such a place, which the caller checks anyway.)
pub fn open_resolved_in<S: Sys>(
    sys: &mut S,
    path: &[u8],
    mode: OpenMode,
    name: &mut PathBuf,
    in_write_set: &mut dyn FnMut(&mut S, &[u8]) -> bool,
) -> Option<(S::Fd, FileInfo, bool)> {
    let mut touched = false;
    let (fd, walked) = walk(sys, path, mode, name, in_write_set, &mut touched)?;
    let info = match sys.fstat(&fd) {
        // A walk of our own (symlinks, or a cwd read separately) must end where the kernel's
        // walk of the original path ends; opening the path as given needs no such check.
        Ok(info) if !walked || sys.stat(path).is_ok_and(|k| k.same_file(&info)) => Some(info),
        _ => None,
    };
    match info {
        Some(info) => Some((fd, info, touched)),
        None => {
            sys.close(fd);
            None
        }
    }
}

/// Resolves `path` into `out` and opens it there with no symlink allowed. The flag says
/// whether the name came from a walk of our own rather than from `path` itself.
fn walk<S: Sys>(
    sys: &mut S,
    path: &[u8],
    mode: OpenMode,
    out: &mut PathBuf,
    in_write_set: &mut dyn FnMut(&mut S, &[u8]) -> bool,
    touched: &mut bool,
) -> Option<(S::Fd, bool)> {
    // A trailing slash asks for a directory: never an exec target, leave it to the kernel.
    if path.is_empty() || path.len() > PENDING_MAX || path.ends_with(b"/") {
        return None;
    }
    // What is left to walk, right-aligned so that symlink text can be put in front of it.
    let mut pending = [0u8; PENDING_MAX];
    let mut start = PENDING_MAX - path.len();
    pending[start..].copy_from_slice(path);

    out.truncate(0);
    let relative = path[0] != b'/';
    if relative {
        sys.cwd(out).ok()?;
        if !out.as_bytes().starts_with(b"/") {
            return None; // "(unreachable)": the cwd is outside this process's root
        }
        // (Another thread can `chdir` after this check too: the caller hands the kernel a
        // relative ELF by its canonical name; see `decide_chain`.)
        *touched |= in_write_set(sys, out.as_bytes());
        if out.as_bytes() == b"/" {
            out.truncate(0);
        }
    }
    let mut links = 0;
    // Whether to try opening what is left in one go: at first, and after each splice.
    let mut try_whole = true;
    // Whether any component was resolved here rather than by the kernel's open.
    let mut stepped = false;
    loop {
        while start < PENDING_MAX && pending[start] == b'/' {
            start += 1;
        }
        let rest = &pending[start..];
        if rest.is_empty() || (try_whole && is_plain(rest)) {
            let resolved = out.as_bytes().len();
            if !rest.is_empty() {
                out.push_bytes(b"/").ok()?;
                out.push_bytes(rest).ok()?;
            }
            if out.as_bytes().is_empty() {
                return None; // the root directory itself
            }
            // A plain rest needs no check of its own: a directory of it in the write set (or
            // that the session can write) puts the file itself there, which the caller's
            // mutable predicate sees.
            match sys.open_exact(out.as_bytes(), mode) {
                Ok(fd) => return Some((fd, relative || stepped)),
                Err(ELOOP) if !rest.is_empty() => {
                    out.truncate(resolved);
                    try_whole = false;
                }
                Err(_) => return None,
            }
        }
        let len = pending[start..]
            .iter()
            .position(|&c| c == b'/')
            .unwrap_or(PENDING_MAX - start);
        let (component, next) = (start..start + len, start + len);
        stepped = true;
        match &pending[component.clone()] {
            b"." => {}
            b".." => {
                let parent = out.as_bytes().iter().rposition(|&c| c == b'/');
                out.truncate(parent.unwrap_or(0));
            }
            _ => {
                let resolved = out.as_bytes().len();
                // An entry of a directory the session can change can be replaced, a
                // directory by a symlink too: the name then leads where the session says.
                // Asked of every component walked here, symlink or not: a `..` after it hides
                // it from the mutable predicate, which sees only where the walk ends.
                let dir = if resolved == 0 {
                    &b"/"[..]
                } else {
                    out.as_bytes()
                };
                *touched |= in_write_set(sys, dir);
                out.push_bytes(b"/").ok()?;
                out.push_bytes(&pending[component]).ok()?;
                // The link text takes the component's place, just before the `/` (if any)
                // that starts what is left.
                match sys.read_link(out.as_bytes(), &mut pending[..next]) {
                    Err(EINVAL) => {} // not a symlink: part of the result
                    Ok(n) if n > 0 && n < next => {
                        links += 1;
                        if links > MAX_LINKS {
                            return None;
                        }
                        out.truncate(resolved);
                        if pending[0] == b'/' {
                            out.truncate(0);
                        }
                        pending.copy_within(..n, next - n);
                        start = next - n;
                        try_whole = true;
                        continue;
                    }
                    _ => return None,
                }
            }
        }
        start = next;
    }
}

/// A relative name the kernel walks exactly as written: no empty, `.` or `..` component.
fn is_plain(rest: &[u8]) -> bool {
    rest.split(|&c| c == b'/')
        .all(|c| !c.is_empty() && c != b"." && c != b"..")
}
