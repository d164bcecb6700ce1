//! The guarded toolchain of a host session: the wrapper binaries, the real git and node they
//! stand in front of, and the per-session shim directory that puts them first on `PATH`.
//!
//! Layout of a session started by `execguard run` (host mode):
//!
//! ```text
//! <kept>/shim-<key>/bin/git       -> <dir of execguard>/execguard-git
//! <kept>/shim-<key>/bin/node      -> <dir of execguard>/execguard-node
//! <kept>/shim-<key>/git-core/*    -> <real exec-path>/*   (git -> execguard-git)
//! ```
//!
//! `PATH` starts with `bin/`, `GIT_EXEC_PATH` names `git-core/`. `<kept>` is
//! `~/.config/execguard/shims`, read-only in every session ([`kept_shims`]); without it, the
//! shared base ([`shim_base`]), which sessions write, and where a shim is checked link by link
//! before it is used. The guard decides on the file the kernel would run (its canonical name),
//! so the symlinks work; the real runtimes are protected by inode (`protected_runtime_direct`
//! unless the caller *is* the wrapper), and the wrapper checks the `GIT_EXEC_PATH` shim again
//! on every run.

use crate::session::policy_path;
use anyhow::{bail, Context as _, Result};
use execguard_policy::Policy;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A tool the session guards: its command name and its wrapper's file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tool {
    pub name: &'static str,
    pub wrapper_file: &'static str,
}

pub const GIT: Tool = Tool {
    name: "git",
    wrapper_file: "execguard-git",
};
pub const NODE: Tool = Tool {
    name: "node",
    wrapper_file: "execguard-node",
};
pub const TOOLS: [Tool; 2] = [GIT, NODE];

/// One `[[runtime]]` entry of the session policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeEntry {
    pub name: String,
    pub path: PathBuf,
    pub wrapper: PathBuf,
}

impl RuntimeEntry {
    /// The entry as policy text.
    pub fn to_policy(&self) -> Result<String> {
        Ok(format!(
            "\n[[runtime]]\nname = \"{}\"\npath = \"{}\"\nwrapper = \"{}\"\n",
            self.name,
            policy_path(&self.path)?,
            policy_path(&self.wrapper)?
        ))
    }
}

/// Finds a wrapper binary: beside this executable (where `cargo build` puts every binary of
/// the workspace, and where the guard library is looked for first), then in the image's and
/// the usual install locations.
pub fn wrapper_binary(tool: Tool) -> Result<PathBuf> {
    let exe = crate::paths::current_exe().context("cannot find this executable")?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(tool.wrapper_file),
        dir.join("../libexec/execguard/bin").join(tool.wrapper_file),
        PathBuf::from("/usr/local/libexec/execguard/bin").join(tool.wrapper_file),
        PathBuf::from("/usr/libexec/execguard/bin").join(tool.wrapper_file),
    ];
    for c in &candidates {
        if crate::paths::metadata(c).is_ok_and(|m| m.is_file()) {
            return crate::paths::canonical(c).with_context(|| format!("{}", c.display()));
        }
    }
    bail!(
        "cannot find the {} wrapper {} beside {} (build the whole workspace: `cargo build --release` puts it there)",
        tool.name,
        tool.wrapper_file,
        exe.display()
    )
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Executable regular files named `name` in `path_var`, canonical, in PATH order.
fn on_path(name: &str, path_var: Option<&OsStr>) -> Vec<PathBuf> {
    let Some(path_var) = path_var else {
        return Vec::new();
    };
    std::env::split_paths(path_var)
        .filter(|d| d.is_absolute())
        .filter_map(|d| is_executable_file(&d.join(name)))
        .collect()
}

/// The canonical name of `p` when it is an executable regular file.
fn is_executable_file(p: &Path) -> Option<PathBuf> {
    let meta = crate::paths::metadata(p).ok()?;
    (meta.is_file() && meta.mode() & 0o111 != 0)
        .then(|| crate::paths::canonical(p).ok())
        .flatten()
}

/// The exec-path of the git at `git` (canonical): the `git-core` directory the build put
/// beside it (`<prefix>/lib/git-core` on Debian, `<prefix>/libexec/git-core` from source),
/// recognised by holding the same git (same inode, or the same bytes: Debian ships a copy).
/// Remembered per process: a session start asks for it twice, and comparing two 4 MB copies
/// is most of what it costs.
pub fn git_exec_path_of(git: &Path) -> Option<PathBuf> {
    use std::sync::Mutex;
    static KNOWN: Mutex<Vec<(PathBuf, Option<PathBuf>)>> = Mutex::new(Vec::new());
    if let Some((_, found)) = KNOWN.lock().ok()?.iter().find(|(g, _)| g == git) {
        return found.clone();
    }
    let found = find_git_exec_path(git);
    KNOWN.lock().ok()?.push((git.to_path_buf(), found.clone()));
    found
}

fn find_git_exec_path(git: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(git).ok()?;
    let dir = git.parent()?;
    let mut candidates = vec![dir.to_path_buf()];
    if let Some(prefix) = dir.parent() {
        candidates.push(prefix.join("lib/git-core"));
        candidates.push(prefix.join("libexec/git-core"));
    }
    candidates.into_iter().find_map(|c| {
        if c.file_name() != Some(OsStr::new("git-core")) {
            return None;
        }
        let c = crate::paths::canonical(&c).ok()?;
        let other = c.join("git");
        let m = std::fs::metadata(&other).ok()?;
        if !m.is_file() {
            return None;
        }
        if same_file(&m, &meta) {
            return Some(c);
        }
        (m.len() == meta.len() && same_bytes_remembered(git, &meta, &other, &m)).then_some(c)
    })
}

/// [`same_bytes`], remembered across sessions in the shim base by the identity and change
/// times of both files (a package upgrade changes them). The record only ever spares a
/// comparison of two files the user could not change without changing their ctime; a forged
/// record can at worst pair git with another git-core directory the same way `PATH` could.
fn same_bytes_remembered(
    a: &Path,
    ma: &std::fs::Metadata,
    b: &Path,
    mb: &std::fs::Metadata,
) -> bool {
    let key = |m: &std::fs::Metadata| {
        format!(
            "{}:{}:{}:{}.{}",
            m.dev(),
            m.ino(),
            m.len(),
            m.ctime(),
            m.ctime_nsec()
        )
    };
    let line = format!("{} {}\n", key(ma), key(mb));
    let record = shim_base().ok().map(|d| d.join("same-bytes"));
    let known = record.as_deref().and_then(read_record).unwrap_or_default();
    if known.lines().any(|l| format!("{l}\n") == line) {
        return true;
    }
    let same = same_bytes(a, b);
    if let (true, Some(r)) = (same, &record) {
        write_record(r, &(known + &line));
    }
    same
}

/// The largest record read back: ours are a line or a few.
const RECORD_MAX: usize = 64 * 1024;

/// A record of ours in the shim base, which every session can write: read only when it is a
/// small regular file under that name (not a link to a file elsewhere, nor a FIFO that would
/// keep `execguard run` waiting).
fn read_record(path: &Path) -> Option<String> {
    let bytes = crate::input::read_record(path, RECORD_MAX).ok()?;
    String::from_utf8(bytes).ok()
}

/// Replaces a record of ours with `text`: written to a new file `record-<pid>` beside it,
/// then renamed over it, so a link a session put in its place (to a file of the user's
/// elsewhere) is replaced, never written through. Best effort: without the record the next
/// session just does the work again.
fn write_record(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let new = path
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!("record-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&new)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_err() || std::fs::rename(&new, path).is_err() {
        let _ = std::fs::remove_file(&new);
    }
}

/// Do two files hold the same bytes? Compared 64 KiB at a time, so two multi-megabyte
/// binaries cost no large allocation (and its page faults) and a difference stops early.
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (Ok(mut fa), Ok(mut fb)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let mut ba = vec![0u8; 64 * 1024];
    let mut bb = vec![0u8; 64 * 1024];
    loop {
        let Ok(n) = fa.read(&mut ba) else {
            return false;
        };
        if n == 0 {
            return fb.read(&mut bb[..1]).is_ok_and(|m| m == 0);
        }
        if fb.read_exact(&mut bb[..n]).is_err() || ba[..n] != bb[..n] {
            return false;
        }
    }
}

/// Well-known places of real binaries besides `PATH`: a session may name them directly.
fn well_known(tool: Tool) -> &'static [&'static str] {
    match tool.name {
        "git" => &[
            "/usr/bin/git",
            "/usr/lib/git-core/git",
            "/usr/libexec/git-core/git",
            "/usr/local/bin/git",
            "/usr/local/libexec/git-core/git",
        ],
        _ => &["/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"],
    }
}

/// The protected runtimes of the session for the tools whose wrapper is `wrapper`: the first
/// entry is the binary `PATH` finds (what the user would have run; the wrapper execs it), then,
/// for git, its exec-path copy, then every other copy on `PATH` and in the well-known places.
/// Copies are told apart by device and inode (hard links are one entry: the guard covers them
/// all). The wrapper itself, e.g. an outer session's shim on `PATH`, is never a runtime.
/// An empty list means the tool is not installed.
pub fn discover_runtimes(
    tool: Tool,
    wrapper: &Path,
    path_var: Option<&OsStr>,
) -> Result<Vec<RuntimeEntry>> {
    let wrapper_meta = crate::paths::metadata(wrapper)
        .with_context(|| format!("wrapper {}", wrapper.display()))?;
    let mut found: Vec<PathBuf> = on_path(tool.name, path_var);
    found.extend(
        well_known(tool)
            .iter()
            .filter_map(|p| is_executable_file(Path::new(p))),
    );
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    seen.insert((wrapper_meta.dev(), wrapper_meta.ino()));
    let mut out: Vec<RuntimeEntry> = Vec::new();
    // `force`: list the path even when its file is listed under another name.
    let mut push = |p: PathBuf, force: bool, out: &mut Vec<RuntimeEntry>| -> bool {
        let Ok(m) = crate::paths::metadata(&p) else {
            return false;
        };
        let new = seen.insert((m.dev(), m.ino()));
        if (new || force) && out.iter().all(|r| r.path != p) {
            out.push(RuntimeEntry {
                name: tool.name.into(),
                path: p,
                wrapper: wrapper.to_path_buf(),
            });
        }
        new
    };
    for p in found {
        let first = out.is_empty();
        if !push(p.clone(), false, &mut out) || tool != GIT {
            continue; // the wrapper, or a copy already listed
        }
        match git_exec_path_of(&p) {
            // Listed even when it is a hard link of `p`: the wrapper accepts a GIT_EXEC_PATH
            // shim only if it links into the directory of a protected git.
            Some(e) => {
                push(e.join("git"), true, &mut out);
                // The whole directory too: its other copies of git (dashed builtins that are
                // not hard links) would otherwise start git without the wrapper.
                push(e, true, &mut out);
            }
            None if first => bail!(
                "cannot find the exec-path (git-core directory) of {}: git's hooks could not start git; install git with its git-core directory",
                p.display()
            ),
            None => {}
        }
    }
    Ok(out)
}

/// The session toolchain: the runtimes of every installed tool, each with its wrapper.
pub fn discover(path_var: Option<&OsStr>) -> Result<Vec<RuntimeEntry>> {
    let mut all = Vec::new();
    for tool in TOOLS {
        let wrapper = wrapper_binary(tool)?;
        all.extend(discover_runtimes(tool, &wrapper, path_var)?);
    }
    if all.len() > execguard_policy::policy::MAX_RUNTIMES {
        bail!(
            "{} copies of git and node found; a policy holds at most {}",
            all.len(),
            execguard_policy::policy::MAX_RUNTIMES
        );
    }
    Ok(all)
}

/// What the shim of a session must hold, read from the session policy: for each tool, the
/// wrapper of its first runtime entry; for git, the real exec-path to mirror.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShimPlan {
    pub wrappers: Vec<(Tool, PathBuf)>,
    pub git_exec_path: Option<PathBuf>,
}

fn os_path(b: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b))
}

/// The shim a session under `policy` needs. A git runtime needs its exec-path copy in the
/// policy too: the wrapper accepts a `GIT_EXEC_PATH` shim only if it links into the directory
/// of a protected git.
pub fn shim_plan(policy: &Policy<'_>) -> Result<ShimPlan> {
    let mut plan = ShimPlan::default();
    for tool in TOOLS {
        let Some(first) = policy.runtimes().find(|r| r.name == tool.name.as_bytes()) else {
            continue;
        };
        // Canonical: the wrapper compares the shim's links, as text, with its own name.
        let wrapper = os_path(first.wrapper);
        plan.wrappers
            .push((tool, crate::paths::canonical(&wrapper).unwrap_or(wrapper)));
        if tool == GIT {
            let git = os_path(first.path);
            let exec_path = git_exec_path_of(&git).with_context(|| {
                format!(
                    "cannot find the exec-path (git-core directory) of {}",
                    git.display()
                )
            })?;
            let covered = policy.runtimes().any(|r| {
                r.name == b"git"
                    && Path::new(OsStr::from_bytes(r.path)).parent() == Some(&exec_path)
            });
            if !covered {
                bail!(
                    "the policy protects {} but not its exec-path copy {}: add a [[runtime]] for it",
                    git.display(),
                    exec_path.join("git").display()
                );
            }
            plan.git_exec_path = Some(exec_path);
        }
    }
    Ok(plan)
}

/// A created shim: prepend `bin` to `PATH`, set `GIT_EXEC_PATH` to `git_core`.
#[derive(Debug)]
pub struct Shim {
    pub bin: PathBuf,
    pub git_core: Option<PathBuf>,
}

fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Is `dir` a real directory (not a symlink) of this user that nobody else may write?
fn private_dir(dir: &Path) -> Result<()> {
    let m = std::fs::symlink_metadata(dir).with_context(|| format!("{}", dir.display()))?;
    if !m.is_dir() || m.uid() != uid() || m.mode() & 0o077 != 0 {
        bail!(
            "{} must be a directory owned by uid {} with mode 0700",
            dir.display(),
            uid()
        );
    }
    Ok(())
}

/// Where session shims live: `$XDG_RUNTIME_DIR/execguard` when `XDG_RUNTIME_DIR` is a private
/// directory of this user, else `/tmp/execguard-<uid>`; created 0700 and checked.
pub fn shim_base() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && private_dir(d).is_ok())
    {
        Some(d) => crate::paths::canonical(&d)?.join("execguard"),
        None => PathBuf::from(format!("/tmp/execguard-{}", uid())),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", base.display())),
    }
    private_dir(&base)?;
    Ok(base)
}

/// Removes half-built shims (`building-<pid>`) and half-written records (`record-<pid>`) whose
/// writer is gone, and the per-session shims (`session-<pid>`) older versions made.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| {
                n.strip_prefix("building-")
                    .or_else(|| n.strip_prefix("session-"))
                    .or_else(|| n.strip_prefix("record-"))
            })
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = match e.file_type() {
                Ok(t) if t.is_dir() => std::fs::remove_dir_all(e.path()),
                _ => std::fs::remove_file(e.path()),
            };
        }
    }
}

/// Where a session's shim is kept: a place no session can write when there is one
/// ([`kept_shims`]), where a shim is reused as it was built; otherwise [`shim_base`], which
/// every session can write, where one is reused only after a full check.
pub fn create_shim(plan: &ShimPlan, policy: &Policy<'_>) -> Result<Shim> {
    if let Some(kept) = kept_shims(policy) {
        if let Ok(shim) = create_shim_under(&kept, plan, Trust::Kept) {
            return Ok(shim);
        }
        // Read-only here (a nested session) or full: the shared base does.
    }
    create_shim_under(&shim_base()?, plan, Trust::Checked)
}

/// How far a shim in a place can be believed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Trust {
    /// Only processes outside every session write the place: a shim there is what was built
    /// (renamed into place whole), unless its own directories were replaced.
    Kept,
    /// Sessions write the place: a shim is read link by link before it is used.
    Checked,
}

/// `~/.config/execguard/shims`, beside the operator's exec-dir record, whose directory every
/// session has read-only (`session::host_sides`): when it is a private directory of this user
/// and the session about to start cannot write it either (it is sealed, and a `--policy` file
/// may leave it in its write set). Its shims are then never written by a session, neither while a session
/// uses one nor between two.
fn kept_shims(policy: &Policy<'_>) -> Option<PathBuf> {
    // Unsealed, the session writes wherever its user may.
    if !policy.seal() {
        return None;
    }
    let home = crate::session::home()?;
    let record_dir = crate::session::exec_dir_record(&home)
        .parent()?
        .to_path_buf();
    private_dir(&record_dir).ok()?;
    let kept = record_dir.join("shims");
    match std::fs::DirBuilder::new().mode(0o700).create(&kept) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    private_dir(&kept).ok()?;
    policy
        .mutable_root_of(kept.as_os_str().as_bytes())
        .is_none()
        .then_some(kept)
}

/// The shim for `plan` in `base`: named after what it holds (the wrappers, the real
/// exec-path and that directory's own change time), reused when [`shim_is_current`],
/// otherwise built beside it and renamed into place. Making its ~170 symlinks was most of a
/// session's start.
fn create_shim_under(base: &Path, plan: &ShimPlan, trust: Trust) -> Result<Shim> {
    remove_stale(base);
    let dir = base.join(format!("shim-{:016x}", plan_key(plan)));
    if shim_is_current(&dir, plan, trust) {
        return Ok(shim_paths(&dir, plan));
    }
    let building = base.join(format!("building-{}", std::process::id()));
    create_shim_in(&building, plan)?;
    // Another session may have put a shim there since the check: replace it (renaming over a
    // directory needs it gone first), or use the one that appeared after our removal.
    let _ = std::fs::remove_dir_all(&dir);
    match std::fs::rename(&building, &dir) {
        Ok(()) => Ok(shim_paths(&dir, plan)),
        Err(_) if shim_is_current(&dir, plan, trust) => {
            let _ = std::fs::remove_dir_all(&building);
            Ok(shim_paths(&dir, plan))
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&building);
            Err(e).with_context(|| format!("cannot move the shim into {}", dir.display()))
        }
    }
}

fn plan_key(plan: &ShimPlan) -> u64 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same plan gives the same name in every process.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    plan.wrappers.hash(&mut h);
    plan.git_exec_path.hash(&mut h);
    if let Some(meta) = plan
        .git_exec_path
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
    {
        (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec()).hash(&mut h);
    }
    h.finish()
}

fn shim_paths(dir: &Path, plan: &ShimPlan) -> Shim {
    Shim {
        bin: dir.join("bin"),
        git_core: plan.git_exec_path.as_ref().map(|_| dir.join("git-core")),
    }
}

/// Is `dir` the shim [`create_shim_in`] would build for `plan`? The shim, `bin/` and
/// `git-core/` must be directories themselves, not links (one to `/proc/self/cwd/...` would
/// name another directory for each process that looks), and `bin/` holds exactly the
/// wrapper links: its names come first on the session's `PATH`. `git-core/` (~170 links) is
/// read link by link where sessions write ([`Trust::Checked`]).
fn shim_is_current(dir: &Path, plan: &ShimPlan, trust: Trust) -> bool {
    let real_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let bin = dir.join("bin");
    let names = |d: &Path| {
        std::fs::read_dir(d).map(|d| {
            let mut n: Vec<OsString> = d.flatten().map(|e| e.file_name()).collect();
            n.sort();
            n
        })
    };
    let bin_exact = real_dir(&bin)
        && names(&bin).is_ok_and(|n| n.len() == plan.wrappers.len())
        && plan.wrappers.iter().all(|(tool, wrapper)| {
            std::fs::read_link(bin.join(tool.name)).ok().as_deref() == Some(wrapper.as_path())
        });
    if !real_dir(dir) || !bin_exact {
        return false;
    }
    let Some(real) = plan.git_exec_path.as_deref() else {
        return names(dir).is_ok_and(|n| n == ["bin"]);
    };
    let Some((_, wrapper)) = plan.wrappers.iter().find(|(tool, _)| *tool == GIT) else {
        return false;
    };
    let git_core = dir.join("git-core");
    names(dir).is_ok_and(|n| n == ["bin", "git-core"])
        && real_dir(&git_core)
        && (trust == Trust::Kept
            || execguard_wrappers::git_exec_path_shim_is_current(&git_core, real, wrapper))
}

/// Creates a shim in `dir` (replaced if it exists).
pub fn create_shim_in(dir: &Path, plan: &ShimPlan) -> Result<Shim> {
    if std::fs::symlink_metadata(dir).is_ok() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let bin = dir.join("bin");
    std::fs::DirBuilder::new().mode(0o700).create(&bin)?;
    let mut git_core = None;
    for (tool, wrapper) in &plan.wrappers {
        std::os::unix::fs::symlink(wrapper, bin.join(tool.name))
            .with_context(|| format!("cannot link {}", bin.join(tool.name).display()))?;
        if *tool == GIT {
            let exec_path = plan
                .git_exec_path
                .as_deref()
                .context("git without an exec-path")?;
            let shim = dir.join("git-core");
            execguard_wrappers::build_git_exec_path_shim(&shim, exec_path, wrapper).with_context(
                || format!("cannot build the git exec-path shim {}", shim.display()),
            )?;
            git_core = Some(shim);
        }
    }
    Ok(Shim { bin, git_core })
}

impl Shim {
    /// Applies the shim to a child environment: `bin` first on `PATH`, `GIT_EXEC_PATH`.
    pub fn apply(&self, env: &mut Vec<(OsString, OsString)>) {
        let old_path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
        env.retain(|(k, _)| k != "PATH" && k != "GIT_EXEC_PATH");
        let mut path = self.bin.clone().into_os_string();
        if !old_path.is_empty() {
            path.push(":");
            path.push(old_path);
        }
        env.push(("PATH".into(), path));
        if let Some(g) = &self.git_core {
            env.push(("GIT_EXEC_PATH".into(), g.clone().into_os_string()));
        }
    }
}

/// The session's first process, while the supervisor waits: signals the supervisor gets are
/// passed on to it.
static SESSION_CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let child = SESSION_CHILD.load(std::sync::atomic::Ordering::Relaxed);
    if child > 0 {
        // SAFETY: kill is async-signal-safe and takes no pointers.
        unsafe { libc::kill(child, sig) };
    }
}

/// Rule 3 of `wrappers/README.md` for a strict host session: record the control files of the
/// repositories of `workspace` (`Snapshot::record_workspace`), then fork. The child returns
/// and becomes the session, with the channel that takes the new descriptions of its
/// inherited files to this process ([`crate::carry`]); this process stays outside it
/// (unsealed, unguarded), passes SIGTERM/SIGHUP on, waits, carries the files' offsets back,
/// quarantines what the session planted (one audit record per file, one notice line on
/// stderr) and exits with the session's status.
pub fn supervise_repository(
    workspace: &Path,
    audit_log: Option<&Path>,
    profile: execguard_policy::Profile,
) -> Result<std::os::fd::OwnedFd> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // By its canonical name as checked before the session: the end writes it by that name with
    // no link on the way (the session may replace the log's directory by one).
    let audit_log =
        audit_log.map(|l| crate::paths::canonical(l).unwrap_or_else(|_| l.to_path_buf()));
    let snapshots =
        execguard_wrappers::takeover::Snapshot::record_workspace(workspace, home.as_deref())
            .with_context(|| {
                format!(
                    "cannot record the repository control files of {}",
                    workspace.display()
                )
            })?;
    // Supervised even without a repository now: one the session creates is checked at the end.
    // Orphans of the session become this process's children, so that none outlives the
    // session to plant again after the quarantine (not inherited by the child).
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) takes an integer and changes only this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        bail!(
            "cannot make the session supervisor a subreaper: {}",
            std::io::Error::last_os_error()
        );
    }
    let (carried, carry) = crate::carry::channel().context("cannot make the session's channel")?;
    // SAFETY: fork has no preconditions; `execguard run` is single-threaded here, so the child
    // may go on running Rust code.
    let child = unsafe { libc::fork() };
    if child < 0 {
        bail!(
            "cannot fork the session supervisor: {}",
            std::io::Error::last_os_error()
        );
    }
    if child == 0 {
        // The session never reads the snapshots: freeing them would only write (copy) the
        // heap pages this child shares with the supervisor, just before its exec drops them.
        std::mem::forget(snapshots);
        drop(carried);
        return Ok(carry);
    }
    drop(carry);
    SESSION_CHILD.store(child, std::sync::atomic::Ordering::Relaxed);
    // The terminal sends SIGINT/SIGQUIT to the session itself (same process group): ignore
    // them here, as system(3) does. SIGTERM/SIGHUP sent to this pid are passed on.
    for sig in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: SIG_IGN takes no handler code.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    for sig in [libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only loads an atomic and calls kill, both async-signal-safe.
        unsafe { libc::signal(sig, forward_signal as *const () as libc::sighandler_t) };
    }
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer for the duration of the call.
        let r = unsafe { libc::waitpid(child, &mut status, 0) };
        if r == child {
            // Reaped: its pid may be reused from now on, so nothing more is passed on to it.
            SESSION_CHILD.store(0, std::sync::atomic::Ordering::Relaxed);
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    end_remaining_processes();
    crate::carry::carry_back(&carried);
    execguard_wrappers::takeover::finish_session(
        &snapshots,
        workspace,
        home.as_deref(),
        "run",
        audit_log.as_deref(),
        profile,
    );
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    };
    std::process::exit(code)
}

/// Ends what is left of the session once its first process has exited: every process
/// reparented to this subreaper (a `setsid` daemon, a double fork) is killed and reaped, until
/// none is left, so nothing of the session can write the repository again after the
/// quarantine.
fn end_remaining_processes() {
    let children = format!("/proc/self/task/{}/children", std::process::id());
    // Until none is left, however long: each level of a chain of forks reaches this process
    // only when the one above it has died, and a count would let a deep enough chain outlive
    // the quarantine.
    loop {
        // Reap what has ended; no child left at all (ECHILD) is the common end, and needs no
        // look at the children file.
        let mut reaped = false;
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out-pointer; WNOHANG never blocks.
            let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if r > 0 {
                reaped = true;
                continue;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                return;
            }
            break;
        }
        let pids: Vec<libc::pid_t> = std::fs::read_to_string(&children)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        for &pid in &pids {
            // SAFETY: kill takes a pid and a signal; these are this process's own children.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if !reaped {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("eg-tc-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn exec_path_is_found_by_inode_or_bytes() {
        let d = tmp("execpath");
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::create_dir_all(d.join("lib/git-core")).unwrap();
        std::fs::write(d.join("bin/git"), b"same bytes").unwrap();
        std::fs::write(d.join("lib/git-core/git"), b"same bytes").unwrap();
        assert_eq!(
            find_git_exec_path(&d.join("bin/git")),
            Some(d.join("lib/git-core"))
        );
        std::fs::write(d.join("lib/git-core/git"), b"other byte").unwrap();
        assert_eq!(find_git_exec_path(&d.join("bin/git")), None);
        std::fs::remove_file(d.join("lib/git-core/git")).unwrap();
        std::fs::create_dir_all(d.join("libexec/git-core")).unwrap();
        std::fs::hard_link(d.join("bin/git"), d.join("libexec/git-core/git")).unwrap();
        assert_eq!(
            find_git_exec_path(&d.join("bin/git")),
            Some(d.join("libexec/git-core"))
        );
        // A git inside git-core is its own exec-path.
        assert_eq!(
            find_git_exec_path(&d.join("libexec/git-core/git")),
            Some(d.join("libexec/git-core"))
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A shim is reused only while it is exactly what would be built: an added file, or a link
    /// pointed elsewhere, makes the next session build it again.
    #[test]
    fn a_shim_is_reused_only_while_it_is_exact() {
        let d = tmp("shim-reuse");
        let real = d.join("real/git-core");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(d.join("wrapper"), b"w").unwrap();
        std::fs::write(real.join("git"), b"g").unwrap();
        std::fs::hard_link(real.join("git"), real.join("git-upload-pack")).unwrap();
        std::fs::write(real.join("git-sh-setup"), b"s").unwrap();
        std::os::unix::fs::symlink("git", real.join("git-receive-pack")).unwrap();
        let plan = ShimPlan {
            wrappers: vec![(GIT, d.join("wrapper"))],
            git_exec_path: Some(real.clone()),
        };
        let shim = d.join("shim");
        create_shim_in(&shim, &plan).unwrap();
        assert!(shim_is_current(&shim, &plan, Trust::Checked));
        // git under other names (a hard link, a symbolic one) is the wrapper; a helper is real.
        let target = |name: &str| std::fs::read_link(shim.join("git-core").join(name)).unwrap();
        assert_eq!(target("git-upload-pack"), d.join("wrapper"));
        assert_eq!(target("git-receive-pack"), d.join("wrapper"));
        assert_eq!(target("git-sh-setup"), real.join("git-sh-setup"));
        std::fs::write(shim.join("git-core/planted"), b"x").unwrap();
        assert!(
            !shim_is_current(&shim, &plan, Trust::Checked),
            "an added file"
        );
        std::fs::remove_file(shim.join("git-core/planted")).unwrap();
        assert!(shim_is_current(&shim, &plan, Trust::Checked));
        std::fs::remove_file(shim.join("git-core/git-sh-setup")).unwrap();
        std::os::unix::fs::symlink(d.join("wrapper"), shim.join("git-core/git-sh-setup")).unwrap();
        assert!(
            !shim_is_current(&shim, &plan, Trust::Checked),
            "a link pointed elsewhere"
        );
        std::fs::write(real.join("git-new-helper"), b"n").unwrap();
        create_shim_in(&shim, &plan).unwrap();
        assert!(shim_is_current(&shim, &plan, Trust::Checked));
        std::fs::remove_file(shim.join("bin/git")).unwrap();
        assert!(
            !shim_is_current(&shim, &plan, Trust::Checked),
            "a missing wrapper link"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A shim kept where no session writes is reused as it was built, without reading
    /// `git-core/` link by link; in either place, a link in place of the shim's own
    /// directories is never taken for one (it would name another directory for each
    /// process that looks, `/proc/self/cwd/...`), and `bin/` is always read link by link.
    #[test]
    fn a_kept_shim_is_reused_as_built_and_a_linked_directory_never_is() {
        let d = tmp("shim-kept");
        let real = d.join("real/git-core");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(d.join("wrapper"), b"w").unwrap();
        std::fs::write(real.join("git"), b"g").unwrap();
        std::fs::write(real.join("git-sh-setup"), b"s").unwrap();
        let plan = ShimPlan {
            wrappers: vec![(GIT, d.join("wrapper"))],
            git_exec_path: Some(real.clone()),
        };
        let shim = d.join("shim");
        create_shim_in(&shim, &plan).unwrap();
        for trust in [Trust::Kept, Trust::Checked] {
            assert!(shim_is_current(&shim, &plan, trust), "{trust:?}");
        }
        // A helper new in the real exec-path (a change there names another shim, `plan_key`):
        // looked for only where sessions write.
        std::fs::write(real.join("git-new-helper"), b"n").unwrap();
        assert!(shim_is_current(&shim, &plan, Trust::Kept));
        assert!(!shim_is_current(&shim, &plan, Trust::Checked));
        std::fs::remove_file(real.join("git-new-helper")).unwrap();
        std::fs::remove_file(shim.join("bin/git")).unwrap();
        std::os::unix::fs::symlink(real.join("git"), shim.join("bin/git")).unwrap();
        assert!(!shim_is_current(&shim, &plan, Trust::Kept), "bin/ is read");
        create_shim_in(&shim, &plan).unwrap();
        // Each of the shim's directories replaced by a link to a copy of itself.
        let copy = d.join("copy");
        for part in ["", "bin", "git-core"] {
            let _ = std::fs::remove_dir_all(&copy);
            create_shim_in(&copy, &plan).unwrap();
            let (linked, target) = if part.is_empty() {
                (d.join("linked"), copy.clone())
            } else {
                create_shim_in(&d.join("linked"), &plan).unwrap();
                let at = d.join("linked").join(part);
                std::fs::remove_dir_all(&at).unwrap();
                (at, copy.join(part))
            };
            let _ = std::fs::remove_file(&linked);
            std::os::unix::fs::symlink(&target, &linked).unwrap();
            for trust in [Trust::Kept, Trust::Checked] {
                assert!(
                    !shim_is_current(&d.join("linked"), &plan, trust),
                    "{part:?} linked, {trust:?}"
                );
            }
            let _ = std::fs::remove_file(d.join("linked"));
            let _ = std::fs::remove_dir_all(d.join("linked"));
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Records lie where sessions write: one is read only as a small regular file of that
    /// name, and written by renaming a new file over it, never through what is there.
    #[test]
    fn records_are_neither_followed_nor_waited_on() {
        let d = tmp("records");
        let elsewhere = d.join("elsewhere");
        std::fs::write(&elsewhere, b"the user's file\n").unwrap();
        let record = d.join("record");
        std::os::unix::fs::symlink(&elsewhere, &record).unwrap();
        assert_eq!(read_record(&record), None, "a link is not followed");
        write_record(&record, "new\n");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"the user's file\n");
        assert_eq!(read_record(&record).as_deref(), Some("new\n"));
        std::fs::remove_file(&record).unwrap();
        std::fs::hard_link(&elsewhere, &record).unwrap();
        write_record(&record, "new\n");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"the user's file\n");
        std::fs::remove_file(&record).unwrap();
        let fifo = std::ffi::CString::new(record.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(read_record(&record), None, "a FIFO is not waited on");
        std::fs::remove_file(&record).unwrap();
        std::fs::write(&record, vec![b'x'; RECORD_MAX + 1]).unwrap();
        assert_eq!(read_record(&record), None, "an oversized record");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "no file left behind"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn runtimes_skip_the_wrapper_and_dedupe_hard_links() {
        let d = tmp("discover");
        for sub in ["a", "b", "w", "libexec/git-core"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let exe = |p: &Path| {
            std::fs::write(p, b"#!/bin/true\n").unwrap();
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        };
        exe(&d.join("w/execguard-git"));
        std::os::unix::fs::symlink(d.join("w/execguard-git"), d.join("a/git")).unwrap();
        exe(&d.join("b/git"));
        std::fs::hard_link(d.join("b/git"), d.join("libexec/git-core/git")).unwrap();
        let path =
            std::env::join_paths([d.join("a"), d.join("b"), d.join("libexec/git-core")]).unwrap();
        let rts = discover_runtimes(GIT, &d.join("w/execguard-git"), Some(&path)).unwrap();
        let paths: Vec<&Path> = rts.iter().map(|r| r.path.as_path()).collect();
        // The outer shim's git (the wrapper) is skipped; b/git's exec-path copy is listed
        // although it is a hard link (the shim links into its directory), and so is the
        // exec-path directory itself (a directory runtime: every copy in it); the well-known
        // places of this machine may add more after them.
        assert_eq!(paths[0], d.join("b/git"));
        assert_eq!(paths[1], d.join("libexec/git-core/git"));
        assert_eq!(paths[2], d.join("libexec/git-core"));
        assert_eq!(
            paths.iter().filter(|p| p.starts_with(&d)).count(),
            3,
            "{paths:?}"
        );
        assert!(!paths.contains(&d.join("w/execguard-git").as_path()));
        assert!(rts.iter().all(|r| r.wrapper == d.join("w/execguard-git")));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn shim_applies_path_and_exec_path() {
        let shim = Shim {
            bin: "/s/bin".into(),
            git_core: Some("/s/git-core".into()),
        };
        let mut env = vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("GIT_EXEC_PATH".into(), "/elsewhere".into()),
        ];
        shim.apply(&mut env);
        assert!(env.contains(&("PATH".into(), "/s/bin:/usr/bin:/bin".into())));
        assert!(env.contains(&("GIT_EXEC_PATH".into(), "/s/git-core".into())));
        assert_eq!(env.len(), 2);
    }
}
