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
) -> Result<String> {
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {}", workspace.display()))?;
    if workspace == Path::new("/") {
        bail!("the workspace cannot be /");
    }
    let mut text = format!(
        "# execguard policy for a host session (execguard run)\nversion = 1\nprofile = \"{}\"\nworkspace = \"{}\"\n",
        profile.as_str(),
        policy_path(&workspace)?
    );
    if let Some(audit) = audit {
        let audit = absolute(audit)?;
        text.push_str(&format!("audit_log = \"{}\"\n", policy_path(&audit)?));
    }
    if seal {
        text.push_str("seal = true\n");
    }
    for rt in runtimes {
        text.push_str(&rt.to_policy()?);
    }
    // The engine is the one judge of what a policy means: never hand out text it refuses.
    Policy::parse(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("generated policy is invalid: {e}"))?;
    Ok(text)
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
    let dir = parent
        .canonicalize()
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
        return p
            .canonicalize()
            .with_context(|| format!("EXECGUARD_LIB={}", p.display()));
    }
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(LIB_NAME),
        dir.join("../lib/execguard").join(LIB_NAME),
        PathBuf::from("/usr/local/lib/execguard").join(LIB_NAME),
        PathBuf::from("/usr/lib/execguard").join(LIB_NAME),
    ];
    for c in &candidates {
        if c.is_file() {
            return Ok(c.canonicalize()?);
        }
    }
    bail!("cannot find {LIB_NAME} beside {} or in /usr/local/lib/execguard (build it with `cargo build --release`, or set EXECGUARD_LIB)", exe.display())
}

/// The default policy for `workspace` with the runtimes found on this machine through
/// `PATH` (the caller's), for `run`, `check` and `policy default` alike.
pub fn discovered_default_policy(
    workspace: &Path,
    profile: Profile,
    audit: Option<&Path>,
    seal: bool,
) -> Result<String> {
    let runtimes = crate::toolchain::discover(std::env::var_os("PATH").as_deref())?;
    default_policy(workspace, profile, audit, seal, &runtimes)
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
