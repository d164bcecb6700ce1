//! The rules, table-driven against the in-memory [`crate::memsys::MemSys`] (no processes):
//! each row is a file tree, a policy, one exec call and what the engine must answer, including
//! what it hands the kernel (the launch argv, the canonical name).
use super::*;
use crate::memo::Memo;
use crate::memsys::MemSys;
use crate::policy::Policy;
use crate::reason::Reason;
use crate::sys::Errno;
use crate::sys::ENOENT;
use std::vec::Vec;

#[derive(Debug, PartialEq)]
enum Want {
    /// Allowed by every check (`Reason::Allowed`), the caller's own name handed to the kernel.
    Allow,
    /// Allowed without checks, to be audited (`Reason::Breakglass`).
    Breakglass,
    Deny(Reason),
    Kernel(Errno),
    /// Allowed, started through this argv (program first).
    Launch(&'static [&'static [u8]]),
    /// Allowed, handed to the kernel by this canonical name.
    ExecAs(&'static [u8]),
}

struct Row {
    what: &'static str,
    tree: fn(&mut MemSys),
    policy: &'static str,
    target: &'static [u8],
    argv: &'static [&'static [u8]],
    envp: &'static [&'static [u8]],
    want: Want,
}

const WS: &str = "version = 1\nworkspace = \"/ws\"\n";

fn base(s: &mut MemSys) {
    s.elf(b"/usr/bin/ls")
        .elf(b"/usr/bin/dash")
        .symlink(b"/bin", b"usr/bin")
        .symlink(b"/usr/bin/sh", b"dash")
        .elf(b"/usr/bin/valgrind")
        .elf(b"/ws/payload")
        .elf(b"/ws/evil.so")
        .script(b"/ws/build.sh", b"#!/bin/sh\necho hi\n")
        .script(b"/ws/evil.sh", b"#!/ws/payload\n")
        .symlink(b"/ws/link", b"/usr/bin/ls")
        .dir(b"/tmp")
        .dir(b"/opt")
        .elf(b"/opt/tool")
        .cwd_at(b"/ws");
}

/// `/ws/x`, a plain directory the session may replace by a symlink; `/ws/ls`, a symlink
/// it made, named after a command the allow-list names.
fn ws_tricks(s: &mut MemSys) {
    base(s);
    s.dir(b"/ws/x").symlink(b"/ws/ls", b"/usr/bin/dash");
}

/// `/opt` belongs to the session's user, mode `r-x`: it may `chmod` it and replace the tool.
fn owned_opt(s: &mut MemSys) {
    base(s);
    s.owned(b"/opt");
}

fn owned_opt_root(s: &mut MemSys) {
    owned_opt(s);
    s.as_root();
}

fn writable_opt(s: &mut MemSys) {
    base(s);
    s.writable(b"/opt");
}

fn writable_opt_root(s: &mut MemSys) {
    writable_opt(s);
    s.as_root();
}

/// A protected runtime (`/usr/bin/node`, its wrapper `/usr/libexec/node-wrapper`) and a
/// workspace script that names it.
fn runtime(s: &mut MemSys) {
    base(s);
    s.elf(b"/usr/bin/node")
        .elf(b"/usr/libexec/node-wrapper")
        .script(b"/ws/run.js", b"#!/usr/bin/node\n");
}

fn runtime_no_proc(s: &mut MemSys) {
    runtime(s);
    s.without_proc();
}

const RUNTIME: &str = "version = 1\nworkspace = \"/ws\"\n\n[[runtime]]\nname = \"node\"\npath = \"/usr/bin/node\"\nwrapper = \"/usr/libexec/node-wrapper\"\n";

/// A workspace ELF deleted while open: no name on disk.
fn deleted(s: &mut MemSys) {
    base(s);
    s.elf(b"/ws/gone").unlinked(b"/ws/gone");
}

/// A workspace program the session's user may execute but not read.
fn execute_only(s: &mut MemSys) {
    base(s);
    s.file(b"/ws/secret", 0o111, b"\x7fELF\x02")
        .unreadable(b"/ws/secret");
}

/// A workspace file that is neither ELF nor `#!`.
fn unknown_format(s: &mut MemSys) {
    base(s);
    s.file(b"/ws/data.bin", 0o755, b"MZ\x90\x00");
}

/// Six workspace scripts, each the interpreter of the one before: one more than the kernel
/// follows.
fn deep_chain(s: &mut MemSys) {
    base(s);
    s.script(b"/ws/s1", b"#!/ws/s2\n")
        .script(b"/ws/s2", b"#!/ws/s3\n")
        .script(b"/ws/s3", b"#!/ws/s4\n")
        .script(b"/ws/s4", b"#!/ws/s5\n")
        .script(b"/ws/s5", b"#!/ws/s6\n")
        .script(b"/ws/s6", b"#!/ws/s7\n");
}

/// A workspace script whose `env -S` string holds a quote, which `env` would interpret.
fn env_quoted(s: &mut MemSys) {
    base(s);
    s.elf(b"/usr/bin/env")
        .script(b"/ws/quoted.sh", b"#!/usr/bin/env -S sh \"-c\"\n");
}

/// The dynamic loader.
fn loader(s: &mut MemSys) {
    base(s);
    s.elf(b"/usr/lib64/ld-linux-x86-64.so.2");
}

/// A workspace symlink to a system program whose canonical name is longer than the guard
/// hands the kernel.
fn long_name(s: &mut MemSys) {
    base(s);
    let long: &'static [u8] = std::vec![b'd'; 1100].leak();
    let dir = [&b"/opt/"[..], long].concat();
    let tool = [&dir[..], b"/tool"].concat();
    s.dir(&dir)
        .elf(&tool)
        .symlink(b"/ws/far", std::vec::Vec::leak(tool));
}

/// A development session's policy as `execguard run` writes it under the seal.
const DEV_ROOTS: &str = "version = 1\nworkspace = \"/ws\"\nprofile = \"development\"\nexecutable_roots = [\"/tmp/own\", \"/home/u\"]\n";

/// Programs the session built in its own temp dir and in `/dev/shm`.
fn shm_and_tmp(s: &mut MemSys) {
    loader(s);
    s.dir(b"/dev/shm")
        .elf(b"/dev/shm/hello")
        .dir(b"/tmp/own")
        .elf(b"/tmp/own/hello")
        .dir(b"/run/user/1001")
        .elf(b"/run/user/1001/hello");
}

const ROWS: &[Row] = &[
    Row {
        what: "system ELF",
        tree: base,
        policy: WS,
        target: b"/usr/bin/ls",
        argv: &[b"ls"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "workspace ELF",
        tree: base,
        policy: WS,
        target: b"/ws/payload",
        argv: &[b"payload"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "relative workspace ELF",
        tree: base,
        policy: WS,
        target: b"./payload",
        argv: &[b"payload"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "development allows it",
        tree: base,
        policy: "version = 1\nworkspace = \"/ws\"\nprofile = \"development\"\n",
        target: b"/ws/payload",
        argv: &[b"payload"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "development's own temp dir (an executable root) runs what it built",
        tree: shm_and_tmp,
        policy: DEV_ROOTS,
        target: b"/tmp/own/hello",
        argv: &[b"hello"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "development, /dev/shm: the kernel will refuse it, so the guard says so",
        tree: shm_and_tmp,
        policy: DEV_ROOTS,
        target: b"/dev/shm/hello",
        argv: &[b"hello"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "development, the runtime dir /run/user/UID: write-only too",
        tree: shm_and_tmp,
        policy: DEV_ROOTS,
        target: b"/run/user/1001/hello",
        argv: &[b"hello"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "development, the workspace is always an executable root",
        tree: shm_and_tmp,
        policy: DEV_ROOTS,
        target: b"/ws/payload",
        argv: &[b"payload"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "development, a program in /dev/shm through the loader",
        tree: shm_and_tmp,
        policy: DEV_ROOTS,
        target: b"/usr/lib64/ld-linux-x86-64.so.2",
        argv: &[b"ld.so", b"/dev/shm/hello"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "development without executable_roots leaves /dev/shm to the kernel",
        tree: shm_and_tmp,
        policy: "version = 1\nworkspace = \"/ws\"\nprofile = \"development\"\n",
        target: b"/dev/shm/hello",
        argv: &[b"hello"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "missing",
        tree: base,
        policy: WS,
        target: b"/ws/nothing",
        argv: &[b"x"],
        envp: &[],
        want: Want::Kernel(ENOENT),
    },
    Row {
        what: "workspace script starts through its interpreter",
        tree: base,
        policy: WS,
        target: b"/ws/build.sh",
        argv: &[b"build.sh", b"a"],
        envp: &[],
        want: Want::Launch(&[b"/bin/sh", b"/ws/build.sh", b"a"]),
    },
    Row {
        what: "script naming a workspace ELF",
        tree: base,
        policy: WS,
        target: b"/ws/evil.sh",
        argv: &[b"evil.sh"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "workspace symlink to a system program: canonical name",
        tree: base,
        policy: WS,
        target: b"/ws/link",
        argv: &[b"link"],
        envp: &[],
        want: Want::ExecAs(b"/usr/bin/ls"),
    },
    Row {
        what: "relative name through the workspace: canonical name",
        tree: base,
        policy: WS,
        target: b"link",
        argv: &[b"link"],
        envp: &[],
        want: Want::ExecAs(b"/usr/bin/ls"),
    },
    Row {
        what: "system symlink: the caller's own name",
        tree: base,
        policy: WS,
        target: b"/bin/sh",
        argv: &[b"sh"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "LD_PRELOAD from the workspace",
        tree: base,
        policy: WS,
        target: b"/usr/bin/ls",
        argv: &[b"ls"],
        envp: &[b"LD_PRELOAD=/ws/evil.so"],
        want: Want::Deny(Reason::PreloadMutable),
    },
    Row {
        what: "the last LD_PRELOAD counts too",
        tree: base,
        policy: WS,
        target: b"/usr/bin/ls",
        argv: &[b"ls"],
        envp: &[b"LD_PRELOAD=", b"LD_PRELOAD=/ws/evil.so"],
        want: Want::Deny(Reason::PreloadMutable),
    },
    Row {
        what: "GCONV_PATH in the workspace",
        tree: base,
        policy: WS,
        target: b"/usr/bin/ls",
        argv: &[b"ls"],
        envp: &[b"GCONV_PATH=/ws"],
        want: Want::Deny(Reason::LibraryPathMutable),
    },
    Row {
        what: "LD_ORIGIN_PATH in the workspace",
        tree: base,
        policy: WS,
        target: b"/usr/bin/ls",
        argv: &[b"ls"],
        envp: &[b"LD_ORIGIN_PATH=/ws"],
        want: Want::Deny(Reason::LibraryPathMutable),
    },
    Row {
        what: "data variables name the workspace freely",
        tree: base,
        policy: WS,
        target: b"/usr/bin/ls",
        argv: &[b"ls"],
        envp: &[b"TMPDIR=/tmp", b"LOCPATH=/ws", b"NLSPATH=/ws"],
        want: Want::Allow,
    },
    Row {
        what: "valgrind of a workspace ELF",
        tree: base,
        policy: WS,
        target: b"/usr/bin/valgrind",
        argv: &[b"valgrind", b"-q", b"./payload"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "valgrind of a system program",
        tree: base,
        policy: WS,
        target: b"/usr/bin/valgrind",
        argv: &[b"valgrind", b"/usr/bin/ls", b"/ws/payload"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "own_loaders = [] names none",
        tree: base,
        policy: "version = 1\nworkspace = \"/ws\"\nown_loaders = []\n",
        target: b"/usr/bin/valgrind",
        argv: &[b"valgrind", b"./payload"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "allow-list",
        tree: base,
        policy: "version = 1\nworkspace = \"/ws\"\nallow_commands = [\"dash\"]\n",
        target: b"/usr/bin/ls",
        argv: &[b"ls"],
        envp: &[],
        want: Want::Deny(Reason::CommandNotAllowed),
    },
    Row {
        what: "a program the user can replace, unsealed",
        tree: writable_opt,
        policy: WS,
        target: b"/opt/tool",
        argv: &[b"tool"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "the same for root: only the write set",
        tree: writable_opt_root,
        policy: WS,
        target: b"/opt/tool",
        argv: &[b"tool"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "the same sealed: the kernel's partition",
        tree: writable_opt,
        policy: "version = 1\nworkspace = \"/ws\"\nseal = true\n",
        target: b"/opt/tool",
        argv: &[b"tool"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "a program in a directory the user owns, write bits off, unsealed",
        tree: owned_opt,
        policy: WS,
        target: b"/opt/tool",
        argv: &[b"tool"],
        envp: &[],
        want: Want::Deny(Reason::MutableNative),
    },
    Row {
        what: "the same for root: only the write set",
        tree: owned_opt_root,
        policy: WS,
        target: b"/opt/tool",
        argv: &[b"tool"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "the same sealed",
        tree: owned_opt,
        policy: "version = 1\nworkspace = \"/ws\"\nseal = true\n",
        target: b"/opt/tool",
        argv: &[b"tool"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "a `..` after a directory in the write set: handed by its kernel name",
        tree: ws_tricks,
        policy: WS,
        target: b"/ws/x/../../usr/bin/ls",
        argv: &[b"ls"],
        envp: &[],
        want: Want::ExecAs(b"/usr/bin/ls"),
    },
    Row {
        what: "allow-list: a symlink the session made, named after an allowed command",
        tree: ws_tricks,
        policy: "version = 1\nworkspace = \"/ws\"\nallow_commands = [\"ls\"]\n",
        target: b"/ws/ls",
        argv: &[b"ls"],
        envp: &[],
        want: Want::Deny(Reason::CommandNotAllowed),
    },
    Row {
        what: "allow-list: a name through symlinks outside the write set counts",
        tree: ws_tricks,
        policy: "version = 1\nworkspace = \"/ws\"\nallow_commands = [\"sh\"]\n",
        target: b"/bin/sh",
        argv: &[b"sh"],
        envp: &[],
        want: Want::Allow,
    },
    Row {
        what: "empty argv",
        tree: base,
        policy: WS,
        target: b"/usr/bin/ls",
        argv: &[],
        envp: &[],
        want: Want::Deny(Reason::ArgvEmpty),
    },
    Row {
        what: "breakglass: every exec allowed, audited",
        tree: base,
        policy: "version = 1\nworkspace = \"/ws\"\nprofile = \"breakglass\"\n",
        target: b"/ws/payload",
        argv: &[b"payload"],
        envp: &[],
        want: Want::Breakglass,
    },
    Row {
        what: "a deleted workspace ELF, even in development",
        tree: deleted,
        policy: "version = 1\nworkspace = \"/ws\"\nprofile = \"development\"\n",
        target: b"/ws/gone",
        argv: &[b"gone"],
        envp: &[],
        want: Want::Deny(Reason::AnonymousNative),
    },
    Row {
        what: "a protected runtime started by another program than its wrapper",
        tree: runtime,
        policy: RUNTIME,
        target: b"/usr/bin/node",
        argv: &[b"node"],
        envp: &[],
        want: Want::Deny(Reason::ProtectedRuntimeDirect),
    },
    Row {
        what: "a workspace script naming a protected runtime",
        tree: runtime,
        policy: RUNTIME,
        target: b"/ws/run.js",
        argv: &[b"run.js"],
        envp: &[],
        want: Want::Deny(Reason::ProtectedRuntimeScript),
    },
    Row {
        what: "a protected runtime, and no /proc to ask who starts it",
        tree: runtime_no_proc,
        policy: RUNTIME,
        target: b"/usr/bin/node",
        argv: &[b"node"],
        envp: &[],
        want: Want::Deny(Reason::ProcUnavailable),
    },
    Row {
        what: "an execute-only workspace file",
        tree: execute_only,
        policy: WS,
        target: b"/ws/secret",
        argv: &[b"secret"],
        envp: &[],
        want: Want::Deny(Reason::UnreadableMutable),
    },
    Row {
        what: "a workspace file neither ELF nor #!",
        tree: unknown_format,
        policy: WS,
        target: b"/ws/data.bin",
        argv: &[b"data.bin"],
        envp: &[],
        want: Want::Deny(Reason::MutableUnknownFormat),
    },
    Row {
        what: "a #! chain deeper than the kernel follows",
        tree: deep_chain,
        policy: WS,
        target: b"/ws/s1",
        argv: &[b"s1"],
        envp: &[],
        want: Want::Deny(Reason::ShebangTooDeep),
    },
    Row {
        what: "env -S with a quote in a workspace script",
        tree: env_quoted,
        policy: WS,
        target: b"/ws/quoted.sh",
        argv: &[b"quoted.sh"],
        envp: &[],
        want: Want::Deny(Reason::ShebangAmbiguous),
    },
    Row {
        what: "the loader asked to find its program in library directories",
        tree: loader,
        policy: WS,
        target: b"/usr/lib64/ld-linux-x86-64.so.2",
        argv: &[b"ld.so", b"payload"],
        envp: &[],
        want: Want::Deny(Reason::LoaderAmbiguous),
    },
    Row {
        what: "a canonical name longer than the guard hands the kernel",
        tree: long_name,
        policy: WS,
        target: b"/ws/far",
        argv: &[b"far"],
        envp: &[],
        want: Want::Deny(Reason::PathTooLong),
    },
];

/// What the engine answered for `row`, in the row's terms (`None`: as wanted).
fn mismatch(row: &Row) -> Option<std::string::String> {
    let mut sys = MemSys::new();
    (row.tree)(&mut sys);
    let policy = Policy::parse(row.policy.as_bytes()).unwrap();
    let runtimes = RuntimeIds::resolve(&mut sys, &policy);
    let ctx = Context {
        policy: &policy,
        runtimes: &runtimes,
        self_lib: None,
        memo: None,
    };
    let req = Request {
        target: Target::Path(row.target),
        given_name: None,
        argv: row.argv,
        envp: row.envp,
    };
    let mut exec_as = ExecName::new();
    let mut launch = None;
    let verdict = decide_launch(&mut sys, &ctx, &req, &mut exec_as, &mut launch);
    let launch: Option<Vec<Vec<u8>>> = launch.map(|l| l.argv().map(<[u8]>::to_vec).collect());
    let ok = match (&row.want, &verdict) {
        (Want::Allow, Verdict::Allow(Reason::Allowed)) => {
            launch.is_none() && exec_as.as_bytes().is_empty()
        }
        (Want::Breakglass, Verdict::Allow(Reason::Breakglass)) => true,
        (Want::Launch(w), Verdict::Allow(_)) => launch
            .as_ref()
            .is_some_and(|l| l.iter().map(Vec::as_slice).eq(w.iter().copied())),
        (Want::ExecAs(w), Verdict::Allow(_)) => launch.is_none() && exec_as.as_bytes() == *w,
        (Want::Deny(r), Verdict::Deny { reason, .. }) => r == reason,
        (Want::Kernel(e), Verdict::Kernel(k)) => e == k,
        _ => false,
    };
    (!ok).then(|| {
        std::format!(
            "{}: want {:?}, got {verdict:?}, launch {launch:?}, exec as {:?}",
            row.what,
            row.want,
            crate::text::Lossy(exec_as.as_bytes())
        )
    })
}

/// The codes the engine never gives, and where each is given and tested instead.
const NOT_THE_ENGINES: &[(Reason, &str)] = &[
    (
        Reason::EnvironmentTooLarge,
        "the preload's environment rewrite (tests/guard_sticky.rs)",
    ),
    (
        Reason::EnvironmentNotSticky,
        "the preload's entry points (tests/guard_sticky.rs, tests/guard_around_hooks.rs)",
    ),
    (
        Reason::PolicyMissing,
        "guard/load and the preload's state (tests/guard_bad_input.rs)",
    ),
    (
        Reason::PolicyInvalid,
        "guard/load and the preload's state (tests/guard_bad_input.rs)",
    ),
    (
        Reason::PolicyUntrusted,
        "guard/load and the preload's state (tests/guard_system_policy.rs)",
    ),
    (
        Reason::AuditUnwritable,
        "the preload's audit and the session's preflight (tests/guard_audit.rs)",
    ),
    (Reason::SyscallX32, "the preload's raw-syscall hook"),
    (Reason::SpawnActions, "the preload's posix_spawn hook"),
    // The engine's own: a chain longer than its bound, a runtime index it found itself.
    (
        Reason::InternalError,
        "no input reaches it (the preload's state gives it for a lost lock)",
    ),
];

/// One row per code: every reason the engine gives has a row that produces it, and every
/// other one is named with where it is given.
#[test]
fn every_reason_has_its_row() {
    for reason in Reason::ALL {
        let rows = ROWS
            .iter()
            .filter(|r| match r.want {
                Want::Deny(d) => d == reason,
                Want::Breakglass => reason == Reason::Breakglass,
                Want::Allow | Want::Launch(_) | Want::ExecAs(_) => reason == Reason::Allowed,
                Want::Kernel(_) => false,
            })
            .count();
        let elsewhere = NOT_THE_ENGINES.iter().any(|(r, _)| *r == reason);
        assert!(
            (rows > 0) != elsewhere,
            "{}: {rows} rows, named elsewhere: {elsewhere}",
            reason.code()
        );
    }
}

#[test]
fn every_rule_row() {
    let failed: Vec<_> = ROWS.iter().filter_map(mismatch).collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn the_double_records_every_call() {
    let mut sys = MemSys::new();
    base(&mut sys);
    let policy = Policy::parse(WS.as_bytes()).unwrap();
    let ctx = Context {
        policy: &policy,
        runtimes: &RuntimeIds::NONE,
        self_lib: None,
        memo: None,
    };
    let req = Request {
        target: Target::Path(b"/usr/bin/ls"),
        given_name: None,
        argv: &[&b"ls"[..]][..],
        envp: &[][..],
    };
    assert!(decide(&mut sys, &ctx, &req).is_allow());
    // Unsealed and not root: the permission walk asked the kernel about the file and
    // every directory, and who owns each (its owner could make it writable).
    for p in ["/usr/bin/ls", "/usr/bin", "/usr", "/"] {
        for call in ["may_write", "stat"] {
            assert!(
                sys.calls.iter().any(|c| *c == std::format!("{call} {p}")),
                "{call} {p}: {:?}",
                sys.calls
            );
        }
    }
}

/// Decides `target` (argv `[target]`, no environment) `n` times with one memo, and returns
/// the verdicts and how many times the target was opened.
fn decide_with_memo(
    sys: &mut MemSys,
    policy: &str,
    target: &[u8],
    table: &crate::memo::MemoTable,
    seen: &core::sync::atomic::AtomicU64,
    n: usize,
) -> (Vec<Verdict>, usize) {
    let policy = Policy::parse(policy.as_bytes()).unwrap();
    let ctx = Context {
        policy: &policy,
        runtimes: &RuntimeIds::NONE,
        self_lib: None,
        memo: Some(Memo::new(table, Some(seen))),
    };
    let argv = [target];
    let req = Request {
        target: Target::Path(target),
        given_name: None,
        argv: &argv[..],
        envp: &[][..],
    };
    let opened = std::format!("open {}", crate::text::Lossy(target));
    let count = |sys: &MemSys| sys.calls.iter().filter(|c| **c == opened).count();
    let before = count(sys);
    let verdicts = (0..n).map(|_| decide(sys, &ctx, &req)).collect();
    let opens = count(sys) - before;
    (verdicts, opens)
}

const SEALED: &str = "version = 1\nworkspace = \"/ws\"\nseal = true\n";

#[test]
fn a_sealed_session_remembers_an_immutable_elf_decided_twice_in_a_row() {
    let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
    let mut sys = MemSys::new();
    base(&mut sys);
    let (v, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 5);
    assert!(v.iter().all(Verdict::is_allow), "{v:?}");
    // Opened by the first two decisions; the next three asked for a stat only.
    assert_eq!(opens, 2, "{:?}", sys.calls);
}

#[test]
fn a_name_through_symlinks_outside_the_write_set_is_remembered_with_its_kernel_name() {
    // `/bin/sh` reaches `/usr/bin/dash` through two symlinks; the allow-list names the
    // kernel's file, so a remembered decision must still know it.
    for (allow, want_allow) in [("dash", true), ("ls", false)] {
        let policy = std::format!("{SEALED}allow_commands = [\"{allow}\"]\n");
        let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
        let mut sys = MemSys::new();
        base(&mut sys);
        let (v, _) = decide_with_memo(&mut sys, &policy, b"/bin/sh", &table, &seen, 5);
        let opened = sys
            .calls
            .iter()
            .filter(|c| *c == "open /usr/bin/dash")
            .count();
        assert_eq!(opened, 2, "{:?}", sys.calls);
        assert!(
            v.iter().all(|v| v.is_allow() == want_allow),
            "{allow}: {v:?}"
        );
    }
}

#[test]
fn a_remembered_file_changed_or_replaced_is_inspected_again() {
    let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
    let mut sys = MemSys::new();
    base(&mut sys);
    let (_, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 3);
    assert_eq!(opens, 2);
    // Written or chmod'ed in place: a later change time.
    sys.touch(b"/usr/bin/ls");
    let (v, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 1);
    assert_eq!(opens, 1, "{:?}", sys.calls);
    assert!(v[0].is_allow());
    // Replaced by a script whose interpreter is a workspace ELF: decided afresh, refused.
    let (_, _) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 2);
    sys.script(b"/usr/bin/ls", b"#!/ws/payload\n");
    let (v, opens) = decide_with_memo(&mut sys, SEALED, b"/usr/bin/ls", &table, &seen, 1);
    assert_eq!(opens, 1, "{:?}", sys.calls);
    assert!(
        matches!(
            v[0],
            Verdict::Deny {
                reason: Reason::MutableNative,
                ..
            }
        ),
        "{v:?}"
    );
}

#[test]
fn unsealed_sessions_and_mutable_targets_are_never_remembered() {
    for (policy, target) in [
        (WS, &b"/usr/bin/ls"[..]),
        (SEALED, &b"/ws/payload"[..]),
        (SEALED, &b"../usr/bin/ls"[..]), // relative: another file in another cwd
        (SEALED, &b"/ws/link"[..]),      // a symlink in the write set
        (SEALED, &b"/usr/bin/../bin/ls"[..]), // not a normal name
        (SEALED, &b"/usr//bin/ls"[..]),
    ] {
        let (table, seen) = (crate::memo::MemoTable::new(), Default::default());
        let mut sys = MemSys::new();
        base(&mut sys);
        let opens = |sys: &MemSys| sys.calls.iter().filter(|c| c.starts_with("open ")).count();
        decide_with_memo(&mut sys, policy, target, &table, &seen, 1);
        let first = opens(&sys);
        decide_with_memo(&mut sys, policy, target, &table, &seen, 3);
        // Opened as often by every later decision as by the first.
        assert!(first > 0, "{}: {:?}", crate::text::Lossy(target), sys.calls);
        assert_eq!(
            opens(&sys),
            4 * first,
            "{}: {:?}",
            crate::text::Lossy(target),
            sys.calls
        );
    }
}

/// A wrapper (or a runtime) that several entries name is asked about once per process: a
/// session's policy names one wrapper for each of git's copies, and every process resolves
/// the identities when it loads the policy (issue 31).
#[test]
fn each_runtime_and_wrapper_path_is_asked_once() {
    let mut sys = MemSys::new();
    base(&mut sys);
    sys.elf(b"/usr/bin/git")
        .elf(b"/usr/lib/git-core/git")
        .elf(b"/usr/libexec/git-wrapper")
        .elf(b"/usr/bin/node")
        .elf(b"/usr/libexec/node-wrapper");
    let policy = "version = 1\nworkspace = \"/ws\"\n\n[[runtime]]\nname = \"git\"\npath = \"/usr/bin/git\"\nwrapper = \"/usr/libexec/git-wrapper\"\n\n[[runtime]]\nname = \"git\"\npath = \"/usr/lib/git-core/git\"\nwrapper = \"/usr/libexec/git-wrapper\"\n\n[[runtime]]\nname = \"git\"\npath = \"/usr/bin/git\"\nwrapper = \"/usr/libexec/git-wrapper\"\n\n[[runtime]]\nname = \"node\"\npath = \"/usr/bin/node\"\nwrapper = \"/usr/libexec/node-wrapper\"\n";
    let policy = Policy::parse(policy.as_bytes()).unwrap();
    let ids = RuntimeIds::resolve(&mut sys, &policy);
    let stats: Vec<_> = sys
        .calls
        .iter()
        .filter(|c| c.starts_with("stat "))
        .collect();
    assert_eq!(
        stats,
        [
            "stat /usr/bin/git",
            "stat /usr/libexec/git-wrapper",
            "stat /usr/lib/git-core/git",
            "stat /usr/bin/node",
            "stat /usr/libexec/node-wrapper"
        ],
        "{:?}",
        sys.calls
    );
    // The entries that asked nothing still know their files.
    let mut kpath = crate::path::PathBuf::new();
    for (path, runtime) in [(&b"/usr/lib/git-core/git"[..], 1), (b"/usr/bin/git", 0)] {
        let fd = sys
            .open(At::Cwd(path), crate::sys::OpenMode::PathOnly, true)
            .unwrap();
        let info = sys.fstat(&fd).unwrap();
        sys.fd_path(&fd, &mut kpath).unwrap();
        assert_eq!(
            ids.runtime_of(&policy, &info, kpath.as_bytes()),
            Some(runtime)
        );
    }
    let wrapper = sys.stat(b"/usr/libexec/git-wrapper").unwrap();
    assert!(ids.caller_may_start(&policy, b"git", &wrapper, b"/usr/libexec/git-wrapper"));
}

/// Under the seal, a process asks nothing the policy's snapshot answers: the identities
/// `execguard run` carried are used, outside the write set only; without the seal, or for a
/// path in the write set, they are asked as before (issue 31).
#[test]
fn carried_identities_are_used_only_under_the_seal_and_outside_the_write_set() {
    let mut sys = MemSys::new();
    base(&mut sys);
    sys.elf(b"/usr/bin/git")
        .elf(b"/usr/libexec/git-wrapper")
        .elf(b"/ws/tools/node")
        .elf(b"/usr/libexec/node-wrapper");
    let id = |sys: &mut MemSys, path: &[u8]| {
        let info = sys.stat(path).unwrap();
        format!("{}:{}", info.dev, info.ino)
    };
    let (git, gw, node, nw) = (
        id(&mut sys, b"/usr/bin/git"),
        id(&mut sys, b"/usr/libexec/git-wrapper"),
        id(&mut sys, b"/ws/tools/node"),
        id(&mut sys, b"/usr/libexec/node-wrapper"),
    );
    let text = |seal: bool| {
        format!("version = 1\nworkspace = \"/ws\"\nseal = {seal}\n\n[[runtime]]\nname = \"git\"\npath = \"/usr/bin/git\"\nwrapper = \"/usr/libexec/git-wrapper\"\npath_id = \"{git}\"\nwrapper_id = \"{gw}\"\n\n[[runtime]]\nname = \"node\"\npath = \"/ws/tools/node\"\nwrapper = \"/usr/libexec/node-wrapper\"\npath_id = \"{node}\"\nwrapper_id = \"{nw}\"\n")
    };
    let asked = |sys: &MemSys| -> Vec<String> {
        sys.calls
            .iter()
            .filter(|c| c.starts_with("stat "))
            .cloned()
            .collect()
    };
    let sealed = text(true);
    let policy = Policy::parse(sealed.as_bytes()).unwrap();
    sys.calls.clear();
    let ids = RuntimeIds::resolve(&mut sys, &policy);
    assert_eq!(asked(&sys), ["stat /ws/tools/node"], "{:?}", sys.calls);
    let wrapper = sys.stat(b"/usr/libexec/git-wrapper").unwrap();
    assert!(ids.caller_may_start(&policy, b"git", &wrapper, b"/usr/libexec/git-wrapper"));
    let real = sys.stat(b"/usr/bin/git").unwrap();
    assert_eq!(ids.runtime_of(&policy, &real, b"/usr/bin/git"), Some(0));

    let unsealed = text(false);
    let policy = Policy::parse(unsealed.as_bytes()).unwrap();
    sys.calls.clear();
    RuntimeIds::resolve(&mut sys, &policy);
    assert_eq!(asked(&sys).len(), 4, "{:?}", sys.calls);
}

/// A carried identity that no longer names the file at the runtime's path (the host replaced
/// it during the session) still protects that path, and approves no other wrapper.
#[test]
fn a_stale_carried_identity_fails_closed() {
    let mut sys = MemSys::new();
    base(&mut sys);
    sys.elf(b"/usr/bin/git").elf(b"/usr/libexec/git-wrapper");
    let text = "version = 1\nworkspace = \"/ws\"\nseal = true\n\n[[runtime]]\nname = \"git\"\npath = \"/usr/bin/git\"\nwrapper = \"/usr/libexec/git-wrapper\"\npath_id = \"1:999999\"\nwrapper_id = \"1:999998\"\n";
    let policy = Policy::parse(text.as_bytes()).unwrap();
    let ids = RuntimeIds::resolve(&mut sys, &policy);
    let real = sys.stat(b"/usr/bin/git").unwrap();
    assert_eq!(ids.runtime_of(&policy, &real, b"/usr/bin/git"), Some(0));
    let wrapper = sys.stat(b"/usr/libexec/git-wrapper").unwrap();
    assert!(!ids.caller_may_start(&policy, b"git", &wrapper, b"/usr/libexec/git-wrapper"));
}
