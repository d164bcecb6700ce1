//! The policy text of a host session: the embedded default policy assembled from the
//! workspace, the profile, the audit log, the exec dirs and the protected runtimes, and the
//! other sources a session's policy comes from (the system policy in force, `--policy FILE`).

use crate::exec_dirs::{in_builtin_root, ExecDirChoice, HostSides};
use crate::runtimes::RuntimeEntry;
use execguard_load::{self as load, Loaded, Source};
use execguard_policy::{Policy, Profile};
use std::path::{Path, PathBuf};

/// The step of writing or reading a session's policy text that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyTextError {
    #[error("{} is not UTF-8", path.display())]
    NotUtf8 { path: PathBuf },
    #[error("{path}: quotes, backslashes and control characters cannot appear in a policy path")]
    Unquotable { path: String },
    #[error("workspace {}", workspace.display())]
    Workspace {
        workspace: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the workspace cannot be /")]
    WorkspaceIsRoot,
    #[error("{} names no file", path.display())]
    NoFileName { path: PathBuf },
    #[error("directory of {}", path.display())]
    Directory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("mount_table_unreadable: /proc/self/mountinfo (is /proc mounted?)")]
    MountTable(#[source] std::io::Error),
    /// A second name of the write set that cannot join it, or be ruled out.
    #[error("{0}")]
    Unjoinable(execguard_seal::SealError),
    #[error("write_set_aliased: {} is also reachable as {} (another mount of the same file system), a name a policy cannot hold ({why}); unmount it", same.display(), name.display())]
    AliasUnquotable {
        same: PathBuf,
        name: PathBuf,
        why: Box<PolicyTextError>,
    },
    #[error("write_set_aliased: second names keep leading to more; unmount them")]
    AliasesWithoutEnd,
    /// The engine refused the text this file wrote.
    #[error("generated policy is invalid: {0}")]
    Generated(execguard_policy::PolicyError),
    /// The policy in force (system file or environment) cannot be loaded.
    #[error("{}: {error}", error.reason().code())]
    InForce { error: load::LoadError },
    #[error("policy_invalid: {0}")]
    FileUnreadable(crate::input::InputError),
    #[error("policy_invalid: {}: {detail}", path.display())]
    FileInvalid {
        path: PathBuf,
        detail: execguard_policy::PolicyError,
    },
}

type Result<T, E = PolicyTextError> = std::result::Result<T, E>;

/// A path as a policy string: absolute, canonical, and free of characters the policy subset
/// cannot hold (quotes, backslashes, control characters).
pub fn policy_path(path: &Path) -> Result<String> {
    let s = path.to_str().ok_or_else(|| PolicyTextError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    if s.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
        return Err(PolicyTextError::Unquotable { path: s.into() });
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
    let workspace =
        crate::paths::canonical(workspace).map_err(|source| PolicyTextError::Workspace {
            workspace: workspace.to_path_buf(),
            source,
        })?;
    if workspace == Path::new("/") {
        return Err(PolicyTextError::WorkspaceIsRoot);
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
    Policy::parse(text.as_bytes()).map_err(PolicyTextError::Generated)?;
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
    let mounts = execguard_seal::mountinfo::table().map_err(PolicyTextError::MountTable)?;
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
            return Err(PolicyTextError::Unjoinable(e));
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
            if let Err(why) = policy_path(&name) {
                return Err(PolicyTextError::AliasUnquotable {
                    same,
                    name,
                    why: Box::new(why),
                });
            }
            if !mutable_roots.contains(&name) {
                mutable_roots.push(name.clone());
                write_set.push(name);
            }
        }
    }
    Err(PolicyTextError::AliasesWithoutEnd)
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
        .ok_or_else(|| PolicyTextError::NoFileName {
            path: path.to_path_buf(),
        })?;
    let dir = crate::paths::canonical(parent).map_err(|source| PolicyTextError::Directory {
        path: path.to_path_buf(),
        source,
    })?;
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
) -> anyhow::Result<String> {
    let runtimes = crate::runtimes::discover(std::env::var_os("PATH").as_deref())?;
    let sides = crate::exec_dirs::host_sides(workspace, exec_dirs)?;
    Ok(default_policy(
        workspace, profile, audit, seal, &runtimes, &sides,
    )?)
}

fn policy_list(key: &str, paths: &[PathBuf]) -> Result<String> {
    let items: Vec<String> = paths
        .iter()
        .map(|p| policy_path(p).map(|s| format!("\"{s}\"")))
        .collect::<Result<_>>()?;
    Ok(format!("{key} = [{}]\n", items.join(", ")))
}

/// `text` with `lines` as top-level keys: after `version = 1`, before any `[[runtime]]`.
pub fn with_top_level_lines(text: &str, lines: &str) -> String {
    match text.find("version = 1\n") {
        Some(at) => {
            let at = at + "version = 1\n".len();
            format!("{}{lines}{}", &text[..at], &text[at..])
        }
        None => format!("{lines}{text}"),
    }
}

/// A sealed development (or build) session's policy naming the roots the seal grants both
/// rights (`executable_roots`, [`execguard_policy::Policy::runs_written`]). When they cannot
/// all be named (too many, or a name a policy cannot hold) the text is left as it was: the
/// guard then leaves those places to the kernel, as before, and refuses nothing more.
pub fn with_executable_roots(text: &[u8], roots: &[PathBuf]) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let amended = (roots.len() <= execguard_policy::policy::MAX_EXECUTABLE_ROOTS)
        .then(|| policy_list("executable_roots", roots).ok())
        .flatten()
        .map(|line| with_top_level_lines(&text, &line))
        .filter(|t| Policy::parse(t.as_bytes()).is_ok());
    amended.unwrap_or_else(|| text.into_owned()).into_bytes()
}

/// The policy in force, if any (system file first, then the environment).
pub fn policy_in_force() -> Result<Option<Loaded>> {
    match load::load() {
        Ok(l) => Ok(Some(l)),
        Err(load::LoadError::Missing) => Ok(None),
        Err(error) => Err(PolicyTextError::InForce { error }),
    }
}

/// A policy text given by the user (`--policy FILE`).
pub fn policy_file(path: &Path) -> Result<Loaded> {
    let text = crate::input::read_policy(path).map_err(PolicyTextError::FileUnreadable)?;
    let policy = Policy::parse(&text).map_err(|detail| PolicyTextError::FileInvalid {
        path: path.to_path_buf(),
        detail,
    })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dirs::tmp;
    use std::os::unix::ffi::OsStrExt;

    /// Each step that can fail says which, in its own words.
    #[test]
    fn each_failing_step_has_its_error() {
        let d = tmp("policy-text-errors");
        let garbage = d.join("garbage.toml");
        std::fs::write(&garbage, "version = [").unwrap();
        let not_utf8 = Path::new(std::ffi::OsStr::from_bytes(b"/a\xffb"));
        let rows: [(Result<String>, &str); 7] = [
            (
                policy_path(Path::new("/a\"b")),
                "/a\"b: quotes, backslashes",
            ),
            (policy_path(not_utf8), "is not UTF-8"),
            (
                absolute(Path::new("/")).map(|_| String::new()),
                "/ names no file",
            ),
            (
                absolute(&d.join("gone/f")).map(|_| String::new()),
                "directory of ",
            ),
            (
                default_policy(
                    Path::new("/"),
                    Profile::Strict,
                    None,
                    true,
                    &[],
                    &HostSides::default(),
                ),
                "the workspace cannot be /",
            ),
            (
                policy_file(&d.join("missing.toml")).map(|l| l.text.len().to_string()),
                "policy_invalid: ",
            ),
            (
                policy_file(&garbage).map(|l| l.text.len().to_string()),
                "policy_invalid: ",
            ),
        ];
        for (n, (got, want)) in rows.into_iter().enumerate() {
            let e = got.expect_err(want);
            assert!(
                e.to_string().starts_with(want) || e.to_string().contains(want),
                "row {n}: {e}"
            );
        }
        assert!(matches!(
            policy_file(&garbage),
            Err(PolicyTextError::FileInvalid { .. })
        ));
        assert!(matches!(
            policy_file(&d.join("missing.toml")),
            Err(PolicyTextError::FileUnreadable(_))
        ));
    }
}
