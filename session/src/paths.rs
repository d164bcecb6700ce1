//! Canonical names, each directory looked up once per process.
//!
//! A session start asks for the canonical names of the same few directories from many places
//! (the wrappers and the guard library beside this executable, every `PATH` entry, `$HOME`
//! and its toolchains, the workspace). `std::fs::canonicalize` is glibc's `realpath`, one
//! `readlink` per component of every name: about 270 of them per start, most for `/usr`,
//! `$HOME` and this executable's directory. Here a name costs one `readlink` of its last
//! component once its directory is known.
//!
//! What is remembered is what `realpath` would have answered when it was first asked. The CLI
//! asks before the session exists, and nothing it remembers is a name it later replaces.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// Symbolic links one name may lead through, as glibc's `realpath` counts them
/// (`__eloop_threshold`): one more is `ELOOP`.
const MAX_LINKS: u32 = 40;

/// Each name looked up, with its canonical name and the links its lookup went through.
/// Keyed by the name's bytes: hashing a `Path` parses its components.
static KNOWN: Mutex<Option<HashMap<OsString, (PathBuf, u32)>>> = Mutex::new(None);

fn known(p: &Path) -> Option<(PathBuf, u32)> {
    KNOWN.lock().ok()?.as_ref()?.get(p.as_os_str()).cloned()
}

fn remember(p: &Path, found: &(PathBuf, u32)) {
    if let Ok(mut k) = KNOWN.lock() {
        k.get_or_insert_with(HashMap::new)
            .insert(p.as_os_str().to_os_string(), found.clone());
    }
}

/// `p`'s canonical name, as `std::fs::canonicalize` gives it (the same errors too; a name with
/// `..`, `.`, a trailing `/` or a relative name is left to it). One difference: a link whose
/// target holds `..` is resolved by `realpath` afresh, so a chain of more than 40 links
/// through such targets may still resolve (to its true canonical name) where `realpath` alone
/// answers `ELOOP`.
///
/// Not for a check that a name leads through no link now (the answer may be remembered from
/// earlier): those call `std::fs::canonicalize`.
pub fn canonical(p: &Path) -> io::Result<PathBuf> {
    let (real, _) = resolve(p, 0)?;
    // The answer is its own canonical name too (a relative or `..` name leaves no other trace
    // here): asked by it later, the same answer comes back.
    if known(&real).is_none() {
        remember_canonical(&real);
    }
    Ok(real)
}

fn too_many_links() -> io::Error {
    io::Error::from_raw_os_error(libc::ELOOP)
}

/// `p`'s canonical name and the links its lookup goes through, when `spent` links were
/// followed already on the way to it.
fn resolve(p: &Path, spent: u32) -> io::Result<(PathBuf, u32)> {
    // Relative names depend on the directory, `..` on what the name before it really is,
    // and a trailing `/` or a `.` (which `Path` drops) asks for a directory: `realpath`
    // answers those.
    let bytes = p.as_os_str().as_bytes();
    let plain = p.is_absolute()
        && !bytes.ends_with(b"/")
        && !bytes.ends_with(b"/.")
        && !bytes.windows(3).any(|w| w == b"/./")
        && !p.components().any(|c| c == Component::ParentDir);
    if !plain {
        return Ok((p.canonicalize()?, 0));
    }
    if let Some(found) = known(p) {
        if spent + found.1 > MAX_LINKS {
            return Err(too_many_links());
        }
        return Ok(found);
    }
    let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
        return Ok((p.canonicalize()?, 0)); // `/`
    };
    let (dir, links) = resolve(parent, spent)?;
    let here = dir.join(name);
    let found = match std::fs::read_link(&here) {
        Ok(target) => {
            let used = spent + links + 1;
            if used > MAX_LINKS {
                return Err(too_many_links());
            }
            // A relative target is read from the link's own (canonical) directory.
            let (real, more) = resolve(&dir.join(target), used)?;
            (real, links + 1 + more)
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (here, links),
        Err(e) => return Err(e),
    };
    remember(p, &found);
    Ok(found)
}

/// Records that `p` is its own canonical name: a name the kernel gave (`/proc/self/fd/N`'s
/// link) or one just opened with no link in its last component under a canonical directory.
/// Later [`canonical`] answers give it as checked, whatever the name leads to by then.
pub fn remember_canonical(p: &Path) {
    remember(p, &(p.to_path_buf(), 0));
}

/// What `std::fs::metadata(p)` answered when it was first asked in this process. The
/// discovery of the runtimes asks about the same few system binaries from several places (up
/// to six times each per start); like [`canonical`], only for names the CLI itself does not
/// change afterwards.
pub fn metadata(p: &Path) -> io::Result<std::fs::Metadata> {
    type Answers = HashMap<OsString, Result<std::fs::Metadata, i32>>;
    static ANSWERS: Mutex<Option<Answers>> = Mutex::new(None);
    let asked = ANSWERS
        .lock()
        .ok()
        .and_then(|a| a.as_ref()?.get(p.as_os_str()).cloned());
    let answer = match asked {
        Some(answer) => answer,
        None => {
            let answer = std::fs::metadata(p).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO));
            if let Ok(mut a) = ANSWERS.lock() {
                a.get_or_insert_with(HashMap::new)
                    .insert(p.as_os_str().to_os_string(), answer.clone());
            }
            answer
        }
    };
    answer.map_err(io::Error::from_raw_os_error)
}

/// This executable's canonical name (`/proc/self/exe`, read once).
pub fn current_exe() -> io::Result<PathBuf> {
    static EXE: Mutex<Option<PathBuf>> = Mutex::new(None);
    if let Some(exe) = EXE.lock().ok().and_then(|e| e.clone()) {
        return Ok(exe);
    }
    let exe = std::env::current_exe()?;
    if let Ok(mut e) = EXE.lock() {
        *e = Some(exe.clone());
    }
    Ok(exe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Every kind of name gets `realpath`'s answer: plain, through relative and absolute
    /// links, chains, links to links in other directories, `..`, a trailing `/` or `/.`,
    /// dangling links, loops, chains one link short of and over `realpath`'s limit, a file
    /// used as a directory; asked twice (the second answer is the remembered one).
    #[test]
    fn answers_as_realpath_does() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("real/sub/deeper")).unwrap();
        std::fs::write(d.join("real/sub/file"), "x").unwrap();
        symlink("real", d.join("rel")).unwrap();
        symlink(d.join("real/sub"), d.join("abs")).unwrap();
        symlink("../abs", d.join("real/up")).unwrap();
        symlink("up/file", d.join("real/chain")).unwrap();
        symlink("missing", d.join("dangling")).unwrap();
        symlink("loop-b", d.join("loop-a")).unwrap();
        symlink("loop-a", d.join("loop-b")).unwrap();
        symlink("real/sub/file", d.join("lf")).unwrap();
        symlink("sub/file/.", d.join("real/lfdot")).unwrap();
        // Chains of 40 and 41 links (realpath follows 40), and 45 links `s_i -> .` on the way.
        symlink("real", d.join("c0")).unwrap();
        for i in 1..=41 {
            symlink(format!("c{}", i - 1), d.join(format!("c{i}"))).unwrap();
        }
        let mut deep = d.to_path_buf();
        for i in 0..45 {
            // Each `s_i` is `d` itself, so `d/s0/s1/.../s44` leads through 45 links.
            symlink(".", d.join(format!("s{i}"))).unwrap();
            deep.push(format!("s{i}"));
        }
        let names = [
            "",
            "real",
            "real/sub/file",
            "rel/sub/deeper",
            "abs/deeper",
            "real/up/file",
            "real/chain",
            "rel/up/deeper/../file",
            "rel/sub/",
            "real/sub/file/",
            "real/sub/file/x",
            "dangling",
            "dangling/x",
            "loop-a",
            "loop-a/x",
            "nothing/here",
            "real/sub/file/.",
            "real/./sub/file",
            "real/sub/file/./x",
            "lf/.",
            "real/lfdot",
            "c39",
            "c40",
            "c41",
            "c41/sub",
        ];
        for _ in 0..2 {
            for n in names {
                let p = d.join(n);
                let want = p.canonicalize().map_err(|e| e.raw_os_error());
                let got = canonical(&p).map_err(|e| e.raw_os_error());
                assert_eq!(got, want, "{}", p.display());
            }
        }
        let deep = deep.join("real");
        assert_eq!(
            canonical(&deep).map_err(|e| e.raw_os_error()),
            deep.canonicalize().map_err(|e| e.raw_os_error()),
            "45 links on the way"
        );
        assert_eq!(canonical(Path::new("/")).unwrap(), Path::new("/"));
    }
}
