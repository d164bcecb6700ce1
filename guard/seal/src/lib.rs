//! # Sealed mode
//!
//! A preload library cannot see execs made by statically linked programs, Go programs or
//! inline system calls. The seal hands the core rule to the kernel: a Landlock ruleset handles
//! `LANDLOCK_ACCESS_FS_EXECUTE` and grants it everywhere *except* beneath the mutable roots, so
//! `execve` of any file there fails with `EACCES`, whoever calls it.
//!
//! Landlock's own holes, and what covers them (see the README's threat model):
//! - the execute right is checked only at `execve`: the loader can still `mmap(PROT_EXEC)` a
//!   workspace file (`ld.so ./payload` from a static caller). A `noexec` mount closes it.
//! - memfds are not restricted: guarded processes create them with `MFD_NOEXEC_SEAL`, and
//!   `vm.memfd_noexec=2` closes it for everyone.
//!
//! The seal is all or nothing: when the kernel cannot enforce it, [`seal`] fails with a typed
//! error and the caller refuses to start (never a silent downgrade).

use landlock::{
    AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus,
};
use std::path::{Path, PathBuf};

/// Test hook: an ABI version to report instead of the kernel's, only ever lower (so it can
/// simulate a kernel without Landlock, never grant anything).
pub const FORCE_ABI_ENV: &str = "EXECGUARD_TEST_LANDLOCK_ABI";

/// Why the seal could not be applied. Every variant is a refusal to start.
#[derive(Debug)]
#[non_exhaustive]
pub enum SealError {
    /// The kernel offers no Landlock (ABI 0, or the syscall is missing or disabled).
    Unavailable { detail: String },
    /// Building or applying the ruleset failed.
    Apply { step: &'static str, detail: String },
    /// The kernel accepted the ruleset but does not enforce the execute right.
    NotEnforced,
}

impl SealError {
    /// Stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            SealError::Unavailable { .. } => "seal_unavailable",
            SealError::Apply { .. } => "seal_failed",
            SealError::NotEnforced => "seal_not_enforced",
        }
    }
}

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SealError::Unavailable { detail } => write!(
                f,
                "{}: the kernel cannot enforce Landlock: {detail}",
                self.code()
            ),
            SealError::Apply { step, detail } => {
                write!(f, "{}: failed to {step}: {detail}", self.code())
            }
            SealError::NotEnforced => write!(
                f,
                "{}: the kernel did not enforce the execute restriction",
                self.code()
            ),
        }
    }
}

impl std::error::Error for SealError {}

/// What was enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealStatus {
    /// The Landlock ABI version of the kernel.
    pub abi: i64,
    /// How many paths were granted execute.
    pub rules: usize,
}

/// The kernel's Landlock ABI version (`Err(errno)` when there is none), lowered by
/// [`FORCE_ABI_ENV`] when that is set.
pub fn kernel_abi() -> Result<i64, i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only queries the version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    let real = if v < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOSYS))
    } else {
        Ok(v)
    };
    match std::env::var(FORCE_ABI_ENV)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        Some(forced) if forced <= 0 => Err(libc::EOPNOTSUPP),
        Some(forced) => real.map(|r| r.min(forced)),
        None => real,
    }
}

/// The paths that get the execute right: every entry of `/`, descending only into directories
/// that contain an excluded root, so that nothing at or beneath an excluded root is granted.
/// `excluded` must be canonical; ones that do not exist exclude nothing.
pub fn grants(excluded: &[PathBuf]) -> Vec<PathBuf> {
    grants_from(Path::new("/"), excluded)
}

/// [`grants`] for the tree below `root` (tests use a temporary tree).
pub fn grants_from(root: &Path, excluded: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(root, excluded, &mut out);
    out
}

fn collect(dir: &Path, excluded: &[PathBuf], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // Only directories and regular files can hold programs. Sockets, pipes and devices
        // (and links to them, such as /dev/stdin) get no grant: Landlock refuses rules on
        // pseudo file systems, and nothing there is executed.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_dir() && !meta.is_file() {
            continue;
        }
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        // A rule follows links: judge a link by where it leads.
        let real = if is_link {
            match path.canonicalize() {
                Ok(r) => r,
                Err(_) => continue,
            }
        } else {
            path.clone()
        };
        if excluded.iter().any(|e| real.starts_with(e)) {
            continue; // at or inside a mutable root
        }
        if excluded.iter().any(|e| e.starts_with(&real)) {
            // Holds a mutable root: grant its other entries one level down. A link to such a
            // directory gets nothing; the directory is reached under its own name.
            if !is_link {
                collect(&path, excluded, out);
            }
            continue;
        }
        out.push(path);
    }
}

/// Applies the seal to the calling thread and its future children (call it in a
/// single-threaded process right before exec). Also sets `no_new_privs`, which Landlock needs.
pub fn seal(mutable_roots: &[PathBuf]) -> Result<SealStatus, SealError> {
    let abi = kernel_abi().map_err(|e| SealError::Unavailable {
        detail: std::io::Error::from_raw_os_error(e).to_string(),
    })?;
    let excluded: Vec<PathBuf> = mutable_roots
        .iter()
        .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone()))
        .collect();
    let paths = grants(&excluded);
    let apply = |step: &'static str| {
        move |e: landlock::RulesetError| SealError::Apply {
            step,
            detail: e.to_string(),
        }
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::Execute)
        .map_err(apply("handle the execute right"))?
        .create()
        .map_err(apply("create the ruleset"))?;
    let mut rules = 0;
    for path in &paths {
        // A path that vanished since it was listed, or that this user cannot open, simply gets
        // no grant: fewer grants only refuse more.
        let Ok(fd) = PathFd::new(path) else { continue };
        // Execute is a file right, valid on files and directories alike.
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, AccessFs::Execute))
            .map_err(|e| SealError::Apply {
                step: "add a rule",
                detail: format!("{}: {e}", path.display()),
            })?;
        rules += 1;
    }
    let status = ruleset
        .restrict_self()
        .map_err(apply("restrict this process"))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(SealError::NotEnforced);
    }
    Ok(SealStatus { abi, rules })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_never_cover_an_excluded_root() {
        let excluded = vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
            PathBuf::from("/dev/shm"),
        ];
        let g = grants(&excluded);
        assert!(!g.is_empty());
        for p in &g {
            for e in &excluded {
                assert!(
                    !e.starts_with(p),
                    "{} would cover {}",
                    p.display(),
                    e.display()
                );
                assert!(!p.starts_with(e), "{} lies in {}", p.display(), e.display());
            }
        }
        assert!(g.contains(&PathBuf::from("/usr")));
        assert!(g.contains(&PathBuf::from("/var/lib")) || !Path::new("/var/lib").exists());
    }

    /// Seals a child process and checks the kernel refuses an exec from the excluded root while
    /// a system binary still runs.
    #[test]
    fn sealed_child_cannot_exec_from_an_excluded_root() {
        if let Some(dir) = std::env::var_os("EXECGUARD_SEAL_EXEC_CHILD") {
            let dir = PathBuf::from(dir);
            seal(std::slice::from_ref(&dir)).expect("seal");
            let err = std::process::Command::new(dir.join("true"))
                .status()
                .unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EACCES));
            assert!(std::process::Command::new("/bin/true")
                .status()
                .unwrap()
                .success());
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy("/bin/true", dir.path().join("true")).unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::sealed_child_cannot_exec_from_an_excluded_root",
                "--nocapture",
            ])
            .env(
                "EXECGUARD_SEAL_EXEC_CHILD",
                dir.path().canonicalize().unwrap(),
            )
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn links_into_or_above_a_root_get_no_grant() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        for d in ["usr/bin", "run/user/1000", "var"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("usr/bin/tool"), b"x").unwrap();
        std::os::unix::fs::symlink(root.join("run"), root.join("var/run")).unwrap();
        std::os::unix::fs::symlink(root.join("run/user/1000"), root.join("home")).unwrap();
        std::os::unix::fs::symlink(root.join("usr/bin"), root.join("bin")).unwrap();
        let excluded = vec![root.join("run/user")];
        let mut g = grants_from(&root, &excluded);
        g.sort();
        // `var` holds only a link to `run`: Landlock judges the resolved file, so a grant on
        // `var` never reaches `run/user`.
        let want: Vec<PathBuf> = ["bin", "usr", "var"].iter().map(|p| root.join(p)).collect();
        assert_eq!(g, want);
    }

    #[test]
    fn forced_abi_zero_is_unavailable() {
        // Run in a child so the variable does not leak into other tests' processes.
        if std::env::var_os("EXECGUARD_SEAL_CHILD").is_some() {
            assert!(kernel_abi().is_err());
            match seal(&[PathBuf::from("/tmp")]) {
                Err(e @ SealError::Unavailable { .. }) => assert_eq!(e.code(), "seal_unavailable"),
                other => panic!("{other:?}"),
            }
            return;
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::forced_abi_zero_is_unavailable",
                "--nocapture",
            ])
            .env("EXECGUARD_SEAL_CHILD", "1")
            .env(FORCE_ABI_ENV, "0")
            .status()
            .unwrap();
        assert!(status.success());
    }
}
