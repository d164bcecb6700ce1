//! The policy text of a host session: the embedded default policy assembled from the
//! workspace, the profile, the audit log, the exec dirs and the protected runtimes, and the
//! other sources a session's policy comes from (the system policy in force, `--policy FILE`).

use crate::exec_dirs::{in_builtin_root, ExecDirChoice, HostSides};
use crate::runtimes::RuntimeEntry;
use anyhow::{bail, Context as _, Result};
use execguard_load::{self as load, Loaded, Source};
use execguard_policy::{Policy, Profile};
use std::path::{Path, PathBuf};

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
/// (see [`crate::runtimes::discover`]): each real git and node copy, started only by its
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
/// every layer goes by name (`execguard_seal::aliases::aliases`): through it a written file
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
    let mounts = execguard_seal::mountinfo::table()
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
        let found = execguard_seal::aliases::aliases(&partition, &mounts);
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
    let runtimes = crate::runtimes::discover(std::env::var_os("PATH").as_deref())?;
    let sides = crate::exec_dirs::host_sides(workspace, exec_dirs)?;
    default_policy(workspace, profile, audit, seal, &runtimes, &sides)
}

fn policy_list(key: &str, paths: &[PathBuf]) -> Result<String> {
    let items: Vec<String> = paths
        .iter()
        .map(|p| policy_path(p).map(|s| format!("\"{s}\"")))
        .collect::<Result<_>>()?;
    Ok(format!("{key} = [{}]\n", items.join(", ")))
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
