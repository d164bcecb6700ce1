//! The kept audit (issue 32, docs/audit.md): a session that truncates, rewrites, removes or
//! floods its log, reads the signing key, closes every descriptor before an exec, empties its
//! environment, or is killed in the middle of its records leaves a log whose every record is
//! whole, whose chain and signature verify, and which holds every refusal it made. An edited
//! or cut log fails `execguard audit verify` at the line that changed. As root and as a
//! non-root user.

mod support;

use execguard_testkit::{identities, Identity};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::*;

struct Session {
    base: PathBuf,
    ws: PathBuf,
    home: PathBuf,
}

impl Session {
    fn new(who: &Identity, name: &str) -> Session {
        let base = target_tmp().join(format!("kept-{name}-{}-{}", who.uid(), std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (ws, home, runtime) = (base.join("ws"), base.join("home"), base.join("runtime"));
        for d in [&ws, &home, &runtime] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A native program the session "wrote": every run of it is a refusal.
        std::fs::copy("/bin/true", ws.join("evil")).unwrap();
        who.own(&base);
        Session { base, ws, home }
    }

    fn state(&self) -> PathBuf {
        self.home.join(".local/state/execguard")
    }

    fn log(&self) -> PathBuf {
        self.state().join("audit.jsonl")
    }

    /// `execguard run [options] -- /bin/sh -c SCRIPT` as `who`, with `AA` naming the attack
    /// helper.
    fn run(&self, who: &Identity, options: &[&str], script: &str) -> Output {
        let mut c = Command::new(&tools().cli);
        who.apply(&mut c);
        c.arg("run")
            .args(options)
            .arg("--workspace")
            .arg(&self.ws)
            .args(["--", "/bin/sh", "-c", script])
            .current_dir(&self.ws)
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", self.base.join("runtime"))
            .env_remove("XDG_STATE_HOME")
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("AA", attack_helper())
            .stdin(Stdio::null());
        c.output().unwrap()
    }

    fn verify(&self, log: &Path) -> Output {
        Command::new(&tools().cli)
            .args(["audit", "verify"])
            .arg(log)
            .arg("--key")
            .arg(self.state().join("audit.pub"))
            .output()
            .unwrap()
    }
}

fn attack_helper() -> &'static Path {
    static HELPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HELPER.get_or_init(|| compile(&support_dir(), "audit_attack.c", "audit_attack", &[]))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const ATTACKS: &str = r#"
S=$HOME/.local/state/execguard
L=$S/audit.jsonl
./evil
true > "$L" 2>/dev/null && echo TRUNCATED
echo '{"forged":1}' >> "$L" 2>/dev/null && echo APPENDED
printf 'x' | dd of="$L" conv=notrunc 2>/dev/null && echo REWRITTEN
rm -f "$L" 2>/dev/null; [ -e "$L" ] || echo REMOVED
mv "$L" "$L.x" 2>/dev/null && echo MOVED
rm -rf "$S/run" 2>/dev/null; [ -d "$S/run" ] || echo SOCKETS_REMOVED
cat "$S/key/audit.key" 2>/dev/null && echo KEY_READ
i=0; while [ $i -lt 100 ]; do ./evil 2>/dev/null; i=$((i+1)); done
env -i ./evil 2>/dev/null
"$AA" closeall ./evil || echo CLOSEALL_NOT_REFUSED
"$AA" storm 40 ./evil 2>/dev/null
echo END
"#;

/// Every attack on the log fails, every refusal is in it, whole, and it verifies.
#[test]
fn a_session_cannot_erase_its_kept_audit() {
    for who in identities() {
        let label = who.label();
        let s = Session::new(&who, "attacks");
        let out = s.run(&who, &[], ATTACKS);
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("END"),
            "{label}: {stdout}\n{}",
            text(&out.stderr)
        );
        for said in [
            "TRUNCATED",
            "APPENDED",
            "REWRITTEN",
            "REMOVED",
            "MOVED",
            "SOCKETS_REMOVED",
            "KEY_READ",
            "CLOSEALL_NOT_REFUSED",
        ] {
            assert!(
                !stdout.contains(said),
                "{label}: {said}\n{stdout}\n{}",
                text(&out.stderr)
            );
        }
        let key = std::fs::read_to_string(s.state().join("key/audit.key")).unwrap();
        assert!(!stdout.contains(key.trim()), "{label}: the key was shown");
        let raw = std::fs::read(s.log()).unwrap();
        assert!(raw.ends_with(b"\n"), "{label}: a torn last line");
        let records = read_audit(&s.log()); // every line one whole record
        let evil = s.ws.canonicalize().unwrap().join("evil");
        let refusals = records
            .iter()
            .filter(|r| r["decision"] == "deny" && r["path"] == evil.to_str().unwrap())
            .count();
        // ./evil, 100 more, env -i, closeall: 103; the storm's 20 that were not killed, and
        // any killed one that got as far as its record.
        assert!(
            (123..=143).contains(&refusals),
            "{label}: {refusals} refusals\n{}",
            String::from_utf8_lossy(&raw)
        );
        assert_eq!(records[0]["reason"], "session_start", "{label}");
        let last = records.last().unwrap();
        assert_eq!(last["reason"], "session_end", "{label}");
        assert_eq!(last["assurance"], "strict", "{label}");
        assert_eq!(
            last["workspace"],
            s.ws.canonicalize().unwrap().to_str().unwrap()
        );
        let v = s.verify(&s.log());
        assert_eq!(v.status.code(), Some(0), "{label}: {}", text(&v.stderr));
        assert!(text(&v.stdout).contains("verified"), "{label}");
    }
}

/// Positive control: the same attacks on a log the session itself writes (`--audit FILE`, the
/// weaker mode) succeed, so the test above would see them if they did.
#[test]
fn the_same_attacks_erase_a_log_the_session_writes() {
    for who in identities() {
        let label = who.label();
        let s = Session::new(&who, "control");
        let own = s.home.join("own.jsonl");
        let script = ATTACKS.replace("L=$S/audit.jsonl", &format!("L={}", own.display()));
        let out = s.run(&who, &["--audit", own.to_str().unwrap()], &script);
        let stdout = text(&out.stdout);
        assert!(stdout.contains("TRUNCATED"), "{label}: {stdout}");
        assert!(stdout.contains("REMOVED"), "{label}: {stdout}");
    }
}

/// An edit, a removed line and a cut are each found at their line.
#[test]
fn an_edited_or_cut_kept_log_fails_verify_at_its_line() {
    let who = Identity::Current;
    let s = Session::new(&who, "edits");
    let out = s.run(&who, &[], "./evil; ./evil; ./evil; true");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(s.log()).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() >= 6, "{log}");
    let check = |name: &str, edited: String, line: usize| {
        let f = s.base.join(name);
        std::fs::write(&f, edited).unwrap();
        let v = s.verify(&f);
        let err = text(&v.stderr);
        assert_eq!(v.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(&format!(" line {line}: ")), "{name}: {err}");
    };
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let mut edited = lines.clone();
    let changed = lines[3].replacen("\"deny\"", "\"allow\"", 1);
    edited[3] = &changed;
    check("edited", join(&edited), 4);
    let mut removed = lines.clone();
    removed.remove(2);
    check("removed", join(&removed), 3);
    check("cut", join(&lines[..4]), 5);
    check("torn", log[..log.len() - 5].to_string(), lines.len());
    // The log itself is whole.
    assert_eq!(s.verify(&s.log()).status.code(), Some(0));
}

/// A session started inside a kept one sends its records to the same writer: its refusal is
/// in the outer session's kept log, which verifies.
#[test]
fn a_session_inside_a_kept_one_keeps_its_records_there() {
    for who in identities() {
        let label = who.label();
        let s = Session::new(&who, "nested");
        let script = format!(
            "{} run --workspace \"$PWD\" -- ./evil; echo INNER=$?",
            tools().cli.display()
        );
        let out = s.run(&who, &[], &script);
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("INNER=126"),
            "{label}: {stdout}\n{}",
            text(&out.stderr)
        );
        let records = read_audit(&s.log());
        assert!(
            records
                .iter()
                .any(|r| r["reason"] == "mutable_native" && r["tool"] == "run"),
            "{label}: the inner first command's refusal: {records:?}"
        );
        let v = s.verify(&s.log());
        assert_eq!(v.status.code(), Some(0), "{label}: {}", text(&v.stderr));
    }
}
