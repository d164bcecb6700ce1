//! The corpus, through the real wrapper binary against Debian's real git, in a temporary
//! repository whose pre-commit hook appends to a marker file.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const REAL_GIT: &str = "/usr/bin/git";
const REAL_EXEC_PATH: &str = "/usr/lib/git-core";
const WRAPPER: &str = env!("CARGO_BIN_EXE_execguard-git");

static COUNTER: AtomicUsize = AtomicUsize::new(0);

struct Fixture {
    root: PathBuf,
    repo: PathBuf,
    shim: PathBuf,
    policy: String,
}

fn write_exec(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn real_git(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(REAL_GIT)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "real git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root = std::env::temp_dir().join(format!("eg-wrap-{}-{name}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let repo = root.join("repo");
        fs::create_dir_all(&repo).unwrap();
        real_git(&repo, &["init", "-q", "-b", "main"]);
        real_git(&repo, &["config", "user.name", "T"]);
        real_git(&repo, &["config", "user.email", "t@example.invalid"]);
        let hook = format!(
            "#!/bin/sh\necho ran >> '{}'\nenv > '{}'\n",
            root.join("pre-commit.marker").display(),
            root.join("hook.env").display()
        );
        write_exec(&repo.join(".git/hooks/pre-commit"), &hook);
        fs::write(repo.join("a.txt"), "a\n").unwrap();
        real_git(&repo, &["add", "a.txt"]);
        real_git(&repo, &["commit", "-q", "--no-verify", "-m", "base"]);
        let shim = root.join("shim");
        execguard_wrappers::build_git_exec_path_shim(
            &shim,
            Path::new(REAL_EXEC_PATH),
            Path::new(WRAPPER),
        )
        .unwrap();
        let policy = format!(
            "version = 1\naudit_log = \"{}\"\n[[runtime]]\nname = \"git\"\npath = \"{REAL_GIT}\"\nwrapper = \"{WRAPPER}\"\n[[runtime]]\nname = \"git\"\npath = \"{REAL_EXEC_PATH}/git\"\nwrapper = \"{WRAPPER}\"\n",
            root.join("audit.jsonl").display()
        );
        Fixture {
            root,
            repo,
            shim,
            policy,
        }
    }

    fn hook_runs(&self) -> usize {
        fs::read_to_string(self.root.join("pre-commit.marker"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn audit_lines(&self) -> usize {
        fs::read_to_string(self.root.join("audit.jsonl"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn head(&self) -> String {
        String::from_utf8(real_git(&self.repo, &["rev-parse", "HEAD"]).stdout).unwrap()
    }

    fn stage_change(&self) {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        fs::write(self.repo.join("a.txt"), format!("change {n}\n")).unwrap();
        real_git(&self.repo, &["add", "a.txt"]);
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_in(&self.repo, args, env)
    }

    fn run_in(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(WRAPPER);
        c.args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.root)
            .env("EXECGUARD_POLICY", &self.policy)
            .env("GIT_EXEC_PATH", &self.shim);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Allowed,
    /// Allowed, and it is a commit: the hook must have run and HEAD moved.
    Commits,
    Refused(&'static str),
    /// Not refused by the wrapper; git itself may fail (another repository, say).
    GitDecides,
}

struct Case {
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    want: Want,
}

const fn case(args: &'static [&'static str], want: Want) -> Case {
    Case {
        args,
        env: &[],
        want,
    }
}

const fn case_env(
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    want: Want,
) -> Case {
    Case { args, env, want }
}

use Want::*;

fn corpus() -> Vec<Case> {
    vec![
        // Allowed, and the hook runs.
        case(&["commit", "-q", "-m", "x"], Commits),
        case(&["commit", "-q", "-mn"], Commits),
        case(&["commit", "-q", "-m", "--no-verify"], Commits),
        case(&["commit", "-q", "--mess", "x"], Commits),
        case(&["commit", "-q", "--verify", "-m", "x"], Commits),
        case(&["commit", "-q", "-m", "x", "--", "a.txt"], Commits),
        case(
            &["-c", "core.fsmonitor=false", "commit", "-q", "-m", "x"],
            Commits,
        ),
        case_env(
            &["--config-env=core.fsmonitor=FSM", "commit", "-q", "-m", "x"],
            &[("FSM", "off")],
            Commits,
        ),
        case(&["-c", "alias.ci=commit -q", "ci", "-m", "x"], Commits),
        case(
            &[
                "-c",
                "alias.ci=cm",
                "-c",
                "alias.cm=commit -q",
                "ci",
                "-m",
                "x",
            ],
            Commits,
        ),
        case_env(
            &["commit", "-q", "-m", "x"],
            &[
                ("GIT_CONFIG_GLOBAL", "/dev/null"),
                ("GIT_CONFIG_NOSYSTEM", "1"),
            ],
            Commits,
        ),
        case_env(
            &["commit", "-q", "-m", "x"],
            &[("GIT_CONFIG_PARAMETERS", "'user.name'='P Q'")],
            Commits,
        ),
        case_env(
            &["commit", "-q", "-m", "x"],
            &[("GIT_DIR", ".git")],
            Commits,
        ),
        // Allowed, not commits.
        case(&["status", "--short"], Allowed),
        case(&["log", "--oneline", "-n", "1"], Allowed),
        case(&["grep", "-e", "-O", "-e", "a"], Allowed),
        case(&["grep", "-c", "a"], Allowed),
        case(&["rebase", "-n", "HEAD"], Allowed),
        case(&["--no-pager", "log", "-1"], Allowed),
        case(&["help", "-a"], Allowed),
        case(&["version"], Allowed),
        case_env(&["status"], &[("GIT_TRACE", "0")], Allowed),
        // Hook bypass (weakness 2).
        case(
            &["commit", "--no-verify", "-m", "x"],
            Refused("hook_bypass"),
        ),
        case(&["commit", "--no-verif", "-m", "x"], Refused("hook_bypass")),
        case(&["commit", "--no-ve", "-m", "x"], Refused("hook_bypass")),
        case(&["commit", "-n", "-m", "x"], Refused("hook_bypass")),
        case(&["commit", "-anm", "x"], Refused("hook_bypass")),
        case(&["commit", "-qn", "-m", "x"], Refused("hook_bypass")),
        case(
            &["commit", "--no-post-rewrite", "-m", "x"],
            Refused("hook_bypass"),
        ),
        case(&["push", "--no-verif", "origin"], Refused("hook_bypass")),
        case(&["push", "--no-verify"], Refused("hook_bypass")),
        case(&["merge", "--no-verify", "main"], Refused("hook_bypass")),
        case(&["pull", "--no-verify"], Refused("hook_bypass")),
        case(&["am", "-n"], Refused("hook_bypass")),
        case(&["am", "--no-verify"], Refused("hook_bypass")),
        case(&["rebase", "--no-verify", "HEAD"], Refused("hook_bypass")),
        case(
            &["-c", "core.hooksPath=/dev/null", "commit", "-m", "x"],
            Refused("hook_bypass"),
        ),
        case(
            &["-c", "hook.pre-commit.command=true", "commit", "-m", "x"],
            Refused("hook_bypass"),
        ),
        // Command-running options and subcommands (weakness 6).
        case(
            &["rebase", "-x", "touch pwned", "HEAD"],
            Refused("command_option"),
        ),
        case(
            &["rebase", "--exec=touch pwned", "HEAD"],
            Refused("command_option"),
        ),
        case(
            &["rebase", "--exe", "touch pwned", "HEAD"],
            Refused("command_option"),
        ),
        case(
            &["rebase", "-ix", "touch pwned", "HEAD"],
            Refused("command_option"),
        ),
        case(
            &["bisect", "run", "touch", "pwned"],
            Refused("command_subcommand"),
        ),
        case(
            &["submodule", "foreach", "touch pwned"],
            Refused("command_subcommand"),
        ),
        case(
            &["submodule", "--quiet", "foreach", "touch pwned"],
            Refused("command_subcommand"),
        ),
        case(&["grep", "-Otouch", "a"], Refused("command_option")),
        case(&["grep", "-O", "a"], Refused("command_option")),
        case(
            &["grep", "--open-files-in-pager=touch", "a"],
            Refused("command_option"),
        ),
        case(&["grep", "--open", "a"], Refused("command_option")),
        case(
            &["fetch", "--upload-pack=touch pwned", "."],
            Refused("command_option"),
        ),
        case(
            &["fetch", "--upload", "touch pwned", "."],
            Refused("command_option"),
        ),
        case(
            &["clone", "-u", "touch pwned", ".", "x"],
            Refused("command_option"),
        ),
        case(
            &["clone", "--upload-pack=x", ".", "x"],
            Refused("command_option"),
        ),
        case(
            &["clone", "--template=/tmp", ".", "x"],
            Refused("command_option"),
        ),
        case(
            &["ls-remote", "--upload-pack=x", "."],
            Refused("command_option"),
        ),
        case(
            &["push", "--receive-pack=touch pwned", "."],
            Refused("command_option"),
        ),
        case(
            &["push", "--exec=touch pwned", "."],
            Refused("command_option"),
        ),
        case(
            &["archive", "--exec=touch pwned", "--remote=.", "HEAD"],
            Refused("command_option"),
        ),
        case(
            &["difftool", "-x", "touch pwned"],
            Refused("command_option"),
        ),
        case(
            &["difftool", "--extcmd=touch pwned"],
            Refused("command_option"),
        ),
        case(
            &["difftool", "-yx", "touch pwned"],
            Refused("command_option"),
        ),
        case(&["merge", "-s", "evil", "main"], Refused("command_option")),
        case(&["merge", "-sevil", "main"], Refused("command_option")),
        case(
            &["merge", "--strategy=evil", "main"],
            Refused("command_option"),
        ),
        case(&["pull", "--strategy", "evil"], Refused("command_option")),
        case(&["rebase", "-s", "evil", "HEAD"], Refused("command_option")),
        case(
            &["cherry-pick", "--strategy", "evil", "HEAD"],
            Refused("command_option"),
        ),
        case(
            &["revert", "--strategy=evil", "HEAD"],
            Refused("command_option"),
        ),
        case(
            &["-c", "pull.twohead=evil", "status"],
            Refused("config_key"),
        ),
        case(&["merge", "-s", "ort", "main"], Allowed),
        case(&["merge", "--strategy=recursive", "main"], Allowed),
        case(
            &["filter-branch", "--tree-filter", "touch pwned"],
            Refused("command_subcommand"),
        ),
        case(
            &["send-email", "--to-cmd=touch pwned", "x.patch"],
            Refused("command_option"),
        ),
        case(
            &["send-email", "--smtp-server=/tmp/x", "x.patch"],
            Refused("command_option"),
        ),
        case(&["instaweb"], Refused("command_subcommand")),
        case(&["help", "-w", "log"], Refused("command_option")),
        case(&["help", "--web", "log"], Refused("command_option")),
        case(&["init", "--template=/tmp", "y"], Refused("command_option")),
        case(&["init", "-q", "--template=", "empty-template"], Allowed),
        case_env(&["status"], &[("GIT_TEMPLATE_DIR", "")], Allowed),
        case(
            &["daemon", "--access-hook=touch"],
            Refused("command_option"),
        ),
        case(
            &["clone", "ext::sh -c touch% pwned", "x"],
            Refused("transport_helper"),
        ),
        case(&["fetch", "evil::x"], Refused("transport_helper")),
        case(&["push", "foo://h/r", "HEAD"], Refused("transport_helper")),
        case(
            &["ls-remote", "hg::https://h/r"],
            Refused("transport_helper"),
        ),
        case(
            &["archive", "--remote=evil::x", "HEAD"],
            Refused("transport_helper"),
        ),
        case(
            &["remote", "add", "x", "evil::x"],
            Refused("transport_helper"),
        ),
        case(
            &["remote-ext", "x", "sh -c touch% pwned"],
            Refused("command_subcommand"),
        ),
        // Global options.
        case(&["--exec-path=/tmp", "status"], Refused("exec_path")),
        // Without `=`, git prints its exec-path (the shim) and exits; git-submodule needs it.
        case(&["--exec-path", "status"], Allowed),
        // Another repository is git's business: the wrapper reads that repository's config.
        case(&["--git-dir=/tmp", "status"], GitDecides),
        case(&["--work-tree=.", "status"], Allowed),
        case(&["--bogus-global", "status"], Refused("unknown_option")),
        // Config keys on the command line (weakness 7 and the reference list).
        // Neutralised, not refused: GIT_PAGER=cat and GIT_EDITOR=: win over these.
        case(&["-c", "core.pager=touch pwned", "log", "-1"], Allowed),
        case(&["-c", "pager.log=touch pwned", "log", "-1"], Allowed),
        case(
            &["-p", "-c", "core.pager=touch pwned", "log", "-1"],
            Allowed,
        ),
        case(&["-c", "core.editor=touch pwned", "status"], Allowed),
        case(&["-c", "core.askpass=touch pwned", "status"], Allowed),
        case(&["-c", "protocol.file.allow=always", "status"], Allowed),
        case(&["-c", "core.worktree=.", "status"], Allowed),
        case(
            &["-c", "core.fsmonitor=touch pwned", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "core.sshCommand=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "imap.tunnel=touch pwned", "status"],
            Refused("config_key"),
        ),
        case(&["-c", "core.gitProxy=x", "status"], Refused("config_key")),
        case(
            &["-c", "core.alternateRefsCommand=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "credential.helper=!x", "fetch", "."],
            Refused("config_key"),
        ),
        case(
            &["-c", "credential.https://h.helper=!x", "push", "."],
            Refused("config_key"),
        ),
        // A helper only matters to commands that talk to a remote; an empty one clears it.
        case(&["-c", "credential.helper=!x", "status"], Allowed),
        case(
            &[
                "-c",
                "credential.helper=!x",
                "-c",
                "credential.helper=",
                "ls-remote",
                ".",
            ],
            Allowed,
        ),
        case(&["-c", "diff.external=x", "diff"], Refused("config_key")),
        case(
            &["-c", "include.path=/tmp/x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "includeIf.gitdir:/.path=/tmp/x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "sequence.editor=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "uploadpack.packObjectsHook=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "remote.origin.uploadpack=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "remote.origin.receivepack=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "remote.origin.vcs=x", "status"],
            Refused("transport_helper"),
        ),
        case(
            &["-c", "protocol.ext.allow=always", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "url.ext::sh.insteadOf=https://", "status"],
            Refused("transport_helper"),
        ),
        case(
            &["-c", "remote.origin.url=evil::x", "status"],
            Refused("transport_helper"),
        ),
        case(&["-c", "filter.x.clean=x", "status"], Refused("config_key")),
        case(
            &["-c", "filter.x.smudge=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "filter.x.process=x", "status"],
            Refused("config_key"),
        ),
        case(&["-c", "diff.x.command=x", "diff"], Refused("config_key")),
        case(&["-c", "diff.x.textconv=x", "diff"], Refused("config_key")),
        case(&["-c", "merge.x.driver=x", "status"], Refused("config_key")),
        case(&["-c", "gpg.program=x", "status"], Refused("config_key")),
        case(
            &["-c", "gpg.ssh.program=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "gpg.ssh.defaultKeyCommand=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "interactive.diffFilter=x", "status"],
            Refused("config_key"),
        ),
        case(&["-c", "difftool.x.cmd=x", "status"], Refused("config_key")),
        case(
            &["-c", "mergetool.x.cmd=x", "status"],
            Refused("config_key"),
        ),
        case(&["-c", "browser.x.cmd=x", "status"], Refused("config_key")),
        case(&["-c", "man.x.cmd=x", "status"], Refused("config_key")),
        case(
            &["-c", "sendemail.toCmd=x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "submodule.x.update=!x", "status"],
            Refused("config_key"),
        ),
        case(
            &["-c", "init.templateDir=/tmp", "status"],
            Refused("config_key"),
        ),
        case(&["-c", "CORE.SSHCOMMAND=x", "log"], Refused("config_key")),
        case(
            &["clone", "-c", "core.fsmonitor=x", ".", "y"],
            Refused("config_key"),
        ),
        case(
            &["clone", "--config=core.sshCommand=x", ".", "y"],
            Refused("config_key"),
        ),
        case(
            &["clone", "--conf", "core.gitProxy=x", ".", "y"],
            Refused("config_key"),
        ),
        case(
            &["config", "core.hooksPath", "/dev/null"],
            Refused("hook_bypass"),
        ),
        case(
            &["config", "--local", "core.fsmonitor", "x"],
            Refused("config_key"),
        ),
        case(
            &["config", "--add", "credential.helper", "!x"],
            Refused("config_key"),
        ),
        case(&["config", "alias.x", "!sh"], Refused("alias_shell")),
        case(
            &["config", "alias.ci", "commit --no-verify"],
            Refused("hook_bypass"),
        ),
        case(&["config", "--edit"], Refused("config_key")),
        case(
            &["config", "--rename-section", "x", "core"],
            Refused("config_key"),
        ),
        // --config-env checks the VALUE of the variable (weakness 3).
        case_env(
            &["--config-env=core.fsmonitor=off", "status"],
            &[("off", "/tmp/x")],
            Refused("config_key"),
        ),
        case_env(
            &["--config-env", "core.sshCommand=PG", "log"],
            &[("PG", "x")],
            Refused("config_key"),
        ),
        case(
            &["--config-env=core.pager=NOPE_UNSET", "log"],
            Refused("config_malformed"),
        ),
        // GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT parsed as git does (weakness 4).
        case_env(
            &["fetch", "."],
            &[(
                "GIT_CONFIG_PARAMETERS",
                "'credential.https://h.helper'='!cmd'",
            )],
            Refused("config_key"),
        ),
        case_env(
            &["status"],
            &[("GIT_CONFIG_PARAMETERS", "'core.sshCommand=x'")],
            Refused("config_key"),
        ),
        case_env(
            &["status"],
            &[(
                "GIT_CONFIG_PARAMETERS",
                "'user.name'='a' 'core.fsmonitor'='x'",
            )],
            Refused("config_key"),
        ),
        case_env(
            &["status"],
            &[("GIT_CONFIG_PARAMETERS", "'core.'\\''pager'")],
            Refused("config_malformed"),
        ),
        case_env(
            &["status"],
            &[("GIT_CONFIG_PARAMETERS", "core.pager=x")],
            Refused("config_malformed"),
        ),
        case_env(
            &["status"],
            &[
                ("GIT_CONFIG_COUNT", " 1"),
                ("GIT_CONFIG_KEY_0", "core.sshCommand"),
                ("GIT_CONFIG_VALUE_0", "x"),
            ],
            Refused("config_key"),
        ),
        case_env(
            &["status"],
            &[
                ("GIT_CONFIG_COUNT", "+1"),
                ("GIT_CONFIG_KEY_0", "core.sshCommand"),
                ("GIT_CONFIG_VALUE_0", "x"),
            ],
            Refused("config_key"),
        ),
        case_env(
            &["status"],
            &[
                ("GIT_CONFIG_COUNT", "010"),
                ("GIT_CONFIG_KEY_0", "user.name"),
                ("GIT_CONFIG_VALUE_0", "a"),
            ],
            Refused("config_malformed"),
        ),
        case_env(
            &["status"],
            &[
                ("GIT_CONFIG_COUNT", "2"),
                ("GIT_CONFIG_KEY_0", "user.name"),
                ("GIT_CONFIG_VALUE_0", "a"),
                ("GIT_CONFIG_KEY_1", "core.sshCommand"),
                ("GIT_CONFIG_VALUE_1", "x"),
            ],
            Refused("config_key"),
        ),
        case_env(
            &["status"],
            &[
                ("GIT_CONFIG_COUNT", "1 "),
                ("GIT_CONFIG_KEY_0", "user.name"),
                ("GIT_CONFIG_VALUE_0", "a"),
            ],
            Refused("config_malformed"),
        ),
        case_env(
            &["status"],
            &[
                ("GIT_CONFIG_COUNT", "1"),
                ("GIT_CONFIG_KEY_0", "user.name"),
                ("GIT_CONFIG_VALUE_0", "a"),
            ],
            Allowed,
        ),
        case_env(
            &["status"],
            &[
                ("GIT_CONFIG_COUNT", "0"),
                ("GIT_CONFIG_KEY_0", "core.sshCommand"),
                ("GIT_CONFIG_VALUE_0", "x"),
            ],
            Allowed,
        ),
        // Aliases (weakness 5), on the command line.
        case(&["-c", "alias.x=!touch pwned", "x"], Refused("alias_shell")),
        case(
            &["-c", "alias.ci=commit --no-verif", "ci", "-m", "x"],
            Refused("hook_bypass"),
        ),
        case(
            &["-c", "alias.ci=commit -n", "ci", "-m", "x"],
            Refused("hook_bypass"),
        ),
        case(
            &["-c", "alias.a=b", "-c", "alias.b=a", "a"],
            Refused("alias_loop"),
        ),
        case(
            &["-c", "alias.a=b", "-c", "alias.b=!touch pwned", "a"],
            Refused("alias_shell"),
        ),
        case(
            &["-c", "alias.a=-c core.sshCommand=x log", "a"],
            Refused("config_key"),
        ),
        // Environment overrides (reference list and weakness 8).
        case_env(
            &["status"],
            &[("GIT_SSH_COMMAND", "touch pwned")],
            Refused("env_override"),
        ),
        case_env(&["status"], &[("GIT_SSH", "x")], Refused("env_override")),
        case_env(&["status"], &[("GIT_ASKPASS", "touch pwned")], Allowed),
        case_env(&["status"], &[("SSH_ASKPASS", "touch pwned")], Allowed),
        case_env(
            &["status"],
            &[("GIT_EXTERNAL_DIFF", "x")],
            Refused("env_override"),
        ),
        case_env(
            &["status"],
            &[("GIT_CONFIG_GLOBAL", "/nonexistent/gitconfig")],
            Allowed,
        ),
        case_env(
            &["status"],
            &[("GIT_CONFIG_SYSTEM", "/tmp/x")],
            Refused("env_override"),
        ),
        case_env(
            &["status"],
            &[("GIT_CONFIG_NOSYSTEM", "0")],
            Refused("env_override"),
        ),
        case_env(&["status"], &[("GIT_EDITOR", "touch pwned")], Allowed),
        case_env(&["log", "-1"], &[("GIT_PAGER", "touch pwned")], Allowed),
        case_env(
            &["status"],
            &[("GIT_SEQUENCE_EDITOR", "x")],
            Refused("env_override"),
        ),
        case_env(&["status"], &[("EDITOR", "touch pwned")], Allowed),
        case_env(&["status"], &[("VISUAL", "touch pwned")], Allowed),
        case_env(&["-p", "log", "-1"], &[("PAGER", "touch pwned")], Allowed),
        case_env(&["status"], &[("GIT_SEQUENCE_EDITOR", ":")], Allowed),
        case_env(&["status"], &[("GIT_SEQUENCE_EDITOR", "true")], Allowed),
        // The go command's own value (go build stamps the VCS status through git).
        case_env(
            &["status"],
            &[(
                "GIT_SSH_COMMAND",
                "ssh -o ControlMaster=no -o BatchMode=yes",
            )],
            Allowed,
        ),
        case_env(
            &["status"],
            &[(
                "GIT_SSH_COMMAND",
                "ssh -o ProxyCommand=touch-x -o BatchMode=yes",
            )],
            Refused("env_override"),
        ),
        case_env(
            &["status"],
            &[("GIT_SEQUENCE_EDITOR", "/usr/bin/true")],
            Allowed,
        ),
        case_env(
            &["status"],
            &[("GIT_SEQUENCE_EDITOR", "true; touch x")],
            Refused("env_override"),
        ),
        case_env(
            &["status"],
            &[("GIT_PROXY_COMMAND", "x")],
            Refused("env_override"),
        ),
        case_env(
            &["status"],
            &[("GIT_TEMPLATE_DIR", "/tmp")],
            Refused("env_override"),
        ),
        case_env(
            &["status"],
            &[("GIT_ALLOW_PROTOCOL", "file:ext")],
            Refused("transport_helper"),
        ),
        case_env(
            &["status"],
            &[("GIT_ALLOW_PROTOCOL", "file:https")],
            Allowed,
        ),
        case_env(&["status"], &[("GIT_SSH_VARIANT", "ssh")], Allowed),
        case_env(
            &["-p", "log", "-1"],
            &[("LESSOPEN", "|touch pwned %s")],
            Allowed,
        ),
        case_env(
            &["status"],
            &[("GIT_EXEC_PATH", "/tmp")],
            Refused("exec_path"),
        ),
        case_env(&["status"], &[("GIT_DIR", "/tmp")], GitDecides),
        case_env(&["status"], &[("GIT_WORK_TREE", ".")], Allowed),
    ]
}

#[test]
fn corpus_through_the_wrapper() {
    let fx = Fixture::new("corpus");
    let mut failures = Vec::new();
    for c in corpus() {
        if c.want == Commits {
            fx.stage_change();
        }
        let hooks_before = fx.hook_runs();
        let head_before = fx.head();
        let audit_before = fx.audit_lines();
        let out = fx.run(c.args, c.env);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let code = out.status.code();
        let problem = match c.want {
            Refused(reason) => {
                let prefix = format!("execguard-git: refused {reason}: ");
                if code != Some(2) {
                    Some(format!("exit {code:?}, want 2; stderr {stderr}"))
                } else if !(stderr.starts_with(&prefix)
                    && stderr.lines().count() == 1
                    && stderr.contains("; to proceed: "))
                {
                    Some(format!(
                        "stderr {stderr:?}, want one line starting {prefix:?} that says how to proceed"
                    ))
                } else if fx.audit_lines() != audit_before + 1 {
                    Some("no audit record".into())
                } else if fx.hook_runs() != hooks_before || fx.head() != head_before {
                    Some("git ran".into())
                } else {
                    None
                }
            }
            GitDecides if stderr.contains("execguard-git:") => Some(format!("stderr {stderr}")),
            GitDecides => None,
            Allowed if code != Some(0) => Some(format!("exit {code:?}; stderr {stderr}")),
            Allowed => None,
            Commits if code != Some(0) => Some(format!("exit {code:?}; stderr {stderr}")),
            Commits if fx.hook_runs() != hooks_before + 1 => Some("hook did not run".into()),
            Commits if fx.head() == head_before => Some("no commit".into()),
            Commits => None,
        };
        if let Some(p) = problem {
            failures.push(format!("{:?} env {:?}: {p}", c.args, c.env));
        }
    }
    assert!(!fx.root.join("repo/pwned").exists());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn repository_aliases_are_resolved_through_the_real_git() {
    let fx = Fixture::new("alias");
    real_git(&fx.repo, &["config", "alias.st", "status --short"]);
    real_git(&fx.repo, &["config", "alias.sh", "!touch pwned"]);
    real_git(&fx.repo, &["config", "alias.nv", "commit --no-verif"]);
    real_git(&fx.repo, &["config", "alias.deep", "nv"]);
    real_git(&fx.repo, &["config", "alias.loop1", "loop2"]);
    real_git(&fx.repo, &["config", "alias.loop2", "loop1"]);
    real_git(&fx.repo, &["config", "alias.ci", "commit -q"]);
    assert_eq!(fx.run(&["st"], &[]).status.code(), Some(0));
    for (alias, reason) in [
        ("sh", "alias_shell"),
        ("nv", "hook_bypass"),
        ("deep", "hook_bypass"),
        ("loop1", "alias_loop"),
    ] {
        let out = fx.run(&[alias, "-m", "x"], &[]);
        assert_eq!(out.status.code(), Some(2), "{alias}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("execguard-git: refused {reason}: ")),
            "{alias}: {err}"
        );
    }
    fx.stage_change();
    let before = fx.hook_runs();
    assert_eq!(
        fx.run(&["ci", "-m", "via alias"], &[]).status.code(),
        Some(0)
    );
    assert_eq!(fx.hook_runs(), before + 1);
    assert!(!fx.repo.join("pwned").exists());
}

#[test]
fn command_running_repository_config_is_refused() {
    let fx = Fixture::new("repocfg");
    real_git(&fx.repo, &["config", "core.hooksPath", "/dev/null"]);
    let out = fx.run(&["commit", "--allow-empty", "-m", "x"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("execguard-git: refused hook_bypass: ")
            && err.contains(".git/config: core.hookspath"),
        "{err}"
    );
    real_git(&fx.repo, &["config", "--unset", "core.hooksPath"]);
    real_git(&fx.repo, &["config", "core.fsmonitor", "touch pwned"]);
    assert_eq!(fx.run(&["status"], &[]).status.code(), Some(2));
    assert!(!fx.repo.join("pwned").exists());
}

#[test]
fn hooks_get_an_allow_listed_environment() {
    let fx = Fixture::new("hookenv");
    fx.stage_change();
    let out = fx.run(
        &["commit", "-q", "-m", "x"],
        &[
            ("BASH_FUNC_git%%", "() { touch pwned; }"),
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("LD_AUDIT", "/tmp/evil.so"),
            ("GLIBC_TUNABLES", "glibc.malloc.check=3"),
            ("GCONV_PATH", "/tmp"),
            ("BASH_ENV", "/tmp/x"),
            ("SHELLOPTS", "xtrace"),
            ("PS4", "$(touch pwned)"),
            ("NODE_OPTIONS", "--require /tmp/x"),
            ("LC_ALL", "C"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = fs::read_to_string(fx.root.join("hook.env")).unwrap();
    for bad in [
        "BASH_FUNC",
        "LD_PRELOAD",
        "LD_AUDIT",
        "GLIBC_TUNABLES",
        "GCONV_PATH",
        "BASH_ENV",
        "SHELLOPTS",
        "PS4=",
        "NODE_OPTIONS",
    ] {
        assert!(!env.contains(bad), "{bad} reached the hook");
    }
    assert!(
        !env.contains("GIT_CONFIG_GLOBAL="),
        "~/.gitconfig is honoured"
    );
    assert!(env.contains("GIT_CONFIG_NOSYSTEM=1"));
    assert!(env.contains("GIT_PAGER=cat\n"));
    assert!(env.contains("GIT_EDITOR=:\n"));
    assert!(env.contains("LC_ALL=C"));
    assert!(!fx.repo.join("pwned").exists());
}

#[test]
fn nested_git_from_hooks_goes_through_the_wrapper() {
    let fx = Fixture::new("nested");
    // A post-commit hook that uses git (allowed) and tries to bypass the pre-commit hook
    // (refused by the nested wrapper).
    let hook = format!(
        "#!/bin/sh\ngit rev-parse HEAD > '{0}/nested.head'\necho $? > '{0}/nested.rc'\ngit commit --allow-empty --no-verify -m inner 2> '{0}/inner.err'\necho $? > '{0}/inner.rc'\n",
        fx.root.display()
    );
    write_exec(&fx.repo.join(".git/hooks/post-commit"), &hook);
    fx.stage_change();
    let out = fx.run(&["commit", "-q", "-m", "outer"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rd = |n: &str| {
        fs::read_to_string(fx.root.join(n))
            .unwrap()
            .trim()
            .to_owned()
    };
    assert_eq!(rd("nested.rc"), "0");
    assert_eq!(rd("nested.head"), fx.head().trim());
    assert_eq!(rd("inner.rc"), "2");
    assert!(rd("inner.err").starts_with("execguard-git: refused hook_bypass:"));
    // The nested wrapper also ran the pre-commit hook's counterpart check: only the outer
    // commit exists.
    let log = real_git(&fx.repo, &["log", "--format=%s", "-n", "1"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "outer");
}

#[test]
fn git_started_by_git_works_pull_and_clone() {
    let fx = Fixture::new("pull");
    let clone = fx.root.join("clone");
    let out = fx.run_in(
        &fx.root,
        &[
            "clone",
            "-q",
            fx.repo.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fx.stage_change();
    assert_eq!(
        fx.run(&["commit", "-q", "-m", "upstream"], &[])
            .status
            .code(),
        Some(0)
    );
    let out = fx.run_in(
        &clone,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e.invalid",
            "pull",
            "-q",
            "--ff-only",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let head = real_git(&clone, &["rev-parse", "HEAD"]);
    assert_eq!(String::from_utf8_lossy(&head.stdout), fx.head());
}

#[test]
fn no_policy_is_a_configuration_error_not_a_run() {
    let out = Command::new(WRAPPER)
        .arg("status")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if Path::new("/etc/execguard/policy.toml").exists() {
        // System mode: the system policy decides, and the environment is never consulted.
        assert!(!stderr.contains("policy_missing"), "{stderr}");
    } else {
        assert_eq!(out.status.code(), Some(125), "{stderr}");
        assert!(
            stderr.starts_with("execguard-git: error: policy_missing: no policy"),
            "{stderr}"
        );
    }
}

/// The wrappers read the policy with the engine (through `execguard_load`): a policy the guard
/// would refuse is refused here too, never half-read.
#[test]
fn a_policy_the_engine_refuses_is_a_configuration_error() {
    let system_mode = Path::new("/etc/execguard/policy.toml").exists();
    for bad in [
        // no version
        format!("[[runtime]]\nname = \"git\"\npath = \"{REAL_GIT}\"\nwrapper = \"{WRAPPER}\"\n"),
        // a runtime without its wrapper
        format!("version = 1\n[[runtime]]\nname = \"git\"\npath = \"{REAL_GIT}\"\n"),
        // an unknown key
        format!("version = 1\nfoo = 1\n[[runtime]]\nname = \"git\"\npath = \"{REAL_GIT}\"\nwrapper = \"{WRAPPER}\"\n"),
    ] {
        let out = Command::new(WRAPPER)
            .arg("status")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("EXECGUARD_POLICY", &bad)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if system_mode {
            // The system policy wins: the environment's text is never read.
            assert!(!stderr.contains("EXECGUARD_POLICY"), "{bad}: {stderr}");
            continue;
        }
        assert_eq!(out.status.code(), Some(125), "{bad}: {stderr}");
        assert!(
            stderr.starts_with("execguard-git: error: policy_invalid: EXECGUARD_POLICY: "),
            "{bad}: {stderr}"
        );
    }
}

#[test]
fn check_git_explains_without_running() {
    let fx = Fixture::new("check");
    let env: Vec<(OsString, OsString)> =
        vec![("EXECGUARD_POLICY".into(), fx.policy.clone().into())];
    let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
    let r = execguard_wrappers::check_git(&args(&["commit", "--no-verif"]), &env, &fx.repo)
        .unwrap_err();
    assert_eq!(r.code(), "hook_bypass");
    assert!(r.to_string().starts_with("refused hook_bypass: "));
    assert!(execguard_wrappers::check_git(&args(&["status"]), &env, &fx.repo).is_ok());
}
