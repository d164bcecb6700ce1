//! Every exec entry point crossed with every refusal rule, under the real preload library, plus
//! the same entry points starting a non-mutable program (which must keep working).
//!
//! One test per rule; each runs the probe once per entry point and reports every entry point
//! that misbehaved, not just the first.

mod support;

use execguard_testkit::{identities, Identity};
use std::ffi::OsString;
use std::path::Path;
use support::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Replaces the process on success; reports ret=-1/errno on failure.
    Exec,
    /// posix_spawn[p]: returns the error number.
    Spawn,
    /// fork/vfork + execve in the child; the child's errno is reported.
    Child,
    /// system/popen: the guard refuses the shell itself, or the shell's own exec is refused.
    Shell,
}

/// (probe entry, kind, the entry name the audit record carries)
const ENTRIES: [(&str, Kind, &str); 18] = [
    ("execve", Kind::Exec, "execve"),
    ("execv", Kind::Exec, "execv"),
    ("execvp", Kind::Exec, "execvp"),
    ("execvpe", Kind::Exec, "execvpe"),
    ("execl", Kind::Exec, "execl"),
    ("execle", Kind::Exec, "execle"),
    ("execlp", Kind::Exec, "execlp"),
    ("execveat", Kind::Exec, "execveat"),
    ("execveat-empty", Kind::Exec, "execveat"),
    ("fexecve", Kind::Exec, "fexecve"),
    ("syscall-execve", Kind::Exec, "syscall"),
    ("syscall-execveat", Kind::Exec, "syscall"),
    ("posix_spawn", Kind::Spawn, "posix_spawn"),
    ("posix_spawnp", Kind::Spawn, "posix_spawnp"),
    ("fork", Kind::Child, "execve"),
    ("vfork", Kind::Child, "execve"),
    ("system", Kind::Shell, "system"),
    ("popen", Kind::Shell, "popen"),
];

/// Entry points that take no environment (they use `environ`): a duplicate `LD_PRELOAD` entry
/// cannot be expressed through them.
const ENVIRON_ONLY: [&str; 6] = ["execv", "execvp", "execl", "execlp", "system", "popen"];
/// Entry points that search PATH for a bare name (the shell does for system/popen).
const SEARCHING: [&str; 6] = [
    "execvp",
    "execvpe",
    "execlp",
    "posix_spawnp",
    "system",
    "popen",
];
/// Entry points that take a directory descriptor.
const WITH_DIRFD: [&str; 2] = ["execveat", "syscall-execveat"];

/// How to call one entry point for one rule.
struct Case {
    opts: Vec<OsString>,
    target: OsString,
    args: Vec<OsString>,
}

fn os(p: impl AsRef<std::ffi::OsStr>) -> OsString {
    p.as_ref().to_os_string()
}

fn case(target: impl AsRef<std::ffi::OsStr>) -> Case {
    Case {
        opts: vec![],
        target: os(target),
        args: vec![],
    }
}

impl Case {
    fn opt(mut self, o: impl AsRef<std::ffi::OsStr>) -> Self {
        self.opts.push(os(o));
        self
    }
    fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Self {
        self.args.push(os(a));
        self
    }
    /// The probe's command line for `entry`. The shell entry points get one command string.
    fn argv(&self, entry: &str, kind: Kind) -> Vec<OsString> {
        let mut v = self.opts.clone();
        v.push(entry.into());
        if kind == Kind::Shell && !self.args.is_empty() {
            let mut cmd = self.target.clone();
            for a in &self.args {
                cmd.push(" ");
                cmd.push(a);
            }
            v.push(cmd);
        } else {
            v.push(self.target.clone());
            v.extend(self.args.iter().cloned());
        }
        v
    }
}

/// Checks one refused call; returns what was wrong.
fn refused(f: &Fixture, kind: Kind, audit_entry: &str, reason: &str, o: &Outcome) -> Vec<String> {
    let mut bad = vec![];
    if !o.has_denial(reason) {
        bad.push(format!("no `denied {reason}` line"));
    }
    if o.ran() {
        bad.push("the refused program ran".into());
    }
    if o.stderr.contains("EVIL_SO_LOADED") {
        bad.push("the refused shared object was mapped".into());
    }
    match (kind, o.report()) {
        (_, None) => bad.push("no PROBE line".into()),
        (Kind::Exec | Kind::Child, Some(r)) => {
            if (r.ret, r.errno) != (-1, EACCES) {
                bad.push(format!("expected ret=-1 errno=EACCES, got {r:?}"));
            }
        }
        (Kind::Spawn, Some(r)) => {
            if r.ret != i64::from(EACCES) {
                bad.push(format!("expected posix_spawn to return EACCES, got {r:?}"));
            }
        }
        (Kind::Shell, Some(r)) => {
            // Either the shell itself was refused, or the shell's exec was (exit 126).
            let shell_refused = (r.ret, r.errno) == (-1, EACCES);
            let child_refused = r.ret == 0 && r.status == Some(126);
            if !shell_refused && !child_refused {
                bad.push(format!("expected the shell or its exec refused, got {r:?}"));
            }
        }
    }
    let records = f.audit_records();
    let found = records.iter().any(|r| {
        r["decision"] == "deny"
            && r["reason"] == reason
            && (kind == Kind::Shell || r["entry"] == audit_entry)
    });
    if !found {
        bad.push(format!(
            "no audit record {{decision: deny, reason: {reason}, entry: {audit_entry}}} in {records:?}"
        ));
    }
    bad
}

/// Runs `make(entry)` through every entry point (those `only` allows) and expects `reason`.
fn matrix(
    name: &str,
    reason: &str,
    policy: impl Fn(&Fixture) -> String,
    only: &dyn Fn(&str) -> bool,
    make: impl Fn(&Fixture, &str) -> Case,
) {
    for who in identities() {
        matrix_as(who, name, reason, &policy, only, &make);
    }
}

/// [`matrix`] as `who`.
fn matrix_as(
    who: Identity,
    name: &str,
    reason: &str,
    policy: &impl Fn(&Fixture) -> String,
    only: &dyn Fn(&str) -> bool,
    make: &impl Fn(&Fixture, &str) -> Case,
) {
    let f = Fixture::for_user(name, who);
    let policy = policy(&f);
    let mut failures = vec![];
    let mut tried = 0;
    for (entry, kind, audit_entry) in ENTRIES {
        if !only(entry) {
            continue;
        }
        tried += 1;
        f.reset_audit();
        let c = make(&f, entry);
        let o = f.probe(&policy, c.argv(entry, kind));
        let bad = refused(&f, kind, audit_entry, reason, &o);
        if !bad.is_empty() {
            failures.push(format!("[{entry}] {}\n{o}", bad.join("; ")));
        }
    }
    assert!(tried > 0);
    assert!(
        failures.is_empty(),
        "{name} as {}: {} of {tried} entry points did not refuse with {reason}:\n{}",
        who.label(),
        failures.len(),
        failures.join("\n\n")
    );
}

fn all(_: &str) -> bool {
    true
}

fn strict_with_runtime(f: &Fixture) -> String {
    f.policy("strict", &f.runtime())
}

fn script(f: &Fixture, name: &str, text: String) -> std::path::PathBuf {
    let p = f.ws.join(name);
    f.write_exec(&p, text.as_bytes());
    p
}

#[test]
fn workspace_elf() {
    matrix("ws-elf", "mutable_native", Fixture::strict, &all, |f, _| {
        case(&f.payload)
    });
}

#[test]
fn tmp_elf() {
    matrix(
        "tmp-elf",
        "mutable_native",
        Fixture::strict,
        &all,
        |f, _| {
            let p = f.tmp.join("payload");
            copy(&tools().argv, &p);
            case(p)
        },
    );
}

#[test]
fn memfd() {
    // The source file is not mutable: only its memfd copy is anonymous.
    matrix(
        "memfd",
        "anonymous_native",
        Fixture::strict,
        &all,
        |f, _| case(&f.sys_argv).opt("--memfd"),
    );
}

#[test]
fn deleted_file() {
    matrix(
        "deleted",
        "anonymous_native",
        Fixture::strict,
        &all,
        |f, entry| {
            // The probe deletes the file: its directory is the scenario user's.
            let dir = f.sys.join(format!("deleted-{entry}"));
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join("program");
            copy(&tools().argv, &p);
            if let Some(who) = &f.who {
                who.own(&dir);
            }
            case(p).opt("--unlink")
        },
    );
}

#[test]
fn loader_with_workspace_target() {
    matrix(
        "ld-target",
        "mutable_native",
        Fixture::strict,
        &all,
        |f, _| case(LOADER).arg(&f.payload),
    );
}

#[test]
fn loader_preload_option() {
    matrix(
        "ld-preload",
        "preload_mutable",
        Fixture::strict,
        &all,
        |f, _| case(LOADER).arg("--preload").arg(&f.evil).arg(&f.sys_argv),
    );
}

#[test]
fn loader_library_path_option() {
    matrix(
        "ld-libpath",
        "library_path_mutable",
        Fixture::strict,
        &all,
        |f, _| {
            case(LOADER)
                .arg("--library-path")
                .arg(&f.ws)
                .arg(&f.sys_argv)
        },
    );
}

fn setenv(c: Case, kv: OsString) -> Case {
    c.opt("--edit-environ").opt("--setenv").opt(kv)
}

fn kv(k: &str, v: &Path) -> OsString {
    let mut s = OsString::from(format!("{k}="));
    s.push(v);
    s
}

#[test]
fn ld_preload_workspace_object() {
    matrix(
        "env-preload",
        "preload_mutable",
        Fixture::strict,
        &all,
        |f, _| {
            // The guard stays first, as host mode keeps it; the workspace object follows.
            let mut v = OsString::from("LD_PRELOAD=");
            v.push(&tools().lib);
            v.push(":");
            v.push(&f.evil);
            setenv(case(&f.sys_argv), v)
        },
    );
}

#[test]
fn ld_preload_duplicate_entry() {
    // envp holds LD_PRELOAD=<guard> and then LD_PRELOAD=<evil>: the loader honours the last.
    matrix(
        "env-preload-dup",
        "preload_mutable",
        Fixture::strict,
        &|e| !ENVIRON_ONLY.contains(&e),
        |f, _| {
            case(&f.sys_argv)
                .opt("--addenv")
                .opt(kv("LD_PRELOAD", &f.evil))
        },
    );
}

#[test]
fn ld_audit_workspace_object() {
    matrix(
        "env-audit",
        "preload_mutable",
        Fixture::strict,
        &all,
        |f, _| setenv(case(&f.sys_argv), kv("LD_AUDIT", &f.evil)),
    );
}

#[test]
fn ld_library_path_workspace() {
    matrix(
        "env-libpath",
        "library_path_mutable",
        Fixture::strict,
        &all,
        |f, _| setenv(case(&f.sys_argv), kv("LD_LIBRARY_PATH", &f.ws)),
    );
}

#[test]
fn script_with_workspace_elf_interpreter() {
    matrix(
        "shebang-elf",
        "mutable_native",
        Fixture::strict,
        &all,
        |f, _| case(script(f, "elf-interp.sh", format!("#!{}\n", s(&f.payload)))),
    );
}

#[test]
fn nested_script_chain_ends_in_workspace_elf() {
    matrix(
        "shebang-nested",
        "mutable_native",
        Fixture::strict,
        &all,
        |f, _| {
            let inner = script(f, "inner.sh", format!("#!{}\n", s(&f.payload)));
            let middle = script(f, "middle.sh", format!("#!{} -x\n", s(&inner)));
            case(script(f, "outer.sh", format!("#!{}\n", s(&middle))))
        },
    );
}

#[test]
fn dotdot_path() {
    matrix("dotdot", "mutable_native", Fixture::strict, &all, |f, _| {
        case(f.sys.join("../ws/payload"))
    });
}

#[test]
fn symlink_from_non_mutable_place() {
    matrix(
        "symlink",
        "mutable_native",
        Fixture::strict,
        &all,
        |f, entry| {
            let link = f.sys.join(format!("link-{entry}"));
            std::os::unix::fs::symlink(&f.payload, &link).unwrap();
            case(link)
        },
    );
}

#[test]
fn relative_path_from_workspace_cwd() {
    matrix(
        "relative",
        "mutable_native",
        Fixture::strict,
        &all,
        |_, _| case("./payload"),
    );
}

#[test]
fn execveat_relative_to_workspace_dirfd() {
    matrix(
        "dirfd",
        "mutable_native",
        Fixture::strict,
        &|e| WITH_DIRFD.contains(&e),
        |f, _| case("payload").opt("--dirfd").opt(&f.ws),
    );
}

#[test]
fn path_search_finds_workspace_elf() {
    matrix(
        "search",
        "mutable_native",
        Fixture::strict,
        &|e| SEARCHING.contains(&e),
        |f, _| {
            let mut path = OsString::from("PATH=");
            path.push(&f.ws);
            path.push(":/usr/bin:/bin");
            setenv(case("payload"), path)
        },
    );
}

#[test]
fn protected_runtime_started_directly() {
    matrix(
        "rt-direct",
        "protected_runtime_direct",
        strict_with_runtime,
        &all,
        |f, _| case(f.sys.join("rt")),
    );
}

#[test]
fn protected_runtime_in_script_line() {
    matrix(
        "rt-script",
        "protected_runtime_script",
        strict_with_runtime,
        &all,
        |f, _| case(script(f, "rt.sh", format!("#!{}\n", s(&f.sys.join("rt"))))),
    );
}

#[test]
fn protected_runtime_through_env() {
    // PATH (sys first) resolves `rt` to the protected runtime.
    matrix(
        "rt-env",
        "protected_runtime_script",
        strict_with_runtime,
        &all,
        |f, _| case(script(f, "rt-env.sh", "#!/usr/bin/env rt\n".into())),
    );
}

#[test]
fn protected_runtime_through_env_split_string_path() {
    // PATH no longer names sys: only the `env -S PATH=` assignment finds the runtime.
    matrix(
        "rt-env-s",
        "protected_runtime_script",
        strict_with_runtime,
        &all,
        |f, _| {
            let p = script(
                f,
                "rt-env-s.sh",
                format!("#!/usr/bin/env -S PATH={} rt\n", s(&f.sys)),
            );
            setenv(case(p), "PATH=/usr/bin:/bin".into())
        },
    );
}

#[test]
fn protected_runtime_through_loader() {
    matrix(
        "rt-loader",
        "protected_runtime_script",
        strict_with_runtime,
        &all,
        |f, _| {
            case(script(
                f,
                "rt-ld.sh",
                format!("#!{LOADER} {}\n", s(&f.sys.join("rt"))),
            ))
        },
    );
}

#[test]
fn allow_list_refuses_other_commands() {
    matrix(
        "allow-list",
        "command_not_allowed",
        |f| f.policy("strict", "allow_commands = [\"sh\", \"dash\", \"true\"]\n"),
        &all,
        |f, _| case(&f.sys_argv),
    );
}

/// The same entry points starting a program from a non-mutable place: it runs.
#[test]
fn non_mutable_program_runs_through_every_entry_point() {
    for who in identities() {
        let f = Fixture::for_user("allow-all", who);
        let policy = f.strict();
        let mut failures = vec![];
        for (entry, kind, _) in ENTRIES {
            let c = case(&f.sys_argv).arg("one").arg("two words");
            let mut argv = c.argv(entry, kind);
            if kind == Kind::Shell {
                // One command string; quote the argument with a blank.
                argv.pop();
                argv.push(format!("{} one 'two words'", s(&f.sys_argv)).into());
            }
            let o = f.probe(&policy, argv);
            let mut bad = vec![];
            if !o.denials().is_empty() {
                bad.push("unexpected denial".to_string());
            }
            match o.printed_argv() {
                Some(v) if v[1..] == [b"one".to_vec(), b"two words".to_vec()] => {}
                other => bad.push(format!("argv printer did not run as asked: {other:?}")),
            }
            if kind != Kind::Exec {
                match o.report() {
                    Some(r) if r.ret == 0 && r.status == Some(0) => {}
                    other => bad.push(format!("expected ret=0 status=0, got {other:?}")),
                }
            }
            if !bad.is_empty() {
                failures.push(format!("[{entry}] {}\n{o}", bad.join("; ")));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert!(
            f.audit_records().is_empty(),
            "allowed execs are not audited unless audit_allow is set"
        );
    }
}

/// A protected runtime started by its wrapper runs.
#[test]
fn protected_runtime_started_by_its_wrapper() {
    for who in identities() {
        let f = Fixture::for_user("rt-wrapper", who);
        let policy = strict_with_runtime(&f);
        let o = run(f
            .guarded(&policy, f.sys.join("wrapper"))
            .arg("execve")
            .arg(f.sys.join("rt"))
            .arg("hello"));
        o.assert_ran();
        assert_eq!(o.printed_argv().unwrap()[1], b"hello");
        // ...and the same runtime started by anything else is refused.
        let o = f.probe(&policy, [os("execve"), os(f.sys.join("rt"))]);
        o.assert_denied("protected_runtime_direct");
        o.assert_exec_failed(EACCES);
    }
}
