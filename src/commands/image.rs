//! `execguard image`: the clap layer over the `execguard-image` crate.

use anyhow::{Context as _, Result};
use execguard_image::{build, docker, profile, render, seccomp};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitCode, ExitStatus};

#[derive(clap::Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Build the image (Rust artifacts on the host, the provider CLIs from npm, a local Debian
    /// base when no registry is reachable)
    Build(BuildArgs),
    /// Start a session container with the run profile
    Run(RunArgs),
    /// Write (or --check) image/generated/{compose.yaml,k8s-job.yaml}
    Generate(GenerateArgs),
    /// Write the seccomp profile: Docker's default plus the denials of the run profile
    Seccomp(SeccompArgs),
}

#[derive(clap::Args)]
pub struct BuildArgs {
    /// The image tag
    #[arg(long, default_value = profile::DEFAULT_IMAGE)]
    tag: String,
    /// Base image (default: a local debootstrap base, cached as execguard-base:bookworm-<hash>)
    #[arg(long)]
    base_image: Option<String>,
    /// The repository (default: the one this binary was built from)
    #[arg(long)]
    source: Option<PathBuf>,
    /// The provider CLIs to install, a subset of codex,claude,gemini,copilot (default: every one
    /// that installs)
    #[arg(long, value_delimiter = ',')]
    providers: Option<Vec<String>>,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The workspace, mounted at /workspace; default: the current directory
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// strict | development | build | breakglass
    #[arg(long, default_value = "strict")]
    profile: String,
    /// The provider: claude, codex, gemini, copilot
    #[arg(long, default_value = "claude")]
    agent: String,
    /// yolo | prompt
    #[arg(long, default_value = "prompt")]
    autonomy: String,
    /// Today's UTC date (YYYY-MM-DD), required by the breakglass profile
    #[arg(long)]
    breakglass_ack: Option<String>,
    /// The image
    #[arg(long, default_value = profile::DEFAULT_IMAGE)]
    image: String,
    /// UID:GID of the session user; default: yours, or the workspace owner when you are root
    #[arg(long)]
    user: Option<String>,
    /// Pass this variable from your environment to the session (repeatable; the entrypoint's
    /// allow-list still decides)
    #[arg(long = "env", value_name = "NAME")]
    pass_env: Vec<String>,
    /// Use this seccomp profile instead of the one recorded in the image
    #[arg(long)]
    seccomp: Option<PathBuf>,
    /// Today's UTC date (YYYY-MM-DD): let the provider load the workspace's own provider
    /// configuration (.claude/settings.json, .mcp.json, ...) in a strict session (recorded)
    #[arg(long)]
    repo_config_ack: Option<String>,
    /// Run strict even when a write-set mount cannot be made noexec (reduced assurance, recorded)
    #[arg(long)]
    allow_exec_mappings: bool,
    /// Run CMD instead of the provider (same hardening, recorded as lower assurance)
    #[arg(long)]
    arbitrary_command: bool,
    /// Print the docker arguments as a JSON array instead of running
    #[arg(long)]
    print_args: bool,
    /// Provider arguments, or with --arbitrary-command: CMD [ARGS...]
    #[arg(last = true)]
    args: Vec<OsString>,
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// Fail if the committed files differ instead of writing them
    #[arg(long)]
    check: bool,
    /// The output directory
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct SeccompArgs {
    /// Docker's default seccomp profile (profiles/seccomp/default.json of the Docker release)
    #[arg(long)]
    docker_default: PathBuf,
    /// Where to write the profile
    #[arg(long)]
    out: PathBuf,
}

/// The repository this binary was built from.
fn source_dir(explicit: Option<PathBuf>) -> PathBuf {
    explicit.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn exit_code(status: ExitStatus) -> ExitCode {
    match status.code() {
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    }
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Build(args) => {
            let req = build::BuildRequest {
                tag: args.tag,
                base_image: args.base_image,
                providers: args.providers,
            };
            Ok(exit_code(build::build(&source_dir(args.source), &req)?))
        }
        Command::Run(args) => {
            let print_args = args.print_args;
            // The same start check as `execguard run`: a directory, not a broad one.
            let workspace = match args.workspace {
                Some(w) => w,
                None => std::env::current_dir()?,
            };
            let launch = docker::prepare(docker::RunRequest {
                workspace: Some(execguard_session::preflight::check_workspace(&workspace)?),
                profile: args.profile,
                agent: args.agent,
                autonomy: args.autonomy,
                breakglass_ack: args.breakglass_ack,
                image: args.image,
                user: args.user,
                pass_env: args.pass_env,
                seccomp: args.seccomp,
                arbitrary_command: args.arbitrary_command,
                repo_config_ack: args.repo_config_ack,
                allow_exec_mappings: args.allow_exec_mappings,
                print_args,
                args: args.args,
            })?;
            if print_args {
                let list: Vec<String> = launch
                    .docker_args()?
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                println!("{}", serde_json::to_string(&list)?);
                return Ok(ExitCode::SUCCESS);
            }
            Ok(exit_code(launch.run()?))
        }
        Command::Generate(args) => {
            let dir = args
                .dir
                .unwrap_or_else(|| source_dir(None).join("image/generated"));
            render::generate(&dir, args.check)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Seccomp(args) => {
            let text = std::fs::read_to_string(&args.docker_default)
                .with_context(|| format!("reading {}", args.docker_default.display()))?;
            let default = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", args.docker_default.display()))?;
            let profile = seccomp::seccomp_profile(&default)?;
            let mut out = serde_json::to_string_pretty(&profile)?;
            out.push('\n');
            std::fs::write(&args.out, out)
                .with_context(|| format!("writing {}", args.out.display()))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
