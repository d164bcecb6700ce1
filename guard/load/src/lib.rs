//! Finding the policy in force (std callers: the CLI and the wrappers). The preload library
//! follows the same rules without std.
//!
//! 1. `/etc/execguard/policy.toml` when it exists (image mode). It must be a regular file owned
//!    by root and writable by nobody else; the environment is then never consulted.
//! 2. Otherwise the policy text inline in `EXECGUARD_POLICY` (host mode, set by `execguard run`;
//!    the guard forces it into every child's environment).
//! 3. Otherwise there is no policy: callers refuse (`policy_missing`).
//!
//! When the policy names `runtime_profile`, a root-owned file there (written by the container
//! entrypoint) may replace the profile; a file that exists but is not trustworthy is an error.

pub mod read;

use execguard_os::Distrust;
use execguard_policy::{Policy, PolicyError, Profile, Reason};
use std::path::Path;

pub const SYSTEM_POLICY: &str = "/etc/execguard/policy.toml";
pub const POLICY_ENV: &str = "EXECGUARD_POLICY";

/// Where the policy came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    System(std::path::PathBuf),
    Environment,
}

/// A policy text that parsed, with where it came from and the profile in force.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub source: Source,
    pub text: Vec<u8>,
    pub profile: Profile,
}

impl Loaded {
    /// The parsed policy with the profile in force.
    pub fn policy(&self) -> Policy<'_> {
        // The text parsed when it was loaded; parsing again cannot fail.
        Policy::parse(&self.text)
            .map(|p| p.with_profile(self.profile))
            .unwrap_or_else(|_| unreachable!())
    }
}

/// Why no policy could be used.
#[derive(Debug)]
pub enum LoadError {
    Missing,
    Untrusted(String),
    Unreadable(String, std::io::Error),
    Invalid(String, PolicyError),
}

impl LoadError {
    pub fn reason(&self) -> Reason {
        match self {
            LoadError::Missing => Reason::PolicyMissing,
            LoadError::Untrusted(_) => Reason::PolicyUntrusted,
            LoadError::Unreadable(..) | LoadError::Invalid(..) => Reason::PolicyInvalid,
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Missing => write!(
                f,
                "no policy: neither {SYSTEM_POLICY} nor {POLICY_ENV} is set"
            ),
            LoadError::Untrusted(what) => write!(
                f,
                "{what} must be a regular file owned by root and writable only by root, in directories likewise"
            ),
            LoadError::Unreadable(what, e) => write!(f, "cannot read {what}: {e}"),
            LoadError::Invalid(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads a file that must be trusted ([`execguard_os::trusted_file`]: the one trust rule).
fn read_trusted(path: &Path) -> Result<Option<Vec<u8>>, LoadError> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let shown = || path.display().to_string();
    let file = match execguard_os::trusted_file(path.as_os_str().as_bytes()) {
        // SAFETY: trusted_file returned a descriptor it opened, owned from here on.
        Ok((fd, _)) => unsafe { std::fs::File::from_raw_fd(fd) },
        Err(Distrust::Missing) => return Ok(None),
        Err(Distrust::Unopenable(e)) => {
            return Err(LoadError::Unreadable(
                shown(),
                std::io::Error::from_raw_os_error(e),
            ))
        }
        Err(_) => return Err(LoadError::Untrusted(shown())),
    };
    let text = read::read_up_to(file, execguard_policy::policy::MAX_POLICY_BYTES)
        .map_err(|e| LoadError::Unreadable(shown(), e))?;
    Ok(Some(text))
}

/// Loads the policy in force for this process.
pub fn load() -> Result<Loaded, LoadError> {
    load_from(
        Path::new(SYSTEM_POLICY),
        std::env::var_os(POLICY_ENV).map(std::os::unix::ffi::OsStringExt::into_vec),
    )
}

/// [`load`] with the system path and environment value given (for tests and `--policy`).
pub fn load_from(system: &Path, env_text: Option<Vec<u8>>) -> Result<Loaded, LoadError> {
    let (source, text) = match read_trusted(system)? {
        Some(text) => (Source::System(system.to_path_buf()), text),
        None => match env_text {
            Some(text) => (Source::Environment, text),
            None => return Err(LoadError::Missing),
        },
    };
    let what = match &source {
        Source::System(p) => p.display().to_string(),
        Source::Environment => POLICY_ENV.to_string(),
    };
    let policy = Policy::parse(&text).map_err(|e| LoadError::Invalid(what, e))?;
    let profile = runtime_profile(&policy)?.unwrap_or(policy.profile());
    Ok(Loaded {
        source,
        text,
        profile,
    })
}

/// The profile from the policy's `runtime_profile` file, when that file exists.
pub fn runtime_profile(policy: &Policy<'_>) -> Result<Option<Profile>, LoadError> {
    let Some(path) = policy.runtime_profile() else {
        return Ok(None);
    };
    let path = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
    let Some(text) = read_trusted(path)? else {
        return Ok(None);
    };
    let name = text.strip_suffix(b"\n").unwrap_or(&text);
    Profile::from_name(name).map(Some).ok_or_else(|| {
        LoadError::Invalid(
            path.display().to_string(),
            PolicyError {
                line: 1,
                kind: execguard_policy::policy::PolicyErrorKind::BadValue("not a profile name"),
            },
        )
    })
}
