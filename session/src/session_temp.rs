//! The temp directory of a `development` (or `build`) host session: its own, made at the
//! start and removed by the supervisor at the end, on the workspace's side of the partition
//! (written and executed). `go test` and `go run` build in `$TMPDIR` and run what they built
//! there, as do scratch programs compiled in `/tmp`: with the temp dirs on the write side,
//! development would refuse the build loop outside the workspace. Its own per session, so
//! nothing it holds outlives the session or runs in another; `strict` never has one.

use anyhow::{Context as _, Result};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The variables that name a temp directory, all pointed at the session's.
pub const TEMP_VARS: [&str; 5] = ["TMPDIR", "GOTMPDIR", "TMP", "TEMP", "TEMPDIR"];

/// A session's temp directory: `<runtime dir>/tmp/<pid>` (the user's private runtime
/// directory, [`crate::runtime_dir::shim_base`]).
#[derive(Clone, Debug)]
pub struct SessionTemp {
    dir: PathBuf,
}

impl SessionTemp {
    /// Makes a fresh one (0700), after removing what sessions that are gone left behind.
    pub fn create() -> Result<SessionTemp> {
        let base = crate::runtime_dir::shim_base()?.join("tmp");
        match std::fs::DirBuilder::new().mode(0o700).create(&base) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", base.display())),
        }
        crate::runtime_dir::private_dir(&base)?;
        remove_stale(&base);
        let dir = base.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create the session's temp dir {}", dir.display()))?;
        Ok(SessionTemp {
            dir: crate::paths::canonical(&dir)?,
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Points [`TEMP_VARS`] at it in the session's environment.
    pub fn apply(&self, env: &mut Vec<(OsString, OsString)>) {
        env.retain(|(k, _)| !TEMP_VARS.iter().any(|v| k == v));
        for v in TEMP_VARS {
            env.push((v.into(), self.dir.clone().into_os_string()));
        }
    }

    /// Removes it and what it holds (never following a link: `remove_dir_all` does not).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes the temp dirs of sessions whose supervisor is gone (killed before its duties).
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let alive = e
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok())
            // SAFETY: kill with signal 0 only asks whether the process exists.
            .is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0);
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
