//! Checks `execguard run` (and `check`, `image run`) make before a session starts, so that a
//! session never runs guarding nothing: the workspace must be a directory that is not a broad
//! system or home directory, the audit log must be writable, and the session's first command
//! (decided here, outside the guard) is audited like every later one.

use anyhow::{bail, Result};
use execguard_policy::audit::Decision;
use execguard_policy::{Policy, Reason, Verdict};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Where `execguard run` keeps its audit log when neither `--audit` nor `--policy` names one:
/// beside the session shims, in the user's private runtime directory (`$XDG_RUNTIME_DIR/
/// execguard`, else `/tmp/execguard-<uid>`). One file for every session of the user: records
/// carry the pid, and the file outlives the session, so a refusal a caller swallowed still
/// leaves a trace.
pub fn default_audit_log() -> Result<PathBuf> {
    Ok(crate::runtime_dir::shim_base()?.join("audit.jsonl"))
}

/// The start line naming the default log, on a terminal only: scripts and agents that read a
/// session's stderr (its first line is often the command's own refusal) see nothing new, and
/// `execguard audit` with no file finds the log anyway.
pub fn announce_default_log(log: &[u8]) {
    // SAFETY: isatty takes a descriptor number and touches no memory.
    if unsafe { libc::isatty(2) } == 1 {
        eprintln!(
            "execguard: audit log: {} (execguard audit summarises it)",
            String::from_utf8_lossy(log)
        );
    }
}

/// What only the kernel refuses, said once at the start of a strict sealed session (on a
/// terminal, like the log's line): a static program has no guard in it to explain its
/// refusal, so the exec it makes of a program the session wrote just fails with `EACCES`.
/// (`go test` and `go run` start theirs through a program the guard is in,
/// [`crate::go_exec`].)
pub const KERNEL_ONLY_NOTICE: &str = "execguard: strict session: a program written in this session that a static program starts gets a bare \"permission denied\" from the kernel, with no line of execguard's; to run what the workspace builds, start the session with `execguard run --profile development`";

/// Says [`KERNEL_ONLY_NOTICE`] when stderr is a terminal and the session is strict and sealed.
pub fn announce_kernel_only_refusals(policy: &Policy<'_>) {
    let strict = policy.seal() && policy.profile() == execguard_policy::Profile::Strict;
    // SAFETY: isatty takes a descriptor number and touches no memory.
    if strict && unsafe { libc::isatty(2) } == 1 {
        eprintln!("{KERNEL_ONLY_NOTICE}");
    }
}

/// Opens (creating) the audit log the way the guard will, as this user, so a log that cannot
/// be written is refused at start rather than at the first refusal. In a sealed session the
/// log must lie in the write set (the default policy puts it there): a file the session can
/// write must never be on the execute side.
pub fn check_audit_log(policy: &Policy<'_>, log: &[u8]) -> Result<()> {
    let shown = String::from_utf8_lossy(log);
    match execguard_os::audit::open_log(log) {
        Ok(fd) => execguard_os::raw::close(fd),
        Err(errno) => {
            let why = if errno == libc::EINVAL {
                "not a regular file".to_string()
            } else {
                std::io::Error::from_raw_os_error(errno).to_string()
            };
            bail!(
                "audit_unwritable: cannot append to the audit log {shown}: {why}; name a writable regular file with --audit"
            )
        }
    }
    if policy.seal() {
        let canonical = Path::new(std::ffi::OsStr::from_bytes(log)).canonicalize()?;
        if policy
            .mutable_root_of(canonical.as_os_str().as_bytes())
            .is_none()
        {
            bail!(
                "audit_unwritable: the audit log {shown} lies outside the write set of the policy, which is all a sealed session may write; add it to mutable_roots or name a file in the workspace, $HOME or /tmp"
            );
        }
    }
    Ok(())
}

/// Records the decision on the session's first command (made by `execguard run` itself, not
/// by the guard) as the guard records every later one: a refusal always, an allowed command
/// under `audit_allow` or breakglass. `Err` is a record that was due and could not be written:
/// the caller then refuses the command (`audit_unwritable`), as the guard would refuse it.
///
/// `kept`: the writer of a kept audit, which takes the record from this process directly (the
/// session, and with it the writer's thread, does not exist yet).
pub fn audit_first_command(
    policy: &Policy<'_>,
    verdict: &Verdict,
    command: &[OsString],
    target: &[u8],
    kept: Option<&execguard_audit::writer::Writer>,
) -> std::result::Result<(), FirstCommandUnaudited> {
    let Some(log) = policy.audit_log() else {
        return Ok(());
    };
    let (decision, reason, path) = match verdict {
        Verdict::Allow(reason) if policy.audit_allow() || *reason == Reason::Breakglass => {
            (Decision::Allow, *reason, target)
        }
        Verdict::Deny { reason, path, .. } => (Decision::Deny, *reason, path.as_bytes()),
        _ => return Ok(()),
    };
    let asked = command.first().map_or(&b""[..], |c| c.as_bytes());
    // A kept audit's socket answers an allowed command's record once it is kept, a refusal's
    // once it is handed over (as `execguard_os::audit::send` does for the guard's).
    let answer = match decision {
        Decision::Allow => execguard_os::audit::Answer::Wait,
        Decision::Deny | Decision::Notice => execguard_os::audit::Answer::Delivered,
    };
    let kept_or_appended = crate::assurance::write_start_record(
        policy,
        kept,
        decision,
        reason.code(),
        path,
        asked,
        answer,
    );
    kept_or_appended.map_err(|()| FirstCommandUnaudited {
        log: String::from_utf8_lossy(log).into_owned(),
    })
}

/// The record of the session's first command was due and could not be written (said on
/// stderr already, as the guard says it).
#[derive(Debug, thiserror::Error)]
#[error("failed to append the first command's record to the audit log {log}")]
pub struct FirstCommandUnaudited {
    pub log: String,
}

/// The home directory of a password-database entry, if any.
fn passwd_home(pw: *const libc::passwd) -> Option<PathBuf> {
    // SAFETY: `pw` is NULL or points at the entry getpwuid/getpwnam returned, valid until the
    // next getpw* call; the directory string is copied out at once.
    unsafe {
        if pw.is_null() || (*pw).pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr((*pw).pw_dir);
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())))
    }
}

/// The operator's home directories, canonical: `$HOME`, the password entry of this uid (they
/// differ under `sudo -E` or a changed `HOME`), and under `sudo` the invoking user's
/// (`SUDO_USER`), whose home `sudo image run` would otherwise mount read-write.
pub fn operator_homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    // SAFETY: getuid has no preconditions; getpwuid takes a plain integer.
    homes.extend(passwd_home(unsafe { libc::getpwuid(libc::getuid()) }));
    if let Some(user) =
        std::env::var_os("SUDO_USER").and_then(|u| std::ffi::CString::new(u.as_bytes()).ok())
    {
        // SAFETY: `user` is a NUL-terminated string that outlives the call.
        homes.extend(passwd_home(unsafe { libc::getpwnam(user.as_ptr()) }));
    }
    homes
        .into_iter()
        .filter_map(|h| crate::paths::canonical(&h).ok())
        .filter(|h| h != Path::new("/"))
        .collect()
}

/// The workspace, canonical, or a typed refusal: `workspace_not_directory` (a file given as
/// `--workspace` would leave the real project unprotected), `workspace_too_broad`.
pub fn check_workspace(workspace: &Path) -> Result<PathBuf> {
    let canonical = crate::paths::canonical(workspace).map_err(|e| {
        anyhow::anyhow!(
            "workspace_not_directory: workspace {}: {e}; name the project directory",
            workspace.display()
        )
    })?;
    if !canonical.is_dir() {
        bail!(
            "workspace_not_directory: workspace {} is not a directory; name the project directory (--workspace DIR)",
            workspace.display()
        );
    }
    let homes = operator_homes();
    let homes: Vec<&[u8]> = homes.iter().map(|h| h.as_os_str().as_bytes()).collect();
    let broad =
        execguard_policy::workspace::broad_workspace(canonical.as_os_str().as_bytes(), &homes);
    if let Some(why) = broad {
        bail!(
            "workspace_too_broad: workspace {}: {why}; name the project directory (--workspace DIR)",
            canonical.display()
        );
    }
    Ok(canonical)
}

/// The audit log is ready before anything is built: writable the way the guard opens it,
/// remembered by its canonical name, and announced when it is the default one.
pub fn audit_log_ready(policy: &Policy<'_>, default_log: bool) -> Result<()> {
    let Some(log) = policy.audit_log() else {
        return Ok(());
    };
    // A kept log is its writer's: no process of the session opens it.
    if policy.audit_socket().is_none() {
        check_audit_log(policy, log)?;
        // Opened there with no link as its last component, in a canonical directory.
        crate::paths::remember_canonical(Path::new(std::ffi::OsStr::from_bytes(log)));
    }
    if default_log {
        announce_default_log(log);
    }
    Ok(())
}

/// The guard library, which must lie outside the write set: a guard the session can rewrite
/// guards nothing.
pub fn guard_outside_write_set(policy: &Policy<'_>) -> Result<PathBuf> {
    let lib = crate::runtimes::guard_library()?;
    if let Some(root) = policy.mutable_root_of(lib.as_os_str().as_bytes()) {
        bail!(
            "{} lies in the mutable root {}: install it elsewhere (e.g. cargo build outside the workspace) or set EXECGUARD_LIB",
            lib.display(),
            String::from_utf8_lossy(root)
        );
    }
    Ok(lib)
}
