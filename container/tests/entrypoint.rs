//! Runs the real binaries as root inside a private mount and PID namespace, chrooted into a
//! throw-away root file system built in a temporary directory: the host's `/etc`, `/run` and
//! `/state` are never touched. The entrypoint is PID 1 of the new namespace, as in a container.
//!
//! These tests need root (CI runs as root) and `unshare`, `mount`, `chroot` from util-linux;
//! they fail, never skip, when those are missing.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use execguard_container::manifest::sha256_hex;

const LIBEXEC: &str = "usr/local/libexec/execguard";
const CONTROL_FILES: [&str; 4] = [
    "/etc/ld.so.preload",
    "/usr/local/lib/libexecguard.so",
    "/usr/local/libexec/execguard/execguard-entrypoint",
    "/usr/local/libexec/execguard/execguard-provider",
];

/// Makes $1 a mount of its own (a container's root is one: a chroot into a plain directory has
/// no mount on / in its table, and the seal refuses that), mounts the host's /usr read-only,
/// /dev, a fresh /proc and a tmpfs /run, then execs the rest of the arguments chrooted into $1.
const ENTER: &str = r#"
set -e
R=$1; shift
mount --bind "$R" "$R"
for d in bin sbin lib lib32 lib64 libexec share; do
  if [ -d /usr/$d ] && [ ! -L /usr/$d ]; then
    mkdir -p "$R/usr/$d"
    mount --bind /usr/$d "$R/usr/$d"
    mount -o remount,bind,ro "$R/usr/$d"
  fi
done
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mount -t tmpfs -o mode=755 tmpfs "$R/run"
exec chroot "$R" "$@"
"#;

/// A prefix that plays the platform for an unprivileged start: it mounts every write-set root
/// `noexec,nosuid,nodev` (a bind onto itself first where it is not a mount), as Kubernetes'
/// `bindMountOptions` does, then runs the rest.
const PLATFORM_NOEXEC: [&str; 4] = [
    "/bin/sh",
    "-c",
    r#"for d in /workspace /state /tmp /var/tmp /dev/shm /run; do
  [ -d "$d" ] || continue
  mountpoint -q "$d" || mount --bind "$d" "$d"
  mount -o remount,bind,noexec,nosuid,nodev "$d"
done
exec "$@""#,
    "platform",
];

struct Rootfs {
    dir: PathBuf,
    digest: String,
}

impl Drop for Rootfs {
    fn drop(&mut self) {
        // Mounts lived in the test's private namespace and are gone; remove the files.
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            eprintln!("could not remove {}: {e}", self.dir.display());
        }
    }
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl Rootfs {
    fn new(tag: &str) -> Self {
        assert_eq!(
            euid_from_proc(),
            0,
            "integration tests run as root (CI does)"
        );
        let dir = std::env::temp_dir().join(format!("execguard-it-{tag}-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
        for d in ["usr", "dev", "proc", "run", "tmp", "workspace", "etc"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        // Merged-/usr style top-level links.
        for (link, target) in [
            ("bin", "usr/bin"),
            ("sbin", "usr/sbin"),
            ("lib", "usr/lib"),
            ("lib64", "usr/lib64"),
        ] {
            std::os::unix::fs::symlink(target, dir.join(link)).unwrap();
        }
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::set_permissions(dir.join("state"), std::fs::Permissions::from_mode(0o1777))
            .unwrap();
        std::fs::set_permissions(
            dir.join("workspace"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        write_mode(
            &dir.join("workspace/AGENTS.md"),
            "workspace agents\n",
            0o644,
        );
        write_mode(
            &dir.join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n",
            0o644,
        );
        write_mode(
            &dir.join("etc/group"),
            "root:x:0:\nnogroup:x:65534:\n",
            0o644,
        );
        write_mode(
            &dir.join("etc/shadow"),
            "root:*:19000:0:99999:7:::\n",
            0o640,
        );
        for f in ["ld.so.cache", "nsswitch.conf"] {
            if Path::new("/etc").join(f).exists() {
                std::fs::copy(Path::new("/etc").join(f), dir.join("etc").join(f)).unwrap();
            }
        }
        write_mode(&dir.join("etc/ld.so.preload"), "", 0o644);
        write_mode(
            &dir.join("usr/local/lib/libexecguard.so"),
            "stand-in for the guard library\n",
            0o644,
        );
        let libexec = dir.join(LIBEXEC);
        std::fs::create_dir_all(libexec.join("real")).unwrap();
        for (name, exe) in [
            (
                "execguard-entrypoint",
                env!("CARGO_BIN_EXE_execguard-entrypoint"),
            ),
            (
                "execguard-provider",
                env!("CARGO_BIN_EXE_execguard-provider"),
            ),
        ] {
            std::fs::copy(exe, libexec.join(name)).unwrap();
            std::fs::set_permissions(libexec.join(name), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        // A stand-in provider that reports what it was given.
        let fake = "#!/bin/sh\necho \"ARGV0:$0\"\necho \"ARGS:$*\"\necho \"HOME:$HOME\"\necho \"TMPDIR:$TMPDIR\"\necho \"PATH:$PATH\"\necho \"UID:$(id -u) GID:$(id -g)\"\necho \"LD_PRELOAD:${LD_PRELOAD-unset}\"\necho \"CHAIN:${EXECGUARD_CHAIN_FD-unset}\"\ncat \"$HOME/.claude/CLAUDE.md\" 2>/dev/null || true\n";
        for agent in ["codex", "claude", "gemini", "copilot"] {
            write_mode(&libexec.join("real").join(agent), fake, 0o755);
        }
        // The manifest, generated by the entrypoint's own build-time entry point.
        let out = Command::new(env!("CARGO_BIN_EXE_execguard-entrypoint"))
            .arg("--generate-manifest")
            .arg("--root")
            .arg(&dir)
            .args(CONTROL_FILES)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "generate: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let manifest = String::from_utf8(out.stdout).unwrap();
        assert_eq!(manifest.lines().count(), CONTROL_FILES.len());
        write_mode(&libexec.join("control-plane.sha256"), &manifest, 0o444);
        let digest = sha256_hex(manifest.as_bytes());
        Rootfs { dir, digest }
    }

    fn env(&self, agent: &str) -> Vec<(String, String)> {
        [
            ("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            ("AGENT_NAME", agent),
            ("EXECGUARD_PROFILE", "strict"),
            ("EXECGUARD_AUTONOMY", "yolo"),
            ("EXECGUARD_MUTABILITY", "ephemeral"),
            ("EXECGUARD_HOST_UID", "4242"),
            ("EXECGUARD_HOST_GID", "4343"),
            ("EXECGUARD_HOST_USER", "Test User"),
            ("EXECGUARD_MANIFEST_SHA256", &self.digest),
            // Harmless to the host tools the harness runs, and must not reach the child.
            ("LD_PRELOAD", "libc.so.6"),
            ("BASH_FUNC_ls%%", "() { echo evil; }"),
            ("ANTHROPIC_BASE_URL", "http://evil.invalid"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The command that runs `prefix... entrypoint args...` as PID 1 inside the test root.
    fn command(&self, env: &[(String, String)], prefix: &[&str], args: &[&str]) -> Command {
        let mut c = Command::new("unshare");
        c.args([
            "--mount",
            "--propagation",
            "private",
            "--pid",
            "--fork",
            "--",
            "/bin/sh",
            "-c",
            ENTER,
            "enter",
        ])
        .arg(&self.dir)
        .args(prefix)
        .arg(format!("/{LIBEXEC}/execguard-entrypoint"))
        .args(args)
        .env_clear()
        .envs(
            env.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )
        .stdin(Stdio::null());
        c
    }

    fn run(&self, env: &[(String, String)], args: &[&str]) -> Output {
        self.command(env, &[], args).output().unwrap()
    }
}

fn euid_from_proc() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).map(|s| s.parse().unwrap()))
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn status_field<'a>(status: &'a str, field: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
        .unwrap_or_else(|| panic!("no {field} in {status}"))
        .trim()
}

#[test]
fn the_child_runs_as_the_mapped_user_with_no_capabilities_and_no_new_privs() {
    let root = Rootfs::new("drop");
    let script = "cat /proc/self/status; echo UMASK:$(umask); \
        echo STATE:$(cat /run/execguard/state/profile),$(cat /run/execguard/state/assurance),$(stat -c '%u:%a' /run/execguard/state/profile /run/execguard/state | tr '\\n' ' '); \
        if echo forged > /run/execguard/state/profile 2>/dev/null; then echo FORGED; fi; \
        if mv /run/execguard/state /run/execguard/x 2>/dev/null; then echo MOVED; fi; \
        echo HOME:$HOME; echo PRELOAD:${LD_PRELOAD-unset}; echo BASEURL:${ANTHROPIC_BASE_URL-unset}; \
        echo FUNC:$(env | grep -c BASH_FUNC || true); echo WHO:$(id -un); echo CWD:$(pwd)";
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/sh", "-c", script],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert_eq!(status_field(&stdout, "Uid"), "4242\t4242\t4242\t4242");
    assert_eq!(status_field(&stdout, "Gid"), "4343\t4343\t4343\t4343");
    assert_eq!(status_field(&stdout, "Groups"), "");
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(status_field(&stdout, set), "0000000000000000", "{set}");
    }
    assert_eq!(status_field(&stdout, "NoNewPrivs"), "1");
    assert!(stdout.contains("UMASK:0077"), "{stdout}");
    assert!(
        stdout.contains("STATE:strict,reduced:arbitrary-command,0:444 0:755"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("FORGED") && !stdout.contains("MOVED"),
        "{stdout}"
    );
    assert!(stdout.contains("HOME:/state/agent-home"), "{stdout}");
    assert!(
        stdout.contains("PRELOAD:unset")
            && stdout.contains("BASEURL:unset")
            && stdout.contains("FUNC:0"),
        "{stdout}"
    );
    assert!(stdout.contains("WHO:test_user"), "{stdout}");
    assert!(stdout.contains("CWD:/workspace"), "{stdout}");
    // The mapped user was added with a locked password.
    let passwd = std::fs::read_to_string(root.dir.join("etc/passwd")).unwrap();
    assert!(passwd.contains("test_user:x:4242:4343:"), "{passwd}");
    let shadow = std::fs::read_to_string(root.dir.join("etc/shadow")).unwrap();
    assert!(
        shadow.lines().any(|l| l == "test_user:!:::::::"),
        "{shadow}"
    );
}

#[test]
fn the_exit_status_of_the_child_is_the_exit_status_of_the_entrypoint() {
    let root = Rootfs::new("exit");
    for code in [0, 1, 7, 255] {
        let out = root.run(
            &root.env("codex"),
            &[
                "--arbitrary-command",
                "--",
                "/bin/sh",
                "-c",
                &format!("exit {code}"),
            ],
        );
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
    }
    let out = root.run(
        &root.env("codex"),
        &["--arbitrary-command", "--", "/no/such/command"],
    );
    assert_eq!(out.status.code(), Some(127));
    let out = root.run(
        &root.env("codex"),
        &["--arbitrary-command", "--", "/etc/passwd"],
    );
    assert_eq!(out.status.code(), Some(126));
}

/// Host pid of the entrypoint: the only child of the `unshare --fork` process.
fn entrypoint_pid(unshare: u32) -> i32 {
    let children =
        std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children")).unwrap();
    let pids: Vec<i32> = children
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 1, "{children}");
    pids[0]
}

fn run_until_ready_then_signal(
    root: &Rootfs,
    script: &str,
    sig: libc::c_int,
) -> (Option<i32>, String) {
    let mut child = root
        .command(
            &root.env("claude"),
            &[],
            &["--arbitrary-command", "--", "/bin/sh", "-c", script],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let pid = entrypoint_pid(child.id());
    // SAFETY: kill takes plain integers; `pid` is the live entrypoint we started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    (status.code(), rest.join("\n"))
}

#[test]
fn sigterm_is_forwarded_and_reported_as_128_plus_n() {
    let root = Rootfs::new("sigterm");
    let (code, _) =
        run_until_ready_then_signal(&root, "echo ready; exec sleep 1000", libc::SIGTERM);
    assert_eq!(code, Some(128 + libc::SIGTERM));
}

#[test]
fn sigusr1_reaches_the_child() {
    let root = Rootfs::new("sigusr1");
    let script = "trap 'echo got-usr1; exit 42' USR1; echo ready; while :; do sleep 0.05; done";
    let (code, rest) = run_until_ready_then_signal(&root, script, libc::SIGUSR1);
    assert_eq!(code, Some(42));
    assert_eq!(rest, "got-usr1");
}

#[test]
fn orphaned_zombies_are_reaped_by_the_entrypoint() {
    let root = Rootfs::new("zombies");
    // The subshell exits at once, so the background child is re-parented to PID 1 (the
    // entrypoint). Once it has exited it must disappear from /proc: a zombie would stay.
    let script = r#"
        ( sh -c 'echo $$ > /state/tmp/orphan' & )
        while [ ! -s /state/tmp/orphan ]; do sleep 0.01; done
        pid=$(cat /state/tmp/orphan)
        echo ppid-of-orphan:$(sed -n 's/^PPid:\t//p' /proc/$pid/status 2>/dev/null)
        i=0
        while [ -d /proc/$pid ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done
        if [ -d /proc/$pid ]; then echo "still there: $(sed -n 's/^State:\t//p' /proc/$pid/status)"; exit 1; fi
        echo reaped
    "#;
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/sh", "-c", script],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.ends_with("reaped\n"), "{stdout}");
}

#[test]
fn every_bad_environment_value_is_refused_with_exit_2() {
    let root = Rootfs::new("badenv");
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("AGENT_NAME", None, "agent_missing"),
        ("AGENT_NAME", Some("cursor"), "agent_invalid"),
        ("EXECGUARD_PROFILE", Some("permissive"), "profile_invalid"),
        (
            "EXECGUARD_PROFILE",
            Some("breakglass"),
            "breakglass_unacknowledged",
        ),
        ("EXECGUARD_AUTONOMY", Some("full"), "autonomy_invalid"),
        ("EXECGUARD_AUTONOMY", None, "autonomy_missing"),
        ("EXECGUARD_MUTABILITY", Some("rw"), "mutability_invalid"),
        (
            "EXECGUARD_ALLOW_EXEC_MAPPINGS",
            Some("yes"),
            "allow_exec_mappings_invalid",
        ),
        (
            "EXECGUARD_REPO_CONFIG_ACK",
            Some("2001-01-01"),
            "repo_config_ack_stale",
        ),
        ("EXECGUARD_HOST_UID", Some("0"), "host_uid_root"),
        ("EXECGUARD_HOST_UID", None, "host_uid_missing"),
        ("EXECGUARD_HOST_UID", Some("alice"), "host_uid_invalid"),
        ("EXECGUARD_HOST_GID", Some("0"), "host_gid_root"),
        ("EXECGUARD_HOST_GID", Some("-1"), "host_gid_invalid"),
        ("EXECGUARD_MANIFEST_SHA256", None, "manifest_digest_missing"),
        (
            "EXECGUARD_MANIFEST_SHA256",
            Some(&"0".repeat(64)),
            "manifest_digest_mismatch",
        ),
    ];
    for (var, value, code) in cases {
        let mut env = root.env("claude");
        env.retain(|(k, _)| k != var);
        if let Some(v) = value {
            env.push((var.to_string(), v.to_string()));
        }
        let out = root.run(&env, &["--arbitrary-command", "--", "/bin/true"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={value:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("execguard-entrypoint: refused {code}: ")),
            "{var}={value:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
    // Nothing was prepared for any refused start.
    assert!(!std::fs::read_to_string(root.dir.join("etc/passwd"))
        .unwrap()
        .contains("4242"));
    assert!(!root.dir.join("state/agent-home").exists());
}

#[test]
fn a_tampered_control_file_refuses_start() {
    let root = Rootfs::new("tamper");
    std::fs::write(
        root.dir.join("usr/local/lib/libexecguard.so"),
        "a different guard\n",
    )
    .unwrap();
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/true"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("execguard-entrypoint: refused control_file_modified: "),
        "{stderr}"
    );
    assert!(
        stderr.contains("/usr/local/lib/libexecguard.so"),
        "{stderr}"
    );

    let root = Rootfs::new("tamper-preload");
    std::fs::write(root.dir.join("etc/ld.so.preload"), "/tmp/other.so\n").unwrap();
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/true"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("refused control_file_modified"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_provider_chain_prepends_managed_arguments_and_pins_the_environment() {
    let root = Rootfs::new("provider");
    let out = root.run(&root.env("claude"), &["-p", "hello world"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "ARGS:--setting-sources user --strict-mcp-config --permission-mode bypassPermissions -p hello world"
        ),
        "strict: the workspace's settings and MCP servers stay out: {stdout}"
    );
    assert!(
        stdout.contains(
            "HOME:/state/agent-home\nTMPDIR:/state/tmp\nPATH:/usr/local/bin:/usr/bin:/bin\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("UID:4242 GID:4343"), "{stdout}");
    assert!(
        stdout.contains("LD_PRELOAD:unset") && stdout.contains("CHAIN:unset"),
        "{stdout}"
    );
    assert!(
        stdout.contains("workspace agents"),
        "AGENTS.md imported for claude: {stdout}"
    );

    let root = Rootfs::new("provider-refused");
    // An image policy naming an audit log: every refusal is recorded in the one schema.
    write_mode(
        &root.dir.join("etc/execguard/policy.toml"),
        "version = 1\nprofile = \"strict\"\naudit_log = \"/state/audit.jsonl\"\n",
        0o644,
    );
    let refused = [
        (&["--dangerously-skip-permissions"][..], "dangerous_flag"),
        (&["mcp", "add", "x", "--", "sh"][..], "refused_subcommand"),
        (&["--permission-mode", "plan"][..], "managed_flag"),
    ];
    for (args, code) in refused {
        let out = root.run(&root.env("claude"), args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("execguard-provider: refused {code}: ")),
            "{args:?}: {stderr}"
        );
    }
    let log = std::fs::read_to_string(root.dir.join("state/audit.jsonl")).unwrap_or_default();
    assert_eq!(log.lines().count(), refused.len(), "{log}");
    for (line, (_, code)) in log.lines().zip(refused) {
        assert!(
            line.contains(&format!(
                ",\"tool\":\"provider\",\"entry\":\"wrapper\",\"decision\":\"deny\",\"reason\":\"{code}\","
            )),
            "{line}"
        );
    }
}

/// A strict session does not load the workspace's provider configuration: what exists is
/// masked (and cannot be removed), Claude Code gets its isolating flags, instruction files stay;
/// a dated acknowledgement lets it all load, recorded as reduced assurance.
#[test]
fn workspace_provider_configuration_is_masked_in_strict_unless_acknowledged() {
    let root = Rootfs::new("repo-config");
    let hook =
        r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}"#;
    write_mode(
        &root.dir.join("workspace/.claude/settings.json"),
        hook,
        0o644,
    );
    write_mode(
        &root.dir.join("workspace/.mcp.json"),
        r#"{"mcpServers":{"x":{"command":"sh"}}}"#,
        0o644,
    );
    write_mode(
        &root
            .dir
            .join("workspace/.gemini/extensions/x/gemini-extension.json"),
        "{}",
        0o644,
    );
    let script = "echo SETTINGS:$(cat /workspace/.claude/settings.json); echo MCP:$(cat /workspace/.mcp.json); \
        echo EXT:$(ls -A /workspace/.gemini/extensions | wc -l); echo AGENTS:$(cat /workspace/AGENTS.md); \
        rm -f /workspace/.mcp.json 2>/dev/null; echo RM:$?; cat /run/execguard/state/assurance";
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/sh", "-c", script],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("SETTINGS:{}\n"), "{stdout}");
    assert!(stdout.contains("MCP:{}\n"), "{stdout}");
    assert!(stdout.contains("EXT:0\n"), "{stdout}");
    assert!(stdout.contains("AGENTS:workspace agents\n"), "{stdout}");
    assert!(
        !stdout.contains("RM:0"),
        "a mask cannot be removed: {stdout}"
    );
    assert!(
        stderr.contains("not loading the workspace's provider configuration: .claude/settings.json, .mcp.json, .gemini/extensions"),
        "{stderr}"
    );
    // The files themselves are untouched.
    assert_eq!(
        std::fs::read_to_string(root.dir.join("workspace/.mcp.json")).unwrap(),
        r#"{"mcpServers":{"x":{"command":"sh"}}}"#
    );

    // Acknowledged today: loaded, and recorded.
    let today = String::from_utf8(
        Command::new("date")
            .args(["-u", "+%F"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let mut env = root.env("claude");
    env.push(("EXECGUARD_REPO_CONFIG_ACK".into(), today.trim().into()));
    let out = root.run(
        &env,
        &["--arbitrary-command", "--", "/bin/sh", "-c", script],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("PreToolUse"), "{stdout}");
    assert!(stdout.contains("repo-config"), "recorded: {stdout}");
    let out = root.run(&env, &["-p", "hello world"]);
    assert!(
        text(&out.stdout).contains("ARGS:--permission-mode bypassPermissions -p hello world"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn the_provider_wrapper_refuses_a_start_outside_the_chain() {
    // Directly from the host.
    let out = Command::new(env!("CARGO_BIN_EXE_execguard-provider"))
        .arg("-p")
        .arg("x")
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("execguard-provider: refused chain_missing: "),
        "{}",
        text(&out.stderr)
    );
    // From inside a session: a forged descriptor number is not the entrypoint's socket.
    let root = Rootfs::new("nochain");
    let script = format!(
        "EXECGUARD_CHAIN_FD=0 /{LIBEXEC}/execguard-provider -p x; echo rc=$?; \
        EXECGUARD_CHAIN_FD=5 /{LIBEXEC}/execguard-provider -p x 5</etc/passwd; echo rc=$?"
    );
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/sh", "-c", &script],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(stdout, "rc=2\nrc=2\n", "{stderr}");
    assert!(
        stderr.contains("refused chain_invalid") && stderr.contains("refused chain_not_socket"),
        "{stderr}"
    );
}

#[test]
fn a_readonly_session_never_runs_as_root_and_reads_pid1_environment() {
    let root = Rootfs::new("readonly");
    let mut env = root.env("gemini");
    env.retain(|(k, _)| k != "EXECGUARD_MUTABILITY");
    env.push(("EXECGUARD_MUTABILITY".into(), "readonly".into()));
    let setpriv = [
        "/usr/bin/setpriv",
        "--reuid=4242",
        "--regid=4343",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ];
    // The platform (Kubernetes: bindMountOptions) mounts the write set noexec; an
    // unprivileged entrypoint cannot, and only verifies.
    let platform = [&PLATFORM_NOEXEC[..], &setpriv[..]].concat();
    let out = root
        .command(&env, &platform, &["-p", "hi there"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "ARGS:/{LIBEXEC}/providers/gemini/node_modules/@google/gemini-cli/bundle/gemini.js --approval-mode yolo -p hi there"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("UID:4242 GID:4343"), "{stdout}");

    let script = "cat /proc/self/status; [ -e /run/execguard/state ] && echo STATE-EXISTS; true";
    let out = root
        .command(
            &env,
            &platform,
            &["--arbitrary-command", "--", "/bin/sh", "-c", script],
        )
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(status_field(&stdout, set), "0000000000000000", "{set}");
    }
    assert_eq!(status_field(&stdout, "NoNewPrivs"), "1");
    assert!(!stdout.contains("STATE-EXISTS"), "{stdout}");

    // Without the platform's noexec a strict unprivileged start refuses, unless reduced.
    let out = root
        .command(&env, &setpriv, &["--arbitrary-command", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("execguard-entrypoint: refused noexec_unavailable: "),
        "{}",
        text(&out.stderr)
    );
    let mut reduced = env.clone();
    reduced.push(("EXECGUARD_ALLOW_EXEC_MAPPINGS".into(), "1".into()));
    let out = root
        .command(
            &reduced,
            &setpriv,
            &["--arbitrary-command", "--", "/bin/true"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("reduced assurance"),
        "{}",
        text(&out.stderr)
    );
    // Nothing can record another profile for the guard without root: refused, not ignored.
    let mut dev = env.clone();
    dev.retain(|(k, _)| k != "EXECGUARD_PROFILE");
    dev.push(("EXECGUARD_PROFILE".into(), "development".into()));
    let out = root
        .command(&dev, &platform, &["--arbitrary-command", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("refused profile_unrecordable"),
        "{}",
        text(&out.stderr)
    );

    // Read-only mode with a non-empty bounding set cannot be made safe: refused.
    let partial = [
        "/usr/bin/setpriv",
        "--reuid=4242",
        "--regid=4343",
        "--clear-groups",
        "--",
    ];
    let partial = [&PLATFORM_NOEXEC[..], &partial[..]].concat();
    let out = root
        .command(&env, &partial, &["--arbitrary-command", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("refused privilege_drop_failed"),
        "{}",
        text(&out.stderr)
    );
}

/// Strict sessions are sealed: the kernel refuses to execute a file in a mutable root even
/// though no preload library is loaded here, while system programs still run.
#[test]
fn a_strict_session_is_sealed_by_the_kernel() {
    let root = Rootfs::new("seal");
    // /state is the mapped user's writable mutable root in the test root.
    let script = "cp /bin/true /state/payload && /state/payload; echo WS:$?; \
        /bin/true; echo SYS:$?";
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/sh", "-c", script],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("WS:126"), "{stdout}");
    assert!(stdout.contains("SYS:0"), "{stdout}");
    // The root start made every write-set root noexec,nosuid,nodev before the session started.
    let mounts = "while read -r _ _ _ _ point opts _; do echo \"MNT:$point:$opts\"; done </proc/self/mountinfo";
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/sh", "-c", mounts],
    );
    let stdout = text(&out.stdout);
    for d in ["/workspace", "/state"] {
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("MNT:{d}:")))
            .unwrap_or_else(|| panic!("{d}: {:?} {stdout}{}", out.status, text(&out.stderr)));
        for flag in ["noexec", "nosuid", "nodev"] {
            assert!(line.split(',').any(|o| o == flag), "{d}: {line}\n{stdout}");
        }
    }
    // The development profile is not sealed and keeps exec in the workspace (and only there).
    let mut env = root.env("claude");
    env.retain(|(k, _)| k != "EXECGUARD_PROFILE");
    env.push(("EXECGUARD_PROFILE".into(), "development".into()));
    // (The workspace is root's here: the test puts the program there.)
    std::fs::copy("/bin/true", root.dir.join("workspace/payload")).unwrap();
    let dev = "/workspace/payload; echo WS:$?; \
        cp /bin/true /state/payload && /state/payload; echo STATE:$?";
    let out = root.run(&env, &["--arbitrary-command", "--", "/bin/sh", "-c", dev]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("WS:0"), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("STATE:126"),
        "{stdout}{}",
        text(&out.stderr)
    );
}

/// Without Landlock (simulated by the test hook that can only lower the ABI) a strict session
/// refuses to start with a typed error, unless the operator accepts reduced assurance.
#[test]
fn without_landlock_strict_refuses_unless_unsealed_is_accepted() {
    let root = Rootfs::new("noseal");
    let mut env = root.env("claude");
    env.push(("EXECGUARD_TEST_LANDLOCK_ABI".into(), "0".into()));
    let out = root.run(&env, &["--arbitrary-command", "--", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("refused seal_unavailable:"),
        "{}",
        text(&out.stderr)
    );
    env.push(("EXECGUARD_ALLOW_UNSEALED".into(), "1".into()));
    let out = root.run(
        &env,
        &[
            "--arbitrary-command",
            "--",
            "/bin/cat",
            "/run/execguard/state/assurance",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "reduced:arbitrary-command,unsealed"
    );
}

/// Rule 3 in the image: what a strict session plants in a workspace repository's control files
/// (a hook here) is quarantined by PID 1 when the session ends, so the operator's own git on
/// the workspace afterwards does not run it.
#[test]
fn a_hook_a_strict_session_plants_is_quarantined_when_it_ends() {
    let root = Rootfs::new("takeover");
    let repo = root.dir.join("workspace/repo");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    };
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "-q"]);
    execguard_testkit::chown_tree(&repo, 4242, 4343);
    let hook = repo.join(".git/hooks/post-checkout");
    let plant =
        "printf '#!/bin/sh\\necho planted\\n' > /workspace/repo/.git/hooks/post-checkout && \
                 chmod +x /workspace/repo/.git/hooks/post-checkout && echo PLANTED";
    let out = root.run(
        &root.env("claude"),
        &["--arbitrary-command", "--", "/bin/sh", "-c", plant],
    );
    assert!(
        text(&out.stdout).contains("PLANTED"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !hook.exists(),
        "the planted hook is still in place\n{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("quarantine"),
        "no notice line: {}",
        text(&out.stderr)
    );
    let quarantine = repo.join(".git/execguard-quarantine");
    assert!(
        quarantine.is_dir(),
        "nothing kept for the operator to inspect"
    );
}
