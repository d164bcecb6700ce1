//! The provider's environment, built from an allow-list (never a deny-list).
//!
//! Only the names below pass, then the pinned values are forced on top. Exported bash functions
//! (`BASH_FUNC_*`), `LD_*`, `GLIBC_TUNABLES`, `GCONV_PATH`, `NODE_OPTIONS`, proxies and
//! `*_BASE_URL` pass only if the image's env policy file names them; the loader and interpreter
//! hooks in [`NEVER`] cannot be enabled even there.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use crate::paths::{Paths, AGENT_HOME, AGENT_TMP, PINNED_PATH};
use crate::session::Agent;
use crate::sys;
use crate::user::MAPPED_SHELL;

/// Terminal and locale variables every session keeps.
pub const COMMON: &[&str] = &[
    "TERM",
    "COLORTERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_COLLATE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_MONETARY",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
    "COLUMNS",
    "LINES",
    "USER",
    "LOGNAME",
];

/// Credentials each provider needs.
pub fn provider_credentials(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::Codex => &["OPENAI_API_KEY", "CODEX_API_KEY"],
        Agent::Claude => &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
        Agent::Gemini => &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_GENAI_USE_VERTEXAI",
        ],
        Agent::Copilot => &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
    }
}

/// Names that never pass, whatever the policy file says.
pub fn never_passes(name: &str) -> bool {
    name.starts_with("LD_")
        || name.starts_with("BASH_FUNC_")
        || matches!(
            name,
            "GLIBC_TUNABLES" | "GCONV_PATH" | "NODE_OPTIONS" | "BASH_ENV" | "ENV" | "NODE_PATH"
        )
}

/// Values the chain pins for every provider.
/// Copilot's unpacked package in the image (root-owned, read-only to the session).
pub const COPILOT_PKG: &str = "/usr/local/libexec/execguard/providers/copilot";

pub fn forced(agent: Agent) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("HOME", AGENT_HOME.to_owned()),
        ("TMPDIR", AGENT_TMP.to_owned()),
        ("PATH", PINNED_PATH.to_owned()),
        ("SHELL", MAPPED_SHELL.to_owned()),
    ];
    match agent {
        Agent::Claude => {
            out.push(("DISABLE_AUTOUPDATER", "1".to_owned()));
            out.push(("CLAUDE_CONFIG_DIR", format!("{AGENT_HOME}/.claude")));
        }
        Agent::Codex => out.push(("CODEX_HOME", format!("{AGENT_HOME}/.codex"))),
        // Copilot's binary unpacks its JS package and a native addon into the cache, then loads
        // them: native code from a file the session can write, which the guard refuses. The
        // image ships the package unpacked and root-owned, and points Copilot at it.
        Agent::Copilot => out.push(("COPILOT_PKG_CACHE_HOME", COPILOT_PKG.to_owned())),
        Agent::Gemini => {}
    }
    out
}

/// Parses the image's env policy file: one variable name per line, `#` comments.
/// Malformed names and names in [`never_passes`] are ignored.
pub fn parse_policy(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|n| {
            n.bytes()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase() || c == b'_')
                && n.bytes()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
                && !never_passes(n)
        })
        .map(str::to_owned)
        .collect()
}

/// Builds the provider environment from `env`: allow-listed names, then forced values.
pub fn provider_env(
    env: &[(OsString, OsString)],
    agent: Agent,
    extra: &[String],
) -> Vec<(OsString, OsString)> {
    let allowed = |name: &OsStr| -> bool {
        let Ok(n) = std::str::from_utf8(name.as_bytes()) else {
            return false;
        };
        !never_passes(n)
            && (COMMON.contains(&n)
                || provider_credentials(agent).contains(&n)
                || extra.iter().any(|e| e == n))
    };
    let forced = forced(agent);
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for (k, v) in env {
        if allowed(k)
            && !forced.iter().any(|(f, _)| k == f)
            && !out.iter().any(|(seen, _)| seen == k)
        {
            out.push((k.clone(), v.clone()));
        }
    }
    out.extend(
        forced
            .into_iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    out
}

/// Extra variable names from the image's env policy file ([`Paths::env_policy`]), trusted only
/// if it is a root-owned regular file not writable by group/other (list it in the manifest to
/// pin its content). Absent or untrusted: no extra names.
pub fn read_env_policy(paths: &Paths) -> Vec<String> {
    let Ok(fd) = sys::open_nofollow(&paths.env_policy(), libc::O_RDONLY | libc::O_NONBLOCK, 0)
    else {
        return Vec::new();
    };
    match sys::fstat(&fd) {
        Ok(m) if m.file_type().is_file() && sys::is_root_owned_not_shared(&m) => {}
        _ => return Vec::new(),
    }
    sys::read_limited(fd, 64 * 1024)
        .map(|b| parse_policy(&String::from_utf8_lossy(&b)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(e: &[(OsString, OsString)]) -> Vec<String> {
        e.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_allow_listed_names_pass_and_pins_win() {
        let input = env(&[
            ("TERM", "xterm"),
            ("ANTHROPIC_API_KEY", "k"),
            ("OPENAI_API_KEY", "other provider"),
            ("BASH_FUNC_ls%%", "() { evil; }"),
            ("LD_PRELOAD", "/tmp/x.so"),
            ("LD_LIBRARY_PATH", "/tmp"),
            ("GLIBC_TUNABLES", "x"),
            ("GCONV_PATH", "/tmp"),
            ("NODE_OPTIONS", "--require /tmp/x.js"),
            ("HTTPS_PROXY", "http://evil"),
            ("https_proxy", "http://evil"),
            ("ANTHROPIC_BASE_URL", "http://evil"),
            ("OPENAI_BASE_URL", "http://evil"),
            ("HOME", "/root"),
            ("PATH", "/tmp:/usr/bin"),
            ("TMPDIR", "/workspace"),
            ("CLAUDE_CONFIG_DIR", "/workspace/.claude"),
            ("GIT_SSH_COMMAND", "sh"),
            ("EXECGUARD_PROFILE", "strict"),
        ]);
        let out = provider_env(&input, Agent::Claude, &[]);
        assert_eq!(
            names(&out),
            [
                "TERM",
                "ANTHROPIC_API_KEY",
                "HOME",
                "TMPDIR",
                "PATH",
                "SHELL",
                "DISABLE_AUTOUPDATER",
                "CLAUDE_CONFIG_DIR"
            ]
        );
        let get = |k: &str| {
            out.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("HOME").as_deref(), Some("/state/agent-home"));
        assert_eq!(get("TMPDIR").as_deref(), Some("/state/tmp"));
        assert_eq!(get("PATH").as_deref(), Some(PINNED_PATH));
        assert_eq!(
            get("CLAUDE_CONFIG_DIR").as_deref(),
            Some("/state/agent-home/.claude")
        );
    }

    #[test]
    fn the_policy_file_can_add_proxies_but_never_loader_hooks() {
        let extra = parse_policy("# proxies for this site\nHTTPS_PROXY\nANTHROPIC_BASE_URL\nLD_PRELOAD\nBASH_FUNC_x%%\nGLIBC_TUNABLES\nlower\n");
        assert_eq!(extra, ["HTTPS_PROXY", "ANTHROPIC_BASE_URL"]);
        let input = env(&[("HTTPS_PROXY", "http://proxy"), ("LD_PRELOAD", "x")]);
        let out = provider_env(&input, Agent::Claude, &extra);
        assert!(names(&out).contains(&"HTTPS_PROXY".to_owned()));
        assert!(!names(&out).contains(&"LD_PRELOAD".to_owned()));
        // Even a hand-made extra list cannot pass the never-list.
        let out = provider_env(&input, Agent::Claude, &["LD_PRELOAD".to_owned()]);
        assert!(!names(&out).contains(&"LD_PRELOAD".to_owned()));
    }

    #[test]
    fn credentials_are_per_provider() {
        let input = env(&[
            ("GH_TOKEN", "t"),
            ("OPENAI_API_KEY", "o"),
            ("GEMINI_API_KEY", "g"),
        ]);
        assert!(names(&provider_env(&input, Agent::Copilot, &[])).contains(&"GH_TOKEN".to_owned()));
        assert!(!names(&provider_env(&input, Agent::Claude, &[])).contains(&"GH_TOKEN".to_owned()));
        assert!(
            names(&provider_env(&input, Agent::Codex, &[])).contains(&"OPENAI_API_KEY".to_owned())
        );
        assert!(
            names(&provider_env(&input, Agent::Gemini, &[])).contains(&"GEMINI_API_KEY".to_owned())
        );
    }
}
