//! The kernel's name for an exec target without asking `/proc`.
//!
//! Reading `/proc/self/fd/N` makes the kernel build procfs entries for the calling process;
//! in a fresh `vfork` or `fork` child that is about to exec, that one call cost more than the
//! whole rest of the decision (about 15 µs of the ~25 µs, measured on the shell-loop
//! benchmark). So the engine first resolves the path itself, one `readlink` per component as
//! the kernel's path walk does, opens the result with no symlink allowed anywhere in it, and
//! checks that the kernel's own walk of the original path reaches the very same file. Any
//! doubt (a component missing or unreadable, a loop, a magic link, a long name, a race) gives
//! `None`, and the caller asks `/proc` as before: the fast path can only agree with the slow
//! one, never overrule it.

use crate::path::PathBuf;
use crate::sys::{FileInfo, OpenMode, Sys, EINVAL};

/// The kernel's limit on symlinks followed in one path walk.
const MAX_LINKS: usize = 40;
/// Paths (with the symlink text spliced in) longer than this take the `/proc` route.
const PENDING_MAX: usize = 1024;

/// Opens the file an exec of `path` (relative to the cwd, following symlinks) would start,
/// writing its symlink-free absolute name into `name`. `None`: ask the kernel instead.
pub fn open_resolved<S: Sys>(
    sys: &mut S,
    path: &[u8],
    name: &mut PathBuf,
) -> Option<(S::Fd, FileInfo)> {
    resolve(sys, path, name)?;
    let fd = sys.open_exact(name.as_bytes(), OpenMode::Read).ok()?;
    let same = match (sys.fstat(&fd), sys.stat(path)) {
        (Ok(opened), Ok(walked)) if opened.same_file(&walked) => Some(opened),
        _ => None,
    };
    match same {
        Some(info) => Some((fd, info)),
        None => {
            sys.close(fd);
            None
        }
    }
}

/// Resolves `path` into `out` as an absolute name without symlinks, `.` or `..`, the way the
/// kernel walks it: each symlink's text replaces the component, `..` goes to the parent of what
/// has been resolved so far. `None` when that cannot be done exactly and cheaply.
pub fn resolve<S: Sys>(sys: &mut S, path: &[u8], out: &mut PathBuf) -> Option<()> {
    // A trailing slash asks for a directory: never an exec target, leave it to the kernel.
    if path.is_empty() || path.len() > PENDING_MAX || path.ends_with(b"/") {
        return None;
    }
    // What is left to walk, right-aligned so that symlink text can be put in front of it.
    let mut pending = [0u8; PENDING_MAX];
    let mut start = PENDING_MAX - path.len();
    pending[start..].copy_from_slice(path);

    out.truncate(0);
    if path[0] != b'/' {
        sys.cwd(out).ok()?;
        if !out.as_bytes().starts_with(b"/") {
            return None; // "(unreachable)": the cwd is outside this process's root
        }
        if out.as_bytes() == b"/" {
            out.truncate(0);
        }
    }
    let mut links = 0;
    loop {
        while start < PENDING_MAX && pending[start] == b'/' {
            start += 1;
        }
        if start == PENDING_MAX {
            break;
        }
        let len = pending[start..]
            .iter()
            .position(|&c| c == b'/')
            .unwrap_or(PENDING_MAX - start);
        let (component, next) = (start..start + len, start + len);
        match &pending[component.clone()] {
            b"." => {}
            b".." => {
                let parent = out.as_bytes().iter().rposition(|&c| c == b'/');
                out.truncate(parent.unwrap_or(0));
            }
            _ => {
                let resolved = out.as_bytes().len();
                out.push_bytes(b"/").ok()?;
                out.push_bytes(&pending[component]).ok()?;
                // The link text goes just before what is left, with a `/` between.
                let room = next.checked_sub(1)?;
                match sys.read_link(out.as_bytes(), &mut pending[..room]) {
                    Err(EINVAL) => {} // not a symlink: part of the result
                    Ok(n) if n > 0 && n < room => {
                        links += 1;
                        if links > MAX_LINKS {
                            return None;
                        }
                        out.truncate(resolved);
                        if pending[0] == b'/' {
                            out.truncate(0);
                        }
                        pending.copy_within(..n, next - 1 - n);
                        pending[next - 1] = b'/';
                        start = next - 1 - n;
                        continue;
                    }
                    _ => return None,
                }
            }
        }
        start = next;
    }
    if out.as_bytes().is_empty() {
        return None; // the root directory itself
    }
    Some(())
}
