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
use support::{ok, s, session_command, text, world_fixture, Fixture};

/// `execguard run --workspace WS --audit LOG [flags] -- sh -c SCRIPT` as `who`.
fn session(f: &Fixture, who: &Identity, flags: &[&str], script: &str) -> Output {
    let mut c = session_command(f, true, flags, script);
    who.apply(&mut c).env("HOME", f.home());
    c.output().unwrap()
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
        let f = world_fixture("world-readonly", &who);
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
        let f = world_fixture("world-readonly-report", &who);
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

/// A copy of an ELF with setuid and setgid set, by `who` (root: a setuid-root program; a
/// non-root user: setuid on its own file, setgid on its own group), checked set inside.
fn plant_setuid(p: &Path) -> String {
    format!(
        "cp /bin/true {p} && chmod 6755 {p} && test -u {p} && test -g {p} && echo set {p}",
        p = s(p)
    )
}

#[test]
fn setuid_bits_left_anywhere_in_what_outlives_the_session_are_cleared_in_every_profile() {
    for profile in ["strict", "development"] {
        for who in identities() {
            let f = world_fixture(&format!("world-setuid-{profile}"), &who);
            let label = format!("{} {profile}", who.label());
            let shared = f.home().join(".shared");
            std::fs::create_dir_all(&shared).unwrap();
            who.own(&shared);
            // The operator's own setuid file from before the session: not the session's, kept.
            let old = f.ws.join("operators-own");
            std::fs::copy("/bin/true", &old).unwrap();
            who.own(&old);
            std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o2755)).unwrap();
            // The sweep takes files changed since a second before the start (ctime has whole
            // seconds on some file systems): this one is older.
            std::thread::sleep(std::time::Duration::from_millis(2100));
            let planted = [
                f.ws.join("left"),
                f.ws.join("deep/er/left"),
                f.tmp.join("left"),
                shared.join("left"),
            ];
            let script = format!(
                "mkdir -p {} && {}",
                s(&f.ws.join("deep/er")),
                planted
                    .iter()
                    .map(|p| plant_setuid(p))
                    .collect::<Vec<_>>()
                    .join(" && ")
            );
            let o = session(
                &f,
                &who,
                &[
                    "--profile",
                    profile,
                    "--allow-shared-temp",
                    "--share",
                    s(&shared),
                ],
                &script,
            );
            ok(&o, &label);
            // The control: inside, every bit was set.
            assert_eq!(text(&o.stdout).lines().count(), planted.len(), "{label}");
            let err = text(&o.stderr);
            let audit = std::fs::read_to_string(&f.audit).unwrap();
            for p in &planted {
                let mode = std::fs::metadata(p).unwrap().mode();
                assert_eq!(mode & 0o7000, 0, "{label}: {} is {mode:o}", p.display());
                assert!(
                    err.contains(&format!("capabilities the session left on {}", s(p))),
                    "{label}: {}\n{err}",
                    p.display()
                );
                assert!(
                    audit
                        .lines()
                        .any(|l| l.contains("privileges_cleared") && l.contains(s(p))),
                    "{label}: {} not recorded",
                    p.display()
                );
            }
            assert_eq!(
                std::fs::metadata(&old).unwrap().mode() & 0o7000,
                0o2000,
                "{label}: the operator's own file"
            );
        }
    }
}

/// In the session's own `/tmp` (the default world) a setuid copy never reaches the
/// operator's `/tmp` at all.
#[test]
fn a_setuid_copy_in_the_sessions_own_tmp_is_gone_with_it() {
    for who in identities() {
        let f = world_fixture("world-setuid-own-tmp", &who);
        let p = f.tmp.join("left");
        let script = format!("mkdir -p {} && {}", s(&f.tmp), plant_setuid(&p));
        let o = session(&f, &who, &[], &script);
        ok(&o, "the session");
        assert_eq!(text(&o.stdout).lines().count(), 1, "{}", who.label());
        assert!(!p.exists(), "{}: {} outside", who.label(), p.display());
    }
}
