//! The session's binaries: the guard library, the wrapper binaries, and the real git and
//! node copies (the protected runtimes) found on `PATH` and in the well-known places.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The library's file name; the guard recognises itself in `LD_PRELOAD` by it.
pub const LIB_NAME: &str = "libexecguard.so";

/// The step of finding the session's binaries that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    #[error("EXECGUARD_LIB must name a file called {LIB_NAME}")]
    LibraryMisnamed,
    #[error("EXECGUARD_LIB={}", path.display())]
    LibraryUnreachable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot find this executable")]
    NoExecutable(#[source] std::io::Error),
    /// A found binary whose canonical name cannot be had.
    #[error("{}", path.display())]
    Unresolved {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    LibraryUnresolved(std::io::Error),
    #[error("cannot find {LIB_NAME} beside {} or in /usr/local/lib/execguard (build it with `cargo build --release`, or set EXECGUARD_LIB)", beside.display())]
    NoLibrary { beside: PathBuf },
    #[error("cannot find the {} wrapper {} beside {} (build the whole workspace: `cargo build --release` puts it there)", tool.name, tool.wrapper_file, beside.display())]
    NoWrapper { tool: Tool, beside: PathBuf },
    #[error("wrapper {}", wrapper.display())]
    WrapperUnreachable {
        wrapper: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot find the exec-path (git-core directory) of {}: git's hooks could not start git; install git with its git-core directory", git.display())]
    NoGitExecPath { git: PathBuf },
    #[error(
        "{found} copies of git and node found; a policy holds at most {}",
        execguard_policy::policy::MAX_RUNTIMES
    )]
    TooMany { found: usize },
}

type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// A tool the session guards: its command name and its wrapper's file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tool {
    pub name: &'static str,
    pub wrapper_file: &'static str,
}

pub const GIT: Tool = Tool {
    name: "git",
    wrapper_file: "execguard-git",
};

pub const NODE: Tool = Tool {
    name: "node",
    wrapper_file: "execguard-node",
};

pub const TOOLS: [Tool; 2] = [GIT, NODE];

/// One `[[runtime]]` entry of the session policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeEntry {
    pub name: String,
    pub path: PathBuf,
    pub wrapper: PathBuf,
}

/// Finds `libexecguard.so`: `$EXECGUARD_LIB`, then beside this executable, then the usual
/// install locations.
pub fn guard_library() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("EXECGUARD_LIB") {
        let p = PathBuf::from(p);
        if p.file_name().and_then(|n| n.to_str()) != Some(LIB_NAME) {
            return Err(RuntimeError::LibraryMisnamed);
        }
        return crate::paths::canonical(&p)
            .map_err(|source| RuntimeError::LibraryUnreachable { path: p, source });
    }
    let exe = crate::paths::current_exe().map_err(RuntimeError::NoExecutable)?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(LIB_NAME),
        dir.join("../lib/execguard").join(LIB_NAME),
        PathBuf::from("/usr/local/lib/execguard").join(LIB_NAME),
        PathBuf::from("/usr/lib/execguard").join(LIB_NAME),
        // The image's place (docs/image.md).
        PathBuf::from("/usr/local/lib").join(LIB_NAME),
    ];
    for c in &candidates {
        if c.is_file() {
            return crate::paths::canonical(c).map_err(RuntimeError::LibraryUnresolved);
        }
    }
    Err(RuntimeError::NoLibrary { beside: exe })
}

/// Finds a wrapper binary: beside this executable (where `cargo build` puts every binary of
/// the workspace, and where the guard library is looked for first), then in the image's and
/// the usual install locations.
pub fn wrapper_binary(tool: Tool) -> Result<PathBuf> {
    let exe = crate::paths::current_exe().map_err(RuntimeError::NoExecutable)?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(tool.wrapper_file),
        dir.join("../libexec/execguard/bin").join(tool.wrapper_file),
        PathBuf::from("/usr/local/libexec/execguard/bin").join(tool.wrapper_file),
        PathBuf::from("/usr/libexec/execguard/bin").join(tool.wrapper_file),
    ];
    for c in &candidates {
        if crate::paths::metadata(c).is_ok_and(|m| m.is_file()) {
            return crate::paths::canonical(c).map_err(|source| RuntimeError::Unresolved {
                path: c.clone(),
                source,
            });
        }
    }
    Err(RuntimeError::NoWrapper { tool, beside: exe })
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Executable regular files named `name` in `path_var`, canonical, in PATH order.
fn on_path(name: &str, path_var: Option<&OsStr>) -> Vec<PathBuf> {
    let Some(path_var) = path_var else {
        return Vec::new();
    };
    std::env::split_paths(path_var)
        .filter(|d| d.is_absolute())
        .filter_map(|d| is_executable_file(&d.join(name)))
        .collect()
}

/// The canonical name of `p` when it is an executable regular file.
fn is_executable_file(p: &Path) -> Option<PathBuf> {
    let meta = crate::paths::metadata(p).ok()?;
    (meta.is_file() && meta.mode() & 0o111 != 0)
        .then(|| crate::paths::canonical(p).ok())
        .flatten()
}

/// The exec-path of the git at `git` (canonical): the `git-core` directory the build put
/// beside it (`<prefix>/lib/git-core` on Debian, `<prefix>/libexec/git-core` from source),
/// recognised by holding the same git (same inode, or the same bytes: Debian ships a copy).
/// Remembered per process: a session start asks for it twice, and comparing two 4 MB copies
/// is most of what it costs.
pub fn git_exec_path_of(git: &Path) -> Option<PathBuf> {
    use std::sync::Mutex;
    static KNOWN: Mutex<Vec<(PathBuf, Option<PathBuf>)>> = Mutex::new(Vec::new());
    if let Some((_, found)) = KNOWN.lock().ok()?.iter().find(|(g, _)| g == git) {
        return found.clone();
    }
    let found = find_git_exec_path(git);
    KNOWN.lock().ok()?.push((git.to_path_buf(), found.clone()));
    found
}

fn find_git_exec_path(git: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(git).ok()?;
    let dir = git.parent()?;
    let mut candidates = vec![dir.to_path_buf()];
    if let Some(prefix) = dir.parent() {
        candidates.push(prefix.join("lib/git-core"));
        candidates.push(prefix.join("libexec/git-core"));
    }
    candidates.into_iter().find_map(|c| {
        if c.file_name() != Some(OsStr::new("git-core")) {
            return None;
        }
        let c = crate::paths::canonical(&c).ok()?;
        let other = c.join("git");
        let m = std::fs::metadata(&other).ok()?;
        if !m.is_file() {
            return None;
        }
        if same_file(&m, &meta) {
            return Some(c);
        }
        (m.len() == meta.len() && same_bytes_remembered(git, &meta, &other, &m)).then_some(c)
    })
}

/// [`same_bytes`], remembered across sessions in the shim base by the identity and change
/// times of both files (a package upgrade changes them). The record only ever spares a
/// comparison of two files the user could not change without changing their ctime; a forged
/// record can at worst pair git with another git-core directory the same way `PATH` could.
fn same_bytes_remembered(
    a: &Path,
    ma: &std::fs::Metadata,
    b: &Path,
    mb: &std::fs::Metadata,
) -> bool {
    let key = |m: &std::fs::Metadata| {
        format!(
            "{}:{}:{}:{}.{}",
            m.dev(),
            m.ino(),
            m.len(),
            m.ctime(),
            m.ctime_nsec()
        )
    };
    let line = format!("{} {}\n", key(ma), key(mb));
    let record = crate::runtime_dir::shim_base()
        .ok()
        .map(|d| d.join("same-bytes"));
    let known = record.as_deref().and_then(read_record).unwrap_or_default();
    if known.lines().any(|l| format!("{l}\n") == line) {
        return true;
    }
    let same = same_bytes(a, b);
    if let (true, Some(r)) = (same, &record) {
        write_record(r, &(known + &line));
    }
    same
}

/// The largest record read back: ours are a line or a few.
const RECORD_MAX: usize = 64 * 1024;

/// A record of ours in the shim base, which every session can write: read only when it is a
/// small regular file under that name (not a link to a file elsewhere, nor a FIFO that would
/// keep `execguard run` waiting).
fn read_record(path: &Path) -> Option<String> {
    let bytes = crate::input::read_record(path, RECORD_MAX).ok()?;
    String::from_utf8(bytes).ok()
}

/// Replaces a record of ours with `text`: written to a new file `record-<pid>` beside it,
/// then renamed over it, so a link a session put in its place (to a file of the user's
/// elsewhere) is replaced, never written through. Best effort: without the record the next
/// session just does the work again.
fn write_record(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let new = path
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!("record-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&new)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_err() || std::fs::rename(&new, path).is_err() {
        let _ = std::fs::remove_file(&new);
    }
}

/// Do two files hold the same bytes? Compared 64 KiB at a time, so two multi-megabyte
/// binaries cost no large allocation (and its page faults) and a difference stops early.
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (Ok(mut fa), Ok(mut fb)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let mut ba = vec![0u8; 64 * 1024];
    let mut bb = vec![0u8; 64 * 1024];
    loop {
        let Ok(n) = fa.read(&mut ba) else {
            return false;
        };
        if n == 0 {
            return fb.read(&mut bb[..1]).is_ok_and(|m| m == 0);
        }
        if fb.read_exact(&mut bb[..n]).is_err() || ba[..n] != bb[..n] {
            return false;
        }
    }
}

/// Well-known places of real binaries besides `PATH`: a session may name them directly.
fn well_known(tool: Tool) -> &'static [&'static str] {
    match tool.name {
        "git" => &[
            "/usr/bin/git",
            "/usr/lib/git-core/git",
            "/usr/libexec/git-core/git",
            "/usr/local/bin/git",
            "/usr/local/libexec/git-core/git",
        ],
        _ => &["/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"],
    }
}

/// The protected runtimes of the session for the tools whose wrapper is `wrapper`: the first
/// entry is the binary `PATH` finds (what the user would have run; the wrapper execs it), then,
/// for git, its exec-path copy, then every other copy on `PATH` and in the well-known places.
/// Copies are told apart by device and inode (hard links are one entry: the guard covers them
/// all). The wrapper itself, e.g. an outer session's shim on `PATH`, is never a runtime.
/// An empty list means the tool is not installed.
pub fn discover_runtimes(
    tool: Tool,
    wrapper: &Path,
    path_var: Option<&OsStr>,
) -> Result<Vec<RuntimeEntry>> {
    let wrapper_meta =
        crate::paths::metadata(wrapper).map_err(|source| RuntimeError::WrapperUnreachable {
            wrapper: wrapper.to_path_buf(),
            source,
        })?;
    let mut found: Vec<PathBuf> = on_path(tool.name, path_var);
    found.extend(
        well_known(tool)
            .iter()
            .filter_map(|p| is_executable_file(Path::new(p))),
    );
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    seen.insert((wrapper_meta.dev(), wrapper_meta.ino()));
    let mut out: Vec<RuntimeEntry> = Vec::new();
    // `force`: list the path even when its file is listed under another name.
    let mut push = |p: PathBuf, force: bool, out: &mut Vec<RuntimeEntry>| -> bool {
        let Ok(m) = crate::paths::metadata(&p) else {
            return false;
        };
        let new = seen.insert((m.dev(), m.ino()));
        if (new || force) && out.iter().all(|r| r.path != p) {
            out.push(RuntimeEntry {
                name: tool.name.into(),
                path: p,
                wrapper: wrapper.to_path_buf(),
            });
        }
        new
    };
    for p in found {
        let first = out.is_empty();
        if !push(p.clone(), false, &mut out) || tool != GIT {
            continue; // the wrapper, or a copy already listed
        }
        match git_exec_path_of(&p) {
            // Listed even when it is a hard link of `p`: the wrapper accepts a GIT_EXEC_PATH
            // shim only if it links into the directory of a protected git.
            Some(e) => {
                push(e.join("git"), true, &mut out);
                // The whole directory too: its other copies of git (dashed builtins that are
                // not hard links) would otherwise start git without the wrapper.
                push(e, true, &mut out);
            }
            None if first => return Err(RuntimeError::NoGitExecPath { git: p }),
            None => {}
        }
    }
    Ok(out)
}

/// The session toolchain: the runtimes of every installed tool, each with its wrapper.
pub fn discover(path_var: Option<&OsStr>) -> Result<Vec<RuntimeEntry>> {
    let mut all = Vec::new();
    for tool in TOOLS {
        let wrapper = wrapper_binary(tool)?;
        all.extend(discover_runtimes(tool, &wrapper, path_var)?);
    }
    if all.len() > execguard_policy::policy::MAX_RUNTIMES {
        return Err(RuntimeError::TooMany { found: all.len() });
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dirs::tmp;

    /// A wrapper that cannot be reached is named, with the cause.
    #[test]
    fn an_unreachable_wrapper_is_its_own_error() {
        let d = tmp("runtimes-errors");
        let wrapper = d.join("execguard-git");
        match discover_runtimes(GIT, &wrapper, None) {
            Err(e @ RuntimeError::WrapperUnreachable { .. }) => {
                assert_eq!(e.to_string(), format!("wrapper {}", wrapper.display()));
                let cause = std::error::Error::source(&e).map(ToString::to_string);
                assert!(cause.is_some_and(|c| c.contains("No such file")), "{e:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exec_path_is_found_by_inode_or_bytes() {
        let d = tmp("execpath");
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::create_dir_all(d.join("lib/git-core")).unwrap();
        std::fs::write(d.join("bin/git"), b"same bytes").unwrap();
        std::fs::write(d.join("lib/git-core/git"), b"same bytes").unwrap();
        assert_eq!(
            find_git_exec_path(&d.join("bin/git")),
            Some(d.join("lib/git-core"))
        );
        std::fs::write(d.join("lib/git-core/git"), b"other byte").unwrap();
        assert_eq!(find_git_exec_path(&d.join("bin/git")), None);
        std::fs::remove_file(d.join("lib/git-core/git")).unwrap();
        std::fs::create_dir_all(d.join("libexec/git-core")).unwrap();
        std::fs::hard_link(d.join("bin/git"), d.join("libexec/git-core/git")).unwrap();
        assert_eq!(
            find_git_exec_path(&d.join("bin/git")),
            Some(d.join("libexec/git-core"))
        );
        // A git inside git-core is its own exec-path.
        assert_eq!(
            find_git_exec_path(&d.join("libexec/git-core/git")),
            Some(d.join("libexec/git-core"))
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Records lie where sessions write: one is read only as a small regular file of that
    /// name, and written by renaming a new file over it, never through what is there.
    #[test]
    fn records_are_neither_followed_nor_waited_on() {
        let d = tmp("records");
        let elsewhere = d.join("elsewhere");
        std::fs::write(&elsewhere, b"the user's file\n").unwrap();
        let record = d.join("record");
        std::os::unix::fs::symlink(&elsewhere, &record).unwrap();
        assert_eq!(read_record(&record), None, "a link is not followed");
        write_record(&record, "new\n");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"the user's file\n");
        assert_eq!(read_record(&record).as_deref(), Some("new\n"));
        std::fs::remove_file(&record).unwrap();
        std::fs::hard_link(&elsewhere, &record).unwrap();
        write_record(&record, "new\n");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"the user's file\n");
        std::fs::remove_file(&record).unwrap();
        let fifo = std::ffi::CString::new(record.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(read_record(&record), None, "a FIFO is not waited on");
        std::fs::remove_file(&record).unwrap();
        std::fs::write(&record, vec![b'x'; RECORD_MAX + 1]).unwrap();
        assert_eq!(read_record(&record), None, "an oversized record");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "no file left behind"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn runtimes_skip_the_wrapper_and_dedupe_hard_links() {
        let d = tmp("discover");
        for sub in ["a", "b", "w", "libexec/git-core"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let exe = |p: &Path| {
            std::fs::write(p, b"#!/bin/true\n").unwrap();
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        };
        exe(&d.join("w/execguard-git"));
        std::os::unix::fs::symlink(d.join("w/execguard-git"), d.join("a/git")).unwrap();
        exe(&d.join("b/git"));
        std::fs::hard_link(d.join("b/git"), d.join("libexec/git-core/git")).unwrap();
        let path =
            std::env::join_paths([d.join("a"), d.join("b"), d.join("libexec/git-core")]).unwrap();
        let rts = discover_runtimes(GIT, &d.join("w/execguard-git"), Some(&path)).unwrap();
        let paths: Vec<&Path> = rts.iter().map(|r| r.path.as_path()).collect();
        // The outer shim's git (the wrapper) is skipped; b/git's exec-path copy is listed
        // although it is a hard link (the shim links into its directory), and so is the
        // exec-path directory itself (a directory runtime: every copy in it); the well-known
        // places of this machine may add more after them.
        assert_eq!(paths[0], d.join("b/git"));
        assert_eq!(paths[1], d.join("libexec/git-core/git"));
        assert_eq!(paths[2], d.join("libexec/git-core"));
        assert_eq!(
            paths.iter().filter(|p| p.starts_with(&d)).count(),
            3,
            "{paths:?}"
        );
        assert!(!paths.contains(&d.join("w/execguard-git").as_path()));
        assert!(rts.iter().all(|r| r.wrapper == d.join("w/execguard-git")));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
