//! No helper outside the session is reachable from it (issue 28, classes 2, 4 and 5): a
//! descriptor handed in with `SCM_RIGHTS` (a workspace file whose mount allows exec, for
//! `mmap(PROT_EXEC)`) needs an outside process the session can connect to, and the world
//! leaves it none. Pathname sockets: `tests/world.rs`
//! (`an_outside_processs_socket_is_out_of_reach_unless_shared`). Abstract sockets: here, with
//! Docker's socket seen as `execguard image run` sees it. Each as root and as a non-root user,
//! each with a control outside the session.

mod support;

use execguard_testkit::{identities, Identity};
use std::process::Output;
use support::{s, session_command, text, tools, world_fixture, Fixture};

fn session(f: &Fixture, who: &Identity, flags: &[&str], script: &str) -> Output {
    let mut c = session_command(f, false, flags, script);
    who.apply(&mut c).env("HOME", f.home());
    c.output().unwrap()
}

/// Connects to the abstract UNIX socket `name`; prints `reached` or `refused ERRNO`.
fn connect_abstract(name: &str) -> String {
    format!(
        "python3 -c 'import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect(\"\\0\"+sys.argv[1]); print(\"reached\")\nexcept OSError as e: print(\"refused\", e.errno)' {name}"
    )
}

#[test]
fn an_outside_processs_abstract_socket_is_out_of_reach() {
    let name = format!("execguard-test-abstract-{}", std::process::id());
    let mut listener = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys\n\
             s=socket.socket(socket.AF_UNIX); s.bind('\\0'+sys.argv[1]); s.listen(8)\n\
             print('ready', flush=True)\n\
             while True:\n  c,_=s.accept(); c.close()",
            &name,
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(listener.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
    }
    let mut seen = Vec::new();
    for who in identities() {
        let f = world_fixture("reach-abstract", &who);
        // The control: outside any session, the same user reaches it.
        let mut c = f.plain("sh");
        who.apply(&mut c);
        let outside = c.args(["-c", &connect_abstract(&name)]).output().unwrap();
        let inside = session(&f, &who, &[], &connect_abstract(&name));
        // The host's network shared: Landlock's scope alone.
        let scoped = session(
            &f,
            &who,
            &["--allow-host-network"],
            &connect_abstract(&name),
        );
        seen.push((who.label(), outside, inside, scoped));
    }
    listener.kill().unwrap();
    listener.wait().unwrap();
    for (label, outside, inside, scoped) in seen {
        assert_eq!(text(&outside.stdout), "reached\n", "{label}: the control");
        assert!(inside.status.success(), "{label}: {}", text(&inside.stderr));
        // Landlock's scope (EPERM), or the session's own network namespace, where no
        // outside abstract name exists (ECONNREFUSED): either layer is enough.
        let out = text(&inside.stdout);
        assert!(
            out == format!("refused {}\n", libc::EPERM)
                || out == format!("refused {}\n", libc::ECONNREFUSED),
            "{label}: {out}"
        );
        assert_eq!(
            text(&scoped.stdout),
            format!("refused {}\n", libc::EPERM),
            "{label}: with the host's network, {}",
            text(&scoped.stderr)
        );
    }
}

/// `execguard image run` inside a session refuses, saying why, rather than start a container
/// (a session of another profile, outside this one's rules) through Docker's socket.
#[test]
fn image_run_inside_a_session_refuses_with_its_reason() {
    let socket = std::path::Path::new("/var/run/docker.sock");
    if !std::fs::metadata(socket)
        .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
    {
        execguard_testkit::skip("image run inside a session: no Docker socket on this machine");
        return;
    }
    for who in identities() {
        let f = world_fixture("reach-docker", &who);
        let script = format!(
            "{} image run --profile development --arbitrary-command -- /bin/true; echo status=$?",
            s(&tools().cli)
        );
        let o = session(&f, &who, &[], &script);
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert_eq!(out, "status=2\n", "{}: {err}", who.label());
        let line = err
            .lines()
            .find(|l| l.contains("docker_hidden"))
            .unwrap_or_else(|| panic!("{}: no refusal in {err}", who.label()));
        assert!(
            line.starts_with("execguard: refused docker_hidden: Docker's socket /var/run/docker.sock is not a socket here")
                && line.ends_with("run `execguard image run` from outside the session"),
            "{}: {line}",
            who.label()
        );
        assert!(!err.contains("Cannot connect"), "{}: {err}", who.label());
    }
}
