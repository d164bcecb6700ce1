//! Repository discovery as git does it, so that the wrapper reads the config (and the
//! sequencer's todo list) of the repository git will use.

use std::fs;
use std::path::{Path, PathBuf};

/// The repository git would discover from a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Canonical git directory (for a linked worktree, its private dir).
    pub git_dir: PathBuf,
    /// Canonical common directory (`commondir` file of a linked worktree, else `git_dir`).
    pub common_dir: PathBuf,
    /// Canonical top of the work tree, `None` for a bare repository.
    pub work_tree: Option<PathBuf>,
}

/// git's `is_git_directory`: `HEAD` here, `objects` and `refs` in the common dir (a linked
/// worktree's git dir has neither of its own).
fn is_git_dir(d: &Path) -> bool {
    // git's `validate_headref` takes a symlink `HEAD` too (to `refs/...`, dangling or not).
    let head = fs::symlink_metadata(d.join("HEAD"))
        .is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
    // Most directories on the way up have no `HEAD`: their `commondir` is not read.
    head && {
        let common = common_dir_of(d);
        common.join("objects").is_dir() && common.join("refs").is_dir()
    }
}

/// A file's text as git reads a one-line file (`gitdir:`, `commondir`): only the line ends
/// (`\n`, `\r`) come off the end; every other byte, spaces included, is part of the path.
fn one_line(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r'])
}

/// A one-line file's text (`gitdir:`, `commondir`), when it is a regular file of at most 64 KiB
/// ([`crate::bounded::read_regular`]: the supervisor reads these outside the session).
fn read_one_line_file(f: &Path) -> Option<String> {
    String::from_utf8(crate::bounded::read_regular(f, 64 << 10, true).ok()?).ok()
}

/// The git dir a `.git` file names (`gitdir: PATH`, relative to the file's directory).
pub(crate) fn read_gitfile(f: &Path) -> Option<PathBuf> {
    let text = read_one_line_file(f)?;
    // git's `read_gitfile_gently`: `gitdir: ` with its one space.
    let target = one_line(text.strip_prefix("gitdir: ")?);
    let p = Path::new(target);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        f.parent()?.join(p)
    };
    fs::canonicalize(p).ok()
}

/// The common dir of a git dir: its `commondir` file (a linked worktree), else itself.
pub fn common_dir_of(git_dir: &Path) -> PathBuf {
    match read_one_line_file(&git_dir.join("commondir")) {
        Some(s) => {
            let p = Path::new(one_line(&s));
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                git_dir.join(p)
            };
            fs::canonicalize(&p).unwrap_or(p)
        }
        None => git_dir.to_path_buf(),
    }
}

/// Walk up from `start` as git's `setup_git_directory_gently` does: `.git` directory, `.git`
/// file (`gitdir:`), or the directory itself being a git dir (bare).
pub fn discover(start: &Path) -> Option<Discovered> {
    let start = fs::canonicalize(start).ok()?;
    let mut dir: Option<&Path> = Some(&start);
    while let Some(d) = dir {
        let dotgit = d.join(".git");
        // One look at `.git` (followed, as git follows it) for both of its forms.
        let kind = fs::metadata(&dotgit).ok();
        if kind.as_ref().is_some_and(|m| m.is_dir()) && is_git_dir(&dotgit) {
            let git_dir = fs::canonicalize(&dotgit).ok()?;
            return Some(Discovered {
                common_dir: common_dir_of(&git_dir),
                git_dir,
                work_tree: Some(d.to_path_buf()),
            });
        }
        if kind.as_ref().is_some_and(|m| m.is_file()) {
            if let Some(git_dir) = read_gitfile(&dotgit) {
                if is_git_dir(&git_dir) {
                    return Some(Discovered {
                        common_dir: common_dir_of(&git_dir),
                        git_dir,
                        work_tree: Some(d.to_path_buf()),
                    });
                }
            }
        }
        if is_git_dir(d) {
            let git_dir = d.to_path_buf();
            return Some(Discovered {
                common_dir: common_dir_of(&git_dir),
                git_dir,
                work_tree: None,
            });
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read as git reads them: a space at the end of a `gitdir:` or `commondir` line is part
    /// of the path (a trimmed path named another, clean, repository than the one git used),
    /// `gitdir:` needs its space, and a `HEAD` symlink makes a git dir.
    #[test]
    fn gitfiles_commondir_and_head_are_read_as_git_reads_them() {
        let scratch = tempfile::tempdir().unwrap();
        let d = scratch.path();
        for g in ["gd", "gd "] {
            fs::create_dir_all(d.join(g).join("objects")).unwrap();
            fs::create_dir_all(d.join(g).join("refs")).unwrap();
        }
        std::os::unix::fs::symlink("refs/heads/unborn", d.join("gd /HEAD")).unwrap();
        fs::write(d.join("gd/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(is_git_dir(&d.join("gd ")), "a HEAD symlink");
        let gitfile = d.join("dotgit");
        fs::write(&gitfile, format!("gitdir: {} \r\n", d.join("gd").display())).unwrap();
        assert_eq!(read_gitfile(&gitfile), fs::canonicalize(d.join("gd ")).ok());
        fs::write(&gitfile, format!("gitdir:{}\n", d.join("gd").display())).unwrap();
        assert_eq!(read_gitfile(&gitfile), None, "gitdir: needs its space");
        fs::write(d.join("gd/commondir"), "../gd \n").unwrap();
        assert_eq!(
            common_dir_of(&d.join("gd")),
            fs::canonicalize(d.join("gd ")).unwrap()
        );
    }
}
