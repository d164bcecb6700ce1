//! `execguard-entrypoint`: the container's PID 1.
//!
//! ```text
//! execguard-entrypoint [PROVIDER-ARGS...]                  run the provider through execguard-provider
//! execguard-entrypoint --arbitrary-command -- CMD [ARGS..] run CMD instead (assurance is reduced)
//! execguard-entrypoint --generate-manifest [--root DIR] IMAGE-PATH...
//!                                                          print the control-plane manifest
//! ```
//!
//! Start order, one function each (`prepare`, then `start`): umask 077 → validate the
//! managed environment → check the start mode against the mutability (`check_start`) →
//! verify the control plane → the seal and its reductions (`plan_seal`) → the write set's
//! `noexec` (`harden_write_set`) → the workspace's provider configuration
//! (`plan_repo_config`) → (root) write the runtime state, add the mapped user
//! (`record_runtime_state`) → build the provider home and environment (`provider_env`) → drop
//! and verify privileges → seal (`seal_self`) → the command (`provider_command`) → record what
//! outlives the session for the privilege sweep (`record_privileges`) and the repositories for
//! the hand-back (`record_handback`) → the supervisor, the same as the host chain's
//! (`execguard_session::supervisor`): block signals → spawn → forward signals and reap until
//! the child exits → its duties → exit with the child's status.
//!
//! Exit codes: the child's status (128+n if killed by signal n); 2 for every refusal (one line
//! `execguard-entrypoint: refused <code>: <detail>` on stderr); 126/127 when the command cannot
//! be executed / is not found.

use std::ffi::{OsStr, OsString};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;

use execguard_session::handback::{self, Handback};
use execguard_session::reaper::{spawn_failure_code, Stand};
use execguard_session::supervisor::{Duties, Supervisor};

pub use execguard_wrappers::Refusal;

use crate::allowlist;
use crate::chain;
use crate::env::{parse_session_env, Date, SessionEnv};
use crate::home;
use crate::manifest;
use crate::paths::Paths;
use crate::privs::{drop_privileges, Start, Syscall, Target};
use crate::session::Mutability;
use crate::state::{write_state, Assurance, Reduction, RuntimeState};
use crate::sys;
use crate::user;
use crate::EXIT_REFUSED;

const NAME: &str = "execguard-entrypoint";

/// What the entrypoint was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Run the provider with these (user) arguments.
    Provider(Vec<OsString>),
    /// Run this command instead of the provider.
    Arbitrary(Vec<OsString>),
    /// Print the manifest of these image paths below `root`.
    GenerateManifest { root: PathBuf, files: Vec<PathBuf> },
}

/// Parses the command line.
pub fn parse_mode(args: &[OsString]) -> Result<Mode, Refusal> {
    match args.first().map(|a| a.as_os_str()) {
        Some(a) if a == "--arbitrary-command" => {
            if args.get(1).map(|a| a.as_os_str()) != Some(OsStr::new("--")) || args.len() < 3 {
                return Err(Refusal::coded(
                    "usage",
                    "--arbitrary-command -- CMD [ARGS...]",
                ));
            }
            Ok(Mode::Arbitrary(args[2..].to_vec()))
        }
        Some(a) if a == "--generate-manifest" => {
            let mut rest = &args[1..];
            let mut root = PathBuf::from("/");
            if rest.first().map(|a| a.as_os_str()) == Some(OsStr::new("--root")) {
                let dir = rest
                    .get(1)
                    .ok_or_else(|| Refusal::coded("usage", "--root DIR"))?;
                root = PathBuf::from(dir);
                rest = &rest[2..];
            }
            if rest.is_empty() {
                return Err(Refusal::coded(
                    "usage",
                    "--generate-manifest [--root DIR] IMAGE-PATH...",
                ));
            }
            Ok(Mode::GenerateManifest {
                root,
                files: rest.iter().map(PathBuf::from).collect(),
            })
        }
        _ => Ok(Mode::Provider(args.to_vec())),
    }
}

fn refuse(r: &Refusal) -> i32 {
    eprintln!("{NAME}: refused {}: {}", r.code(), r.detail());
    EXIT_REFUSED
}

/// [`refuse`], and a record in the image's audit (tool `entrypoint`, entry `start`), so a
/// session that never started leaves a trace: kept by PID 1's writer once it has begun.
fn refuse_audited(
    paths: &Paths,
    kept: Option<crate::kept::Kept>,
    args: &[OsString],
    r: &Refusal,
) -> i32 {
    let code = refuse(r);
    crate::audit::record_refusal(
        paths,
        kept.map(|k| move |record: &[u8]| k.keep_refusal(record)),
        "entrypoint",
        "start",
        r.code(),
        r.detail(),
        args,
    );
    code
}

/// Entry from `main`: production paths, real system calls, today's date.
pub fn main(args: Vec<OsString>, env: Vec<(OsString, OsString)>) -> i32 {
    run(
        &Paths::production(),
        &crate::privs::LinuxSyscall,
        &args,
        &env,
        Date::today_utc(),
    )
}

/// The whole entrypoint with every dependency injected.
pub fn run(
    paths: &Paths,
    sys: &dyn Syscall,
    args: &[OsString],
    env: &[(OsString, OsString)],
    today: Date,
) -> i32 {
    sys.set_umask(0o077);
    let mode = match parse_mode(args) {
        Ok(m) => m,
        Err(r) => return refuse_audited(paths, None, args, &r),
    };
    if let Mode::GenerateManifest { root, files } = &mode {
        return generate(root, files);
    }
    let mut kept = None;
    match prepare(paths, sys, &mode, env, today, &mut kept) {
        Ok(prepared) => start(prepared),
        Err(r) => refuse_audited(paths, kept.take(), args, &r),
    }
}

fn generate(root: &std::path::Path, files: &[PathBuf]) -> i32 {
    match manifest::generate_manifest(&Paths::under(root), files) {
        Ok(m) => {
            print!("{}", m.render());
            0
        }
        Err(e) => refuse(&Refusal::coded(e.code(), e.to_string())),
    }
}

struct Prepared {
    cmd: Command,
    _link: Option<chain::ChainLink>,
    /// The session's repositories, recorded before it starts (every profile): what it plants
    /// in their control files is quarantined when it ends (docs/handback.md).
    handback: Option<Handback>,
    /// The setuid/setgid bits and file capabilities the session leaves in what outlives it
    /// (the workspace above all, the host's), cleared at its end.
    clear_privileges: Option<execguard_session::privileges::Sweep>,
    /// Where the session's refusals start in the image policy's audit log: PID 1 prints their
    /// summary when the session ends, as `execguard run` does on a host (issue 30).
    summary: Option<execguard_session::summary::Mark>,
    /// PID 1's audit writer, when the image policy names one (`crate::kept`).
    audit: Option<execguard_audit::writer::Writer>,
}

fn start(mut prepared: Prepared) -> i32 {
    let duties = Duties {
        // Nothing of the session may outlive it and plant again after the hand-back.
        end_the_rest: prepared.handback.is_some(),
        carry_back: false,
        handback: prepared.handback.take(),
        summary: prepared.summary.take(),
        clear_privileges: prepared.clear_privileges.take(),
        remove_temp: None,
        // The container's network is Docker's (`--network`), the image's to choose.
        network: None,
        audit: prepared.audit.take(),
    };
    let mut supervisor = match Supervisor::install(Stand::Init, duties) {
        Ok(s) => s,
        Err(e) => return refuse(&Refusal::coded("init_failed", e.to_string())),
    };
    let child = match supervisor.spawn(&mut prepared.cmd) {
        Ok(pid) => pid,
        Err(e) => {
            eprintln!(
                "{NAME}: failed to start {:?}: {e}",
                prepared.cmd.get_program()
            );
            // The duties still end what was begun (the audit's chain above all).
            supervisor.finish();
            return spawn_failure_code(&e);
        }
    };
    let code = supervisor.wait(child);
    supervisor.finish();
    code
}

/// The mutable roots to seal: the image policy's (built-in roots, workspace, extras), or the
/// built-in ones and the workspace when the policy cannot be read (the guard then refuses
/// every exec anyway).
fn seal_roots(paths: &Paths) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // Policy roots are absolute; below a test root they are re-rooted there.
    let under_root = |abs: &[u8]| {
        paths
            .root
            .join(OsStr::from_bytes(abs.strip_prefix(b"/").unwrap_or(abs)))
    };
    match execguard_load::load_from(&paths.etc.join("execguard/policy.toml"), None) {
        Ok(loaded) => loaded.policy().mutable_roots().map(under_root).collect(),
        Err(_) => execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
            .iter()
            .map(|r| under_root(r))
            .chain(std::iter::once(paths.workspace.clone()))
            .collect(),
    }
}

fn env_pairs(env: &[(OsString, OsString)]) -> Vec<(&OsStr, &OsStr)> {
    env.iter()
        .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
        .collect()
}

fn prepare(
    paths: &Paths,
    sys: &dyn Syscall,
    mode: &Mode,
    env: &[(OsString, OsString)],
    today: Date,
    kept: &mut Option<crate::kept::Kept>,
) -> Result<Prepared, Refusal> {
    let session = parse_session_env(&env_pairs(env), today)
        .map_err(|e| Refusal::coded(e.code(), e.detail()))?;

    let start = check_start(sys, &session)?;
    // PID 1's audit writer, from here on the keeper of every record of the session.
    *kept = crate::kept::start(paths, session.host_uid, session.host_gid, session.profile)?;
    manifest::verify_manifest(paths, &session.manifest_sha256)
        .map_err(|e| Refusal::coded(e.code(), e.to_string()))?;

    let arbitrary = matches!(mode, Mode::Arbitrary(_));
    let mut reductions = Vec::new();
    let sealed = plan_seal(&session, arbitrary, &mut reductions)?;
    harden_write_set(paths, &session, start, &mut reductions)?;
    let mask_repo_config = plan_repo_config(paths, &session, start, &mut reductions)?;
    if let Some(k) = kept {
        k.writer
            .report_assurance(&Assurance::new(reductions.clone()).to_string());
    }
    let (owner, user_name) = record_runtime_state(paths, &session, start, reductions)?;
    if mask_repo_config && start == Start::Root {
        mask_repo_config_files(paths)?;
    }
    let mut child_env = provider_env(paths, &session, env, owner, user_name)?;
    if sealed {
        route_go_through_guard(paths, &mut child_env);
    }

    let link = if arbitrary {
        None
    } else {
        Some(chain::create_link().map_err(|e| Refusal::coded("chain_failed", e.to_string()))?)
    };

    // Where the session's refusals begin in the log, for PID 1's summary at its end: taken
    // (the log opened) before the log's directory leaves the tree.
    let summary =
        crate::audit::policy_log(paths).map(|(log, _)| execguard_session::summary::Mark::now(&log));
    if let Some(k) = kept {
        k.hide(session.host_uid)?;
    }

    drop_privileges(
        sys,
        Target {
            uid: session.host_uid,
            gid: session.host_gid,
        },
        start,
    )
    .map_err(|e| Refusal::coded(e.code(), e.to_string()))?;
    if kept.is_some() {
        // PID 1 now runs as the session's user and holds the log's descriptor: no process of
        // the session may trace it or reopen that descriptor through /proc/1/fd.
        // SAFETY: prctl with integer arguments only.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    }

    if sealed {
        // After the drop: no_new_privs is set, so an unprivileged process may restrict itself.
        seal_self(paths)?;
    }

    let cmd = provider_command(paths, mode, child_env, link.as_ref())?;
    // Recorded last, right before the session starts.
    let clear_privileges = Some(record_privileges(paths));
    let handback = record_handback(paths, &session);
    Ok(Prepared {
        cmd,
        _link: link,
        handback,
        clear_privileges,
        summary,
        audit: kept.take().map(|k| k.writer),
    })
}

/// What outlives the session in its write set, recorded for the sweep of setuid/setgid bits
/// and file capabilities at its end.
fn record_privileges(paths: &Paths) -> execguard_session::privileges::Sweep {
    let log = records_to(paths);
    let workspace = paths.workspace.canonicalize().ok();
    execguard_session::privileges::Sweep::starting_now(lasting_roots(paths), workspace, log)
}

/// Where PID 1's own records at the session's end go: its writer's socket when the policy
/// names one (the log is the writer's alone), else the policy's log.
fn records_to(paths: &Paths) -> Option<PathBuf> {
    crate::audit::policy_socket(paths).or_else(|| crate::audit::policy_log(paths).map(|(l, _)| l))
}

/// What outlives the session in the image's write set: its mutable roots (the image makes no
/// world of the session's own: the container is one).
fn lasting_roots(paths: &Paths) -> (Vec<PathBuf>, Vec<PathBuf>) {
    execguard_session::privileges::lasting_roots(
        &execguard_seal::Partition::new(seal_roots(paths)),
        &execguard_seal::world::World::default(),
        // No exec dirs in it to leave out.
        false,
    )
}

/// Who starts the session: root (the runtime state is recorded, the write set's mounts
/// hardened with the capabilities held until the drop), or the session's own user (a
/// read-only root only, strict only).
fn check_start(sys: &dyn Syscall, session: &SessionEnv) -> Result<Start, Refusal> {
    let as_root = sys::geteuid() == 0;
    let start = match (as_root, session.mutability) {
        // A read-only root started as root: the entrypoint records the runtime state and
        // hardens the write set's mounts with the capabilities it holds until the drop.
        (true, _) => Start::Root,
        (false, Mutability::Readonly) => Start::Unprivileged,
        (false, Mutability::Ephemeral) => {
            return Err(Refusal::coded(
                "mutability_mismatch",
                "ephemeral sessions start as root to prepare state",
            ))
        }
    };
    if start == Start::Unprivileged {
        let ids = (sys.get_resuid(), sys.get_resgid());
        if let (Ok(u), Ok(g)) = &ids {
            if *u != [session.host_uid; 3] || *g != [session.host_gid; 3] {
                return Err(Refusal::coded(
                    "uid_mismatch",
                    format!(
                        "running as {u:?}/{g:?}, expected {}/{}",
                        session.host_uid, session.host_gid
                    ),
                ));
            }
        }
    }

    // Without root nothing can record the session's profile for the guard, which then holds the
    // image policy's (strict): another profile would be one layer's word against another's.
    if start == Start::Unprivileged && session.profile != execguard_policy::Profile::Strict {
        return Err(Refusal::coded(
            "profile_unrecordable",
            format!(
                "profile {} needs a root start to record it for the guard (execguard image run does that); an unprivileged start runs strict only",
                session.profile.as_str()
            ),
        ));
    }
    Ok(start)
}

/// The reductions of the profile and the mode, and whether the session is sealed: strict
/// sessions are, unless the kernel cannot and the operator accepted that.
fn plan_seal(
    session: &SessionEnv,
    arbitrary: bool,
    reductions: &mut Vec<Reduction>,
) -> Result<bool, Refusal> {
    if session.profile == execguard_policy::Profile::Breakglass {
        reductions.push(Reduction::Profile(execguard_policy::Profile::Breakglass));
    }
    if arbitrary {
        reductions.push(Reduction::ArbitraryCommand);
    }
    // Strict sessions are sealed: the kernel itself refuses to execute files in mutable roots,
    // which also covers static and Go programs the guard cannot see. Know before anything is
    // written whether the kernel can do it; never degrade silently.
    let seal = session.profile == execguard_policy::Profile::Strict;
    let mut sealed = seal;
    if seal {
        // The partition's own test (ABI 2 at least: without REFER, renames across
        // directories would fail), so a kernel it refuses is known here, not after the drop.
        if let Err(e) = execguard_seal::partition_abi(execguard_seal::host_sys()) {
            if !session.allow_unsealed {
                return Err(Refusal::coded(
                    e.code(),
                    format!(
                        "{e}; set {}=1 to run strict unsealed at reduced assurance",
                        crate::env::VAR_ALLOW_UNSEALED
                    ),
                ));
            }
            eprintln!("{NAME}: warning: Landlock unavailable; strict session runs unsealed (reduced assurance)");
            reductions.push(Reduction::Unsealed);
            sealed = false;
        }
    }
    Ok(sealed)
}

/// `noexec` for the write set, made (root) or required to be there.
fn harden_write_set(
    paths: &Paths,
    session: &SessionEnv,
    start: Start,
    reductions: &mut Vec<Reduction>,
) -> Result<(), Refusal> {
    // noexec for the write set: the one kernel control for mappings (mmap PROT_EXEC) of files
    // the session writes. Profiles that allow workspace-built programs keep exec there and in
    // the container's own /tmp (`go test`, `go run` and scratch builds run what they build
    // there, as in `execguard run`'s development; it goes with the container).
    let strict = session.profile == execguard_policy::Profile::Strict;
    let roots: Vec<PathBuf> = seal_roots(paths)
        .into_iter()
        .filter(|r| r.exists())
        .collect();
    let exec_allowed: Vec<PathBuf> = if strict {
        Vec::new()
    } else {
        vec![paths.workspace.clone(), paths.root.join("tmp")]
    };
    let hardened = if start == Start::Root {
        crate::noexec::harden(&roots, &exec_allowed).err()
    } else {
        None
    };
    let mounts = crate::noexec::read_mounts()
        .map_err(|e| Refusal::coded("noexec_unavailable", format!("/proc/self/mountinfo: {e}")))?;
    let exec_mounts: Vec<String> = crate::noexec::write_set_mounts(&mounts, &roots, &exec_allowed)
        .into_iter()
        .filter(|c| !c.noexec)
        .map(|c| c.mount_point.display().to_string())
        .collect();
    if strict && !exec_mounts.is_empty() {
        if !session.allow_exec_mappings {
            let why = match &hardened {
                Some(e) => format!(" (remount failed: {e})"),
                None if start == Start::Unprivileged => {
                    " (an unprivileged start cannot remount)".into()
                }
                None => String::new(),
            };
            return Err(Refusal::coded(
                "noexec_unavailable",
                format!(
                    "writable and not noexec: {}{why}; start as root with CAP_SYS_ADMIN (execguard image run does), mount them noexec (Kubernetes: bindMountOptions), or set {}=1 for reduced assurance",
                    exec_mounts.join(", "),
                    crate::env::VAR_ALLOW_EXEC_MAPPINGS
                ),
            ));
        }
        eprintln!(
            "{NAME}: warning: writable and not noexec: {} (exec mappings there are stopped only by the guard; reduced assurance)",
            exec_mounts.join(", ")
        );
        reductions.push(Reduction::ExecMappings);
    }
    Ok(())
}

/// Whether the workspace's own provider configuration is masked (strict, unless
/// acknowledged); an unprivileged start that cannot mask it is refused.
fn plan_repo_config(
    paths: &Paths,
    session: &SessionEnv,
    start: Start,
    reductions: &mut Vec<Reduction>,
) -> Result<bool, Refusal> {
    let strict = session.profile == execguard_policy::Profile::Strict;
    // The workspace's own provider configuration: not loaded in strict unless acknowledged
    // (masked below, after the runtime state exists).
    if strict && session.repo_config_acknowledged {
        reductions.push(Reduction::RepoConfig);
    }
    let mask_repo_config = strict && !session.repo_config_acknowledged;
    if mask_repo_config && start == Start::Unprivileged {
        let present = crate::repo_config::present(&paths.workspace);
        if !present.is_empty() {
            return Err(Refusal::coded(
                "repo_config_unmaskable",
                format!(
                    "an unprivileged start cannot mask {}; remove it from the workspace or set {}=<today, UTC> to let the provider load it",
                    present.join(", "),
                    crate::env::VAR_REPO_CONFIG_ACK
                ),
            ));
        }
    }
    Ok(mask_repo_config)
}

/// The runtime state (and, on a writable root, the mapped user) recorded by root; the
/// owner of the provider home and the session's user name.
fn record_runtime_state(
    paths: &Paths,
    session: &SessionEnv,
    start: Start,
    reductions: Vec<Reduction>,
) -> Result<(Option<(u32, u32)>, String), Refusal> {
    let state = RuntimeState {
        agent: session.agent,
        profile: session.profile,
        autonomy: session.autonomy,
        mutability: session.mutability,
        assurance: Assurance::new(reductions),
    };

    let mut user_name = session.user_name.clone();
    let owner = if start == Start::Root && session.mutability == Mutability::Readonly {
        // The root file system is read-only: no passwd entry is added (the image user has one).
        write_state(paths, &state).map_err(|e| Refusal::coded(e.code(), e.to_string()))?;
        Some((session.host_uid, session.host_gid))
    } else if start == Start::Root {
        write_state(paths, &state).map_err(|e| Refusal::coded(e.code(), e.to_string()))?;
        let mapped = user::add_mapped_user(
            &paths.etc,
            &session.user_name,
            session.host_uid,
            session.host_gid,
        )
        .map_err(|e| Refusal::coded(e.code(), e.to_string()))?;
        user_name = mapped.user;
        Some((session.host_uid, session.host_gid))
    } else {
        None
    };
    Ok((owner, user_name))
}

/// Masks the workspace's provider configuration files (root).
fn mask_repo_config_files(paths: &Paths) -> Result<(), Refusal> {
    let masked = crate::repo_config::mask(&paths.workspace, &paths.run_dir.join("repo-config-masks"))
        .map_err(|e| Refusal::coded(
            "repo_config_unmaskable",
            format!("{e}; remove it from the workspace or set {}=<today, UTC> to let the provider load it", crate::env::VAR_REPO_CONFIG_ACK),
        ))?;
    if !masked.is_empty() {
        eprintln!(
            "{NAME}: not loading the workspace's provider configuration: {} (strict; {}=<today> loads it)",
            masked.join(", "),
            crate::env::VAR_REPO_CONFIG_ACK
        );
    }
    Ok(())
}

/// The provider home seeded, and the provider's environment.
fn provider_env(
    paths: &Paths,
    session: &SessionEnv,
    env: &[(OsString, OsString)],
    owner: Option<(u32, u32)>,
    user_name: String,
) -> Result<Vec<(OsString, OsString)>, Refusal> {
    let report = home::seed_home(paths, session.agent, owner)
        .map_err(|e| Refusal::coded(e.code(), e.to_string()))?;
    for skipped in &report.skipped {
        eprintln!("{NAME}: not importing /workspace/{skipped}: not a regular file reached without symlinks");
    }

    let extra = allowlist::read_env_policy(paths);
    let mut child_env = allowlist::provider_env(env, session.agent, &extra);
    child_env.retain(|(k, _)| k != "USER" && k != "LOGNAME");
    child_env.push(("USER".into(), user_name.clone().into()));
    child_env.push(("LOGNAME".into(), user_name.into()));
    Ok(child_env)
}

/// A strict sealed session's `go test` and `go run` start what they built through
/// `/usr/bin/env`, as `execguard run`'s do ([`execguard_session::go_exec`]): the guard's line,
/// with its way forward, instead of Go's bare "permission denied".
fn route_go_through_guard(paths: &Paths, env: &mut Vec<(OsString, OsString)>) {
    if let Ok(loaded) = execguard_load::load_from(&paths.etc.join("execguard/policy.toml"), None) {
        let policy = loaded
            .policy()
            .with_profile(execguard_policy::Profile::Strict);
        execguard_session::go_exec::route_through_guard(&policy, env);
    }
}

/// PID 1 seals itself; the provider and everything it starts inherit the seal.
fn seal_self(paths: &Paths) -> Result<(), Refusal> {
    // PID 1 seals itself; the provider and everything it starts inherit the seal.
    let roots = seal_roots(paths);
    // The W^X partition and the session seccomp filter; the image makes its own noexec
    // mounts, so none are made here.
    execguard_seal::seal(
        execguard_seal::host_sys(),
        &execguard_seal::Partition::new(roots),
        &execguard_seal::Options {
            memfd_noexec: true,
            mounts: execguard_seal::MountsMode::Off,
            reduced: None,
            world: None,
        },
    )
    .map_err(|e| Refusal::coded(e.code(), e.to_string()))?;
    Ok(())
}

/// The command the session starts: the provider wrapper (with its end of the chain) or the
/// arbitrary command, in the workspace.
fn provider_command(
    paths: &Paths,
    mode: &Mode,
    child_env: Vec<(OsString, OsString)>,
    link: Option<&chain::ChainLink>,
) -> Result<Command, Refusal> {
    let mut cmd = match mode {
        Mode::Arbitrary(argv) => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
        Mode::Provider(user_args) => {
            let mut c = Command::new(paths.provider_bin());
            c.args(user_args);
            c
        }
        Mode::GenerateManifest { .. } => return Err(Refusal::coded("usage", "unreachable mode")),
    };
    cmd.env_clear().envs(child_env);
    let cwd = if paths.workspace.is_dir() {
        paths.workspace.clone()
    } else {
        paths.agent_home()
    };
    cmd.current_dir(cwd);
    if let Some(link) = link {
        let fd = link.wrapper_end.as_raw_fd();
        cmd.env(chain::VAR_CHAIN_FD, fd.to_string());
        // SAFETY: the hook runs in the forked child before exec and only calls fcntl, which is
        // async-signal-safe; `fd` stays open in the parent until after the spawn.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                chain::inherit_in_child(fd)
            });
        }
    }
    Ok(cmd)
}

/// The session's repositories, recorded for the hand-back (every profile, docs/handback.md).
fn record_handback(paths: &Paths, session: &SessionEnv) -> Option<Handback> {
    Some({
        let log = records_to(paths);
        // The image's other mutable roots are handed back too.
        let workspace = paths
            .workspace
            .canonicalize()
            .unwrap_or(paths.workspace.clone());
        let others = handback::other_roots(&workspace, &lasting_roots(paths).0, &[]);
        handback::record(
            "entrypoint",
            &paths.workspace,
            &others,
            Some(&paths.agent_home()),
            log.as_deref(),
            session.profile,
        )
        .unwrap_or_else(|e| {
            eprintln!("{NAME}: warning: cannot record the workspace's repositories ({}): what the session plants in them is not quarantined", e.source);
            *e.unrecorded
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn modes_parse() {
        assert_eq!(
            parse_mode(&os(&["-p", "hi"])).unwrap(),
            Mode::Provider(os(&["-p", "hi"]))
        );
        assert_eq!(
            parse_mode(&os(&["--arbitrary-command", "--", "id", "-u"])).unwrap(),
            Mode::Arbitrary(os(&["id", "-u"]))
        );
        assert_eq!(
            parse_mode(&os(&["--arbitrary-command", "id"]))
                .unwrap_err()
                .code(),
            "usage"
        );
        assert_eq!(
            parse_mode(&os(&["--arbitrary-command", "--"]))
                .unwrap_err()
                .code(),
            "usage"
        );
        assert_eq!(
            parse_mode(&os(&[
                "--generate-manifest",
                "--root",
                "/img",
                "/etc/ld.so.preload"
            ]))
            .unwrap(),
            Mode::GenerateManifest {
                root: "/img".into(),
                files: vec!["/etc/ld.so.preload".into()]
            }
        );
        assert_eq!(
            parse_mode(&os(&["--generate-manifest"]))
                .unwrap_err()
                .code(),
            "usage"
        );
    }

    #[test]
    fn a_bad_environment_is_refused_before_any_privileged_call() {
        let sys = crate::privs::RecordingSyscall::container_root();
        let paths = Paths::under(std::path::Path::new("/nonexistent-execguard-root"));
        let env = vec![(OsString::from("AGENT_NAME"), OsString::from("cursor"))];
        let code = run(
            &paths,
            &sys,
            &[],
            &env,
            Date {
                year: 2026,
                month: 1,
                day: 1,
            },
        );
        assert_eq!(code, 2);
        assert_eq!(sys.calls(), ["set_umask(77)"]);
    }

    #[test]
    fn a_refusal_is_recorded_in_the_image_policy_audit_log() {
        // The image policy is trusted only when root owns it.
        if !execguard_testkit::require_root("the entrypoint's audit record") {
            return;
        }
        let root = std::env::temp_dir().join(format!("eg-entry-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("etc/execguard")).unwrap();
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::write(
            root.join("etc/execguard/policy.toml"),
            "version = 1\nprofile = \"strict\"\naudit_log = \"/state/audit.jsonl\"\n",
        )
        .unwrap();
        let sys = crate::privs::RecordingSyscall::container_root();
        let paths = Paths::under(&root);
        let env = vec![(OsString::from("AGENT_NAME"), OsString::from("cursor"))];
        let date = Date {
            year: 2026,
            month: 1,
            day: 1,
        };
        assert_eq!(run(&paths, &sys, &os(&["-p", "hi"]), &env, date), 2);
        let log = std::fs::read_to_string(root.join("state/audit.jsonl")).unwrap();
        assert_eq!(log.lines().count(), 1, "{log}");
        assert!(
            log.contains(
                ",\"tool\":\"entrypoint\",\"entry\":\"start\",\"decision\":\"deny\",\"reason\":\""
            ),
            "{log}"
        );
        assert!(
            log.contains("\"target\":\"execguard-entrypoint -p hi\""),
            "{log}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
