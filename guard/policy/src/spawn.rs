//! `posix_spawn` file actions run in the child before its exec: a `chdir`/`fchdir` changes what
//! a relative path names, and `dup2`/`open`/`close` change what `/proc/self/fd/N` (and
//! `/dev/fd/N`, `/dev/stdin`...) names. The guard decides in the parent, so it replays the
//! actions' effect on the path: [`child_path`] gives a name that, in the parent, leads where
//! the child's exec of the original name will lead.

use crate::path::PathBuf;
use crate::sys::Errno;

/// One file action, as `posix_spawn_file_actions_add*` recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnAction<'a> {
    Close(i32),
    Dup2 {
        from: i32,
        to: i32,
    },
    Open {
        fd: i32,
        path: &'a [u8],
    },
    Chdir(&'a [u8]),
    Fchdir(i32),
    CloseFrom(i32),
    /// `tcsetpgrp`: changes no name.
    Other,
    /// A kind the caller could not decode: refused ([`ChildPath::TooComplex`]).
    Unknown,
}

/// Most descriptors whose replayed state is tracked; more: [`ChildPath::TooComplex`].
const MAX_FDS: usize = 16;

#[derive(Clone, Copy)]
enum Fd<'a> {
    /// The parent's descriptor `k` (`dup2`).
    Parent(i32),
    /// A file opened by an action: its path, relative to the cwd it was opened from.
    Opened {
        cwd: usize,
        path: &'a [u8],
    },
    Closed,
}

/// What the child's exec of a path will reach, as a name the parent can inspect.
#[derive(Debug, PartialEq, Eq)]
pub enum ChildPath {
    /// No action changes what the path names: decide it as given. (A name that still goes
    /// through `/proc`, `/proc/self/exe` say, is handed to the kernel by the file's own name:
    /// what the child runs is what was decided.)
    Same,
    /// Decide this name instead (written to the caller's buffer).
    Rewritten,
    /// The child's exec will fail with this errno (a closed descriptor).
    Fails(Errno),
    /// The actions are beyond what is replayed (too many descriptors, a name too long):
    /// refuse rather than guess.
    TooComplex,
}

/// The directory prefixes the replay builds: the child's cwd after each `chdir`.
struct Cwds<'a> {
    /// Each cwd as a list of pieces joined with `/`; `None` is the parent's own cwd.
    pieces: [Option<Piece<'a>>; MAX_FDS],
    n: usize,
}

#[derive(Clone, Copy)]
enum Piece<'a> {
    /// A path, relative to the cwd with this index (or absolute).
    Join { base: usize, path: &'a [u8] },
    /// The directory behind the parent's descriptor (`fchdir`).
    ParentFd(i32),
    /// The directory opened by an action.
    Opened { cwd: usize, path: &'a [u8] },
}

impl<'a> Cwds<'a> {
    fn push(&mut self, p: Piece<'a>) -> Option<usize> {
        if self.n == MAX_FDS {
            return None;
        }
        self.pieces[self.n] = Some(p);
        self.n += 1;
        Some(self.n - 1)
    }

    /// Writes cwd `i` (with a trailing `/`, or nothing for the parent's own) to `out`.
    fn write(&self, i: usize, out: &mut PathBuf) -> Option<()> {
        match self.pieces.get(i).copied().flatten() {
            None => Some(()),
            Some(Piece::ParentFd(k)) => write_fd_path(k, out),
            Some(Piece::Join { base, path }) | Some(Piece::Opened { cwd: base, path }) => {
                if !path.starts_with(b"/") {
                    self.write(base, out)?;
                }
                out.push_bytes(path).ok()?;
                out.push_bytes(b"/").ok()
            }
        }
    }
}

fn write_fd_path(k: i32, out: &mut PathBuf) -> Option<()> {
    out.truncate(0);
    out.push_bytes(b"/proc/self/fd/").ok()?;
    push_decimal(out, k)?;
    out.push_bytes(b"/").ok()
}

fn push_decimal(out: &mut PathBuf, n: i32) -> Option<()> {
    let mut digits = [0u8; 20];
    out.push_bytes(crate::text::decimal(
        u64::from(n.unsigned_abs()),
        &mut digits,
    ))
    .ok()
}

/// A path that names an open descriptor of the process resolving it: `/proc/self/fd/N`,
/// `/proc/thread-self/fd/N`, `/dev/fd/N` (and `/dev/stdin`, `/dev/stdout`, `/dev/stderr`),
/// with what follows the number.
fn fd_name(path: &[u8]) -> Option<(i32, &[u8])> {
    for (name, fd) in [
        (&b"/dev/stdin"[..], 0),
        (b"/dev/stdout", 1),
        (b"/dev/stderr", 2),
    ] {
        if let Some(rest) = path.strip_prefix(name) {
            if rest.is_empty() || rest.starts_with(b"/") {
                return Some((fd, rest));
            }
        }
    }
    let rest = [
        &b"/proc/self/fd/"[..],
        b"/proc/thread-self/fd/",
        b"/dev/fd/",
    ]
    .iter()
    .find_map(|p| path.strip_prefix(*p))?;
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let n = core::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    Some((n, &rest[digits..]))
}

/// Replays `actions` on `path` (the path the child will exec): writes to `out` the name that
/// reaches, from the parent, what the child's exec will reach. A relative result is relative
/// to the parent's cwd, as `path` is.
pub fn child_path<'a>(
    actions: impl Iterator<Item = SpawnAction<'a>>,
    path: &[u8],
    out: &mut PathBuf,
) -> ChildPath {
    let mut cwds = Cwds {
        pieces: [None; MAX_FDS],
        n: 1, // index 0: the parent's own cwd
    };
    let mut cwd = 0usize;
    let mut fds: [(i32, Fd<'a>); MAX_FDS] = [(-1, Fd::Closed); MAX_FDS];
    let mut n_fds = 0;
    let mut closed_from = i32::MAX;
    let mut changed = false;
    let lookup = |fds: &[(i32, Fd<'a>)], closed_from: i32, fd: i32| -> Fd<'a> {
        match fds.iter().rev().find(|(n, _)| *n == fd) {
            Some(&(_, state)) => state,
            None if fd >= closed_from => Fd::Closed,
            None => Fd::Parent(fd),
        }
    };
    for action in actions {
        let (fd, state) = match action {
            SpawnAction::Other => continue,
            SpawnAction::Unknown => return ChildPath::TooComplex,
            SpawnAction::Chdir(p) => {
                let Some(i) = cwds.push(Piece::Join { base: cwd, path: p }) else {
                    return ChildPath::TooComplex;
                };
                (cwd, changed) = (i, true);
                continue;
            }
            SpawnAction::Fchdir(k) => {
                let piece = match lookup(&fds[..n_fds], closed_from, k) {
                    Fd::Parent(p) => Piece::ParentFd(p),
                    Fd::Opened { cwd, path } => Piece::Opened { cwd, path },
                    Fd::Closed => return ChildPath::Fails(crate::sys::EBADF),
                };
                let Some(i) = cwds.push(piece) else {
                    return ChildPath::TooComplex;
                };
                (cwd, changed) = (i, true);
                continue;
            }
            SpawnAction::CloseFrom(low) => {
                closed_from = closed_from.min(low);
                for slot in fds[..n_fds].iter_mut().filter(|(n, _)| *n >= low) {
                    slot.1 = Fd::Closed;
                }
                changed = true;
                continue;
            }
            SpawnAction::Close(fd) => (fd, Fd::Closed),
            SpawnAction::Dup2 { from, to } => (to, lookup(&fds[..n_fds], closed_from, from)),
            SpawnAction::Open { fd, path } => (fd, Fd::Opened { cwd, path }),
        };
        if n_fds == MAX_FDS {
            return ChildPath::TooComplex;
        }
        fds[n_fds] = (fd, state);
        n_fds += 1;
        changed = true;
    }
    if !changed {
        return ChildPath::Same;
    }
    // The kernel reads `//` and `/./` as `/`: so must the names replayed below.
    let mut name = PathBuf::new();
    if collapse(path, &mut name).is_none() {
        return ChildPath::TooComplex;
    }
    let path = name.as_bytes();
    out.truncate(0);
    let written = if let Some((fd, rest)) = fd_name(path) {
        match lookup(&fds[..n_fds], closed_from, fd) {
            Fd::Parent(k) => write_fd_path(k, out).map(|()| {
                let without_slash = out.as_bytes().len() - 1;
                out.truncate(without_slash)
            }),
            Fd::Opened { cwd, path: opened } => (|| {
                if !opened.starts_with(b"/") {
                    cwds.write(cwd, out)?;
                }
                out.push_bytes(opened).ok()
            })(),
            Fd::Closed => return ChildPath::Fails(crate::sys::ENOENT),
        }
        .and_then(|()| out.push_bytes(rest).ok())
    } else if let Some(rest) = own_cwd_name(path) {
        // `/proc/self/cwd/...`: the child's cwd, as a relative name.
        cwds.write(cwd, out).and_then(|()| {
            out.push_bytes(if rest.is_empty() { b"." } else { rest })
                .ok()
        })
    } else if path.starts_with(b"/") || cwd == 0 {
        return ChildPath::Same;
    } else {
        cwds.write(cwd, out)
            .and_then(|()| out.push_bytes(path).ok())
    };
    match written {
        Some(()) => ChildPath::Rewritten,
        None => ChildPath::TooComplex,
    }
}

/// `path` without empty and `.` components (`..` kept: what it undoes depends on symlinks),
/// absolute if it was, with a trailing `/` if it had one.
fn collapse(path: &[u8], out: &mut PathBuf) -> Option<()> {
    out.truncate(0);
    if path.starts_with(b"/") {
        out.push_bytes(b"/").ok()?;
    }
    let mut first = true;
    for c in path
        .split(|&c| c == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
    {
        if !first {
            out.push_bytes(b"/").ok()?;
        }
        out.push_bytes(c).ok()?;
        first = false;
    }
    if path.ends_with(b"/") && !first {
        out.push_bytes(b"/").ok()?;
    }
    if out.as_bytes().is_empty() {
        out.push_bytes(b".").ok()?;
    }
    Some(())
}

/// What follows `/proc/self/cwd` or `/proc/thread-self/cwd` (without its `/`).
fn own_cwd_name(path: &[u8]) -> Option<&[u8]> {
    [&b"/proc/self/cwd"[..], b"/proc/thread-self/cwd"]
        .iter()
        .find_map(|p| path.strip_prefix(*p))
        .filter(|rest| rest.is_empty() || rest.starts_with(b"/"))
        .map(|rest| rest.strip_prefix(b"/").unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use SpawnAction::*;

    fn replay(actions: &[SpawnAction<'_>], path: &[u8]) -> (ChildPath, std::string::String) {
        let mut out = PathBuf::new();
        let r = child_path(actions.iter().copied(), path, &mut out);
        let name = if r == ChildPath::Rewritten {
            std::string::String::from_utf8_lossy(out.as_bytes()).into_owned()
        } else {
            std::string::String::new()
        };
        (r, name)
    }

    #[test]
    fn the_child_sees_what_its_actions_made() {
        const RW: ChildPath = ChildPath::Rewritten;
        let cases: &[(&[SpawnAction<'_>], &[u8], ChildPath, &str)] = &[
            (&[], b"./x", ChildPath::Same, ""),
            (&[Dup2 { from: 5, to: 1 }], b"./x", ChildPath::Same, ""),
            (&[Chdir(b"/ws")], b"./x", RW, "/ws/x"),
            (&[Chdir(b"/ws")], b"/usr/bin/x", ChildPath::Same, ""),
            (&[Chdir(b"sub"), Chdir(b"deeper")], b"x", RW, "sub/deeper/x"),
            (&[Chdir(b"sub"), Chdir(b"/abs")], b"x", RW, "/abs/x"),
            (&[Fchdir(7)], b"x", RW, "/proc/self/fd/7/x"),
            (
                &[Dup2 { from: 9, to: 7 }, Fchdir(7)],
                b"x",
                RW,
                "/proc/self/fd/9/x",
            ),
            (
                &[
                    Open {
                        fd: 7,
                        path: b"/ws",
                    },
                    Fchdir(7),
                ],
                b"x",
                RW,
                "/ws/x",
            ),
            (
                &[Close(7), Fchdir(7)],
                b"x",
                ChildPath::Fails(crate::sys::EBADF),
                "",
            ),
            (
                &[Dup2 { from: 9, to: 3 }],
                b"/proc/self/fd/3",
                RW,
                "/proc/self/fd/9",
            ),
            (
                &[Dup2 { from: 9, to: 0 }],
                b"/dev/stdin",
                RW,
                "/proc/self/fd/9",
            ),
            (
                &[Dup2 { from: 3, to: 3 }],
                b"/dev/fd/3",
                RW,
                "/proc/self/fd/3",
            ),
            (
                &[Open {
                    fd: 3,
                    path: b"/ws/elf",
                }],
                b"/dev/fd/3",
                RW,
                "/ws/elf",
            ),
            (
                &[
                    Chdir(b"/ws"),
                    Open {
                        fd: 3,
                        path: b"elf",
                    },
                ],
                b"/proc/self/fd/3",
                RW,
                "/ws/elf",
            ),
            (
                &[Close(3)],
                b"/proc/self/fd/3",
                ChildPath::Fails(crate::sys::ENOENT),
                "",
            ),
            (
                &[CloseFrom(3)],
                b"/proc/self/fd/4",
                ChildPath::Fails(crate::sys::ENOENT),
                "",
            ),
            (&[CloseFrom(5)], b"/proc/self/fd/4", RW, "/proc/self/fd/4"),
            (
                &[Dup2 { from: 9, to: 3 }],
                b"/proc/self/fd/3/sub",
                RW,
                "/proc/self/fd/9/sub",
            ),
            (
                &[Dup2 { from: 9, to: 3 }],
                b"/proc/self/fd/30",
                RW,
                "/proc/self/fd/30",
            ),
            // The kernel reads `//` and `/./` as `/`, and so does the replay.
            (
                &[Dup2 { from: 9, to: 7 }],
                b"/proc/self/fd//7",
                RW,
                "/proc/self/fd/9",
            ),
            (
                &[Dup2 { from: 9, to: 7 }],
                b"//proc/self/fd/7",
                RW,
                "/proc/self/fd/9",
            ),
            (
                &[Dup2 { from: 9, to: 7 }],
                b"/proc/./self/fd/7",
                RW,
                "/proc/self/fd/9",
            ),
            // The child's cwd.
            (&[Chdir(b"/ws")], b"/proc/self/cwd/true", RW, "/ws/true"),
            (
                &[Chdir(b"/ws")],
                b"/proc/thread-self/cwd//true",
                RW,
                "/ws/true",
            ),
            (
                &[Dup2 { from: 9, to: 7 }],
                b"/proc/self/cwd/true",
                RW,
                "true",
            ),
        ];
        for (actions, path, want, name) in cases {
            let (got, got_name) = replay(actions, path);
            assert_eq!(
                (&got, got_name.as_str()),
                (want, *name),
                "{actions:?} {:?}",
                crate::text::Lossy(path)
            );
        }
    }
}
