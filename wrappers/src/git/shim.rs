//! The `GIT_EXEC_PATH` shim for host sessions.
//!
//! git puts its exec-path first on `PATH` for hooks and the programs it starts, so `git` in
//! a hook resolves to `<exec-path>/git`. On a host that file is the real git, which the guard
//! refuses to start from a hook (the caller, `/bin/sh`, is not the wrapper). The shim is a
//! directory that mirrors the real exec-path with symlinks, except that its `git` is the
//! wrapper: `execguard run` builds it and sets `GIT_EXEC_PATH` to it, so nested git passes
//! through the wrapper's checks again, and git's own helpers still resolve to the real files.

use std::fs;
use std::io;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::Path;

use super::ShimRule;

/// Build (or refresh) a shim directory `dir` for the real exec-path `real_exec_path` (e.g.
/// `/usr/lib/git-core`) and the wrapper binary `wrapper`. Every entry of `real_exec_path`
/// becomes a symlink to it, except `git`, which links to `wrapper`. Stale symlinks are
/// replaced; any other file in `dir` is an error (the wrapper would refuse the shim).
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
    for entry in fs::read_dir(real_exec_path)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "git" {
            continue;
        }
        symlink(real_exec_path.join(&name), dir.join(&name))?;
    }
    symlink(wrapper, dir.join("git"))
}

/// Accept `dir` as `GIT_EXEC_PATH` only if it is such a shim: its `git` is the wrapper (same
/// device and inode), and every other entry is a symlink to the same name in one of the
/// allowed real exec-path directories. Anything else could make git run a program of the
/// caller's choosing as one of its helpers.
pub fn validate_shim(dir: &Path, rule: &ShimRule) -> Result<(), String> {
    let Some(wrapper) = &rule.wrapper else {
        return Err("no wrapper known to compare the shim's git with".into());
    };
    let w = fs::metadata(wrapper).map_err(|e| format!("{}: {e}", wrapper.display()))?;
    let g = fs::metadata(dir.join("git")).map_err(|e| format!("git: {e}"))?;
    if (g.dev(), g.ino()) != (w.dev(), w.ino()) {
        return Err("its git is not the wrapper".into());
    }
    let entries = fs::read_dir(dir).map_err(|e| e.to_string())?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        if name == "git" {
            continue;
        }
        let target = fs::read_link(entry.path())
            .map_err(|_| format!("{} is not a symlink", name.to_string_lossy()))?;
        let ok = target.file_name() == Some(name.as_os_str())
            && target
                .parent()
                .is_some_and(|p| rule.real_exec_dirs.iter().any(|d| d == p));
        if !ok {
            return Err(format!(
                "{} links to {}, outside the real exec path",
                name.to_string_lossy(),
                target.display()
            ));
        }
    }
    Ok(())
}
