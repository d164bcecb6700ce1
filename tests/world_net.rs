//! The session's own network (docs/session.md, *Network*): the host's loopback services and
//! abstract UNIX sockets are out of reach from a session unless a port is declared
//! (`--host-port N`), while outbound work (a registry install) keeps working through the
//! supervisor's proxy. As root and as a non-root user; each refusal has its positive control
//! (the declared port, the reduction flag, the operator's own connect outside), so the test
//! can fail.

mod support;

use execguard_testkit::identities;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::{s, session_command, session_fixture as fixture, shown, text, Fixture};

/// `execguard run --workspace WS --audit LOG [flags] -- sh -c SCRIPT` as the fixture's user.
fn session(f: &Fixture, flags: &[&str], script: &str, extra_env: &[(&str, &str)]) -> Output {
    let mut c = session_command(f, true, flags, script);
    for (k, v) in extra_env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// An operator's service on the host's `127.0.0.1`: answers every connection with a small
/// HTTP response and counts them.
struct Service {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

fn service() -> Service {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for mut c in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\noperator\n");
        }
    });
    Service { port, accepted }
}

/// Direct (as the session's `NO_PROXY` sends a loopback name), then through the session's
/// proxy by address and by name (`--noproxy ''` overrides `NO_PROXY`): each prints curl's
/// status (`000` when the connection failed).
fn reach(port: u16) -> String {
    format!(
        "curl -s -m 5 -o /dev/null -w 'direct=%{{http_code}}\\n' http://127.0.0.1:{port}/; \
         curl -s --noproxy '' -m 5 -o /dev/null -w 'proxied=%{{http_code}}\\n' http://127.0.0.1:{port}/; \
         curl -s --noproxy '' -m 5 -o /dev/null -w 'byname=%{{http_code}}\\n' http://localhost:{port}/; true"
    )
}

#[test]
fn the_hosts_loopback_services_are_out_of_reach_unless_a_port_is_declared() {
    for who in identities() {
        let f = fixture("net-loopback", &who);
        let svc = service();
        let o = session(&f, &[], &reach(svc.port), &[]);
        assert!(o.status.success(), "{}: {}", who.label(), shown(&o));
        let out = text(&o.stdout);
        assert!(out.contains("direct=000"), "{}: {}", who.label(), shown(&o));
        assert!(
            out.contains("proxied=403"),
            "{}: {}",
            who.label(),
            shown(&o)
        );
        assert!(out.contains("byname=403"), "{}: {}", who.label(), shown(&o));
        assert_eq!(
            svc.accepted.load(Ordering::SeqCst),
            0,
            "{}: the session reached the operator's service",
            who.label()
        );
        // Seen by the person, once per destination, and recorded with its reason.
        let err = text(&o.stderr);
        let line = format!(
            "network_refused: 127.0.0.1:{} is the host's loopback",
            svc.port
        );
        assert_eq!(err.matches(&line).count(), 1, "{}: {err}", who.label());
        assert!(err.contains("--host-port N"), "{err}");
        assert!(
            f.audit_records()
                .iter()
                .any(|r| r["reason"] == "network_refused"
                    && r["tool"] == "network"
                    && r["decision"] == "deny"),
            "{}: no record of the refusal",
            who.label()
        );

        // The positive controls: the declared port is reached directly and through the proxy.
        let port = svc.port.to_string();
        let o = session(&f, &["--host-port", &port], &reach(svc.port), &[]);
        let out = text(&o.stdout);
        assert!(out.contains("direct=200"), "{}: {}", who.label(), shown(&o));
        assert!(
            out.contains("proxied=200"),
            "{}: {}",
            who.label(),
            shown(&o)
        );
        assert!(svc.accepted.load(Ordering::SeqCst) >= 2, "{}", who.label());

        // And the reduction gives the host's network back, said once and recorded.
        let before = svc.accepted.load(Ordering::SeqCst);
        let o = session(&f, &["--allow-host-network"], &reach(svc.port), &[]);
        let out = text(&o.stdout);
        assert!(out.contains("direct=200"), "{}: {}", who.label(), shown(&o));
        assert!(svc.accepted.load(Ordering::SeqCst) > before);
        assert_eq!(
            text(&o.stderr)
                .matches("reduced world (--allow-host-network)")
                .count(),
            1,
            "{}",
            shown(&o)
        );
        assert!(
            f.audit_records().iter().any(|r| r["path"]
                .as_str()
                .is_some_and(|a| a.contains("host_network"))),
            "{}: the reduction is not in the start record",
            who.label()
        );
    }
}

#[test]
fn a_service_on_all_the_hosts_addresses_is_not_reached_through_them() {
    // Bound to 0.0.0.0, a service answers on each of the host's addresses: the proxy refuses
    // the host's own (here the one of its default route) as it refuses its loopback.
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    probe.connect("192.0.2.77:9").unwrap(); // no packet: picks the source address only
    let own = probe.local_addr().unwrap().ip();
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    for who in identities() {
        let f = fixture("net-own-address", &who);
        let script = format!(
            "curl -s -m 5 -o /dev/null -w 'proxied=%{{http_code}}\\n' http://{own}:{port}/; \
             curl -s --noproxy '*' -m 5 -o /dev/null -w 'direct=%{{http_code}}\\n' http://{own}:{port}/; true"
        );
        let o = session(&f, &[], &script, &[]);
        let out = text(&o.stdout);
        assert!(
            out.contains("proxied=403"),
            "{}: {}",
            who.label(),
            shown(&o)
        );
        assert!(out.contains("direct=000"), "{}: {}", who.label(), shown(&o));
        assert!(
            text(&o.stderr).contains("is an address of the host's own"),
            "{}",
            shown(&o)
        );
        assert!(
            listener.accept().is_err(),
            "{}: the session reached the service through {own}",
            who.label()
        );
    }
}

#[test]
fn the_sessions_own_loopback_services_are_reached_as_everyday_work_expects() {
    // A test server the session starts on localhost, and a client that honours the proxy
    // variables (curl): reached directly, in the session's own namespace.
    for who in identities() {
        let f = fixture("net-own", &who);
        let o = session(
            &f,
            &[],
            "python3 -m http.server 18765 --bind 127.0.0.1 >/dev/null 2>&1 & \
             for i in $(seq 50); do curl -s -m 2 -o /dev/null -w '%{http_code}\n' http://localhost:18765/ | grep -q 200 && break; sleep 0.1; done; \
             curl -s -m 5 -o /dev/null -w 'own=%{http_code}\n' http://localhost:18765/; kill $!",
            &[],
        );
        assert!(
            text(&o.stdout).contains("own=200"),
            "{}: {}",
            who.label(),
            shown(&o)
        );
    }
}

#[test]
fn the_outsides_abstract_sockets_are_out_of_reach() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    for who in identities() {
        let f = fixture("net-abstract", &who);
        let name = format!("execguard-test-{}-{}", std::process::id(), who.uid());
        let listener =
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
        listener.set_nonblocking(true).unwrap();
        let connect = format!(
            "python3 -c \"
import socket, errno
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('\\0{name}'); print('connected')
except OSError as e:
    print('refused', errno.errorcode[e.errno])
\""
        );
        // The positive control: the operator's own process outside reaches it.
        let mut c = f.plain("sh");
        let o = c.args(["-c", &connect]).output().unwrap();
        assert_eq!(text(&o.stdout).trim(), "connected", "{}", shown(&o));
        let o = session(&f, &[], &connect, &[]);
        // The network namespace is what closes it: the name does not exist in the session's
        // (ECONNREFUSED, where Landlock's scope alone answers EPERM).
        assert_eq!(
            text(&o.stdout).trim(),
            "refused ECONNREFUSED",
            "{}: {}",
            who.label(),
            shown(&o)
        );
        let mut accepted = 0;
        while listener.accept().is_ok() {
            accepted += 1;
        }
        assert_eq!(
            accepted,
            1,
            "{}: only the operator's own connect",
            who.label()
        );
    }
}

#[test]
fn a_registry_install_works_in_the_session() {
    for who in identities() {
        let f = fixture("net-registry", &who);
        let dl = f.ws.join("dl");
        let o = session(
            &f,
            &[],
            &format!(
                "/usr/bin/python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check -q -d {} six==1.16.0",
                s(&dl)
            ),
            &[],
        );
        assert!(o.status.success(), "{}: {}", who.label(), shown(&o));
        assert!(
            dl.join("six-1.16.0-py2.py3-none-any.whl").is_file(),
            "{}: {}",
            who.label(),
            shown(&o)
        );
        std::fs::write(
            f.ws.join("package.json"),
            "{\"name\":\"t\",\"version\":\"1.0.0\"}",
        )
        .unwrap();
        who.own(&f.ws);
        let o = session(
            &f,
            &[],
            "npm install --no-audit --no-fund --cache \"$TMPDIR/npm-cache\" is-number@7.0.0 2>&1",
            &[("TMPDIR", "/tmp")],
        );
        assert!(o.status.success(), "{}: {}", who.label(), shown(&o));
        assert!(
            f.ws.join("node_modules/is-number/package.json").is_file(),
            "{}: {}",
            who.label(),
            shown(&o)
        );
    }
}

#[test]
fn a_kernel_without_a_network_namespace_refuses_the_start_with_the_way_forward() {
    for who in identities() {
        let f = fixture("net-refused", &who);
        let hook = [("EXECGUARD_TEST_NO_NETWORK_NAMESPACE", "1")];
        let o = session(&f, &[], "echo started", &hook);
        assert!(!o.status.success(), "{}: {}", who.label(), shown(&o));
        assert!(!text(&o.stdout).contains("started"), "{}", shown(&o));
        let err = text(&o.stderr);
        assert!(
            err.contains("network_unavailable"),
            "{}: {err}",
            who.label()
        );
        assert!(err.contains("--allow-host-network"), "{err}");
        // The reduction runs it.
        let o = session(&f, &["--allow-host-network"], "echo started", &hook);
        assert!(o.status.success(), "{}: {}", who.label(), shown(&o));
        assert!(text(&o.stdout).contains("started"));
    }
}
