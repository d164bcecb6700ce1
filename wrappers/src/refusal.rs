//! Typed refusals: a stable snake_case reason code plus a human detail.
//!
//! The code is what scripts and the audit log match on; the detail is for people.

use std::fmt;

/// Why a wrapper refused to start its runtime. The string forms (`as_str`) are stable and
/// documented in `wrappers/README.md`, each with the threat it stops.
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
    /// `submodule foreach`, `instaweb`, `remote-ext`).
    CommandSubcommand,
    /// A config key that runs a command, from any source.
    ConfigKey,
    /// `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT/KEY_n/VALUE_n`, a `-c`/`--config-env` spec or
    /// a config file that git itself would reject (refused rather than guessed at).
    ConfigMalformed,
    /// An environment variable that makes git run a command (`GIT_SSH_COMMAND`,
    /// `GIT_EXTERNAL_DIFF`, ...).
    EnvOverride,
    /// `--exec-path=<dir>`, or a `GIT_EXEC_PATH` that is neither the session's shim nor git's
    /// own exec-path.
    ExecPath,
    /// An alias whose body is a shell command (`!`).
    AliasShell,
    /// An alias loop, or nesting deeper than git allows.
    AliasLoop,
    /// An empty alias.
    AliasUnresolved,
    /// A URL whose transport is a remote helper that is not git's own (`ext::`, `evil::x`,
    /// `foo://`): git would run `git-remote-<name>` from `PATH`.
    TransportHelper,
    /// A sequencer todo list (`.git/rebase-merge/git-rebase-todo`) holding `exec` lines, on
    /// `rebase --continue/--skip/--edit-todo`.
    TodoExec,
    /// node: an option that loads code or configuration before the script (`-r`, `--import`,
    /// `--loader`, `--env-file`, `--openssl-config`, ...).
    NodeCodeLoading,
    /// node: the inspector or another debugging entry point (`--inspect*`).
    NodeInspector,
    /// node: `--run` (runs a package.json script through a shell).
    NodeRun,
    /// node: a script of a protected provider (the image's Gemini bundle), which would run
    /// that provider without its provider policy.
    NodeProviderScript,
    /// A config file could not be read, so aliases and command-running keys could not be
    /// checked.
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
            Reason::AliasShell => "alias_shell",
            Reason::AliasLoop => "alias_loop",
            Reason::AliasUnresolved => "alias_unresolved",
            Reason::TransportHelper => "transport_helper",
            Reason::TodoExec => "todo_exec",
            Reason::NodeCodeLoading => "node_code_loading",
            Reason::NodeInspector => "node_inspector",
            Reason::NodeRun => "node_run",
            Reason::NodeProviderScript => "node_provider_script",
            Reason::ConfigUnreadable => "config_unreadable",
            Reason::UnknownOption => "unknown_option",
            Reason::Traced => "traced",
        }
    }

    /// How to proceed, when the refusal site has nothing more specific to say.
    pub fn default_hint(self) -> &'static str {
        match self {
            Reason::HookBypass => "run it without the bypass: the repository's hooks must run (fix what a failing hook reports)",
            Reason::CommandOption => "leave the option out and run that program as a command of its own",
            Reason::CommandSubcommand => "run the commands yourself, one by one",
            Reason::ConfigKey => "remove the key from the source named, or do this outside the session",
            Reason::ConfigMalformed => "fix the syntax (git itself would reject it)",
            Reason::EnvOverride => "unset the variable (git's defaults do the same job without running a program of the caller's choosing)",
            Reason::ExecPath => "unset GIT_EXEC_PATH and drop --exec-path=: git finds its own helpers",
            Reason::AliasShell => "run the alias's command yourself",
            Reason::AliasLoop => "fix the alias definitions",
            Reason::AliasUnresolved => "define the alias, or call the git command itself",
            Reason::TransportHelper => "use a URL git handles itself (https://, ssh://, git://, a path or file://)",
            Reason::TodoExec => "remove the exec lines from the todo list (`git rebase --edit-todo` is not needed: edit the file) and run those commands yourself, or `git rebase --abort`",
            Reason::NodeCodeLoading => "load the module from the script itself (import/require), or run it as its own script",
            Reason::NodeInspector => "debug outside the session",
            Reason::NodeRun => "use `npm run <script>`",
            Reason::NodeProviderScript => "start the provider by its command (it runs through its provider policy)",
            Reason::ConfigUnreadable => "make the config file readable (or remove it)",
            Reason::UnknownOption => "check the spelling against `git help git`",
            Reason::Traced => "run it without a debugger or tracer attached",
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
        Reason::AliasShell,
        Reason::AliasLoop,
        Reason::AliasUnresolved,
        Reason::TransportHelper,
        Reason::TodoExec,
        Reason::NodeCodeLoading,
        Reason::NodeInspector,
        Reason::NodeRun,
        Reason::NodeProviderScript,
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

/// A refusal, the one type every part of execguard outside the guard refuses with (the
/// wrappers, the container's entrypoint and provider, `execguard image`): a stable reason code,
/// a one-line detail and, when there is one, how to proceed. `Display` gives `refused <code>:
/// <detail>` and `; to proceed: <hint>`, the text after the `<program>: ` prefix of the stderr
/// line. The wrappers' refusals always say how to proceed ([`Refusal::new`]: the reason's
/// default way, or a more specific one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused {code}: {detail}{}", self.hint().map(|h| format!("; to proceed: {h}")).unwrap_or_default())]
pub struct Refusal {
    code: &'static str,
    detail: String,
    hint: Option<String>,
}

impl Refusal {
    /// A wrapper's refusal, with the reason's default way to proceed.
    pub fn new(reason: Reason, detail: impl Into<String>) -> Self {
        Refusal {
            code: reason.as_str(),
            detail: detail.into(),
            hint: Some(reason.default_hint().into()),
        }
    }

    /// A refusal by its stable code alone (the entrypoint's and the image's codes: docs/image.md,
    /// docs/cli.md).
    pub fn coded(code: &'static str, detail: impl Into<String>) -> Self {
        Refusal {
            code,
            detail: detail.into(),
            hint: None,
        }
    }

    /// A more specific way to proceed than the reason's default.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The stable reason code, e.g. `hook_bypass`.
    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// How to proceed, when the refusal says it apart from its detail.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }
}
