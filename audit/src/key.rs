//! The state directory the writer keeps outside every session (the kept log, the socket
//! directory, the signing key) and the key itself.
//!
//! ```text
//! $XDG_STATE_HOME/execguard/     (else ~/.local/state/execguard/), 0700
//!   audit.jsonl                  the kept log, 0600
//!   audit.pub                    the public key, hex
//!   key/audit.key                the ed25519 seed, hex, 0600: never readable in a session
//!   run/<session>.sock           a running session's socket
//! ```

use ed25519_dalek::{SigningKey, VerifyingKey};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The user's state directory for execguard: `$XDG_STATE_HOME/execguard` when that is an
/// absolute path, else `$HOME/.local/state/execguard`.
pub fn default_state_dir() -> io::Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| Path::new(x).is_absolute()) {
        return Ok(PathBuf::from(x).join("execguard"));
    }
    match std::env::var_os("HOME")
        .filter(|h| Path::new(h).is_absolute())
        .map(PathBuf::from)
        .or_else(passwd_home)
    {
        Some(home) => Ok(home.join(".local/state/execguard")),
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            "neither XDG_STATE_HOME, HOME nor the password database names a home directory",
        )),
    }
}

/// This user's home directory in the password database (`HOME` unset: `env -i`, cron).
fn passwd_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    // SAFETY: getpwuid returns NULL or an entry valid until the next getpw* call; the
    // directory is copied out at once.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr((*pw).pw_dir).to_bytes();
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(dir))).filter(|p| p.is_absolute())
    }
}

/// The state directory, made and checked.
#[derive(Clone, Debug)]
pub struct StateDir {
    path: PathBuf,
    /// Whose it is: this process's user, or (PID 1 of the image, root) the host user's
    /// directory mounted in, whose files stay that user's ([`StateDir::give_to_owner`]).
    owner: u32,
}

/// A directory of `owner`'s: made `0700` if missing; a link, another owner, or a group or
/// other write bit is refused (someone else could replace what it holds).
fn own_dir(path: &Path, owner: u32) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() || meta.uid() != owner || meta.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory of uid {owner} that only it may write",
                path.display()
            ),
        ));
    }
    Ok(())
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

impl StateDir {
    /// Makes (its parents too) and checks the state directory at `path` (absolute).
    pub fn open(path: &Path) -> io::Result<StateDir> {
        if let Some(parent) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)?;
        }
        Self::open_owned(path, euid())
    }

    /// The state directory at `path`, which exists and is `owner`'s: the image's PID 1
    /// (root) keeps the host user's directory, mounted in. What it makes there it gives to
    /// `owner` ([`StateDir::give_to_owner`]), so the user reads and verifies it on the host.
    pub fn open_owned(path: &Path, owner: u32) -> io::Result<StateDir> {
        own_dir(path, owner)?;
        let path = path.canonicalize()?;
        let state = StateDir { path, owner };
        for dir in [state.key_dir(), state.socket_dir()] {
            own_dir(&dir, euid())
                .or_else(|_| own_dir(&dir, owner))
                .and_then(|()| state.give(&dir))?;
        }
        Ok(state)
    }

    /// Gives what this process made in the directory (its subdirectories, the log, the
    /// keys) to the directory's owner, when that is another user.
    pub fn give_to_owner(&self) -> io::Result<()> {
        for p in [
            self.log(),
            self.public_file(),
            self.key_dir().join("audit.key"),
        ] {
            match self.give(&p) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                r => r?,
            }
        }
        Ok(())
    }

    fn give(&self, path: &Path) -> io::Result<()> {
        if self.owner == euid() {
            return Ok(());
        }
        std::os::unix::fs::lchown(path, Some(self.owner), None)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The kept log.
    pub fn log(&self) -> PathBuf {
        self.path.join("audit.jsonl")
    }

    /// The directory the session's world must hide (docs/audit.md).
    pub fn key_dir(&self) -> PathBuf {
        self.path.join("key")
    }

    /// Where a session's socket is bound.
    pub fn socket_dir(&self) -> PathBuf {
        self.path.join("run")
    }

    fn public_file(&self) -> PathBuf {
        self.path.join("audit.pub")
    }

    /// The signing key, made on first use (`key/audit.key`, `0600`, published as
    /// `audit.pub`). Two writers making it at once agree: the first link wins.
    pub fn signing_key(&self) -> io::Result<SigningKey> {
        let file = self.key_dir().join("audit.key");
        match read_key(&file, self.owner) {
            Ok(key) => {
                self.publish(&key)?;
                return Ok(key);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| io::Error::other(e.to_string()))?;
        let tmp = self
            .key_dir()
            .join(format!("audit.key.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            io::Write::write_all(&mut f, format!("{}\n", crate::hex(&seed)).as_bytes())?;
            f.sync_all()?;
        }
        let linked = std::fs::hard_link(&tmp, &file);
        std::fs::remove_file(&tmp)?;
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let key = read_key(&file, self.owner)?;
        self.publish(&key)?;
        Ok(key)
    }

    /// Writes `audit.pub` when it does not say this key already.
    fn publish(&self, key: &SigningKey) -> io::Result<()> {
        let text = format!("{}\n", crate::hex(key.verifying_key().as_bytes()));
        if std::fs::read_to_string(self.public_file()).ok().as_deref() == Some(&text) {
            return Ok(());
        }
        let tmp = self.path.join(format!("audit.pub.{}", std::process::id()));
        std::fs::write(&tmp, &text)?;
        std::fs::rename(&tmp, self.public_file())
    }

    /// The published public key, if any.
    pub fn verifying_key(&self) -> io::Result<Option<VerifyingKey>> {
        read_public(&self.public_file())
    }
}

/// A public key file: one line of hex. `None` when there is none.
pub fn read_public(path: &Path) -> io::Result<Option<VerifyingKey>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let bytes = crate::unhex::<32>(text.trim()).ok_or_else(|| bad(path))?;
    VerifyingKey::from_bytes(&bytes)
        .map(Some)
        .map_err(|_| bad(path))
}

fn bad(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{} is not an execguard audit key", path.display()),
    )
}

/// The seed file: regular, `owner`'s (or this process's), `0600` at most.
fn read_key(path: &Path, owner: u32) -> io::Result<SigningKey> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() || (meta.uid() != owner && meta.uid() != euid()) || meta.mode() & 0o077 != 0
    {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} must be a regular file of this user, mode 0600",
                path.display()
            ),
        ));
    }
    let mut text = String::new();
    io::Read::read_to_string(&mut &f, &mut text)?;
    let seed = crate::unhex::<32>(text.trim()).ok_or_else(|| bad(path))?;
    Ok(SigningKey::from_bytes(&seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_kept_private_and_published() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(&dir.path().join("a/b/execguard")).unwrap();
        let k1 = state.signing_key().unwrap();
        let k2 = StateDir::open(state.path()).unwrap().signing_key().unwrap();
        assert_eq!(k1.to_bytes(), k2.to_bytes());
        let mode = std::fs::metadata(state.key_dir().join("audit.key"))
            .unwrap()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            state.verifying_key().unwrap(),
            Some(k1.verifying_key()),
            "published"
        );
        // A key others may read is no key.
        std::fs::set_permissions(
            state.key_dir().join("audit.key"),
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .unwrap();
        assert!(state.signing_key().is_err());
    }

    #[test]
    fn a_state_dir_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("execguard");
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        assert!(StateDir::open(&p).is_err());
    }
}
