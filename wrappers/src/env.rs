//! The child environment: built from an allow-list plus forced values, never by deleting a
//! few known-bad names from whatever the caller passed.

use std::ffi::{OsStr, OsString};

/// The caller's environment as `getenv` sees it: the first occurrence of a name wins, later
/// duplicates are ignored (and never passed on, so the child sees what was checked).
#[derive(Debug, Clone, Default)]
pub struct EnvView {
    vars: Vec<(OsString, OsString)>,
}

impl EnvView {
    pub fn new(env: &[(OsString, OsString)]) -> Self {
        let mut vars: Vec<(OsString, OsString)> = Vec::with_capacity(env.len());
        for (k, v) in env {
            if k.is_empty() || vars.iter().any(|(n, _)| n == k) {
                continue;
            }
            vars.push((k.clone(), v.clone()));
        }
        EnvView { vars }
    }

    pub fn from_process() -> Self {
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        EnvView::new(&env)
    }

    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }
}

/// Names every wrapped runtime may see.
const COMMON_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "PWD",
    "COLUMNS",
    "LINES",
    "HOSTNAME",
    "CI",
    "SSH_AUTH_SOCK",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "EXECGUARD_POLICY",
    "JAVA_HOME",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "VIRTUAL_ENV",
];

/// Prefixes every wrapped runtime may see.
const COMMON_ALLOW_PREFIX: &[&str] = &["LC_", "XDG_", "CARGO_", "RUSTUP_"];

/// git variables passed to the real git (after `check_git` accepted their values).
const GIT_ALLOW: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_QUARANTINE_PATH",
    "GIT_EXEC_PATH",
    "GIT_PREFIX",
    "GIT_REFLOG_ACTION",
    "GIT_CHERRY_PICK_HELP",
    "GIT_MERGE_VERBOSITY",
    "GIT_MERGE_AUTOEDIT",
    "GIT_FLUSH",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_OPTIONAL_LOCKS",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_DEFAULT_HASH",
    "GIT_NAMESPACE",
    "GIT_TERMINAL_PROMPT",
    "GIT_PROTOCOL",
    "GIT_PROTOCOL_FROM_USER",
    "GIT_HTTP_USER_AGENT",
    "GIT_INDEX_VERSION",
    "GIT_CONFIG_GLOBAL",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SHALLOW_FILE",
    "GIT_ALLOW_PROTOCOL",
    "GIT_SSH_VARIANT",
    "GIT_TEMPLATE_DIR",
    "GIT_TEST_DEFAULT_INITIAL_BRANCH_NAME",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_PUSH_OPTION_COUNT",
    "GIT_ATTR_NOSYSTEM",
    "GIT_ATTR_SOURCE",
    "GIT_SSL_NO_VERIFY",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "GIT_CURL_VERBOSE",
];

const GIT_ALLOW_PREFIX: &[&str] = &[
    "GIT_TRACE",
    "GIT_CONFIG_KEY_",
    "GIT_CONFIG_VALUE_",
    "GIT_PUSH_OPTION_",
];

/// Values the git child always gets. The pager, editor and askpass are neutralised: `cat` is
/// git's "no pager", `:` its "no editor", an empty `GIT_ASKPASS` its "ask on the terminal";
/// each wins over `core.pager`/`pager.*`, `core.editor`/`EDITOR`/`VISUAL` and
/// `core.askPass`/`SSH_ASKPASS` (which are dropped: not on the allow-list). The system config
/// is not read (the wrapper checks the files git reads; the global one is read and checked).
pub const GIT_FORCED: &[(&str, &str)] = &[
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", ":"),
    ("GIT_ASKPASS", ""),
];

/// An editor that leaves the file as it is: `:` (git's own "no editor", which git does not
/// even start) or `true`. git gets it as `:`, so nothing is run and no `true` is looked up on
/// a `PATH` the session may have planted one in.
pub fn noop_editor(value: &OsStr) -> bool {
    matches!(
        value.to_str().map(str::trim),
        Some(":" | "true" | "/bin/true" | "/usr/bin/true")
    )
}

/// node variables passed to the real node.
const NODE_ALLOW: &[&str] = &[
    "NODE_ENV",
    "NODE_NO_WARNINGS",
    "NODE_DEBUG",
    "NODE_PENDING_DEPRECATION",
    "NODE_DISABLE_COLORS",
    "UV_THREADPOOL_SIZE",
    "NODE_V8_COVERAGE",
];

/// npm lifecycle variables are passed, except those that load code or config.
const NPM_DENY: &[&str] = &[
    "npm_config_userconfig",
    "npm_config_globalconfig",
    "npm_config_node_options",
    "npm_config_script_shell",
    "npm_config_prefix",
    "npm_config_onload_script",
];

/// The cdylib name of the preload guard. `LD_PRELOAD` is passed only when it names nothing
/// else, so that a host session (`execguard run`) keeps the guard in the runtime's children.
pub const GUARD_LIBRARY_NAME: &str = "libexecguard.so";

fn guard_only_preload(v: &OsStr) -> bool {
    let s = v.as_encoded_bytes();
    let mut any = false;
    for entry in s
        .split(|b| *b == b':' || *b == b' ')
        .filter(|e| !e.is_empty())
    {
        let base = entry.rsplit(|b| *b == b'/').next().unwrap_or(entry);
        if base != GUARD_LIBRARY_NAME.as_bytes() || !entry.starts_with(b"/") {
            return false;
        }
        any = true;
    }
    any
}

/// Which runtime the environment is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Git,
    Node,
}

fn allowed(rt: Runtime, name: &str) -> bool {
    if COMMON_ALLOW.contains(&name) || COMMON_ALLOW_PREFIX.iter().any(|p| name.starts_with(p)) {
        return true;
    }
    match rt {
        Runtime::Git => {
            GIT_ALLOW.contains(&name) || GIT_ALLOW_PREFIX.iter().any(|p| name.starts_with(p))
        }
        Runtime::Node => {
            NODE_ALLOW.contains(&name) || (name.starts_with("npm_") && !NPM_DENY.contains(&name))
        }
    }
}

/// Build the child environment: allow-listed names (first occurrence only), `LD_PRELOAD`
/// only when it is the guard alone, then the forced values.
pub fn build_child_env(rt: Runtime, env: &EnvView) -> Vec<(OsString, OsString)> {
    let forced: &[(&str, &str)] = match rt {
        Runtime::Git => GIT_FORCED,
        Runtime::Node => &[],
    };
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for (k, v) in env.iter() {
        let Some(name) = k.to_str() else { continue };
        if forced.iter().any(|(f, _)| *f == name) {
            continue;
        }
        if rt == Runtime::Git && name == "GIT_SEQUENCE_EDITOR" && noop_editor(v) {
            out.push((k.to_owned(), OsString::from(":")));
            continue;
        }
        let keep = if name == "LD_PRELOAD" {
            guard_only_preload(v)
        } else {
            allowed(rt, name)
        };
        if keep {
            out.push((k.to_owned(), v.to_owned()));
        }
    }
    for (k, v) in forced {
        out.push((OsString::from(k), OsString::from(v)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter().map(|(a, b)| (a.into(), b.into())).collect()
    }

    #[test]
    fn child_env_is_allow_listed() {
        let env = EnvView::new(&pairs(&[
            ("PATH", "/usr/bin"),
            ("PATH", "/evil"),
            ("BASH_FUNC_git%%", "() { :; }"),
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("LD_LIBRARY_PATH", "/tmp"),
            ("GLIBC_TUNABLES", "x"),
            ("GCONV_PATH", "/tmp"),
            ("NODE_OPTIONS", "--require /tmp/x.js"),
            ("BASH_ENV", "/tmp/x"),
            ("GIT_CONFIG_GLOBAL", "/tmp/checked"),
            ("EDITOR", "vim"),
            ("PAGER", "less"),
            ("GIT_PAGER", "less"),
            ("SSH_ASKPASS", "/usr/bin/ssh-askpass"),
            ("GIT_AUTHOR_NAME", "a"),
            ("LC_ALL", "C"),
        ]));
        let out = build_child_env(Runtime::Git, &env);
        let get = |n: &str| out.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("PATH"), Some("/usr/bin".into()));
        assert_eq!(out.iter().filter(|(k, _)| k == "PATH").count(), 1);
        for n in [
            "BASH_FUNC_git%%",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "GLIBC_TUNABLES",
            "GCONV_PATH",
            "NODE_OPTIONS",
            "BASH_ENV",
            "EDITOR",
            "PAGER",
            "SSH_ASKPASS",
        ] {
            assert_eq!(get(n), None, "{n} must be dropped");
        }
        assert_eq!(get("GIT_CONFIG_GLOBAL"), Some("/tmp/checked".into()));
        assert_eq!(get("GIT_CONFIG_NOSYSTEM"), Some("1".into()));
        assert_eq!(get("GIT_PAGER"), Some("cat".into()));
        assert_eq!(get("GIT_EDITOR"), Some(":".into()));
        assert_eq!(get("GIT_ASKPASS"), Some("".into()));
        assert_eq!(get("GIT_AUTHOR_NAME"), Some("a".into()));
        assert_eq!(get("LC_ALL"), Some("C".into()));
        let node = build_child_env(Runtime::Node, &env);
        assert!(!node
            .iter()
            .any(|(k, _)| k == "NODE_OPTIONS" || k.to_string_lossy().starts_with("GIT_")));
    }

    #[test]
    fn a_noop_sequence_editor_reaches_git_as_its_own_no_editor() {
        for noop in [":", "true", " true ", "/bin/true", "/usr/bin/true"] {
            let env = EnvView::new(&pairs(&[("GIT_SEQUENCE_EDITOR", noop)]));
            let out = build_child_env(Runtime::Git, &env);
            let got: Vec<_> = out
                .iter()
                .filter(|(k, _)| k == "GIT_SEQUENCE_EDITOR")
                .collect();
            assert_eq!(got.len(), 1, "{noop:?}");
            assert_eq!(got[0].1, OsString::from(":"), "{noop:?}");
        }
        for rewrites in ["sed -i 1d", "true; touch x", "truex", "", "./true"] {
            assert!(!noop_editor(OsStr::new(rewrites)), "{rewrites:?}");
        }
    }

    #[test]
    fn guard_preload_is_kept_alone() {
        assert!(guard_only_preload(OsStr::new(
            "/usr/lib/execguard/libexecguard.so"
        )));
        assert!(!guard_only_preload(OsStr::new(
            "/usr/lib/libexecguard.so:/tmp/x.so"
        )));
        assert!(!guard_only_preload(OsStr::new("libexecguard.so")));
        assert!(!guard_only_preload(OsStr::new("")));
    }
}
