//! The seal glue: the partition a policy describes, and the call into `execguard_seal` that
//! seals this process for the session (then its inherited descriptors are opened again).

use execguard_policy::{Policy, Profile};
use std::path::{Path, PathBuf};

/// The partition a policy describes (docs/write-set.md): its mutable roots are the write set,
/// its exec dirs the execute side inside it, and under `development` and `build` the
/// workspace gets both rights.
/// Each name is resolved as this process resolved it when it checked it
/// ([`crate::paths::canonical`]), never afresh: this is built before the fork and the seal
/// works from it, by these names.
pub fn partition(policy: &Policy) -> execguard_seal::Partition {
    partition_with_temp(policy, None)
}

/// [`partition`], with the session's own temp dir (a development session's,
/// [`crate::session_temp`]) a write-set root of its own that gets both rights, as the
/// workspace does.
pub fn partition_with_temp(policy: &Policy, temp: Option<&Path>) -> execguard_seal::Partition {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let path = |b: &[u8]| PathBuf::from(OsStr::from_bytes(b));
    let both = match policy.profile() {
        Profile::Development | Profile::Build => Some(path(policy.workspace())),
        _ => None,
    };
    let temp = both
        .is_some()
        .then_some(temp)
        .flatten()
        .map(Path::to_path_buf);
    execguard_seal::Partition::resolved(
        policy.mutable_roots().map(path).chain(temp.clone()),
        policy.exec_dirs().map(path),
        both.into_iter().chain(temp),
        &|p| crate::paths::canonical(p).ok(),
    )
}

/// Seals this process for the session `policy` describes: the `noexec` mounts, the Landlock
/// partition and the seccomp filter (executable memfds refused in strict sessions). Without
/// the mounts a program that maps a written file executable itself would run it, so a session
/// the kernel cannot give them is refused, unless `allow_exec_mappings` accepts it (then said
/// once and reported `reduced:mappings_guard_only`).
pub fn seal(
    policy: &Policy,
    partition: &execguard_seal::Partition,
    allow_exec_mappings: bool,
    carry: Option<&std::os::fd::OwnedFd>,
    world: Option<&execguard_seal::world::World>,
) -> Result<execguard_seal::Enforcement, execguard_seal::SealError> {
    // A path that does not exist gets no rule: make the audit log now, so it can be written.
    if let Some(log) = policy.audit_log() {
        use std::os::unix::ffi::OsStrExt;
        let log = Path::new(std::ffi::OsStr::from_bytes(log));
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a link put in its place since the CLI checked it.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(log)
            .map_err(|e| execguard_seal::SealError::Apply {
                step: "create the audit log",
                detail: format!("{}: {e}", log.display()),
            })?;
    }
    let enforcement = execguard_seal::seal(
        partition,
        &execguard_seal::Options {
            memfd_noexec: policy.profile() == Profile::Strict,
            mounts: if allow_exec_mappings {
                execguard_seal::MountsMode::BestEffort
            } else {
                execguard_seal::MountsMode::Required
            },
            reduced: match policy.profile() {
                Profile::Strict => None,
                p => Some(execguard_policy::Reduction::Profile(p)),
            },
            world,
        },
    )?;
    crate::inherited::reopen_inherited(carry)?;
    Ok(enforcement)
}
