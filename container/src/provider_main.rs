//! `execguard-provider`: the provider wrapper.
//!
//! ```text
//! execguard-provider [PROVIDER-ARGS...]
//! ```
//!
//! 1. Refuses unless started by the entrypoint chain ([`crate::chain`]).
//! 2. Reads the session from the trusted runtime state (`/run/execguard/state`, root-owned); in
//!    read-only sessions, where no such state exists, from the entrypoint's own environment
//!    (`/proc/<entrypoint>/environ`, re-validated), never from its own environment.
//! 3. Applies the provider's argument policy and prepends the managed arguments.
//! 4. Rebuilds the environment from the allow-list and pins `HOME`, `TMPDIR`, `PATH`.
//! 5. Execs the real provider (`/usr/local/libexec/execguard/real/<agent>`).
//!
//! Exit codes: 2 for every refusal (`execguard-provider: refused <code>: <detail>`), 126/127
//! when the provider cannot be executed / is not found.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::allowlist;
use crate::chain;
use crate::env::{parse_session_env, Date};
use crate::paths::Paths;
use crate::provider::check_provider_args;
use crate::session::Mutability;
use crate::state::{load_state, Assurance, RuntimeState};
use crate::sys;
use crate::EXIT_REFUSED;

const NAME: &str = "execguard-provider";

fn refuse(code: &str, detail: impl std::fmt::Display) -> i32 {
    eprintln!("{NAME}: refused {code}: {detail}");
    EXIT_REFUSED
}

/// Entry from `main`.
pub fn main(args: Vec<OsString>, env: Vec<(OsString, OsString)>) -> i32 {
    run(&Paths::production(), &args, &env, Date::today_utc())
}

/// Parses a NUL-separated environ block.
pub fn parse_environ(block: &[u8]) -> Vec<(OsString, OsString)> {
    block
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let eq = e.iter().position(|b| *b == b'=')?;
            Some((
                OsStr::from_bytes(&e[..eq]).to_owned(),
                OsStr::from_bytes(&e[eq + 1..]).to_owned(),
            ))
        })
        .collect()
}

/// The session: trusted state, or (read-only sessions) the entrypoint's environment.
fn session_state(
    paths: &Paths,
    entrypoint: i32,
    today: Date,
) -> Result<RuntimeState, (&'static str, String)> {
    if let Some(state) = load_state(paths).map_err(|e| (e.code(), e.to_string()))? {
        return Ok(state);
    }
    let path = std::path::PathBuf::from(format!("/proc/{entrypoint}/environ"));
    let block = std::fs::read(&path).map_err(|e| {
        (
            "state_missing",
            format!("no runtime state and {path:?}: {e}"),
        )
    })?;
    let env = parse_environ(&block);
    let pairs: Vec<(&OsStr, &OsStr)> = env
        .iter()
        .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
        .collect();
    let s = parse_session_env(&pairs, today).map_err(|e| (e.code(), e.detail().to_owned()))?;
    if s.mutability != Mutability::Readonly {
        return Err((
            "state_missing",
            "an ephemeral session must have root-owned runtime state".to_owned(),
        ));
    }
    Ok(RuntimeState {
        agent: s.agent,
        profile: s.profile,
        autonomy: s.autonomy,
        mutability: s.mutability,
        assurance: Assurance::managed(),
    })
}

/// The wrapper with paths injected.
pub fn run(paths: &Paths, args: &[OsString], env: &[(OsString, OsString)], today: Date) -> i32 {
    // SAFETY: umask cannot fail and takes a plain integer.
    unsafe { libc::umask(0o077) };
    let chain_fd = env
        .iter()
        .find(|(k, _)| k == chain::VAR_CHAIN_FD)
        .map(|(_, v)| v.as_os_str());
    let entrypoint = match chain::verify_started_by_entrypoint(chain_fd, sys::getppid()) {
        Ok(pid) => pid,
        Err(e) => return refuse(e.code(), e),
    };
    let state = match session_state(paths, entrypoint, today) {
        Ok(s) => s,
        Err((code, detail)) => return refuse(code, detail),
    };
    let argv = match check_provider_args(state.agent, state.profile, state.autonomy, args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            // The agent asked for something the session forbids: the trace outlives it.
            let detail = e.to_string();
            let detail = detail.split_once(": ").map_or(&detail[..], |(_, d)| d);
            crate::audit::record_refusal(
                paths,
                None::<fn(&[u8])>,
                "provider",
                "wrapper",
                e.code(),
                detail,
                args,
            );
            return EXIT_REFUSED;
        }
    };
    // Strict without the operator's acknowledgement: the provider's own flags keep the
    // workspace's provider configuration out (the entrypoint masked what existed at start).
    let argv = if state.profile == execguard_policy::Profile::Strict
        && !state
            .assurance
            .reductions()
            .contains(&crate::state::Reduction::RepoConfig)
    {
        let mut v: Vec<OsString> = crate::repo_config::isolation_args(state.agent)
            .iter()
            .map(OsString::from)
            .collect();
        v.extend(argv);
        v
    } else {
        argv
    };
    let child_env = allowlist::provider_env(env, state.agent, &allowlist::read_env_policy(paths));
    let program = paths.real_provider(state.agent);
    let err = Command::new(&program)
        .arg0(state.agent.as_str())
        .args(paths.provider_leading_args(state.agent))
        .args(argv)
        .env_clear()
        .envs(child_env)
        .exec();
    eprintln!("{NAME}: failed to exec {}: {err}", program.display());
    execguard_session::reaper::spawn_failure_code(&err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environ_blocks_parse() {
        let env = parse_environ(b"A=1\0B=x=y\0\0NOEQ\0C=\0");
        assert_eq!(
            env,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "x=y".into()),
                ("C".into(), "".into())
            ]
        );
    }

    #[test]
    fn a_start_outside_the_chain_is_refused() {
        let paths = Paths::under(std::path::Path::new("/nonexistent-execguard-root"));
        assert_eq!(
            run(
                &paths,
                &[],
                &[],
                Date {
                    year: 2026,
                    month: 1,
                    day: 1
                }
            ),
            2
        );
    }
}
