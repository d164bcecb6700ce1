//! Assurance: the session's start record of what it is held to, in the one audit schema.

use anyhow::Result;
use execguard_policy::Policy;

/// The session's start record of what it is held to (the one audit schema: tool `run`, entry
/// `start`, decision `notice`, reason `session_sealed` or `session_unsealed`, `path` the
/// assurance, `target` the command): always for a reduced session, and for a strict one under
/// `audit_allow` (like an allowed first command). An audit log that cannot take it refuses the
/// start.
pub fn record_assurance(
    policy: &Policy,
    sealed: bool,
    assurance: &str,
    command: &[std::ffi::OsString],
) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let Some(log) = policy.audit_log() else {
        return Ok(());
    };
    if assurance == "strict" && !policy.audit_allow() {
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
    execguard_os::audit::append(log, &record).map_err(|_| {
        anyhow::anyhow!(
            "audit_unwritable: {}: the session's start record could not be written",
            String::from_utf8_lossy(log)
        )
    })
}
