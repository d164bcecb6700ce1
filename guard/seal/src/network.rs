//! The session's own network (docs/session.md, *Network*): a network namespace with only `lo`,
//! so neither the host's loopback services nor its abstract UNIX sockets are reachable from
//! the session, and no tun device is needed (`/dev/net/tun` is 0600 on this machine class, so
//! slirp4netns and pasta work for root alone, and slirp4netns costs 15-27 ms to start).
//!
//! Made in the seal's namespace, right after the user and mount namespaces: the listeners the
//! session reaches the outside through are bound here, inside the new namespace, and handed
//! to the supervisor (outside it) over a socket pair made before the fork. A socket keeps the
//! namespace it was made in, so the supervisor accepts inside and connects outside
//! (`execguard_session::network`): an HTTP proxy on `127.0.0.1:PORT`, and for each
//! `--host-port N` a listener on `127.0.0.1:N` forwarded to the host's `127.0.0.1:N`.

use crate::SealError;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};

/// Test hook: behave as a kernel that refuses a network namespace (test builds only).
#[cfg(any(test, feature = "test-hooks"))]
pub const NO_NETWORK_ENV: &str = "EXECGUARD_TEST_NO_NETWORK_NAMESPACE";

/// The session's network, as the caller asks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkPlan {
    /// Where the listeners go (`SCM_RIGHTS`): the proxy's first, then one per host port.
    pub channel: RawFd,
    /// Ports of the host's loopback the session reaches as its own `127.0.0.1:N`.
    pub host_ports: Vec<u16>,
}

/// What was made, for the enforcement report and the session's environment.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetworkReport {
    /// The proxy's port on the session's `127.0.0.1`.
    pub proxy_port: u16,
    pub host_ports: Vec<u16>,
}

fn net_err(step: &str, e: std::io::Error) -> SealError {
    SealError::Network {
        detail: format!("{step}: {e}"),
    }
}

/// Enters a new network namespace, brings its `lo` up, binds the listeners in it and sends
/// them over `plan.channel`. This process holds `CAP_NET_ADMIN` over the namespace: root
/// always, a non-root user as the owner of the user namespace it just made.
pub fn make(plan: &NetworkPlan) -> Result<NetworkReport, SealError> {
    #[cfg(any(test, feature = "test-hooks"))]
    if std::env::var_os(NO_NETWORK_ENV).is_some() {
        return Err(SealError::Network {
            detail: format!("unshare(CLONE_NEWNET): {NO_NETWORK_ENV} is set (test hook)"),
        });
    }
    // SAFETY: unshare takes only flags; it affects this process alone.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(net_err(
            "unshare(CLONE_NEWNET)",
            std::io::Error::last_os_error(),
        ));
    }
    loopback_up()?;
    let proxy = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| net_err("bind", e))?;
    let proxy_port = proxy
        .local_addr()
        .map_err(|e| net_err("getsockname", e))?
        .port();
    let mut listeners = vec![proxy];
    for &port in &plan.host_ports {
        listeners.push(
            TcpListener::bind((Ipv4Addr::LOCALHOST, port))
                .map_err(|e| net_err(&format!("bind 127.0.0.1:{port}"), e))?,
        );
    }
    let fds: Vec<RawFd> = listeners.iter().map(AsRawFd::as_raw_fd).collect();
    send_fds(plan.channel, &fds).map_err(|e| net_err("send the listeners", e))?;
    // This process's copies close here: the supervisor's are the only ones left.
    drop(listeners);
    Ok(NetworkReport {
        proxy_port,
        host_ports: plan.host_ports.clone(),
    })
}

/// `ip link set lo up`: a new namespace's `lo` is down.
fn loopback_up() -> Result<(), SealError> {
    let sock =
        std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(|e| net_err("socket", e))?;
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the flags of the interface named in `req` into it.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } != 0 {
        return Err(net_err("SIOCGIFFLAGS lo", std::io::Error::last_os_error()));
    }
    // SAFETY: the flags member is the one SIOCGIFFLAGS set.
    unsafe { req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short };
    // SAFETY: SIOCSIFFLAGS sets the flags in `req` on the interface it names.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } != 0 {
        return Err(net_err("SIOCSIFFLAGS lo", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Sends `fds` over the UNIX socket `channel` in one message (`SCM_RIGHTS`).
fn send_fds(channel: RawFd, fds: &[RawFd]) -> std::io::Result<()> {
    let bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(bytes as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut payload = [b'n'];
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: msghdr is plain data; all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` points at `control`, which has room for one header and `bytes` of data
    // (CMSG_SPACE), so the first header exists and its data holds the descriptors.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(bytes as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(cmsg), bytes);
    }
    // SAFETY: `msg` and everything it points at live through the call.
    if unsafe { libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The supervisor's side of [`send_fds`]: up to `max` descriptors, or none when the session
/// ended (or sealed no network) without sending any.
pub fn receive_fds(channel: RawFd, max: usize) -> std::io::Result<Vec<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    let bytes = max * std::mem::size_of::<RawFd>();
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(bytes as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut payload = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: msghdr is plain data; all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    let n = loop {
        // SAFETY: `msg` and everything it points at live through the call.
        let n = unsafe { libc::recvmsg(channel, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break n;
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut out = Vec::new();
    // SAFETY: the kernel filled `control` up to msg_controllen; CMSG_FIRSTHDR/NXTHDR stay
    // within it, and an SCM_RIGHTS header's data is an array of descriptors now ours.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let len = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    out.push(std::os::fd::OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(out)
}
