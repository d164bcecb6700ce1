//! Why the seal could not be applied: [`SealError`], one refusal to start, with its stable code.

use std::path::PathBuf;

/// Why the seal could not be applied. Every variant is a refusal to start (exit 2).
#[derive(Debug)]
#[non_exhaustive]
pub enum SealError {
    /// The kernel offers no Landlock, or one too old for the partition.
    Unavailable { detail: String },
    /// Building or applying the ruleset failed.
    Apply { step: &'static str, detail: String },
    /// The kernel accepted the ruleset but does not enforce all of it.
    NotEnforced,
    /// The seccomp filter could not be built or installed.
    Seccomp { detail: String },
    /// The `noexec` mounts were required and could not be made.
    Noexec { detail: String },
    /// A user namespace was entered and could not be finished (its ids mapped, its mounts
    /// made private): this process cannot leave it, so it only exits.
    NamespaceUnfinished { detail: String },
    /// Part of the write set is also reachable by a name outside it (the `aliases` module).
    WriteSetAliased { root: PathBuf, name: PathBuf },
    /// An exec dir is also reachable on the write side, or shows write-set content.
    ExecDirAliased { dir: PathBuf, name: PathBuf },
    /// A second name that cannot join the write set, or cannot be ruled out.
    AliasUnresolved { why: String },
    /// A part of the session's own world ([`crate::world`]) could not be made.
    World { detail: String },
    /// The session's own network ([`crate::network`]) could not be made.
    Network { detail: String },
}

impl SealError {
    /// Stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            SealError::Unavailable { .. } => "seal_unavailable",
            SealError::Apply { .. } => "seal_failed",
            SealError::NotEnforced => "seal_not_enforced",
            SealError::Seccomp { .. } => "seccomp_failed",
            SealError::Noexec { .. } | SealError::NamespaceUnfinished { .. } => {
                "noexec_unavailable"
            }
            SealError::WriteSetAliased { .. } => "write_set_aliased",
            SealError::ExecDirAliased { .. } => "exec_dir_aliased",
            SealError::AliasUnresolved { .. } => "write_set_aliased",
            SealError::World { .. } => "world_unavailable",
            SealError::Network { .. } => "network_unavailable",
        }
    }
}

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let code = self.code();
        match self {
            SealError::Unavailable { detail } => {
                write!(
                    f,
                    "{code}: the kernel cannot enforce the W^X partition: {detail}"
                )
            }
            SealError::Apply { step, detail } => write!(f, "{code}: failed to {step}: {detail}"),
            SealError::NotEnforced => write!(
                f,
                "{code}: the kernel did not enforce every handled Landlock right"
            ),
            SealError::Seccomp { detail } => write!(f, "{code}: {detail}"),
            SealError::Noexec { detail } => write!(f, "{code}: {detail}"),
            SealError::NamespaceUnfinished { detail } => write!(
                f,
                "{code}: {detail} (in the session's new user namespace, which this process cannot leave)"
            ),
            SealError::WriteSetAliased { root, name } => write!(
                f,
                "{code}: {} is also reachable as {} (another mount shows the same files), where what the session writes would run; add that name to mutable_roots, or unmount it",
                root.display(),
                name.display()
            ),
            SealError::ExecDirAliased { dir, name } => write!(
                f,
                "{code}: the exec dir {} is also reachable as {} (another mount shows the same files), which the session writes; unmount that, or leave the exec dir out (execguard run: --no-exec-dir), when nothing there needs to run",
                dir.display(),
                name.display()
            ),
            SealError::World { detail } => write!(
                f,
                "{code}: the session's own world could not be made: {detail}"
            ),
            SealError::Network { detail } => write!(
                f,
                "{code}: the session's own network could not be made: {detail}"
            ),
            SealError::AliasUnresolved { why } => write!(
                f,
                "{code}: {why}: a file the session writes might run by another name; unmount it"
            ),
        }
    }
}

impl std::error::Error for SealError {}
