//! A supervisor duty at the session's end: no file the session created or changed in what
//! outlives it (the workspace, the write set's other lasting roots) keeps a setuid or setgid
//! bit or file capabilities. Inside the session they are inert (`nosuid` mounts,
//! `no_new_privs`); after it, a setuid-root copy of a program would run with root's rights for
//! anyone. Each one cleared is said on stderr and recorded (tool `run`, entry `end`, decision
//! `notice`, reason `privileges_cleared`, `path` the file). The same walk disarms the native
//! files the session built or downloaded there ([`crate::native_left`], reason `native_left`).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What to sweep, and from when.
#[derive(Debug)]
pub struct Sweep {
    pub roots: Vec<PathBuf>,
    /// Directories beneath the roots not to enter: the session's own ones (its temp dirs,
    /// the home its layer covers), whose real contents the session never saw. A path kept
    /// real inside one is a root of its own.
    pub skip: Vec<PathBuf>,
    /// The session's start: files changed since (their status change time) are swept.
    pub since: i64,
    /// The session's start by the kernel's coarse clock, which file times follow: a native
    /// file is disarmed only when changed since (to the nanosecond where the file system
    /// keeps them: one the operator made a moment before the start is not the session's).
    pub started: (i64, i64),
    /// The machine's temp dirs (canonical). Shared (`--allow-shared-temp`), one is written
    /// by every process of the machine: a native file changed there during the session is not
    /// the session's alone (another session's build, the operator's, another user's), so a
    /// root that is one is swept for privileges but none of its native files is disarmed (a
    /// workspace beneath one is a root of its own).
    pub shared_temp: Vec<PathBuf>,
    /// The workspace, where the native files disarmed are recorded for the next session.
    pub workspace: Option<PathBuf>,
    pub audit_log: Option<PathBuf>,
}

impl Sweep {
    /// A sweep of `roots` for a session starting now in `workspace`: the native files a
    /// previous session's end disarmed there, unchanged since, are put back first
    /// (`native_left::rearm`).
    pub fn starting_now(
        (roots, skip): (Vec<PathBuf>, Vec<PathBuf>),
        workspace: Option<PathBuf>,
        audit_log: Option<PathBuf>,
    ) -> Self {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        // A second's slack: ctime has the file system's resolution.
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        // After the clock: what it puts back is changed after the start, disarmed again.
        if let Some(ws) = &workspace {
            crate::native_left::rearm(ws, &roots, &skip);
        }
        Sweep {
            roots,
            skip,
            shared_temp: crate::world::machine_temp_dirs()
                .into_iter()
                .filter_map(|(p, _)| crate::paths::canonical(&p).ok())
                .collect(),
            since: since - 1,
            started: (ts.tv_sec, ts.tv_nsec),
            workspace,
            audit_log,
        }
    }

    /// Clears what the session left and disarms the native files it built or downloaded
    /// (recorded in the workspace for the next session there); returns what it changed.
    pub fn run(&self) -> Swept {
        let mut out = Swept::default();
        for root in &self.roots {
            if let Ok(m) = std::fs::symlink_metadata(root) {
                let disarm = !self.shared_temp.contains(root);
                walk(root, m.dev(), self, disarm, &mut out);
            }
        }
        out.cleared.dedup();
        out.disarmed.dedup_by(|a, b| a.path == b.path);
        for path in &out.cleared {
            eprintln!(
                "execguard: cleared the setuid/setgid bits and capabilities the session left on {}",
                path.display()
            );
            self.audit("privileges_cleared", path);
        }
        if let Some(ws) = &self.workspace {
            crate::native_left::record(ws, &out.disarmed);
        }
        for d in &out.disarmed {
            self.audit("native_left", &d.path);
        }
        if let Some(line) = crate::native_left::notice(&out.disarmed) {
            eprintln!("{line}");
        }
        out
    }

    fn audit(&self, reason: &str, path: &Path) {
        if let Some(log) = &self.audit_log {
            use std::os::unix::ffi::OsStrExt;
            let record = execguard_os::audit::stamp(
                "run",
                "end",
                execguard_policy::audit::Decision::Notice,
                reason,
                None,
                path.as_os_str().as_bytes(),
                b"",
            );
            let _ = execguard_os::audit::append_exact(log.as_os_str().as_bytes(), &record);
        }
    }
}

/// What outlives the session in its write set, as the sweep's roots and the directories it
/// skips: the partition's write-set roots and the paths the world keeps real (the workspace,
/// the audit log, `--share` paths, the exec dirs, the policy's other write roots), less what
/// the world gives the session of its own (fresh temp and runtime dirs, the home its layer
/// covers: gone or never run outside it) and `/dev` (devices; a shared `/dev/shm` is a root
/// of its own). Only what the session could write: a kept path outside the write set is not,
/// nor, in a `sealed` session, an exec dir that exists at the start (a read-only mount there,
/// in every profile): not a root and not entered from one. Walked, `~/.pyenv` and `~/.rustup` alone were 250,000
/// `statx` and 2.4 s at every session's end.
pub fn lasting_roots(
    partition: &execguard_seal::Partition,
    world: &execguard_seal::world::World,
    sealed: bool,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    // The seal makes read-only the exec dirs that are directories now; one the session
    // makes later is writable, and swept.
    let read_only: Vec<PathBuf> = partition
        .exec_dirs
        .iter()
        .filter(|d| sealed && d.is_dir())
        .cloned()
        .collect();
    let own: Vec<PathBuf> = world
        .temp
        .iter()
        .map(|t| t.path.clone())
        .chain(world.home.as_ref().map(|h| h.home.clone()))
        .collect();
    let skip: Vec<PathBuf> = own.iter().chain(&read_only).cloned().collect();
    let in_write_set = |p: &Path| partition.write_set.iter().any(|r| p.starts_with(r));
    let mut roots: Vec<PathBuf> = Vec::new();
    for p in partition.write_set.iter().chain(&world.keep) {
        let kept = world.keep.contains(p);
        if p == Path::new("/dev")
            || !in_write_set(p)
            || read_only.contains(p)
            || (!kept && own.iter().any(|o| p.starts_with(o)))
            || roots.contains(p)
        {
            continue;
        }
        roots.push(p.clone());
    }
    (roots, skip)
}

/// `security.capability`: a file's capabilities.
const CAPABILITY_XATTR: &std::ffi::CStr = c"security.capability";

fn walk(path: &Path, dev: u64, sweep: &Sweep, disarm: bool, out: &mut Swept) {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return;
    };
    // One file system: a mount beneath is not what the session wrote here.
    if m.dev() != dev {
        return;
    }
    if m.is_dir() {
        if sweep.skip.iter().any(|s| s == path) {
            return;
        }
        for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
            walk(&e.path(), dev, sweep, disarm, out);
        }
        return;
    }
    if !m.is_file() || m.ctime() < sweep.since {
        return;
    }
    let special = m.mode() & (libc::S_ISUID | libc::S_ISGID) != 0;
    let caps = has_capabilities(path);
    // A file system without nanoseconds: the second's slack, as above.
    let written = disarm
        && if m.ctime_nsec() == 0 {
            m.ctime() >= sweep.since
        } else {
            (m.ctime(), m.ctime_nsec()) >= sweep.started
        };
    if !special && !caps {
        if written {
            out.disarmed.extend(crate::native_left::disarm(path, &m));
        }
        return;
    }
    if special {
        let _ = std::fs::set_permissions(
            path,
            std::fs::Permissions::from_mode(m.mode() & 0o777 & !(libc::S_ISUID | libc::S_ISGID)),
        );
    }
    if caps {
        remove_capabilities(path);
    }
    out.cleared.push(path.to_path_buf());
    if let Some(m) = std::fs::symlink_metadata(path).ok().filter(|_| written) {
        out.disarmed.extend(crate::native_left::disarm(path, &m));
    }
}

/// What the sweep changed.
#[derive(Debug, Default)]
pub struct Swept {
    /// Files whose setuid/setgid bits or capabilities were cleared.
    pub cleared: Vec<PathBuf>,
    /// Native files made not to run outside (`native_left`).
    pub disarmed: Vec<crate::native_left::Disarmed>,
}

fn cpath(path: &Path) -> Option<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes()).ok()
}

fn has_capabilities(path: &Path) -> bool {
    let Some(c) = cpath(path) else {
        return false;
    };
    // SAFETY: both strings are NUL-terminated; a NULL buffer of size 0 only asks the size.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            CAPABILITY_XATTR.as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    n > 0
}

fn remove_capabilities(path: &Path) {
    if let Some(c) = cpath(path) {
        // SAFETY: both strings are NUL-terminated; the call changes only that file.
        unsafe { libc::lremovexattr(c.as_ptr(), CAPABILITY_XATTR.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_sessions_exec_dirs_are_neither_swept_nor_entered() {
        use execguard_seal::world::{HomeLayer, LayerExec, World};
        let d = crate::test_dirs::tmp("privileges-exec-dirs");
        let (h, w) = (d.join("h"), d.join("w"));
        for dir in [h.join(".pyenv"), w.join(".venv/bin"), h.join("share")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let partition = execguard_seal::Partition::resolved(
            [h.clone(), w.clone()],
            [h.join(".pyenv"), w.join(".venv/bin"), w.join("later/bin")],
            [],
            &|x| Some(x.to_path_buf()),
        );
        let world = World {
            home: Some(HomeLayer {
                home: h.clone(),
                upper: d.join("upper"),
                work: d.join("work"),
                exec: LayerExec::Noexec,
            }),
            keep: vec![h.join(".pyenv"), h.join("share")],
            ..World::default()
        };
        let (roots, skip) = lasting_roots(&partition, &world, true);
        assert_eq!(roots, vec![w.clone(), h.join("share")]);
        assert!(skip.contains(&w.join(".venv/bin")) && skip.contains(&h));
        // One the session makes (absent at the start) is writable in it: entered.
        assert!(!skip.contains(&w.join("later/bin")));
        // Unsealed, nothing is read-only: the exec dir kept real is swept.
        let (roots, skip) = lasting_roots(&partition, &world, false);
        assert!(roots.contains(&h.join(".pyenv")), "{roots:?}");
        assert!(!skip.contains(&w.join(".venv/bin")));
    }

    #[test]
    fn a_setuid_file_made_now_is_cleared_and_an_old_one_left() {
        let d = crate::test_dirs::tmp("privileges");
        let new = d.join("new");
        std::fs::write(&new, "x").unwrap();
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let sweep = Sweep::starting_now((vec![d.clone()], vec![]), None, None);
        assert_eq!(sweep.run().cleared, vec![new.clone()]);
        let mode = std::fs::metadata(&new).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o755);
        let later = Sweep {
            since: i64::MAX,
            ..Sweep::starting_now((vec![d.clone()], vec![]), None, None)
        };
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o2755)).unwrap();
        assert!(
            later.run().cleared.is_empty(),
            "a file older than the session is not its"
        );
    }

    #[test]
    fn a_shared_temp_dir_is_swept_for_privileges_but_its_native_files_keep_their_bits() {
        let d = crate::test_dirs::tmp("privileges-shared-temp");
        let ws = d.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let sweep = Sweep::starting_now((vec![d.clone(), ws.clone()], vec![]), None, None);
        // Another process's program, made in the shared dir during the session.
        let theirs = d.join("their-program");
        std::fs::copy("/bin/true", &theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o4755)).unwrap();
        // The session's, in its workspace beneath it.
        let ours = ws.join("payload");
        std::fs::copy("/bin/true", &ours).unwrap();
        let shared = Sweep {
            shared_temp: vec![d.clone()],
            ..sweep
        };
        let out = shared.run();
        assert_eq!(
            out.cleared,
            vec![theirs.clone()],
            "privileges go everywhere"
        );
        let disarmed: Vec<&Path> = out.disarmed.iter().map(|x| x.path.as_path()).collect();
        assert_eq!(disarmed, vec![ours.as_path()], "only the workspace's");
        let mode = std::fs::metadata(&theirs).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o755, "its setuid bit cleared, its execute bits kept");
        assert_eq!(std::fs::metadata(&ours).unwrap().mode() & 0o111, 0);
    }
}
