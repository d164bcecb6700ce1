//! Ordinary work under `execguard run`, as root and as a non-root user: the half of the promise
//! that says nothing breaks. Each workflow is a shell script a developer (or an agent) would
//! run, started the way a user starts a session (`execguard run --workspace W -- sh -c ...`),
//! with no network. Native code the session builds in the workspace is the one thing that must
//! not run in the strict profile, and must in development.
//!
//! Needs git, node with npm, python3 with venv, make and cc (the CI script installs them).

use execguard_testkit::{identities, Identity};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXECGUARD: &str = env!("CARGO_BIN_EXE_execguard");
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

struct Session {
    who: Identity,
    ws: PathBuf,
    home: PathBuf,
    /// Workflows that failed; every workflow runs, and dropping the session reports them all.
    failures: std::cell::RefCell<Vec<String>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        let failures = self.failures.borrow();
        if !failures.is_empty() && !std::thread::panicking() {
            panic!(
                "{} of the workflows failed:\n{}",
                failures.len(),
                failures.join("\n")
            );
        }
    }
}

impl Session {
    fn new(who: Identity, name: &str) -> Session {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("workflows")
            .join(format!("{name}-{}-{}", who.uid(), std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (ws, home) = (base.join("ws"), base.join("home"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        who.own(&base);
        Session {
            who,
            ws: ws.canonicalize().unwrap(),
            home: home.canonicalize().unwrap(),
            failures: Default::default(),
        }
    }

    /// `execguard run [extra] --workspace WS -- sh -c SCRIPT` in the workspace.
    fn run(&self, extra: &[&str], script: &str) -> Output {
        let mut cmd = Command::new(EXECGUARD);
        cmd.arg("run")
            .args(extra)
            .arg("--workspace")
            .arg(&self.ws)
            .args(["--", "/bin/sh", "-c", script])
            .current_dir(&self.ws)
            .env_clear()
            .env("PATH", PATH)
            .env("LANG", "C")
            .env("GIT_AUTHOR_NAME", "Dev")
            .env("GIT_AUTHOR_EMAIL", "dev@example.com")
            .env("GIT_COMMITTER_NAME", "Dev")
            .env("GIT_COMMITTER_EMAIL", "dev@example.com")
            .env("npm_config_update_notifier", "false")
            .stdin(std::process::Stdio::null());
        self.who.apply(&mut cmd);
        // After apply: the session's home is the fixture's, for root as for the user.
        cmd.env("HOME", &self.home);
        cmd.output().unwrap()
    }

    /// Runs `script` in a fresh directory of the workspace and requires success.
    fn ok(&self, name: &str, script: &str) {
        let dir: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let out = self.run(&[], &format!("mkdir {dir} && cd {dir} && {script}"));
        if !out.status.success() {
            self.failures.borrow_mut().push(format!(
                "{} — workflow {name} failed ({}):\n--- script\n{script}\n--- stdout\n{}\n--- stderr\n{}",
                self.who.label(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.ws.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        self.who.own(&self.ws);
    }
}

fn tool(path: &str) {
    assert!(
        Path::new(path).exists(),
        "{path} is missing: these workflows need it"
    );
}

const GIT_SETUP: &str =
    "git init -q -b main repo && cd repo && echo one > a && git add a && git commit -qm one";

#[test]
fn shell_and_scripts() {
    for who in identities() {
        let s = Session::new(who, "shell");
        s.write("build.sh", "#!/bin/sh\necho built > out.txt\n");
        s.ok(
            "shell",
            "cd .. && chmod +x build.sh && ./build.sh && grep -q built out.txt && sh build.sh && \
             mkdir -p d/e && mv out.txt d/e/ && ln -s d/e/out.txt link && cat link >/dev/null && \
             ln d/e/out.txt hard && tar cf t.tar d hard && mkdir x && tar xf t.tar -C x && \
             ls x/d/e/out.txt && echo tty-ok >/dev/null",
        );
    }
}

#[test]
fn git_everyday() {
    tool("/usr/bin/git");
    for who in identities() {
        let s = Session::new(who, "git");
        s.ok("git basics", &format!(
            "{GIT_SETUP} && git status --short && git log --oneline && git checkout -qb topic && \
             echo two >> a && git commit -qam two && git checkout -q main && git merge -q topic && \
             git diff HEAD~1 --stat && git branch -d topic && git tag v1 && git show --stat v1 >/dev/null"));
        s.ok("git stash", &format!(
            "{GIT_SETUP} && echo dirty >> a && git stash -q && git diff --quiet && git stash pop -q && \
             grep -q dirty a && git stash list"));
        s.ok(
            "git mv and rename",
            &format!(
            "{GIT_SETUP} && mkdir sub && git mv a sub/a && git commit -qm moved && test -f sub/a"),
        );
        s.ok(
            "git worktree",
            &format!(
            "{GIT_SETUP} && git worktree add -q ../wt -b wtbranch && cd ../wt && echo w > w && \
             git add w && git commit -qm w && cd ../repo && git worktree list && \
             git worktree remove ../wt"),
        );
        s.ok("git rebase with a conflict", &format!(
            "{GIT_SETUP} && git checkout -qb side && echo side > a && git commit -qam side && \
             git checkout -q main && echo main > a && git commit -qam main && git checkout -q side && \
             ! git rebase main >/dev/null 2>&1 && echo resolved > a && git add a && \
             GIT_EDITOR=true git rebase --continue && git log --oneline | grep -q side"));
        s.ok(
            "git clone and push to a local repository",
            &format!(
                "{GIT_SETUP} && cd .. && git init -q --bare -b main origin.git && cd repo && \
             git remote add origin ../origin.git && git push -q origin main && cd .. && \
             git clone -q origin.git clone && cd clone && echo c >> a && git commit -qam c && \
             git push -q origin main && git -C ../origin.git log --oneline | grep -q ' c$'"
            ),
        );
        s.ok(
            "git submodule from a local path",
            &format!(
            "git init -q -b main lib && (cd lib && echo l > l && git add l && git commit -qm l) && \
             {GIT_SETUP} && git -c protocol.file.allow=always submodule add -q ../lib lib && \
             git commit -qm sub && git submodule status"),
        );
        s.ok(
            "git config --global",
            "git config --global user.name 'Global Dev' && git config --global init.defaultBranch trunk && \
             git init -q fresh && cd fresh && git config user.name | grep -q 'Global Dev' && \
             git symbolic-ref HEAD | grep -q trunk",
        );
        s.ok("git hooks run", &format!(
            "{GIT_SETUP} && printf '#!/bin/sh\\ntouch ../hook-ran\\n' > .git/hooks/pre-commit && \
             chmod +x .git/hooks/pre-commit && echo h >> a && git commit -qam h && test -f ../hook-ran"));
    }
}

#[test]
fn node_and_npm_with_install_scripts() {
    tool("/usr/bin/node");
    tool("/usr/bin/npm");
    for who in identities() {
        let s = Session::new(who, "npm");
        s.write(
            "localpkg/package.json",
            r#"{"name":"localpkg","version":"1.0.0","bin":{"localpkg-hello":"bin/hello.js"},"scripts":{"postinstall":"node -e \"require('fs').writeFileSync('postinstall-ran','1')\""}}"#,
        );
        s.write(
            "localpkg/bin/hello.js",
            "#!/usr/bin/env node\nconsole.log('hello from bin')\n",
        );
        s.write("app/index.js", "console.log(require('os').platform())\n");
        s.ok(
            "node and npm",
            "cd .. && node app/index.js && node -e 'console.log(1+1)' && chmod +x localpkg/bin/hello.js && \
             cd localpkg && npm pack --silent >/dev/null && cd ../app && npm init -y >/dev/null && \
             npm install --offline --no-audit --no-fund ../localpkg/localpkg-1.0.0.tgz && \
             test -f node_modules/localpkg/postinstall-ran && npx --offline localpkg-hello && \
             npm pkg set scripts.greet=localpkg-hello && npm run -s greet",
        );
    }
}

#[test]
fn python_venv_and_pip() {
    tool("/usr/bin/python3");
    for who in identities() {
        let s = Session::new(who, "python");
        s.write(
            "proj/setup.py",
            "from setuptools import setup\nsetup(name='hello', version='1.0', py_modules=['hello'], \
             entry_points={'console_scripts': ['hello=hello:main']})\n",
        );
        s.write(
            "proj/hello.py",
            "def main():\n    print('hello from python')\n",
        );
        s.ok(
            "venv and pip",
            "cd .. && /usr/bin/python3 -m venv venv && venv/bin/python -c 'import sys; print(sys.prefix)' && \
             venv/bin/pip --version && \
             venv/bin/pip install -q --no-index --no-build-isolation ./proj && venv/bin/hello && \
             . venv/bin/activate && hello && python -m pip list >/dev/null",
        );
    }
}

#[test]
fn make_builds_but_strict_refuses_the_built_program() {
    tool("/usr/bin/make");
    tool("/usr/bin/cc");
    for who in identities() {
        let s = Session::new(who, "make");
        s.write(
            "hello.c",
            "#include <stdio.h>\nint main(void){puts(\"hi\");return 0;}\n",
        );
        s.write(
            "Makefile",
            "all: hello gen.txt\nhello: hello.c\n\tcc -o hello hello.c\ngen.txt:\n\tsh -c 'echo gen > gen.txt'\n",
        );
        s.ok(
            "make",
            "cd .. && make -s && test -f gen.txt && test -f hello",
        );
        let out = s.run(&[], "./hello; echo rc=$?");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout.contains("rc=126")
                && !stdout.contains("hi\n")
                && stderr.contains("mutable_native"),
            "{}: strict ran a program built in the workspace\n{stdout}\n{stderr}",
            s.who.label()
        );
        let out = s.run(&["--profile", "development"], "./hello");
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("hi"),
            "{}: development refused a program built in the workspace\n{}",
            s.who.label(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
