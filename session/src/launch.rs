//! Deciding a command line with the same engine and OS view as the guard.

use execguard_os::LibcSys;
use execguard_policy::sys::Sys;
use execguard_policy::{
    decide_launch, path_candidates, search_goes_on, Context, ExecName, Policy, Reason, Request,
    RuntimeIds, Target, Verdict,
};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::Path;

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
    let mut sys = LibcSys;
    let runtimes = RuntimeIds::resolve(&mut sys, policy);
    let ctx = Context {
        policy,
        runtimes: &runtimes,
        self_lib,
        memo: None,
    };
    let decide_one = |sys: &mut LibcSys, target: &[u8]| {
        let req = Request {
            target: Target::Path(target),
            given_name: None,
            argv: &argv_refs[..],
            envp: &env_refs[..],
        };
        let mut exec_as = Box::new(ExecName::new());
        let mut launch = None;
        let verdict = decide_launch(sys, &ctx, &req, &mut exec_as, &mut launch);
        let exec_as = (!exec_as.as_bytes().is_empty()).then(|| exec_as.as_bytes().to_vec());
        let launch = launch.map(|l| {
            let program = exec_as.clone().unwrap_or_else(|| l.program().to_vec());
            (program, l.argv().map(<[u8]>::to_vec).collect())
        });
        Decision {
            verdict,
            program: match (&launch, exec_as) {
                (None, Some(name)) => name,
                _ => target.to_vec(),
            },
            target: target.to_vec(),
            launch,
        }
    };
    if program.contains(&b'/') {
        return decide_one(&mut sys, program);
    }
    // The PATH search as the guard's execvp does it (the engine's one candidate list): a
    // candidate that is refused or missing is skipped; the first refusal is the answer when
    // nothing runs.
    let mut refused = None;
    if !program.is_empty() {
        for candidate in path_candidates(path_var, program) {
            if !sys.is_executable(candidate.as_bytes()) {
                continue;
            }
            let decision = decide_one(&mut sys, candidate.as_bytes());
            match &decision.verdict {
                Verdict::Deny { errno, .. } | Verdict::Kernel(errno) if search_goes_on(*errno) => {
                    refused = refused.or(Some(decision));
                }
                _ => return decision,
            }
        }
    }
    refused.unwrap_or_else(|| Decision {
        verdict: Verdict::Kernel(execguard_policy::sys::ENOENT),
        target: program.to_vec(),
        program: program.to_vec(),
        launch: None,
    })
}

pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn os(b: Vec<u8>) -> OsString {
    OsString::from_vec(b)
}

/// The guard's refusal line for `reason` under `profile`, whole path and way forward, as the
/// preload prints it (`execguard_policy::audit::format_denial`): `execguard run`'s first
/// command and the end-of-session summary print the same. Ends in a newline.
pub fn denial_line(
    reason: execguard_policy::Reason,
    profile: Option<execguard_policy::Profile>,
    path: &[u8],
    omitted: usize,
) -> String {
    let mut buf = vec![0u8; execguard_policy::audit::DENIAL_MAX];
    let n = execguard_policy::audit::format_denial(
        "execguard",
        reason,
        profile,
        path,
        omitted,
        &mut buf,
    );
    buf.truncate(n);
    String::from_utf8_lossy(&buf).into_owned()
}

/// This process's environment without the guard's own variables, which the session gets anew.
pub fn inherited_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| k != "LD_PRELOAD" && k != execguard_load::POLICY_ENV)
        .collect()
}

/// The guard preloaded (before any library the caller preloads) and the session policy
/// inline: the guard keeps both in every descendant.
pub fn add_guard(env: &mut Vec<(OsString, OsString)>, lib: &Path, policy_text: &[u8]) {
    let mut preload = lib.as_os_str().to_os_string();
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(existing);
    }
    env.push(("LD_PRELOAD".into(), preload));
    env.push((
        execguard_load::POLICY_ENV.into(),
        OsStr::from_bytes(policy_text).to_os_string(),
    ));
}

/// Replaces the policy [`add_guard`] put in the session's environment.
pub fn set_policy(env: &mut [(OsString, OsString)], policy_text: &[u8]) {
    for (k, v) in env.iter_mut() {
        if k == execguard_load::POLICY_ENV {
            *v = OsStr::from_bytes(policy_text).to_os_string();
        }
    }
}

/// The session's first command, decided.
pub enum FirstCommand {
    /// Allowed: exec it by [`exec_first_command`].
    Runs(Box<Decision>),
    /// Refused or not found (said on stderr, audited): the exit status, 126 or 127.
    Refused(u8),
}

/// The first exec is made from here, outside the guard: decided with the same engine, said
/// and audited as the guard says and audits every later one.
pub fn decide_first_command(
    policy: &Policy<'_>,
    lib: &Path,
    command: &[OsString],
    env: &[(OsString, OsString)],
    kept: Option<&execguard_audit::writer::Writer>,
) -> FirstCommand {
    let decision = decide_command(policy, Some(lib.as_os_str().as_bytes()), command, env);
    if let Verdict::Deny { reason, path, .. } = &decision.verdict {
        eprint!(
            "{}",
            denial_line(
                *reason,
                Some(policy.profile()),
                path.as_bytes(),
                path.omitted()
            )
        );
    }
    if crate::preflight::audit_first_command(
        policy,
        &decision.verdict,
        command,
        &decision.target,
        kept,
    )
    .is_err()
    {
        let log = policy.audit_log().unwrap_or_default();
        eprint!(
            "{}",
            denial_line(Reason::AuditUnwritable, Some(policy.profile()), log, 0)
        );
        return FirstCommand::Refused(126);
    }
    match &decision.verdict {
        Verdict::Allow(_) => FirstCommand::Runs(Box::new(decision)),
        Verdict::Deny { .. } => FirstCommand::Refused(126),
        Verdict::Kernel(errno) => {
            let err = std::io::Error::from_raw_os_error(*errno);
            eprintln!("execguard: {}: {err}", lossy(&decision.target));
            let code = crate::reaper::spawn_failure_code(&err);
            FirstCommand::Refused(code as u8)
        }
    }
}

/// Execs the first command: a mutable script through its interpreter with the argv the
/// kernel would have built (under the seal the kernel refuses the script itself; unsealed, a
/// swap after the decision must change nothing), as the guard does for every later exec.
/// Returns only when the exec failed: its exit status, 126 or 127.
pub fn exec_first_command(
    first: Box<Decision>,
    command: &[OsString],
    env: Vec<(OsString, OsString)>,
) -> u8 {
    let (program, arg0, rest): (OsString, OsString, Vec<OsString>) = match first.launch {
        Some((program, argv)) => {
            let mut argv = argv.into_iter().map(os);
            let arg0 = argv.next().unwrap_or_default();
            (os(program), arg0, argv.collect())
        }
        None => (os(first.program), command[0].clone(), command[1..].to_vec()),
    };
    let err = std::process::Command::new(&program)
        .arg0(arg0)
        .args(rest)
        .env_clear()
        .envs(env)
        .exec();
    eprintln!("execguard: {}: {err}", program.to_string_lossy());
    crate::reaper::spawn_failure_code(&err) as u8
}
