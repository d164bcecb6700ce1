//! A strict session cannot plant in its repository after the end-of-session quarantine: its
//! remaining processes (a `setsid` daemon, a double fork) are ended first (red-team finding:
//! a detached child wrote a hook back after the supervisor had quarantined).

use execguard_testkit::identities;
use std::process::{Command, Stdio};

#[test]
fn a_detached_process_cannot_plant_after_the_session() {
    for who in identities() {
        let base = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "takeover-late-{}-{}",
            who.uid(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        let (ws, home) = (base.join("ws"), base.join("home"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let init = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(init.success());
        who.own(&base);
        let hook = ws.join(".git/hooks/pre-commit");
        let script = format!(
            "printf '#!/bin/sh\\necho HOOK\\n' > {ws}/h && chmod +x {ws}/h && \
             setsid sh -c 'sleep 2; cp {ws}/h {hook}' </dev/null >/dev/null 2>&1 & echo started",
            ws = ws.display(),
            hook = hook.display()
        );
        let mut c = Command::new(env!("CARGO_BIN_EXE_execguard"));
        who.apply(&mut c);
        let out = c
            .arg("run")
            .arg("--workspace")
            .arg(&ws)
            .args(["--", "/bin/sh", "-c", &script])
            .current_dir(&ws)
            .env("HOME", &home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("started"),
            "[{}] {}",
            who.label(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_secs(3));
        assert!(
            !hook.exists(),
            "[{}] a process of the session planted the hook after it ended",
            who.label()
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}

/// A repository the session itself creates had nothing recorded: a hook in it was planted and
/// is quarantined when the session ends; git's own `.sample` files stay (red-team finding).
#[test]
fn a_repository_created_in_the_session_is_checked_too() {
    for who in identities() {
        let base = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "takeover-new-{}-{}",
            who.uid(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        let (ws, home) = (base.join("ws"), base.join("home"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        who.own(&base);
        let script = "git init -q && printf '#!/bin/sh\\necho HOOK\\n' > .git/hooks/pre-commit && \
                      chmod +x .git/hooks/pre-commit && echo planted";
        let mut c = Command::new(env!("CARGO_BIN_EXE_execguard"));
        who.apply(&mut c);
        let out = c
            .arg("run")
            .arg("--workspace")
            .arg(&ws)
            .args(["--", "/bin/sh", "-c", script])
            .current_dir(&ws)
            .env("HOME", &home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap();
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
        let _ = std::fs::remove_dir_all(&base);
    }
}
