//! `execguard run`: start a command with the guard preloaded and the session policy inline in
//! its environment; the guard keeps both in every descendant. In host mode the session's
//! `git` and `node` are the wrappers (a per-session shim first on `PATH`, and a
//! `GIT_EXEC_PATH` shim for git's hooks), and the real binaries are protected runtimes.

use anyhow::{bail, Result};
use execguard_load::{Loaded, Source, POLICY_ENV};
use execguard_policy::{Profile, Verdict};
use execguard_session::handback;
use execguard_session::launch::{decide_command, lossy};
use execguard_session::reaper::Stand;
use execguard_session::runtimes::guard_library;
use execguard_session::supervisor::{Duties, Supervisor};
use execguard_session::world;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The workspace (mutable root); default: the current directory
    #[arg(long, conflicts_with = "policy")]
    workspace: Option<PathBuf>,
    /// strict | development | build | breakglass
    #[arg(long, value_parser = parse_profile, conflicts_with = "policy")]
    profile: Option<Profile>,
    /// Use this policy file instead of the embedded default
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Append one JSON record per refusal to this file (default: audit.jsonl in the user's
    /// runtime directory, $XDG_RUNTIME_DIR/execguard or /tmp/execguard-UID)
    #[arg(long, conflicts_with = "policy")]
    audit: Option<PathBuf>,
    /// Accepted for compatibility: every session is sealed (W^X) unless --allow-unsealed
    #[arg(long)]
    seal: bool,
    /// When the kernel cannot enforce the W^X partition, run unsealed anyway (reduced
    /// assurance, said once on stderr and recorded in the policy as no seal)
    #[arg(long)]
    allow_unsealed: bool,
    /// When the write set cannot be mounted noexec (a kernel that refuses the user namespace),
    /// run anyway with only the guard's refusals (reduced:mappings_guard_only, said once and
    /// recorded): a program that maps a written file executable itself is then not stopped
    #[arg(long)]
    allow_exec_mappings: bool,
    /// Also keep DIR executable and read-only inside the write set (repeatable)
    #[arg(long = "exec-dir", value_name = "DIR", conflicts_with = "policy")]
    exec_dir: Vec<PathBuf>,
    /// Do not keep DIR (a discovered exec dir) executable: it is written, never run (repeatable)
    #[arg(long = "no-exec-dir", value_name = "DIR", conflicts_with = "policy")]
    no_exec_dir: Vec<PathBuf>,
    /// Share this path of $HOME live with the operator instead of through the session's home
    /// layer (repeatable; what the session writes there takes effect outside it)
    #[arg(long = "share", value_name = "PATH")]
    share: Vec<PathBuf>,
    /// Let the session reach this socket of an outside process (repeatable)
    #[arg(long = "share-socket", value_name = "PATH")]
    share_socket: Vec<PathBuf>,
    /// Reduced world: no home layer, the session writes the operator's $HOME itself
    #[arg(long)]
    allow_shared_home: bool,
    /// Reduced world: the session shares /tmp, /var/tmp, /dev/shm and /run/user/UID
    #[arg(long)]
    allow_shared_temp: bool,
    /// Reduced world: the session can reach the sockets of the operator's processes
    #[arg(long)]
    allow_outside_sockets: bool,
    /// Let the session reach the host's 127.0.0.1:N as its own 127.0.0.1:N (repeatable)
    #[arg(long = "host-port", value_name = "N")]
    host_port: Vec<u16>,
    /// Reduced world: the session shares the host's network, its loopback services included
    #[arg(long, conflicts_with = "host_port")]
    allow_host_network: bool,
    /// Print the enforcement report on stderr before the command starts
    #[arg(short, long)]
    verbose: bool,
    /// The command and its arguments
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

pub fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::from_name(s.as_bytes())
        .ok_or_else(|| format!("unknown profile {s:?} (strict, development, build, breakglass)"))
}

/// The policy this session runs under: `--policy`, the system policy when one is in force
/// (it cannot be overridden from here), or the embedded default.
fn session_policy(args: &Args) -> Result<Loaded> {
    if let Some(path) = &args.policy {
        return execguard_session::policy_text::policy_file(path);
    }
    if let Some(loaded) = execguard_session::policy_text::policy_in_force()? {
        if let Source::System(path) = &loaded.source {
            if args.workspace.is_some() || args.profile.is_some() || args.audit.is_some() {
                bail!("policy_untrusted: the system policy {} is in force and cannot be changed by execguard run", path.display());
            }
            return Ok(loaded);
        }
    }
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let workspace = execguard_session::preflight::check_workspace(&workspace)?;
    let audit = match &args.audit {
        Some(a) => a.clone(),
        None => execguard_session::preflight::default_audit_log()?,
    };
    let profile = args.profile.unwrap_or(Profile::Strict);
    // Breakglass has no partition (recorded in its profile); every other session is sealed.
    let seal = profile != Profile::Breakglass && seal_available(args.allow_unsealed)?;
    let text = execguard_session::policy_text::discovered_default_policy(
        &workspace,
        profile,
        Some(&audit),
        seal,
        &execguard_session::exec_dirs::ExecDirChoice {
            add: args.exec_dir.clone(),
            remove: args.no_exec_dir.clone(),
            record: true,
            // As `run` below decides the world: a home layer of its own, which development
            // and build sessions run written programs from.
            home_runs_written: seal
                && matches!(profile, Profile::Development | Profile::Build)
                && !args.allow_shared_home,
        },
    )?;
    // Under the seal the execute side cannot change: learn it once, here.
    let text = if seal {
        execguard_session::identities::carry(text)?
    } else {
        text
    };
    Ok(Loaded {
        source: Source::Environment,
        text: text.into_bytes(),
        profile,
    })
}

/// Can the kernel enforce the partition? Without it the session refuses to start (typed
/// error, exit 2) unless `--allow-unsealed` accepts the reduced assurance, said once.
fn seal_available(allow_unsealed: bool) -> Result<bool> {
    match execguard_seal::partition_abi() {
        Ok(_) => Ok(true),
        Err(e) if allow_unsealed => {
            eprintln!("execguard: warning: reduced assurance: running unsealed ({e})");
            Ok(false)
        }
        Err(e) => bail!("{e}; pass --allow-unsealed to run without the seal"),
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    let loaded = session_policy(&args)?;
    let policy = loaded.policy();
    if let Some(log) = policy.audit_log() {
        execguard_session::preflight::check_audit_log(&policy, log)?;
        // Opened there with no link as its last component, in a canonical directory.
        execguard_session::paths::remember_canonical(std::path::Path::new(
            std::ffi::OsStr::from_bytes(log),
        ));
        if args.audit.is_none() && args.policy.is_none() && loaded.source == Source::Environment {
            execguard_session::preflight::announce_default_log(log);
        }
    }
    let lib = guard_library()?;
    // A guard the session can rewrite guards nothing.
    if let Some(root) = policy.mutable_root_of(lib.as_os_str().as_bytes()) {
        bail!(
            "{} lies in the mutable root {}: install it elsewhere (e.g. cargo build outside the workspace) or set EXECGUARD_LIB",
            lib.display(),
            lossy(root)
        );
    }
    // What stays the operator's real object in the session's world: the shims, made below.
    let mut keep: Vec<PathBuf> = Vec::new();
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k != "LD_PRELOAD" && k != POLICY_ENV)
        .collect();
    // Host mode (the embedded default or --policy): put the wrappers of the policy's runtimes
    // in front. Under the system policy the image has installed them already.
    if args.policy.is_some() || loaded.source == Source::Environment {
        let plan = execguard_session::shims::shim_plan(&policy)?;
        for (tool, wrapper) in &plan.wrappers {
            let canonical = execguard_session::paths::canonical(wrapper).map_err(|e| {
                anyhow::anyhow!("the {} wrapper {}: {e}", tool.name, wrapper.display())
            })?;
            if let Some(root) = policy.mutable_root_of(canonical.as_os_str().as_bytes()) {
                bail!(
                    "the {} wrapper {} lies in the mutable root {}: install it elsewhere",
                    tool.name,
                    canonical.display(),
                    lossy(root)
                );
            }
        }
        if !plan.wrappers.is_empty() {
            let shim = execguard_session::shims::create_shim(&plan, &policy)?;
            shim.apply(&mut env);
            keep.extend(
                [Some(shim.bin.clone()), shim.git_core.clone()]
                    .into_iter()
                    .flatten(),
            );
        }
    }
    let mut preload = lib.clone().into_os_string();
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(existing);
    }
    env.push(("LD_PRELOAD".into(), preload));
    execguard_session::go_exec::route_through_guard(&policy, &mut env);
    env.push((
        POLICY_ENV.into(),
        std::ffi::OsStr::from_bytes(&loaded.text).to_os_string(),
    ));

    // The first exec is made from here, outside the guard: decide it with the same engine.
    let decision = decide_command(
        &policy,
        Some(lib.as_os_str().as_bytes()),
        &args.command,
        &env,
    );
    if let Verdict::Deny { reason, path, .. } = &decision.verdict {
        eprint!(
            "{}",
            execguard_session::launch::denial_line(
                *reason,
                Some(policy.profile()),
                path.as_bytes(),
                path.omitted()
            )
        );
    }
    if execguard_session::preflight::audit_first_command(
        &policy,
        &decision.verdict,
        &args.command,
        &decision.target,
    )
    .is_err()
    {
        return Ok(ExitCode::from(126));
    }
    match &decision.verdict {
        Verdict::Allow(_) => {}
        Verdict::Deny { .. } => return Ok(ExitCode::from(126)),
        Verdict::Kernel(errno) => {
            let err = std::io::Error::from_raw_os_error(*errno);
            eprintln!("execguard: {}: {err}", lossy(&decision.target));
            return Ok(ExitCode::from(if *errno == execguard_policy::sys::ENOENT {
                127
            } else {
                126
            }));
        }
    }
    // The repository hand-back (docs/handback.md), every profile: the workspace's
    // repositories are recorded now and what the session plants is quarantined when it ends.
    let host = args.policy.is_some() || loaded.source == Source::Environment;
    execguard_seal::test_hooks_at("partition");
    // development's own temp dir, on the workspace's side (go test, go run, scratch builds).
    let development =
        host && policy.seal() && matches!(policy.profile(), Profile::Development | Profile::Build);
    let temp = if development {
        let temp = execguard_session::session_temp::SessionTemp::create()?;
        temp.apply(&mut env);
        Some(temp)
    } else {
        None
    };
    let partition =
        execguard_session::seal::partition_with_temp(&policy, temp.as_ref().map(|t| t.path()));
    // The session's own world, decided before the supervisor forks. Under development its
    // home layer and its own /tmp and /var/tmp run what the session builds and installs
    // there (`cc -o /tmp/x x.c && /tmp/x`): they are the session's, gone with it or seen only
    // by that workspace's sessions.
    let exec = if development {
        execguard_seal::world::LayerExec::Exec
    } else {
        execguard_seal::world::LayerExec::Noexec
    };
    let (mut world, mut world_reductions) = if host && policy.seal() {
        world::host_world(
            std::path::Path::new(std::ffi::OsStr::from_bytes(policy.workspace())),
            world::keep(&policy, &partition, keep),
            &world::WorldChoice {
                share: args.share.clone(),
                share_sockets: args.share_socket.clone(),
                allow_shared_home: args.allow_shared_home,
                allow_shared_temp: args.allow_shared_temp,
                allow_outside_sockets: args.allow_outside_sockets,
                own_sockets: policy
                    .audit_socket()
                    .map(|s| PathBuf::from(std::ffi::OsStr::from_bytes(s)))
                    .into_iter()
                    .collect(),
                home_exec: exec,
                temp_exec: exec,
            },
        )?
    } else {
        Default::default()
    };
    // development's installs (cargo install, go install, pip install --user, a tool copied
    // into ~/.local/bin) write and run in the workspace's own home layer, which only its
    // sessions see, and its scratch programs in its own /tmp: those get both rights, as the
    // workspace does. The operator's real exec dirs stay read-only in them.
    let partition = partition.with_both(world.executable_roots());
    // The session's own network (docs/session.md), served by the supervisor.
    let network = (host && policy.seal() && !args.allow_host_network).then(|| {
        execguard_session::network::Network {
            host_ports: args.host_port.clone(),
            audit_log: policy
                .audit_log()
                .map(|l| PathBuf::from(std::ffi::OsStr::from_bytes(l))),
            profile: Some(policy.profile()),
        }
    });
    if host && policy.seal() && args.allow_host_network {
        eprintln!("execguard: notice: reduced world (--allow-host-network): the session shares the host's network, its loopback services included");
        world_reductions.push(execguard_policy::Reduction::HostNetwork);
    }
    let mut ends = execguard_session::supervisor::SessionEnds::default();
    // The one line that says which sessions are supervised (the others need no duty).
    let supervised = host;
    if supervised {
        let workspace = std::path::Path::new(std::ffi::OsStr::from_bytes(policy.workspace()));
        let log = policy
            .audit_log()
            .map(|l| std::path::Path::new(std::ffi::OsStr::from_bytes(l)));
        let home = std::env::var_os("HOME").map(PathBuf::from);
        // Supervised even without a repository now: one the session creates is checked at
        // the end.
        let handback = handback::record("run", workspace, home.as_deref(), log, policy.profile())?;
        let duties = Duties {
            end_the_rest: true,
            carry_back: true,
            handback: Some(handback),
            summary: log.map(execguard_session::summary::Mark::now),
            // What outlives the session in its write set (its own temp dirs do not; its home
            // layer is never run outside it, and `execguard home accept` clears the bits too).
            clear_privileges: Some(execguard_session::privileges::Sweep::starting_now(
                execguard_session::privileges::lasting_roots(&partition, &world),
                log.map(std::path::Path::to_path_buf),
            )),
            remove_temp: temp.clone(),
            network,
        };
        let supervisor = Supervisor::install(Stand::Beside, duties)?;
        // SAFETY: `execguard run` is single-threaded here.
        ends = unsafe { supervisor.fork_session() }?;
    }
    if let Some(channel) = &ends.network {
        use std::os::fd::AsRawFd;
        world.network = Some(execguard_seal::network::NetworkPlan {
            channel: channel.as_raw_fd(),
            host_ports: args.host_port.clone(),
        });
    }
    let carry = ends.carry;
    // The image's entrypoint seals its sessions itself: only host sessions are sealed here.
    if host && policy.seal() {
        // Last step before exec: this process is single-threaded here, and the seal follows it
        // through exec into every descendant.
        let mut report = execguard_session::seal::seal(&policy, &partition, args.allow_exec_mappings, carry.as_ref(), Some(&world)).map_err(|e| match e {
            execguard_seal::SealError::Noexec { .. }
            | execguard_seal::SealError::NamespaceUnfinished { .. } => anyhow::anyhow!(
                "{e}; the session could map written files executable: fix the cause or pass --allow-exec-mappings to run with only the guard's refusals"
            ),
            execguard_seal::SealError::World { .. } => anyhow::anyhow!(
                "{e}; fix the cause, or run a reduced world (--allow-shared-home, --allow-shared-temp, --allow-outside-sockets)"
            ),
            execguard_seal::SealError::Network { .. } => anyhow::anyhow!(
                "{e}; this kernel gives the session no network of its own: run with --allow-host-network to share the host's (its loopback services included)"
            ),
            e => anyhow::anyhow!("{e}"),
        })?;
        report
            .assurance
            .reductions
            .extend(world_reductions.iter().copied());
        drop(ends.network);
        let proxy = report
            .namespace
            .as_ref()
            .and_then(|ns| ns.world.as_ref())
            .and_then(|w| w.network.as_ref());
        if let Some(net) = proxy {
            execguard_session::network::apply_env(&mut env, net.proxy_port);
        }
        if args.verbose {
            for line in report.lines() {
                eprintln!("execguard: {line}");
            }
        }
        execguard_session::preflight::announce_kernel_only_refusals(&policy);
        execguard_session::assurance::record_assurance(
            &policy,
            true,
            &report.assurance.to_string(),
            &args.command,
        )?;
    } else if host {
        let why = if policy.profile() == Profile::Breakglass {
            "reduced:breakglass"
        } else {
            "reduced:unsealed"
        };
        if args.verbose {
            eprintln!("execguard: assurance: {why}");
        }
        execguard_session::assurance::record_assurance(&policy, false, why, &args.command)?;
    }
    // A mutable script starts through its interpreter with the argv the kernel would have
    // built (under the seal the kernel refuses the script itself; unsealed, a swap after the
    // decision must change nothing), as the guard does for every later exec.
    let (program, arg0, rest): (OsString, OsString, Vec<OsString>) = match decision.launch {
        Some((program, argv)) => {
            let mut argv = argv.into_iter().map(execguard_session::launch::os);
            let arg0 = argv.next().unwrap_or_default();
            (execguard_session::launch::os(program), arg0, argv.collect())
        }
        None => (
            execguard_session::launch::os(decision.program.clone()),
            args.command[0].clone(),
            args.command[1..].to_vec(),
        ),
    };
    let err = std::process::Command::new(&program)
        .arg0(arg0)
        .args(rest)
        .env_clear()
        .envs(env)
        .exec();
    eprintln!("execguard: {}: {err}", program.to_string_lossy());
    Ok(ExitCode::from(
        if err.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        },
    ))
}
