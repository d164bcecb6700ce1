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
    let mut iov = libc::iovec {
        iov_base: numbers.as_ptr() as *mut libc::c_void,
        iov_len: numbers.len(),
    };
    let payload = std::mem::size_of_val(fds) as u32;
    let mut control = Vec::new();
    let msg = message(&mut iov, &mut control, payload);
    // SAFETY: `msg` names `control`, which has room for one header and `fds` (CMSG_SPACE),
    // so CMSG_FIRSTHDR is non-null and CMSG_DATA points inside `control`; `iov`, `numbers`
    // and `control` outlive the sendmsg call.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(payload) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr(),
            libc::CMSG_DATA(header).cast::<RawFd>(),
            fds.len(),
        );
        if libc::sendmsg(to.as_raw_fd(), &msg, libc::MSG_DONTWAIT) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A message of the one buffer `iov` names, with `control` made room for descriptors of
/// `payload` bytes (in u64 words, which keep `cmsghdr` aligned); valid while both live.
fn message(iov: &mut libc::iovec, control: &mut Vec<u64>, payload: u32) -> libc::msghdr {
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(payload) } as usize;
    control.resize(space.div_ceil(8), 0);
    // SAFETY: an all-zero msghdr is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    msg
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
    let mut iov = libc::iovec {
        iov_base: numbers.as_mut_ptr().cast(),
        iov_len: numbers.len(),
    };
    let mut control = Vec::new();
    let mut msg = message(&mut iov, &mut control, (PER_MESSAGE * FD) as u32);
    // SAFETY: `msg` names buffers that outlive the call; MSG_DONTWAIT never blocks (the
    // sender has exited); MSG_CMSG_CLOEXEC keeps received descriptors out of any child.
    let n = unsafe {
        libc::recvmsg(
            from.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n <= 0 || !(n as usize).is_multiple_of(FD) {
        return None;
    }
    let count = n as usize / FD;
    // SAFETY: recvmsg filled `control` up to msg_controllen; CMSG_FIRSTHDR/CMSG_DATA stay
    // inside it, and an SCM_RIGHTS header of `count` descriptors' length holds `count`
    // descriptors, which this process now owns.
    let received: Vec<OwnedFd> = unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
            || (*header).cmsg_len as usize != libc::CMSG_LEN((count * FD) as u32) as usize
        {
            return None;
        }
        let data = libc::CMSG_DATA(header).cast::<RawFd>();
        (0..count)
            .map(|i| OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))))
            .collect()
    };
    let numbers = numbers[..n as usize]
        .chunks_exact(FD)
        .map(|b| RawFd::from_ne_bytes(b.try_into().unwrap_or_default()));
    Some(numbers.zip(received).collect())
}
