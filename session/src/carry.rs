//! The offsets of the files a strict session inherits, carried back to the descriptions it was
//! given. The session's child opens each inherited regular file again through the session's
//! mounts (`session::reopen_inherited`): the description it was handed leads through the old,
//! executable mount, where a file the session rewrites by its name could be mapped executable.
//! The new description no longer shares its offset with the processes outside, so the child
//! sends it here (`SCM_RIGHTS`) and the supervisor, once the session has ended, moves the old
//! description to where the session left the new one: `(execguard run -- head -n1; cat) < f`
//! and `(execguard run -- echo a; echo b) > f` go on where the session stopped.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Both ends, made before the supervisor forks.
pub fn channel() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid out-array of two descriptors for the duration of the call.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: socketpair succeeded: both are open descriptors owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The most descriptors one message carries (the kernel takes up to 253).
const PER_MESSAGE: usize = 250;

/// Sends descriptors `fds` (each now a new description) under their numbers, without
/// waiting: the supervisor reads them only once the session has ended, so a full socket
/// fails the start rather than leaving both waiting on each other.
pub fn send(to: &OwnedFd, fds: &[RawFd]) -> std::io::Result<()> {
    for batch in fds.chunks(PER_MESSAGE) {
        send_batch(to, batch)?;
    }
    Ok(())
}

fn send_batch(to: &OwnedFd, fds: &[RawFd]) -> std::io::Result<()> {
    let numbers: Vec<u8> = fds.iter().flat_map(|fd| fd.to_ne_bytes()).collect();
    execguard_seal::fd_passing::send(to.as_raw_fd(), &numbers, fds, libc::MSG_DONTWAIT)
}

/// Once the session has ended: every description the child sent, each with the number it
/// had; the old description under that number here is moved to the new one's offset.
pub fn carry_back(from: &OwnedFd) {
    while let Some(batch) = receive(from) {
        for (number, new) in batch {
            // SAFETY: lseek takes descriptor numbers and integers; `new` is open and owned
            // here, `number` is the inherited descriptor of this process (a failure changes
            // nothing).
            unsafe {
                let offset = libc::lseek(new.as_raw_fd(), 0, libc::SEEK_CUR);
                if offset >= 0 {
                    libc::lseek(number, offset, libc::SEEK_SET);
                }
            }
        }
    }
}

fn receive(from: &OwnedFd) -> Option<Vec<(RawFd, OwnedFd)>> {
    const FD: usize = std::mem::size_of::<RawFd>();
    let mut numbers = [0u8; PER_MESSAGE * FD];
    // MSG_DONTWAIT never blocks: the sender has exited.
    let (n, received) = execguard_seal::fd_passing::receive(
        from.as_raw_fd(),
        &mut numbers,
        PER_MESSAGE,
        libc::MSG_DONTWAIT,
    )
    .ok()?;
    // One number per descriptor, or the message is not one this module sent (the descriptors
    // close with `received`).
    if n == 0 || !n.is_multiple_of(FD) || received.len() != n / FD {
        return None;
    }
    let numbers = numbers[..n]
        .chunks_exact(FD)
        .map(|b| RawFd::from_ne_bytes(b.try_into().unwrap_or_default()));
    Some(numbers.zip(received).collect())
}
