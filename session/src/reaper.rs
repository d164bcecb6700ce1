//! The supervisor's signal and reaping loop, after tini: block the asynchronous signals, wait
//! for them with `sigtimedwait`, forward each one to the session's first process, reap every
//! exited process, and return the first process's status (`128 + n` when signal `n` killed
//! it). No asynchronous signal handler is installed; the child gets the signal mask back
//! before it runs anything of its own.
//!
//! Two stands, one loop: PID 1 of a container ([`Stand::Init`]) and the supervisor beside a
//! host session in its process group ([`Stand::Beside`]). Unless it is PID 1 the supervisor
//! becomes a child subreaper, so orphans of the session are re-parented to it and reaped.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Exit status when the command could be found but not executed (tini and shells agree).
pub const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit status when the command was not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// Where the supervisor stands to the session's signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stand {
    /// PID 1 of a container (or its subreaper): every asynchronous signal is the session's;
    /// the session gets a process group of its own, the terminal's foreground one, and the
    /// supervisor ignores the terminal's stop signals.
    Init,
    /// Beside a host session, in the process group the shell made: the terminal sends
    /// SIGINT, SIGQUIT and SIGWINCH to both already (passed on again they would arrive twice,
    /// so they are dropped here, as system(3) ignores them), and the job-control signals
    /// stop and continue both at their defaults, so the shell sees its job stop.
    Beside,
}

/// Signals that stay unblocked: synchronous faults must kill us, as for any process, and the
/// terminal stop signals are ignored (set to SIG_IGN) instead.
const UNBLOCKED: [libc::c_int; 9] = [
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGABRT,
    libc::SIGTRAP,
    libc::SIGSYS,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// Left at their defaults beside a host session: the job-control stops and continue.
const JOB_CONTROL: [libc::c_int; 2] = [libc::SIGTSTP, libc::SIGCONT];

/// Sent by the terminal to the whole foreground process group: beside a host session the
/// session has them already.
const FROM_THE_TERMINAL: [libc::c_int; 3] = [libc::SIGINT, libc::SIGQUIT, libc::SIGWINCH];

/// The installed loop: the blocked signal set and the mask to give back to the child.
pub struct Init {
    set: libc::sigset_t,
    old: libc::sigset_t,
    stand: Stand,
    pub subreaper: bool,
}

/// Maps a `waitpid` status to an exit code: the exit status, or `128 + signal`.
pub fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        // Stopped/continued states are not reported without WUNTRACED; treat defensively.
        1
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Why the loop could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    #[error("failed to make the supervisor a subreaper: {0}")]
    Subreaper(#[source] io::Error),
    #[error("failed to block signals: {0}")]
    BlockSignals(#[source] io::Error),
}

impl Init {
    /// Blocks the asynchronous signals and, unless this is PID 1, becomes a child subreaper.
    /// Call before the child is made, so that no signal between then and the loop is lost.
    pub fn install(stand: Stand) -> Result<Self, InstallError> {
        // SAFETY: getpid has no preconditions.
        let subreaper = unsafe { libc::getpid() } != 1;
        if subreaper {
            // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag; no pointers.
            check(unsafe {
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0)
            })
            .map_err(InstallError::Subreaper)?;
        }
        Self::block(stand, subreaper).map_err(InstallError::BlockSignals)
    }

    fn block(stand: Stand, subreaper: bool) -> io::Result<Self> {
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigfillset initialises the whole set it is given; it is read only afterwards.
        check(unsafe { libc::sigfillset(set.as_mut_ptr()) })?;
        // SAFETY: initialised by the successful sigfillset above.
        let mut set = unsafe { set.assume_init() };
        let job_control: &[libc::c_int] = match stand {
            Stand::Init => &[],
            Stand::Beside => &JOB_CONTROL,
        };
        for &sig in UNBLOCKED.iter().chain(job_control) {
            // SAFETY: `set` is an initialised sigset_t and `sig` a valid signal number.
            check(unsafe { libc::sigdelset(&mut set, sig) })?;
        }
        let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: `set` is initialised; the kernel writes the old mask into `old`.
        check(unsafe { libc::sigprocmask(libc::SIG_SETMASK, &set, old.as_mut_ptr()) })?;
        // SAFETY: written by the successful sigprocmask above.
        let old = unsafe { old.assume_init() };
        if stand == Stand::Init {
            for sig in [libc::SIGTTIN, libc::SIGTTOU] {
                // SAFETY: SIG_IGN is a valid disposition for these catchable signals.
                if unsafe { libc::signal(sig, libc::SIG_IGN) } == libc::SIG_ERR {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(Self {
            set,
            old,
            stand,
            subreaper,
        })
    }

    /// Spawns the child in its own process group (made the terminal's foreground group when
    /// stdin is a terminal), with the signal mask and the TTIN/TTOU dispositions this process
    /// had before [`Init::install`]. Returns the child's pid.
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<libc::pid_t> {
        let old = self.old;
        let stand = self.stand;
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (setpgid, isatty, tcsetpgrp, signal, sigprocmask, getpid);
        // it allocates nothing and touches no lock.
        unsafe {
            cmd.pre_exec(move || {
                check(libc::setpgid(0, 0))?;
                if libc::isatty(0) == 1 && libc::tcsetpgrp(0, libc::getpid()) != 0 {
                    let err = io::Error::last_os_error();
                    if !matches!(err.raw_os_error(), Some(libc::ENOTTY) | Some(libc::ENXIO)) {
                        return Err(err);
                    }
                }
                restore_signals(stand, &old)
            });
        }
        let child = cmd.spawn()?;
        // The child is reaped by `wait_and_forward` through waitpid(-1); `Child` is not waited.
        libc::pid_t::try_from(child.id()).map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))
    }

    /// Forks: `Ok(0)` in the child, which stays in this process group and has this process's
    /// signal mask from before [`Init::install`] back, `Ok(pid)` here.
    ///
    /// # Safety
    /// The caller is single-threaded (the child goes on running Rust code, which would find
    /// a lock another thread held at the fork held forever).
    pub unsafe fn fork(&self) -> io::Result<libc::pid_t> {
        // SAFETY: fork has no preconditions; the caller promises a single thread.
        let child = unsafe { libc::fork() };
        if child < 0 {
            return Err(io::Error::last_os_error());
        }
        if child == 0 {
            // SAFETY: this child is single-threaded; the calls only set its own signal state.
            unsafe { restore_signals(self.stand, &self.old) }?;
        }
        Ok(child)
    }

    /// The loop: forwards every received signal to `child`, reaps all exited processes,
    /// returns the exit code of `child` once it is gone.
    pub fn wait_and_forward(&self, child: libc::pid_t) -> io::Result<i32> {
        let timeout = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        loop {
            let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::uninit();
            // SAFETY: `self.set` is an initialised set, `info` has room for one siginfo_t and
            // `timeout` is live; the kernel writes `info` only on success.
            let sig = unsafe { libc::sigtimedwait(&self.set, info.as_mut_ptr(), &timeout) };
            if sig < 0 {
                let err = io::Error::last_os_error();
                if !matches!(err.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                    return Err(err);
                }
            } else if sig != libc::SIGCHLD && self.passes_on(sig) {
                forward(child, sig)?;
            }
            if let Some(code) = reap_all(child)? {
                return Ok(code);
            }
        }
    }

    fn passes_on(&self, sig: libc::c_int) -> bool {
        self.stand == Stand::Init || !FROM_THE_TERMINAL.contains(&sig)
    }
}

/// In the child, before it runs anything of its own: the mask and the dispositions it had.
///
/// # Safety
/// Only async-signal-safe calls: callable between fork and exec.
unsafe fn restore_signals(stand: Stand, old: &libc::sigset_t) -> io::Result<()> {
    if stand == Stand::Init {
        for sig in [libc::SIGTTIN, libc::SIGTTOU] {
            // SAFETY: SIG_DFL is a valid disposition for these signals.
            if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
    }
    // SAFETY: `old` is the initialised mask saved by `Init::block`.
    check(unsafe { libc::sigprocmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) })
}

fn forward(child: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes plain integers; `child` is our own (possibly already exited) child,
    // which stays a zombie until we reap it, so its pid cannot have been reused.
    if unsafe { libc::kill(child, sig) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(err)
    }
}

/// Reaps every exited process; `Some(code)` once `child` is among them.
fn reap_all(child: libc::pid_t) -> io::Result<Option<i32>> {
    let mut result = None;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a live c_int the kernel writes once.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid == 0 {
            return Ok(result);
        }
        if pid < 0 {
            let err = io::Error::last_os_error();
            return if err.raw_os_error() == Some(libc::ECHILD) {
                Ok(result.or(Some(1)))
            } else {
                Err(err)
            };
        }
        if pid == child {
            result = Some(exit_code(status));
        }
    }
}

/// Maps an exec or spawn failure to tini's exit codes: 127 when not found, 126 otherwise.
pub fn spawn_failure_code(err: &io::Error) -> i32 {
    if err.kind() == io::ErrorKind::NotFound {
        EXIT_NOT_FOUND
    } else {
        EXIT_CANNOT_EXECUTE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_tini() {
        // Status words as the kernel encodes them: exit code << 8, or the signal number.
        assert_eq!(exit_code(0), 0);
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(255 << 8), 255);
        assert_eq!(exit_code(libc::SIGTERM), 128 + 15);
        assert_eq!(exit_code(libc::SIGKILL), 137);
        assert_eq!(
            spawn_failure_code(&io::Error::from(io::ErrorKind::NotFound)),
            127
        );
        assert_eq!(
            spawn_failure_code(&io::Error::from_raw_os_error(libc::EACCES)),
            126
        );
    }
}
