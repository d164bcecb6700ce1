//! git over ssh in a session with its own network (docs/session.md, *Network*): the session's
//! only way out is its proxy, so the real git gets `GIT_SSH_COMMAND` naming OpenSSH with a
//! `ProxyCommand` of `execguard connect %h %p`, the `execguard` beside this wrapper (outside
//! every write set, as the session checked the wrapper is). A command-line option wins over
//! `~/.ssh/config`, so a `ProxyCommand` of the session's own is never the one ssh runs.

use std::ffi::OsString;
use std::path::Path;

use super::GO_SSH_COMMAND;
use crate::env::EnvView;

/// The proxy variables read, in order: `ALL_PROXY` is any protocol's, `HTTPS_PROXY` the one
/// a `CONNECT` proxy is named by; `execguard run` sets all of them to the session's proxy.
pub const PROXY_VARS: [&str; 4] = ["ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"];

/// `host:port` of the first `http://host:port[/]` proxy variable.
pub fn proxy_address(get: impl Fn(&str) -> Option<String>) -> Option<String> {
    PROXY_VARS.iter().find_map(|name| {
        let url = get(name)?;
        let authority = url.strip_prefix("http://")?.trim_end_matches('/');
        (!authority.is_empty() && !authority.contains('/')).then(|| authority.to_string())
    })
}

/// A path the two shells between git and the `ProxyCommand` (git's `sh -c`, ssh's
/// `$SHELL -c`) pass on as one word.
fn one_word(p: &str) -> bool {
    !p.is_empty()
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._+-".contains(&b))
}

/// The ssh command the real git gets so that its ssh reaches out through the proxy, from
/// `base` (git's own `ssh`, or the go command's): `None` without a proxy (outside a session,
/// in the image) or without `execguard` beside `wrapper`.
fn through_proxy(env: &EnvView, wrapper: &Path, base: &str) -> Option<String> {
    let get = |n: &str| env.get(n).and_then(|v| v.to_str()).map(str::to_string);
    proxy_address(get)?;
    let connect = wrapper.parent()?.join("execguard");
    let c = connect
        .to_str()
        .filter(|c| one_word(c) && connect.is_file())?;
    Some(format!("{base} -o 'ProxyCommand={c} connect %h %p'"))
}

/// The ssh commands git may be given under `wrapper` with this environment: the two
/// [`through_proxy`] makes. A git the wrapper started runs its helpers (`index-pack`,
/// `fetch-pack`) through the wrapper again, with the value it was given.
pub fn own_commands(env: &EnvView, wrapper: &Path) -> Vec<String> {
    ["ssh", GO_SSH_COMMAND]
        .iter()
        .filter_map(|base| through_proxy(env, wrapper, base))
        .collect()
}

/// What the real git's environment gets: `GIT_SSH_COMMAND` through the proxy, and
/// `GIT_SSH_VARIANT=ssh` (it is OpenSSH, whatever the caller said); nothing outside a session.
/// The caller's `GIT_SSH_COMMAND` was checked: absent, the go command's, or one of ours.
pub fn child_env(env: &EnvView, wrapper: &Path) -> Vec<(OsString, OsString)> {
    let asked = env.get("GIT_SSH_COMMAND").and_then(|v| v.to_str());
    let command = match asked {
        Some(v) if own_commands(env, wrapper).iter().any(|o| o == v) => Some(v.to_string()),
        Some(GO_SSH_COMMAND) => through_proxy(env, wrapper, GO_SSH_COMMAND),
        _ => through_proxy(env, wrapper, "ssh"),
    };
    command
        .map(|c| {
            vec![
                ("GIT_SSH_COMMAND".into(), c.into()),
                ("GIT_SSH_VARIANT".into(), "ssh".into()),
            ]
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(pairs: &[(&str, &str)]) -> EnvView {
        let v: Vec<(OsString, OsString)> =
            pairs.iter().map(|(a, b)| (a.into(), b.into())).collect();
        EnvView::new(&v)
    }

    #[test]
    fn the_proxy_is_the_first_http_variable() {
        let get = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            proxy_address(get(&[("HTTPS_PROXY", "http://127.0.0.1:4242/")])),
            Some("127.0.0.1:4242".into())
        );
        assert_eq!(
            proxy_address(get(&[
                ("ALL_PROXY", "socks5://127.0.0.1:1"),
                ("https_proxy", "http://127.0.0.1:9")
            ])),
            Some("127.0.0.1:9".into())
        );
        assert_eq!(proxy_address(get(&[("ALL_PROXY", "http://h:1/x")])), None);
        assert_eq!(proxy_address(get(&[])), None);
    }

    #[test]
    fn git_s_ssh_goes_through_the_proxy_only_in_a_session_and_by_a_trusted_connect() {
        let dir = tempfile::tempdir().unwrap();
        let wrapper = dir.path().join("execguard-git");
        let in_session = view(&[("ALL_PROXY", "http://127.0.0.1:4242")]);
        // No execguard beside the wrapper: nothing is set (git's ssh fails as before).
        assert!(child_env(&in_session, &wrapper).is_empty());
        std::fs::write(dir.path().join("execguard"), b"").unwrap();
        let ours = format!(
            "ssh -o 'ProxyCommand={} connect %h %p'",
            dir.path().join("execguard").display()
        );
        let set = child_env(&in_session, &wrapper);
        assert_eq!(
            set,
            vec![
                (OsString::from("GIT_SSH_COMMAND"), OsString::from(&ours)),
                ("GIT_SSH_VARIANT".into(), "ssh".into()),
            ]
        );
        // git's helpers come back with it, and keep it; the go command's options are kept.
        let again = view(&[
            ("ALL_PROXY", "http://127.0.0.1:4242"),
            ("GIT_SSH_COMMAND", &ours),
        ]);
        assert_eq!(child_env(&again, &wrapper), set);
        assert_eq!(own_commands(&again, &wrapper).len(), 2);
        let go = view(&[
            ("ALL_PROXY", "http://127.0.0.1:4242"),
            ("GIT_SSH_COMMAND", GO_SSH_COMMAND),
        ]);
        assert!(child_env(&go, &wrapper)[0]
            .1
            .to_str()
            .unwrap()
            .starts_with("ssh -o ControlMaster=no -o BatchMode=yes -o 'ProxyCommand="));
        // Outside a session (no proxy variable), nothing.
        assert!(child_env(&view(&[]), &wrapper).is_empty());
        // A path the shells would split is not used.
        assert!(!one_word("/opt/my tools/execguard"));
        assert!(!one_word("/opt/$(x)/execguard"));
        assert!(one_word("/usr/local/bin/execguard"));
    }
}
