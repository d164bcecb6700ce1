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
pub fn make(sys: &dyn crate::sys::SealSys, plan: &NetworkPlan) -> Result<NetworkReport, SealError> {
    sys.unshare(libc::CLONE_NEWNET)
        .map_err(|e| net_err("unshare(CLONE_NEWNET)", e))?;
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
    crate::fd_passing::send(plan.channel, b"n", &fds, libc::MSG_NOSIGNAL)
        .map_err(|e| net_err("send the listeners", e))?;
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

/// The supervisor's side of the listeners' message: up to `max` descriptors, or none when
/// the session ended (or sealed no network) without sending any.
pub fn receive_fds(channel: RawFd, max: usize) -> std::io::Result<Vec<std::os::fd::OwnedFd>> {
    loop {
        match crate::fd_passing::receive(channel, &mut [0u8; 1], max, 0) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            received => return received.map(|(_, fds)| fds),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::RecordingSealSys;

    /// A kernel that gives the session no network namespace refuses the start, typed, before
    /// any listener is made (the caller names the way on: `--allow-host-network`).
    #[test]
    fn no_network_namespace_is_a_typed_refusal() {
        for errno in [libc::EPERM, libc::EINVAL, libc::ENOSPC] {
            let sys = RecordingSealSys {
                refuse: vec![("unshare(CLONE_NEWNET)", errno)],
                ..Default::default()
            };
            let plan = NetworkPlan {
                channel: -1,
                host_ports: vec![8080],
            };
            let e = make(&sys, &plan).unwrap_err();
            assert_eq!(e.code(), "network_unavailable");
            assert!(e.to_string().contains("unshare(CLONE_NEWNET): "), "{e}");
            assert_eq!(sys.calls(), ["unshare(CLONE_NEWNET)"]);
        }
    }
}
