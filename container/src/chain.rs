//! Proof that the provider wrapper was started by the entrypoint chain.
//!
//! Before it drops privileges the entrypoint creates a Unix socket pair. The kernel stamps both
//! ends with the creator's credentials (`SO_PEERCRED`): the entrypoint's pid and, in ephemeral
//! sessions, uid 0. Only the child it spawns inherits one end, named by `EXECGUARD_CHAIN_FD`.
//!
//! The wrapper accepts the start only if that fd is a Unix socket whose peer is its own parent
//! *and* that parent is PID 1 or the socket was created by root. An orphan re-parented to
//! PID 1 has no such socket; a socket pair made by the agent carries the agent's pid and uid.
//! The wrapper closes the fd before it execs the provider, so nothing below it inherits it.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub const VAR_CHAIN_FD: &str = "EXECGUARD_CHAIN_FD";

/// The two ends of the chain socket.
pub struct ChainLink {
    /// Kept open by the entrypoint.
    pub entrypoint_end: OwnedFd,
    /// Inherited by the wrapper (its CLOEXEC flag is cleared in the child only).
    pub wrapper_end: OwnedFd,
}

/// Creates the socket pair (both ends close-on-exec).
pub fn create_link() -> io::Result<ChainLink> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes on success.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok(ChainLink {
        entrypoint_end: a,
        wrapper_end: b,
    })
}

/// Clears FD_CLOEXEC on `fd`; for use in a `pre_exec` hook (async-signal-safe).
pub fn inherit_in_child(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl(F_SETFD) takes an integer flag and touches only the fd table entry.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Why the wrapper refuses its start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainRefusal {
    #[error("{VAR_CHAIN_FD} is not set: not started by execguard-entrypoint")]
    Missing,
    #[error("{VAR_CHAIN_FD} is not a descriptor number")]
    Invalid,
    #[error("descriptor {fd} is not a Unix socket")]
    NotSocket { fd: RawFd },
    #[error(
        "the chain socket was made by pid {peer_pid} (uid {peer_uid}), not by the parent {parent}"
    )]
    WrongPeer {
        peer_pid: i32,
        peer_uid: u32,
        parent: i32,
    },
}

impl ChainRefusal {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "chain_missing",
            Self::Invalid => "chain_invalid",
            Self::NotSocket { .. } => "chain_not_socket",
            Self::WrongPeer { .. } => "chain_wrong_peer",
        }
    }
}

/// Peer credentials of a connected Unix socket.
fn peer_credentials(fd: &OwnedFd) -> Option<libc::ucred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a live ucred and `len` holds its exact size; the kernel writes at most
    // `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0).then_some(cred)
}

/// Accepts or refuses the start; consumes (closes) the chain fd either way when it is ours to
/// close. Returns the entrypoint's pid.
pub fn verify_started_by_entrypoint(
    value: Option<&OsStr>,
    parent: i32,
) -> Result<i32, ChainRefusal> {
    let raw = value
        .ok_or(ChainRefusal::Missing)?
        .to_str()
        .ok_or(ChainRefusal::Invalid)?;
    if raw.is_empty() || raw.len() > 9 || !raw.bytes().all(|c| c.is_ascii_digit()) {
        return Err(ChainRefusal::Invalid);
    }
    let fd: RawFd = raw.parse().map_err(|_| ChainRefusal::Invalid)?;
    if fd <= 2 {
        return Err(ChainRefusal::Invalid);
    }
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one stat struct into `st`, which has room for it.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return Err(ChainRefusal::NotSocket { fd });
    }
    // SAFETY: initialised by the successful fstat above.
    let st = unsafe { st.assume_init() };
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(ChainRefusal::NotSocket { fd });
    }
    // SAFETY: the fd is open (fstat succeeded) and was handed to this process for this check
    // only; taking ownership closes it when the check is done.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let cred = peer_credentials(&owned).ok_or(ChainRefusal::NotSocket { fd })?;
    drop(owned);
    if cred.pid <= 0 || cred.pid != parent || !(cred.pid == 1 || cred.uid == 0) {
        return Err(ChainRefusal::WrongPeer {
            peer_pid: cred.pid,
            peer_uid: cred.uid,
            parent,
        });
    }
    Ok(cred.pid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::IntoRawFd;

    #[test]
    fn missing_and_malformed_values_are_refused() {
        assert_eq!(
            verify_started_by_entrypoint(None, 1),
            Err(ChainRefusal::Missing)
        );
        for bad in ["", "x", "-3", "1", "2", "99999999999"] {
            assert_eq!(
                verify_started_by_entrypoint(Some(OsStr::new(bad)), 1),
                Err(ChainRefusal::Invalid),
                "{bad}"
            );
        }
        // A regular file is not a chain socket.
        let f = std::fs::File::open("/proc/self/status").unwrap();
        let fd = f.into_raw_fd();
        let got = verify_started_by_entrypoint(Some(OsStr::new(&fd.to_string())), 1);
        assert_eq!(got, Err(ChainRefusal::NotSocket { fd }));
        // SAFETY: `fd` came from into_raw_fd above and was not closed by the refused check.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }

    #[test]
    fn a_socket_pair_made_by_someone_else_is_refused() {
        // This test process made the pair: its pid is the peer, but it is not our parent.
        let link = create_link().unwrap();
        let fd = link.wrapper_end.into_raw_fd();
        let me = crate::sys::getpid();
        let got =
            verify_started_by_entrypoint(Some(OsStr::new(&fd.to_string())), crate::sys::getppid());
        assert!(
            matches!(got, Err(ChainRefusal::WrongPeer { peer_pid, .. }) if peer_pid == me),
            "{got:?}"
        );
    }

    #[test]
    fn a_pair_made_by_the_parent_as_root_is_accepted() {
        // Model the wrapper's view: "parent" is this process, which made the pair as root.
        assert_eq!(crate::sys::geteuid(), 0, "runs as root in CI");
        let link = create_link().unwrap();
        let fd = link.wrapper_end.into_raw_fd();
        let me = crate::sys::getpid();
        assert_eq!(
            verify_started_by_entrypoint(Some(OsStr::new(&fd.to_string())), me),
            Ok(me)
        );
    }
}
