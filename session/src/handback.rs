//! The hand-back of the workspace's repositories (rule 3 of `wrappers/README.md`): their
//! control files recorded before the session starts, and what the session planted in them
//! quarantined once it has ended (`execguard_wrappers::takeover`).

use anyhow::{Context as _, Result};
use execguard_wrappers::takeover::Snapshot;
use std::path::{Path, PathBuf};

/// What the hand-back needs at the session's end, recorded at its start.
pub struct Handback {
    snapshots: Vec<Snapshot>,
    workspace: PathBuf,
    home: Option<PathBuf>,
    audit_log: Option<PathBuf>,
    profile: execguard_policy::Profile,
}

/// Records the control files of the repositories of `workspace` (`Snapshot::record_workspace`).
pub fn record(
    workspace: &Path,
    audit_log: Option<&Path>,
    profile: execguard_policy::Profile,
) -> Result<Handback> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // By its canonical name as checked before the session: the end writes it by that name with
    // no link on the way (the session may replace the log's directory by one).
    let audit_log =
        audit_log.map(|l| crate::paths::canonical(l).unwrap_or_else(|_| l.to_path_buf()));
    let snapshots =
        execguard_wrappers::takeover::Snapshot::record_workspace(workspace, home.as_deref())
            .with_context(|| {
                format!(
                    "cannot record the repository control files of {}",
                    workspace.display()
                )
            })?;
    Ok(Handback {
        snapshots,
        workspace: workspace.to_path_buf(),
        home,
        audit_log,
        profile,
    })
}

impl Handback {
    /// Once the session has ended: quarantines what it planted (one audit record per file,
    /// one notice line on stderr), recorded as the work of `tool`.
    pub fn finish(&self, tool: &str) {
        execguard_wrappers::takeover::finish_session(
            &self.snapshots,
            &self.workspace,
            self.home.as_deref(),
            tool,
            self.audit_log.as_deref(),
            self.profile,
        );
    }
}
