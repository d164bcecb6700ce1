//! `execguard image`: build the hardened image, run sessions in it, and render its run profile.
//!
//! The run profile below ([`PROFILE`]) is the one declaration of how a session container is
//! hardened. Everything that starts a container is generated from it:
//!
//! - the `docker run` arguments of `execguard image run` ([`docker_run_args`]),
//! - `image/generated/compose.yaml` ([`compose_yaml`]),
//! - `image/generated/k8s-job.yaml` ([`k8s_job_yaml`]),
//! - the seccomp profile: Docker's default plus [`SECCOMP_DENY`] ([`seccomp_profile`]).
//!
//! `execguard image generate --check` fails when the committed files differ from what the
//! declaration produces; the unit tests below check that the three renderings agree.

use anyhow::{bail, Context as _, Result};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::{IsTerminal, Write as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};

/// Where the image keeps what the entrypoint needs to know from the launcher.
pub const LABEL_MANIFEST: &str = "execguard.manifest.sha256";
/// The generated seccomp profile travels with the image, so a launcher needs no host file.
pub const LABEL_SECCOMP: &str = "execguard.seccomp";
/// The image `execguard image build` produces and `execguard image run` starts.
pub const DEFAULT_IMAGE: &str = "execguard:latest";
/// The image's own non-root user; a session started by root on the host runs as it.
pub const IMAGE_USER: (u32, u32) = (1000, 1000);
/// The seccomp profile's file name for Compose and on Kubernetes nodes
/// (`/var/lib/kubelet/seccomp/profiles/execguard-seccomp.json`).
pub const SECCOMP_FILE: &str = "execguard-seccomp.json";

/// A tmpfs the session gets.
#[derive(Debug)]
pub struct Tmpfs {
    pub path: &'static str,
    /// Mount flags that a platform may or may not be able to express.
    pub flags: &'static [&'static str],
    pub size_mib: u64,
    pub mode: u32,
}

/// The hardening of a session container.
#[derive(Debug)]
pub struct RunProfile {
    pub cap_drop_all: bool,
    pub no_new_privileges: bool,
    pub read_only_root: bool,
    pub tmpfs: &'static [Tmpfs],
    pub workspace: &'static str,
    /// `noexec` on the workspace bind mount in the strict profile.
    pub workspace_noexec_in_strict: bool,
    pub pids_limit: u64,
    pub memory_mib: u64,
    /// The entrypoint's start mode: the container starts as the mapped user with no
    /// capabilities at all (the root filesystem is read-only, so the entrypoint has no user
    /// database to write and never needs root).
    pub mutability: &'static str,
    pub workdir: &'static str,
}

pub const PROFILE: RunProfile = RunProfile {
    cap_drop_all: true,
    no_new_privileges: true,
    read_only_root: true,
    tmpfs: &[
        Tmpfs {
            path: "/tmp",
            flags: &["noexec", "nosuid", "nodev"],
            size_mib: 512,
            mode: 0o1777,
        },
        Tmpfs {
            path: "/run",
            flags: &["noexec", "nosuid", "nodev"],
            size_mib: 16,
            mode: 0o755,
        },
        Tmpfs {
            path: "/state",
            flags: &["noexec", "nosuid", "nodev"],
            size_mib: 1024,
            mode: 0o1777,
        },
    ],
    workspace: "/workspace",
    workspace_noexec_in_strict: true,
    pids_limit: 512,
    memory_mib: 4096,
    mutability: "readonly",
    workdir: "/workspace",
};

/// Syscalls the session never needs and Docker's default profile allows (some only with a
/// capability the session does not hold): ptrace and cross-process memory access, userfaultfd
/// (a classic exploit primitive), perf and BPF, the kernel keyring, and namespace creation.
pub const SECCOMP_DENY: &[&str] = &[
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    "userfaultfd",
    "perf_event_open",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "unshare",
    "setns",
];

/// Every `CLONE_NEW*` flag (and `CLONE_NEWTIME`, which is `CSIGNAL`-space on clone3 only).
pub const CLONE_NEW_MASK: u64 = 0x0200_0000 // CLONE_NEWCGROUP
    | 0x0400_0000 // CLONE_NEWUTS
    | 0x0800_0000 // CLONE_NEWIPC
    | 0x1000_0000 // CLONE_NEWUSER
    | 0x2000_0000 // CLONE_NEWPID
    | 0x4000_0000 // CLONE_NEWNET
    | 0x0002_0000; // CLONE_NEWNS

const ENOSYS: u64 = 38;
const EPERM: u64 = 1;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Build the image (Rust artifacts on the host, a provider CLI from npm, a local Debian
    /// base when no registry is reachable)
    Build(BuildArgs),
    /// Start a session container with the run profile
    Run(RunArgs),
    /// Write (or --check) image/generated/{compose.yaml,k8s-job.yaml}
    Generate(GenerateArgs),
    /// Write the seccomp profile: Docker's default plus the denials of the run profile
    Seccomp(SeccompArgs),
}

#[derive(clap::Args)]
pub struct BuildArgs {
    /// The image tag
    #[arg(long, default_value = DEFAULT_IMAGE)]
    tag: String,
    /// Base image (default: a local debootstrap base, cached as execguard-base:bookworm)
    #[arg(long)]
    base_image: Option<String>,
    /// The repository (default: the one this binary was built from)
    #[arg(long)]
    source: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The workspace, mounted at /workspace; default: the current directory
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// strict | development | build | breakglass
    #[arg(long, default_value = "strict")]
    profile: String,
    /// The provider: claude (the one in the image), codex, gemini, copilot
    #[arg(long, default_value = "claude")]
    agent: String,
    /// yolo | prompt
    #[arg(long, default_value = "prompt")]
    autonomy: String,
    /// Today's UTC date (YYYY-MM-DD), required by the breakglass profile
    #[arg(long)]
    breakglass_ack: Option<String>,
    /// The image
    #[arg(long, default_value = DEFAULT_IMAGE)]
    image: String,
    /// UID:GID of the session user; default: yours, or 1000:1000 when you are root
    #[arg(long)]
    user: Option<String>,
    /// Pass this variable from your environment to the session (repeatable; the entrypoint's
    /// allow-list still decides)
    #[arg(long = "env", value_name = "NAME")]
    pass_env: Vec<String>,
    /// Use this seccomp profile instead of the one recorded in the image
    #[arg(long)]
    seccomp: Option<PathBuf>,
    /// Run CMD instead of the provider (same hardening, recorded as lower assurance)
    #[arg(long)]
    arbitrary_command: bool,
    /// Print the docker arguments as a JSON array instead of running
    #[arg(long)]
    print_args: bool,
    /// Provider arguments, or with --arbitrary-command: CMD [ARGS...]
    #[arg(last = true)]
    args: Vec<OsString>,
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// Fail if the committed files differ instead of writing them
    #[arg(long)]
    check: bool,
    /// The output directory
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct SeccompArgs {
    /// Docker's default seccomp profile (profiles/seccomp/default.json of the Docker release)
    #[arg(long)]
    docker_default: PathBuf,
    /// Where to write the profile
    #[arg(long)]
    out: PathBuf,
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Build(args) => build(args),
        Command::Run(args) => run_session(args),
        Command::Generate(args) => generate(args),
        Command::Seccomp(args) => {
            let text = std::fs::read_to_string(&args.docker_default)
                .with_context(|| format!("reading {}", args.docker_default.display()))?;
            let default: Value = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", args.docker_default.display()))?;
            let profile = seccomp_profile(&default)?;
            let mut out = serde_json::to_string_pretty(&profile)?;
            out.push('\n');
            std::fs::write(&args.out, out)
                .with_context(|| format!("writing {}", args.out.display()))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn source_dir(explicit: Option<PathBuf>) -> PathBuf {
    explicit.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn build(args: BuildArgs) -> Result<ExitCode> {
    let source = source_dir(args.source);
    let script = source.join("image/build.sh");
    if !script.is_file() {
        bail!(
            "{} not found: pass --source with the repository",
            script.display()
        );
    }
    let mut cmd = Process::new("bash");
    cmd.arg(&script).env("EXECGUARD_IMAGE_TAG", &args.tag);
    if let Some(base) = &args.base_image {
        cmd.env("BASE_IMAGE", base);
    }
    let status = cmd.status().context("starting image/build.sh")?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    match status.code() {
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    }
}

/// One session, as `docker run` will be asked to start it.
#[derive(Debug, Clone)]
pub struct Session {
    pub image: String,
    pub workspace: PathBuf,
    pub profile: String,
    pub agent: String,
    pub autonomy: String,
    pub breakglass_ack: Option<String>,
    pub uid: u32,
    pub gid: u32,
    pub user_name: String,
    pub manifest_sha256: String,
    pub seccomp_file: PathBuf,
    pub pass_env: Vec<String>,
    pub tty: bool,
    /// The entrypoint's arguments (provider arguments or `--arbitrary-command -- CMD...`).
    pub entry_args: Vec<OsString>,
}

/// `--tmpfs` value: `PATH:rw,FLAGS,size=Nm,mode=M`.
fn tmpfs_spec(t: &Tmpfs) -> String {
    format!(
        "{}:rw,{},size={}m,mode={:o}",
        t.path,
        t.flags.join(","),
        t.size_mib,
        t.mode
    )
}

/// The workspace mount. In strict it goes through the local volume driver, which (unlike a
/// `--volume` bind) accepts mount flags: `o=bind,noexec`.
fn workspace_mount(dir: &Path, strict: bool) -> Result<String> {
    let d = dir
        .to_str()
        .context("the workspace path is not UTF-8")?
        .to_string();
    if d.contains([',', '"', '\n', '=']) {
        bail!("the workspace path {d:?} holds a character a mount specification cannot carry");
    }
    Ok(if strict && PROFILE.workspace_noexec_in_strict {
        format!(
            "type=volume,dst={},volume-nocopy,volume-driver=local,volume-opt=type=none,\"volume-opt=o=bind,noexec\",volume-opt=device={d}",
            PROFILE.workspace
        )
    } else {
        format!("type=bind,src={d},dst={}", PROFILE.workspace)
    })
}

/// The `docker run` arguments for a session (after `docker`).
pub fn docker_run_args(s: &Session) -> Result<Vec<OsString>> {
    let p = &PROFILE;
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |v: &str| a.push(v.into());
    push("run");
    push("--rm");
    push("--interactive");
    if s.tty {
        push("--tty");
    }
    if p.cap_drop_all {
        push("--cap-drop=ALL");
    }
    if p.no_new_privileges {
        push("--security-opt=no-new-privileges:true");
    }
    push(&format!(
        "--security-opt=seccomp={}",
        s.seccomp_file.display()
    ));
    if p.read_only_root {
        push("--read-only");
    }
    for t in p.tmpfs {
        push(&format!("--tmpfs={}", tmpfs_spec(t)));
    }
    push(&format!("--pids-limit={}", p.pids_limit));
    push(&format!("--memory={}m", p.memory_mib));
    push(&format!("--memory-swap={}m", p.memory_mib));
    push(&format!("--user={}:{}", s.uid, s.gid));
    push(&format!("--workdir={}", p.workdir));
    push("--mount");
    push(&workspace_mount(&s.workspace, s.profile == "strict")?);
    for (k, v) in session_env(s) {
        push("--env");
        push(&format!("{k}={v}"));
    }
    for name in &s.pass_env {
        push("--env");
        push(name);
    }
    push(&s.image);
    a.extend(s.entry_args.iter().cloned());
    Ok(a)
}

/// The managed environment the entrypoint validates.
fn session_env(s: &Session) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("AGENT_NAME", s.agent.clone()),
        ("EXECGUARD_PROFILE", s.profile.clone()),
        ("EXECGUARD_AUTONOMY", s.autonomy.clone()),
        ("EXECGUARD_MUTABILITY", PROFILE.mutability.to_string()),
        ("EXECGUARD_HOST_UID", s.uid.to_string()),
        ("EXECGUARD_HOST_GID", s.gid.to_string()),
        ("EXECGUARD_HOST_USER", s.user_name.clone()),
        ("EXECGUARD_MANIFEST_SHA256", s.manifest_sha256.clone()),
    ];
    if let Some(ack) = &s.breakglass_ack {
        env.push(("EXECGUARD_BREAKGLASS_ACK", ack.clone()));
    }
    env
}

fn image_label(image: &str, label: &str) -> Result<String> {
    let out = Process::new("docker")
        .args(["image", "inspect", "--format"])
        .arg(format!("{{{{ index .Config.Labels \"{label}\" }}}}"))
        .arg(image)
        .output()
        .context("running docker image inspect")?;
    if !out.status.success() {
        bail!(
            "docker image inspect {image}: {} (build it with `execguard image build`)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let v = String::from_utf8(out.stdout)?.trim().to_string();
    if v.is_empty() || v == "<no value>" {
        bail!("image {image} has no label {label}: was it built by `execguard image build`?");
    }
    Ok(v)
}

fn parse_user(s: &str) -> Result<(u32, u32)> {
    let (u, g) = s.split_once(':').context("--user takes UID:GID")?;
    let (u, g): (u32, u32) = (u.parse()?, g.parse()?);
    if u == 0 || g == 0 {
        bail!("a session never runs as uid or gid 0");
    }
    Ok((u, g))
}

fn run_session(args: RunArgs) -> Result<ExitCode> {
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let workspace = crate::start::check_workspace(&workspace)?;
    if args.arbitrary_command && args.args.is_empty() {
        bail!("--arbitrary-command needs a command: -- CMD [ARGS...]");
    }
    let (uid, gid) = match &args.user {
        Some(u) => parse_user(u)?,
        None => {
            // SAFETY: getuid and getgid cannot fail and touch no memory.
            let (u, g) = unsafe { (libc::getuid(), libc::getgid()) };
            if u == 0 || g == 0 {
                IMAGE_USER
            } else {
                (u, g)
            }
        }
    };
    let user_name = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && u != "root")
        .unwrap_or_else(|| "agent".into());
    let mut entry_args = Vec::new();
    if args.arbitrary_command {
        entry_args.push(OsString::from("--arbitrary-command"));
        entry_args.push(OsString::from("--"));
    }
    entry_args.extend(args.args.iter().cloned());

    // The seccomp profile recorded in the image, written to a private file for docker.
    let mut _seccomp_tmp = None;
    let seccomp_file = match &args.seccomp {
        Some(f) => f.clone(),
        None if args.print_args => PathBuf::from(format!("<label {LABEL_SECCOMP}>")),
        None => {
            let json = image_label(&args.image, LABEL_SECCOMP)?;
            let tmp = TempFile::new("execguard-seccomp", json.as_bytes())?;
            let path = tmp.path.clone();
            _seccomp_tmp = Some(tmp);
            path
        }
    };
    let manifest_sha256 = image_label(&args.image, LABEL_MANIFEST)?;
    let session = Session {
        image: args.image.clone(),
        workspace,
        profile: args.profile,
        agent: args.agent,
        autonomy: args.autonomy,
        breakglass_ack: args.breakglass_ack,
        uid,
        gid,
        user_name,
        manifest_sha256,
        seccomp_file,
        pass_env: args.pass_env,
        tty: std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
        entry_args,
    };
    let docker_args = docker_run_args(&session)?;
    if args.print_args {
        let list: Vec<String> = docker_args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        println!("{}", serde_json::to_string(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.arbitrary_command {
        eprintln!("execguard: --arbitrary-command: this session is recorded as lower assurance");
    }
    let status = Process::new("docker")
        .args(&docker_args)
        .status()
        .context("starting docker")?;
    Ok(exit_code(status))
}

/// A 0600 file removed on drop (the seccomp profile handed to docker).
struct TempFile {
    path: PathBuf,
}

impl TempFile {
    fn new(stem: &str, content: &[u8]) -> Result<Self> {
        let dir = std::env::temp_dir();
        for n in 0..100u32 {
            let path = dir.join(format!("{stem}-{}-{n}.json", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(content)?;
                    return Ok(TempFile { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).context(format!("creating {}", path.display())),
            }
        }
        bail!("could not create a temporary file in {}", dir.display())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // Best effort: the file holds no secret, only the public seccomp profile.
        if let Err(e) = std::fs::remove_file(&self.path) {
            eprintln!("execguard: removing {}: {e}", self.path.display());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Seccomp

/// Docker's default profile with [`SECCOMP_DENY`] removed from every allow rule (whatever
/// capability it is conditioned on), `clone` allowed only without `CLONE_NEW*` flags, `clone3`
/// answered with `ENOSYS` (so libc falls back to `clone`, whose flags a filter can read), and an
/// explicit `EPERM` rule naming each denial.
pub fn seccomp_profile(default: &Value) -> Result<Value> {
    let mut profile = default.clone();
    let obj = profile
        .as_object_mut()
        .context("the default profile is not a JSON object")?;
    if obj.get("defaultAction").and_then(Value::as_str) != Some("SCMP_ACT_ERRNO") {
        bail!("the default profile does not deny by default: refusing to build on it");
    }
    let rules = obj
        .get_mut("syscalls")
        .and_then(Value::as_array_mut)
        .context("the default profile has no syscalls list")?;
    let mut out = Vec::new();
    let mut saw_filtered_clone = false;
    for rule in rules.drain(..) {
        let action = rule.get("action").and_then(Value::as_str).unwrap_or("");
        let mut names: Vec<String> = rule
            .get("names")
            .and_then(Value::as_array)
            .context("a rule without names")?
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
        let has_args = rule
            .get("args")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if action != "SCMP_ACT_ALLOW" {
            // Docker's own refusals (clone3 → ENOSYS) are replaced by ours below.
            names.retain(|n| n != "clone3");
        } else {
            names.retain(|n| !SECCOMP_DENY.contains(&n.as_str()) && n != "clone3");
            if !has_args {
                // An unconditional clone is namespace creation; only the masked rule stays.
                names.retain(|n| n != "clone");
            } else if names.iter().any(|n| n == "clone") {
                if !clone_rule_masks_namespaces(&rule) {
                    names.retain(|n| n != "clone");
                } else {
                    saw_filtered_clone = true;
                }
            }
        }
        if names.is_empty() {
            continue;
        }
        let mut rule = rule;
        rule["names"] = json!(names);
        if names.iter().any(|n| n == "clone") {
            // The masked clone rule must hold whatever capabilities the session is given.
            if let Some(ex) = rule.get_mut("excludes").and_then(Value::as_object_mut) {
                ex.remove("caps");
            }
        }
        out.push(rule);
    }
    if !saw_filtered_clone {
        bail!("the default profile has no clone rule masking CLONE_NEW* flags: unknown format");
    }
    out.push(json!({
        "names": ["clone3"],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": ENOSYS,
        "comment": "execguard: clone3 flags live in memory a filter cannot read; libc falls back to clone",
    }));
    out.push(json!({
        "names": SECCOMP_DENY,
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": EPERM,
        "comment": "execguard: ptrace, cross-process memory, userfaultfd, perf, bpf, keyrings, namespaces",
    }));
    *rules = out;
    Ok(profile)
}

/// Is this `clone` rule `(flags & CLONE_NEW_MASK) == 0`?
fn clone_rule_masks_namespaces(rule: &Value) -> bool {
    rule.get("args")
        .and_then(Value::as_array)
        .is_some_and(|args| {
            args.iter().any(|a| {
                a.get("op").and_then(Value::as_str) == Some("SCMP_CMP_MASKED_EQ")
                    && a.get("value").and_then(Value::as_u64) == Some(CLONE_NEW_MASK)
                    && a.get("valueTwo").and_then(Value::as_u64).unwrap_or(0) == 0
            })
        })
}

// ---------------------------------------------------------------------------------------------
// Compose and Kubernetes

const GENERATED_HEADER: &str = "# Generated by `execguard image generate` from the run profile in src/commands/image.rs.\n# Do not edit: change the profile and regenerate (a test checks this file is current).\n";

/// Controls a platform cannot express, with what carries the job there instead.
pub const K8S_CANNOT_EXPRESS: &[(&str, &str)] = &[
    (
        "noexec,nosuid,nodev on /tmp, /run, /state and the workspace",
        "emptyDir has no mount options: the guard and the entrypoint's Landlock exec seal refuse execution from these roots",
    ),
    (
        "tmpfs modes (1777 / 0755)",
        "emptyDir is 0777; the runtime-state reader trusts only root-owned files, which a non-root pod cannot create",
    ),
    (
        "pids limit",
        "a node setting (kubelet podPidsLimit), not a pod field",
    ),
    (
        "the workspace as a host bind mount",
        "an emptyDir (populate it with an init container or replace it with a PVC)",
    ),
];

pub fn compose_yaml() -> String {
    let p = &PROFILE;
    let mut y = String::from(GENERATED_HEADER);
    y.push_str("# Use: EXECGUARD_WORKSPACE=$PWD EXECGUARD_HOST_UID=$(id -u) EXECGUARD_HOST_GID=$(id -g) \\\n");
    y.push_str("#      EXECGUARD_MANIFEST_SHA256=<image label execguard.manifest.sha256> \\\n");
    y.push_str("#      EXECGUARD_SECCOMP=<file with image label execguard.seccomp> docker compose run --rm session [ARGS]\n");
    y.push_str("services:\n  session:\n");
    y.push_str("    image: ${EXECGUARD_IMAGE:-execguard:latest}\n");
    y.push_str("    user: \"${EXECGUARD_HOST_UID:?}:${EXECGUARD_HOST_GID:?}\"\n");
    y.push_str(&format!("    read_only: {}\n", p.read_only_root));
    if p.cap_drop_all {
        y.push_str("    cap_drop:\n      - ALL\n");
    }
    y.push_str("    security_opt:\n");
    if p.no_new_privileges {
        y.push_str("      - no-new-privileges:true\n");
    }
    y.push_str("      - seccomp=${EXECGUARD_SECCOMP:?}\n");
    y.push_str(&format!("    pids_limit: {}\n", p.pids_limit));
    y.push_str(&format!("    mem_limit: {}m\n", p.memory_mib));
    y.push_str(&format!("    memswap_limit: {}m\n", p.memory_mib));
    y.push_str("    tmpfs:\n");
    for t in p.tmpfs {
        y.push_str(&format!("      - {}\n", tmpfs_spec(t)));
    }
    y.push_str(&format!("    working_dir: {}\n", p.workdir));
    y.push_str("    stdin_open: true\n");
    y.push_str("    environment:\n");
    y.push_str("      AGENT_NAME: ${AGENT_NAME:-claude}\n");
    y.push_str("      EXECGUARD_PROFILE: strict\n");
    y.push_str("      EXECGUARD_AUTONOMY: ${EXECGUARD_AUTONOMY:-prompt}\n");
    y.push_str(&format!("      EXECGUARD_MUTABILITY: {}\n", p.mutability));
    y.push_str("      EXECGUARD_HOST_UID: ${EXECGUARD_HOST_UID:?}\n");
    y.push_str("      EXECGUARD_HOST_GID: ${EXECGUARD_HOST_GID:?}\n");
    y.push_str("      EXECGUARD_HOST_USER: ${USER:-agent}\n");
    y.push_str("      EXECGUARD_MANIFEST_SHA256: ${EXECGUARD_MANIFEST_SHA256:?}\n");
    y.push_str("    volumes:\n");
    y.push_str("      - type: volume\n        source: workspace\n");
    y.push_str(&format!("        target: {}\n", p.workspace));
    y.push_str("volumes:\n  workspace:\n    driver: local\n    driver_opts:\n      type: none\n");
    if p.workspace_noexec_in_strict {
        y.push_str("      o: bind,noexec\n");
    } else {
        y.push_str("      o: bind\n");
    }
    y.push_str("      device: ${EXECGUARD_WORKSPACE:?}\n");
    y
}

fn k8s_volume_name(path: &str) -> String {
    let name = path.trim_start_matches('/').replace('/', "-");
    if name.is_empty() {
        "root".into()
    } else {
        name
    }
}

pub fn k8s_job_yaml() -> String {
    let p = &PROFILE;
    let (uid, gid) = IMAGE_USER;
    let mut y = String::from(GENERATED_HEADER);
    y.push_str("# Install the seccomp profile on each node as\n");
    y.push_str(&format!(
        "# /var/lib/kubelet/seccomp/profiles/{SECCOMP_FILE} (image label {LABEL_SECCOMP}).\n"
    ));
    y.push_str("# Not expressible here (see docs/image.md):\n");
    for (what, instead) in K8S_CANNOT_EXPRESS {
        y.push_str(&format!("#   - {what}: {instead}\n"));
    }
    y.push_str("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: execguard-session\n");
    y.push_str("spec:\n  backoffLimit: 0\n  template:\n    spec:\n");
    y.push_str("      restartPolicy: Never\n");
    y.push_str("      automountServiceAccountToken: false\n");
    y.push_str("      enableServiceLinks: false\n");
    y.push_str("      securityContext:\n");
    y.push_str("        runAsNonRoot: true\n");
    y.push_str(&format!(
        "        runAsUser: {uid}\n        runAsGroup: {gid}\n"
    ));
    y.push_str("        seccompProfile:\n          type: Localhost\n");
    y.push_str(&format!(
        "          localhostProfile: profiles/{SECCOMP_FILE}\n"
    ));
    y.push_str("      containers:\n        - name: session\n");
    y.push_str("          image: execguard:latest\n");
    y.push_str(&format!("          workingDir: {}\n", p.workdir));
    y.push_str("          args: [\"--version\"]\n");
    y.push_str("          env:\n");
    let env: [(&str, String); 8] = [
        ("AGENT_NAME", "claude".into()),
        ("EXECGUARD_PROFILE", "strict".into()),
        ("EXECGUARD_AUTONOMY", "prompt".into()),
        ("EXECGUARD_MUTABILITY", p.mutability.into()),
        ("EXECGUARD_HOST_UID", uid.to_string()),
        ("EXECGUARD_HOST_GID", gid.to_string()),
        ("EXECGUARD_HOST_USER", "agent".into()),
        (
            "EXECGUARD_MANIFEST_SHA256",
            "REPLACE-with-the-image-label-execguard.manifest.sha256".into(),
        ),
    ];
    for (k, v) in env {
        y.push_str(&format!(
            "            - name: {k}\n              value: \"{v}\"\n"
        ));
    }
    y.push_str("          securityContext:\n");
    y.push_str("            runAsNonRoot: true\n");
    y.push_str(&format!(
        "            runAsUser: {uid}\n            runAsGroup: {gid}\n"
    ));
    y.push_str(&format!(
        "            readOnlyRootFilesystem: {}\n",
        p.read_only_root
    ));
    y.push_str(&format!(
        "            allowPrivilegeEscalation: {}\n",
        !p.no_new_privileges
    ));
    y.push_str("            privileged: false\n");
    if p.cap_drop_all {
        y.push_str("            capabilities:\n              drop:\n                - ALL\n");
    }
    y.push_str("            seccompProfile:\n              type: Localhost\n");
    y.push_str(&format!(
        "              localhostProfile: profiles/{SECCOMP_FILE}\n"
    ));
    y.push_str("          resources:\n            limits:\n");
    y.push_str(&format!("              memory: {}Mi\n", p.memory_mib));
    y.push_str("          volumeMounts:\n");
    for t in p.tmpfs {
        y.push_str(&format!(
            "            - name: {}\n              mountPath: {}\n",
            k8s_volume_name(t.path),
            t.path
        ));
    }
    y.push_str(&format!(
        "            - name: workspace\n              mountPath: {}\n",
        p.workspace
    ));
    y.push_str("      volumes:\n");
    for t in p.tmpfs {
        y.push_str(&format!(
            "        - name: {}\n          emptyDir:\n            medium: Memory\n            sizeLimit: {}Mi\n",
            k8s_volume_name(t.path),
            t.size_mib
        ));
    }
    y.push_str("        - name: workspace\n          emptyDir: {}\n");
    y
}

fn generate(args: GenerateArgs) -> Result<ExitCode> {
    let dir = args
        .dir
        .unwrap_or_else(|| source_dir(None).join("image/generated"));
    let files = [
        ("compose.yaml", compose_yaml()),
        ("k8s-job.yaml", k8s_job_yaml()),
    ];
    let mut stale = Vec::new();
    for (name, text) in &files {
        let path = dir.join(name);
        if args.check {
            let on_disk = std::fs::read(&path).unwrap_or_default();
            if on_disk != text.as_bytes() {
                stale.push(path.display().to_string());
            }
        } else {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if !stale.is_empty() {
        bail!(
            "out of date (run `execguard image generate`): {}",
            stale.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(profile: &str) -> Session {
        Session {
            image: "execguard:test".into(),
            workspace: PathBuf::from("/srv/work"),
            profile: profile.into(),
            agent: "claude".into(),
            autonomy: "prompt".into(),
            breakglass_ack: None,
            uid: 1234,
            gid: 2345,
            user_name: "jane".into(),
            manifest_sha256: "0".repeat(64),
            seccomp_file: PathBuf::from("/x/seccomp.json"),
            pass_env: vec![],
            tty: false,
            entry_args: vec!["--version".into()],
        }
    }

    fn docker(profile: &str) -> Vec<String> {
        docker_run_args(&session(profile))
            .unwrap()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    /// Every control of the profile, as each platform must say it (or `None`: documented as
    /// not expressible there).
    fn controls() -> Vec<(String, String, String, Option<String>)> {
        let p = &PROFILE;
        let mut c = vec![(
            "cap drop ALL".to_string(),
            "--cap-drop=ALL".to_string(),
            "    cap_drop:\n      - ALL\n".to_string(),
            Some("capabilities:\n              drop:\n                - ALL\n".to_string()),
        )];
        c.push((
            "no-new-privileges".into(),
            "--security-opt=no-new-privileges:true".into(),
            "      - no-new-privileges:true\n".into(),
            Some("allowPrivilegeEscalation: false\n".into()),
        ));
        c.push((
            "read-only root".into(),
            "--read-only".into(),
            "    read_only: true\n".into(),
            Some("readOnlyRootFilesystem: true\n".into()),
        ));
        c.push((
            "seccomp".into(),
            "--security-opt=seccomp=/x/seccomp.json".into(),
            "      - seccomp=${EXECGUARD_SECCOMP:?}\n".into(),
            Some(format!(
                "type: Localhost\n              localhostProfile: profiles/{SECCOMP_FILE}\n"
            )),
        ));
        c.push((
            "memory".into(),
            format!("--memory={}m", p.memory_mib),
            format!("    mem_limit: {}m\n", p.memory_mib),
            Some(format!("memory: {}Mi\n", p.memory_mib)),
        ));
        c.push((
            "pids".into(),
            format!("--pids-limit={}", p.pids_limit),
            format!("    pids_limit: {}\n", p.pids_limit),
            None,
        ));
        c.push((
            "non-root user".into(),
            "--user=1234:2345".into(),
            "    user: \"${EXECGUARD_HOST_UID:?}:${EXECGUARD_HOST_GID:?}\"\n".into(),
            Some("runAsNonRoot: true\n".into()),
        ));
        c.push((
            "mutability".into(),
            format!("EXECGUARD_MUTABILITY={}", p.mutability),
            format!("      EXECGUARD_MUTABILITY: {}\n", p.mutability),
            Some(format!(
                "- name: EXECGUARD_MUTABILITY\n              value: \"{}\"\n",
                p.mutability
            )),
        ));
        for t in p.tmpfs {
            c.push((
                format!("tmpfs {}", t.path),
                format!("--tmpfs={}", tmpfs_spec(t)),
                format!("      - {}\n", tmpfs_spec(t)),
                Some(format!(
                    "- name: {}\n          emptyDir:\n            medium: Memory\n            sizeLimit: {}Mi\n",
                    k8s_volume_name(t.path),
                    t.size_mib
                )),
            ));
        }
        c.push((
            "workspace noexec".into(),
            "\"volume-opt=o=bind,noexec\"".into(),
            "      o: bind,noexec\n".into(),
            None,
        ));
        c
    }

    #[test]
    fn docker_compose_and_kubernetes_agree_on_every_control() {
        let args = docker("strict").join("\n");
        let compose = compose_yaml();
        let k8s = k8s_job_yaml();
        for (name, d, c, k) in controls() {
            assert!(args.contains(&d), "docker args lack {name}: {d}\n{args}");
            assert!(compose.contains(&c), "compose lacks {name}: {c}");
            match k {
                Some(k) => assert!(k8s.contains(&k), "k8s lacks {name}: {k}"),
                None => assert!(
                    K8S_CANNOT_EXPRESS.iter().any(|(what, _)| {
                        let key = name.split(' ').next().unwrap();
                        what.contains(key)
                    }),
                    "{name} is neither in the k8s manifest nor listed as inexpressible"
                ),
            }
        }
        // Kubernetes gets the mount point of every tmpfs and of the workspace.
        for t in PROFILE.tmpfs {
            assert!(k8s.contains(&format!("mountPath: {}\n", t.path)));
        }
        assert!(k8s.contains("mountPath: /workspace\n"));
        assert!(!k8s.contains("hostPath"), "no host paths in the pod");
    }

    #[test]
    fn the_noexec_workspace_is_strict_only() {
        let strict = docker("strict");
        let dev = docker("development");
        assert!(strict.iter().any(|a| a.contains("o=bind,noexec")));
        assert!(!dev.iter().any(|a| a.contains("noexec\"")));
        assert!(dev.contains(&"type=bind,src=/srv/work,dst=/workspace".to_string()));
    }

    #[test]
    fn no_capability_is_added_and_nothing_runs_as_root() {
        let args = docker("strict");
        assert!(!args.iter().any(|a| a.starts_with("--cap-add")));
        assert!(!args.iter().any(|a| a.starts_with("--privileged")));
        assert!(!args.iter().any(|a| a.contains("unconfined")));
        assert!(!args
            .iter()
            .any(|a| a == "--user=0:0" || a.starts_with("--user=0")));
        assert!(parse_user("0:1000").is_err());
        assert!(parse_user("1000:0").is_err());
        assert_eq!(parse_user("1:2").unwrap(), (1, 2));
    }

    #[test]
    fn workspace_paths_that_would_break_the_mount_spec_are_refused() {
        assert!(workspace_mount(Path::new("/a,b"), true).is_err());
        assert!(workspace_mount(Path::new("/a\"b"), false).is_err());
        assert!(workspace_mount(Path::new("/a=b"), true).is_err());
    }

    #[test]
    fn the_image_args_come_last() {
        let args = docker("strict");
        let i = args.iter().position(|a| a == "execguard:test").unwrap();
        assert_eq!(&args[i + 1..], ["--version"]);
    }

    /// A small profile in Docker's format (made for this test, shaped like Docker's).
    fn fake_default() -> Value {
        json!({
            "defaultAction": "SCMP_ACT_ERRNO",
            "archMap": [],
            "syscalls": [
                {"names": ["read", "write", "ptrace", "userfaultfd", "perf_event_open", "keyctl"],
                 "action": "SCMP_ACT_ALLOW", "args": [], "includes": {}, "excludes": {}},
                {"names": ["bpf", "clone", "clone3", "unshare", "setns", "mount"],
                 "action": "SCMP_ACT_ALLOW", "args": [], "includes": {"caps": ["CAP_SYS_ADMIN"]}, "excludes": {}},
                {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                 "args": [{"index": 0, "value": CLONE_NEW_MASK, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
                 "includes": {}, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
                {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38,
                 "args": [], "includes": {}, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
                {"names": ["process_vm_readv", "process_vm_writev", "ptrace"],
                 "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_PTRACE"]}}
            ]
        })
    }

    fn allowed_names(p: &Value) -> Vec<String> {
        p["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["action"] == "SCMP_ACT_ALLOW")
            .flat_map(|r| r["names"].as_array().unwrap().clone())
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn seccomp_removes_every_denial_from_every_allow_rule() {
        let p = seccomp_profile(&fake_default()).unwrap();
        let allowed = allowed_names(&p);
        for d in SECCOMP_DENY {
            assert!(!allowed.contains(&d.to_string()), "{d} still allowed");
        }
        assert!(allowed.contains(&"read".to_string()));
        assert!(
            allowed.contains(&"mount".to_string()),
            "capability rules stay"
        );
        assert!(!allowed.contains(&"clone3".to_string()));
        // clone survives only with its namespace mask, for every capability set.
        let clones: Vec<&Value> = p["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["action"] == "SCMP_ACT_ALLOW" && r["names"] == json!(["clone"]))
            .collect();
        assert_eq!(clones.len(), 1);
        assert!(clone_rule_masks_namespaces(clones[0]));
        assert!(clones[0]["excludes"].get("caps").is_none());
        let deny = p["syscalls"].as_array().unwrap().last().unwrap();
        assert_eq!(deny["names"], json!(SECCOMP_DENY));
        assert_eq!(deny["errnoRet"], json!(EPERM));
    }

    #[test]
    fn seccomp_refuses_a_profile_it_does_not_understand() {
        let mut allow_default = fake_default();
        allow_default["defaultAction"] = json!("SCMP_ACT_ALLOW");
        assert!(seccomp_profile(&allow_default).is_err());
        let mut no_mask = fake_default();
        no_mask["syscalls"].as_array_mut().unwrap().remove(2);
        assert!(seccomp_profile(&no_mask).is_err());
    }

    #[test]
    fn the_mask_covers_every_namespace_flag() {
        for flag in [
            libc::CLONE_NEWNS,
            libc::CLONE_NEWCGROUP,
            libc::CLONE_NEWUTS,
            libc::CLONE_NEWIPC,
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWNET,
        ] {
            assert_ne!(CLONE_NEW_MASK & flag as u64, 0, "{flag:#x}");
        }
    }
}
