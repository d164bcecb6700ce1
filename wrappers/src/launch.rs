//! The wrapper binaries' main paths: harden, load the policy, decide, audit, exec.
//!
//! Exit statuses: the real runtime's own status when it ran (the wrapper `execve`s, so it is
//! not in between); 2 when refused; 125 when the wrapper cannot work (no policy, no runtime
//! entry, the entry names the wrapper itself); 126 when the real binary could not be executed;
//! 127 when it does not exist.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::env::{build_child_env, EnvView, Runtime};
use crate::git::files::FileConfig;
use crate::git::{check_git_with, GitContext};
use crate::refusal::{Reason, Refusal};
use crate::runtime::{self, WrapperPolicy};

pub const EXIT_REFUSED: i32 = 2;
pub const EXIT_CONFIG: i32 = 125;
pub const EXIT_EXEC_FAILED: i32 = 126;
pub const EXIT_NOT_FOUND: i32 = 127;

struct Invocation {
    tool: &'static str,
    args: Vec<OsString>,
    env: EnvView,
    env_pairs: Vec<(OsString, OsString)>,
    cwd: PathBuf,
}

impl Invocation {
    fn from_process(tool: &'static str) -> Self {
        let env_pairs: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        Invocation {
            tool,
            args: std::env::args_os().skip(1).collect(),
            env: EnvView::new(&env_pairs),
            env_pairs,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        }
    }

    fn fail(&self, msg: &str) -> i32 {
        let _ = writeln!(std::io::stderr(), "execguard-{}: error: {msg}", self.tool);
        EXIT_CONFIG
    }

    /// One stderr line, one audit record, exit status 2.
    fn refuse(&self, r: &Refusal, policy: Option<&WrapperPolicy>) -> i32 {
        // One write, so that concurrent writers never split the line.
        let line = format!("execguard-{}: {r}\n", self.tool);
        let _ = std::io::stderr().write_all(line.as_bytes());
        if let Some(p) = policy {
            let Some(sink) = p.audit_sink() else {
                return EXIT_REFUSED;
            };
            let written = runtime::audit_refusal(
                sink,
                self.tool,
                p.profile,
                r.code(),
                r.detail(),
                &self.args,
            );
            if let Err(e) = written {
                let _ = writeln!(
                    std::io::stderr(),
                    "execguard-{}: warning: failed to write audit log {}: {e}",
                    self.tool,
                    sink.path().display()
                );
            }
        }
        EXIT_REFUSED
    }

    /// Execs `real` with the child environment of `rt`, the checked variables `extra` names,
    /// and `set` (the wrapper's own values, which win).
    fn exec(
        &self,
        real: &Path,
        args: &[OsString],
        rt: Runtime,
        extra: &[String],
        set: Vec<(OsString, OsString)>,
    ) -> i32 {
        let mut child_env = build_child_env(rt, &self.env);
        child_env.retain(|(k, _)| !set.iter().any(|(n, _)| n == k));
        child_env.extend(set);
        for name in extra {
            if child_env.iter().any(|(k, _)| k == name.as_str()) {
                continue;
            }
            if let Some(v) = self.env.get(name) {
                child_env.push((name.into(), v.to_owned()));
            }
        }
        let err = runtime::exec_runtime(real, std::ffi::OsStr::new(self.tool), args, &child_env);
        let _ = writeln!(
            std::io::stderr(),
            "execguard-{}: error: failed to execute {}: {err}",
            self.tool,
            real.display()
        );
        if err.kind() == std::io::ErrorKind::NotFound {
            EXIT_NOT_FOUND
        } else {
            EXIT_EXEC_FAILED
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => false,
    }
}

/// Load the policy and find the real binary; `Err` is the exit status.
fn setup(inv: &Invocation, name: &str) -> Result<(WrapperPolicy, PathBuf, Option<PathBuf>), i32> {
    let policy =
        WrapperPolicy::load().map_err(|e| inv.fail(&format!("{}: {e}", e.reason().code())))?;
    if let Err(why) = runtime::harden_process() {
        return Err(inv.refuse(&Refusal::new(Reason::Traced, why), Some(&policy)));
    }
    let Some(real) = policy.real_binary(name).map(|r| r.path.clone()) else {
        return Err(inv.fail(&format!("the policy names no {name} runtime")));
    };
    let self_exe = std::env::current_exe().ok();
    if self_exe.as_deref().is_some_and(|s| same_file(s, &real)) {
        return Err(inv.fail(&format!(
            "the {name} runtime {} is this wrapper",
            real.display()
        )));
    }
    Ok((policy, real, self_exe))
}

/// `git-<cmd> ARGS` is `git <cmd> ARGS` (git.c): the name the wrapper was started by, when it
/// is a dashed builtin (the exec-path shim links those to the wrapper).
pub fn dashed_subcommand(argv0: &std::ffi::OsStr) -> Option<OsString> {
    let name = Path::new(argv0).file_name()?.to_str()?;
    let sub = name.strip_prefix("git-")?;
    (!sub.is_empty()).then(|| OsString::from(sub))
}

/// Is this git the sequencer's own commit: the parent process is a real git of the policy
/// (the guard lets only the wrapper start one, so it went through these checks itself) running
/// `rebase`, `cherry-pick` or `revert`, which commit with `commit -n` (git never ran the
/// pre-commit hook for them)? Fails closed: an unreadable parent is not git.
fn parent_is_sequencer(policy: &WrapperPolicy) -> bool {
    // SAFETY: getppid has no preconditions and cannot fail.
    let ppid = unsafe { libc::getppid() };
    let Ok(exe) = std::fs::metadata(format!("/proc/{ppid}/exe")) else {
        return false;
    };
    let real_git = policy.runtimes.iter().filter(|r| r.name == "git").any(|r| {
        std::fs::metadata(&r.path)
            .is_ok_and(|m| m.is_file() && (m.dev(), m.ino()) == (exe.dev(), exe.ino()))
    });
    if !real_git {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{ppid}/cmdline")) else {
        return false;
    };
    let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).skip(1).collect();
    let mut i = 0;
    while i < words.len() && words[i].starts_with(b"-") {
        // The global options that take the next word (git.c).
        let takes = [
            &b"-c"[..],
            b"-C",
            b"--git-dir",
            b"--work-tree",
            b"--namespace",
            b"--config-env",
        ];
        i += if takes.contains(&words[i]) { 2 } else { 1 };
    }
    words
        .get(i)
        .is_some_and(|w| [&b"rebase"[..], b"cherry-pick", b"revert"].contains(w))
}

/// `execguard-git` (installed as `git`).
pub fn main_git() -> i32 {
    let mut inv = Invocation::from_process("git");
    if let Some(sub) = std::env::args_os()
        .next()
        .and_then(|a0| dashed_subcommand(&a0))
    {
        inv.args.insert(0, sub);
    }
    let (policy, real, self_exe) = match setup(&inv, "git") {
        Ok(x) => x,
        Err(code) => return code,
    };
    let reader = FileConfig::from_env(&inv.env);
    let ssh = self_exe
        .as_deref()
        .map(|w| crate::git::ssh::child_env(&inv.env, w))
        .unwrap_or_default();
    let ctx = GitContext {
        reader: &reader,
        shim: policy.git_shim_rule(self_exe),
        internal_child: parent_is_sequencer(&policy),
    };
    match check_git_with(&inv.args, &inv.env_pairs, &inv.cwd, &ctx) {
        Ok(plan) => inv.exec(&real, &plan.args, Runtime::Git, &plan.config_env_vars, ssh),
        Err(r) => inv.refuse(&r, Some(&policy)),
    }
}

/// `execguard-node` (installed as `node`).
pub fn main_node() -> i32 {
    let inv = Invocation::from_process("node");
    let (policy, real, _) = match setup(&inv, "node") {
        Ok(x) => x,
        Err(code) => return code,
    };
    match crate::node::check_node(&inv.args).and_then(|plan| crate::node::check_script(&plan)) {
        Ok(()) => inv.exec(&real, &inv.args, Runtime::Node, &[], Vec::new()),
        Err(r) => inv.refuse(&r, Some(&policy)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashed_names_are_subcommands() {
        let d = |s: &str| dashed_subcommand(std::ffi::OsStr::new(s));
        assert_eq!(d("git-upload-pack"), Some("upload-pack".into()));
        assert_eq!(
            d("/x/git-core/git-receive-pack"),
            Some("receive-pack".into())
        );
        assert_eq!(d("git"), None);
        assert_eq!(d("git-"), None);
        assert_eq!(d("execguard-git"), None);
        assert_eq!(d("/usr/bin/git"), None);
    }
}
