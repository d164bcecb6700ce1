//! The exec dirs of a host session and the sides of its partition (docs/write-set.md):
//! `$HOME` joins the write set, the directories of programs inside it stay executable and
//! read-only, as the operator's record (`~/.config/execguard/exec-dirs`) names them.

use std::path::{Path, PathBuf};

/// The step of choosing or recording the exec dirs that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecDirError {
    #[error("workspace {}", workspace.display())]
    Workspace {
        workspace: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("home_untrusted: $HOME ({}) is not an absolute path; set HOME to the directory itself", home.display())]
    HomeRelative { home: PathBuf },
    #[error("home_untrusted: $HOME ({}) is reached through the link {}, which sessions can change; set HOME to the directory itself", home.display(), link.display())]
    HomeThroughLink { home: PathBuf, link: PathBuf },
    /// The record's directory cannot be resolved.
    #[error(transparent)]
    RecordPlace(std::io::Error),
    #[error("exec_dir_record_untrusted: {} is reached through a symlink (to {}); remove the link, execguard run makes the directory itself", dir.display(), target.display())]
    RecordThroughLink { dir: PathBuf, target: PathBuf },
    #[error("exec_dir_record_untrusted: the exec-dir record {} lies in the workspace {}, which the session writes; use a workspace that does not hold ~/.config", record.display(), workspace.display())]
    RecordInWorkspace { record: PathBuf, workspace: PathBuf },
    #[error("exec_dir_record_unreadable: {}: {error}; fix or remove it", record.display())]
    RecordUnreadable {
        record: PathBuf,
        error: std::io::Error,
    },
    #[error("the record has a directory")]
    RecordWithoutDirectory,
    #[error("cannot create {}", dir.display())]
    RecordDirectory {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}", record.display())]
    RecordUnwritable {
        record: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("exec_dir_invalid: {} is not an existing directory; name the directory of programs", dir.display())]
    NotADirectory { dir: PathBuf },
    #[error("exec_dir_outside_home: {} is not a directory inside {} (outside $HOME everything is executable and read-only to sessions already; $HOME itself and the record's directory cannot be exec dirs)", dir.display(), home.display())]
    OutsideHome { dir: PathBuf, home: PathBuf },
    #[error("exec_dirs_in_session: `execguard exec-dirs {what}` changes the operator's record, which sessions only read; run it in a shell outside execguard run")]
    InSession { what: &'static str },
    #[error("exec_dirs_too_many: {found} exec dirs found, a policy holds at most {}: drop some with --no-exec-dir", execguard_policy::policy::MAX_ROOTS)]
    TooMany { found: usize },
    #[error("exec_dir_invalid: --exec-dir {} is not an existing directory", dir.display())]
    ExplicitNotADirectory { dir: PathBuf },
    #[error("exec_dir_outside_write_set: --exec-dir {} is not inside the write set (a root itself, or outside it, where everything is executable and read-only already)", dir.display())]
    OutsideWriteSet { dir: PathBuf },
    #[error("exec_dir_holds_write_set: --exec-dir {} holds {}, which the session writes; name the directory of programs inside it instead", dir.display(), root.display())]
    HoldsWriteSet { dir: PathBuf, root: PathBuf },
}

type Result<T, E = ExecDirError> = std::result::Result<T, E>;

/// What a host session adds to the partition (docs/write-set.md): `$HOME` to the write set,
/// and the exec dirs, the directories inside it that the session runs programs from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostSides {
    pub mutable_roots: Vec<PathBuf>,
    pub exec_dirs: Vec<PathBuf>,
    /// The exec dirs found on `PATH`, `LD_LIBRARY_PATH` and among the toolchains, before the
    /// user's `--exec-dir`/`--no-exec-dir` (what a first run records).
    pub discovered: Vec<PathBuf>,
    /// Found, but not in the operator's record: written, never run.
    pub unrecorded: Vec<PathBuf>,
    /// Regular files the session inherits open for writing (a redirected `>log`, `3>out`):
    /// the session writes them, so they join the write set as files.
    pub inherited_files: Vec<PathBuf>,
}

/// The user's changes to the discovered exec dirs (`--exec-dir`, `--no-exec-dir`).
#[derive(Clone, Debug, Default)]
pub struct ExecDirChoice {
    pub add: Vec<PathBuf>,
    pub remove: Vec<PathBuf>,
    /// Write the operator's record of exec dirs when there is none (`execguard run` does;
    /// `check` and `policy default` only show what a run would use).
    pub record: bool,
    /// The session's home layer runs what it holds (a sealed `development` or `build`
    /// session with a home layer of its own): the notices say what such a session does with
    /// a directory the record does not name.
    pub home_runs_written: bool,
}

/// The toolchain directories under `$HOME` that hold programs a session runs.
pub const HOME_TOOLCHAINS: [&str; 6] = [
    ".cargo/bin",
    ".rustup",
    ".nvm",
    ".local/bin",
    ".local/pipx",
    ".pyenv",
];

/// The host's sides: `$HOME` (canonical) is in the write set; the exec dirs are every
/// directory on `PATH` and `LD_LIBRARY_PATH`, the toolchains of [`HOME_TOOLCHAINS`], and the
/// directories of the guard library and the wrappers, that exist and lie in `$HOME` but not
/// in the workspace (what a session wrote there must not become a program), then the user's
/// changes. An exec dir inside another one is dropped (the outer one covers it).
pub fn host_sides(workspace: &Path, choice: &ExecDirChoice) -> anyhow::Result<HostSides> {
    let mut sides = host_dirs(workspace, choice)?;
    sides.inherited_files = crate::inherited::inherited_writable_files()?;
    Ok(sides)
}

/// Refuses a `$HOME` reached through a link that lies where sessions write (`/tmp/h ->
/// /home/me`, or one in the workspace): a session could point it at a home of its own making,
/// with an exec-dir record of its choosing, for the next session. Each link on the way is
/// judged where it really is (`/home/me/../../tmp/h` is in `/tmp`).
fn check_home_path(workspace: &Path) -> Result<()> {
    let Some(given) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Ok(());
    };
    if !given.is_absolute() {
        return Err(ExecDirError::HomeRelative { home: given });
    }
    let mut at = PathBuf::new();
    for part in given.components() {
        at.push(part);
        if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        let (Some(dir), Some(name)) = (at.parent(), at.file_name()) else {
            continue;
        };
        // Where the link is now: asked afresh, not remembered.
        let place = dir
            .canonicalize()
            .unwrap_or_else(|_| dir.to_path_buf())
            .join(name);
        if place.starts_with(workspace) || in_builtin_root(&place) {
            return Err(ExecDirError::HomeThroughLink {
                home: given,
                link: place,
            });
        }
    }
    Ok(())
}

/// Does `path` lie in one of the roots every session writes (`/tmp`, `/var/tmp`, ...)?
pub(crate) fn in_builtin_root(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
        .iter()
        .any(|r| path.starts_with(std::ffi::OsStr::from_bytes(r)))
}

/// `$HOME`, canonical, when it names a directory other than `/`.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .and_then(|h| crate::paths::canonical(&h).ok())
        .filter(|h| h != Path::new("/") && h.is_dir())
}

fn host_dirs(workspace: &Path, choice: &ExecDirChoice) -> Result<HostSides> {
    let workspace =
        crate::paths::canonical(workspace).map_err(|source| ExecDirError::Workspace {
            workspace: workspace.to_path_buf(),
            source,
        })?;
    check_home_path(&workspace)?;
    let home = home();
    let mut candidates: Vec<PathBuf> = Vec::new();
    for var in ["PATH", "LD_LIBRARY_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            candidates.extend(std::env::split_paths(&v).filter(|p| p.is_absolute()));
        }
    }
    if let Some(home) = &home {
        candidates.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
    }
    if let Ok(lib) = crate::runtimes::guard_library() {
        candidates.extend(lib.parent().map(Path::to_path_buf));
    }
    for tool in crate::runtimes::TOOLS {
        if let Ok(w) = crate::runtimes::wrapper_binary(tool) {
            candidates.extend(w.parent().map(Path::to_path_buf));
        }
    }
    let Some(home) = home else {
        return sides_from(&workspace, None, &candidates, choice, None);
    };
    // Only the exec dirs the operator's record names: a toolchain directory that a session
    // created (`~/.local/bin`, say) must not become executable for the next session.
    let record = exec_dir_record(&home);
    check_record_place(&record, Some(&workspace))?;
    let recorded = read_exec_dir_record(&record)?;
    let mut sides = sides_from(
        &workspace,
        Some(&home),
        &candidates,
        choice,
        recorded.as_deref(),
    )?;
    match &recorded {
        None if !choice.record => {}
        None => {
            write_exec_dir_record(&record, &sides.discovered)?;
            // Said when there is something to say: a home with no toolchain records nothing.
            if !sides.discovered.is_empty() {
                eprintln!(
                    "execguard: recorded {} exec dir(s) in {}: later sessions run programs from those alone (outside a session, `execguard exec-dirs list|add|remove` changes them)",
                    sides.discovered.len(),
                    record.display()
                );
            }
        }
        Some(_) => {
            // Once per directory: a notice repeated at every start is one nobody reads.
            let mut noticed = read_noticed(&record);
            for dir in &sides.unrecorded {
                if noticed.contains(dir) {
                    continue;
                }
                eprintln!(
                    "{}",
                    unrecorded_notice(dir, &record, choice.home_runs_written)
                );
                noticed.push(dir.clone());
            }
            write_noticed(&record, &noticed);
        }
    }
    // The record itself is read-only to the session, like the exec dirs.
    if let Some(dir) = record.parent().filter(|d| d.is_dir()) {
        if !sides.exec_dirs.iter().any(|e| dir.starts_with(e)) {
            sides.exec_dirs.push(dir.to_path_buf());
        }
    }
    Ok(sides)
}

/// The once-only notice of a directory of programs in `$HOME` that `record` does not name:
/// what this session does with it (a strict session writes it and never runs it; one whose
/// home layer runs written programs runs it from the layer), what the other kind does, and
/// how the operator makes it an exec dir.
fn unrecorded_notice(dir: &Path, record: &Path, home_runs_written: bool) -> String {
    let here = if home_runs_written {
        "this session runs its programs from the workspace's home layer, where what the session writes there stays (strict sessions write it, never run it)"
    } else {
        "in this session it is written, never run (development sessions run it from the workspace's home layer)"
    };
    format!(
        "execguard: notice: {} holds programs but is not in {}: {here}; outside a session, `execguard exec-dirs add {}` makes it an exec dir, read-only in every session (said once)",
        dir.display(),
        record.display(),
        dir.display()
    )
}

/// Where the operator's exec dirs are recorded: `~/.config/execguard/exec-dirs`, one canonical
/// directory a line. Written by the first `execguard run` (outside any session) with what it
/// discovered, read-only inside every session.
pub fn exec_dir_record(home: &Path) -> PathBuf {
    home.join(".config/execguard/exec-dirs")
}

/// The recorded exec dirs; `None` when there is no record yet.
/// The record's directory becomes an exec dir (read-only in sessions): it must be that
/// directory itself, reached through no symlink (one planted before the first run would make
/// its target executable), and never inside the workspace.
fn check_record_place(record: &Path, workspace: Option<&Path>) -> Result<()> {
    let Some(dir) = record.parent() else {
        return Ok(());
    };
    // Check the part of the path that exists.
    let mut existing = dir.to_path_buf();
    while !existing.exists() {
        if !existing.pop() {
            return Ok(());
        }
    }
    // Asked afresh (not remembered): this check is that no link leads there now.
    let canonical = existing.canonicalize().map_err(ExecDirError::RecordPlace)?;
    if canonical != existing || std::fs::symlink_metadata(&existing).is_ok_and(|m| !m.is_dir()) {
        return Err(ExecDirError::RecordThroughLink {
            dir: existing,
            target: canonical,
        });
    }
    if let Some(workspace) = workspace.filter(|w| dir.starts_with(w)) {
        return Err(ExecDirError::RecordInWorkspace {
            record: record.to_path_buf(),
            workspace: workspace.to_path_buf(),
        });
    }
    Ok(())
}

/// The recorded exec dirs that are still the directory the record names; `None` when there
/// is no record yet. A line may carry the directory's identity (`PATH<TAB>DEV:INO:BIRTH`, as a
/// run writes it; older runs wrote `DEV:INO`): a directory of that name that is another one now
/// (removed, then made again, say by a session) does not count. A line without one (added by
/// hand) counts by its name.
fn read_exec_dir_record(record: &Path) -> Result<Option<Vec<PathBuf>>> {
    if std::fs::symlink_metadata(record).is_err() {
        return Ok(None);
    }
    let mut dirs = Vec::new();
    for (path, id) in record_lines(record)? {
        let now = std::fs::metadata(&path).ok().map(|m| dir_identity(&m));
        match (id, now) {
            (Some(id), Some(now)) if !same_identity(&id, &now) => eprintln!(
                "execguard: notice: {} is not the directory {} recorded (it was made again): in this session it is written, never run (outside a session, `execguard exec-dirs add {}` records it again)",
                path.display(),
                record.display(),
                path.display()
            ),
            _ => dirs.push(path),
        }
    }
    Ok(Some(dirs))
}

/// A directory's identity in the record: device and inode, and its birth time to the
/// nanosecond where the file system keeps one. The inode alone is not enough: ext4 gives a
/// directory made right after one was removed the same number (and the same birth second).
fn dir_identity(m: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    let id = format!("{}:{}", m.dev(), m.ino());
    match m
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
    {
        Some(birth) => format!("{id}:{}.{:09}", birth.as_secs(), birth.subsec_nanos()),
        None => id,
    }
}

/// Is the recorded identity `recorded` the one a directory has `now`? A record of an older run
/// (`DEV:INO`) or of a file system without birth times compares the parts it has.
fn same_identity(recorded: &str, now: &str) -> bool {
    let parts = recorded.split(':').count();
    let now: Vec<&str> = now.split(':').collect();
    parts <= now.len() && recorded == now[..parts].join(":")
}

/// The directories the "not in the record" notice was said for, beside the record
/// (`exec-dirs.noticed`, one a line): read-only in sessions, like the record.
fn noticed_file(record: &Path) -> PathBuf {
    record.with_file_name("exec-dirs.noticed")
}

fn read_noticed(record: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string(noticed_file(record))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Best effort: unwritten (a nested session, where the record is read-only), a notice is
/// only said again.
fn write_noticed(record: &Path, dirs: &[PathBuf]) {
    let mut text = String::new();
    for d in dirs {
        text.push_str(&d.to_string_lossy());
        text.push('\n');
    }
    if read_noticed(record) != dirs {
        let _ = std::fs::write(noticed_file(record), text);
    }
}

/// One directory of the operator's record, as `execguard exec-dirs list` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedDir {
    pub path: PathBuf,
    pub state: RecordedState,
}

/// Whether a recorded directory counts in the sessions that start now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordedState {
    /// The directory the record names, by its identity: an exec dir.
    Current,
    /// A line without an identity (added by hand): counts by its name.
    ByName,
    /// The name is another directory now (removed and made again): written, never run.
    MadeAgain,
    /// Nothing is there.
    Missing,
}

impl RecordedState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Current => "exec dir",
            Self::ByName => "exec dir (by name)",
            Self::MadeAgain => "made again: written, never run (add it again to record it)",
            Self::Missing => "missing",
        }
    }
}

/// The lines of the record: each path with its recorded identity, if any.
fn record_lines(record: &Path) -> Result<Vec<(PathBuf, Option<String>)>> {
    let text = match std::fs::read_to_string(record) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(ExecDirError::RecordUnreadable {
                record: record.to_path_buf(),
                error,
            })
        }
    };
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('\t') {
            Some((p, id)) => (PathBuf::from(p), Some(id.trim().to_string())),
            None => (PathBuf::from(l), None),
        })
        .collect())
}

/// The operator's record as it stands (`execguard exec-dirs list`).
pub fn recorded_dirs(home: &Path) -> Result<Vec<RecordedDir>> {
    Ok(record_lines(&exec_dir_record(home))?
        .into_iter()
        .map(|(path, id)| {
            let now = std::fs::metadata(&path).ok().map(|m| dir_identity(&m));
            let state = match (id, now) {
                (_, None) => RecordedState::Missing,
                (None, Some(_)) => RecordedState::ByName,
                (Some(id), Some(now)) if same_identity(&id, &now) => RecordedState::Current,
                (Some(_), Some(_)) => RecordedState::MadeAgain,
            };
            RecordedDir { path, state }
        })
        .collect())
}

/// Directories of programs in `$HOME` (on `PATH`, and the toolchains of
/// [`HOME_TOOLCHAINS`]) that the record does not name: what sessions write but never run.
pub fn unrecorded_dirs(home: &Path) -> Result<Vec<PathBuf>> {
    let recorded: Vec<PathBuf> = record_lines(&exec_dir_record(home))?
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let record_dir = exec_dir_record(home);
    let mut out: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(HOME_TOOLCHAINS.iter().map(|t| home.join(t)))
        .filter_map(|c| crate::paths::canonical(&c).ok())
        .filter(|c| {
            c.starts_with(home)
                && c != home
                && c.is_dir()
                && !record_dir.parent().is_some_and(|r| c.starts_with(r))
                && !recorded.iter().any(|r| c.starts_with(r))
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// `execguard exec-dirs add DIR`: records DIR (an existing directory inside `$HOME`, by its
/// canonical name and identity) as an exec dir of later sessions; a name recorded already is
/// recorded again with the identity it has now (a directory made again). Refused inside a
/// session: the record is the operator's.
pub fn add_recorded(home: &Path, dir: &Path) -> Result<PathBuf> {
    refuse_in_session("add")?;
    let record = exec_dir_record(home);
    check_record_place(&record, None)?;
    let c = crate::paths::canonical(dir)
        .ok()
        .filter(|c| c.is_dir())
        .ok_or_else(|| ExecDirError::NotADirectory {
            dir: dir.to_path_buf(),
        })?;
    let record_dir = record.parent().map(Path::to_path_buf);
    if !c.starts_with(home) || c == home || record_dir.as_ref().is_some_and(|r| c.starts_with(r)) {
        return Err(ExecDirError::OutsideHome {
            dir: c,
            home: home.to_path_buf(),
        });
    }
    let mut dirs: Vec<PathBuf> = record_lines(&record)?
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p != &c)
        .collect();
    dirs.push(c.clone());
    write_exec_dir_record(&record, &dirs)?;
    Ok(c)
}

/// `execguard exec-dirs remove DIR`: the record no longer names DIR (by the name given or its
/// canonical one). `Ok(false)`: it named neither.
pub fn remove_recorded(home: &Path, dir: &Path) -> Result<bool> {
    refuse_in_session("remove")?;
    let record = exec_dir_record(home);
    let canonical = crate::paths::canonical(dir).unwrap_or_else(|_| dir.to_path_buf());
    let lines = record_lines(&record)?;
    let kept: Vec<PathBuf> = lines
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| p != dir && p != &canonical)
        .collect();
    if kept.len() == lines.len() {
        return Ok(false);
    }
    write_exec_dir_record(&record, &kept)?;
    Ok(true)
}

/// The record changes only outside sessions: inside one it is read-only, and a session that
/// could name its own exec dirs would make what it writes run in the next.
fn refuse_in_session(what: &'static str) -> Result<()> {
    if std::env::var_os(execguard_load::POLICY_ENV).is_some()
        || std::path::Path::new(execguard_load::SYSTEM_POLICY).exists()
    {
        return Err(ExecDirError::InSession { what });
    }
    Ok(())
}

fn write_exec_dir_record(record: &Path, dirs: &[PathBuf]) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = record
        .parent()
        .ok_or(ExecDirError::RecordWithoutDirectory)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| ExecDirError::RecordDirectory {
            dir: dir.to_path_buf(),
            source,
        })?;
    let mut text = String::from(
        "# Directories inside $HOME that execguard sessions may run programs from (read-only\n\
         # inside a session). One canonical path a line, with the directory's identity after a\n\
         # tab (DEV:INO:BIRTH): the same name made again is not the recorded directory. Written by the\n\
         # first execguard run; a line added by hand may leave the identity out.\n",
    );
    for d in dirs {
        text.push_str(&d.to_string_lossy());
        if let Ok(m) = std::fs::metadata(d) {
            text.push('\t');
            text.push_str(&dir_identity(&m));
        }
        text.push('\n');
    }
    std::fs::write(record, text).map_err(|source| ExecDirError::RecordUnwritable {
        record: record.to_path_buf(),
        source,
    })
}

/// [`host_sides`] from its inputs: the canonical workspace and home, and the candidate
/// directories (unresolved).
/// `recorded`: the operator's record of exec dirs (`None`: no record yet, every discovered
/// directory counts); a discovered directory it does not name is left in the write set.
fn sides_from(
    workspace: &Path,
    home: Option<&Path>,
    candidates: &[PathBuf],
    choice: &ExecDirChoice,
    recorded: Option<&[PathBuf]>,
) -> Result<HostSides> {
    let mut sides = HostSides::default();
    sides.mutable_roots.extend(home.map(Path::to_path_buf));
    check_explicit(&choice.add, workspace, &sides.mutable_roots)?;
    // The record's own directory (and the shims kept there) is read-only anyway.
    let record_dir = home.map(exec_dir_record);
    let record_dir = record_dir.as_deref().and_then(Path::parent);
    let exec_dir_of_home = |c: &PathBuf| match home {
        Some(home) => {
            c.starts_with(home)
                && c != home
                // Neither inside the workspace nor holding it: the workspace is never
                // executable.
                && !c.starts_with(workspace)
                && !workspace.starts_with(c)
                && record_dir.is_none_or(|r| !c.starts_with(r))
                && c.is_dir()
        }
        None => false,
    };
    let mut found: Vec<PathBuf> = candidates
        .iter()
        .filter_map(|c| crate::paths::canonical(c).ok())
        .filter(exec_dir_of_home)
        .collect();
    found.sort();
    found.dedup();
    if let Some(recorded) = recorded {
        let (kept, unrecorded): (Vec<PathBuf>, Vec<PathBuf>) =
            found.into_iter().partition(|d| recorded.contains(d));
        found = kept;
        sides.unrecorded = unrecorded;
        // Every recorded directory stays read-only, on this session's PATH or not: left in
        // the write set here, what the session planted in it would run in the next session
        // that has it on PATH, and outside sessions.
        found.extend(
            recorded
                .iter()
                .filter_map(|d| crate::paths::canonical(d).ok())
                .filter(exec_dir_of_home),
        );
        found.sort();
        found.dedup();
    }
    sides.discovered = found.clone();
    found.extend(canonical_dirs(&choice.add)?);
    let removed: Vec<PathBuf> = choice
        .remove
        .iter()
        .map(|r| crate::paths::canonical(r).unwrap_or_else(|_| r.clone()))
        .collect();
    found.retain(|d| !removed.iter().any(|r| d.starts_with(r)));
    found.sort();
    found.dedup();
    let outer: Vec<PathBuf> = found.clone();
    found.retain(|d| !outer.iter().any(|o| o != d && d.starts_with(o)));
    if found.len() > execguard_policy::policy::MAX_ROOTS {
        return Err(ExecDirError::TooMany { found: found.len() });
    }
    sides.exec_dirs = found;
    Ok(sides)
}

fn canonical_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    dirs.iter()
        .map(|d| {
            crate::paths::canonical(d)
                .ok()
                .filter(|c| c.is_dir())
                .ok_or_else(|| ExecDirError::ExplicitNotADirectory { dir: d.clone() })
        })
        .collect()
}

/// An explicit exec dir must lie inside the write set (outside it, everything is on the
/// execute side already), be no root of it, and hold none (the workspace is never executable:
/// the exec dir's read-only mount and execute right would cover it).
fn check_explicit(add: &[PathBuf], workspace: &Path, host_roots: &[PathBuf]) -> Result<()> {
    for d in canonical_dirs(add)? {
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(d.as_os_str());
        let roots: Vec<&Path> = host_roots
            .iter()
            .map(PathBuf::as_path)
            .chain([workspace])
            .collect();
        let in_host = roots.iter().any(|r| d.starts_with(r) && d != *r);
        let in_builtin = execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
            .iter()
            .any(|r| execguard_policy::path::is_under(bytes, r) && bytes != *r);
        if !in_host && !in_builtin {
            return Err(ExecDirError::OutsideWriteSet { dir: d });
        }
        let held = roots
            .iter()
            .copied()
            .find(|r| r.starts_with(&d))
            .or_else(|| {
                execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
                    .iter()
                    .map(|r| {
                        Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(r))
                    })
                    .find(|r| r.starts_with(&d))
            });
        if let Some(root) = held {
            return Err(ExecDirError::HoldsWriteSet {
                dir: d.clone(),
                root: root.to_path_buf(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each refused choice of exec dirs is its own error, with its reason code first.
    #[test]
    fn each_refused_choice_has_its_error() {
        let d = crate::test_dirs::tmp("exec-dir-errors");
        let (ws, home) = (d.join("ws"), d.join("home"));
        let tools = home.join("tools");
        for dir in [&ws, &tools] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let link = d.join("config-link");
        std::os::unix::fs::symlink(&home, &link).unwrap();
        let roots = [home.clone()];
        let rows: [(Result<()>, &str); 5] = [
            (
                check_explicit(&[d.join("gone")], &ws, &roots),
                "exec_dir_invalid: --exec-dir ",
            ),
            (
                check_explicit(&[PathBuf::from("/usr")], &ws, &roots),
                "exec_dir_outside_write_set: --exec-dir /usr ",
            ),
            (
                check_explicit(std::slice::from_ref(&d), &ws, &roots),
                "exec_dir_holds_write_set: --exec-dir ",
            ),
            (
                check_record_place(&link.join("exec-dirs"), None),
                "exec_dir_record_untrusted: ",
            ),
            (
                check_record_place(&ws.join(".config/exec-dirs"), Some(&ws)),
                "exec_dir_record_untrusted: the exec-dir record ",
            ),
        ];
        for (n, (got, want)) in rows.into_iter().enumerate() {
            let e = got.expect_err(want);
            assert!(e.to_string().starts_with(want), "row {n}: {e}");
        }
    }

    /// The notice says what the session at hand does with the directory: a strict one never
    /// runs it, one whose home layer runs written programs does.
    #[test]
    fn the_unrecorded_notice_says_what_this_session_does() {
        let (dir, record) = (
            Path::new("/h/tools/bin"),
            Path::new("/h/.config/execguard/exec-dirs"),
        );
        let strict = unrecorded_notice(dir, record, false);
        let development = unrecorded_notice(dir, record, true);
        for n in [&strict, &development] {
            assert!(
                n.starts_with("execguard: notice: /h/tools/bin holds programs but is not in /h/.config/execguard/exec-dirs: "),
                "{n}"
            );
            assert!(n.contains("`execguard exec-dirs add /h/tools/bin`"), "{n}");
            assert!(n.ends_with("(said once)"), "{n}");
        }
        assert!(
            strict.contains(": in this session it is written, never run"),
            "{strict}"
        );
        assert!(
            development
                .contains(": this session runs its programs from the workspace's home layer"),
            "{development}"
        );
        assert!(
            !development.contains("in this session it is written, never run"),
            "{development}"
        );
    }

    /// A directory removed and made again is another one, though ext4 gives it the same
    /// inode number; a record of an older run (no birth time) compares device and inode.
    #[test]
    fn a_directory_made_again_is_not_the_recorded_one() {
        let t = crate::test_dirs::tmp("made-again");
        let dir = t.join("bin");
        std::fs::create_dir(&dir).unwrap();
        let recorded = dir_identity(&std::fs::metadata(&dir).unwrap());
        assert!(same_identity(&recorded, &recorded));
        std::fs::remove_dir(&dir).unwrap();
        std::fs::create_dir(&dir).unwrap();
        let now = dir_identity(&std::fs::metadata(&dir).unwrap());
        assert!(!same_identity(&recorded, &now), "{recorded} {now}");
        let rows = [
            ("1:2", "1:2:3.000000004", true),
            ("1:2", "1:3:3.000000004", false),
            ("1:2:3.000000004", "1:2:3.000000004", true),
            ("1:2:3.000000004", "1:2:3.000000005", false),
            ("1:2:3.000000004", "1:2", false),
            ("1:2:3", "1:2:3.000000004", false),
        ];
        for (recorded, now, same) in rows {
            assert_eq!(same_identity(recorded, now), same, "{recorded} {now}");
        }
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// The discovery rules, one row each: a candidate becomes an exec dir when it exists and
    /// lies in `$HOME` (not `$HOME` itself) and not in the workspace; inner ones fold into
    /// outer ones; the user's additions must lie in the write set; removals win.
    #[test]
    fn exec_dirs_are_discovered_by_the_contract() {
        // Outside the built-in roots (/tmp would put `opt/bin` in the write set), and neither
        // in the source tree nor in the real `$HOME`: the cargo target directory's `tmp`
        // (this test binary is `<target>/<profile>/deps/<name>`).
        let builtin = |p: &Path| {
            execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
                .iter()
                .any(|r| p.starts_with(std::str::from_utf8(r).unwrap()))
        };
        let exe = std::env::current_exe().unwrap();
        let base = exe.ancestors().nth(3).unwrap().join("tmp");
        std::fs::create_dir_all(&base).unwrap();
        assert!(
            !builtin(&base.canonicalize().unwrap()),
            "the cargo target directory {} lies in a built-in mutable root: use one elsewhere",
            base.display()
        );
        let t = tempfile::tempdir_in(base).unwrap();
        let root = t.path().canonicalize().unwrap();
        let home = root.join("home");
        let ws = home.join("src/app");
        for d in [
            ".cargo/bin",
            ".pyenv/shims",
            "src/app/node_modules/.bin",
            "tools/bin",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::create_dir_all(root.join("opt/bin")).unwrap();
        std::os::unix::fs::symlink(home.join("tools/bin"), home.join("bin-link")).unwrap();
        let c = |p: &str| root.join(p);
        /// Candidates, `--exec-dir`, `--no-exec-dir`, and the exec dirs (or the refusal's code).
        type Row<'a> = (
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            Result<&'a [&'a str], &'a str>,
        );
        let rows: &[Row] = &[
            // A directory holding the workspace would make the workspace executable.
            (
                &["home/src", "home/.cargo/bin"],
                &[],
                &[],
                Ok(&["home/.cargo/bin"]),
            ),
            (
                &["home/.cargo/bin", "opt/bin", "home"],
                &[],
                &[],
                Ok(&["home/.cargo/bin"]),
            ),
            (
                &["home/.pyenv", "home/.pyenv/shims"],
                &[],
                &[],
                Ok(&["home/.pyenv"]),
            ),
            (&["home/src/app/node_modules/.bin"], &[], &[], Ok(&[])),
            (&["home/missing/bin"], &[], &[], Ok(&[])),
            (&["home/bin-link"], &[], &[], Ok(&["home/tools/bin"])),
            (&["home/.cargo/bin"], &[], &["home/.cargo"], Ok(&[])),
            (
                &[],
                &["home/src/app/node_modules/.bin"],
                &[],
                Ok(&["home/src/app/node_modules/.bin"]),
            ),
            (&[], &["home/src"], &[], Err("exec_dir_holds_write_set")),
            (&[], &["opt/bin"], &[], Err("exec_dir_outside_write_set")),
            (&[], &["home"], &[], Err("exec_dir_outside_write_set")),
            (&[], &["home/nope"], &[], Err("exec_dir_invalid")),
        ];
        for (cands, add, remove, want) in rows {
            let choice = ExecDirChoice {
                add: add.iter().map(|p| c(p)).collect(),
                remove: remove.iter().map(|p| c(p)).collect(),
                record: false,
                home_runs_written: false,
            };
            let cands: Vec<PathBuf> = cands.iter().map(|p| c(p)).collect();
            let got = sides_from(&ws, Some(&home), &cands, &choice, None);
            match (want, got) {
                (Ok(want), Ok(got)) => {
                    let want: Vec<PathBuf> = want.iter().map(|p| c(p)).collect();
                    assert_eq!(got.exec_dirs, want, "{cands:?} {add:?} {remove:?}");
                    assert_eq!(got.mutable_roots, vec![home.clone()]);
                }
                (Err(code), Err(e)) => {
                    assert!(e.to_string().starts_with(code), "{e}");
                }
                (want, got) => panic!("{cands:?} {add:?}: want {want:?}, got {got:?}"),
            }
        }
        // With a record, only what it names: a toolchain directory a session created is found
        // but stays in the write set.
        let cands = [c("home/.cargo/bin"), c("home/tools/bin")];
        let recorded = [c("home/.cargo/bin")];
        let got = sides_from(
            &ws,
            Some(&home),
            &cands,
            &ExecDirChoice::default(),
            Some(&recorded),
        )
        .unwrap();
        assert_eq!(got.exec_dirs, vec![c("home/.cargo/bin")]);
        assert_eq!(got.unrecorded, vec![c("home/tools/bin")]);
        // Without a home nothing is discovered.
        let got = sides_from(
            &ws,
            None,
            &[c("home/.cargo/bin")],
            &ExecDirChoice::default(),
            None,
        );
        assert_eq!(got.unwrap(), HostSides::default());
    }
}
