//! The W^X session, process level, as root and as a non-root user: `execguard run` seals every
//! session by default; a file the session writes never runs, whoever asks (a static caller's
//! raw execve, the loader, a memfd made through `syscall()`, a new user namespace); a
//! toolchain in `$HOME` on PATH runs and cannot be modified; ordinary file work is not broken;
//! and a kernel that cannot enforce it is a typed refusal.

mod support;

use execguard_testkit::{identities, Identity};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::{compile, copy, s, support_dir, target_tmp, tools};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The positive control of a test that sets `EXECGUARD_TEST_REDIRECT=STEP:DIR:TARGET`: the
/// hook fired, so `DIR` was moved aside (to `DIR-moved`) and a link put in its place. Without
/// it, a test of what the session does with the link proves nothing.
fn assert_redirected(dir: &Path, label: &str) {
    let moved = PathBuf::from(format!("{}-moved", s(dir)));
    assert!(
        moved.is_dir(),
        "[{label}] the redirect never fired: no {}",
        moved.display()
    );
    assert!(
        std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()),
        "[{label}] the redirect never put a link at {}",
        dir.display()
    );
}

/// The tests that prepare a mount (a tmpfs, in a private namespace) need root: without it,
/// says so loudly (`skip`) and returns false.
fn root_can_mount(what: &str) -> bool {
    let root = execguard_testkit::is_root();
    if !root {
        execguard_testkit::skip(what);
    }
    root
}

/// The static probe (no preload library ever sees it), in a non-mutable place.
fn wx_probe() -> PathBuf {
    compile(&support_dir(), "wx.c", "wx-static", &["-static"])
}

/// One identity's world: a home with `~/.local/bin` (a toolchain: `mytool`), a workspace, a
/// directory the user owns outside every root, and a world-writable one.
struct World {
    who: Identity,
    home: PathBuf,
    ws: PathBuf,
    owned: PathBuf,
    world: PathBuf,
    local_bin: PathBuf,
}

impl World {
    fn new(who: Identity, name: &str) -> World {
        let base =
            target_tmp()
                .join("wx")
                .join(format!("{name}-{}-{}", who.uid(), std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let home = base.join("home");
        let local_bin = home.join(".local/bin");
        let ws = base.join("ws");
        let owned = base.join("owned");
        let world = base.join("world");
        for d in [&local_bin, &ws, &owned, &world] {
            std::fs::create_dir_all(d).unwrap();
        }
        copy(&tools().argv, &local_bin.join("mytool"));
        who.own(&home);
        who.own(&ws);
        who.own(&owned);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&world, std::fs::Permissions::from_mode(0o1777)).unwrap();
        World {
            who,
            home,
            ws,
            owned,
            world,
            local_bin,
        }
    }

    /// `execguard run --workspace WS [extra] -- sh -c SCRIPT` as this identity, with this
    /// world's home and `~/.local/bin` first on PATH.
    fn session(&self, extra: &[&str], script: &str) -> Output {
        self.session_env(extra, &[], script)
    }

    /// Does a session of this workspace see `path` (in its home layer, say)?
    fn sees(&self, path: &Path) -> bool {
        let out = self.session(&[], &format!("test -e {} && echo SEEN", s(path)));
        text(&out.stdout).contains("SEEN")
    }

    /// Is `stderr` the report of a strict session, but for the home layer the kernel refuses a
    /// non-root user over a home with a mount beneath it (see [`World::session_after`])?
    fn strict_but_home(&self, stderr: &str) -> bool {
        stderr.contains("assurance: strict")
            || (!self.who.is_root() && stderr.contains("assurance: reduced:shared_home"))
    }

    /// [`World::session`] with these variables set too (the test hooks).
    fn session_env(&self, extra: &[&str], env: &[(&str, &str)], script: &str) -> Output {
        let mut c = Command::new(&tools().cli);
        self.who.apply(&mut c);
        c.arg("run")
            .arg("--workspace")
            .arg(&self.ws)
            .args(extra)
            .args(["--", "sh", "-c", script])
            .env("HOME", &self.home)
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", s(&self.local_bin)),
            )
            .envs(env.iter().copied())
            .current_dir(&self.ws)
            .stdin(Stdio::null());
        c.output().unwrap()
    }

    /// As root, in a private mount namespace: `setup` (shell, e.g. a mount), then
    /// `execguard run [extra] --workspace WS -- sh -c SCRIPT` as this identity, with this
    /// world's home. For what only root can prepare (mounts); callers skip without root.
    fn session_after(&self, setup: &str, extra: &str, script: &str) -> Output {
        let drop = match &self.who {
            Identity::Current => String::new(),
            who => format!(
                "setpriv --reuid={} --regid={} --clear-groups",
                who.uid(),
                who.gid()
            ),
        };
        // A non-root user gets no home layer over a home with a mount beneath it (the kernel
        // refuses an overlay those locked mounts would leave out: docs/session.md).
        let shared = if !self.who.is_root() && setup.contains(s(&self.home)) {
            "--allow-shared-home"
        } else {
            ""
        };
        let outer = format!(
            "{setup} && exec {drop} env HOME={home} XDG_RUNTIME_DIR={runtime} PATH=/usr/bin:/bin {cli} run {shared} {extra} --workspace {ws} -- sh -c \"$0\"",
            home = s(&self.home),
            runtime = s(&self.who.own_dirs().1),
            cli = s(&tools().cli),
            ws = s(&self.ws),
        );
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &outer, script])
            .current_dir(&self.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

/// Every way a written file could run, from every writable place: the session cannot write
/// outside the write set or into an exec dir, and nothing it writes inside runs.
#[test]
fn a_file_the_session_writes_never_runs_whoever_asks() {
    let wx = wx_probe();
    let payload = &tools().argv;
    for who in identities() {
        let w = World::new(who, "never-runs");
        let places = [
            ("home", w.home.clone(), true),
            ("workspace", w.ws.clone(), true),
            ("local_bin", w.local_bin.clone(), false),
            ("owned", w.owned.clone(), false),
            ("world_writable", w.world.clone(), false),
        ];
        let mut script = String::new();
        for (name, dir, _) in &places {
            let x = dir.join("x");
            script.push_str(&format!(
                "if cp {payload} {x} 2>/dev/null && chmod +x {x}; then echo '{name} WROTE'; else echo '{name} REFUSED'; fi\n",
                payload = s(payload),
                x = s(&x)
            ));
            for method in ["exec", "loader", "memfd", "userns"] {
                script.push_str(&format!(
                    "echo \"{name} {method} $({wx} {method} {x} 2>&1 | head -1)\"\n",
                    wx = s(&wx),
                    x = s(&x)
                ));
            }
        }
        let out = w.session(&[], &script);
        let stdout = text(&out.stdout);
        let label = who.label();
        for (name, _, writable) in &places {
            let want = if *writable { "WROTE" } else { "REFUSED" };
            assert!(
                stdout.contains(&format!("{name} {want}\n")),
                "[{label}] {name}: want {want}\n{stdout}\n{}",
                text(&out.stderr)
            );
        }
        for line in stdout.lines() {
            assert!(
                !line.contains("ARGV"),
                "[{label}] written code ran: {line}\n{stdout}"
            );
        }
        // Each way was tried and refused by the kernel, not missed: the exec and the
        // namespace with EPERM/EACCES, the loader unable to map, the memfd refused.
        assert!(
            stdout.contains("workspace exec FAILED execve 13"),
            "[{label}] {stdout}"
        );
        assert!(
            stdout.contains("home exec FAILED execve 13"),
            "[{label}] {stdout}"
        );
        assert!(
            stdout.contains("workspace loader") && stdout.contains("failed to map segment"),
            "[{label}] {stdout}"
        );
        assert!(
            stdout.contains("home memfd FAILED memfd_create 1"),
            "[{label}] {stdout}"
        );
        assert!(
            stdout.contains("home userns FAILED unshare 1"),
            "[{label}] {stdout}"
        );
    }
}

/// A toolchain in `$HOME` on PATH (`~/.local/bin`, discovered) still runs, and the session
/// cannot change it; the rest of `$HOME` stays writable (dotfiles, history, lock-and-rename).
#[test]
fn a_home_toolchain_runs_and_cannot_be_modified() {
    for who in identities() {
        let w = World::new(who, "toolchain");
        let tool = w.local_bin.join("mytool");
        let script = format!(
            "mytool a; \
             echo x >> {tool} 2>/dev/null && echo APPENDED; \
             rm -f {tool} 2>/dev/null; test -e {tool} && echo STILL_THERE; \
             cp /bin/true {bin}/new 2>/dev/null && echo ADDED; \
             mv ~/.local ~/.local.moved 2>/dev/null && echo MOVED_ASIDE; \
             echo 1 >> ~/.history && echo HISTORY_OK; \
             echo '[user]' > ~/.gitconfig.lock && mv ~/.gitconfig.lock ~/.gitconfig && echo DOTFILE_OK; \
             mkdir -p ~/.config/app && echo a > ~/.config/app/x && echo CONFIG_OK",
            tool = s(&tool),
            bin = s(&w.local_bin)
        );
        let out = w.session(&["-v"], &script);
        let stdout = text(&out.stdout);
        let label = who.label();
        assert!(
            stdout.starts_with("ARGV 2\n"),
            "[{label}] {stdout}\n{}",
            text(&out.stderr)
        );
        for must in ["STILL_THERE", "HISTORY_OK", "DOTFILE_OK", "CONFIG_OK"] {
            assert!(
                stdout.contains(must),
                "[{label}] {must}\n{stdout}\n{}",
                text(&out.stderr)
            );
        }
        for never in ["APPENDED", "ADDED", "MOVED_ASIDE"] {
            assert!(!stdout.contains(never), "[{label}] {never}\n{stdout}");
        }
        assert!(
            text(&out.stderr).contains(&format!("exec_dir {}", s(&w.local_bin))),
            "[{label}] the report names the exec dir\n{}",
            text(&out.stderr)
        );
        // Dropped with --no-exec-dir, the directory is written, and what is written never runs.
        let out = w.session(
            &["--no-exec-dir", s(&w.local_bin)],
            &format!(
                "cp /bin/true {bin}/new && echo ADDED; {bin}/new; echo rc=$?",
                bin = s(&w.local_bin)
            ),
        );
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("ADDED\nrc=126"),
            "[{label}] {stdout}\n{}",
            text(&out.stderr)
        );
    }
}

/// Ordinary file work under the default seal: renames and hard links across directories
/// (Landlock's REFER), git moving and pushing to a local repository, node's fs.rename, tar
/// with hard links, a python venv, make.
#[test]
fn ordinary_file_work_is_not_broken() {
    for who in identities() {
        let w = World::new(who, "ordinary");
        std::fs::write(
            w.ws.join("rename.js"),
            "const fs=require('fs');fs.mkdirSync('nd');fs.writeFileSync('nf','x');fs.renameSync('nf','nd/nf');console.log('NODE_OK')\n",
        )
        .unwrap();
        who.own(&w.ws);
        let script = "set -e\n\
            mkdir a b && echo x > a/f && mv a/f b/f && ln b/f a/hard && ln -s ../b/f a/sym && echo MV_LN_OK\n\
            tar cf t.tar a b && mkdir u && tar xf t.tar -C u && test -e u/a/hard && echo TAR_OK\n\
            git init -q r && cd r && echo a > f && git add f\n\
            printf '#!/bin/sh\\necho HOOK_RAN\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit\n\
            test -x .git/hooks/pre-commit && echo TEST_X_OK\n\
            echo data > plain && ! test -x plain && echo NOT_X_OK\n\
            git -c user.email=a@b -c user.name=n commit -qm one\n\
            mkdir sub && git mv f sub/f && git -c user.email=a@b -c user.name=n commit -qm two\n\
            git init -q --bare ../bare.git && git push -q ../bare.git HEAD:main && echo GIT_OK\n\
            cd .. && node rename.js\n\
            /usr/bin/python3 -c \"import os; os.makedirs('p/q'); open('p/f','w').close(); os.rename('p/f','p/q/f'); print('PY_OK')\"\n\
            /usr/bin/python3 -m venv --without-pip v && ./v/bin/python -c \"print('VENV_OK')\"\n\
            printf 'all:\\n\\t@echo MAKE_OK\\n' > Makefile && make -s\n";
        let out = w.session(&[], script);
        // git gives a hook's output to stderr.
        let stdout = text(&out.stdout) + &text(&out.stderr);
        let label = who.label();
        for must in [
            "MV_LN_OK",
            "TAR_OK",
            "TEST_X_OK",
            "NOT_X_OK",
            "HOOK_RAN",
            "GIT_OK",
            "NODE_OK",
            "PY_OK",
            "VENV_OK",
            "MAKE_OK",
        ] {
            assert!(
                stdout.contains(must),
                "[{label}] {must}\n{stdout}\n{}",
                text(&out.stderr)
            );
        }
    }
}

/// The session's seccomp filter, seen by a static caller: each refused call is answered as
/// documented (EPERM; clone3 ENOSYS), x32 numbers too, and the noexec-sealed memfd works.
#[test]
fn the_seccomp_filter_answers_as_documented() {
    let wx = wx_probe();
    // The filter answers x32 calls EPERM; a kernel without the x32 ABI answers them ENOSYS
    // itself (and the filter then has no rules for them).
    // SAFETY: getpid takes no arguments; through the x32 ABI it returns the pid or ENOSYS.
    let x32_refusal = if unsafe { libc::syscall(libc::SYS_getpid | 0x4000_0000) } == -1 {
        libc::ENOSYS
    } else {
        libc::EPERM
    };
    for who in identities() {
        let w = World::new(who, "seccomp");
        let out = w.session(&[], &format!("{} syscalls", s(&wx)));
        let stdout = text(&out.stdout);
        let label = who.label();
        let got: Vec<(&str, i32)> = stdout
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k, v.parse().ok()?))
            })
            .collect();
        let want = [
            ("clone3", libc::ENOSYS),
            ("unshare_user", libc::EPERM),
            ("unshare_ns", libc::EPERM),
            ("unshare_user_high", libc::EPERM),
            ("clone_user", libc::EPERM),
            ("setns", libc::EPERM),
            ("mount", libc::EPERM),
            ("umount2", libc::EPERM),
            ("open_tree", libc::EPERM),
            ("fsopen", libc::EPERM),
            ("open_by_handle_at", libc::EPERM),
            ("fanotify_init", libc::EPERM),
            ("bpf", libc::EPERM),
            ("x32_unshare_user", x32_refusal),
            ("x32_memfd", x32_refusal),
            ("memfd_plain", libc::EPERM),
            ("memfd_exec", libc::EPERM),
            ("memfd_noexec_seal", 0),
        ];
        assert_eq!(
            got,
            want.to_vec(),
            "[{label}] {stdout}\n{}",
            text(&out.stderr)
        );
    }
}

/// A root session gives up the capabilities that reach past the partition or outlive the
/// session (`guard/seal/src/capabilities.rs`), in every set, so no program it starts takes
/// them back: no block device can be made in the write set (it would be live outside), a FIFO
/// still can. A non-root session holds none at all.
#[test]
fn a_root_session_gives_up_the_capabilities_that_outlive_it() {
    const DROPPED: u64 = 1 << 21 | 1 << 40 | 1 << 27 | 1 << 31 | 1 << 16 | 1 << 17 | 1 << 39;
    for who in identities() {
        let w = World::new(who, "caps");
        let out = w.session(
            &[],
            "grep -E '^Cap(Prm|Eff|Bnd|Inh):' /proc/self/status; \
             mknod blk b 7 0 2>/dev/null && echo MKNOD_BLOCK_OK; \
             mkfifo fifo && echo FIFO_OK",
        );
        let stdout = text(&out.stdout);
        let label = who.label();
        assert!(
            stdout.contains("FIFO_OK"),
            "[{label}] {stdout}\n{}",
            text(&out.stderr)
        );
        assert!(
            !stdout.contains("MKNOD_BLOCK_OK"),
            "[{label}] a block device was made\n{stdout}"
        );
        for line in stdout.lines().filter(|l| l.starts_with("Cap")) {
            let (set, hex) = line.split_once(':').unwrap();
            let held = u64::from_str_radix(hex.trim(), 16).unwrap();
            if who.is_root() {
                assert_eq!(held & DROPPED, 0, "[{label}] {set} holds {held:#x}");
            } else if set != "CapBnd" {
                // (no_new_privs: nothing it execs can raise these from the bounding set)
                assert_eq!(held, 0, "[{label}] {set} holds {held:#x}");
            }
        }
        assert_eq!(
            stdout.lines().filter(|l| l.starts_with("Cap")).count(),
            4,
            "[{label}] {stdout}"
        );
    }
}

fn refusal(extra: &[&str], abi: &str) -> Output {
    let ws = tempfile::tempdir_in(target_tmp()).unwrap();
    let mut c = Command::new(&tools().cli);
    // This test's own home and runtime dir, not the real ones.
    Identity::Current.apply(&mut c);
    c.args(["run", "--workspace"])
        .arg(ws.path())
        .args(extra)
        .args(["--", "/bin/true"])
        .env("EXECGUARD_TEST_LANDLOCK_ABI", abi)
        .output()
        .unwrap()
}

/// On by default: without `--seal`, a kernel without Landlock (or with an ABI lacking REFER)
/// is a typed refusal, exit 2, one line; `--allow-unsealed` runs and says so once.
#[test]
fn no_enforceable_partition_is_a_typed_refusal_by_default() {
    for abi in ["0", "1"] {
        let out = refusal(&[], abi);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "ABI {abi}: {stderr}");
        assert!(
            stderr.starts_with("execguard: seal_unavailable: "),
            "{stderr}"
        );
        assert!(stderr.contains("--allow-unsealed"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let out = refusal(&["--allow-unsealed"], abi);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(stderr.matches("reduced assurance").count(), 1, "{stderr}");
    }
}

/// A write-set root that does not exist at the start gets no rule: created later (from
/// outside the session), it is neither writable nor executable by the session, and the kernel
/// itself refuses the exec (a static caller, not the guard).
#[test]
fn a_root_that_does_not_exist_yet_gets_nothing() {
    if !execguard_testkit::require_root("creating a missing write-set root") {
        return;
    }
    let base = target_tmp().join(format!("wx-late-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("ws")).unwrap();
    let late = base.join("late");
    let policy = base.join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\nworkspace = \"{}\"\nmutable_roots = [\"{}\"]\nseal = true\n",
            s(&base.join("ws")),
            s(&late)
        ),
    )
    .unwrap();
    let wx = wx_probe();
    // Events, not time: the session says it started (sealed, with the root still missing),
    // then waits on a FIFO the test writes once the root exists.
    let go = base.join("ws/go");
    let c = std::ffi::CString::new(s(&go)).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let mut child = Command::new(&tools().cli);
    Identity::Current.apply(&mut child);
    let mut child = child
        .args(["run", "--policy"])
        .arg(&policy)
        .args(["--", "sh", "-c"])
        .arg(format!(
            "echo STARTED; read line < {go}; \
             echo x > {late}/mine 2>/dev/null && echo WROTE; {wx} exec {late}/ready",
            go = s(&go),
            late = s(&late),
            wx = s(&wx)
        ))
        .current_dir(base.join("ws"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert_eq!(first, "STARTED\n", "the session did not start");
    std::fs::create_dir_all(&late).unwrap();
    copy(Path::new("/bin/true"), &late.join("ready"));
    std::fs::write(&go, b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!rest.contains("WROTE"), "{rest}");
    assert_eq!(rest, "FAILED execve 13\n", "{rest}\n{}", text(&out.stderr));
}

/// Without a mount namespace (a kernel that refuses it; the test hook) a program could map a
/// written file executable itself: the session is refused (one line, the way out, exit 2).
/// With `--allow-exec-mappings` it starts: it says once that the write set is not mounted
/// noexec, reports it reduced, keeps the exec dirs read-only by granting the write rights
/// around them, and still refuses to execute what it writes.
#[test]
fn without_a_namespace_the_partition_holds_and_says_so() {
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "no-namespace-refused");
        let mut c = Command::new(&tools().cli);
        who.apply(&mut c);
        let out = c
            .args(["run", "--workspace"])
            .arg(&w.ws)
            .args(["--", "/bin/echo", "RAN"])
            .env("HOME", &w.home)
            .env("EXECGUARD_TEST_NO_MOUNT_NAMESPACE", "1")
            .current_dir(&w.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert_eq!(out.status.code(), Some(2), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("RAN"), "[{label}] {stdout}");
        let refusal: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("noexec_unavailable"))
            .collect();
        assert!(
            refusal.len() == 1 && refusal[0].contains("--allow-exec-mappings"),
            "[{label}] {stderr}"
        );
    }
    for who in identities() {
        let w = World::new(who, "no-namespace");
        std::fs::create_dir_all(w.home.join("notes")).unwrap();
        who.own(&w.home);
        let script = format!(
            "mytool a; echo x >> {tool} 2>/dev/null && echo APPENDED; \
             echo a > ~/notes/n && echo NOTES_OK; \
             cp /bin/true ~/notes/t && {wx} exec ~/notes/t; \
             echo a > ~/new-in-home 2>/dev/null || echo HOME_ENTRY_REFUSED",
            tool = s(&w.local_bin.join("mytool")),
            wx = s(&wx)
        );
        let mut c = Command::new(&tools().cli);
        who.apply(&mut c);
        let out = c
            .args(["run", "-v", "--allow-exec-mappings", "--workspace"])
            .arg(&w.ws)
            .args(["--", "sh", "-c", &script])
            .env("HOME", &w.home)
            .env("PATH", format!("{}:/usr/bin:/bin", s(&w.local_bin)))
            .env("EXECGUARD_TEST_NO_MOUNT_NAMESPACE", "1")
            .current_dir(&w.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);
        let label = who.label();
        assert!(
            stdout.starts_with("ARGV 2\n"),
            "[{label}] {stdout}\n{stderr}"
        );
        assert!(!stdout.contains("APPENDED"), "[{label}] {stdout}");
        assert!(stdout.contains("NOTES_OK"), "[{label}] {stdout}\n{stderr}");
        assert!(stdout.contains("FAILED execve 13"), "[{label}] {stdout}");
        assert!(stdout.contains("HOME_ENTRY_REFUSED"), "[{label}] {stdout}");
        assert_eq!(
            stderr
                .matches("the write set is not mounted noexec")
                .count(),
            1,
            "[{label}] {stderr}"
        );
        assert!(
            stderr.contains("assurance: reduced:mappings_guard_only")
                && stderr.contains("exec dirs read-only by landlock_split"),
            "[{label}] {stderr}"
        );
    }
}

/// Without the namespace the exec dirs stay read-only by Landlock alone: write rights go to
/// every other entry of `$HOME`, by name. A directory among them that another process replaced
/// by a link to an exec dir, after the grants were listed and before they were opened, gets no
/// grant: a write grant through the link would land on the exec dir and let the session plant
/// a program there (the test hook makes the swap at that moment).
#[test]
fn a_write_grant_is_never_given_through_a_link_put_in_its_place() {
    for who in identities() {
        let w = World::new(who, "redirected-grant");
        let projects = w.home.join("projects");
        std::fs::create_dir_all(&projects).unwrap();
        who.own(&w.home);
        let script = format!(
            "cp /bin/true {bin}/planted 2>/dev/null && echo PLANTED;              echo a > {projects}-moved/n 2>/dev/null || echo MOVED_NOT_GRANTED; echo DONE",
            bin = s(&w.local_bin),
            projects = s(&projects),
        );
        let mut c = Command::new(&tools().cli);
        who.apply(&mut c);
        let out = c
            .args(["run", "--allow-exec-mappings", "--workspace"])
            .arg(&w.ws)
            .args(["--", "sh", "-c", &script])
            .env("HOME", &w.home)
            .env("EXECGUARD_TEST_NO_MOUNT_NAMESPACE", "1")
            .env(
                "EXECGUARD_TEST_REDIRECT",
                format!("rules:{}:.local/bin", s(&projects)),
            )
            .current_dir(&w.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(stdout.contains("DONE"), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("PLANTED"), "[{label}] {stdout}");
        assert!(!w.local_bin.join("planted").exists(), "[{label}]");
        assert!(stdout.contains("MOVED_NOT_GRANTED"), "[{label}] {stdout}");
        assert_redirected(&projects, &label);
    }
}

/// A namespace made with a bind that then failed (the test hook fails one step) is refused
/// like no namespace at all. With `--allow-exec-mappings` it runs, and the report shows it as
/// it is: made, incomplete, with the failure, never as `none`.
/// - Failing before the noexec remounts: reduced to the guard's refusals; the toolchain in
///   `~/.local/bin` runs.
/// - Failing after them, at the exec dirs' read-only binds: the write set is noexec, and the
///   exec dirs with it (`reduced:exec_dirs_noexec`); the toolchain does not run.
///
/// Either way the exec dirs stay read-only by Landlock, and what the session writes does not
/// run.
#[test]
fn a_half_made_namespace_is_refused_or_reported_as_it_is() {
    let wx = wx_probe();
    for (step, reduction, tool_runs) in [
        ("noexec", "mappings_guard_only", true),
        ("read_only", "exec_dirs_noexec", false),
    ] {
        for who in identities() {
            let w = World::new(who, &format!("half-made-{step}"));
            std::fs::create_dir_all(w.home.join("notes")).unwrap();
            who.own(&w.home);
            let script = format!(
                "mytool a; echo x >> {tool} 2>/dev/null && echo APPENDED; \
                 echo a > ~/notes/n && echo NOTES_OK; \
                 cp /bin/true ~/notes/t && {wx} exec ~/notes/t",
                tool = s(&w.local_bin.join("mytool")),
                wx = s(&wx)
            );
            let run = |flags: &[&str]| {
                let extra: Vec<&str> = ["-v"].iter().chain(flags).copied().collect();
                w.session_env(&extra, &[("EXECGUARD_TEST_FAIL_BIND", step)], &script)
            };
            let label = format!("{} {step}", who.label());
            let out = run(&[]);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "[{label}] {stderr}");
            assert!(!text(&out.stdout).contains("NOTES_OK"), "[{label}]");
            assert!(
                stderr.contains("noexec_unavailable") && stderr.contains("test hook"),
                "[{label}] {stderr}"
            );
            let out = run(&["--allow-exec-mappings"]);
            let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
            assert!(stdout.contains("NOTES_OK"), "[{label}] {stdout}\n{stderr}");
            assert_eq!(
                stdout.starts_with("ARGV 2\n"),
                tool_runs,
                "[{label}] {stdout}\n{stderr}"
            );
            assert!(!stdout.contains("APPENDED"), "[{label}] {stdout}");
            assert!(
                stdout.contains("FAILED execve 13"),
                "[{label}] {stdout}\n{stderr}"
            );
            let kind = if who.is_root() { "mount" } else { "user+mount" };
            assert!(
                stderr.contains(&format!(
                    "mount namespace: {kind}, incomplete (noexec_unavailable: EXECGUARD_TEST_FAIL_BIND={step}"
                )) && !stderr.contains("mount namespace: none"),
                "[{label}] {stderr}"
            );
            assert!(
                stderr.contains(&format!("assurance: reduced:{reduction}"))
                    && stderr.contains("exec dirs read-only by landlock_split"),
                "[{label}] {stderr}"
            );
        }
    }
}

/// A non-root user's namespace that is entered and then refused (an LSM that gives it no
/// capabilities, here the test hook right after `unshare`) is never worked in: a session that
/// needs the mounts is refused, without the namespace's probe; one that may go without them
/// (`--allow-exec-mappings`) finds out in the probe's child and runs outside any namespace,
/// its ids as they are, with the Landlock partition alone.
#[test]
fn a_user_namespace_refused_after_unshare_is_never_worked_in() {
    let wx = wx_probe();
    for who in identities().into_iter().filter(|w| !w.is_root()) {
        let w = World::new(who, "unfinished-namespace");
        std::fs::create_dir_all(w.home.join("notes")).unwrap();
        who.own(&w.home);
        let script = format!(
            "echo a > ~/notes/n && echo NOTES_OK; id -u; \
             cp /bin/true ~/notes/t && {wx} exec ~/notes/t",
            wx = s(&wx)
        );
        let run = |flags: &[&str]| {
            let extra: Vec<&str> = ["-v"].iter().chain(flags).copied().collect();
            w.session_env(&extra, &[("EXECGUARD_TEST_FAIL_BIND", "enter")], &script)
        };
        let label = who.label();
        let out = run(&[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "[{label}] {stderr}");
        assert!(!text(&out.stdout).contains("NOTES_OK"), "[{label}]");
        assert!(
            stderr.contains("noexec_unavailable: EXECGUARD_TEST_FAIL_BIND=enter")
                && stderr.contains("cannot leave")
                && stderr.contains("--allow-exec-mappings"),
            "[{label}] {stderr}"
        );
        let out = run(&["--allow-exec-mappings"]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(stdout.contains("NOTES_OK"), "[{label}] {stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("\n{}\n", who.uid())),
            "[{label}] ids as they are: {stdout}"
        );
        assert!(
            stdout.contains("FAILED execve 13"),
            "[{label}] {stdout}\n{stderr}"
        );
        assert!(
            stderr.contains("mount namespace: none")
                && stderr.contains("assurance: reduced:mappings_guard_only")
                && stderr.contains("EXECGUARD_TEST_FAIL_BIND=enter"),
            "[{label}] {stderr}"
        );
    }
}

/// A mount inside an exec dir is read-only in the session with the exec dir (a remount is not
/// recursive, so each is its own), and noexec like every mount under the write set (it may be
/// a bind of a directory the session writes through another name). Before, only the exec
/// dir's own mount was made read-only: the session could plant a program in the inner mount
/// for the operator to run later. Needs root to make the inner mount (a tmpfs, in a private
/// mount namespace); the session then runs as each identity.
#[test]
fn a_mount_inside_an_exec_dir_is_read_only_with_it() {
    if !root_can_mount("mounts inside an exec dir (making one needs root)") {
        return;
    }
    for who in identities() {
        let w = World::new(who, "exec-dir-mount");
        let inner = w.local_bin.join("inner");
        std::fs::create_dir_all(&inner).unwrap();
        let session = format!(
            "echo x > {inner}/new 2>/dev/null && echo WROTE; {inner}/innertool a",
            inner = s(&inner)
        );
        let setup = format!(
            "mount -t tmpfs -o mode=0755 tmpfs {inner} && cp {argv} {inner}/innertool && \
             chown -R {uid}:{gid} {inner}",
            inner = s(&inner),
            argv = s(&tools().argv),
            uid = who.uid(),
            gid = who.gid(),
        );
        let out = w.session_after(&setup, "-v", &session);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("WROTE"), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("ARGV"), "[{label}] {stdout}\n{stderr}");
        assert!(stderr.contains("Permission denied"), "[{label}] {stderr}");
        assert!(
            stderr.contains(&format!("exec dir mount {}: read-only", s(&inner)))
                && w.strict_but_home(&stderr),
            "[{label}] {stderr}"
        );
    }
}

/// A nested exec dir (`--exec-dir` below the exec-dir record's directory,
/// `~/.config/execguard`): the directories between the two, which the seal makes mount points
/// so they cannot be renamed, are read-only with the outer exec dir too. Before, they stayed
/// writable, and a program written there ran in a later session.
#[test]
fn the_parents_of_a_nested_exec_dir_are_read_only() {
    for who in identities() {
        let w = World::new(who, "nested-exec-dir");
        let record_dir = w.home.join(".config/execguard");
        let inner = record_dir.join("x/bin");
        std::fs::create_dir_all(&inner).unwrap();
        who.own(&w.home);
        let script = format!(
            "cp {argv} {x}/evil 2>/dev/null && echo WROTE_PARENT; \
             echo y > {inner}/n 2>/dev/null && echo WROTE_INNER; \
             echo z > {record}/n 2>/dev/null && echo WROTE_RECORD; echo DONE",
            argv = s(&tools().argv),
            x = s(&record_dir.join("x")),
            inner = s(&inner),
            record = s(&record_dir),
        );
        let exec_dir = format!("--exec-dir={}", s(&inner));
        let out = w.session(&["-v", &exec_dir], &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(stdout.contains("DONE"), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("WROTE"), "[{label}] {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!(
                "exec dir mount {}: read-only",
                s(&record_dir.join("x"))
            )),
            "[{label}] {stderr}"
        );
    }
}

/// A mount whose name is not UTF-8 (a session can rename a directory above a mount to such a
/// name) does not make the mount table unreadable: the write set is still mounted noexec, so
/// the loader cannot map a written file. Before, the whole table was dropped and no mount was
/// made noexec, while the report said strict. Needs root to make the mount.
#[test]
fn a_mount_named_in_bytes_that_are_not_utf8_leaves_the_write_set_noexec() {
    if !root_can_mount("a mount with a non-UTF-8 name (making one needs root)") {
        return;
    }
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "non-utf8-mount");
        let data = w.home.join("data/nas");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(w.home.join("notes")).unwrap();
        who.own(&w.home);
        let session = format!(
            "cp {argv} ~/notes/e && {wx} loader ~/notes/e",
            argv = s(&tools().argv),
            wx = s(&wx)
        );
        let setup = format!(
            "mount -t tmpfs -o mode=0777 tmpfs {data} && mv {home}/data \"{home}/$(printf '\\377')\"",
            data = s(&data),
            home = s(&w.home),
        );
        let out = w.session_after(&setup, "-v", &session);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("ARGV"), "[{label}] {stdout}\n{stderr}");
        assert!(
            (stdout.clone() + &stderr).contains("failed to map segment"),
            "[{label}] {stdout}\n{stderr}"
        );
        assert!(
            stderr.contains("write-set mount") && w.strict_but_home(&stderr),
            "[{label}] {stderr}"
        );
    }
}

/// Each mount beneath the write set is made `noexec` through a descriptor checked to be the
/// mount the table names, not by a name another process could redirect meanwhile: every
/// session writes `/tmp` and may write the workspace. With a directory above one of two mounts
/// moved aside and a symlink to the other in its place, a remount by name would have reached
/// the second mount twice and left the first executable; the session is refused instead.
/// Needs root to make the mounts.
#[test]
fn a_mount_whose_name_was_redirected_is_never_left_executable() {
    if !root_can_mount("a write-set mount redirected during the seal (making it needs root)") {
        return;
    }
    for who in identities() {
        let w = World::new(who, "redirected-mount");
        let (p, q) = (w.ws.join("p"), w.ws.join("q"));
        for d in [&p, &q] {
            std::fs::create_dir_all(d.join("cache")).unwrap();
        }
        who.own(&w.ws);
        let setup = format!(
            "mount -t tmpfs -o mode=0777 tmpfs {p}/cache && mount -t tmpfs -o mode=0777 tmpfs {q}/cache",
            p = s(&p),
            q = s(&q)
        );
        let label = who.label();
        // Unmoved: both mounts are noexec in the session.
        let out = w.session_after(&setup, "", "grep /cache /proc/self/mountinfo");
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "[{label}] {}", text(&out.stderr));
        for m in [&p, &q] {
            let line = stdout
                .lines()
                .rev()
                .find(|l| l.contains(&format!(" {}/cache ", s(m))))
                .unwrap_or_else(|| panic!("[{label}] {stdout}"));
            assert!(line.contains("noexec"), "[{label}] {line}");
        }
        // Moved between the table's read and the remounts.
        let hook = format!(
            "export EXECGUARD_TEST_REDIRECT=noexec:{}:q && {setup}",
            s(&p)
        );
        let out = w.session_after(&hook, "", "echo started");
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "[{label}] {stderr}");
        assert!(!text(&out.stdout).contains("started"), "[{label}]");
        assert!(
            stderr.contains("noexec_unavailable")
                && stderr.contains("a directory above this mount was moved"),
            "[{label}] {stderr}"
        );
        assert_redirected(&p, &label);
    }
}

/// A `nosymfollow` mount in the write set keeps that flag through the seal's remounts (they
/// name every flag they keep). Needs root to make the mount.
#[test]
fn a_nosymfollow_mount_keeps_it() {
    if !root_can_mount("a nosymfollow mount (making one needs root)") {
        return;
    }
    for who in identities() {
        let w = World::new(who, "nosymfollow");
        let data = w.home.join("data");
        std::fs::create_dir_all(&data).unwrap();
        who.own(&w.home);
        let session = format!(
            "ln -s /etc/hostname {data}/link && cat {data}/link >/dev/null 2>&1 && echo FOLLOWED; echo DONE",
            data = s(&data)
        );
        let setup = format!(
            "mount -t tmpfs -o mode=0777,nosymfollow tmpfs {data}",
            data = s(&data)
        );
        let out = w.session_after(&setup, "", &session);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(stdout.contains("DONE"), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("FOLLOWED"), "[{label}] {stdout}\n{stderr}");
    }
}

/// An `--exec-dir` that holds the workspace is refused: the workspace is never executable,
/// and the exec dir's read-only mount and execute right would cover it.
#[test]
fn an_exec_dir_that_holds_the_workspace_is_refused() {
    for who in identities() {
        let w = World::new(who, "exec-dir-holds-ws");
        let holder = w.home.join("src");
        let ws = holder.join("proj");
        std::fs::create_dir_all(&ws).unwrap();
        who.own(&w.home);
        let mut c = Command::new(&tools().cli);
        who.apply(&mut c);
        let out = c
            .arg("run")
            .arg(format!("--exec-dir={}", s(&holder)))
            .arg("--workspace")
            .arg(&ws)
            .args(["--", "sh", "-c", "echo RAN"])
            .env("HOME", &w.home)
            .current_dir(&ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert_eq!(out.status.code(), Some(2), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("RAN"), "[{label}] {stdout}");
        assert!(
            stderr.contains("exec_dir_holds_write_set"),
            "[{label}] {stderr}"
        );
    }
}

/// A `strictatime` mount keeps it through the seal's remounts: statvfs has no flag for it,
/// and a remount that does not name it gets relatime, which a user namespace may not do to
/// a mount it inherited (EPERM: the session would not start). Needs root to make the mount.
#[test]
fn a_strictatime_mount_inside_an_exec_dir_does_not_stop_the_session() {
    if !root_can_mount("a strictatime mount (making one needs root)") {
        return;
    }
    for who in identities() {
        let w = World::new(who, "strictatime");
        let inner = w.local_bin.join("inner");
        std::fs::create_dir_all(&inner).unwrap();
        let setup = format!(
            "mount -t tmpfs -o mode=0777,nodiratime,strictatime tmpfs {inner}",
            inner = s(&inner)
        );
        let out = w.session_after(&setup, "", "echo DONE");
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(stdout.contains("DONE"), "[{label}] {stdout}\n{stderr}");
    }
}

/// A session inside a session (an agent that runs `execguard run` itself) keeps the outer
/// noexec mounts (it may not make a namespace of its own) and stays strict.
#[test]
fn a_nested_session_keeps_the_outer_mounts() {
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "nested");
        let script = format!(
            "cp {payload} ./x && {cli} run -v --workspace . -- {wx} loader ./x",
            payload = s(&tools().argv),
            cli = s(&tools().cli),
            wx = s(&wx)
        );
        let out = w.session(&[], &script);
        let all = text(&out.stdout) + &text(&out.stderr);
        let label = who.label();
        assert!(
            all.contains("execguard: assurance: strict\n"),
            "[{label}] {all}"
        );
        assert!(!all.contains("notice"), "[{label}] {all}");
        assert!(all.contains("failed to map segment"), "[{label}] {all}");
        assert!(!all.contains("ARGV"), "[{label}] {all}");
    }
}

/// An audit log outside the write set is appended to by the guard, and is still written, never
/// run: code the session writes into it does not execute (a static caller, not the guard).
#[test]
fn an_audit_log_outside_the_write_set_is_written_never_run() {
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "audit-outside");
        let log = w.owned.join("audit.jsonl");
        let script = format!(
            "cat {payload} > {log} && chmod +x {log} && {wx} exec {log}; /lib64/ld-linux-x86-64.so.2 {log} 2>/dev/null; cp /bin/true ./x; ./x",
            payload = s(&tools().argv),
            log = s(&log),
            wx = s(&wx)
        );
        let out = w.session(&["--audit", s(&log)], &script);
        let stdout = text(&out.stdout);
        let label = who.label();
        assert_eq!(
            stdout,
            "FAILED execve 13\n",
            "[{label}] {}",
            text(&out.stderr)
        );
        let records = std::fs::read(&log).unwrap();
        let records = String::from_utf8_lossy(&records);
        assert!(
            records.contains("\"reason\":\"mutable_native\""),
            "[{label}] the guard still appends: {records}"
        );
    }
}

/// The devices a session writes (null, random, a new pty) stay writable; a disk does not, even
/// for root (written raw, it would change programs outside the write set), nor
/// `/proc/self/mem`. Both are only opened for writing, never written.
#[test]
fn devices_a_session_writes_and_no_others() {
    let disk = std::fs::read_dir("/sys/class/block")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| PathBuf::from("/dev").join(e.file_name()))
        .find(|d| d.exists());
    for who in identities() {
        let w = World::new(who, "devices");
        let mut script = String::from(
            "echo x > /dev/null && echo NULL_OK; \
             head -c1 /dev/urandom > /dev/null && echo URANDOM_OK; \
             /usr/bin/python3 -c \"import os, pty; m, s = pty.openpty(); os.write(s, b'hi'); print('PTY_OK', os.read(m, 2))\"; \
             /usr/bin/python3 -c \"import os\ntry:\n    os.open('/proc/self/mem', os.O_RDWR); print('MEM_WRITABLE')\nexcept OSError as e:\n    print('MEM_REFUSED', e.errno)\"; ",
        );
        if let Some(disk) = &disk {
            script.push_str(&format!(
                "/usr/bin/python3 -c \"import os\ntry:\n    os.close(os.open('{}', os.O_WRONLY)); print('DISK_WRITABLE')\nexcept OSError as e:\n    print('DISK_REFUSED', e.errno)\"",
                s(disk)
            ));
        }
        let out = w.session(&[], &script);
        let stdout = text(&out.stdout);
        let label = who.label();
        // Writing /proc/self/mem would change the process's own code, past mprotect.
        // Refused by Landlock, or before it by the read-only view of everything outside the
        // write set (/proc among it).
        assert!(
            [libc::EACCES, libc::EROFS]
                .iter()
                .any(|e| stdout.contains(&format!("MEM_REFUSED {e}\n"))),
            "[{}] /proc/self/mem\n{stdout}",
            who.label()
        );
        for must in ["NULL_OK", "URANDOM_OK", "PTY_OK b'hi'"] {
            assert!(
                stdout.contains(must),
                "[{label}] {must}\n{stdout}\n{}",
                text(&out.stderr)
            );
        }
        match &disk {
            Some(_) => assert!(
                stdout.contains(&format!("DISK_REFUSED {}", libc::EACCES)),
                "[{label}] {stdout}"
            ),
            None => execguard_testkit::skip("a raw disk write (no block device on this machine)"),
        }
    }
}

/// A toolchain directory one session creates does not become an exec dir of the next: the
/// exec dirs are those the operator's record names (written by the first run, read-only in
/// every session). Red-team finding: `~/.cargo/bin` planted by session 1 ran in session 2.
#[test]
fn a_toolchain_dir_a_session_creates_never_runs_later() {
    for who in identities() {
        let w = World::new(who, "record");
        let record = w.home.join(".config/execguard/exec-dirs");
        // The first session records what exists now (~/.local/bin).
        let out = w.session(&[], "true");
        assert!(
            out.status.success(),
            "[{}] {}",
            who.label(),
            text(&out.stderr)
        );
        let recorded = std::fs::read_to_string(&record).unwrap();
        assert!(recorded.contains(s(&w.local_bin)), "{recorded}");
        let planted = w.home.join(".cargo/bin/planted");
        let plant = format!(
            "mkdir -p {dir} && cp {payload} {planted} && chmod +x {planted}; echo '{bin}' >> {record}; echo record=$?",
            dir = s(planted.parent().unwrap()),
            payload = s(&tools().argv),
            planted = s(&planted),
            bin = s(planted.parent().unwrap()),
            record = s(&record),
        );
        let out = w.session(&[], &plant);
        let stdout = text(&out.stdout);
        // In the session's home layer (docs/session.md), not the operator's home.
        assert!(w.sees(&planted), "[{}] {}", who.label(), text(&out.stderr));
        assert!(
            !planted.exists(),
            "[{}] the plant reached the real home",
            who.label()
        );
        assert!(
            !stdout.contains("record=0"),
            "[{}] the session wrote the record",
            who.label()
        );
        // The next session finds ~/.cargo/bin, but it is not recorded: written, never run.
        let again = w.session(&[], &format!("{}; echo rc=$?", s(&planted)));
        let (stdout, stderr) = (text(&again.stdout), text(&again.stderr));
        assert!(
            stdout.contains("rc=126"),
            "[{}] {stdout}\n{stderr}",
            who.label()
        );
        assert!(
            !stdout.contains("ARGV"),
            "[{}] the planted program ran",
            who.label()
        );
        // The discovery's notice ("is not in" the record) is about the real home, which the
        // plant never reached (the session's home layer holds it: docs/session.md).
        let _ = stderr;
        // The recorded one still runs.
        let out = w.session(&[], "mytool ok");
        assert!(
            out.status.success() && text(&out.stdout).contains("ARGV"),
            "[{}] {}",
            who.label(),
            text(&out.stderr)
        );
    }
}

/// An exec dir recorded by the operator stays read-only in every session, on its `PATH` or
/// not: left in the write set, what a session with another `PATH` planted there would run in
/// the next session that has it on `PATH`, and outside sessions.
#[test]
fn every_recorded_exec_dir_stays_read_only_whatever_path_says() {
    for who in identities() {
        let w = World::new(who, "record-path");
        let bin2 = w.home.join("bin2");
        std::fs::create_dir_all(&bin2).unwrap();
        who.own(&w.home);
        let session = |path: &str, script: &str| {
            let mut c = Command::new(&tools().cli);
            who.apply(&mut c);
            c.arg("run")
                .arg("--workspace")
                .arg(&w.ws)
                .args(["--", "sh", "-c", script])
                .env("HOME", &w.home)
                .env("PATH", path)
                .current_dir(&w.ws)
                .stdin(Stdio::null());
            c.output().unwrap()
        };
        let label = who.label();
        // The first session records both.
        let both = format!("{}:{}:/usr/bin:/bin", s(&w.local_bin), s(&bin2));
        let out = session(&both, "true");
        assert!(out.status.success(), "[{label}] {}", text(&out.stderr));
        let record = std::fs::read_to_string(w.home.join(".config/execguard/exec-dirs")).unwrap();
        assert!(record.contains(s(&bin2)), "[{label}] {record}");
        // A session whose PATH lacks ~/bin2 cannot write it.
        let plant = format!(
            "cp /bin/true {bin2}/tool2 2>/dev/null && echo PLANTED; echo DONE",
            bin2 = s(&bin2)
        );
        let out = session("/usr/bin:/bin", &plant);
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("DONE"),
            "[{label}] {stdout}\n{}",
            text(&out.stderr)
        );
        assert!(!stdout.contains("PLANTED"), "[{label}] {stdout}");
        assert!(!bin2.join("tool2").exists(), "[{label}]");
    }
}

/// The CLI checks the workspace, then the session is sealed by the names it checked: a
/// workspace another process replaced by a link meanwhile (here to a directory inside an exec
/// dir) is never followed into a grant, with the namespace or without it. Re-resolved after
/// the checks, the link made the exec dir's inside the session's workspace, writable.
#[test]
fn a_workspace_replaced_by_a_link_after_the_checks_gives_nothing_to_its_target() {
    for who in identities() {
        for extra in [&[][..], &["--allow-exec-mappings"][..]] {
            let w = World::new(who, "relinked-ws");
            let ws = w.home.join("proj");
            let inside = w.local_bin.join("sub");
            std::fs::create_dir_all(&ws).unwrap();
            std::fs::create_dir_all(&inside).unwrap();
            who.own(&w.home);
            let mut c = Command::new(&tools().cli);
            who.apply(&mut c);
            c.arg("run")
                .args(extra)
                .arg("--workspace")
                .arg(&ws)
                .args([
                    "--",
                    "sh",
                    "-c",
                    &format!(
                        "cp /bin/true {inside}/planted 2>/dev/null && echo PLANTED; echo DONE",
                        inside = s(&inside)
                    ),
                ])
                .env("HOME", &w.home)
                .env("PATH", format!("{}:/usr/bin:/bin", s(&w.local_bin)))
                .env(
                    "EXECGUARD_TEST_REDIRECT",
                    format!("partition:{}:{}", s(&ws), s(&inside)),
                )
                .current_dir(&w.home)
                .stdin(Stdio::null());
            if !extra.is_empty() {
                c.env("EXECGUARD_TEST_NO_MOUNT_NAMESPACE", "1");
            }
            let out = c.output().unwrap();
            let (stdout, label) = (text(&out.stdout), who.label());
            assert!(
                stdout.contains("DONE"),
                "[{label} {extra:?}] {stdout}\n{}",
                text(&out.stderr)
            );
            assert!(!stdout.contains("PLANTED"), "[{label} {extra:?}] {stdout}");
            assert!(!inside.join("planted").exists(), "[{label} {extra:?}]");
            assert_redirected(&ws, &format!("{label} {extra:?}"));
        }
    }
}

/// A workspace inside a directory another session writes can be moved aside after the binds
/// made it noexec, and a directory of that session's moved into its place: the write grant,
/// taken by name, would land on a directory that is executable. The start is refused.
#[test]
fn a_directory_moved_into_the_workspace_after_the_binds_refuses_the_start() {
    for who in identities() {
        let w = World::new(who, "moved-in");
        let outer = w.owned.join("outer");
        let (ws, other) = (outer.join("proj"), outer.join("other"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        who.own(&w.owned);
        let go = w.owned.join("go");
        // The seal says it paused through a FIFO made here: at the `rules` step everything
        // outside the write set is already read-only in its namespace, so it could create no
        // file there, but a FIFO opened for writing writes no file system.
        let ready = w.owned.join("go.ready");
        let c_ready = std::ffi::CString::new(s(&ready)).unwrap();
        // SAFETY: a NUL-terminated path; mkfifo creates only that node.
        assert_eq!(unsafe { libc::mkfifo(c_ready.as_ptr(), 0o666) }, 0);
        who.own(&ready);
        use std::os::unix::fs::OpenOptionsExt;
        let mut ready_end = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&ready)
            .unwrap();
        let mut c = Command::new(&tools().cli);
        who.apply(&mut c);
        let child = c
            .arg("run")
            .arg("--workspace")
            .arg(&ws)
            .args(["--", "sh", "-c", "echo STARTED"])
            .env("HOME", &w.home)
            .env("EXECGUARD_TEST_PAUSE", format!("rules:{}", s(&go)))
            .current_dir(&w.home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The seal waits after listing its grants; the swap is made from this namespace, as
        // the other session would make it from its own.
        let mut said = Vec::new();
        for _ in 0..1000 {
            use std::io::Read;
            let mut buf = [0u8; 16];
            match ready_end.read(&mut buf) {
                Ok(n) => said.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
            if said == b"rules" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(said, b"rules", "[{}] the seal never paused", who.label());
        std::fs::rename(&ws, outer.join("proj-moved")).unwrap();
        std::fs::rename(&other, &ws).unwrap();
        std::fs::write(&go, "").unwrap();
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("STARTED"), "[{label}] {stdout}");
        assert!(
            stderr.contains("noexec_unavailable") && stderr.contains("not on a noexec mount"),
            "[{label}] {stderr}"
        );
    }
}

/// The session is scoped from the processes outside it (Landlock ABI 6): it cannot signal
/// them (the supervisor that quarantines a strict session's repository, the operator's own
/// programs), while signals among its own processes work as ever.
#[test]
fn the_session_cannot_signal_processes_outside_it() {
    if execguard_seal::kernel_abi(execguard_seal::host_sys()).is_ok_and(|abi| abi < 6) {
        execguard_testkit::skip("signal scoping: this kernel's Landlock ABI is below 6");
        return;
    }
    for who in identities() {
        let w = World::new(who, "signal-scope");
        let mut outside = Command::new("sleep");
        outside.arg("60");
        who.apply(&mut outside);
        let mut outside = outside.spawn().unwrap();
        let script = format!(
            "kill -0 {pid} 2>/dev/null; echo outside=$?; sleep 30 & kill $! ; wait $!; echo inside=$?",
            pid = outside.id()
        );
        let out = w.session(&[], &script);
        let _ = outside.kill();
        let _ = outside.wait();
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("outside=1"),
            "[{}] {stdout}{}",
            who.label(),
            text(&out.stderr)
        );
        assert!(stdout.contains("inside=143"), "[{}] {stdout}", who.label());
    }
}

/// A file the session inherits open for appending (`3>>out.log`, a redirected stdout) lies
/// outside the write set, yet the session writes it: it joins the write set as a file, so a
/// program written through the descriptor neither executes nor loads (red-team finding:
/// `ld.so /proc/self/fd/3` ran it).
#[test]
fn an_inherited_output_file_is_written_never_run() {
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "inherited-fd");
        let out_file = w.owned.join("out.log");
        let inner = format!(
            "cat {payload} >&3; /lib64/ld-linux-x86-64.so.2 /proc/self/fd/3; echo loader=$?; {wx} loader /proc/self/fd/3; echo static=$?",
            payload = s(&tools().argv),
            wx = s(&wx),
        );
        let mut c = Command::new("/bin/sh");
        who.apply(&mut c);
        c.arg("-c")
            .arg(format!(
                "exec {cli} run --workspace {ws} -- /bin/sh -c '{inner}' 3>>{out}",
                cli = s(&tools().cli),
                ws = s(&w.ws),
                out = s(&out_file),
            ))
            .env("HOME", &w.home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir(&w.ws)
            .stdin(Stdio::null());
        let out = c.output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let label = who.label();
        assert!(
            !stdout.contains("ARGV"),
            "[{label}] the written program ran\n{stdout}\n{stderr}"
        );
        assert!(
            stdout.contains("loader=126"),
            "[{label}] {stdout}\n{stderr}"
        );
        assert!(stdout.contains("static="), "[{label}] {stdout}\n{stderr}");
    }
}

/// A session whose output goes to a file shares that file's offset with the commands around
/// it, as any command does (red-team finding: reopened descriptors overwrote each other).
#[test]
fn output_redirected_to_a_file_keeps_its_order() {
    for who in identities() {
        let w = World::new(who, "redirect");
        let log = w.owned.join("log");
        let mut c = Command::new("/bin/sh");
        who.apply(&mut c);
        c.arg("-c")
            .arg(format!(
                "{{ echo start; {cli} run --workspace {ws} -- sh -c 'echo out-1; echo err-2 >&2; echo out-3' 2>&1; echo end; }} > {log}",
                cli = s(&tools().cli),
                ws = s(&w.ws),
                log = s(&log),
            ))
            .env("HOME", &w.home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir(&w.ws)
            .stdin(Stdio::null());
        let out = c.output().unwrap();
        let got = std::fs::read_to_string(&log).unwrap();
        let got: Vec<&str> = got
            .lines()
            .filter(|l| !l.starts_with("execguard:"))
            .collect();
        assert_eq!(
            got,
            ["start", "out-1", "err-2", "out-3", "end"],
            "[{}] {}",
            who.label(),
            text(&out.stderr)
        );
    }
}

/// TIOCSTI would type commands into the operator's terminal, to run unguarded after the
/// session (red-team finding): the filter refuses it (EPERM, where a non-terminal says ENOTTY).
#[test]
fn the_session_cannot_type_into_a_terminal() {
    for who in identities() {
        let w = World::new(who, "tiocsti");
        let out = w.session(
            &[],
            "python3 -c 'import fcntl, termios\ntry:\n    fcntl.ioctl(0, termios.TIOCSTI, b\"x\")\nexcept OSError as e:\n    print(\"errno\", e.errno)'",
        );
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("errno 1"),
            "[{}] {stdout}{}",
            who.label(),
            text(&out.stderr)
        );
    }
}

/// A descriptor open for writing on a file with no name (deleted, a memfd) cannot be covered
/// by the partition: the session refuses to start (red-team finding: a static loader ran a
/// program written through it).
#[test]
fn an_inherited_writable_unnamed_file_refuses_the_start() {
    for who in identities() {
        let w = World::new(who, "unnamed-fd");
        let gone = w.owned.join("gone");
        let mut c = Command::new("/bin/sh");
        who.apply(&mut c);
        c.arg("-c")
            .arg(format!(
                "exec 4>{gone}; rm {gone}; exec {cli} run --workspace {ws} -- true",
                gone = s(&gone),
                cli = s(&tools().cli),
                ws = s(&w.ws),
            ))
            .env("HOME", &w.home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir(&w.ws)
            .stdin(Stdio::null());
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "[{}]", who.label());
        assert!(
            text(&out.stderr).contains("inherited_fd_unnamed"),
            "[{}] {}",
            who.label(),
            text(&out.stderr)
        );
    }
}

/// The record names directories, not just names: a recorded exec dir removed and made again
/// (by a session) is not the recorded one; and the record's place may not be a planted
/// symlink (red-team findings).
#[test]
fn the_exec_dir_record_trusts_directories_not_names() {
    for who in identities() {
        let w = World::new(who, "record-identity");
        assert!(w.session(&[], "true").status.success());
        std::fs::remove_dir_all(&w.local_bin).unwrap();
        let planted = w.local_bin.join("planted");
        let out = w.session(
            &[],
            &format!(
                "mkdir -p {bin} && cp {payload} {planted} && chmod +x {planted}",
                bin = s(&w.local_bin),
                payload = s(&tools().argv),
                planted = s(&planted)
            ),
        );
        // In the session's home layer (docs/session.md), not the operator's home.
        assert!(w.sees(&planted), "[{}] {}", who.label(), text(&out.stderr));
        assert!(
            !planted.exists(),
            "[{}] the plant reached the real home",
            who.label()
        );
        let out = w.session(&[], &format!("{}; echo rc=$?", s(&planted)));
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("rc=126") && !stdout.contains("ARGV"),
            "[{}] {stdout}{}",
            who.label(),
            text(&out.stderr)
        );
        // The notice that the recorded directory was "made again" is the real home's, where
        // the session's mkdir never landed (its home layer has it).

        let v = World::new(who, "record-link");
        let target = v.owned.join("elsewhere");
        std::fs::create_dir_all(v.home.join(".config")).unwrap();
        std::fs::create_dir_all(&target).unwrap();
        std::os::unix::fs::symlink(&target, v.home.join(".config/execguard")).unwrap();
        who.own(&v.home);
        let out = v.session(&[], "true");
        assert_eq!(
            out.status.code(),
            Some(2),
            "[{}] {}",
            who.label(),
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("exec_dir_record_untrusted"),
            "[{}] {}",
            who.label(),
            text(&out.stderr)
        );
    }
}

/// Another mount of the workspace's file system (a bind mount, a btrfs top-level mount) gives
/// what the session writes a second name, outside the write set. That name joins it: the guard
/// refuses a written program by it, and its mount is noexec. Before, Landlock and the guard
/// (which go by name) both took it for the execute side, and a written program ran by it. A
/// policy that leaves the name out is refused by the seal. Needs root to make the bind.
#[test]
fn a_second_name_of_the_workspace_joins_the_write_set() {
    if !root_can_mount("a second name of the workspace (making a bind needs root)") {
        return;
    }
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "alias-ws");
        let (x, alias) = (w.ws.join("x"), w.owned.join("x"));
        let script = format!(
            "cp {argv} {x} && chmod +x {x} && {alias} a; {wx} loader {alias} 2>&1 | head -1",
            argv = s(&tools().argv),
            x = s(&x),
            alias = s(&alias),
            wx = s(&wx),
        );
        let bind = format!("mount --bind {} {}", s(&w.ws), s(&w.owned));
        let out = w.session_after(&bind, "-v", &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("ARGV"), "[{label}] {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!("denied mutable_native: {}", s(&alias)))
                && stderr.contains(&format!("write-set mount {}", s(&w.owned))),
            "[{label}] {stderr}"
        );
        // The same session from a policy made before the bind: the seal refuses it.
        let policy = w.ws.join("policy.toml");
        let mut c = Command::new(&tools().cli);
        Identity::Current.apply(&mut c);
        let made = c
            .args(["policy", "default", "--workspace"])
            .arg(&w.ws)
            .env("HOME", &w.home)
            .output()
            .unwrap();
        assert!(made.status.success(), "{}", text(&made.stderr));
        std::fs::write(&policy, &made.stdout).unwrap();
        let drop = match &w.who {
            Identity::Current => String::new(),
            who => format!(
                "setpriv --reuid={} --regid={} --clear-groups",
                who.uid(),
                who.gid()
            ),
        };
        // `doctor` names the second name that policy leaves out; the seal refuses it.
        let run = format!(
            "{bind} && {drop} env HOME={home} EXECGUARD_POLICY=\"$(cat {policy})\" {cli} doctor; \
             exec {drop} env HOME={home} XDG_RUNTIME_DIR={runtime} {cli} run --policy {policy} -- sh -c 'echo RAN'",
            home = s(&w.home),
            runtime = s(&w.who.own_dirs().1),
            cli = s(&tools().cli),
            policy = s(&policy),
        );
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &run])
            .current_dir(&w.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("\nRAN"), "[{label}] {stdout}");
        assert!(
            stdout.contains(&format!(
                "{} is also {}, outside the write set",
                s(&w.ws),
                s(&w.owned)
            )) && stdout.contains("write_set_aliased"),
            "[{label}] {stdout}"
        );
        assert!(
            stderr.contains(&format!(
                "write_set_aliased: {} is also reachable as {}",
                s(&w.ws),
                s(&w.owned)
            )),
            "[{label}] {stderr}"
        );
    }
}

/// An `--exec-dir` that shows a workspace directory (a bind of it) is refused: the session
/// would write its programs through the workspace's name. Before, the program ran. Needs root
/// to make the bind.
#[test]
fn an_exec_dir_that_is_a_second_name_of_the_workspace_is_refused() {
    if !root_can_mount("an exec dir bound from the workspace (making a bind needs root)") {
        return;
    }
    for who in identities() {
        let w = World::new(who, "alias-exec-dir");
        let (tools_dir, ws_bin) = (w.home.join("tools"), w.ws.join("bin"));
        for d in [&tools_dir, &ws_bin] {
            std::fs::create_dir_all(d).unwrap();
        }
        who.own(&w.home);
        who.own(&w.ws);
        let script = format!(
            "cp {argv} {ws_bin}/evil && chmod +x {ws_bin}/evil && {tools}/evil a",
            argv = s(&tools().argv),
            ws_bin = s(&ws_bin),
            tools = s(&tools_dir),
        );
        let bind = format!("mount --bind {} {}", s(&ws_bin), s(&tools_dir));
        let exec_dir = format!("--exec-dir={}", s(&tools_dir));
        let out = w.session_after(&bind, &exec_dir, &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert_eq!(out.status.code(), Some(2), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("ARGV"), "[{label}] {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!(
                "exec_dir_aliased: the exec dir {} is also reachable as {}",
                s(&tools_dir),
                s(&ws_bin)
            )),
            "[{label}] {stderr}"
        );
    }
}

/// A second name of `$HOME` (a bind mount; a btrfs top-level mount is the same) joins the
/// write set with its exec dirs: by that name too, `~/.local/bin` is read-only and its programs
/// run, and what the session writes does not. Before, the session planted a program in
/// `~/.local/bin` through the other name, and a written program ran by it. Needs root to make
/// the bind.
#[test]
fn a_second_name_of_home_keeps_its_exec_dirs_read_only() {
    if !root_can_mount("a second name of home (making a bind needs root)") {
        return;
    }
    for who in identities() {
        let w = World::new(who, "alias-home");
        let alias = w.owned.clone();
        let script = format!(
            "cp {argv} {alias}/.local/bin/planted 2>/dev/null && echo PLANTED; \
             cp {argv} {alias}/evil && chmod +x {alias}/evil && {alias}/evil a b c; \
             {alias}/.local/bin/mytool a",
            argv = s(&tools().argv),
            alias = s(&alias),
        );
        let bind = format!("mount --bind {} {}", s(&w.home), s(&alias));
        let out = w.session_after(&bind, "-v", &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("PLANTED"), "[{label}] {stdout}\n{stderr}");
        assert!(!w.local_bin.join("planted").exists(), "[{label}]");
        assert!(!stdout.contains("ARGV 4"), "[{label}] {stdout}\n{stderr}");
        assert!(stdout.contains("ARGV 2"), "[{label}] {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!("denied mutable_native: {}/evil", s(&alias)))
                && stderr.contains(&format!(
                    "exec dir mount {}/.local/bin: read-only",
                    s(&alias)
                )),
            "[{label}] {stderr}"
        );
    }
}

/// A discovered exec dir (`~/.local/bin`) shown inside the workspace by a bind mount, here
/// tucked beneath a tmpfs (`MOVE_MOUNT_BENEATH`: newer in the mount table, lower in the stack):
/// the session is refused, `exec_dir_aliased`. Dropped from the exec dirs instead, as before,
/// the session planted a program there that the next session ran. `--no-exec-dir` runs it
/// without the exec dir. Needs root to make the mounts.
#[test]
fn an_exec_dir_bound_into_the_workspace_refuses_the_session() {
    if !root_can_mount("an exec dir bound into the workspace (making a bind needs root)") {
        return;
    }
    let beneath = compile(&support_dir(), "beneath.c", "beneath", &[]);
    for who in identities() {
        let w = World::new(who, "alias-into-ws");
        let (tools_dir, cover) = (w.ws.join("tools"), w.owned.join("cover"));
        for d in [&tools_dir, &cover] {
            std::fs::create_dir_all(d).unwrap();
        }
        who.own(&w.ws);
        let script = format!(
            "cp {argv} {tools}/planted 2>/dev/null && echo PLANTED; echo RAN",
            argv = s(&tools().argv),
            tools = s(&tools_dir),
        );
        let setup = format!(
            "mount -t tmpfs cover {cover} && mount --bind {bin} {tools} && {beneath} {cover} {tools}",
            cover = s(&cover),
            bin = s(&w.local_bin),
            tools = s(&tools_dir),
            beneath = s(&beneath),
        );
        let out = w.session_after(&setup, "", &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert_eq!(out.status.code(), Some(2), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("RAN"), "[{label}] {stdout}");
        assert!(
            stderr.contains(&format!(
                "exec_dir_aliased: the exec dir {} is also reachable as {}",
                s(&w.local_bin),
                s(&tools_dir)
            )),
            "[{label}] {stderr}"
        );
        assert!(!w.local_bin.join("planted").exists(), "[{label}]");
        // Without the exec dir the session runs (and it is the user's to say).
        let without = format!("--no-exec-dir={}", s(&w.local_bin));
        let out = w.session_after(&setup, &without, &script);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(stdout.contains("RAN"), "[{label}] {stdout}\n{stderr}");
    }
}

/// Second names through a mount beneath the workspace (a directory outside bound into it) and
/// of a root that is its file system's own root (`/dev` bound into a chroot, with the tmpfs
/// of `/dev/shm`). Before, the first ran what the session wrote (only the root's own file
/// system was asked), and the second refused every session with an invalid policy (a name
/// with a trailing `/`). Needs root to make the binds.
#[test]
fn mounts_beneath_a_root_and_whole_file_systems_have_second_names_too() {
    if !root_can_mount("second names of inner mounts (making a bind needs root)") {
        return;
    }
    for who in identities() {
        let w = World::new(who, "alias-inner");
        let (cache, chroot_dev) = (w.ws.join("cache"), w.world.join("chroot/dev"));
        for d in [&cache, &chroot_dev] {
            std::fs::create_dir_all(d).unwrap();
        }
        who.own(&w.ws);
        let (x, outside_x) = (cache.join("x"), w.owned.join("x"));
        let shm = chroot_dev.join("shm/eg-alias");
        let script = format!(
            "cp {argv} {x} && chmod +x {x} && {outside_x} a b c; \
             cp {argv} {shm} && chmod +x {shm} && {shm} a b c; echo RAN",
            argv = s(&tools().argv),
            x = s(&x),
            outside_x = s(&outside_x),
            shm = s(&shm),
        );
        let setup = format!(
            "mount --bind {owned} {cache} && mount --rbind /dev {chroot_dev}",
            owned = s(&w.owned),
            cache = s(&cache),
            chroot_dev = s(&chroot_dev),
        );
        let out = w.session_after(&setup, "", &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        let _ = std::fs::remove_file("/dev/shm/eg-alias");
        assert!(stdout.contains("RAN"), "[{label}] {stdout}\n{stderr}");
        assert!(!stdout.contains("ARGV 4"), "[{label}] {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!("denied mutable_native: {}", s(&outside_x)))
                && stderr.contains(&format!("denied mutable_native: {}", s(&shm))),
            "[{label}] {stderr}"
        );
    }
}

/// An overlay shows its layers under a device of its own. A read-only one outside the write
/// set over a workspace layer, and one in the workspace whose upper layer lies outside, are
/// second names all the same: the kernel refuses what the session wrote by either name (a
/// static caller, which no preload sees, and the loader). A writable one outside over a
/// workspace layer refuses the session: joined to the write set, its writes into its upper
/// layer would be the session's. Before, the first two ran the program and the third started.
/// Needs root to make the overlays.
#[test]
fn an_overlay_is_a_second_name_of_its_layers() {
    if !root_can_mount("overlays over the workspace (making one needs root)") {
        return;
    }
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "alias-overlay");
        let (lower, over) = (w.world.join("lower"), w.world.join("over"));
        let (ws_lower, up, work) = (w.ws.join("lo"), w.ws.join("up"), w.ws.join("work"));
        let (inner, out_up, out_work) = (w.ws.join("ov"), w.owned.join("up"), w.owned.join("work"));
        for d in [
            &lower, &over, &ws_lower, &up, &work, &inner, &out_up, &out_work,
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        who.own(&w.ws);
        who.own(&w.owned);
        let mut script = String::new();
        for (write, run) in [
            (ws_lower.join("x"), over.join("x")),
            (inner.join("y"), out_up.join("y")),
        ] {
            script.push_str(&format!(
                "cp {argv} {write} && chmod +x {write}; echo \"$({wx} exec {run} 2>&1 | head -1)\"; \
                 {wx} loader {run} 2>&1 | head -1;\n",
                argv = s(&tools().argv),
                write = s(&write),
                run = s(&run),
                wx = s(&wx),
            ));
        }
        let setup = format!(
            "mount -t overlay o -o ro,lowerdir={ws_lower}:{lower} {over} && \
             mount -t overlay o -o lowerdir={lower},upperdir={out_up},workdir={out_work} {inner}",
            ws_lower = s(&ws_lower),
            lower = s(&lower),
            over = s(&over),
            out_up = s(&out_up),
            out_work = s(&out_work),
            inner = s(&inner),
        );
        let out = w.session_after(&setup, "", &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("ARGV"), "[{label}] {stdout}\n{stderr}");
        assert_eq!(
            stdout.matches("FAILED execve 13").count(),
            2,
            "[{label}] {stdout}\n{stderr}"
        );
        assert_eq!(
            stdout.matches("failed to map segment").count(),
            2,
            "[{label}] {stdout}\n{stderr}"
        );
        // Writable, outside the write set, over a workspace layer: refused.
        let setup = format!(
            "mount -t overlay o -o lowerdir={lower},upperdir={up},workdir={work} {over}",
            lower = s(&lower),
            up = s(&up),
            work = s(&work),
            over = s(&over),
        );
        let out = w.session_after(&setup, "", "echo RAN");
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "[{label}] {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!(
                "write_set_aliased: the overlay at {} shows {}, which the session writes, and is writable",
                s(&over),
                s(&up)
            )),
            "[{label}] {stderr}"
        );
    }
}

/// A directory descriptor passed into the session (`3<WS`) was opened before its `noexec`
/// binds and leads into the old mounts: through `/proc/self/fd/3/x` a written file could be
/// mapped executable (a program that loads code itself; no exec is involved). The session
/// opens such descriptors again through its own mounts. Before, the map succeeded.
#[test]
fn an_inherited_directory_descriptor_leads_into_the_sessions_mounts() {
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "inherited-dir");
        let x = w.ws.join("x");
        let script = format!(
            "cp {argv} {x}; {wx} map {x}; {wx} map /proc/self/fd/3/x; ls /proc/self/fd/3/ | grep -c x",
            argv = s(&tools().argv),
            x = s(&x),
            wx = s(&wx),
        );
        let mut c = Command::new("sh");
        c.args(["-c", "exec 3<\"$1\"; shift; exec \"$@\"", "sh"])
            .arg(&w.ws)
            .arg(&tools().cli);
        who.apply(&mut c);
        let out = c
            .args(["run", "--workspace"])
            .arg(&w.ws)
            .args(["--", "sh", "-c", &script])
            .env("HOME", &w.home)
            .current_dir(&w.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("MAPPED"), "[{label}] {stdout}\n{stderr}");
        assert_eq!(
            stdout.matches("FAILED mmap 1\n").count(),
            2,
            "[{label}] {stdout}\n{stderr}"
        );
        assert!(stdout.ends_with("1\n"), "[{label}] {stdout}");
    }
}

/// A file of the workspace handed to the session as a descriptor (`<f`, `3<>f`) was opened
/// before its `noexec` binds: rewritten by its name, it could be mapped executable through
/// that descriptor, or through `/proc/self/fd/N` opened again (FFI `mmap`; no exec). A strict
/// session gets such descriptors opened again through its own mounts. Before, all three maps
/// succeeded.
#[test]
fn an_inherited_file_of_the_write_set_is_never_mapped_executable() {
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "inherited-file");
        let f = w.ws.join("data");
        std::fs::write(&f, vec![0u8; 4096]).unwrap();
        who.own(&f);
        let script = format!(
            "cat {argv} > {f}; {wx} mapfd 0; {wx} mapfd 3; {wx} map /proc/self/fd/3; echo DONE",
            argv = s(&tools().argv),
            f = s(&f),
            wx = s(&wx),
        );
        let mut c = Command::new("sh");
        c.args(["-c", "exec 0<\"$1\" 3<>\"$1\"; shift; exec \"$@\"", "sh"])
            .arg(&f)
            .arg(&tools().cli);
        who.apply(&mut c);
        let out = c
            .args(["run", "--workspace"])
            .arg(&w.ws)
            .args(["--", "sh", "-c", &script])
            .env("HOME", &w.home)
            .current_dir(&w.ws)
            .output()
            .unwrap();
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("MAPPED"), "[{label}] {stdout}\n{stderr}");
        assert_eq!(
            stdout.matches("FAILED mmap 1\n").count(),
            3,
            "[{label}] {stdout}\n{stderr}"
        );
        assert!(stdout.ends_with("DONE\n"), "[{label}] {stdout}\n{stderr}");
    }
}

/// Files of the workspace opened again for the session still go on where the session
/// stopped, for the commands around it: the supervisor moves the descriptions it was given to
/// the new ones' offsets. A read-only descriptor that no name leads to any more (a deleted
/// file, bash's here-document of more than a pipe's 64 KiB) is handed over as a sealed copy:
/// read as it was, never written (before this, such a descriptor was rewritable through
/// `/proc/self/fd/N` and mappable through the old mount).
#[test]
fn inherited_files_of_the_write_set_go_on_where_the_session_stopped() {
    for who in identities() {
        let w = World::new(who, "inherited-offsets");
        let (lines, log) = (w.ws.join("lines"), w.ws.join("log"));
        std::fs::write(&lines, "l1\nl2\nl3\n").unwrap();
        who.own(&lines);
        let script = format!(
            "({cli} run --workspace {ws} -- head -n1; echo ---; cat) < {lines}; \
             {{ echo start; {cli} run --workspace {ws} -- sh -c 'echo out-1; echo err-2 >&2; echo out-3' 2>&1; echo end; }} > {log}; \
             exec 5<{lines}; rm {lines}; {cli} run --workspace {ws} -- sh -c 'echo x >> /proc/self/fd/5 || echo unwritable; cat <&5' <&5; echo status=$?; \
             {cli} run --workspace {ws} -- wc -c <<EOF\n$(head -c 70000 /dev/zero | tr '\\0' a)\nEOF\n",
            cli = s(&tools().cli),
            ws = s(&w.ws),
            lines = s(&lines),
            log = s(&log),
        );
        let mut c = Command::new("/bin/bash");
        who.apply(&mut c);
        c.arg("-c")
            .arg(script)
            .env("HOME", &w.home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir(&w.ws)
            .stdin(Stdio::null());
        let out = c.output().unwrap();
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert_eq!(
            stdout, "l1\n---\nl2\nl3\nunwritable\nl1\nl2\nl3\nstatus=0\n70001\n",
            "[{label}] {stdout}\n{stderr}"
        );
        let got = std::fs::read_to_string(&log).unwrap();
        let got: Vec<&str> = got
            .lines()
            .filter(|l| !l.starts_with("execguard:"))
            .collect();
        assert_eq!(
            got,
            ["start", "out-1", "err-2", "out-3", "end"],
            "[{label}] {stderr}"
        );
    }
}

/// A file the session's user cannot write keeps its descriptor (a root-owned log handed to
/// a non-root session): nothing the session writes can be mapped through it. Before, the
/// session was refused, its file could not be opened again.
#[test]
fn a_file_the_session_cannot_write_keeps_its_descriptor() {
    for who in identities() {
        let w = World::new(who, "unwritable-fd");
        let log = w.ws.join("root.log");
        std::fs::write(&log, "").unwrap();
        // Owned by root, 0644: only root may write it.
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(format!("exec \"$@\" >> {log} 2>&1", log = s(&log)))
            .arg("sh");
        let drop = match &who {
            Identity::Current => vec![],
            who => vec![
                "setpriv".to_string(),
                format!("--reuid={}", who.uid()),
                format!("--regid={}", who.gid()),
                "--clear-groups".to_string(),
            ],
        };
        let out = c
            .args(&drop)
            .arg("env")
            .arg(format!("HOME={}", s(&w.home)))
            .arg(&tools().cli)
            .args(["run", "--workspace"])
            .arg(&w.ws)
            .args(["--", "sh", "-c", "echo written"])
            .current_dir(&w.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let got = std::fs::read_to_string(&log).unwrap();
        assert!(
            out.status.success() && got.lines().any(|l| l == "written"),
            "[{}] {:?} {got}",
            who.label(),
            out.status
        );
    }
}

/// A mount made on `/` after the process's root was set is never reached by a lookup from
/// `/`, so it hides nothing: a bind of the workspace elsewhere is still a second name (a
/// static caller and the loader are refused by it). Before, the search climbed that stack and
/// found no second name, and the written program ran by the bind's name (as root; a non-root
/// session there is refused, its user namespace cannot be made). Needs root to make the mounts.
#[test]
fn a_mount_on_root_hides_no_second_name() {
    if !root_can_mount("a mount on / (making one needs root)") {
        return;
    }
    let wx = wx_probe();
    for who in identities() {
        let w = World::new(who, "alias-root-stack");
        let (x, alias) = (w.ws.join("x"), w.owned.join("x"));
        let script = format!(
            "cp {argv} {x} && chmod +x {x}; {wx} exec {alias}; {wx} loader {alias} 2>&1 | head -1; echo DONE",
            argv = s(&tools().argv),
            x = s(&x),
            alias = s(&alias),
            wx = s(&wx),
        );
        let setup = format!(
            "mount --bind {} {} && mount -t tmpfs top /",
            s(&w.ws),
            s(&w.owned)
        );
        let out = w.session_after(&setup, "", &script);
        let (stdout, stderr, label) = (text(&out.stdout), text(&out.stderr), who.label());
        assert!(!stdout.contains("ARGV"), "[{label}] {stdout}\n{stderr}");
        if who.is_root() {
            assert!(stdout.contains("DONE"), "[{label}] {stdout}\n{stderr}");
            assert!(
                stdout.contains("FAILED execve 13") && stdout.contains("failed to map segment"),
                "[{label}] {stdout}\n{stderr}"
            );
        } else {
            assert_eq!(out.status.code(), Some(2), "[{label}] {stdout}\n{stderr}");
        }
    }
}

/// A `$HOME` reached through a link where sessions write (`/tmp`) is refused: a session could
/// point the link at a home of its own, whose exec-dir record the next session would trust (a
/// review ran a planted program that way).
#[test]
fn a_home_reached_through_a_link_sessions_can_change_is_refused() {
    for who in identities() {
        let w = World::new(who, "home-link");
        let link =
            std::env::temp_dir().join(format!("eg-home-link-{}-{}", who.uid(), std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&w.home, &link).unwrap();
        let in_ws = w.ws.join("home-link");
        std::os::unix::fs::symlink(&w.home, &in_ws).unwrap();
        // The same link named from elsewhere (`..` walks back up to it), and one in the
        // workspace.
        let around = PathBuf::from(format!(
            "{}{}",
            "/..".repeat(w.home.components().count()),
            link.display()
        ));
        let around = w.home.join(around.strip_prefix("/").unwrap());
        for home in [&link, &around, &in_ws] {
            let mut c = Command::new(&tools().cli);
            who.apply(&mut c);
            let out = c
                .args(["run", "--workspace"])
                .arg(&w.ws)
                .args(["--", "true"])
                .env("HOME", home)
                .current_dir(&w.ws)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let err = text(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "[{}] {home:?} {err}",
                who.label()
            );
            assert!(
                err.contains("home_untrusted") && err.contains("set HOME to the directory itself"),
                "[{}] {home:?} {err}",
                who.label()
            );
        }
        let _ = std::fs::remove_file(&link);
    }
}
