//! `execguard policy validate|default`.

use anyhow::Result;
use execguard_policy::{Policy, Profile};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Parse and validate a policy file; exit 0 when valid, 1 when not
    Validate { file: PathBuf },
    /// Print the embedded default policy for a workspace
    Default {
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long, value_parser = super::run::parse_profile, default_value = "strict")]
        profile: Profile,
        #[arg(long)]
        audit: Option<PathBuf>,
    },
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Validate { file } => validate(&file),
        Command::Default {
            workspace,
            profile,
            audit,
        } => {
            let workspace = match workspace {
                Some(w) => w,
                None => std::env::current_dir()?,
            };
            print!(
                "{}",
                execguard_session::policy_text::discovered_default_policy(
                    &workspace,
                    profile,
                    audit.as_deref(),
                    profile != Profile::Breakglass,
                    &execguard_session::exec_dirs::ExecDirChoice::default(),
                )?
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn validate(file: &std::path::Path) -> Result<ExitCode> {
    let text = match execguard_session::input::read_policy(file) {
        Ok(t) => t,
        Err(e @ execguard_session::input::InputError::Unreadable(..)) => return Err(e.into()),
        Err(e) => {
            eprintln!("execguard: policy_invalid: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let policy = match Policy::parse(&text) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("execguard: policy_invalid: {}: {e}", file.display());
            return Ok(ExitCode::from(1));
        }
    };
    // Roots are matched against the kernel's canonical names: a root that exists under another
    // canonical name would never match.
    let mut problems = 0;
    for root in policy.mutable_roots() {
        let p = std::path::Path::new(std::ffi::OsStr::new(
            std::str::from_utf8(root).unwrap_or_default(),
        ));
        if let Ok(real) = execguard_session::paths::canonical(p) {
            if real != p {
                eprintln!("execguard: policy_invalid: {}: mutable root {} resolves to {}: name the canonical path", file.display(), p.display(), real.display());
                problems += 1;
            }
        }
    }
    if problems > 0 {
        return Ok(ExitCode::from(1));
    }
    println!(
        "ok: {} — profile {}, {} mutable roots, {} protected runtimes, allow-list {}",
        file.display(),
        policy.profile().as_str(),
        policy.mutable_roots().count(),
        policy.runtimes().count(),
        if policy.has_allow_list() {
            format!("of {} commands", policy.allow_commands().count())
        } else {
            "off".into()
        }
    );
    Ok(ExitCode::SUCCESS)
}
