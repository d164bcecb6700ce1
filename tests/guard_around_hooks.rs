//! libc functions reached around the hooked names: by address (`dlsym`/`dlvsym` on libc's own
//! handle, `RTLD_NEXT`), through libc's private aliases (`__libc_system`, `_IO_popen`), from
//! inside libc (`wordexp`), through `dlmopen`, and with system call numbers the kernel reads
//! differently from how they are written. Each way must be decided exactly like the direct
//! call, as root and as a non-root user, and must keep starting system programs.

mod support;

use execguard_testkit::{identities, Identity};
use std::path::Path;
use support::*;

/// Ways that start TARGET as a program.
const EXEC_WAYS: [&str; 10] = [
    "dlsym-execve",
    "dlsym-next-execve",
    "dlvsym-execve",
    "dlsym-execv",
    "dlsym-fexecve",
    "dlsym-syscall",
    "syscall-execve-hi",
    "syscall-execveat-hi",
    "dlsym-posix_spawn",
    "dlvsym-posix_spawn-old",
];

/// Ways that start `/bin/sh -c TARGET` from inside libc.
const SHELL_WAYS: [&str; 4] = ["dlsym-system", "libc-system", "io-popen", "wordexp"];

/// Ways that map TARGET as a shared object.
const MAP_WAYS: [&str; 3] = ["dlsym-dlopen", "dlvsym-dlopen", "dlmopen"];

fn around(f: &Fixture, who: &Identity, policy: &str, args: &[&std::ffi::OsStr]) -> Outcome {
    let mut cmd = f.guarded(policy, &tools().around);
    cmd.args(args);
    run(who.apply(&mut cmd))
}

fn os<P: AsRef<Path> + ?Sized>(p: &P) -> &std::ffi::OsStr {
    p.as_ref().as_os_str()
}

/// Did a program started through wordexp's `$(...)` print its argv (as words)?
fn ran_in_words(o: &Outcome) -> bool {
    o.stdout.lines().any(|l| l == "WORD ARGV")
}

#[test]
fn every_way_to_start_a_program_refuses_a_workspace_elf() {
    for who in identities() {
        let f = Fixture::new("around-exec");
        f.for_identity(&who);
        let mut failed = vec![];
        for way in EXEC_WAYS {
            let o = around(&f, &who, &f.strict(), &[os(way), os(&f.payload)]);
            if !o.has_denial("mutable_native") || o.ran() {
                failed.push(format!("{} {way}: not refused\n{o}", who.label()));
            }
            let o = around(&f, &who, &f.strict(), &[os(way), os(&f.sys_argv)]);
            if !o.ran() || !o.denials().is_empty() {
                failed.push(format!(
                    "{} {way}: a system program did not run\n{o}",
                    who.label()
                ));
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}

#[test]
fn every_shell_started_from_inside_libc_is_decided() {
    for who in identities() {
        let f = Fixture::new("around-shell");
        f.for_identity(&who);
        let mut failed = vec![];
        for way in SHELL_WAYS {
            // The caller dropped the guard from its environment: the shell would run unguarded.
            let o = around(
                &f,
                &who,
                &f.strict(),
                &[os("--unset-preload"), os(way), os(&f.payload)],
            );
            if !o.has_denial("environment_not_sticky") || o.ran() || ran_in_words(&o) {
                failed.push(format!(
                    "{} {way}: an unguarded shell ran\n{o}",
                    who.label()
                ));
            }
            // With the guard in place the shell starts, and refuses the workspace ELF itself.
            let o = around(&f, &who, &f.strict(), &[os(way), os(&f.payload)]);
            if !o.has_denial("mutable_native") || o.ran() || ran_in_words(&o) {
                failed.push(format!(
                    "{} {way}: the payload was not refused\n{o}",
                    who.label()
                ));
            }
            let o = around(&f, &who, &f.strict(), &[os(way), os(&f.sys_argv)]);
            if !(o.ran() || ran_in_words(&o)) || !o.denials().is_empty() {
                failed.push(format!(
                    "{} {way}: a system program did not run\n{o}",
                    who.label()
                ));
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}

#[test]
fn every_way_to_map_an_object_refuses_a_workspace_object() {
    for who in identities() {
        let f = Fixture::new("around-map");
        f.for_identity(&who);
        let sys_so = f.sys.join("good.so");
        copy(&tools().evil, &sys_so);
        let mut failed = vec![];
        for way in MAP_WAYS {
            let o = around(&f, &who, &f.strict(), &[os(way), os(&f.evil)]);
            if !o.has_denial("mutable_native") || o.stderr.contains("EVIL_SO_LOADED") {
                failed.push(format!("{} {way}: mapped\n{o}", who.label()));
            }
            let o = around(&f, &who, &f.strict(), &[os(way), os(&sys_so)]);
            if !o.stderr.contains("EVIL_SO_LOADED") || !o.denials().is_empty() {
                failed.push(format!(
                    "{} {way}: a system object was not mapped\n{o}",
                    who.label()
                ));
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}

#[test]
fn memfd_create_through_syscall_gets_the_noexec_seal() {
    for who in identities() {
        let f = Fixture::new("around-memfd");
        f.for_identity(&who);
        for way in ["memfd-syscall", "memfd-syscall-hi"] {
            let o = around(&f, &who, &f.strict(), &[os(way), os("-")]);
            let r = o.report().unwrap_or_else(|| panic!("no PROBE line\n{o}"));
            assert_eq!(
                r.ret,
                1,
                "{} {way}: no F_SEAL_EXEC under strict\n{o}",
                who.label()
            );
            // The build profile allows anonymous native code: the memfd stays as asked.
            let o = around(&f, &who, &f.policy("build", ""), &[os(way), os("-")]);
            let r = o.report().unwrap_or_else(|| panic!("no PROBE line\n{o}"));
            assert_eq!(r.ret, 0, "{} {way}: sealed under build\n{o}", who.label());
        }
    }
}

#[test]
fn an_interposer_after_the_guard_still_finds_the_next_definition() {
    let dir = support_dir();
    let next = compile(&dir, "next.c", "next.so", &["-shared", "-fPIC"]);
    for who in identities() {
        let f = Fixture::new("around-next");
        f.for_identity(&who);
        let sys_next = f.sys.join("next.so");
        copy(&next, &sys_next);
        let preload = format!("{}:{}", s(&tools().lib), s(&sys_next));
        let mut cmd = f.guarded(&f.strict(), &f.sys_argv);
        cmd.env("LD_PRELOAD", preload);
        let o = run(who.apply(&mut cmd));
        assert!(o.stderr.contains("NEXT_OK"), "{}\n{o}", who.label());
        o.assert_ran();
    }
}

/// posix_spawn file actions run in the child before its exec: the guard decides what the
/// child will reach, not what the name means in the parent, both ways round.
#[test]
fn posix_spawn_is_decided_on_what_the_child_will_see() {
    for who in identities() {
        let f = Fixture::new("around-spawn-actions");
        f.for_identity(&who);
        // A system program called `payload` too, so that `./payload` is allowed from `sys`.
        copy(&tools().argv, &f.sys.join("payload"));
        let mut failed = vec![];
        let mut check = |way: &str, target: &Path, other: &Path, cwd: &Path, refused: bool| {
            let mut cmd = f.guarded(&f.strict(), &tools().around);
            cmd.current_dir(cwd).arg(way).arg(target).arg(other);
            let o = run(who.apply(&mut cmd));
            let ok = if refused {
                o.has_denial("mutable_native") && !o.ran()
            } else {
                o.ran() && o.denials().is_empty()
            };
            if !ok {
                failed.push(format!(
                    "{} {way} (refused expected: {refused})\n{o}",
                    who.label()
                ));
            }
        };
        let rel = Path::new("./payload");
        // Relative to the parent's cwd `sys` it is a system program; the child chdirs first.
        check("spawn-chdir", rel, &f.ws, &f.sys, true);
        check("spawn-fchdir", rel, &f.ws, &f.sys, true);
        check("spawn-chdir", rel, &f.sys, &f.ws, false);
        check("spawn-fchdir", rel, &f.sys, &f.ws, false);
        // /proc/self/fd/N is the parent's system program; the child replaced descriptor N.
        check("spawn-dup2", &f.sys_argv, &f.payload, &f.ws, true);
        check("spawn-open", &f.sys_argv, &f.payload, &f.ws, true);
        check("spawn-dup2", &f.payload, &f.sys_argv, &f.ws, false);
        check("spawn-open", &f.payload, &f.sys_argv, &f.ws, false);
        // Other spellings of the same names, as the kernel reads them.
        for way in ["spawn-dup2-slashes", "spawn-dup2-dot"] {
            check(way, &f.sys_argv, &f.payload, &f.ws, true);
            check(way, &f.payload, &f.sys_argv, &f.ws, false);
        }
        check("spawn-chdir-cwd", rel, &f.ws, &f.sys, true);
        check("spawn-chdir-cwd", rel, &f.sys, &f.ws, false);
        assert!(failed.is_empty(), "{}", failed.join("\n"));
        // Through a descriptor of `/` the child inherits, a name leads back into the child's
        // own /proc: the child must run the file the guard decided (the system's `true`,
        // which prints nothing), never the workspace program dup2'ed over descriptor N.
        for way in ["spawn-dup2-root", "spawn-fchdir-root"] {
            let mut cmd = f.guarded(&f.strict(), &tools().around);
            cmd.current_dir(&f.ws)
                .arg(way)
                .arg("/usr/bin/true")
                .arg(&f.payload);
            let o = run(who.apply(&mut cmd));
            assert!(
                !o.ran(),
                "{} {way}: the workspace program ran\n{o}",
                who.label()
            );
        }
        // A name that reaches the child's own /proc entries by a way the replay does not
        // follow (a symlink to /proc/self/cwd): in the parent it is the system's `true`, in
        // the child (after its chdir action) the workspace's. The child is handed the file
        // that was decided, so the workspace program (which prints) never runs.
        copy(&tools().argv, &f.ws.join("true"));
        let link = f.base.join("to-own-cwd");
        std::os::unix::fs::symlink("/proc/self/cwd/true", &link).unwrap();
        let mut cmd = f.guarded(&f.strict(), &tools().around);
        cmd.current_dir("/usr/bin")
            .arg("spawn-chdir")
            .arg(&link)
            .arg(&f.ws);
        let o = run(who.apply(&mut cmd));
        assert!(
            !o.ran() && o.denials().is_empty(),
            "{}: a symlink to /proc/self/cwd\n{o}",
            who.label()
        );
    }
}

/// A program that starts itself again by `/proc/self/exe` with its output redirected (Rust's
/// `Command::new("/proc/self/exe")`, python's `os.posix_spawn` with file actions) still runs:
/// in the child that name is the same program.
#[test]
fn posix_spawn_of_proc_self_exe_with_file_actions_runs() {
    for who in identities() {
        let f = Fixture::new("around-self-exe");
        f.for_identity(&who);
        let script = "import os, sys\n\
                      pid = os.posix_spawn('/proc/self/exe', ['python3', '-c', 'print(\"CHILD RAN\")'], \
                      os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, 1, 1)])\n\
                      sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n";
        let mut cmd = f.guarded(&f.strict(), "/usr/bin/python3");
        cmd.arg("-c").arg(script);
        let o = run(who.apply(&mut cmd));
        assert!(
            o.stdout.contains("CHILD RAN") && o.denials().is_empty(),
            "{}\n{o}",
            who.label()
        );
    }
}
