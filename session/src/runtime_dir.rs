//! The user's private runtime directory (`$XDG_RUNTIME_DIR/execguard`, else
//! `/tmp/execguard-<uid>`): where shims, records and the default audit log live.

use anyhow::{bail, Context as _, Result};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

pub(crate) fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Is `dir` a real directory (not a symlink) of this user that nobody else may write?
pub(crate) fn private_dir(dir: &Path) -> Result<()> {
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
