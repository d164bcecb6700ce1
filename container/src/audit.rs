//! Records of the start chain's refusals in the image policy's audit log, in the one schema
//! (`execguard_policy::audit`), through the one writer (`execguard_os::audit::append`), so
//! `execguard audit` counts them beside the guard's and the wrappers'.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use execguard_policy::audit::Decision;

use crate::paths::Paths;

/// Appends the record of a refusal by `tool` (`entrypoint`, `provider`) at `entry` (`start`,
/// `wrapper`): the code, the detail as `path`, the command line as `target`. Without a
/// readable policy there is no log to write to; a record that cannot be written is said on
/// stderr (the refusal stands either way).
pub fn record_refusal(
    paths: &Paths,
    tool: &str,
    entry: &str,
    code: &str,
    detail: &str,
    argv: &[OsString],
) {
    let Ok(loaded) = execguard_load::load_from(&paths.etc.join("execguard/policy.toml"), None)
    else {
        return;
    };
    let policy = loaded.policy();
    let Some(log) = policy.audit_log() else {
        return;
    };
    // Policy paths are absolute; below a test root they are re-rooted there.
    let log = paths
        .root
        .join(OsStr::from_bytes(log.strip_prefix(b"/").unwrap_or(log)));
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
        Some(policy.profile()),
        detail.as_bytes(),
        &target,
    );
    if execguard_os::audit::append(log.as_os_str().as_bytes(), &record).is_err() {
        eprintln!(
            "execguard-{tool}: warning: audit_unwritable: the refusal could not be recorded in {}",
            log.display()
        );
    }
}
