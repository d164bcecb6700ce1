//! Records of the start chain's refusals, in the one schema (`execguard_policy::audit`), so
//! `execguard audit` counts them beside the guard's and the wrappers': kept by PID 1's writer
//! when the image policy names one (`crate::kept`), else appended to the policy's log
//! (`execguard_os::audit::append`).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use execguard_policy::audit::Decision;

use crate::paths::Paths;

/// The image policy's audit log (re-rooted below a test root) and the policy's profile;
/// `None` without a readable policy or a log.
pub fn policy_log(paths: &Paths) -> Option<(std::path::PathBuf, execguard_policy::Profile)> {
    let loaded = execguard_load::load_from(&paths.etc.join("execguard/policy.toml"), None).ok()?;
    let policy = loaded.policy();
    let log = policy.audit_log()?;
    // Policy paths are absolute; below a test root they are re-rooted there.
    let log = paths
        .root
        .join(OsStr::from_bytes(log.strip_prefix(b"/").unwrap_or(log)));
    Some((log, policy.profile()))
}

/// The image policy's socket of PID 1's writer (re-rooted below a test root), if it names one.
pub fn policy_socket(paths: &Paths) -> Option<std::path::PathBuf> {
    let loaded = execguard_load::load_from(&paths.etc.join("execguard/policy.toml"), None).ok()?;
    let socket = loaded.policy().audit_socket()?.to_vec();
    Some(paths.root.join(OsStr::from_bytes(
        socket.strip_prefix(b"/").unwrap_or(&socket),
    )))
}

/// Records a refusal by `tool` (`entrypoint`, `provider`) at `entry` (`start`, `wrapper`):
/// the code, the detail as `path`, the command line as `target`. PID 1 keeps its own through
/// its writer (`keep`: `Kept::keep_refusal` of `crate::kept`); the provider wrapper, inside the
/// session, sends to that writer's socket. Without a readable policy there is no log to write
/// to; a record that cannot be written is said on stderr (the refusal stands either way).
pub fn record_refusal(
    paths: &Paths,
    keep: Option<impl FnOnce(&[u8])>,
    tool: &str,
    entry: &str,
    code: &str,
    detail: &str,
    argv: &[OsString],
) {
    let Some((log, profile)) = policy_log(paths) else {
        return;
    };
    let mut target = format!("execguard-{tool}").into_bytes();
    for a in argv {
        target.push(b' ');
        target.extend_from_slice(a.as_bytes());
    }
    let record = execguard_os::audit::stamp(
        tool,
        entry,
        Decision::Deny,
        code,
        Some(profile),
        detail.as_bytes(),
        &target,
    );
    if let Some(keep) = keep {
        let mut buf = [0u8; execguard_policy::audit::RECORD_MAX];
        let n = execguard_policy::audit::format_record(&record, &mut buf);
        keep(&buf[..n]);
        return;
    }
    // A policy with a writer: the log is the writer's alone (a start refused before the
    // writer began is said on stderr only: the session's records were never in reach).
    let written = match policy_socket(paths) {
        Some(socket) => execguard_os::audit::send(socket.as_os_str().as_bytes(), &record),
        None => execguard_os::audit::append(log.as_os_str().as_bytes(), &record),
    };
    if written.is_err() {
        eprintln!(
            "execguard-{tool}: warning: audit_unwritable: the refusal could not be recorded in {}",
            log.display()
        );
    }
}
