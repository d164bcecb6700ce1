//! The session's own world on a host (docs/session.md): what `execguard run` asks the seal to
//! make ([`execguard_seal::world`]), and `execguard home`, which shows a workspace's home
//! layer and hands a file of it back only when the operator says so.

use anyhow::{bail, Context as _, Result};
use execguard_policy::Reduction;
use execguard_seal::world::{HomeLayer, LayerExec, TempDir, World};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What the command line chose for the world.
#[derive(Clone, Debug, Default)]
pub struct WorldChoice {
    /// Paths in `$HOME` shared live with the operator (`--share`).
    pub share: Vec<PathBuf>,
    /// Sockets of outside processes the session may reach (`--share-socket`).
    pub share_sockets: Vec<PathBuf>,
    /// The sockets of the session's own supervisor the guard must reach from inside (the
    /// policy's `audit_socket`): the one exception the session crate declares, by path.
    pub own_sockets: Vec<PathBuf>,
    /// Reductions, each spelled as its flag.
    pub allow_shared_home: bool,
    pub allow_shared_temp: bool,
    pub allow_outside_sockets: bool,
    /// Whether the home layer's programs may run in the workspace's sessions (issue 30).
    pub home_exec: LayerExec,
    /// Whether the session's own `/tmp` and `/var/tmp` run what it builds there (issue 30:
    /// `development`'s scratch programs; `/dev/shm` and the runtime dir stay `noexec`).
    pub temp_exec: LayerExec,
}

/// Where the home layers are kept: `$XDG_STATE_HOME/execguard/homes` (an absolute
/// `XDG_STATE_HOME`), else `~/.local/state/execguard/homes`. In every session it is hidden.
pub fn store(home: &Path) -> PathBuf {
    match std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        Some(state) => state.join("execguard/homes"),
        None => home.join(".local/state/execguard/homes"),
    }
}

/// A workspace's layer name: its directory's name (for people) and a hash of its canonical
/// path (so two workspaces never share a layer).
pub fn workspace_id(workspace: &Path) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(workspace.as_os_str().as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(32)
        .collect();
    format!("{name}-{hex}")
}

/// A workspace's home layer: `upper` (what its sessions wrote), `work` (the overlay's).
pub fn layer(home: &Path, workspace: &Path) -> PathBuf {
    store(home).join(workspace_id(workspace))
}

fn make_private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("world_unavailable: cannot create {}", dir.display()))
}

/// Is `store` the empty read-only `tmpfs` a session's world puts over it (so this process
/// runs inside a session: its home layer is the outer session's)?
fn store_hidden(store: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(store.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs writes only into the zeroed struct it is given; `c` is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    // SAFETY: statvfs writes only into the zeroed struct it is given; `c` is NUL-terminated.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let flags_read = unsafe { libc::statvfs(c.as_ptr(), &mut vfs) } == 0;
    st.f_type == libc::TMPFS_MAGIC && flags_read && vfs.f_flag & libc::ST_RDONLY != 0
}

/// The temp dirs of its own a session runs what it builds in when its profile runs written
/// code (`development`, `build`: [`WorldChoice::temp_exec`]).
pub const EXEC_TEMP: [&str; 2] = ["/tmp", "/var/tmp"];

/// The machine's temp and runtime dirs, with their modes: what a session gets fresh, and,
/// shared (`--allow-shared-temp`), what every process writes in.
pub fn machine_temp_dirs() -> [(PathBuf, u32); 4] {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    [
        (PathBuf::from(EXEC_TEMP[0]), 0o1777),
        (PathBuf::from(EXEC_TEMP[1]), 0o1777),
        (PathBuf::from("/dev/shm"), 0o1777),
        (PathBuf::from(format!("/run/user/{uid}")), 0o700),
    ]
}

/// The temp and runtime dirs a session gets fresh: those that exist, by canonical name.
/// [`EXEC_TEMP`] run what the session builds there when `exec` says so.
fn temp_dirs(exec: LayerExec) -> Vec<TempDir> {
    let mut out: Vec<TempDir> = Vec::new();
    for (p, mode) in machine_temp_dirs() {
        let exec = if EXEC_TEMP.iter().any(|t| p == Path::new(t)) {
            exec
        } else {
            LayerExec::Noexec
        };
        if let Ok(c) = crate::paths::canonical(&p) {
            if c.is_dir() && !out.iter().any(|t| t.path == c) {
                out.push(TempDir {
                    path: c,
                    mode,
                    exec,
                });
            }
        }
    }
    out
}

/// What stays the operator's real object in a host session's world: the workspace, every
/// mutable root and exec dir of the policy (the audit log and the files the session writes by
/// inheritance among them), the exec-dir record and its kept shims, and `extra` (the shims).
/// `$HOME` and the temp dirs themselves are what the world replaces, so never kept.
pub fn keep(
    policy: &execguard_policy::Policy<'_>,
    partition: &execguard_seal::Partition,
    extra: Vec<PathBuf>,
) -> Vec<PathBuf> {
    let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
    let home = crate::exec_dirs::home().and_then(|h| crate::paths::canonical(&h).ok());
    let temp = temp_dirs(LayerExec::Noexec);
    let mut out: Vec<PathBuf> = vec![path(policy.workspace())];
    out.extend(policy.audit_log().map(path));
    out.extend(partition.write_set.iter().cloned());
    out.extend(partition.exec_dirs.iter().cloned());
    if let Ok(files) = crate::inherited::inherited_writable_files() {
        out.extend(files);
    }
    if let Some(h) = &home {
        out.extend(
            crate::exec_dirs::exec_dir_record(h)
                .parent()
                .map(Path::to_path_buf),
        );
    }
    out.extend(extra);
    let replaced = |p: &Path| {
        home.as_ref().is_some_and(|h| h.starts_with(p))
            || temp.iter().any(|t| t.path.starts_with(p))
    };
    let mut kept: Vec<PathBuf> = Vec::new();
    for p in out {
        let p = crate::paths::canonical(&p).unwrap_or(p);
        if !replaced(&p) && !kept.contains(&p) {
            kept.push(p);
        }
    }
    kept
}

/// The world of a host session. `keep` are the paths that must stay the operator's real
/// objects in it (the workspace, the audit log, the shims, the exec dirs and the files the
/// session writes by inheritance). Returns the world and the reductions the flags asked for
/// (each said once here).
pub fn host_world(
    workspace: &Path,
    keep: Vec<PathBuf>,
    choice: &WorldChoice,
) -> Result<(World, Vec<Reduction>)> {
    let mut reductions = Vec::new();
    let mut world = World {
        keep,
        hide_sockets: !choice.allow_outside_sockets,
        ..World::default()
    };
    let home = crate::exec_dirs::home().and_then(|h| crate::paths::canonical(&h).ok());
    for s in &choice.share {
        let c = crate::paths::canonical(s)
            .with_context(|| format!("share_invalid: --share {}", s.display()))?;
        if !home.as_ref().is_some_and(|h| c.starts_with(h) && &c != h) {
            bail!(
                "share_invalid: --share {}: only a path inside $HOME can be shared (the rest of the world is not the session's); name one there",
                s.display()
            );
        }
        world.keep.push(c);
    }
    for s in &choice.share_sockets {
        let c = crate::paths::canonical(s)
            .with_context(|| format!("share_invalid: --share-socket {}", s.display()))?;
        if !std::fs::metadata(&c).is_ok_and(|m| m.file_type().is_socket()) {
            bail!(
                "share_invalid: --share-socket {}: not a socket; name the socket file itself",
                s.display()
            );
        }
        world.share_sockets.push(c);
    }
    for s in &choice.own_sockets {
        let c = match (
            s.parent().and_then(|d| crate::paths::canonical(d).ok()),
            s.file_name(),
        ) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => s.clone(),
        };
        world.keep.push(c.clone());
        world.share_sockets.push(c);
    }
    if choice.allow_outside_sockets {
        eprintln!("execguard: notice: reduced world (--allow-outside-sockets): the session can reach every socket of the operator's processes");
        reductions.push(Reduction::OutsideSockets);
    }
    if choice.allow_shared_temp {
        eprintln!("execguard: notice: reduced world (--allow-shared-temp): the session shares /tmp, /var/tmp, /dev/shm and the runtime dir with the operator");
        reductions.push(Reduction::SharedTemp);
    } else {
        world.temp = temp_dirs(choice.temp_exec);
    }
    match home {
        // A nested session lives in the outer one's world, whose store it cannot see.
        Some(home) if store_hidden(&store(&home)) => {}
        Some(home) if home != Path::new("/") && !choice.allow_shared_home => {
            let store = store(&home);
            if store.starts_with(workspace) || workspace.starts_with(&store) {
                bail!(
                    "world_unavailable: the home layers' store {} and the workspace overlap; set XDG_STATE_HOME elsewhere",
                    store.display()
                );
            }
            let layer = layer(&home, workspace);
            let (upper, work) = (layer.join("upper"), layer.join("work"));
            make_private_dir(&upper)?;
            make_private_dir(&work)?;
            let _ = std::fs::write(layer.join("workspace"), workspace.as_os_str().as_bytes());
            world.hide.push(crate::paths::canonical(&store)?);
            world.home = Some(HomeLayer {
                home,
                upper: crate::paths::canonical(&upper)?,
                work: crate::paths::canonical(&work)?,
                exec: choice.home_exec,
            });
        }
        Some(_) if choice.allow_shared_home => {
            eprintln!("execguard: notice: reduced world (--allow-shared-home): what the session writes in $HOME takes effect outside it");
            reductions.push(Reduction::SharedHome);
        }
        _ => {}
    }
    Ok((world, reductions))
}

/// One change of a layer, relative to `$HOME`.
#[derive(Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: &'static str,
    pub path: PathBuf,
}

fn is_whiteout(m: &std::fs::Metadata) -> bool {
    m.file_type().is_char_device() && m.rdev() == 0
}

/// The changes in `upper` against `home`: `added`, `changed`, `removed` (a whiteout), and
/// `replaced` (a directory the layer made opaque); a directory only copied up to hold a
/// change is not one itself.
pub fn changes(home: &Path, upper: &Path) -> Vec<Change> {
    let mut out = Vec::new();
    walk(home, upper, Path::new(""), &mut out);
    out
}

fn walk(home: &Path, upper: &Path, rel: &Path, out: &mut Vec<Change>) {
    let Ok(entries) = std::fs::read_dir(upper.join(rel)) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let rel = rel.join(e.file_name());
        let Ok(m) = e.path().symlink_metadata() else {
            continue;
        };
        let real = std::fs::symlink_metadata(home.join(&rel)).ok();
        if is_whiteout(&m) {
            out.push(Change {
                kind: "removed",
                path: rel,
            });
        } else if m.is_dir() {
            match &real {
                Some(r) if r.is_dir() => {}
                Some(_) => out.push(Change {
                    kind: "replaced",
                    path: rel.clone(),
                }),
                None => out.push(Change {
                    kind: "added",
                    path: rel.clone(),
                }),
            }
            walk(home, upper, &rel, out);
        } else {
            out.push(Change {
                kind: if real.is_some() { "changed" } else { "added" },
                path: rel,
            });
        }
    }
}

/// A workspace's home and layer (`workspace`: default, the current directory).
pub fn home_and_layer(workspace: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let ws = match workspace {
        Some(w) => w.to_path_buf(),
        None => std::env::current_dir()?,
    };
    let ws = crate::paths::canonical(&ws)
        .with_context(|| format!("workspace_not_directory: {}", ws.display()))?;
    let home = crate::exec_dirs::home()
        .and_then(|h| crate::paths::canonical(&h).ok())
        .context("home_unknown: $HOME is not set to a directory; set it")?;
    let layer = layer(&home, &ws);
    Ok((home, layer))
}

/// `execguard home accept PATH`: hands `path` (absolute in `home`, or relative to it) back
/// from the layer; returns how many entries.
pub fn accept_path(home: &Path, layer: &Path, path: &Path) -> Result<usize> {
    let rel = if path.is_absolute() {
        path.strip_prefix(home)
            .map(Path::to_path_buf)
            .map_err(|_| {
                anyhow::anyhow!(
                    "path_outside_home: {} is not in {}; name a path in $HOME",
                    path.display(),
                    home.display()
                )
            })?
    } else {
        path.to_path_buf()
    };
    if rel.as_os_str().is_empty()
        || rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        bail!(
            "path_invalid: {}: name a path inside $HOME, without `..`",
            path.display()
        );
    }
    let n = accept(home, &layer.join("upper"), &rel)?;
    if n == 0 {
        bail!(
            "path_unchanged: {} is not in the workspace's home layer (execguard home diff lists what is)",
            home.join(&rel).display()
        );
    }
    Ok(n)
}

/// `execguard home discard`: the layer goes; the workspace's next session starts from the
/// real home. Returns whether there was one.
pub fn discard(layer: &Path) -> Result<bool> {
    // The overlay leaves its work dir mode 000.
    open_dirs(layer);
    match std::fs::remove_dir_all(layer) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => bail!("cannot remove {}: {e}", layer.display()),
    }
}

/// Gives the owner search and write rights on every directory beneath `dir` (links not
/// followed), so it can be removed.
fn open_dirs(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(m) = dir.symlink_metadata() else {
        return;
    };
    if m.is_dir() {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            open_dirs(&e.path());
        }
    }
}

/// Hands `rel` back from `upper` into `home` and takes it out of the layer; returns how many
/// entries. A file keeps its mode without setuid/setgid; links are copied as links.
fn accept(home: &Path, upper: &Path, rel: &Path) -> Result<usize> {
    use std::os::unix::fs::PermissionsExt;
    let from = upper.join(rel);
    let to = home.join(rel);
    let Ok(m) = from.symlink_metadata() else {
        return Ok(0);
    };
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if is_whiteout(&m) {
        match std::fs::symlink_metadata(&to) {
            Ok(r) if r.is_dir() => std::fs::remove_dir_all(&to)?,
            Ok(_) => std::fs::remove_file(&to)?,
            Err(_) => {}
        }
        std::fs::remove_file(&from)?;
        return Ok(1);
    }
    if m.is_dir() {
        if !to.is_dir() {
            if to.symlink_metadata().is_ok() {
                std::fs::remove_file(&to)?;
            }
            std::fs::create_dir(&to)?;
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(m.mode() & 0o777))?;
        }
        let mut n = 0;
        let mut names: Vec<_> = std::fs::read_dir(&from)?
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        for name in names {
            n += accept(home, upper, &rel.join(name))?;
        }
        let _ = std::fs::remove_dir(&from);
        return Ok(n.max(1));
    }
    // Written beside it and renamed into place: the operator's file is never half-written.
    let tmp = to.with_file_name(format!(
        ".{}.execguard-accept",
        to.file_name().unwrap_or_default().to_string_lossy()
    ));
    let _ = std::fs::remove_file(&tmp);
    if m.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(&from)?, &tmp)?;
    } else if m.is_file() {
        use std::os::unix::fs::OpenOptionsExt;
        let mut src = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&from)?;
        let mut dst = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(m.mode() & 0o777)
            .open(&tmp)?;
        std::io::copy(&mut src, &mut dst)?;
        dst.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o777))?;
    } else {
        bail!(
            "path_invalid: {} is neither a file, a link nor a directory",
            from.display()
        );
    }
    std::fs::rename(&tmp, &to)?;
    std::fs::remove_file(&from)?;
    Ok(1)
}

/// The world as this process sees it (`execguard doctor`): whether `$HOME` is a home layer,
/// which temp and runtime dirs are a `tmpfs` of their own, and how many sockets the kernel
/// lists as bound are reachable here.
pub fn observe() -> Vec<String> {
    let table = execguard_seal::mountinfo::read_mountinfo().unwrap_or_default();
    let mount_at = |p: &Path| {
        table
            .iter()
            .rev()
            .find(|m| m.point == p)
            .map(|m| m.fstype.clone())
    };
    let home = crate::exec_dirs::home().and_then(|h| crate::paths::canonical(&h).ok());
    let mut out = vec![match &home {
        Some(h) if mount_at(h).as_deref() == Some("overlay") => format!(
            "  home: a layer of its own over {} (what is written there stays there)",
            h.display()
        ),
        Some(h) => format!("  home: the operator's own {}", h.display()),
        None => "  home: none ($HOME unset)".into(),
    }];
    let own: Vec<String> = temp_dirs(LayerExec::Noexec)
        .iter()
        .filter(|t| mount_at(&t.path).as_deref() == Some("tmpfs"))
        .map(|t| t.path.display().to_string())
        .collect();
    out.push(format!(
        "  temp and runtime dirs that are a tmpfs mount (a session's own are): {}",
        if own.is_empty() {
            "none".into()
        } else {
            own.join(" ")
        }
    ));
    let reachable = execguard_seal::world::bound_sockets()
        .iter()
        .filter(|s| std::fs::symlink_metadata(s).is_ok_and(|m| m.file_type().is_socket()))
        .count();
    out.push(format!(
        "  pathname sockets the kernel lists that are reachable here: {reachable}"
    ));
    out.push(network_seen());
    out
}

/// The network as this process sees it: a namespace of the session's own has `lo` alone.
fn network_seen() -> String {
    // /proc/self/net is this process's namespace's (/sys/class/net is the mounter's).
    let names: std::collections::BTreeSet<String> = std::fs::read_to_string("/proc/self/net/dev")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .collect();
    if names.len() == 1 && names.contains("lo") {
        let proxy = std::env::var("HTTPS_PROXY").unwrap_or_default();
        format!("  network: a namespace of its own (lo only); outbound through {proxy}")
    } else {
        format!(
            "  network: the host's ({} interfaces; its loopback services reachable)",
            names.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_get_layers_of_their_own() {
        let a = workspace_id(Path::new("/home/u/src/app"));
        let b = workspace_id(Path::new("/home/u/other/app"));
        assert_ne!(a, b);
        assert!(a.starts_with("app-"), "{a}");
        assert_eq!(a, workspace_id(Path::new("/home/u/src/app")));
    }

    #[test]
    fn a_layer_lists_what_its_sessions_changed() {
        let t = tempfile::tempdir().unwrap();
        let (home, upper) = (t.path().join("home"), t.path().join("upper"));
        std::fs::create_dir_all(home.join(".config")).unwrap();
        std::fs::write(home.join(".bashrc"), "old").unwrap();
        std::fs::create_dir_all(upper.join(".config/git")).unwrap();
        std::fs::write(upper.join(".bashrc"), "evil").unwrap();
        std::fs::write(upper.join(".config/git/config"), "[core]").unwrap();
        let got: Vec<(&str, String)> = changes(&home, &upper)
            .into_iter()
            .map(|c| (c.kind, c.path.display().to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("changed", ".bashrc".to_string()),
                ("added", ".config/git".to_string()),
                ("added", ".config/git/config".to_string()),
            ]
        );
        assert_eq!(accept(&home, &upper, Path::new(".bashrc")).unwrap(), 1);
        assert_eq!(
            std::fs::read_to_string(home.join(".bashrc")).unwrap(),
            "evil"
        );
        assert!(!upper.join(".bashrc").exists());
    }
}
