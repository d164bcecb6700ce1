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

/// Symbolic links followed in one lookup before it is left to `realpath` (which then
/// answers `ELOOP` as the kernel does).
const MAX_LINKS: u32 = 40;

/// Keyed by the name's bytes: hashing a `Path` parses its components.
static KNOWN: Mutex<Option<HashMap<OsString, PathBuf>>> = Mutex::new(None);

fn known(p: &Path) -> Option<PathBuf> {
    KNOWN.lock().ok()?.as_ref()?.get(p.as_os_str()).cloned()
}

fn remember(p: &Path, real: &Path) {
    if let Ok(mut k) = KNOWN.lock() {
        k.get_or_insert_with(HashMap::new)
            .insert(p.as_os_str().to_os_string(), real.to_path_buf());
    }
}

/// `p`'s canonical name, as `std::fs::canonicalize` gives it (the same errors too).
pub fn canonical(p: &Path) -> io::Result<PathBuf> {
    resolve(p, 0)
}

fn resolve(p: &Path, links: u32) -> io::Result<PathBuf> {
    // Relative names depend on the directory, `..` on what the name before it really is,
    // and a trailing `/` asks for a directory: `realpath` answers those.
    let plain = p.is_absolute()
        && !p.as_os_str().as_bytes().ends_with(b"/")
        && !p.components().any(|c| c == Component::ParentDir);
    if !plain || links > MAX_LINKS {
        return p.canonicalize();
    }
    if let Some(real) = known(p) {
        return Ok(real);
    }
    let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
        return p.canonicalize(); // `/`
    };
    let here = resolve(parent, links)?.join(name);
    let real = match std::fs::read_link(&here) {
        // A relative target is read from the link's own (canonical) directory.
        Ok(target) => resolve(
            &here.parent().unwrap_or(Path::new("/")).join(target),
            links + 1,
        )?,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => here,
        Err(e) => return Err(e),
    };
    remember(p, &real);
    Ok(real)
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
    /// links, chains, links to links in other directories, `..`, a trailing `/`, dangling
    /// links, loops, a file used as a directory; asked twice (the second answer is the
    /// remembered one).
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
        ];
        for _ in 0..2 {
            for n in names {
                let p = d.join(n);
                let want = p.canonicalize().map_err(|e| e.raw_os_error());
                let got = canonical(&p).map_err(|e| e.raw_os_error());
                assert_eq!(got, want, "{}", p.display());
            }
        }
        assert_eq!(canonical(Path::new("/")).unwrap(), Path::new("/"));
    }
}
