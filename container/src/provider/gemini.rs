//! Gemini CLI (yargs): flags are matched case-insensitively with `-`/`_` ignored, so
//! `--sandbox-image`, `--sandboxImage` and `--SANDBOX_IMAGE` are one flag; `--no-X` is X's
//! negation and shares X's verdict when X is dangerous; `--yolo=true` is `--yolo`.

use super::{maybe_valued, switch, valued, Spec, Verdict};

/// Lower-case, drop `-`/`_` after the leading dashes; a `--no-` negation maps onto its base.
fn normalize(flag: &str) -> String {
    let (dashes, rest) = if let Some(r) = flag.strip_prefix("--") {
        ("--", r)
    } else {
        ("-", flag.trim_start_matches('-'))
    };
    if dashes == "-" {
        return format!("-{}", rest.to_ascii_lowercase());
    }
    let squashed: String = rest
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    let base = match squashed.strip_prefix("no") {
        Some(b) if DANGEROUS_NEGATABLE.contains(&b) => b.to_owned(),
        _ => squashed,
    };
    format!("--{base}")
}

/// Dangerous flags whose `--no-` form is refused too (it is still an attempt to set them).
const DANGEROUS_NEGATABLE: &[&str] = &["yolo", "sandbox", "sandboximage", "approvalmode"];

fn dangerous_name(norm: &str) -> Option<&'static str> {
    let n = norm.trim_start_matches('-');
    if n.contains("dangerously") {
        return Some("disables a safety mechanism");
    }
    if n.contains("bypass") && n.contains("permission") {
        return Some("bypasses permissions");
    }
    if n.starts_with("telemetry") {
        return Some("sends session data to a configurable endpoint");
    }
    None
}

pub(crate) static SPEC: Spec = Spec {
    flags: &[
        switch(&["-h", "--help"], Verdict::Allow),
        switch(&["-v", "--version"], Verdict::Allow),
        valued(&["-m", "--model"], Verdict::Allow),
        valued(&["-p", "--prompt"], Verdict::Allow),
        valued(&["-i", "--prompt-interactive"], Verdict::Allow),
        valued(&["-o", "--output-format"], Verdict::Allow),
        switch(&["-d", "--debug"], Verdict::Allow),
        switch(&["-a", "--all-files"], Verdict::Allow),
        switch(
            &["--show-memory-usage", "--screen-reader", "--checkpointing"],
            Verdict::Allow,
        ),
        switch(
            &["-l", "--list-extensions", "--list-sessions"],
            Verdict::Allow,
        ),
        valued(&["-r", "--resume", "--delete-session"], Verdict::Allow),
        valued(&["--approval-mode"], Verdict::Managed),
        maybe_valued(
            &["-y", "--yolo"],
            Verdict::Dangerous("auto-approves every action"),
        ),
        maybe_valued(
            &["-s", "--sandbox"],
            Verdict::Dangerous("changes the sandbox"),
        ),
        valued(
            &["--sandbox-image"],
            Verdict::Dangerous("changes the sandbox image"),
        ),
        valued(
            &["--add-dir", "--include-directories"],
            Verdict::Dangerous("widens the workspace"),
        ),
        valued(
            &["--allowed-mcp-server-names"],
            Verdict::Dangerous("selects MCP servers"),
        ),
        valued(
            &["--allowed-tools"],
            Verdict::Dangerous("pre-approves tools"),
        ),
        valued(
            &["-e", "--extensions"],
            Verdict::Dangerous("loads extensions"),
        ),
        valued(&["--proxy"], Verdict::Dangerous("reroutes network traffic")),
        switch(
            &["--experimental-acp"],
            Verdict::Dangerous("serves the agent protocol"),
        ),
    ],
    dangerous_prefixes: &[],
    subcommands: &[],
    refused_subcommands: &["mcp", "extensions", "extension", "skills", "hooks"],
    normalize,
    dangerous_name,
};

#[cfg(test)]
mod tests {
    use super::super::tests::run_table;
    use super::normalize;
    use crate::session::Agent;

    #[test]
    fn gemini_table() {
        run_table(
            Agent::Gemini,
            &[
                (&["-p", "explain this"], "ok"),
                (&["--model", "gemini-2.5-pro", "-p", "hi there"], "ok"),
                (&["--output-format=json", "--prompt=x"], "ok"),
                (&["--all-files", "--debug"], "ok"),
                (&["--list-extensions"], "ok"),
                (&["-y"], "dangerous_flag"),
                (&["--yolo"], "dangerous_flag"),
                (&["--yolo=true"], "dangerous_flag"),
                (&["--yolo=false"], "dangerous_flag"),
                (&["--YOLO"], "dangerous_flag"),
                (&["--no-yolo"], "dangerous_flag"),
                (&["-s"], "dangerous_flag"),
                (&["--sandbox"], "dangerous_flag"),
                (&["--sandbox=false"], "dangerous_flag"),
                (&["--no-sandbox"], "dangerous_flag"),
                (&["--sandbox-image", "evil"], "dangerous_flag"),
                (&["--sandboxImage=evil"], "dangerous_flag"),
                (&["--SANDBOX_IMAGE", "evil"], "dangerous_flag"),
                (&["--approval-mode", "yolo"], "managed_flag"),
                (&["--approvalMode=yolo"], "managed_flag"),
                (&["--add-dir", "/"], "dangerous_flag"),
                (&["--include-directories", "/"], "dangerous_flag"),
                (&["--allowed-mcp-server-names", "x"], "dangerous_flag"),
                (&["--allowedMcpServerNames=x"], "dangerous_flag"),
                (&["--allowed-tools", "run_shell_command"], "dangerous_flag"),
                (&["-e", "x"], "dangerous_flag"),
                (&["--extensions=x"], "dangerous_flag"),
                (&["--proxy", "http://x"], "dangerous_flag"),
                (&["--telemetry-otlp-endpoint", "http://x"], "dangerous_flag"),
                (&["--telemetry"], "dangerous_flag"),
                (&["--dangerously-anything"], "dangerous_flag"),
                (&["--bypass-all-permissions"], "dangerous_flag"),
                (&["--experimental-acp"], "dangerous_flag"),
                (&["-ys"], "bundled_short_options"),
                (&["mcp", "add", "x", "sh"], "refused_subcommand"),
                (&["extensions", "install", "x"], "refused_subcommand"),
                (&["-Y"], "dangerous_flag"),
            ],
        );
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalize("--Sandbox_Image"), "--sandboximage");
        assert_eq!(normalize("--no-sandbox"), "--sandbox");
        assert_eq!(normalize("--no-color"), "--nocolor");
        assert_eq!(normalize("-Y"), "-y");
    }
}
