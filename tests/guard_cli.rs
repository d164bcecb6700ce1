//! The `execguard` CLI: run, check, policy validate, audit.

mod support;

use execguard_testkit::identities;
use support::*;

fn cli(f: &Fixture) -> std::process::Command {
    let mut c = f.plain(&tools().cli);
    c.env("EXECGUARD_LIB", &tools().lib);
    c
}

#[test]
fn run_refuses_the_workspace_payload_with_126() {
    for who in identities() {
        let f = Fixture::for_user("cli-run", who);
        let o = run(cli(&f).args(["run", "--", "./payload"]));
        assert_eq!(o.code, Some(126), "{o}");
        assert!(o.has_denial("mutable_native"), "{o}");
        assert!(!o.ran(), "{o}");
        // Inside the session too: the guard refuses the shell's exec.
        let o = run(cli(&f).args(["run", "--", "sh", "-c", "./payload; echo rc=$?"]));
        assert_eq!(o.code, Some(0), "{o}");
        assert_eq!(o.stdout, "rc=126\n", "{o}");
        assert!(o.has_denial("mutable_native"), "{o}");
    }
}

#[test]
fn run_passes_the_exit_status_through() {
    for who in identities() {
        let f = Fixture::for_user("cli-status", who);
        let o = run(cli(&f).args(["run", "--", "sh", "-c", "exit 7"]));
        assert_eq!(o.code, Some(7), "{o}");
        let o = run(cli(&f)
            .args(["run", "--workspace"])
            .arg(&f.ws)
            .args(["--", "no-such-command-anywhere"]));
        assert_eq!(o.code, Some(127), "{o}");
    }
}

#[test]
fn run_with_profiles_and_audit() {
    for who in identities() {
        let f = Fixture::for_user("cli-profiles", who);
        // In the write set: a sealed session may write nothing else.
        let audit = f.tmp.join("cli-audit.jsonl");
        let o = run(cli(&f)
            .args(["run", "--profile", "development", "--audit"])
            .arg(&audit)
            .args(["--", "./payload", "dev"]));
        assert_eq!(o.code, Some(0), "{o}");
        assert!(o.ran(), "{o}");
        let o =
            run(cli(&f)
                .args(["run", "--audit"])
                .arg(&audit)
                .args(["--", "sh", "-c", "./payload"]));
        assert_eq!(o.code, Some(126), "{o}");
        let records = read_audit(&audit);
        let (notices, decisions): (Vec<_>, Vec<_>) =
            records.iter().partition(|r| r["decision"] == "notice");
        assert_eq!(decisions.len(), 1, "{records:?}");
        assert_eq!(decisions[0]["reason"], "mutable_native");
        // The development session is reduced, and its start record says so.
        assert_eq!(notices.len(), 1, "{records:?}");
        assert_eq!(notices[0]["path"], "reduced:development");
    }
}

#[test]
fn check_json_reports_reason_and_path() {
    for who in identities() {
        let f = Fixture::for_user("cli-check", who);
        let o = run(cli(&f).args(["check", "--json", "--", "./payload"]));
        assert_eq!(o.code, Some(1), "{o}");
        let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).unwrap();
        assert_eq!(v["decision"], "deny");
        assert_eq!(v["reason"], "mutable_native");
        assert_eq!(v["path"].as_str().unwrap(), s(&f.payload));
        assert!(!o.ran(), "check runs nothing\n{o}");

        f.write_exec(
            &f.ws.join("s.sh"),
            format!("#!{}\n", s(&f.payload)).as_bytes(),
        );
        let o = run(cli(&f).args(["check", "--json", "--", "./s.sh"]));
        let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).unwrap();
        assert_eq!(v["reason"], "mutable_native");
        assert_eq!(
            v["path"].as_str().unwrap(),
            s(&f.payload),
            "the interpreter decided"
        );

        let o = run(cli(&f).args(["check", "--json", "--", "true"]));
        assert_eq!(o.code, Some(0), "{o}");
        let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).unwrap();
        assert_eq!(v["decision"], "allow");

        let o = run(cli(&f).args(["check", "--", "./payload"]));
        assert!(o.stdout.starts_with("deny mutable_native: "), "{o}");
    }
}

#[test]
fn policy_validate_good_and_bad_files() {
    for who in identities() {
        let f = Fixture::for_user("cli-validate", who);
        let good = f.base.join("good.toml");
        std::fs::write(&good, f.policy("strict", &f.runtime())).unwrap();
        let o = run(cli(&f).args(["policy", "validate"]).arg(&good));
        assert_eq!(o.code, Some(0), "{o}");
        assert!(o.stdout.starts_with("ok: "), "{o}");
        for (name, text) in [
            (
                "unknown-key.toml",
                format!("{}colour = \"red\"\n", f.strict()),
            ),
            (
                "too-many.toml",
                format!(
                    "{}allow_commands = [{}]\n",
                    f.strict(),
                    (0..257)
                        .map(|i| format!("\"c{i}\""))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            ),
            ("no-version.toml", "profile = \"strict\"\n".to_string()),
            ("table.toml", format!("{}[other]\nx = 1\n", f.strict())),
        ] {
            let p = f.base.join(name);
            std::fs::write(&p, text).unwrap();
            let o = run(cli(&f).args(["policy", "validate"]).arg(&p));
            assert_eq!(o.code, Some(1), "[{name}] {o}");
            assert!(o.stderr.contains("policy_invalid"), "[{name}] {o}");
        }
        // `policy default` output validates.
        let o = run(cli(&f)
            .args(["policy", "default", "--workspace"])
            .arg(&f.ws));
        assert_eq!(o.code, Some(0), "{o}");
        let p = f.base.join("default.toml");
        std::fs::write(&p, &o.stdout).unwrap();
        assert_eq!(
            run(cli(&f).args(["policy", "validate"]).arg(&p)).code,
            Some(0)
        );
    }
}

#[test]
fn audit_summarises_a_log() {
    for who in identities() {
        let f = Fixture::for_user("cli-audit", who);
        let p = f.strict();
        f.probe(&p, ["execve", "./payload"])
            .assert_denied("mutable_native");
        f.probe(&p, ["execv", "./payload"])
            .assert_denied("mutable_native");
        f.probe(&p, ["--memfd", "fexecve", s(&f.sys_argv)])
            .assert_denied("anonymous_native");
        let o = run(cli(&f).arg("audit").arg(&f.audit));
        assert_eq!(o.code, Some(0), "{o}");
        assert!(o.stdout.contains("3 records"), "{o}");
        assert!(o.stdout.contains("deny   3"), "{o}");
        assert!(o.stdout.contains("mutable_native"), "{o}");
        assert!(o.stdout.contains(&format!("2  {}", s(&f.payload))), "{o}");
        // A line that is not a record: exit 1.
        let mut log = std::fs::read(&f.audit).unwrap();
        log.extend_from_slice(b"not json\n");
        std::fs::write(&f.audit, log).unwrap();
        let o = run(cli(&f).arg("audit").arg(&f.audit));
        assert_eq!(o.code, Some(1), "{o}");
    }
}
