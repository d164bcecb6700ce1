//! Assurance: the session's start record of what it is held to, in the one audit schema.

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
    let record = execguard_os::audit::stamp(
        "run",
        "start",
        execguard_policy::audit::Decision::Notice,
        if sealed {
            "session_sealed"
        } else {
            "session_unsealed"
        },
        Some(policy.profile()),
        assurance.as_bytes(),
        command.first().map_or(&b""[..], |c| c.as_bytes()),
    );
    let delivered = match policy.audit_socket() {
        // Kept before the exec: the writer's answer is waited for.
        Some(socket) => execguard_os::audit::send_record_as(
            socket,
            &{
                let mut buf = [0u8; execguard_policy::audit::RECORD_MAX];
                let n = execguard_policy::audit::format_record(&record, &mut buf);
                buf[..n].to_vec()
            },
            execguard_os::audit::Answer::Wait,
        ),
        None => execguard_os::audit::append(log, &record),
    };
    delivered.map_err(|_| AssuranceError::StartRecordUnwritable {
        log: String::from_utf8_lossy(log).into_owned(),
    })
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
