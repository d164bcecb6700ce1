//! Rule 3: the repository cannot take control of the operator's tools after the session.
//!
//! A workspace outlives its session, and the operator runs git on it outside, unguarded: a
//! hook or command-running config the session planted would run there with the operator's
//! rights. Making the control files read-only breaks ordinary work (measured: `git remote add`
//! and `git config` fail, `git push -u` and `git submodule add` lose their config writes
//! silently; see `wrappers/README.md`), so instead the supervisor records them at session start
//! ([`Snapshot::record`]) and at session end ([`Snapshot::quarantine`]) moves what the session
//! added or changed into `<git dir>/execguard-quarantine/<time>/`, restoring the recorded
//! versions:
//!
//! - every file of the hooks directory (a new, changed or replaced hook; a deleted one comes
//!   back, so the operator's hooks keep running);
//! - the repository's `config`, `config.worktree` and every file they include, when the session
//!   added a key that runs a command *outside* the wrapper (what [`runs_command_unwrapped`]
//!   says: the wrapper's refusals plus the pager/editor/askpass keys it only neutralises); other
//!   changes (`git remote add`, `push -u`) are kept.
//!
//! The snapshot lives in the supervisor's memory, never in a file the session could edit.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::git::config::{classify_key, is_git_bool, split_key, ConfigEntry};
use crate::git::files::{parse_config_file, FileConfig};
use crate::git::repo;

/// The most repositories one session's supervisor records.
pub const MAX_REPOSITORIES: usize = 64;

/// One recorded control file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    bytes: Vec<u8>,
    mode: u32,
    uid: u32,
    gid: u32,
}

/// The control files of one repository at session start.
#[derive(Debug, Clone)]
pub struct Snapshot {
    git_dir: PathBuf,
    common_dir: PathBuf,
    hooks: BTreeMap<PathBuf, Recorded>,
    configs: BTreeMap<PathBuf, Option<Recorded>>,
}

/// A file moved out of the session's reach, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub path: PathBuf,
    /// Where the session's version is now (`None`: the session deleted a recorded hook).
    pub saved_as: Option<PathBuf>,
    pub why: String,
    /// The recorded version was put back.
    pub restored: bool,
}

/// Would this config assignment run a command when the operator runs plain git? The
/// wrapper's own refusals, plus what the wrapper only neutralises for its children.
pub fn runs_command_unwrapped(key: &str, value: Option<&str>) -> bool {
    if classify_key(key, value, "config").is_err() {
        return true;
    }
    let Some(k) = split_key(key) else {
        return true;
    };
    match (
        k.section.as_str(),
        k.subsection.is_some(),
        k.variable.as_str(),
    ) {
        ("core", false, "pager" | "editor" | "askpass") => true,
        // `pager.<cmd>` is a boolean or a pager command.
        ("pager", _, _) => !is_git_bool(value),
        _ => false,
    }
}

fn read_recorded(p: &Path) -> io::Result<Option<Recorded>> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_file() => Ok(Some(Recorded {
            bytes: fs::read(p)?,
            mode: m.mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
        })),
        // A symlink or anything else is recorded as its absence: replacing it is a change.
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Refuses a path whose directory is reached through a link: the paths were recorded
/// canonical, so a link on the way now is one the session made, to move or write the
/// operator's files elsewhere (say the exec-dir record) in this process, outside the session.
fn no_link_above(p: &Path) -> io::Result<()> {
    let dir = p.parent().unwrap_or(Path::new("/"));
    if fs::canonicalize(dir).is_ok_and(|c| c == dir) {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{} is reached through a link the session made",
        p.display()
    )))
}

fn restore(p: &Path, r: &Recorded) -> io::Result<()> {
    no_link_above(p)?;
    fs::write(p, &r.bytes)?;
    fs::set_permissions(p, fs::Permissions::from_mode(r.mode))?;
    // Back to its owner when the supervisor is root; a no-op for the same user.
    let _ = std::os::unix::fs::lchown(p, Some(r.uid), Some(r.gid));
    Ok(())
}

/// The config files of a repository as git would read them, with every file they include.
fn config_files(git_dir: &Path, common_dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let reader = FileConfig {
        home: home.map(Path::to_path_buf),
        ..FileConfig::default()
    };
    let mut files = vec![common_dir.join("config"), git_dir.join("config.worktree")];
    let mut i = 0;
    while i < files.len() && files.len() < 64 {
        let mut entries = Vec::new();
        let _ = reader.read_file(&files[i], &mut entries);
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

fn hook_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    match fs::read_dir(dir) {
        Ok(rd) => rd.map(|e| e.map(|e| e.path())).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
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

impl Snapshot {
    /// Record the control files of the repository `dir` is in (`None` outside a repository).
    /// `home` resolves `~/` in include paths.
    pub fn record(dir: &Path, home: Option<&Path>) -> io::Result<Option<Snapshot>> {
        match repo::discover(dir) {
            Some(found) => Self::record_git_dir(found.git_dir, found.common_dir, home).map(Some),
            None => Ok(None),
        }
    }

    fn record_git_dir(
        git_dir: PathBuf,
        common_dir: PathBuf,
        home: Option<&Path>,
    ) -> io::Result<Snapshot> {
        let mut hooks = BTreeMap::new();
        for p in hook_files(&common_dir.join("hooks"))? {
            if let Some(r) = read_recorded(&p)? {
                hooks.insert(p, r);
            }
        }
        let mut configs = BTreeMap::new();
        for p in config_files(&git_dir, &common_dir, home) {
            let r = read_recorded(&p)?;
            configs.insert(p, r);
        }
        Ok(Snapshot {
            git_dir,
            common_dir,
            hooks,
            configs,
        })
    }

    /// Every repository a session in `workspace` works on: the one `workspace` is in, those
    /// directly inside it (a directory of checkouts), and their submodules' git dirs
    /// (`.git/modules/*`: git runs their hooks when the operator works in the submodule).
    /// At most [`MAX_REPOSITORIES`].
    pub fn record_workspace(workspace: &Path, home: Option<&Path>) -> io::Result<Vec<Snapshot>> {
        let mut found: Vec<(PathBuf, PathBuf)> = Vec::new();
        fn add(found: &mut Vec<(PathBuf, PathBuf)>, git_dir: PathBuf, common: PathBuf) {
            if found.len() < MAX_REPOSITORIES && !found.iter().any(|(g, _)| *g == git_dir) {
                found.push((git_dir, common));
            }
        }
        if let Some(d) = repo::discover(workspace) {
            add(&mut found, d.git_dir, d.common_dir);
        }
        if let Ok(rd) = fs::read_dir(workspace) {
            for e in rd.flatten() {
                let p = e.path();
                if e.file_type().is_ok_and(|t| t.is_dir())
                    && fs::symlink_metadata(p.join(".git")).is_ok()
                {
                    if let Some(d) = repo::discover(&p) {
                        add(&mut found, d.git_dir, d.common_dir);
                    }
                }
            }
        }
        let mut i = 0;
        while i < found.len() {
            let modules = found[i].1.join("modules");
            if let Ok(rd) = fs::read_dir(&modules) {
                for e in rd.flatten() {
                    let g = e.path();
                    if e.file_type().is_ok_and(|t| t.is_dir()) && g.join("HEAD").is_file() {
                        let common = repo::common_dir_of(&g);
                        add(&mut found, g, common);
                    }
                }
            }
            i += 1;
        }
        found
            .into_iter()
            .map(|(g, c)| Self::record_git_dir(g, c, home))
            .collect()
    }

    /// Quarantine what the session added or changed, restoring the recorded versions.
    /// `stamp` names the quarantine directory (e.g. the session's start time and pid).
    pub fn quarantine(&self, stamp: &str, home: Option<&Path>) -> io::Result<Vec<Quarantined>> {
        // This process is outside the session and may be root: it never follows a link the
        // session put on the way. A git dir replaced by one is not touched at all.
        for d in [&self.common_dir, &self.git_dir] {
            if !fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) {
                return Err(io::Error::other(format!(
                    "{} is no longer a directory (the session replaced it)",
                    d.display()
                )));
            }
        }
        let into = std::cell::OnceCell::new();
        let mut out = Vec::new();
        let save =
            |p: &Path, why: String, recorded: Option<&Recorded>, out: &mut Vec<Quarantined>| {
                let dir = match into.get() {
                    Some(d) => d,
                    None => {
                        let d = fresh_quarantine(&self.common_dir, stamp)?;
                        into.get_or_init(|| d)
                    }
                };
                out.push(move_aside(&self.common_dir, dir, p, why, recorded)?);
                io::Result::Ok(())
            };
        let hooks_dir = self.common_dir.join("hooks");
        if fs::symlink_metadata(&hooks_dir).is_ok_and(|m| !m.is_dir()) {
            save(
                &hooks_dir,
                "the hooks directory was replaced".into(),
                None,
                &mut out,
            )?;
            fs::create_dir_all(&hooks_dir)?;
        }
        for p in hook_files(&hooks_dir)? {
            // git never runs a `.sample` (what `git init` puts there).
            if p.extension().is_some_and(|e| e == "sample") {
                continue;
            }
            let now = read_recorded(&p)?;
            match (self.hooks.get(&p), now) {
                (Some(r), Some(n)) if *r == n => {}
                (Some(r), _) => save(
                    &p,
                    "hook changed during the session".into(),
                    Some(r),
                    &mut out,
                )?,
                (None, _) => save(&p, "hook added during the session".into(), None, &mut out)?,
            }
        }
        for (p, r) in &self.hooks {
            if fs::symlink_metadata(p).is_err() {
                restore(p, r)?;
                out.push(Quarantined {
                    path: p.clone(),
                    saved_as: None,
                    why: "hook deleted during the session".into(),
                    restored: true,
                });
            }
        }
        let mut files: Vec<PathBuf> = self.configs.keys().cloned().collect();
        for p in config_files(&self.git_dir, &self.common_dir, home) {
            if !files.contains(&p) {
                files.push(p);
            }
        }
        for p in files {
            let recorded = self.configs.get(&p).cloned().flatten();
            let now = match fs::symlink_metadata(&p) {
                Ok(m) if m.is_file() => fs::read(&p)?,
                Ok(_) => {
                    save(
                        &p,
                        "config replaced by a non-file".into(),
                        recorded.as_ref(),
                        &mut out,
                    )?;
                    continue;
                }
                Err(_) => continue,
            };
            let before = recorded
                .as_ref()
                .map(|r| command_keys(&r.bytes))
                .unwrap_or_default();
            let added: Vec<String> = command_keys(&now)
                .into_iter()
                .filter(|e| !before.contains(e))
                .map(|e| e.key)
                .collect();
            if !added.is_empty() {
                let why = format!("command-running config added: {}", added.join(", "));
                let inside = p.starts_with(&self.common_dir) || p.starts_with(&self.git_dir);
                if inside || recorded.is_some() {
                    save(&p, why, recorded.as_ref(), &mut out)?;
                } else {
                    // A file outside the repository that a new include names: the include is
                    // quarantined with the repository's config, and the file is left where it
                    // is (the supervisor may be root: it must not move a file of someone
                    // else's that the session merely named).
                    out.push(Quarantined {
                        path: p.clone(),
                        saved_as: None,
                        why: format!("{why} (outside the repository: left in place, inspect it)"),
                        restored: false,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// A new directory `<common dir>/execguard-quarantine/<stamp>[-N]`, made by this process: a
/// link the session left under either name is never followed (the session could predict the
/// stamp and point it at a directory of the operator's, into which its files would be
/// renamed). `execguard-quarantine` itself, when a link or a file, is removed first.
fn fresh_quarantine(common_dir: &Path, stamp: &str) -> io::Result<PathBuf> {
    let top = common_dir.join("execguard-quarantine");
    match fs::symlink_metadata(&top) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            fs::remove_file(&top)?;
            fs::create_dir(&top)?;
        }
        Err(_) => fs::create_dir(&top)?,
    }
    for n in 0..100 {
        let dir = match n {
            0 => top.join(stamp),
            n => top.join(format!("{stamp}-{n}")),
        };
        // mkdir never follows a link in the last place, dangling or not: it fails.
        match fs::create_dir(&dir) {
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
fn move_aside(
    common_dir: &Path,
    into: &Path,
    p: &Path,
    why: String,
    recorded: Option<&Recorded>,
) -> io::Result<Quarantined> {
    no_link_above(p)?;
    let rel = p.strip_prefix(common_dir).unwrap_or(p);
    let name = rel
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', "__");
    let saved = into.join(&name);
    fs::rename(p, &saved)?;
    if !fs::symlink_metadata(&saved).is_ok_and(|m| m.file_type().is_symlink()) {
        // Kept for the operator to read, not to run.
        let _ = fs::set_permissions(&saved, fs::Permissions::from_mode(0o600));
    }
    if let Some(r) = recorded {
        restore(p, r)?;
    }
    Ok(Quarantined {
        path: p.to_path_buf(),
        saved_as: Some(saved),
        why,
        restored: recorded.is_some(),
    })
}

/// The one-line notice for the operator, or `None` when nothing was quarantined.
pub fn notice(q: &[Quarantined]) -> Option<String> {
    let first = q.first()?;
    let dir = q
        .iter()
        .find_map(|x| x.saved_as.as_ref().and_then(|s| s.parent()))
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let names: Vec<String> = q.iter().map(|x| x.path.display().to_string()).collect();
    Some(format!(
        "execguard: quarantined {} repository control file(s) the session added, changed or deleted ({}; first: {}): the recorded versions are restored, the session's are in {dir}",
        q.len(),
        names.join(", "),
        first.why
    ))
}

/// The end of a strict session (rule 3): quarantines what the session planted in each
/// recorded repository, writes one audit record per file (`tool`, entry `end`, `notice`,
/// `repository_quarantine`) and prints one notice line. Used by `execguard run`'s supervisor
/// and the image's entrypoint alike. Failures are said on stderr: the session has ended, its
/// status must still reach the caller.
pub fn finish_session(
    snapshots: &[Snapshot],
    workspace: &Path,
    home: Option<&Path>,
    tool: &str,
    audit_log: Option<&Path>,
    profile: execguard_policy::Profile,
) {
    use std::os::unix::ffi::OsStrExt;
    let stamp = format!(
        "{}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        std::process::id()
    );
    // A repository the session created has nothing recorded: whatever hook or command-running
    // config it holds now was planted.
    let created: Vec<Snapshot> = Snapshot::record_workspace(workspace, home)
        .unwrap_or_default()
        .into_iter()
        .filter(|now| !snapshots.iter().any(|s| s.common_dir == now.common_dir))
        .map(|now| Snapshot {
            hooks: BTreeMap::new(),
            configs: BTreeMap::new(),
            ..now
        })
        .collect();
    let mut list = Vec::new();
    for snapshot in snapshots.iter().chain(&created) {
        match snapshot.quarantine(&stamp, home) {
            Ok(mut l) => list.append(&mut l),
            Err(e) => eprintln!(
                "execguard: error: repository_quarantine: {e}; inspect {}/hooks and its config before running git on it outside a session",
                snapshot.common_dir.display()
            ),
        }
    }
    for q in &list {
        let Some(log) = audit_log else { break };
        let saved = q.saved_as.as_deref().unwrap_or(&q.path);
        let record = execguard_os::audit::stamp(
            tool,
            "end",
            execguard_policy::audit::Decision::Notice,
            "repository_quarantine",
            Some(profile),
            q.path.as_os_str().as_bytes(),
            saved.as_os_str().as_bytes(),
        );
        if let Err(e) = execguard_os::audit::append(log.as_os_str().as_bytes(), &record) {
            eprintln!(
                "execguard: warning: cannot write the audit log {}: {e:?}",
                log.display()
            );
        }
    }
    if let Some(line) = notice(&list) {
        eprintln!("{line}");
    }
}
