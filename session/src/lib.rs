//! The steps of an execguard session's start, one file each. [`host`] is `execguard run`: the
//! steps in the order it takes them; the container entrypoint takes the ones it shares with
//! it (the supervisor, its loop, the hand-back). Their kernel calls that choose a fallback go
//! through the seam in [`sys`], passed in, with a recording double for the table tests.
//!
//! | file | the step it owns |
//! |------|------------------|
//! | [`host`] | the host chain, `execguard run`: the steps below in order |
//! | [`preflight`] | the checks before anything is built: the workspace is a project directory, the audit log can be written, the default log is announced |
//! | [`policy_text`] | the session's policy: the embedded default assembled from its parts (or the system policy in force, or `--policy FILE`) |
//! | [`exec_dirs`] | the sides of a host session's partition: `$HOME` in the write set, the operator's recorded exec dirs inside it |
//! | [`runtimes`] | the session's binaries: the guard library, the wrappers, the real git and node copies they protect |
//! | [`identities`] | the execute side learned once: the runtimes' and wrappers' identities carried in the policy text |
//! | [`runtime_dir`] | the user's private runtime directory, where shims, records and the default audit log live |
//! | [`shims`] | the per-session shim that puts the wrappers first on `PATH` and in git's exec-path |
//! | [`inherited`] | the descriptors the session inherits: the files they write, and each opened again through the session's mounts |
//! | [`carry`] | the channel that carries inherited files' new descriptions to the supervisor and their offsets back |
//! | [`seal`] | the glue into `execguard_seal`: the partition a policy describes, and sealing this process |
//! | [`reaper`] | the supervisor's tini loop: signals blocked, waited for, passed on; every exited process reaped |
//! | [`supervisor`] | the process that stays outside the session (the host's fork, the container's PID 1) and its duties at the end |
//! | [`assurance`] | the start records (what the session is held to, the verdict on its first command), through one writer |
//! | [`handback`] | the repositories recorded at the start and handed back, reviewed, at the end |
//! | [`go_exec`] | `go test` and `go run` of a strict session start what they built through a program the guard is in, so its refusal is seen |
//! | [`session_temp`] | the temp directory of a development session: its own, written and executed, removed at the end |
//! | [`summary`] | the session's refusals read back from the audit log and printed when it ends |
//! | [`privileges`] | the supervisor's sweep at the end: setuid/setgid bits and file capabilities the session left in the workspace, cleared and recorded |
//! | [`native_left`] | the same sweep's native files (ELF executables, shared objects) made not to run outside; put back for the next session |
//! | [`world`] | the session's own world: its home layer, temp and runtime dirs, the outside's sockets hidden; `execguard home` |
//! | [`network`] | the session's own network, served by the supervisor: the proxy that refuses the host, the declared host ports |
//! | [`launch`] | the session's first command, decided by the same engine as the guard |
//! | [`sys`] | the seam: the kernel calls that choose a step's fallback, and their recording double |
//!
//! Support for every step: [`paths`] (canonical names, resolved once per process) and
//! [`input`] (bounded readers of the files a session start reads).

pub mod assurance;
pub mod carry;
pub mod exec_dirs;
pub mod go_exec;
pub mod handback;
pub mod host;
pub mod identities;
pub mod inherited;
pub mod input;
pub mod launch;
pub mod native_left;
pub mod network;
pub mod paths;
pub mod policy_text;
pub mod preflight;
pub mod privileges;
pub mod reaper;
pub mod runtime_dir;
pub mod runtimes;
pub mod seal;
pub mod session_temp;
pub mod shims;
pub mod summary;
pub mod supervisor;
pub mod sys;
pub mod world;

/// A fresh directory for one unit test, under this process's id.
#[cfg(test)]
mod test_dirs {
    pub fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("eg-tc-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
