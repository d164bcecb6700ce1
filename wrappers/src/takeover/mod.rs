//! Rule 3: the repository hand-back. What runs later is what the operator can see and review.
//!
//! A workspace outlives its session, and the operator runs git (and Python, ...) on it
//! outside, unguarded. Making the control files read-only breaks ordinary work (measured:
//! `git remote add` and `git config` fail, `git push -u` and `git submodule add` lose their
//! config writes silently; see `wrappers/README.md`), so instead the supervisor (or the image's
//! PID 1), outside the session, records at its start every repository of the workspace, at any
//! depth, bare or not, and every local repository their config names
//! ([`Snapshot::record_workspace`]), holding one lock per repository until the end; and at its
//! end ([`finish_session`]) hands them back: everything that makes git run a program or reach
//! another repository ([`control`]'s list, read from git's documentation and source) is as
//! recorded or moved into `<git dir>/execguard-quarantine/<time>/` with the recorded version
//! put back; a `.git` file or link leading out of the workspace is undone; executable caches
//! the session wrote (`__pycache__/*.pyc`) are removed.
//!
//! The record lives in the supervisor's memory, never in a file the session could edit; every
//! file is reached with no link on the way ([`nofollow`]).

mod control;
mod nofollow;
mod scan;
mod snapshot;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use control::{local_path, names_local_repository, runs_command_unwrapped};
pub use nofollow::RepositoryLock;
pub use snapshot::Snapshot;

use scan::GitDir;

/// A file moved out of the session's reach (or removed), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub path: PathBuf,
    /// Where the session's version is now (`None`: deleted, removed, or left in place).
    pub saved_as: Option<PathBuf>,
    pub why: String,
    /// The recorded version was put back.
    pub restored: bool,
}

/// What the hand-back recorded at session start: every git dir of the workspace, the `.git`
/// files and links, the start time, and the locks it holds until the end.
#[derive(Debug, Default)]
pub struct Handback {
    snapshots: Vec<Snapshot>,
    /// `.git` entries that are files or links, by what they hold (a link by its target).
    dotgits: BTreeMap<PathBuf, Vec<u8>>,
    /// When the record was taken (the kernel's coarse clock, which file times follow).
    started: (i64, i64),
    /// Directories in the root not walked: the workspace, inside a root that holds it.
    skip: Vec<PathBuf>,
    _locks: Vec<RepositoryLock>,
}

impl Handback {
    pub fn snapshots(&self) -> &[Snapshot] {
        &self.snapshots
    }
    pub fn len(&self) -> usize {
        self.snapshots.len()
    }
    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }
}

impl<'a> IntoIterator for &'a Handback {
    type Item = &'a Snapshot;
    type IntoIter = std::slice::Iter<'a, Snapshot>;
    fn into_iter(self) -> Self::IntoIter {
        self.snapshots.iter()
    }
}

fn coarse_now() -> (i64, i64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    (ts.tv_sec, ts.tv_nsec)
}

/// What a `.git` file or link holds: the file's bytes, or the link's target.
fn dotgit_bytes(p: &Path) -> Option<Vec<u8>> {
    let m = nofollow::lstat(p).ok()?;
    if m.file_type().is_symlink() {
        let mut b = b"link ".to_vec();
        b.extend(std::fs::read_link(p).ok()?.as_os_str().as_encoded_bytes());
        Some(b)
    } else if m.is_file() {
        nofollow::read(p, 64 << 10).ok().map(|(b, _)| b)
    } else {
        None
    }
}

/// Where a `.git` file or link leads: the git dir it names (canonical), or `None` when it
/// names nothing git could use.
fn dotgit_target(p: &Path) -> Option<PathBuf> {
    let m = nofollow::lstat(p).ok()?;
    if m.file_type().is_symlink() {
        std::fs::canonicalize(p).ok()
    } else {
        crate::git::repo::read_gitfile(p)
    }
}

impl Snapshot {
    /// Record the control files of the repository `dir` is in (`None` outside a repository).
    /// `home` resolves `~/` in include paths.
    pub fn record(dir: &Path, home: Option<&Path>) -> std::io::Result<Option<Snapshot>> {
        Ok(crate::git::repo::discover(dir).map(|found| {
            Snapshot::record_git_dir(found.git_dir, found.common_dir, found.work_tree, home)
        }))
    }

    /// Every repository a session in `workspace` could write, recorded: the one `workspace` is
    /// in, every one inside it at any depth (a `.git` directory, a bare repository, the
    /// submodules' and linked worktrees' git dirs they keep), and every local repository their
    /// config names. Each repository inside the workspace is locked until [`finish_session`]
    /// ends (a second session there waits). `workspace` is canonical.
    pub fn record_workspace(workspace: &Path, home: Option<&Path>) -> std::io::Result<Handback> {
        Snapshot::record_root(workspace, &[], home)
    }

    /// [`Snapshot::record_workspace`] of a root with the directories of `skip` left out, at
    /// the start and at the end (another root's, walked as that root).
    pub fn record_root(
        workspace: &Path,
        skip: &[PathBuf],
        home: Option<&Path>,
    ) -> std::io::Result<Handback> {
        let mut all = Snapshot::record_roots(&[(workspace.to_path_buf(), skip.to_vec())], home)?;
        Ok(all.remove(0))
    }

    /// [`Snapshot::record_root`] of each of `roots` (a root, the directories in it left out),
    /// their repositories locked together in one order (by device and inode) for every
    /// session: two sessions whose roots overlap (a shared `/tmp` that holds the other's
    /// workspace) wait for each other in turn, never both. The locks are held by the first
    /// record.
    pub fn record_roots(
        roots: &[(PathBuf, Vec<PathBuf>)],
        home: Option<&Path>,
    ) -> std::io::Result<Vec<Handback>> {
        let started = coarse_now();
        let found: Vec<scan::Found> = roots
            .iter()
            .map(|(root, skip)| scan::scan(root, skip))
            .collect();
        let mut commons: Vec<((u64, u64), &Path)> = roots
            .iter()
            .zip(&found)
            .flat_map(|((root, _), f)| {
                f.git_dirs
                    .iter()
                    .filter(move |g| g.common_dir.starts_with(root))
            })
            .filter_map(|g| Some((nofollow::identity(&g.common_dir)?, g.common_dir.as_path())))
            .collect();
        commons.sort();
        commons.dedup_by_key(|(id, _)| *id);
        let mut locks = Vec::new();
        for (_, c) in commons {
            match RepositoryLock::take(c) {
                Ok(lock) => locks.push(lock),
                // Gone between the walk and the lock (another process removed it: a shared
                // /tmp): there is nothing to hand back, and one made again at that name is
                // new at the end, quarantined as the session's.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
        }
        let mut out: Vec<Handback> = roots
            .iter()
            .zip(found)
            .map(|((_, skip), f)| Snapshot::record_found(f, skip, started, home))
            .collect();
        if let Some(first) = out.first_mut() {
            first._locks = locks;
        }
        Ok(out)
    }

    /// The record of the repositories a walk found, and the local ones their config names.
    fn record_found(
        found: scan::Found,
        skip: &[PathBuf],
        started: (i64, i64),
        home: Option<&Path>,
    ) -> Handback {
        let mut snapshots: Vec<Snapshot> = found
            .git_dirs
            .iter()
            .map(|g| {
                Snapshot::record_git_dir(
                    g.git_dir.clone(),
                    g.common_dir.clone(),
                    g.work_tree.clone(),
                    home,
                )
            })
            .collect();
        // The local repositories their config names: their hooks run when the operator pushes.
        let named: Vec<PathBuf> = snapshots
            .iter()
            .flat_map(|s| s.named_repositories(home))
            .collect();
        for p in named {
            let g = if nofollow::is_dir(&p.join(".git")) {
                GitDir {
                    git_dir: p.join(".git"),
                    common_dir: p.join(".git"),
                    work_tree: Some(p),
                }
            } else if nofollow::is_dir(&p.join("objects")) && nofollow::is_dir(&p.join("refs")) {
                GitDir {
                    git_dir: p.clone(),
                    common_dir: p,
                    work_tree: None,
                }
            } else {
                continue;
            };
            if snapshots.iter().any(|s| s.git_dir == g.git_dir) {
                continue;
            }
            snapshots.push(Snapshot::record_git_dir(
                g.git_dir,
                g.common_dir,
                g.work_tree,
                home,
            ));
        }
        let dotgits = found
            .dotgits
            .iter()
            .filter_map(|p| Some((p.clone(), dotgit_bytes(p)?)))
            .collect();
        Handback {
            snapshots,
            dotgits,
            started,
            skip: skip.to_vec(),
            _locks: Vec::new(),
        }
    }
}

/// A name for the session's quarantine: its end time and the supervisor's pid.
fn stamp() -> String {
    format!(
        "{}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        std::process::id()
    )
}

/// The workspace's own quarantine, for what has no git dir to go to (a `.git` file or link).
fn workspace_quarantine(workspace: &Path, stamp: &str) -> std::io::Result<PathBuf> {
    snapshot::fresh_quarantine_named(workspace, ".execguard-quarantine", stamp)
}

/// Undoes every `.git` file or link that changed and leads out of the workspace (or that
/// stands where a recorded git dir was): moved into the workspace's quarantine, the recorded
/// one put back; a recorded git dir the session moved elsewhere in the workspace comes back.
fn undo_redirections(
    handback: &Handback,
    workspace: &Path,
    found: &scan::Found,
    stamp: &str,
    out: &mut Vec<Quarantined>,
) {
    let mut places: Vec<PathBuf> = found.dotgits.clone();
    for s in &handback.snapshots {
        if s.work_tree.is_some() && s.git_dir.file_name().is_some_and(|n| n == ".git") {
            places.push(s.git_dir.clone());
        }
    }
    places.sort();
    places.dedup();
    let into = std::cell::OnceCell::new();
    for p in places {
        let Some(now) = dotgit_bytes(&p) else {
            continue;
        };
        let recorded = handback.dotgits.get(&p);
        if recorded == Some(&now) {
            continue;
        }
        let was_dir = handback.snapshots.iter().find(|s| s.git_dir == p);
        let target = dotgit_target(&p);
        let leads_out = match &target {
            Some(t) => {
                !t.starts_with(workspace)
                    || !crate::git::repo::common_dir_of(t).starts_with(workspace)
            }
            None => false,
        };
        if !leads_out && was_dir.is_none() && recorded.is_none() {
            // A new submodule's or worktree's `.git` file, naming a git dir in the workspace
            // (handed back itself).
            continue;
        }
        let why = match (was_dir.is_some(), leads_out) {
            (true, _) => "a recorded git dir replaced by a `.git` file or link".to_string(),
            (false, true) => "a `.git` file or link leading out of the workspace".to_string(),
            (false, false) => "a recorded `.git` file changed".to_string(),
        };
        let dir = match into.get() {
            Some(d) => d,
            None => match workspace_quarantine(workspace, stamp) {
                Ok(d) => into.get_or_init(|| d),
                Err(e) => {
                    out.push(Quarantined {
                        path: p.clone(),
                        saved_as: None,
                        why: format!("{why}; not moved ({e}): inspect it"),
                        restored: false,
                    });
                    continue;
                }
            },
        };
        let mut q = match snapshot::move_aside(workspace, dir, &p, why.clone(), None) {
            Ok(q) => q,
            Err(e) => {
                out.push(Quarantined {
                    path: p.clone(),
                    saved_as: None,
                    why: format!("{why}; not moved ({e}): inspect it"),
                    restored: false,
                });
                continue;
            }
        };
        if let Some(bytes) = recorded.filter(|b| !b.starts_with(b"link ")) {
            q.restored = nofollow::create(&p, bytes, 0o644, (u32::MAX, u32::MAX)).is_ok();
        } else if let Some(s) = was_dir {
            // The recorded git dir, where the session moved it: elsewhere in the workspace, or
            // where the link or file it put in its place leads (the same directory, by device
            // and inode, so never another repository of the operator's).
            let mut candidates: Vec<&Path> =
                found.git_dirs.iter().map(|g| g.git_dir.as_path()).collect();
            candidates.extend(target.as_deref());
            let back = s.identity.and_then(|id| {
                candidates
                    .into_iter()
                    .find(|g| nofollow::identity(g) == Some(id))
            });
            let moved_back = match back {
                Some(g) => nofollow::rename(g, &p).map(|()| g.to_path_buf()),
                None => Err(std::io::Error::other("not found")),
            };
            match moved_back {
                Ok(from) => {
                    q.restored = true;
                    q.why
                        .push_str(&format!("; the git dir moved back from {}", from.display()));
                }
                Err(e) => q.why.push_str(&format!(
                    "; the recorded git dir is gone ({e}): the repository has no .git until you restore it{}",
                    target
                        .as_ref()
                        .map(|t| format!(" (the session's file named {}: inspect it before using it)", t.display()))
                        .unwrap_or_default()
                )),
            }
        }
        out.push(q);
    }
}

/// The end of a session (rule 3, every profile): hands back every recorded repository and
/// every one the session made in the workspace, removes the executable caches it wrote, writes
/// one audit record per file (`tool`, entry `end`, `notice`, `repository_quarantine`) and
/// prints one notice line. Used by `execguard run`'s supervisor and the image's entrypoint
/// alike. Failures are said on stderr: the session has ended, its status must still reach the
/// caller. `audit_log` is the log's canonical name, taken before the session: it is written
/// with no link on its way.
pub fn finish_session(
    handback: &Handback,
    workspace: &Path,
    home: Option<&Path>,
    tool: &str,
    audit_log: Option<&Path>,
    profile: execguard_policy::Profile,
) {
    let list = hand_back(handback, workspace, home);
    for q in &list {
        let Some(log) = audit_log else { break };
        audit(log, tool, profile, q);
    }
    if let Some(line) = notice(&list, audit_log) {
        eprintln!("{line}");
    }
}

fn audit(log: &Path, tool: &str, profile: execguard_policy::Profile, q: &Quarantined) {
    use std::os::unix::ffi::OsStrExt;
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

/// The hand-back itself ([`finish_session`] without the audit and the notice): what was
/// quarantined, restored or removed.
pub fn hand_back(handback: &Handback, workspace: &Path, home: Option<&Path>) -> Vec<Quarantined> {
    let stamp = stamp();
    let mut list = Vec::new();
    let mut found = scan::scan(workspace, &handback.skip);
    undo_redirections(handback, workspace, &found, &stamp, &mut list);
    if !list.is_empty() {
        // A git dir came back, or a `.git` entry went: the workspace as it is now.
        found = scan::scan(workspace, &handback.skip);
    }
    let reach = snapshot::Reach {
        workspace,
        home,
        started: handback.started,
    };
    let mut todo: Vec<Snapshot> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for g in &found.git_dirs {
        let id = nofollow::identity(&g.git_dir);
        let recorded = handback
            .snapshots
            .iter()
            .find(|s| s.git_dir == g.git_dir && s.identity == id)
            .cloned()
            .or_else(|| {
                // The same directory, moved within the workspace: its record goes with it.
                handback
                    .snapshots
                    .iter()
                    .find(|s| s.identity.is_some() && s.identity == id)
                    .map(|s| s.relocated(g))
            });
        if let Some(s) = &recorded {
            seen.push(s.git_dir.clone());
        }
        // Nothing recorded (made by the session, or put in place of a recorded one): whatever
        // it holds now was planted.
        todo.push(recorded.unwrap_or_else(|| {
            Snapshot::unrecorded(g.git_dir.clone(), g.common_dir.clone(), g.work_tree.clone())
        }));
    }
    for s in &handback.snapshots {
        if seen.contains(&s.git_dir) || todo.iter().any(|t| t.git_dir == s.git_dir) {
            continue;
        }
        // Outside the workspace (the repository it is in, one its config names): as recorded.
        if !s.git_dir.starts_with(workspace) {
            todo.push(s.clone());
        } else if !nofollow::is_dir(&s.git_dir) {
            // Gone, or reached only through a link the session put on its way: never followed.
            list.push(Quarantined {
                path: s.git_dir.clone(),
                saved_as: None,
                why: "a recorded repository is gone or replaced by a link (not followed)".into(),
                restored: false,
            });
        }
    }
    for s in &todo {
        match s.hand_back(&stamp, &reach) {
            Ok(mut l) => list.append(&mut l),
            Err(e) => eprintln!(
                "execguard: error: repository_quarantine: {e}; inspect {}/hooks and its config before running git on it outside a session",
                s.common_dir.display()
            ),
        }
    }
    for c in &found.caches {
        use std::os::unix::fs::MetadataExt;
        let Ok(m) = nofollow::lstat(c) else { continue };
        if (m.ctime(), m.ctime_nsec()) < handback.started {
            continue;
        }
        let removed = nofollow::remove_file(c);
        list.push(Quarantined {
            path: c.clone(),
            saved_as: None,
            why: match removed {
                Ok(()) => "executable cache written during the session: removed".into(),
                Err(e) => format!("executable cache written during the session; not removed ({e})"),
            },
            restored: false,
        });
    }
    list
}

/// How many paths the notice names; the rest are counted, each one in the audit.
const NOTICE_PATHS: usize = 5;

/// What a handed-back file is, for the notice's count (by where git keeps it).
fn kind(q: &Quarantined) -> &'static str {
    let p = q.path.to_string_lossy();
    let name = q.path.file_name().unwrap_or_default().to_string_lossy();
    if is_executable_cache_path(&q.path) {
        "executable cache(s) removed"
    } else if name == ".git" {
        "redirection(s)"
    } else if p.contains("/hooks/") || name == "hooks" {
        "hook(s)"
    } else if ["rebase-merge", "rebase-apply", "sequencer"]
        .iter()
        .any(|d| p.contains(&format!("/{d}")))
    {
        "sequencer state"
    } else if name.starts_with("config") || p.contains("/config") {
        "config file(s)"
    } else {
        "other control file(s)"
    }
}

fn is_executable_cache_path(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    p.file_name()
        .is_some_and(|n| control::is_executable_cache(n.as_bytes()))
}

/// The one-line notice for the operator, or `None` when nothing was quarantined: the count of
/// each kind, the first few paths, where the session's versions are, and where each one is
/// listed (`execguard audit`, when the session has an audit log).
pub fn notice(q: &[Quarantined], audit_log: Option<&Path>) -> Option<String> {
    let first = q.first()?;
    let dir = q
        .iter()
        .find_map(|x| x.saved_as.as_ref().and_then(|s| s.parent()))
        .map(|d| format!("; the session's versions are in {}", d.display()))
        .unwrap_or_default();
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for x in q {
        let k = kind(x);
        match kinds.iter_mut().find(|(n, _)| *n == k) {
            Some((_, c)) => *c += 1,
            None => kinds.push((k, 1)),
        }
    }
    let counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let mut names: Vec<String> = q
        .iter()
        .take(NOTICE_PATHS)
        .map(|x| x.path.display().to_string())
        .collect();
    // A path handed back twice (moved aside, then its git dir found gone) is named once.
    names.dedup();
    if q.len() > NOTICE_PATHS {
        names.push(format!("and {} more", q.len() - NOTICE_PATHS));
    }
    let each = match audit_log {
        // The kept audit's writer (a socket): the log `execguard audit` reads by default.
        Some(log)
            if std::fs::metadata(log)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type())) =>
        {
            "each one: `execguard audit`".to_string()
        }
        Some(log) => format!("each one: `execguard audit {}`", log.display()),
        None => "this session keeps no audit log: the rest are not listed".to_string(),
    };
    Some(format!(
        "execguard: quarantined {} repository file(s) the session added, changed or deleted ({}): {} (first: {}); the recorded versions are restored{dir}; {each}",
        q.len(),
        counts.join(", "),
        names.join(", "),
        first.why
    ))
}
