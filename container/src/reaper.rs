//! PID 1 duties, after tini: block the asynchronous signals, wait for them with `sigtimedwait`,
//! forward each one to the child, reap every exited process, and exit with the child's status
//! (`128 + n` when it was killed by signal `n`). No asynchronous signal handlers are installed.
//!
//! When the entrypoint is not PID 1 it registers as a child subreaper, so orphans of the
//! provider are still re-parented to it and reaped.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

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

/// The installed init: the blocked signal set.
pub struct Init {
    set: libc::sigset_t,
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

impl Init {
    /// Blocks the asynchronous signals and, unless this is PID 1, becomes a child subreaper.
    /// Call before spawning so that no signal between spawn and the loop is lost.
    pub fn install() -> io::Result<Self> {
        let subreaper = crate::sys::getpid() != 1;
        if subreaper {
            // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag; no pointers.
            check(unsafe {
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0)
            })?;
        }
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigfillset initialises the whole set it is given; it is read only afterwards.
        check(unsafe { libc::sigfillset(set.as_mut_ptr()) })?;
        // SAFETY: initialised by the successful sigfillset above.
        let mut set = unsafe { set.assume_init() };
        for sig in UNBLOCKED {
            // SAFETY: `set` is an initialised sigset_t and `sig` a valid signal number.
            check(unsafe { libc::sigdelset(&mut set, sig) })?;
        }
        // SAFETY: `set` is initialised; the old mask is not needed (the child's mask is reset
        // explicitly in `spawn`), so a null old-set pointer is passed.
        check(unsafe { libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut()) })?;
        for sig in [libc::SIGTTIN, libc::SIGTTOU] {
            // SAFETY: SIG_IGN is a valid disposition for these catchable signals.
            if unsafe { libc::signal(sig, libc::SIG_IGN) } == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Self { set, subreaper })
    }

    /// Spawns the child in its own process group (made the terminal's foreground group when
    /// stdin is a terminal), with an empty signal mask and default TTIN/TTOU dispositions.
    /// Returns the child's pid.
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<libc::pid_t> {
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (setpgid, isatty, tcsetpgrp, signal, sigprocmask, getpid);
        // it allocates nothing and touches no lock.
        unsafe {
            cmd.pre_exec(|| {
                check(libc::setpgid(0, 0))?;
                if libc::isatty(0) == 1 && libc::tcsetpgrp(0, libc::getpid()) != 0 {
                    let err = io::Error::last_os_error();
                    if !matches!(err.raw_os_error(), Some(libc::ENOTTY) | Some(libc::ENXIO)) {
                        return Err(err);
                    }
                }
                for sig in [libc::SIGTTIN, libc::SIGTTOU] {
                    if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                        return Err(io::Error::last_os_error());
                    }
                }
                let mut empty = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
                check(libc::sigemptyset(empty.as_mut_ptr()))?;
                check(libc::sigprocmask(
                    libc::SIG_SETMASK,
                    empty.as_ptr(),
                    std::ptr::null_mut(),
                ))
            });
        }
        let child = cmd.spawn()?;
        // The child is reaped by `wait_and_forward` through waitpid(-1); `Child` is not waited.
        libc::pid_t::try_from(child.id()).map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))
    }

    /// The PID 1 loop: forwards every received signal to `child`, reaps all exited processes,
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
            } else if sig != libc::SIGCHLD {
                forward(child, sig)?;
            }
            if let Some(code) = reap_all(child)? {
                return Ok(code);
            }
        }
    }
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

/// Maps a spawn failure to tini's exit codes: 127 when not found, 126 otherwise.
pub fn spawn_failure_code(err: &io::Error) -> i32 {
    if err.kind() == io::ErrorKind::NotFound {
        crate::EXIT_NOT_FOUND
    } else {
        crate::EXIT_CANNOT_EXECUTE
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
