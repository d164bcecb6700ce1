//! Guarded wrappers for git and node.
//!
//! The names `git` and `node` on PATH start these native wrappers; they decide, from the
//! arguments and environment alone, whether the invocation may run, build the child
//! environment from an allow-list, and `execve` the real binary named by the policy. The
//! preload guard lets the real binaries start only from their wrapper (or from themselves).
//!
//! The decision functions ([`check_git`], [`check_node`]) run nothing; git's config files
//! are read through an injectable [`git::ConfigReader`].

pub mod bounded;
pub mod env;
pub mod git;
pub mod launch;
pub mod node;
pub mod refusal;
pub mod runtime;
pub mod takeover;

use std::ffi::{OsStr, OsString};
use std::path::Path;

pub use git::files::FileConfig;
pub use git::shim::{build_git_exec_path_shim, git_exec_path_shim_is_current};
pub use git::{
    check_git_with, ConfigReader, GitContext, GitPlan, RepoSelection, ShimRule, StaticConfig,
};
pub use refusal::{Reason, Refusal};

fn env_get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
    env.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_os_str())
}

/// Would `git <args>` run, with this environment and working directory? Reads the config
/// files git would read; the policy (`/etc/execguard/policy.toml`, or `EXECGUARD_POLICY` in
/// `env`, read by `execguard_load`) names the wrapper and real gits an inherited
/// `GIT_EXEC_PATH` is compared with.
pub fn check_git(
    args: &[OsString],
    env: &[(OsString, OsString)],
    cwd: &Path,
) -> Result<(), Refusal> {
    let shim = runtime::WrapperPolicy::load_for_env(env_get(env, runtime::POLICY_ENV))
        .map(|p| p.git_shim_rule(None))
        .unwrap_or_default();
    let reader = git::files::FileConfig::from_env(&env::EnvView::new(env));
    let ctx = GitContext {
        reader: &reader,
        shim,
        internal_child: false,
    };
    check_git_with(args, env, cwd, &ctx).map(|_| ())
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
