//! The shims of a host session: the per-session directory that puts the wrappers first on
//! `PATH`, and the `GIT_EXEC_PATH` copy of git's exec-path that starts git through its wrapper.
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

use crate::runtime_dir::{private_dir, shim_base};
use crate::runtimes::{git_exec_path_of, Tool, GIT, TOOLS};
use anyhow::{Context as _, Result};
use execguard_policy::Policy;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What the shim of a session must hold, read from the session policy: for each tool, the
/// wrapper of its first runtime entry; for git, the real exec-path to mirror.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShimPlan {
    pub wrappers: Vec<(Tool, PathBuf)>,
    pub git_exec_path: Option<PathBuf>,
}

/// The step of putting the wrappers first that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShimError {
    /// A protected git whose exec-path (git-core directory) cannot be found.
    #[error("cannot find the exec-path (git-core directory) of {}", git.display())]
    ExecPathUnknown { git: PathBuf },
    /// A protected git whose exec-path copy the policy leaves unprotected.
    #[error("the policy protects {} but not its exec-path copy {}: add a [[runtime]] for it", git.display(), copy.display())]
    ExecPathUnprotected { git: PathBuf, copy: PathBuf },
    /// A wrapper that cannot be resolved.
    #[error("the {tool} wrapper {}: {source}", wrapper.display())]
    WrapperUnreachable {
        tool: &'static str,
        wrapper: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A wrapper the session could replace.
    #[error("the {tool} wrapper {} lies in the mutable root {root}: install it elsewhere", wrapper.display())]
    WrapperWritable {
        tool: &'static str,
        wrapper: PathBuf,
        root: String,
    },
    /// The shim directory could not be made.
    #[error(transparent)]
    Create(#[from] anyhow::Error),
}

fn os_path(b: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b))
}

/// The shim a session under `policy` needs. A git runtime needs its exec-path copy in the
/// policy too: the wrapper accepts a `GIT_EXEC_PATH` shim only if it links into the directory
/// of a protected git.
pub fn shim_plan(policy: &Policy<'_>) -> Result<ShimPlan, ShimError> {
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
            let exec_path = git_exec_path_of(&git)
                .ok_or_else(|| ShimError::ExecPathUnknown { git: git.clone() })?;
            let covered = policy.runtimes().any(|r| {
                r.name == b"git"
                    && Path::new(OsStr::from_bytes(r.path)).parent() == Some(&exec_path)
            });
            if !covered {
                return Err(ShimError::ExecPathUnprotected {
                    copy: exec_path.join("git"),
                    git,
                });
            }
            plan.git_exec_path = Some(exec_path);
        }
    }
    Ok(plan)
}

/// Host mode: the wrappers of the policy's runtimes go first in `env` (`PATH`,
/// `GIT_EXEC_PATH`), each checked to lie outside the write set. Returns the shim's
/// directories (none without a wrapper).
pub fn put_wrappers_first(
    policy: &Policy<'_>,
    env: &mut Vec<(OsString, OsString)>,
) -> Result<Vec<PathBuf>, ShimError> {
    let plan = shim_plan(policy)?;
    for (tool, wrapper) in &plan.wrappers {
        let canonical =
            crate::paths::canonical(wrapper).map_err(|source| ShimError::WrapperUnreachable {
                tool: tool.name,
                wrapper: wrapper.clone(),
                source,
            })?;
        if let Some(root) = policy.mutable_root_of(canonical.as_os_str().as_bytes()) {
            return Err(ShimError::WrapperWritable {
                tool: tool.name,
                wrapper: canonical,
                root: String::from_utf8_lossy(root).into_owned(),
            });
        }
    }
    if plan.wrappers.is_empty() {
        return Ok(Vec::new());
    }
    let shim = create_shim(&plan, policy)?;
    shim.apply(env);
    Ok([Some(shim.bin), shim.git_core]
        .into_iter()
        .flatten()
        .collect())
}

/// A created shim: prepend `bin` to `PATH`, set `GIT_EXEC_PATH` to `git_core`.
#[derive(Debug)]
pub struct Shim {
    pub bin: PathBuf,
    pub git_core: Option<PathBuf>,
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
/// session has read-only (`crate::exec_dirs::host_sides`): when it is a private directory of this user
/// and the session about to start cannot write it either (it is sealed, and a `--policy` file
/// may leave it in its write set). Its shims are then never written by a session, neither while a session
/// uses one nor between two.
fn kept_shims(policy: &Policy<'_>) -> Option<PathBuf> {
    // Unsealed, the session writes wherever its user may.
    if !policy.seal() {
        return None;
    }
    let home = crate::exec_dirs::home()?;
    let record_dir = crate::exec_dirs::exec_dir_record(&home)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dirs::tmp;

    /// Each way putting the wrappers first fails, one row each, with its step's error: a
    /// wrapper the session could replace (in a mutable root), one that is not there, and a
    /// protected git whose exec-path copy the policy leaves out.
    #[test]
    fn each_failing_step_has_its_error() {
        let d = tmp("shim-steps");
        let (node, wrapper) = (d.join("node"), d.join("node-wrapper"));
        std::fs::write(&node, b"").unwrap();
        std::fs::write(&wrapper, b"").unwrap();
        let runtime = |name: &str, path: &Path, wrapper: &Path| {
            format!(
                "version = 1\nworkspace = \"/nonexistent-ws\"\n\n[[runtime]]\nname = \"{name}\"\npath = \"{}\"\nwrapper = \"{}\"\n",
                path.display(),
                wrapper.display()
            )
        };
        /// The policy text, and the error it must give.
        type Row = (String, fn(&ShimError) -> bool);
        let rows: [Row; 3] = [
            (runtime("node", &node, &wrapper), |e| {
                matches!(e, ShimError::WrapperWritable { tool: "node", .. })
            }),
            (runtime("node", &node, &d.join("missing")), |e| {
                matches!(e, ShimError::WrapperUnreachable { tool: "node", .. })
            }),
            (runtime("git", Path::new("/usr/bin/git"), &wrapper), |e| {
                matches!(e, ShimError::ExecPathUnprotected { .. })
            }),
        ];
        for (text, want) in rows {
            let policy = Policy::parse(text.as_bytes()).unwrap();
            let err = put_wrappers_first(&policy, &mut Vec::new()).unwrap_err();
            assert!(want(&err), "{text}: {err:?}");
        }
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
