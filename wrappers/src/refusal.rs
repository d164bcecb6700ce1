//! Typed refusals: a stable snake_case reason code plus a human detail.
//!
//! The code is what scripts and the audit log match on; the detail is for people.

use std::fmt;

/// Why a wrapper refused to start its runtime. The string forms (`as_str`) are stable and
/// documented in `wrappers/README.md`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// An option or config change that skips or redirects repository hooks (`--no-verify`,
    /// `commit -n`, `core.hooksPath`).
    HookBypass,
    /// An option that makes git run a command of the caller's choosing (`rebase -x`,
    /// `--upload-pack`, `grep -O`, ...).
    CommandOption,
    /// A subcommand that exists to run arbitrary commands (`filter-branch`, `bisect run`,
    /// `submodule foreach`, `instaweb`).
    CommandSubcommand,
    /// A config key that runs a command or redirects git's control plane, from any source.
    ConfigKey,
    /// `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT/KEY_n/VALUE_n` or a `-c`/`--config-env`
    /// spec that git itself would reject (refused rather than guessed at).
    ConfigMalformed,
    /// An environment variable that overrides git's control plane (`GIT_SSH_COMMAND`, `PAGER`,
    /// `GIT_TRACE` to a file, ...).
    EnvOverride,
    /// `--exec-path` in any form, or a `GIT_EXEC_PATH` that is not a valid shim directory.
    ExecPath,
    /// `--git-dir`, `--work-tree`, `GIT_DIR`, `GIT_INDEX_FILE`, ... pointing away from the
    /// repository git would find by itself.
    RepositoryOverride,
    /// An alias whose body is a shell command (`!`).
    AliasShell,
    /// An alias loop, or nesting deeper than git allows.
    AliasLoop,
    /// The alias could not be resolved (the real git's config could not be read).
    AliasUnresolved,
    /// A git URL using the `ext::` transport, which runs a command.
    ExtTransport,
    /// node: code given inline or from stdin (`-e`, `-p`, REPL, `-`).
    NodeInlineCode,
    /// node: an option that loads code or configuration before the script (`-r`, `--import`,
    /// `--loader`, `--env-file`, `--openssl-config`, ...).
    NodeCodeLoading,
    /// node: the inspector or another debugging entry point (`--inspect*`).
    NodeInspector,
    /// node: `--run` (runs a package.json script through a shell).
    NodeRun,
    /// The real git's config could not be read, so aliases and repository config could not
    /// be checked.
    ConfigUnreadable,
    /// A global option git does not know (refused rather than guessed at).
    UnknownOption,
    /// The process is being traced (ptrace); the wrapper will not run under a tracer.
    Traced,
}

impl Reason {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::HookBypass => "hook_bypass",
            Reason::CommandOption => "command_option",
            Reason::CommandSubcommand => "command_subcommand",
            Reason::ConfigKey => "config_key",
            Reason::ConfigMalformed => "config_malformed",
            Reason::EnvOverride => "env_override",
            Reason::ExecPath => "exec_path",
            Reason::RepositoryOverride => "repository_override",
            Reason::AliasShell => "alias_shell",
            Reason::AliasLoop => "alias_loop",
            Reason::AliasUnresolved => "alias_unresolved",
            Reason::ExtTransport => "ext_transport",
            Reason::NodeInlineCode => "node_inline_code",
            Reason::NodeCodeLoading => "node_code_loading",
            Reason::NodeInspector => "node_inspector",
            Reason::NodeRun => "node_run",
            Reason::ConfigUnreadable => "config_unreadable",
            Reason::UnknownOption => "unknown_option",
            Reason::Traced => "traced",
        }
    }

    /// Every reason, for documentation tests.
    pub const ALL: &'static [Reason] = &[
        Reason::HookBypass,
        Reason::CommandOption,
        Reason::CommandSubcommand,
        Reason::ConfigKey,
        Reason::ConfigMalformed,
        Reason::EnvOverride,
        Reason::ExecPath,
        Reason::RepositoryOverride,
        Reason::AliasShell,
        Reason::AliasLoop,
        Reason::AliasUnresolved,
        Reason::ExtTransport,
        Reason::NodeInlineCode,
        Reason::NodeCodeLoading,
        Reason::NodeInspector,
        Reason::NodeRun,
        Reason::ConfigUnreadable,
        Reason::UnknownOption,
        Reason::Traced,
    ];
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused invocation. `Display` gives `refused <code>: <detail>`, the text after the
/// `execguard-<tool>: ` prefix of the stderr line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused {reason}: {detail}")]
pub struct Refusal {
    reason: Reason,
    detail: String,
}

impl Refusal {
    pub fn new(reason: Reason, detail: impl Into<String>) -> Self {
        Refusal {
            reason,
            detail: detail.into(),
        }
    }

    /// The stable reason code, e.g. `hook_bypass`.
    pub fn code(&self) -> &'static str {
        self.reason.as_str()
    }

    pub fn reason(&self) -> Reason {
        self.reason
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }
}
