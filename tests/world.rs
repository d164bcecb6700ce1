//! The session's own world (docs/session.md): what a session writes outside the workspace
//! never takes effect outside it, and it reaches no socket of an outside process. Each class
//! runs as root and as a non-root user; each has a positive control, the same attack with the
//! reduction flag that gives that part up, which must then take effect outside: so the test
//! can fail.

mod support;

use execguard_testkit::{identities, Identity};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{ok, s, session_command, text, tools, Fixture};

/// A fresh `$HOME` for `who` beside the fixture (outside every mutable root), with a user site
/// python reads.
fn home_for(f: &Fixture, who: &Identity) -> PathBuf {
    let home = f.base.join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    std::fs::write(home.join(".bashrc"), "# the operator's\n").unwrap();
    // The parents must be traversable by the non-root user.
    f.open_parents();
    who.own(&home);
    who.own(&f.ws);
    home
}

/// Where the operator's later commands leave their mark when they run a plant: a directory
/// `who` writes, outside every part of the world.
fn marker_for(f: &Fixture, who: &Identity) -> PathBuf {
    let dir = f.base.join("marks");
    std::fs::create_dir_all(&dir).unwrap();
    who.own(&dir);
    dir.join("marker")
}

/// `execguard run --workspace WS [flags] -- sh -c SCRIPT` as `who`, with `home` as `$HOME`.
fn session(f: &Fixture, who: &Identity, home: &Path, flags: &[&str], script: &str) -> Output {
    let mut c = session_command(f, true, flags, script);
    who.apply(&mut c);
    c.env("HOME", home);
    f.for_identity(who);
    c.output().unwrap()
}

/// The operator's own later command, outside any session, as `who`.
fn outside(f: &Fixture, who: &Identity, home: &Path, script: &str) -> Output {
    let mut c = f.plain("sh");
    who.apply(&mut c);
    c.env("HOME", home).args(["-c", script]);
    c.output().unwrap()
}

/// The home-layer attacks of issue 28 class 1: a `.bashrc` line, a `.pth` in python's user
/// site, `~/.gitconfig` with `core.fsmonitor`, `~/.ssh/config`. Each would make the operator's
/// next ordinary command write `marker`.
fn plant_in_home(marker: &Path) -> String {
    let m = s(marker);
    format!(
        "set -e
echo 'echo pwned > {m}' >> ~/.bashrc
site=$(python3 -c 'import site; print(site.getusersitepackages())')
mkdir -p \"$site\" ~/.ssh
echo 'import os; open(\"{m}\", \"w\").write(\"pwned\")' > \"$site/evil.pth\"
printf '[core]\\n\\tfsmonitor = \"echo pwned > {m}\"\\n' > ~/.gitconfig
printf 'Match exec \"echo pwned > {m}\"\\n' > ~/.ssh/config
echo planted"
    )
}

/// What the operator runs next: a login shell's rc file, python, git status in a repository,
/// `ssh -G`.
fn operators_next_commands(f: &Fixture, who: &Identity, home: &Path) {
    let repo = home.join("repo");
    let script = format!(
        ". ~/.bashrc; python3 -c 1; git init -q {r} && git -C {r} status >/dev/null 2>&1; ssh -G example.invalid >/dev/null 2>&1; true",
        r = s(&repo)
    );
    let o = outside(f, who, home, &script);
    ok(&o, "the operator's next commands");
}

#[test]
fn what_a_session_writes_in_home_never_runs_outside_it() {
    for who in identities() {
        let f = Fixture::new("world-home");
        let home = home_for(&f, &who);
        let marker = marker_for(&f, &who);
        let o = session(&f, &who, &home, &[], &plant_in_home(&marker));
        ok(&o, &format!("{}: the session plants", who.label()));
        assert!(text(&o.stdout).contains("planted"));
        // The real home is untouched.
        assert_eq!(
            std::fs::read_to_string(home.join(".bashrc")).unwrap(),
            "# the operator's\n",
            "{}",
            who.label()
        );
        assert!(!home.join(".gitconfig").exists(), "{}", who.label());
        operators_next_commands(&f, &who, &home);
        assert!(
            !marker.exists(),
            "{}: the operator's next command ran what the session wrote",
            who.label()
        );
        // The workspace's next session has its layer: caches, logins and installs carry over.
        let o = session(&f, &who, &home, &[], "tail -1 ~/.bashrc; ls ~/.ssh");
        ok(&o, "the next session");
        assert!(
            text(&o.stdout).contains("echo pwned"),
            "{}",
            text(&o.stdout)
        );
        // And the layer's store is hidden in it.
        let o = session(
            &f,
            &who,
            &home,
            &[],
            "ls -A ~/.local/state/execguard/homes 2>/dev/null | wc -l",
        );
        ok(&o, "the store");
        assert_eq!(text(&o.stdout).trim(), "0", "{}", who.label());
        // `execguard home diff` names it; `accept` hands back only the path named.
        let mut diff = f.plain(&tools().cli);
        who.apply(&mut diff);
        let d = diff
            .env("HOME", &home)
            .args(["home", "diff", "--workspace"])
            .arg(&f.ws)
            .output()
            .unwrap();
        ok(&d, "home diff");
        let listed = text(&d.stdout);
        assert!(
            listed.contains(&format!("changed {}", s(&home.join(".bashrc")))),
            "{listed}"
        );
        assert!(listed.contains("added "), "{listed}");
        let mut accept = f.plain(&tools().cli);
        who.apply(&mut accept);
        let a = accept
            .env("HOME", &home)
            .args(["home", "accept", "--workspace"])
            .arg(&f.ws)
            .arg(".ssh/config")
            .output()
            .unwrap();
        ok(&a, "home accept");
        assert!(home.join(".ssh/config").exists());
        assert!(
            !home.join(".gitconfig").exists(),
            "accept handed back more than named"
        );
        let mut discard = f.plain(&tools().cli);
        who.apply(&mut discard);
        let d = discard
            .env("HOME", &home)
            .args(["home", "discard", "--workspace"])
            .arg(&f.ws)
            .output()
            .unwrap();
        ok(&d, "home discard");
        let o = session(&f, &who, &home, &[], "tail -1 ~/.bashrc");
        assert_eq!(text(&o.stdout), "# the operator's\n", "{}", who.label());
    }
}

#[test]
fn the_shared_home_reduction_is_what_lets_a_plant_run_outside() {
    // The positive control of the test above: with the home layer given up, the same plant
    // takes effect outside.
    for who in identities() {
        let f = Fixture::new("world-home-shared");
        let home = home_for(&f, &who);
        let marker = marker_for(&f, &who);
        let o = session(
            &f,
            &who,
            &home,
            &["--allow-shared-home"],
            &plant_in_home(&marker),
        );
        ok(&o, "the session plants");
        assert!(
            text(&o.stderr).contains("--allow-shared-home"),
            "the reduction is said: {}",
            text(&o.stderr)
        );
        operators_next_commands(&f, &who, &home);
        assert!(marker.exists(), "{}: the control did not leak", who.label());
    }
}

#[test]
fn temp_and_runtime_dirs_are_the_sessions_own() {
    for who in identities() {
        let f = Fixture::new("world-temp");
        let home = home_for(&f, &who);
        let tag = format!("execguard-world-{}", std::process::id());
        // The operator's file in /tmp is not the session's to see.
        let theirs = f.tmp.join("operators-secret");
        std::fs::write(&theirs, "secret").unwrap();
        let script = format!(
            "test -e {theirs} && echo saw-outside; for d in /tmp /var/tmp /dev/shm; do echo x > $d/{tag}; done; echo done",
            theirs = s(&theirs)
        );
        let o = session(&f, &who, &home, &[], &script);
        ok(&o, "the session writes its temp dirs");
        assert_eq!(text(&o.stdout), "done\n", "{}", who.label());
        for d in ["/tmp", "/var/tmp", "/dev/shm"] {
            let p = Path::new(d).join(&tag);
            assert!(
                !p.exists(),
                "{}: {} outlived the session",
                who.label(),
                p.display()
            );
        }
        // Positive control: shared, the session sees and leaves them.
        let o = session(&f, &who, &home, &["--allow-shared-temp"], &script);
        ok(&o, "control");
        assert!(
            text(&o.stdout).contains("saw-outside"),
            "{}",
            text(&o.stdout)
        );
        for d in ["/tmp", "/var/tmp", "/dev/shm"] {
            let p = Path::new(d).join(&tag);
            assert!(p.exists(), "{}: control", who.label());
            std::fs::remove_file(p).unwrap();
        }
    }
}

/// A UNIX listener outside the session, in a place no part of the world covers, reachable
/// by permission to every user; it prints one line per connection.
fn listener(f: &Fixture) -> (std::process::Child, PathBuf) {
    let sock = f.base.join("outside.sock");
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import os,socket,sys\n\
             s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1],0o777); s.listen(8)\n\
             print('ready', flush=True)\n\
             while True:\n  c,_=s.accept(); print('connected', flush=True); c.close()",
        ])
        .arg(&sock)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let mut line = String::new();
    let out = child.stdout.as_mut().unwrap();
    std::io::BufReader::new(out).read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    (child, sock)
}

fn connect_script(sock: &Path) -> String {
    format!(
        "python3 -c 'import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect(sys.argv[1]); print(\"reached\")\nexcept OSError as e: print(\"refused\", e.errno)' {}",
        s(sock)
    )
}

#[test]
fn an_outside_processs_socket_is_out_of_reach_unless_shared() {
    for who in identities() {
        let f = Fixture::new("world-socket");
        let home = home_for(&f, &who);
        let (mut child, sock) = listener(&f);
        let o = session(&f, &who, &home, &[], &connect_script(&sock));
        let hidden = text(&o.stdout);
        let o2 = session(
            &f,
            &who,
            &home,
            &["--share-socket", s(&sock)],
            &connect_script(&sock),
        );
        let o3 = session(
            &f,
            &who,
            &home,
            &["--allow-outside-sockets"],
            &connect_script(&sock),
        );
        child.kill().unwrap();
        child.wait().unwrap();
        ok(&o, "the session");
        assert!(hidden.starts_with("refused"), "{}: {hidden}", who.label());
        // Declared, it is reachable; the reduction too (the positive control).
        ok(&o2, "shared");
        assert_eq!(text(&o2.stdout), "reached\n", "{}", who.label());
        ok(&o3, "control");
        assert_eq!(text(&o3.stdout), "reached\n", "{}", who.label());
    }
}

#[test]
fn the_report_names_the_world() {
    for who in identities() {
        let f = Fixture::new("world-report");
        let home = home_for(&f, &who);
        let o = session(&f, &who, &home, &["-v"], "true");
        ok(&o, "the session");
        let err = text(&o.stderr);
        // `execguard doctor` inside the session sees the same world.
        let doctor = format!("{} doctor", s(&tools().cli));
        let d = session(&f, &who, &home, &[], &doctor);
        ok(&d, "doctor in the session");
        let seen = text(&d.stdout);
        for line in [
            "home: a layer of its own",
            "/tmp /var/tmp /dev/shm",
            "reachable here: 0",
        ] {
            assert!(
                seen.contains(line),
                "{}: no {line:?} in {seen}",
                who.label()
            );
        }
        for line in [
            "world: home layer ",
            "world: own temp and runtime dirs: /tmp /var/tmp /dev/shm",
            "world: outside sockets hidden: ",
        ] {
            assert!(err.contains(line), "{}: no {line:?} in {err}", who.label());
        }
    }
}

#[test]
fn a_setuid_file_the_session_leaves_in_the_workspace_is_cleared_at_its_end() {
    for who in identities() {
        let f = Fixture::new("world-setuid");
        let home = home_for(&f, &who);
        let p = f.ws.join("left-setuid");
        let script = format!(
            "cp /bin/true {p} && chmod 6755 {p} && test -u {p} && test -g {p} && echo set",
            p = s(&p)
        );
        let o = session(&f, &who, &home, &[], &script);
        ok(&o, "the session");
        // The control: inside, the bits were set.
        assert_eq!(
            text(&o.stdout),
            "set\n",
            "{}: {}",
            who.label(),
            text(&o.stderr)
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o7000,
            0,
            "{}: mode {mode:o} after the session",
            who.label()
        );
        assert!(
            text(&o.stderr).contains("cleared the setuid/setgid bits"),
            "{}: {}",
            who.label(),
            text(&o.stderr)
        );
        assert!(
            std::fs::read_to_string(&f.audit)
                .unwrap()
                .contains("privileges_cleared"),
            "{}: recorded",
            who.label()
        );
    }
}
