//! Every refusal reaches the person, with its way forward (issue 30): the guard's line keeps
//! the whole path and ends with what to do; an `access(X_OK)` "no" the guard decided (make
//! asks before it runs a program) is reported like the exec's refusal, once per file; a
//! `PATH` search is one decision and one record. Sealed `execguard run` sessions, as root and
//! as the non-root user.

mod support;

use execguard_testkit::{identities, Identity};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{denial_lines, text};

const DEVELOPMENT_WAY: &str = "this profile runs native code the session wrote only from the workspace, the session's temp directory (`$TMPDIR`, its own /tmp) and its home, never from /dev/shm or the runtime directory: build or install it there";

const STRICT_WAY: &str = "native code written in this session does not run under strict; to run what the workspace builds, start the session with `execguard run --profile development`";

/// A scenario's directories (`support::Scene`) and what these tests do in them.
struct Scene(support::Scene);

impl std::ops::Deref for Scene {
    type Target = support::Scene;
    fn deref(&self) -> &support::Scene {
        &self.0
    }
}

impl Scene {
    fn new(who: Identity, name: &str) -> Scene {
        Scene(support::Scene::new(who, &format!("refusals-{name}")))
    }

    /// An ELF the session "built": a copy of `/bin/true` at `rel` in the workspace.
    fn program(&self, rel: &str) -> PathBuf {
        let p = self.ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy("/bin/true", &p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        self.who.own(&self.base);
        p
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.ws.join(rel), text).unwrap();
        self.who.own(&self.base);
    }

    /// `execguard run --profile PROFILE -- sh -c SCRIPT` in the workspace.
    fn run(&self, profile: &str, script: &str) -> Output {
        self.session(profile, script).output().unwrap()
    }

    /// The guard's refusals in the audit log.
    fn refusals(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["decision"] == "deny")
            .collect()
    }
}

fn assert_one_line(out: &Output, reason: &str, path: &Path, way: &str, who: &Identity) {
    let err = text(&out.stderr);
    let lines = denial_lines(&err);
    assert_eq!(
        lines,
        vec![(
            reason.to_string(),
            path.display().to_string(),
            way.to_string()
        )],
        "{}: stderr:\n{err}",
        who.label()
    );
}

#[test]
fn the_refusal_line_keeps_the_whole_path_and_ends_with_the_way_forward() {
    for who in identities() {
        let sc = Scene::new(who, "line");
        // Far longer than the 119 bytes the line used to keep.
        let deep = format!("{}/prog", vec!["d".repeat(60); 5].join("/"));
        let prog = sc.program(&deep);
        let out = sc.run("strict", &format!("./{deep}"));
        assert_eq!(out.status.code(), Some(126), "{}", who.label());
        assert_one_line(&out, "mutable_native", &prog, STRICT_WAY, &who);
        // Past the documented bound (ShownPath::MAX, 512 bytes) a path is cut, and says so.
        let deeper = format!("{}/prog", vec!["e".repeat(60); 10].join("/"));
        let prog = sc.program(&deeper);
        let full = prog.display().to_string();
        let out = sc.run("strict", &format!("./{deeper}"));
        let lines = denial_lines(&text(&out.stderr));
        assert_eq!(lines.len(), 1, "{}: {lines:?}", who.label());
        let want = format!("{}...[cut: {} more bytes]", &full[..512], full.len() - 512);
        assert_eq!(lines[0].1, want, "{}", who.label());
        assert_eq!(lines[0].2, STRICT_WAY, "{}", who.label());
        // The way forward works: under development the same program runs.
        let out = sc.run("development", &format!("./{deep} && echo ran"));
        assert_eq!(
            text(&out.stdout),
            "ran\n",
            "{}: {}",
            who.label(),
            text(&out.stderr)
        );
    }
}

#[test]
fn make_test_says_why_it_cannot_run_the_program_and_records_it() {
    for who in identities() {
        let sc = Scene::new(who, "make");
        let prog = sc.program("prog");
        sc.write("Makefile", "test:\n\t./prog\n");
        let out = sc.run("strict", "make -s test");
        assert_ne!(out.status.code(), Some(0), "{}", who.label());
        // make asks access(X_OK) and stops at its "no": that no is the guard's, and said.
        assert_one_line(&out, "mutable_native", &prog, STRICT_WAY, &who);
        let records = sc.refusals();
        assert_eq!(records.len(), 1, "{}: {records:?}", who.label());
        assert_eq!(records[0]["reason"], "mutable_native");
        assert_eq!(records[0]["path"], prog.display().to_string());
        assert!(
            ["access", "faccessat", "eaccess"].contains(&records[0]["entry"].as_str().unwrap()),
            "{}: {records:?}",
            who.label()
        );
    }
}

#[test]
fn a_probe_in_a_loop_is_one_record_and_the_kernels_own_no_is_none() {
    for who in identities() {
        let sc = Scene::new(who, "probe");
        let prog = sc.program("prog");
        // No execute bit: the kernel's own answer, nothing of the guard's to say.
        sc.write("plain", "#!/bin/sh\n");
        let out = sc.run(
            "strict",
            "for i in 1 2 3 4 5; do test -x ./prog || echo no; done; test -x ./plain || echo plain",
        );
        assert_eq!(
            text(&out.stdout),
            "no\nno\nno\nno\nno\nplain\n",
            "{}",
            who.label()
        );
        assert_one_line(&out, "mutable_native", &prog, STRICT_WAY, &who);
        assert_eq!(sc.refusals().len(), 1, "{}", who.label());
    }
}

#[test]
fn a_path_search_is_one_decision_and_one_record() {
    for who in identities() {
        let sc = Scene::new(who, "search");
        let first = sc.program("a/tool");
        for d in ["b", "c", "d"] {
            sc.program(&format!("{d}/tool"));
        }
        let ws = sc.ws.display();
        // env(1) searches with execvp.
        let out = sc.run(
            "strict",
            &format!("PATH={ws}/a:{ws}/b:{ws}/c:{ws}/d:/usr/bin:/bin env tool; echo rc=$?"),
        );
        assert!(text(&out.stdout).contains("rc=126"), "{}", who.label());
        assert_one_line(&out, "mutable_native", &first, STRICT_WAY, &who);
        let records = sc.refusals();
        assert_eq!(records.len(), 1, "{}: {records:?}", who.label());
        assert_eq!(records[0]["entry"], "execvp");
    }
}

#[test]
fn a_refusal_a_child_swallowed_reaches_the_person_when_the_session_ends() {
    for who in identities() {
        let sc = Scene::new(who, "summary");
        let prog = sc.program("prog");
        // Like cargo, npm or ctest: the child's stderr goes elsewhere than the person's.
        let out = sc.run(
            "strict",
            "./prog 2>/dev/null; ./prog 2>/dev/null; make -s -f /dev/null 2>/dev/null; echo done",
        );
        let err = text(&out.stderr);
        assert_eq!(text(&out.stdout), "done\n", "{}: {err}", who.label());
        assert!(denial_lines(&err).is_empty(), "{}: {err}", who.label());
        let summary: Vec<&str> = err
            .lines()
            .skip_while(|l| !l.starts_with("execguard: session summary: "))
            .collect();
        assert_eq!(
            summary,
            vec![
                format!(
                    "execguard: session summary: 2 refusals (audit log {}):",
                    sc.audit.display()
                )
                .as_str(),
                format!(
                    "execguard:   2 x mutable_native, first {} -- {STRICT_WAY}",
                    prog.display()
                )
                .as_str(),
            ],
            "{}: {err}",
            who.label()
        );
        // A session without refusals ends without a summary.
        let out = sc.run("strict", "true");
        assert!(
            !text(&out.stderr).contains("session summary"),
            "{}",
            who.label()
        );
    }
}

#[test]
fn development_says_why_a_program_written_where_the_kernel_will_not_run_it_does_not_run() {
    for who in identities() {
        let sc = Scene::new(who, "write-only");
        let name = format!("execguard-write-only-{}-{}", who.uid(), std::process::id());
        // Copied in the session, as a build would write it: /dev/shm is on the write side in
        // development too (the kernel refuses it: Landlock, noexec), as is the runtime dir
        // /run/user/UID (the same rule: guard/policy's rule rows); the session's own $TMPDIR
        // runs what it built.
        let script = format!(
            "cp /bin/true /dev/shm/{name} && /dev/shm/{name}; echo shm=$?; \
             cp /bin/true /dev/shm/{name}-p; test -x /dev/shm/{name}-p || echo probe-no; \
             rm -f /dev/shm/{name} /dev/shm/{name}-p; \
             cp /bin/true \"$TMPDIR/t\" && \"$TMPDIR/t\" && echo tmp-ran"
        );
        let out = sc.run("development", &script);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(
            stdout,
            "shm=126\nprobe-no\ntmp-ran\n",
            "{}: {err}",
            who.label()
        );
        let line = |path: String| {
            (
                "mutable_native".to_string(),
                path,
                DEVELOPMENT_WAY.to_string(),
            )
        };
        assert_eq!(
            denial_lines(&err),
            vec![
                line(format!("/dev/shm/{name}")),
                line(format!("/dev/shm/{name}-p"))
            ],
            "{}: {err}",
            who.label()
        );
        // The exec and the probe are one record each, and reach the summary.
        let records = sc.refusals();
        assert_eq!(records.len(), 2, "{}: {records:?}", who.label());
        assert!(
            err.contains("execguard: session summary: 2 refusals"),
            "{}: {err}",
            who.label()
        );
        // A shared /tmp (--allow-shared-temp) is on the write side, and said.
        let out = sc
            .session_with(
                "development",
                &["--allow-shared-temp"],
                &format!("cp /bin/true /tmp/{name} && /tmp/{name}; echo rc=$?; rm -f /tmp/{name}"),
            )
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(text(&out.stdout), "rc=126\n", "{}: {err}", who.label());
        assert_eq!(
            denial_lines(&err),
            vec![line(format!("/tmp/{name}"))],
            "{}: {err}",
            who.label()
        );
    }
}
