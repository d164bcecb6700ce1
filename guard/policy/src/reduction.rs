//! Why a session runs with less assurance than a strict, sealed one: one stable name per
//! reduction, for every layer that reports one (the seal, `execguard doctor`, the container's
//! runtime state). The names appear in start records and state files: never rename one.

use crate::Profile;

/// One reduction of a session's assurance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reduction {
    /// A profile other than `strict` (`development`, `build`, `breakglass`): its name.
    Profile(Profile),
    /// An arbitrary command runs instead of the provider (the container).
    ArbitraryCommand,
    /// Strict without the Landlock seal (the kernel cannot enforce it; the operator accepted).
    Unsealed,
    /// Strict with a writable write-set mount that is not `noexec` (the container; the
    /// operator accepted).
    ExecMappings,
    /// The workspace's provider configuration loads in a strict session (the container).
    RepoConfig,
    /// The exec dirs are not all mounted executable: programs in them may not run.
    ExecDirsNoexec,
    /// The write set is not mounted `noexec`: the guard alone refuses written objects to the
    /// loader, not a program mapping a written file executable itself.
    MappingsGuardOnly,
    /// The workspace is granted both write and execute (a reduced profile without a reason
    /// of its own).
    WorkspaceWritableAndExecutable,
    /// Executable memfds are allowed.
    MemfdExecAllowed,
    /// A mount of the write set is not `noexec`.
    WriteSetNotAllNoexec,
    /// Part of the write set is reachable by another name (`execguard doctor`).
    WriteSetAliased,
    /// No policy is in force (`execguard doctor`).
    NoPolicy,
    /// No seccomp filter is installed (`execguard doctor`).
    NoSeccomp,
    /// The session writes the operator's `$HOME` itself, not a home layer of its own
    /// (`--allow-shared-home`).
    SharedHome,
    /// The session shares the operator's temp and runtime dirs (`--allow-shared-temp`).
    SharedTemp,
    /// The session can reach the sockets of processes outside it (`--allow-outside-sockets`).
    OutsideSockets,
    /// The session shares the host's network, its loopback services included
    /// (`--allow-host-network`).
    HostNetwork,
    /// The kept audit's signing key is not hidden from the session (no mount namespace):
    /// the session could sign a log of its own making (docs/audit.md).
    AuditKeyReadable,
}

impl Reduction {
    /// Every reduction, for parsing, documentation and tests.
    pub const ALL: [Reduction; 20] = [
        Self::Profile(Profile::Development),
        Self::Profile(Profile::Build),
        Self::Profile(Profile::Breakglass),
        Self::ArbitraryCommand,
        Self::Unsealed,
        Self::ExecMappings,
        Self::RepoConfig,
        Self::ExecDirsNoexec,
        Self::MappingsGuardOnly,
        Self::WorkspaceWritableAndExecutable,
        Self::MemfdExecAllowed,
        Self::WriteSetNotAllNoexec,
        Self::WriteSetAliased,
        Self::NoPolicy,
        Self::NoSeccomp,
        Self::SharedHome,
        Self::SharedTemp,
        Self::OutsideSockets,
        Self::HostNetwork,
        Self::AuditKeyReadable,
    ];

    /// The stable name. (The container's names were kebab-case before the seal's existed,
    /// and state files keep them.)
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Profile(p) => p.as_str(),
            Self::ArbitraryCommand => "arbitrary-command",
            Self::Unsealed => "unsealed",
            Self::ExecMappings => "exec-mappings",
            Self::RepoConfig => "repo-config",
            Self::ExecDirsNoexec => "exec_dirs_noexec",
            Self::MappingsGuardOnly => "mappings_guard_only",
            Self::WorkspaceWritableAndExecutable => "workspace_writable_and_executable",
            Self::MemfdExecAllowed => "memfd_exec_allowed",
            Self::WriteSetNotAllNoexec => "write_set_not_all_noexec",
            Self::WriteSetAliased => "write_set_aliased",
            Self::NoPolicy => "no_policy",
            Self::NoSeccomp => "no_seccomp",
            Self::SharedHome => "shared_home",
            Self::SharedTemp => "shared_temp",
            Self::OutsideSockets => "outside_sockets",
            Self::HostNetwork => "host_network",
            Self::AuditKeyReadable => "audit_key_readable",
        }
    }

    /// Looks a name up; `strict` and anything unknown are `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// `reduced:<name>[,<name>...]`, the form every layer's assurance prints a non-empty list in.
pub fn write_reduced(
    f: &mut core::fmt::Formatter<'_>,
    reductions: &[Reduction],
) -> core::fmt::Result {
    f.write_str("reduced:")?;
    for (i, r) in reductions.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        f.write_str(r.as_str())?;
    }
    Ok(())
}

impl core::fmt::Display for Reduction {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_its_own_and_strict_is_none() {
        for r in Reduction::ALL {
            assert_eq!(Reduction::from_name(r.as_str()), Some(r));
        }
        let mut names: std::vec::Vec<_> = Reduction::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reduction::ALL.len());
        assert_eq!(Reduction::from_name("strict"), None);
    }
}
