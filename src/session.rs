//! Host-mode sessions: the embedded default policy and where the guard library lives.

use crate::toolchain::RuntimeEntry;
use anyhow::{bail, Context as _, Result};
use execguard_load::{self as load, Loaded, Source};
use execguard_policy::{Policy, Profile};
use std::path::{Path, PathBuf};

/// The library's file name; the guard recognises itself in `LD_PRELOAD` by it.
pub const LIB_NAME: &str = "libexecguard.so";

/// A path as a policy string: absolute, canonical, and free of characters the policy subset
/// cannot hold (quotes, backslashes, control characters).
pub fn policy_path(path: &Path) -> Result<String> {
    let s = path
        .to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))?;
    if s.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
        bail!("{s}: quotes, backslashes and control characters cannot appear in a policy path");
    }
    Ok(s.to_string())
}

/// The embedded default policy for a workspace, with the protected runtimes of the session
/// (see [`crate::toolchain::discover`]): each real git and node copy, started only by its
/// wrapper. The first `[[runtime]]` of a name is the binary its wrapper execs.
pub fn default_policy(
    workspace: &Path,
    profile: Profile,
    audit: Option<&Path>,
    seal: bool,
    runtimes: &[RuntimeEntry],
    sides: &HostSides,
) -> Result<String> {
    let workspace = crate::paths::canonical(workspace)
        .with_context(|| format!("workspace {}", workspace.display()))?;
    if workspace == Path::new("/") {
        bail!("the workspace cannot be /");
    }
    let mut text = format!(
        "# execguard policy for a host session (execguard run)\nversion = 1\nprofile = \"{}\"\nworkspace = \"{}\"\n",
        profile.as_str(),
        policy_path(&workspace)?
    );
    let mut mutable_roots = sides.mutable_roots.clone();
    // A file the session writes outside the write set (the audit log, an inherited output
    // file) joins it, as a file: every layer then treats it as written, never run (the guard
    // refuses to load it, Landlock to execute it, the mount namespace makes it noexec).
    let add_file = |file: PathBuf, roots: &mut Vec<PathBuf>| {
        if !in_builtin_root(&file)
            && !file.starts_with(&workspace)
            && !file.starts_with("/dev")
            && !roots.iter().any(|r| file.starts_with(r))
        {
            roots.push(file);
        }
    };
    if let Some(audit) = audit {
        let audit = absolute(audit)?;
        text.push_str(&format!("audit_log = \"{}\"\n", policy_path(&audit)?));
        add_file(audit, &mut mutable_roots);
    }
    for file in &sides.inherited_files {
        add_file(file.clone(), &mut mutable_roots);
    }
    let exec_dirs = without_aliases(&workspace, &mut mutable_roots, sides)?;
    if seal {
        text.push_str("seal = true\n");
    }
    text.push_str(&policy_list("mutable_roots", &mutable_roots)?);
    text.push_str(&policy_list("exec_dirs", &exec_dirs)?);
    for rt in runtimes {
        text.push_str(&rt.to_policy()?);
    }
    // The engine is the one judge of what a policy means: never hand out text it refuses.
    Policy::parse(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("generated policy is invalid: {e}"))?;
    Ok(text)
}

/// Another mount of the same file system gives a side of the partition a second name, and
/// every layer goes by name (`execguard_seal::mounts::aliases`): through it a written file
/// would run, or an exec dir be written. So every other name of the write set joins it, with
/// the exec dirs inside by that name too. An exec dir reachable from the write side (or
/// showing write-set content) is refused, `exec_dir_aliased`: left in the write set instead,
/// what the session planted there would run in the next session that has it as an exec dir.
/// Returns the exec dirs.
fn without_aliases(
    workspace: &Path,
    mutable_roots: &mut Vec<PathBuf>,
    sides: &HostSides,
) -> Result<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let mounts = execguard_seal::mounts::table()
        .context("mount_table_unreadable: /proc/self/mountinfo (is /proc mounted?)")?;
    let builtin = execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
        .iter()
        .map(|r| PathBuf::from(std::ffi::OsStr::from_bytes(r)));
    let mut write_set: Vec<PathBuf> = builtin
        .chain([workspace.to_path_buf()])
        .chain(mutable_roots.iter().cloned())
        .collect();
    let mut exec_dirs = sides.exec_dirs.clone();
    // A name that joins can have second names of its own (an overlay over an overlay): until
    // none is new, a few rounds at most.
    for _ in 0..8 {
        let partition = execguard_seal::Partition::new(write_set.iter().cloned())
            .with_exec_dirs(exec_dirs.iter().cloned());
        let found = execguard_seal::mounts::aliases(&partition, &mounts);
        if let Some(e) = found.unjoinable() {
            bail!("{e}");
        }
        if found.write_set.is_empty() {
            return Ok(exec_dirs);
        }
        for dir in found.exec_dirs_within(&partition) {
            if !exec_dirs.contains(&dir) {
                exec_dirs.push(dir);
            }
        }
        for (same, name) in found.write_set {
            if let Err(e) = policy_path(&name) {
                bail!("write_set_aliased: {} is also reachable as {} (another mount of the same file system), a name a policy cannot hold ({e}); unmount it", same.display(), name.display());
            }
            if !mutable_roots.contains(&name) {
                mutable_roots.push(name.clone());
                write_set.push(name);
            }
        }
    }
    bail!("write_set_aliased: second names keep leading to more; unmount them")
}

/// `path` made absolute against the current directory, without resolving symlinks in a file
/// that may not exist yet (its directory is resolved).
pub fn absolute(path: &Path) -> Result<PathBuf> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let dir = crate::paths::canonical(parent)
        .with_context(|| format!("directory of {}", path.display()))?;
    Ok(dir.join(name))
}

/// Finds `libexecguard.so`: `$EXECGUARD_LIB`, then beside this executable, then the usual
/// install locations.
pub fn guard_library() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("EXECGUARD_LIB") {
        let p = PathBuf::from(p);
        if p.file_name().and_then(|n| n.to_str()) != Some(LIB_NAME) {
            bail!("EXECGUARD_LIB must name a file called {LIB_NAME}");
        }
        return crate::paths::canonical(&p)
            .with_context(|| format!("EXECGUARD_LIB={}", p.display()));
    }
    let exe = crate::paths::current_exe().context("cannot find this executable")?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(LIB_NAME),
        dir.join("../lib/execguard").join(LIB_NAME),
        PathBuf::from("/usr/local/lib/execguard").join(LIB_NAME),
        PathBuf::from("/usr/lib/execguard").join(LIB_NAME),
        // The image's place (docs/image.md).
        PathBuf::from("/usr/local/lib").join(LIB_NAME),
    ];
    for c in &candidates {
        if c.is_file() {
            return Ok(crate::paths::canonical(c)?);
        }
    }
    bail!("cannot find {LIB_NAME} beside {} or in /usr/local/lib/execguard (build it with `cargo build --release`, or set EXECGUARD_LIB)", exe.display())
}

/// The default policy for `workspace` with the runtimes found on this machine through
/// `PATH` (the caller's) and the host's sides of the partition, for `run`, `check` and
/// `policy default` alike.
pub fn discovered_default_policy(
    workspace: &Path,
    profile: Profile,
    audit: Option<&Path>,
    seal: bool,
    exec_dirs: &ExecDirChoice,
) -> Result<String> {
    let runtimes = crate::toolchain::discover(std::env::var_os("PATH").as_deref())?;
    let sides = host_sides(workspace, exec_dirs)?;
    default_policy(workspace, profile, audit, seal, &runtimes, &sides)
}

fn policy_list(key: &str, paths: &[PathBuf]) -> Result<String> {
    let items: Vec<String> = paths
        .iter()
        .map(|p| policy_path(p).map(|s| format!("\"{s}\"")))
        .collect::<Result<_>>()?;
    Ok(format!("{key} = [{}]\n", items.join(", ")))
}

/// What a host session adds to the partition (docs/write-set.md): `$HOME` to the write set,
/// and the exec dirs, the directories inside it that the session runs programs from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostSides {
    pub mutable_roots: Vec<PathBuf>,
    pub exec_dirs: Vec<PathBuf>,
    /// The exec dirs found on `PATH`, `LD_LIBRARY_PATH` and among the toolchains, before the
    /// user's `--exec-dir`/`--no-exec-dir` (what a first run records).
    pub discovered: Vec<PathBuf>,
    /// Found, but not in the operator's record: written, never run.
    pub unrecorded: Vec<PathBuf>,
    /// Regular files the session inherits open for writing (a redirected `>log`, `3>out`):
    /// the session writes them, so they join the write set as files.
    pub inherited_files: Vec<PathBuf>,
}

/// The user's changes to the discovered exec dirs (`--exec-dir`, `--no-exec-dir`).
#[derive(Clone, Debug, Default)]
pub struct ExecDirChoice {
    pub add: Vec<PathBuf>,
    pub remove: Vec<PathBuf>,
    /// Write the operator's record of exec dirs when there is none (`execguard run` does;
    /// `check` and `policy default` only show what a run would use).
    pub record: bool,
}

/// The toolchain directories under `$HOME` that hold programs a session runs.
pub const HOME_TOOLCHAINS: [&str; 6] = [
    ".cargo/bin",
    ".rustup",
    ".nvm",
    ".local/bin",
    ".local/pipx",
    ".pyenv",
];

/// The host's sides: `$HOME` (canonical) is in the write set; the exec dirs are every
/// directory on `PATH` and `LD_LIBRARY_PATH`, the toolchains of [`HOME_TOOLCHAINS`], and the
/// directories of the guard library and the wrappers, that exist and lie in `$HOME` but not
/// in the workspace (what a session wrote there must not become a program), then the user's
/// changes. An exec dir inside another one is dropped (the outer one covers it).
pub fn host_sides(workspace: &Path, choice: &ExecDirChoice) -> Result<HostSides> {
    let mut sides = host_dirs(workspace, choice)?;
    sides.inherited_files = inherited_writable_files()?;
    Ok(sides)
}

/// A descriptor this process passes on (no close-on-exec), with its file (judged by the
/// descriptor's own file, whatever its name says).
struct Inherited {
    fd: i32,
    /// What `/proc/self/fd/N` names it: deleted files and memfds have no real path.
    path: PathBuf,
    status_flags: i32,
    file: std::fs::Metadata,
}

impl Inherited {
    /// Open for writing on a regular file: through it a session could write a program into a
    /// file on the execute side, then load it by `/proc/self/fd/N`.
    fn writes_a_file(&self) -> bool {
        self.status_flags & libc::O_ACCMODE != libc::O_RDONLY && self.file.is_file()
    }
}

fn inherited() -> Vec<Inherited> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    // The directory's own descriptor is listed too (close-on-exec, so skipped below).
    entries
        .flatten()
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse::<i32>().ok()?;
            // SAFETY: fcntl on a descriptor number only reads its flags; a closed one fails.
            let (fd_flags, status_flags) = unsafe {
                (
                    libc::fcntl(fd, libc::F_GETFD),
                    libc::fcntl(fd, libc::F_GETFL),
                )
            };
            if fd_flags < 0 || status_flags < 0 || fd_flags & libc::FD_CLOEXEC != 0 {
                return None;
            }
            let file = {
                use std::os::fd::FromRawFd;
                // SAFETY: `fd` is open (fcntl answered); the File is never dropped, so the
                // descriptor it borrows stays open.
                let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
                f.metadata().ok()?
            };
            // Only files, directories and O_PATH descriptors are ever opened again or named
            // in a refusal. A name that cannot be read (longer than PATH_MAX) is no name:
            // never skipped.
            let named = file.is_file() || file.is_dir() || status_flags & libc::O_PATH != 0;
            let path = if named {
                std::fs::read_link(e.path())
                    .unwrap_or_else(|e| PathBuf::from(format!("(no name: {e})")))
            } else {
                PathBuf::from("(not a file)")
            };
            Some(Inherited {
                fd,
                path,
                status_flags,
                file,
            })
        })
        .collect()
}

fn inherited_writers() -> Vec<Inherited> {
    inherited()
        .into_iter()
        .filter(Inherited::writes_a_file)
        .collect()
}

fn inherited_writable_files() -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for w in inherited_writers() {
        if !w.path.is_absolute() || !w.path.is_file() {
            // Deleted, a memfd or an O_TMPFILE: no name the partition could cover, so a
            // program written through it could be run from /proc/self/fd.
            bail!(
                "inherited_fd_unnamed: descriptor {fd} is open for writing on a file with no name on disk ({}); close it before execguard run (e.g. {fd}>&-)",
                w.path.display(),
                fd = w.fd
            );
        }
        // The kernel's name for it: canonical, and kept as it is now.
        crate::paths::remember_canonical(&w.path);
        out.push(w.path);
    }
    Ok(out)
}

/// Refuses a `$HOME` reached through a link that lies where sessions write (`/tmp/h ->
/// /home/me`, or one in the workspace): a session could point it at a home of its own making,
/// with an exec-dir record of its choosing, for the next session. Each link on the way is
/// judged where it really is (`/home/me/../../tmp/h` is in `/tmp`).
fn check_home_path(workspace: &Path) -> Result<()> {
    let Some(given) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Ok(());
    };
    if !given.is_absolute() {
        bail!(
            "home_untrusted: $HOME ({}) is not an absolute path; set HOME to the directory itself",
            given.display()
        );
    }
    let mut at = PathBuf::new();
    for part in given.components() {
        at.push(part);
        if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        let (Some(dir), Some(name)) = (at.parent(), at.file_name()) else {
            continue;
        };
        // Where the link is now: asked afresh, not remembered.
        let place = dir
            .canonicalize()
            .unwrap_or_else(|_| dir.to_path_buf())
            .join(name);
        if place.starts_with(workspace) || in_builtin_root(&place) {
            bail!(
                "home_untrusted: $HOME ({}) is reached through the link {}, which sessions can change; set HOME to the directory itself",
                given.display(),
                place.display()
            );
        }
    }
    Ok(())
}

/// Does `path` lie in one of the roots every session writes (`/tmp`, `/var/tmp`, ...)?
fn in_builtin_root(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
        .iter()
        .any(|r| path.starts_with(std::ffi::OsStr::from_bytes(r)))
}

/// `$HOME`, canonical, when it names a directory other than `/`.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .and_then(|h| crate::paths::canonical(&h).ok())
        .filter(|h| h != Path::new("/") && h.is_dir())
}

fn host_dirs(workspace: &Path, choice: &ExecDirChoice) -> Result<HostSides> {
    let workspace = crate::paths::canonical(workspace)
        .with_context(|| format!("workspace {}", workspace.display()))?;
    check_home_path(&workspace)?;
    let home = home();
    let mut candidates: Vec<PathBuf> = Vec::new();
    for var in ["PATH", "LD_LIBRARY_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            candidates.extend(std::env::split_paths(&v).filter(|p| p.is_absolute()));
        }
    }
    if let Some(home) = &home {
        candidates.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
    }
    if let Ok(lib) = guard_library() {
        candidates.extend(lib.parent().map(Path::to_path_buf));
    }
    for tool in crate::toolchain::TOOLS {
        if let Ok(w) = crate::toolchain::wrapper_binary(tool) {
            candidates.extend(w.parent().map(Path::to_path_buf));
        }
    }
    let Some(home) = home else {
        return sides_from(&workspace, None, &candidates, choice, None);
    };
    // Only the exec dirs the operator's record names: a toolchain directory that a session
    // created (`~/.local/bin`, say) must not become executable for the next session.
    let record = exec_dir_record(&home);
    check_record_place(&record, &workspace)?;
    let recorded = read_exec_dir_record(&record)?;
    let mut sides = sides_from(
        &workspace,
        Some(&home),
        &candidates,
        choice,
        recorded.as_deref(),
    )?;
    match &recorded {
        None if !choice.record => {}
        None => {
            write_exec_dir_record(&record, &sides.discovered)?;
            // Said when there is something to say: a home with no toolchain records nothing.
            if !sides.discovered.is_empty() {
                eprintln!(
                    "execguard: recorded {} exec dir(s) in {}: later sessions run programs from those alone (edit it outside a session to change them)",
                    sides.discovered.len(),
                    record.display()
                );
            }
        }
        Some(_) => {
            for dir in &sides.unrecorded {
                eprintln!(
                    "execguard: notice: {} holds programs but is not in {}: in this session it is written, never run (add it there outside a session)",
                    dir.display(),
                    record.display()
                );
            }
        }
    }
    // The record itself is read-only to the session, like the exec dirs.
    if let Some(dir) = record.parent().filter(|d| d.is_dir()) {
        if !sides.exec_dirs.iter().any(|e| dir.starts_with(e)) {
            sides.exec_dirs.push(dir.to_path_buf());
        }
    }
    Ok(sides)
}

/// Where the operator's exec dirs are recorded: `~/.config/execguard/exec-dirs`, one canonical
/// directory a line. Written by the first `execguard run` (outside any session) with what it
/// discovered, read-only inside every session.
pub fn exec_dir_record(home: &Path) -> PathBuf {
    home.join(".config/execguard/exec-dirs")
}

/// The recorded exec dirs; `None` when there is no record yet.
/// The record's directory becomes an exec dir (read-only in sessions): it must be that
/// directory itself, reached through no symlink (one planted before the first run would make
/// its target executable), and never inside the workspace.
fn check_record_place(record: &Path, workspace: &Path) -> Result<()> {
    let Some(dir) = record.parent() else {
        return Ok(());
    };
    // Check the part of the path that exists.
    let mut existing = dir.to_path_buf();
    while !existing.exists() {
        if !existing.pop() {
            return Ok(());
        }
    }
    // Asked afresh (not remembered): this check is that no link leads there now.
    let canonical = existing.canonicalize()?;
    if canonical != existing || std::fs::symlink_metadata(&existing).is_ok_and(|m| !m.is_dir()) {
        bail!(
            "exec_dir_record_untrusted: {} is reached through a symlink (to {}); remove the link, execguard run makes the directory itself",
            existing.display(),
            canonical.display()
        );
    }
    if dir.starts_with(workspace) {
        bail!(
            "exec_dir_record_untrusted: the exec-dir record {} lies in the workspace {}, which the session writes; use a workspace that does not hold ~/.config",
            record.display(),
            workspace.display()
        );
    }
    Ok(())
}

/// The recorded exec dirs that are still the directory the record names; `None` when there
/// is no record yet. A line may carry the directory's identity (`PATH<TAB>DEV:INO`, as a run
/// writes it): a directory of that name that is another one now (removed, then made again, say
/// by a session) does not count. A line without one (added by hand) counts by its name.
fn read_exec_dir_record(record: &Path) -> Result<Option<Vec<PathBuf>>> {
    use std::os::unix::fs::MetadataExt;
    let text = match std::fs::read_to_string(record) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!(
            "exec_dir_record_unreadable: {}: {e}; fix or remove it",
            record.display()
        ),
    };
    let mut dirs = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (path, id) = match line.split_once('\t') {
            Some((p, id)) => (PathBuf::from(p), Some(id.trim())),
            None => (PathBuf::from(line), None),
        };
        let now = std::fs::metadata(&path)
            .ok()
            .map(|m| format!("{}:{}", m.dev(), m.ino()));
        match (id, now) {
            (Some(id), Some(now)) if id != now => eprintln!(
                "execguard: notice: {} is not the directory {} recorded (it was made again): in this session it is written, never run (record it again outside a session)",
                path.display(),
                record.display()
            ),
            _ => dirs.push(path),
        }
    }
    Ok(Some(dirs))
}

fn write_exec_dir_record(record: &Path, dirs: &[PathBuf]) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = record.parent().context("the record has a directory")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let mut text = String::from(
        "# Directories inside $HOME that execguard sessions may run programs from (read-only\n\
         # inside a session). One canonical path a line, with the directory's identity after a\n\
         # tab (DEV:INO): the same name made again is not the recorded directory. Written by the\n\
         # first execguard run; a line added by hand may leave the identity out.\n",
    );
    for d in dirs {
        use std::os::unix::fs::MetadataExt;
        text.push_str(&d.to_string_lossy());
        if let Ok(m) = std::fs::metadata(d) {
            text.push_str(&format!("\t{}:{}", m.dev(), m.ino()));
        }
        text.push('\n');
    }
    std::fs::write(record, text).with_context(|| format!("cannot write {}", record.display()))
}

/// [`host_sides`] from its inputs: the canonical workspace and home, and the candidate
/// directories (unresolved).
/// `recorded`: the operator's record of exec dirs (`None`: no record yet, every discovered
/// directory counts); a discovered directory it does not name is left in the write set.
fn sides_from(
    workspace: &Path,
    home: Option<&Path>,
    candidates: &[PathBuf],
    choice: &ExecDirChoice,
    recorded: Option<&[PathBuf]>,
) -> Result<HostSides> {
    let mut sides = HostSides::default();
    sides.mutable_roots.extend(home.map(Path::to_path_buf));
    check_explicit(&choice.add, workspace, &sides.mutable_roots)?;
    // The record's own directory (and the shims kept there) is read-only anyway.
    let record_dir = home.map(exec_dir_record);
    let record_dir = record_dir.as_deref().and_then(Path::parent);
    let exec_dir_of_home = |c: &PathBuf| match home {
        Some(home) => {
            c.starts_with(home)
                && c != home
                // Neither inside the workspace nor holding it: the workspace is never
                // executable.
                && !c.starts_with(workspace)
                && !workspace.starts_with(c)
                && record_dir.is_none_or(|r| !c.starts_with(r))
                && c.is_dir()
        }
        None => false,
    };
    let mut found: Vec<PathBuf> = candidates
        .iter()
        .filter_map(|c| crate::paths::canonical(c).ok())
        .filter(exec_dir_of_home)
        .collect();
    found.sort();
    found.dedup();
    if let Some(recorded) = recorded {
        let (kept, unrecorded): (Vec<PathBuf>, Vec<PathBuf>) =
            found.into_iter().partition(|d| recorded.contains(d));
        found = kept;
        sides.unrecorded = unrecorded;
        // Every recorded directory stays read-only, on this session's PATH or not: left in
        // the write set here, what the session planted in it would run in the next session
        // that has it on PATH, and outside sessions.
        found.extend(
            recorded
                .iter()
                .filter_map(|d| crate::paths::canonical(d).ok())
                .filter(exec_dir_of_home),
        );
        found.sort();
        found.dedup();
    }
    sides.discovered = found.clone();
    found.extend(canonical_dirs(&choice.add)?);
    let removed: Vec<PathBuf> = choice
        .remove
        .iter()
        .map(|r| crate::paths::canonical(r).unwrap_or_else(|_| r.clone()))
        .collect();
    found.retain(|d| !removed.iter().any(|r| d.starts_with(r)));
    found.sort();
    found.dedup();
    let outer: Vec<PathBuf> = found.clone();
    found.retain(|d| !outer.iter().any(|o| o != d && d.starts_with(o)));
    if found.len() > execguard_policy::policy::MAX_ROOTS {
        bail!(
            "exec_dirs_too_many: {} exec dirs found, a policy holds at most {}: drop some with --no-exec-dir",
            found.len(),
            execguard_policy::policy::MAX_ROOTS
        );
    }
    sides.exec_dirs = found;
    Ok(sides)
}

fn canonical_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    dirs.iter()
        .map(|d| {
            crate::paths::canonical(d)
                .ok()
                .filter(|c| c.is_dir())
                .with_context(|| {
                    format!(
                        "exec_dir_invalid: --exec-dir {} is not an existing directory",
                        d.display()
                    )
                })
        })
        .collect()
}

/// An explicit exec dir must lie inside the write set (outside it, everything is on the
/// execute side already), be no root of it, and hold none (the workspace is never executable:
/// the exec dir's read-only mount and execute right would cover it).
fn check_explicit(add: &[PathBuf], workspace: &Path, host_roots: &[PathBuf]) -> Result<()> {
    for d in canonical_dirs(add)? {
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(d.as_os_str());
        let roots: Vec<&Path> = host_roots
            .iter()
            .map(PathBuf::as_path)
            .chain([workspace])
            .collect();
        let in_host = roots.iter().any(|r| d.starts_with(r) && d != *r);
        let in_builtin = execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
            .iter()
            .any(|r| execguard_policy::path::is_under(bytes, r) && bytes != *r);
        if !in_host && !in_builtin {
            bail!("exec_dir_outside_write_set: --exec-dir {} is not inside the write set (a root itself, or outside it, where everything is executable and read-only already)", d.display());
        }
        let held = roots
            .iter()
            .copied()
            .find(|r| r.starts_with(&d))
            .or_else(|| {
                execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
                    .iter()
                    .map(|r| {
                        Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(r))
                    })
                    .find(|r| r.starts_with(&d))
            });
        if let Some(root) = held {
            bail!("exec_dir_holds_write_set: --exec-dir {} holds {}, which the session writes; name the directory of programs inside it instead", d.display(), root.display());
        }
    }
    Ok(())
}

/// The policy in force, if any (system file first, then the environment).
pub fn policy_in_force() -> Result<Option<Loaded>> {
    match load::load() {
        Ok(l) => Ok(Some(l)),
        Err(load::LoadError::Missing) => Ok(None),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", e.reason().code())),
    }
}

/// A policy text given by the user (`--policy FILE`).
pub fn policy_file(path: &Path) -> Result<Loaded> {
    let text =
        crate::input::read_policy(path).map_err(|e| anyhow::anyhow!("policy_invalid: {e}"))?;
    let policy = Policy::parse(&text)
        .map_err(|e| anyhow::anyhow!("policy_invalid: {}: {e}", path.display()))?;
    let profile = policy.profile();
    Ok(Loaded {
        source: Source::System(path.to_path_buf()),
        text,
        profile,
    })
}

/// The partition a policy describes (docs/write-set.md): its mutable roots are the write set,
/// its exec dirs the execute side inside it, and under `development` and `build` the
/// workspace gets both rights.
/// Each name is resolved as this process resolved it when it checked it
/// ([`crate::paths::canonical`]), never afresh: this is built before the fork and the seal
/// works from it, by these names.
pub fn partition(policy: &Policy) -> execguard_seal::Partition {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let path = |b: &[u8]| PathBuf::from(OsStr::from_bytes(b));
    let both = match policy.profile() {
        Profile::Development | Profile::Build => Some(path(policy.workspace())),
        _ => None,
    };
    execguard_seal::Partition::resolved(
        policy.mutable_roots().map(path),
        policy.exec_dirs().map(path),
        both,
        &|p| crate::paths::canonical(p).ok(),
    )
}

/// Seals this process for the session `policy` describes: the `noexec` mounts, the Landlock
/// partition and the seccomp filter (executable memfds refused in strict sessions). Without
/// the mounts a program that maps a written file executable itself would run it, so a session
/// the kernel cannot give them is refused, unless `allow_exec_mappings` accepts it (then said
/// once and reported `reduced:mappings_guard_only`).
pub fn seal(
    policy: &Policy,
    partition: &execguard_seal::Partition,
    allow_exec_mappings: bool,
    carry: Option<&std::os::fd::OwnedFd>,
) -> Result<execguard_seal::Enforcement, execguard_seal::SealError> {
    // A path that does not exist gets no rule: make the audit log now, so it can be written.
    if let Some(log) = policy.audit_log() {
        use std::os::unix::ffi::OsStrExt;
        let log = Path::new(std::ffi::OsStr::from_bytes(log));
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a link put in its place since the CLI checked it.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(log)
            .map_err(|e| execguard_seal::SealError::Apply {
                step: "create the audit log",
                detail: format!("{}: {e}", log.display()),
            })?;
    }
    let enforcement = execguard_seal::seal(
        partition,
        &execguard_seal::Options {
            memfd_noexec: policy.profile() == Profile::Strict,
            mounts: if allow_exec_mappings {
                execguard_seal::MountsMode::BestEffort
            } else {
                execguard_seal::MountsMode::Required
            },
            reduced: match policy.profile() {
                Profile::Strict => None,
                p => Some(p.as_str()),
            },
        },
    )?;
    reopen_inherited(carry)?;
    Ok(enforcement)
}

/// An inherited descriptor opened before the session's `noexec` binds still refers to the
/// file through its old mount, where the loader may map it executable (`ld.so
/// /proc/self/fd/3`), or a program that maps it itself (FFI `mmap`) after rewriting the file;
/// a directory's still leads into the old mounts (`/proc/self/fd/3/x`). So each is replaced,
/// same number, access and flags, by a description through the session's mounts:
/// - every directory and `O_PATH` descriptor, and every file opened for appending (none
///   carries an offset that matters), opened again by its name;
/// - when `carry` can take the new descriptions to the supervisor ([`crate::carry`]), every
///   other regular file the session's user could write ([`session_could_write`]), from the
///   offset the old one had: opened again by its name, or, when no name leads to it any more
///   (deleted, a memfd, a detached mount, a name longer than `PATH_MAX`) and the descriptor
///   only reads, a sealed copy of it. Without `carry` (an unsupervised session) such a file is
///   left as it is (README, known limits).
///
/// Descriptors that shared one description (`>log 2>&1`) share the new one. A descriptor that
/// cannot be replaced refuses the session.
fn reopen_inherited(carry: Option<&std::os::fd::OwnedFd>) -> Result<(), execguard_seal::SealError> {
    let all = inherited();
    // Each takes the new description of the first that shares its own, compared before
    // anything is replaced.
    let first_sharing: Vec<Option<usize>> = (0..all.len())
        .map(|i| (0..i).find(|&j| same_description(&all[j], &all[i])))
        .collect();
    let mut replaced = vec![false; all.len()];
    let mut carried = Vec::new();
    for (i, d) in all.iter().enumerate() {
        if let Some(first) = first_sharing[i] {
            if replaced[first] {
                // SAFETY: both are open descriptors of this single-threaded process; dup2
                // replaces `d.fd` atomically with the description `all[first].fd` now has.
                unsafe { libc::dup2(all[first].fd, d.fd) };
            }
            continue;
        }
        let walks = d.file.is_dir() || d.status_flags & libc::O_PATH != 0;
        let appends = d.writes_a_file() && d.status_flags & libc::O_APPEND != 0;
        let carries =
            !walks && !appends && d.file.is_file() && carry.is_some() && session_could_write(d);
        if !walks && !appends && !carries {
            continue;
        }
        let reads_only = d.status_flags & libc::O_ACCMODE == libc::O_RDONLY;
        let new = match (open_again(d, walks, appends), carries && reads_only) {
            (Some(new), _) => new,
            (None, true) => sealed_copy(d).map_err(|e| execguard_seal::SealError::Apply {
                step: "copy an inherited file that no name leads to any more",
                detail: format!(
                    "descriptor {fd} ({}): {e}; close it before execguard run (e.g. {fd}<&-), or pass the file through a pipe",
                    d.path.display(),
                    fd = d.fd
                ),
            })?,
            (None, false) if walks || carries => {
                return Err(execguard_seal::SealError::Apply {
                    step: "open an inherited descriptor again through the session's mounts",
                    detail: format!(
                        "descriptor {fd} ({}) no longer leads there, or is a file with no name on disk; close it before execguard run (e.g. {fd}<&-), or pass the file through a pipe",
                        d.path.display(),
                        fd = d.fd
                    ),
                });
            }
            (None, false) => continue,
        };
        use std::os::fd::IntoRawFd;
        let new = new.into_raw_fd();
        // SAFETY: `d.fd` and `new` are open descriptors of this single-threaded process; lseek
        // takes numbers; dup2 replaces `d.fd` atomically (a directory's or an appending
        // descriptor's offset is not carried over, and matters to neither).
        unsafe {
            if carries {
                libc::lseek(new, libc::lseek(d.fd, 0, libc::SEEK_CUR), libc::SEEK_SET);
            }
            libc::dup2(new, d.fd);
            libc::close(new);
        }
        replaced[i] = true;
        if carries {
            carried.push(d.fd);
        }
    }
    if let (Some(to), false) = (carry, carried.is_empty()) {
        crate::carry::send(to, &carried).map_err(|e| execguard_seal::SealError::Apply {
            step: "hand the inherited files' new descriptions to the supervisor",
            detail: format!(
                "{} descriptors: {e}; close some before execguard run",
                carried.len()
            ),
        })?;
    }
    Ok(())
}

/// Could the session's user change the bytes of `d`'s file, by a name or through
/// `/proc/self/fd/N`: as its owner (who may give themselves the right), or with the right the
/// kernel grants (root, a group, other, an ACL). A file nobody here may write keeps its
/// description: mapped executable, it runs what the operator handed over.
fn session_could_write(d: &Inherited) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    // Root may write any file it can make writable (an immutable one included: chattr -i).
    if euid == 0 || d.file.uid() == euid {
        return true;
    }
    let Ok(link) = std::ffi::CString::new(format!("/proc/self/fd/{}", d.fd)) else {
        return true;
    };
    // SAFETY: `link` is a NUL-terminated path that outlives the call; faccessat only reads it.
    unsafe { libc::faccessat(libc::AT_FDCWD, link.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// `d`'s file opened again by its name through the session's mounts, when that name still
/// leads to the same file.
fn open_again(d: &Inherited, walks: bool, appends: bool) -> Option<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    if !d.path.is_absolute() {
        return None;
    }
    let mut open = std::fs::OpenOptions::new();
    let access = d.status_flags & libc::O_ACCMODE;
    if walks {
        open.read(true);
    } else {
        open.read(access != libc::O_WRONLY)
            .write(access != libc::O_RDONLY)
            .append(appends);
    }
    let dir = if d.file.is_dir() {
        libc::O_DIRECTORY
    } else {
        0
    };
    // The flags that change how the file is read and written come along (not O_NOATIME:
    // only the file's owner may set it).
    let kept = libc::O_PATH | libc::O_NONBLOCK | libc::O_SYNC | libc::O_DSYNC | libc::O_DIRECT;
    open.custom_flags(libc::O_NOFOLLOW | dir | (d.status_flags & kept));
    open.open(&d.path).ok().filter(|f| {
        f.metadata()
            .is_ok_and(|m| (m.dev(), m.ino()) == (d.file.dev(), d.file.ino()))
    })
}

/// The largest file without a name copied for a session (here-documents, memfds).
const SEALED_COPY_MAX: u64 = 64 << 20;

/// A copy of `d`'s file in a memfd sealed against every change, for a read-only descriptor
/// that no name leads to any more: the session reads what it was given, and can neither
/// rewrite it nor reach the old mount through it.
fn sealed_copy(d: &Inherited) -> Result<std::fs::File, String> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    if d.file.len() > SEALED_COPY_MAX {
        return Err(format!(
            "it has no name on disk and is larger than {} MiB",
            SEALED_COPY_MAX >> 20
        ));
    }
    const MFD_NOEXEC_SEAL: libc::c_uint = 0x8;
    let name = c"execguard-inherited";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: `name` is a NUL-terminated string; memfd_create returns a new descriptor or -1.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), flags | MFD_NOEXEC_SEAL) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // A kernel before 6.3: sealed against writes all the same.
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a new descriptor this function owns.
    let mut copy = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut buf = vec![0u8; 64 * 1024];
    let mut at: i64 = 0;
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes; pread leaves `d.fd`'s offset, shared
        // with the processes outside, where it is.
        let n = unsafe { libc::pread(d.fd, buf.as_mut_ptr().cast(), buf.len(), at) };
        if n < 0 {
            return Err(format!("read: {}", std::io::Error::last_os_error()));
        }
        if n == 0 {
            break;
        }
        copy.write_all(&buf[..n as usize])
            .map_err(|e| e.to_string())?;
        at += n as i64;
        if at as u64 > SEALED_COPY_MAX {
            return Err(format!("larger than {} MiB", SEALED_COPY_MAX >> 20));
        }
    }
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl(F_ADD_SEALS) takes the descriptor and an integer.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } != 0 {
        return Err(format!("seal: {}", std::io::Error::last_os_error()));
    }
    Ok(copy)
}

/// Do two inherited descriptors share one open file description? Asked of the kernel
/// (`kcmp`); where it cannot answer, two descriptors of the same file with the same flags and
/// offset count as one.
fn same_description(a: &Inherited, b: &Inherited) -> bool {
    use std::os::unix::fs::MetadataExt;
    const KCMP_FILE: libc::c_long = 0;
    // SAFETY: kcmp compares two descriptor numbers of this process; it reads no memory of ours.
    let answer = unsafe {
        let pid = libc::getpid() as libc::c_long;
        libc::syscall(
            libc::SYS_kcmp,
            pid,
            pid,
            KCMP_FILE,
            a.fd as libc::c_long,
            b.fd as libc::c_long,
        )
    };
    if answer >= 0 {
        return answer == 0;
    }
    // SAFETY: lseek on descriptor numbers only reads their offsets.
    let offset = |fd| unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    (a.file.dev(), a.file.ino(), a.status_flags, offset(a.fd))
        == (b.file.dev(), b.file.ino(), b.status_flags, offset(b.fd))
}

/// The session's start record of what it is held to (the one audit schema: tool `run`, entry
/// `start`, decision `notice`, reason `session_sealed` or `session_unsealed`, `path` the
/// assurance, `target` the command): always for a reduced session, and for a strict one under
/// `audit_allow` (like an allowed first command). An audit log that cannot take it refuses the
/// start.
pub fn record_assurance(
    policy: &Policy,
    sealed: bool,
    assurance: &str,
    command: &[std::ffi::OsString],
) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let Some(log) = policy.audit_log() else {
        return Ok(());
    };
    if assurance == "strict" && !policy.audit_allow() {
        return Ok(());
    }
    let record = execguard_os::audit::stamp(
        "run",
        "start",
        execguard_policy::audit::Decision::Notice,
        if sealed {
            "session_sealed"
        } else {
            "session_unsealed"
        },
        Some(policy.profile()),
        assurance.as_bytes(),
        command.first().map_or(&b""[..], |c| c.as_bytes()),
    );
    execguard_os::audit::append(log, &record).map_err(|_| {
        anyhow::anyhow!(
            "audit_unwritable: {}: the session's start record could not be written",
            String::from_utf8_lossy(log)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The discovery rules, one row each: a candidate becomes an exec dir when it exists and
    /// lies in `$HOME` (not `$HOME` itself) and not in the workspace; inner ones fold into
    /// outer ones; the user's additions must lie in the write set; removals win.
    #[test]
    fn exec_dirs_are_discovered_by_the_contract() {
        // Outside the built-in roots (/tmp would put `opt/bin` in the write set): the
        // checkout, or `$HOME` when the checkout itself is in one (a clone in /tmp).
        let builtin = |p: &Path| {
            execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
                .iter()
                .any(|r| p.starts_with(std::str::from_utf8(r).unwrap()))
        };
        let base = [Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))), home()]
            .into_iter()
            .flatten()
            .find(|p| p.canonicalize().is_ok_and(|c| !builtin(&c)))
            .expect("a directory outside the built-in mutable roots (the checkout or $HOME)");
        let t = tempfile::tempdir_in(base).unwrap();
        let root = t.path().canonicalize().unwrap();
        let home = root.join("home");
        let ws = home.join("src/app");
        for d in [
            ".cargo/bin",
            ".pyenv/shims",
            "src/app/node_modules/.bin",
            "tools/bin",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::create_dir_all(root.join("opt/bin")).unwrap();
        std::os::unix::fs::symlink(home.join("tools/bin"), home.join("bin-link")).unwrap();
        let c = |p: &str| root.join(p);
        /// Candidates, `--exec-dir`, `--no-exec-dir`, and the exec dirs (or the refusal's code).
        type Row<'a> = (
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            Result<&'a [&'a str], &'a str>,
        );
        let rows: &[Row] = &[
            // A directory holding the workspace would make the workspace executable.
            (
                &["home/src", "home/.cargo/bin"],
                &[],
                &[],
                Ok(&["home/.cargo/bin"]),
            ),
            (
                &["home/.cargo/bin", "opt/bin", "home"],
                &[],
                &[],
                Ok(&["home/.cargo/bin"]),
            ),
            (
                &["home/.pyenv", "home/.pyenv/shims"],
                &[],
                &[],
                Ok(&["home/.pyenv"]),
            ),
            (&["home/src/app/node_modules/.bin"], &[], &[], Ok(&[])),
            (&["home/missing/bin"], &[], &[], Ok(&[])),
            (&["home/bin-link"], &[], &[], Ok(&["home/tools/bin"])),
            (&["home/.cargo/bin"], &[], &["home/.cargo"], Ok(&[])),
            (
                &[],
                &["home/src/app/node_modules/.bin"],
                &[],
                Ok(&["home/src/app/node_modules/.bin"]),
            ),
            (&[], &["home/src"], &[], Err("exec_dir_holds_write_set")),
            (&[], &["opt/bin"], &[], Err("exec_dir_outside_write_set")),
            (&[], &["home"], &[], Err("exec_dir_outside_write_set")),
            (&[], &["home/nope"], &[], Err("exec_dir_invalid")),
        ];
        for (cands, add, remove, want) in rows {
            let choice = ExecDirChoice {
                add: add.iter().map(|p| c(p)).collect(),
                remove: remove.iter().map(|p| c(p)).collect(),
                record: false,
            };
            let cands: Vec<PathBuf> = cands.iter().map(|p| c(p)).collect();
            let got = sides_from(&ws, Some(&home), &cands, &choice, None);
            match (want, got) {
                (Ok(want), Ok(got)) => {
                    let want: Vec<PathBuf> = want.iter().map(|p| c(p)).collect();
                    assert_eq!(got.exec_dirs, want, "{cands:?} {add:?} {remove:?}");
                    assert_eq!(got.mutable_roots, vec![home.clone()]);
                }
                (Err(code), Err(e)) => {
                    assert!(e.to_string().starts_with(code), "{e}");
                }
                (want, got) => panic!("{cands:?} {add:?}: want {want:?}, got {got:?}"),
            }
        }
        // With a record, only what it names: a toolchain directory a session created is found
        // but stays in the write set.
        let cands = [c("home/.cargo/bin"), c("home/tools/bin")];
        let recorded = [c("home/.cargo/bin")];
        let got = sides_from(
            &ws,
            Some(&home),
            &cands,
            &ExecDirChoice::default(),
            Some(&recorded),
        )
        .unwrap();
        assert_eq!(got.exec_dirs, vec![c("home/.cargo/bin")]);
        assert_eq!(got.unrecorded, vec![c("home/tools/bin")]);
        // Without a home nothing is discovered.
        let got = sides_from(
            &ws,
            None,
            &[c("home/.cargo/bin")],
            &ExecDirChoice::default(),
            None,
        );
        assert_eq!(got.unwrap(), HostSides::default());
    }
}
