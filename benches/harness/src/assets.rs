//! Everything the harness builds or generates before measuring: the small C
//! programs that are measured, the two floor libraries, the C project for
//! `make -j2` and the git repository for the git loop.

use crate::run::setup;
use std::path::{Path, PathBuf};
use std::process::Command;

const DRIVER_C: &str = include_str!("c/driver.c");
const CHAIN_C: &str = include_str!("c/chain.c");
const SLEEPER_C: &str = include_str!("c/sleeper.c");
pub const SPAWN_JS: &str = include_str!("c/spawn.js");
const FLOOR_C: &str = include_str!("../../floor/empty.c");
const FLOOR_RS: &str = include_str!("../../floor/src/lib.rs");

pub struct Helpers {
    pub driver: PathBuf,
    pub chain: PathBuf,
    pub sleeper: PathBuf,
    pub spawn_js: PathBuf,
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))
}

fn cc(src: &Path, out: &Path, extra: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new("cc");
    cmd.args(extra).arg("-O2").arg("-o").arg(out).arg(src);
    cmd.env_remove("LD_PRELOAD");
    setup(&mut cmd).map(|_| ())
}

/// Compiles the measured programs with `cc` (dynamically linked, like /bin/true,
/// so the preload is loaded into them and interposes their libc calls).
pub fn build_helpers(src_dir: &Path, bin_dir: &Path) -> Result<Helpers, String> {
    for (name, text) in [
        ("driver.c", DRIVER_C),
        ("chain.c", CHAIN_C),
        ("sleeper.c", SLEEPER_C),
        ("spawn.js", SPAWN_JS),
    ] {
        write(&src_dir.join(name), text)?;
    }
    let h = Helpers {
        driver: bin_dir.join("eg-bench-driver"),
        chain: bin_dir.join("eg-bench-chain"),
        sleeper: bin_dir.join("eg-bench-sleeper"),
        spawn_js: src_dir.join("spawn.js"),
    };
    cc(&src_dir.join("driver.c"), &h.driver, &[])?;
    cc(&src_dir.join("chain.c"), &h.chain, &[])?;
    cc(&src_dir.join("sleeper.c"), &h.sleeper, &[])?;
    Ok(h)
}

/// The C floor: an empty shared library built with the compiler's defaults.
pub fn build_floor_c(src_dir: &Path, lib_dir: &Path) -> Result<PathBuf, String> {
    let src = src_dir.join("empty.c");
    write(&src, FLOOR_C)?;
    let out = lib_dir.join("libfloor_c.so");
    cc(&src, &out, &["-shared", "-fPIC"])?;
    Ok(out)
}

/// The Rust floor: an empty `#![no_std]` cdylib, built by `rustc` directly with
/// the flags of the workspace release profile.
pub fn build_floor_rust(src_dir: &Path, lib_dir: &Path) -> Result<PathBuf, String> {
    let src = src_dir.join("floor_rust.rs");
    write(&src, FLOOR_RS)?;
    let out = lib_dir.join("libfloor_rust.so");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--edition",
        "2021",
        "--crate-type",
        "cdylib",
        "--crate-name",
        "floor_rust",
        "-C",
        "opt-level=3",
        "-C",
        "lto",
        "-C",
        "codegen-units=1",
        "-C",
        "panic=abort",
        "-o",
    ])
    .arg(&out)
    .arg(&src);
    cmd.env_remove("LD_PRELOAD");
    setup(&mut cmd)?;
    Ok(out)
}

/// A small C project: `files` translation units and a main, with a Makefile
/// whose rules the compiler driver turns into several execs per file (cc,
/// cc1, as, and collect2/ld for the link).
pub fn generate_c_project(dir: &Path, files: usize) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let mut main = String::from("#include <stdio.h>\n");
    for i in 0..files {
        main.push_str(&format!("int f{i}(int);\n"));
        write(
            &dir.join(format!("f{i}.c")),
            &format!(
                "#include <string.h>\n\
                 static const char tag[] = \"unit {i}\";\n\
                 int f{i}(int x) {{\n\
                 \tint acc = (int)strlen(tag);\n\
                 \tfor (int k = 0; k < {m}; k++) acc = acc * 31 + x + k;\n\
                 \treturn acc;\n}}\n",
                m = i % 7 + 1
            ),
        )?;
    }
    main.push_str("int main(void) {\n\tint acc = 0;\n");
    for i in 0..files {
        main.push_str(&format!("\tacc += f{i}(acc);\n"));
    }
    main.push_str("\tprintf(\"%d\\n\", acc);\n\treturn 0;\n}\n");
    write(&dir.join("main.c"), &main)?;
    write(
        &dir.join("Makefile"),
        "CC = cc\nCFLAGS = -O1\nOBJS = $(patsubst %.c,%.o,$(sort $(wildcard *.c)))\n\n\
         app: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\n\
         %.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n",
    )
}

/// A git repository with a few files and commits, built with the plain git.
pub fn generate_git_repo(dir: &Path, git: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let run = |args: &[&str]| -> Result<String, String> {
        let mut cmd = Command::new(git);
        cmd.args(args).current_dir(dir);
        git_env(&mut cmd);
        cmd.env_remove("LD_PRELOAD");
        setup(&mut cmd)
    };
    run(&["init", "-q"])?;
    for c in 0..8 {
        for f in 0..12 {
            write(
                &dir.join(format!("file{f}.txt")),
                &format!("file {f}, revision {c}\n").repeat(20 + f),
            )?;
        }
        run(&["add", "-A"])?;
        run(&["commit", "-q", "-m", &format!("revision {c}")])?;
    }
    // One untracked and one modified file, so `git status` has something to say.
    write(&dir.join("untracked.txt"), "new\n")?;
    write(&dir.join("file0.txt"), "modified\n")?;
    Ok(())
}

/// Fixed identity and no pager or global config, so every variant runs git alike.
pub fn git_env(cmd: &mut Command) {
    cmd.env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat");
}
