//! git over ssh leaves the session through the supervisor's proxy (docs/session.md,
//! *Network*): the git wrapper gives the real git `ssh -o ProxyCommand='execguard connect %h
//! %p'`, a program beside the wrapper the session cannot replace, and the proxy refuses the
//! host's loopback and own addresses on port 22 as on any other. As root and as a non-root user.
//!
//! The machine's own sshd would be one of the host's addresses, which the proxy refuses, as it
//! must. So the operator here is made a world with a real outside: the test (root) makes two
//! network namespaces joined by a veth pair, the operator's (default route through the pair)
//! and a remote one running a real sshd on `10.203.X.2:22`. Each scenario runs `execguard
//! run` in the operator's namespace, with a home of its own on a tmpfs over the identity's
//! passwd home (ssh reads `~/.ssh` from there, not `$HOME`).

mod support;

use execguard_testkit::{identities, Identity};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{session_fixture as fixture, shown, text, tools, Fixture};

const SSHD: &str = "/usr/sbin/sshd";

/// The two namespaces, the sshd and its repository; removed on drop.
struct Remote {
    operator_ns: String,
    remote_ns: String,
    dir: PathBuf,
    /// The sshd's address, outside the operator's host.
    remote: String,
    /// The operator's own address on the pair (the host's, to the proxy).
    own: String,
}

fn run(c: &mut Command) -> Output {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{c:?}: {}", shown(&o));
    o
}

fn ip(args: &[&str]) {
    run(Command::new("ip").args(args));
}

impl Remote {
    fn new(dir: &Path) -> Remote {
        let id = std::process::id() % 10_000;
        let net = 1 + std::process::id() % 250;
        let r = Remote {
            operator_ns: format!("egw{id}op"),
            remote_ns: format!("egw{id}rm"),
            dir: dir.to_path_buf(),
            remote: format!("10.203.{net}.2"),
            own: format!("10.203.{net}.1"),
        };
        let (op, rm) = (r.operator_ns.as_str(), r.remote_ns.as_str());
        let (op_if, rm_if) = (format!("egw{id}o"), format!("egw{id}r"));
        ip(&["netns", "add", op]);
        ip(&["netns", "add", rm]);
        ip(&[
            "link", "add", &op_if, "type", "veth", "peer", "name", &rm_if,
        ]);
        ip(&["link", "set", &op_if, "netns", op]);
        ip(&["link", "set", &rm_if, "netns", rm]);
        ip(&[
            "-n",
            op,
            "addr",
            "add",
            &format!("{}/24", r.own),
            "dev",
            &op_if,
        ]);
        ip(&[
            "-n",
            rm,
            "addr",
            "add",
            &format!("{}/24", r.remote),
            "dev",
            &rm_if,
        ]);
        for (ns, dev) in [
            (op, "lo"),
            (rm, "lo"),
            (op, op_if.as_str()),
            (rm, rm_if.as_str()),
        ] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        ip(&["-n", op, "route", "add", "default", "via", &r.remote]);

        // The operator's ssh set-up: a key the sshd takes, its host key trusted.
        let ssh = dir.join("dot-ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        let keygen = |path: &Path| {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", ""])
                .arg("-f")
                .arg(path));
        };
        keygen(&ssh.join("id_ed25519"));
        keygen(&dir.join("host_key"));
        std::fs::copy(ssh.join("id_ed25519.pub"), dir.join("authorized_keys")).unwrap();
        std::fs::write(
            ssh.join("config"),
            "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  BatchMode yes\n  LogLevel ERROR\n",
        )
        .unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "ListenAddress {}:22\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 UsePAM no\nStrictModes no\nPasswordAuthentication no\nPidFile {d}/sshd.pid\n",
                r.remote,
                d = dir.display()
            ),
        )
        .unwrap();
        // The repository the session clones and pushes to, with one commit.
        let repo = dir.join("srv/repo.git");
        let seed = dir.join("seed");
        run(Command::new("git")
            .args(["init", "-q", "--bare", "-b", "main"])
            .arg(&repo));
        run(Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .arg(&seed));
        std::fs::write(seed.join("f"), "from the remote\n").unwrap();
        let git = |args: &[&str]| {
            run(Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@e"])
                .arg("-C")
                .arg(&seed)
                .args(args));
        };
        git(&["add", "f"]);
        git(&["commit", "-qm", "one"]);
        git(&["push", "-q", repo.to_str().unwrap(), "main"]);
        run(Command::new("ip")
            .args(["netns", "exec", rm, SSHD, "-f"])
            .arg(dir.join("sshd_config"))
            .arg("-E")
            .arg(dir.join("sshd.log")));
        r
    }

    fn url(&self, addr: &str) -> String {
        format!(
            "ssh://root@{addr}{}",
            self.dir.join("srv/repo.git").display()
        )
    }

    /// `execguard run --workspace WS --audit LOG -- sh -c SCRIPT` as `who` in the operator's
    /// namespace, its passwd home a tmpfs holding the operator's `~/.ssh`; then, outside the
    /// session, `after` (the operator's next commands, same home).
    fn session(&self, f: &Fixture, who: &Identity, script: &str, after: &str) -> Output {
        let home = if who.is_root() {
            PathBuf::from("/root")
        } else {
            who.home()
        };
        let (uid, gid) = (who.uid(), who.gid());
        let outer = format!(
            "set -e; mount -t tmpfs -o mode=0700,uid={uid},gid={gid} egw-home {h}; \
             cp -r {ssh} {h}/.ssh; chown -R {uid}:{gid} {h}/.ssh; \
             setpriv --reuid {uid} --regid {gid} --clear-groups env -i PATH={path} HOME={h} \
               USER=u LANG=C {eg} run --workspace {ws} --audit {log} -- sh -c \"$1\"; \
             cd {ws}; setpriv --reuid {uid} --regid {gid} --clear-groups env -i \
               PATH=/usr/bin:/bin HOME={h} sh -c \"$2\"",
            h = home.display(),
            ssh = self.dir.join("dot-ssh").display(),
            path = f.path_var().to_string_lossy(),
            eg = tools().cli.display(),
            ws = f.ws.display(),
            log = f.audit.display(),
        );
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.operator_ns,
                "unshare",
                "-m",
                "sh",
                "-c",
                &outer,
            ])
            .args(["sh", script, after])
            .current_dir(&f.ws)
            .output()
            .unwrap()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("sshd.pid")) {
            if let Ok(pid) = pid.trim().parse::<i32>() {
                // SAFETY: kill takes plain integers; the pid is the sshd this test started.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        for ns in [&self.operator_ns, &self.remote_ns] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn git_over_ssh_leaves_through_the_proxy_and_the_hosts_own_port_22_does_not() {
    if !execguard_testkit::require_root(
        "git over ssh through the proxy (makes network namespaces and runs an sshd)",
    ) {
        return;
    }
    if !Path::new(SSHD).exists() {
        execguard_testkit::skip(
            "git over ssh through the proxy: no /usr/sbin/sshd (Debian: openssh-server)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let remote = Remote::new(dir.path());
    for who in identities() {
        let f = fixture("world-ssh", &who);
        let script = format!(
            // The session's own ssh config: a Match exec and a ProxyCommand naming an ELF it
            // wrote (directly, and as the interpreter of a script it wrote).
            "cp /usr/bin/touch payload; printf '#!%s/payload\\n' \"$PWD\" > hook; chmod +x hook; \
             printf 'Match exec \"%s/payload %s/ran-match\"\\nMatch exec \"%s/hook %s/ran-hook\"\\nHost *\\n  ProxyCommand %s/payload %s/ran-proxy\\n' \
               \"$PWD\" \"$PWD\" \"$PWD\" \"$PWD\" \"$PWD\" \"$PWD\" >> ~/.ssh/config; \
             git clone -q {url} c && cat c/f && cd c && echo more >> f && \
             git -c user.name=s -c user.email=s@e commit -qam two && git push -q origin HEAD:refs/heads/topic && cd ..; \
             git ls-remote {lo} >/dev/null 2>&1 || echo loopback-refused; \
             git ls-remote {own} >/dev/null 2>&1 || echo own-refused; true",
            url = remote.url(&remote.remote),
            lo = remote.url("127.0.0.1"),
            own = remote.url(&remote.own),
        );
        // The operator's next ssh outside reads the real ~/.ssh/config: nothing of the
        // session's runs.
        let after = "ssh -G anyhost >/dev/null; ls ran-* 2>/dev/null; echo after-done";
        let o = remote.session(&f, &who, &script, after);
        let out = text(&o.stdout);
        let err = text(&o.stderr);
        let label = who.label();
        assert!(
            out.contains("from the remote"),
            "{label}: the clone over ssh failed: {}",
            shown(&o)
        );
        assert!(out.contains("loopback-refused"), "{label}: {}", shown(&o));
        assert!(out.contains("own-refused"), "{label}: {}", shown(&o));
        assert!(out.contains("after-done"), "{label}: {}", shown(&o));
        assert!(
            !out.contains("ran-"),
            "{label}: a program the session wrote ran: {}",
            shown(&o)
        );
        // The push reached the remote.
        let branches = run(Command::new("git")
            .arg("-C")
            .arg(dir.path().join("srv/repo.git"))
            .args(["branch", "--list", "topic"]));
        assert!(
            text(&branches.stdout).contains("topic"),
            "{label}: the push did not arrive"
        );
        run(Command::new("git")
            .arg("-C")
            .arg(dir.path().join("srv/repo.git"))
            .args(["branch", "-D", "-q", "topic"]));
        // Refused by the proxy with its reason, seen and recorded; the ELF refused by the guard.
        let lo_line = "network_refused: 127.0.0.1:22 is the host's loopback";
        let own_line = format!(
            "network_refused: {}:22 is an address of the host's own",
            remote.own
        );
        assert!(err.contains(lo_line), "{label}: {err}");
        assert!(err.contains(&own_line), "{label}: {err}");
        assert!(
            err.contains("mutable_native"),
            "{label}: the Match exec ELF was not refused: {err}"
        );
        let records = f.audit_records();
        for dest in ["127.0.0.1:22".to_string(), format!("{}:22", remote.own)] {
            assert!(
                records.iter().any(|r| r["reason"] == "network_refused"
                    && r["path"].as_str().is_some_and(|p| p.starts_with(&dest))),
                "{label}: no record of {dest}"
            );
        }
    }
}
