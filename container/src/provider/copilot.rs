//! GitHub Copilot CLI (commander): exact names; the tool, path and URL permissions are managed.

use super::{identity, maybe_valued, never, switch, valued, Spec, SubcommandRule, Verdict};

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
        switch(&["-h", "--help"], Verdict::Allow),
        switch(&["-v", "--version"], Verdict::Allow),
        valued(&["-p", "--prompt"], Verdict::Allow),
        switch(&["-s", "--silent"], Verdict::Allow),
        valued(&["--model"], Verdict::Allow),
        switch(&["--continue"], Verdict::Allow),
        maybe_valued(&["--resume"], Verdict::Allow),
        valued(&["--log-level"], Verdict::Allow),
        switch(
            &["--no-color", "--banner", "--screen-reader", "--plain-diff"],
            Verdict::Allow,
        ),
        valued(&["--stream"], Verdict::Allow),
        // Restrictive: these only remove capabilities.
        valued(
            &[
                "--deny-tool",
                "--deny-url",
                "--excluded-tools",
                "--disable-mcp-server",
            ],
            Verdict::Allow,
        ),
        valued(
            &["--available-tools", "--allow-tool", "--log-dir"],
            Verdict::Managed,
        ),
        switch(&["--no-ask-user"], Verdict::Managed),
        switch(HARDENING, Verdict::Managed),
        switch(
            &["--yolo"],
            Verdict::Dangerous("allows every tool, path and URL"),
        ),
        switch(
            &["--no-sandbox"],
            Verdict::Dangerous("disables the sandbox"),
        ),
        valued(
            &["--add-dir"],
            Verdict::Dangerous("widens the accessible paths"),
        ),
        valued(
            &["--allow-url"],
            Verdict::Dangerous("allows network destinations"),
        ),
        valued(
            &["--additional-mcp-config"],
            Verdict::Dangerous("adds MCP servers"),
        ),
        maybe_valued(
            &[
                "--enable-all-github-mcp-tools",
                "--add-github-mcp-tool",
                "--add-github-mcp-toolset",
            ],
            Verdict::Dangerous("enables GitHub MCP tools"),
        ),
        switch(&["--share-gist"], Verdict::Dangerous("uploads the session")),
        valued(
            &["--config-dir"],
            Verdict::Dangerous("replaces the managed configuration"),
        ),
        valued(
            &["--agent"],
            Verdict::Dangerous("loads a custom agent definition"),
        ),
        switch(
            &["-C", "-i", "-n", "-r", "-w", "-A", "-a"],
            Verdict::Dangerous("short option outside the allow-list"),
        ),
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
