//! The hand-back of the workspace's repositories (docs/handback.md), every profile: their
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

/// Records the control files of the repositories of `workspace` (`Snapshot::record_workspace`)
/// for the session of the user whose home is `home`.
pub fn record(
    tool: &'static str,
    workspace: &Path,
    home: Option<&Path>,
    audit_log: Option<&Path>,
    profile: execguard_policy::Profile,
) -> Result<Handback, RecordError> {
    let mut handback = Handback {
        snapshots: Record::default(),
        workspace: workspace.to_path_buf(),
        home: home.map(Path::to_path_buf),
        // By its canonical name as checked before the session: the end writes it by that name
        // with no link on the way (the session may replace the log's directory by one).
        audit_log: audit_log
            .map(|l| crate::paths::canonical(l).unwrap_or_else(|_| l.to_path_buf())),
        profile,
        tool,
    };
    match Snapshot::record_workspace(workspace, home) {
        Ok(snapshots) => {
            handback.snapshots = snapshots;
            Ok(handback)
        }
        Err(source) => Err(RecordError {
            workspace: workspace.to_path_buf(),
            source,
            unrecorded: Box::new(handback),
        }),
    }
}

/// [`record`] for a host session under `policy`: its workspace, `$HOME`, its audit log.
pub fn record_for_host(policy: &execguard_policy::Policy<'_>) -> Result<Handback, RecordError> {
    use std::os::unix::ffi::OsStrExt;
    let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    record(
        "run",
        &path(policy.workspace()),
        home.as_deref(),
        policy.audit_log().map(path).as_deref(),
        policy.profile(),
    )
}

impl Handback {
    /// Once the session has ended: quarantines what it planted (one audit record per file,
    /// one notice line on stderr).
    pub fn finish(&self) {
        execguard_wrappers::takeover::finish_session(
            &self.snapshots,
            &self.workspace,
            self.home.as_deref(),
            self.tool,
            self.audit_log.as_deref(),
            self.profile,
        );
    }
}
