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

/// A provider session: `execguard image run -- ARGS`.
fn provider(ws: &Workspace, args: &[&str]) -> Output {
    image_run(ws).arg("--").args(args).output().unwrap()
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
    // Docker 20.10's local volume driver applies `noexec` to a bind only together with `ro`:
    // report what this daemon did; the guard's refusals below hold either way.
    let ws_opts = field(&out, "opts/workspace");
    eprintln!(
        "workspace mount options: {ws_opts} (noexec {})",
        if ws_opts.split(',').any(|o| o == "noexec") {
            "applied"
        } else {
            "NOT applied by this Docker"
        }
    );
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
    ws.write("sleep.js", "setTimeout(() => {}, 30000);\n");
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
node /workspace/sleep.js & NODE=$!
sleep 30 & SLEEP=$!
sleep 1
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
    assert_eq!(field(&out, "memfd.rc"), "126", "{out}");
    assert!(
        field(&out, "memfd.err").contains("execguard: denied anonymous_native"),
        "{out}"
    );
    assert_eq!(field(&out, "script.rc"), "0", "{out}");
    assert_eq!(field(&out, "script.out"), "script-ran");
    let checked: u32 = field(&out, "checked").parse().unwrap();
    assert!(checked >= 4, "too few processes inspected:\n{out}");
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

#[test]
fn the_provider_runs_through_its_wrapper_and_refused_flags_exit_2() {
    if !docker_ready() {
        return;
    }
    let ws = Workspace::new("provider");
    let version = provider(&ws, &["--version"]);
    let out = ok(&version);
    assert!(out.contains("Claude Code"), "{out}");
    let refused = provider(&ws, &["--dangerously-skip-permissions"]);
    let (o, e) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "stdout {o}\nstderr {e}");
    assert!(e.contains("refused dangerous_flag"), "{e}");
    // The real CLI cannot be started except through the provider wrapper.
    let direct = ok(&sh(
        &ws,
        &format!("{REAL}/claude --version 2>&1; echo \"rc=$?\""),
    ));
    assert_eq!(field(&direct, "rc"), "126", "{direct}");
    assert!(
        direct.contains("execguard: denied protected_runtime_direct"),
        "{direct}"
    );
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
