//! Byte-path helpers: fixed-size buffers (no allocation) and root matching.

use core::mem::MaybeUninit;

/// Linux `PATH_MAX`, the longest path the kernel accepts, NUL included.
pub const PATH_MAX: usize = 4096;

/// A path in a fixed inline buffer. Never allocates; overlong input is an error, not a truncation.
/// The buffer is left uninitialised beyond the path: the exec path creates several of these per
/// call, and zeroing 4 KiB each time was most of the guard's cost.
#[derive(Clone)]
pub struct PathBuf {
    buf: [MaybeUninit<u8>; PATH_MAX],
    /// Invariant: `buf[..len]` is initialised and `len < PATH_MAX`.
    len: usize,
}

/// A path would not fit in [`PATH_MAX`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLong;

impl PathBuf {
    #[inline(always)]
    pub fn new() -> Self {
        // Not `[MaybeUninit::uninit(); PATH_MAX]`: as a promoted constant that compiles to a
        // 4 KiB memset.
        // SAFETY: an array of MaybeUninit is valid uninitialised.
        let buf = unsafe { MaybeUninit::<[MaybeUninit<u8>; PATH_MAX]>::uninit().assume_init() };
        Self { buf, len: 0 }
    }

    #[inline(always)]
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, TooLong> {
        let mut p = Self::new();
        p.push_bytes(bytes)?;
        Ok(p)
    }

    /// `dir` + `/` + `name`, as glibc's PATH search builds candidates (an empty `dir` is the cwd).
    pub fn join(dir: &[u8], name: &[u8]) -> Result<Self, TooLong> {
        let mut p = Self::new();
        if !dir.is_empty() {
            p.push_bytes(dir)?;
            p.push_bytes(b"/")?;
        }
        p.push_bytes(name)?;
        Ok(p)
    }

    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), TooLong> {
        // Keep one byte for the NUL that C callers need.
        if self.len + bytes.len() >= PATH_MAX {
            return Err(TooLong);
        }
        for (slot, &b) in self.buf[self.len..self.len + bytes.len()]
            .iter_mut()
            .zip(bytes)
        {
            slot.write(b);
        }
        self.len += bytes.len();
        Ok(())
    }

    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `buf[..len]` is initialised (type invariant); MaybeUninit<u8> has u8's layout.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) }
    }

    /// The path followed by a NUL, for C calls.
    pub fn as_c_bytes(&mut self) -> &[u8] {
        self.buf[self.len].write(0);
        // SAFETY: `buf[..=len]` is initialised: the path, then the NUL just written.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len + 1) }
    }

    /// Space to read into (e.g. with `readlink`), then [`PathBuf::set_len`]: a pointer and the
    /// number of bytes that may be written there (one is kept for a NUL).
    pub fn spare(&mut self) -> (*mut u8, usize) {
        (self.buf.as_mut_ptr().cast::<u8>(), PATH_MAX - 1)
    }

    /// Declares the first `len` bytes written through [`PathBuf::spare`] to be the path.
    ///
    /// # Safety
    /// The first `len` bytes of the buffer must have been written, and `len < PATH_MAX`.
    pub unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len < PATH_MAX);
        self.len = len;
    }

    /// Shortens the path to `len` bytes (no effect when it is shorter).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

impl Default for PathBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for PathBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PathBuf({:?})", crate::text::Lossy(self.as_bytes()))
    }
}

/// Is `path` the root itself or below it? Both must be canonical (no `//`, `.`, `..`, no
/// trailing `/`), which is what the kernel reports for an open file and what the policy
/// validator enforces for roots.
pub fn is_under(path: &[u8], root: &[u8]) -> bool {
    path.starts_with(root) && (path.len() == root.len() || path[root.len()] == b'/')
}

/// Could `path` still lie in `root` on a filesystem that folds names? Byte comparison is not
/// enough where a directory above the root matches names loosely (casefolded ext4, f2fs or
/// tmpfs directories, vfat, exfat, NTFS, SMB, 9p from Windows): `/mnt/c/PROJ` may open
/// `/mnt/c/Proj`. This says yes when each of the path's components, over the root's length,
/// equals the root's or is a spelling such a filesystem might match to it: the same letters in
/// another case, anything not ASCII (case folding and normalisation), a DOS short name (`~`),
/// or a trailing dot or space (dropped by Windows). Without a way to ask the filesystem, such
/// names count as inside the root: a refusal, never a bypass.
pub fn may_be_under(path: &[u8], root: &[u8]) -> bool {
    let mut parts = path.split(|&c| c == b'/');
    root.split(|&c| c == b'/').all(|want| {
        parts.next().is_some_and(|part| {
            // Equal lengths first: the common mismatch ends here, before any scan.
            (part.len() == want.len() && part.eq_ignore_ascii_case(want))
                || matches!(part.last(), Some(b'.' | b' '))
                || part.iter().any(|&c| c == b'~' || !c.is_ascii())
                || !want.is_ascii()
        })
    })
}

/// Is `path` spelled so that only case could make a folding filesystem match it to another
/// name: ASCII, no `~`, no component ending in `.` or ` `? Then [`may_be_under`] is one
/// case-insensitive comparison ([`may_be_under_strict`]). Asked once per path, not per root.
pub fn is_strict_spelling(path: &[u8]) -> bool {
    path.is_ascii()
        && !path.contains(&b'~')
        && !path.windows(2).any(|w| matches!(w, [b'.' | b' ', b'/']))
        && !matches!(path.last(), Some(b'.' | b' '))
}

/// [`may_be_under`] for a path that [`is_strict_spelling`]: the same answer, by comparing the
/// root with the path's first bytes regardless of ASCII case, up to a component boundary.
pub fn may_be_under_strict(path: &[u8], root: &[u8]) -> bool {
    if !root.is_ascii() {
        return may_be_under(path, root);
    }
    path.len() >= root.len()
        && path[..root.len()].eq_ignore_ascii_case(root)
        && (path.len() == root.len() || path[root.len()] == b'/')
}

/// Does the kernel's name for an open file say it has no name on disk? memfds read
/// `/memfd:NAME (deleted)`, unlinked and `O_TMPFILE` files end in ` (deleted)`, and anonymous
/// inodes do not start with `/`.
pub fn is_anonymous(kernel_path: &[u8]) -> bool {
    !kernel_path.starts_with(b"/")
        || kernel_path.starts_with(b"/memfd:")
        || kernel_path.ends_with(b" (deleted)")
}

/// The last component of a path (the whole input when it has no `/`).
pub fn basename(path: &[u8]) -> &[u8] {
    match memchr_rev(b'/', path) {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

fn memchr_rev(c: u8, s: &[u8]) -> Option<usize> {
    s.iter().rposition(|&b| b == c)
}

/// Is `root` an absolute canonical path other than `/` (what the policy accepts)?
pub fn is_canonical_root(root: &[u8]) -> bool {
    root.len() > 1
        && root[0] == b'/'
        && !root.ends_with(b"/")
        && root[1..]
            .split(|&c| c == b'/')
            .all(|part| !part.is_empty() && part != b"." && part != b"..")
}

/// Is this the name of a dynamic loader (`ld-linux-x86-64.so.2`, `ld-linux.so.2`, `ld.so`,
/// `ld64.so.1`, `ld-musl-x86_64.so.1`)? Matched by basename so every copy and link counts.
pub fn is_loader_name(path: &[u8]) -> bool {
    let base = basename(path);
    base == b"ld.so"
        || (base.starts_with(b"ld")
            && contains(base, b".so")
            && (base.starts_with(b"ld-") || base.starts_with(b"ld64")))
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loosely_spelled_roots() {
        let root = b"/mnt/c/Users/me/proj";
        for path in [
            &b"/mnt/c/Users/me/proj/evil"[..],
            b"/mnt/c/users/ME/PROJ/evil",
            b"/mnt/c/USERS~1/me/proj",
            b"/mnt/c/Users/me/proj./evil",
            b"/mnt/c/Users/me/proj /evil",
            b"/mnt/c/Users/m\xc3\xa9/proj/evil",
        ] {
            assert!(may_be_under(path, root), "{:?}", crate::text::Lossy(path));
        }
        for path in [
            &b"/mnt/c/Users/me/prod/x"[..],
            b"/mnt/c/Users/me",
            b"/usr/bin/true",
            b"/mnt/d/Users/me/proj/x",
        ] {
            assert!(!may_be_under(path, root), "{:?}", crate::text::Lossy(path));
        }
        // A root spelled with non-ASCII letters may be matched by plain ones (Kelvin sign).
        assert!(may_be_under(b"/data/kit/x", "/data/\u{212a}it".as_bytes()));
    }

    /// The shortcut answers as [`may_be_under`] does, for every path of up to six bytes
    /// over an alphabet of every kind of byte that matters (separator, letters in both
    /// cases, dot, space, tilde, a non-ASCII byte) against roots of each kind.
    #[test]
    fn the_strict_spelling_shortcut_answers_as_the_full_comparison() {
        const ALPHABET: &[u8] = b"/aA. ~\xc3";
        let roots: [&[u8]; 7] = [b"/", b"/a", b"/A", b"/a/a", b"/aa", b"/a.", b"/\xc3a"];
        let mut path = [0u8; 6];
        let mut checked = 0;
        for len in 0..=path.len() {
            let mut digits = vec![0usize; len];
            loop {
                for (slot, &d) in path.iter_mut().zip(&digits) {
                    *slot = ALPHABET[d];
                }
                let p = &path[..len];
                if is_strict_spelling(p) {
                    for root in roots {
                        assert_eq!(
                            may_be_under_strict(p, root),
                            may_be_under(p, root),
                            "{:?} in {:?}",
                            crate::text::Lossy(p),
                            crate::text::Lossy(root)
                        );
                        checked += 1;
                    }
                }
                // The next path of this length, as a counter in base ALPHABET.len().
                let Some(i) = digits.iter().rposition(|&d| d + 1 < ALPHABET.len()) else {
                    break;
                };
                digits[i] += 1;
                digits[i + 1..].iter_mut().for_each(|d| *d = 0);
            }
        }
        assert!(checked > 10_000, "{checked}");
        assert!(!is_strict_spelling(b"/a/b."));
        assert!(!is_strict_spelling(b"/a /b"));
        assert!(!is_strict_spelling(b"/A~1/b"));
        assert!(!is_strict_spelling("/caf\u{e9}".as_bytes()));
        assert!(is_strict_spelling(b"/usr/lib/x86_64-linux-gnu/libm.so.6"));
    }

    #[test]
    fn under() {
        assert!(is_under(b"/workspace", b"/workspace"));
        assert!(is_under(b"/workspace/a", b"/workspace"));
        assert!(!is_under(b"/workspace2/a", b"/workspace"));
        assert!(!is_under(b"/work", b"/workspace"));
    }

    #[test]
    fn anonymous() {
        assert!(is_anonymous(b"/memfd:x (deleted)"));
        assert!(is_anonymous(b"/tmp/#123 (deleted)"));
        assert!(is_anonymous(b"anon_inode:[x]"));
        assert!(!is_anonymous(b"/usr/bin/true"));
    }

    #[test]
    fn roots() {
        for ok in [&b"/tmp"[..], b"/run/user", b"/a.b/c"] {
            assert!(is_canonical_root(ok), "{ok:?}");
        }
        for bad in [
            &b"/"[..],
            b"tmp",
            b"/tmp/",
            b"/a//b",
            b"/a/./b",
            b"/a/../b",
            b"",
        ] {
            assert!(!is_canonical_root(bad), "{bad:?}");
        }
    }

    #[test]
    fn loaders() {
        for l in [
            &b"/lib64/ld-linux-x86-64.so.2"[..],
            b"ld-linux.so.2",
            b"/usr/lib/ld.so",
            b"ld64.so.1",
            b"/lib/ld-musl-x86_64.so.1",
        ] {
            assert!(is_loader_name(l), "{l:?}");
        }
        for n in [
            &b"/usr/bin/ld"[..],
            b"ldd",
            b"/usr/bin/ld.gold",
            b"old-linux.so",
        ] {
            assert!(!is_loader_name(n), "{n:?}");
        }
    }

    #[test]
    fn path_buf_limits() {
        assert!(PathBuf::from_bytes(&[b'a'; PATH_MAX - 1]).is_ok());
        assert_eq!(PathBuf::from_bytes(&[b'a'; PATH_MAX]).err(), Some(TooLong));
        assert_eq!(PathBuf::join(b"", b"x").unwrap().as_bytes(), b"x");
        assert_eq!(PathBuf::join(b"/bin", b"x").unwrap().as_bytes(), b"/bin/x");
    }
}
