//! `#!` parsing exactly as Linux's `fs/binfmt_script.c` (5.1 and later) does it.
//!
//! The kernel reads the first [`BINPRM_BUF_SIZE`] bytes into a zero-filled buffer and parses
//! that buffer in place; this module replays the same index arithmetic on the same buffer, so
//! every quirk carries over: a line without a newline ends one byte before the buffer does, the
//! name stops at the first space, tab or NUL, the single optional argument runs to the end of the
//! line (trailing blanks trimmed) and stops at a NUL, and `\r` is part of the name.

/// The kernel's `BINPRM_BUF_SIZE`.
pub const BINPRM_BUF_SIZE: usize = 256;

/// What the kernel would make of a file's first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shebang<'a> {
    /// Not a `#!` file.
    NotScript,
    /// A `#!` file the kernel rejects with `ENOEXEC` (blank or truncated interpreter name).
    Invalid,
    /// The kernel would run `interpreter [argument] <script> argv[1..]`.
    Script {
        interpreter: &'a [u8],
        argument: Option<&'a [u8]>,
    },
}

fn spacetab(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// `next_non_spacetab(first, last)`: inclusive bounds, as in the kernel.
fn next_non_spacetab(buf: &[u8], first: usize, last: usize) -> Option<usize> {
    (first..=last).find(|&i| !spacetab(buf[i]))
}

/// `next_terminator(first, last)`: inclusive bounds, as in the kernel.
fn next_terminator(buf: &[u8], first: usize, last: usize) -> Option<usize> {
    (first..=last).find(|&i| spacetab(buf[i]) || buf[i] == 0)
}

fn until_nul(s: &[u8]) -> &[u8] {
    match s.iter().position(|&c| c == 0) {
        Some(n) => &s[..n],
        None => s,
    }
}

/// Parses `buf`, which must hold the file's first bytes zero-padded to [`BINPRM_BUF_SIZE`]
/// (see [`pad`]).
pub fn parse(buf: &[u8; BINPRM_BUF_SIZE]) -> Shebang<'_> {
    if buf[0] != b'#' || buf[1] != b'!' {
        return Shebang::NotScript;
    }
    let buf_end = BINPRM_BUF_SIZE - 1;
    let mut i_end = match buf.iter().position(|&c| c == b'\n') {
        Some(nl) => nl,
        None => {
            let Some(start) = next_non_spacetab(buf, 2, buf_end) else {
                return Shebang::Invalid; // the whole buffer is blanks
            };
            if next_terminator(buf, start, buf_end).is_none() {
                return Shebang::Invalid; // the interpreter name may be truncated
            }
            buf_end
        }
    };
    while i_end > 0 && spacetab(buf[i_end - 1]) {
        i_end -= 1;
    }
    // i_end < 2 only when the newline is at index 0 or 1, impossible after "#!"; the kernel's
    // `next_non_spacetab(buf + 2, i_end)` then scans an empty range.
    if i_end < 2 {
        return Shebang::Invalid;
    }
    let i_name = match next_non_spacetab(buf, 2, i_end) {
        Some(n) if n != i_end => n,
        _ => return Shebang::Invalid,
    };
    let i_sep = next_terminator(buf, i_name, i_end);
    let name_end = i_sep.unwrap_or(i_end);
    let argument = match i_sep {
        Some(sep) if buf[sep] != 0 => next_non_spacetab(buf, sep, i_end)
            .filter(|&a| a < i_end)
            .map(|a| until_nul(&buf[a..i_end])),
        _ => None,
    };
    Shebang::Script {
        interpreter: &buf[i_name..name_end],
        argument,
    }
}

/// Copies a file's first bytes into a zero-filled kernel-sized buffer.
pub fn pad(head: &[u8]) -> [u8; BINPRM_BUF_SIZE] {
    let mut buf = [0u8; BINPRM_BUF_SIZE];
    let n = head.len().min(BINPRM_BUF_SIZE);
    buf[..n].copy_from_slice(&head[..n]);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[u8]) -> Shebang<'static> {
        let buf = Box::leak(Box::new(pad(s)));
        parse(buf)
    }
    fn script(i: &'static [u8], a: Option<&'static [u8]>) -> Shebang<'static> {
        Shebang::Script {
            interpreter: i,
            argument: a,
        }
    }

    #[test]
    fn kernel_cases() {
        let cases: &[(&[u8], Shebang)] = &[
            (b"#!/bin/sh\necho", script(b"/bin/sh", None)),
            (b"#! /bin/sh -e \n", script(b"/bin/sh", Some(b"-e"))),
            (
                b"#!/usr/bin/env -S node --x y\n",
                script(b"/usr/bin/env", Some(b"-S node --x y")),
            ),
            (b"#!/bin/sh\r\n", script(b"/bin/sh\r", None)),
            (b"#!\t/bin/sh\t-x\t\n", script(b"/bin/sh", Some(b"-x"))),
            (b"#!/bin/sh", script(b"/bin/sh", None)),
            (b"#!\n", Shebang::Invalid),
            (b"#!   \n", Shebang::Invalid),
            (b"#!/bin/s\0h -x\n", script(b"/bin/s", None)),
            (b"#!/bin/sh -a\0b\n", script(b"/bin/sh", Some(b"-a"))),
            (b"\x7fELF", Shebang::NotScript),
            (b"# !/bin/sh", Shebang::NotScript),
            (b"", Shebang::NotScript),
        ];
        for (input, want) in cases {
            assert_eq!(
                p(input),
                *want,
                "input {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn long_lines() {
        // No newline in 256 bytes and no terminator after the name: truncated, refused.
        let mut long = b"#!/".to_vec();
        long.resize(300, b'a');
        assert_eq!(p(&long), Shebang::Invalid);
        // No newline but a blank after the name: the line ends one byte before the buffer.
        let mut v = b"#!/bin/sh ".to_vec();
        v.resize(300, b'x');
        match p(&v) {
            Shebang::Script {
                interpreter,
                argument: Some(a),
            } => {
                assert_eq!(interpreter, b"/bin/sh");
                assert_eq!(a.len(), BINPRM_BUF_SIZE - 1 - 10);
            }
            other => panic!("{other:?}"),
        }
    }
}
