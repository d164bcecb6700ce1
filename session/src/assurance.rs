//! Assurance: the session's start record of what it is held to, in the one audit schema.

use execguard_policy::audit::Decision;
use execguard_policy::Policy;

/// The assurance step that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AssuranceError {
    /// The audit log could not take the start record: the session does not start.
    #[error("audit_unwritable: {log}: the session's start record could not be written")]
    StartRecordUnwritable { log: String },
}

impl AssuranceError {
    /// The stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            AssuranceError::StartRecordUnwritable { .. } => "audit_unwritable",
        }
    }
}

/// The session's start record of what it is held to (the one audit schema: tool `run`, entry
/// `start`, decision `notice`, reason `session_sealed` or `session_unsealed`, `path` the
/// assurance, `target` the command): always for a reduced session, and for a strict one under
/// `audit_allow` (like an allowed first command). An audit log that cannot take it refuses the
/// start. A kept audit (`audit_socket`) takes it for every session: its writer names the
/// assurance in the session's last record.
pub fn record_assurance(
    policy: &Policy,
    sealed: bool,
    assurance: &str,
    command: &[std::ffi::OsString],
) -> Result<(), AssuranceError> {
    use std::os::unix::ffi::OsStrExt;
    let kept = policy.audit_socket().is_some();
    let Some(log) = policy.audit_socket().or(policy.audit_log()) else {
        return Ok(());
    };
    if assurance == "strict" && !policy.audit_allow() && !kept {
        return Ok(());
    }
    let reason = if sealed {
        "session_sealed"
    } else {
        "session_unsealed"
    };
    let target = command.first().map_or(&b""[..], |c| c.as_bytes());
    // Kept before the exec: the writer's answer is waited for.
    let answer = execguard_os::audit::Answer::Wait;
    write_start_record(
        policy,
        None,
        Decision::Notice,
        reason,
        assurance.as_bytes(),
        target,
        answer,
    )
    .map_err(|()| AssuranceError::StartRecordUnwritable {
        log: String::from_utf8_lossy(log).into_owned(),
    })
}

/// The one writer of a session's `start` records (its assurance, here, and the verdict on its
/// first command, `preflight`): stamped in the one audit schema (tool `run`, entry `start`),
/// then taken by the kept audit's writer in this process (`kept`), or sent to the kept audit's
/// socket (`answer`: wait for the writer's, or only for the hand-over), or appended to the
/// policy's log. `Err`: a record that could not be written; `Ok` too when the policy names no
/// log.
pub(crate) fn write_start_record(
    policy: &Policy,
    kept: Option<&execguard_audit::writer::Writer>,
    decision: Decision,
    reason: &str,
    path: &[u8],
    target: &[u8],
    answer: execguard_os::audit::Answer,
) -> Result<(), ()> {
    let record = execguard_os::audit::stamp(
        "run",
        "start",
        decision,
        reason,
        Some(policy.profile()),
        path,
        target,
    );
    let mut buf = [0u8; execguard_policy::audit::RECORD_MAX];
    let n = execguard_policy::audit::format_record(&record, &mut buf);
    match (kept, policy.audit_socket(), policy.audit_log()) {
        (Some(writer), ..) => writer.keep_own(&buf[..n]).map_err(drop),
        (None, Some(socket), _) => {
            execguard_os::audit::send_record_as(socket, &buf[..n], answer).map_err(drop)
        }
        (None, None, Some(log)) => execguard_os::audit::append(log, &record).map_err(drop),
        (None, None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_text(log: &std::path::Path, profile: &str) -> String {
        format!(
            "version = 1\nprofile = \"{profile}\"\nworkspace = \"/nonexistent-ws\"\naudit_log = \"{}\"\n",
            log.display()
        )
    }

    /// A reduced session is recorded; an audit log that cannot take the record refuses the
    /// start with its reason; a strict session without `audit_allow` writes nothing.
    #[test]
    fn the_start_record_is_written_or_the_start_refused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let log = dir.join("audit.jsonl");
        let text = policy_text(&log, "development");
        let policy = Policy::parse(text.as_bytes()).unwrap();
        record_assurance(&policy, false, "reduced:unsealed", &["sh".into()]).unwrap();
        let written = std::fs::read_to_string(&log).unwrap();
        assert!(
            written.contains("session_unsealed") && written.contains("reduced:unsealed"),
            "{written}"
        );

        std::fs::remove_file(&log).unwrap();
        record_assurance(&policy, true, "strict", &["sh".into()]).unwrap();
        assert!(
            !log.exists(),
            "a strict start without audit_allow is not recorded"
        );

        let missing = dir.join("no-such-dir/audit.jsonl");
        let text = policy_text(&missing, "development");
        let policy = Policy::parse(text.as_bytes()).unwrap();
        let err = record_assurance(&policy, false, "reduced:unsealed", &["sh".into()]).unwrap_err();
        assert_eq!(err.code(), "audit_unwritable");
        assert!(err.to_string().starts_with("audit_unwritable: "), "{err}");
    }
}
