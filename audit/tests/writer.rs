//! The writer against real processes: many senders at once, senders that die at every point
//! of a send, records that are not the schema; the log it leaves verifies, whole.

use execguard_audit::key::StateDir;
use execguard_audit::writer::{Session, Writer};
use execguard_policy::audit::{format_record, Decision, Record, RECORD_MAX};

fn record(path: &str) -> Vec<u8> {
    let mut buf = [0u8; RECORD_MAX];
    let n = format_record(
        &Record {
            time: (1, 0),
            // Claims the writer must not believe.
            pid: 1,
            uid: 0,
            tool: "guard",
            entry: "execve",
            decision: Decision::Deny,
            reason: "mutable_native",
            profile: Some(execguard_policy::Profile::Strict),
            path: path.as_bytes(),
            target: b"./a",
        },
        &mut buf,
    );
    buf[..n].to_vec()
}

fn session() -> Session {
    Session {
        tool: "run",
        workspace: "/w".into(),
        profile: "strict".into(),
        assurance: "strict".into(),
    }
}

fn send(socket: &std::path::Path, rec: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    execguard_os::audit::send_record(socket.as_os_str().as_bytes(), rec).is_ok()
}

fn lines(state: &StateDir) -> Vec<serde_json::Value> {
    std::fs::read_to_string(state.log())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn verified(state: &StateDir) {
    let text = std::fs::read(state.log()).unwrap();
    let key = state.verifying_key().unwrap().unwrap();
    if let Err(b) = execguard_audit::verify::verify(&text, Some(&key)) {
        panic!("line {}: {}", b.line, b.what);
    }
}

/// Forks `n` children, each running `f(i)` and exiting 0 (`_exit`: no Rust teardown in a
/// child of a threaded process); returns their pids.
fn fork_each(n: usize, f: impl Fn(usize)) -> Vec<libc::pid_t> {
    (0..n)
        .map(|i| {
            // SAFETY: the child runs only `f` (raw system calls) and _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                f(i);
                // SAFETY: _exit ends the child without running the parent's destructors.
                unsafe { libc::_exit(0) };
            }
            pid
        })
        .collect()
}

fn wait_all(pids: &[libc::pid_t]) -> Vec<i32> {
    pids.iter()
        .map(|&p| {
            let mut st = 0;
            // SAFETY: `st` is a valid out-pointer.
            assert_eq!(unsafe { libc::waitpid(p, &mut st, 0) }, p);
            st
        })
        .collect()
}

/// A fork storm of senders: every record is kept whole, stamped with its sender's real pid
/// (not the pid it claimed), numbered without a gap, and the log verifies.
#[test]
fn a_storm_of_senders_leaves_every_record_whole_and_stamped() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open(&dir.path().join("state")).unwrap();
    let writer = Writer::start(&state, session()).unwrap();
    let socket = writer.socket().to_path_buf();
    let serving = writer.serve(None).unwrap();
    const CHILDREN: usize = 40;
    const EACH: usize = 10;
    let pids = fork_each(CHILDREN, |i| {
        for j in 0..EACH {
            if !send(&socket, &record(&format!("/w/{i}/{j}"))) {
                // SAFETY: as in fork_each.
                unsafe { libc::_exit(3) };
            }
        }
    });
    assert!(wait_all(&pids).iter().all(|&st| st == 0), "every send kept");
    serving.finish(Some("strict")).unwrap();
    let recs = lines(&state);
    assert_eq!(recs.len(), CHILDREN * EACH + 2);
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    for r in &recs[1..recs.len() - 1] {
        let path = r["path"].as_str().unwrap();
        let i: usize = path.split('/').nth(2).unwrap().parse().unwrap();
        assert_eq!(r["pid"], pids[i], "{r}");
        assert_eq!(r["uid"], uid, "{r}");
    }
    assert!(!socket.exists(), "the socket goes with the session");
    verified(&state);
}

/// Senders that die before, during and after their send, and records that are not the
/// schema: nothing half lands, the refusals are answered as not kept, and the log verifies.
#[test]
fn senders_killed_anywhere_leave_no_half_record() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open(&dir.path().join("state")).unwrap();
    let writer = Writer::start(&state, session()).unwrap();
    let socket = writer.socket().to_path_buf();
    let serving = writer.serve(None).unwrap();
    let name = socket.as_os_str().as_bytes().to_vec();
    // Connects, sends (or not), and is killed before it reads the answer.
    let pids = fork_each(3, |i| {
        // SAFETY: raw socket calls on a descriptor this child owns; the address is valid.
        unsafe {
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0);
            let mut addr: libc::sockaddr_un = std::mem::zeroed();
            addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
            for (d, s) in addr.sun_path.iter_mut().zip(&name) {
                *d = *s as libc::c_char;
            }
            libc::connect(
                fd,
                &addr as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_un>() as u32,
            );
            if i == 1 {
                let r = record("/w/sent-then-killed");
                libc::send(fd, r.as_ptr().cast(), r.len(), 0);
            }
            if i == 2 {
                // Half a record, as a message: refused whole.
                let r = record("/w/half");
                libc::send(fd, r.as_ptr().cast(), r.len() / 2, 0);
            }
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    });
    wait_all(&pids);
    assert!(!send(&socket, b"{\"not\":\"a record\"}"));
    assert!(!send(&socket, &vec![b'x'; RECORD_MAX + 10]));
    assert!(send(&socket, &record("/w/after")));
    serving.finish(None).unwrap();
    let recs = lines(&state);
    let paths: Vec<&str> = recs.iter().filter_map(|r| r["path"].as_str()).collect();
    assert!(paths.contains(&"/w/sent-then-killed"), "{paths:?}");
    assert!(paths.contains(&"/w/after"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains("half")), "{paths:?}");
    verified(&state);
}

/// A sender's record is refused when nothing listens (the writer is gone): the guard then
/// refuses its exec (`audit_unwritable`), it does not go on unrecorded.
#[test]
fn no_writer_no_record_and_the_sender_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open(&dir.path().join("state")).unwrap();
    let writer = Writer::start(&state, session()).unwrap();
    let socket = writer.socket().to_path_buf();
    let serving = writer.serve(None).unwrap();
    assert!(send(&socket, &record("/w/a")));
    serving.finish(None).unwrap();
    assert!(!send(&socket, &record("/w/b")));
    verified(&state);
}

/// A state directory whose socket name is longer than a socket address holds: bound and
/// reached through its directory (`/proc/self/fd/N/NAME`).
#[test]
fn a_socket_name_past_the_address_limit_still_works() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("d".repeat(60)).join("e".repeat(60));
    let state = StateDir::open(&deep.join("state")).unwrap();
    let writer = Writer::start(&state, session()).unwrap();
    let socket = writer.socket().to_path_buf();
    assert!(socket.as_os_str().len() > 108, "{}", socket.display());
    let serving = writer.serve(None).unwrap();
    assert!(send(&socket, &record("/w/long")));
    serving.finish(None).unwrap();
    assert!(lines(&state).iter().any(|r| r["path"] == "/w/long"));
    verified(&state);
}
