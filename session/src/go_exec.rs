//! `go test` and `go run` in a strict session: Go starts the programs it built with its own
//! system calls, not libc's, so no guard sees that exec and the kernel's refusal is a bare
//! "permission denied". Through `GOFLAGS=-exec=/usr/bin/env` the go command starts them
//! through `env`, a system program the guard is in: its `execvp` is decided by the guard,
//! whose refusal line (with the way forward) reaches the person and the audit, and so the
//! session's summary. Measured (go 1.19, strict): without it, `fork/exec
//! /tmp/go-build…/hello.test: permission denied` and no record; with it, the guard's
//! `mutable_native` line and one record each for `go test` and `go run`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// The program Go's execs go through: a system program with the guard in it, which passes
/// its arguments on as they are (`env PROG ARGS...` runs `PROG ARGS...`).
pub const VIA: &str = "/usr/bin/env";

/// Adds `-exec=/usr/bin/env` to the session's `GOFLAGS` in a strict sealed session, unless the
/// person chose an `-exec` of their own or `env` is missing or lies in the write set (the
/// session could replace it). The go command applies a `GOFLAGS` flag only to the commands
/// that know it (`go test`, `go run`); `go build` ignores it. Returns whether it did.
pub fn route_through_guard(
    policy: &execguard_policy::Policy<'_>,
    env: &mut Vec<(OsString, OsString)>,
) -> bool {
    let strict = policy.seal() && policy.profile() == execguard_policy::Profile::Strict;
    let usable = || {
        crate::paths::canonical(std::path::Path::new(VIA)).is_ok_and(|c| {
            c.is_file() && policy.mutable_root_of(c.as_os_str().as_bytes()).is_none()
        })
    };
    if !strict || chooses_exec(env) || !usable() {
        return false;
    }
    let mut flags = env
        .iter()
        .rev()
        .find(|(k, _)| k == "GOFLAGS")
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
        .map(|mut v| {
            v.push(" ");
            v
        })
        .unwrap_or_default();
    flags.push(format!("-exec={VIA}"));
    env.retain(|(k, _)| k != "GOFLAGS");
    env.push(("GOFLAGS".into(), flags));
    true
}

/// Does `GOFLAGS` already name an `-exec` (`-exec=X` or `--exec=X`)?
fn chooses_exec(env: &[(OsString, OsString)]) -> bool {
    env.iter()
        .filter(|(k, _)| k == "GOFLAGS")
        .flat_map(|(_, v)| v.as_bytes().split(u8::is_ascii_whitespace))
        .filter_map(|flag| flag.strip_prefix(b"-"))
        .map(|flag| flag.strip_prefix(b"-").unwrap_or(flag))
        .any(|flag| flag == b"exec" || flag.starts_with(b"exec="))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(goflags: Option<&str>) -> Vec<(OsString, OsString)> {
        let mut e = vec![("PATH".into(), "/usr/bin".into())];
        e.extend(goflags.map(|g| ("GOFLAGS".into(), g.into())));
        e
    }

    /// A person's own `-exec` is kept; anything else in `GOFLAGS` stays beside ours.
    #[test]
    fn an_exec_of_the_persons_own_is_kept() {
        for (goflags, chosen) in [
            (None, false),
            (Some(""), false),
            (Some("-mod=mod"), false),
            (Some("-executable=x"), false),
            (Some("-exec=xprog"), true),
            (Some("-mod=mod --exec=xprog"), true),
            (Some("-exec"), true),
        ] {
            assert_eq!(chooses_exec(&env(goflags)), chosen, "{goflags:?}");
        }
    }

    #[test]
    fn the_flag_is_added_in_strict_sessions_only() {
        let cases = [
            ("strict", true, None, Some("-exec=/usr/bin/env")),
            (
                "strict",
                true,
                Some("-mod=mod"),
                Some("-mod=mod -exec=/usr/bin/env"),
            ),
            ("strict", true, Some("-exec=xprog"), Some("-exec=xprog")),
            ("strict", false, None, None),
            ("development", true, None, None),
        ];
        for (profile, seal, goflags, want) in cases {
            let text = format!(
                "version = 1\nprofile = \"{profile}\"\nworkspace = \"/work/ws\"\nseal = {seal}\n"
            );
            let policy = execguard_policy::Policy::parse(text.as_bytes()).unwrap();
            let mut e = env(goflags);
            route_through_guard(&policy, &mut e);
            let got = e
                .iter()
                .find(|(k, _)| k == "GOFLAGS")
                .map(|(_, v)| v.to_str().unwrap().to_string());
            assert_eq!(got.as_deref(), want, "{profile} seal={seal} {goflags:?}");
        }
    }
}
