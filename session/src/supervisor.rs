//! The supervisor of a strict host session: it forks, stays outside the session, passes
//! signals on, waits, ends what is left of the session and hands the repository back.

use anyhow::{bail, Context as _, Result};
use std::path::Path;

/// The session's first process, while the supervisor waits: signals the supervisor gets are
/// passed on to it.
static SESSION_CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let child = SESSION_CHILD.load(std::sync::atomic::Ordering::Relaxed);
    if child > 0 {
        // SAFETY: kill is async-signal-safe and takes no pointers.
        unsafe { libc::kill(child, sig) };
    }
}

/// Rule 3 of `wrappers/README.md` for a strict host session: record the control files of the
/// repositories of `workspace` (`Snapshot::record_workspace`), then fork. The child returns
/// and becomes the session, with the channel that takes the new descriptions of its
/// inherited files to this process ([`crate::carry`]); this process stays outside it
/// (unsealed, unguarded), passes SIGTERM/SIGHUP on, waits, carries the files' offsets back,
/// quarantines what the session planted (one audit record per file, one notice line on
/// stderr) and exits with the session's status.
pub fn supervise_repository(
    workspace: &Path,
    audit_log: Option<&Path>,
    profile: execguard_policy::Profile,
) -> Result<std::os::fd::OwnedFd> {
    let handback = crate::handback::record(workspace, audit_log, profile)?;
    // Supervised even without a repository now: one the session creates is checked at the end.
    // Orphans of the session become this process's children, so that none outlives the
    // session to plant again after the quarantine (not inherited by the child).
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) takes an integer and changes only this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        bail!(
            "cannot make the session supervisor a subreaper: {}",
            std::io::Error::last_os_error()
        );
    }
    let (carried, carry) = crate::carry::channel().context("cannot make the session's channel")?;
    // SAFETY: fork has no preconditions; `execguard run` is single-threaded here, so the child
    // may go on running Rust code.
    let child = unsafe { libc::fork() };
    if child < 0 {
        bail!(
            "cannot fork the session supervisor: {}",
            std::io::Error::last_os_error()
        );
    }
    if child == 0 {
        // The session never reads the snapshots: freeing them would only write (copy) the
        // heap pages this child shares with the supervisor, just before its exec drops them.
        std::mem::forget(handback);
        drop(carried);
        return Ok(carry);
    }
    drop(carry);
    SESSION_CHILD.store(child, std::sync::atomic::Ordering::Relaxed);
    // The terminal sends SIGINT/SIGQUIT to the session itself (same process group): ignore
    // them here, as system(3) does. SIGTERM/SIGHUP sent to this pid are passed on.
    for sig in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: SIG_IGN takes no handler code.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    for sig in [libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only loads an atomic and calls kill, both async-signal-safe.
        unsafe { libc::signal(sig, forward_signal as *const () as libc::sighandler_t) };
    }
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer for the duration of the call.
        let r = unsafe { libc::waitpid(child, &mut status, 0) };
        if r == child {
            // Reaped: its pid may be reused from now on, so nothing more is passed on to it.
            SESSION_CHILD.store(0, std::sync::atomic::Ordering::Relaxed);
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    end_remaining_processes();
    crate::carry::carry_back(&carried);
    handback.finish("run");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    };
    std::process::exit(code)
}

/// Ends what is left of the session once its first process has exited: every process
/// reparented to this subreaper (a `setsid` daemon, a double fork) is killed and reaped, until
/// none is left, so nothing of the session can write the repository again after the
/// quarantine.
fn end_remaining_processes() {
    let children = format!("/proc/self/task/{}/children", std::process::id());
    // Until none is left, however long: each level of a chain of forks reaches this process
    // only when the one above it has died, and a count would let a deep enough chain outlive
    // the quarantine.
    loop {
        // Reap what has ended; no child left at all (ECHILD) is the common end, and needs no
        // look at the children file.
        let mut reaped = false;
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out-pointer; WNOHANG never blocks.
            let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if r > 0 {
                reaped = true;
                continue;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                return;
            }
            break;
        }
        let pids: Vec<libc::pid_t> = std::fs::read_to_string(&children)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        for &pid in &pids {
            // SAFETY: kill takes a pid and a signal; these are this process's own children.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if !reaped {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
