//! `execguard exec-dirs list|add|remove` (issue 30): the operator changes the record of exec
//! dirs outside sessions instead of by hand, never from inside one; and the notice of a
//! directory of programs the record does not name is said once, not at every start. As root
//! and as the non-root user.

mod support;

use execguard_testkit::{identities, Identity};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::text;

const EXECGUARD: &str = env!("CARGO_BIN_EXE_execguard");

/// A scenario (`support::Scene`) whose home holds a directory of programs.
struct Home {
    scene: support::Scene,
    /// A directory of programs in the home, holding `hello`.
    tools: PathBuf,
}

impl std::ops::Deref for Home {
    type Target = support::Scene;
    fn deref(&self) -> &support::Scene {
        &self.scene
    }
}

impl Home {
    fn new(who: Identity, name: &str) -> Home {
        let scene = support::Scene::new(who, &format!("exec-dirs-{name}"));
        let tools = scene.home.join("tools/bin");
        std::fs::create_dir_all(&tools).unwrap();
        let tool = tools.join("hello");
        std::fs::copy("/bin/true", &tool).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        who.own(&scene.base);
        Home { scene, tools }
    }

    fn cli(&self, args: &[&str]) -> Output {
        let mut c = Command::new(EXECGUARD);
        c.args(args)
            .current_dir(&self.ws)
            .env("PATH", format!("{}:/usr/bin:/bin", self.tools.display()))
            .env("EXECGUARD_LIB", &support::tools().lib)
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD")
            .env_remove("XDG_CONFIG_HOME");
        self.who.apply(&mut c);
        c.env("HOME", &self.home);
        c.output().unwrap()
    }

    fn session(&self, script: &str) -> Output {
        self.session_in("strict", script)
    }

    fn session_in(&self, profile: &str, script: &str) -> Output {
        let ws = self.ws.display().to_string();
        let audit = self.audit.display().to_string();
        self.cli(&[
            "run",
            "--profile",
            profile,
            "--workspace",
            &ws,
            "--audit",
            &audit,
            "--",
            "/bin/sh",
            "-c",
            script,
        ])
    }
}

fn notices(out: &Output, dir: &Path) -> usize {
    text(&out.stderr)
        .lines()
        .filter(|l| {
            l.starts_with(&format!(
                "execguard: notice: {} holds programs",
                dir.display()
            ))
        })
        .count()
}

#[test]
fn the_operator_adds_and_removes_exec_dirs_and_the_notice_is_said_once() {
    for who in identities() {
        let h = Home::new(who, "cli");
        let label = who.label();
        // The first run records what it found (tools/bin is on PATH in $HOME).
        let out = h.session("true");
        assert!(out.status.success(), "{label}: {}", text(&out.stderr));
        let out = h.cli(&["exec-dirs", "remove", h.tools.to_str().unwrap()]);
        assert!(out.status.success(), "{label}: {}", text(&out.stderr));
        let list = text(&h.cli(&["exec-dirs", "list"]).stdout);
        assert!(
            list.contains(&format!("{}\tnot recorded", h.tools.display())),
            "{label}: {list}"
        );
        // Not recorded: written, never run, and said once.
        let out = h.session("hello; echo rc=$?");
        assert!(
            text(&out.stdout).contains("rc=126"),
            "{label}: {}",
            text(&out.stderr)
        );
        assert_eq!(notices(&out, &h.tools), 1, "{label}: {}", text(&out.stderr));
        let out = h.session("true");
        assert_eq!(notices(&out, &h.tools), 0, "{label}: {}", text(&out.stderr));
        // Added by the operator: its program runs in the next session.
        let out = h.cli(&["exec-dirs", "add", h.tools.to_str().unwrap()]);
        assert!(out.status.success(), "{label}: {}", text(&out.stderr));
        let list = text(&h.cli(&["exec-dirs", "list"]).stdout);
        assert!(
            list.contains(&format!("{}\texec dir\n", h.tools.display())),
            "{label}: {list}"
        );
        let out = h.session("hello; echo rc=$?");
        assert!(
            text(&out.stdout).contains("rc=0"),
            "{label}: {}",
            text(&out.stderr)
        );
        // Never from inside a session (the record is read-only there anyway).
        let script = format!("{EXECGUARD} exec-dirs remove {}", h.tools.display());
        let out = h.session(&script);
        assert_eq!(out.status.code(), Some(2), "{label}");
        assert!(
            text(&out.stderr).contains("exec_dirs_in_session"),
            "{label}: {}",
            text(&out.stderr)
        );
        // Outside $HOME, or not a directory: refused with the reason.
        let out = h.cli(&["exec-dirs", "add", "/usr/bin"]);
        assert_eq!(out.status.code(), Some(2), "{label}");
        assert!(
            text(&out.stderr).contains("exec_dir_outside_home"),
            "{label}"
        );
        let out = h.cli(&["exec-dirs", "remove", "/nowhere"]);
        assert!(
            text(&out.stderr).contains("exec_dir_not_recorded"),
            "{label}"
        );
    }
}

/// The once-only notice says what the session at hand does with a directory the record does
/// not name: under strict it is written, never run; under development its programs run (from
/// the workspace's home layer), and the notice says so rather than "never run".
#[test]
fn the_notice_says_what_the_profile_does_with_an_unrecorded_directory() {
    for who in identities() {
        let label = who.label();
        for (profile, rc, says) in [
            (
                "development",
                "rc=0",
                ": this session runs its programs from the workspace's home layer",
            ),
            (
                "strict",
                "rc=126",
                ": in this session it is written, never run",
            ),
        ] {
            let h = Home::new(who, &format!("notice-{profile}"));
            let out = h.session("true");
            assert!(out.status.success(), "{label}: {}", text(&out.stderr));
            let out = h.cli(&["exec-dirs", "remove", h.tools.to_str().unwrap()]);
            assert!(out.status.success(), "{label}: {}", text(&out.stderr));
            let out = h.session_in(profile, "hello; echo rc=$?");
            let err = text(&out.stderr);
            assert!(
                text(&out.stdout).contains(rc),
                "{label} {profile}: {}{err}",
                text(&out.stdout)
            );
            let notice: Vec<&str> = err
                .lines()
                .filter(|l| {
                    l.starts_with(&format!(
                        "execguard: notice: {} holds programs",
                        h.tools.display()
                    ))
                })
                .collect();
            assert_eq!(notice.len(), 1, "{label} {profile}: {err}");
            assert!(notice[0].contains(says), "{label} {profile}: {}", notice[0]);
        }
    }
}
