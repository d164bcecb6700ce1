//! The audit log: one JSON object per line, the documented fields, and no interleaving when
//! many processes are refused at once.

mod support;

use execguard_testkit::identities;
use std::process::Stdio;
use support::*;

#[test]
fn one_json_object_per_decision_with_the_documented_fields() {
    for who in identities() {
        let f = Fixture::for_user("audit-fields", who);
        let p = f.strict();
        let o = f.probe(&p, ["execvpe", "./payload", "x"]);
        o.assert_denied("mutable_native");
        let o = f.probe(&p, ["--memfd", "fexecve", s(&f.sys_argv)]);
        o.assert_denied("anonymous_native");
        let records = f.audit_records();
        assert_eq!(records.len(), 2, "{records:?}");
        let r = &records[0];
        assert_eq!(r["decision"], "deny");
        assert_eq!(r["reason"], "mutable_native");
        assert_eq!(r["entry"], "execvpe");
        assert_eq!(r["tool"], "guard");
        assert_eq!(r["profile"], "strict");
        assert_eq!(r["path"].as_str().unwrap(), s(&f.payload));
        assert_eq!(r["target"], "./payload");
        assert!(r["time"].as_f64().unwrap() > 1.6e9, "{r}");
        assert!(r["pid"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["uid"].as_u64(), Some(u64::from(who.uid())));
        let r = &records[1];
        assert_eq!(r["entry"], "fexecve");
        assert_eq!(r["reason"], "anonymous_native");
        assert!(
            r["path"].as_str().unwrap().starts_with("/memfd:"),
            "the kernel's name for the memfd: {r}"
        );
    }
}

#[test]
fn long_paths_are_cut_and_still_one_json_line() {
    for who in identities() {
        let f = Fixture::for_user("audit-long", who);
        let p = f.strict();
        // A workspace path of ~3900 bytes: the record is cut, not split.
        let mut dir = f.ws.clone();
        while dir.as_os_str().len() < 3800 {
            dir.push("d".repeat(200));
        }
        std::fs::create_dir_all(&dir).unwrap();
        let payload = dir.join("payload");
        copy(&tools().argv, &payload);
        let o = f.probe(&p, ["execve", s(&payload)]);
        o.assert_denied("mutable_native");
        let records = f.audit_records();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0]["reason"], "mutable_native");
        assert!(std::fs::read(&f.audit).unwrap().len() <= 4096);
    }
}

#[test]
fn concurrent_writers_never_interleave() {
    for who in identities() {
        let f = Fixture::for_user("audit-concurrent", who);
        let p = f.strict();
        // Long paths make records of ~1-3 KB, so torn writes would show.
        let mut dir = f.ws.clone();
        dir.push("x".repeat(200));
        dir.push("y".repeat(200));
        std::fs::create_dir_all(&dir).unwrap();
        let payload = dir.join("payload");
        copy(&tools().argv, &payload);
        let (procs, threads, iterations) = (6, 4, 20);
        let children: Vec<_> = (0..procs)
            .map(|_| {
                f.guarded(&p, &tools().probe)
                    .args([
                        "--threads",
                        &threads.to_string(),
                        "--iterations",
                        &iterations.to_string(),
                        "storm",
                        s(&payload),
                    ])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains(&format!("eacces={} other=0", threads * iterations)),
                "{text}"
            );
        }
        let raw = std::fs::read(&f.audit).unwrap();
        assert!(raw.ends_with(b"\n"));
        let records = f.audit_records(); // panics on any line that is not one JSON object
        assert_eq!(records.len(), procs * threads * iterations);
        for r in &records {
            assert_eq!(r["reason"], "mutable_native", "{r}");
            assert_eq!(r["path"].as_str().unwrap(), s(&payload), "{r}");
        }
    }
}

#[test]
fn unwritable_audit_log_is_reported() {
    for who in identities() {
        let f = Fixture::for_user("audit-unwritable", who);
        // The audit log's directory does not exist: the refusal still happens, and says so.
        let p = f.strict().replace(
            s(&f.audit),
            &format!("{}/missing-dir/audit.jsonl", s(&f.base)),
        );
        let o = f.probe(&p, ["execve", s(&f.payload)]);
        o.assert_denied("mutable_native");
        o.assert_exec_failed(EACCES);
        assert!(o.has_denial("audit_unwritable"), "{o}");
        // With audit_allow, an allowed exec whose record cannot be written is refused.
        let p = p.replace(
            "profile = \"strict\"",
            "profile = \"strict\"\naudit_allow = true",
        );
        let o = f.probe(&p, ["execve", s(&f.sys_argv)]);
        assert!(!o.ran(), "{o}");
        o.assert_exec_failed(EACCES);
    }
}
