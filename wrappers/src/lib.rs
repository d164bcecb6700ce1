//! Guarded wrappers for git and node.
//!
//! The names `git` and `node` on PATH start these native wrappers; they decide, from the
//! arguments and environment alone, whether the invocation may run, build the child
//! environment from an allow-list, and `execve` the real binary named by the policy. The
//! preload guard lets the real binaries start only from their wrapper (or from themselves).
//!
//! The decision functions ([`check_git`], [`check_node`]) run nothing except, for git, the
//! real git's `config --list` through an injectable [`git::ConfigReader`].

pub mod env;
pub mod git;
pub mod launch;
pub mod node;
pub mod refusal;
pub mod runtime;

use std::ffi::{OsStr, OsString};
use std::path::Path;

pub use git::shim::build_git_exec_path_shim;
pub use git::{check_git_with, ConfigReader, GitContext, GitPlan, ShimRule, StaticConfig};
pub use refusal::{Reason, Refusal};

fn env_get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
    env.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_os_str())
}

/// Would `git <args>` run, with this environment and working directory? Finds the real git
/// through the policy (`/etc/execguard/policy.toml`, or `EXECGUARD_POLICY` in `env`, read by
/// `execguard_load`) to read the repository config and aliases; without a usable policy the
/// answer is `config_unreadable`.
pub fn check_git(
    args: &[OsString],
    env: &[(OsString, OsString)],
    cwd: &Path,
) -> Result<(), Refusal> {
    let policy = runtime::WrapperPolicy::load_for_env(env_get(env, runtime::POLICY_ENV));
    let (reader, shim): (Box<dyn ConfigReader>, ShimRule) = match &policy {
        Ok(p) => match p.real_binary("git") {
            Some(rt) => (
                Box::new(runtime::RealGitConfig {
                    real_git: rt.path.clone(),
                    env: env::build_child_env(env::Runtime::Git, &env::EnvView::new(env)),
                }),
                p.git_shim_rule(None),
            ),
            None => (
                Box::new(Unreadable("the policy names no git runtime".into())),
                ShimRule::default(),
            ),
        },
        Err(e) => (Box::new(Unreadable(e.to_string())), ShimRule::default()),
    };
    let ctx = GitContext {
        reader: reader.as_ref(),
        shim,
    };
    check_git_with(args, env, cwd, &ctx).map(|_| ())
}

struct Unreadable(String);

impl ConfigReader for Unreadable {
    fn read_config(
        &self,
        _: &Path,
        _: &[OsString],
    ) -> Result<Vec<git::config::ConfigEntry>, String> {
        Err(self.0.clone())
    }
}

/// Would `node <args>` run? The environment is accepted for symmetry with [`check_git`]:
/// node's dangerous variables are dropped, not refused. `cwd` is unused.
pub fn check_node(
    args: &[OsString],
    env: &[(OsString, OsString)],
    cwd: &Path,
) -> Result<(), Refusal> {
    let _ = (env, cwd);
    node::check_node(args).map(|_| ())
}
