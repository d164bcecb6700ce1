//! `execguard run` puts the git and node wrappers in front of the real binaries, and
//! `execguard check` explains wrapper and provider decisions: end to end, with the real git
//! and node, in temporary repositories under /tmp (a mutable root: hooks and scripts there are
//! `#!` scripts, which strict allows).
//!
//! The CLI finds the guard library and the wrappers beside its own binary: build the whole
//! workspace (`cargo test` at the workspace root does; `cargo build` before `cargo test -p
//! execguard`). A missing piece, git or node fails these tests; nothing is skipped.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const EXECGUARD: &str = env!("CARGO_BIN_EXE_execguard");
const DEBIAN_GIT: &str = "/usr/bin/git";
/// These scenarios keep their repositories, remotes and markers in `/tmp` beside the
/// workspace, and check from outside what a session did there: they share the operator's
/// temp dirs (the session's own world is tests/world.rs's).
const SHARED_TEMP: &str = "--allow-shared-temp";
const REAL_NODE: &str = "/usr/bin/node";

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn beside_execguard(name: &str) -> PathBuf {
    let p = Path::new(EXECGUARD).parent().unwrap().join(name);
    assert!(
        p.is_file(),
        "{} is missing: build the whole workspace (`cargo build`) so the guard and the wrappers sit beside execguard",
        p.display()
    );
    p
}

fn require_tools() {
    for f in ["libexecguard.so", "execguard-git", "execguard-node"] {
        beside_execguard(f);
    }
    assert!(
        Path::new(DEBIAN_GIT).is_file(),
        "{DEBIAN_GIT} is missing: these tests need git (apt-get install -y git)"
    );
    assert!(
        Path::new(REAL_NODE).is_file(),
        "{REAL_NODE} is missing: these tests need node (apt-get install -y nodejs)"
    );
}

fn write_exec(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Set-up commands run unguarded, straight from the test.
fn setup_git(dir: &Path, args: &[&str]) {
    let out = Command::new(DEBIAN_GIT)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Repo {
    root: PathBuf,
    repo: PathBuf,
    marker: PathBuf,
}

impl Repo {
    /// A repository whose pre-commit hook appends `ran` to a marker file, then the output of a
    /// nested `git rev-parse --is-inside-work-tree` (which must go through the wrapper).
    fn new(name: &str) -> Repo {
        require_tools();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root = std::env::temp_dir().join(format!("eg-cliw-{}-{name}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let repo = root.join("repo");
        fs::create_dir_all(&repo).unwrap();
        let root = root.canonicalize().unwrap();
        let repo = repo.canonicalize().unwrap();
        setup_git(&repo, &["init", "-q", "-b", "main"]);
        setup_git(&repo, &["config", "user.name", "T"]);
        setup_git(&repo, &["config", "user.email", "t@example.invalid"]);
        for d in ["home", "runtime"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        fs::set_permissions(root.join("runtime"), fs::Permissions::from_mode(0o700)).unwrap();
        let marker = root.join("pre-commit.marker");
        write_exec(
            &repo.join(".git/hooks/pre-commit"),
            &format!(
                "#!/bin/sh\necho ran >> '{m}'\ngit rev-parse --is-inside-work-tree >> '{m}' 2>&1\necho \"nested=$?\" >> '{m}'\n",
                m = marker.display()
            ),
        );
        fs::write(repo.join("a.txt"), "a\n").unwrap();
        setup_git(&repo, &["add", "a.txt"]);
        Repo { root, repo, marker }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(EXECGUARD)
            .arg("run")
            .arg(SHARED_TEMP)
            .arg("--")
            .args(args)
            .current_dir(&self.repo)
            .env("HOME", self.root.join("home"))
            .env("XDG_RUNTIME_DIR", self.root.join("runtime"))
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap()
    }

    fn check(&self, args: &[&str]) -> Output {
        Command::new(EXECGUARD)
            .arg("check")
            .args(args)
            .current_dir(&self.repo)
            .env("HOME", self.root.join("home"))
            .env("XDG_RUNTIME_DIR", self.root.join("runtime"))
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap()
    }

    fn head(&self) -> String {
        let out = Command::new(DEBIAN_GIT)
            .args(["rev-parse", "--verify", "-q", "HEAD"])
            .current_dir(&self.repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn marker(&self) -> String {
        fs::read_to_string(&self.marker).unwrap_or_default()
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn assert_status(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn git_commit_runs_the_hook_and_nested_git_goes_through_the_wrapper() {
    let r = Repo::new("commit");
    let out = r.run(&["git", "commit", "-q", "-m", "one"]);
    assert_status(&out, 0);
    assert!(!r.head().is_empty(), "the commit was made");
    assert_eq!(r.marker(), "ran\ntrue\nnested=0\n");

    // git in the hook resolves through the exec-path shim to the wrapper, which checks it
    // again: a hook's own bypass attempt is refused.
    write_exec(
        &r.repo.join(".git/hooks/post-commit"),
        &format!(
            "#!/bin/sh\ngit commit --allow-empty --no-verify -m sneaky >> '{m}' 2>&1\necho \"post=$?\" >> '{m}'\n",
            m = r.marker.display()
        ),
    );
    let out = r.run(&["git", "commit", "-q", "--allow-empty", "-m", "two"]);
    assert_status(&out, 0);
    let m = r.marker();
    assert!(
        m.contains("execguard-git: refused hook_bypass") && m.ends_with("post=2\n"),
        "{m}"
    );
}

#[test]
fn git_starting_git_works_clone_pull_push_submodule() {
    let r = Repo::new("clone");
    assert_status(&r.run(&["git", "commit", "-q", "-m", "one"]), 0);
    // Local transport: git starts `git-upload-pack`/`git-receive-pack` through `sh -c`; the
    // exec-path shim links these dashed builtins to the wrapper (the real ones are the
    // protected git under another name).
    let clone = r.root.join("clone");
    let out = r.run(&[
        "git",
        "clone",
        "-q",
        r.repo.to_str().unwrap(),
        clone.to_str().unwrap(),
    ]);
    assert_status(&out, 0);
    let in_clone = |args: &[&str]| {
        Command::new(EXECGUARD)
            .arg("run")
            .arg(SHARED_TEMP)
            .arg("--")
            .args(args)
            .current_dir(&clone)
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap()
    };
    assert_status(&in_clone(&["git", "pull", "-q"]), 0);
    assert_status(
        &in_clone(&["git", "push", "-q", "origin", "HEAD:refs/heads/other"]),
        0,
    );
    // git-submodule is a script that sources `$(git --exec-path)/git-sh-setup`.
    let out = in_clone(&["sh", "-c", "git submodule status && git --exec-path"]);
    assert_status(&out, 0);
    assert!(
        text(&out.stdout).trim_end().ends_with("/git-core"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn git_hook_bypass_is_refused_with_status_2() {
    let r = Repo::new("bypass");
    for args in [
        &["git", "commit", "--no-verif", "-m", "x"][..],
        &["git", "commit", "-nm", "x"],
        &["git", "-c", "core.hooksPath=/dev/null", "commit", "-m", "x"],
    ] {
        let out = r.run(args);
        assert_status(&out, 2);
        // The refusal's own line: a session may print notices of its own first (an exec
        // dir the operator's record does not name, when `$HOME` has one).
        let err = text(&out.stderr);
        assert!(
            err.lines()
                .any(|l| l.starts_with("execguard-git: refused hook_bypass: ")),
            "{args:?}: {err}"
        );
        assert_eq!(r.head(), "", "{args:?} must not commit");
        assert_eq!(r.marker(), "", "{args:?} must not run the hook");
    }
}

#[test]
fn the_shim_fronts_git_and_node_and_sets_the_exec_path() {
    let r = Repo::new("shim");
    let out = r.run(&[
        "sh",
        "-c",
        "readlink \"$(command -v git)\"; readlink \"$(command -v node)\"; echo \"$GIT_EXEC_PATH\"; readlink \"$GIT_EXEC_PATH/git\"",
    ]);
    assert_status(&out, 0);
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let git_wrapper = beside_execguard("execguard-git").canonicalize().unwrap();
    let node_wrapper = beside_execguard("execguard-node").canonicalize().unwrap();
    assert_eq!(lines[0], git_wrapper.to_str().unwrap(), "{stdout}");
    assert_eq!(lines[1], node_wrapper.to_str().unwrap(), "{stdout}");
    assert!(lines[2].ends_with("/git-core"), "{stdout}");
    assert_eq!(lines[3], git_wrapper.to_str().unwrap(), "{stdout}");
}

#[test]
fn direct_exec_of_the_real_git_is_refused_by_the_guard() {
    let r = Repo::new("direct");
    // From a shell inside the session: the guard refuses, the shell reports it.
    // Debian's git and its separate exec-path copy.
    for real in [DEBIAN_GIT, "/usr/lib/git-core/git"] {
        assert!(
            Path::new(real).is_file(),
            "{real} is missing (Debian's git)"
        );
        let out = r.run(&["sh", "-c", &format!("{real} commit --no-verify -m x")]);
        assert_ne!(out.status.code(), Some(0));
        let err = text(&out.stderr);
        assert!(err.contains("protected_runtime_direct"), "{real}: {err}");
        assert_eq!(r.head(), "");
    }
    // The git PATH finds outside the session (what the wrapper execs) is protected too.
    let path_git = r.run(&[
        "sh",
        "-c",
        "readlink -f \"$(PATH=${PATH#*:} command -v git)\"",
    ]);
    assert_status(&path_git, 0);
    let path_git = text(&path_git.stdout).trim().to_string();
    let out = r.run(&["sh", "-c", &format!("{path_git} status")]);
    assert!(
        text(&out.stderr).contains("protected_runtime_direct"),
        "{path_git}: {}",
        text(&out.stderr)
    );
    // Every copy in git's exec-path, hard link or not (the whole directory is protected).
    for entry in std::fs::read_dir("/usr/lib/git-core").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !["git-commit", "git-upload-pack", "git-receive-pack"].contains(&name.as_str()) {
            continue;
        }
        let out = r.run(&["sh", "-c", &format!("/usr/lib/git-core/{name} --version")]);
        assert!(
            text(&out.stderr).contains("protected_runtime_direct"),
            "{name}: {}",
            text(&out.stderr)
        );
    }
    // As the session's first command, from execguard itself.
    let out = r.run(&[DEBIAN_GIT, "status"]);
    assert_status(&out, 126);
    assert!(text(&out.stderr).contains("denied protected_runtime_direct"));
}

#[test]
fn node_scripts_and_inline_code_run_and_code_loading_is_refused() {
    let r = Repo::new("node");
    fs::write(
        r.repo.join("app.js"),
        "console.log('args:' + process.argv.slice(2).join(','))",
    )
    .unwrap();
    let out = r.run(&["node", "app.js", "-e", "x"]);
    assert_status(&out, 0);
    assert_eq!(text(&out.stdout), "args:-e,x\n");

    // Inline code is code in plain sight (npm's `postinstall: node -e ...`): it runs.
    let out = r.run(&["node", "-e", "console.log(40 + 2)"]);
    assert_status(&out, 0);
    assert_eq!(text(&out.stdout), "42\n");
    let out = r.run(&["sh", "-c", "echo 'console.log(\"stdin\")' | node"]);
    assert_status(&out, 0);
    assert_eq!(text(&out.stdout), "stdin\n");
    let out = r.run(&["node", "--require", "./app.js", "app.js"]);
    assert_status(&out, 2);
    assert!(text(&out.stderr).contains("refused node_code_loading"));

    // node_modules/.bin style: `#!/usr/bin/env node` resolves `node` on PATH, i.e. the wrapper.
    fs::create_dir_all(r.repo.join("node_modules/.bin")).unwrap();
    write_exec(
        &r.repo.join("node_modules/.bin/tool"),
        "#!/usr/bin/env node\nconsole.log('tool ok ' + process.argv.slice(2).join(','))\n",
    );
    let out = r.run(&["./node_modules/.bin/tool", "x"]);
    assert_status(&out, 0);
    assert_eq!(text(&out.stdout), "tool ok x\n");
    let out = r.run(&["sh", "-c", "PATH=\"$PWD/node_modules/.bin:$PATH\" tool y"]);
    assert_status(&out, 0);
    assert_eq!(text(&out.stdout), "tool ok y\n");

    // The real node, directly.
    let out = r.run(&["sh", "-c", &format!("{REAL_NODE} app.js")]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("protected_runtime_direct"));
}

#[test]
fn check_explains_git_and_node_decisions() {
    let r = Repo::new("check");
    let out = r.check(&["--", "git", "commit", "--no-verif"]);
    assert_status(&out, 1);
    assert!(
        text(&out.stdout).starts_with("deny hook_bypass: "),
        "{}",
        text(&out.stdout)
    );

    let out = r.check(&["--json", "--", "git", "commit", "--no-verif"]);
    assert_status(&out, 1);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tool"], "git");
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["reason"], "hook_bypass");
    assert_eq!(v["exit_status"], 2);

    let out = r.check(&["--json", "--", "git", "commit", "-m", "x"]);
    assert_status(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["argv"], serde_json::json!(["commit", "-m", "x"]));
    assert_eq!(r.head(), "", "check runs nothing");
    assert_eq!(r.marker(), "");

    let out = r.check(&["--", "node", "-r", "./x.js", "app.js"]);
    assert_status(&out, 1);
    assert!(text(&out.stdout).starts_with("deny node_code_loading: "));
    let out = r.check(&["--", "node", "app.js"]);
    assert_status(&out, 0);

    // A path to the real git is not the wrapper: the guard's decision.
    let out = r.check(&["--", DEBIAN_GIT, "status"]);
    assert_status(&out, 1);
    assert!(text(&out.stdout).starts_with("deny protected_runtime_direct: "));

    // Inside a session the guard refuses execguard starting the real git: check reads the
    // repository config through the wrapper and gives the same answers.
    let exe = Path::new(EXECGUARD).canonicalize().unwrap();
    let exe = exe.to_str().unwrap();
    let out = r.run(&[exe, "check", "--", "git", "commit", "--no-verif"]);
    assert_status(&out, 1);
    assert!(text(&out.stdout).starts_with("deny hook_bypass: "));
    let out = r.run(&[exe, "check", "--", "git", "commit", "-m", "x"]);
    assert_status(&out, 0);
}

#[test]
fn check_provider_prints_the_final_argv_or_the_refusal() {
    let r = Repo::new("provider");
    let out = r.check(&[
        "--provider",
        "claude",
        "--",
        "--dangerously-skip-permissions",
    ]);
    assert_status(&out, 1);
    assert!(
        text(&out.stdout).starts_with("deny dangerous_flag: "),
        "{}",
        text(&out.stdout)
    );
    let out = r.check(&["--provider", "gemini", "--", "--yolo=true"]);
    assert_status(&out, 1);
    assert!(
        text(&out.stdout).starts_with("deny "),
        "{}",
        text(&out.stdout)
    );

    let out = r.check(&[
        "--json",
        "--provider",
        "claude",
        "--autonomy",
        "yolo",
        "--",
        "--model",
        "sonnet",
    ]);
    assert_status(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["autonomy"], "yolo");
    let argv: Vec<&str> = v["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], "claude");
    assert!(argv.ends_with(&["--model", "sonnet"]), "{argv:?}");
    assert!(argv.contains(&"--permission-mode"), "{argv:?}");

    let out = r.check(&["--provider", "nosuch", "--", "x"]);
    assert_status(&out, 2);
}

#[test]
fn the_default_policy_lists_every_git_and_node_with_its_wrapper() {
    let r = Repo::new("policy");
    let out = Command::new(EXECGUARD)
        .args(["policy", "default"])
        .current_dir(&r.repo)
        .output()
        .unwrap();
    assert_status(&out, 0);
    let policy: toml::Value = toml::from_str(&text(&out.stdout)).unwrap();
    let rts = policy["runtime"].as_array().unwrap();
    let entry = |path: &str| {
        rts.iter()
            .find(|r| r["path"].as_str() == Some(path))
            .unwrap_or_else(|| panic!("no [[runtime]] for {path}: {rts:?}"))
    };
    let git_wrapper = beside_execguard("execguard-git").canonicalize().unwrap();
    let e = entry(DEBIAN_GIT);
    assert_eq!(e["name"].as_str(), Some("git"));
    assert_eq!(e["wrapper"].as_str(), git_wrapper.to_str());
    entry("/usr/lib/git-core/git");
    let node = Path::new(REAL_NODE).canonicalize().unwrap();
    assert_eq!(entry(node.to_str().unwrap())["name"].as_str(), Some("node"));
}

// ---- Issue 15: ordinary work unbroken, escapes closed, for root and a non-root user ----------

use execguard_testkit::{identities, Identity};

/// A scenario directory owned by `who`: `home/` (its `$HOME`), `repo/` (a repository with one
/// commit and a pre-commit hook that appends to `hook.marker`), and room for more.
struct Session {
    who: Identity,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
}

impl Session {
    fn new(who: Identity, name: &str) -> Session {
        require_tools();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root = execguard_testkit::dir_for(
            &who,
            &std::env::temp_dir(),
            &format!("eg-cliw15-{}-{name}-{n}-{}", std::process::id(), who.uid()),
        );
        let root = root.canonicalize().unwrap();
        let s = Session {
            who,
            home: root.join("home"),
            repo: root.join("repo"),
            root,
        };
        s.mkdir(&s.home);
        s.mkdir(&s.runtime());
        fs::set_permissions(s.runtime(), fs::Permissions::from_mode(0o700)).unwrap();
        s.init_repo(&s.repo);
        s
    }

    /// The scenario's own `XDG_RUNTIME_DIR` (no test shares `/tmp/execguard-UID`).
    fn runtime(&self) -> PathBuf {
        self.root.join("runtime")
    }

    fn mkdir(&self, d: &Path) {
        fs::create_dir_all(d).unwrap();
        self.who.own(d);
    }

    /// Unguarded set-up git, as the scenario's user, with no global config.
    fn setup(&self, dir: &Path, args: &[&str]) -> Output {
        let mut c = Command::new(DEBIAN_GIT);
        c.args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid");
        let out = self.who.apply(&mut c).output().unwrap();
        assert!(
            out.status.success(),
            "set-up git {args:?} as {}: {}",
            self.who.label(),
            text(&out.stderr)
        );
        out
    }

    fn init_repo(&self, repo: &Path) {
        self.mkdir(repo);
        self.setup(repo, &["init", "-q", "-b", "main"]);
        self.setup(repo, &["config", "user.name", "T"]);
        self.setup(repo, &["config", "user.email", "t@example.invalid"]);
        self.write(&repo.join("a.txt"), "a\n");
        self.setup(repo, &["add", "a.txt"]);
        self.setup(repo, &["commit", "-q", "-m", "base"]);
        self.write_exec(
            &repo.join(".git/hooks/pre-commit"),
            &format!(
                "#!/bin/sh\necho ran >> '{}'\n",
                self.root.join("hook.marker").display()
            ),
        );
    }

    fn write(&self, p: &Path, t: &str) {
        fs::write(p, t).unwrap();
        self.who.own(p);
    }

    fn write_exec(&self, p: &Path, t: &str) {
        write_exec(p, t);
        self.who.own(p);
    }

    /// `execguard run -- ARGS` in `dir`, as the scenario's user, with `$HOME` = `home/`.
    fn run_in(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(EXECGUARD);
        c.arg("run")
            .arg(SHARED_TEMP)
            .arg("--")
            .args(args)
            .current_dir(dir);
        self.who.apply(&mut c);
        c.env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", self.runtime())
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_CONFIG_NOSYSTEM");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_in(&self.repo, args, &[])
    }

    #[track_caller]
    fn ok(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let out = self.run_in(dir, args, env);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} as {}\nstdout: {}\nstderr: {}",
            self.who.label(),
            text(&out.stdout),
            text(&out.stderr)
        );
        out
    }

    /// Refused by the wrapper with `code`, one stderr line that says how to proceed.
    #[track_caller]
    fn refused(&self, dir: &Path, args: &[&str], env: &[(&str, &str)], code: &str) -> Output {
        let out = self.run_in(dir, args, env);
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("execguard-git: refused {code}: "))
                && err.contains("; to proceed: "),
            "{args:?} as {}: want refused {code}; status {:?}\nstderr: {err}",
            self.who.label(),
            out.status.code()
        );
        out
    }

    fn hook_runs(&self) -> usize {
        fs::read_to_string(self.root.join("hook.marker"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// What a program did on a pseudo-terminal.
struct OnTerminal {
    status: Option<i32>,
    /// Everything it wrote to the terminal (and the answers, echoed).
    transcript: String,
}

/// Runs `cmd` as the session leader of a new pseudo-terminal (stdin, stdout and stderr, and
/// its controlling terminal, so `/dev/tty` is the same; 24x80), as pagers and prompts need.
/// Each `(prompt, answer)` is typed once the prompt has appeared, in order: an event, never a
/// delay. Ended with SIGKILL after 60 s (a hang is the failure).
fn on_terminal(who: &Identity, cmd: &mut Command, answers: &[(&str, &str)]) -> OnTerminal {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: the out-pointers are live ints; the name pointer may be null; `size` lives
    // across the call.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two new descriptors this function now owns.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // The terminal is the scenario user's, as a login's is.
    std::os::unix::fs::fchown(&slave, Some(who.uid()), Some(who.gid())).unwrap();
    let what = format!("{cmd:?}");
    cmd.stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave);
    // SAFETY: setsid and ioctl(TIOCSCTTY) are async-signal-safe and touch only the child.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // The child's copies are the only ones left: its end closes the terminal (EIO here).
    drop(std::mem::replace(cmd, Command::new("/bin/true")));
    let mut master = std::fs::File::from(master);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (mut transcript, mut next, mut typed_at) = (Vec::new(), 0, 0);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} hung on the terminal\n{}",
                String::from_utf8_lossy(&transcript)
            );
        }
        let mut pfd = libc::pollfd {
            fd: master.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one live pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(1000) as i32) };
        if n <= 0 {
            continue;
        }
        let mut buf = [0u8; 4096];
        match master.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => transcript.extend_from_slice(&buf[..k]),
            Err(e) if e.raw_os_error() == Some(libc::EIO) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("reading the terminal of {what}: {e}"),
        }
        if let Some((prompt, answer)) = answers.get(next) {
            let seen = String::from_utf8_lossy(&transcript[typed_at..]).into_owned();
            if seen.contains(prompt) {
                master.write_all(answer.as_bytes()).unwrap();
                typed_at = transcript.len();
                next += 1;
            }
        }
    }
    let status = child.wait().unwrap().code();
    OnTerminal {
        status,
        transcript: String::from_utf8_lossy(&transcript).into_owned(),
    }
}

impl Session {
    /// `execguard run -- ARGS` in the repository on a terminal, as the scenario's user.
    fn guarded_on_terminal(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        answers: &[(&str, &str)],
    ) -> OnTerminal {
        let mut c = Command::new(EXECGUARD);
        c.arg("run").arg("--").args(args).current_dir(&self.repo);
        self.who.apply(&mut c);
        c.env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", self.runtime())
            .env("TERM", "xterm")
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_CONFIG_NOSYSTEM")
            .env_remove("LESS");
        for (k, v) in env {
            c.env(k, v);
        }
        on_terminal(&self.who, &mut c, answers)
    }

    /// The same, without execguard: the real git, as the operator's ordinary command would
    /// run it (no system or global config). The positive control of each neutralised variable.
    fn unguarded_on_terminal(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        answers: &[(&str, &str)],
    ) -> OnTerminal {
        let mut c = Command::new(args[0]);
        c.args(&args[1..]).current_dir(&self.repo);
        self.who.apply(&mut c);
        c.env("HOME", &self.home)
            .env("TERM", "xterm")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("LESS")
            .env_remove("EXECGUARD_POLICY")
            .env_remove("LD_PRELOAD");
        for (k, v) in env {
            c.env(k, v);
        }
        on_terminal(&self.who, &mut c, answers)
    }
}

/// The pager, the editor and the askpass a session's environment or `-c` names are
/// neutralised, not refused: git still pages (through `cat`), asks for credentials on the
/// terminal, and opens no editor. Each part has its positive control: the same command with
/// the same variables, run on a terminal by the real git outside the session, does run the
/// payload (a marker file, at an absolute path, in the scenario directory).
#[test]
fn editor_pager_and_askpass_in_the_environment_are_neutralised_not_refused() {
    for who in identities() {
        let s = Session::new(who, "neutral");
        let label = who.label();
        let marker = |part: &str| s.root.join(format!("{part}.ran"));
        let touch = |part: &str| format!("touch '{}'", marker(part).display());
        let git_log = ["git", "-p", "log", "-1"];

        // The pager, from the environment and from `-c core.pager`: git pages only on a
        // terminal, so each runs on one.
        let pager = touch("pager");
        let pager_env = [("GIT_PAGER", pager.as_str()), ("PAGER", pager.as_str())];
        let core_pager = format!("core.pager={}", touch("core-pager"));
        let with_core_pager = ["git", "-c", &core_pager, "-p", "log", "-1"];
        // LESSOPEN, which `less` runs on its input (`|-`: standard input too).
        let lessopen = format!("|-{} %s", touch("lessopen"));
        let less_env = [("PAGER", "less"), ("LESSOPEN", lessopen.as_str())];
        type Env<'a> = &'a [(&'a str, &'a str)];
        let cases: [(&str, &[&str], Env); 3] = [
            ("pager", &git_log, &pager_env),
            ("core-pager", &with_core_pager, &[]),
            ("lessopen", &git_log, &less_env),
        ];
        for (part, args, env) in cases {
            let unguarded_args: Vec<&str> = std::iter::once(DEBIAN_GIT)
                .chain(args[1..].iter().copied())
                .collect();
            let control = s.unguarded_on_terminal(&unguarded_args, env, &[]);
            assert!(
                marker(part).exists(),
                "{label} {part}: the control never ran the pager's payload: {}",
                control.transcript
            );
            fs::remove_file(marker(part)).unwrap();
            let t = s.guarded_on_terminal(args, env, &[]);
            assert_eq!(t.status, Some(0), "{label} {part}: {}", t.transcript);
            assert!(
                t.transcript.contains("base"),
                "{label} {part}: the log was not shown: {}",
                t.transcript
            );
            assert!(
                !marker(part).exists(),
                "{label} {part}: the session's pager ran: {}",
                t.transcript
            );
        }

        // The askpass: `git credential fill` asks for a user name and a password. The
        // session's askpass is never run; git asks on the terminal, and what is typed there
        // is what it returns.
        let askpass = s.root.join("askpass");
        s.write_exec(
            &askpass,
            &format!("#!/bin/sh\n{}\necho from-askpass\n", touch("askpass")),
        );
        let askpass = askpass.to_str().unwrap();
        let ask_env = [("GIT_ASKPASS", askpass), ("SSH_ASKPASS", askpass)];
        let fill = |git: &str| {
            format!("printf 'protocol=https\\nhost=example.invalid\\n\\n' | {git} credential fill")
        };
        let control = s.unguarded_on_terminal(&["sh", "-c", &fill(DEBIAN_GIT)], &ask_env, &[]);
        assert!(
            marker("askpass").exists() && control.transcript.contains("password=from-askpass"),
            "{label}: the control never ran the askpass: {}",
            control.transcript
        );
        fs::remove_file(marker("askpass")).unwrap();
        let t = s.guarded_on_terminal(
            &["sh", "-c", &fill("git")],
            &ask_env,
            &[
                ("Username for 'https://example.invalid': ", "typed-user\n"),
                (
                    "Password for 'https://typed-user@example.invalid': ",
                    "typed-password\n",
                ),
            ],
        );
        assert_eq!(t.status, Some(0), "{label} askpass: {}", t.transcript);
        assert!(
            t.transcript.contains("username=typed-user")
                && t.transcript.contains("password=typed-password"),
            "{label}: git did not ask on the terminal: {}",
            t.transcript
        );
        assert!(
            !marker("askpass").exists(),
            "{label}: the session's askpass ran: {}",
            t.transcript
        );

        // The editor: `git commit` without -m. The control's editor runs (and leaves the
        // message empty: git aborts, nothing is committed); the session's is `:`, so git
        // aborts on the empty message without running it.
        let editor = touch("editor");
        let editor_env: Vec<(&str, &str)> = ["EDITOR", "VISUAL", "GIT_EDITOR"]
            .iter()
            .map(|n| (*n, editor.as_str()))
            .collect();
        s.write(&s.repo.join("a.txt"), "changed\n");
        let control = s.unguarded_on_terminal(&[DEBIAN_GIT, "commit", "-a"], &editor_env, &[]);
        assert!(
            marker("editor").exists(),
            "{label}: the control never ran the editor: {}",
            control.transcript
        );
        fs::remove_file(marker("editor")).unwrap();
        let out = s.run_in(&s.repo, &["git", "commit", "-a"], &editor_env);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("empty commit message"),
            "{}",
            text(&out.stderr)
        );
        assert!(
            !marker("editor").exists(),
            "{label}: the session's editor ran"
        );
        // One whose neutral value would change the result is refused, saying what to do.
        s.refused(
            &s.repo,
            &["git", "rebase", "-i", "HEAD"],
            &[("GIT_SEQUENCE_EDITOR", "sed -i 1d")],
            "env_override",
        );
    }
}

#[test]
fn the_users_gitconfig_is_honoured_and_checked() {
    for who in identities() {
        let s = Session::new(who, "gitconfig");
        s.write(
            &s.home.join(".gitconfig"),
            "[user]\n\tname = Global Name\n\temail = g@example.invalid\n[init]\n\tdefaultBranch = trunk\n[core]\n\teditor = vim\n\tpager = less -R\n[credential]\n\thelper = store\n",
        );
        let fresh = s.root.join("fresh");
        s.mkdir(&fresh);
        s.ok(&fresh, &["git", "init", "-q"], &[]);
        let out = s.ok(&fresh, &["git", "symbolic-ref", "--short", "HEAD"], &[]);
        assert_eq!(text(&out.stdout).trim(), "trunk", "{}", who.label());
        s.write(&fresh.join("f"), "f\n");
        s.ok(&fresh, &["git", "add", "f"], &[]);
        s.ok(&fresh, &["git", "commit", "-q", "-m", "first"], &[]);
        let out = s.ok(&fresh, &["git", "log", "-1", "--format=%an <%ae>"], &[]);
        assert_eq!(text(&out.stdout).trim(), "Global Name <g@example.invalid>");
        // git's own advice works: it writes ~/.gitconfig.
        s.ok(
            &fresh,
            &["git", "config", "--global", "user.name", "Renamed"],
            &[],
        );
        // It lands in the workspace's home layer (docs/session.md): the next session has it,
        // the operator's file gets it when handed back.
        let out = s.ok(&fresh, &["git", "config", "--global", "user.name"], &[]);
        assert_eq!(text(&out.stdout).trim(), "Renamed", "{}", who.label());
        assert!(!fs::read_to_string(s.home.join(".gitconfig"))
            .unwrap()
            .contains("Renamed"));
        let mut accept = Command::new(EXECGUARD);
        s.who.apply(&mut accept);
        let out = accept
            .args(["home", "accept", "--workspace"])
            .arg(&fresh)
            .arg(".gitconfig")
            .env("HOME", &s.home)
            .output()
            .unwrap();
        assert_status(&out, 0);
        assert!(fs::read_to_string(s.home.join(".gitconfig"))
            .unwrap()
            .contains("Renamed"));
        // ... and a command-running key planted there is refused like any other source.
        let mut cfg = fs::read_to_string(s.home.join(".gitconfig")).unwrap();
        cfg.push_str("[include]\n\tpath = ~/more.inc\n");
        s.write(&s.home.join(".gitconfig"), &cfg);
        s.write(
            &s.home.join("more.inc"),
            "[core]\n\tfsmonitor = touch pwned\n",
        );
        let out = s.refused(&fresh, &["git", "status"], &[], "config_key");
        assert!(
            text(&out.stderr).contains("more.inc: core.fsmonitor"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn git_started_by_git_works_worktree_submodule_stash_gc_mv_merge() {
    for who in identities() {
        let s = Session::new(who, "gitgit");
        let r = &s.repo;
        // git worktree add: git's own `GIT_DIR=... GIT_WORK_TREE=... git reset --hard` child.
        let wt = s.root.join("wt");
        s.ok(
            r,
            &[
                "git",
                "worktree",
                "add",
                "-q",
                "-b",
                "feature",
                wt.to_str().unwrap(),
            ],
            &[],
        );
        assert!(wt.join("a.txt").is_file(), "{}", who.label());
        s.write(&wt.join("w.txt"), "w\n");
        s.ok(&wt, &["git", "add", "w.txt"], &[]);
        s.ok(&wt, &["git", "commit", "-q", "-m", "in the worktree"], &[]);
        // merge, mv, stash, gc (git starts git for several of these).
        s.ok(r, &["git", "merge", "-q", "feature"], &[]);
        s.ok(r, &["git", "mv", "w.txt", "moved.txt"], &[]);
        s.write(&r.join("a.txt"), "dirty\n");
        s.ok(r, &["git", "stash", "-q"], &[]);
        s.ok(r, &["git", "stash", "pop", "-q"], &[]);
        s.ok(r, &["git", "gc", "-q"], &[]);
        s.ok(
            r,
            &[
                "git",
                "-c",
                "maintenance.auto=true",
                "maintenance",
                "run",
                "--auto",
            ],
            &[],
        );
        // A local submodule (git passes -c protocol.file.allow=always to its children).
        let lib = s.root.join("lib");
        s.init_repo(&lib);
        s.ok(
            r,
            &[
                "git",
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                lib.to_str().unwrap(),
                "lib",
            ],
            &[],
        );
        s.ok(
            r,
            &[
                "git",
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "update",
                "--init",
                "-q",
            ],
            &[],
        );
        s.ok(r, &["git", "submodule", "status"], &[]);
        // The image's exec-path (git's own, root-owned) is accepted as GIT_EXEC_PATH (git
        // exports its exec-path to every child); any other directory is not.
        s.ok(
            r,
            &["sh", "-c", "GIT_EXEC_PATH=/usr/lib/git-core git status"],
            &[],
        );
        let other = format!("GIT_EXEC_PATH='{}' git status", s.root.display());
        s.refused(r, &["sh", "-c", &other], &[], "exec_path");
    }
}

/// Sets up a rebase stopped on a conflict in `s.repo`: `topic` rebased onto `main`.
fn conflicted_rebase(s: &Session) {
    let r = &s.repo;
    s.setup(r, &["checkout", "-q", "-b", "topic"]);
    s.write(&r.join("a.txt"), "topic\n");
    s.setup(r, &["commit", "-q", "-am", "topic"]);
    s.write(&r.join("t.txt"), "t\n");
    s.setup(r, &["add", "t.txt"]);
    s.setup(r, &["commit", "-q", "-m", "topic two"]);
    s.setup(r, &["checkout", "-q", "main"]);
    s.write(&r.join("a.txt"), "main\n");
    s.setup(r, &["commit", "-q", "-am", "main"]);
    s.setup(r, &["checkout", "-q", "topic"]);
    let out = s.run(&["git", "rebase", "main"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the rebase must stop on the conflict: {}",
        text(&out.stderr)
    );
    s.write(&r.join("a.txt"), "resolved\n");
    s.ok(r, &["git", "add", "a.txt"], &[]);
}

#[test]
fn rebase_continue_after_a_conflict_works_and_planted_exec_lines_are_refused() {
    for who in identities() {
        let s = Session::new(who, "rebase");
        conflicted_rebase(&s);
        // git's sequencer commits with its own `commit -n`: not a bypass.
        s.ok(&s.repo, &["git", "rebase", "--continue"], &[]);
        let out = s.ok(&s.repo, &["git", "log", "--format=%s", "-3"], &[]);
        assert_eq!(
            text(&out.stdout),
            "topic two\ntopic\nmain\n",
            "{}",
            who.label()
        );

        let s = Session::new(who, "todoexec");
        conflicted_rebase(&s);
        let marker = s.root.join("pwned");
        let todo = s.repo.join(".git/rebase-merge/git-rebase-todo");
        let mut t = fs::read_to_string(&todo).unwrap();
        t.insert_str(0, &format!("exec touch '{}'\n", marker.display()));
        s.write(&todo, &t);
        for step in ["--continue", "--skip", "--edit-todo"] {
            s.refused(&s.repo, &["git", "rebase", step], &[], "todo_exec");
        }
        assert!(
            !marker.exists(),
            "{}: the planted exec line ran",
            who.label()
        );
    }
}

#[test]
fn npm_postinstall_with_node_e_runs_and_code_loading_stays_refused() {
    for who in identities() {
        let s = Session::new(who, "npm");
        let pkg = s.root.join("pkg");
        s.mkdir(&pkg);
        // core-js's postinstall is `node -e "..."`: the same shape, without the network.
        s.write(
            &pkg.join("package.json"),
            r#"{"name":"p","version":"1.0.0","scripts":{"postinstall":"node -e \"require('fs').writeFileSync('postinstall.ran', 'yes')\""}}"#,
        );
        let out = s.run_in(
            &pkg,
            &["npm", "install", "--no-audit", "--no-fund", "--offline"],
            &[("npm_config_cache", s.home.join(".npm").to_str().unwrap())],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}{}",
            who.label(),
            text(&out.stdout),
            text(&out.stderr)
        );
        assert_eq!(
            fs::read_to_string(pkg.join("postinstall.ran")).unwrap(),
            "yes"
        );
        s.write(
            &pkg.join("x.js"),
            "require('fs').writeFileSync('loaded', 'x')",
        );
        for args in [
            &["node", "--require", "./x.js", "-e", "1"][..],
            &["node", "--import", "./x.js", "-e", "1"],
            &["node", "--loader", "./x.js", "-e", "1"],
        ] {
            let out = s.run_in(&pkg, args, &[]);
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let err = text(&out.stderr);
            assert!(
                err.lines()
                    .any(|l| l.starts_with("execguard-node: refused node_code_loading: ")),
                "{args:?}: {err}"
            );
        }
        let out = s.run_in(
            &pkg,
            &[
                "node",
                "-e",
                "console.log(process.env.NODE_OPTIONS || 'none')",
            ],
            &[("NODE_OPTIONS", "--require ./x.js")],
        );
        assert_eq!(text(&out.stdout), "none\n");
        assert!(!pkg.join("loaded").exists());
    }
}

#[test]
fn transport_helpers_remote_ext_and_command_keys_are_refused() {
    for who in identities() {
        let s = Session::new(who, "escapes");
        let r = &s.repo;
        let marker = s.root.join("pwned");
        let touch = format!("touch '{}'", marker.display());
        // A `git-remote-evil` on PATH would be run by `git fetch evil::x`.
        let bin = s.root.join("bin");
        s.mkdir(&bin);
        s.write_exec(
            &bin.join("git-remote-evil"),
            &format!("#!/bin/sh\n{touch}\n"),
        );
        let path = format!("{}:/usr/bin:/bin", bin.display());
        s.refused(
            r,
            &["sh", "-c", &format!("PATH={path}:$PATH git fetch evil::x")],
            &[],
            "transport_helper",
        );
        s.refused(
            r,
            &[
                "sh",
                "-c",
                &format!("PATH={path}:$PATH git fetch foo://h/x"),
            ],
            &[],
            "transport_helper",
        );
        s.refused(
            r,
            &["git", "-c", "remote.origin.url=evil::x", "fetch", "origin"],
            &[],
            "transport_helper",
        );
        s.refused(
            r,
            &["git", "-c", "url.ev.insteadOf=zz", "fetch", "zzil::x"],
            &[],
            "transport_helper",
        );
        s.refused(
            r,
            &["git", "remote-ext", ".", &format!("sh -c {touch}")],
            &[],
            "command_subcommand",
        );
        s.refused(
            r,
            &["git", "clone", "ext::sh -c touch% pwned", "x"],
            &[],
            "transport_helper",
        );
        s.refused(
            r,
            &["git", "-c", &format!("imap.tunnel={touch}"), "imap-send"],
            &[],
            "config_key",
        );
        s.refused(
            r,
            &["git", "-c", &format!("core.fsmonitor={touch}"), "status"],
            &[],
            "config_key",
        );
        s.refused(
            r,
            &["git", "-c", &format!("filter.x.clean={touch}"), "status"],
            &[],
            "config_key",
        );
        s.refused(
            r,
            &["git", "-c", &format!("diff.x.textconv={touch}"), "diff"],
            &[],
            "config_key",
        );
        s.refused(
            r,
            &["git", "fetch", "origin"],
            &[("GIT_SSH_COMMAND", &touch)],
            "env_override",
        );
        let out = s.refused(
            r,
            &["git", "bisect", "run", "true"],
            &[],
            "command_subcommand",
        );
        assert!(
            text(&out.stderr).contains("git bisect good"),
            "{}",
            text(&out.stderr)
        );
        // git's own helpers stay usable: https is git-remote-https.
        let out = s.run(&["git", "ls-remote", "https://127.0.0.1:9/x"]);
        assert!(
            !text(&out.stderr).contains("execguard-git:"),
            "{}",
            text(&out.stderr)
        );
        assert!(!marker.exists(), "{}: a refused program ran", who.label());
    }
}

#[test]
fn a_local_push_reads_the_target_repositorys_config() {
    for who in identities() {
        let s = Session::new(who, "alternates");
        let marker = s.root.join("pwned");
        // A bare target with an alternate (so receive-pack advertises the alternate's refs,
        // through core.alternateRefsCommand) whose own config names a command.
        let target = s.root.join("target.git");
        s.mkdir(&target);
        s.setup(&target, &["init", "-q", "--bare"]);
        s.write(
            &target.join("objects/info/alternates"),
            &format!("{}\n", s.repo.join(".git/objects").display()),
        );
        s.setup(
            &target,
            &[
                "config",
                "core.alternateRefsCommand",
                &format!("touch '{}'; :", marker.display()),
            ],
        );
        let out = s.run(&["git", "push", target.to_str().unwrap(), "main"]);
        assert_ne!(out.status.code(), Some(0), "{}", who.label());
        let err = text(&out.stderr);
        assert!(
            err.contains("refused config_key") && err.contains("target.git/config"),
            "{err}"
        );
        assert!(
            !marker.exists(),
            "{}: the target's alternateRefsCommand ran",
            who.label()
        );
        // Without the key the same push works (git-receive-pack through the wrapper).
        s.setup(&target, &["config", "--unset", "core.alternateRefsCommand"]);
        s.ok(
            &s.repo,
            &["git", "push", "-q", target.to_str().unwrap(), "main"],
            &[],
        );
    }
}

#[test]
fn check_shows_the_same_refusal_and_how_to_proceed() {
    for who in identities() {
        let s = Session::new(who, "check15");
        let mut c = Command::new(EXECGUARD);
        c.args(["check", "--json", "--", "git", "fetch", "evil::x"])
            .current_dir(&s.repo);
        who.apply(&mut c);
        let out = c
            .env_remove("EXECGUARD_POLICY")
            .env("HOME", &s.home)
            .output()
            .unwrap();
        assert_status(&out, 1);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["reason"], "transport_helper");
        let wrapper = s.refused(
            &s.repo,
            &["git", "fetch", "evil::x"],
            &[],
            "transport_helper",
        );
        let line = text(&wrapper.stderr);
        assert!(line.contains(v["hint"].as_str().unwrap()), "{line} vs {v}");
        assert!(
            line.contains(v["detail"].as_str().unwrap()),
            "{line} vs {v}"
        );
        assert_eq!(s.hook_runs(), 0);
    }
}

#[test]
fn only_the_sequencer_may_commit_with_minus_n() {
    for who in identities() {
        let s = Session::new(who, "seqonly");
        // A program git starts from PATH (here: ssh, for an ssh:// URL) that turns into
        // `git commit -n`: its parent is the real git, but not the sequencer.
        let bin = s.root.join("bin");
        s.mkdir(&bin);
        let err = s.root.join("inner.err");
        s.write_exec(
            &bin.join("ssh"),
            &format!(
                "#!/bin/sh\nexec git commit -q --allow-empty -n -m sneaky 2>'{}'\n",
                err.display()
            ),
        );
        let before = s.ok(&s.repo, &["git", "rev-parse", "HEAD"], &[]).stdout;
        let script = format!("PATH={}:$PATH git fetch ssh://h/x", bin.display());
        let _ = s.run(&["sh", "-c", &script]);
        let after = s.ok(&s.repo, &["git", "rev-parse", "HEAD"], &[]).stdout;
        assert_eq!(
            before,
            after,
            "{}: the inner commit went through",
            who.label()
        );
        let inner = fs::read_to_string(&err).unwrap_or_default();
        assert!(
            inner.contains("refused hook_bypass"),
            "{}: {inner}",
            who.label()
        );
    }
}

/// `execguard run --audit <root>/audit.jsonl -- sh -c SCRIPT` in the repository, as the user.
fn run_script_audited(s: &Session, script: &str) -> Output {
    let audit = s.root.join("audit.jsonl");
    if !audit.exists() {
        s.write(&audit, "");
    }
    let mut c = Command::new(EXECGUARD);
    c.arg("run")
        .arg(SHARED_TEMP)
        .arg("--audit")
        .arg(&audit)
        .args(["--", "sh", "-c", script])
        .current_dir(&s.repo);
    s.who.apply(&mut c);
    c.env("HOME", &s.home)
        .env("XDG_RUNTIME_DIR", s.runtime())
        .env_remove("EXECGUARD_POLICY")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap()
}

#[test]
fn what_a_strict_session_plants_in_the_repository_is_quarantined_when_it_ends() {
    for who in identities() {
        let s = Session::new(who, "takeover");
        let marker = s.root.join("pwned");
        // The session plants a hook and a command-running key (written as files: the wrapper
        // would refuse `git config core.fsmonitor`), next to ordinary config work.
        let script = format!(
            "git remote add origin https://example.invalid/r && printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && printf '[core]\\n\\tfsmonitor = touch {m}\\n' >> .git/config && exit 7",
            m = marker.display()
        );
        let out = run_script_audited(&s, &script);
        assert_eq!(
            out.status.code(),
            Some(7),
            "the session's own status: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        let notice: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("execguard: quarantined "))
            .collect();
        assert_eq!(notice.len(), 1, "{}: {err}", who.label());
        assert!(
            !s.repo.join(".git/hooks/post-checkout").exists(),
            "{}",
            who.label()
        );
        let cfg = fs::read_to_string(s.repo.join(".git/config")).unwrap();
        assert!(!cfg.contains("fsmonitor"), "{cfg}");
        let audit = fs::read_to_string(s.root.join("audit.jsonl")).unwrap();
        assert_eq!(
            audit
                .lines()
                .filter(|l| l.contains("\"repository_quarantine\""))
                .count(),
            2,
            "{audit}"
        );
        // The operator's plain git afterwards runs nothing the session planted.
        let st = Command::new(DEBIAN_GIT)
            .args(["-c", "safe.directory=*", "checkout", "-q", "-b", "after"])
            .current_dir(&s.repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(st.success());
        let st = Command::new(DEBIAN_GIT)
            .args(["-c", "safe.directory=*", "status", "-s"])
            .current_dir(&s.repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(st.success());
        assert!(
            !marker.exists(),
            "{}: a planted program ran for the operator",
            who.label()
        );

        // Ordinary work only: nothing is quarantined, the config change stays. The local
        // remote is a repository that was there before the session (one the session made, or
        // none at all, is undone: the hand-back's local-URL rule).
        let st = Command::new(DEBIAN_GIT)
            .args(["init", "-q", "--bare"])
            .arg(s.root.join("other"))
            .status()
            .unwrap();
        assert!(st.success());
        let out = run_script_audited(
            &s,
            "git remote add other ../other && git config user.name Someone",
        );
        assert_status(&out, 0);
        assert!(
            !text(&out.stderr).contains("quarantined"),
            "{}",
            text(&out.stderr)
        );
        let cfg = fs::read_to_string(s.repo.join(".git/config")).unwrap();
        assert!(
            cfg.contains("[remote \"other\"]") && cfg.contains("Someone"),
            "{cfg}"
        );
    }
}

#[test]
fn a_session_ended_by_sigterm_is_quarantined_too() {
    for who in identities() {
        let s = Session::new(who, "sigterm");
        let planted = s.root.join("planted");
        let script = format!(
            "printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit && touch '{}' && exec sleep 30",
            planted.display()
        );
        let audit = s.root.join("audit.jsonl");
        s.write(&audit, "");
        let mut c = Command::new(EXECGUARD);
        c.arg("run")
            .arg(SHARED_TEMP)
            .arg("--audit")
            .arg(&audit)
            .args(["--", "sh", "-c", &script])
            .current_dir(&s.repo)
            .stderr(std::process::Stdio::piped());
        s.who.apply(&mut c);
        let child = c
            .env("HOME", &s.home)
            .env("XDG_RUNTIME_DIR", s.runtime())
            .env_remove("EXECGUARD_POLICY")
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if planted.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(
            planted.exists(),
            "{}: the session did not start",
            who.label()
        );
        // SAFETY: kill takes no pointers; the pid is our own child's.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(128 + libc::SIGTERM),
            "{}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("execguard: quarantined 1 "),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(
            fs::read_to_string(s.repo.join(".git/hooks/pre-commit")).unwrap(),
            format!(
                "#!/bin/sh\necho ran >> '{}'\n",
                s.root.join("hook.marker").display()
            )
        );
    }
}

/// The supervisor of a host session blocks the asynchronous signals and passes each one on to
/// the session (tini's loop), except those the terminal sends the whole process group, which
/// the session has already: SIGINT sent to the supervisor alone is dropped, SIGUSR1 reaches
/// the session, and the supervisor exits with the session's own status.
#[test]
fn the_supervisor_passes_signals_on_but_not_the_terminals() {
    for who in identities() {
        let s = Session::new(who, "signals");
        let ready = s.root.join("ready");
        let script = format!(
            "trap 'echo int' INT; trap 'echo usr1; exit 7' USR1; touch '{}'; sleep 30 & wait",
            ready.display()
        );
        let mut c = Command::new(EXECGUARD);
        c.args(["run", SHARED_TEMP, "--", "sh", "-c", &script])
            .current_dir(&s.repo)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        s.who.apply(&mut c);
        let child = c
            .env("HOME", &s.home)
            .env_remove("EXECGUARD_POLICY")
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if ready.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(ready.exists(), "{}: the session did not start", who.label());
        // Both pending at once are taken lowest first: SIGINT, dropped, then SIGUSR1.
        for sig in [libc::SIGINT, libc::SIGUSR1] {
            // SAFETY: kill takes no pointers; the pid is our own child's.
            unsafe { libc::kill(child.id() as i32, sig) };
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "usr1\n", "{}", who.label());
    }
}

/// The shim base lies in the write set: a session can put anything in place of the records
/// `execguard run` keeps there. The next run neither writes through a link into a file of the
/// user's elsewhere nor waits on a FIFO.
#[test]
fn records_a_session_replaced_in_the_shim_base_neither_hang_nor_write_elsewhere() {
    use std::os::unix::fs::PermissionsExt;
    for who in identities() {
        let s = Session::new(who, "records");
        let runtime = s.root.join("runtime");
        s.mkdir(&runtime);
        fs::set_permissions(&runtime, fs::Permissions::from_mode(0o700)).unwrap();
        let xdg = [("XDG_RUNTIME_DIR", runtime.to_str().unwrap())];
        s.ok(&s.repo, &["true"], &xdg);
        // A file of the user's that no record may reach.
        let victim = s.root.join("victim");
        s.write(&victim, "the user's own file\n");
        let base = runtime.join("execguard");
        for plant in [
            format!("ln -s '{}' same-bytes", victim.display()),
            "mkfifo same-bytes".to_string(),
        ] {
            let script = format!("cd '{}' && rm -f same-bytes && {plant}", base.display());
            s.ok(&s.repo, &["sh", "-c", &script], &xdg);
            let mut c = Command::new(EXECGUARD);
            c.args(["run", SHARED_TEMP, "--", "git", "--version"])
                .current_dir(&s.repo)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            s.who.apply(&mut c);
            c.env("HOME", &s.home)
                .env("XDG_RUNTIME_DIR", &runtime)
                .env_remove("EXECGUARD_POLICY")
                .env_remove("LD_PRELOAD");
            let mut child = c.spawn().unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while child.try_wait().unwrap().is_none() {
                if std::time::Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("execguard run waited on `{plant}` as {}", s.who.label());
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let out = child.wait_with_output().unwrap();
            assert_status(&out, 0);
            assert!(
                text(&out.stdout).starts_with("git version"),
                "{}",
                s.who.label()
            );
            assert_eq!(
                fs::read_to_string(&victim).unwrap(),
                "the user's own file\n",
                "a record was written through `{plant}`, as {}",
                s.who.label()
            );
        }
    }
}

/// The shims are kept beside the exec-dir record, which every session has read-only: a
/// session cannot take a helper out of git's exec-path (git would find a planted one on
/// `PATH`), point its `git` at `/proc/self/exe`, or move the shim, so the next session's git
/// is still the wrapper's. Before, the shims lay in the shared base every session writes.
#[test]
fn a_session_cannot_change_the_shim_the_next_session_uses() {
    for who in identities() {
        let s = Session::new(who, "kept-shim");
        let spoil = "S=$(dirname \"$GIT_EXEC_PATH\"); \
            rm -f \"$S/git-core/git-sh-setup\" || echo kept-rm; \
            ln -sfn /proc/self/exe \"$S/git-core/git\" 2>/dev/null || echo kept-ln; \
            mv \"$S\" \"$S.old\" 2>/dev/null || echo kept-mv; \
            echo \"$GIT_EXEC_PATH\"";
        let out = s.ok(&s.repo, &["sh", "-c", spoil], &[]);
        let stdout = text(&out.stdout);
        let kept = s
            .home
            .join(".config/execguard/shims")
            .canonicalize()
            .unwrap();
        assert!(
            stdout.contains("kept-rm\nkept-ln\nkept-mv\n")
                && stdout.trim_end().ends_with("/git-core")
                && Path::new(stdout.lines().last().unwrap()).starts_with(&kept),
            "{}: {stdout}{}",
            s.who.label(),
            text(&out.stderr)
        );
        let exec_path = PathBuf::from(stdout.lines().last().unwrap());
        assert!(exec_path.join("git-sh-setup").symlink_metadata().is_ok());
        assert_eq!(
            fs::read_link(exec_path.join("git")).unwrap(),
            beside_execguard("execguard-git").canonicalize().unwrap()
        );
        s.ok(&s.repo, &["git", "status", "--short"], &[]);
    }
}

/// A git dir named by a file (`GIT_DIR=.git` in a submodule, as git hands it to the git it
/// starts there for `git status`; `--git-dir=sub/.git`) is the directory that file names: its
/// config is read and checked like any other. Before, a plain `git status` in the
/// superproject ran a `core.fsmonitor` planted in `.git/modules/<name>/config`.
#[test]
fn a_git_dir_named_by_a_file_has_its_config_checked() {
    for who in identities() {
        let s = Session::new(who, "gitfile");
        let src = s.root.join("sub-src");
        s.init_repo(&src);
        s.setup(
            &s.repo,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                src.to_str().unwrap(),
                "sub",
            ],
        );
        let sub = s.repo.join("sub");
        assert!(sub.join(".git").is_file(), "{}", who.label());
        let marker = s.root.join("fsmonitor.ran");
        s.setup(
            &s.repo,
            &[
                "config",
                "-f",
                ".git/modules/sub/config",
                "core.fsmonitor",
                &format!("touch '{}'; false", marker.display()),
            ],
        );
        s.setup(&s.repo, &["commit", "-q", "-m", "sub"]);
        s.write(&sub.join("new.txt"), "new\n");
        for (dir, args) in [
            // git's own `git status --porcelain=2` in the submodule, with `GIT_DIR=.git`.
            (&s.repo, &["git", "status"][..]),
            (&sub, &["env", "GIT_DIR=.git", "git", "status"][..]),
            (
                &s.repo,
                &["git", "--git-dir=sub/.git", "--work-tree=sub", "status"][..],
            ),
        ] {
            let out = s.refused(dir, args, &[], "config_key");
            assert!(
                text(&out.stderr).contains("modules/sub/config: core.fsmonitor"),
                "{args:?} as {}: {}",
                who.label(),
                text(&out.stderr)
            );
        }
        assert!(
            !marker.exists(),
            "the planted fsmonitor ran as {}",
            who.label()
        );
    }
}

/// The supervisor quarantines outside the session (as root, for a root session): it never
/// follows a link the session left where the quarantine goes. A session that predicted the
/// stamp (`<seconds>-<supervisor pid>`, its `$PPID`) and linked it, or `execguard-quarantine`
/// itself, to `~/.config/execguard` had the supervisor rename its planted include over the
/// exec-dir record (a review found it; the next session then ran a program the session had
/// written). A git dir reached through a link now is not touched at all.
#[test]
fn the_quarantine_never_follows_a_link_the_session_left() {
    for who in identities() {
        let s = Session::new(who, "quarantine-links");
        s.ok(&s.repo, &["true"], &[]);
        let record_dir = s.home.join(".config/execguard");
        let record = record_dir.join("exec-dirs");
        let before = fs::read(&record).unwrap();
        let plant = format!(
            "printf '[core]\\n\\tpager = less\\n' > .git/exec-dirs && printf '[include]\\n\\tpath = exec-dirs\\n' >> .git/config && {links}",
            links = "LINKS"
        );
        for links in [
            format!(
                "mkdir .git/execguard-quarantine && now=$(date +%s) && for i in $(seq 0 30); do ln -sfn '{}' .git/execguard-quarantine/$((now+i))-$PPID; done",
                record_dir.display()
            ),
            format!(
                "rm -rf .git/execguard-quarantine && ln -sfn '{}' .git/execguard-quarantine",
                record_dir.display()
            ),
        ] {
            let plant = format!("{} && echo planted", plant.replace("LINKS", &links));
            let out = s.run(&["sh", "-c", &plant]);
            let err = text(&out.stderr);
            assert_eq!(
                (out.status.code(), text(&out.stdout).as_str()),
                (Some(0), "planted\n"),
                "the plant failed, as {}: {err}",
                who.label()
            );
            assert_eq!(
                fs::read(&record).unwrap(),
                before,
                "the exec-dir record was replaced, as {}: {err}",
                who.label()
            );
            let top = s.repo.join(".git/execguard-quarantine");
            assert!(
                fs::symlink_metadata(&top).unwrap().is_dir(),
                "{}",
                who.label()
            );
            let saved: Vec<PathBuf> = fs::read_dir(&top)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
                .filter(|p| p.join("exec-dirs").is_file())
                .collect();
            assert_eq!(saved.len(), 1, "{}: {err}", who.label());
            fs::remove_dir_all(&top).unwrap();
        }
    }
}

/// The quarantine touches the session's repositories only as git names them, and only those:
/// a repository a gitfile the session made points at, outside the workspace, is the
/// operator's, and is reported, never emptied (a review found its hooks and config moved);
/// an include the operator's config names with `..` is no link, so a key the session adds
/// there is quarantined (a review found it left in place, where it ran).
#[test]
fn the_quarantine_keeps_to_the_sessions_repositories_as_git_names_them() {
    for who in identities() {
        let s = Session::new(who, "quarantine-names");
        let other = s.root.join("other");
        s.init_repo(&other);
        s.setup(&s.repo, &["config", "include.path", "../shared.inc"]);
        s.write(&s.repo.join("shared.inc"), "[user]\n\tname = T\n");
        let plant = format!(
            "mkdir -p sub && printf 'gitdir: {}/.git\\n' > sub/.git && printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> shared.inc",
            other.display()
        );
        let out = s.run(&["sh", "-c", &format!("{plant} && echo planted")]);
        let err = text(&out.stderr);
        assert_eq!(
            (out.status.code(), text(&out.stdout).as_str()),
            (Some(0), "planted\n"),
            "the plant failed, as {}: {err}",
            who.label()
        );
        assert!(
            other.join(".git/hooks/pre-commit").is_file() && other.join(".git/config").is_file(),
            "the operator's repository was emptied, as {}: {err}",
            who.label()
        );
        assert!(
            !other.join(".git/execguard-quarantine").exists(),
            "{}",
            who.label()
        );
        assert!(
            err.contains("leading out of the workspace"),
            "{}: {err}",
            who.label()
        );
        let shared = fs::read_to_string(s.repo.join("shared.inc")).unwrap_or_default();
        assert!(
            !shared.contains("fsmonitor"),
            "the key the session added stayed, as {}: {err}",
            who.label()
        );
    }
}

/// What a session plants in a git dir new to a recorded repository (a linked worktree's
/// `config.worktree`), or in a submodule's git dir kept a level deeper (`modules/a/b`), is
/// quarantined too; a file an include reaches by `..` outside the git dir is left where it
/// is, never moved (a review found both planted keys surviving, and the operator's
/// `~/.gitconfig` moved into the quarantine).
#[test]
fn the_quarantine_reaches_new_worktrees_and_deep_submodules_and_nothing_outside() {
    for who in identities() {
        let s = Session::new(who, "quarantine-deep");
        let outside = s.root.join("outside.cfg");
        s.write(&outside, "[core]\n\teditor = vi\n");
        let deep = s.repo.join(".git/modules/a/b");
        let plant = format!(
            "git config extensions.worktreeConfig true && git worktree add -q wt && \
             printf '[core]\\n\\tfsmonitor = touch pwned\\n' > .git/worktrees/wt/config.worktree && \
             mkdir -p {deep}/objects {deep}/refs {deep}/hooks && echo 'ref: refs/heads/main' > {deep}/HEAD && \
             printf '#!/bin/sh\\ntouch pwned\\n' > {deep}/hooks/pre-commit && chmod +x {deep}/hooks/pre-commit && \
             printf '[include]\\n\\tpath = ../../outside.cfg\\n' >> .git/config && echo planted",
            deep = deep.display()
        );
        let out = s.run(&["sh", "-c", &plant]);
        let err = text(&out.stderr);
        let label = who.label();
        // The positive control: every step of the chain ran, and the quarantine with it.
        assert_eq!(
            out.status.code(),
            Some(0),
            "{label}: the plant failed: {err}"
        );
        assert_eq!(text(&out.stdout), "planted\n", "{label}: {err}");
        assert!(
            deep.join("HEAD").is_file(),
            "{label}: the deep git dir was never made: {err}"
        );
        assert!(
            err.contains("execguard: quarantined "),
            "{label}: no quarantine: {err}"
        );
        assert!(
            !fs::read_to_string(s.repo.join(".git/worktrees/wt/config.worktree"))
                .unwrap_or_default()
                .contains("fsmonitor"),
            "{label}: {err}"
        );
        assert!(!deep.join("hooks/pre-commit").exists(), "{label}: {err}");
        assert_eq!(
            fs::read_to_string(&outside).unwrap(),
            "[core]\n\teditor = vi\n",
            "{label}: {err}"
        );
        assert!(
            !fs::read_to_string(s.repo.join(".git/config"))
                .unwrap()
                .contains("outside.cfg"),
            "{label}: {err}"
        );
    }
}
