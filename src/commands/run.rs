//! `execguard run`: start a command with the guard preloaded and the session policy inline in
//! its environment; the guard keeps both in every descendant. In host mode the session's
//! `git` and `node` are the wrappers (a per-session shim first on `PATH`, and a
//! `GIT_EXEC_PATH` shim for git's hooks), and the real binaries are protected runtimes.

use anyhow::Result;
use execguard_policy::Profile;
use execguard_session::host::HostOptions;
use execguard_session::sys::LinuxSessionSys;
use std::ffi::OsString;
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
    /// Let the session append its records to this file itself: a log it can also rewrite
    /// (said once). Default: the kept audit, written by the supervisor outside the session to
    /// $XDG_STATE_HOME/execguard/audit.jsonl (else ~/.local/state/execguard/audit.jsonl),
    /// chained and signed (docs/audit.md)
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

/// The steps are the session crate's (`execguard_session::host`); here only the options.
pub fn run(args: Args) -> Result<ExitCode> {
    let opts = HostOptions {
        workspace: args.workspace,
        profile: args.profile,
        policy: args.policy,
        audit: args.audit,
        allow_unsealed: args.allow_unsealed,
        allow_exec_mappings: args.allow_exec_mappings,
        exec_dir: args.exec_dir,
        no_exec_dir: args.no_exec_dir,
        share: args.share,
        share_socket: args.share_socket,
        allow_shared_home: args.allow_shared_home,
        allow_shared_temp: args.allow_shared_temp,
        allow_outside_sockets: args.allow_outside_sockets,
        host_port: args.host_port,
        allow_host_network: args.allow_host_network,
        verbose: args.verbose,
        command: args.command,
    };
    Ok(ExitCode::from(execguard_session::host::run(
        &LinuxSessionSys,
        &opts,
    )?))
}
