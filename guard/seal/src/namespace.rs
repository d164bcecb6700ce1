//! `noexec` for mappings: Landlock checks execute only at `execve`, while the kernel refuses
//! `mmap(PROT_EXEC)` of a file only on a `noexec` mount. So the session gets a private mount
//! namespace in which every mount of the write set is bind-mounted onto itself `noexec,nosuid`
//! (`nodev` too, outside `/dev`) and every exec dir read-only (exec still allowed).
//!
//! A non-root user makes the namespace inside a new user namespace that maps its uid and gid to
//! themselves (so files keep their owners; `setgroups` is denied there, as the kernel requires
//! for an unprivileged map). Root needs no user namespace. The mount namespace is private: none
//! made inside leak out, and none the host makes while the session runs come in (as a slave's
//! would, with the host's flags: writable and executable in the workspace, writable outside
//! the read-only view). The seccomp
//! filter then refuses every mount call, so the session cannot undo this.

use crate::error::SealError;
use crate::mount_calls::{kept_flags, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID};
use crate::mountinfo::{forget, Mount};
use crate::partition::{beneath, Partition};
use crate::sys::{SealSys, Step};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The namespace the session runs in.
#[derive(Clone, Debug, Serialize)]
pub struct Namespace {
    /// `user+mount` (non-root) or `mount` (root).
    pub kind: &'static str,
    /// Mount points remounted `noexec`.
    pub noexec: Vec<PathBuf>,
    /// Exec dirs bind-mounted read-only.
    pub read_only: Vec<PathBuf>,
    /// Mounts outside the write set made read-only ([`crate::read_only_view`]).
    pub outside_read_only: Vec<PathBuf>,
    /// The bind that failed, when the namespace was made but not all of its mounts: the
    /// ones listed above were made (they only take exec or writes away).
    pub incomplete: Option<String>,
    /// The mount table read after the binds of the write set, for [`report_in`].
    #[serde(skip)]
    pub(crate) table: Option<std::sync::Arc<[Mount]>>,
    /// The session's own world made in it ([`crate::world`]), when one was asked for.
    pub world: Option<crate::world::WorldReport>,
}

fn write_proc(sys: &dyn SealSys, file: &str, text: &str) -> Result<(), SealError> {
    sys.write_proc(file, text).map_err(|e| SealError::Noexec {
        detail: format!("{file}: {e}"),
    })
}

fn unshare(sys: &dyn SealSys, flags: libc::c_int, named: &str) -> Result<(), SealError> {
    sys.unshare(flags).map_err(|e| SealError::Noexec {
        detail: format!("{named} /: {e}"),
    })
}

/// Does [`enter`] work here? Asked only where a failure of it could not be undone and the
/// session should go on without it (`MountsMode::BestEffort`): a non-root user's new user
/// namespace cannot be left, and a kernel or LSM may accept it and then refuse what comes next
/// (Ubuntu's restricted user namespaces give it no capabilities), which would leave this
/// process inside one with its ids unmapped. Root's mount namespace needs no such
/// question: a failed step leaves a private copy of the mounts it had. So it is tried in a
/// forked child ([`SealSys::in_child`]), which reports how it went; the caller must be
/// single-threaded (as for [`isolate`]).
pub fn probe(sys: &dyn SealSys) -> Result<(), SealError> {
    if sys.ids().0 == 0 {
        return Ok(());
    }
    let attempt = || {
        enter(sys).map(drop).map_err(|e| match e {
            SealError::Noexec { detail } | SealError::NamespaceUnfinished { detail } => detail,
            e => e.to_string(),
        })
    };
    sys.in_child(&attempt)
        .map_err(|detail| SealError::Noexec { detail })
}

/// Makes the private namespace and its mounts (see the module). The caller must be
/// single-threaded (`unshare(CLONE_NEWUSER)` refuses otherwise). The current directory is
/// entered again afterwards, so it is seen through the new mounts.
pub fn isolate(
    sys: &dyn SealSys,
    partition: &Partition,
    world: Option<&crate::world::World>,
) -> Result<(Namespace, Option<SealError>), SealError> {
    let cwd = std::env::current_dir().ok();
    let kind = enter(sys)?;
    // The world first: the partition's binds then make all of it noexec like the rest.
    let report = world
        .filter(|w| !w.is_empty())
        .map(crate::world::build)
        .transpose()?;
    // The network after it: the sockets to hide are read from `/proc/net/unix`, which lists
    // those of the reader's network namespace only (a new one has none).
    let network = world
        .and_then(|w| w.network.as_ref())
        .map(|plan| crate::network::make(sys, plan))
        .transpose()?;
    let world = report.map(|w| crate::world::WorldReport { network, ..w });
    let (mut noexec, mut read_only, mut table) = (Vec::new(), Vec::new(), None);
    let kept = world
        .as_ref()
        .map(|w| w.kept.as_slice())
        .unwrap_or_default();
    let mut failed = bind_partition(
        sys,
        partition,
        kept,
        &mut noexec,
        &mut read_only,
        &mut table,
    )
    .err();
    let mut outside_read_only = Vec::new();
    if let (None, Some(t)) = (&failed, &table) {
        match crate::read_only_view::outside_read_only(sys, &partition.write_set, t) {
            Ok(points) => outside_read_only = points,
            Err(e) => failed = Some(e),
        }
    }
    if let Some(cwd) = cwd {
        let _ = std::env::set_current_dir(cwd);
    }
    let namespace = Namespace {
        kind,
        noexec,
        read_only,
        outside_read_only,
        incomplete: failed.as_ref().map(|e| e.to_string()),
        table,
        world,
    };
    Ok((namespace, failed))
}

/// The namespaces themselves: a mount namespace (in a user namespace of its own for a
/// non-root user, ids mapped to themselves) that is private: no mount propagates either way.
pub(crate) fn enter(sys: &dyn SealSys) -> Result<&'static str, SealError> {
    let (uid, gid) = sys.ids();
    if uid == 0 {
        unshare(sys, libc::CLONE_NEWNS, "unshare(CLONE_NEWNS)")?;
        // New mount ids; nothing made here may reach the parent namespace.
        forget();
        sys.mount(None, Path::new("/"), libc::MS_REC | libc::MS_PRIVATE)?;
        return Ok("mount");
    }
    unshare(
        sys,
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
        "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
    )?;
    forget();
    // From here on this process is inside the user namespace for good.
    let finish = || -> Result<(), SealError> {
        sys.at_step(Step::Enter)?;
        write_proc(sys, "/proc/self/setgroups", "deny")?;
        write_proc(sys, "/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
        write_proc(sys, "/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
        sys.mount(None, Path::new("/"), libc::MS_REC | libc::MS_PRIVATE)
    };
    finish().map(|()| "user+mount").map_err(|e| match e {
        SealError::Noexec { detail } => SealError::NamespaceUnfinished { detail },
        e => e,
    })
}

/// The binds of the partition in the namespace [`enter`] made, recording the mount points
/// remounted `noexec` and the exec dirs made read-only. A failure stops at the step that
/// failed: what was made before it only takes exec or writes away. `kept` are the operator's
/// real objects the world attached inside its own dirs: inside a root of `both` (a
/// development session's `/tmp` or home layer) they stay `noexec` unless they are in `both`
/// themselves (the workspace, the session's temp dir).
fn bind_partition(
    sys: &dyn SealSys,
    partition: &Partition,
    kept: &[PathBuf],
    noexec: &mut Vec<PathBuf>,
    read_only: &mut Vec<PathBuf>,
    table: &mut Option<std::sync::Arc<[Mount]>>,
) -> Result<(), SealError> {
    // A file root (the audit log) is bind-mounted as a file.
    let mut roots: Vec<&PathBuf> = partition
        .write_set
        .iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_dir() || m.is_file()))
        .collect();
    roots.sort_by_key(|p| p.as_os_str().len());
    let exec_dirs: Vec<&PathBuf> = partition.exec_dirs.iter().filter(|p| p.is_dir()).collect();
    // The exec dirs keep the flags of the mount they are on now (locked ones included).
    let exec_flags: Vec<libc::c_ulong> = exec_dirs
        .iter()
        .map(|d| kept_flags(d))
        .collect::<Result<_, _>>()?;
    // The innermost root of `both` that holds `p`, and whether a kept object lies between.
    let both = |p: &Path| {
        let Some(root) = partition
            .both
            .iter()
            .filter(|b| beneath(p, b))
            .max_by_key(|b| b.as_os_str().len())
        else {
            return false;
        };
        !kept
            .iter()
            .any(|k| beneath(p, k) && k != root && beneath(k, root))
    };
    for root in &roots {
        sys.mount(Some(root), root, libc::MS_BIND | libc::MS_REC)?;
    }
    // The directories between a root and an exec dir (`~/.local` for `~/.local/bin`) become
    // mount points too: the kernel refuses to rename a mount point (EBUSY), so the session
    // cannot move an exec dir aside and plant a new one in its place.
    let mut ancestors: Vec<PathBuf> = Vec::new();
    for dir in &exec_dirs {
        let Some(root) = roots
            .iter()
            .filter(|r| beneath(dir, r))
            .max_by_key(|r| r.as_os_str().len())
        else {
            continue;
        };
        let mut a = dir.parent();
        while let Some(p) = a.filter(|p| beneath(p, root) && p != root) {
            if !ancestors.iter().any(|x| x == p) {
                ancestors.push(p.to_path_buf());
            }
            a = p.parent();
        }
    }
    ancestors.sort_by_key(|p| p.as_os_str().len());
    for a in &ancestors {
        sys.mount(Some(a), a, libc::MS_BIND | libc::MS_REC)?;
    }
    sys.at_step(Step::Binds)?;
    let after_binds = sys.mount_table()?;
    *table = Some(after_binds.clone());
    sys.at_step(Step::Noexec)?;
    let points: Vec<PathBuf> = after_binds.iter().map(|m| m.point.clone()).collect();
    // A mount the session's world covered (one beneath the old `/tmp`, under the fresh one)
    // is reached by no name any more: the table's lookup, like the kernel's, leads higher.
    let lookup = crate::mountinfo::Lookup::new(&after_binds);
    let covered = |p: &Path| lookup.mount_of(p).is_some_and(|m| m.point != p);
    for point in &points {
        if !roots.iter().any(|r| beneath(point, r)) || noexec.contains(point) || covered(point) {
            continue;
        }
        if both(point) {
            // A reduced profile's workspace (a root itself, bound above with the flags it had)
            // keeps exec.
            continue;
        }
        let mut attrs = MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID;
        if !beneath(point, Path::new("/dev")) || beneath(point, Path::new("/dev/shm")) {
            attrs |= MOUNT_ATTR_NODEV;
        }
        sys.add_attrs(point, &after_binds, attrs)?;
        noexec.push(point.clone());
    }
    sys.at_step(Step::ReadOnly)?;
    // Mounts inside an exec dir become read-only with it (a remount is not recursive, so each
    // is its own), including the ones made above for a nested exec dir's parents. They stay
    // noexec, like every mount under the write set: one may be a bind of a directory the
    // session writes through another name.
    // The table read above still holds: remounts change flags, not mount points.
    let mut inner_exec_mounts: Vec<PathBuf> = Vec::new();
    for point in points {
        // Not a write-set root an exec dir holds (a workspace in it: the CLI refuses that, and
        // the root stays writable here), nor anything under one.
        let held_root = partition
            .write_set
            .iter()
            .any(|r| beneath(&point, r) && exec_dirs.iter().any(|d| beneath(r, d)));
        if exec_dirs.iter().any(|d| beneath(&point, d) && point != **d)
            && !held_root
            && !inner_exec_mounts.contains(&point)
        {
            inner_exec_mounts.push(point);
        }
    }
    for (dir, flags) in exec_dirs.iter().zip(exec_flags) {
        sys.mount(Some(dir), dir, libc::MS_BIND | libc::MS_REC)?;
        sys.mount(
            None,
            dir,
            libc::MS_REMOUNT | libc::MS_BIND | flags | libc::MS_RDONLY | libc::MS_NOSUID,
        )?;
        read_only.push((*dir).clone());
        for point in inner_exec_mounts.iter().filter(|p| beneath(p, dir)) {
            // Its flags now: those of the copy the recursive bind made, noexec included.
            let flags = kept_flags(point)?;
            sys.mount(
                None,
                point,
                libc::MS_REMOUNT | libc::MS_BIND | flags | libc::MS_RDONLY | libc::MS_NOSUID,
            )?;
            read_only.push(point.clone());
        }
    }
    sys.at_step(Step::Hide)?;
    for dir in partition.hidden.iter().filter(|p| p.is_dir()) {
        sys.hide(dir)?;
    }
    Ok(())
}
