//! What a strict session leaves in a repository after the end-of-session quarantine: its
//! remaining processes are ended first (a `setsid` daemon, a double fork), and a repository
//! the session created itself is checked too (red-team findings).

use execguard_testkit::{identities, Identity};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A workspace (given to `who`, after `prepare` ran in it as the tests' user) and the command
/// `execguard run [OPTIONS] --workspace WS -- sh -c SCRIPT` as `who`, ready to start.
fn command(
    who: Identity,
    name: &str,
    prepare: impl Fn(&Path),
    options: &[&std::ffi::OsStr],
    script: &str,
) -> (PathBuf, Command) {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "takeover-{name}-{}-{}",
        who.uid(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&base);
    let (ws, home, runtime) = (base.join("ws"), base.join("home"), base.join("runtime"));
    for d in [&ws, &home, &runtime] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    prepare(&ws);
    who.own(&base);
    let mut c = Command::new(env!("CARGO_BIN_EXE_execguard"));
    who.apply(&mut c);
    c.arg("run")
        .args(options)
        .arg("--workspace")
        .arg(&ws)
        .args(["--", "/bin/sh", "-c", script])
        .current_dir(&ws)
        .env("HOME", &home)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::null());
    (ws, c)
}

/// [`command`], run to its end: the workspace and the output.
fn session(who: Identity, name: &str, prepare: impl Fn(&Path), script: &str) -> (PathBuf, Output) {
    let (ws, mut c) = command(who, name, prepare, &[], script);
    (ws, c.output().unwrap())
}

fn git_init(ws: &Path) {
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(init.success());
}

/// A FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(
        rc,
        0,
        "mkfifo {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// A process the session detached (`setsid`, in the background) is ended with the session:
/// it never plants a hook afterwards. Events, not time: the detached process holds `go` open
/// (read and write, so holding it never blocks) and says so on `up`, which the session waits
/// for before it prints `started` and ends; the process would plant once a line arrives on
/// `go`. After the session, opening `go` for writing without blocking fails with `ENXIO`
/// exactly when no process holds it: then no survivor can plant. A survivor is a failure at
/// once (it is given the line, to show what it would have done).
#[test]
fn a_detached_process_cannot_plant_after_the_session() {
    for who in identities() {
        let plant = "printf '#!/bin/sh\\necho HOOK\\n' > h && chmod +x h && \
                     setsid sh -c 'exec 3<>go; echo up > up; read line <&3; cp h .git/hooks/pre-commit; echo planted > planted' \
                     </dev/null >/dev/null 2>&1 & \
                     timeout 20 cat up && echo started";
        let fifos = |ws: &Path| {
            git_init(ws);
            mkfifo(&ws.join("go"));
            mkfifo(&ws.join("up"));
        };
        let (ws, out) = session(who, "late", fifos, plant);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        // The positive control: the detached process ran, holding `go`, before the end.
        assert!(
            stdout.contains("up\nstarted"),
            "[{}] the detached process never said it was up\nstdout: {stdout}\nstderr: {stderr}",
            who.label()
        );
        let go = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(ws.join("go"));
        match go {
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            Err(e) => panic!("[{}] open go: {e}", who.label()),
            Ok(mut go) => {
                let _ = std::io::Write::write_all(&mut go, b"go\n");
                panic!(
                    "[{}] a process of the session outlived it, waiting to plant a hook\nstderr: {stderr}",
                    who.label()
                );
            }
        }
        assert!(
            !ws.join(".git/hooks/pre-commit").exists() && !ws.join("planted").exists(),
            "[{}] a process of the session planted the hook",
            who.label()
        );
    }
}

/// Nothing was recorded for a repository the session made: a hook in it was planted; git's
/// own `.sample` files stay.
#[test]
fn a_repository_created_in_the_session_is_checked_too() {
    for who in identities() {
        let plant = "git init -q && printf '#!/bin/sh\\necho HOOK\\n' > .git/hooks/pre-commit && \
                     chmod +x .git/hooks/pre-commit && echo planted";
        let (ws, out) = session(who, "new", |_| {}, plant);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("planted"),
            "[{}] {stderr}",
            who.label()
        );
        assert!(
            !ws.join(".git/hooks/pre-commit").exists(),
            "[{}] the planted hook stayed: {stderr}",
            who.label()
        );
        assert!(
            ws.join(".git/hooks/pre-commit.sample").exists(),
            "[{}] git's samples were moved",
            who.label()
        );
    }
}

/// [`command`], ended with SIGKILL when it takes longer than `secs`: its output, or `None`
/// then. A thread waits for it and hands the output over; the test waits for that event.
fn session_within(
    who: Identity,
    name: &str,
    prepare: impl Fn(&Path),
    script: &str,
    secs: u64,
) -> (PathBuf, Option<Output>) {
    let (ws, mut c) = command(who, name, prepare, &[], script);
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let (done, finished) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || done.send(child.wait_with_output().unwrap()));
    match finished.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(out) => (ws, Some(out)),
        Err(_) => {
            // SAFETY: kill takes no pointers; `pid` is our child, not yet reaped (the waiter
            // has not returned).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = waiter.join();
            (ws, None)
        }
    }
}

/// The supervisor reads what the session left, outside the session: a FIFO where git keeps a
/// one-line file (`commondir`) never makes it wait, and a file it cannot read whole (too large,
/// or unreadable to a non-root user) never ends the quarantine of the repository. Either way
/// the planted hook is moved aside.
#[test]
fn a_fifo_or_an_unreadable_file_never_stops_the_quarantine() {
    let hook = "printf '#!/bin/sh\\necho HOOK\\n' > H/.git/hooks/pre-commit && chmod +x H/.git/hooks/pre-commit";
    let cases = [
        (
            "fifo",
            format!(
                "{} && mkdir -p .git/worktrees/x && echo 'ref: refs/heads/master' > .git/worktrees/x/HEAD && mkfifo .git/worktrees/x/commondir && echo planted",
                hook.replace("H/", "")
            ),
            "",
        ),
        (
            "blocker",
            format!(
                "git init -q evil && {} && truncate -s 1T evil/.git/hooks/zz && chmod 000 evil/.git/hooks/zz && echo planted",
                hook.replace("H/", "evil/")
            ),
            "evil/",
        ),
    ];
    for who in identities() {
        for (name, script, repo) in &cases {
            let (ws, out) = session_within(who, name, git_init, script, 30);
            let out = out.unwrap_or_else(|| {
                panic!(
                    "[{} {name}] the supervisor did not end within 30 s",
                    who.label()
                )
            });
            let stderr = String::from_utf8_lossy(&out.stderr);
            // The positive control: the session planted the hook and its obstacle.
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("planted"),
                "[{} {name}] the session did not plant: {stderr}",
                who.label()
            );
            assert!(
                stderr.contains("quarantine"),
                "[{} {name}] no quarantine happened: {stderr}",
                who.label()
            );
            let planted = ws.join(repo).join(".git/hooks/pre-commit");
            assert!(
                !planted.exists(),
                "[{} {name}] the planted hook survived the quarantine",
                who.label()
            );
        }
    }
}

/// The supervisor writes its quarantine records after the session, with the caller's rights:
/// a session that replaced the audit log's directory by a link to another directory does not
/// make it create the log there.
#[test]
fn the_audit_log_is_not_written_through_a_link_the_session_put_in_place() {
    for who in identities() {
        let logs = PathBuf::from(format!(
            "/tmp/execguard-takeover-log-{}-{}",
            who.uid(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&logs);
        let _ = std::fs::remove_dir_all(logs.with_extension("moved"));
        std::fs::create_dir_all(&logs).unwrap();
        let outside = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "takeover-outside-{}-{}",
            who.uid(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&outside);
        std::fs::create_dir_all(&outside).unwrap();
        who.own(&logs);
        who.own(&outside);
        let script = format!(
            "printf '#!/bin/sh\\necho HOOK\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && \
             mv {logs} {logs}.moved && ln -s {outside} {logs} && echo swapped",
            logs = logs.display(),
            outside = outside.display()
        );
        let log = logs.join("audit.jsonl");
        let (_, mut c) = command(
            who,
            "log-link",
            git_init,
            &["--audit".as_ref(), log.as_os_str()],
            &script,
        );
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("swapped"),
            "[{}] {stderr}",
            who.label()
        );
        assert!(
            stderr.contains("quarantine"),
            "[{}] no quarantine happened: {stderr}",
            who.label()
        );
        assert!(
            !outside.join("audit.jsonl").exists(),
            "[{}] the supervisor wrote the log through the session's link",
            who.label()
        );
        let _ = std::fs::remove_file(&logs);
        let _ = std::fs::remove_dir_all(logs.with_extension("moved"));
    }
}
