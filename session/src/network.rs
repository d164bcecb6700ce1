//! The supervisor's side of the session's own network (docs/session.md, *Network*): the
//! listeners the seal bound inside the session's network namespace
//! ([`execguard_seal::network`]) arrive here, outside it, and are served on threads of their
//! own while the supervisor's loop waits for the session:
//!
//! - an HTTP proxy (`CONNECT host:port` for https and any TCP; an absolute-URI request for
//!   plain http), the session's `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`. Each name is resolved
//!   once, here, and only an address that passed the check is connected to (no DNS
//!   rebinding): the host's loopback, link-local addresses (cloud metadata among them), the
//!   unspecified and multicast addresses, every address of the host's own interfaces and the
//!   networks of its bridges (an interface with no default route: containers, VMs) are
//!   refused. Each refusal is answered `403` with its reason, said on stderr once per
//!   destination, and recorded in the audit log;
//! - for each `--host-port N`, a listener on the session's `127.0.0.1:N` forwarded to the
//!   host's `127.0.0.1:N`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The stable reason code of a destination the proxy refuses.
pub const REFUSED: &str = "network_refused";
/// What to do about [`REFUSED`].
pub const WAY_FORWARD: &str = "to proceed: declare a port of the host's loopback with --host-port N (the session reaches it as its own 127.0.0.1:N), or run with --allow-host-network";

/// The network duty: what the supervisor serves for the session.
#[derive(Clone, Debug, Default)]
pub struct Network {
    pub host_ports: Vec<u16>,
    /// Where refusals are recorded: the log, or the kept audit's writer (its socket).
    pub audit_log: Option<PathBuf>,
    pub profile: Option<execguard_policy::Profile>,
}

/// The session's proxy variables for `port`. The operator's `NO_PROXY` goes (a name in it
/// would be tried directly, and nothing outside is reachable directly); the session's own
/// loopback takes its place: a test server the session starts on `localhost`, or a declared
/// host port, is reached directly inside the session's namespace, never the host's.
pub fn apply_env(env: &mut Vec<(std::ffi::OsString, std::ffi::OsString)>, port: u16) {
    const NAMES: [&str; 8] = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ];
    env.retain(|(k, _)| !NAMES.iter().any(|n| k == n));
    let url = format!("http://127.0.0.1:{port}");
    for name in &NAMES[..6] {
        env.push((name.into(), url.clone().into()));
    }
    for name in &NAMES[6..] {
        env.push((name.into(), "localhost,127.0.0.1,::1".into()));
    }
}

/// The host as the proxy checks a destination against it: its own addresses, and the networks
/// of its interfaces that carry no default route (a bridge to containers or VMs: `docker0`,
/// `br-*`, `virbr0`), whose members are services of this host.
#[derive(Clone, Debug, Default)]
pub struct Host {
    pub own: Vec<IpAddr>,
    /// `(address, netmask)` of each such network.
    pub bridged: Vec<(IpAddr, IpAddr)>,
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn masked(ip: IpAddr, mask: IpAddr) -> Option<u128> {
    match (ip, mask) {
        (IpAddr::V4(a), IpAddr::V4(m)) => Some((u32::from(a) & u32::from(m)) as u128),
        (IpAddr::V6(a), IpAddr::V6(m)) => Some(u128::from(a) & u128::from(m)),
        _ => None,
    }
}

/// Why `ip` is refused, or `None`.
pub fn refusal(ip: IpAddr, host: &Host) -> Option<&'static str> {
    let ip = canonical(ip);
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    if ip.is_loopback() {
        Some("the host's loopback")
    } else if ip.is_unspecified() {
        Some("the unspecified address (the host itself)")
    } else if link_local {
        Some("a link-local address")
    } else if ip.is_multicast() || broadcast {
        Some("a multicast or broadcast address")
    } else if host.own.contains(&ip) {
        Some("an address of the host's own")
    } else if host
        .bridged
        .iter()
        .any(|&(net, mask)| masked(ip, mask).is_some_and(|m| Some(m) == masked(net, mask)))
    {
        Some("on a network of the host's own bridges (its containers and VMs)")
    } else {
        None
    }
}

/// The interfaces that carry a default route (`/proc/net/route`, `/proc/net/ipv6_route`).
fn default_route_interfaces() -> Vec<String> {
    let mut out = Vec::new();
    for line in std::fs::read_to_string("/proc/net/route")
        .unwrap_or_default()
        .lines()
        .skip(1)
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 7 && f[1] == "00000000" && f[7] == "00000000" {
            out.push(f[0].to_string());
        }
    }
    for line in std::fs::read_to_string("/proc/net/ipv6_route")
        .unwrap_or_default()
        .lines()
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 10 && f[0].bytes().all(|b| b == b'0') && f[1] == "00" && f[9] != "lo" {
            out.push(f[9].to_string());
        }
    }
    out
}

fn sockaddr_ip(addr: *const libc::sockaddr) -> Option<IpAddr> {
    if addr.is_null() {
        return None;
    }
    // SAFETY: a non-null sockaddr from getifaddrs is of the family it names, live until
    // freeifaddrs (the caller's list is still held).
    unsafe {
        match (*addr).sa_family as libc::c_int {
            libc::AF_INET => {
                let a = &*(addr as *const libc::sockaddr_in);
                Some(IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes()))
            }
            libc::AF_INET6 => {
                let a = &*(addr as *const libc::sockaddr_in6);
                Some(IpAddr::from(a.sin6_addr.s6_addr))
            }
            _ => None,
        }
    }
}

/// The host's interfaces, now.
fn host_now() -> Host {
    let mut host = Host::default();
    let defaults = default_route_interfaces();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `head`, freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return host;
    }
    let mut at = head;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned, live until freeifaddrs.
        let (addr, mask, name, next) = unsafe {
            let n = &*at;
            let name = std::ffi::CStr::from_ptr(n.ifa_name)
                .to_string_lossy()
                .into_owned();
            (
                sockaddr_ip(n.ifa_addr),
                sockaddr_ip(n.ifa_netmask),
                name,
                n.ifa_next,
            )
        };
        if let Some(addr) = addr {
            host.own.push(addr);
            let bridged = name != "lo" && !defaults.contains(&name);
            if let (true, Some(mask)) = (bridged, mask) {
                host.bridged.push((addr, mask));
            }
        }
        at = next;
    }
    // SAFETY: frees the list getifaddrs made, once.
    unsafe { libc::freeifaddrs(head) };
    host
}

/// What the proxy threads share: who has been told of which refusal.
struct Shared {
    duty: Network,
    told: Mutex<Vec<String>>,
}

impl Shared {
    fn refuse(&self, dest: &str, why: &str) {
        let mut told = self.told.lock().unwrap_or_else(|e| e.into_inner());
        if told.iter().any(|d| d == dest) {
            return;
        }
        told.push(dest.to_string());
        drop(told);
        eprintln!("execguard: {REFUSED}: {dest} is {why}: {WAY_FORWARD}");
        if let Some(log) = &self.duty.audit_log {
            use std::os::unix::ffi::OsStrExt;
            let path = format!("{dest} ({why})");
            let record = execguard_os::audit::stamp(
                "network",
                "connect",
                execguard_policy::audit::Decision::Deny,
                REFUSED,
                self.duty.profile,
                path.as_bytes(),
                dest.as_bytes(),
            );
            let _ = execguard_os::audit::append_exact(log.as_os_str().as_bytes(), &record);
        }
    }
}

/// Receives the listeners over `channel` (the proxy's first, then one per host port, as
/// [`execguard_seal::network::make`] sends them) and serves them on threads. Returns at once;
/// a session that sealed no network sends none, and nothing is served.
pub fn serve(channel: OwnedFd, duty: Network) {
    std::thread::spawn(move || {
        let Ok(fds) =
            execguard_seal::network::receive_fds(channel.as_raw_fd(), 1 + duty.host_ports.len())
        else {
            return;
        };
        drop(channel);
        let mut fds = fds.into_iter();
        let Some(proxy) = fds.next() else {
            return;
        };
        let ports = duty.host_ports.clone();
        let shared = Arc::new(Shared {
            duty,
            told: Mutex::new(Vec::new()),
        });
        for (fd, port) in fds.zip(ports) {
            let listener = TcpListener::from(fd);
            std::thread::spawn(move || {
                for inside in listener.incoming().flatten() {
                    std::thread::spawn(move || {
                        if let Ok(outside) =
                            TcpStream::connect((std::net::Ipv4Addr::LOCALHOST, port))
                        {
                            splice(inside, outside);
                        }
                    });
                }
            });
        }
        let listener = TcpListener::from(proxy);
        for inside in listener.incoming().flatten() {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let _ = proxy_one(inside, &shared);
            });
        }
    });
}

/// Copies both ways until each side has ended. Without Nagle's algorithm on either side: a
/// relay that holds back a small write until the last one is acknowledged meets the peer's
/// delayed acknowledgement, and each TLS round trip waited 40 ms for it (a request through
/// the proxy took 150 ms instead of 70).
fn splice(a: TcpStream, b: TcpStream) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    let (Ok(mut a2), Ok(mut b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let back = std::thread::spawn(move || {
        let _ = relay(&mut b2, &mut a2);
        let _ = a2.shutdown(Shutdown::Write);
    });
    let (mut a, mut b) = (a, b);
    let _ = relay(&mut a, &mut b);
    let _ = b.shutdown(Shutdown::Write);
    let _ = back.join();
}

/// Copies `from` to `to` until `from` ends, acknowledging what arrives at once: a relay that
/// only reads is a receiver that never answers, so the kernel delays its acknowledgement and a
/// sender holding back its next segment until then (Nagle's algorithm) waited 40 ms per
/// response (pip's request through the proxy took 85 ms instead of 25). `TCP_QUICKACK` is
/// not sticky: it is set again after each read.
fn relay(from: &mut TcpStream, to: &mut TcpStream) -> std::io::Result<()> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let one: libc::c_int = 1;
        // SAFETY: `from` owns an open TCP socket for the call; the option value is a live
        // c_int of the size passed.
        unsafe {
            libc::setsockopt(
                from.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_QUICKACK,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        to.write_all(&buf[..n])?;
    }
}

fn answer(s: &mut TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}\n",
        text.len() + 1
    )
}

/// One proxy connection: the request's head, the check, the connection, then bytes both ways.
fn proxy_one(inside: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut reader = BufReader::new(inside.try_clone()?);
    let mut line = String::new();
    // A request line of more than 8 KiB is no client's.
    reader.by_ref().take(8192).read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target, version) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let mut head = Vec::new();
    loop {
        let mut h = String::new();
        if reader.by_ref().take(8192).read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        head.push(h);
        if head.len() > 200 {
            break;
        }
    }
    let mut out = inside;
    let (host, port, rest) = if method.eq_ignore_ascii_case("CONNECT") {
        match split_host_port(target, 443) {
            Some((h, p)) => (h, p, None),
            None => return answer(&mut out, "400 Bad Request", "execguard: CONNECT host:port"),
        }
    } else if let Some(after) = target.strip_prefix("http://") {
        let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
        match split_host_port(authority, 80) {
            Some((h, p)) => (h, p, Some(if path.is_empty() { "/" } else { path })),
            None => return answer(&mut out, "400 Bad Request", "execguard: bad URL"),
        }
    } else {
        return answer(
            &mut out,
            "400 Bad Request",
            "execguard: the session's proxy takes CONNECT host:port or an http:// URL",
        );
    };
    let dest = format!("{host}:{port}");
    let addrs: Vec<SocketAddr> = match (host.as_str(), port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            return answer(
                &mut out,
                "502 Bad Gateway",
                &format!("execguard: {dest}: {e}"),
            )
        }
    };
    let host_now = host_now();
    let mut why = None;
    let allowed: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| match refusal(a.ip(), &host_now) {
            // A declared host port is the session's through the proxy too.
            Some(_) if a.ip().is_loopback() && shared.duty.host_ports.contains(&port) => true,
            Some(w) => {
                why = why.or(Some(w));
                false
            }
            None => true,
        })
        .collect();
    if allowed.is_empty() {
        let why = why.unwrap_or("not resolved");
        shared.refuse(&dest, why);
        return answer(
            &mut out,
            "403 Forbidden",
            &format!("execguard: {REFUSED}: {dest} is {why}: {WAY_FORWARD}"),
        );
    }
    // Only what was checked is connected to.
    let upstream = match TcpStream::connect(&allowed[..]) {
        Ok(s) => s,
        Err(e) => {
            return answer(
                &mut out,
                "502 Bad Gateway",
                &format!("execguard: {dest}: {e}"),
            )
        }
    };
    let mut up = upstream;
    match rest {
        None => out.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?,
        Some(path) => {
            let mut req = format!("{method} {path} {version}\r\n");
            for h in &head {
                let name = h.split(':').next().unwrap_or("").trim();
                if name.eq_ignore_ascii_case("proxy-connection")
                    || name.eq_ignore_ascii_case("proxy-authorization")
                {
                    continue;
                }
                req.push_str(h);
            }
            req.push_str("\r\n");
            up.write_all(req.as_bytes())?;
        }
    }
    // What the client sent beyond the head (a body's start, TLS's first bytes) goes first.
    let early = reader.buffer().to_vec();
    if !early.is_empty() {
        up.write_all(&early)?;
    }
    splice(out, up);
    Ok(())
}

/// `host:port`, `[v6]:port` or `host` (the default port).
fn split_host_port(s: &str, default: u16) -> Option<(String, u16)> {
    if let Some(v6) = s.strip_prefix('[') {
        let (h, rest) = v6.split_once(']')?;
        let port = match rest.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if rest.is_empty() => default,
            None => return None,
        };
        return Some((h.to_string(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => Some((h.to_string(), p.parse().ok()?)),
        Some(_) => None,
        None if !s.is_empty() => Some((s.to_string(), default)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_and_its_neighbours_are_refused_the_internet_is_not() {
        let own = Host {
            own: vec!["10.1.2.3".parse().unwrap()],
            bridged: vec![(
                "172.17.0.1".parse().unwrap(),
                "255.255.0.0".parse().unwrap(),
            )],
        };
        for refused in [
            "127.0.0.1",
            "127.1.2.3",
            "::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
            "::",
            "169.254.169.254",
            "fe80::1",
            "224.0.0.1",
            "255.255.255.255",
            "10.1.2.3",
            "::ffff:10.1.2.3",
            "172.17.0.2",
            "172.17.255.9",
        ] {
            assert!(
                refusal(refused.parse().unwrap(), &own).is_some(),
                "{refused}"
            );
        }
        for allowed in ["104.16.0.1", "2606:4700::1", "10.1.2.4", "172.18.0.2"] {
            assert_eq!(refusal(allowed.parse().unwrap(), &own), None, "{allowed}");
        }
    }

    #[test]
    fn targets_name_a_host_and_a_port() {
        assert_eq!(
            split_host_port("registry.npmjs.org:443", 1),
            Some(("registry.npmjs.org".into(), 443))
        );
        assert_eq!(split_host_port("[::1]:22", 1), Some(("::1".into(), 22)));
        assert_eq!(
            split_host_port("example.org", 80),
            Some(("example.org".into(), 80))
        );
        assert_eq!(split_host_port(":80", 80), None);
        assert_eq!(split_host_port("h:x", 80), None);
    }

    #[test]
    fn the_proxy_variables_replace_the_operators_and_no_proxy_is_the_sessions_loopback() {
        let mut env = vec![
            ("NO_PROXY".into(), "registry.npmjs.org".into()),
            ("https_proxy".into(), "http://corp:8080".into()),
            ("PATH".into(), "/bin".into()),
        ];
        apply_env(&mut env, 4242);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("https_proxy"), Some("http://127.0.0.1:4242".into()));
        assert_eq!(get("ALL_PROXY"), Some("http://127.0.0.1:4242".into()));
        assert_eq!(get("NO_PROXY"), Some("localhost,127.0.0.1,::1".into()));
        assert_eq!(get("PATH"), Some("/bin".into()));
    }
}
