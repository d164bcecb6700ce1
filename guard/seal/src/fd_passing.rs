//! Descriptors passed over a UNIX socket (`SCM_RIGHTS`): the seal's listeners to the
//! supervisor (`network`), and a strict session's reopened inherited files back to it
//! (`execguard_session::carry`). One message builder, so both keep `cmsghdr` aligned.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Sends `payload` with `fds` in one message; `flags` go to sendmsg(2).
pub fn send(
    channel: RawFd,
    payload: &[u8],
    fds: &[RawFd],
    flags: libc::c_int,
) -> std::io::Result<()> {
    let bytes = std::mem::size_of_val(fds) as u32;
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    let mut control = Vec::new();
    let msg = message(&mut iov, &mut control, bytes);
    // SAFETY: `msg` names `control`, which has room for one header and `fds` (CMSG_SPACE), so
    // CMSG_FIRSTHDR is non-null and CMSG_DATA points inside `control`; sendmsg only reads
    // `payload` through `iov`, and `iov`, `payload` and `control` outlive the call.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(bytes) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr(),
            libc::CMSG_DATA(header).cast::<RawFd>(),
            fds.len(),
        );
        if libc::sendmsg(channel, &msg, flags) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives one message into `payload` with up to `max` descriptors (close-on-exec, owned
/// here); `flags` go to recvmsg(2) beside `MSG_CMSG_CLOEXEC`. Returns the payload's length
/// and every descriptor the message carried.
pub fn receive(
    channel: RawFd,
    payload: &mut [u8],
    max: usize,
    flags: libc::c_int,
) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    let mut control = Vec::new();
    let mut msg = message(
        &mut iov,
        &mut control,
        (max * std::mem::size_of::<RawFd>()) as u32,
    );
    // SAFETY: `msg` names buffers that outlive the call; MSG_CMSG_CLOEXEC keeps received
    // descriptors out of any child.
    let n = unsafe { libc::recvmsg(channel, &mut msg, flags | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `control` up to msg_controllen; CMSG_FIRSTHDR/NXTHDR stay
    // within it, and an SCM_RIGHTS header's data is an array of descriptors now ours.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&msg);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<RawFd>();
                let len = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            header = libc::CMSG_NXTHDR(&msg, header);
        }
    }
    Ok((n as usize, fds))
}

/// A message of the one buffer `iov` names, with `control` made room for descriptors of
/// `bytes` bytes (in u64 words, which keep `cmsghdr` aligned); valid while both live.
fn message(iov: &mut libc::iovec, control: &mut Vec<u64>, bytes: u32) -> libc::msghdr {
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(bytes) } as usize;
    control.resize(space.div_ceil(8), 0);
    // SAFETY: an all-zero msghdr is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    msg
}
