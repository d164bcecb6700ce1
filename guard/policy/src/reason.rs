//! Stable reason codes. They appear on stderr, in audit records and in `execguard check`;
//! never rename one, only add. [`Reason::way_forward`] is the one table of what a person can
//! do after a refusal, by reason and profile: the guard's stderr line, `execguard run`'s first
//! command, `execguard check` and the end-of-session summary all print it from here.

use crate::Profile;

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

    /// Is this a refusal (not one of the informational codes an allowed exec carries)?
    pub const fn is_refusal(self) -> bool {
        !matches!(self, Self::Allowed | Self::Breakglass)
    }

    /// The way forward after a refusal for this reason under `profile` (`None`: the profile
    /// is not known, as when there is no policy): one sentence a person can act on, ending
    /// the refusal's stderr line. Empty only for the informational codes.
    pub const fn way_forward(self, profile: Option<Profile>) -> &'static str {
        use Profile::{Breakglass, Build, Development, Strict};
        match (self, profile) {
            (Self::MutableNative, Some(Strict) | None) => "native code written in this session does not run under strict; to run what the workspace builds, start the session with `execguard run --profile development`",
            (Self::MutableNative, Some(Development | Build | Breakglass)) => "this profile runs native code the session wrote only from the workspace, the session's temp directory (`$TMPDIR`, its own /tmp) and its home, never from /dev/shm or the runtime directory: build or install it there",
            (Self::AnonymousNative, Some(Strict) | None) => "a program with no file on disk (memfd, O_TMPFILE, deleted) never runs under strict; write it to a file in the workspace and run that under `--profile development`, or use `--profile build`",
            (Self::AnonymousNative, Some(Development)) => "a program with no file on disk (memfd, O_TMPFILE, deleted) does not run under development; write it to a file in the workspace and run that, or use `--profile build`",
            (Self::AnonymousNative, Some(Build | Breakglass)) => "keep the file on disk until it has started",
            (Self::PreloadMutable, Some(Strict) | None) => "under strict LD_PRELOAD and LD_AUDIT name only libraries installed outside the session: unset it, or load a library the workspace builds under `--profile development`",
            (Self::PreloadMutable, Some(Development | Build | Breakglass)) => "preload a library from a file on disk, not a memfd or a deleted file",
            (Self::LibraryPathMutable, Some(Strict) | None) => "under strict LD_LIBRARY_PATH, GCONV_PATH and LD_ORIGIN_PATH name only directories outside the session: unset it or point it at installed libraries, or load what the workspace builds under `--profile development`",
            (Self::LibraryPathMutable, Some(Development | Build | Breakglass)) => "name directories on disk, not a deleted one",
            (Self::ProtectedRuntimeDirect, _) => "start it by its command name (`git`, `node`: the session's PATH leads to its wrapper), not by the real binary's path",
            (Self::ProtectedRuntimeScript, _) => "run the script through the runtime's command (`node script.js`, `git ...`), which goes through its wrapper, rather than executing the script itself",
            (Self::CommandNotAllowed, _) => "the policy's allow_commands does not name it: ask the operator to add it, or run it outside the session",
            (Self::UnreadableMutable, _) => "make the file readable (`chmod u+r`) so the guard can inspect it",
            (Self::MutableUnknownFormat, _) => "give the file a `#!` line or run it with its interpreter",
            (Self::ShebangTooDeep, _) => "call the last interpreter of the `#!` chain directly",
            (Self::ShebangAmbiguous, _) => "simplify the `#!` line (no quotes, escapes or `$` in `env -S`, no `env -C`), or run the script with its interpreter",
            (Self::LoaderAmbiguous, _) => "give the loader the program by a path that exists and holds a `/` (`ld.so ./prog`), or run the program itself",
            (Self::ArgvEmpty, _) => "pass the program's name as argv[0]",
            (Self::PathTooLong, _) => "reach the file by a shorter name (cd closer and use a relative one), or move it",
            (Self::EnvironmentTooLarge, _) => "pass fewer than 2048 environment entries",
            (Self::EnvironmentNotSticky, _) => "keep LD_PRELOAD and EXECGUARD_POLICY in environ before system() or popen(), or exec with an environment of your own",
            (Self::PolicyMissing, _) => "start the command with `execguard run`, which brings the session's policy",
            (Self::PolicyInvalid, _) => "find what is wrong with `execguard policy validate FILE`",
            (Self::PolicyUntrusted, _) => "make the policy file and its directories root-owned and writable by root alone",
            (Self::ProcUnavailable, _) => "mount /proc: the guard needs it to see what would run",
            (Self::AuditUnwritable, _) => "make room for the audit log or fix its permissions (`execguard run --audit FILE` names another)",
            (Self::InternalError, _) => "try again; if it repeats, report it with its audit record",
            (Self::SyscallX32, _) => "exec through the x86-64 system call, not the x32 one",
            (Self::SpawnActions, _) => "give posix_spawn fewer file actions (at most 16 descriptors), or fork and exec",
            (Self::Breakglass | Self::Allowed, _) => "",
        }
    }

    /// Looks a code up (for `execguard audit` and tests).
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_a_way_forward_in_every_profile() {
        let profiles = Profile::ALL.map(Some);
        for reason in Reason::ALL {
            for profile in profiles.iter().copied().chain([None]) {
                let way = reason.way_forward(profile);
                assert_eq!(
                    way.is_empty(),
                    !reason.is_refusal(),
                    "{reason:?} under {profile:?}"
                );
                // One line, with no separator the refusal line uses before it.
                assert!(!way.contains('\n') && !way.contains(" -- "), "{way}");
            }
        }
    }

    #[test]
    fn strict_points_native_code_at_development() {
        for profile in [Some(Profile::Strict), None] {
            assert!(Reason::MutableNative
                .way_forward(profile)
                .contains("--profile development"));
        }
        assert!(!Reason::MutableNative
            .way_forward(Some(Profile::Development))
            .contains("--profile development"));
    }
}
