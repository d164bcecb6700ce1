//! GitHub Copilot CLI (commander): exact names; the tool, path and URL permissions are managed.

use super::{identity, never, Arity, FlagRule, Spec, SubcommandRule, Verdict};

/// Where Copilot writes its logs (inside the managed home).
pub(crate) const LOG_DIR: &str = "/state/agent-home/.copilot/logs";

/// Hardening flags every session passes; one list so the user can never pass them too.
pub(crate) const HARDENING: &[&str] = &[
    "--no-auto-update",
    "--no-remote",
    "--no-remote-export",
    "--disable-builtin-mcps",
    "--no-custom-instructions",
    "--disallow-temp-dir",
];

pub(crate) static SPEC: Spec = Spec {
    flags: &[
        FlagRule {
            names: &["-h", "--help"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["-v", "--version"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["-p", "--prompt"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["-s", "--silent"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--model"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--continue"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--resume"],
            arity: Arity::Optional,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--log-level"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--no-color", "--banner", "--screen-reader", "--plain-diff"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--stream"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        // Restrictive: these only remove capabilities.
        FlagRule {
            names: &[
                "--deny-tool",
                "--deny-url",
                "--excluded-tools",
                "--disable-mcp-server",
            ],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--available-tools", "--allow-tool", "--log-dir"],
            arity: Arity::Required,
            verdict: Verdict::Managed,
        },
        FlagRule {
            names: &["--no-ask-user"],
            arity: Arity::None,
            verdict: Verdict::Managed,
        },
        FlagRule {
            names: HARDENING,
            arity: Arity::None,
            verdict: Verdict::Managed,
        },
        FlagRule {
            names: &["--yolo"],
            arity: Arity::None,
            verdict: Verdict::Dangerous("allows every tool, path and URL"),
        },
        FlagRule {
            names: &["--no-sandbox"],
            arity: Arity::None,
            verdict: Verdict::Dangerous("disables the sandbox"),
        },
        FlagRule {
            names: &["--add-dir"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("widens the accessible paths"),
        },
        FlagRule {
            names: &["--allow-url"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("allows network destinations"),
        },
        FlagRule {
            names: &["--additional-mcp-config"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("adds MCP servers"),
        },
        FlagRule {
            names: &[
                "--enable-all-github-mcp-tools",
                "--add-github-mcp-tool",
                "--add-github-mcp-toolset",
            ],
            arity: Arity::Optional,
            verdict: Verdict::Dangerous("enables GitHub MCP tools"),
        },
        FlagRule {
            names: &["--share-gist"],
            arity: Arity::None,
            verdict: Verdict::Dangerous("uploads the session"),
        },
        FlagRule {
            names: &["--config-dir"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("replaces the managed configuration"),
        },
        FlagRule {
            names: &["--agent"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("loads a custom agent definition"),
        },
        FlagRule {
            names: &["-C", "-i", "-n", "-r", "-w", "-A", "-a"],
            arity: Arity::None,
            verdict: Verdict::Dangerous("short option outside the allow-list"),
        },
    ],
    dangerous_prefixes: &[("--allow-all", "allows everything of a kind")],
    subcommands: &[SubcommandRule {
        name: "help",
        only: None,
    }],
    refused_subcommands: &[
        "init", "login", "logout", "mcp", "plugin", "skill", "update",
    ],
    normalize: identity,
    dangerous_name: never,
};

#[cfg(test)]
mod tests {
    use super::super::tests::run_table;
    use crate::session::Agent;

    #[test]
    fn copilot_table() {
        run_table(
            Agent::Copilot,
            &[
                (&["-p", "fix the build", "-s"], "ok"),
                (&["--model", "gpt-5", "--continue"], "ok"),
                (&["--resume"], "ok"),
                (&["--deny-tool", "shell"], "ok"),
                (&["help"], "ok"),
                (&["--allow-all-tools"], "dangerous_flag"),
                (&["--allow-all-paths"], "dangerous_flag"),
                (&["--allow-all-urls"], "dangerous_flag"),
                (&["--allow-all"], "dangerous_flag"),
                (&["--allow-tool", "shell"], "managed_flag"),
                (&["--allow-tool=shell(rm)"], "managed_flag"),
                (&["--available-tools", "shell"], "managed_flag"),
                (&["--log-dir", "/tmp"], "managed_flag"),
                (&["--no-ask-user"], "managed_flag"),
                (&["--yolo"], "dangerous_flag"),
                (&["--no-sandbox"], "dangerous_flag"),
                (&["--add-dir", "/"], "dangerous_flag"),
                (&["--allow-url", "evil.example"], "dangerous_flag"),
                (&["--additional-mcp-config", "{}"], "dangerous_flag"),
                (&["--enable-all-github-mcp-tools"], "dangerous_flag"),
                (&["--share-gist"], "dangerous_flag"),
                (&["-C"], "dangerous_flag"),
                (&["-i"], "dangerous_flag"),
                (&["-n"], "dangerous_flag"),
                (&["-r"], "dangerous_flag"),
                (&["-w"], "dangerous_flag"),
                (&["-A"], "dangerous_flag"),
                (&["-a"], "dangerous_flag"),
                (&["-sp"], "bundled_short_options"),
                (&["init"], "refused_subcommand"),
                (&["login"], "refused_subcommand"),
                (&["logout"], "refused_subcommand"),
                (&["mcp", "add"], "refused_subcommand"),
                (&["plugin"], "refused_subcommand"),
                (&["skill"], "refused_subcommand"),
                (&["update"], "refused_subcommand"),
            ],
        );
    }
}
