//! Shared helpers for the guard's integration tests: the guard library (built fresh, debug),
//! the C probe programs (compiled once per test binary with `cc`), and per-test fixtures with a
//! workspace, a non-mutable "system" directory and a policy.
//!
//! Nothing here skips: a missing compiler, library or interpreter fails the test that needs it.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";
pub const PYTHON: &str = "/usr/bin/python3";
pub const EACCES: i32 = libc::EACCES;
pub const ENOENT: i32 = libc::ENOENT;
pub const ENOEXEC: i32 = libc::ENOEXEC;
pub const ELOOP: i32 = libc::ELOOP;
pub const ENAMETOOLONG: i32 = libc::ENAMETOOLONG;

/// A crate with a build script, its own workspace (the tests' directories lie inside
/// execguard's): `cargo run` prints `built by build.rs`.
pub const CARGO_WITH_BUILD_RS: [(&str, &str); 3] = [
    (
        "Cargo.toml",
        "[package]\nname = \"bs\"\nversion = \"0.1.0\"\nedition = \"2018\"\n\n[workspace]\n",
    ),
    (
        "build.rs",
        "fn main() { println!(\"cargo:rustc-env=BUILT_BY=build.rs\"); }\n",
    ),
    (
        "src/main.rs",
        "fn main() { println!(\"built by {}\", env!(\"BUILT_BY\")); }\n",
    ),
];

/// Everything the tests run.
pub struct Tools {
    /// `libexecguard.so`, debug build of the current sources.
    pub lib: PathBuf,
    /// The `execguard` CLI.
    pub cli: PathBuf,
    /// `probe.c`: calls one exec entry point and reports.
    pub probe: PathBuf,
    /// `argv.c`: prints its argv (the payload, the runtime, the `#!` interpreter).
    pub argv: PathBuf,
    /// `evil.c`: a shared object that announces itself when mapped.
    pub evil: PathBuf,
    /// `around.c`: reaches libc's exec and mapping functions around the hooked names.
    pub around: PathBuf,
}

pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let dir = support_dir();
        Tools {
            lib: build_guard(),
            cli: PathBuf::from(env!("CARGO_BIN_EXE_execguard")),
            probe: compile(&dir, "probe.c", "probe", &[]),
            argv: compile(&dir, "argv.c", "argv", &[]),
            evil: compile(&dir, "evil.c", "evil.so", &["-shared", "-fPIC"]),
            around: compile(&dir, "around.c", "around", &[]),
        }
    })
}

/// `$CARGO_TARGET_TMPDIR`, canonical: outside every built-in mutable root (checked).
pub fn target_tmp() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let bytes = dir.as_os_str().as_bytes();
    for root in execguard_policy::policy::BUILTIN_MUTABLE_ROOTS {
        assert!(
            !execguard_policy::path::is_under(bytes, root),
            "the cargo target directory {} lies in the built-in mutable root {}: the tests need a \
             non-mutable place for system-like files; use a target directory elsewhere",
            dir.display(),
            String::from_utf8_lossy(root)
        );
    }
    dir
}

pub fn support_dir() -> PathBuf {
    let dir = target_tmp().join("execguard-support");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds the guard library of the current sources (debug profile) and returns its path. The
/// outer `cargo test` does not build a cdylib that no test target links, so a fresh build is
/// the only way to be sure the library under test is the code under test.
fn build_guard() -> PathBuf {
    build_guard_as("debug", &[])
}

/// The empty preload floor (`benches/floor`, debug build): what any preload costs a process,
/// for counts that compare the guard's with it.
#[allow(dead_code)] // not every test binary uses it
pub fn floor_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| build_cdylib(("execguard-bench-floor", "floor_rust"), "debug", &[]))
}

/// The guard library as it ships (release profile), for what depends on code generation: the
/// stack a hook needs.
#[allow(dead_code)] // not every test binary uses it
pub fn release_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| build_guard_as("release", &[]))
}

/// [`release_lib`] with its symbol table (the shipped one is stripped), built apart: the same
/// code and layout, for tests that find a function by its name.
#[allow(dead_code)] // not every test binary uses it
pub fn release_lib_with_symbols() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/with-symbols");
    let dir = dir.to_str().unwrap();
    let keep = "profile.release.package.execguard-preload.strip=\"none\"";
    LIB.get_or_init(|| build_guard_as("release", &["--config", keep, "--target-dir", dir]))
}

fn build_guard_as(profile: &str, extra: &[&str]) -> PathBuf {
    build_cdylib(("execguard-preload", "execguard"), profile, extra)
}

/// Builds the cdylib of `package` (its library target `name`, `lib<name>.so`).
fn build_cdylib((package, name): (&str, &str), profile: &str, extra: &[&str]) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", package])
        .args((profile == "release").then_some("--release"))
        .args(extra)
        .arg("--message-format=json")
        .arg("--manifest-path")
        .arg(&manifest)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {package}: {e}"));
    assert!(out.status.success(), "cargo build -p {package} failed");
    let mut found = None;
    for line in out.stdout.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        if v["reason"] == "compiler-artifact" && v["target"]["name"] == name {
            for f in v["filenames"].as_array().unwrap() {
                let f = f.as_str().unwrap();
                if f.ends_with(&format!("/lib{name}.so")) {
                    found = Some(PathBuf::from(f));
                }
            }
        }
    }
    let lib = found.unwrap_or_else(|| panic!("cargo built no lib{name}.so"));
    assert!(
        lib.components().any(|c| c.as_os_str() == profile),
        "{} is not the {profile} build",
        lib.display()
    );
    lib.canonicalize().unwrap()
}

/// Compiles one C file from tests/support with `cc` (once per test binary; concurrent test
/// binaries each write their own file and rename it into place).
pub fn compile(dir: &Path, src: &str, out: &str, extra: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support")
        .join(src);
    let dst = dir.join(out);
    // Unique per call: tests of one binary may compile the same file at once.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!("{out}.{}.{n}.tmp", std::process::id()));
    let status = Command::new("cc")
        .args(["-O1", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .args(extra)
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .status()
        .expect("cannot run cc (install build-essential)");
    assert!(status.success(), "cc failed for {}", src.display());
    std::fs::rename(&tmp, &dst).unwrap();
    dst
}

/// A path as it must appear in a policy string.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// One test's world:
/// - `base`: a non-mutable directory under the cargo target dir;
/// - `ws`: `base/ws`, the workspace named by the policy (mutable only because the policy says so);
/// - `sys`: `base/sys`, non-mutable, for "system" programs (copies of the helpers);
/// - `tmp`: a directory under `/tmp` (a built-in mutable root).
pub struct Fixture {
    pub base: PathBuf,
    pub ws: PathBuf,
    pub sys: PathBuf,
    pub tmp: PathBuf,
    pub audit: PathBuf,
    /// `ws/payload`: a copy of the argv printer (native code in the workspace).
    pub payload: PathBuf,
    /// `ws/evil.so`.
    pub evil: PathBuf,
    /// `sys/argv`: the argv printer in a non-mutable place.
    pub sys_argv: PathBuf,
    /// Who runs this fixture's commands ([`Fixture::for_user`]); the tests' user when `None`.
    pub who: Option<execguard_testkit::Identity>,
}

impl Fixture {
    pub fn new(name: &str) -> Fixture {
        let t = tools();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("{name}-{}-{n}", std::process::id());
        let base = target_tmp().join("execguard-fixtures").join(&id);
        let _ = std::fs::remove_dir_all(&base);
        let ws = base.join("ws");
        let sys = base.join("sys");
        let tmp = PathBuf::from("/tmp").join(format!("execguard-test-{id}"));
        let _ = std::fs::remove_dir_all(&tmp);
        for d in [&ws, &sys, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        let tmp = tmp.canonicalize().unwrap();
        let f = Fixture {
            audit: base.join("audit.jsonl"),
            payload: ws.join("payload"),
            evil: ws.join("evil.so"),
            sys_argv: sys.join("argv"),
            base,
            ws,
            sys,
            tmp,
            who: None,
        };
        // A home and a runtime dir of the fixture's own: no test shares /tmp/execguard-UID
        // or writes the real ~/.config/execguard.
        for d in [f.home(), f.runtime_dir()] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        copy(&t.argv, &f.payload);
        copy(&t.evil, &f.evil);
        copy(&t.argv, &f.sys_argv);
        f
    }

    /// A policy for this fixture: the given profile, the workspace, the audit log, then `extra`
    /// (more top-level keys first, `[[runtime]]` tables last).
    pub fn policy(&self, profile: &str, extra: &str) -> String {
        format!(
            "version = 1\nprofile = \"{profile}\"\nworkspace = \"{}\"\naudit_log = \"{}\"\n{extra}",
            s(&self.ws),
            s(&self.audit)
        )
    }

    pub fn strict(&self) -> String {
        self.policy("strict", "")
    }

    /// `sys/rt` (a copy of the argv printer) protected, `sys/wrapper` (a copy of the probe) its
    /// wrapper. Returns the policy's `[[runtime]]` table.
    pub fn runtime(&self) -> String {
        copy(&tools().argv, &self.sys.join("rt"));
        copy(&tools().probe, &self.sys.join("wrapper"));
        format!(
            "[[runtime]]\nname = \"rt\"\npath = \"{}\"\nwrapper = \"{}\"\n",
            s(&self.sys.join("rt")),
            s(&self.sys.join("wrapper"))
        )
    }

    /// The PATH every guarded process starts with: `sys` first (so `#!/usr/bin/env rt` finds
    /// the protected runtime), then the usual directories.
    pub fn path_var(&self) -> OsString {
        let mut p = self.sys.clone().into_os_string();
        p.push(":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        p
    }

    /// A command with a clean environment, the guard preloaded and `policy` inline (host mode),
    /// running in the workspace.
    pub fn guarded(&self, policy: &str, program: impl AsRef<OsStr>) -> Command {
        let mut c = self.plain(program);
        c.env("LD_PRELOAD", &tools().lib)
            .env("EXECGUARD_POLICY", policy);
        c
    }

    /// The same environment without the guard.
    pub fn plain(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", self.path_var())
            .env("LANG", "C")
            .env("HOME", self.home())
            .env("XDG_RUNTIME_DIR", self.runtime_dir())
            .current_dir(&self.ws)
            .stdin(Stdio::null());
        self.as_user(&mut c);
        c
    }

    /// A fixture whose commands ([`Fixture::guarded`], [`Fixture::plain`], [`Fixture::probe`])
    /// run as `who`, with a home and an `XDG_RUNTIME_DIR` of their own (`base/home`,
    /// `base/runtime`, `who`'s), and the audit log and `tmp` given to `who`. A failing test says whom it
    /// ran as.
    pub fn for_user(name: &str, who: execguard_testkit::Identity) -> Fixture {
        let mut f = Fixture::new(&format!("{name}-{}", who.uid()));
        f.for_identity(&who);
        who.own(&f.home());
        who.own(&f.runtime_dir());
        // The fixture's own directory under /tmp is the user's, as theirs would be.
        who.own(&f.tmp);
        f.who = Some(who);
        f
    }

    /// Makes the fixture's directory and its parent traversable by a non-root user.
    pub fn open_parents(&self) {
        for d in [&self.base, &self.base.parent().unwrap().to_path_buf()] {
            let mode = std::fs::metadata(d).unwrap().permissions().mode();
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode | 0o711)).unwrap();
        }
    }

    /// Empties the audit log, keeping its owner.
    pub fn reset_audit(&self) {
        std::fs::write(&self.audit, b"").unwrap();
        if let Some(who) = &self.who {
            who.own(&self.audit);
        }
    }

    /// `who`'s identity, home and runtime dir on `c`, for a fixture made by
    /// [`Fixture::for_user`].
    fn as_user<'c>(&self, c: &'c mut Command) -> &'c mut Command {
        if let Some(who) = &self.who {
            who.apply(c)
                .env("HOME", self.home())
                .env("XDG_RUNTIME_DIR", self.runtime_dir());
        }
        c
    }

    /// `base/home`: the `HOME` of this fixture's commands.
    pub fn home(&self) -> PathBuf {
        self.base.join("home")
    }

    /// `base/runtime` (0700): the `XDG_RUNTIME_DIR` of this fixture's commands.
    pub fn runtime_dir(&self) -> PathBuf {
        self.base.join("runtime")
    }

    /// Runs the probe under the guard: `probe ARGS...`.
    pub fn probe<I, A>(&self, policy: &str, args: I) -> Outcome
    where
        I: IntoIterator<Item = A>,
        A: AsRef<OsStr>,
    {
        run(self.guarded(policy, &tools().probe).args(args))
    }

    /// A file in `dir` with `content`, mode 0755.
    pub fn write_exec(&self, path: &Path, content: &[u8]) {
        let staged = path.with_extension("staged");
        std::fs::write(&staged, content).unwrap();
        copy(&staged, path);
        std::fs::remove_file(&staged).unwrap();
    }

    /// Lets `who` run scenarios here: the audit log is created and given to `who` (everything
    /// else stays root's, so nothing becomes writable by the session's user).
    pub fn for_identity(&self, who: &execguard_testkit::Identity) -> &Self {
        std::fs::write(&self.audit, b"").unwrap();
        who.own(&self.audit);
        self
    }

    /// Every record of the audit log (each line must be one JSON object).
    pub fn audit_records(&self) -> Vec<serde_json::Value> {
        read_audit(&self.audit)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let (Some(who), true) = (&self.who, std::thread::panicking()) {
            eprintln!("(the failing scenario ran as {})", who.label());
        }
        // Keep the evidence when the test failed.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.base);
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

pub fn read_audit(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read(path).unwrap_or_default();
    text.split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!(
                    "audit line is not one JSON object ({e}): {}",
                    String::from_utf8_lossy(l)
                )
            })
        })
        .collect()
}

/// `from` copied to `to` (in place when `to` exists), mode 0755, by a child process (`cp`): were this process to hold
/// `to` open for writing, a child forked meanwhile by another test thread would inherit the
/// descriptor until its exec, and the kernel refuses to execute a file open for writing
/// anywhere (ETXTBSY): the harness's race, not the guard's.
pub fn copy(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("--")
        .arg(from)
        .arg(to)
        .status()
        .unwrap_or_else(|e| panic!("cp {} -> {}: {e}", from.display(), to.display()));
    assert!(
        status.success(),
        "cp {} -> {}: {status}",
        from.display(),
        to.display()
    );
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A path from raw bytes.
pub fn bytes_path(b: &[u8]) -> PathBuf {
    PathBuf::from(OsString::from_vec(b.to_vec()))
}

pub fn run(cmd: &mut Command) -> Outcome {
    let what = format!("{cmd:?}");
    // A program this test process just copied can be held open for writing by the child of a
    // `fork` another test thread made meanwhile (until that child execs, which closes it):
    // the kernel then refuses to execute it (ETXTBSY). Starting again once it is let go is
    // the test harness's race, not the guard's, so it is retried, briefly.
    let mut tries = 0;
    let out = loop {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.unwrap_or_else(|e| panic!("cannot start {what}: {e}")),
        }
    };
    Outcome::new(what, out)
}

/// What a process did.
pub struct Outcome {
    pub what: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// The probe's report line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub entry: String,
    pub ret: i64,
    pub errno: i32,
    pub status: Option<i32>,
}

impl Outcome {
    pub fn new(what: String, out: Output) -> Outcome {
        Outcome {
            what,
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The probe's `PROBE ...` line, if it printed one.
    pub fn report(&self) -> Option<Report> {
        let field = |k: &str| self.probe_field(k).map(str::to_string);
        Some(Report {
            entry: field("entry")?,
            ret: field("ret")?.parse().ok()?,
            errno: field("errno")?.parse().ok()?,
            status: field("status").and_then(|s| s.parse().ok()),
        })
    }

    /// The value of `key=` in the probe's `PROBE ...` line.
    pub fn probe_field(&self, key: &str) -> Option<&str> {
        let line = self.stdout.lines().find(|l| l.starts_with("PROBE "))?;
        line.split(' ')
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
    }

    /// [`Outcome::probe_field`] as a number; panics with the outcome when it is missing.
    #[allow(dead_code)] // not every test binary uses it
    pub fn probe_number(&self, key: &str) -> i64 {
        self.probe_field(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key}=<number> in the probe's report\n{self}"))
    }

    /// Did an argv printer (payload, runtime, interpreter) run?
    pub fn ran(&self) -> bool {
        self.stdout.lines().any(|l| l.starts_with("ARGV "))
    }

    /// The argv printed by an argv printer, decoded.
    pub fn printed_argv(&self) -> Option<Vec<Vec<u8>>> {
        let mut lines = self.stdout.lines().skip_while(|l| !l.starts_with("ARGV "));
        let n: usize = lines.next()?.strip_prefix("ARGV ")?.parse().ok()?;
        let mut v = Vec::new();
        for l in lines.take(n) {
            let hex = l.strip_prefix("ARG ")?;
            v.push(
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect(),
            );
        }
        (v.len() == n).then_some(v)
    }

    /// Every `execguard: denied <reason>: <path> -- <way forward>` line on stderr, as
    /// (reason, path).
    pub fn denials(&self) -> Vec<(String, String)> {
        self.denial_lines()
            .into_iter()
            .map(|(reason, path, _)| (reason, path))
            .collect()
    }

    /// Every refusal line on stderr, as (reason, path, way forward); the way forward is
    /// empty on a line that lacks one.
    pub fn denial_lines(&self) -> Vec<(String, String, String)> {
        denial_lines(&self.stderr)
    }

    pub fn has_denial(&self, reason: &str) -> bool {
        self.denials().iter().any(|(r, _)| r == reason)
    }

    /// The probe reported that its exec-family call failed with `errno`.
    #[track_caller]
    pub fn assert_exec_failed(&self, errno: i32) {
        let r = self
            .report()
            .unwrap_or_else(|| panic!("no PROBE line\n{self}"));
        assert_eq!((r.ret, r.errno), (-1, errno), "exec result\n{self}");
    }

    /// Refused with `reason`: a denial line, nothing ran, and the call failed.
    #[track_caller]
    pub fn assert_denied(&self, reason: &str) {
        assert!(self.has_denial(reason), "expected denial {reason}\n{self}");
        assert!(
            self.denial_lines()
                .iter()
                .all(|(_, _, way)| !way.is_empty()),
            "a refusal line without its way forward\n{self}"
        );
        assert!(!self.ran(), "the refused program ran\n{self}");
        assert!(
            !self.stderr.contains("EVIL_SO_LOADED"),
            "the refused shared object was mapped\n{self}"
        );
    }

    /// The argv printer ran and no denial was printed.
    #[track_caller]
    pub fn assert_ran(&self) {
        assert!(self.ran(), "expected the program to run\n{self}");
        assert!(self.denials().is_empty(), "unexpected denial\n{self}");
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--- {}\n--- exit {:?}\n--- stdout:\n{}--- stderr:\n{}---",
            self.what, self.code, self.stdout, self.stderr
        )
    }
}

/// One scenario's directories, owned by its user, under the target dir (not a mutable root
/// itself): `base/ws` the workspace, `base/home` a home of its own, `base/audit.jsonl` its
/// audit log. Removed when dropped, unless the test failed (kept to look at).
pub struct Scene {
    pub who: execguard_testkit::Identity,
    pub base: PathBuf,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub audit: PathBuf,
}

impl Scene {
    /// The directories of scenario `name` for `who` (one set per user and test process).
    pub fn new(who: execguard_testkit::Identity, name: &str) -> Scene {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "{name}-{}-{}",
            who.uid(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        let (ws, home) = (base.join("ws"), base.join("home"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let audit = base.join("audit.jsonl");
        std::fs::write(&audit, b"").unwrap();
        who.own(&base);
        Scene {
            who,
            base,
            ws,
            home,
            audit,
        }
    }

    /// `execguard run --profile PROFILE --workspace WS --audit AUDIT -- /bin/sh -c SCRIPT` in
    /// the workspace, as the scene's user with its own home, `PATH=/usr/bin:/bin`, the guard
    /// of these sources and no policy or preload of the caller's.
    pub fn session(&self, profile: &str, script: &str) -> Command {
        self.session_with(profile, &[], script)
    }

    /// [`Scene::session`] with more flags of `execguard run` (`--allow-shared-temp`).
    pub fn session_with(&self, profile: &str, flags: &[&str], script: &str) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_execguard"));
        c.args(["run", "--profile", profile])
            .args(flags)
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--audit")
            .arg(&self.audit)
            .args(["--", "/bin/sh", "-c", script])
            .current_dir(&self.ws)
            .env("PATH", "/usr/bin:/bin")
            // The guard of these sources (a cdylib no test target links is not rebuilt else).
            .env("EXECGUARD_LIB", &tools().lib)
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD");
        self.who.apply(&mut c);
        c.env("HOME", &self.home);
        c
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }
}

/// Bytes of a child's output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every refusal line in `stderr`, as (reason, path, way forward); the way forward is empty on
/// a line that lacks one.
pub fn denial_lines(stderr: &str) -> Vec<(String, String, String)> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("execguard: denied "))
        .filter_map(|r| {
            let (reason, rest) = r.split_once(": ")?;
            let (path, way) = rest.rsplit_once(" -- ").unwrap_or((rest, ""));
            Some((reason.to_string(), path.to_string(), way.to_string()))
        })
        .collect()
}

/// A child's status and both outputs, for an assertion message.
#[allow(dead_code)] // not every test binary uses it
pub fn shown(o: &Output) -> String {
    format!(
        "{:?}\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// A fixture for `execguard run` as `who` ([`Fixture::for_user`]): the workspace and the audit
/// log (emptied) theirs too, the fixture's parents traversable by a non-root user.
#[allow(dead_code)] // not every test binary uses it
pub fn session_fixture(name: &str, who: &execguard_testkit::Identity) -> Fixture {
    let f = Fixture::for_user(name, *who);
    who.own(&f.ws);
    f.reset_audit();
    f.open_parents();
    f
}

/// A fixture whose commands run as root, for sessions `who` starts ([`session_command`] and
/// `who.apply`): the workspace, home, runtime dir, `tmp` and audit log theirs, the fixture's
/// parents traversable.
pub fn world_fixture(name: &str, who: &execguard_testkit::Identity) -> Fixture {
    let f = Fixture::new(name);
    f.open_parents();
    for d in [f.ws.clone(), f.home(), f.runtime_dir(), f.tmp.clone()] {
        who.own(&d);
    }
    f.for_identity(who);
    f
}

/// `execguard run --workspace WS [--audit LOG] [flags] -- sh -c SCRIPT`, as the fixture's
/// user when it has one ([`Fixture::for_user`]).
pub fn session_command(f: &Fixture, audit: bool, flags: &[&str], script: &str) -> Command {
    let mut c = f.plain(&tools().cli);
    c.arg("run").arg("--workspace").arg(&f.ws);
    if audit {
        c.arg("--audit").arg(&f.audit);
    }
    c.args(flags).args(["--", "sh", "-c", script]);
    c
}

/// Asserts that `o` succeeded, showing it when not.
pub fn ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {}", shown(o));
}
