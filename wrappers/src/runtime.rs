//! Where the wrappers find the real runtime and the audit log, and how they exec.
//!
//! The policy comes from the one loader for std callers, `execguard_load`:
//! `/etc/execguard/policy.toml` when it exists (root-owned; the environment is then never
//! consulted), otherwise the policy text in `EXECGUARD_POLICY` (host mode, `execguard run`).
//! The policy engine parses it: a policy the guard would refuse, the wrappers refuse too.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use execguard_load::{LoadError, Loaded};
use execguard_policy::Policy;

use crate::git::ShimRule;

pub use execguard_load::{POLICY_ENV, SYSTEM_POLICY};

/// One `[[runtime]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeEntry {
    pub name: String,
    pub path: PathBuf,
    pub wrapper: PathBuf,
}

/// The parts of the policy the wrappers use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrapperPolicy {
    pub runtimes: Vec<RuntimeEntry>,
    pub audit_log: Option<PathBuf>,
    /// The writer outside the session that keeps its records (then `audit_log` is its log).
    pub audit_socket: Option<PathBuf>,
    /// The session profile, for audit records.
    pub profile: Option<execguard_policy::Profile>,
}

fn os_path(b: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b))
}

impl WrapperPolicy {
    /// The wrapper-relevant parts of a policy the engine has parsed.
    pub fn from_policy(policy: &Policy<'_>) -> Self {
        WrapperPolicy {
            runtimes: policy
                .runtimes()
                .map(|r| RuntimeEntry {
                    name: String::from_utf8_lossy(r.name).into_owned(),
                    path: os_path(r.path),
                    wrapper: os_path(r.wrapper),
                })
                .collect(),
            audit_log: policy.audit_log().map(os_path),
            audit_socket: policy.audit_socket().map(os_path),
            profile: Some(policy.profile()),
        }
    }

    /// The wrapper view of a loaded policy.
    pub fn from_loaded(loaded: &Loaded) -> Self {
        Self::from_policy(&loaded.policy())
    }

    /// Parse a policy text with the engine (tests, and callers holding a text).
    pub fn parse(text: &str) -> Result<Self, LoadError> {
        Policy::parse(text.as_bytes())
            .map(|p| Self::from_policy(&p))
            .map_err(|e| LoadError::Invalid("policy".into(), e))
    }

    /// The policy in force for this process: [`execguard_load::load`].
    pub fn load() -> Result<Self, LoadError> {
        execguard_load::load().map(|l| Self::from_loaded(&l))
    }

    /// The policy in force for a process whose `EXECGUARD_POLICY` is `env_value` (the system
    /// file still wins): [`execguard_load::load_from`].
    pub fn load_for_env(env_value: Option<&OsStr>) -> Result<Self, LoadError> {
        execguard_load::load_from(
            Path::new(SYSTEM_POLICY),
            env_value.map(|v| v.as_bytes().to_vec()),
        )
        .map(|l| Self::from_loaded(&l))
    }

    /// The real binary for `name`: the first runtime entry of that name.
    pub fn real_binary(&self, name: &str) -> Option<&RuntimeEntry> {
        self.runtimes.iter().find(|r| r.name == name)
    }

    /// The shim rule for git: the wrapper named by the policy (or this process's own
    /// executable), and the directories of every protected git copy.
    pub fn git_shim_rule(&self, self_exe: Option<PathBuf>) -> ShimRule {
        let wrapper = self_exe.or_else(|| self.real_binary("git").map(|r| r.wrapper.clone()));
        let real_exec_dirs = self
            .runtimes
            .iter()
            .filter(|r| r.name == "git")
            .filter_map(|r| {
                // A directory entry protects the exec-path itself; a file entry its directory.
                if r.path.is_dir() {
                    Some(r.path.clone())
                } else {
                    r.path.parent().map(Path::to_path_buf)
                }
            })
            // Only git's own exec-paths: a shim that mirrored `/usr/bin` (the directory of a
            // protected git) would leave git's helpers to be looked for on PATH.
            .filter(|d| d.file_name() == Some(std::ffi::OsStr::new("git-core")))
            .collect();
        let real_gits = self
            .runtimes
            .iter()
            .filter(|r| r.name == "git" && r.path.is_file())
            .map(|r| r.path.clone())
            .collect();
        ShimRule {
            wrapper,
            real_exec_dirs,
            real_gits,
        }
    }
}

/// Where a wrapper's records go: the writer outside the session, or the log itself.
#[derive(Clone, Copy, Debug)]
pub enum AuditSink<'a> {
    Writer(&'a Path),
    Log(&'a Path),
}

impl AuditSink<'_> {
    pub fn path(&self) -> &Path {
        match self {
            AuditSink::Writer(p) | AuditSink::Log(p) => p,
        }
    }
}

impl WrapperPolicy {
    /// Where this policy's records go, if anywhere.
    pub fn audit_sink(&self) -> Option<AuditSink<'_>> {
        match (&self.audit_socket, &self.audit_log) {
            (Some(s), _) => Some(AuditSink::Writer(s)),
            (None, Some(l)) => Some(AuditSink::Log(l)),
            (None, None) => None,
        }
    }
}

/// Sends or appends the record of a refusal, in the one schema
/// ([`execguard_policy::audit`]): tool `git`/`node`, entry `wrapper`, the reason code, the
/// argument that decided as `path`, the command line as `target`; whole or not at all.
pub fn audit_refusal(
    sink: AuditSink<'_>,
    tool: &str,
    profile: Option<execguard_policy::Profile>,
    code: &str,
    detail: &str,
    argv: &[OsString],
) -> io::Result<()> {
    let mut target = tool.as_bytes().to_vec();
    for a in argv {
        target.push(b' ');
        target.extend_from_slice(a.as_bytes());
    }
    let record = execguard_os::audit::stamp(
        tool,
        "wrapper",
        execguard_policy::audit::Decision::Deny,
        code,
        profile,
        detail.as_bytes(),
        &target,
    );
    match sink {
        AuditSink::Writer(socket) => {
            execguard_os::audit::send(socket.as_os_str().as_bytes(), &record)
        }
        AuditSink::Log(log) => execguard_os::audit::append(log.as_os_str().as_bytes(), &record),
    }
    .map_err(|e| io::Error::other(format!("{e:?}")))
}

/// Refuse to run under a tracer, and make this process non-dumpable so a same-uid process
/// cannot attach to it after the check (`PR_SET_DUMPABLE` also blocks `/proc/pid/mem`).
pub fn harden_process() -> Result<(), String> {
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) takes no pointers; it only changes this process's
    // dumpable flag.
    let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if rc != 0 {
        return Err(format!(
            "failed to clear dumpable flag: {}",
            io::Error::last_os_error()
        ));
    }
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let tracer = status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .map(str::trim)
        .unwrap_or("0");
    if tracer != "0" {
        return Err(format!("traced by pid {tracer}"));
    }
    Ok(())
}

fn cstring(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in argument"))
}

/// `execve(path, argv, envp)`. Returns only on failure.
pub fn exec_runtime(
    path: &Path,
    argv0: &OsStr,
    args: &[OsString],
    env: &[(OsString, OsString)],
) -> io::Error {
    let build = || -> io::Result<(CString, Vec<CString>, Vec<CString>)> {
        let p = cstring(path.as_os_str().as_bytes())?;
        let mut argv = vec![cstring(argv0.as_bytes())?];
        for a in args {
            argv.push(cstring(a.as_bytes())?);
        }
        let mut envp = Vec::with_capacity(env.len());
        for (k, v) in env {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(cstring(&kv)?);
        }
        Ok((p, argv, envp))
    };
    let (p, argv, envp) = match build() {
        Ok(x) => x,
        Err(e) => return e,
    };
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|c| c.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());
    // SAFETY: `p`, every element of `argv` and `envp` are NUL-terminated CStrings that
    // outlive the call, and both pointer arrays end with a null pointer as execve requires.
    unsafe { libc::execve(p.as_ptr(), argv_ptrs.as_ptr(), envp_ptrs.as_ptr()) };
    io::Error::last_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_subset_parses_runtimes_and_audit_log() {
        let p = WrapperPolicy::parse(
            "version = 1\nprofile = \"strict\"\naudit_log = \"/var/log/eg.jsonl\"\n[[runtime]]\nname = \"git\"\npath = \"/usr/libexec/execguard/real/git\" # real\nwrapper = \"/usr/libexec/execguard/bin/execguard-git\"\n[[runtime]]\nname = \"git\"\npath = \"/usr/lib/git-core/git\"\nwrapper = \"/usr/libexec/execguard/bin/execguard-git\"\n",
        )
        .unwrap();
        assert_eq!(p.audit_log.as_deref(), Some(Path::new("/var/log/eg.jsonl")));
        assert_eq!(p.runtimes.len(), 2);
        assert_eq!(
            p.real_binary("git").unwrap().path,
            Path::new("/usr/libexec/execguard/real/git")
        );
        let rule = p.git_shim_rule(None);
        // git's exec-path only, not the directory of every protected git.
        assert_eq!(rule.real_exec_dirs, [PathBuf::from("/usr/lib/git-core")]);
        assert!(p.real_binary("node").is_none());
    }
}
