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

/// Sends descriptor `fd` (now the new description) under its number.
pub fn send(to: &OwnedFd, fd: RawFd) -> std::io::Result<()> {
    let number = fd.to_ne_bytes();
    let mut iov = libc::iovec {
        iov_base: number.as_ptr() as *mut libc::c_void,
        iov_len: number.len(),
    };
    // One descriptor's control message; u64 words keep `cmsghdr` aligned.
    let mut control = [0u64; 4];
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    assert!(space <= std::mem::size_of_val(&control));
    // SAFETY: an all-zero msghdr is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` names `control`, which has room for one header and one descriptor
    // (checked above), so CMSG_FIRSTHDR is non-null and CMSG_DATA points inside `control`;
    // `iov` and `number` outlive the sendmsg call.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        if libc::sendmsg(to.as_raw_fd(), &msg, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Once the session has ended: every description the child sent, each with the number it
/// had; the old description under that number here is moved to the new one's offset.
pub fn carry_back(from: &OwnedFd) {
    while let Some((number, new)) = receive(from) {
        // SAFETY: lseek takes descriptor numbers and integers; `new` is open and owned here,
        // `number` is the inherited descriptor of this process (a failure changes nothing).
        unsafe {
            let offset = libc::lseek(new.as_raw_fd(), 0, libc::SEEK_CUR);
            if offset >= 0 {
                libc::lseek(number, offset, libc::SEEK_SET);
            }
        }
    }
}

fn receive(from: &OwnedFd) -> Option<(RawFd, OwnedFd)> {
    let mut number = [0u8; std::mem::size_of::<RawFd>()];
    let mut iov = libc::iovec {
        iov_base: number.as_mut_ptr().cast(),
        iov_len: number.len(),
    };
    let mut control = [0u64; 4];
    // SAFETY: an all-zero msghdr is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` names buffers that outlive the call; MSG_DONTWAIT never blocks (the
    // sender has exited); MSG_CMSG_CLOEXEC keeps received descriptors out of any child.
    let n = unsafe {
        libc::recvmsg(
            from.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n != number.len() as isize {
        return None;
    }
    // SAFETY: recvmsg filled `control` up to msg_controllen; CMSG_FIRSTHDR/CMSG_DATA stay
    // inside it, and a header of SCM_RIGHTS with one descriptor's length holds one descriptor,
    // which this process now owns.
    let new = unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
            || (*header).cmsg_len as usize
                != libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize
        {
            return None;
        }
        OwnedFd::from_raw_fd(std::ptr::read_unaligned(
            libc::CMSG_DATA(header).cast::<RawFd>(),
        ))
    };
    Some((RawFd::from_ne_bytes(number), new))
}
