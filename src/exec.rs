//! Deciding a command line with the same engine and OS view as the guard.

use execguard_os::LibcSys;
use execguard_policy::path::PathBuf as PathBytes;
use execguard_policy::sys::Sys;
use execguard_policy::{decide_launch, Context, Policy, Request, RuntimeIds, Target, Verdict};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The file an `execvp` of `program` would start first: `program` itself when it has a `/`,
/// else the first executable regular file in PATH (default `/bin:/usr/bin`).
pub fn resolve_program(program: &[u8], path_var: Option<&[u8]>) -> Option<Vec<u8>> {
    if program.is_empty() {
        return None;
    }
    if program.contains(&b'/') {
        return Some(program.to_vec());
    }
    let search = path_var.unwrap_or(execguard_policy::decide::DEFAULT_PATH);
    search.split(|&c| c == b':').find_map(|dir| {
        let candidate = PathBytes::join(dir, program).ok()?;
        LibcSys
            .is_executable(candidate.as_bytes())
            .then(|| candidate.as_bytes().to_vec())
    })
}

/// The outcome of deciding a command line.
pub struct Decision {
    pub verdict: Verdict,
    /// What was decided: the resolved program, or the bare name when PATH has none.
    pub target: Vec<u8>,
    /// The name to hand the kernel for `target`: its canonical name when the resolved one went
    /// through the write set (so a rename after the decision changes nothing), else `target`.
    pub program: Vec<u8>,
    /// For a mutable script: the interpreter to exec (by the name the kernel must be handed)
    /// and its full argv, as the kernel's `binfmt_script` would have built it.
    pub launch: Option<(Vec<u8>, Vec<Vec<u8>>)>,
}

/// Decides `argv` with `env` as the new environment.
pub fn decide_command(
    policy: &Policy<'_>,
    self_lib: Option<&[u8]>,
    argv: &[OsString],
    env: &[(OsString, OsString)],
) -> Decision {
    let env_entries: Vec<Vec<u8>> = env
        .iter()
        .map(|(k, v)| {
            let mut e = k.as_bytes().to_vec();
            e.push(b'=');
            e.extend_from_slice(v.as_bytes());
            e
        })
        .collect();
    let env_refs: Vec<&[u8]> = env_entries.iter().map(Vec::as_slice).collect();
    let argv_refs: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_bytes());
    let program = argv_refs.first().copied().unwrap_or(b"");
    let Some(target) = resolve_program(program, path_var) else {
        return Decision {
            verdict: Verdict::Kernel(execguard_policy::sys::ENOENT),
            target: program.to_vec(),
            program: program.to_vec(),
            launch: None,
        };
    };
    let mut sys = LibcSys;
    let runtimes = RuntimeIds::resolve(&mut sys, policy);
    let ctx = Context {
        policy,
        runtimes: &runtimes,
        self_lib,
    };
    let req = Request {
        target: Target::Path(&target),
        given_name: None,
        argv: &argv_refs[..],
        envp: &env_refs[..],
    };
    let mut exec_as = Box::new(PathBytes::new());
    let (verdict, launch) = decide_launch(&mut sys, &ctx, &req, &mut exec_as);
    let exec_as = (!exec_as.as_bytes().is_empty()).then(|| exec_as.as_bytes().to_vec());
    let launch = launch.map(|l| {
        let program = exec_as.clone().unwrap_or_else(|| l.program().to_vec());
        (program, l.argv().map(<[u8]>::to_vec).collect())
    });
    Decision {
        verdict,
        program: match (&launch, exec_as) {
            (None, Some(name)) => name,
            _ => target.clone(),
        },
        target,
        launch,
    }
}

pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn os(b: Vec<u8>) -> OsString {
    OsString::from_vec(b)
}
