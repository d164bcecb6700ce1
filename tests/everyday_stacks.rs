//! The everyday stacks of issue 30, each a small project this test makes offline, in one
//! `execguard run` session per stack and profile, as root and as the non-root user:
//! under `development` each works; under `strict` each works or is refused with a line the
//! person sees that says the way forward (the guard's line, or the end-of-session summary
//! when a build tool swallowed its child's stderr). Go starts its test and run binaries with
//! its own system calls, which no guard sees: a strict session routes them through
//! `/usr/bin/env`, so they are refused with the guard's line too; under development they run
//! from the session's own temp dir, and a scratch program from the session's own `/tmp`.

mod support;

use execguard_testkit::{identities, in_ci, skip, Identity};
use std::path::Path;
use std::process::Output;
use support::text;

/// One stack: the files of its project, the command that builds and runs it, and what the
/// command prints when it worked.
struct Stack {
    name: &'static str,
    /// A program the stack needs (skipped loudly without it, never under CI).
    needs: &'static str,
    files: &'static [(&'static str, &'static str)],
    script: &'static str,
    works: &'static str,
}

const C_EXTENSION: &str = r#"#include <Python.h>
static PyObject *hi(PyObject *self, PyObject *args) { return PyUnicode_FromString("hi from C"); }
static PyMethodDef methods[] = {{"hi", hi, METH_NOARGS, ""}, {0}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hello", 0, -1, methods};
PyMODINIT_FUNC PyInit_hello(void) { return PyModule_Create(&module); }
"#;

const CONFIGURE: &str = r#"#!/bin/sh
# What autoconf's configure does: compile a test program and run it.
echo "checking whether the C compiler works..."
cat > conftest.c <<'EOF'
int main(void) { return 0; }
EOF
cc -o conftest conftest.c || { echo "configure: error: C compiler cannot create executables" >&2; exit 77; }
echo "checking whether we are cross compiling..."
if ./conftest 2>>config.log; then echo "no"; else echo "configure: error: cannot run C compiled programs" >&2; exit 1; fi
printf 'all:\n\t@echo configured\n' > Makefile
echo "configure: creating Makefile"
"#;

fn stacks() -> Vec<Stack> {
    vec![
        Stack {
            name: "c-extension",
            needs: "/usr/bin/python3-config",
            files: &[("hello.c", C_EXTENSION)],
            script: "cc -shared -fPIC $(/usr/bin/python3-config --includes) hello.c -o hello$(/usr/bin/python3-config --extension-suffix) && /usr/bin/python3 -c 'import hello; print(hello.hi())'",
            works: "hi from C",
        },
        Stack {
            name: "venv-compiled-module",
            needs: "/usr/bin/python3-config",
            files: &[("hello.c", C_EXTENSION)],
            // A compiled module in a virtualenv's site-packages, as a wheel such as orjson
            // leaves it.
            script: "/usr/bin/python3 -m venv venv && site=$(venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])') && cc -shared -fPIC $(/usr/bin/python3-config --includes) hello.c -o $site/hello$(/usr/bin/python3-config --extension-suffix) && venv/bin/python -c 'import hello; print(hello.hi())'",
            works: "hi from C",
        },
        Stack {
            name: "npm-native-bin",
            needs: "/usr/bin/npm",
            files: &[(
                "package.json",
                "{\"name\":\"app\",\"version\":\"1.0.0\",\"scripts\":{\"build\":\"esbuild native tool ran\"}}\n",
            )],
            // A native binary in node_modules/.bin, as esbuild's package installs it.
            script: "mkdir -p node_modules/.bin && cp /bin/echo node_modules/.bin/esbuild && npm run --silent build",
            works: "native tool ran",
        },
        Stack {
            name: "cargo-build-rs",
            needs: "/usr/bin/cargo",
            files: &support::CARGO_WITH_BUILD_RS,
            // Captured: cargo keeps the build script's and rustc's stderr to itself.
            script: "/usr/bin/cargo run --offline -q 2>cargo.err || { cat cargo.err | sed s/^/cargo.err:/ >&2; exit 1; }",
            works: "built by build.rs",
        },
        Stack {
            name: "go-build",
            needs: "/usr/bin/go",
            files: &[
                ("go.mod", "module example.com/hello\n\ngo 1.19\n"),
                (
                    "main.go",
                    "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n",
                ),
            ],
            // A project of its own repository: go build stamps its VCS status through git.
            script: "git init -q . && go build -o hello . && ./hello",
            works: "hello from go",
        },
        Stack {
            name: "go-test-run",
            needs: "/usr/bin/go",
            files: &[
                ("go.mod", "module example.com/hello\n\ngo 1.19\n"),
                (
                    "main.go",
                    "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n",
                ),
                (
                    "main_test.go",
                    "package main\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {}\n",
                ),
            ],
            // Both build in $TMPDIR and run what they built there.
            script: "git init -q . && go test . && go run .",
            works: "hello from go",
        },
        Stack {
            name: "go-install",
            needs: "/usr/bin/go",
            files: &[
                ("go.mod", "module example.com/hello\n\ngo 1.19\n"),
                (
                    "main.go",
                    "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n",
                ),
            ],
            // Into $HOME/go/bin, then run from there.
            script: "git init -q . && go install . && $HOME/go/bin/hello",
            works: "hello from go",
        },
        Stack {
            name: "cargo-install",
            needs: "/usr/bin/cargo",
            files: &[
                (
                    "Cargo.toml",
                    "[package]\nname = \"ci\"\nversion = \"0.1.0\"\nedition = \"2018\"\n\n[workspace]\n",
                ),
                ("src/main.rs", "fn main() { println!(\"installed tool ran\"); }\n"),
            ],
            // Into $HOME/.cargo/bin (a fresh home: no exec dir of the operator's there).
            script: "/usr/bin/cargo install --offline -q --path . 2>cargo.err || { sed s/^/cargo.err:/ cargo.err >&2; exit 1; }; $HOME/.cargo/bin/ci",
            works: "installed tool ran",
        },
        Stack {
            name: "scratch-in-tmp",
            needs: "/usr/bin/cc",
            files: &[(
                "scratch.c",
                "#include <stdio.h>\nint main(void) { puts(\"scratch ran\"); return 0; }\n",
            )],
            // The literal /tmp and /var/tmp, as a script that hard-codes them builds there: the
            // session's own (a fresh tmpfs each, gone with it), not $TMPDIR.
            script: "cc -o /tmp/scratch scratch.c && /tmp/scratch && cc -o /var/tmp/scratch scratch.c && /var/tmp/scratch",
            works: "scratch ran\nscratch ran",
        },
        Stack {
            name: "make-test",
            needs: "/usr/bin/make",
            files: &[
                (
                    "Makefile",
                    "test: prog\n\t./prog\nprog: prog.c\n\tcc -o prog prog.c\n",
                ),
                (
                    "prog.c",
                    "#include <stdio.h>\nint main(void) { puts(\"tests passed\"); return 0; }\n",
                ),
            ],
            script: "make -s test",
            works: "tests passed",
        },
        Stack {
            name: "tool-in-home",
            needs: "/bin/true",
            files: &[],
            script: "mkdir -p $HOME/.local/bin && cp /bin/true $HOME/.local/bin/mytool && $HOME/.local/bin/mytool && echo tool ran",
            works: "tool ran",
        },
        Stack {
            name: "configure",
            needs: "/usr/bin/cc",
            files: &[("configure", CONFIGURE)],
            script: "sh ./configure >configure.out && make -s",
            works: "configured",
        },
    ]
}

/// A scenario's directories (`support::Scene`) and the stacks' session in them.
struct Scene(support::Scene);

impl std::ops::Deref for Scene {
    type Target = support::Scene;
    fn deref(&self) -> &support::Scene {
        &self.0
    }
}

impl Scene {
    fn new(who: Identity, name: &str) -> Scene {
        Scene(support::Scene::new(who, &format!("stacks-{name}")))
    }

    fn make(&self, stack: &Stack) {
        for (rel, text) in stack.files {
            let p = self.ws.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        self.who.own(&self.base);
    }

    /// The session, with `/usr/local/bin` (go) and none of the caller's toolchain homes.
    fn run(&self, profile: &str, script: &str) -> Output {
        self.session(profile, script)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env_remove("CARGO_HOME")
            .env_remove("RUSTUP_HOME")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("GOPATH")
            .env_remove("GOCACHE")
            .output()
            .unwrap()
    }
}

/// Did the person see a refusal with its way forward: a refusal line ending in one, or the
/// session summary's row (` -- ` then the way forward)?
fn refused_with_a_way_forward(stderr: &str) -> bool {
    stderr.lines().any(|l| {
        (l.starts_with("execguard: denied ") || l.starts_with("execguard:   "))
            && l.rsplit_once(" -- ")
                .is_some_and(|(_, way)| !way.is_empty())
    })
}

fn available(stack: &Stack) -> bool {
    if Path::new(stack.needs).exists() {
        return true;
    }
    assert!(
        !in_ci(),
        "{} is needed by the {} stack",
        stack.needs,
        stack.name
    );
    skip(&format!(
        "the {} stack ({} is missing)",
        stack.name, stack.needs
    ));
    false
}

#[test]
fn development_runs_every_stack() {
    for who in identities() {
        for stack in stacks().iter().filter(|s| available(s)) {
            let sc = Scene::new(who, &format!("dev-{}", stack.name));
            sc.make(stack);
            let out = sc.run("development", stack.script);
            assert!(
                out.status.success() && text(&out.stdout).contains(stack.works),
                "{} under development as {}: status {:?}\nstdout: {}\nstderr: {}",
                stack.name,
                who.label(),
                out.status.code(),
                text(&out.stdout),
                text(&out.stderr)
            );
        }
    }
}

#[test]
fn strict_runs_each_stack_or_says_the_way_forward() {
    for who in identities() {
        for stack in stacks().iter().filter(|s| available(s)) {
            let sc = Scene::new(who, &format!("strict-{}", stack.name));
            sc.make(stack);
            let out = sc.run("strict", stack.script);
            let worked = out.status.success() && text(&out.stdout).contains(stack.works);
            let err = text(&out.stderr);
            assert!(
                worked || refused_with_a_way_forward(&err),
                "{} under strict as {}: neither worked nor said the way forward\nstdout: {}\nstderr: {err}",
                stack.name,
                who.label(),
                text(&out.stdout)
            );
            if !worked {
                assert!(
                    err.contains("--profile development"),
                    "{} as {}: {err}",
                    stack.name,
                    who.label()
                );
            }
        }
    }
}

#[test]
fn a_tool_installed_in_home_runs_in_that_workspaces_next_sessions_only() {
    for who in identities() {
        let sc = Scene::new(who, "home-tool");
        sc.who.own(&sc.base);
        let install = "mkdir -p $HOME/.local/bin && cp /bin/true $HOME/.local/bin/mytool";
        let out = sc.run("development", install);
        assert!(
            out.status.success(),
            "{}: {}",
            who.label(),
            text(&out.stderr)
        );
        // The next development session of this workspace runs it.
        let out = sc.run("development", "$HOME/.local/bin/mytool && echo ran");
        assert_eq!(
            text(&out.stdout),
            "ran\n",
            "{}: {}",
            who.label(),
            text(&out.stderr)
        );
        // strict refuses it, and says the way forward.
        let out = sc.run("strict", "$HOME/.local/bin/mytool; echo rc=$?");
        assert!(text(&out.stdout).contains("rc=126"), "{}", who.label());
        assert!(
            refused_with_a_way_forward(&text(&out.stderr)),
            "{}: {}",
            who.label(),
            text(&out.stderr)
        );
        // The operator's own home never got it.
        assert!(
            !sc.home.join(".local/bin/mytool").exists(),
            "{}: the install reached the operator's home",
            who.label()
        );
    }
}
