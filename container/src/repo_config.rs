//! Workspace files that configure a provider itself (hooks are shell commands; MCP servers are
//! programs): in a strict session the provider does not load them unless the operator gave a
//! dated acknowledgement (`EXECGUARD_REPO_CONFIG_ACK`, recorded as `reduced:repo-config`).
//!
//! Two mechanisms, both applied: the provider's own flags where it has them
//! ([`isolation_args`]: Claude Code's `--setting-sources user --strict-mcp-config`, which hold
//! for files created later too), and for every provider a read-only mask mounted over each such
//! file or directory that exists at start ([`mask`], root start only: it needs
//! `CAP_SYS_ADMIN`, gone before the session starts). A masked path is a mount point: the session
//! cannot remove or replace it. Instruction files (`AGENTS.md`, `CLAUDE.md`, `GEMINI.md`,
//! `.github/copilot-instructions.md`) are not configuration and keep loading.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::session::Agent;

/// What a mask puts in place of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskKind {
    /// A JSON file: `{}` (parses, configures nothing).
    Json,
    /// A TOML file: empty.
    Toml,
    /// A directory: empty.
    Dir,
}

/// Workspace-relative paths of provider configuration, with what replaces each.
pub const REPO_CONFIG: &[(&str, MaskKind)] = &[
    // Claude Code: settings (hooks, permissions, env, apiKeyHelper) and project MCP servers.
    (".claude/settings.json", MaskKind::Json),
    (".claude/settings.local.json", MaskKind::Json),
    (".mcp.json", MaskKind::Json),
    // Codex: project configuration (MCP servers, sandbox, approval, notify).
    (".codex/config.toml", MaskKind::Toml),
    // Gemini CLI: project settings (MCP servers, tools, sandbox) and extensions.
    (".gemini/settings.json", MaskKind::Json),
    (".gemini/extensions", MaskKind::Dir),
    // Copilot CLI and editors: MCP server lists.
    (".github/mcp.json", MaskKind::Json),
    (".vscode/mcp.json", MaskKind::Json),
];

/// Provider flags that keep the workspace's configuration out, prepended in strict sessions
/// without the acknowledgement.
pub fn isolation_args(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::Claude => &["--setting-sources", "user", "--strict-mcp-config"],
        Agent::Codex | Agent::Gemini | Agent::Copilot => &[],
    }
}

/// Opens `rel` below `dir` without following any symlink (every component), as `O_PATH`.
/// `Ok(None)`: it does not exist (or a component is a symlink: not masked, never followed, and
/// reported by [`present`] so a strict start without masks can refuse).
fn open_beneath(dir: &Path, rel: &str) -> std::io::Result<Option<OwnedFd>> {
    let c = CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    let mut cur = unsafe { OwnedFd::from_raw_fd(fd) };
    for comp in Path::new(rel).components() {
        let Component::Normal(name) = comp else {
            return Ok(None);
        };
        let name = CString::new(name.as_bytes())?;
        // SAFETY: `cur` is an open directory fd and `name` is NUL-terminated.
        let next = unsafe {
            libc::openat(
                cur.as_raw_fd(),
                name.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if next < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::ENOTDIR) => Ok(None),
                _ => Err(e),
            };
        }
        // SAFETY: `next` was just returned by openat and is owned by nobody else.
        cur = unsafe { OwnedFd::from_raw_fd(next) };
    }
    Ok(Some(cur))
}

fn file_type(fd: &OwnedFd) -> std::io::Result<libc::mode_t> {
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid, writable stat.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.st_mode & libc::S_IFMT)
}

/// The provider configuration present in the workspace (any file type, symlinks included).
pub fn present(workspace: &Path) -> Vec<&'static str> {
    REPO_CONFIG
        .iter()
        .filter(|(rel, _)| std::fs::symlink_metadata(workspace.join(rel)).is_ok())
        .map(|(rel, _)| *rel)
        .collect()
}

/// Bind-mounts `source` (root-owned, not writable by others) over the opened file.
fn bind(source: &Path, target_fd: &OwnedFd) -> std::io::Result<()> {
    // The magic link names exactly the opened file, whatever its path says now.
    let target = PathBuf::from(format!("/proc/self/fd/{}", target_fd.as_raw_fd()));
    crate::noexec::mount_call(source, &target, libc::MS_BIND)
}

/// Masks every provider configuration file or directory of the workspace that exists, with
/// read-only empty replacements made in `scratch` (a root-owned directory). Symlinks are never
/// followed (a symlinked entry is refused: it cannot be masked safely). Returns what was masked.
pub fn mask(workspace: &Path, scratch: &Path) -> Result<Vec<&'static str>, String> {
    let mut targets = Vec::new();
    for (rel, kind) in REPO_CONFIG {
        let fd = match open_beneath(workspace, rel) {
            Ok(Some(fd)) => fd,
            Ok(None) => {
                if std::fs::symlink_metadata(workspace.join(rel)).is_ok() {
                    return Err(format!("{rel}: a symlink on the way cannot be masked"));
                }
                continue;
            }
            Err(e) => return Err(format!("{rel}: {e}")),
        };
        let ft = file_type(&fd).map_err(|e| format!("{rel}: {e}"))?;
        let want = if *kind == MaskKind::Dir {
            libc::S_IFDIR
        } else {
            libc::S_IFREG
        };
        if ft != want {
            return Err(format!(
                "{rel}: not a {}",
                if want == libc::S_IFDIR {
                    "directory"
                } else {
                    "regular file"
                }
            ));
        }
        let source = scratch.join(match kind {
            MaskKind::Json => "empty.json",
            MaskKind::Toml => "empty.toml",
            MaskKind::Dir => "empty-dir",
        });
        if !source.exists() {
            std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
            std::fs::set_permissions(scratch, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("{}: {e}", scratch.display()))?;
            match kind {
                MaskKind::Json => std::fs::write(&source, "{}\n"),
                MaskKind::Toml => std::fs::write(&source, ""),
                MaskKind::Dir => std::fs::create_dir(&source),
            }
            .map_err(|e| format!("{}: {e}", source.display()))?;
            // Readable by the session (the entrypoint's umask is 077), writable by root alone.
            let mode = if *kind == MaskKind::Dir { 0o755 } else { 0o644 };
            std::fs::set_permissions(&source, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("{}: {e}", source.display()))?;
        }
        targets.push((rel, fd, source));
    }
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    // The replacements are shown from a read-only mount of `scratch`: a bind keeps the flags of
    // the mount it copies, so no mask is a writable second name of a file outside the write
    // set (the seal refuses those: `write_set_aliased`).
    read_only_onto_itself(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let mut masked = Vec::new();
    for (rel, fd, source) in targets {
        bind(&source, &fd).map_err(|e| format!("{rel}: {e}"))?;
        masked.push(*rel);
    }
    Ok(masked)
}

/// Bind-mounts `dir` onto itself and makes that mount read-only.
fn read_only_onto_itself(dir: &Path) -> std::io::Result<()> {
    let kept = execguard_seal::kept_flags(dir).map_err(std::io::Error::other)?;
    crate::noexec::mount_call(dir, dir, libc::MS_BIND)?;
    crate::noexec::mount_call(
        Path::new("none"),
        dir,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | kept,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_files_are_never_masked_and_every_provider_has_configuration_listed() {
        for instr in [
            "AGENTS.md",
            "CLAUDE.md",
            "GEMINI.md",
            ".github/copilot-instructions.md",
        ] {
            assert!(REPO_CONFIG.iter().all(|(p, _)| *p != instr), "{instr}");
        }
        for dir in [".claude/", ".mcp.json", ".codex/", ".gemini/", ".github/"] {
            assert!(REPO_CONFIG.iter().any(|(p, _)| p.starts_with(dir)), "{dir}");
        }
        assert_eq!(
            isolation_args(Agent::Claude),
            ["--setting-sources", "user", "--strict-mcp-config"]
        );
    }

    #[test]
    fn open_beneath_never_follows_a_symlink() {
        let dir = std::env::temp_dir().join(format!("execguard-repocfg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("ws/.claude")).unwrap();
        std::fs::write(dir.join("ws/.claude/settings.json"), "{}").unwrap();
        std::fs::write(dir.join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(dir.join("secret"), dir.join("ws/.mcp.json")).unwrap();
        std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
        std::fs::write(dir.join("elsewhere/config.toml"), "").unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join("ws/.codex")).unwrap();
        let ws = dir.join("ws");
        assert!(open_beneath(&ws, ".claude/settings.json")
            .unwrap()
            .is_some());
        assert!(
            open_beneath(&ws, ".mcp.json").is_err()
                || open_beneath(&ws, ".mcp.json")
                    .unwrap()
                    .is_some_and(|fd| file_type(&fd).unwrap() == libc::S_IFLNK)
        );
        assert!(
            open_beneath(&ws, ".codex/config.toml").unwrap().is_none(),
            "a symlinked directory is not walked"
        );
        assert!(open_beneath(&ws, ".gemini/settings.json")
            .unwrap()
            .is_none());
        let mut found = present(&ws);
        found.sort();
        // Reached through a symlink still counts as present (a provider would read it) ...
        assert_eq!(
            found,
            [".claude/settings.json", ".codex/config.toml", ".mcp.json"]
        );
        // ... and cannot be masked safely: refused, never followed (and nothing mounted: the
        // symlinked entry is the first one present).
        std::fs::remove_file(ws.join(".claude/settings.json")).unwrap();
        let err = mask(&ws, &dir.join("scratch")).unwrap_err();
        assert!(err.starts_with(".mcp.json: "), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
