//! What must keep working under the strict guard, and what each profile relaxes.

mod support;

use execguard_testkit::identities;
use support::*;

fn sh(f: &Fixture, policy: &str, script: &str) -> Outcome {
    run(f.guarded(policy, "/bin/sh").arg("-c").arg(script))
}

#[test]
fn system_binaries_and_shells() {
    for who in identities() {
        let f = Fixture::for_user("allow-system", who);
        let p = f.strict();
        let o = sh(
        &f,
        &p,
        "/bin/true && /usr/bin/env true && ls / >/dev/null && bash -c 'echo $((6*7))' && sh -c 'echo nested'",
    );
        assert_eq!(o.code, Some(0), "{o}");
        assert_eq!(o.stdout, "42\nnested\n", "{o}");
        assert!(o.denials().is_empty(), "{o}");
    }
}

#[test]
fn workspace_scripts_with_system_interpreters() {
    for who in identities() {
        let f = Fixture::for_user("allow-scripts", who);
        f.write_exec(&f.ws.join("a.sh"), b"#!/bin/sh\necho a \"$@\"\n");
        f.write_exec(&f.ws.join("b.sh"), b"#!/usr/bin/env sh\necho b\n");
        f.write_exec(&f.ws.join("c.sh"), b"#!/bin/sh -e\n./a.sh from-c\n");
        // A script with no #! at all: the kernel says ENOEXEC, execvp falls back to /bin/sh.
        f.write_exec(&f.ws.join("noshebang"), b"echo plain \"$1\"\n");
        let p = f.strict();
        let o = sh(&f, &p, "./a.sh x && ./b.sh && ./c.sh");
        assert_eq!(o.stdout, "a x\nb\na from-c\n", "{o}");
        assert!(o.denials().is_empty(), "{o}");

        for entry in ["execvp", "execlp", "execvpe"] {
            let o = f.probe(&p, [entry, "./noshebang", "arg"]);
            assert!(
                o.stdout.starts_with("plain arg\n"),
                "[{entry}] glibc's /bin/sh fallback\n{o}"
            );
            assert!(!o.ran(), "{o}");
        }
        // posix_spawnp has no shell fallback in glibc: ENOEXEC, as without the guard.
        let o = f.probe(&p, ["posix_spawnp", "./noshebang"]);
        assert_eq!(o.report().unwrap().ret, i64::from(ENOEXEC), "{o}");
        // execve itself gets the kernel's answer for a file without #!: ENOEXEC.
        let o = f.probe(&p, ["execve", "./noshebang"]);
        o.assert_exec_failed(ENOEXEC);
    }
}

#[test]
fn system_popen_and_sh_c() {
    for who in identities() {
        let f = Fixture::for_user("allow-system-popen", who);
        let p = f.strict();
        let o = f.probe(&p, ["system", "echo sys; exit 3"]);
        assert!(o.stdout.starts_with("sys\n"), "{o}");
        assert_eq!(o.report().unwrap().status, Some(3), "{o}");
        let o = f.probe(&p, ["popen", "echo from-popen | tr a-z A-Z"]);
        assert!(o.stdout.starts_with("FROM-POPEN\n"), "{o}");
        assert_eq!(o.report().unwrap().status, Some(0), "{o}");
        assert!(o.denials().is_empty(), "{o}");
    }
}

#[test]
fn python_subprocesses() {
    for who in identities() {
        let f = Fixture::for_user("allow-python", who);
        assert!(
            std::path::Path::new(PYTHON).exists(),
            "{PYTHON} is required (apt-get install python3)"
        );
        let p = f.strict();
        let code = format!(
            r#"
import os, subprocess, sys
print(subprocess.run(["/bin/echo", "run"], capture_output=True, text=True).stdout, end="")
print(subprocess.check_output("echo shell | tr a-z A-Z", shell=True, text=True), end="")
sys.stdout.flush()
assert os.system("exit 5") >> 8 == 5
try:
    subprocess.run(["{payload}"])
except PermissionError:
    print("PermissionError")
"#,
            payload = s(&f.payload)
        );
        let o = run(f.guarded(&p, PYTHON).arg("-c").arg(code));
        assert_eq!(o.code, Some(0), "{o}");
        // The refused exec reaches Python as PermissionError (the child reports its errno).
        assert_eq!(o.stdout, "run\nSHELL\nPermissionError\n", "{o}");
        assert!(o.has_denial("mutable_native"), "{o}");
    }
}

#[test]
fn loader_with_system_target() {
    for who in identities() {
        let f = Fixture::for_user("allow-loader", who);
        let p = f.strict();
        let o = f.probe(&p, ["execve", LOADER, s(&f.sys_argv), "via-loader"]);
        o.assert_ran();
        assert_eq!(o.printed_argv().unwrap()[1], b"via-loader");
        let o = sh(
            &f,
            &p,
            &format!("{LOADER} /bin/true && {LOADER} --list /bin/true >/dev/null"),
        );
        assert_eq!(o.code, Some(0), "{o}");
        assert!(o.denials().is_empty(), "{o}");
    }
}

#[test]
fn multithreaded_fork_exec_storm() {
    for who in identities() {
        let f = Fixture::for_user("storm", who);
        let p = f.strict();
        let o = f.probe(
            &p,
            ["--threads", "8", "--iterations", "50", "storm", "/bin/true"],
        );
        assert!(
            o.stdout
                .contains("PROBE entry=storm ok=400 eacces=0 other=0"),
            "{o}"
        );
        // Decisions that found every decision stack held used fresh mappings: none may be left
        // (glibc keeps the joined threads' stacks, and the guard maps at most 4 stacks of its own).
        let grew = o.probe_number("maps_grew");
        assert!(grew < 32, "{grew} mappings left after 400 spawns\n{o}");
        let o = f.probe(
            &p,
            [
                "--threads",
                "8",
                "--iterations",
                "10",
                "storm",
                s(&f.payload),
            ],
        );
        assert!(
            o.stdout
                .contains("PROBE entry=storm ok=0 eacces=80 other=0"),
            "{o}"
        );
        assert_eq!(f.audit_records().len(), 80);
    }
}

#[test]
fn vfork_exec() {
    for who in identities() {
        let f = Fixture::for_user("vfork", who);
        let p = f.strict();
        let o = f.probe(&p, ["vfork", s(&f.sys_argv)]);
        assert!(o.ran(), "{o}");
        assert_eq!(o.report().unwrap().status, Some(0), "{o}");
        let o = f.probe(&p, ["vfork", s(&f.payload)]);
        o.assert_denied("mutable_native");
        o.assert_exec_failed(EACCES);
    }
}

#[test]
fn symlink_in_workspace_to_system_binary() {
    for who in identities() {
        let f = Fixture::for_user("allow-symlink", who);
        std::os::unix::fs::symlink(&f.sys_argv, f.ws.join("link")).unwrap();
        let o = f.probe(&f.strict(), ["execve", "./link"]);
        o.assert_ran();
    }
}

#[test]
fn development_profile() {
    for who in identities() {
        let f = Fixture::for_user("profile-dev", who);
        let p = f.policy("development", "");
        f.probe(&p, ["execve", s(&f.payload)]).assert_ran();
        let o = f.probe(&p, ["--memfd", "execve", s(&f.sys_argv)]);
        o.assert_denied("anonymous_native");
        o.assert_exec_failed(EACCES);
        let o = f.probe(&p, ["--memfd", "fexecve", s(&f.sys_argv)]);
        o.assert_denied("anonymous_native");
    }
}

#[test]
fn build_profile() {
    for who in identities() {
        let f = Fixture::for_user("profile-build", who);
        let p = f.policy("build", "");
        f.probe(&p, ["execve", s(&f.payload)]).assert_ran();
        f.probe(&p, ["--memfd", "fexecve", s(&f.sys_argv)])
            .assert_ran();
        assert!(f.audit_records().is_empty());
    }
}

#[test]
fn breakglass_profile_allows_and_audits() {
    for who in identities() {
        let f = Fixture::for_user("profile-breakglass", who);
        let p = f.policy("breakglass", &f.runtime());
        f.probe(&p, ["execve", s(&f.payload)]).assert_ran();
        f.probe(&p, ["--memfd", "fexecve", s(&f.sys_argv)])
            .assert_ran();
        f.probe(&p, ["execve", s(&f.sys.join("rt"))]).assert_ran();
        let records = f.audit_records();
        assert_eq!(records.len(), 3, "{records:?}");
        for r in &records {
            assert_eq!(r["decision"], "allow", "{r}");
            assert_eq!(r["reason"], "breakglass", "{r}");
            assert_eq!(r["profile"], "breakglass", "{r}");
        }
        assert_eq!(records[1]["entry"], "fexecve");
    }
}

#[test]
fn audit_allow_records_allowed_execs() {
    for who in identities() {
        let f = Fixture::for_user("audit-allow", who);
        let p = f.policy("strict", "audit_allow = true\n");
        f.probe(&p, ["execv", s(&f.sys_argv)]).assert_ran();
        let records = f.audit_records();
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0]["decision"], "allow");
        assert_eq!(records[0]["reason"], "allowed");
        assert_eq!(records[0]["entry"], "execv");
    }
}

#[test]
fn allow_list_covers_substitutions_and_pipelines() {
    for who in identities() {
        let f = Fixture::for_user("allow-list-sh", who);
        let p = f.policy(
            "strict",
            "allow_commands = [\"sh\", \"dash\", \"echo\", \"true\", \"cat\"]\n",
        );
        let o = sh(&f, &p, "true && echo ok | cat");
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), "ok\n"), "{o}");
        assert!(o.denials().is_empty(), "{o}");
        let o = sh(&f, &p, "echo \"[$(id -u)]\"");
        assert!(o.has_denial("command_not_allowed"), "{o}");
        assert_eq!(o.stdout, "[]\n", "{o}");
        let o = sh(&f, &p, "echo x | od -c");
        assert!(o.has_denial("command_not_allowed"), "{o}");
        assert!(o.denials().iter().any(|(_, p)| p.ends_with("od")), "{o}");
        // Also in a #! chain: the interpreter must be allowed.
        f.write_exec(&f.ws.join("t.sh"), b"#!/usr/bin/env sh\necho hi\n");
        let o = sh(&f, &p, "./t.sh");
        assert!(
            o.has_denial("command_not_allowed"),
            "env is not allowed\n{o}"
        );
        assert!(!o.stdout.contains("hi"), "{o}");
    }
}
