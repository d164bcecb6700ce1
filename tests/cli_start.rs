//! `execguard run`, `check`, `image run`, `policy`, `audit` at the edges (issue 13 items 3-5):
//! the first command is audited, a default audit log keeps a trace, broad or non-directory
//! workspaces and unwritable audit logs are refused at start, named files are read with caps
//! and only when regular, and a closed stdout is a normal end. As root and as a non-root user.

mod support;

use execguard_testkit::{dir_for, identities, Identity};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

fn cli(f: &Fixture, who: &Identity) -> Command {
    let mut c = f.plain(&tools().cli);
    c.env("EXECGUARD_LIB", &tools().lib)
        .env("XDG_STATE_HOME", state_dir(f, who));
    who.apply(&mut c);
    c
}

/// A state directory for `who` in the fixture, where `execguard run` keeps the audit (made
/// once per fixture: later calls name the same one).
fn state_dir(f: &Fixture, who: &Identity) -> PathBuf {
    let d = f.tmp.join("state");
    if !d.exists() {
        return dir_for(who, &f.tmp, "state");
    }
    d
}

/// A private runtime directory for `who`, so the default audit log lands in the fixture (in
/// the write set, as `/run/user/UID` is).
fn runtime_dir(f: &Fixture, who: &Identity) -> PathBuf {
    let d = dir_for(who, &f.tmp, "xdg");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

/// Runs `cmd`, killing it if it has not finished after a minute (a hang is the failure).
fn run_bounded(cmd: &mut Command) -> Outcome {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{what} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Outcome::new(what, child.wait_with_output().unwrap())
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(s(path)).unwrap();
    // SAFETY: `c` is a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
}

#[test]
fn the_first_command_is_audited() {
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-first");
        let logs = dir_for(&who, &f.tmp, "logs");
        let log = logs.join("audit.jsonl");
        let o = run(cli(&f, &who)
            .args(["run", "--audit"])
            .arg(&log)
            .args(["--", "./payload"]));
        assert_eq!(o.code, Some(126), "{label}\n{o}");
        assert!(!o.ran(), "{label}\n{o}");
        let records = read_audit(&log);
        assert_eq!(records.len(), 1, "{label}: {records:?}");
        let r = &records[0];
        assert_eq!(
            (&r["tool"], &r["entry"], &r["decision"], &r["reason"]),
            (
                &"run".into(),
                &"start".into(),
                &"deny".into(),
                &"mutable_native".into()
            ),
            "{label}: {r}"
        );
        assert_eq!(r["path"].as_str(), Some(s(&f.payload)), "{label}: {r}");
        assert_eq!(
            r["uid"].as_u64(),
            Some(u64::from(who.uid())),
            "{label}: {r}"
        );

        // With audit_allow, the first allowed command is recorded too.
        let allow_log = logs.join("allow.jsonl");
        let policy = f.base.join(format!("allow-{}.toml", who.uid()));
        std::fs::write(
            &policy,
            f.policy("strict", "audit_allow = true\n")
                .replace(s(&f.audit), s(&allow_log)),
        )
        .unwrap();
        let o = run(cli(&f, &who)
            .args(["run", "--policy"])
            .arg(&policy)
            .arg("--")
            .arg(&f.sys_argv));
        assert_eq!(o.code, Some(0), "{label}\n{o}");
        assert!(o.ran(), "{label}\n{o}");
        // A policy file's session is kept like the default one: the file's own log is
        // replaced by the kept log (said once), which holds the record.
        assert!(
            o.stderr.contains("is replaced by the kept audit"),
            "{label}\n{o}"
        );
        assert!(
            !allow_log.exists(),
            "{label}: the file's own log was written"
        );
        let records = read_audit(&state_dir(&f, &who).join("execguard/audit.jsonl"));
        let first = records
            .iter()
            .find(|r| r["tool"] == "run" && r["entry"] == "start")
            .unwrap_or_else(|| panic!("{label}: no record of the first command: {records:?}"));
        assert_eq!(first["decision"], "allow", "{label}: {first}");
        assert_eq!(first["path"].as_str(), Some(s(&f.sys_argv)), "{label}");
    }
}

#[test]
fn a_swallowed_refusal_leaves_a_trace_in_the_default_log() {
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-default-log");
        let xdg = runtime_dir(&f, &who);
        // Kept by the session's supervisor, out of its reach (docs/audit.md).
        let log = state_dir(&f, &who).join("execguard/audit.jsonl");
        let swallowed = ["sh", "-c", "./payload 2>/dev/null; exit 0"];
        // Piped stderr (scripts, agents): no start line, the refusal is recorded anyway.
        let o = run(cli(&f, &who)
            .env("XDG_RUNTIME_DIR", &xdg)
            .arg("run")
            .arg("--")
            .args(swallowed));
        assert_eq!(o.code, Some(0), "{label}\n{o}");
        assert!(!o.stderr.contains("execguard: audit log: "), "{label}\n{o}");
        // The session's end brings the swallowed refusal back to stderr (issue 30).
        assert!(
            o.stderr.contains(&format!(
                "execguard: session summary: 1 refusal (audit log {}):",
                log.display()
            )),
            "{label}\n{o}"
        );
        let records = read_audit(&log);
        assert!(
            records
                .iter()
                .any(|r| r["reason"] == "mutable_native" && r["tool"] == "guard"),
            "{label}: {records:?}"
        );
        // `execguard audit` with no file finds it.
        let o = run(cli(&f, &who).env("XDG_RUNTIME_DIR", &xdg).arg("audit"));
        assert_eq!(o.code, Some(0), "{label}\n{o}");
        assert!(
            o.stdout.starts_with(&format!("{}: ", s(&log))) && o.stdout.contains("\n  deny   1\n"),
            "{label}\n{o}"
        );
        // On a terminal the start line names the log.
        let line = format!(
            "{} run -- sh -c './payload 2>/dev/null; exit 0'",
            s(&tools().cli)
        );
        let mut script = f.plain("script");
        script
            .env("EXECGUARD_LIB", &tools().lib)
            .env("XDG_STATE_HOME", state_dir(&f, &who))
            .env("XDG_RUNTIME_DIR", &xdg)
            .args(["-qec", &line, "/dev/null"]);
        who.apply(&mut script);
        let o = run(&mut script);
        assert_eq!(o.code, Some(0), "{label}\n{o}");
        assert!(
            o.stdout
                .contains(&format!("execguard: audit log: {} ", s(&log))),
            "{label}: the start line names the log\n{o}"
        );
        let refusals = |log: &Path| {
            read_audit(log)
                .iter()
                .filter(|r| r["reason"] == "mutable_native")
                .count()
        };
        assert_eq!(refusals(&log), 2, "{label}");
    }
}

#[test]
fn an_audit_log_that_cannot_be_written_is_refused_at_start() {
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-audit-bad");
        let dir = dir_for(&who, &f.tmp, "logs");
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        for bad in [
            dir.clone(),
            fifo,
            PathBuf::from("/proc/self/execguard-audit.jsonl"),
            dir.join("missing/audit.jsonl"),
        ] {
            let o = run_bounded(cli(&f, &who).args(["run", "--audit"]).arg(&bad).args([
                "--",
                "sh",
                "-c",
                "echo started",
            ]));
            assert_eq!(o.code, Some(2), "{label} {}\n{o}", bad.display());
            assert!(
                o.stderr.contains("audit_unwritable") || o.stderr.contains("directory of"),
                "{label} {}\n{o}",
                bad.display()
            );
            assert!(!o.stdout.contains("started"), "{label}\n{o}");
        }
    }
}

#[test]
fn broad_and_non_directory_workspaces_are_refused() {
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-workspace");
        let file = f.base.join("a-file");
        std::fs::write(&file, b"x").unwrap();
        let home = who.home();
        let cases: Vec<(PathBuf, &str)> = vec![
            (file.clone(), "workspace_not_directory"),
            (f.base.join("missing"), "workspace_not_directory"),
            ("/".into(), "workspace_too_broad"),
            ("/etc".into(), "workspace_too_broad"),
            ("/usr".into(), "workspace_too_broad"),
            ("/home".into(), "workspace_too_broad"),
            ("/tmp".into(), "workspace_too_broad"),
            (home.clone(), "workspace_too_broad"),
        ];
        for (ws, code) in &cases {
            let o = run(cli(&f, &who)
                .args(["run", "--workspace"])
                .arg(ws)
                .args(["--", "./payload"]));
            assert_eq!(o.code, Some(2), "{label} run {}\n{o}", ws.display());
            assert!(o.stderr.contains(code), "{label} {}\n{o}", ws.display());
            assert!(!o.ran(), "{label}\n{o}");
            let o = run(cli(&f, &who)
                .args(["check", "--workspace"])
                .arg(ws)
                .args(["--", "true"]));
            assert_eq!(o.code, Some(2), "{label} check {}\n{o}", ws.display());
            assert!(o.stderr.contains(code), "{label} {}\n{o}", ws.display());
            let o = run(cli(&f, &who)
                .args(["image", "run", "--print-args", "--workspace"])
                .arg(ws));
            assert_eq!(o.code, Some(2), "{label} image run {}\n{o}", ws.display());
            assert!(o.stderr.contains(code), "{label} {}\n{o}", ws.display());
            assert!(!o.stdout.contains("type=bind"), "{label}\n{o}");
        }
        // Under sudo, the invoking user's home is the operator's too.
        if let Identity::User(u) = who {
            let o = run(cli(&f, &Identity::Current)
                .env("SUDO_USER", &u.name)
                .args(["run", "--workspace"])
                .arg(&u.home)
                .args(["--", "true"]));
            assert_eq!(o.code, Some(2), "sudo\n{o}");
            assert!(o.stderr.contains("workspace_too_broad"), "sudo\n{o}");
        }
        // The default workspace (the current directory) is checked too.
        let o = run(cli(&f, &who)
            .current_dir("/etc")
            .args(["run", "--", "true"]));
        assert_eq!(o.code, Some(2), "{label}\n{o}");
        assert!(o.stderr.contains("workspace_too_broad"), "{label}\n{o}");
        // A project directory is fine.
        let o = run(cli(&f, &who)
            .args(["run", "--workspace"])
            .arg(&f.ws)
            .args(["--", "true"]));
        assert_eq!(o.code, Some(0), "{label}\n{o}");
    }
}

#[test]
fn named_files_are_read_with_caps_and_only_when_regular() {
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-input");
        let dir = dir_for(&who, &f.base, "in");
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        let big = dir.join("big.toml");
        std::fs::write(&big, format!("{}# {}\n", f.strict(), "x".repeat(16 * 1024))).unwrap();
        let zero = PathBuf::from("/dev/zero");
        for (bad, why) in [
            (&zero, "character device"),
            (&fifo, "FIFO"),
            (&big, "larger than 16384 bytes"),
        ] {
            let o = run_bounded(cli(&f, &who).args(["policy", "validate"]).arg(bad));
            assert_eq!(o.code, Some(1), "{label} validate {}\n{o}", bad.display());
            assert!(o.stderr.contains("policy_invalid"), "{label}\n{o}");
            assert!(o.stderr.contains(why), "{label}\n{o}");
            for sub in ["run", "check"] {
                let o = run_bounded(
                    cli(&f, &who)
                        .args([sub, "--policy"])
                        .arg(bad)
                        .args(["--", "true"]),
                );
                assert_eq!(o.code, Some(2), "{label} {sub} {}\n{o}", bad.display());
                assert!(o.stderr.contains("policy_invalid"), "{label}\n{o}");
                assert!(o.stderr.contains(why), "{label}\n{o}");
            }
        }
        for bad in [&zero, &fifo, &dir] {
            let o = run_bounded(cli(&f, &who).arg("audit").arg(bad));
            assert_eq!(o.code, Some(2), "{label} audit {}\n{o}", bad.display());
            assert!(o.stderr.contains("audit_unreadable"), "{label}\n{o}");
        }
    }
}

/// A pipe whose reading end is already closed, as `| head -1` leaves it after one line.
fn closed_pipe() -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here, once each.
    let (read, write) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(read);
    write
}

#[test]
fn a_closed_stdout_is_a_normal_end() {
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-pipe");
        f.probe(&f.strict(), ["execve", "./payload"])
            .assert_denied("mutable_native");
        std::fs::set_permissions(&f.audit, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut doctor = cli(&f, &who);
        doctor.arg("doctor");
        let mut audit = cli(&f, &who);
        audit.arg("audit").arg(&f.audit);
        for cmd in [&mut doctor, &mut audit] {
            let out = cmd
                .stdout(closed_pipe())
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            // Like `cat`: ended by SIGPIPE (or a clean exit), never an abort.
            assert!(
                out.status.code() == Some(0) || out.status.signal() == Some(libc::SIGPIPE),
                "{label} {cmd:?}: {:?}\n{stderr}",
                out.status
            );
            assert!(!stderr.contains("panicked"), "{label} {cmd:?}\n{stderr}");
        }
    }
}

/// The sealed session may append to its audit log, so the log must never be a way to run a
/// written file: written with a program, made executable, it is refused by the guard and by
/// the kernel (a static caller's raw execve). (A log outside the write set would be writable
/// beneath an executable ancestor; it is refused at start, above.)
#[test]
fn the_audit_log_never_becomes_a_program() {
    let wx = compile(&support_dir(), "wx.c", "wx-static", &["-static"]);
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-log-exec");
        let log = dir_for(&who, &f.tmp, "logs").join("audit.jsonl");
        let script = format!(
            "cat {argv} > {log}; chmod +x {log}; {log} from-shell; {wx} exec {log}; echo done",
            argv = s(&tools().argv),
            log = s(&log),
            wx = s(&wx)
        );
        let o = run(cli(&f, &who)
            .args(["run", "--audit"])
            .arg(&log)
            .args(["--", "sh", "-c", &script]));
        assert!(o.stdout.contains("done"), "{label}\n{o}");
        assert!(!o.ran(), "{label}: the audit log ran as a program\n{o}");
        assert!(
            o.stdout.contains("FAILED"),
            "{label}: the raw execve must fail\n{o}"
        );
    }
}

/// A strict sealed session says once, on a terminal, what only the kernel refuses (a program
/// written in the session that a static program starts: a bare "permission denied", issue
/// 30); a development session does not (it runs such programs), nor does a session whose
/// stderr is no terminal (scripts and agents read that stderr).
#[test]
fn the_strict_start_notice_is_said_once_on_a_terminal() {
    let notice = "execguard: strict session: a program written in this session that a static program starts gets a bare \"permission denied\" from the kernel, with no line of execguard's; to run what the workspace builds, start the session with `execguard run --profile development`";
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("start-notice");
        let xdg = runtime_dir(&f, &who);
        for (profile, said) in [("strict", 1), ("development", 0)] {
            let line = format!("{} run --profile {profile} -- true", s(&tools().cli));
            let mut script = f.plain("script");
            script
                .env("EXECGUARD_LIB", &tools().lib)
                .env("XDG_RUNTIME_DIR", &xdg)
                .args(["-qec", &line, "/dev/null"]);
            who.apply(&mut script);
            let o = run(&mut script);
            assert_eq!(o.code, Some(0), "{label} {profile}\n{o}");
            // The terminal's line ends are CR LF.
            let lines = o.stdout.lines().filter(|l| l.trim_end() == notice).count();
            assert_eq!(lines, said, "{label} {profile} on a terminal\n{o}");
        }
        let o = run(cli(&f, &who).env("XDG_RUNTIME_DIR", &xdg).args([
            "run",
            "--profile",
            "strict",
            "--",
            "true",
        ]));
        assert_eq!(o.code, Some(0), "{label}\n{o}");
        assert!(!o.stderr.contains(notice), "{label}: piped stderr\n{o}");
    }
}
