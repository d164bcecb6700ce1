//! Stable reason codes. They appear on stderr, in audit records and in `execguard check`;
//! never rename one, only add.

/// Why the guard refused (or emulated a kernel error for) an exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// An ELF file from a mutable root would be mapped as code.
    MutableNative,
    /// An ELF file with no name on disk (memfd, `O_TMPFILE`, deleted) would be mapped as code.
    AnonymousNative,
    /// `LD_PRELOAD`, `LD_AUDIT` or the loader's `--preload`/`--audit` names a mutable shared object.
    PreloadMutable,
    /// `LD_LIBRARY_PATH`, `GCONV_PATH`, `LD_ORIGIN_PATH` or the loader's `--library-path`
    /// names a mutable directory.
    LibraryPathMutable,
    /// A protected runtime was started by a process that is not its wrapper.
    ProtectedRuntimeDirect,
    /// A script in a mutable place selects a protected runtime with its `#!` line.
    ProtectedRuntimeScript,
    /// An allow-list is in force and this command is not on it.
    CommandNotAllowed,
    /// A file in a mutable root cannot be read, so it cannot be inspected.
    UnreadableMutable,
    /// A file in a mutable root is neither ELF nor `#!`: the guard answers `ENOEXEC` for the kernel.
    MutableUnknownFormat,
    /// The `#!` chain is deeper than the kernel follows.
    ShebangTooDeep,
    /// A `#!` line (or `env -S` string) the guard cannot interpret the way the kernel or `env` would.
    ShebangAmbiguous,
    /// A direct loader invocation whose program the guard cannot identify.
    LoaderAmbiguous,
    /// `argv` is NULL or empty.
    ArgvEmpty,
    /// A path or argument is longer than the guard's fixed buffers.
    PathTooLong,
    /// The new environment has more entries than the guard can rewrite.
    EnvironmentTooLarge,
    /// The child environment lacks the guard, and this entry point cannot restore it.
    EnvironmentNotSticky,
    /// No policy was found.
    PolicyMissing,
    /// The policy does not parse or validate.
    PolicyInvalid,
    /// The policy (or runtime state) is not root-owned or is writable by others.
    PolicyUntrusted,
    /// `/proc` is not available, so the guard cannot see what the kernel would open.
    ProcUnavailable,
    /// The audit log could not be written and the policy asks for a record.
    AuditUnwritable,
    /// The guard could not finish its checks.
    InternalError,
    /// An x32-ABI exec system call (argv of 32-bit pointers), which the guard does not decode.
    SyscallX32,
    /// `posix_spawn` file actions the guard cannot replay to know what the child will exec.
    SpawnActions,
    /// Informational: breakglass profile allowed it (audited).
    Breakglass,
    /// Informational: every check passed.
    Allowed,
}

impl Reason {
    /// Every reason, for documentation and tests.
    pub const ALL: [Reason; 26] = [
        Self::MutableNative,
        Self::AnonymousNative,
        Self::PreloadMutable,
        Self::LibraryPathMutable,
        Self::ProtectedRuntimeDirect,
        Self::ProtectedRuntimeScript,
        Self::CommandNotAllowed,
        Self::UnreadableMutable,
        Self::MutableUnknownFormat,
        Self::ShebangTooDeep,
        Self::ShebangAmbiguous,
        Self::LoaderAmbiguous,
        Self::ArgvEmpty,
        Self::PathTooLong,
        Self::EnvironmentTooLarge,
        Self::EnvironmentNotSticky,
        Self::PolicyMissing,
        Self::PolicyInvalid,
        Self::PolicyUntrusted,
        Self::ProcUnavailable,
        Self::AuditUnwritable,
        Self::InternalError,
        Self::SyscallX32,
        Self::SpawnActions,
        Self::Breakglass,
        Self::Allowed,
    ];

    /// The stable snake_case code.
    pub const fn code(self) -> &'static str {
        match self {
            Self::MutableNative => "mutable_native",
            Self::AnonymousNative => "anonymous_native",
            Self::PreloadMutable => "preload_mutable",
            Self::LibraryPathMutable => "library_path_mutable",
            Self::ProtectedRuntimeDirect => "protected_runtime_direct",
            Self::ProtectedRuntimeScript => "protected_runtime_script",
            Self::CommandNotAllowed => "command_not_allowed",
            Self::UnreadableMutable => "unreadable_mutable",
            Self::MutableUnknownFormat => "mutable_unknown_format",
            Self::ShebangTooDeep => "shebang_too_deep",
            Self::ShebangAmbiguous => "shebang_ambiguous",
            Self::LoaderAmbiguous => "loader_ambiguous",
            Self::ArgvEmpty => "argv_empty",
            Self::PathTooLong => "path_too_long",
            Self::EnvironmentTooLarge => "environment_too_large",
            Self::EnvironmentNotSticky => "environment_not_sticky",
            Self::PolicyMissing => "policy_missing",
            Self::PolicyInvalid => "policy_invalid",
            Self::PolicyUntrusted => "policy_untrusted",
            Self::ProcUnavailable => "proc_unavailable",
            Self::AuditUnwritable => "audit_unwritable",
            Self::InternalError => "internal_error",
            Self::SyscallX32 => "syscall_x32",
            Self::SpawnActions => "spawn_actions",
            Self::Breakglass => "breakglass",
            Self::Allowed => "allowed",
        }
    }

    /// One sentence for humans (`execguard check`, README).
    pub const fn describe(self) -> &'static str {
        match self {
            Self::MutableNative => "an ELF file from a mutable root would be mapped as code",
            Self::AnonymousNative => "an ELF file with no name on disk (memfd, O_TMPFILE, deleted) would be mapped as code",
            Self::PreloadMutable => "LD_PRELOAD, LD_AUDIT or the loader's --preload/--audit names a mutable shared object",
            Self::LibraryPathMutable => "LD_LIBRARY_PATH, GCONV_PATH, LD_ORIGIN_PATH or the loader's --library-path names a mutable directory",
            Self::ProtectedRuntimeDirect => "a protected runtime may only be started by its wrapper",
            Self::ProtectedRuntimeScript => "a mutable script selects a protected runtime in its #! line",
            Self::CommandNotAllowed => "the policy's allow-list does not name this command",
            Self::UnreadableMutable => "a file in a mutable root cannot be read, so it cannot be inspected",
            Self::MutableUnknownFormat => "a mutable file is neither ELF nor #!: answered ENOEXEC",
            Self::ShebangTooDeep => "the #! chain is deeper than the kernel follows",
            Self::ShebangAmbiguous => "a #! line or env -S string the guard cannot interpret exactly",
            Self::LoaderAmbiguous => "a direct loader invocation whose program cannot be identified",
            Self::ArgvEmpty => "argv is NULL or empty",
            Self::PathTooLong => "a path or argument is longer than the guard's fixed buffers",
            Self::EnvironmentTooLarge => "the new environment has more entries than the guard can rewrite",
            Self::EnvironmentNotSticky => "the child environment lacks the guard and cannot be restored here",
            Self::PolicyMissing => "no policy was found",
            Self::PolicyInvalid => "the policy does not parse or validate",
            Self::PolicyUntrusted => "the policy or runtime state is not root-owned or is writable by others",
            Self::ProcUnavailable => "/proc is unavailable, so the opened file cannot be identified",
            Self::AuditUnwritable => "the audit log could not be written",
            Self::InternalError => "the guard could not finish its checks",
            Self::SyscallX32 => "an x32-ABI exec system call, whose 32-bit argv the guard does not decode",
            Self::SpawnActions => "posix_spawn file actions the guard cannot replay (an unknown kind, too many descriptors, a name too long)",
            Self::Breakglass => "breakglass profile: allowed and audited",
            Self::Allowed => "every check passed",
        }
    }

    /// Looks a code up (for `execguard audit` and tests).
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }
}
