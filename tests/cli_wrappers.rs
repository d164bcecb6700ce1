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
            .arg("--")
            .args(args)
            .current_dir(&self.repo)
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
        let err = text(&out.stderr);
        assert!(
            err.starts_with("execguard-git: refused hook_bypass: "),
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
