//! What was checked is what runs: a process that swaps a workspace script and a workspace ELF
//! at one path (`renameat2(RENAME_EXCHANGE)` in a loop) while starting that path must never get
//! the ELF run. The guard starts a mutable script through its interpreter (which reads the
//! file as text) and a file outside the write set by a name the session cannot redirect, so a
//! swap after the check changes nothing. Unsealed, as root and as a non-root user.
//!
//! Each race carries its positive control ([`counts`]): the swaps happened, during execs, and
//! the guard refused the ELF it saw; a racer that does not swap fails every test here.

mod support;

use execguard_testkit::identities;
use support::*;

const N: usize = 3000;

fn race_program() -> &'static std::path::Path {
    static RACE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    RACE.get_or_init(|| compile(&support_dir(), "race.c", "race", &[]))
}

/// What one run of the racer counted.
struct Race {
    /// Runs of the workspace ELF (the attack's success).
    elf: usize,
    /// Runs of the allowed program (the script, or the system program).
    allowed: usize,
    /// Starts the guard refused.
    refused: usize,
    other: usize,
}

/// The racer's `RACE` line, after its positive control: the swapper never failed, swapped,
/// and at least one swap completed during an exec; and the guard refused some starts, so the
/// workspace ELF really was what the path named when it checked. Without these the run
/// proves nothing (a swapper that never swapped passes every assertion on `elf`).
#[track_caller]
fn counts(o: &Outcome, label: &str) -> Race {
    let line = o
        .stdout
        .lines()
        .find(|l| l.starts_with("RACE "))
        .unwrap_or_else(|| panic!("{label}: no RACE line\n{o}"));
    let field = |k: &str| -> usize {
        line.split(' ')
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{label}: no {k}= in {line}"))
            .parse()
            .unwrap()
    };
    assert_eq!(
        field("swap_errno"),
        0,
        "{label}: a swap failed: {line}\n{o}"
    );
    assert!(
        field("swaps") > 0,
        "{label}: nothing was swapped: {line}\n{o}"
    );
    assert!(
        field("raced") > 0,
        "{label}: no swap happened during an exec: {line}\n{o}"
    );
    let race = Race {
        elf: field("elf"),
        allowed: field("script"),
        refused: field("refused"),
        other: field("other"),
    };
    assert!(
        race.refused > 0,
        "{label}: the guard never saw the ELF (nothing refused): {line}\n{o}"
    );
    race
}

#[test]
fn swapping_a_script_and_an_elf_never_runs_the_elf() {
    let race = race_program();
    for who in identities() {
        let f = Fixture::new("race");
        f.for_identity(&who);
        let dir = f.ws.join("swap");
        std::fs::create_dir_all(&dir).unwrap();
        let (x, y) = (dir.join("x"), dir.join("y"));
        f.write_exec(&x, b"#!/bin/sh\nexit 7\n");
        copy(race, &y);
        who.own(&dir); // the session renames inside it
        let racer = f.sys.join("race");
        copy(race, &racer);
        for way in ["posix_spawn", "execve"] {
            let mut cmd = f.guarded(&f.strict(), &racer);
            cmd.arg(way).arg(&x).arg(&y).arg(N.to_string());
            let o = run(who.apply(&mut cmd));
            // `other`: the interpreter was started for the script and read the ELF swapped in
            // after the decision as text (a syntax error): nothing native ran.
            let Race {
                elf,
                allowed: script,
                ..
            } = counts(&o, &format!("{} {way}", who.label()));
            assert_eq!(
                elf,
                0,
                "{} {way}: the ELF ran {elf} times in {N}\n{}",
                who.label(),
                o.stdout
            );
            assert!(
                script > 0,
                "{} {way}: the script never ran\n{o}",
                who.label()
            );
        }
    }
}

#[test]
fn swapping_a_workspace_symlink_to_a_system_program_never_runs_the_elf() {
    let race = race_program();
    for who in identities() {
        let f = Fixture::new("race-link");
        f.for_identity(&who);
        let dir = f.ws.join("swap");
        std::fs::create_dir_all(&dir).unwrap();
        let racer = f.sys.join("race");
        copy(race, &racer);
        // x: a workspace symlink to a system program (allowed); y: a workspace ELF.
        let (x, y) = (dir.join("x"), dir.join("y"));
        std::os::unix::fs::symlink(&racer, &x).unwrap();
        copy(race, &y);
        who.own(&dir);
        for way in ["posix_spawn", "execve"] {
            let mut cmd = f.guarded(&f.strict(), &racer);
            cmd.arg(way).arg(&x).arg(&y).arg(N.to_string());
            let o = run(who.apply(&mut cmd));
            let Race {
                elf,
                allowed,
                other,
                ..
            } = counts(&o, &format!("{} {way}", who.label()));
            assert_eq!(
                elf,
                0,
                "{} {way}: the ELF ran {elf} times in {N}\n{}",
                who.label(),
                o.stdout
            );
            assert!(
                allowed > 0,
                "{} {way}: the system program never ran\n{o}",
                who.label()
            );
            assert_eq!(other, 0, "{} {way}\n{o}", who.label());
        }
    }
}

/// A name through `/proc/self/fd` (or a descriptor given to `fexecve`) means what the
/// descriptor table says when the kernel reads it, and another thread can change the table
/// after the check: the guard hands the kernel the file's own name. A system program on descriptor 3 is allowed; a workspace ELF dup2'ed
/// there afterwards must never be what runs.
#[test]
fn a_descriptor_swapped_after_the_check_never_runs_the_elf() {
    let race = race_program();
    for who in identities() {
        let f = Fixture::new("race-fd");
        f.for_identity(&who);
        let elf = f.ws.join("elf");
        copy(race, &elf);
        let system = f.sys.join("race");
        copy(race, &system);
        for way in ["posix_spawn-fd", "fexecve-fd"] {
            let mut cmd = f.guarded(&f.strict(), &system);
            cmd.arg(way).arg(&elf).arg(&system).arg(N.to_string());
            let o = run(who.apply(&mut cmd));
            let Race {
                elf: elf_runs,
                allowed,
                other,
                ..
            } = counts(&o, &format!("{} {way}", who.label()));
            let who = who.label();
            assert_eq!(
                elf_runs, 0,
                "{who} {way}: the ELF ran {elf_runs} times\n{}",
                o.stdout
            );
            assert!(
                allowed > 0,
                "{who} {way}: the system program never ran\n{o}"
            );
            assert_eq!(other, 0, "{who} {way}\n{o}");
        }
    }
}

/// A relative name means what the cwd is when the kernel reads it, and another thread can
/// `chdir` after the check: the guard hands the kernel the file's own name. `./x` in a system
/// directory is allowed; the workspace's `./x` must never be what runs.
#[test]
fn a_cwd_changed_after_the_check_never_runs_the_elf() {
    let race = race_program();
    for who in identities() {
        let f = Fixture::new("race-cwd");
        f.for_identity(&who);
        let (ws_dir, sys_dir) = (f.ws.join("d"), f.sys.join("d"));
        for d in [&ws_dir, &sys_dir] {
            std::fs::create_dir_all(d).unwrap();
            copy(race, &d.join("x"));
        }
        let mut cmd = f.guarded(&f.strict(), sys_dir.join("x"));
        cmd.arg("posix_spawn-cwd")
            .arg(&ws_dir)
            .arg(&sys_dir)
            .arg(N.to_string());
        let o = run(who.apply(&mut cmd));
        let Race {
            elf,
            allowed,
            other,
            ..
        } = counts(&o, &who.label());
        assert_eq!(
            elf,
            0,
            "{}: the ELF ran {elf} times in {N}\n{}",
            who.label(),
            o.stdout
        );
        assert!(
            allowed > 0,
            "{}: the system program never ran\n{o}",
            who.label()
        );
        assert_eq!(other, 0, "{}\n{o}", who.label());
    }
}

/// A system script run by a relative name keeps that name as `$0` (the kernel passes the
/// script the name it was given; `bzcmp` and `xzegrep` choose what to do by it): only a
/// relative ELF, whose `argv[0]` is kept anyway, is handed to the kernel by its canonical name.
#[test]
fn a_relative_script_keeps_its_name() {
    for who in identities() {
        let f = Fixture::new("relative-script");
        f.for_identity(&who);
        f.write_exec(&f.sys.join("multi.sh"), b"#!/bin/sh\necho \"ZERO=$0\"\n");
        std::os::unix::fs::symlink("multi.sh", f.sys.join("foo")).unwrap();
        let mut cmd = f.guarded(&f.strict(), "/bin/sh");
        cmd.current_dir(&f.sys).arg("-c").arg("./foo");
        let o = run(who.apply(&mut cmd));
        assert!(
            o.stdout.lines().any(|l| l == "ZERO=./foo"),
            "{}\n{o}",
            who.label()
        );
    }
}
