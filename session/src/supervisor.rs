//! The supervisor: the process that stays outside the session (unsealed, unguarded) while
//! its first process runs, on the tini loop of [`crate::reaper`], and does its
//! [`Duties`] once that process has ended. The host chain forks it beside a session
//! ([`Supervisor::fork_session`]); the container's PID 1 is one ([`Supervisor::spawn`]).

use crate::handback::Handback;
use crate::reaper::{Init, InstallError, Stand};
use std::os::fd::OwnedFd;
use std::process::Command;

/// What the supervisor does besides passing signals on and reaping, once the session's first
/// process has ended, in the order [`Supervisor::finish`] does them. Each is a field, on or
/// off, for every profile alike: a new duty is a new field and its line in `finish`.
#[derive(Default)]
pub struct Duties {
    /// End every process the session left (a `setsid` daemon, a double fork), so that
    /// nothing of it outlives it to write the repositories again after the hand-back.
    pub end_the_rest: bool,
    /// Carry the inherited files' offsets back to the descriptions the session was given
    /// ([`crate::carry`]): its child sends the new ones over a channel made at the fork.
    pub carry_back: bool,
    /// Hand the workspace's repositories back, reviewed.
    pub handback: Option<Handback>,
    /// Print the session's refusals, read back from the audit log from this mark on
    /// ([`crate::summary`]): a refusal a child's captured stderr swallowed still reaches the
    /// person.
    pub summary: Option<crate::summary::Mark>,
    /// Clear the setuid/setgid bits and file capabilities the session left in what outlives
    /// it ([`crate::privileges`]).
    pub clear_privileges: Option<crate::privileges::Sweep>,
    /// Remove the session's own temp dir ([`crate::session_temp`]).
    pub remove_temp: Option<crate::session_temp::SessionTemp>,
    /// Serve the session's own network while it runs ([`crate::network`]): its listeners
    /// arrive over a channel made at the fork.
    pub network: Option<crate::network::Network>,
    /// Keep the session's audit: the writer bound before the session (its socket named by
    /// the policy) takes the records of its processes from the fork on, and writes the
    /// session's last record, signed, once everything else is done (`execguard_audit`).
    pub audit: Option<execguard_audit::writer::Writer>,
}

/// The session's ends of the channels made at the fork.
#[derive(Debug, Default)]
pub struct SessionEnds {
    /// The carry channel's ([`Duties::carry_back`]).
    pub carry: Option<OwnedFd>,
    /// Where the seal sends the network's listeners ([`Duties::network`]).
    pub network: Option<OwnedFd>,
}

/// A step of the supervisor that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error("failed to make the session's channel: {0}")]
    Channel(#[source] std::io::Error),
    #[error("failed to fork the session supervisor: {0}")]
    Fork(#[source] std::io::Error),
}

/// An installed supervisor: signals blocked, a subreaper unless PID 1, its duties known.
pub struct Supervisor {
    init: Init,
    duties: Duties,
    /// The supervisor's end of the carry channel.
    carried: Option<OwnedFd>,
    /// The audit writer, once it serves.
    audit: Option<execguard_audit::writer::Serving>,
}

impl Supervisor {
    /// Blocks the asynchronous signals and becomes a subreaper (unless PID 1): call before
    /// the session's first process is made, so no signal or orphan is missed.
    pub fn install(stand: Stand, duties: Duties) -> Result<Self, SupervisorError> {
        Ok(Self {
            init: Init::install(stand)?,
            duties,
            carried: None,
            audit: None,
        })
    }

    /// The host chain: forks. The child returns, becomes the session, with its ends of the
    /// carry and network channels when the supervisor has those duties; this process
    /// supervises it and exits with its status, never returning.
    ///
    /// # Safety
    /// The caller is single-threaded (the child goes on running Rust code).
    pub unsafe fn fork_session(mut self) -> Result<SessionEnds, SupervisorError> {
        let channel = if self.duties.carry_back {
            Some(crate::carry::channel().map_err(SupervisorError::Channel)?)
        } else {
            None
        };
        let network = match self.duties.network.take() {
            Some(duty) => {
                let (supervisor_end, session_end) =
                    std::os::unix::net::UnixStream::pair().map_err(SupervisorError::Channel)?;
                Some((
                    duty,
                    OwnedFd::from(supervisor_end),
                    OwnedFd::from(session_end),
                ))
            }
            None => None,
        };
        // SAFETY: the caller promises a single thread.
        let child = unsafe { self.init.fork() }.map_err(SupervisorError::Fork)?;
        if child == 0 {
            // The session never reads the hand-back's record: freeing it would only write
            // (copy) the heap pages this child shares with the supervisor, just before its
            // exec drops them.
            std::mem::forget(self.duties.handback.take());
            // The writer is the supervisor's: the child drops its copy (the listening socket
            // closes at the exec anyway) and writes nothing of it.
            std::mem::forget(self.duties.audit.take());
            return Ok(SessionEnds {
                carry: channel.map(|(_, session_end)| session_end),
                network: network.map(|(_, _, session_end)| session_end),
            });
        }
        self.carried = channel.map(|(supervisor_end, _)| supervisor_end);
        self.serve_audit(Some(child as u32));
        // Threads from here on: the session's network is served beside the loop (the signal
        // mask blocked at install holds for them too, so signals still reach the loop).
        if let Some((duty, supervisor_end, _)) = network {
            crate::network::serve(supervisor_end, duty);
        }
        let code = self.wait(child);
        self.finish();
        std::process::exit(code)
    }

    /// The container chain: spawns `cmd` in a process group of its own. Returns its pid.
    pub fn spawn(&mut self, cmd: &mut Command) -> std::io::Result<libc::pid_t> {
        let pid = self.init.spawn(cmd)?;
        self.serve_audit(Some(pid as u32));
        Ok(pid)
    }

    /// Starts the audit writer's thread (after the fork: a forked child of a threaded process
    /// may not run Rust). A writer that cannot start a thread takes no record: every sender
    /// then refuses its exec (`audit_unwritable`), said here once.
    fn serve_audit(&mut self, session_pid: Option<u32>) {
        if let Some(writer) = self.duties.audit.take() {
            match writer.serve(session_pid) {
                Ok(serving) => self.audit = Some(serving),
                Err(e) => eprintln!(
                    "execguard: audit_unwritable: the audit writer did not start ({e}): every record of this session is refused"
                ),
            }
        }
    }

    /// Passes signals on and reaps until `child` has ended; its exit code (1 when the loop
    /// itself failed, said on stderr).
    pub fn wait(&self, child: libc::pid_t) -> i32 {
        match self.init.wait_and_forward(child) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("execguard: failed to wait for the session: {e}");
                1
            }
        }
    }

    /// The duties, in order, once the session's first process has ended.
    pub fn finish(self) {
        if self.duties.end_the_rest {
            end_remaining_processes();
        }
        if let Some(carried) = &self.carried {
            crate::carry::carry_back(carried);
        }
        if let Some(handback) = &self.duties.handback {
            handback.finish();
        }
        if let Some(sweep) = &self.duties.clear_privileges {
            sweep.run();
        }
        if let Some(temp) = &self.duties.remove_temp {
            temp.remove();
        }
        // Last of the writers: the hand-back's and the sweep's records are the session's too.
        // A writer that never served (the first process could not be started) still ends
        // its session's chain.
        let ended = match (self.audit, self.duties.audit) {
            (Some(serving), _) => Some(serving.finish(None)),
            (None, Some(writer)) => Some(writer.finish_unstarted()),
            (None, None) => None,
        };
        if let Some(Err(e)) = ended {
            eprintln!(
                "execguard: audit_unwritable: the session's last audit record could not be written: {e}"
            );
        }
        if let Some(mark) = &self.duties.summary {
            crate::summary::Summary::since(mark).print(mark.log());
        }
    }
}

/// Ends what is left of the session once its first process has exited: as PID 1 every other
/// process of the pid namespace, and every process reparented to this subreaper (a `setsid`
/// daemon, a double fork) is killed and reaped, until none is left, so nothing of the session
/// can write the repository again after the hand-back.
fn end_remaining_processes() {
    if std::process::id() == 1 {
        // Only as PID 1: elsewhere kill(-1) would reach processes outside the container.
        // SAFETY: kill(-1) from PID 1 signals every other process of its pid namespace.
        unsafe { libc::kill(-1, libc::SIGKILL) };
    }
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
