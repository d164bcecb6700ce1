//! The session's own world (docs/session.md): what a session writes outside the workspace
//! never takes effect outside it.
//!
//! Made inside the session's mount namespace, before the partition's binds (which then make
//! all of it `noexec` like any other part of the write set):
//!
//! 1. **Home layer**: the operator's `$HOME` is the lower layer of a kernel overlay mounted on
//!    it, whose upper layer is kept per workspace outside any session's reach (the store is
//!    hidden in the session, and the kernel answers a lookup of the upper layer through the
//!    lower one with `ELOOP`). The operator's programs never read it: nothing outside a
//!    session mounts it, and `execguard home` hands a file back only when asked.
//! 2. **Temp and runtime dirs**: `/tmp`, `/var/tmp`, `/dev/shm`, `/run/user/UID` get a fresh
//!    `tmpfs` each, `noexec,nosuid,nodev`, gone with the session.
//! 3. **Kept**: what must stay the operator's real object in the session (the workspace, the
//!    audit log, the session shims, the exec dirs, a `--share`d path, a declared socket) is
//!    cloned (`open_tree`) before the layers above cover it, and attached again on top.
//! 4. **Hidden sockets**: every pathname UNIX socket the kernel lists as bound
//!    (`/proc/net/unix`) that is still reachable gets an empty read-only file bound over it,
//!    except the declared ones: `connect` then answers `ECONNREFUSED`.
//!
//! Every step that fails is a [`SealError::World`]: the caller refuses to start (it has no
//! half-made world to run in: a reduced world is only ever asked for, by a flag).

use crate::mount_calls::{
    MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};
use crate::SealError;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Whether what the session installs into its home layer may run in that workspace's later
/// sessions. One switch (issue 30: the `development` profile's installs): the layer is written
/// either way, never by the operator's own programs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerExec {
    /// Written, never executed (`noexec` mount, and no Landlock execute right: the home stays
    /// on the write side of the partition).
    #[default]
    Noexec,
    /// Written and executed: the caller must also put the home in the partition's `both`
    /// (both rights, reduced assurance), so the kernel's layers agree with the mount.
    Exec,
}

/// The home layer of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HomeLayer {
    /// The operator's home (canonical): the lower layer and the mount point.
    pub home: PathBuf,
    /// The workspace's upper layer and the overlay's work dir (same file system, both
    /// outside `home`'s exec dirs and not inside any kept path).
    pub upper: PathBuf,
    pub work: PathBuf,
    pub exec: LayerExec,
}

/// A directory that gets a fresh `tmpfs` for the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TempDir {
    pub path: PathBuf,
    /// The mode of its root: `0o1777` for the shared temp dirs, `0o700` for a runtime dir.
    pub mode: u32,
    /// Whether what the session writes there may run in it (`/tmp` and `/var/tmp` of a
    /// `development` session: a scratch program built in `/tmp`). Gone with the session
    /// either way; `Exec` asks the caller to put it in the partition's `both`, as for the
    /// home layer.
    pub exec: LayerExec,
}

/// What the session's world is made of. The default makes nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct World {
    pub home: Option<HomeLayer>,
    pub temp: Vec<TempDir>,
    /// Paths (canonical) that stay the operator's real file or directory in the session.
    pub keep: Vec<PathBuf>,
    /// Directories covered by an empty read-only `tmpfs` (the home layers' store).
    pub hide: Vec<PathBuf>,
    /// Hide the outside's pathname sockets, except the paths listed.
    pub hide_sockets: bool,
    pub share_sockets: Vec<PathBuf>,
    /// A network namespace of its own ([`crate::network`]); `None`: the host's network.
    pub network: Option<crate::network::NetworkPlan>,
}

impl World {
    pub fn is_empty(&self) -> bool {
        self.home.is_none() && self.temp.is_empty() && !self.hide_sockets && self.network.is_none()
    }

    /// The parts of the world made executable (a home layer or temp dir with
    /// [`LayerExec::Exec`]): the partition must give them both rights, or Landlock refuses
    /// what the mount allows.
    pub fn executable_roots(&self) -> Vec<PathBuf> {
        let home = self
            .home
            .iter()
            .filter(|h| h.exec == LayerExec::Exec)
            .map(|h| h.home.clone());
        let temp = self
            .temp
            .iter()
            .filter(|t| t.exec == LayerExec::Exec)
            .map(|t| t.path.clone());
        home.chain(temp).collect()
    }
}

/// What was made, for the enforcement report and the start record.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorldReport {
    /// `overlay` (the layer's upper dir) or absent: the home is the operator's own.
    pub home_upper: Option<PathBuf>,
    pub home_exec: Option<LayerExec>,
    /// Temp and runtime dirs that are the session's own.
    pub temp: Vec<PathBuf>,
    /// Those of them the session also runs programs from.
    pub temp_exec: Vec<PathBuf>,
    /// Paths kept real inside the covered ones.
    pub kept: Vec<PathBuf>,
    /// Sockets of outside processes hidden, and those declared shared.
    pub hidden_sockets: Vec<PathBuf>,
    pub shared_sockets: Vec<PathBuf>,
    /// The session's own network, or absent: the host's.
    pub network: Option<crate::network::NetworkReport>,
}

fn world_err(step: &str, p: &Path, e: std::io::Error) -> SealError {
    SealError::World {
        detail: format!("{step} {}: {e}", p.display()),
    }
}

fn last(step: &str, p: &Path) -> SealError {
    world_err(step, p, std::io::Error::last_os_error())
}

fn cstr(p: &Path) -> Result<CString, SealError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SealError::World {
        detail: format!("{}: a NUL in the path", p.display()),
    })
}

// <linux/mount.h>, which the libc crate does not name.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSCONFIG_SET_STRING: libc::c_uint = 1;

/// A detached copy of the mount tree at `path` (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`):
/// the object the name reaches now, whatever covers the name later.
fn clone_tree(dirfd: libc::c_int, path: &Path) -> Result<OwnedFd, SealError> {
    let c = cstr(path)?;
    let flags = OPEN_TREE_CLONE
        | libc::O_CLOEXEC as libc::c_uint
        | libc::AT_RECURSIVE as libc::c_uint
        | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint
        | if path.as_os_str().is_empty() {
            libc::AT_EMPTY_PATH as libc::c_uint
        } else {
            0
        };
    // SAFETY: `c` is NUL-terminated; open_tree only returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, dirfd, c.as_ptr(), flags) };
    if fd < 0 {
        return Err(last("open_tree", path));
    }
    // SAFETY: the kernel just returned this descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Attaches the detached tree `fd` at `path`.
fn attach(fd: &OwnedFd, path: &Path) -> Result<(), SealError> {
    let c = cstr(path)?;
    // SAFETY: `fd` is an open mount descriptor, both strings are NUL-terminated; move_mount
    // changes only this process's own mount namespace.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return Err(last("move_mount", path));
    }
    Ok(())
}

fn mount(
    src: &str,
    dst: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), SealError> {
    let (src_c, dst_c) = (CString::new(src).unwrap_or_default(), cstr(dst)?);
    let fstype_c = CString::new(fstype).unwrap_or_default();
    let data_c = CString::new(data).map_err(|_| SealError::World {
        detail: format!("{}: a NUL in the mount options", dst.display()),
    })?;
    // SAFETY: every pointer is a valid NUL-terminated string; the call changes only this
    // process's (private) mount namespace.
    let rc = unsafe {
        libc::mount(
            src_c.as_ptr(),
            dst_c.as_ptr(),
            fstype_c.as_ptr(),
            flags,
            data_c.as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(last(&format!("mount {fstype} on"), dst));
    }
    Ok(())
}

/// Is `path` `root` or beneath it (both canonical)?
fn beneath(path: &Path, root: &Path) -> bool {
    crate::beneath(path, root)
}

/// Makes `path` exist as a directory (or, `file`, an empty file) to mount on, with the
/// directories above it, in whatever now covers it.
fn mount_point(path: &Path, file: bool) -> Result<(), SealError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| world_err("mkdir", parent, e))?;
    }
    let made = if file {
        // What stands there already is the mount point: a socket (the kept audit's, seen
        // through the home layer) cannot be opened (ENXIO), nor a FIFO without blocking.
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(world_err(
                    "make the mount point",
                    path,
                    std::io::Error::other("a link stands there (a mount would follow it)"),
                ))
            }
            Ok(m) if !m.is_dir() => return Ok(()),
            _ => {}
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map(drop)
    } else {
        match std::fs::create_dir(path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            r => r,
        }
    };
    made.map_err(|e| world_err("make the mount point", path, e))
}

/// Makes `dir` again (when what now covers it has none) with the mode and owner `m` says.
fn remake_dir(dir: &Path, m: &std::fs::Metadata) -> Result<(), SealError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(world_err("mkdir", dir, e)),
    }
    // Another owner can only be given by root (and a user namespace maps no other).
    let _ = std::os::unix::fs::lchown(dir, Some(m.uid()), Some(m.gid()));
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(m.mode() & 0o7777))
        .map_err(|e| world_err("chmod", dir, e))
}

/// Overlay options cannot hold these unescaped, and a path with them is refused rather than
/// guessed at.
fn overlay_path(p: &Path) -> Result<&str, SealError> {
    match p.to_str() {
        Some(s) if !s.contains([',', ':', '\\', '=']) => Ok(s),
        _ => Err(SealError::World {
            detail: format!(
                "{}: a home layer path with ',', ':', '\\' or '=' cannot be an overlay layer",
                p.display()
            ),
        }),
    }
}

/// Makes the world in the calling process's new mount namespace (see the module). Call it
/// right after the namespace is made and before the partition's binds.
pub fn build(world: &World) -> Result<WorldReport, SealError> {
    let mut report = WorldReport::default();
    let covered = |p: &Path| {
        world.home.as_ref().is_some_and(|h| beneath(p, &h.home))
            || world.temp.iter().any(|t| beneath(p, &t.path))
    };
    // 1. Clones of what stays real, taken before anything covers it.
    let mut keep: Vec<(PathBuf, OwnedFd, bool)> = Vec::new();
    // The directories above each kept path, as they are now: made again with their modes
    // and owners where the world covers them (a nested session checks its runtime dir's).
    let mut parents: Vec<(PathBuf, std::fs::Metadata)> = Vec::new();
    // The mounts beneath the home stay as they are (another file system the operator
    // mounted there is not the home's to layer; docs/session.md).
    let submounts = match &world.home {
        Some(h) => home_submounts(&h.home)?,
        None => Vec::new(),
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if let (false, Some(h), Some(sub)) = (root, &world.home, submounts.first()) {
        // The mounts beneath it came from the parent namespace, locked to it: the kernel will
        // not let an overlay in a user namespace take the home as a layer without them
        // ("failed to clone lowerpath"), which would show what they cover.
        return Err(SealError::World {
            detail: format!(
                "the kernel refuses a non-root user a home layer over {} while a file system is mounted beneath it ({}): unmount it, or run with --allow-shared-home",
                h.home.display(),
                sub.display()
            ),
        });
    }
    let mut kept_paths: Vec<&PathBuf> = world
        .keep
        .iter()
        .chain(&world.share_sockets)
        .chain(&submounts)
        .filter(|p| covered(p))
        .collect();
    kept_paths.sort();
    kept_paths.dedup();
    // A path beneath another kept directory comes with it (a socket in a kept exec dir: the
    // kept audit's, which cannot be opened to make a mount point of its own).
    let all = kept_paths.clone();
    kept_paths.retain(|p| !all.iter().any(|q| q != p && beneath(p, q) && q.is_dir()));
    for p in kept_paths {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        let mut a = p.parent();
        while let Some(dir) = a.filter(|d| covered(d)) {
            if !parents.iter().any(|(d, _)| d == dir) {
                if let Ok(m) = std::fs::symlink_metadata(dir) {
                    parents.push((dir.to_path_buf(), m));
                }
            }
            a = dir.parent();
        }
        keep.push((p.clone(), clone_tree(libc::AT_FDCWD, p)?, !meta.is_dir()));
        report.kept.push(p.clone());
    }
    // 2. The home layer.
    if let Some(h) = &world.home {
        let (lower, upper, work) = (
            overlay_path(&h.home)?,
            overlay_path(&h.upper)?,
            overlay_path(&h.work)?,
        );
        // A non-root user's overlay keeps its own attributes in `user.` xattrs (`trusted.`
        // needs CAP_SYS_ADMIN of the initial namespace).
        let data = format!(
            "lowerdir={lower},upperdir={upper},workdir={work}{}",
            if root { "" } else { ",userxattr" }
        );
        let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
        if h.exec == LayerExec::Noexec {
            flags |= libc::MS_NOEXEC;
        }
        mount("overlay", &h.home, "overlay", flags, &data)?;
        report.home_upper = Some(h.upper.clone());
        report.home_exec = Some(h.exec);
        // A home inside a temp dir (a test's) is cloned in turn, to go back on top.
        if world.temp.iter().any(|t| beneath(&h.home, &t.path)) {
            let fd = clone_tree(libc::AT_FDCWD, &h.home)?;
            keep.push((h.home.clone(), fd, false));
        }
    }
    // 3. Fresh temp and runtime dirs.
    for t in &world.temp {
        if !std::fs::symlink_metadata(&t.path).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
        if t.exec == LayerExec::Noexec {
            flags |= libc::MS_NOEXEC;
        }
        mount(
            "tmpfs",
            &t.path,
            "tmpfs",
            flags,
            &format!("mode={:o}", t.mode),
        )?;
        report.temp.push(t.path.clone());
        if t.exec == LayerExec::Exec {
            report.temp_exec.push(t.path.clone());
        }
    }
    // 4. What stays real, shortest path first (a workspace inside a kept home goes on top).
    keep.sort_by_key(|(p, _, _)| p.as_os_str().len());
    parents.sort_by_key(|(p, _)| p.as_os_str().len());
    for (dir, m) in &parents {
        remake_dir(dir, m)?;
    }
    for (p, fd, file) in &keep {
        mount_point(p, *file)?;
        attach(fd, p)?;
    }
    drop(keep);
    // 5. The store of home layers: the session sees none of them, its own included.
    for d in &world.hide {
        if !std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        mount(
            "tmpfs",
            d,
            "tmpfs",
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
            "mode=0,size=4k",
        )?;
    }
    // 6. The outside's sockets.
    if world.hide_sockets {
        report.shared_sockets = world.share_sockets.clone();
        let bound = bound_sockets();
        let mut empty = None;
        for s in bound {
            if world.share_sockets.contains(&s) || report.hidden_sockets.contains(&s) {
                continue;
            }
            use std::os::unix::fs::FileTypeExt;
            if !std::fs::symlink_metadata(&s).is_ok_and(|m| m.file_type().is_socket()) {
                continue;
            }
            let empty = match &empty {
                Some(fd) => fd,
                None => empty.insert(empty_file()?),
            };
            attach(&clone_tree(empty.as_raw_fd(), Path::new("e"))?, &s)?;
            report.hidden_sockets.push(s);
        }
    }
    crate::mountinfo::forget();
    Ok(report)
}

/// The points of the mounts beneath `home` that a name reaches, the outermost of each nest.
fn home_submounts(home: &Path) -> Result<Vec<PathBuf>, SealError> {
    let table = crate::mountinfo::read_mountinfo()
        .map_err(|e| world_err("read", Path::new("/proc/self/mountinfo"), e))?;
    let lookup = crate::mountinfo::Lookup::new(&table);
    let mut points: Vec<PathBuf> = table
        .iter()
        .filter(|m| beneath(&m.point, home) && m.point != home)
        .filter(|m| lookup.mount_of(&m.point).is_some_and(|t| t.id == m.id))
        .map(|m| m.point.clone())
        .collect();
    points.sort_by_key(|p| p.as_os_str().len());
    let mut out: Vec<PathBuf> = Vec::new();
    for p in points {
        if !out.iter().any(|o| beneath(&p, o)) {
            out.push(p);
        }
    }
    Ok(out)
}

/// A detached read-only `tmpfs` holding one empty file `e`, to bind over sockets.
fn empty_file() -> Result<OwnedFd, SealError> {
    let here = Path::new("tmpfs");
    // SAFETY: the name is NUL-terminated; fsopen returns a new descriptor.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) };
    if fs < 0 {
        return Err(last("fsopen", here));
    }
    // SAFETY: the kernel just returned this descriptor.
    let fs = unsafe { OwnedFd::from_raw_fd(fs as libc::c_int) };
    // SAFETY: `fs` is an open fs context; the strings are NUL-terminated.
    let sized = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_SET_STRING,
            c"size".as_ptr(),
            c"4k".as_ptr(),
            0,
        )
    };
    // SAFETY: as above; CREATE takes no key or value.
    let created = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    if sized != 0 || created != 0 {
        return Err(last("fsconfig", here));
    }
    // SAFETY: `fs` is a created fs context; fsmount returns a new mount descriptor.
    let mnt = unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            fs.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        )
    };
    if mnt < 0 {
        return Err(last("fsmount", here));
    }
    // SAFETY: the kernel just returned this descriptor.
    let mnt = unsafe { OwnedFd::from_raw_fd(mnt as libc::c_int) };
    // SAFETY: `mnt` is an open directory descriptor and the name is NUL-terminated.
    let f = unsafe {
        libc::openat(
            mnt.as_raw_fd(),
            c"e".as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
            0o444,
        )
    };
    if f < 0 {
        return Err(last("create", Path::new("tmpfs/e")));
    }
    // SAFETY: closes the descriptor just opened.
    unsafe { libc::close(f) };
    crate::mount_calls::set_attrs(std::os::fd::AsFd::as_fd(&mnt), MOUNT_ATTR_RDONLY)
        .map_err(|e| world_err("mount_setattr", here, e))?;
    Ok(mnt)
}

/// The pathname UNIX sockets the kernel lists as bound in this network namespace
/// (`/proc/net/unix`), by their canonical names: the name given to `bind`, with the
/// directories above it resolved. Abstract sockets (`@name`) are Landlock's to scope.
pub fn bound_sockets() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read("/proc/net/unix") else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for p in parse_proc_net_unix(&text) {
        let canonical = match (p.parent(), p.file_name()) {
            (Some(dir), Some(name)) => dir.canonicalize().ok().map(|d| d.join(name)),
            _ => None,
        };
        if let Some(c) = canonical {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The absolute paths of `/proc/net/unix` (its last column; relative and abstract names
/// are left out: a relative one cannot be found again).
pub fn parse_proc_net_unix(text: &[u8]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n').skip(1) {
        // Num RefCount Protocol Flags Type St Inode [Path]: the path is what follows the
        // seventh field, and may hold spaces.
        let mut rest = line;
        let mut fields = 0;
        while fields < 7 {
            let start = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
            rest = &rest[start..];
            let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
            if end == 0 {
                break;
            }
            rest = &rest[end..];
            fields += 1;
        }
        let path = rest.strip_prefix(b" ").unwrap_or(rest);
        if fields == 7 && path.first() == Some(&b'/') {
            out.push(PathBuf::from(std::ffi::OsStr::from_bytes(path)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_unix_gives_absolute_paths_only() {
        let text = b"Num       RefCount Protocol Flags    Type St Inode Path\n\
0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/docker.sock\n\
0000000000000000: 00000002 00000000 00010000 0001 01 12346 @/tmp/.X11-unix/X0\n\
0000000000000000: 00000003 00000000 00000000 0001 03 12347\n\
0000000000000000: 00000002 00000000 00010000 0001 01 12348 /tmp/a b.sock\n\
0000000000000000: 00000002 00000000 00010000 0001 01 12349 rel.sock\n";
        assert_eq!(
            parse_proc_net_unix(text),
            vec![
                PathBuf::from("/run/docker.sock"),
                PathBuf::from("/tmp/a b.sock")
            ]
        );
    }

    #[test]
    fn layer_paths_that_overlay_options_cannot_hold_are_refused() {
        assert!(overlay_path(Path::new("/home/u")).is_ok());
        for bad in ["/home/a,b", "/home/a:b", "/home/a=b", "/home/a\\b"] {
            assert!(overlay_path(Path::new(bad)).is_err(), "{bad}");
        }
    }
}
