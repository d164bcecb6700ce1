//! Codex CLI (clap): exact long names, `-c key=value` overrides checked against a key allow-list.

use super::{identity, never, switch, valued, Ctx, ProviderRefusal, Spec, SubcommandRule, Verdict};

/// `-c`/`--config` keys a session may override (after normalisation, and also under
/// `profiles.<name>.`). Everything else — sandbox, approval, MCP, notify, tools, providers,
/// shell environment, project docs — is refused.
const CONFIG_KEYS: &[&str] = &[
    "model",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "hide_agent_reasoning",
    "show_raw_agent_reasoning",
    "file_opener",
];

/// Normalises a config key: whitespace and quotes around dotted segments removed, lower-cased.
pub(crate) fn normalize_key(raw: &str) -> String {
    raw.split('.')
        .map(|seg| {
            seg.trim()
                .trim_matches(|c| c == '"' || c == '\'')
                .trim()
                .to_ascii_lowercase()
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn check_config(flag: &str, value: &str, _ctx: &Ctx) -> Result<(), ProviderRefusal> {
    let Some((raw_key, _)) = value.split_once('=') else {
        return Err(ProviderRefusal::RefusedValue {
            flag: flag.to_owned(),
            value: value.to_owned(),
        });
    };
    let key = normalize_key(raw_key);
    let effective = match key.strip_prefix("profiles.") {
        Some(rest) => rest.split_once('.').map(|(_, k)| k).unwrap_or(""),
        None => key.as_str(),
    };
    if CONFIG_KEYS.contains(&effective) {
        Ok(())
    } else {
        Err(ProviderRefusal::RefusedConfigKey { key })
    }
}

fn check_sandbox(flag: &str, value: &str, _ctx: &Ctx) -> Result<(), ProviderRefusal> {
    match value {
        "read-only" | "workspace-write" => Ok(()),
        _ => Err(ProviderRefusal::RefusedValue {
            flag: flag.to_owned(),
            value: value.to_owned(),
        }),
    }
}

fn check_profile(flag: &str, value: &str, ctx: &Ctx) -> Result<(), ProviderRefusal> {
    if value == ctx.profile.as_str() {
        Ok(())
    } else {
        Err(ProviderRefusal::RefusedValue {
            flag: flag.to_owned(),
            value: value.to_owned(),
        })
    }
}

/// True when the user named a profile (which must then be the session's, see `check_profile`).
pub(crate) fn names_profile(user: &[&str]) -> bool {
    let mut it = user.iter().take_while(|a| **a != "--");
    it.any(|a| {
        *a == "-p" || *a == "--profile" || a.starts_with("--profile=") || a.starts_with("-p=")
    })
}

pub(crate) static SPEC: Spec = Spec {
    flags: &[
        switch(&["-h", "--help"], Verdict::Allow),
        switch(&["-V", "--version"], Verdict::Allow),
        valued(&["-m", "--model"], Verdict::Allow),
        valued(&["-i", "--image"], Verdict::Allow),
        switch(&["--oss"], Verdict::Allow),
        valued(&["--local-provider"], Verdict::Allow),
        switch(&["--no-alt-screen"], Verdict::Allow),
        switch(&["--json", "--experimental-json"], Verdict::Allow),
        valued(&["--color"], Verdict::Allow),
        valued(&["-o", "--output-last-message"], Verdict::Allow),
        valued(&["--output-schema"], Verdict::Allow),
        switch(&["--skip-git-repo-check"], Verdict::Allow),
        switch(&["--last", "--all"], Verdict::Allow),
        valued(&["-c", "--config"], Verdict::Check(check_config)),
        valued(&["-s", "--sandbox"], Verdict::Check(check_sandbox)),
        valued(&["-p", "--profile"], Verdict::Check(check_profile)),
        valued(&["-a", "--ask-for-approval"], Verdict::Managed),
        switch(
            &["--dangerously-bypass-approvals-and-sandbox", "--yolo"],
            Verdict::Dangerous("disables approvals and the sandbox"),
        ),
        switch(
            &["--full-auto"],
            Verdict::Dangerous("overrides the managed approval policy"),
        ),
        switch(&["--search"], Verdict::Dangerous("enables live web search")),
        valued(
            &["--add-dir"],
            Verdict::Dangerous("widens the writable roots"),
        ),
        valued(
            &["-C", "--cd"],
            Verdict::Dangerous("moves the working root"),
        ),
        valued(
            &["--remote", "--remote-auth-token-env"],
            Verdict::Dangerous("connects to a remote"),
        ),
        valued(
            &["--enable", "--disable"],
            Verdict::Dangerous("toggles features"),
        ),
    ],
    dangerous_prefixes: &[("--dangerously", "disables a safety mechanism")],
    subcommands: &[
        SubcommandRule {
            name: "exec",
            only: None,
        },
        SubcommandRule {
            name: "e",
            only: None,
        },
        SubcommandRule {
            name: "review",
            only: None,
        },
        SubcommandRule {
            name: "login",
            only: None,
        },
        SubcommandRule {
            name: "logout",
            only: None,
        },
        SubcommandRule {
            name: "completion",
            only: None,
        },
        SubcommandRule {
            name: "doctor",
            only: None,
        },
        SubcommandRule {
            name: "apply",
            only: None,
        },
        SubcommandRule {
            name: "a",
            only: None,
        },
        SubcommandRule {
            name: "resume",
            only: None,
        },
        SubcommandRule {
            name: "fork",
            only: None,
        },
        SubcommandRule {
            name: "archive",
            only: None,
        },
        SubcommandRule {
            name: "unarchive",
            only: None,
        },
        SubcommandRule {
            name: "delete",
            only: None,
        },
        SubcommandRule {
            name: "help",
            only: None,
        },
        SubcommandRule {
            name: "execpolicy",
            only: None,
        },
        SubcommandRule {
            name: "features",
            only: Some(&["list"]),
        },
    ],
    refused_subcommands: &[
        "plugin",
        "remote-control",
        "exec-server",
        "mcp",
        "mcp-server",
        "cloud",
        "cloud-tasks",
        "responses-api-proxy",
        "stdio-to-uds",
        "sandbox",
        "update",
        "debug",
        "app",
        "app-server",
        "proto",
    ],
    normalize: identity,
    dangerous_name: never,
};

#[cfg(test)]
mod tests {
    use super::super::tests::run_table;
    use super::*;
    use crate::session::Agent;

    #[test]
    fn codex_table() {
        run_table(
            Agent::Codex,
            &[
                (&["exec", "fix it"], "ok"),
                (
                    &[
                        "exec",
                        "--json",
                        "-m",
                        "o4-mini",
                        "--skip-git-repo-check",
                        "fix it",
                    ],
                    "ok",
                ),
                (&["resume", "--last"], "ok"),
                (&["review"], "ok"),
                (&["features", "list"], "ok"),
                (&["-s", "workspace-write", "fix it"], "ok"),
                (&["--sandbox=read-only", "fix it"], "ok"),
                (&["-c", "model=o3"], "ok"),
                (&["-c", " \"model_reasoning_effort\" =high"], "ok"),
                (&["-c", "profiles.strict.model=o3"], "ok"),
                (&["--profile", "yolo"], "refused_value"),
                (&["-s", "danger-full-access"], "refused_value"),
                (&["--sandbox=danger-full-access"], "refused_value"),
                (
                    &["-c", "sandbox_mode=danger-full-access"],
                    "refused_config_key",
                ),
                (&["-c", "approval_policy=never"], "refused_config_key"),
                (&["-c", "notify=[\"curl\",\"evil\"]"], "refused_config_key"),
                (&["-c", "tools.web_search=true"], "refused_config_key"),
                (
                    &["-c", "model_providers.evil.base_url=http://x"],
                    "refused_config_key",
                ),
                (&["-c", "mcp_servers.x.command=sh"], "refused_config_key"),
                (
                    &["-c", "profiles.strict.sandbox_mode=danger-full-access"],
                    "refused_config_key",
                ),
                (
                    &["-c", "Sandbox_Mode=danger-full-access"],
                    "refused_config_key",
                ),
                (
                    &["-c", "'shell_environment_policy'.inherit=all"],
                    "refused_config_key",
                ),
                (
                    &["--config=project_doc_fallback_filenames=[\"x\"]"],
                    "refused_config_key",
                ),
                (&["-c", "model"], "refused_value"),
                (&["-c"], "missing_value"),
                (&["-c", "--yolo"], "missing_value"),
                (
                    &["--dangerously-bypass-approvals-and-sandbox"],
                    "dangerous_flag",
                ),
                (&["--yolo"], "dangerous_flag"),
                (&["--full-auto"], "dangerous_flag"),
                (&["--search"], "dangerous_flag"),
                (&["--add-dir", "/"], "dangerous_flag"),
                (&["-C", "/etc"], "dangerous_flag"),
                (&["--cd=/etc"], "dangerous_flag"),
                (&["--remote", "x"], "dangerous_flag"),
                (&["--remote-auth-token-env", "X"], "dangerous_flag"),
                (&["--enable", "web_search"], "dangerous_flag"),
                (&["--disable", "sandbox"], "dangerous_flag"),
                (&["-a", "never"], "managed_flag"),
                (&["--ask-for-approval=never"], "managed_flag"),
                (&["exec", "--full-auto", "x"], "dangerous_flag"),
                (&["mcp", "add", "x"], "refused_subcommand"),
                (&["mcp-server"], "refused_subcommand"),
                (&["features", "enable", "x"], "refused_subcommand"),
                (&["features", "disable", "x"], "refused_subcommand"),
                (&["cloud"], "refused_subcommand"),
                (&["sandbox", "linux", "sh"], "refused_subcommand"),
                (&["app-server"], "refused_subcommand"),
                (&["responses-api-proxy"], "refused_subcommand"),
                (&["stdio-to-uds"], "refused_subcommand"),
                (&["update"], "refused_subcommand"),
                (&["debug"], "refused_subcommand"),
                (&["plugin"], "refused_subcommand"),
                (&["--oss", "--local-provider", "ollama", "hi there"], "ok"),
            ],
        );
    }

    #[test]
    fn codex_profile_is_prepended_unless_the_same_profile_is_named() {
        use std::ffi::OsString;
        let args = [OsString::from("--profile"), OsString::from("build")];
        let out = crate::provider::check_provider_args(
            Agent::Codex,
            execguard_policy::Profile::Build,
            crate::session::Autonomy::Prompt,
            &args,
        )
        .unwrap();
        assert_eq!(
            out,
            ["--ask-for-approval", "on-request", "--profile", "build"].map(OsString::from)
        );
    }

    #[test]
    fn keys_normalise() {
        assert_eq!(
            normalize_key(" \"Tools\" . 'Web_Search' "),
            "tools.web_search"
        );
    }
}
