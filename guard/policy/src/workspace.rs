//! Which directories cannot be a session's workspace: a workspace is a mutable root and (in the
//! image) a read-write bind mount, so a broad one would hand the session the system's files or
//! the operator's home, and guard nothing that matters. The CLI (`run`, `check`, `image run`)
//! refuses these with `workspace_too_broad`.

use crate::path::is_under;

/// Directories that hold the system's programs, libraries or configuration: a workspace
/// cannot be one of them, lie beneath one, or contain one.
pub const SYSTEM_TREES: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr/bin",
    "/usr/include",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/libx32",
    "/usr/local/bin",
    "/usr/local/lib",
    "/usr/local/sbin",
    "/usr/sbin",
    "/usr/share",
];

/// Directories shared by everything on the machine: a workspace may lie beneath one
/// (`/home/me/project`, `/tmp/build`, `/opt/app`) but cannot be one or contain one.
pub const SHARED_DIRS: &[&str] = &[
    "/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/var",
];

/// Why a workspace is too broad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broad<'a> {
    /// `/`.
    Root,
    /// It lies in a system tree.
    InSystem(&'static str),
    /// It contains a system tree.
    ContainsSystem(&'static str),
    /// It is or contains a shared directory or an operator home.
    Shared(&'a [u8]),
}

impl core::fmt::Display for Broad<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Broad::Root => f.write_str("/ is the whole machine"),
            Broad::InSystem(t) => write!(f, "it lies in {t}, which holds the system's own files"),
            Broad::ContainsSystem(t) => {
                write!(f, "it contains {t}, which holds the system's own files")
            }
            Broad::Shared(d) => write!(
                f,
                "it is or contains {}, which more than one project shares",
                crate::text::Lossy(d)
            ),
        }
    }
}

/// Why the canonical path `workspace` cannot be a workspace, if it cannot; `homes` are the
/// operator's home directories (canonical), which it cannot be or contain either.
pub fn broad_workspace<'a>(workspace: &[u8], homes: &[&'a [u8]]) -> Option<Broad<'a>> {
    if workspace == b"/" {
        return Some(Broad::Root);
    }
    for tree in SYSTEM_TREES {
        if is_under(workspace, tree.as_bytes()) {
            return Some(Broad::InSystem(tree));
        }
        if is_under(tree.as_bytes(), workspace) {
            return Some(Broad::ContainsSystem(tree));
        }
    }
    SHARED_DIRS
        .iter()
        .map(|d| d.as_bytes())
        .chain(homes.iter().copied())
        .find(|d| is_under(d, workspace))
        .map(Broad::Shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broad_and_system_workspaces_are_refused() {
        let homes: [&[u8]; 2] = [b"/home/ann", b"/root"];
        let refused = [
            "/",
            "/home",
            "/home/ann",
            "/root",
            "/etc",
            "/etc/nginx",
            "/usr",
            "/usr/local",
            "/usr/bin",
            "/usr/lib/x86_64-linux-gnu",
            "/var",
            "/tmp",
            "/opt",
            "/proc/self",
            "/dev/shm",
            "/sys",
            "/boot",
            "/lib",
            "/run",
        ];
        for ws in refused {
            assert!(
                broad_workspace(ws.as_bytes(), &homes).is_some(),
                "{ws} must be refused"
            );
        }
        let allowed = [
            "/home/ann/project",
            "/home/bob",
            "/tmp/build",
            "/opt/app",
            "/usr/src/app",
            "/usr/local/src/x",
            "/var/www/site",
            "/srv/git/repo",
            "/workspace",
            "/root/src",
            "/etcetera",
        ];
        for ws in allowed {
            assert_eq!(broad_workspace(ws.as_bytes(), &homes), None, "{ws}");
        }
    }
}
