//! Runtime state: written once, as root, into `/run/execguard/state/`.
//!
//! Layout: the directory is root-owned 0755; each of `agent`, `profile`, `autonomy`,
//! `mutability`, `assurance` is a root-owned 0444 file holding one line. Files are created under
//! a temporary name and renamed with `RENAME_NOREPLACE`, so each is written exactly once and a
//! reader never sees a partial value. The provider user can neither modify nor replace them.
//!
//! Readers ([`load_state`], and the preload guard) trust a file only if it and its directory are
//! root-owned and not group/other-writable. In read-only sessions the entrypoint is never root,
//! writes nothing here, and readers derive the state from PID 1's own environment instead.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;

use execguard_policy::Profile;

use crate::paths::Paths;
use crate::session::{Agent, Autonomy, Mutability};
use crate::sys;

/// File names inside the state directory.
pub const FILE_AGENT: &str = "agent";
pub const FILE_PROFILE: &str = "profile";
pub const FILE_AUTONOMY: &str = "autonomy";
pub const FILE_MUTABILITY: &str = "mutability";
pub const FILE_ASSURANCE: &str = "assurance";

/// Why a session runs with less assurance than a managed provider session: the one
/// [`Reduction`] of every layer (`Profile(Breakglass)`: the operator acknowledged breakglass).
pub use execguard_policy::Reduction;

/// The reductions the entrypoint gives, and so the only ones its state file may name.
const CONTAINER_REDUCTIONS: [Reduction; 5] = [
    Reduction::Profile(Profile::Breakglass),
    Reduction::ArbitraryCommand,
    Reduction::Unsealed,
    Reduction::ExecMappings,
    Reduction::RepoConfig,
];

/// `managed`, or `reduced:<reason>[,<reason>...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assurance {
    reductions: Vec<Reduction>,
}

impl Assurance {
    pub fn managed() -> Self {
        Self {
            reductions: Vec::new(),
        }
    }

    pub fn new(mut reductions: Vec<Reduction>) -> Self {
        reductions.sort();
        reductions.dedup();
        Self { reductions }
    }

    pub fn is_managed(&self) -> bool {
        self.reductions.is_empty()
    }

    pub fn reductions(&self) -> &[Reduction] {
        &self.reductions
    }

    pub fn parse(s: &str) -> Option<Self> {
        if s == "managed" {
            return Some(Self::managed());
        }
        let list = s.strip_prefix("reduced:")?;
        let reductions = list
            .split(',')
            .map(|name| Reduction::from_name(name).filter(|r| CONTAINER_REDUCTIONS.contains(r)))
            .collect::<Option<Vec<_>>>()?;
        let parsed = Self::new(reductions);
        (parsed.to_string() == s).then_some(parsed)
    }
}

impl fmt::Display for Assurance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reductions.is_empty() {
            return f.write_str("managed");
        }
        execguard_policy::reduction::write_reduced(f, &self.reductions)
    }
}

/// The session as recorded for every later reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeState {
    pub agent: Agent,
    pub profile: Profile,
    pub autonomy: Autonomy,
    pub mutability: Mutability,
    pub assurance: Assurance,
}

impl RuntimeState {
    fn files(&self) -> [(&'static str, String); 5] {
        [
            (FILE_AGENT, self.agent.as_str().to_owned()),
            (FILE_PROFILE, self.profile.as_str().to_owned()),
            (FILE_AUTONOMY, self.autonomy.as_str().to_owned()),
            (FILE_MUTABILITY, self.mutability.as_str().to_owned()),
            (FILE_ASSURANCE, self.assurance.to_string()),
        ]
    }
}

/// Failure to write or trust the runtime state.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    #[error("failed to open {what}: {source}")]
    Open { what: String, source: io::Error },
    #[error("failed to create {what}: {source}")]
    Create { what: String, source: io::Error },
    #[error("{what} is not root-owned or is writable by group/other")]
    Untrusted { what: String },
    #[error("runtime state {file} was already written")]
    AlreadyWritten { file: &'static str },
    #[error("failed to write runtime state {file}: {source}")]
    Write {
        file: &'static str,
        source: io::Error,
    },
    #[error("runtime state {file} holds an invalid value")]
    Invalid { file: &'static str },
}

impl StateError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Open { .. } => "state_open_failed",
            Self::Create { .. } => "state_create_failed",
            Self::Untrusted { .. } => "state_untrusted",
            Self::AlreadyWritten { .. } => "state_already_written",
            Self::Write { .. } => "state_write_failed",
            Self::Invalid { .. } => "state_invalid",
        }
    }
}

fn ensure_root_dir(
    parent: std::os::fd::BorrowedFd<'_>,
    name: &OsStr,
    what: &str,
) -> Result<std::os::fd::OwnedFd, StateError> {
    let created = sys::mkdirat(parent, name, 0o755).map_err(|source| StateError::Create {
        what: what.to_owned(),
        source,
    })?;
    let fd = sys::open_dir_at(parent, name).map_err(|source| StateError::Open {
        what: what.to_owned(),
        source,
    })?;
    if created {
        // mkdir honours the umask; set the exact mode on the fd we hold.
        sys::fchmod(fd.as_fd(), 0o755).map_err(|source| StateError::Create {
            what: what.to_owned(),
            source,
        })?;
    }
    let meta = sys::fstat(&fd).map_err(|source| StateError::Open {
        what: what.to_owned(),
        source,
    })?;
    if !sys::is_root_owned_not_shared(&meta) {
        return Err(StateError::Untrusted {
            what: what.to_owned(),
        });
    }
    Ok(fd)
}

/// `/run/execguard`, made root's `0755` if missing, and checked to be root's alone.
pub fn ensure_run_dir(paths: &Paths) -> Result<std::os::fd::OwnedFd, StateError> {
    let run = paths.run_dir.display().to_string();
    let (parent, run_name) =
        sys::open_parent(&paths.run_dir).map_err(|source| StateError::Open {
            what: run.clone(),
            source,
        })?;
    ensure_root_dir(parent.as_fd(), run_name, &run)
}

/// Writes the runtime state once. Must run as root (the files must be root-owned).
pub fn write_state(paths: &Paths, state: &RuntimeState) -> Result<(), StateError> {
    let run_fd = ensure_run_dir(paths)?;
    let dir = ensure_root_dir(
        run_fd.as_fd(),
        OsStr::new("state"),
        &paths.state_dir().display().to_string(),
    )?;
    for (file, value) in state.files() {
        let mut line = value.into_bytes();
        line.push(b'\n');
        let new = sys::NewFile {
            mode: 0o444,
            owner: Some((0, 0)),
            no_replace: true,
        };
        sys::write_atomic_at(dir.as_fd(), OsStr::new(file), &line, new).map_err(|source| {
            if source.raw_os_error() == Some(libc::EEXIST) {
                StateError::AlreadyWritten { file }
            } else {
                StateError::Write { file, source }
            }
        })?;
    }
    Ok(())
}

fn read_trusted(
    dir: std::os::fd::BorrowedFd<'_>,
    file: &'static str,
) -> Result<String, StateError> {
    let fd = sys::openat(dir, OsStr::new(file), libc::O_RDONLY | libc::O_NONBLOCK, 0).map_err(
        |source| StateError::Open {
            what: file.to_owned(),
            source,
        },
    )?;
    let meta = sys::fstat(&fd).map_err(|source| StateError::Open {
        what: file.to_owned(),
        source,
    })?;
    if !meta.file_type().is_file() || meta.uid() != 0 || meta.mode() & 0o222 != 0 {
        return Err(StateError::Untrusted {
            what: file.to_owned(),
        });
    }
    let bytes = sys::read_limited(fd, 256).map_err(|source| StateError::Open {
        what: file.to_owned(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| StateError::Invalid { file })?;
    let value = text
        .strip_suffix('\n')
        .ok_or(StateError::Invalid { file })?;
    if value.contains('\n') {
        return Err(StateError::Invalid { file });
    }
    Ok(value.to_owned())
}

/// Loads the runtime state if its directory exists (`Ok(None)` if it does not), trusting only
/// root-owned, non-shared files in a root-owned, non-shared directory.
pub fn load_state(paths: &Paths) -> Result<Option<RuntimeState>, StateError> {
    let what = paths.state_dir().display().to_string();
    let dir = match sys::open_dir_nofollow(&paths.state_dir()) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(source) => return Err(StateError::Open { what, source }),
    };
    let meta = sys::fstat(&dir).map_err(|source| StateError::Open {
        what: what.clone(),
        source,
    })?;
    if !sys::is_root_owned_not_shared(&meta) {
        return Err(StateError::Untrusted { what });
    }
    let d = dir.as_fd();
    let agent = read_trusted(d, FILE_AGENT)?;
    let profile = read_trusted(d, FILE_PROFILE)?;
    let autonomy = read_trusted(d, FILE_AUTONOMY)?;
    let mutability = read_trusted(d, FILE_MUTABILITY)?;
    let assurance = read_trusted(d, FILE_ASSURANCE)?;
    Ok(Some(RuntimeState {
        agent: Agent::from_name(&agent).ok_or(StateError::Invalid { file: FILE_AGENT })?,
        profile: Profile::from_name(profile.as_bytes())
            .ok_or(StateError::Invalid { file: FILE_PROFILE })?,
        autonomy: Autonomy::from_name(&autonomy).ok_or(StateError::Invalid {
            file: FILE_AUTONOMY,
        })?,
        mutability: Mutability::from_name(&mutability).ok_or(StateError::Invalid {
            file: FILE_MUTABILITY,
        })?,
        assurance: Assurance::parse(&assurance).ok_or(StateError::Invalid {
            file: FILE_ASSURANCE,
        })?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp_paths(tag: &str) -> Paths {
        let d = std::env::temp_dir().join(format!("execguard-state-{tag}-{}", std::process::id()));
        let _ignored = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("run")).unwrap();
        Paths::under(&d)
    }

    fn sample() -> RuntimeState {
        RuntimeState {
            agent: Agent::Gemini,
            profile: Profile::Development,
            autonomy: Autonomy::Prompt,
            mutability: Mutability::Ephemeral,
            assurance: Assurance::new(vec![Reduction::ArbitraryCommand]),
        }
    }

    #[test]
    fn assurance_round_trips_and_rejects_noise() {
        for s in [
            "managed",
            "reduced:breakglass",
            "reduced:arbitrary-command",
            "reduced:breakglass,arbitrary-command",
        ] {
            assert_eq!(Assurance::parse(s).unwrap().to_string(), s);
        }
        for bad in [
            "",
            "Managed",
            "reduced:",
            "reduced:other",
            "reduced:arbitrary-command,breakglass",
            "managed ",
        ] {
            assert!(Assurance::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn written_once_root_owned_0444_and_loaded_back() {
        // Root-owned files need root: without it the kit skips loudly (a failure under CI).
        if !execguard_testkit::require_root("the state files: they are root-owned") {
            return;
        }
        let paths = temp_paths("write");
        assert_eq!(load_state(&paths).unwrap(), None);
        write_state(&paths, &sample()).unwrap();
        let dir_meta = std::fs::metadata(paths.state_dir()).unwrap();
        assert_eq!(dir_meta.mode() & 0o7777, 0o755);
        for f in [
            FILE_AGENT,
            FILE_PROFILE,
            FILE_AUTONOMY,
            FILE_MUTABILITY,
            FILE_ASSURANCE,
        ] {
            let m = std::fs::metadata(paths.state_dir().join(f)).unwrap();
            assert_eq!((m.uid(), m.gid(), m.mode() & 0o7777), (0, 0, 0o444), "{f}");
        }
        assert_eq!(
            std::fs::read_to_string(paths.state_dir().join("profile")).unwrap(),
            "development\n"
        );
        assert_eq!(load_state(&paths).unwrap(), Some(sample()));
        let again = write_state(&paths, &sample()).unwrap_err();
        assert_eq!(again.code(), "state_already_written");
        std::fs::remove_dir_all(&paths.root).unwrap();
    }

    #[test]
    fn untrusted_state_is_refused() {
        let paths = temp_paths("untrusted");
        write_state(&paths, &sample()).unwrap();
        // A group-writable directory could have its files replaced: refuse it.
        std::fs::set_permissions(paths.state_dir(), std::fs::Permissions::from_mode(0o775))
            .unwrap();
        assert_eq!(load_state(&paths).unwrap_err().code(), "state_untrusted");
        std::fs::set_permissions(paths.state_dir(), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        // A file not owned by root is refused.
        std::os::unix::fs::chown(paths.state_dir().join("profile"), Some(1000), None).unwrap();
        assert_eq!(load_state(&paths).unwrap_err().code(), "state_untrusted");
        std::fs::remove_dir_all(&paths.root).unwrap();
    }

    #[test]
    fn a_symlinked_state_directory_is_refused() {
        let paths = temp_paths("symlink");
        let elsewhere = paths.root.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &paths.run_dir).unwrap();
        assert!(write_state(&paths, &sample()).is_err());
        assert!(load_state(&paths).is_err());
        std::fs::remove_dir_all(&paths.root).unwrap();
    }

    #[test]
    fn invalid_values_are_refused() {
        let paths = temp_paths("invalid");
        write_state(&paths, &sample()).unwrap();
        let dir = sys::open_dir_nofollow(&paths.state_dir()).unwrap();
        let new = sys::NewFile {
            mode: 0o444,
            owner: Some((0, 0)),
            no_replace: false,
        };
        sys::write_atomic_at(dir.as_fd(), OsStr::new("profile"), b"permissive\n", new).unwrap();
        assert_eq!(load_state(&paths).unwrap_err().code(), "state_invalid");
        std::fs::remove_dir_all(&paths.root).unwrap();
    }
}
