//! Host mode is sticky: a process cannot shed the guard or relax its policy for its children.

mod support;

use execguard_testkit::identities;
use support::*;

fn sh(f: &Fixture, policy: &str, script: &str) -> Outcome {
    run(f.guarded(policy, "/bin/sh").arg("-c").arg(script))
}

/// The workspace payload, started by a grandchild whose parent tried to drop the guard.
#[track_caller]
fn still_refused(o: &Outcome) {
    o.assert_denied("mutable_native");
    assert!(
        o.stdout.contains("rc=126"),
        "the shell saw the refusal\n{o}"
    );
}

#[test]
fn env_i_and_env_u_keep_the_guard() {
    for who in identities() {
        let f = Fixture::for_user("sticky-env", who);
        let p = f.strict();
        let payload = s(&f.payload);
        // env -i: env's own exec of the payload, and a shell started with an empty environment.
        let o = sh(&f, &p, &format!("env -i {payload}; echo rc=$?"));
        o.assert_denied("mutable_native");
        let o = sh(
            &f,
            &p,
            &format!("env -i /bin/sh -c '{payload}; echo rc=$?'"),
        );
        still_refused(&o);
        let o = sh(
            &f,
            &p,
            &format!("env -u LD_PRELOAD -u EXECGUARD_POLICY /bin/sh -c '{payload}; echo rc=$?'"),
        );
        still_refused(&o);
    }
}

#[test]
fn unset_inside_the_shell_does_not_help() {
    for who in identities() {
        let f = Fixture::for_user("sticky-unset", who);
        let p = f.strict();
        let o = sh(
            &f,
            &p,
            "unset LD_PRELOAD EXECGUARD_POLICY; ./payload; echo rc=$?",
        );
        still_refused(&o);
        let o = sh(
            &f,
            &p,
            "export LD_PRELOAD=; unset EXECGUARD_POLICY; sh -c './payload; echo rc=$?'",
        );
        still_refused(&o);
    }
}

#[test]
fn python_execve_with_an_empty_environment() {
    for who in identities() {
        let f = Fixture::for_user("sticky-python", who);
        assert!(
            std::path::Path::new(PYTHON).exists(),
            "{PYTHON} is required (apt-get install python3)"
        );
        let p = f.strict();
        let payload = s(&f.payload);
        let code = format!(
        "import os\ntry:\n    os.execve('{payload}', ['{payload}'], {{}})\nexcept PermissionError:\n    print('PermissionError', flush=True)\nos.execve('/bin/sh', ['sh', '-c', '{payload}; echo rc=$?'], {{}})\n"
    );
        let o = run(f.guarded(&p, PYTHON).arg("-c").arg(code));
        assert!(o.stdout.starts_with("PermissionError\n"), "{o}");
        still_refused(&o);
        assert_eq!(o.denials().len(), 2, "{o}");
    }
}

#[test]
fn a_child_cannot_relax_the_policy() {
    for who in identities() {
        let f = Fixture::for_user("sticky-relax", who);
        let p = f.strict();
        let relaxed = f.policy("breakglass", "");
        let o = run(f
        .guarded(&p, "/bin/sh")
        .env("RELAXED", &relaxed)
        .arg("-c")
        .arg("EXECGUARD_POLICY=\"$RELAXED\" ./payload; echo rc=$?; EXECGUARD_POLICY=\"$RELAXED\" sh -c './payload; echo rc=$?'"));
        o.assert_denied("mutable_native");
        assert_eq!(o.denials().len(), 2, "{o}");
        assert_eq!(o.stdout, "rc=126\nrc=126\n", "{o}");
        // The records say strict: nothing ran under the relaxed text.
        for r in f.audit_records() {
            assert_eq!(r["profile"], "strict", "{r}");
        }
        // The same through the probe, with envp built by hand.
        let mut relaxed_entry = std::ffi::OsString::from("EXECGUARD_POLICY=");
        relaxed_entry.push(&relaxed);
        let o = f.probe(
            &p,
            [
                std::ffi::OsString::from("--setenv"),
                relaxed_entry,
                "execve".into(),
                "/bin/sh".into(),
                "-c".into(),
                "./payload; echo rc=$?".into(),
            ],
        );
        still_refused(&o);
    }
}

#[test]
fn spawn_with_an_empty_environment_keeps_the_guard() {
    for who in identities() {
        let f = Fixture::for_user("sticky-spawn", who);
        let p = f.strict();
        for entry in ["posix_spawn", "execve", "execle", "fork", "vfork"] {
            let o = f.probe(
                &p,
                [
                    "--env-empty",
                    entry,
                    "/bin/sh",
                    "-c",
                    "./payload; echo rc=$?",
                ],
            );
            assert!(o.has_denial("mutable_native"), "[{entry}] {o}");
            assert!(!o.ran(), "[{entry}] {o}");
        }
    }
}

#[test]
fn system_after_unsetenv_fails_closed() {
    for who in identities() {
        let f = Fixture::for_user("sticky-system", who);
        let p = f.strict();
        for entry in ["system", "popen"] {
            let o = f.probe(
                &p,
                [
                    "--edit-environ",
                    "--unsetenv",
                    "LD_PRELOAD",
                    entry,
                    "./payload",
                ],
            );
            assert!(!o.ran(), "[{entry}] {o}");
            assert!(
                o.has_denial("environment_not_sticky"),
                "[{entry}] expected environment_not_sticky\n{o}"
            );
        }
    }
}

/// The guard streams its initial environment in 4 KiB chunks: the policy must be found whatever
/// chunk boundary its name or value straddles, and so must the guard's own `LD_PRELOAD` entry.
#[test]
fn the_policy_is_found_across_environment_chunk_boundaries() {
    for who in identities() {
        let f = Fixture::for_user("sticky-chunks", who);
        let p = f.strict();
        // Entries come in key order: AAAA_FILL=..., EXECGUARD_POLICY=..., LD_PRELOAD=...
        for fill in (4070..4110).step_by(3).chain([8170, 8185, 12270]) {
            let o = run(f
                .guarded(&p, &tools().probe)
                .env("AAAA_FILL", "x".repeat(fill))
                .args(["execve", s(&f.payload)]));
            o.assert_denied("mutable_native");
            // The child the probe's shell starts keeps the guard: the LD_PRELOAD entry was found.
            let o = run(f
                .guarded(&p, "/bin/sh")
                .env("AAAA_FILL", "x".repeat(fill))
                .args([
                    "-c",
                    &format!("env -u LD_PRELOAD {}; echo rc=$?", s(&f.payload)),
                ]));
            still_refused(&o);
        }
    }
}

/// Host mode rewrites an environment that lost the guard; one too large to rewrite on the
/// guard's fixed buffers is refused rather than passed on without the guard.
#[test]
fn an_environment_too_large_to_rewrite_is_refused() {
    for who in identities() {
        let f = Fixture::for_user("sticky-large", who);
        let p = f.strict();
        let many: Vec<String> = (0..2100)
            .flat_map(|i| ["--addenv".to_string(), format!("V{i}=x")])
            .collect();
        let mut args: Vec<&str> = many.iter().map(String::as_str).collect();
        args.extend(["--unsetenv", "LD_PRELOAD", "execve", "/bin/true"]);
        let o = f.probe(&p, &args);
        o.assert_denied("environment_too_large");
        o.assert_exec_failed(EACCES);
        // The same environment with the guard still in it needs no rewrite and runs.
        let mut args: Vec<&str> = many.iter().map(String::as_str).collect();
        args.extend(["execve", s(&f.sys_argv)]);
        f.probe(&p, &args).assert_ran();
    }
}
