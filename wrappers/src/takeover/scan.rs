//! Finding every repository of a workspace, at any depth, bare or not: one walk of its
//! directories (`d_type`, no `stat` per file, never into a link), which also finds the `.git`
//! files and links (redirections) and the executable caches git does not show.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::control::is_executable_cache;
use super::nofollow;

/// A git dir found, with its common dir (structurally: a linked worktree's is the repository
/// whose `worktrees/` holds it; any other git dir is its own, a `commondir` file in it being a
/// redirection judged as such) and the directory git runs its hooks in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitDir {
    pub(crate) git_dir: PathBuf,
    pub(crate) common_dir: PathBuf,
    pub(crate) work_tree: Option<PathBuf>,
}

#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) git_dirs: Vec<GitDir>,
    /// `.git` entries that are files (`gitdir:`) or links.
    pub(crate) dotgits: Vec<PathBuf>,
    pub(crate) caches: Vec<PathBuf>,
}

/// The deepest directory the walk enters.
const MAX_DEPTH: usize = 128;

impl Found {
    fn add(&mut self, g: GitDir) {
        if !self.git_dirs.iter().any(|x| x.git_dir == g.git_dir) {
            self.git_dirs.push(g);
        }
    }
}

/// git's `is_git_directory`, structurally: `HEAD` (a file or a link), `objects` and `refs`.
fn looks_like_git_dir(names: &[(PathBuf, std::fs::FileType)]) -> bool {
    let has = |n: &str, dir: bool| {
        names.iter().any(|(p, t)| {
            p.file_name().is_some_and(|f| f == n)
                && if dir {
                    t.is_dir()
                } else {
                    t.is_file() || t.is_symlink()
                }
        })
    };
    has("HEAD", false) && has("objects", true) && has("refs", true)
}

/// [`looks_like_git_dir`] by entry names.
fn looks_like_git_dir_names(names: &[(std::ffi::OsString, std::fs::FileType)]) -> bool {
    let has = |n: &str, dir: bool| {
        names.iter().any(|(f, t)| {
            f == n
                && if dir {
                    t.is_dir()
                } else {
                    t.is_file() || t.is_symlink()
                }
        })
    };
    has("HEAD", false) && has("objects", true) && has("refs", true)
}

/// Every repository in `workspace` (and the one it is in), with the git dirs kept in each
/// (`modules/<name>`, where a name may hold `/`, and `worktrees/<id>`); the directories of
/// `skip` are not entered (a root that holds the workspace: walked as a root of its own).
pub(crate) fn scan(workspace: &Path, skip: &[PathBuf]) -> Found {
    let mut found = Found::default();
    if let Some(d) = crate::git::repo::discover(workspace) {
        if !d.git_dir.starts_with(workspace) {
            found.add(GitDir {
                git_dir: d.git_dir.clone(),
                common_dir: d.common_dir,
                work_tree: d.work_tree,
            });
        }
    }
    let mut dirs = vec![(workspace.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = dirs.pop() {
        // Entry names first, paths only for what is looked at again: most are plain files.
        let Some(entries) = nofollow::entries(&dir) else {
            continue;
        };
        if looks_like_git_dir_names(&entries) {
            found.add(GitDir {
                git_dir: dir.clone(),
                common_dir: dir.clone(),
                work_tree: None,
            });
            kept_git_dirs(&dir, &mut found);
            continue;
        }
        for (name, t) in entries {
            if name == ".git" {
                let p = dir.join(&name);
                if t.is_dir() {
                    let sub = nofollow::list(&p);
                    if looks_like_git_dir(&sub) {
                        found.add(GitDir {
                            git_dir: p.clone(),
                            common_dir: p.clone(),
                            work_tree: Some(dir.clone()),
                        });
                        kept_git_dirs(&p, &mut found);
                    }
                } else {
                    found.dotgits.push(p);
                }
            } else if t.is_dir() {
                let p = dir.join(&name);
                if depth < MAX_DEPTH && !skip.contains(&p) {
                    dirs.push((p, depth + 1));
                }
            } else if t.is_file() && is_executable_cache(name.as_bytes()) {
                found.caches.push(dir.join(&name));
            }
        }
    }
    found
}

/// The git dirs a repository keeps inside its own: submodules' and linked worktrees'.
fn kept_git_dirs(common: &Path, found: &mut Found) {
    for (dir, linked) in [("modules", false), ("worktrees", true)] {
        let mut stack = vec![(common.join(dir), 0usize)];
        while let Some((d, depth)) = stack.pop() {
            for (g, t) in nofollow::list(&d) {
                if !t.is_dir() {
                    continue;
                }
                let names = nofollow::list(&g);
                let head = names.iter().any(|(p, t)| {
                    p.file_name().is_some_and(|f| f == "HEAD") && (t.is_file() || t.is_symlink())
                });
                if linked && head {
                    found.add(GitDir {
                        git_dir: g,
                        common_dir: common.to_path_buf(),
                        work_tree: None,
                    });
                } else if head && looks_like_git_dir(&names) {
                    found.add(GitDir {
                        git_dir: g.clone(),
                        common_dir: g.clone(),
                        work_tree: None,
                    });
                    kept_git_dirs(&g, found);
                } else if !linked && depth < 8 {
                    stack.push((g, depth + 1));
                }
            }
        }
    }
}
