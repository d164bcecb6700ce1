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

/// The largest control file (a hook, a config) read whole: git's own are a few KiB.
const CONTROL_MAX: u64 = 16 << 20;

/// How [`control_bytes`]'s stand-in for a file it cannot read starts (no text file does).
const UNREADABLE: &str = "\0execguard: unreadable ";

/// The bytes of the control file `p` (`m`: its `lstat`), or, when it cannot be read whole
/// (not readable, larger than [`CONTROL_MAX`], or no longer a regular file: a FIFO put there
/// never blocks, `O_NONBLOCK`), a stand-in naming its identity: compared with what was
/// recorded it differs whenever the file was replaced or changed. One such file must never end
/// the whole repository's quarantine (the session may plant it for that).
fn control_bytes(p: &Path, m: &fs::Metadata) -> Vec<u8> {
    crate::git::files::read_regular(p, CONTROL_MAX, false).unwrap_or_else(|_| {
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

fn read_recorded(p: &Path) -> io::Result<Option<Recorded>> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_file() => Ok(Some(Recorded {
            bytes: control_bytes(p, &m),
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

/// The directory of `p`, opened with no symlink anywhere on the way (`openat2`,
/// `RESOLVE_NO_SYMLINKS`), and `p`'s name in it. This process is outside the session (root,
/// for a root session): a link on the way, even one another session makes while this runs,
/// is refused, never followed, so nothing is moved from or written to a directory of the
/// operator's elsewhere (the exec-dir record, say). `..` is walked as it is on disk.
fn open_parent(p: &Path) -> io::Result<(std::os::fd::OwnedFd, std::ffi::CString)> {
    use execguard_policy::sys::{OpenMode, Sys};
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let (Some(dir), Some(name)) = (p.parent(), p.file_name()) else {
        return Err(io::Error::other(format!("{}: no directory", p.display())));
    };
    let name = std::ffi::CString::new(name.as_bytes()).map_err(io::Error::other)?;
    // The guard's own exact open (openat2, no symlinks, no magic links), as an O_PATH handle
    // the *at calls below work from.
    let fd = execguard_os::LibcSys
        .open_exact(dir.as_os_str().as_bytes(), OpenMode::PathOnly)
        .map_err(|errno| {
            let e = io::Error::from_raw_os_error(errno);
            io::Error::new(
                e.kind(),
                format!("{} (a link on the way is refused): {e}", dir.display()),
            )
        })?;
    // SAFETY: open_exact returned a new descriptor that nothing else owns.
    Ok((unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }, name))
}

/// Writes the recorded version back, as a new file: one that appeared at `p` since (a link
/// another session made) fails the restore rather than being written through.
fn restore(p: &Path, r: &Recorded) -> io::Result<()> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd};
    let (dir, name) = open_parent(p)?;
    // SAFETY: `dir` is an open directory and `name` NUL-terminated; openat returns a new
    // descriptor or -1.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{}: {e}", p.display())));
    }
    // SAFETY: a new descriptor this function owns.
    let mut f = unsafe { fs::File::from_raw_fd(fd) };
    f.write_all(&r.bytes)?;
    f.set_permissions(fs::Permissions::from_mode(r.mode))?;
    // Back to its owner when the supervisor is root; a no-op for the same user.
    let _ = std::os::unix::fs::fchown(&f, Some(r.uid), Some(r.gid));
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
        // The git dirs kept inside each: submodules' (`modules/<name>`, where a name may hold
        // `/`: `modules/a/b`) and linked worktrees' (`worktrees/<name>`), a few levels deep.
        let mut i = 0;
        while i < found.len() {
            let mut dirs: Vec<(PathBuf, usize)> = ["modules", "worktrees"]
                .iter()
                .map(|d| (found[i].1.join(d), 0))
                .collect();
            while let Some((dir, depth)) = dirs.pop() {
                let Ok(rd) = fs::read_dir(&dir) else { continue };
                for e in rd.flatten() {
                    if !e.file_type().is_ok_and(|t| t.is_dir()) {
                        continue;
                    }
                    let g = e.path();
                    let head = fs::symlink_metadata(g.join("HEAD"))
                        .is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
                    if head {
                        let common = repo::common_dir_of(&g);
                        add(&mut found, g, common);
                    } else if depth < 4 {
                        dirs.push((g, depth + 1));
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
                let restored = restore(p, r);
                out.push(Quarantined {
                    path: p.clone(),
                    saved_as: None,
                    why: match &restored {
                        Ok(()) => "hook deleted during the session".into(),
                        Err(e) => format!("hook deleted during the session; not restored ({e})"),
                    },
                    restored: restored.is_ok(),
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
                Ok(m) if m.is_file() => control_bytes(&p, &m),
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
            // Unreadable now, and not as it was recorded: what it holds cannot be judged.
            if now.starts_with(UNREADABLE.as_bytes())
                && recorded.as_ref().map(|r| &r.bytes) != Some(&now)
            {
                save(
                    &p,
                    "config unreadable or larger than 16 MiB".into(),
                    recorded.as_ref(),
                    &mut out,
                )?;
                continue;
            }
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
                // Where it really is (`.git/../../x` is not in `.git`).
                let real = p
                    .parent()
                    .and_then(|d| fs::canonicalize(d).ok())
                    .unwrap_or_default();
                let inside = real.starts_with(&self.common_dir) || real.starts_with(&self.git_dir);
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
    use std::os::fd::AsRawFd;
    let rel = p.strip_prefix(common_dir).unwrap_or(p);
    let name = rel
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', "__");
    let saved = into.join(&name);
    let (from, old_name) = open_parent(p)?;
    let (to, new_name) = open_parent(&saved)?;
    // SAFETY: both descriptors are open directories and both names NUL-terminated; renameat
    // moves the entry itself (a symlink as it is).
    if unsafe {
        libc::renameat(
            from.as_raw_fd(),
            old_name.as_ptr(),
            to.as_raw_fd(),
            new_name.as_ptr(),
        )
    } != 0
    {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{}: {e}", p.display())));
    }
    // Kept for the operator to read, not to run (a link is left as it is, never followed).
    // SAFETY: `to` is an open directory and `new_name` NUL-terminated; openat returns a new
    // descriptor or -1.
    let kept = unsafe {
        libc::openat(
            to.as_raw_fd(),
            new_name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if kept >= 0 {
        use std::os::fd::FromRawFd;
        // SAFETY: a new descriptor this function owns.
        let f = unsafe { fs::File::from_raw_fd(kept) };
        if f.metadata().is_ok_and(|m| m.is_file()) {
            let _ = f.set_permissions(fs::Permissions::from_mode(0o600));
        }
    }
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
/// status must still reach the caller. `audit_log` is the log's canonical name, taken before
/// the session: it is written with no link on its way.
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
    let mut created: Vec<Snapshot> = Vec::new();
    let now_found = Snapshot::record_workspace(workspace, home).unwrap_or_default();
    for now in &now_found {
        if snapshots.iter().any(|s| s.git_dir == now.git_dir) {
            continue;
        }
        // A git dir new to a recorded repository (a linked worktree's, with its own
        // `config.worktree`): what it shares with the repository was recorded.
        if let Some(base) = snapshots.iter().find(|s| s.common_dir == now.common_dir) {
            created.push(Snapshot {
                git_dir: now.git_dir.clone(),
                ..base.clone()
            });
        }
    }
    created.extend(
        now_found
        .into_iter()
        .filter(|now| !snapshots.iter().any(|s| s.common_dir == now.common_dir))
        // A gitfile or `commondir` the session made can name any repository, the operator's
        // elsewhere included: only one that lies in the workspace is the session's.
        .filter(|now| {
            let inside = now.common_dir.starts_with(workspace) && now.git_dir.starts_with(workspace);
            if !inside {
                eprintln!(
                    "execguard: notice: the session pointed the workspace at the repository {}, outside it: not quarantined, inspect its hooks and config",
                    now.common_dir.display()
                );
            }
            inside
        })
        .map(|now| Snapshot {
            hooks: BTreeMap::new(),
            configs: BTreeMap::new(),
            ..now
        }),
    );
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
        if let Err(e) = execguard_os::audit::append_exact(log.as_os_str().as_bytes(), &record) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the supervisor writes or moves, it writes or moves where it was named: a link in
    /// the last place or on the way (made by another session while this one is quarantined)
    /// is refused, never followed, and `..` is walked as it is on disk.
    #[test]
    fn restore_and_move_aside_follow_no_link() {
        let scratch = tempfile::tempdir().unwrap();
        let d = scratch.path();
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
