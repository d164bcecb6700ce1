//! # The W^X seal
//!
//! Every path of a sealed session is writable or executable, never both (docs/write-set.md).
//! The kernel enforces it, for every caller, preload or not:
//!
//! 1. **Mounts** ([`mounts`], optional): inside a private mount namespace (an unprivileged
//!    user namespace for a non-root user, uid and gid mapped to themselves), every mount of
//!    the write set is bind-mounted `noexec,nosuid` (and `nodev` outside `/dev`), and the exec
//!    dirs read-only. `noexec` is the only control that also refuses `mmap(PROT_EXEC)`, so the
//!    loader, `dlopen` and FFI cannot map a written file as code.
//! 2. **Landlock** ([`landlock_partition`]): the ruleset handles `EXECUTE` and the write rights
//!    (see [`WRITE_RIGHTS`]); execute is granted only outside the write set and on the exec
//!    dirs, the write rights only beneath the write set (and `/dev`). `REFER` is granted on the
//!    write set, so renames and hard links across its directories work.
//! 3. **Seccomp** ([`seccomp`]): no executable memfds, no new namespaces, no mount calls (the
//!    session cannot undo step 1), no kernel modules.
//!
//! Every step that cannot be applied is a typed [`SealError`]; the caller refuses to start.
//! What was applied is returned as an [`Enforcement`] report, built from what the kernel
//! accepted.

pub mod capabilities;
pub mod mounts;
pub mod report;
pub mod seccomp;

pub use report::{Assurance, Enforcement, LandlockReport, MountReport, RuleReport};

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Test hook: an ABI version to report instead of the kernel's, only ever lower (so it can
/// simulate an old kernel or one without Landlock, never grant anything). Compiled only into
/// test builds (`cfg(test)` or the `test-hooks` feature, which only dev-dependencies enable).
#[cfg(any(test, feature = "test-hooks"))]
pub const FORCE_ABI_ENV: &str = "EXECGUARD_TEST_LANDLOCK_ABI";

/// The lowest Landlock ABI the partition needs: ABI 2 adds `REFER`, without which a handled
/// ruleset refuses every rename and hard link across directories (`EXDEV`).
pub const MIN_ABI: i64 = 2;

/// The write rights the partition handles, each where the kernel's ABI has it. `ResolveUnix`
/// (ABI 9) is left unhandled: connecting to a socket writes no file.
pub fn write_rights(abi: i64) -> BitFlags<AccessFs> {
    let all = AccessFs::WriteFile
        | AccessFs::RemoveDir
        | AccessFs::RemoveFile
        | AccessFs::MakeChar
        | AccessFs::MakeDir
        | AccessFs::MakeReg
        | AccessFs::MakeSock
        | AccessFs::MakeFifo
        | AccessFs::MakeBlock
        | AccessFs::MakeSym
        | AccessFs::Refer
        | AccessFs::Truncate
        | AccessFs::IoctlDev;
    all & AccessFs::from_all(abi_of(abi))
}

/// For the documentation of the report: every write right the partition may handle.
pub const WRITE_RIGHTS: &[&str] = &[
    "write_file",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
];

/// The device files a session may write (`/dev/pts` with every terminal beneath it). Other
/// devices are read-only in a session: a disk or `/dev/mem` written would change programs.
pub const WRITABLE_DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

fn abi_of(abi: i64) -> ABI {
    ABI::from(i32::try_from(abi).unwrap_or(i32::MAX))
}

/// Why the seal could not be applied. Every variant is a refusal to start (exit 2).
#[derive(Debug)]
#[non_exhaustive]
pub enum SealError {
    /// The kernel offers no Landlock, or one too old for the partition.
    Unavailable { detail: String },
    /// Building or applying the ruleset failed.
    Apply { step: &'static str, detail: String },
    /// The kernel accepted the ruleset but does not enforce all of it.
    NotEnforced,
    /// The seccomp filter could not be built or installed.
    Seccomp { detail: String },
    /// The `noexec` mounts were required and could not be made.
    Noexec { detail: String },
    /// A user namespace was entered and could not be finished (its ids mapped, its mounts
    /// made a slave of the parent's): this process cannot leave it, so it only exits.
    NamespaceUnfinished { detail: String },
    /// Part of the write set is also reachable by a name outside it ([`mounts::aliases`]).
    WriteSetAliased { root: PathBuf, name: PathBuf },
    /// An exec dir is also reachable on the write side, or shows write-set content.
    ExecDirAliased { dir: PathBuf, name: PathBuf },
    /// A second name that cannot join the write set, or cannot be ruled out.
    AliasUnresolved { why: String },
}

impl SealError {
    /// Stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            SealError::Unavailable { .. } => "seal_unavailable",
            SealError::Apply { .. } => "seal_failed",
            SealError::NotEnforced => "seal_not_enforced",
            SealError::Seccomp { .. } => "seccomp_failed",
            SealError::Noexec { .. } | SealError::NamespaceUnfinished { .. } => {
                "noexec_unavailable"
            }
            SealError::WriteSetAliased { .. } => "write_set_aliased",
            SealError::ExecDirAliased { .. } => "exec_dir_aliased",
            SealError::AliasUnresolved { .. } => "write_set_aliased",
        }
    }
}

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let code = self.code();
        match self {
            SealError::Unavailable { detail } => {
                write!(
                    f,
                    "{code}: the kernel cannot enforce the W^X partition: {detail}"
                )
            }
            SealError::Apply { step, detail } => write!(f, "{code}: failed to {step}: {detail}"),
            SealError::NotEnforced => write!(
                f,
                "{code}: the kernel did not enforce every handled Landlock right"
            ),
            SealError::Seccomp { detail } => write!(f, "{code}: {detail}"),
            SealError::Noexec { detail } => write!(f, "{code}: {detail}"),
            SealError::NamespaceUnfinished { detail } => write!(
                f,
                "{code}: {detail} (in the session's new user namespace, which this process cannot leave)"
            ),
            SealError::WriteSetAliased { root, name } => write!(
                f,
                "{code}: {} is also reachable as {} (another mount shows the same files), where what the session writes would run; add that name to mutable_roots, or unmount it",
                root.display(),
                name.display()
            ),
            SealError::ExecDirAliased { dir, name } => write!(
                f,
                "{code}: the exec dir {} is also reachable as {} (another mount shows the same files), which the session writes; unmount that, or leave the exec dir out (execguard run: --no-exec-dir), when nothing there needs to run",
                dir.display(),
                name.display()
            ),
            SealError::AliasUnresolved { why } => write!(
                f,
                "{code}: {why}: a file the session writes might run by another name; unmount it"
            ),
        }
    }
}

impl std::error::Error for SealError {}

/// The kernel's Landlock ABI version (`Err(errno)` when there is none); in test builds,
/// lowered by [`FORCE_ABI_ENV`] when that is set.
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
    #[cfg(any(test, feature = "test-hooks"))]
    if let Some(forced) = std::env::var(FORCE_ABI_ENV)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        return if forced <= 0 {
            Err(libc::EOPNOTSUPP)
        } else {
            real.map(|r| r.min(forced))
        };
    }
    real
}

/// The kernel's ABI when it is enough for the partition, else the typed refusal.
pub fn partition_abi() -> Result<i64, SealError> {
    match kernel_abi() {
        Ok(abi) if abi >= MIN_ABI => Ok(abi),
        Ok(abi) => Err(SealError::Unavailable {
            detail: format!(
                "Landlock ABI {abi} has no REFER right (ABI {MIN_ABI}, Linux 5.19): renames across directories would fail"
            ),
        }),
        Err(errno) => Err(SealError::Unavailable {
            detail: format!(
                "no Landlock ({})",
                std::io::Error::from_raw_os_error(errno)
            ),
        }),
    }
}

/// The session's partition of the file system (docs/write-set.md). Paths are canonical.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partition {
    /// Where the session may write and never execute. `/dev` is always added.
    pub write_set: Vec<PathBuf>,
    /// Directories inside the write set that stay executable and become read-only.
    pub exec_dirs: Vec<PathBuf>,
    /// Write-set roots granted both rights: the workspace of the `development` and `build`
    /// profiles (reduced assurance, reported).
    pub both: Vec<PathBuf>,
}

fn realpath(p: &Path) -> Option<PathBuf> {
    p.canonicalize().ok()
}

/// Adds `p`, by its canonical name when it has one, unless it is there already.
fn add_unique(list: &mut Vec<PathBuf>, p: PathBuf, canonical: &dyn Fn(&Path) -> Option<PathBuf>) {
    let p = canonical(&p).unwrap_or(p);
    if !list.contains(&p) {
        list.push(p);
    }
}

impl Partition {
    /// A partition with these write-set roots (canonicalised when they exist) and `/dev`.
    pub fn new(write_set: impl IntoIterator<Item = PathBuf>) -> Self {
        Self::resolved(write_set, [], [], &realpath)
    }

    /// A partition whose names are resolved by `canonical`: the CLI's, which answers for a
    /// name what it answered when the CLI checked it. Resolved again later, a name could lead
    /// elsewhere by then (another session can put a link where a directory of `$HOME` or the
    /// workspace's parent was), and the partition would follow it: the workspace's write grant
    /// onto an exec dir, say.
    pub fn resolved(
        write_set: impl IntoIterator<Item = PathBuf>,
        exec_dirs: impl IntoIterator<Item = PathBuf>,
        both: impl IntoIterator<Item = PathBuf>,
        canonical: &dyn Fn(&Path) -> Option<PathBuf>,
    ) -> Self {
        let mut p = Partition::default();
        for root in write_set.into_iter().chain([PathBuf::from("/dev")]) {
            add_unique(&mut p.write_set, root, canonical);
        }
        for d in exec_dirs {
            add_unique(&mut p.exec_dirs, d, canonical);
        }
        for d in both {
            add_unique(&mut p.both, d, canonical);
        }
        p
    }

    pub fn with_exec_dirs(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        for d in dirs {
            add_unique(&mut self.exec_dirs, d, &realpath);
        }
        self
    }

    pub fn with_both(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        for d in dirs {
            add_unique(&mut self.both, d, &realpath);
        }
        self
    }

    /// Is `path` (canonical) in the write set?
    pub fn in_write_set(&self, path: &Path) -> bool {
        self.write_set.iter().any(|r| beneath(path, r))
    }
}

/// Is `path` `root` or beneath it? Both are canonical, as everything this crate compares is
/// (the partition's roots, the kernel's mount points, the entries listed beneath them), so the
/// engine's byte comparison answers, where `Path::starts_with` would parse every component of
/// both (a cost that showed in every session's start).
pub(crate) fn beneath(path: &Path, root: &Path) -> bool {
    let root = root.as_os_str().as_bytes();
    root == b"/" || execguard_policy::path::is_under(path.as_os_str().as_bytes(), root)
}

/// How the seal is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Refuse memfds that could hold code (strict sessions: the guard adds `MFD_NOEXEC_SEAL`
    /// for guarded callers, the filter refuses the others).
    pub memfd_noexec: bool,
    /// Make the write set `noexec` (and the exec dirs read-only) in a private mount
    /// namespace. `Required`: refuse to start without it; `BestEffort`: say it once and
    /// report the reduction.
    pub mounts: MountsMode,
    /// The caller's reason this session is reduced (the profile that grants the workspace
    /// both rights and allows executable memfds: `development`, `build`), reported first.
    pub reduced: Option<&'static str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MountsMode {
    Off,
    BestEffort,
    Required,
}

/// Applies the whole seal to the calling process and its future children, in order: mounts,
/// Landlock, seccomp (call it in a single-threaded process right before exec). Also sets
/// `no_new_privs`, which both Landlock and seccomp need.
pub fn seal(partition: &Partition, options: &Options) -> Result<Enforcement, SealError> {
    let abi = partition_abi()?;
    // Every layer goes by name: a second name of either side would undo the partition.
    mounts::refuse_aliases(partition)?;
    let mut reductions = Vec::new();
    // Inside a session that made them already (a nested `execguard run`), no new namespace
    // may be made (the outer filter refuses it) and the write set is noexec already: keep
    // those. Asked only when the mounts could not all be made (also when a bind failed after
    // the write set was remounted noexec): reading the mounts costs every session's start.
    let inherited = || {
        let m = mounts::report(partition);
        !m.is_empty() && m.iter().all(|m| m.noexec)
    };
    // A user namespace cannot be left once entered, and a kernel or LSM may refuse part of it
    // (Ubuntu's restricted user namespaces): that process can only exit. A required namespace
    // is tried here directly, since without it the session is refused anyway. One that may be
    // done without is tried in a child first (`probe`, about 0.3 ms of CPU), so that the
    // session can go on without it. A bind that fails after that leaves the mounts made so
    // far, which only take exec or writes away: the namespace is kept (and reported
    // incomplete), but counts as not made.
    let tried = match options.mounts {
        MountsMode::Off => None,
        MountsMode::Required => Some(mounts::isolate(partition)),
        MountsMode::BestEffort => Some(mounts::probe().and_then(|()| mounts::isolate(partition))),
    };
    let (namespace, failure) = match tried {
        None => (None, None),
        Some(Ok((namespace, failed))) => (Some(namespace), failed),
        Some(Err(e @ SealError::NamespaceUnfinished { .. })) => return Err(e),
        Some(Err(e)) => (None, Some(e)),
    };
    let made = namespace.is_some() && failure.is_none();
    if let Some(e) = failure {
        // Read once: the whole write set noexec already?
        match (namespace.is_some(), inherited()) {
            // A nested session: the outer mounts hold, and its exec dirs work.
            (false, true) => {}
            _ if options.mounts == MountsMode::Required => return Err(e),
            // Half made after the noexec pass: mappings are refused, but the exec dirs not
            // made read-only yet are noexec with their roots, so their programs do not run.
            (true, true) => {
                eprintln!("execguard: notice: the exec dirs are not all mounted executable ({e}): programs in them may not run in this session");
                reductions.push("exec_dirs_noexec".to_string());
            }
            (_, false) => {
                eprintln!("execguard: notice: the write set is not mounted noexec ({e}): the guard still refuses written objects to dlopen, LD_PRELOAD and the loader, but not a program that maps a written file executable itself (FFI mmap)");
                reductions.push("mappings_guard_only".to_string());
            }
        }
    }
    // Only a namespace with all its mounts keeps the exec dirs read-only by mount.
    let landlock = landlock_rules(partition, abi, made)?;
    // After the mounts, which need CAP_SYS_ADMIN; before seccomp, which refuses nothing here.
    // SAFETY: geteuid takes no arguments and cannot fail.
    let capabilities_dropped = if unsafe { libc::geteuid() } == 0 {
        capabilities::drop_for_root_session().map_err(|detail| SealError::Apply {
            step: "drop a root session's capabilities",
            detail,
        })?
    } else {
        Vec::new()
    };
    let seccomp = seccomp::install(options.memfd_noexec)?;
    let mounts = match namespace.as_ref().and_then(|n| n.table.as_ref()) {
        Some(table) => mounts::report_in(partition, table),
        None => mounts::report(partition),
    };
    if let Some(why) = options.reduced {
        reductions.insert(0, why.to_string());
    } else {
        if !partition.both.is_empty() {
            reductions.insert(0, "workspace_writable_and_executable".to_string());
        }
        if !options.memfd_noexec {
            reductions.push("memfd_exec_allowed".to_string());
        }
    }
    // A reduced profile's workspace keeps exec on purpose: every other mount must be noexec.
    let in_both = |m: &MountReport| partition.both.iter().any(|b| beneath(&m.mount_point, b));
    if made && mounts.iter().any(|m| !m.noexec && !in_both(m)) {
        reductions.push("write_set_not_all_noexec".to_string());
    }
    Ok(Enforcement {
        landlock,
        seccomp,
        capabilities_dropped,
        namespace,
        mounts,
        assurance: Assurance::from_reductions(reductions),
    })
}

/// Applies only the Landlock half of the partition (tests, and callers that make their own
/// mounts). `mounts_protect_exec_dirs`: the exec dirs are read-only mounts already, so the
/// write rights can be granted on whole write-set roots.
pub fn landlock_partition(
    partition: &Partition,
    mounts_protect_exec_dirs: bool,
) -> Result<LandlockReport, SealError> {
    let abi = partition_abi()?;
    landlock_rules(partition, abi, mounts_protect_exec_dirs)
}

/// One rule to add: a path and what it is granted.
struct Grant {
    path: PathBuf,
    access: BitFlags<AccessFs>,
    side: &'static str,
}

/// The rules of the partition, before they meet the kernel (tests read them).
fn plan(partition: &Partition, abi: i64, mounts_protect_exec_dirs: bool) -> Vec<Grant> {
    let write = write_rights(abi);
    let file_rights = AccessFs::from_file(abi_of(abi));
    let mut out = Vec::new();
    // Execute: everything outside the write set (a file root, the audit log, included: a
    // file the session writes is never executable, wherever it lies), plus the exec dirs.
    for path in grants(&partition.write_set) {
        out.push(Grant {
            path,
            access: AccessFs::Execute.into(),
            side: "execute",
        });
    }
    for dir in &partition.exec_dirs {
        out.push(Grant {
            path: dir.clone(),
            access: AccessFs::Execute.into(),
            side: "exec_dir",
        });
    }
    // Write: beneath the write set. Landlock rights are inherited down the tree, so a root
    // holding an exec dir is granted branch by branch around it, unless a read-only mount
    // protects the exec dir already.
    for root in &partition.write_set {
        let inner: Vec<PathBuf> = partition
            .exec_dirs
            .iter()
            .filter(|e| beneath(e, root))
            .cloned()
            .collect();
        if root == Path::new("/dev") {
            // The devices a session writes, and no others: a writable disk (root may write
            // /dev/vda) would rewrite programs outside the write set. Never made or removed
            // (/dev/shm, its own root, keeps every right).
            for dev in WRITABLE_DEVICES {
                out.push(Grant {
                    path: PathBuf::from(dev),
                    access: write & file_rights,
                    side: "write",
                });
            }
            continue;
        }
        if root.is_file() {
            // A file root takes only file rights.
            out.push(Grant {
                path: root.clone(),
                access: write & file_rights,
                side: "write",
            });
            continue;
        }
        if inner.is_empty() || mounts_protect_exec_dirs {
            out.push(Grant {
                path: root.clone(),
                access: write,
                side: "write",
            });
            continue;
        }
        for path in write_grants_around(root, &inner) {
            let access = if path.is_dir() {
                write
            } else {
                write & file_rights
            };
            out.push(Grant {
                path,
                access,
                side: "write",
            });
        }
    }
    for dir in &partition.both {
        out.push(Grant {
            path: dir.clone(),
            access: write | AccessFs::Execute,
            side: "both",
        });
    }
    out
}

fn landlock_rules(
    partition: &Partition,
    abi: i64,
    mounts_protect_exec_dirs: bool,
) -> Result<LandlockReport, SealError> {
    let apply = |step: &'static str| {
        move |e: landlock::RulesetError| SealError::Apply {
            step,
            detail: e.to_string(),
        }
    };
    let handled = write_rights(abi) | AccessFs::Execute;
    // Every handled right is one this ABI has (write_rights is cut to it): demand them all, so
    // the kernel enforces exactly what the report lists.
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(apply("handle the execute and write rights"))?;
    // ABI 6: the session can neither signal processes outside it (the supervisor that
    // quarantines a strict session's repository when it ends, the operator's own programs)
    // nor connect to their abstract UNIX sockets.
    let scoped = abi >= 6;
    if scoped {
        ruleset = ruleset
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(apply("scope signals and abstract sockets"))?;
    }
    let mut ruleset = ruleset.create().map_err(apply("create the ruleset"))?;
    let mut rules = Vec::new();
    let grants = plan(partition, abi, mounts_protect_exec_dirs);
    test_hooks_at("rules");
    for grant in grants {
        // A path that does not exist (yet), vanished since it was listed, or that this user
        // cannot open gets no rule: Landlock then grants it nothing, neither write nor execute.
        // Only the execute side's entries outside the write set (`/bin`) are followed through
        // links: a name in the write set that leads through one now was a directory a moment
        // ago, replaced by another process, and its grant would land where the link points.
        let Ok(fd) = open_path(&grant.path, grant.side == "execute") else {
            continue;
        };
        // With the namespace made, what a write grant reaches lies on a mount made noexec, and
        // an exec dir on a read-only one. A name that leads elsewhere by now (another session
        // moved a directory of its own into its place after the binds) refuses the start.
        if mounts_protect_exec_dirs {
            let want = match grant.side {
                // A reduced profile's workspace keeps exec on purpose.
                "write" if partition.both.iter().any(|b| beneath(&grant.path, b)) => None,
                "write" => Some((libc::ST_NOEXEC, "noexec")),
                "exec_dir" => Some((libc::ST_RDONLY, "read-only")),
                _ => None,
            };
            if let Some((flag, what)) = want {
                if mounts::flags_of(&fd).is_none_or(|f| f & flag == 0) {
                    return Err(SealError::Noexec {
                        detail: format!(
                            "{}: not on a {what} mount any more (a directory was moved into its place while the session was sealed); start the session again",
                            grant.path.display()
                        ),
                    });
                }
            }
        }
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, grant.access))
            .map_err(|e| SealError::Apply {
                step: "add a rule",
                detail: format!("{}: {e}", grant.path.display()),
            })?;
        rules.push(RuleReport {
            path: grant.path,
            side: grant.side,
        });
    }
    let status = ruleset
        .restrict_self()
        .map_err(apply("restrict this process"))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(SealError::NotEnforced);
    }
    Ok(LandlockReport {
        abi,
        handled: report::right_names(handled),
        scoped: if scoped {
            vec!["signal", "abstract_unix_socket"]
        } else {
            Vec::new()
        },
        exec_dirs_read_only_by: if partition.exec_dirs.is_empty() {
            "none"
        } else if mounts_protect_exec_dirs {
            "read_only_mount"
        } else {
            "landlock_split"
        },
        rules,
    })
}

/// Test hook, `STEP:DIR:TARGET`: at `STEP` of a session's start (`partition`: in the CLI, after
/// its checks, before the partition is built; `noexec`: right after the mount table is read
/// for the `noexec` pass; `rules`: after the Landlock grants are listed, before they are
/// opened), move `DIR` aside (to `DIR-moved`) and put a symlink to `TARGET` in its place
/// (`=SOURCE` for `TARGET`: the directory `SOURCE` moved there), as another process writing
/// the same directory could at that moment (test builds only).
#[cfg(any(test, feature = "test-hooks"))]
pub const REDIRECT_ENV: &str = "EXECGUARD_TEST_REDIRECT";

/// The test hooks (`EXECGUARD_TEST_PAUSE`, then `EXECGUARD_TEST_REDIRECT`) at `step`; does nothing outside
/// test builds (callers outside this crate need not know which build they are in).
pub fn test_hooks_at(step: &str) {
    #[cfg(not(any(test, feature = "test-hooks")))]
    let _ = step;
    #[cfg(any(test, feature = "test-hooks"))]
    run_test_hooks(step);
}

/// Test hook, `STEP:FILE`: at `STEP` (as for [`REDIRECT_ENV`]), create `FILE.ready` and wait
/// until `FILE` exists (10 s at most), so that a test can change names from outside the
/// session's namespace at that moment, as another session would (test builds only).
#[cfg(any(test, feature = "test-hooks"))]
pub const PAUSE_ENV: &str = "EXECGUARD_TEST_PAUSE";

#[cfg(any(test, feature = "test-hooks"))]
fn run_test_hooks(step: &str) {
    if let Some((at, file)) = std::env::var(PAUSE_ENV)
        .ok()
        .as_deref()
        .and_then(|v| v.split_once(':'))
        .filter(|(at, _)| *at == step)
        .map(|(at, f)| (at.to_string(), f.to_string()))
    {
        std::fs::write(format!("{file}.ready"), at)
            .unwrap_or_else(|e| panic!("{PAUSE_ENV}: {file}.ready: {e}"));
        for _ in 0..1000 {
            if Path::new(&file).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let Ok(value) = std::env::var(REDIRECT_ENV) else {
        return;
    };
    let mut parts = value.splitn(3, ':');
    let (Some(at), Some(dir), Some(target)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{REDIRECT_ENV}={value}: want STEP:DIR:TARGET");
    };
    if at == step {
        std::fs::rename(dir, format!("{dir}-moved"))
            .and_then(|()| match target.strip_prefix('=') {
                Some(source) => std::fs::rename(source, dir),
                None => std::os::unix::fs::symlink(target, dir),
            })
            .unwrap_or_else(|e| panic!("{REDIRECT_ENV}={value}: {e}"));
    }
}

/// `path` opened `O_PATH`: through symlinks when `follow`, else only when none of its
/// components is one (`openat2` with `RESOLVE_NO_SYMLINKS`).
fn open_path(path: &Path, follow: bool) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    // struct open_how { flags, mode, resolve }
    let how: [u64; 3] = [
        (libc::O_PATH | libc::O_CLOEXEC) as u64,
        0,
        if follow { 0 } else { RESOLVE_NO_SYMLINKS },
    ];
    // SAFETY: `c` is NUL-terminated and `how` is a readable open_how of the size passed; both
    // outlive the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            how.as_ptr(),
            std::mem::size_of_val(&how),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just opened here and nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// The paths that get the execute right: every entry of `/`, descending only into directories
/// that contain an excluded root, so that nothing at or beneath an excluded root is granted.
/// `excluded` must be canonical; ones that do not exist exclude nothing they could hold, and
/// their parents are still descended (a root created later gets no grant).
pub fn grants(excluded: &[PathBuf]) -> Vec<PathBuf> {
    grants_from(Path::new("/"), excluded)
}

/// [`grants`] for the tree below `root` (tests use a temporary tree).
pub fn grants_from(root: &Path, excluded: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(root, excluded, None, &mut out);
    out
}

/// The write grants beneath `root` that leave out the `exec_dirs` inside it: its entries,
/// descending into those that hold an exec dir. Links are never followed out: an entry is
/// granted only when it really lies in `root`, and a link gets nothing (its target inside the
/// root is granted under its own name).
fn write_grants_around(root: &Path, exec_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(root, exec_dirs, Some(root), &mut out);
    out
}

fn collect(dir: &Path, excluded: &[PathBuf], inside: Option<&Path>, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let is_link = kind.is_symlink();
        if is_link && inside.is_some() {
            continue;
        }
        // Only directories and regular files can hold programs. Sockets, pipes and devices
        // (and links to them, such as /dev/stdin) get no grant: Landlock refuses rules on
        // pseudo file systems, and nothing there is executed. The entry's type says what it
        // is; a link is judged by what it leads to.
        let holds_programs = |t: std::fs::FileType| t.is_dir() || t.is_file();
        let kind_ok = if is_link {
            std::fs::metadata(&path).is_ok_and(|m| holds_programs(m.file_type()))
        } else {
            holds_programs(kind)
        };
        if !kind_ok {
            continue;
        }
        // A rule follows links: judge a link by where it leads.
        let real = if is_link {
            match path.canonicalize() {
                Ok(r) => r,
                Err(_) => continue,
            }
        } else {
            path.clone()
        };
        if excluded.iter().any(|e| beneath(&real, e)) {
            continue; // at or inside an excluded root
        }
        if excluded.iter().any(|e| beneath(e, &real)) {
            // Holds an excluded root: grant its other entries one level down. A link to such
            // a directory gets nothing; the directory is reached under its own name.
            if !is_link {
                collect(&path, excluded, inside, out);
            }
            continue;
        }
        out.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_never_cover_an_excluded_root() {
        let excluded = vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
            PathBuf::from("/dev"),
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

    /// A write-set root holding an exec dir: its other branches get the write rights, the
    /// branch to the exec dir only its siblings, and links never lead the grant out.
    #[test]
    fn write_grants_go_around_exec_dirs_and_never_follow_links() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        for d in [
            ".cargo/bin",
            ".cargo/registry",
            "src",
            ".local/bin",
            ".local/share",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".gitconfig"), b"").unwrap();
        std::os::unix::fs::symlink("/usr", home.join("usr-link")).unwrap();
        std::os::unix::fs::symlink(home.join(".cargo/bin"), home.join("bin-link")).unwrap();
        let exec = vec![home.join(".cargo/bin"), home.join(".local/bin")];
        let mut g = write_grants_around(&home, &exec);
        g.sort();
        let want: Vec<PathBuf> = [".cargo/registry", ".gitconfig", ".local/share", "src"]
            .iter()
            .map(|p| home.join(p))
            .collect();
        assert_eq!(g, want);
    }

    /// The plan, side by side: the exec dirs get execute only, the write set write only (and
    /// the roots holding an exec dir are split unless a read-only mount protects it), the
    /// `both` dirs both; no execute grant covers the write set.
    #[test]
    fn the_plan_keeps_the_two_sides_apart() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::create_dir_all(home.join("ws")).unwrap();
        std::fs::create_dir_all(home.join("notes")).unwrap();
        let p = Partition::new([home.clone(), PathBuf::from("/tmp")])
            .with_exec_dirs([home.join(".cargo/bin")]);
        let exec: BitFlags<AccessFs> = AccessFs::Execute.into();
        for split in [false, true] {
            let plan = plan(&p, 7, !split);
            for g in &plan {
                let in_w = p.in_write_set(&g.path);
                match g.side {
                    "execute" => {
                        assert_eq!(g.access, exec);
                        assert!(!in_w, "{}", g.path.display());
                        assert!(!p.write_set.iter().any(|r| r.starts_with(&g.path)));
                    }
                    "exec_dir" => assert_eq!(g.access, exec),
                    "write" => {
                        assert!(in_w, "{}", g.path.display());
                        assert!(!g.access.contains(AccessFs::Execute));
                        if g.path.starts_with("/dev") && !g.path.starts_with("/dev/shm") {
                            assert!(WRITABLE_DEVICES.contains(&g.path.to_str().unwrap()));
                            assert!(!g.access.contains(AccessFs::MakeReg));
                            assert!(g.access.contains(AccessFs::WriteFile));
                        } else if g.path.is_dir() {
                            assert!(g.access.contains(AccessFs::Refer));
                        }
                    }
                    other => panic!("{other}"),
                }
            }
            let home_rule = plan.iter().any(|g| g.side == "write" && g.path == home);
            assert_eq!(home_rule, !split, "split = {split}");
            if split {
                assert!(plan
                    .iter()
                    .any(|g| g.side == "write" && g.path == home.join("notes")));
                assert!(!plan
                    .iter()
                    .any(|g| g.side == "write" && g.path.starts_with(home.join(".cargo/bin"))));
            }
            assert!(plan
                .iter()
                .any(|g| g.side == "write" && g.path == Path::new("/dev/null")));
            assert!(!plan
                .iter()
                .any(|g| g.side == "write" && g.path == Path::new("/dev")));
        }
        // A file root outside every directory root (the audit log): file write rights, and
        // no execute grant at or above it.
        let outside = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let log = outside.path().canonicalize().unwrap().join("audit.jsonl");
        std::fs::write(&log, b"").unwrap();
        let mut with_log = p.clone();
        with_log.write_set.push(log.clone());
        let plan_log = plan(&with_log, 7, true);
        let g = plan_log
            .iter()
            .find(|g| g.side == "write" && g.path == log)
            .unwrap();
        assert!(g.access.contains(AccessFs::WriteFile) && !g.access.contains(AccessFs::Execute));
        assert!(!plan_log
            .iter()
            .any(|g| g.access.contains(AccessFs::Execute) && log.starts_with(&g.path)));
        let dev = p.clone().with_both([home.join("ws")]);
        let plan = plan(&dev, 7, true);
        let ws = plan.iter().find(|g| g.side == "both").unwrap();
        assert!(ws.access.contains(AccessFs::Execute) && ws.access.contains(AccessFs::WriteFile));
    }

    #[test]
    fn write_rights_follow_the_abi() {
        assert!(!write_rights(2).contains(AccessFs::Truncate));
        assert!(write_rights(2).contains(AccessFs::Refer));
        assert!(write_rights(3).contains(AccessFs::Truncate));
        assert!(!write_rights(4).contains(AccessFs::IoctlDev));
        assert!(write_rights(5).contains(AccessFs::IoctlDev));
        assert!(!write_rights(9).contains(AccessFs::ResolveUnix));
        assert!(!write_rights(7).contains(AccessFs::Execute));
    }

    #[test]
    fn forced_abi_below_two_is_unavailable() {
        // Run in a child so the variable does not leak into other tests' processes.
        if let Some(abi) = std::env::var_os("EXECGUARD_SEAL_CHILD") {
            let want_err = abi == "0";
            assert_eq!(kernel_abi().is_err(), want_err);
            match partition_abi() {
                Err(e @ SealError::Unavailable { .. }) => assert_eq!(e.code(), "seal_unavailable"),
                other => panic!("{other:?}"),
            }
            return;
        }
        for abi in ["0", "1"] {
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "tests::forced_abi_below_two_is_unavailable",
                    "--nocapture",
                ])
                .env("EXECGUARD_SEAL_CHILD", abi)
                .env(FORCE_ABI_ENV, abi)
                .status()
                .unwrap();
            assert!(status.success(), "forced ABI {abi}");
        }
    }
}
