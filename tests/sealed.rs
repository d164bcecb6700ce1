//! Sealed mode (`execguard run --seal`): the kernel refuses to execute files in mutable roots
//! for every caller, including those no preload library sees (static programs, inline system
//! calls), while workspace scripts keep running with the argv the kernel would give them.
//! As root and as the non-root user (each with a home and runtime dir of the fixture's own).

mod support;

use execguard_testkit::identities;
use std::path::PathBuf;
use std::process::{Command, Output};
use support::{compile, copy, s, support_dir, tools, Fixture, EACCES};

/// The `sealed` helper, static and dynamic, in a non-mutable place.
fn sealed_bins() -> (PathBuf, PathBuf) {
    let dir = support_dir();
    (
        compile(&dir, "sealed.c", "sealed-static", &["-static"]),
        compile(&dir, "sealed.c", "sealed-dynamic", &[]),
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `execguard run --workspace WS -- ARGS` with `sys` first on PATH; unsealed: as on a kernel
/// without Landlock (the test hook), with `--allow-unsealed`.
/// As the fixture's user, with its home and runtime dir ([`Fixture::plain`]).
fn session(f: &Fixture, seal: bool, args: &[&str]) -> Output {
    let mut c = cli(f);
    c.arg("run").arg("--workspace").arg(&f.ws);
    if !seal {
        c.arg("--allow-unsealed")
            .env("EXECGUARD_TEST_LANDLOCK_ABI", "0");
    }
    c.arg("--").args(args);
    c.output().unwrap()
}

/// The CLI in the fixture's clean environment, as its user.
fn cli(f: &Fixture) -> Command {
    let mut c = f.plain(&tools().cli);
    c.env("EXECGUARD_LIB", &tools().lib);
    c
}

#[test]
fn a_static_program_cannot_exec_workspace_code_under_the_seal() {
    for who in identities() {
        let f = Fixture::for_user("seal-static", who);
        let (stat, _) = sealed_bins();
        let prog = f.sys.join("sealed-static");
        copy(&stat, &prog);
        for mode in ["exec-libc", "exec-asm"] {
            // Without the seal the static caller is invisible to the guard: the payload runs.
            let out = session(&f, false, &[s(&prog), mode, s(&f.payload)]);
            assert!(
                text(&out.stdout).starts_with("ARGV 2\n"),
                "[{mode} unsealed] {}",
                text(&out.stdout)
            );
            // Under the seal the kernel refuses it.
            let out = session(&f, true, &[s(&prog), mode, s(&f.payload)]);
            assert_eq!(
                text(&out.stdout),
                format!("EXEC {EACCES}\n"),
                "[{mode} sealed] {}",
                text(&out.stderr)
            );
            // Also from a built-in mutable root, written there by the session (its /tmp is its
            // own: docs/session.md).
            let script = format!(
                "cp {} /tmp/payload && exec {} {mode} /tmp/payload",
                s(&f.payload),
                s(&prog)
            );
            let out = session(&f, true, &["sh", "-c", &script]);
            assert_eq!(
                text(&out.stdout),
                format!("EXEC {EACCES}\n"),
                "[{mode} /tmp] {}",
                text(&out.stderr)
            );
            // System programs still run.
            let out = session(&f, true, &[s(&prog), mode, s(&f.sys_argv)]);
            assert!(
                text(&out.stdout).starts_with("ARGV 2\n"),
                "[{mode} system] {}",
                text(&out.stdout)
            );
        }
    }
}

/// Writes `ws/NAME` with `text`, mode 0755.
fn script(f: &Fixture, name: &str, text: &str) -> PathBuf {
    let p = f.ws.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    f.write_exec(&p, text.as_bytes());
    p
}

#[test]
fn workspace_scripts_run_under_the_seal_with_the_kernels_argv() {
    for who in identities() {
        let f = Fixture::for_user("seal-scripts", who);
        // The argv printer is the interpreter, in a non-mutable place and on PATH as `argvtool`.
        copy(&f.sys_argv, &f.sys.join("argvtool"));
        script(&f, "direct.sh", &format!("#!{}\n", s(&f.sys_argv)));
        script(&f, "with-arg.sh", &format!("#! {} -x  \n", s(&f.sys_argv)));
        script(&f, "env.sh", "#!/usr/bin/env argvtool\n");
        script(&f, "env-s.sh", "#!/usr/bin/env -S argvtool --flag value\n");
        script(
            &f,
            "nested.sh",
            &format!("#!{}/direct.sh extra\n", s(&f.ws)),
        );
        script(&f, "node_modules/pkg/cli.js", "#!/usr/bin/env argvtool\n");
        std::fs::create_dir_all(f.ws.join("node_modules/.bin")).unwrap();
        std::os::unix::fs::symlink("../pkg/cli.js", f.ws.join("node_modules/.bin/tool")).unwrap();
        let runs: [&[&str]; 7] = [
            &["./direct.sh", "a", "b c"],
            &["./with-arg.sh", "a"],
            &["./env.sh", "a"],
            &["./env-s.sh", "a"],
            &["./nested.sh", "a"],
            &["./node_modules/.bin/tool", "a"],
            &["sh", "-c", "PATH=./node_modules/.bin:$PATH tool a"],
        ];
        for args in runs {
            let unsealed = session(&f, false, args);
            let sealed = session(&f, true, args);
            assert!(
                text(&unsealed.stdout).starts_with("ARGV "),
                "{args:?} unsealed: {}",
                text(&unsealed.stderr)
            );
            assert_eq!(
            text(&sealed.stdout),
            text(&unsealed.stdout),
            "{args:?}: the sealed launch must give the argv the kernel gives\nsealed stderr: {}",
            text(&sealed.stderr)
        );
        }
        // Without the guard's launch, the kernel itself refuses the script under the seal: a static
        // caller gets EACCES for a workspace script (documented).
        let (stat, _) = sealed_bins();
        let prog = f.sys.join("sealed-static");
        copy(&stat, &prog);
        let out = session(
            &f,
            true,
            &[s(&prog), "exec-libc", s(&f.ws.join("direct.sh"))],
        );
        assert_eq!(text(&out.stdout), format!("EXEC {EACCES}\n"));
    }
}

#[test]
fn seal_without_landlock_is_a_typed_refusal() {
    for who in identities() {
        let f = Fixture::for_user("seal-abi0", who);
        let mut c = cli(&f);
        c.args(["run", "--seal", "--workspace"])
            .arg(&f.ws)
            .args(["--", "/bin/true"]);
        c.env("EXECGUARD_TEST_LANDLOCK_ABI", "0").current_dir(&f.ws);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("seal_unavailable"),
            "{}",
            text(&out.stderr)
        );
        let out = c.arg("--").output().unwrap();
        assert_ne!(out.status.code(), Some(0));
        let mut c = cli(&f);
        c.args(["run", "--seal", "--allow-unsealed", "--workspace"])
            .arg(&f.ws)
            .args(["--", "/bin/true"]);
        c.env("EXECGUARD_TEST_LANDLOCK_ABI", "0").current_dir(&f.ws);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("reduced assurance"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn doctor_reports_the_seal() {
    for who in identities() {
        let f = Fixture::for_user("seal-doctor", who);
        let cli = s(&tools().cli).to_string();
        let out = session(&f, true, &[&cli, "doctor"]);
        assert!(
            text(&out.stdout).contains("seal: this process is sealed"),
            "{}",
            text(&out.stdout)
        );
        let out = session(&f, false, &[&cli, "doctor"]);
        assert!(
            text(&out.stdout).contains("seal: not sealed"),
            "{}",
            text(&out.stdout)
        );
    }
}

#[test]
fn guarded_memfds_are_created_noexec_sealed() {
    const F_SEAL_EXEC: u32 = 0x20;
    for who in identities() {
        let f = Fixture::for_user("seal-memfd", who);
        let (_, dynamic) = sealed_bins();
        let seals = |out: &Output| {
            let t = text(&out.stdout);
            let hex = t
                .trim()
                .strip_prefix("SEALS ")
                .unwrap_or_else(|| panic!("{t} {}", text(&out.stderr)));
            u32::from_str_radix(hex, 16).unwrap()
        };
        let guarded = f
            .guarded(&f.strict(), &dynamic)
            .arg("memfd-seals")
            .output()
            .unwrap();
        assert_ne!(
            seals(&guarded) & F_SEAL_EXEC,
            0,
            "strict: MFD_NOEXEC_SEAL added"
        );
        let build = f
            .guarded(&f.policy("build", ""), &dynamic)
            .arg("memfd-seals")
            .output()
            .unwrap();
        assert_eq!(
            seals(&build) & F_SEAL_EXEC,
            0,
            "build profile allows anonymous code"
        );
        let plain = f.plain(&dynamic).arg("memfd-seals").output().unwrap();
        assert_eq!(seals(&plain) & F_SEAL_EXEC, 0);
    }
}

#[test]
fn dlopen_of_a_workspace_object_is_refused() {
    for who in identities() {
        let f = Fixture::for_user("seal-dlopen", who);
        let code = format!(
        "import ctypes\ntry:\n    ctypes.CDLL({:?})\n    print('LOADED')\nexcept OSError as e:\n    print('REFUSED', e)\n",
        s(&f.evil)
    );
        let out = f
            .guarded(&f.strict(), support::PYTHON)
            .args(["-c", &code])
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert!(
            stdout.starts_with("REFUSED")
                && stdout.contains("/proc/execguard/denied/mutable_native"),
            "{stdout}"
        );
        assert!(
            text(&out.stderr).contains("execguard: denied mutable_native:"),
            "{}",
            text(&out.stderr)
        );
        // A system library still loads.
        let out = f
        .guarded(&f.strict(), support::PYTHON)
        .args(["-c", "import ctypes, ctypes.util; ctypes.CDLL('libm.so.6'); ctypes.CDLL('/lib/x86_64-linux-gnu/libm.so.6'); print('OK')"])
        .output()
        .unwrap();
        assert_eq!(text(&out.stdout), "OK\n", "{}", text(&out.stderr));
    }
}
