//! The launch plan: the argv each file of a `#!` chain receives, the [`Launch`] that starts a
//! mutable script through its interpreter, and the canonical [`ExecName`] handed to the kernel.

use super::request::Request;
use crate::shebang::BINPRM_BUF_SIZE;
use crate::sys::StrList;

/// Files the kernel examines for one exec: the target and up to five interpreters.
pub const MAX_CHAIN: usize = 6;

/// The canonical name the kernel is handed instead of the caller's ([`decide_launch`]), at
/// most [`ExecName::MAX`] bytes: it sits on the caller's stack for every exec, and a preload
/// library must not need more stack than the call it replaces. A longer one is refused
/// (`path_too_long`) rather than handed to the kernel by a name the session could redirect.
pub struct ExecName {
    buf: [core::mem::MaybeUninit<u8>; ExecName::MAX + 1],
    pub(super) len: usize,
}

impl ExecName {
    pub const MAX: usize = 1023;

    #[inline(always)]
    pub fn new() -> Self {
        // SAFETY: an array of MaybeUninit is valid uninitialised.
        let buf = unsafe {
            core::mem::MaybeUninit::<[core::mem::MaybeUninit<u8>; ExecName::MAX + 1]>::uninit()
                .assume_init()
        };
        ExecName { buf, len: 0 }
    }

    pub(super) fn set(&mut self, name: &[u8]) -> bool {
        if name.len() > Self::MAX {
            return false;
        }
        for (slot, &b) in self.buf.iter_mut().zip(name) {
            slot.write(b);
        }
        self.buf[name.len()].write(0);
        self.len = name.len();
        true
    }

    /// The name (empty: hand the kernel the caller's own).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `buf[..len]` was written by `set` (len is 0 otherwise).
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) }
    }

    /// The name with its NUL (valid once [`ExecName::as_bytes`] is not empty).
    pub fn as_c_bytes(&self) -> &[u8] {
        // SAFETY: `set` wrote the NUL at `len`; an empty name is just read as "".
        if self.len == 0 {
            return b"\0";
        }
        // SAFETY: `buf[..=len]` was written by `set`.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len + 1) }
    }
}

impl Default for ExecName {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a piece of the argv that an interpreter will see is stored.
#[derive(Clone, Copy)]
pub(super) enum Piece {
    Arena(usize, usize),
    Target,
}

/// The argv each file of the chain receives: the kernel turns `script args` into
/// `interpreter [arg] script args`, once per `#!` level.
pub(super) struct Chain<'r, A: StrList + ?Sized> {
    pub(super) arena: [u8; MAX_CHAIN * BINPRM_BUF_SIZE],
    pub(super) used: usize,
    /// Arguments between the current argv[0] and the caller's argv[1..].
    pub(super) prefix: [Piece; 2 * MAX_CHAIN],
    pub(super) n: usize,
    /// The name the current file was started by (the exec path, then each interpreter).
    pub(super) current: Piece,
    pub(super) argv: &'r A,
    pub(super) target: &'r [u8],
}

/// Where a launch starts: the chain's argv state at its first file outside the mutable roots.
/// (The arena only grows, so the final chain's arena still holds what this names.)
pub(super) struct Snapshot {
    pub(super) prefix: [Piece; 2 * MAX_CHAIN],
    pub(super) n: usize,
    pub(super) current: Piece,
}

impl<'r, A: StrList + ?Sized> Chain<'r, A> {
    pub(super) fn new<E: StrList + ?Sized>(req: &Request<'r, A, E>) -> Self {
        Chain {
            arena: [0; MAX_CHAIN * BINPRM_BUF_SIZE],
            used: 0,
            prefix: [Piece::Target; 2 * MAX_CHAIN],
            n: 0,
            current: Piece::Target,
            argv: req.argv,
            target: req.given_name.unwrap_or(req.target.name()),
        }
    }

    pub(super) fn get(&self, p: Piece) -> &[u8] {
        match p {
            Piece::Arena(s, n) => &self.arena[s..s + n],
            Piece::Target => self.target,
        }
    }

    pub(super) fn store(&mut self, s: &[u8]) -> Piece {
        let start = self.used;
        self.arena[start..start + s.len()].copy_from_slice(s);
        self.used += s.len();
        Piece::Arena(start, s.len())
    }

    /// The kernel runs `interpreter [argument] <current name> <prefix...> argv[1..]`.
    pub(super) fn enter_interpreter(&mut self, interpreter: &[u8], argument: Option<&[u8]>) {
        let mut front = [Piece::Target; 2];
        let mut k = 0;
        if let Some(a) = argument {
            front[k] = self.store(a);
            k += 1;
        }
        front[k] = self.current;
        k += 1;
        self.prefix.copy_within(0..self.n, k);
        self.prefix[..k].copy_from_slice(&front[..k]);
        self.n += k;
        self.current = self.store(interpreter);
    }

    /// argv[1..] of the current file.
    pub(super) fn args(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.prefix[..self.n]
            .iter()
            .map(|&p| self.get(p))
            .chain((1..self.argv.len()).filter_map(|i| self.argv.get(i)))
    }
}

/// How to start an allowed mutable script when the kernel itself refuses to execute files in
/// mutable roots (the Landlock seal): exec its first interpreter outside the mutable roots with
/// the argv the kernel's `binfmt_script` would have built.
pub struct Launch<'r, A: StrList + ?Sized>(pub(super) Chain<'r, A>);

impl<A: StrList + ?Sized> Launch<'_, A> {
    /// The program to exec (an interpreter named in a `#!` line).
    pub fn program(&self) -> &[u8] {
        self.0.get(self.0.current)
    }
    /// The arguments the kernel would add before the caller's `argv[1..]`: the program, then
    /// the `#!` arguments and script names (at most `2 * MAX_CHAIN + 1`).
    pub fn added_args(&self) -> impl Iterator<Item = &[u8]> + '_ {
        core::iter::once(self.program())
            .chain(self.0.prefix[..self.0.n].iter().map(|&p| self.0.get(p)))
    }
    /// Its full argv: [`Launch::added_args`], then the caller's `argv[1..]`.
    pub fn argv(&self) -> impl Iterator<Item = &[u8]> + '_ {
        core::iter::once(self.program()).chain(self.0.args())
    }
}
