//! The `GIT_EXEC_PATH` shim for host sessions.
//!
//! git puts its exec-path first on `PATH` for hooks and the programs it starts, so `git` in
//! a hook resolves to `<exec-path>/git`. On a host that file is the real git, which the guard
//! refuses to start from a hook (the caller, `/bin/sh`, is not the wrapper). The shim is a
//! directory that mirrors the real exec-path with symlinks, except that its `git` is the
//! wrapper: `execguard run` builds it and sets `GIT_EXEC_PATH` to it, so nested git passes
//! through the wrapper's checks again, and git's own helpers still resolve to the real files.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::ShimRule;

/// Build (or refresh) a shim directory `dir` for the real exec-path `real_exec_path` (e.g.
/// `/usr/lib/git-core`) and the wrapper binary `wrapper`: the symlinks of [`shim_entries`].
/// Stale symlinks are replaced; any other file in `dir` is an error (the wrapper would refuse
/// the shim).
pub fn build_git_exec_path_shim(
    dir: &Path,
    real_exec_path: &Path,
    wrapper: &Path,
) -> io::Result<()> {
    if !real_exec_path.is_absolute() || !wrapper.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "real exec path and wrapper must be absolute",
        ));
    }
    fs::create_dir_all(dir)?;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_symlink() {
            fs::remove_file(entry.path())?;
        } else {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} is not a symlink", entry.path().display()),
            ));
        }
    }
    for (name, target) in shim_entries(real_exec_path, wrapper)? {
        symlink(target, dir.join(name))?;
    }
    Ok(())
}

/// Does `dir` hold exactly what [`build_git_exec_path_shim`] would build from `real_exec_path`
/// and `wrapper` now? Then a session can reuse it instead of making ~170 symlinks again.
pub fn git_exec_path_shim_is_current(dir: &Path, real_exec_path: &Path, wrapper: &Path) -> bool {
    let (Ok(want), Ok(shim), Ok(listing)) = (
        shim_entries(real_exec_path, wrapper),
        fs::File::open(dir),
        fs::read_dir(dir),
    ) else {
        return false;
    };
    let mut target = [0u8; execguard_policy::path::PATH_MAX];
    // Nothing more than what is wanted, and each wanted link as it should be: read in the open
    // directory, one lookup per link (each session starts with this check of ~170 links).
    listing.count() == want.len()
        && want.iter().all(|(name, wanted)| {
            execguard_os::read_link_at(shim.as_raw_fd(), name.as_bytes(), &mut target)
                .is_ok_and(|n| target[..n] == *wanted.as_os_str().as_bytes())
        })
}

/// The shim's entries for `real_exec_path` and `wrapper`: each name and its symlink's target.
/// `git` is the wrapper, and so are the dashed builtins (`git-upload-pack`, ...), which are
/// the real git under other names (hard or symbolic links): git starts some of them through
/// `sh -c`, which the guard would refuse, and the wrapper runs `git-<cmd> ARGS` as
/// `git <cmd> ARGS`. Every other entry links to the real file.
fn shim_entries(real_exec_path: &Path, wrapper: &Path) -> io::Result<Vec<(OsString, PathBuf)>> {
    let real_git = fs::metadata(real_exec_path.join("git"))
        .ok()
        .map(|g| (g.dev(), g.ino()));
    let dir_dev = fs::metadata(real_exec_path)?.dev();
    let mut entries = vec![(OsString::from("git"), wrapper.to_path_buf())];
    for entry in fs::read_dir(real_exec_path)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "git" {
            continue;
        }
        let real = real_exec_path.join(&name);
        // A regular file is known by its directory entry, whose inode number is the file's:
        // without a stat of its own when the directory's device is git's (the entry lies on
        // it), with one where they differ (an overlay whose layers are separate file systems).
        // A link is judged by where it leads. A file mounted over an entry shows the entry's
        // inode, so it links to its real path, which the guard refuses to start as the
        // protected git: never a way around the wrapper.
        let is_real_git = real_git.is_some_and(|(dev, ino)| {
            let stat = || fs::metadata(&real).is_ok_and(|m| (m.dev(), m.ino()) == (dev, ino));
            match entry.file_type() {
                Ok(t) if t.is_file() => entry.ino() == ino && (dir_dev == dev || stat()),
                _ => stat(),
            }
        });
        entries.push((
            name,
            if is_real_git {
                wrapper.to_path_buf()
            } else {
                real
            },
        ));
    }
    Ok(entries)
}

/// Where git's own exec-path lives when it is installed by a package or from source.
const SYSTEM_EXEC_PATHS: &[&str] = &[
    "/usr/lib/git-core",
    "/usr/libexec/git-core",
    "/usr/local/lib/git-core",
    "/usr/local/libexec/git-core",
];

/// Accept `dir` as `GIT_EXEC_PATH` (git exports its exec-path to every child) when it is the
/// session's shim ([`validate_shim`]) or git's own exec-path: a system git-core directory or
/// the `git-core` directory of a protected git, writable by nobody but its owner (not the
/// caller), whose `git` is the wrapper or a protected git (the image installs the wrapper
/// there).
pub fn validate_exec_path(dir: &Path, rule: &ShimRule) -> Result<(), String> {
    if own_exec_path(dir, rule) {
        return Ok(());
    }
    validate_shim(dir, rule)
}

fn own_exec_path(dir: &Path, rule: &ShimRule) -> bool {
    let Ok(canon) = fs::canonicalize(dir) else {
        return false;
    };
    let known = canon.file_name() == Some(std::ffi::OsStr::new("git-core"))
        && (SYSTEM_EXEC_PATHS.iter().any(|p| canon == Path::new(p))
            || rule.real_exec_dirs.contains(&canon));
    let Ok(meta) = fs::metadata(&canon) else {
        return false;
    };
    // Writable by nobody but its owner, and the owner is not the caller (root sees real
    // root's files as root; a user namespace shows them as the overflow uid, never the
    // caller). For root the fixed locations above are what counts.
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    if !known || meta.mode() & 0o022 != 0 || (meta.uid() == me && me != 0) {
        return false;
    }
    let Ok(git) = fs::metadata(canon.join("git")) else {
        return false;
    };
    let same =
        |p: &Path| fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == (git.dev(), git.ino()));
    rule.wrapper.as_deref().is_some_and(same) || rule.real_gits.iter().any(|g| same(g))
}

/// Accept `dir` as `GIT_EXEC_PATH` only if it is such a shim, judged by the text of its links
/// (never by where they lead from here: `/proc/self/exe` is the wrapper to the wrapper, the
/// real git to git): `dir` is its own canonical name (a link on the way, `/proc/self/cwd/...`,
/// names another directory for each process that looks); every entry is a symlink; `git`
/// links to the wrapper; every other entry to the wrapper or to the same name in one real
/// exec-path directory; and every entry of that directory is there (git would look for a
/// missing helper on `PATH`). Anything else could make git run a program of the caller's
/// choosing as one of its helpers.
pub fn validate_shim(dir: &Path, rule: &ShimRule) -> Result<(), String> {
    let Some(wrapper) = &rule.wrapper else {
        return Err("no wrapper known to compare the shim's git with".into());
    };
    if fs::canonicalize(dir).map_err(|e| e.to_string())? != dir {
        return Err("it is reached through a symlink".into());
    }
    let mut names: Vec<OsString> = Vec::new();
    let mut mirrored: Option<&PathBuf> = None;
    for entry in fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        let target = fs::read_link(entry.path())
            .map_err(|_| format!("{} is not a symlink", name.to_string_lossy()))?;
        if target == *wrapper {
            // git, or a dashed builtin (checked again when it runs).
        } else if name == "git" {
            return Err("its git is not the wrapper".into());
        } else {
            let from = rule
                .real_exec_dirs
                .iter()
                .find(|d| target.parent() == Some(d.as_path()))
                .filter(|_| target.file_name() == Some(name.as_os_str()));
            match (from, mirrored) {
                (Some(d), None) => mirrored = Some(d),
                (Some(d), Some(m)) if d == m => {}
                _ => {
                    return Err(format!(
                        "{} links to {}, outside the real exec path",
                        name.to_string_lossy(),
                        target.display()
                    ))
                }
            }
        }
        names.push(name);
    }
    names.sort();
    if names.binary_search(&OsString::from("git")).is_err() {
        return Err("it has no git".into());
    }
    // All links to the wrapper: complete only if every real exec path holds no more.
    let mirrored: Vec<&PathBuf> = match mirrored {
        Some(d) => vec![d],
        None => rule.real_exec_dirs.iter().collect(),
    };
    for real in mirrored {
        for entry in fs::read_dir(real).map_err(|e| format!("{}: {e}", real.display()))? {
            let name = entry.map_err(|e| e.to_string())?.file_name();
            if names.binary_search(&name).is_err() {
                return Err(format!(
                    "{} of {} is missing (git would look for it on PATH)",
                    name.to_string_lossy(),
                    real.display()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn dashed_builtins_link_to_the_wrapper_and_validate() {
        let scratch = tempfile::tempdir().unwrap();
        let d = scratch.path();
        let real = d.join("git-core");
        fs::create_dir_all(&real).unwrap();
        fs::write(real.join("git"), b"real git").unwrap();
        fs::hard_link(real.join("git"), real.join("git-upload-pack")).unwrap();
        fs::write(real.join("git-sh-setup"), b"# script").unwrap();
        let wrapper = d.join("execguard-git");
        fs::write(&wrapper, b"wrapper").unwrap();
        let shim = d.join("shim");
        build_git_exec_path_shim(&shim, &real, &wrapper).unwrap();
        assert_eq!(fs::read_link(shim.join("git")).unwrap(), wrapper);
        assert_eq!(
            fs::read_link(shim.join("git-upload-pack")).unwrap(),
            wrapper
        );
        assert_eq!(
            fs::read_link(shim.join("git-sh-setup")).unwrap(),
            real.join("git-sh-setup")
        );
        let rule = ShimRule {
            wrapper: Some(wrapper.clone()),
            real_exec_dirs: vec![real.clone()],
            real_gits: vec![],
        };
        assert_eq!(validate_shim(&shim, &rule), Ok(()));
        let refused = |why: &str| {
            let e = validate_shim(&shim, &rule).unwrap_err();
            assert!(e.contains(why), "{e}");
        };
        // A link to anything else outside the real exec-path is refused.
        fs::remove_file(shim.join("git-sh-setup")).unwrap();
        symlink(PathBuf::from("/bin/sh"), shim.join("git-sh-setup")).unwrap();
        refused("outside the real exec path");
        // So is a missing helper (git would look for it on PATH)...
        fs::remove_file(shim.join("git-sh-setup")).unwrap();
        refused("git-sh-setup of");
        symlink(real.join("git-sh-setup"), shim.join("git-sh-setup")).unwrap();
        assert_eq!(validate_shim(&shim, &rule), Ok(()));
        // ...a link that is the wrapper only to the wrapper, and one that depends on who looks.
        fs::remove_file(shim.join("git")).unwrap();
        symlink("/proc/self/exe", shim.join("git")).unwrap();
        refused("its git is not the wrapper");
        fs::remove_file(shim.join("git")).unwrap();
        symlink(&wrapper, shim.join("git")).unwrap();
        fs::remove_file(shim.join("git-sh-setup")).unwrap();
        symlink("/proc/self/cwd/git-sh-setup", shim.join("git-sh-setup")).unwrap();
        refused("outside the real exec path");
        fs::remove_file(shim.join("git-sh-setup")).unwrap();
        symlink(real.join("git-sh-setup"), shim.join("git-sh-setup")).unwrap();
        // The shim named through a link.
        symlink(&shim, d.join("linked")).unwrap();
        assert!(validate_shim(&d.join("linked"), &rule)
            .unwrap_err()
            .contains("through a symlink"));
    }
}
