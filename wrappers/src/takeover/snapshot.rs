//! One git dir's control files ([`super::control`]'s list), recorded at session start and
//! judged at its end: what makes git run a program or reach another repository is as
//! recorded, or moved into `<common dir>/execguard-quarantine/<stamp>/` and the recorded
//! version put back.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::control::{
    foreign_strategies, names_local_repository, resolve_local, runs_command_unwrapped,
    todo_exec_lines,
};
use super::nofollow;
use super::Quarantined;
use crate::git::config::ConfigEntry;
use crate::git::files::{parse_config_file, FileConfig};

/// How a control file is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Any change: git runs it.
    Hook,
    /// A command-running key, or a local URL leading out of the hand-back's reach, added.
    Config,
    /// Any change: a redirection (`commondir`, alternates) or a remote's URL file, attributes.
    Exact,
    /// An `exec` line added to a todo list.
    Todo,
    /// A merge strategy that is not git's own.
    Strategy,
}

/// One recorded control file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    pub(crate) bytes: Vec<u8>,
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// The control files of one git dir at session start (for a linked worktree's or a
/// submodule's, the files of its own; the common dir's are its main git dir's record).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) git_dir: PathBuf,
    pub(crate) common_dir: PathBuf,
    /// The directory git runs hooks in and resolves relative paths from.
    pub(crate) work_tree: Option<PathBuf>,
    /// The git dir's device and inode when recorded: another directory put in its place was
    /// not recorded at all.
    pub(crate) identity: Option<(u64, u64)>,
    pub(crate) files: BTreeMap<PathBuf, (Kind, Option<Recorded>)>,
}

/// The largest control file (a hook, a config) read whole: git's own are a few KiB.
const CONTROL_MAX: u64 = 16 << 20;

/// How [`control_bytes`]'s stand-in for a file it cannot read starts (no text file does).
const UNREADABLE: &str = "\0execguard: unreadable ";

/// The bytes of the control file `p` (`m`: its `lstat`), or, when it cannot be read whole
/// (not readable, larger than [`CONTROL_MAX`], a link on the way, or no longer a regular file:
/// a FIFO put there never blocks), a stand-in naming its identity: compared with what was
/// recorded it differs whenever the file was replaced or changed.
fn control_bytes(p: &Path, m: &fs::Metadata) -> Vec<u8> {
    nofollow::read(p, CONTROL_MAX)
        .map(|(b, _)| b)
        .unwrap_or_else(|_| {
            format!(
                "{UNREADABLE}{}:{} {} bytes, changed {}.{}",
                m.dev(),
                m.ino(),
                m.len(),
                m.ctime(),
                m.ctime_nsec()
            )
            .into_bytes()
        })
}

/// A control file as it is now: `None` when absent; a link or anything but a regular file is
/// recorded by what it is (a link by its target), so that replacing it is a change.
fn read_now(p: &Path) -> Option<Recorded> {
    let m = nofollow::lstat(p).ok()?;
    let bytes = if m.is_file() {
        control_bytes(p, &m)
    } else if m.file_type().is_symlink() {
        let mut b = b"\0execguard: link to ".to_vec();
        b.extend(
            fs::read_link(p)
                .unwrap_or_default()
                .as_os_str()
                .as_encoded_bytes(),
        );
        b
    } else {
        format!("\0execguard: not a file, mode {:o}", m.mode()).into_bytes()
    };
    Some(Recorded {
        bytes,
        mode: m.mode() & 0o7777,
        uid: m.uid(),
        gid: m.gid(),
    })
}

/// The config files of a git dir as git reads them, with every file they include.
fn config_files(git_dir: &Path, common_dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let reader = FileConfig {
        home: home.map(Path::to_path_buf),
        ..FileConfig::default()
    };
    let mut files = vec![git_dir.join("config.worktree")];
    if git_dir == common_dir {
        files.insert(0, common_dir.join("config"));
    }
    let mut i = 0;
    while i < files.len() && files.len() < 64 {
        let mut entries = Vec::new();
        if nofollow::lstat(&files[i]).is_ok_and(|m| m.is_file()) {
            let _ = reader.read_file(&files[i], &mut entries);
        }
        for e in entries {
            let Some(origin) = e.origin.as_deref() else {
                continue;
            };
            let p = PathBuf::from(origin);
            if !files.contains(&p) {
                files.push(p);
            }
        }
        i += 1;
    }
    files
}

/// The `core.hooksPath` directory a git dir's config names, if any (relative to the work
/// tree, as git runs hooks there; `~/` from `home`).
fn hooks_path(
    git_dir: &Path,
    common_dir: &Path,
    work_tree: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    let mut value = None;
    for f in config_files(git_dir, common_dir, home) {
        let Ok((bytes, _)) = nofollow::read(&f, CONTROL_MAX) else {
            continue;
        };
        for e in parse_config_file(&bytes).unwrap_or_default() {
            if e.key.eq_ignore_ascii_case("core.hookspath") {
                value = e.value;
            }
        }
    }
    let v = value?;
    Some(resolve_local(&v, work_tree.unwrap_or(git_dir), home))
}

/// Every control file of the git dir, as git would read it now, with how each is judged.
pub(crate) fn control_files(
    git_dir: &Path,
    common_dir: &Path,
    work_tree: Option<&Path>,
    home: Option<&Path>,
) -> Vec<(PathBuf, Kind)> {
    let mut out: Vec<(PathBuf, Kind)> = Vec::new();
    let main = git_dir == common_dir;
    if main {
        let mut hook_dirs = vec![common_dir.join("hooks")];
        hook_dirs.extend(hooks_path(git_dir, common_dir, work_tree, home));
        for dir in hook_dirs {
            for (p, t) in nofollow::list(&dir) {
                // git never runs a `.sample` (what `git init` puts there), nor a directory.
                if t.is_dir() || p.extension().is_some_and(|e| e == "sample") {
                    continue;
                }
                out.push((p, Kind::Hook));
            }
        }
        for f in [
            "info/attributes",
            "objects/info/alternates",
            "objects/info/http-alternates",
            "commondir",
        ] {
            out.push((common_dir.join(f), Kind::Exact));
        }
        for d in ["remotes", "branches"] {
            for (p, t) in nofollow::list(&common_dir.join(d)) {
                if !t.is_dir() {
                    out.push((p, Kind::Exact));
                }
            }
        }
    } else {
        out.push((git_dir.join("commondir"), Kind::Exact));
    }
    for f in config_files(git_dir, common_dir, home) {
        out.push((f, Kind::Config));
    }
    for f in ["rebase-merge/git-rebase-todo", "sequencer/todo"] {
        out.push((git_dir.join(f), Kind::Todo));
    }
    for f in ["rebase-merge/strategy", "sequencer/opts"] {
        out.push((git_dir.join(f), Kind::Strategy));
    }
    out
}

fn command_keys(bytes: &[u8]) -> Vec<ConfigEntry> {
    match parse_config_file(bytes) {
        Ok(entries) => entries
            .into_iter()
            .filter(|e| runs_command_unwrapped(&e.key, e.value.as_deref()))
            .collect(),
        // git would refuse a broken file too; keep it out of the operator's way.
        Err(_) => vec![ConfigEntry::new("config.unparsable", None)],
    }
}

/// Where the hand-back reaches: a local repository inside it is handed back itself.
pub(crate) struct Reach<'a> {
    pub(crate) workspace: &'a Path,
    pub(crate) home: Option<&'a Path>,
    /// When the session started (the kernel's coarse clock): a repository outside the
    /// workspace with a git dir or hook changed since was made or changed by the session.
    pub(crate) started: (i64, i64),
}

/// Was the repository at `p` (a work tree or a bare git dir) made or changed since `started`:
/// its git dir, or its hooks directory or a hook in it? A path that is no directory the
/// operator can see counts too: it may be one the session made where only it sees it (its
/// home layer, which may be handed back later).
fn changed_since(p: &Path, started: (i64, i64)) -> bool {
    if !nofollow::is_dir(p) {
        return true;
    }
    let git_dir = if nofollow::is_dir(&p.join(".git")) {
        p.join(".git")
    } else {
        p.to_path_buf()
    };
    let hooks = git_dir.join("hooks");
    let since = |q: &Path| nofollow::lstat(q).is_ok_and(|m| (m.ctime(), m.ctime_nsec()) >= started);
    since(&git_dir) || since(&hooks) || nofollow::list(&hooks).iter().any(|(h, _)| since(h))
}

impl Snapshot {
    pub(crate) fn record_git_dir(
        git_dir: PathBuf,
        common_dir: PathBuf,
        work_tree: Option<PathBuf>,
        home: Option<&Path>,
    ) -> Snapshot {
        let mut files = BTreeMap::new();
        for (p, kind) in control_files(&git_dir, &common_dir, work_tree.as_deref(), home) {
            files.insert(p.clone(), (kind, read_now(&p)));
        }
        Snapshot {
            identity: nofollow::identity(&git_dir),
            git_dir,
            common_dir,
            work_tree,
            files,
        }
    }

    /// The same git dir with nothing recorded: one the session made (or put in place of a
    /// recorded one), all of whose control files are the session's.
    pub(crate) fn unrecorded(
        git_dir: PathBuf,
        common_dir: PathBuf,
        work_tree: Option<PathBuf>,
    ) -> Snapshot {
        Snapshot {
            identity: None,
            git_dir,
            common_dir,
            work_tree,
            files: BTreeMap::new(),
        }
    }

    /// This record for the same git dir found elsewhere (the session moved it): every path
    /// under the old git dir is taken to the new one.
    pub(crate) fn relocated(&self, to: &super::scan::GitDir) -> Snapshot {
        let move_path = |p: &Path| match p.strip_prefix(&self.git_dir) {
            Ok(rest) => to.git_dir.join(rest),
            Err(_) => p.to_path_buf(),
        };
        Snapshot {
            git_dir: to.git_dir.clone(),
            common_dir: move_path(&self.common_dir),
            work_tree: to.work_tree.clone(),
            identity: self.identity,
            files: self
                .files
                .iter()
                .map(|(p, v)| (move_path(p), v.clone()))
                .collect(),
        }
    }

    /// The local repositories this record's config names (recorded with it: their hooks run
    /// when the operator pushes there).
    pub(crate) fn named_repositories(&self, home: Option<&Path>) -> Vec<PathBuf> {
        let base = self.work_tree.as_deref().unwrap_or(&self.git_dir);
        let mut out = Vec::new();
        for (p, (kind, r)) in &self.files {
            let (Kind::Config, Some(r)) = (kind, r) else {
                continue;
            };
            let _ = p;
            for e in parse_config_file(&r.bytes).unwrap_or_default() {
                if let Some(path) = names_local_repository(&e.key, e.value.as_deref()) {
                    out.push(resolve_local(&path, base, home));
                }
            }
        }
        out
    }

    /// Quarantine what the session added or changed, restoring the recorded versions.
    /// `stamp` names the quarantine directory (e.g. the session's start time and pid).
    pub fn quarantine(&self, stamp: &str, home: Option<&Path>) -> io::Result<Vec<Quarantined>> {
        let reach = Reach {
            workspace: Path::new("/"),
            home,
            started: (i64::MAX, 0),
        };
        self.hand_back(stamp, &reach)
    }

    pub(crate) fn hand_back(&self, stamp: &str, reach: &Reach<'_>) -> io::Result<Vec<Quarantined>> {
        // A git dir replaced by a link (or reached through one) is not touched at all.
        for d in [&self.common_dir, &self.git_dir] {
            if !nofollow::is_dir(d) {
                return Err(io::Error::other(format!(
                    "{} is no longer a directory reached with no link on the way (the session replaced it)",
                    d.display()
                )));
            }
        }
        let home = reach.home;
        let into = std::cell::OnceCell::new();
        let mut out = Vec::new();
        let save = |p: &Path,
                    why: String,
                    recorded: Option<&Recorded>,
                    out: &mut Vec<Quarantined>|
         -> io::Result<()> {
            let dir = match into.get() {
                Some(d) => d,
                None => {
                    let d = fresh_quarantine(&self.common_dir, stamp)?;
                    into.get_or_init(|| d)
                }
            };
            // One file that cannot be moved (a link on the way) leaves the others to do.
            match move_aside(&self.common_dir, dir, p, why.clone(), recorded) {
                Ok(q) => out.push(q),
                Err(e) => out.push(Quarantined {
                    path: p.to_path_buf(),
                    saved_as: None,
                    why: format!("{why}; not moved ({e}): inspect it"),
                    restored: false,
                }),
            }
            Ok(())
        };
        // A hooks directory replaced by something else first: its files are then looked at in
        // the directory made anew.
        let hooks_dir = self.common_dir.join("hooks");
        if self.git_dir == self.common_dir && nofollow::lstat(&hooks_dir).is_ok_and(|m| !m.is_dir())
        {
            save(
                &hooks_dir,
                "the hooks directory was replaced".into(),
                None,
                &mut out,
            )?;
            let _ = nofollow::mkdir(&hooks_dir, 0o755);
        }
        let mut files: Vec<(PathBuf, Kind)> = self
            .files
            .iter()
            .map(|(p, (k, _))| (p.clone(), *k))
            .collect();
        for (p, k) in control_files(
            &self.git_dir,
            &self.common_dir,
            self.work_tree.as_deref(),
            home,
        ) {
            if !files.iter().any(|(q, _)| *q == p) {
                files.push((p, k));
            }
        }
        for (p, kind) in files {
            let recorded = self.files.get(&p).and_then(|(_, r)| r.clone());
            let now = read_now(&p);
            let why = match judge(kind, &p, recorded.as_ref(), now.as_ref(), self, reach) {
                Some(why) => why,
                None => continue,
            };
            if now.is_none() {
                // Deleted: the recorded version comes back.
                let Some(r) = &recorded else { continue };
                let restored = restore(&p, r);
                out.push(Quarantined {
                    path: p.clone(),
                    saved_as: None,
                    why: match &restored {
                        Ok(()) => why,
                        Err(e) => format!("{why}; not restored ({e})"),
                    },
                    restored: restored.is_ok(),
                });
                continue;
            }
            if kind == Kind::Config && recorded.is_none() && !self.is_inside(&p) {
                // A file outside the repository that a new include names: the include is
                // quarantined with the repository's config, and the file is left where it
                // is (the supervisor may be root: it must not move a file of someone else's
                // that the session merely named).
                out.push(Quarantined {
                    path: p.clone(),
                    saved_as: None,
                    why: format!("{why} (outside the repository: left in place, inspect it)"),
                    restored: false,
                });
                continue;
            }
            save(&p, why, recorded.as_ref(), &mut out)?;
        }
        Ok(out)
    }

    /// Does `p` lie in this repository's git dirs (`.git/../../x` is not in `.git`)?
    fn is_inside(&self, p: &Path) -> bool {
        let real = p
            .parent()
            .and_then(|d| fs::canonicalize(d).ok())
            .unwrap_or_default();
        real.starts_with(&self.common_dir) || real.starts_with(&self.git_dir)
    }
}

/// Why the control file `p` (as `recorded`, and `now`) is handed back, or `None` when it
/// stays.
fn judge(
    kind: Kind,
    p: &Path,
    recorded: Option<&Recorded>,
    now: Option<&Recorded>,
    snapshot: &Snapshot,
    reach: &Reach<'_>,
) -> Option<String> {
    if recorded == now {
        return None;
    }
    let what = match (recorded, now) {
        (None, _) => "added",
        (Some(_), None) => "deleted",
        _ => "changed",
    };
    let Some(n) = now else {
        // Deleted: a hook or a redirection comes back; a config, todo or strategy file gone
        // runs nothing.
        return matches!(kind, Kind::Hook | Kind::Exact)
            .then(|| format!("{} {what} during the session", label(kind)));
    };
    let unreadable = n.bytes.starts_with(UNREADABLE.as_bytes());
    match kind {
        Kind::Hook => Some(format!("hook {what} during the session")),
        Kind::Exact => {
            // A linked worktree's own `commondir`, made with it, naming the repository it
            // belongs to, leads nowhere new.
            if recorded.is_none()
                && p.file_name().is_some_and(|n| n == "commondir")
                && snapshot.git_dir != snapshot.common_dir
                && crate::git::repo::common_dir_of(&snapshot.git_dir) == snapshot.common_dir
            {
                return None;
            }
            Some(format!("{} {what} during the session", label(kind)))
        }
        _ if unreadable => Some(format!("{} unreadable or larger than 16 MiB", label(kind))),
        Kind::Config => {
            let before = recorded.map(|r| command_keys(&r.bytes)).unwrap_or_default();
            let mut added: Vec<String> = command_keys(&n.bytes)
                .into_iter()
                .filter(|e| !before.contains(e))
                .map(|e| e.key)
                .collect();
            let before_urls = recorded
                .map(|r| parse_config_file(&r.bytes).unwrap_or_default())
                .unwrap_or_default();
            let base = snapshot.work_tree.as_deref().unwrap_or(&snapshot.git_dir);
            for e in parse_config_file(&n.bytes).unwrap_or_default() {
                let Some(path) = names_local_repository(&e.key, e.value.as_deref()) else {
                    continue;
                };
                if before_urls.contains(&e) {
                    continue;
                }
                // A repository inside the workspace is handed back itself; one outside it that
                // the session made or changed (a bare repository in a cache directory, with a
                // `pre-receive` hook) is not the operator's to push to. Fetching runs no
                // program in the repository fetched from (githooks(5): only receive-pack runs
                // hooks), so a submodule's URL stays.
                if e.key.to_ascii_lowercase().starts_with("submodule.") {
                    continue;
                }
                let target = resolve_local(&path, base, reach.home);
                if !target.starts_with(reach.workspace) && changed_since(&target, reach.started) {
                    added.push(format!("{} = {} (a local repository outside the workspace, made or changed during the session, or not there)", e.key, target.display()));
                }
            }
            (!added.is_empty()).then(|| {
                format!(
                    "command-running or redirecting config added: {}",
                    added.join(", ")
                )
            })
        }
        Kind::Todo => {
            let before = recorded
                .map(|r| todo_exec_lines(&r.bytes))
                .unwrap_or_default();
            let added: Vec<String> = todo_exec_lines(&n.bytes)
                .into_iter()
                .filter(|l| !before.contains(l))
                .collect();
            (!added.is_empty()).then(|| format!("todo list exec line added: {}", added.join("; ")))
        }
        Kind::Strategy => {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let foreign = foreign_strategies(name, &n.bytes);
            (!foreign.is_empty()).then(|| {
                format!(
                    "a merge strategy that is not git's own (runs git-merge-<name> from PATH): {}",
                    foreign.join(", ")
                )
            })
        }
    }
}

fn label(kind: Kind) -> &'static str {
    match kind {
        Kind::Hook => "hook",
        Kind::Config => "config",
        Kind::Exact => "redirection or remote file",
        Kind::Todo => "todo list",
        Kind::Strategy => "sequencer strategy",
    }
}

/// Writes the recorded version back, as a new file.
fn restore(p: &Path, r: &Recorded) -> io::Result<()> {
    if r.bytes.starts_with(b"\0execguard: ") {
        return Err(io::Error::other(
            "it was no readable regular file when recorded",
        ));
    }
    nofollow::create(p, &r.bytes, r.mode, (r.uid, r.gid))
}

/// A new directory `<common dir>/execguard-quarantine/<stamp>[-N]`, made by this process: a
/// link the session left under either name is never followed (the session could predict the
/// stamp and point it at a directory of the operator's, into which its files would be
/// renamed). `execguard-quarantine` itself, when a link or a file, is removed first.
pub(crate) fn fresh_quarantine(common_dir: &Path, stamp: &str) -> io::Result<PathBuf> {
    fresh_quarantine_named(common_dir, "execguard-quarantine", stamp)
}

/// [`fresh_quarantine`] under another name.
pub(crate) fn fresh_quarantine_named(base: &Path, top: &str, stamp: &str) -> io::Result<PathBuf> {
    let top = base.join(top);
    match nofollow::lstat(&top) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            nofollow::remove_file(&top)?;
            nofollow::mkdir(&top, 0o700)?;
        }
        Err(_) => nofollow::mkdir(&top, 0o700)?,
    }
    for n in 0..100 {
        let dir = match n {
            0 => top.join(stamp),
            n => top.join(format!("{stamp}-{n}")),
        };
        match nofollow::mkdir(&dir, 0o700) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{}: 100 names taken",
        top.join(stamp).display()
    )))
}

/// Move the session's version of `p` into `into` (rename: a symlink moves as it is, never
/// followed) and put the recorded version back, if any.
pub(crate) fn move_aside(
    base: &Path,
    into: &Path,
    p: &Path,
    why: String,
    recorded: Option<&Recorded>,
) -> io::Result<Quarantined> {
    let rel = p.strip_prefix(base).unwrap_or(p);
    let name = rel
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', "__");
    let saved = into.join(&name);
    nofollow::rename(p, &saved)?;
    nofollow::keep_unrunnable(&saved);
    let restored = recorded.map(|r| restore(p, r));
    Ok(Quarantined {
        path: p.to_path_buf(),
        saved_as: Some(saved),
        why: match &restored {
            Some(Err(e)) => format!("{why}; the recorded version not restored ({e})"),
            _ => why,
        },
        restored: matches!(restored, Some(Ok(()))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the supervisor writes or moves, it writes or moves where it was named: a link in
    /// the last place or on the way (made by another session while this one is quarantined)
    /// is refused, never followed, and `..` is walked as it is on disk.
    #[test]
    fn restore_and_move_aside_follow_no_link() {
        let scratch = tempfile::tempdir().unwrap();
        let d = scratch.path().canonicalize().unwrap();
        let (repo, elsewhere) = (d.join("repo"), d.join("elsewhere"));
        fs::create_dir_all(repo.join("hooks")).unwrap();
        fs::create_dir_all(&elsewhere).unwrap();
        let victim = elsewhere.join("exec-dirs");
        fs::write(&victim, "the record\n").unwrap();
        let r = Recorded {
            bytes: b"#!/bin/sh\n".to_vec(),
            mode: 0o755,
            uid: 0,
            gid: 0,
        };
        let hook = repo.join("hooks/pre-commit");
        std::os::unix::fs::symlink(&victim, &hook).unwrap();
        assert!(restore(&hook, &r).is_err(), "a link in the last place");
        std::os::unix::fs::symlink(&elsewhere, repo.join("linked")).unwrap();
        assert!(restore(&repo.join("linked/exec-dirs"), &r).is_err());
        let into = fresh_quarantine(&repo, "1-2").unwrap();
        let moved = move_aside(
            &repo,
            &into,
            &repo.join("linked/exec-dirs"),
            "x".into(),
            None,
        );
        assert!(moved.is_err(), "a link on the way");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "the record\n");
        // `..` is no link: the file is moved, and the recorded version written back anew.
        fs::remove_file(&hook).unwrap();
        fs::write(&hook, "planted").unwrap();
        let dotdot = repo.join("hooks/../hooks/pre-commit");
        let q = move_aside(&repo, &into, &dotdot, "x".into(), Some(&r)).unwrap();
        assert!(q.restored && q.saved_as.is_some_and(|s| s.starts_with(&into)));
        assert_eq!(fs::read(&hook).unwrap(), r.bytes);
    }
}
