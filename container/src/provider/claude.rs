//! Claude Code (commander): exact long names; `mcp` only for `list`/`get`.

use super::{identity, never, Arity, FlagRule, Spec, SubcommandRule, Verdict};

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
            names: &["-p", "--print"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--verbose"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["-d", "--debug"],
            arity: Arity::Optional,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--mcp-debug"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["-c", "--continue"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["-r", "--resume"],
            arity: Arity::Optional,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--fork-session"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--session-id"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--model", "--fallback-model"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--output-format", "--input-format"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--include-partial-messages", "--replay-user-messages"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--json-schema"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--max-turns", "--max-budget-usd"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--ide"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        // Restrictive: these can only remove tools or servers.
        FlagRule {
            names: &["--disallowedTools", "--disallowed-tools"],
            arity: Arity::Required,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--strict-mcp-config"],
            arity: Arity::None,
            verdict: Verdict::Allow,
        },
        FlagRule {
            names: &["--permission-mode"],
            arity: Arity::Required,
            verdict: Verdict::Managed,
        },
        FlagRule {
            names: &[
                "--dangerously-skip-permissions",
                "--allow-dangerously-skip-permissions",
            ],
            arity: Arity::None,
            verdict: Verdict::Dangerous("skips permission checks"),
        },
        FlagRule {
            names: &["--allowedTools", "--allowed-tools"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("pre-approves tools"),
        },
        FlagRule {
            names: &["--add-dir"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("widens the accessible roots"),
        },
        FlagRule {
            names: &["--mcp-config"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("adds MCP servers"),
        },
        FlagRule {
            names: &["--plugin-dir", "--plugin-url"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("loads plugins"),
        },
        FlagRule {
            names: &["--settings", "--setting-sources"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("replaces managed settings"),
        },
        FlagRule {
            names: &["--agents"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("defines agents with their own tools"),
        },
        FlagRule {
            names: &["--permission-prompt-tool"],
            arity: Arity::Required,
            verdict: Verdict::Dangerous("delegates permission decisions to a tool"),
        },
    ],
    dangerous_prefixes: &[
        ("--system-prompt", "replaces the system prompt"),
        ("--append-system-prompt", "alters the system prompt"),
        ("--dangerously", "disables a safety mechanism"),
    ],
    subcommands: &[
        SubcommandRule {
            name: "doctor",
            only: None,
        },
        SubcommandRule {
            name: "mcp",
            only: Some(&["list", "get"]),
        },
    ],
    refused_subcommands: &[
        "install",
        "update",
        "config",
        "plugin",
        "migrate-installer",
        "setup-token",
    ],
    normalize: identity,
    dangerous_name: never,
};

#[cfg(test)]
mod tests {
    use super::super::tests::run_table;
    use crate::session::Agent;

    #[test]
    fn claude_table() {
        run_table(
            Agent::Claude,
            &[
                (&["-p", "explain this repo"], "ok"),
                (&["--print", "--output-format", "json", "hi there"], "ok"),
                (&["--model", "sonnet", "-c"], "ok"),
                (&["-r"], "ok"),
                (&["--resume", "abc-123"], "ok"),
                (&["--debug", "--verbose"], "ok"),
                (&["--disallowedTools", "Bash"], "ok"),
                (&["doctor"], "ok"),
                (&["mcp", "list"], "ok"),
                (&["mcp", "get", "x"], "ok"),
                (&["mcp", "add", "evil", "--", "sh"], "refused_subcommand"),
                (&["mcp", "add-json", "x", "{}"], "refused_subcommand"),
                (&["mcp", "serve"], "refused_subcommand"),
                (&["config", "set", "x", "y"], "refused_subcommand"),
                (&["config", "list"], "refused_subcommand"),
                (&["install"], "refused_subcommand"),
                (&["update"], "refused_subcommand"),
                (&["plugin", "install", "x"], "refused_subcommand"),
                (&["--dangerously-skip-permissions"], "dangerous_flag"),
                (&["--allow-dangerously-skip-permissions"], "dangerous_flag"),
                (&["--add-dir", "/"], "dangerous_flag"),
                (&["--allowedTools", "Bash"], "dangerous_flag"),
                (&["--allowed-tools=Bash"], "dangerous_flag"),
                (&["--mcp-config", "x.json"], "dangerous_flag"),
                (&["--plugin-dir", "x"], "dangerous_flag"),
                (&["--plugin-url", "x"], "dangerous_flag"),
                (&["--settings", "{}"], "dangerous_flag"),
                (&["--setting-sources", "user"], "dangerous_flag"),
                (&["--system-prompt", "x"], "dangerous_flag"),
                (&["--system-prompt-file", "x"], "dangerous_flag"),
                (&["--append-system-prompt", "x"], "dangerous_flag"),
                (&["--append-system-prompt-file=x"], "dangerous_flag"),
                (&["--agents", "{}"], "dangerous_flag"),
                (&["--permission-prompt-tool", "mcp__x__y"], "dangerous_flag"),
                (&["--permission-mode", "bypassPermissions"], "managed_flag"),
                (&["--permission-mode=plan"], "managed_flag"),
                (
                    &["--model", "--dangerously-skip-permissions"],
                    "missing_value",
                ),
                (&["-p", "-x"], "unknown_flag"),
                (&["--print=yes"], "refused_value"),
            ],
        );
    }
}
