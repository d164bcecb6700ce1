//! The hand-back of the repositories of the workspace and of the rest of the write set that
//! outlives the session (docs/handback.md), every profile: their
//! control files recorded (and each repository locked) before the session starts, and what
//! the session planted in them quarantined once it has ended (`execguard_wrappers::takeover`).
//! The host's supervisor and the container's PID 1 both hand back through here.

use execguard_wrappers::takeover::{Handback as Record, Snapshot};
use std::path::{Path, PathBuf};

/// What the hand-back needs at the session's end, recorded at its start.
#[derive(Debug)]
pub struct Handback {
    snapshots: Record,
    workspace: PathBuf,
    /// The write set's other lasting roots, each handed back as the workspace is (its
    /// repositories at any depth, bare or not, and the local ones their config names).
    others: Vec<(PathBuf, Record)>,
    home: Option<PathBuf>,
    audit_log: Option<PathBuf>,
    profile: execguard_policy::Profile,
    /// Who hands back, in the audit records: `run`, `entrypoint`.
    tool: &'static str,
}

/// The repositories' control files could not be recorded.
#[derive(Debug, thiserror::Error)]
#[error("failed to record the repository control files of {}: {source}", workspace.display())]
pub struct RecordError {
    pub workspace: PathBuf,
    #[source]
    pub source: std::io::Error,
    /// The hand-back without the record: a repository the session creates is still checked.
    pub unrecorded: Box<Handback>,
}

/// The roots of `lasting` (what outlives the session in its write set,
/// [`crate::privileges::lasting_roots`]) handed back besides the workspace: directories only,
/// not the exec dirs (read-only in the session), the outermost of nested ones, and none that
/// lies in the workspace (its repositories are the workspace's record: recorded twice, the
/// second lock would wait for the first). A root that holds the workspace (a shared `$HOME`)
/// is one: [`record`] walks it without the workspace; but not a shared temp dir that holds it
/// (sticky and writable by all: every user's repositories there would be locked and what
/// they write meanwhile taken for the session's; docs/handback.md *Limits*).
pub fn other_roots(workspace: &Path, lasting: &[PathBuf], exec_dirs: &[PathBuf]) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let shared_temp = |r: &Path| std::fs::metadata(r).is_ok_and(|m| m.mode() & 0o1002 == 0o1002);
    let mut out: Vec<PathBuf> = lasting
        .iter()
        .filter(|r| r.is_dir())
        .filter(|r| !r.starts_with(workspace))
        .filter(|r| !(workspace.starts_with(r) && shared_temp(r)))
        .filter(|r| !exec_dirs.iter().any(|d| r.starts_with(d)))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    let all = out.clone();
    out.retain(|r| !all.iter().any(|o| o != r && r.starts_with(o)));
    out
}

/// Records the control files of the repositories of `workspace` and of each root of `others`
/// (`Snapshot::record_workspace`) for the session of the user whose home is `home`.
pub fn record(
    tool: &'static str,
    workspace: &Path,
    others: &[PathBuf],
    home: Option<&Path>,
    audit_log: Option<&Path>,
    profile: execguard_policy::Profile,
) -> Result<Handback, RecordError> {
    let mut handback = Handback {
        snapshots: Record::default(),
        workspace: workspace.to_path_buf(),
        others: Vec::new(),
        home: home.map(Path::to_path_buf),
        // By its canonical name as checked before the session: the end writes it by that name
        // with no link on the way (the session may replace the log's directory by one).
        audit_log: audit_log
            .map(|l| crate::paths::canonical(l).unwrap_or_else(|_| l.to_path_buf())),
        profile,
        tool,
    };
    // The workspace first; one in a root that holds it is walked once, as the workspace.
    let roots: Vec<(PathBuf, Vec<PathBuf>)> = std::iter::once((workspace.to_path_buf(), vec![]))
        .chain(others.iter().map(|root| {
            let skip = workspace
                .starts_with(root)
                .then(|| workspace.to_path_buf())
                .into_iter()
                .collect();
            (root.clone(), skip)
        }))
        .collect();
    match Snapshot::record_roots(&roots, home) {
        Ok(records) => {
            let mut records = roots.into_iter().zip(records);
            if let Some((_, first)) = records.next() {
                handback.snapshots = first;
            }
            handback.others = records.map(|((root, _), r)| (root, r)).collect();
        }
        Err(source) => {
            return Err(RecordError {
                workspace: workspace.to_path_buf(),
                source,
                unrecorded: Box::new(handback),
            })
        }
    }
    Ok(handback)
}

/// [`record`] for a host session under `policy`: its workspace, `$HOME`, its audit log.
pub fn record_for_host(
    policy: &execguard_policy::Policy<'_>,
    lasting: &[PathBuf],
    exec_dirs: &[PathBuf],
) -> Result<Handback, RecordError> {
    use std::os::unix::ffi::OsStrExt;
    let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let workspace = path(policy.workspace());
    record(
        "run",
        &workspace,
        &other_roots(&workspace, lasting, exec_dirs),
        home.as_deref(),
        // The kept audit's writer (its socket) when there is one: the log is the writer's alone.
        policy
            .audit_socket()
            .or(policy.audit_log())
            .map(path)
            .as_deref(),
        policy.profile(),
    )
}

impl Handback {
    /// Once the session has ended: quarantines what it planted (one audit record per file,
    /// one notice line on stderr).
    pub fn finish(&self) {
        let roots = std::iter::once((&self.workspace, &self.snapshots))
            .chain(self.others.iter().map(|(r, s)| (r, s)));
        for (root, snapshots) in roots {
            execguard_wrappers::takeover::finish_session(
                snapshots,
                root,
                self.home.as_deref(),
                self.tool,
                self.audit_log.as_deref(),
                self.profile,
            );
        }
    }
}
