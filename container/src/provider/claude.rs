//! Claude Code (commander): exact long names; `mcp` only for `list`/`get`.

use super::{identity, maybe_valued, never, switch, valued, Spec, SubcommandRule, Verdict};

pub(crate) static SPEC: Spec = Spec {
    flags: &[
        switch(&["-h", "--help"], Verdict::Allow),
        switch(&["-v", "--version"], Verdict::Allow),
        switch(&["-p", "--print"], Verdict::Allow),
        switch(&["--verbose"], Verdict::Allow),
        maybe_valued(&["-d", "--debug"], Verdict::Allow),
        switch(&["--mcp-debug"], Verdict::Allow),
        switch(&["-c", "--continue"], Verdict::Allow),
        maybe_valued(&["-r", "--resume"], Verdict::Allow),
        switch(&["--fork-session"], Verdict::Allow),
        valued(&["--session-id"], Verdict::Allow),
        valued(&["--model", "--fallback-model"], Verdict::Allow),
        valued(&["--output-format", "--input-format"], Verdict::Allow),
        switch(
            &["--include-partial-messages", "--replay-user-messages"],
            Verdict::Allow,
        ),
        valued(&["--json-schema"], Verdict::Allow),
        valued(&["--max-turns", "--max-budget-usd"], Verdict::Allow),
        switch(&["--ide"], Verdict::Allow),
        // Restrictive: these can only remove tools or servers.
        valued(&["--disallowedTools", "--disallowed-tools"], Verdict::Allow),
        switch(&["--strict-mcp-config"], Verdict::Allow),
        valued(&["--permission-mode"], Verdict::Managed),
        switch(
            &[
                "--dangerously-skip-permissions",
                "--allow-dangerously-skip-permissions",
            ],
            Verdict::Dangerous("skips permission checks"),
        ),
        valued(
            &["--allowedTools", "--allowed-tools"],
            Verdict::Dangerous("pre-approves tools"),
        ),
        valued(
            &["--add-dir"],
            Verdict::Dangerous("widens the accessible roots"),
        ),
        valued(&["--mcp-config"], Verdict::Dangerous("adds MCP servers")),
        valued(
            &["--plugin-dir", "--plugin-url"],
            Verdict::Dangerous("loads plugins"),
        ),
        valued(
            &["--settings", "--setting-sources"],
            Verdict::Dangerous("replaces managed settings"),
        ),
        valued(
            &["--agents"],
            Verdict::Dangerous("defines agents with their own tools"),
        ),
        valued(
            &["--permission-prompt-tool"],
            Verdict::Dangerous("delegates permission decisions to a tool"),
        ),
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
