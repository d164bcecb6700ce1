//! Builds the image and runs containers with the run profile (`execguard image run`).
//!
//! Without Docker or root these tests skip loudly, unless `CI=true`: in CI they never skip.
//! The image is built once per test run (`execguard image build`, tag `execguard:test`); the
//! Debian base is reused from its tag, and docker's layer cache keeps rebuilds short.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The image these tests build: a tag of this source tree alone, so trees that share one Docker
/// engine never run each other's image.
fn tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        env!("CARGO_MANIFEST_DIR").hash(&mut h);
        format!("execguard:test-{:08x}", h.finish() as u32)
    })
}
const REAL: &str = "/usr/local/libexec/execguard/real";

/// `true` when the tests run as root and Docker answers; otherwise skips loudly (a failure
/// under `CI=true`: in CI they never skip).
fn docker_ready() -> bool {
    if !execguard_testkit::require_root("the image tests (debootstrap and docker)") {
        return false;
    }
    let ok = Command::new("docker")
        .arg("info")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        execguard_testkit::skip(
            "the image tests: Docker does not answer `docker info` (scripts/test starts it)",
        );
    }
    ok
}

fn execguard() -> Command {
    Command::new(env!("CARGO_BIN_EXE_execguard"))
}

/// Builds the image once for the whole test binary.
fn image() -> &'static str {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let result = BUILT.get_or_init(|| {
        let start = std::time::Instant::now();
        let out = execguard()
            .args(["image", "build", "--tag", tag(), "--source"])
            .arg(env!("CARGO_MANIFEST_DIR"))
            .output()
            .map_err(|e| e.to_string())?;
        eprintln!(
            "image build: {:.1}s\n{}",
            start.elapsed().as_secs_f64(),
            tail(&String::from_utf8_lossy(&out.stderr), 15)
        );
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    });
    if let Err(e) = result {
        panic!("execguard image build failed:\n{e}");
    }
    tag()
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The session user: yours, or the image user when the tests run as root.
fn session_user() -> (u32, u32) {
    // SAFETY: getuid/getgid cannot fail and touch no memory.
    let (u, g) = unsafe { (libc::getuid(), libc::getgid()) };
    if u == 0 {
        (1000, 1000)
    } else {
        (u, g)
    }
}

struct Workspace(PathBuf);

impl Workspace {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "execguard-image-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let (u, g) = session_user();
        std::os::unix::fs::chown(&dir, Some(u), Some(g)).unwrap();
        Workspace(dir)
    }
    fn write(&self, name: &str, text: &str) {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        let (u, g) = session_user();
        std::os::unix::fs::chown(&p, Some(u), Some(g)).unwrap();
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        // The container wrote files as the session user; as root we can remove them.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn user_arg() -> String {
    let (u, g) = session_user();
    format!("{u}:{g}")
}

/// `execguard image run` of this image as the session user on `ws`, before the command.
fn image_run(ws: &Workspace) -> Command {
    let mut cmd = execguard();
    cmd.args([
        "image",
        "run",
        "--image",
        image(),
        "--user",
        &user_arg(),
        "--workspace",
    ])
    .arg(&ws.0);
    cmd
}

/// `execguard image run --arbitrary-command -- bash -c SCRIPT`.
fn sh(ws: &Workspace, script: &str) -> Output {
    image_run(ws)
        .args(["--arbitrary-command", "--", "bash", "-c", script])
        .output()
        .unwrap()
}

/// [`sh`] under `profile`.
fn profile_sh(ws: &Workspace, profile: &str, script: &str) -> Output {
    image_run(ws)
        .args([
            "--profile",
            profile,
            "--arbitrary-command",
            "--",
            "bash",
            "-c",
            script,
        ])
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn ok(o: &Output) -> String {
    let (out, err) = text(o);
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{out}\nstderr:\n{err}",
        o.status
    );
    out
}

/// Lines `KEY=VALUE` printed by a script.
fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in:\n{out}"))
}

#[test]
fn the_session_has_no_privilege_and_a_read_only_root() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("privs");
    let out = ok(&sh(
        &ws,
        r#"set -u
st() { awk -v k="$1:" '$1 == k { print $2 }' /proc/self/status; }
echo "CapEff=$(st CapEff)"; echo "CapPrm=$(st CapPrm)"; echo "CapBnd=$(st CapBnd)"
echo "CapAmb=$(st CapAmb)"; echo "NoNewPrivs=$(st NoNewPrivs)"; echo "Seccomp=$(st Seccomp)"
echo "uid=$(id -u)"; echo "gid=$(id -g)"
if touch /etc/execguard-probe 2>/dev/null; then echo rootfs=writable; else echo rootfs=read-only; fi
echo "rootopts=$(awk '$2 == "/" { print $4 }' /proc/mounts | cut -d, -f1)"
for m in /tmp /state /run /workspace; do
  echo "opts$m=$(awk -v m=$m '$2 == m { print $4 }' /proc/mounts)"
done
echo "setuid=$(find / -xdev -type f -perm /6000 2>/dev/null | wc -l)"
echo "sudo=$(command -v sudo || echo none)"
"#,
    ));
    for key in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
        assert_eq!(field(&out, key), "0000000000000000", "{key}\n{out}");
    }
    assert_eq!(field(&out, "NoNewPrivs"), "1");
    assert_eq!(field(&out, "Seccomp"), "2");
    let (u, g) = session_user();
    assert_eq!(field(&out, "uid"), u.to_string());
    assert_eq!(field(&out, "gid"), g.to_string());
    assert_eq!(field(&out, "rootfs"), "read-only");
    assert_eq!(field(&out, "rootopts"), "ro");
    for m in ["/tmp", "/state", "/run"] {
        let opts = field(&out, &format!("opts{m}"));
        for flag in ["noexec", "nosuid", "nodev"] {
            assert!(opts.split(',').any(|o| o == flag), "{m}: {opts}");
        }
    }
    // The entrypoint remounted the workspace bind noexec,nosuid,nodev before the session.
    let ws_opts = field(&out, "opts/workspace");
    for flag in ["noexec", "nosuid", "nodev"] {
        assert!(
            ws_opts.split(',').any(|o| o == flag),
            "/workspace: {ws_opts}"
        );
    }
    assert_eq!(
        field(&out, "setuid"),
        "0",
        "a setuid/setgid file in the image"
    );
    assert_eq!(field(&out, "sudo"), "none");
}

#[test]
fn the_guard_is_in_every_dynamic_process_and_its_refusals_hold() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("guard");
    ws.write("ok.sh", "#!/bin/bash\necho script-ran\n");
    ws.write("node-shebang", &format!("#!{REAL}/node\nconsole.log(1)\n"));
    ws.write("a", "#!/workspace/b\n");
    ws.write("b", &format!("#!{REAL}/git\n"));
    // Says it is up (on a FIFO the script waits on) once node runs it, then stays.
    ws.write(
        "sleep.js",
        "require('fs').writeFileSync('/tmp/node-up', 'up\\n');\nsetTimeout(() => {}, 30000);\n",
    );
    let out = ok(&sh(
        &ws,
        r#"set -u
try() { name=$1; shift; "$@" >/tmp/out 2>/tmp/err; echo "$name.rc=$?"; echo "$name.err=$(tr '\n' ' ' </tmp/err)"; }
chmod +x /workspace/ok.sh /workspace/node-shebang /workspace/a /workspace/b
cp /bin/true /workspace/t && chmod +x /workspace/t
mkdir -p /state/tmp && cp /bin/true /state/tmp/t && chmod +x /state/tmp/t
cp /bin/true /tmp/t && chmod +x /tmp/t
try workspace /workspace/t
try state /state/tmp/t
try tmp /tmp/t
try loader /lib64/ld-linux-x86-64.so.2 /workspace/t
try shebang /workspace/node-shebang
try chain /workspace/a
try script /workspace/ok.sh
echo "script.out=$(/workspace/ok.sh)"
try memfd perl -e '
  my $name = "x"; my $fd = syscall(319, $name, 0); die "memfd_create: $!" if $fd < 0;
  open(my $in, "<:raw", "/bin/true") or die; local $/; my $elf = <$in>;
  open(my $out, ">&=", $fd) or die; binmode $out; syswrite($out, $elf) or die;
  exec("/proc/self/fd/$fd") or exit 126;'
# Long-running processes: the node runtime (started through its wrapper) and a plain sleep.
mkfifo /tmp/node-up; exec 3<>/tmp/node-up
node /workspace/sleep.js & NODE=$!
sleep 30 & SLEEP=$!
read -t 60 -u 3 up || echo "node.up=never"
echo "node.up=$up"
checked=0; missing=""
for p in /proc/[0-9]*; do
  maps=$(cat $p/maps 2>/dev/null) || continue
  case $maps in *ld-linux*) ;; *) continue ;; esac
  checked=$((checked + 1))
  case $maps in *libexecguard.so*) ;; *) missing="$missing $(cat $p/comm)" ;; esac
done
echo "checked=$checked"; echo "missing=$missing"
echo "pid1=$(tr '\0' ' ' </proc/1/cmdline)"
echo "nodeexe=$(readlink /proc/$NODE/exe)"
# ptrace and cross-process reads of the entrypoint (PID 1) and of the wrapped runtime.
for target in 1 $NODE; do
  perl -e '$! = 0; my $r = syscall(101, 16, $ARGV[0], 0, 0); print "attach.$ARGV[0]=", ($r == -1 ? "refused:" . ($!+0) : "ok"), "\n";
           my $buf = "\0" x 8; my $l = pack("PQ", $buf, 8); my $r2 = pack("QQ", 0x400000, 8);
           $r = syscall(310, $ARGV[0], $l, 1, $r2, 1, 0); print "vmread.$ARGV[0]=", ($r == -1 ? "refused:" . ($!+0) : "ok"), "\n";' $target
done
perl -e 'my $r = syscall(272, 0x10000000); print "unshare=", ($r == -1 ? "refused" : "ok"), "\n";'
# The runtime state and the policy are out of reach.
if mkdir -p /run/execguard/state 2>/dev/null && echo breakglass > /run/execguard/state/profile 2>/dev/null; then echo state=writable; else echo state=refused; fi
if echo '#' >> /etc/execguard/policy.toml 2>/dev/null; then echo policy=writable; else echo policy=refused; fi
kill $NODE $SLEEP
"#,
    ));
    for case in ["workspace", "state", "tmp", "loader"] {
        assert_eq!(field(&out, &format!("{case}.rc")), "126", "{case}\n{out}");
        assert!(
            field(&out, &format!("{case}.err")).contains("execguard: denied mutable_native"),
            "{case}\n{out}"
        );
    }
    for case in ["shebang", "chain"] {
        assert_eq!(field(&out, &format!("{case}.rc")), "126", "{case}\n{out}");
        assert!(
            field(&out, &format!("{case}.err"))
                .contains("execguard: denied protected_runtime_script"),
            "{case}\n{out}"
        );
    }
    // A memfd that could hold code never runs, however it is made (here through perl's
    // syscall()): the guard's syscall() hook adds MFD_NOEXEC_SEAL and refuses the exec, and a
    // caller the guard cannot see meets the session's seccomp filter (EPERM).
    let (rc, err) = (field(&out, "memfd.rc"), field(&out, "memfd.err"));
    assert!(
        (rc == "126" && err.contains("execguard: denied anonymous_native"))
            || (rc == "1" && err.contains("memfd_create: Operation not permitted")),
        "{out}"
    );
    assert_eq!(field(&out, "script.rc"), "0", "{out}");
    assert_eq!(field(&out, "script.out"), "script-ran");
    // The event the process scan waited for: node ran sleep.js (a plain `sleep 30` is up by
    // the time node is).
    assert_eq!(
        field(&out, "node.up"),
        "up",
        "node never said it was up:\n{out}"
    );
    let checked: u32 = field(&out, "checked").parse().unwrap();
    // bash, node and sleep at least; PID 1 dropped from root to the session user, so the kernel
    // made it non-dumpable and its maps are not readable to the session (nor can it be traced).
    assert!(checked >= 3, "too few processes inspected:\n{out}");
    assert_eq!(
        field(&out, "missing").trim(),
        "",
        "processes without the guard:\n{out}"
    );
    assert!(
        field(&out, "pid1").contains("execguard-entrypoint"),
        "{out}"
    );
    assert_eq!(field(&out, "nodeexe"), format!("{REAL}/node"));
    for line in out
        .lines()
        .filter(|l| l.starts_with("attach.") || l.starts_with("vmread."))
    {
        assert!(line.ends_with("=refused:1"), "{line}\n{out}");
    }
    assert_eq!(field(&out, "unshare"), "refused");
    assert_eq!(field(&out, "state"), "refused");
    assert_eq!(field(&out, "policy"), "refused");
}

#[test]
fn git_and_node_run_through_their_wrappers() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("git");
    ws.write("s.js", "console.log('node-ran', process.argv.length);\n");
    let out = ok(&sh(
        &ws,
        &format!(
            r#"set -u
cd /workspace && mkdir repo && cd repo
git init -q . && git config user.name t && git config user.email t@example.invalid
printf '#!/bin/sh\necho hook >> /workspace/hook-ran\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
echo hi > f && git add f && git commit -q -m one 2>/tmp/e; echo "commit.rc=$?"; echo "commit.err=$(tr "\n" " " </tmp/e)"
echo "hook=$(cat /workspace/hook-ran 2>/dev/null)"
echo "head=$(git rev-list --count HEAD)"
git commit -q --allow-empty --no-verify -m two 2>/tmp/e; echo "noverify.rc=$?"; echo "noverify.err=$(cat /tmp/e)"
{REAL}/git --version >/dev/null 2>/tmp/e; echo "realgit.rc=$?"; echo "realgit.err=$(cat /tmp/e)"
/usr/lib/git-core/git-commit --no-verify -m x >/dev/null 2>/tmp/e; echo "dashed.rc=$?"; echo "dashed.err=$(cat /tmp/e)"
{REAL}/node -v >/dev/null 2>/tmp/e; echo "realnode.rc=$?"; echo "realnode.err=$(cat /tmp/e)"
echo "which.git=$(command -v git)"
echo "node.out=$(node /workspace/s.js)"
echo "nodee.out=$(node -e 'console.log(1)')"
node -r /tmp/x.js -e 1 2>/tmp/e; echo "noder.rc=$?"; echo "noder.err=$(cat /tmp/e)"
"#
        ),
    ));
    assert_eq!(field(&out, "commit.rc"), "0", "{out}");
    assert_eq!(
        field(&out, "hook"),
        "hook",
        "the pre-commit hook did not run\n{out}"
    );
    assert_eq!(field(&out, "head"), "1");
    assert_eq!(field(&out, "noverify.rc"), "2", "{out}");
    assert!(
        field(&out, "noverify.err").contains("refused hook_bypass"),
        "{out}"
    );
    for case in ["realgit", "dashed", "realnode"] {
        assert_eq!(field(&out, &format!("{case}.rc")), "126", "{case}\n{out}");
        assert!(
            field(&out, &format!("{case}.err"))
                .contains("execguard: denied protected_runtime_direct"),
            "{case}\n{out}"
        );
    }
    assert_eq!(field(&out, "which.git"), "/usr/local/bin/git");
    assert_eq!(field(&out, "node.out"), "node-ran 2");
    // Inline code is code in plain sight (wrappers/README.md, rule 4): it runs.
    assert_eq!(field(&out, "nodee.out"), "1", "{out}");
    assert_eq!(field(&out, "noder.rc"), "2", "{out}");
    assert!(
        field(&out, "noder.err").contains("refused node_code_loading"),
        "{out}"
    );
}

/// Each provider (what `--version` prints) and one flag its policy refuses as dangerous.
const PROVIDERS: [(&str, &str, &str); 4] = [
    ("claude", "(Claude Code)", "--dangerously-skip-permissions"),
    (
        "codex",
        "codex-cli",
        "--dangerously-bypass-approvals-and-sandbox",
    ),
    ("gemini", "0.", "--yolo"),
    ("copilot", "GitHub Copilot CLI", "--yolo"),
];

#[test]
fn every_provider_starts_through_its_policy_and_a_dangerous_flag_exits_2() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("provider");
    for (agent, version, dangerous) in PROVIDERS {
        let run = |args: &[&str]| {
            image_run(&ws)
                .args(["--agent", agent, "--"])
                .args(args)
                .output()
                .unwrap()
        };
        let out = ok(&run(&["--version"]));
        assert!(out.contains(version), "{agent} --version: {out}");
        let help = run(&["--help"]);
        assert!(help.status.success(), "{agent} --help: {:?}", text(&help));
        let refused = run(&[dangerous]);
        let (o, e) = text(&refused);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{agent} {dangerous}: {o}\n{e}"
        );
        assert!(
            e.contains("refused dangerous_flag"),
            "{agent} {dangerous}: {e}"
        );
        // What actually runs cannot be started except through the provider wrapper.
        let direct = ok(&sh(
            &ws,
            &format!("{REAL}/{agent} --version 2>&1; echo \"rc=$?\""),
        ));
        assert_eq!(field(&direct, "rc"), "126", "{agent}: {direct}");
        assert!(
            direct.contains("execguard: denied protected_runtime_direct"),
            "{agent}: {direct}"
        );
    }
    // An image records its providers: asking for another is a typed refusal.
    let out = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{ index .Config.Labels \"execguard.providers\" }}",
            image(),
        ])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "codex,claude,gemini,copilot");
}

/// `image run` as root: the session is the workspace's owner; a root-owned workspace is refused
/// at start with what to do (a session never runs as root, and could not write it).
#[test]
fn a_root_launcher_runs_as_the_workspace_owner_or_refuses() {
    if !docker_ready() {
        return;
    }
    let test_user = execguard_testkit::non_root_user();
    let ws = Workspace::new("owner");
    std::os::unix::fs::chown(&ws.0, Some(test_user.uid), Some(test_user.gid)).unwrap();
    let run = |ws: &Workspace| {
        execguard()
            .args(["image", "run", "--image", image(), "--workspace"])
            .arg(&ws.0)
            .args([
                "--arbitrary-command",
                "--",
                "bash",
                "-c",
                "id -u; id -g; git init -q . && echo init-ok",
            ])
            .output()
            .unwrap()
    };
    let out = ok(&run(&ws));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], test_user.uid.to_string(), "{out}");
    assert_eq!(lines[1], test_user.gid.to_string(), "{out}");
    assert!(out.contains("init-ok"), "{out}");
    let root_owned = Workspace::new("root-owned");
    std::os::unix::fs::chown(&root_owned.0, Some(0), Some(0)).unwrap();
    let out = run(&root_owned);
    let (_, e) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("execguard: refused workspace_owned_by_root: "),
        "{e}"
    );
    assert!(
        e.contains("chown") && e.contains("--user"),
        "says what to do: {e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// Strict sessions do not load the workspace's provider configuration; instruction files stay.
#[test]
fn workspace_provider_configuration_is_masked_in_strict() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("repo-config");
    std::fs::create_dir_all(ws.0.join(".claude")).unwrap();
    ws.write(
        ".claude/settings.json",
        r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"touch /workspace/pwned"}]}]}}"#,
    );
    ws.write(".mcp.json", r#"{"mcpServers":{"x":{"command":"sh"}}}"#);
    ws.write("AGENTS.md", "instructions\n");
    let out = sh(&ws, "cat /workspace/.claude/settings.json; echo; cat /workspace/.mcp.json; echo; cat /workspace/AGENTS.md");
    let (o, e) = text(&out);
    assert!(out.status.success(), "{o}{e}");
    assert_eq!(o, "{}\n\n{}\n\ninstructions\n", "{e}");
    assert!(
        e.contains(
            "not loading the workspace's provider configuration: .claude/settings.json, .mcp.json"
        ),
        "{e}"
    );
    // With today's acknowledgement they load (and the session records reduced assurance).
    let today = String::from_utf8(
        Command::new("date")
            .args(["-u", "+%F"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let out = image_run(&ws)
        .args([
            "--repo-config-ack",
            today.trim(),
            "--arbitrary-command",
            "--",
            "bash",
            "-c",
            "cat /workspace/.mcp.json; echo; cat /run/execguard/state/assurance",
        ])
        .output()
        .unwrap();
    let o = ok(&out);
    assert!(o.contains("mcpServers") && o.contains("repo-config"), "{o}");
}

/// The docker arguments `execguard image run` would use, with the recorded seccomp profile.
fn run_args(ws: &Workspace, seccomp: &Path) -> Vec<String> {
    let out = image_run(ws)
        .arg("--print-args")
        .arg("--seccomp")
        .arg(seccomp)
        .args(["--arbitrary-command", "--", "true"])
        .output()
        .unwrap();
    let json = ok(&out);
    serde_json::from_str(&json).unwrap()
}

fn seccomp_file(ws: &Workspace) -> PathBuf {
    let out = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{ index .Config.Labels \"execguard.seccomp\" }}",
            image(),
        ])
        .output()
        .unwrap();
    let path = ws.0.with_extension("seccomp.json");
    std::fs::write(&path, ok(&out).trim()).unwrap();
    path
}

fn docker(args: &[String]) -> Output {
    Command::new("docker").args(args).output().unwrap()
}

#[test]
fn a_bad_environment_value_or_a_tampered_control_file_stops_the_container() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("tamper");
    let seccomp = seccomp_file(&ws);
    let args = run_args(&ws, &seccomp);
    // The unmodified arguments start.
    let good = docker(&args);
    ok(&good);

    // Without the capability to remount, the workspace stays exec: a strict start refuses,
    // unless the operator accepts reduced assurance (recorded).
    let no_remount: Vec<String> = args
        .iter()
        .filter(|a| *a != "--cap-add=SYS_ADMIN")
        .cloned()
        .collect();
    assert_ne!(no_remount.len(), args.len());
    let o = docker(&no_remount);
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("refused noexec_unavailable: writable and not noexec: /workspace"),
        "{e}"
    );
    let image_at = no_remount.iter().position(|a| a == image()).unwrap();
    let mut reduced = no_remount[..image_at].to_vec();
    reduced.extend([
        "--env".to_string(),
        "EXECGUARD_ALLOW_EXEC_MAPPINGS=1".to_string(),
    ]);
    reduced.extend(no_remount[image_at..].iter().cloned());
    let o = docker(&reduced);
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("reduced assurance"), "{e}");

    // The workspace mounted a second time, outside the write set: what the session wrote
    // would run by that name, so the start is refused.
    let at = args.iter().position(|a| a == image()).unwrap();
    let mut twice = args[..at].to_vec();
    twice.push(format!("--volume={}:/opt/second", ws.0.display()));
    twice.extend(args[at..].iter().cloned());
    let o = docker(&twice);
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("write_set_aliased: /workspace is also reachable as /opt/second"),
        "{e}"
    );

    let replace = |from: &str, to: &str| -> Vec<String> {
        assert!(
            args.iter().any(|a| a.starts_with(from)),
            "{from} not in {args:?}"
        );
        args.iter()
            .map(|a| {
                if a.starts_with(from) {
                    to.to_string()
                } else {
                    a.clone()
                }
            })
            .collect()
    };
    for (from, to, code) in [
        (
            "EXECGUARD_AUTONOMY=",
            "EXECGUARD_AUTONOMY=bogus",
            "autonomy_invalid",
        ),
        (
            "EXECGUARD_PROFILE=",
            "EXECGUARD_PROFILE=Strict",
            "profile_invalid",
        ),
        (
            "EXECGUARD_HOST_UID=",
            "EXECGUARD_HOST_UID=0",
            "host_uid_root",
        ),
        (
            "EXECGUARD_MANIFEST_SHA256=",
            &format!("EXECGUARD_MANIFEST_SHA256={}", "0".repeat(64)),
            "manifest_digest_mismatch",
        ),
    ] {
        let o = docker(&replace(from, to));
        let (_, e) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{to}: {e}");
        assert!(e.contains(&format!("refused {code}")), "{to}: {e}");
    }

    // A control-plane file replaced under the image path (here: the policy, bind-mounted).
    let policy = ws.0.with_extension("policy.toml");
    let original =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/image/policy.toml")).unwrap();
    std::fs::write(
        &policy,
        original.replace("profile = \"strict\"", "profile = \"build\""),
    )
    .unwrap();
    let image_at = args.iter().position(|a| a == image()).unwrap();
    let mut tampered = args[..image_at].to_vec();
    tampered.push("--volume".into());
    tampered.push(format!(
        "{}:/etc/execguard/policy.toml:ro",
        policy.display()
    ));
    tampered.extend(args[image_at..].iter().cloned());
    let o = docker(&tampered);
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("refused control_file_modified"), "{e}");
    let _ = std::fs::remove_file(&policy);
    let _ = std::fs::remove_file(&seccomp);
}

/// A Python script (run in the session by python3) that writes a pure-Python wheel with a
/// console script: no network, no build backend.
const MAKE_WHEEL: &str = r#"
import base64, hashlib, os, zipfile
os.makedirs("/workspace/dist", exist_ok=True)
files = {
    "hello/__init__.py": "GREETING = 'hello-from-wheel'\ndef main():\n    print(GREETING)\n",
    "hello-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: hello\nVersion: 0.1\n",
    "hello-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: execguard-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "hello-0.1.dist-info/entry_points.txt": "[console_scripts]\nhello = hello:main\n",
}
record = []
with zipfile.ZipFile("/workspace/dist/hello-0.1-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("hello-0.1.dist-info/RECORD,,")
    z.writestr("hello-0.1.dist-info/RECORD", "\n".join(record) + "\n")
"#;

/// The ordinary work of a session (git, npm with scripts, a Python venv with pip, make with a
/// C build, shell) in the strict profile: all of it runs, and the program it compiled does
/// not. Also: the write set is noexec from inside, and doctor reports the session's profile.
fn work_script(profile: &str) -> String {
    format!(
        r#"set -u
r() {{ name=$1; shift; "$@" >/tmp/out 2>/tmp/err; rc=$?; echo "$name.rc=$rc"; [ $rc = 0 ] || {{ echo "$name.err=$(tr '\n' ' ' </tmp/err | cut -c1-400)"; }}; }}
cd /workspace
git config --global user.name t; git config --global user.email t@example.invalid
git config --global init.defaultBranch main; git config --global protocol.file.allow always
mkdir sub && (cd sub && git init -q && echo s > s && git add s && git commit -qm s)
mkdir repo && cd repo && git init -q && echo a > a && git add a && git commit -qm a
echo b >> a && r stash git stash -q && r stash.pop git stash pop -q && git commit -qam b
r worktree git worktree add -q ../wt -b feature
(cd ../wt && echo c > c && git add c && git commit -qm c)
r submodule git submodule add -q ../sub sub
git commit -qm sub
r rebase git rebase -q feature
echo "git.log=$(git log --oneline | wc -l)"
echo "git.files=$(ls | tr '\n' ,)"
cd /workspace
mkdir pkg app
echo '{{"name":"pkg","version":"1.0.0","scripts":{{"postinstall":"node post.js"}}}}' > pkg/package.json
echo 'require("fs").writeFileSync("/workspace/postinstall-ran", "yes")' > pkg/post.js
(cd pkg && r npm.pack npm pack --silent)
cd app
echo '{{"name":"app","version":"1.0.0","scripts":{{"build":"node build.js && echo script-ran"}}}}' > package.json
echo 'console.log("built")' > build.js
r npm.install npm install --offline --no-audit --no-fund ../pkg/pkg-1.0.0.tgz
echo "npm.postinstall=$(cat /workspace/postinstall-ran 2>/dev/null)"
echo "npm.run=$(npm run --silent build 2>&1 | tr '\n' ' ')"
cd /workspace
r venv python3 -m venv /workspace/venv
python3 - <<'PY'
{MAKE_WHEEL}
PY
r pip /workspace/venv/bin/pip install --no-index --no-cache-dir --disable-pip-version-check /workspace/dist/hello-0.1-py3-none-any.whl
echo "py.import=$(/workspace/venv/bin/python -c 'import hello; print(hello.GREETING)' 2>&1)"
echo "py.script=$(/workspace/venv/bin/hello 2>&1)"
mkdir c && cd c
printf 'int main(void) {{ return 7; }}\n' > hello.c
printf 'hello: hello.c\n\tcc -O0 -o hello hello.c\n' > Makefile
r make make
./hello >/tmp/out 2>/tmp/err; echo "elf.rc=$?"; echo "elf.err=$(tr '\n' ' ' </tmp/err)"
cp hello /tmp/hello && /tmp/hello >/tmp/out 2>/tmp/err; echo "tmp.rc=$?"; echo "tmp.err=$(tr '\n' ' ' </tmp/err)"
cp hello /state/hello && /state/hello >/tmp/out 2>/tmp/err; echo "state.rc=$?"; echo "state.err=$(tr '\n' ' ' </tmp/err)"
env ./hello >/tmp/out 2>/tmp/err; echo "env.rc=$?"; echo "env.err=$(tr '\n' ' ' </tmp/err)"
echo "goflags=${{GOFLAGS-}}"
cd /workspace
printf '#!/bin/sh\necho "$1" | tr a-z A-Z\n' > up.sh && chmod +x up.sh
echo "sh.pipe=$(./up.sh shell | sed 's/S/s/')"
echo "sh.find=$(find /workspace/c -name '*.c' -exec basename {{}} \; | xargs echo)"
for m in /workspace /tmp /state /run /dev/shm; do
  echo "opts$m=$(awk -v m=$m '$5 == m {{ print $6 }}' /proc/self/mountinfo | tail -n1)"
done
echo "doctor.profile=$(execguard doctor 2>/dev/null | awk '$1 == "profile:" {{ print $2; exit }}')"
echo "state.profile=$(cat /run/execguard/state/profile)"
echo "want={profile}"
"#
    )
}

fn work(profile: &str) -> (Workspace, String) {
    let ws = Workspace::new(&format!("work-{profile}"));
    let out = profile_sh(&ws, profile, &work_script(profile));
    let text = ok(&out);
    (ws, text)
}

fn assert_ordinary_work_ran(out: &str) {
    for step in [
        "stash",
        "stash.pop",
        "worktree",
        "submodule",
        "rebase",
        "npm.pack",
        "npm.install",
        "venv",
        "pip",
        "make",
    ] {
        assert_eq!(field(out, &format!("{step}.rc")), "0", "{step}\n{out}");
    }
    assert_eq!(field(out, "git.log"), "4", "{out}");
    assert!(field(out, "git.files").contains("c,"), "{out}");
    assert_eq!(field(out, "npm.postinstall"), "yes", "{out}");
    assert!(field(out, "npm.run").contains("built script-ran"), "{out}");
    assert_eq!(field(out, "py.import"), "hello-from-wheel", "{out}");
    assert_eq!(field(out, "py.script"), "hello-from-wheel", "{out}");
    assert_eq!(field(out, "sh.pipe"), "sHELL", "{out}");
    assert_eq!(field(out, "sh.find"), "hello.c", "{out}");
}

#[test]
fn ordinary_work_runs_under_strict_and_the_program_it_compiled_does_not() {
    if !docker_ready() {
        return;
    }
    let (_ws, out) = work("strict");
    assert_ordinary_work_ran(&out);
    assert_eq!(field(&out, "elf.rc"), "126", "{out}");
    assert!(
        field(&out, "elf.err").contains("execguard: denied mutable_native"),
        "{out}"
    );
    // The whole write set is noexec,nosuid,nodev, as the kernel reports it inside the session.
    for m in ["/workspace", "/tmp", "/state", "/run", "/dev/shm"] {
        let opts = field(&out, &format!("opts{m}"));
        for flag in ["noexec", "nosuid", "nodev"] {
            assert!(opts.split(',').any(|o| o == flag), "{m}: {opts}\n{out}");
        }
    }
    assert_eq!(field(&out, "doctor.profile"), "strict", "{out}");
    assert_eq!(field(&out, "state.profile"), "strict", "{out}");
    // As in `execguard run`'s strict sessions: `go test` and `go run` start what they built
    // through /usr/bin/env (GOFLAGS), whose exec the guard decides and says (the image has no
    // Go toolchain; `env ./hello` is that exec).
    assert_eq!(field(&out, "goflags"), "-exec=/usr/bin/env", "{out}");
    assert_eq!(field(&out, "env.rc"), "126", "{out}");
    assert!(
        field(&out, "env.err").contains("execguard: denied mutable_native: /workspace/c/hello -- native code written in this session does not run under strict; to run what the workspace builds, start the session with `execguard run --profile development`"),
        "{out}"
    );
    for m in ["tmp", "state"] {
        assert_eq!(field(&out, &format!("{m}.rc")), "126", "{m}\n{out}");
    }
}

/// One profile per session, applied by every layer: development lets the session run the
/// program it compiled in the workspace (and only there), and doctor says development.
#[test]
fn development_really_allows_a_workspace_built_program() {
    if !docker_ready() {
        return;
    }
    let (_ws, out) = work("development");
    assert_ordinary_work_ran(&out);
    assert_eq!(
        field(&out, "elf.rc"),
        "7",
        "the program ran and returned 7\n{out}"
    );
    assert_eq!(field(&out, "doctor.profile"), "development", "{out}");
    assert_eq!(field(&out, "state.profile"), "development", "{out}");
    let ws_opts = field(&out, "opts/workspace");
    assert!(!ws_opts.split(',').any(|o| o == "noexec"), "{out}");
    assert!(ws_opts.split(',').any(|o| o == "nosuid"), "{out}");
    // The container's own /tmp runs what the session builds there (go test, go run, scratch
    // programs), as `execguard run`'s development does; the rest of the write set stays noexec
    // and a program written there is refused with the guard's line (the policy's
    // `executable_roots`), not the kernel's bare EACCES.
    assert!(
        !field(&out, "opts/tmp").split(',').any(|o| o == "noexec"),
        "{out}"
    );
    assert_eq!(field(&out, "tmp.rc"), "7", "{out}");
    assert!(
        field(&out, "opts/state").split(',').any(|o| o == "noexec"),
        "{out}"
    );
    assert_eq!(field(&out, "state.rc"), "126", "{out}");
    assert!(
        field(&out, "state.err").contains(
            "execguard: denied mutable_native: /state/hello -- this profile runs native code"
        ),
        "{out}"
    );
    assert_eq!(field(&out, "goflags"), "", "{out}");
}

/// `docker build` of a Dockerfile given as text (no context), tagged `tag`.
fn docker_build(tag: &str, dockerfile: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new("docker")
        .args(["build", "--network=none", "-q", "-t", tag, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dockerfile.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A base the user brings, shaped like a devcontainer: its agent user (1000) owns /usr/local
/// and /opt and has a toolchain there. `--base-image` builds on it; in the session the tools
/// run, and nothing can be planted there (the root is read-only; W^X puts them on the execute
/// side). Also the `FROM execguard` recipe: a layer's RUN steps run under the guard.
#[test]
fn a_users_own_base_and_a_layered_image_keep_every_control() {
    if !docker_ready() {
        return;
    }
    let base_of_ours = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/image/build.sh"))
        .env("EXECGUARD_IMAGE_BASE_ONLY", "1")
        .output()
        .unwrap();
    let base_of_ours = ok(&base_of_ours).trim().to_string();
    let user_base = format!("{}-userbase", tag().replace(':', "-base:"));
    let built = docker_build(
        &user_base,
        &format!(
            r#"FROM {base_of_ours}
RUN echo 'dev:x:1000:1000:dev:/home/dev:/bin/bash' >> /etc/passwd && echo 'dev:x:1000:' >> /etc/group \
 && mkdir -p /home/dev /opt/tools/bin /usr/local/tools/bin && cp /bin/true /opt/tools/bin/devtool \
 && cp /bin/true /usr/local/tools/bin/localtool \
 && printf '#!/bin/sh\necho devscript\n' > /opt/tools/bin/devscript && chmod 755 /opt/tools/bin/* /usr/local/tools/bin/* \
 && chown -R 1000:1000 /usr/local /opt /home/dev
"#
        ),
    );
    ok(&built);
    let image_tag = format!("{}-userbase", tag());
    let out = execguard()
        .args([
            "image",
            "build",
            "--tag",
            &image_tag,
            "--base-image",
            &user_base,
            "--source",
        ])
        .arg(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        tail(&String::from_utf8_lossy(&out.stderr), 30)
    );
    let ws = Workspace::new("userbase");
    let run = |image: &str, script: &str| {
        execguard()
            .args([
                "image",
                "run",
                "--image",
                image,
                "--user",
                &user_arg(),
                "--workspace",
            ])
            .arg(&ws.0)
            .args(["--arbitrary-command", "--", "bash", "-c", script])
            .output()
            .unwrap()
    };
    let out = ok(&run(
        &image_tag,
        r#"try() { name=$1; shift; "$@" >/tmp/out 2>&1; echo "$name.rc=$?"; echo "$name.out=$(tr '\n' ' ' </tmp/out)"; }
echo "owner=$(stat -c %u /opt /opt/tools/bin /usr/local/tools/bin | tr '\n' ,)"
try devtool /opt/tools/bin/devtool
try localtool /usr/local/tools/bin/localtool
try plant.localtools cp /bin/true /usr/local/tools/bin/planted
try devscript /opt/tools/bin/devscript
try plant.opt cp /bin/true /opt/tools/bin/planted
try plant.local cp /bin/true /usr/local/bin/planted
cp /bin/true /workspace/t; try workspace /workspace/t
try git git --version
"#,
    ));
    // The base's shape survives (the build's COPY makes only the control plane's own
    // directories, such as /usr/local/bin and /usr/local/lib, root's).
    assert_eq!(field(&out, "owner"), "1000,1000,1000,", "{out}");
    assert_eq!(field(&out, "localtool.rc"), "0", "{out}");
    assert_eq!(field(&out, "devtool.rc"), "0", "{out}");
    assert_eq!(field(&out, "devscript.out").trim(), "devscript", "{out}");
    for plant in ["plant.opt", "plant.local", "plant.localtools"] {
        assert_ne!(field(&out, &format!("{plant}.rc")), "0", "{plant}\n{out}");
        assert!(
            field(&out, &format!("{plant}.out")).contains("Read-only file system"),
            "{out}"
        );
    }
    assert_eq!(field(&out, "workspace.rc"), "126", "{out}");
    assert_eq!(field(&out, "git.rc"), "0", "{out}");

    // FROM execguard: the layer's RUN steps run under the guard (as root, strict).
    let layered = format!("{}-layered", tag());
    let refused = docker_build(
        &format!("{layered}-refused"),
        &format!(
            "FROM {}\nUSER root\nRUN cp /bin/true /tmp/x && /tmp/x\n",
            image()
        ),
    );
    assert!(
        !refused.status.success(),
        "a RUN step ran a program from /tmp"
    );
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("execguard: denied mutable_native"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    ok(&docker_build(
        &layered,
        &format!(
            "FROM {}\nUSER root\nRUN printf '#!/bin/sh\\necho layered-tool\\n' > /usr/local/bin/layered-tool && chmod 755 /usr/local/bin/layered-tool\nUSER 1000:1000\n",
            image()
        ),
    ));
    let out = ok(&run(
        &layered,
        "layered-tool; cp /bin/true /workspace/t && /workspace/t; echo rc=$?",
    ));
    assert!(out.contains("layered-tool"), "{out}");
    assert_eq!(field(&out, "rc"), "126", "{out}");
    for t in [&user_base, &image_tag, &layered] {
        let _ = Command::new("docker").args(["rmi", "-f", t]).output();
    }
}

/// The operator's plain git on the host, in the workspace the container used (root here:
/// `safe.directory` lets it read the session user's repository; hooks run as the operator).
fn host_git(ws: &Workspace, args: &[&str]) -> Output {
    host_git_in(ws, &ws.0, args)
}

/// [`host_git`] in `dir` of the workspace (a nested repository).
fn host_git_in(ws: &Workspace, dir: &Path, args: &[&str]) -> Output {
    Command::new("/usr/bin/git")
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &ws.0)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", ws.0.parent().unwrap())
        .args([
            "-c",
            "safe.directory=*",
            "-c",
            "user.name=op",
            "-c",
            "user.email=op@x",
        ])
        .args(args)
        .output()
        .unwrap()
}

/// Issue 29 in the image: its PID 1 hands the workspace back in every profile. The session
/// plants a hook, push URLs to bare repositories it made (with a `pre-receive` hook; one in
/// the workspace, one outside it in its home), a conflicted rebase's todo with an `exec` line,
/// leaves a setuid/setgid copy of a program (issue 28) and native files (an ELF program, a
/// shared object); afterwards the operator's `git commit`, `git push` and `git rebase
/// --continue` on the host run none of it, the push URLs and the bits are gone, and the
/// native files do not run on the host; the next container on the workspace finds them as
/// they were (development runs the program). Each plant writes `PWNED` in the workspace when
/// it runs.
#[test]
fn the_images_pid_1_hands_the_workspace_back_in_every_profile() {
    if !docker_ready() {
        return;
    }
    for profile in ["strict", "development"] {
        let ws = Workspace::new(&format!("handback-{profile}"));
        let origin = Workspace::new(&format!("handback-origin-{profile}"));
        assert!(host_git(&origin, &["init", "-q", "--bare"])
            .status
            .success());
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["commit", "-q", "--allow-empty", "-m", "one"],
            &["remote", "add", "origin", origin.0.to_str().unwrap()],
        ] {
            let o = host_git(&ws, args);
            assert!(o.status.success(), "{args:?}: {}", text(&o).1);
        }
        // Nested repositories (item 5), two of them for the redirections (item 4), and a
        // module whose cache the session plants (item 7).
        for sub in ["vendor/lib", "vendor/two", "vendor/three"] {
            let d = ws.0.join(sub);
            std::fs::create_dir_all(&d).unwrap();
            for args in [
                &["init", "-q", "-b", "main"][..],
                &["commit", "-q", "--allow-empty", "-m", "one"],
            ] {
                let o = host_git_in(&ws, &d, args);
                assert!(o.status.success(), "{sub} {args:?}: {}", text(&o).1);
            }
        }
        ws.write("util.py", "X = 1\n");
        ws.write("app.py", "import util\n");
        let (u, g) = session_user();
        let chown = Command::new("chown")
            .args(["-R", &format!("{u}:{g}")])
            .arg(&ws.0)
            .status()
            .unwrap();
        assert!(chown.success());
        let script = r#"set -e
cd /workspace
hook='#!/bin/sh
touch "$(git rev-parse --show-toplevel 2>/dev/null || pwd)/PWNED" 2>/dev/null || touch /workspace/PWNED'
printf '%s\n' "$hook" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
git init -q --bare /workspace/up.git
printf '#!/bin/sh\ntouch /workspace/PWNED\n' > up.git/hooks/pre-receive && chmod +x up.git/hooks/pre-receive
git remote set-url --add --push origin /workspace/up.git
mkdir -p .git/rebase-merge
printf 'exec touch PWNED\n' > .git/rebase-merge/git-rebase-todo
git rev-parse HEAD > .git/rebase-merge/orig-head
git rev-parse HEAD > .git/rebase-merge/onto
echo refs/heads/main > .git/rebase-merge/head-name
touch .git/rebase-merge/interactive
cp /bin/true /workspace/left-setgid && chmod 2755 /workspace/left-setgid && test -g /workspace/left-setgid
git init -q --bare "$HOME/.cache/out.git"
printf '#!/bin/sh\ntouch /workspace/PWNED\n' > "$HOME/.cache/out.git/hooks/pre-receive" && chmod +x "$HOME/.cache/out.git/hooks/pre-receive"
git remote set-url --add --push origin "$HOME/.cache/out.git"
git config --get-all remote.origin.pushurl | grep -q out.git
printf '#!/bin/sh\ntouch /workspace/PWNED\n' > vendor/lib/.git/hooks/pre-commit && chmod +x vendor/lib/.git/hooks/pre-commit
cp -r vendor/two/.git "$HOME/copy.git" && echo "$HOME/copy.git" > vendor/two/.git/commondir
mv vendor/three/.git "$HOME/moved.git" && echo "gitdir: $HOME/moved.git" > vendor/three/.git
python3 - <<'PY'
import importlib.util, importlib._bootstrap_external as b, os
os.chdir('/workspace')
st = os.stat('util.py')
code = compile('open("/workspace/PWNED", "w").close()\nX = 1\n', 'util.py', 'exec')
p = importlib.util.cache_from_source('util.py')
os.makedirs(os.path.dirname(p), exist_ok=True)
open(p, 'wb').write(b._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))
PY
mkdir -p target/debug venv
cp /bin/true target/debug/app && chmod 755 target/debug/app && cp "$(ls /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc.so.6 2>/dev/null | head -n1)" venv/m.so
echo planted"#;
        let out = profile_sh(&ws, profile, script);
        let (stdout, stderr) = text(&out);
        assert!(
            stdout.contains("planted"),
            "{profile}: the session did not plant\n{stdout}\n{stderr}"
        );
        // One notice line names each file handed back: the hook, the sequencer's state, the
        // hook of the repository the session made in the workspace, and the config with the
        // push URLs (issue 29 item 1: one names a repository the session made outside
        // `/workspace`, in its home).
        assert!(
            stderr.contains("execguard: quarantined "),
            "{profile}: no hand-back notice\n{stderr}"
        );
        for planted in [
            ".git/hooks/pre-commit",
            ".git/rebase-merge/git-rebase-todo",
            "up.git/hooks/pre-receive",
            "vendor/lib/.git/hooks/pre-commit",
            "vendor/two/.git/commondir",
        ] {
            assert!(
                !ws.0.join(planted).exists(),
                "{profile}: {planted} not handed back\n{stderr}"
            );
        }
        assert!(
            std::fs::symlink_metadata(ws.0.join("vendor/three/.git")).is_err(),
            "{profile}: the gitdir: file leading out of the workspace stays\n{stderr}"
        );
        let pycache: Vec<_> = std::fs::read_dir(ws.0.join("__pycache__"))
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        assert!(pycache.is_empty(), "{profile}: {pycache:?}\n{stderr}");
        assert!(
            stderr.contains("capabilities the session left on /workspace/left-setgid"),
            "{profile}: {stderr}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(ws.0.join("left-setgid"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7000, 0, "{profile}: {mode:o}");
        // The operator's next commands on the host.
        let commit = host_git(&ws, &["commit", "-q", "--allow-empty", "-m", "two"]);
        assert!(commit.status.success(), "{profile}: {}", text(&commit).1);
        let _ = host_git(&ws, &["push", "-q", "origin", "main"]);
        let _ = host_git(&ws, &["rebase", "--continue"]);
        let _ = host_git_in(
            &ws,
            &ws.0.join("vendor/lib"),
            &["commit", "-q", "--allow-empty", "-m", "two"],
        );
        let _ = Command::new("/usr/bin/python3")
            .current_dir(&ws.0)
            .arg("app.py")
            .output();
        assert!(
            !ws.0.join("PWNED").exists(),
            "{profile}: the operator's git ran what the session wrote\n{stderr}"
        );
        let config = std::fs::read_to_string(ws.0.join(".git/config")).unwrap();
        assert!(
            !config.contains("out.git") && !config.contains("up.git"),
            "{profile}: a push URL the session added stays:\n{config}\n{stderr}"
        );
        // The native files the session left in the bind-mounted workspace (the program, the
        // shared object, and the setgid copy of `true`) do not run on the host; the next
        // container on the workspace finds them as they were.
        assert!(
            stderr.contains("native_left: 3 native file(s)"),
            "{profile}: {stderr}"
        );
        let app = Command::new(ws.0.join("target/debug/app")).output();
        assert_eq!(
            app.as_ref().map_err(std::io::Error::kind).err(),
            Some(std::io::ErrorKind::PermissionDenied),
            "{profile}: the operator's ./target/debug/app ran: {app:?}"
        );
        assert!(
            !ws.0.join("venv/m.so").exists() && ws.0.join("venv/m.so.execguard-off").exists(),
            "{profile}: the shared object is still loadable by its name"
        );
        // The record PID 1 (root) wrote is the workspace owner's: the operator can remove it.
        use std::os::unix::fs::MetadataExt;
        let record = std::fs::metadata(ws.0.join(".execguard-quarantine/native-files")).unwrap();
        assert_eq!(record.uid(), session_user().0, "{profile}");
        // Strict refuses to run it (`mutable_native`): only development prints `ran`.
        let next = profile_sh(
            &ws,
            profile,
            "stat -c mode=%a /workspace/target/debug/app; test -f /workspace/venv/m.so && echo so=back; \
             /workspace/target/debug/app && echo ran=yes; true",
        );
        let (out2, err2) = text(&next);
        assert_eq!(field(&out2, "mode"), "755", "{profile}: {out2}\n{err2}");
        assert_eq!(field(&out2, "so"), "back", "{profile}: {out2}\n{err2}");
        if profile == "development" {
            assert_eq!(field(&out2, "ran"), "yes", "{profile}: {out2}\n{err2}");
        }
        let app = Command::new(ws.0.join("target/debug/app")).output();
        assert_eq!(
            app.as_ref().map_err(std::io::Error::kind).err(),
            Some(std::io::ErrorKind::PermissionDenied),
            "{profile}: after the next container: {app:?}"
        );
    }
}

/// PID 1 prints the session's refusals when it ends, as `execguard run` does on a host
/// (issue 30): a refusal whose line the command threw away still reaches the person.
#[test]
fn the_session_summary_brings_back_a_swallowed_refusal() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("summary");
    let out = image_run(&ws)
        .args([
            "--arbitrary-command",
            "--",
            "bash",
            "-c",
            "cp /bin/true /workspace/t && chmod +x /workspace/t; /workspace/t 2>/dev/null; echo rc=$?",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("rc=126"), "{stdout}\n{stderr}");
    assert!(
        !stderr.contains("execguard: denied"),
        "not swallowed:\n{stderr}"
    );
    assert!(
        // bash asks twice (its exec, then its retry): one row either way.
        stderr.contains("execguard: session summary: "),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(" x mutable_native, first /workspace/t -- ")),
        "{stderr}"
    );
}

/// Issue 32: PID 1 keeps the session's audit in the user's state directory, which it takes out
/// of the container before the session starts. A session that truncates, rewrites or removes
/// its log, or its writer's socket, or goes for PID 1's descriptors, reaches none of them: the
/// log verifies on the host, with every refusal the session made.
#[test]
fn pid_1_keeps_the_audit_where_the_session_cannot_reach_it() {
    if !docker_ready() {
        return;
    }
    for profile in ["strict", "development"] {
        let ws = Workspace::new(&format!("kept-{profile}"));
        let xdg = ws.0.with_extension("state");
        std::fs::create_dir_all(&xdg).unwrap();
        let script = r#"
A=/var/log/execguard/audit.jsonl
cp /bin/true /workspace/t; chmod +x /workspace/t
/workspace/t 2>/dev/null; echo first=$?
: > "$A" 2>/dev/null; echo truncated=$?
echo '{}' >> "$A" 2>/dev/null; echo rewritten=$?
rm -f "$A" 2>/dev/null; echo removed=$?
ls -A /var/log/execguard 2>/dev/null; echo listed=$?
rm -f /run/execguard/audit.sock 2>/dev/null; echo socket_removed=$?
ls /proc/1/fd >/dev/null 2>&1; echo pid1_fds=$?
/workspace/t 2>/dev/null; echo second=$?
env -i /workspace/t 2>/dev/null; echo third=$?
"#;
        let out = image_run(&ws)
            .env("XDG_STATE_HOME", &xdg)
            .args(["--profile", profile])
            .args(["--arbitrary-command", "--", "bash", "-c", script])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        let says = |k: &str| field(&stdout, k).to_string();
        let refused = if profile == "strict" { "126" } else { "0" };
        for k in ["first", "second", "third"] {
            assert_eq!(says(k), refused, "{profile} {k}\n{stdout}\n{stderr}");
        }
        for k in ["truncated", "rewritten", "listed", "pid1_fds"] {
            assert_ne!(
                says(k),
                "0",
                "{profile}: {k} should fail\n{stdout}\n{stderr}"
            );
        }
        assert!(!stdout.contains("audit.jsonl"), "{stdout}");
        // rm -f of a name that is not there succeeds; the socket's directory is root's.
        assert_ne!(says("socket_removed"), "0", "{stdout}");
        let log = xdg.join("execguard/audit.jsonl");
        let verify = execguard()
            .args(["audit", "verify"])
            .arg(&log)
            .output()
            .unwrap();
        let (vout, verr) = text(&verify);
        assert!(
            verify.status.success(),
            "{profile}: verify\n{vout}\n{verr}\nsession stderr:\n{stderr}"
        );
        let kept = std::fs::read_to_string(&log).unwrap();
        let sessions: Vec<&str> = kept
            .lines()
            .filter(|l| {
                l.contains("\"tool\":\"entrypoint\"") && l.contains("\"reason\":\"session_")
            })
            .collect();
        assert_eq!(sessions.len(), 2, "one start, one end:\n{kept}");
        assert!(sessions[1].contains("\"sig\":"), "{}", sessions[1]);
        if profile == "strict" {
            // bash execs twice per refused command (its exec, then its retry): at least 3.
            let refusals = kept
                .lines()
                .filter(|l| {
                    l.contains("\"decision\":\"deny\"") && l.contains("\"path\":\"/workspace/t\"")
                })
                .count();
            assert!(refusals >= 3, "{refusals} refusals kept:\n{kept}");
        }
    }
}
