//! The host chain, `execguard run`, as the sequence of its steps: the session's policy, the
//! audit log and the guard checked, the wrappers put first, the first command decided, the
//! supervisor forked, the seal, the assurance record, and the exec.

use crate::exec_dirs::ExecDirChoice;
use crate::handback;
use crate::launch::{self, FirstCommand};
use crate::reaper::Stand;
use crate::supervisor::{Duties, SessionEnds, Supervisor};
use crate::sys::SessionSys;
use crate::{
    assurance, go_exec, network, policy_text, preflight, seal, session_temp, shims, world,
};
use anyhow::{bail, Context as _, Result};
use execguard_load::{Loaded, Source};
use execguard_policy::Profile;
use execguard_seal::world::LayerExec;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What `execguard run` was asked for (its command line, parsed by the CLI).
#[derive(Clone, Debug, Default)]
pub struct HostOptions {
    pub workspace: Option<PathBuf>,
    pub profile: Option<Profile>,
    pub policy: Option<PathBuf>,
    pub audit: Option<PathBuf>,
    pub allow_unsealed: bool,
    pub allow_exec_mappings: bool,
    pub exec_dir: Vec<PathBuf>,
    pub no_exec_dir: Vec<PathBuf>,
    /// The session's world (`crate::world::WorldChoice`): shared paths and sockets, and the
    /// reduced worlds the operator accepts.
    pub share: Vec<PathBuf>,
    pub share_socket: Vec<PathBuf>,
    pub allow_shared_home: bool,
    pub allow_shared_temp: bool,
    pub allow_outside_sockets: bool,
    /// The host's `127.0.0.1:N` the session reaches as its own (`--host-port`).
    pub host_port: Vec<u16>,
    /// Reduced world: the host's network, its loopback services included.
    pub allow_host_network: bool,
    pub verbose: bool,
    pub command: Vec<OsString>,
}

/// Runs the session: returns only when it cannot start (the exit status to leave with: 126
/// for a refused first command, 127 for one not found), or, unsupervised, when the exec
/// failed; a refusal of the start is `Err`.
pub fn run(sys: &dyn SessionSys, opts: &HostOptions) -> Result<u8> {
    let (loaded, mut kept) = session_policy(sys, opts)?;
    let policy = loaded.policy();
    // Host mode (the embedded default or --policy). Under the system policy the image has
    // installed the wrappers and seals its sessions itself.
    let host = opts.policy.is_some() || loaded.source == Source::Environment;
    let default_log = opts.audit.is_none() && opts.policy.is_none() && host;
    preflight::audit_log_ready(&policy, default_log)?;
    let lib = preflight::guard_outside_write_set(&policy)?;
    let mut env = launch::inherited_env();
    // What stays the operator's real object in the session's world: the shims.
    let mut keep: Vec<PathBuf> = Vec::new();
    if host {
        keep = shims::put_wrappers_first(&policy, &mut env)?;
    }
    launch::add_guard(&mut env, &lib, &loaded.text);
    go_exec::route_through_guard(&policy, &mut env);
    let first = match launch::decide_first_command(
        &policy,
        &lib,
        &opts.command,
        &env,
        kept.as_ref().and_then(|k| k.writer.as_ref()),
    ) {
        FirstCommand::Runs(first) => first,
        FirstCommand::Refused(status) => return Ok(status),
    };
    sys.seal_sys().at_step(execguard_seal::Step::Partition)?;
    // development's own temp dir, on the workspace's side (go test, go run, scratch builds).
    let development =
        host && policy.seal() && matches!(policy.profile(), Profile::Development | Profile::Build);
    let temp = if development {
        let temp = session_temp::SessionTemp::create()?;
        temp.apply(&mut env);
        Some(temp)
    } else {
        None
    };
    let mut partition = seal::partition_with_temp(&policy, temp.as_ref().map(|t| t.path()));
    if let Some(k) = &kept {
        partition.hidden.push(k.key_dir.clone());
        // A policy file's write set may hold the state directory: it stays read-only there
        // like an exec dir (the default policy lists it among its exec dirs already).
        let state = k.key_dir.parent().map(Path::to_path_buf);
        if let Some(state) = state.filter(|d| {
            policy.mutable_root_of(d.as_os_str().as_bytes()).is_some()
                && !partition.exec_dirs.contains(d)
        }) {
            partition.exec_dirs.push(state);
        }
    }
    // The session's own world, decided before the supervisor forks. Under development its
    // home layer and its own /tmp and /var/tmp run what the session builds and installs
    // there (`cc -o /tmp/x x.c && /tmp/x`): they are the session's, gone with it or seen only
    // by that workspace's sessions.
    let exec = if development {
        LayerExec::Exec
    } else {
        LayerExec::Noexec
    };
    let (mut world, mut world_reductions) = if host && policy.seal() {
        world::host_world(
            Path::new(OsStr::from_bytes(policy.workspace())),
            world::keep(&policy, &partition, keep),
            &world::WorldChoice {
                share: opts.share.clone(),
                share_sockets: opts.share_socket.clone(),
                allow_shared_home: opts.allow_shared_home,
                allow_shared_temp: opts.allow_shared_temp,
                allow_outside_sockets: opts.allow_outside_sockets,
                own_sockets: policy
                    .audit_socket()
                    .map(|s| PathBuf::from(OsStr::from_bytes(s)))
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
    if development {
        // The guard learns where the kernel runs written code, so a program built in
        // /dev/shm or the runtime directory is refused with its line, not a bare EACCES.
        launch::set_policy(
            &mut env,
            &policy_text::with_executable_roots(&loaded.text, &partition.both),
        );
    }
    // The session's own network (docs/session.md), served by the supervisor.
    let network = (host && policy.seal() && !opts.allow_host_network).then(|| network::Network {
        host_ports: opts.host_port.clone(),
        // The kept audit's writer when there is one: the log is the writer's alone.
        audit_log: policy
            .audit_socket()
            .or(policy.audit_log())
            .map(|l| PathBuf::from(OsStr::from_bytes(l))),
        profile: Some(policy.profile()),
    });
    if host && policy.seal() && opts.allow_host_network {
        eprintln!("execguard: notice: reduced world (--allow-host-network): the session shares the host's network, its loopback services included");
        world_reductions.push(execguard_policy::Reduction::HostNetwork);
    }
    let mut ends = SessionEnds::default();
    // The one line that says which sessions are supervised: every host session, for the
    // repository hand-back (docs/handback.md).
    let supervised = host;
    if supervised {
        let log = policy.audit_log().map(|l| Path::new(OsStr::from_bytes(l)));
        // The hand-back's and the sweep's records go to the kept audit's writer (its socket)
        // when there is one: the log is the writer's alone.
        let socket = policy
            .audit_socket()
            .map(|l| Path::new(OsStr::from_bytes(l)));
        // What outlives the session in its write set (its own temp dirs do not; its home
        // layer is never run outside it, and `execguard home accept` clears the bits too).
        let lasting = crate::privileges::lasting_roots(&partition, &world, policy.seal());
        let duties = Duties {
            end_the_rest: true,
            carry_back: true,
            // The repository hand-back (docs/handback.md), every profile: the workspace's
            // repositories are recorded now (one the session creates is checked at the end)
            // and what the session plants is quarantined when it ends.
            // The rest of the write set that outlives the session is handed back too.
            handback: Some(handback::record_for_host(
                &policy,
                &lasting.0,
                &partition.exec_dirs,
            )?),
            // The session's refusals, read back from its part of the audit log at the end.
            summary: log.map(crate::summary::Mark::now),
            clear_privileges: Some(crate::privileges::Sweep::starting_now(
                lasting,
                Some(PathBuf::from(OsStr::from_bytes(policy.workspace()))),
                socket.or(log).map(Path::to_path_buf),
            )),
            remove_temp: temp.clone(),
            network,
            audit: kept.as_mut().and_then(|k| k.writer.take()),
        };
        let supervisor = Supervisor::install(Stand::Beside, duties)?;
        // SAFETY: `execguard run` is single-threaded here.
        ends = unsafe { supervisor.fork_session() }?;
    }
    if let Some(channel) = &ends.network {
        use std::os::fd::AsRawFd;
        world.network = Some(execguard_seal::network::NetworkPlan {
            channel: channel.as_raw_fd(),
            host_ports: opts.host_port.clone(),
        });
    }
    if host {
        // Last step before exec: this process is single-threaded here, and the seal follows
        // it through exec into every descendant.
        let held = seal::seal_host(
            sys,
            &policy,
            &partition,
            opts.allow_exec_mappings,
            ends.carry.as_ref(),
            (&world, &world_reductions),
            opts.verbose,
        )?;
        // The seal has sent the network's listeners: the channel's end here is done.
        drop(ends.network);
        if let Some(port) = held.proxy_port {
            network::apply_env(&mut env, port);
        }
        if held.sealed {
            preflight::announce_kernel_only_refusals(&policy);
        }
        assurance::record_assurance(&policy, held.sealed, &held.assurance, &opts.command)?;
    }
    Ok(launch::exec_first_command(first, &opts.command, env))
}

/// The policy this session runs under: `--policy`, the system policy when one is in force
/// (it cannot be overridden from here), or the embedded default, with its kept audit.
fn session_policy(sys: &dyn SessionSys, opts: &HostOptions) -> Result<(Loaded, Option<KeptAudit>)> {
    if let Some(path) = &opts.policy {
        let loaded = policy_text::policy_file(path)?;
        if opts.audit.is_some() {
            // The weaker mode, spelled differently: the file's own log, written by the
            // session itself.
            eprintln!("execguard: notice: --audit: the session appends its own records to the policy file's audit_log, which it can also rewrite; leave --audit out for the kept audit (docs/audit.md)");
            return Ok((loaded, None));
        }
        // A policy file's session keeps its records the same way: the writer outside it
        // appends them to the user's kept log; the file's own `audit_log` is replaced.
        let policy = execguard_policy::Policy::parse(&loaded.text)
            .map_err(|e| anyhow::anyhow!("policy_invalid: {}: {e}", path.display()))?;
        let workspace = PathBuf::from(OsStr::from_bytes(policy.workspace()));
        let (profile, seal) = (policy.profile(), policy.seal());
        if let Some(own) = policy.audit_log() {
            eprintln!(
                "execguard: notice: --policy: the file's audit_log {} is replaced by the kept audit; --audit {} keeps the old mode",
                String::from_utf8_lossy(own),
                String::from_utf8_lossy(own)
            );
        }
        let text = String::from_utf8(loaded.text.clone())
            .map_err(|_| anyhow::anyhow!("policy_invalid: {} is not UTF-8", path.display()))?;
        let text = without_kept_keys(&text);
        // Inside a kept session: its writer keeps these records too.
        let outer = policy_text::policy_in_force()
            .ok()
            .flatten()
            .filter(|l| l.source == Source::Environment)
            .and_then(|l| {
                let p = l.policy();
                Some((p.audit_log()?.to_vec(), p.audit_socket()?.to_vec()))
            });
        let (text, kept) = match outer {
            Some((log, socket)) => (with_kept_lines(&text, &log, &socket), None),
            None => {
                let (text, kept) = keep_audit(open_state()?, &text, &workspace, profile, seal)?;
                (text, Some(kept))
            }
        };
        return Ok((
            Loaded {
                source: loaded.source,
                text: text.into_bytes(),
                profile: loaded.profile,
            },
            kept,
        ));
    }
    // A session started inside a kept one sends its records to the same writer (its state
    // directory is read-only here and its key hidden).
    let mut outer_kept = None;
    if let Some(loaded) = policy_text::policy_in_force()? {
        if let Source::System(path) = &loaded.source {
            if opts.workspace.is_some() || opts.profile.is_some() || opts.audit.is_some() {
                bail!("policy_untrusted: the system policy {} is in force and cannot be changed by execguard run", path.display());
            }
            return Ok((loaded, None));
        }
        let outer = loaded.policy();
        if let (Some(log), Some(socket)) = (outer.audit_log(), outer.audit_socket()) {
            outer_kept = Some((log.to_vec(), socket.to_vec()));
        }
    }
    let workspace = match &opts.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let workspace = preflight::check_workspace(&workspace)?;
    let profile = opts.profile.unwrap_or(Profile::Strict);
    // Breakglass has no partition (recorded in its profile); every other session is sealed.
    let seal = profile != Profile::Breakglass && seal::available(sys, opts.allow_unsealed)?;
    let mut add = opts.exec_dir.clone();
    let kept = match &opts.audit {
        None if outer_kept.is_some() => {
            // The outer session's state directory stays on the same side here.
            let outer_log = outer_kept.as_ref().map(|(log, _)| log.as_slice());
            let state = outer_log
                .map(|l| Path::new(OsStr::from_bytes(l)))
                .and_then(Path::parent);
            if let Some(state) = state.filter(|d| in_write_set_by_default(d) && d.is_dir()) {
                add.push(state.to_path_buf());
            }
            None
        }
        Some(_) => {
            eprintln!("execguard: notice: --audit: the session appends its own records to a log it can also rewrite; leave --audit out for the kept audit (docs/audit.md)");
            None
        }
        None => {
            let state = open_state()?;
            // In the write set ($HOME), the state directory is kept read-only like an exec dir
            // (its files are no programs: none has an execute bit, and the session can set
            // none on a read-only mount); its key directory is hidden (`Partition::hidden`).
            if in_write_set_by_default(state.path()) {
                add.push(state.path().to_path_buf());
            }
            Some(state)
        }
    };
    let text = policy_text::discovered_default_policy(
        &workspace,
        profile,
        opts.audit.as_deref(),
        seal,
        &ExecDirChoice {
            add,
            remove: opts.no_exec_dir.clone(),
            record: true,
            // As `run` decides the world: a home layer of its own, which development and
            // build sessions run written programs from.
            home_runs_written: seal
                && matches!(profile, Profile::Development | Profile::Build)
                && !opts.allow_shared_home,
        },
    )?;
    // Under the seal the execute side cannot change: learn it once, here.
    let text = if seal {
        crate::identities::carry(text)?
    } else {
        text
    };
    let loaded = |text: String| Loaded {
        source: Source::Environment,
        text: text.into_bytes(),
        profile,
    };
    if let (None, Some((log, socket))) = (&opts.audit, &outer_kept) {
        return Ok((loaded(with_kept_lines(&text, log, socket)), None));
    }
    let Some(state) = kept else {
        return Ok((loaded(text), None));
    };
    let (text, kept) = keep_audit(state, &text, &workspace, profile, seal)?;
    Ok((loaded(text), Some(kept)))
}

/// The user's state directory for the kept audit, made and checked.
fn open_state() -> Result<execguard_audit::key::StateDir> {
    execguard_audit::key::StateDir::open(
        &execguard_audit::key::default_state_dir()
            .context("audit_unwritable: no state directory for the kept audit")?,
    )
    .context("audit_unwritable: the kept audit's state directory")
}

/// Starts the kept audit's writer for a session of `text` (a policy naming no log) and names
/// its log and socket in the text.
fn keep_audit(
    state: execguard_audit::key::StateDir,
    text: &str,
    workspace: &Path,
    profile: Profile,
    seal: bool,
) -> Result<(String, KeptAudit)> {
    let planned = match (profile, seal) {
        (Profile::Strict, true) => "strict".to_string(),
        (Profile::Strict, false) => "reduced:unsealed".to_string(),
        (p, _) => format!("reduced:{}", p.as_str()),
    };
    let writer = execguard_audit::writer::Writer::start(
        &state,
        execguard_audit::writer::Session {
            tool: "run",
            workspace: workspace.to_string_lossy().into_owned(),
            profile: profile.as_str().to_string(),
            assurance: planned,
        },
    )
    .context("audit_unwritable: the kept audit's writer did not start")?;
    // The log and the socket name the writer's: the guard sends there, and no process of the
    // session writes the log itself.
    let text = with_kept_lines(
        text,
        policy_text::policy_path(&state.log())?.as_bytes(),
        policy_text::policy_path(writer.socket())?.as_bytes(),
    );
    if let Err(e) = execguard_policy::Policy::parse(text.as_bytes()) {
        bail!("the session policy with its kept audit does not parse: {e}");
    }
    Ok((
        text,
        KeptAudit {
            writer: Some(writer),
            key_dir: state.key_dir(),
        },
    ))
}

/// `text` without its top-level `audit_log` and `audit_socket` (a policy file's own log,
/// which the kept audit replaces).
fn without_kept_keys(text: &str) -> String {
    let mut top = true;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        top &= !t.starts_with('[');
        let key = t.split(['=', ' ', '\t']).next().unwrap_or("");
        if top && matches!(key, "audit_log" | "audit_socket") {
            continue;
        }
        out.push_str(line);
    }
    out
}

/// `text` (a default policy without `audit_log`) naming the kept log and its writer's socket.
fn with_kept_lines(text: &str, log: &[u8], socket: &[u8]) -> String {
    let lines = format!(
        "audit_log = \"{}\"\naudit_socket = \"{}\"\n",
        String::from_utf8_lossy(log),
        String::from_utf8_lossy(socket)
    );
    policy_text::with_top_level_lines(text, &lines)
}

/// Is `dir` in a host session's write set whatever the policy adds ($HOME, the built-in
/// roots)?
fn in_write_set_by_default(dir: &Path) -> bool {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| crate::paths::canonical(&h).ok());
    home.is_some_and(|h| dir.starts_with(h))
        || execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
            .iter()
            .any(|r| dir.starts_with(OsStr::from_bytes(r)))
}

/// The kept audit of a session: its writer until the supervisor takes it, and the key
/// directory the session's world hides. A session that never starts gets its last record
/// when this goes (so no start leaves an open chain behind).
struct KeptAudit {
    writer: Option<execguard_audit::writer::Writer>,
    key_dir: PathBuf,
}

impl Drop for KeptAudit {
    fn drop(&mut self) {
        if let Some(w) = self.writer.take() {
            if let Err(e) = w.finish_unstarted() {
                eprintln!("execguard: audit_unwritable: the session's last audit record could not be written: {e}");
            }
        }
    }
}
