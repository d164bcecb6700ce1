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
        c.arg("run").args(options);
        // A policy file names its workspace itself.
        if !options.contains(&"--policy") {
            c.arg("--workspace").arg(&self.ws);
        }
        c.args(["--", "/bin/sh", "-c", script])
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
"$AA" closefrom ./evil || echo CLOSEFROM_NOT_REFUSED
"$AA" storm 40 ./evil 2>/dev/null
"$AA" selfkill 20 ./evil 2>/dev/null
echo FORGED $("$AA" forge "$(ls "$S"/run/*.sock | head -n1)")
echo END
"#;

/// Every attack on the log fails, every refusal is in it, whole, and it verifies.
#[test]
fn a_session_cannot_erase_its_kept_audit() {
    for who in identities() {
        let s = Session::new(&who, "attacks");
        attack_and_check(&who, &s, &[]);
    }
}

/// A `--policy FILE` session keeps its log the same way, even with `$HOME` (the state
/// directory) in the file's write set and an `audit_log` of its own named there: that file
/// is never written, the kept log holds every refusal and verifies.
#[test]
fn a_policy_file_session_keeps_its_audit_the_same_way() {
    for who in identities() {
        let s = Session::new(&who, "policy");
        let own = s.ws.join("own.jsonl");
        let policy = s.base.join("policy.toml");
        std::fs::write(
            &policy,
            format!(
                "version = 1\nworkspace = \"{}\"\nmutable_roots = [\"{}\"]\naudit_log = \"{}\"\nseal = true\n",
                s.ws.canonicalize().unwrap().display(),
                s.home.canonicalize().unwrap().display(),
                own.display()
            ),
        )
        .unwrap();
        attack_and_check(&who, &s, &["--policy", policy.to_str().unwrap()]);
        assert!(
            !own.exists(),
            "{}: the file's own log was written",
            who.label()
        );
    }
}

fn attack_and_check(who: &Identity, s: &Session, options: &[&str]) {
    {
        let label = who.label();
        let out = s.run(who, options, ATTACKS);
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
            "CLOSEFROM_NOT_REFUSED",
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
        // ./evil, 100 more, env -i, closeall, closefrom: 104; the storm's 20 that were not
        // killed, and any killed one (the storm's 20, selfkill's 20) that got as far as its
        // record.
        assert!(
            (124..=164).contains(&refusals),
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
        // The forged record is kept as what it is: the sender's pid and uid as the kernel
        // gave them, the writer's time; what it claimed (pid 1, uid 0, time 1.5) is dropped.
        let forged = stdout
            .lines()
            .find_map(|l| l.strip_prefix("FORGED "))
            .unwrap_or_else(|| panic!("{label}: {stdout}"));
        let said: Vec<&str> = forged.split_whitespace().collect();
        assert_eq!(
            said.get(2),
            Some(&"+"),
            "{label}: the writer's answer: {forged}"
        );
        let kept: Vec<_> = records.iter().filter(|r| r["path"] == "/forged").collect();
        assert_eq!(kept.len(), 1, "{label}");
        assert_eq!(
            kept[0]["pid"].to_string(),
            said[0],
            "{label}: {:?}",
            kept[0]
        );
        assert_eq!(kept[0]["uid"], u64::from(who.uid()), "{label}");
        assert_ne!(kept[0]["time"], 1.5, "{label}");
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

/// Waits (at most 60 s) until `path` exists, while the session `child` runs.
fn wait_for(path: &Path, child: &mut std::process::Child) {
    for _ in 0..1200 {
        if path.exists() {
            return;
        }
        if child.try_wait().unwrap().is_some() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!("the session ended before {}: {err}", path.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} never appeared", path.display());
}

/// Fills the file system of `dir` with one file until it refuses (ENOSPC).
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write as _;
    let filler = dir.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    while f.write_all(&chunk[..1]).is_ok() {}
    filler
}

/// A full disk under the state directory (a small tmpfs; root, for the mount): a session
/// that cannot write its first record does not start (`audit_unwritable`) and runs nothing;
/// records that could not be written while the disk was full are counted in an `audit_lost`
/// notice once it has room again, no part of them stays, the refusals still stood, and the
/// log verifies.
#[test]
fn a_full_disk_refuses_the_start_and_loses_no_record_silently() {
    if !execguard_testkit::require_root("mounting a small tmpfs as the state directory") {
        return;
    }
    for who in identities() {
        let label = who.label();
        let s = Session::new(&who, "full");
        // XDG_STATE_HOME, outside $HOME: a non-root session's home layer cannot cover a
        // mount beneath it.
        let state_parent = s.base.join("xdg-state");
        std::fs::create_dir_all(&state_parent).unwrap();
        let state = state_parent.join("execguard");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size=256k,mode=0755,uid={}", who.uid()))
            .arg("execguard-test-full")
            .arg(&state_parent)
            .status()
            .unwrap();
        assert!(mounted.success(), "{label}: mount");
        struct Unmount(PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = Command::new("umount").arg("-l").arg(&self.0).status();
            }
        }
        let _unmount = Unmount(state_parent.clone());

        // Full before the start: nothing runs.
        let filler = fill(&state_parent);
        let run = |script: &str| {
            let mut c = Command::new(&tools().cli);
            who.apply(&mut c);
            c.arg("run")
                .arg("--workspace")
                .arg(&s.ws)
                .args(["--", "/bin/sh", "-c", script])
                .current_dir(&s.ws)
                .env("HOME", &s.home)
                .env("XDG_RUNTIME_DIR", s.base.join("runtime"))
                .env("XDG_STATE_HOME", &state_parent)
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c
        };
        let out = run("touch ran").output().unwrap();
        let err = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{label}: {err}");
        assert!(err.contains("audit_unwritable"), "{label}: {err}");
        assert!(!s.ws.join("ran").exists(), "{label}: the command ran");
        std::fs::remove_file(&filler).unwrap();

        // Full in the middle of the session.
        let mut child = run(
            "./evil; echo a=$?; touch ready; while [ ! -e go ]; do sleep 0.05; done; \
                 i=0; while [ $i -lt 30 ]; do ./evil 2>/dev/null; echo full=$?; i=$((i+1)); done; \
                 touch filled; while [ ! -e go2 ]; do sleep 0.05; done; ./evil; echo d=$?",
        )
        .spawn()
        .unwrap();
        wait_for(&s.ws.join("ready"), &mut child);
        let filler = fill(&state_parent);
        std::fs::write(s.ws.join("go"), "").unwrap();
        wait_for(&s.ws.join("filled"), &mut child);
        std::fs::remove_file(&filler).unwrap();
        std::fs::write(s.ws.join("go2"), "").unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = text(&out.stdout);
        // The refusals stood, kept or not.
        assert!(
            stdout.contains("a=126") && stdout.contains("d=126"),
            "{label}: {stdout}"
        );
        assert_eq!(stdout.matches("full=126").count(), 30, "{label}: {stdout}");
        let log = state.join("audit.jsonl");
        let raw = std::fs::read(&log).unwrap();
        assert!(raw.ends_with(b"\n"), "{label}: a torn last line");
        let records = read_audit(&log);
        let lost: Vec<_> = records
            .iter()
            .filter(|r| r["reason"] == "audit_lost")
            .collect();
        // The log's last page may take a few records in, and a notice (shorter than a
        // record) may fit where a record did not: the rest of the 30 are lost and counted,
        // each of the 32 kept or counted, none twice.
        assert!(!lost.is_empty(), "{label}: {records:?}");
        let lost: u64 = lost.iter().map(|r| r["lost"].as_u64().unwrap()).sum();
        let denied = records.iter().filter(|r| r["decision"] == "deny").count() as u64;
        assert!(lost >= 1, "{label}");
        assert_eq!(denied + lost, 32, "{label}: {denied} kept, {lost} lost");
        let v = Command::new(&tools().cli)
            .args(["audit", "verify"])
            .arg(&log)
            .arg("--key")
            .arg(state.join("audit.pub"))
            .output()
            .unwrap();
        assert_eq!(v.status.code(), Some(0), "{label}: {}", text(&v.stderr));
    }
}

/// Breakglass has no seal: the kept log is in the session's reach, which it is told once, and
/// a cut it makes is found by `verify` at its line (the weaker mode, spelled differently).
#[test]
fn breakglass_says_the_kept_audit_is_in_reach_and_verify_finds_a_cut() {
    for who in identities() {
        let label = who.label();
        let s = Session::new(&who, "breakglass");
        let first = s.run(&who, &["--profile", "breakglass"], "true");
        assert_eq!(
            first.status.code(),
            Some(0),
            "{label}: {}",
            text(&first.stderr)
        );
        assert_eq!(s.verify(&s.log()).status.code(), Some(0), "{label}");
        let out = s.run(
            &who,
            &["--profile", "breakglass"],
            "L=$HOME/.local/state/execguard/audit.jsonl; tail -n 1 \"$L\" > \"$L.x\" && cat \"$L.x\" > \"$L\" && echo CUT",
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(stdout.contains("CUT"), "{label}: {stdout}\n{stderr}");
        assert_eq!(
            stderr
                .matches("can reach the kept audit's log and key")
                .count(),
            1,
            "{label}: said once\n{stderr}"
        );
        let v = s.verify(&s.log());
        assert_eq!(v.status.code(), Some(1), "{label}: {}", text(&v.stderr));
        assert!(
            text(&v.stderr).contains(" line 1: "),
            "{label}: {}",
            text(&v.stderr)
        );
    }
}
