//! What a session could leave that gains privileges or rights after it (issue 28, class 3):
//! outside the write set everything is read-only in the session (no `chmod`, `chown`, times
//! or writes there), and a setuid/setgid bit left in what outlives the session is cleared at
//! its end and recorded. Each runs as root and as a non-root user, with a control that shows
//! the same operation takes effect where the session may write.

mod support;

use execguard_testkit::{identities, Identity};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;
use support::{s, tools, Fixture};

/// `execguard run --workspace WS --audit LOG [flags] -- sh -c SCRIPT` as `who`.
fn session(f: &Fixture, who: &Identity, flags: &[&str], script: &str) -> Output {
    let mut c = f.plain(&tools().cli);
    who.apply(&mut c);
    c.env("HOME", f.home())
        .arg("run")
        .arg("--workspace")
        .arg(&f.ws)
        .arg("--audit")
        .arg(&f.audit)
        .args(flags)
        .args(["--", "sh", "-c", script]);
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {:?}\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// A fixture for `who`: the workspace, home and audit log theirs, the fixture's parents
/// traversable.
fn fixture(name: &str, who: &Identity) -> Fixture {
    let f = Fixture::new(name);
    for d in [&f.base, &f.base.parent().unwrap().to_path_buf()] {
        let mode = std::fs::metadata(d).unwrap().permissions().mode();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode | 0o711)).unwrap();
    }
    who.own(&f.ws);
    who.own(&f.home());
    who.own(&f.runtime_dir());
    who.own(&f.tmp);
    f.for_identity(who);
    f
}

/// Tries `chmod`, `chown`, a write and a change of times on `p`; prints one `name=status`
/// word per try.
fn tamper(p: &Path) -> String {
    format!(
        "p={p}; chmod 4777 $p 2>/dev/null; echo chmod=$?; chown 65534:65534 $p 2>/dev/null || chown $(id -u):$(id -g) $p 2>/dev/null; echo chown=$?; (echo planted >> $p) 2>/dev/null; echo write=$?; touch -m -d 2001-01-01 $p 2>/dev/null; echo times=$?",
        p = s(p)
    )
}

#[test]
fn outside_the_write_set_the_session_changes_no_file_not_even_as_root() {
    for who in identities() {
        let f = fixture("world-readonly", &who);
        let dir = f.base.join("operator");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tool");
        std::fs::write(&file, "operator\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        who.own(&dir);
        who.own(&file);
        let before = std::fs::metadata(&file).unwrap();
        let inside = f.ws.join("mine");
        std::fs::write(&inside, "mine\n").unwrap();
        who.own(&inside);
        let o = session(
            &f,
            &who,
            &[],
            &format!("{}; {}", tamper(&file), tamper(&inside)),
        );
        ok(&o, "the session");
        let out = text(&o.stdout);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 8, "{}: {out}", who.label());
        // Outside: every try refused.
        for l in &lines[..4] {
            assert!(!l.ends_with("=0"), "{}: outside, {l}\n{out}", who.label());
        }
        // The control: in the workspace each one takes effect.
        for l in &lines[4..] {
            assert!(l.ends_with("=0"), "{}: inside, {l}\n{out}", who.label());
        }
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "operator\n",
            "{}",
            who.label()
        );
        assert_eq!(after.mode() & 0o7777, 0o644, "{}", who.label());
        assert_eq!(
            (after.uid(), after.gid(), after.mtime()),
            (before.uid(), before.gid(), before.mtime()),
            "{}",
            who.label()
        );
        assert_eq!(
            std::fs::metadata(&inside).unwrap().mode() & 0o7000,
            0,
            "{}: the workspace's setuid bit is cleared at the end",
            who.label()
        );
    }
}

/// The `-v` report says how much of the outside was made read-only.
#[test]
fn the_report_counts_the_read_only_mounts_outside() {
    for who in identities() {
        let f = fixture("world-readonly-report", &who);
        let o = session(&f, &who, &["-v"], "true");
        ok(&o, "the session");
        let err = text(&o.stderr);
        let line = err
            .lines()
            .find(|l| l.contains("outside the write set: "))
            .unwrap_or_else(|| panic!("{}: no line in {err}", who.label()));
        let n: usize = line
            .split("outside the write set: ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(n >= 1, "{}: {line}", who.label());
    }
}
