//! The enforcement report and the partition, as the CLI shows them: `policy default` and
//! `check` (both sides), `run -v`, and `doctor --json` from inside a session, as root and as a
//! non-root user.

mod support;

use execguard_testkit::identities;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::{s, target_tmp, tools};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A home with a toolchain (`~/.cargo/bin`) and a workspace, owned by `who`.
fn world(who: &execguard_testkit::Identity, name: &str) -> (PathBuf, PathBuf) {
    let base =
        target_tmp()
            .join("wx-report")
            .join(format!("{name}-{}-{}", who.uid(), std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let home = base.join("home");
    let ws = base.join("ws");
    std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    who.own(&home);
    who.own(&ws);
    (home, ws)
}

fn cli(who: &execguard_testkit::Identity, home: &PathBuf, ws: &PathBuf, args: &[&str]) -> Output {
    let mut c = Command::new(&tools().cli);
    who.apply(&mut c);
    c.args(args)
        .env("HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .current_dir(ws)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn policy_default_and_check_show_both_sides() {
    for who in identities() {
        let (home, ws) = world(&who, "sides");
        let label = who.label();
        let out = cli(
            &who,
            &home,
            &ws,
            &["policy", "default", "--workspace", s(&ws)],
        );
        let policy = text(&out.stdout);
        assert!(out.status.success(), "[{label}] {}", text(&out.stderr));
        assert!(policy.contains("seal = true\n"), "[{label}] {policy}");
        assert!(
            policy.contains(&format!("mutable_roots = [\"{}\"]\n", s(&home))),
            "[{label}] {policy}"
        );
        assert!(
            policy.contains(&format!("exec_dirs = [\"{}/.cargo/bin\"]\n", s(&home))),
            "[{label}] {policy}"
        );
        let out = cli(
            &who,
            &home,
            &ws,
            &["check", "--json", "--workspace", s(&ws), "--", "true"],
        );
        let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim())
            .unwrap_or_else(|e| panic!("[{label}] {e}: {}", text(&out.stdout)));
        let p = &v["partition"];
        assert_eq!(p["sealed"], true, "[{label}] {v}");
        let has = |key: &str, path: String| {
            p[key]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x.as_str() == Some(path.as_str()))
        };
        assert!(has("write_set", s(&home).into()), "[{label}] {v}");
        assert!(has("write_set", s(&ws).into()), "[{label}] {v}");
        assert!(has("write_set", "/dev".into()), "[{label}] {v}");
        assert!(
            has("exec_dirs", format!("{}/.cargo/bin", s(&home))),
            "[{label}] {v}"
        );
        // An exec dir outside the write set is a typed refusal.
        let out = cli(
            &who,
            &home,
            &ws,
            &["run", "--exec-dir", "/usr/bin", "--", "true"],
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "[{label}] {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("exec_dir_outside_write_set"),
            "[{label}] {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn doctor_inside_a_session_reports_what_the_kernel_enforces() {
    let cli_path = s(&tools().cli).to_string();
    for who in identities() {
        let (home, ws) = world(&who, "doctor");
        let label = who.label();
        for (profile, assurance) in [
            ("strict", "strict"),
            ("development", "reduced:development"),
            ("build", "reduced:build"),
        ] {
            let out = cli(
                &who,
                &home,
                &ws,
                &[
                    "run",
                    "-v",
                    "--profile",
                    profile,
                    "--workspace",
                    s(&ws),
                    "--",
                    &cli_path,
                    "doctor",
                    "--json",
                ],
            );
            let stderr = text(&out.stderr);
            assert!(
                stderr.contains(&format!("execguard: assurance: {assurance}\n")),
                "[{label} {profile}] run -v: {stderr}"
            );
            let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim())
                .unwrap_or_else(|e| panic!("[{label}] {e}: {}\n{stderr}", text(&out.stdout)));
            assert_eq!(v["exec_probe"][1], true, "[{label} {profile}] {v}");
            assert!(v["seccomp_filters"].as_u64().unwrap() >= 2, "[{label}] {v}");
            assert_eq!(v["no_new_privs"], true, "[{label}] {v}");
            assert_eq!(v["user_namespace"], !who.is_root(), "[{label}] {v}");
            let mounts = v["mounts"].as_array().unwrap();
            assert!(!mounts.is_empty(), "[{label}] {v}");
            for m in mounts {
                let point = m["mount_point"].as_str().unwrap_or_default();
                let in_ws = point == s(&ws);
                // The session's own temp dir (`<runtime dir>/tmp/<pid>`, issue 30), and its own
                // `/tmp` and `/var/tmp` themselves (not the operator's real objects kept
                // inside them: the audit log).
                let in_temp = (point.contains("/execguard")
                    && Path::new(point)
                        .parent()
                        .is_some_and(|p| p.ends_with("tmp")))
                    || point == "/tmp"
                    || point == "/var/tmp";
                // The workspace's home layer (its installs run in development and build).
                // (not the layers' store the world hides under a noexec tmpfs).
                let in_home = Path::new(point).starts_with(&home)
                    && !point.ends_with("/.local/state/execguard/homes");
                // The development and build profiles' workspace, temp dirs and home layer
                // keep exec (both rights); all else is noexec.
                let want = !((in_ws || in_temp || in_home) && profile != "strict");
                assert_eq!(m["noexec"], want, "[{label} {profile}] {m}");
            }
            // What the seal said: a reduced profile's both rights are its meaning, not a
            // write set left executable (`write_set_not_all_noexec`).
            assert_eq!(
                v["assurance"].as_str().unwrap(),
                assurance,
                "[{label} {profile}] {v}"
            );
        }
    }
}

/// The start record says what the session is held to: always when it is reduced (a profile,
/// or unsealed on a kernel without Landlock), never for a plain strict session.
#[test]
fn a_reduced_session_is_recorded_at_start() {
    for who in identities() {
        let (home, ws) = world(&who, "record");
        let label = who.label();
        let log = ws.join("audit.jsonl");
        let records = |args: &[&str], abi: Option<&str>| {
            let _ = std::fs::remove_file(&log);
            let mut c = Command::new(&tools().cli);
            who.apply(&mut c);
            c.args(["run", "--workspace", s(&ws), "--audit", s(&log)])
                .args(args)
                .args(["--", "true"])
                .env("HOME", &home)
                .current_dir(&ws)
                .stdin(Stdio::null());
            if let Some(abi) = abi {
                c.env("EXECGUARD_TEST_LANDLOCK_ABI", abi);
            }
            let out = c.output().unwrap();
            assert!(
                out.status.success(),
                "[{label}] {args:?}: {}",
                text(&out.stderr)
            );
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|r| r["decision"] == "notice")
                .collect::<Vec<_>>()
        };
        let notice = |r: &[serde_json::Value]| {
            assert_eq!(r.len(), 1, "[{label}] {r:?}");
            (
                r[0]["reason"].as_str().unwrap().to_string(),
                r[0]["path"].as_str().unwrap().to_string(),
            )
        };
        assert!(records(&[], None).is_empty(), "[{label}] strict: no record");
        assert_eq!(
            notice(&records(&["--profile", "build"], None)),
            ("session_sealed".into(), "reduced:build".into()),
            "[{label}]"
        );
        assert_eq!(
            notice(&records(&["--allow-unsealed"], Some("0"))),
            ("session_unsealed".into(), "reduced:unsealed".into()),
            "[{label}]"
        );
    }
}
