//! The docker driver: one session as `docker run` arguments, and starting it.

use crate::profile::{Tmpfs, LABEL_MANIFEST, LABEL_PROVIDERS, LABEL_SECCOMP, PROFILE};
use anyhow::{bail, Context as _, Result};
use std::ffi::OsString;
use std::io::{IsTerminal, Write as _};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command as Process;

/// One session, as `docker run` will be asked to start it.
#[derive(Debug, Clone)]
pub struct Session {
    pub image: String,
    pub workspace: PathBuf,
    pub profile: String,
    pub agent: String,
    pub autonomy: String,
    pub breakglass_ack: Option<String>,
    pub repo_config_ack: Option<String>,
    pub allow_exec_mappings: bool,
    pub uid: u32,
    pub gid: u32,
    pub user_name: String,
    pub manifest_sha256: String,
    pub seccomp_file: PathBuf,
    pub pass_env: Vec<String>,
    pub tty: bool,
    /// The entrypoint's arguments (provider arguments or `--arbitrary-command -- CMD...`).
    pub entry_args: Vec<OsString>,
    /// The user's state directory, where PID 1 keeps the session's audit (mounted on
    /// [`AUDIT_DIR`]; PID 1 unmounts it before the session starts: docs/audit.md).
    pub audit_dir: Option<PathBuf>,
}

/// Where the image policy's kept log lies (`audit_log`), the state directory's mount point.
pub const AUDIT_DIR: &str = "/var/log/execguard";

/// `--tmpfs` value: `PATH:rw,FLAGS,size=Nm,mode=M`.
pub(crate) fn tmpfs_spec(t: &Tmpfs) -> String {
    format!(
        "{}:rw,{},size={}m,mode={:o}",
        t.path,
        t.flags.join(","),
        t.size_mib,
        t.mode
    )
}

/// The workspace mount: a plain bind; the entrypoint makes it `noexec,nosuid,nodev` (strict) or
/// `nosuid,nodev` (other profiles) before the session starts, and verifies it.
pub fn workspace_mount(dir: &Path) -> Result<String> {
    bind_mount(dir, PROFILE.workspace)
}

fn bind_mount(dir: &Path, dst: &str) -> Result<String> {
    let d = dir
        .to_str()
        .with_context(|| format!("the path {} is not UTF-8", dir.display()))?
        .to_string();
    if d.contains([',', '"', '\n', '=']) {
        bail!("the path {d:?} holds a character a mount specification cannot carry");
    }
    Ok(format!("type=bind,src={d},dst={dst}"))
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
    for cap in p.start_caps {
        push(&format!("--cap-add={cap}"));
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
    // The entrypoint starts as root (see `start_caps`); the session runs as uid:gid.
    push("--user=0:0");
    push(&format!("--workdir={}", p.workdir));
    push("--mount");
    push(&workspace_mount(&s.workspace)?);
    if let Some(dir) = &s.audit_dir {
        push("--mount");
        push(&bind_mount(dir, AUDIT_DIR)?);
    }
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
    if let Some(ack) = &s.repo_config_ack {
        env.push(("EXECGUARD_REPO_CONFIG_ACK", ack.clone()));
    }
    if s.allow_exec_mappings {
        env.push(("EXECGUARD_ALLOW_EXEC_MAPPINGS", "1".into()));
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

pub fn parse_user(s: &str) -> Result<(u32, u32)> {
    let (u, g) = s.split_once(':').context("--user takes UID:GID")?;
    let (u, g): (u32, u32) = (u.parse()?, g.parse()?);
    if u == 0 || g == 0 {
        bail!("a session never runs as uid or gid 0");
    }
    Ok((u, g))
}

/// A typed refusal to start: the one refusal type (`execguard_wrappers::Refusal`).
pub use execguard_wrappers::Refusal;

/// The session's uid:gid. Asked for: that. A non-root launcher: the launcher. A root launcher:
/// the workspace's owner, since a session never runs as root and a workspace it cannot write is
/// no place to work; a root-owned workspace is refused with what to do.
pub fn session_user(
    asked: Option<&str>,
    launcher: (u32, u32),
    workspace: &Path,
) -> Result<(u32, u32)> {
    if let Some(u) = asked {
        return parse_user(u);
    }
    if launcher.0 != 0 && launcher.1 != 0 {
        return Ok(launcher);
    }
    let meta = std::fs::metadata(workspace)
        .with_context(|| format!("workspace {}", workspace.display()))?;
    if meta.uid() == 0 || meta.gid() == 0 {
        return Err(Refusal::coded(
"workspace_owned_by_root",
format!(
                "{} is owned by {}:{} and a session never runs as root; chown it to the user who works in it (chown -R UID:GID {}) or pass --user UID:GID of a user who can write it",
                workspace.display(),
                meta.uid(),
                meta.gid(),
                workspace.display()
            ),
)
        .into());
    }
    Ok((meta.uid(), meta.gid()))
}

/// Whether uid:gid may write a directory with this owner and mode (ACLs aside): the session's
/// view of its workspace.
pub fn writable_by(owner: (u32, u32), mode: u32, uid: u32, gid: u32) -> bool {
    if owner.0 == uid {
        mode & 0o200 != 0
    } else if owner.1 == gid {
        mode & 0o020 != 0
    } else {
        mode & 0o002 != 0
    }
}

/// What the caller of `execguard image run` asked for.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The workspace; `None`: the current directory.
    pub workspace: Option<PathBuf>,
    pub profile: String,
    pub agent: String,
    pub autonomy: String,
    pub breakglass_ack: Option<String>,
    pub image: String,
    /// `UID:GID`; `None`: the launcher's ids, or the image user when the launcher is root.
    pub user: Option<String>,
    pub pass_env: Vec<String>,
    /// A seccomp profile file instead of the one recorded in the image.
    pub seccomp: Option<PathBuf>,
    pub arbitrary_command: bool,
    /// Today's UTC date: the workspace's own provider configuration may load (strict).
    pub repo_config_ack: Option<String>,
    /// Run strict even when a write-set mount cannot be made `noexec` (reduced assurance).
    pub allow_exec_mappings: bool,
    /// Build the arguments only (no label lookup of the seccomp profile, nothing started).
    pub print_args: bool,
    pub args: Vec<OsString>,
}

/// A session ready to start: its `docker run` arguments and the files they name.
pub struct Launch {
    pub session: Session,
    _seccomp_tmp: Option<TempFile>,
}

impl Launch {
    pub fn docker_args(&self) -> Result<Vec<OsString>> {
        docker_run_args(&self.session)
    }

    /// Runs `docker run` and waits for it.
    pub fn run(&self) -> Result<std::process::ExitStatus> {
        if self
            .session
            .entry_args
            .first()
            .is_some_and(|a| a == "--arbitrary-command")
        {
            eprintln!(
                "execguard: --arbitrary-command: this session is recorded as lower assurance"
            );
        }
        Process::new("docker")
            .args(self.docker_args()?)
            .status()
            .context("starting docker")
    }
}

/// Checks the request and resolves everything `docker run` needs.
/// The Docker socket the `docker` CLI would use: `DOCKER_HOST`'s when it names a UNIX
/// socket, else the default one.
fn docker_socket() -> Option<PathBuf> {
    match std::env::var("DOCKER_HOST") {
        Ok(host) => host.strip_prefix("unix://").map(PathBuf::from),
        Err(_) => Some(PathBuf::from("/var/run/docker.sock")),
    }
}

/// Inside an execguard session the world hides every socket of an outside process, Docker's
/// among them, behind an empty read-only file: a container started from there would be a
/// session outside this one's rules (another profile, the workspace's programs run). Refused
/// with that reason before `docker` is asked anything (it would only say that no daemon
/// runs).
pub fn refuse_hidden_docker(socket: Option<&Path>) -> Result<(), Refusal> {
    use std::os::unix::fs::FileTypeExt;
    let Some(socket) = socket else {
        return Ok(());
    };
    match std::fs::metadata(socket) {
        Ok(m) if !m.file_type().is_socket() => Err(Refusal::coded(
"docker_hidden",
format!(
                "Docker's socket {} is not a socket here: this is an execguard session, whose world hides the sockets of outside processes, so a container started from it would run outside its rules; run `execguard image run` from outside the session",
                socket.display()
            ),
)),
        _ => Ok(()),
    }
}

pub fn prepare(req: RunRequest) -> Result<Launch> {
    if !req.print_args {
        refuse_hidden_docker(docker_socket().as_deref())?;
    }
    let workspace = match &req.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    // The CLI has refused non-directories and broad workspaces (`start::check_workspace`).
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {}", workspace.display()))?;
    if req.arbitrary_command && req.args.is_empty() {
        bail!("--arbitrary-command needs a command: -- CMD [ARGS...]");
    }
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let launcher = unsafe { (libc::getuid(), libc::getgid()) };
    let (uid, gid) = session_user(req.user.as_deref(), launcher, &workspace)?;
    let meta = std::fs::metadata(&workspace)
        .with_context(|| format!("workspace {}", workspace.display()))?;
    if !writable_by((meta.uid(), meta.gid()), meta.mode(), uid, gid) {
        // Said once, before anything starts: otherwise the first write fails deep in a tool.
        eprintln!(
            "execguard: warning: {uid}:{gid} cannot write {} (owner {}:{}, mode {:o}): the session sees it read-only; pass --user of a user who can write it",
            workspace.display(),
            meta.uid(),
            meta.gid(),
            meta.mode() & 0o7777
        );
    }
    let user_name = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && u != "root")
        .unwrap_or_else(|| "agent".into());
    let mut entry_args = Vec::new();
    if req.arbitrary_command {
        entry_args.push(OsString::from("--arbitrary-command"));
        entry_args.push(OsString::from("--"));
    }
    entry_args.extend(req.args.iter().cloned());

    // The seccomp profile recorded in the image, written to a private file for docker.
    let mut seccomp_tmp = None;
    let seccomp_file = match &req.seccomp {
        Some(f) => f.clone(),
        None if req.print_args => PathBuf::from(format!("<label {LABEL_SECCOMP}>")),
        None => {
            let json = image_label(&req.image, LABEL_SECCOMP)?;
            let tmp = TempFile::new("execguard-seccomp", json.as_bytes())?;
            let path = tmp.path.clone();
            seccomp_tmp = Some(tmp);
            path
        }
    };
    let manifest_sha256 = image_label(&req.image, LABEL_MANIFEST)?;
    if !req.arbitrary_command {
        // An image records the providers it was built with (older images do not).
        if let Ok(list) = image_label(&req.image, LABEL_PROVIDERS) {
            if !list.split(',').any(|p| p == req.agent) {
                return Err(Refusal::coded(
"provider_not_in_image",
format!(
                        "{} was built with {list}, not {}; rebuild with `execguard image build --providers ...{}` or pick --agent from {list}",
                        req.image, req.agent, req.agent
                    ),
)
                .into());
            }
        }
    }
    let session = Session {
        image: req.image,
        workspace,
        profile: req.profile,
        agent: req.agent,
        autonomy: req.autonomy,
        breakglass_ack: req.breakglass_ack,
        repo_config_ack: req.repo_config_ack,
        allow_exec_mappings: req.allow_exec_mappings,
        uid,
        gid,
        user_name,
        manifest_sha256,
        seccomp_file,
        pass_env: req.pass_env,
        tty: std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
        entry_args,
        // The user's state directory, made here as `execguard run` makes it: the image's
        // sessions append to the same kept log, verified the same way.
        audit_dir: Some(
            execguard_audit::key::default_state_dir()
                .and_then(|d| execguard_audit::key::StateDir::open(&d))
                .map(|s| s.path().to_path_buf())
                .context("audit_unwritable: the user's state directory for the kept audit")?,
        ),
    };
    Ok(Launch {
        session,
        _seccomp_tmp: seccomp_tmp,
    })
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
