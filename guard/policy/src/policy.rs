//! The policy file: a strict subset of TOML that the guard parses without allocating.
//!
//! ```toml
//! version = 1
//! profile = "strict"                       # strict | development | build | breakglass
//! workspace = "/workspace"                 # mutable, like the built-in roots
//! mutable_roots = ["/cache"]               # added to the built-in roots, never replacing them
//! exec_dirs = ["/home/u/.cargo/bin"]       # inside the write set, executable, read-only to the session
//! executable_roots = ["/home/u/proj", "/tmp"]  # development, build: where the session's own
//!                                          #  native code runs (the seal's both rights); absent:
//!                                          #  wherever the kernel lets it
//! allow_commands = []                      # empty: no allow-list; else basenames or paths
//! audit_log = "/state/execguard/audit.jsonl"
//! audit_allow = false                      # also record allowed execs
//! audit_socket = "/home/u/.local/state/execguard/run/0123456789abcdef.sock"
//!                                          # records go to the writer outside the session
//! runtime_profile = "/run/execguard/state/profile"  # root-owned file that may set the profile
//! seal = false                             # the session runs under a Landlock exec seal
//!
//! [[runtime]]                               # a protected runtime and the wrapper that may start it
//! name = "git"                              # (a directory `path` protects every file beneath it;
//!                                           #  the first entry of a name must be the file to run)
//! path = "/usr/libexec/execguard/real/git"
//! wrapper = "/usr/libexec/execguard/bin/execguard-git"
//! path_id = "2049:1835"                     # optional, honoured only with `seal = true`: the
//! wrapper_id = "2049:1840"                  #  identities `execguard run` found at start
//!                                           #  ("DEV:INO", "DEV:INO/" for a directory)
//! ```
//!
//! Accepted: `key = value` lines, `#` comments, `"..."` strings without escapes, `'...'`
//! strings, arrays of strings (may span lines, trailing comma allowed), `true`/`false`,
//! non-negative integers, and `[[runtime]]` headers. Everything else is refused: unknown or
//! repeated keys, escapes, other tables, too many entries, non-canonical paths. Every document
//! this parser accepts means the same to a full TOML parser (a test checks it).

use crate::path::{
    basename, is_canonical_root, is_strict_spelling, is_under, may_be_under, may_be_under_strict,
};
use crate::text::Lossy;
use crate::Profile;

/// The largest policy accepted (it also travels inline in the environment).
pub const MAX_POLICY_BYTES: usize = 16 * 1024;
pub const MAX_ROOTS: usize = 32;
pub const MAX_ALLOWED: usize = 256;
pub const MAX_RUNTIMES: usize = 32;
/// Most `own_loaders` entries.
pub const MAX_OWN_LOADERS: usize = 32;
/// Most `executable_roots` entries.
pub const MAX_EXECUTABLE_ROOTS: usize = 8;

/// Programs that map a program named in their arguments with a loader of their own, never
/// exec'ing it (so the kernel and the seal never see it): refused like the dynamic loader
/// when that program is a mutable ELF. Basenames, or absolute paths (a directory covers every
/// program beneath it). The policy's `own_loaders` replaces this list.
pub const DEFAULT_OWN_LOADERS: [&[u8]; 18] = [
    b"valgrind",
    b"valgrind.bin",
    b"/usr/libexec/valgrind",
    b"/usr/lib/valgrind",
    b"qemu-x86_64",
    b"qemu-x86_64-static",
    b"qemu-aarch64",
    b"qemu-aarch64-static",
    b"qemu-i386",
    b"qemu-i386-static",
    b"qemu-arm",
    b"qemu-arm-static",
    b"qemu-riscv64",
    b"qemu-riscv64-static",
    b"box64",
    b"box86",
    b"FEXInterpreter",
    b"FEXLoader",
];

/// Roots that are always mutable, whatever the policy says.
pub const BUILTIN_MUTABLE_ROOTS: [&[u8]; 5] =
    [b"/state", b"/tmp", b"/var/tmp", b"/dev/shm", b"/run/user"];

/// The workspace when the policy names none.
pub const DEFAULT_WORKSPACE: &[u8] = b"/workspace";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    start: u16,
    len: u16,
}

/// A protected runtime: the real binary `path` may only be started by `wrapper` (or by a
/// runtime of the same `name`, so that git can start git).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runtime<'a> {
    pub name: &'a [u8],
    pub path: &'a [u8],
    pub wrapper: &'a [u8],
    /// The identities the session learned at start, as the policy spells them (empty when
    /// not carried): parsed only by [`Self::path_id`] and [`Self::wrapper_id`], since the exec
    /// path lists the runtimes several times in every decision and needs them only once.
    path_id: &'a [u8],
    wrapper_id: &'a [u8],
}

impl Runtime<'_> {
    /// The identity of `path` the session learned at start (`path_id`), when carried.
    pub fn path_id(&self) -> Option<FileId> {
        FileId::parse(self.path_id)
    }

    /// The identity of `wrapper` the session learned at start (`wrapper_id`), when carried.
    pub fn wrapper_id(&self) -> Option<FileId> {
        FileId::parse(self.wrapper_id)
    }
}

/// A file's identity as a policy carries it: `"DEV:INO"`, or `"DEV:INO/"` for a directory.
/// Also what `RuntimeIds` keeps of each runtime and wrapper (its cache holds 64, so no more).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub dir: bool,
}

impl FileId {
    /// Parses `"DEV:INO"` or `"DEV:INO/"` (decimal, no leading zeros); `None` for anything else.
    pub fn parse(s: &[u8]) -> Option<FileId> {
        let (s, dir) = match s.strip_suffix(b"/") {
            Some(rest) => (rest, true),
            None => (s, false),
        };
        let colon = s.iter().position(|&c| c == b':')?;
        let number = |d: &[u8]| -> Option<u64> {
            if d.is_empty() || (d.len() > 1 && d[0] == b'0') {
                return None;
            }
            d.iter().try_fold(0u64, |v, &c| {
                c.is_ascii_digit().then_some(())?;
                v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
            })
        };
        Some(FileId {
            dev: number(&s[..colon])?,
            ino: number(&s[colon + 1..])?,
            dir,
        })
    }
}

/// Where each value sits in the policy text. Plain data, so a parsed policy can be cached.
#[derive(Clone, Debug)]
pub struct Index {
    profile: Profile,
    workspace: Option<Span>,
    runtime_profile: Option<Span>,
    audit_log: Option<Span>,
    audit_socket: Option<Span>,
    audit_allow: bool,
    seal: bool,
    roots: [Span; MAX_ROOTS],
    n_roots: usize,
    exec_dirs: [Span; MAX_ROOTS],
    n_exec_dirs: usize,
    allowed: [Span; MAX_ALLOWED],
    n_allowed: usize,
    runtimes: [[Span; 5]; MAX_RUNTIMES],
    n_runtimes: usize,
    /// `None`: the key is absent and [`DEFAULT_OWN_LOADERS`] applies.
    own_loaders: Option<([Span; MAX_OWN_LOADERS], usize)>,
    /// `None`: the key is absent and the guard does not know where the kernel runs written code.
    executable_roots: Option<([Span; MAX_EXECUTABLE_ROOTS], usize)>,
}

impl Index {
    const EMPTY: Index = Index {
        profile: Profile::Strict,
        workspace: None,
        runtime_profile: None,
        audit_log: None,
        audit_socket: None,
        audit_allow: false,
        seal: false,
        roots: [Span { start: 0, len: 0 }; MAX_ROOTS],
        n_roots: 0,
        exec_dirs: [Span { start: 0, len: 0 }; MAX_ROOTS],
        n_exec_dirs: 0,
        allowed: [Span { start: 0, len: 0 }; MAX_ALLOWED],
        n_allowed: 0,
        runtimes: [[Span { start: 0, len: 0 }; 5]; MAX_RUNTIMES],
        n_runtimes: 0,
        own_loaders: None,
        executable_roots: None,
    };
}

/// A parsed, validated policy borrowing its text (and, from a cache, its index).
#[derive(Clone, Debug)]
pub struct Policy<'a> {
    text: &'a [u8],
    index: IndexRef<'a>,
}

/// The index built by [`Policy::parse`], or one borrowed from a cache: the guard must not
/// copy its 1.4 KiB on every exec.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // boxing `Owned` needs an allocator; this crate has none
enum IndexRef<'a> {
    Owned(Index),
    Borrowed(&'a Index),
}

impl core::ops::Deref for IndexRef<'_> {
    type Target = Index;
    fn deref(&self) -> &Index {
        match self {
            IndexRef::Owned(index) => index,
            IndexRef::Borrowed(index) => index,
        }
    }
}

/// What is wrong with a policy, and on which line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyError {
    pub line: u32,
    pub kind: PolicyErrorKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyErrorKind {
    TooLarge,
    NotUtf8,
    Syntax(&'static str),
    UnknownKey,
    DuplicateKey,
    TooMany(&'static str),
    BadValue(&'static str),
    Missing(&'static str),
}

impl core::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "line {}: ", self.line)?;
        match self.kind {
            PolicyErrorKind::TooLarge => {
                write!(f, "policy is larger than {MAX_POLICY_BYTES} bytes")
            }
            PolicyErrorKind::NotUtf8 => write!(f, "policy is not UTF-8"),
            PolicyErrorKind::Syntax(what) => write!(f, "syntax: {what}"),
            PolicyErrorKind::UnknownKey => write!(f, "unknown key"),
            PolicyErrorKind::DuplicateKey => write!(f, "key given twice"),
            PolicyErrorKind::TooMany(what) => write!(f, "too many {what}"),
            PolicyErrorKind::BadValue(what) => write!(f, "bad value: {what}"),
            PolicyErrorKind::Missing(what) => write!(f, "missing {what}"),
        }
    }
}

impl core::error::Error for PolicyError {}

struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
    line: u32,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }
    fn err(&self, kind: PolicyErrorKind) -> PolicyError {
        PolicyError {
            line: self.line,
            kind,
        }
    }
    fn syntax(&self, what: &'static str) -> PolicyError {
        self.err(PolicyErrorKind::Syntax(what))
    }
    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }
    /// A comment runs to the line end; control characters in it are refused (TOML forbids
    /// them, and a bare `\r` could show a reader a line the parser never saw).
    fn skip_comment(&mut self) -> Result<(), PolicyError> {
        if self.peek() != Some(b'#') {
            return Ok(());
        }
        loop {
            match self.peek() {
                None | Some(b'\n') => return Ok(()),
                Some(b'\r') if self.text.get(self.pos + 1) == Some(&b'\n') => return Ok(()),
                Some(c) if (c < 0x20 && c != b'\t') || c == 0x7f => {
                    return Err(self.syntax("control character in comment"))
                }
                Some(_) => self.pos += 1,
            }
        }
    }
    /// Skips blanks, comments and line ends (between statements and inside arrays).
    fn skip_space(&mut self) -> Result<(), PolicyError> {
        loop {
            self.skip_blanks();
            self.skip_comment()?;
            match self.peek() {
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                }
                Some(b'\r') if self.text.get(self.pos + 1) == Some(&b'\n') => self.pos += 1,
                _ => return Ok(()),
            }
        }
    }
    /// After a value: blanks, an optional comment, then a line end or the end.
    fn end_of_statement(&mut self) -> Result<(), PolicyError> {
        self.skip_blanks();
        self.skip_comment()?;
        match self.peek() {
            None | Some(b'\n') => Ok(()),
            Some(b'\r') if self.text.get(self.pos + 1) == Some(&b'\n') => Ok(()),
            _ => Err(self.syntax("expected end of line")),
        }
    }
    fn bare_key(&mut self) -> Result<&'a [u8], PolicyError> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-')
        ) {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.syntax("expected a bare key"));
        }
        Ok(&self.text[start..self.pos])
    }
    fn expect(&mut self, c: u8, what: &'static str) -> Result<(), PolicyError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(what))
        }
    }
    fn string(&mut self) -> Result<Span, PolicyError> {
        let quote = match self.peek() {
            Some(q @ (b'"' | b'\'')) => q,
            _ => return Err(self.syntax("expected a string")),
        };
        // '''/""" would open a multi-line string: not part of the subset.
        if self.text.get(self.pos + 1) == Some(&quote)
            && self.text.get(self.pos + 2) == Some(&quote)
        {
            return Err(self.syntax("multi-line strings are not supported"));
        }
        self.pos += 1;
        let start = self.pos;
        // One pass to the first byte that is not plain string text (every process parses its
        // policy, a session's 1.6 KB, before its first exec).
        // A backslash escapes only in a basic ("...") string; in a literal one it is text.
        let escape = if quote == b'"' { b'\\' } else { quote };
        let special = |c: u8| c == quote || c == escape || (c < 0x20 && c != b'\t') || c == 0x7f;
        self.pos += self.text[start..]
            .iter()
            .position(|&c| special(c))
            .unwrap_or(self.text.len() - start);
        match self.peek() {
            Some(c) if c == quote => {}
            None | Some(b'\n') | Some(b'\r') => return Err(self.syntax("unterminated string")),
            Some(b'\\') => return Err(self.syntax("escapes are not supported")),
            Some(_) => return Err(self.syntax("control character in string")),
        }
        let span = Span {
            start: start as u16,
            len: (self.pos - start) as u16,
        };
        self.pos += 1;
        Ok(span)
    }
    fn boolean(&mut self) -> Result<bool, PolicyError> {
        let rest = &self.text[self.pos..];
        let (value, n) = if rest.starts_with(b"true") {
            (true, 4)
        } else if rest.starts_with(b"false") {
            (false, 5)
        } else {
            return Err(self.err(PolicyErrorKind::BadValue("expected true or false")));
        };
        self.pos += n;
        Ok(value)
    }
    fn integer(&mut self) -> Result<u32, PolicyError> {
        let start = self.pos;
        let mut value: u32 = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u32::from(c - b'0')))
                .ok_or(self.err(PolicyErrorKind::BadValue("integer too large")))?;
            self.pos += 1;
        }
        let digits = &self.text[start..self.pos];
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
            return Err(self.err(PolicyErrorKind::BadValue("expected a decimal integer")));
        }
        Ok(value)
    }
    /// `[ "a", 'b', ]`, possibly over several lines; calls `push` for each string.
    fn array(
        &mut self,
        mut push: impl FnMut(&Self, Span) -> Result<(), PolicyError>,
    ) -> Result<(), PolicyError> {
        self.expect(b'[', "expected an array")?;
        loop {
            self.skip_space()?;
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(());
            }
            let s = self.string()?;
            push(self, s)?;
            self.skip_space()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                _ => return Err(self.syntax("expected , or ]")),
            }
        }
    }

    /// An array of at most `list.len()` strings into `list` (`n` of them), each one `valid`
    /// (else `BadValue(what)`); more is `TooMany(key)`.
    fn bounded_array(
        &mut self,
        list: &mut [Span],
        n: &mut usize,
        key: &'static str,
        valid: impl Fn(&[u8]) -> bool,
        what: &'static str,
    ) -> Result<(), PolicyError> {
        let text = self.text;
        self.array(|c, v| {
            if !valid(&text[v.start as usize..(v.start + v.len) as usize]) {
                return Err(c.err(PolicyErrorKind::BadValue(what)));
            }
            if *n == list.len() {
                return Err(c.err(PolicyErrorKind::TooMany(key)));
            }
            list[*n] = v;
            *n += 1;
            Ok(())
        })
    }
}

/// A list key's fresh storage, for a key whose absence means something of its own.
fn fresh<const N: usize>(slot: &mut Option<([Span; N], usize)>) -> (&mut [Span], &mut usize) {
    let (list, n) = slot.insert(([Span::default(); N], 0));
    (list, n)
}

const KEY_VERSION: u32 = 1 << 0;
const KEY_PROFILE: u32 = 1 << 1;
const KEY_WORKSPACE: u32 = 1 << 2;
const KEY_ROOTS: u32 = 1 << 3;
const KEY_ALLOWED: u32 = 1 << 4;
const KEY_AUDIT_LOG: u32 = 1 << 5;
const KEY_AUDIT_ALLOW: u32 = 1 << 6;
const KEY_RUNTIME_PROFILE: u32 = 1 << 7;
const KEY_NAME: u32 = 1 << 8;
const KEY_PATH: u32 = 1 << 9;
const KEY_WRAPPER: u32 = 1 << 10;
const KEY_SEAL: u32 = 1 << 11;
const KEY_EXEC_DIRS: u32 = 1 << 12;
const KEY_OWN_LOADERS: u32 = 1 << 13;
const KEY_EXECUTABLE_ROOTS: u32 = 1 << 17;
const KEY_AUDIT_SOCKET: u32 = 1 << 14;
const KEY_PATH_ID: u32 = 1 << 15;
const KEY_WRAPPER_ID: u32 = 1 << 16;
const RUNTIME_KEYS: u32 = KEY_NAME | KEY_PATH | KEY_WRAPPER;

fn is_command_name(s: &[u8]) -> bool {
    !s.is_empty() && s != b"." && s != b".." && !s.contains(&b'/')
}

fn is_runtime_name(s: &[u8]) -> bool {
    !s.is_empty()
        && s.iter()
            .all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_'))
}

/// [`may_be_under`] for one path against each root in turn, with the path's spelling judged
/// once (the exec path asks this of every mutable root for every file it checks).
fn loose_match(path: &[u8]) -> impl Fn(&[u8]) -> bool + '_ {
    let strict = is_strict_spelling(path);
    move |root| {
        if strict {
            may_be_under_strict(path, root)
        } else {
            may_be_under(path, root)
        }
    }
}

impl<'a> Policy<'a> {
    /// Parses and validates a policy.
    pub fn parse(text: &'a [u8]) -> Result<Self, PolicyError> {
        let at0 = |kind| PolicyError { line: 0, kind };
        if text.len() > MAX_POLICY_BYTES {
            return Err(at0(PolicyErrorKind::TooLarge));
        }
        if core::str::from_utf8(text).is_err() {
            return Err(at0(PolicyErrorKind::NotUtf8));
        }
        let mut idx = Index::EMPTY;
        let mut seen: u32 = 0; // keys of the top level
        let mut runtime_seen: u32 = 0; // keys of the current [[runtime]]
        let mut in_runtime = false;
        let mut c = Cursor {
            text,
            pos: 0,
            line: 1,
        };
        let s = |span: Span| &text[span.start as usize..(span.start + span.len) as usize];

        loop {
            c.skip_space()?;
            let Some(first) = c.peek() else { break };
            if first == b'[' {
                if !text[c.pos..].starts_with(b"[[runtime]]") {
                    return Err(c.syntax("the only table is [[runtime]]"));
                }
                if in_runtime && runtime_seen & RUNTIME_KEYS != RUNTIME_KEYS {
                    return Err(c.err(PolicyErrorKind::Missing("runtime name, path or wrapper")));
                }
                if idx.n_runtimes == MAX_RUNTIMES {
                    return Err(c.err(PolicyErrorKind::TooMany("runtimes")));
                }
                c.pos += b"[[runtime]]".len();
                c.end_of_statement()?;
                idx.n_runtimes += 1;
                in_runtime = true;
                runtime_seen = 0;
                continue;
            }
            let key = c.bare_key()?;
            c.skip_blanks();
            c.expect(b'=', "expected =")?;
            c.skip_blanks();
            let bit = match (in_runtime, key) {
                (false, b"version") => KEY_VERSION,
                (false, b"profile") => KEY_PROFILE,
                (false, b"workspace") => KEY_WORKSPACE,
                (false, b"mutable_roots") => KEY_ROOTS,
                (false, b"allow_commands") => KEY_ALLOWED,
                (false, b"audit_log") => KEY_AUDIT_LOG,
                (false, b"audit_allow") => KEY_AUDIT_ALLOW,
                (false, b"audit_socket") => KEY_AUDIT_SOCKET,
                (false, b"runtime_profile") => KEY_RUNTIME_PROFILE,
                (false, b"seal") => KEY_SEAL,
                (false, b"exec_dirs") => KEY_EXEC_DIRS,
                (false, b"own_loaders") => KEY_OWN_LOADERS,
                (false, b"executable_roots") => KEY_EXECUTABLE_ROOTS,
                (true, b"name") => KEY_NAME,
                (true, b"path") => KEY_PATH,
                (true, b"wrapper") => KEY_WRAPPER,
                (true, b"path_id") => KEY_PATH_ID,
                (true, b"wrapper_id") => KEY_WRAPPER_ID,
                _ => return Err(c.err(PolicyErrorKind::UnknownKey)),
            };
            let seen_set = if in_runtime {
                &mut runtime_seen
            } else {
                &mut seen
            };
            if *seen_set & bit != 0 {
                return Err(c.err(PolicyErrorKind::DuplicateKey));
            }
            *seen_set |= bit;
            let bad = |c: &Cursor, what| Err(c.err(PolicyErrorKind::BadValue(what)));
            if in_runtime && (bit == KEY_PATH_ID || bit == KEY_WRAPPER_ID) {
                let v = c.string()?;
                if FileId::parse(s(v)).is_none() {
                    return bad(
                        &c,
                        "runtime path_id and wrapper_id must be \"DEV:INO\" or \"DEV:INO/\"",
                    );
                }
                let field = if bit == KEY_PATH_ID { 3 } else { 4 };
                idx.runtimes[idx.n_runtimes - 1][field] = v;
                c.end_of_statement()?;
                continue;
            }
            match bit {
                KEY_VERSION => {
                    if c.integer()? != 1 {
                        return bad(&c, "version must be 1");
                    }
                }
                KEY_PROFILE => {
                    let v = c.string()?;
                    match Profile::from_name(s(v)) {
                        Some(p) => idx.profile = p,
                        None => {
                            return bad(
                                &c,
                                "profile must be strict, development, build or breakglass",
                            )
                        }
                    }
                }
                KEY_WORKSPACE | KEY_AUDIT_LOG | KEY_AUDIT_SOCKET | KEY_RUNTIME_PROFILE => {
                    let v = c.string()?;
                    if !is_canonical_root(s(v)) {
                        return bad(&c, "expected an absolute canonical path other than /");
                    }
                    let slot = match bit {
                        KEY_WORKSPACE => &mut idx.workspace,
                        KEY_AUDIT_LOG => &mut idx.audit_log,
                        KEY_AUDIT_SOCKET => &mut idx.audit_socket,
                        _ => &mut idx.runtime_profile,
                    };
                    *slot = Some(v);
                }
                KEY_AUDIT_ALLOW => idx.audit_allow = c.boolean()?,
                KEY_SEAL => idx.seal = c.boolean()?,
                KEY_ROOTS | KEY_EXEC_DIRS | KEY_EXECUTABLE_ROOTS | KEY_OWN_LOADERS
                | KEY_ALLOWED => {
                    let (list, n): (&mut [Span], &mut usize) = match bit {
                        KEY_ROOTS => (&mut idx.roots, &mut idx.n_roots),
                        KEY_EXEC_DIRS => (&mut idx.exec_dirs, &mut idx.n_exec_dirs),
                        KEY_EXECUTABLE_ROOTS => fresh(&mut idx.executable_roots),
                        KEY_OWN_LOADERS => fresh(&mut idx.own_loaders),
                        _ => (&mut idx.allowed, &mut idx.n_allowed),
                    };
                    let path_or_name: fn(&[u8]) -> bool =
                        |e| is_command_name(e) || is_canonical_root(e);
                    let (key, valid, what): (_, fn(&[u8]) -> bool, _) = match bit {
                        KEY_ROOTS => (
                            "mutable_roots",
                            is_canonical_root,
                            "mutable root must be an absolute canonical path other than /",
                        ),
                        KEY_EXEC_DIRS => (
                            "exec_dirs",
                            is_canonical_root,
                            "exec dir must be an absolute canonical path other than /",
                        ),
                        KEY_EXECUTABLE_ROOTS => (
                            "executable_roots",
                            is_canonical_root,
                            "executable root must be an absolute canonical path other than /",
                        ),
                        KEY_OWN_LOADERS => (
                            "own_loaders",
                            path_or_name,
                            "own loader must be a basename or an absolute canonical path",
                        ),
                        _ => (
                            "allow_commands",
                            path_or_name,
                            "allowed command must be a basename or an absolute canonical path",
                        ),
                    };
                    c.bounded_array(list, n, key, valid, what)?;
                }
                _ => {
                    let v = c.string()?;
                    let ok = if bit == KEY_NAME {
                        is_runtime_name(s(v))
                    } else {
                        is_canonical_root(s(v))
                    };
                    if !ok {
                        return bad(&c, "runtime name must be [a-z0-9_-]+, path and wrapper absolute canonical paths");
                    }
                    let field = match bit {
                        KEY_NAME => 0,
                        KEY_PATH => 1,
                        _ => 2,
                    };
                    idx.runtimes[idx.n_runtimes - 1][field] = v;
                }
            }
            c.end_of_statement()?;
        }
        if in_runtime && runtime_seen & RUNTIME_KEYS != RUNTIME_KEYS {
            return Err(c.err(PolicyErrorKind::Missing("runtime name, path or wrapper")));
        }
        if seen & KEY_VERSION == 0 {
            return Err(at0(PolicyErrorKind::Missing("version")));
        }
        Ok(Policy {
            text,
            index: IndexRef::Owned(idx),
        })
    }

    /// Rebuilds a policy from a cached [`Index`] of the same text (no re-parse).
    /// An index from other text yields wrong values but never reads out of bounds.
    /// A policy from the text and index of one parsed earlier (e.g. cached).
    pub fn from_parts(text: &'a [u8], index: &'a Index) -> Self {
        Policy {
            text,
            index: IndexRef::Borrowed(index),
        }
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    pub fn text(&self) -> &'a [u8] {
        self.text
    }

    fn get(&self, span: Span) -> &'a [u8] {
        self.text
            .get(span.start as usize..(span.start as usize + span.len as usize))
            .unwrap_or(b"")
    }

    pub fn profile(&self) -> Profile {
        self.index.profile
    }

    pub fn workspace(&self) -> &'a [u8] {
        self.index
            .workspace
            .map_or(DEFAULT_WORKSPACE, |s| self.get(s))
    }

    /// Every mutable root: the built-in ones, the workspace, then the policy's own.
    pub fn mutable_roots(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        BUILTIN_MUTABLE_ROOTS
            .into_iter()
            .chain(core::iter::once(self.workspace()))
            .chain(
                self.index.roots[..self.index.n_roots]
                    .iter()
                    .map(|&s| self.get(s)),
            )
    }

    /// Directories inside the write set that stay on the execute side: the session runs
    /// programs from them and the seal makes them read-only (docs/write-set.md).
    pub fn exec_dirs(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.index.exec_dirs[..self.index.n_exec_dirs]
            .iter()
            .map(|&s| self.get(s))
    }

    /// The mutable root that contains `canonical_path`, if any, unless an exec dir (the
    /// execute side inside the write set) contains it; on a filesystem that folds names, a
    /// path that may be a loose spelling of a root counts too ([`may_be_under`]), and only an
    /// exact exec-dir match takes it out.
    pub fn mutable_root_of(&self, canonical_path: &[u8]) -> Option<&'a [u8]> {
        if self.exec_dirs().any(|dir| is_under(canonical_path, dir)) {
            return None;
        }
        self.mutable_roots()
            .find(|root| is_under(canonical_path, root))
            .or_else(|| {
                let loose = loose_match(canonical_path);
                self.mutable_roots().find(|root| loose(root))
            })
    }

    /// Would the kernel run native code the session wrote at `canonical_path` (a mutable
    /// file)? Under the seal of `development` and `build` it runs only beneath the workspace
    /// and the policy's `executable_roots` (the seal's both rights: the session's temp dirs
    /// and home layer); `/dev/shm`, the runtime directory and a shared `/tmp` stay write-only.
    /// Without the key the guard does not know, and leaves it to the kernel (`true`).
    pub fn runs_written(&self, canonical_path: &[u8]) -> bool {
        self.index.executable_roots.is_none()
            || is_under(canonical_path, self.workspace())
            || self
                .executable_roots()
                .any(|root| is_under(canonical_path, root))
    }

    /// The `executable_roots` (none when the key is absent).
    pub fn executable_roots(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let spans = match &self.index.executable_roots {
            Some((spans, n)) => &spans[..*n],
            None => &[][..],
        };
        spans.iter().map(|&s| self.get(s))
    }

    /// Does `canonical_path` lie in the write set, exec dirs included (the session may rename or
    /// replace what is there, even where it may not write into an exec dir itself)?
    pub fn in_write_set(&self, canonical_path: &[u8]) -> bool {
        let loose = loose_match(canonical_path);
        self.mutable_roots()
            .any(|root| is_under(canonical_path, root) || loose(root))
    }

    pub fn has_allow_list(&self) -> bool {
        self.index.n_allowed > 0
    }

    pub fn allow_commands(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.index.allowed[..self.index.n_allowed]
            .iter()
            .map(|&s| self.get(s))
    }

    /// The programs that load a program of their own (`own_loaders`, else
    /// [`DEFAULT_OWN_LOADERS`]).
    pub fn own_loaders(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let (listed, defaults) = match &self.index.own_loaders {
            Some((spans, n)) => (&spans[..*n], &[][..]),
            None => (&[][..], &DEFAULT_OWN_LOADERS[..]),
        };
        listed
            .iter()
            .map(|&s| self.get(s))
            .chain(defaults.iter().copied())
    }

    /// Is the program started as `requested`, whose kernel name is `kpath`, one that loads a
    /// program of its own?
    pub fn is_own_loader(&self, requested: &[u8], kpath: &[u8]) -> bool {
        let (a, b) = (basename(requested), basename(kpath));
        self.own_loaders().any(|entry| {
            if entry.starts_with(b"/") {
                is_under(kpath, entry)
            } else {
                entry == a || entry == b
            }
        })
    }

    pub fn runtimes(&self) -> impl Iterator<Item = Runtime<'a>> + '_ {
        self.index.runtimes[..self.index.n_runtimes]
            .iter()
            .map(|r| Runtime {
                name: self.get(r[0]),
                path: self.get(r[1]),
                wrapper: self.get(r[2]),
                path_id: self.get(r[3]),
                wrapper_id: self.get(r[4]),
            })
    }

    pub fn audit_log(&self) -> Option<&'a [u8]> {
        self.index.audit_log.map(|s| self.get(s))
    }

    /// The socket of the writer that keeps this session's records outside it (the supervisor
    /// of `execguard run`, PID 1 of the image): when set, records go there, one connection
    /// each, and `audit_log` names the log that writer keeps (which no process of the session
    /// writes).
    pub fn audit_socket(&self) -> Option<&'a [u8]> {
        self.index.audit_socket.map(|s| self.get(s))
    }

    pub fn audit_allow(&self) -> bool {
        self.index.audit_allow
    }

    /// Does the session run under the Landlock exec seal? Then the guard starts mutable
    /// scripts through their interpreter, since the kernel refuses to execute them.
    pub fn seal(&self) -> bool {
        self.index.seal
    }

    pub fn runtime_profile(&self) -> Option<&'a [u8]> {
        self.index.runtime_profile.map(|s| self.get(s))
    }

    /// The same policy with another profile (from trusted runtime state).
    pub fn with_profile(mut self, profile: Profile) -> Self {
        if self.index.profile != profile {
            let mut index = Index::clone(&self.index);
            index.profile = profile;
            self.index = IndexRef::Owned(index);
        }
        self
    }
}

impl core::fmt::Display for Runtime<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} {} (wrapper {})",
            Lossy(self.name),
            Lossy(self.path),
            Lossy(self.wrapper)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
# a full policy
version = 1
profile = "development"   # comment
workspace = "/home/u/proj"
mutable_roots = [
  "/cache",  # trailing comments in arrays
  '/opt/build',
]
allow_commands = ["git", "/usr/bin/make"]
audit_log = "/state/audit.jsonl"
audit_allow = true
audit_socket = "/state/run/s.sock"
runtime_profile = "/run/execguard/state/profile"
seal = true

[[runtime]]
name = "git"
path = "/usr/libexec/execguard/real/git"
wrapper = "/usr/libexec/execguard/bin/execguard-git"

[[runtime]]
name = "node"
path = "/usr/libexec/execguard/real/node"
wrapper = "/usr/libexec/execguard/bin/execguard-node"
"#;

    #[test]
    fn runtime_identities_are_carried_or_refused() {
        let head = "version = 1\n\n[[runtime]]\nname = \"git\"\npath = \"/usr/bin/git\"\nwrapper = \"/w\"\n";
        let ok = format!("{head}path_id = \"2049:18446744073709551615\"\nwrapper_id = \"7:1/\"\n");
        let policy = Policy::parse(ok.as_bytes()).unwrap();
        let rt = policy.runtimes().next().unwrap();
        assert_eq!(
            rt.path_id(),
            Some(FileId {
                dev: 2049,
                ino: u64::MAX,
                dir: false
            })
        );
        assert_eq!(
            rt.wrapper_id(),
            Some(FileId {
                dev: 7,
                ino: 1,
                dir: true
            })
        );
        assert_eq!(
            Policy::parse(head.as_bytes())
                .unwrap()
                .runtimes()
                .next()
                .unwrap()
                .path_id(),
            None
        );
        for bad in [
            "1",
            "1:",
            ":1",
            "01:2",
            "1:2:3",
            "1:18446744073709551616",
            "a:b",
            "1:2//",
            "",
        ] {
            let text = format!("{head}path_id = \"{bad}\"\n");
            assert!(Policy::parse(text.as_bytes()).is_err(), "{bad:?} accepted");
        }
        let twice = format!("{head}path_id = \"1:2\"\npath_id = \"1:2\"\n");
        assert!(Policy::parse(twice.as_bytes()).is_err());
        assert!(
            Policy::parse(b"version = 1\npath_id = \"1:2\"\n").is_err(),
            "top level"
        );
    }

    #[test]
    fn own_loaders_default_and_replace() {
        let default = Policy::parse(b"version = 1\n").unwrap();
        let set = Policy::parse(b"version = 1\nown_loaders = [\"emu\", \"/opt/emu\"]\n").unwrap();
        let none = Policy::parse(b"version = 1\nown_loaders = []\n").unwrap();
        let cases: &[(&Policy<'_>, &[u8], &[u8], bool)] = &[
            (&default, b"valgrind", b"/usr/bin/valgrind", true),
            (
                &default,
                b"/usr/bin/valgrind.bin",
                b"/usr/bin/valgrind.bin",
                true,
            ),
            (
                &default,
                b"x",
                b"/usr/libexec/valgrind/memcheck-amd64-linux",
                true,
            ),
            (&default, b"qemu-aarch64", b"/usr/bin/qemu-aarch64", true),
            (&default, b"ls", b"/usr/bin/ls", false),
            (&default, b"valgrindx", b"/usr/bin/valgrindx", false),
            (&set, b"emu", b"/usr/bin/emu", true),
            (&set, b"x", b"/opt/emu/bin/x", true),
            (&set, b"valgrind", b"/usr/bin/valgrind", false),
            (&none, b"valgrind", b"/usr/bin/valgrind", false),
        ];
        for &(p, requested, kpath, want) in cases {
            assert_eq!(
                p.is_own_loader(requested, kpath),
                want,
                "{:?} {:?}",
                Lossy(requested),
                Lossy(kpath)
            );
        }
        assert!(Policy::parse(b"version = 1\nown_loaders = [\"a/b\"]\n").is_err());
        assert!(Policy::parse(b"version = 1\nown_loaders = []\nown_loaders = []\n").is_err());
    }

    #[test]
    fn exec_dirs_are_the_execute_side_inside_the_write_set() {
        let p = Policy::parse(
            b"version = 1\nworkspace = \"/w\"\nmutable_roots = [\"/home/u\"]\nexec_dirs = [\"/home/u/.cargo/bin\"]\n",
        )
        .unwrap();
        assert_eq!(
            p.exec_dirs().collect::<Vec<_>>(),
            [&b"/home/u/.cargo/bin"[..]]
        );
        assert_eq!(p.mutable_root_of(b"/home/u/x"), Some(&b"/home/u"[..]));
        assert_eq!(p.mutable_root_of(b"/home/u/.cargo/bin/cargo"), None);
        assert_eq!(p.mutable_root_of(b"/home/u/.cargo/bin"), None);
        assert_eq!(
            p.mutable_root_of(b"/home/u/.cargo/binx"),
            Some(&b"/home/u"[..])
        );
        assert_eq!(p.mutable_root_of(b"/w/.cargo/bin/x"), Some(&b"/w"[..]));
        assert!(Policy::parse(b"version = 1\nexec_dirs = [\"rel\"]\n").is_err());
        assert!(Policy::parse(b"version = 1\nexec_dirs = []\nexec_dirs = []\n").is_err());
    }

    #[test]
    fn executable_roots_say_where_written_code_runs() {
        let p = Policy::parse(
            b"version = 1\nworkspace = \"/w\"\nprofile = \"development\"\nexecutable_roots = [\"/tmp/s\"]\n",
        )
        .unwrap();
        assert!(p.runs_written(b"/w/target/debug/app"));
        assert!(p.runs_written(b"/tmp/s/go-build1/exe/t"));
        assert!(!p.runs_written(b"/dev/shm/app"));
        assert!(!p.runs_written(b"/tmp/sx/app"));
        let without = Policy::parse(b"version = 1\n").unwrap();
        assert!(
            without.runs_written(b"/dev/shm/app"),
            "absent: the kernel decides"
        );
        assert!(Policy::parse(b"version = 1\nexecutable_roots = [\"rel\"]\n").is_err());
        let nine = (0..9)
            .map(|i| format!("\"/r{i}\""))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(
            Policy::parse(format!("version = 1\nexecutable_roots = [{nine}]\n").as_bytes())
                .is_err()
        );
    }

    #[test]
    fn full_policy() {
        let p = Policy::parse(FULL.as_bytes()).unwrap();
        assert_eq!(p.profile(), Profile::Development);
        assert_eq!(p.workspace(), b"/home/u/proj");
        let roots: Vec<&[u8]> = p.mutable_roots().collect();
        assert_eq!(roots.len(), BUILTIN_MUTABLE_ROOTS.len() + 3);
        assert!(roots.contains(&&b"/opt/build"[..]));
        assert_eq!(
            p.mutable_root_of(b"/home/u/proj/a.out"),
            Some(&b"/home/u/proj"[..])
        );
        assert_eq!(p.mutable_root_of(b"/tmp/x"), Some(&b"/tmp"[..]));
        assert_eq!(p.mutable_root_of(b"/usr/bin/true"), None);
        assert_eq!(p.allow_commands().count(), 2);
        assert_eq!(p.runtimes().count(), 2);
        assert_eq!(p.runtimes().nth(1).unwrap().name, b"node");
        assert!(p.audit_allow());
        assert_eq!(p.audit_socket(), Some(&b"/state/run/s.sock"[..]));
        assert_eq!(
            p.runtime_profile(),
            Some(&b"/run/execguard/state/profile"[..])
        );
    }

    #[test]
    fn minimal_policy_defaults() {
        let p = Policy::parse(b"version = 1\n").unwrap();
        assert_eq!(p.profile(), Profile::Strict);
        assert_eq!(p.workspace(), DEFAULT_WORKSPACE);
        assert!(!p.has_allow_list());
        assert_eq!(p.audit_log(), None);
        assert_eq!(p.audit_socket(), None);
    }

    #[test]
    fn refusals() {
        let cases: &[(&str, PolicyErrorKind)] = &[
            ("", PolicyErrorKind::Missing("version")),
            (
                "version = 2",
                PolicyErrorKind::BadValue("version must be 1"),
            ),
            ("version = 1\nversion = 1", PolicyErrorKind::DuplicateKey),
            ("version = 1\nfoo = 1", PolicyErrorKind::UnknownKey),
            (
                "version = 1\nprofile = \"lax\"",
                PolicyErrorKind::BadValue(
                    "profile must be strict, development, build or breakglass",
                ),
            ),
            (
                "version = 1\nworkspace = \"/\"",
                PolicyErrorKind::BadValue("expected an absolute canonical path other than /"),
            ),
            (
                "version = 1\nworkspace = \"rel\"",
                PolicyErrorKind::BadValue("expected an absolute canonical path other than /"),
            ),
            (
                "version = 1\nworkspace = \"/a\\tb\"",
                PolicyErrorKind::Syntax("escapes are not supported"),
            ),
            (
                "version = 1\n[tool]",
                PolicyErrorKind::Syntax("the only table is [[runtime]]"),
            ),
            (
                "version = 1\n[[runtime]]\nname = \"git\"",
                PolicyErrorKind::Missing("runtime name, path or wrapper"),
            ),
            (
                "version = 1 x",
                PolicyErrorKind::Syntax("expected end of line"),
            ),
            (
                "version = 01",
                PolicyErrorKind::BadValue("expected a decimal integer"),
            ),
            (
                "version = 1\naudit_allow = yes",
                PolicyErrorKind::BadValue("expected true or false"),
            ),
            (
                "version = 1\nmutable_roots = [\"/a\" \"/b\"]",
                PolicyErrorKind::Syntax("expected , or ]"),
            ),
            (
                "version = 1\nworkspace = \"\"\"/a\"\"\"",
                PolicyErrorKind::Syntax("multi-line strings are not supported"),
            ),
            (
                "version = 1\n# note\rmutable_roots = [\"/x\"]",
                PolicyErrorKind::Syntax("control character in comment"),
            ),
        ];
        for (text, kind) in cases {
            let err = Policy::parse(text.as_bytes()).unwrap_err();
            assert_eq!(err.kind, *kind, "{text:?}");
        }
    }

    #[test]
    fn limits() {
        let mut many = String::from("version = 1\nallow_commands = [");
        for i in 0..=MAX_ALLOWED {
            many.push_str(&format!("\"c{i}\","));
        }
        many.push(']');
        assert_eq!(
            Policy::parse(many.as_bytes()).unwrap_err().kind,
            PolicyErrorKind::TooMany("allow_commands")
        );
        let huge = "#".repeat(MAX_POLICY_BYTES + 1);
        assert_eq!(
            Policy::parse(huge.as_bytes()).unwrap_err().kind,
            PolicyErrorKind::TooLarge
        );
        assert_eq!(
            Policy::parse(b"version = 1\n#\xff").unwrap_err().kind,
            PolicyErrorKind::NotUtf8
        );
    }

    #[test]
    fn cached_index_round_trips() {
        let p = Policy::parse(FULL.as_bytes()).unwrap();
        let q = Policy::from_parts(FULL.as_bytes(), p.index());
        assert_eq!(
            q.runtimes().collect::<Vec<_>>(),
            p.runtimes().collect::<Vec<_>>()
        );
    }
}
