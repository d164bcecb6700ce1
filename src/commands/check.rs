//! `execguard check`: what the guard would decide, and which file decided, without running.

use crate::exec::{decide_command, lossy};
use crate::session;
use anyhow::Result;
use execguard_load::Loaded;
use execguard_load::Source;
use execguard_policy::{Profile, Reason, Verdict};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object
    #[arg(long)]
    json: bool,
    /// Decide under the default policy for this workspace
    #[arg(long, conflicts_with = "policy")]
    workspace: Option<PathBuf>,
    /// strict | development | build | breakglass
    #[arg(long, value_parser = super::run::parse_profile)]
    profile: Option<Profile>,
    /// Decide under this policy file
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The command and its arguments
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

fn policy_for(args: &Args) -> Result<Loaded> {
    if let Some(path) = &args.policy {
        return session::policy_file(path);
    }
    if args.workspace.is_none() {
        if let Some(loaded) = session::policy_in_force()? {
            return Ok(loaded);
        }
    }
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let profile = args.profile.unwrap_or(Profile::Strict);
    let text = session::default_policy(&workspace, profile, None)?;
    Ok(Loaded {
        source: Source::Environment,
        text: text.into_bytes(),
        profile,
    })
}

/// Exit status: 0 allowed, 1 refused, 2 usage or policy error.
pub fn run(args: Args) -> Result<ExitCode> {
    let mut loaded = policy_for(&args)?;
    if let Some(p) = args.profile {
        loaded.profile = p;
    }
    let policy = loaded.policy();
    let self_lib = session::guard_library().ok();
    let self_lib_bytes = self_lib
        .as_ref()
        .map(|p| std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()));
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let decision = decide_command(&policy, self_lib_bytes, &args.command, &env);
    let target = lossy(&decision.target);
    let (allowed, reason, path, errno) = match &decision.verdict {
        Verdict::Allow(r) => (true, *r, target.clone(), None),
        Verdict::Deny {
            reason,
            errno,
            path,
        } => (false, *reason, lossy(path.as_bytes()), Some(*errno)),
        Verdict::Kernel(e) => (false, Reason::Allowed, target.clone(), Some(*e)),
    };
    let kernel_error = matches!(decision.verdict, Verdict::Kernel(_));
    if args.json {
        let mut obj = serde_json::json!({
            "decision": if allowed { "allow" } else { "deny" },
            "profile": policy.profile().as_str(),
            "target": target,
            "path": path,
        });
        if kernel_error {
            obj["errno"] = errno.unwrap_or(0).into();
            obj["error"] = std::io::Error::from_raw_os_error(errno.unwrap_or(0))
                .to_string()
                .into();
        } else {
            obj["reason"] = reason.code().into();
            obj["explanation"] = reason.describe().into();
            if let Some(e) = errno {
                obj["errno"] = e.into();
            }
        }
        println!("{obj}");
    } else if kernel_error {
        println!(
            "error: {target}: {}",
            std::io::Error::from_raw_os_error(errno.unwrap_or(0))
        );
    } else if allowed {
        println!("allow ({}): {target}", reason.code());
    } else {
        println!("deny {}: {path}\n  {}", reason.code(), reason.describe());
    }
    Ok(ExitCode::from(if allowed { 0 } else { 1 }))
}
