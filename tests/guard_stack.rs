//! The guard needs little more stack than the call it replaces: every exec entry point works
//! from a 16 KiB stack (a thread's; for `clone`, the child's own, smaller still), allowed,
//! refused and starting a workspace script through its interpreter, and so does a shell under
//! `ulimit -s 24` (bash itself needs 12-14 KiB there). The decisions themselves run on the guard's own stack
//! (`guard/preload/src/decision_stack.rs`). Measured on the library as it ships (release):
//! stack use depends on code generation.

mod support;

use execguard_testkit::identities;
use support::*;

const STACK_KIB: &str = "16";
/// The main thread's limit in the shell test (where the stack starts within its page varies
/// with address randomisation: the command runs several times).
const ULIMIT_KIB: &str = "24";
const SHELL_RUNS: usize = 10;
/// A `clone` child's stack: what the caller gives it, as posix_spawn implementations do.
const CLONE_STACK_KIB: &str = "6";

const ENTRIES: [&str; 12] = [
    "execve",
    "execvp",
    "posix_spawn",
    "posix_spawnp",
    "posix_spawnp_actions",
    "system",
    "popen",
    "access",
    "dlopen",
    "fork",
    "vfork",
    "clone",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// A system program or library: it runs or loads.
    Runs,
    /// The workspace payload: refused with `mutable_native`, and the caller carries on.
    Refused,
    /// A workspace script: started through its interpreter.
    Script,
}

fn stack_program() -> std::path::PathBuf {
    compile(&support_dir(), "stack.c", "stack", &["-pthread", "-ldl"])
}

/// What went wrong with one call, if anything.
fn misbehaviour(entry: &str, expect: Expect, o: &Outcome) -> Option<String> {
    let report = o.report();
    let child_status = report.as_ref().and_then(|r| r.status);
    if o.code.is_none_or(|c| c >= 128) || child_status.is_some_and(|s| s >= 128) {
        return Some(format!(
            "crashed (exit {:?}, child {child_status:?})",
            o.code
        ));
    }
    let ok = match (entry, expect) {
        ("access", Expect::Refused) | ("dlopen", Expect::Script) => return None,
        ("access", _) | ("dlopen", Expect::Runs) => report.is_some_and(|r| r.ret == 0),
        (_, Expect::Refused) => o.has_denial("mutable_native") && !o.ran(),
        // popen reads the program's output itself: its status says whether it ran.
        ("popen", _) => child_status == Some(0),
        (_, Expect::Runs) => o.ran(),
        (_, Expect::Script) => o.stdout.contains("SCRIPT-RAN"),
    };
    (!ok).then(|| "did not do what it should".to_string())
}

#[test]
fn every_entry_point_works_on_a_16_kib_stack() {
    let program = stack_program();
    let lib = release_lib();
    for who in identities() {
        let f = Fixture::new("stack");
        f.for_identity(&who);
        let script = f.ws.join("script");
        f.write_exec(&script, b"#!/bin/sh\necho SCRIPT-RAN\n");
        // Sealed: a workspace script is started through its interpreter (the launch).
        let policy = f.policy("strict", "seal = true\n");
        let mut failures = Vec::new();
        for entry in ENTRIES {
            let kib = if entry == "clone" {
                CLONE_STACK_KIB
            } else {
                STACK_KIB
            };
            let runs = if entry == "dlopen" {
                "libm.so.6".into()
            } else {
                f.sys_argv.clone().into_os_string()
            };
            let cases = [
                (Expect::Runs, runs),
                (Expect::Refused, f.payload.clone().into_os_string()),
                (Expect::Script, script.clone().into_os_string()),
            ];
            for (expect, target) in cases {
                let mut plain = f.plain(&program);
                plain.arg(kib).arg(entry).arg(&target);
                let without = run(who.apply(&mut plain));
                if expect != Expect::Refused {
                    assert!(
                        misbehaviour(entry, expect, &without).is_none(),
                        "{} {entry} {expect:?} fails without the guard: the probe is wrong\n{without}",
                        who.label()
                    );
                }
                let mut cmd = f.guarded(&policy, &program);
                cmd.env("LD_PRELOAD", lib).arg(kib).arg(entry).arg(&target);
                let o = run(who.apply(&mut cmd));
                if let Some(what) = misbehaviour(entry, expect, &o) {
                    failures.push(format!("{entry} on {kib} KiB, {expect:?}: {what}\n{o}"));
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{}: {} of {} calls misbehaved:\n{}",
            who.label(),
            failures.len(),
            ENTRIES.len() * 3,
            failures.join("\n")
        );
    }
}

#[test]
fn a_shell_under_ulimit_s_24_runs_commands() {
    let lib = release_lib();
    for who in identities() {
        let f = Fixture::new("stack-ulimit");
        f.for_identity(&who);
        let script = f.ws.join("script");
        f.write_exec(&script, b"#!/bin/sh\necho SCRIPT-RAN\n");
        // (The argv printer needs 64 KiB of stack itself: echo stands in for it.)
        let line = format!(
            "ulimit -s {ULIMIT_KIB} && /bin/echo RAN && sh -c '/bin/echo RAN; {script}'",
            script = s(&script)
        );
        let with_env = |cmd: &mut std::process::Command| {
            // An ordinary environment: it lives on the same small stack.
            cmd.env("HOME", "/nonexistent")
                .env("TERM", "xterm-256color")
                .env("SHELL", "/bin/bash")
                .env("LS_COLORS", "rs=0:di=01;34:ln=01;36:".repeat(40))
                .arg("-c")
                .arg(&line);
        };
        let mut plain = f.plain("/bin/bash");
        with_env(&mut plain);
        for _ in 0..SHELL_RUNS {
            let without = run(who.apply(&mut plain));
            assert_eq!(
                without.code,
                Some(0),
                "without the guard: {line}\n{without}"
            );
        }
        for _ in 0..SHELL_RUNS {
            let mut cmd = f.guarded(&f.policy("strict", "seal = true\n"), "/bin/bash");
            cmd.env("LD_PRELOAD", lib);
            with_env(&mut cmd);
            let o = run(who.apply(&mut cmd));
            assert_eq!(o.code, Some(0), "{}: {line}\n{o}", who.label());
            let printed = o.stdout.lines().filter(|l| *l == "RAN").count();
            assert_eq!(printed, 2, "{}: {line}\n{o}", who.label());
            assert!(
                o.stdout.contains("SCRIPT-RAN"),
                "{}: {line}\n{o}",
                who.label()
            );
        }
    }
}
