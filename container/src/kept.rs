//! The image session's kept audit: PID 1 is its writer (`execguard_audit::writer`), as the
//! supervisor of `execguard run` is on a host (docs/audit.md).
//!
//! The image policy names the kept log (`audit_log`, in `/var/log/execguard`) and the socket
//! (`audit_socket`, in `/run/execguard`). `execguard image run` mounts the user's state
//! directory on `/var/log/execguard`; PID 1, still root, opens the log and the key there,
//! binds the socket in its own root-owned `/run/execguard`, and then takes the mount out of
//! the container's tree (`umount2(MNT_DETACH)`): the log and the key are reached only through
//! the descriptors PID 1 holds, by no name the session could open, truncate, rename or
//! remove. The session reaches the writer by the socket's name alone, in a directory it
//! cannot write.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use execguard_audit::key::StateDir;
use execguard_audit::writer::{Session, Writer};

use crate::paths::Paths;
use execguard_wrappers::Refusal;

const NAME: &str = "execguard-entrypoint";

/// PID 1's writer, started (its first record written), not yet out of the session's reach.
pub struct Kept {
    pub writer: Writer,
    /// The state directory's mount, taken out of the tree by [`Kept::hide`].
    dir: PathBuf,
    /// Its owner: the host user's, or root's (a tmpfs of the container's own).
    owner: u32,
}

/// The policy's kept log and socket (re-rooted below a test root); `None` when it names no
/// socket: the log is then the session's own (`crate::audit`).
fn kept_names(paths: &Paths) -> Option<(PathBuf, PathBuf)> {
    let socket = crate::audit::policy_socket(paths)?;
    Some((crate::audit::policy_log(paths)?.0, socket))
}

fn refusal(detail: impl std::fmt::Display) -> Refusal {
    Refusal::coded("audit_unwritable", format!("the kept audit: {detail}"))
}

/// A directory on another file system than its parent's: a volume mounted there.
fn is_mount_point(dir: &Path) -> bool {
    let (Ok(d), Ok(p)) = (std::fs::metadata(dir), std::fs::metadata(dir.join(".."))) else {
        return false;
    };
    d.dev() != p.dev() || d.ino() == p.ino()
}

fn c_path(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap_or_default()
}

/// Starts PID 1's writer for a session of `uid:gid` under `profile`, when the image policy
/// names a socket; root only (an unprivileged start has no writer: said once).
pub fn start(
    paths: &Paths,
    uid: u32,
    gid: u32,
    profile: execguard_policy::Profile,
) -> Result<Option<Kept>, Refusal> {
    let Some((log, socket)) = kept_names(paths) else {
        return Ok(None);
    };
    if crate::sys::geteuid() != 0 {
        eprintln!("{NAME}: notice: audit_unkept: an unprivileged start has no writer for the kept audit: the session's records are not kept (its refusals stand); start the container as root (execguard image run does)");
        return Ok(None);
    }
    let dir = log
        .parent()
        .ok_or_else(|| refusal("the log has no directory"))?
        .to_path_buf();
    if log.file_name() != Some(OsStr::new("audit.jsonl")) {
        return Err(refusal(format!(
            "the image policy's audit_log must be {}/audit.jsonl",
            dir.display()
        )));
    }
    if !is_mount_point(&dir) {
        // No host directory: the container keeps its log on a tmpfs of its own, gone with it.
        let opts = c"mode=0700,size=64m";
        let target = c_path(&dir);
        // SAFETY: NUL-terminated strings that outlive the call; flags are integers.
        let r = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOEXEC | libc::MS_NOSUID | libc::MS_NODEV,
                opts.as_ptr().cast(),
            )
        };
        if r != 0 {
            return Err(refusal(format!(
                "no host directory is mounted on {} and no tmpfs could be ({}); mount the user's state directory there (execguard image run does)",
                dir.display(),
                std::io::Error::last_os_error()
            )));
        }
        eprintln!("{NAME}: notice: the kept audit lives in the container only: mount a host directory on {} to keep it (execguard image run mounts the user's state directory)", dir.display());
    }
    let owner = std::fs::metadata(&dir).map_err(refusal)?.uid();
    let state = StateDir::open_owned(&dir, owner).map_err(refusal)?;
    // The socket lies in root's /run/execguard (made 0755 as the runtime state needs it).
    if socket.parent() != Some(paths.run_dir.as_path()) {
        return Err(refusal(format!(
            "the image policy's audit_socket must lie in {}",
            paths.run_dir.display()
        )));
    }
    crate::state::ensure_run_dir(paths).map_err(refusal)?;
    let _ = std::fs::remove_file(&socket);
    let writer = Writer::start_at(
        &state,
        Session {
            tool: "entrypoint",
            workspace: paths.workspace.to_string_lossy().into_owned(),
            profile: profile.as_str().to_string(),
            assurance: "managed".to_string(),
        },
        Some(socket.clone()),
    )
    .map_err(refusal)?;
    state.give_to_owner().map_err(refusal)?;
    // The session's user connects to the socket (a connect needs write on it); the directory
    // it is in stays root's, so the session can neither remove nor replace it.
    std::os::unix::fs::chown(&socket, Some(uid), Some(gid)).map_err(refusal)?;
    Ok(Some(Kept { writer, dir, owner }))
}

impl Kept {
    /// Takes the state directory out of the container's tree, last step before the session's
    /// user is taken on: from here on only PID 1's descriptors reach the log and the key.
    /// Without the capability to unmount, a directory of root's stays as it is (the session,
    /// never root, cannot enter it); one of the session's own user is refused.
    pub fn hide(&self, session_uid: u32) -> Result<(), Refusal> {
        let target = c_path(&self.dir);
        // SAFETY: a NUL-terminated path that outlives the call.
        if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if self.owner == session_uid {
            return Err(Refusal::coded(
                "audit_reachable",
                format!(
                    "{} is the session user's and could not be unmounted ({e}): the session could rewrite its log; start the container with CAP_SYS_ADMIN (execguard image run does)",
                    self.dir.display()
                ),
            ));
        }
        Ok(())
    }

    /// Keeps the record of a start refused after the writer began, and ends the chain.
    pub fn keep_refusal(self, record: &[u8]) {
        if let Err(e) = self.writer.keep_own(record) {
            eprintln!("{NAME}: warning: audit_unwritable: the refusal could not be kept: {e}");
        }
        if let Err(e) = self.writer.finish_unstarted() {
            eprintln!("{NAME}: warning: audit_unwritable: the session's last audit record could not be written: {e}");
        }
    }
}
