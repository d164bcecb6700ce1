//! `execguard check`: what would be decided, and why, without running anything.
//!
//! - `execguard check -- git ARGS` / `-- node ARGS`: the wrapper's decision (the session's `git`
//!   and `node` are the wrappers), with its reason code; for git the argv git would get.
//! - `execguard check --provider NAME [--autonomy yolo|prompt] -- ARGS`: the provider policy's
//!   decision and the final argv (managed arguments first).
//! - anything else: the guard's decision and which file decided.
//!
//! Exit status: 0 allowed, 1 refused, 2 usage or policy error.

use anyhow::{bail, Result};
use execguard_container::{check_provider_args, Agent, Autonomy};
use execguard_load::Loaded;
use execguard_load::Source;
use execguard_policy::{Profile, Reason, Verdict};
use execguard_session::launch::{decide_command, lossy};
use execguard_session::runtimes::Tool;
use execguard_wrappers::env::EnvView;
use execguard_wrappers::runtime::WrapperPolicy;
use execguard_wrappers::{FileConfig, GitContext, Refusal};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
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
    /// Check provider CLI arguments (codex | claude | gemini | copilot) instead of a command
    #[arg(long, value_parser = parse_agent)]
    provider: Option<Agent>,
    /// With --provider: yolo | prompt (default prompt)
    #[arg(long, value_parser = parse_autonomy, requires = "provider")]
    autonomy: Option<Autonomy>,
    /// The command and its arguments (with --provider: the provider's arguments)
    #[arg(last = true, required_unless_present = "provider")]
    command: Vec<OsString>,
}

fn parse_agent(s: &str) -> Result<Agent, String> {
    Agent::from_name(s)
        .ok_or_else(|| format!("unknown provider {s:?} (codex, claude, gemini, copilot)"))
}

fn parse_autonomy(s: &str) -> Result<Autonomy, String> {
    Autonomy::from_name(s).ok_or_else(|| format!("unknown autonomy {s:?} (yolo, prompt)"))
}

fn policy_for(args: &Args) -> Result<Loaded> {
    if let Some(path) = &args.policy {
        return Ok(execguard_session::policy_text::policy_file(path)?);
    }
    if args.workspace.is_none() {
        if let Some(loaded) = execguard_session::policy_text::policy_in_force()? {
            return Ok(loaded);
        }
    }
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let workspace = execguard_session::preflight::check_workspace(&workspace)?;
    let profile = args.profile.unwrap_or(Profile::Strict);
    let text = execguard_session::policy_text::discovered_default_policy(
        &workspace,
        profile,
        None,
        true,
        &execguard_session::exec_dirs::ExecDirChoice::default(),
    )?;
    Ok(Loaded {
        source: Source::Environment,
        text: text.into_bytes(),
        profile,
    })
}

pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(agent) = args.provider {
        return provider(&args, agent);
    }
    let mut loaded = policy_for(&args)?;
    if let Some(p) = args.profile {
        loaded.profile = p;
    }
    // A bare `git` or `node` is the wrapper in a session whose policy protects that tool.
    let program = args.command[0].as_os_str();
    if let Some(tool) = execguard_session::runtimes::TOOLS
        .into_iter()
        .find(|t| program == t.name)
    {
        let wp = WrapperPolicy::from_loaded(&loaded);
        if let Some(rt) = wp.real_binary(tool.name) {
            let rt = rt.clone();
            return wrapper(&args, tool, &wp, &rt.path, &rt.wrapper);
        }
    }
    guard(&args, &loaded)
}

fn strs(v: &[OsString]) -> Vec<String> {
    v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
}

/// The wrapper's decision for `git ARGS` or `node ARGS`.
fn wrapper(
    args: &Args,
    tool: Tool,
    wp: &WrapperPolicy,
    real: &Path,
    wrapper_path: &Path,
) -> Result<ExitCode> {
    let rest = &args.command[1..];
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let cwd = std::env::current_dir()?;
    let outcome: Result<Vec<OsString>, Refusal> = if tool == execguard_session::runtimes::GIT {
        let reader = FileConfig::from_env(&EnvView::new(&env));
        let ctx = GitContext {
            reader: &reader,
            shim: wp.git_shim_rule(None),
            internal_child: false,
        };
        execguard_wrappers::check_git_with(rest, &env, &cwd, &ctx).map(|plan| plan.args)
    } else {
        execguard_wrappers::node::check_node(rest).map(|_| rest.to_vec())
    };
    let allowed = outcome.is_ok();
    if args.json {
        let mut obj = serde_json::json!({
            "tool": tool.name,
            "wrapper": wrapper_path.to_string_lossy(),
            "runtime": real.to_string_lossy(),
            "decision": if allowed { "allow" } else { "deny" },
        });
        match &outcome {
            Ok(argv) => {
                obj["reason"] = "allowed".into();
                obj["argv"] = strs(argv).into();
            }
            Err(r) => {
                obj["reason"] = r.code().into();
                obj["detail"] = r.detail().into();
                obj["hint"] = r.hint().into();
                obj["exit_status"] = execguard_wrappers::launch::EXIT_REFUSED.into();
            }
        }
        println!("{obj}");
    } else {
        match &outcome {
            Ok(argv) => {
                let shown: Vec<String> = std::iter::once(real.display().to_string())
                    .chain(strs(argv))
                    .collect();
                println!(
                    "allow (execguard-{}): would run {}",
                    tool.name,
                    shown.join(" ")
                );
            }
            Err(r) => println!(
                "deny {}: {}; to proceed: {}\n  execguard-{} refuses this with exit status {}",
                r.code(),
                r.detail(),
                r.hint().unwrap_or_default(),
                tool.name,
                execguard_wrappers::launch::EXIT_REFUSED
            ),
        }
    }
    Ok(ExitCode::from(if allowed { 0 } else { 1 }))
}

/// The provider policy's decision and the final argv.
fn provider(args: &Args, agent: Agent) -> Result<ExitCode> {
    if args.workspace.is_some() || args.policy.is_some() {
        bail!("--provider takes --profile and --autonomy, not --workspace or --policy");
    }
    let profile = match args.profile {
        Some(p) => p,
        None => execguard_session::policy_text::policy_in_force()?
            .map_or(Profile::Strict, |l| l.profile),
    };
    let autonomy = args.autonomy.unwrap_or(Autonomy::Prompt);
    let outcome = check_provider_args(agent, profile, autonomy, &args.command);
    let allowed = outcome.is_ok();
    if args.json {
        let mut obj = serde_json::json!({
            "provider": agent.as_str(),
            "profile": profile.as_str(),
            "autonomy": autonomy.as_str(),
            "decision": if allowed { "allow" } else { "deny" },
        });
        match &outcome {
            Ok(argv) => {
                obj["reason"] = "allowed".into();
                obj["argv"] = std::iter::once(agent.as_str().to_string())
                    .chain(strs(argv))
                    .collect::<Vec<_>>()
                    .into();
            }
            Err(r) => {
                obj["reason"] = r.code().into();
                obj["detail"] = provider_detail(r).into();
            }
        }
        println!("{obj}");
    } else {
        match &outcome {
            Ok(argv) => println!(
                "allow ({} {}, {}): {} {}",
                agent.as_str(),
                profile.as_str(),
                autonomy.as_str(),
                agent.as_str(),
                strs(argv).join(" ")
            ),
            Err(r) => println!("deny {}: {}", r.code(), provider_detail(r)),
        }
    }
    Ok(ExitCode::from(if allowed { 0 } else { 1 }))
}

/// The refusal's one line without its `refused <code>: ` prefix.
fn provider_detail(r: &execguard_container::ProviderRefusal) -> String {
    let line = r.to_string();
    let prefix = format!("refused {}: ", r.code());
    line.strip_prefix(&prefix).unwrap_or(&line).to_string()
}

/// The guard's decision for any other command.
fn guard(args: &Args, loaded: &Loaded) -> Result<ExitCode> {
    let policy = loaded.policy();
    let self_lib = execguard_session::runtimes::guard_library().ok();
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
            if !allowed {
                obj["way_forward"] = reason.way_forward(Some(policy.profile())).into();
            }
            if let Some(e) = errno {
                obj["errno"] = e.into();
            }
        }
        obj["partition"] = partition_json(&policy);
        println!("{obj}");
        return Ok(ExitCode::from(if allowed { 0 } else { 1 }));
    }
    if kernel_error {
        println!(
            "error: {target}: {}",
            std::io::Error::from_raw_os_error(errno.unwrap_or(0))
        );
    } else if allowed {
        println!("allow ({}): {target}", reason.code());
    } else {
        println!(
            "deny {}: {path}\n  {}\n  way forward: {}",
            reason.code(),
            reason.describe(),
            reason.way_forward(Some(policy.profile()))
        );
    }
    let p = execguard_session::seal::partition(&policy);
    let list = |v: &[PathBuf]| {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "partition ({}): write set {}; exec dirs {}{}; everything else executable, not writable",
        if policy.seal() {
            "sealed"
        } else {
            "not sealed"
        },
        list(&p.write_set),
        if p.exec_dirs.is_empty() {
            "none".into()
        } else {
            list(&p.exec_dirs)
        },
        if p.both.is_empty() {
            String::new()
        } else {
            format!("; both rights {}", list(&p.both))
        }
    );
    Ok(ExitCode::from(if allowed { 0 } else { 1 }))
}

/// The partition the policy describes (docs/write-set.md), both sides.
fn partition_json(policy: &execguard_policy::Policy) -> serde_json::Value {
    let p = execguard_session::seal::partition(policy);
    serde_json::json!({
        "sealed": policy.seal(),
        "write_set": p.write_set,
        "exec_dirs": p.exec_dirs,
        "both": p.both,
    })
}
