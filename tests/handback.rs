//! The repository hand-back (issue 29, docs/handback.md), at process level: a session
//! (`execguard run`, strict and development, as root and as a non-root user) leaves something
//! in the workspace that would make the operator's next ordinary command outside any session
//! (`git push`, `git commit`, `git rebase --continue`, `python3 app.py`) run what the session
//! wrote; after the hand-back that command runs nothing of it. Each test writes a marker when
//! the session's code runs.

mod support;

use execguard_testkit::{identities, Identity};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const PROFILES: [&str; 2] = ["strict", "development"];

/// One scenario (`support::Scene`: `base/ws` the workspace, `base/home` the session's and the
/// operator's `HOME`) in one profile; `base/pwned` is the marker the session's code writes
/// when it runs.
struct Case {
    scene: support::Scene,
    profile: &'static str,
}

impl std::ops::Deref for Case {
    type Target = support::Scene;
    fn deref(&self) -> &support::Scene {
        &self.scene
    }
}

impl Case {
    fn new(who: Identity, name: &str, profile: &'static str) -> Case {
        Case {
            scene: support::Scene::new(who, &format!("handback-{name}-{profile}")),
            profile,
        }
    }

    fn label(&self) -> String {
        format!("{} {}", self.who.label(), self.profile)
    }

    fn marker(&self) -> PathBuf {
        self.base.join("pwned")
    }

    /// A command as the operator: the scenario's user, its `HOME`, no system config.
    fn as_operator(&self, program: &str, dir: &Path) -> Command {
        let mut c = Command::new(program);
        self.who.apply(&mut c);
        c.current_dir(dir)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", "/usr/bin:/bin")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // Never the repository these tests run in, above the scenario.
            .env("GIT_CEILING_DIRECTORIES", &self.base)
            .env("GIT_AUTHOR_NAME", "op")
            .env("GIT_AUTHOR_EMAIL", "op@example.invalid")
            .env("GIT_COMMITTER_NAME", "op")
            .env("GIT_COMMITTER_EMAIL", "op@example.invalid")
            .stdin(Stdio::null());
        c
    }

    /// The operator's plain git (`/usr/bin/git`, no wrapper, no session) in `dir`.
    fn git(&self, dir: &Path, args: &[&str]) -> Output {
        self.as_operator("/usr/bin/git", dir)
            .args(args)
            .output()
            .unwrap()
    }

    fn git_ok(&self, dir: &Path, args: &[&str]) {
        let out = self.git(dir, args);
        assert!(
            out.status.success(),
            "[{}] git {args:?}: {}",
            self.label(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A repository at `dir` with one commit, made by the operator.
    fn repo(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        self.who.own(&self.base);
        self.git_ok(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        self.who.own(&self.base);
        self.git_ok(dir, &["add", "a.txt"]);
        self.git_ok(dir, &["commit", "-q", "-m", "one"]);
    }

    /// `execguard run --profile P --workspace WS -- sh -c SCRIPT` as the scenario's user;
    /// `$MARK` in the script is the marker.
    fn session(&self, script: &str) -> Output {
        self.who.own(&self.base);
        self.session_command(script).output().unwrap()
    }

    fn session_command(&self, script: &str) -> Command {
        self.session_command_with(&[], script)
    }

    /// [`Case::session_command`] with more options for `execguard run`.
    fn session_command_with(&self, options: &[&std::ffi::OsStr], script: &str) -> Command {
        self.session_in(&self.ws, options, script)
    }

    /// [`Case::session_command_with`] in the workspace `ws`.
    fn session_in(&self, ws: &Path, options: &[&std::ffi::OsStr], script: &str) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_execguard"));
        self.who.apply(&mut c);
        c.arg("run")
            .args(options)
            .args(["--profile", self.profile, "--workspace"])
            .arg(ws)
            .args(["--", "/bin/sh", "-c", script])
            .current_dir(ws)
            .env("HOME", &self.home)
            .env("MARK", self.marker())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdin(Stdio::null());
        c
    }

    /// The session ran its script to the end (it prints `planted`).
    fn planted(&self, out: &Output) -> String {
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("planted"),
            "[{}] the session did not get to plant: {err}",
            self.label()
        );
        err
    }

    /// The operator's `./REL ARGS` in the workspace, outside any session: "Permission denied".
    fn assert_refused_outside(&self, rel: &str, args: &[&std::ffi::OsStr]) {
        let out = self
            .as_operator(self.ws.join(rel).to_str().unwrap(), &self.ws)
            .args(args)
            .output();
        assert_eq!(
            out.as_ref().map_err(std::io::Error::kind).err(),
            Some(std::io::ErrorKind::PermissionDenied),
            "[{}] the operator's ./{rel} ran: {out:?}",
            self.label()
        );
    }

    fn assert_nothing_ran(&self, what: &str, err: &str) {
        assert!(
            !self.marker().exists(),
            "[{}] {what} ran what the session wrote; the session said: {err}",
            self.label()
        );
    }
}

/// A hook that writes the marker (its path written in at planting: the operator's command has
/// no `MARK`).
const HOOK: &str = "printf '#!/bin/sh\\ntouch %s\\n' \"$MARK\"";

/// Every identity in every profile.
fn each_case(name: &str, mut f: impl FnMut(&Case)) {
    for who in identities() {
        for profile in PROFILES {
            f(&Case::new(who, name, profile));
        }
    }
}

/// Item 1: a push URL to a repository the session made (a bare repository in a cache
/// directory, with a `pre-receive` hook), added by commands the wrapper allows.
#[test]
fn a_push_url_to_a_repository_the_session_made_is_undone() {
    each_case("pushurl", |c| {
        c.repo(&c.ws);
        let origin = c.base.join("origin.git");
        std::fs::create_dir_all(&origin).unwrap();
        c.who.own(&c.base);
        c.git_ok(&origin, &["init", "-q", "--bare"]);
        c.git_ok(
            &c.ws,
            &["remote", "add", "origin", origin.to_str().unwrap()],
        );
        let script = format!(
            "git init -q --bare \"$HOME/.cache/up.git\" && {HOOK} > \"$HOME/.cache/up.git/hooks/pre-receive\" && \
             chmod +x \"$HOME/.cache/up.git/hooks/pre-receive\" && \
             git remote set-url --add --push origin \"$HOME/.cache/up.git\" && echo planted"
        );
        let err = c.planted(&c.session(&script));
        let _ = c.git(&c.ws, &["push", "-q", "origin", "main"]);
        c.assert_nothing_ran("git push", &err);
        assert!(
            c.git(&origin, &["rev-parse", "main"]).status.success(),
            "[{}] the push did not reach the operator's own origin: {err}",
            c.label()
        );
    });
}

/// The test of the list: a case nobody named. `branch.<name>.pushRemote` (and
/// `remote.pushDefault`) may name a path instead of a remote (`remote.c` `remote_get_1`): a
/// plain `git push` then pushes there and runs that repository's `pre-receive`.
#[test]
fn a_push_remote_naming_a_local_path_is_undone() {
    each_case("pushremote", |c| {
        c.repo(&c.ws);
        let script = format!(
            "git init -q --bare \"$HOME/.cache/up.git\" && {HOOK} > \"$HOME/.cache/up.git/hooks/pre-receive\" && \
             chmod +x \"$HOME/.cache/up.git/hooks/pre-receive\" && \
             git config branch.main.pushRemote \"$HOME/.cache/up.git\" && git config push.default current && echo planted"
        );
        let err = c.planted(&c.session(&script));
        let _ = c.git(&c.ws, &["push", "-q"]);
        c.assert_nothing_ran("git push", &err);
    });
}

/// Item 2: a bare repository in the workspace (`W/up.git`): its hooks run when the operator
/// pushes to it.
#[test]
fn a_bare_repository_in_the_workspace_is_handed_back() {
    each_case("bare", |c| {
        let up = c.ws.join("up.git");
        std::fs::create_dir_all(&up).unwrap();
        c.who.own(&c.base);
        c.git_ok(&up, &["init", "-q", "--bare"]);
        let work = c.base.join("work");
        c.repo(&work);
        c.git_ok(&work, &["remote", "add", "up", up.to_str().unwrap()]);
        let script = format!(
            "{HOOK} > up.git/hooks/pre-receive && chmod +x up.git/hooks/pre-receive && echo planted"
        );
        let err = c.planted(&c.session(&script));
        let _ = c.git(&work, &["push", "-q", "up", "main"]);
        c.assert_nothing_ran("git push to W/up.git", &err);
    });
}

/// Item 3: an `exec` line left in a conflicted rebase's todo list runs at the operator's
/// `git rebase --continue`.
#[test]
fn an_exec_line_in_the_sequencer_state_is_undone() {
    each_case("todo", |c| {
        c.repo(&c.ws);
        c.git_ok(&c.ws, &["checkout", "-q", "-b", "side"]);
        std::fs::write(c.ws.join("a.txt"), "side\n").unwrap();
        c.who.own(&c.base);
        c.git_ok(&c.ws, &["commit", "-qam", "side"]);
        c.git_ok(&c.ws, &["checkout", "-q", "main"]);
        std::fs::write(c.ws.join("a.txt"), "main\n").unwrap();
        c.who.own(&c.base);
        c.git_ok(&c.ws, &["commit", "-qam", "main"]);
        c.git_ok(&c.ws, &["checkout", "-q", "side"]);
        // The operator's rebase stops on the conflict; the session then edits its todo list.
        let _ = c.git(&c.ws, &["rebase", "main"]);
        assert!(c.ws.join(".git/rebase-merge").is_dir(), "[{}]", c.label());
        let script =
            "echo \"exec touch $MARK\" >> .git/rebase-merge/git-rebase-todo && echo planted";
        let err = c.planted(&c.session(script));
        std::fs::write(c.ws.join("a.txt"), "resolved\n").unwrap();
        c.who.own(&c.base);
        c.git_ok(&c.ws, &["add", "a.txt"]);
        let _ = c
            .as_operator("/usr/bin/git", &c.ws)
            .env("GIT_EDITOR", "true")
            .args(["rebase", "--continue"])
            .output()
            .unwrap();
        c.assert_nothing_ran("git rebase --continue", &err);
    });
}

/// Item 4a: a `commondir` pointing at a copy of the repository with a planted hook.
#[test]
fn a_commondir_redirection_is_undone() {
    each_case("commondir", |c| {
        c.repo(&c.ws);
        let script = format!(
            "cp -r .git \"$HOME/copy.git\" && {HOOK} > \"$HOME/copy.git/hooks/pre-commit\" && \
             chmod +x \"$HOME/copy.git/hooks/pre-commit\" && echo \"$HOME/copy.git\" > .git/commondir && echo planted"
        );
        let err = c.planted(&c.session(&script));
        std::fs::write(c.ws.join("b.txt"), "b\n").unwrap();
        c.who.own(&c.base);
        let _ = c.git(&c.ws, &["add", "b.txt"]);
        let _ = c.git(&c.ws, &["commit", "-qm", "b"]);
        c.assert_nothing_ran("git commit", &err);
        assert!(
            !c.ws.join(".git/commondir").exists(),
            "[{}] {err}",
            c.label()
        );
    });
}

/// Item 4b: `.git` replaced by a `gitdir:` file naming the git dir moved elsewhere, with a
/// planted hook: the redirection is undone. Moved within the workspace (one mount), the same
/// directory comes back, its planted hook quarantined; moved out of it (a copy: the session's
/// mounts are apart), the file is moved aside and the copy left where it is, unused.
#[test]
fn a_gitdir_file_in_place_of_the_git_dir_is_undone() {
    each_case("gitfile", |c| {
        c.repo(&c.ws);
        for (to, comes_back) in [("$PWD/.moved", true), ("$HOME/moved.git", false)] {
            let script = format!(
                "mv .git \"{to}\" && {HOOK} > \"{to}/hooks/pre-commit\" && \
                 chmod +x \"{to}/hooks/pre-commit\" && echo \"gitdir: {to}\" > .git && echo planted"
            );
            let err = c.planted(&c.session(&script));
            std::fs::write(c.ws.join("b.txt"), "b\n").unwrap();
            c.who.own(&c.base);
            let _ = c.git(&c.ws, &["add", "b.txt"]);
            let _ = c.git(&c.ws, &["commit", "-qm", "b"]);
            c.assert_nothing_ran("git commit", &err);
            let dotgit = std::fs::symlink_metadata(c.ws.join(".git"));
            if comes_back {
                assert!(
                    dotgit.is_ok_and(|m| m.is_dir()),
                    "[{}] the git dir did not come back: {err}",
                    c.label()
                );
            } else {
                assert!(dotgit.is_err(), "[{}] {err}", c.label());
                assert!(
                    err.contains("the recorded git dir is gone"),
                    "[{}] {err}",
                    c.label()
                );
            }
        }
    });
}

/// Item 5: a repository nested below the top level (`W/vendor/lib`).
#[test]
fn a_nested_repository_is_handed_back() {
    each_case("nested", |c| {
        c.repo(&c.ws);
        let lib = c.ws.join("vendor/lib");
        c.repo(&lib);
        let script = format!(
            "{HOOK} > vendor/lib/.git/hooks/pre-commit && chmod +x vendor/lib/.git/hooks/pre-commit && echo planted"
        );
        let err = c.planted(&c.session(&script));
        std::fs::write(lib.join("b.txt"), "b\n").unwrap();
        c.who.own(&c.base);
        let _ = c.git(&lib, &["add", "b.txt"]);
        let _ = c.git(&lib, &["commit", "-qm", "b"]);
        c.assert_nothing_ran("git commit in W/vendor/lib", &err);
    });
}

/// Item 7: a `.pyc` in `__pycache__` whose header matches the unchanged `util.py` runs the
/// session's code at the operator's next `python3 app.py`; `git status` shows nothing.
#[test]
fn an_executable_cache_the_session_wrote_is_removed() {
    each_case("pyc", |c| {
        c.repo(&c.ws);
        std::fs::write(c.ws.join(".gitignore"), "__pycache__/\n").unwrap();
        std::fs::write(c.ws.join("util.py"), "X = 1\n").unwrap();
        std::fs::write(c.ws.join("app.py"), "import util\nprint(util.X)\n").unwrap();
        c.who.own(&c.base);
        let plant = "import importlib.util, importlib._bootstrap_external as b, os\n\
                     st = os.stat('util.py')\n\
                     src = 'import os\\nopen(os.environ[\"MARK\"], \"w\").close()\\nX = 1\\n'\n\
                     code = compile(src, 'util.py', 'exec')\n\
                     p = importlib.util.cache_from_source('util.py')\n\
                     os.makedirs(os.path.dirname(p), exist_ok=True)\n\
                     open(p, 'wb').write(b._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))\n\
                     print('planted')\n";
        std::fs::write(c.base.join("plant.py"), plant).unwrap();
        c.who.own(&c.base);
        let script = format!("/usr/bin/python3 {}", c.base.join("plant.py").display());
        let err = c.planted(&c.session(&script));
        let status = c.git(&c.ws, &["status", "--porcelain"]);
        assert!(
            String::from_utf8_lossy(&status.stdout).trim().is_empty()
                || !String::from_utf8_lossy(&status.stdout).contains("pycache"),
            "[{}]",
            c.label()
        );
        let out = c
            .as_operator("/usr/bin/python3", &c.ws)
            .env("MARK", c.marker())
            .arg("app.py")
            .output()
            .unwrap();
        assert!(out.status.success(), "[{}] {:?}", c.label(), out);
        c.assert_nothing_ran("python3 app.py", &err);
    });
}

/// Two sessions in one repository: the second waits for the first's hand-back, so it never
/// records what the first planted as the operator's (and restores it after the first's
/// hand-back, as it did).
#[test]
fn two_sessions_in_one_repository_never_restore_each_others_quarantine() {
    each_case("two", |c| {
        c.repo(&c.ws);
        // In the workspace, the one place a session shares with the operator (its `HOME` is
        // a layer of its own: what it writes there is not seen outside, nor what the test
        // writes into the real home after the session looked).
        let (ready, go, b_started, done) = (
            c.ws.join("a-ready"),
            c.ws.join("go"),
            c.ws.join("b-started"),
            c.ws.join("b-done"),
        );
        let a = format!(
            "{HOOK} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && touch '{ready}' && \
             while [ ! -e '{go}' ]; do sleep 0.05; done; echo planted",
            ready = ready.display(),
            go = go.display()
        );
        c.who.own(&c.base);
        let first = c
            .session_command(&a)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&ready, 200);
        let b = format!(
            "touch '{started}'; while [ ! -e '{done}' ]; do sleep 0.05; done; echo planted",
            started = b_started.display(),
            done = done.display()
        );
        let second = c
            .session_command(&b)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Before the fix the second session starts at once, recording the planted hook.
        wait_for(&b_started, 40);
        std::fs::write(&go, "").unwrap();
        let first_out = first.wait_with_output().unwrap();
        std::fs::write(&done, "").unwrap();
        let second_out = second.wait_with_output().unwrap();
        let err = format!(
            "{}\n{}",
            String::from_utf8_lossy(&first_out.stderr),
            String::from_utf8_lossy(&second_out.stderr)
        );
        std::fs::write(c.ws.join("b.txt"), "b\n").unwrap();
        c.who.own(&c.base);
        let _ = c.git(&c.ws, &["add", "b.txt"]);
        let _ = c.git(&c.ws, &["commit", "-qm", "b"]);
        c.assert_nothing_ran("git commit after two sessions", &err);
    });
}

/// Polls for `p` (at most `tenths` tenths of a second): a file another process makes.
fn wait_for(p: &Path, tenths: u32) {
    for _ in 0..tenths {
        if p.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A link the session puts in place of a checkout leads the hand-back nowhere: the
/// operator's repository it names, outside the workspace, is left byte for byte as it was
/// (its hooks are the operator's own), and nothing of the session runs.
#[test]
fn the_hand_back_never_follows_a_link_in_place_of_a_checkout() {
    each_case("link", |c| {
        c.repo(&c.ws);
        let lib = c.ws.join("lib");
        c.repo(&lib);
        let other = c.base.join("other");
        c.repo(&other);
        let own_hook = other.join(".git/hooks/post-commit");
        std::fs::write(&own_hook, "#!/bin/sh\n: the operator's own\n").unwrap();
        c.who.own(&c.base);
        let script = format!(
            "rm -rf lib && ln -s '{}' lib && echo planted",
            other.display()
        );
        let err = c.planted(&c.session(&script));
        assert_eq!(
            std::fs::read_to_string(&own_hook).unwrap(),
            "#!/bin/sh\n: the operator's own\n",
            "[{}] {err}",
            c.label()
        );
        assert!(
            !err.contains("post-commit"),
            "[{}] the hand-back read the operator's other repository as the session's: {err}",
            c.label()
        );
        assert!(
            !other.join(".git/execguard-quarantine").exists(),
            "[{}] the hand-back wrote in the operator's other repository: {err}",
            c.label()
        );
    });
}

/// `execguard audit` shows each file the hand-back quarantined, and where it went.
#[test]
fn execguard_audit_shows_each_quarantine() {
    each_case("audit", |c| {
        c.repo(&c.ws);
        let log = c.home.join("audit.jsonl");
        let script = format!(
            "{HOOK} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo planted"
        );
        c.who.own(&c.base);
        let mut with_log = c.session_command_with(&["--audit".as_ref(), log.as_os_str()], &script);
        let err = c.planted(&with_log.output().unwrap());
        let out = Command::new(env!("CARGO_BIN_EXE_execguard"))
            .arg("audit")
            .arg(&log)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let hook = c.ws.join(".git/hooks/pre-commit");
        assert!(
            text.contains("quarantined by the hand-back:")
                && text.contains(&format!("{} -> ", hook.display())),
            "[{}] {text}\nsession: {err}",
            c.label()
        );
    });
}

/// Item 6 of the hand-back's rest: every repository the session could write anywhere in its
/// write set, not only the workspace's: one under a `--share` path, one in a shared `/tmp`,
/// and the bare repository the shared one pushes to (a local URL in its config). The session
/// plants a hook in each; the operator's commit in each and push to the bare one run none. The
/// control: the operator's own hook in the shared repository, there before the session, runs.
#[test]
fn a_repository_anywhere_in_the_write_set_is_handed_back() {
    each_case("write-set", |c| {
        let shared = c.home.join(".shared");
        let shared_repo = shared.join("repo");
        c.repo(&shared_repo);
        let tmp = PathBuf::from(format!(
            "/tmp/execguard-handback-{}-{}-{}",
            c.who.uid(),
            c.profile,
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&tmp);
        let tmp_repo = tmp.join("repo");
        std::fs::create_dir_all(&tmp_repo).unwrap();
        c.who.own(&tmp);
        c.repo(&tmp_repo);
        let up = tmp.join("up.git");
        std::fs::create_dir_all(&up).unwrap();
        c.who.own(&tmp);
        c.git_ok(&up, &["init", "-q", "--bare"]);
        c.git_ok(&shared_repo, &["remote", "add", "up", up.to_str().unwrap()]);
        let own = c.base.join("operators-hook-ran");
        let own_hook = shared_repo.join(".git/hooks/post-commit");
        std::fs::write(&own_hook, format!("#!/bin/sh\ntouch {}\n", own.display())).unwrap();
        std::fs::set_permissions(
            &own_hook,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        c.who.own(&c.base);
        c.who.own(&tmp);
        let plant = |hook: &Path| format!("{HOOK} > {h} && chmod +x {h}", h = hook.display());
        let script = format!(
            "{} && {} && {} && echo planted",
            plant(&shared_repo.join(".git/hooks/pre-commit")),
            plant(&tmp_repo.join(".git/hooks/pre-commit")),
            plant(&up.join("hooks/pre-receive")),
        );
        let out = c
            .session_command_with(
                &[
                    "--share".as_ref(),
                    shared.as_os_str(),
                    "--allow-shared-temp".as_ref(),
                ],
                &script,
            )
            .output()
            .unwrap();
        let err = c.planted(&out);
        for hook in [
            shared_repo.join(".git/hooks/pre-commit"),
            tmp_repo.join(".git/hooks/pre-commit"),
            up.join("hooks/pre-receive"),
        ] {
            assert!(
                err.contains(hook.to_str().unwrap()),
                "[{}] {} not quarantined: {err}",
                c.label(),
                hook.display()
            );
        }
        c.git_ok(
            &shared_repo,
            &["commit", "-q", "--allow-empty", "-m", "two"],
        );
        c.git_ok(&tmp_repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
        let _ = c.git(&shared_repo, &["push", "-q", "up", "main"]);
        c.assert_nothing_ran("git commit and git push outside the workspace", &err);
        assert!(
            own.exists(),
            "[{}] the operator's own hook did not run",
            c.label()
        );
        let _ = std::fs::remove_dir_all(&tmp);
    });
}

/// A lasting root that holds the workspace (a shared `$HOME`, `--allow-shared-home`, with the
/// workspace inside it): the repositories the session could write there are handed back too,
/// and the workspace is walked once (a second walk would take its repositories' locks again
/// and wait for itself). The session plants a hook in a repository of `$HOME` beside the
/// workspace and one in the workspace's; the operator's commit in each runs neither.
#[test]
fn a_repository_in_a_shared_home_that_holds_the_workspace_is_handed_back() {
    each_case("shared-home", |c| {
        let ws = c.home.join("proj");
        let dots = c.home.join("dots");
        c.repo(&ws);
        c.repo(&dots);
        let plant = |hook: &Path| format!("{HOOK} > {h} && chmod +x {h}", h = hook.display());
        let (in_home, in_ws) = (
            dots.join(".git/hooks/pre-commit"),
            ws.join(".git/hooks/pre-commit"),
        );
        let script = format!("{} && {} && echo planted", plant(&in_home), plant(&in_ws));
        c.who.own(&c.base);
        let out = c
            .session_in(&ws, &["--allow-shared-home".as_ref()], &script)
            .output()
            .unwrap();
        let err = c.planted(&out);
        for hook in [&in_home, &in_ws] {
            assert_eq!(
                err.matches(hook.to_str().unwrap()).count(),
                1,
                "[{}] {} not handed back once: {err}",
                c.label(),
                hook.display()
            );
        }
        for repo in [&dots, &ws] {
            c.git_ok(repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
        }
        c.assert_nothing_ran("git commit in $HOME and in the workspace", &err);
    });
}

/// The Python extension suffix of this machine's `python3` (`.cpython-311-x86_64-linux-gnu.so`).
fn extension_suffix() -> String {
    let out = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import importlib.machinery as m; print(m.EXTENSION_SUFFIXES[0])",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A shared object that writes `mark` when the loader maps it (its constructor), built with
/// `cc` outside the session: the wheel's `.so` the session "downloads".
fn marking_shared_object(c: &Case, mark: &Path) -> PathBuf {
    let src = c.base.join("payload.c");
    std::fs::write(
        &src,
        format!(
            "#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void m(void) {{ close(open(\"{}\", O_CREAT | O_WRONLY, 0644)); }}\n",
            mark.display()
        ),
    )
    .unwrap();
    let so = c.base.join("payload.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "cc");
    c.who.own(&c.base);
    so
}

/// The open attacker finding of issue 29: native code the session downloads or builds into
/// the workspace (an ELF program in `target/debug`, a wheel's `.so` in a venv) runs or is
/// loaded at the operator's next ordinary command outside any session. After the session the
/// operator's `./target/debug/app` gets "Permission denied" and `python3 -c 'import orjson'`
/// loads nothing of it; the notice says so. The next session in the same workspace finds both
/// as they were (development runs them), and after it they are off again.
#[test]
fn native_files_the_session_left_do_not_run_outside_and_come_back_for_the_next_session() {
    each_case("native", |c| {
        std::fs::create_dir_all(&c.ws).unwrap();
        let payload = marking_shared_object(c, &c.marker());
        let so = format!("venv/lib/orjson{}", extension_suffix());
        let script = format!(
            "mkdir -p target/debug venv/lib && cp /usr/bin/touch target/debug/app && \
             cp '{}' '{so}' && echo planted",
            payload.display()
        );
        let err = c.planted(&c.session(&script));
        assert!(
            err.contains("native_left: 2 native file(s)") && err.contains("target/debug/app"),
            "[{}] no notice of the native files: {err}",
            c.label()
        );
        let outside = |c: &Case| {
            c.assert_refused_outside("target/debug/app", &[c.marker().as_os_str()]);
            let _ = c
                .as_operator("/usr/bin/python3", &c.ws)
                .args([
                    "-c",
                    "import sys; sys.path.insert(0, 'venv/lib'); import orjson",
                ])
                .output()
                .unwrap();
        };
        outside(c);
        c.assert_nothing_ran("./target/debug/app or python3 -c 'import orjson'", &err);
        // Each one is in the kept audit, listed by `execguard audit`.
        let audit = c
            .as_operator(env!("CARGO_BIN_EXE_execguard"), &c.ws)
            .arg("audit")
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&audit.stdout);
        assert!(
            listed.contains("native files made not to run outside a session:")
                && listed.contains(&format!("  {}", c.ws.join("target/debug/app").display())),
            "[{}] {listed}{}",
            c.label(),
            String::from_utf8_lossy(&audit.stderr)
        );
        // The next session in this workspace: both as they were; development runs them.
        let ran = c.ws.join("ran-inside");
        let again = format!(
            // `stat`, not `test -x`: strict's guard answers `access(X_OK)` for native code
            // the session may not run.
            "[ $(stat -c %a target/debug/app) = 755 ] && test -f '{so}' && echo armed; \
             if [ {dev} = development ]; then ./target/debug/app '{ran}'; fi; echo planted",
            dev = c.profile,
            ran = ran.display()
        );
        // Not `c.session`: its `chown -R` would change every file's status change time, as
        // any change by the operator does, and a changed file is not put back.
        let out = c.session_command(&again).output().unwrap();
        let err2 = c.planted(&out);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("armed"),
            "[{}] the next session did not find its native files as they were: {err2}",
            c.label()
        );
        if c.profile == "development" {
            assert!(ran.exists(), "[{}] {err2}", c.label());
        }
        outside(c);
        c.assert_nothing_ran("the operator's command after the second session", &err2);
    });
}

/// Development's build loop across sessions: `cargo build` of a crate with a `build.rs` in one
/// session, then in the next `cargo build` is fresh (nothing compiled again: the build
/// script's and the program's execute bits came back) and the program runs; outside, after
/// each session, the program is "Permission denied".
#[test]
fn a_cargo_build_with_build_rs_stays_fresh_across_development_sessions() {
    for who in identities() {
        let c = Case::new(who, "cargo", "development");
        std::fs::create_dir_all(c.ws.join("src")).unwrap();
        for (name, text) in support::CARGO_WITH_BUILD_RS {
            std::fs::write(c.ws.join(name), text).unwrap();
        }
        // No file written into the package: cargo would see the package changed and build again.
        let build = "/usr/bin/cargo build --offline && ./target/debug/bs && echo planted";
        let first = c.session(build);
        let err = c.planted(&first);
        assert!(err.contains("Compiling bs"), "[{}] {err}", c.label());
        c.assert_refused_outside("target/debug/bs", &[]);
        // Not `c.session`: its `chown -R` changes every file (see above).
        let second = c.session_command(build).output().unwrap();
        let err2 = c.planted(&second);
        assert!(
            !err2.contains("Compiling bs"),
            "[{}] the second session built again: {err2}",
            c.label()
        );
        assert!(
            String::from_utf8_lossy(&second.stdout).contains("built by build.rs"),
            "[{}] {err2}",
            c.label()
        );
        // The same with the workspace in the home (the usual place), which the session's
        // home layer covers while the workspace stays real: its files come back too.
        let in_home = c.home.join("proj");
        std::fs::create_dir_all(in_home.join("src")).unwrap();
        for (name, text) in support::CARGO_WITH_BUILD_RS {
            std::fs::write(in_home.join(name), text).unwrap();
        }
        c.who.own(&c.base);
        let first = c.session_in(&in_home, &[], build).output().unwrap();
        assert!(
            c.planted(&first).contains("Compiling bs"),
            "[{}]",
            c.label()
        );
        let second = c.session_in(&in_home, &[], build).output().unwrap();
        let err2 = c.planted(&second);
        assert!(
            !err2.contains("Compiling bs")
                && String::from_utf8_lossy(&second.stdout).contains("built by build.rs"),
            "[{}] in the home: the second session did not find its build: {err2}",
            c.label()
        );
    }
}
