//! # The W^X seal
//!
//! Every path of a sealed session is writable or executable, never both (docs/write-set.md).
//! The kernel enforces it, for every caller, preload or not:
//!
//! 1. **Mounts** ([`namespace`], optional): inside a private mount namespace (an unprivileged
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
//!
//! One concern per file: `abi` (the kernel's Landlock ABI), `partition` (the write set, the
//! exec dirs, the `both` roots), [`mountinfo`] (the mount table and the kernel's lookup in
//! it), [`aliases`] (second names of either side), [`namespace`] (the private mount namespace
//! and its binds), `mount_calls` (the raw calls on mounts and names), `landlock` (the
//! rules and the ruleset), [`seccomp`], [`capabilities`], [`report`] (what was enforced),
//! `error` (the refusals) and `test_hooks` (test builds only); this file applies them in order.

mod abi;
pub mod aliases;
pub mod capabilities;
mod error;
pub mod fd_passing;
mod landlock;
mod mount_calls;
pub mod mountinfo;
pub mod namespace;
pub mod network;
mod partition;
mod read_only_view;
pub mod report;
pub mod seccomp;
mod test_hooks;
pub mod world;

pub use self::landlock::{
    grants, grants_from, landlock_partition, write_rights, WRITABLE_DEVICES, WRITE_RIGHTS,
};
#[cfg(any(test, feature = "test-hooks"))]
pub use abi::FORCE_ABI_ENV;
pub use abi::{kernel_abi, partition_abi, MIN_ABI};
pub use error::SealError;
pub use mount_calls::kept_flags;
pub use partition::Partition;
pub use report::{Assurance, Enforcement, LandlockReport, MountReport, RuleReport};
pub use test_hooks::test_hooks_at;
#[cfg(any(test, feature = "test-hooks"))]
pub use test_hooks::{PAUSE_ENV, REDIRECT_ENV};

use self::landlock::landlock_rules;
use execguard_policy::Reduction;
use partition::beneath;

/// How the seal is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options<'a> {
    /// Refuse memfds that could hold code (strict sessions: the guard adds `MFD_NOEXEC_SEAL`
    /// for guarded callers, the filter refuses the others).
    pub memfd_noexec: bool,
    /// Make the write set `noexec` (and the exec dirs read-only) in a private mount
    /// namespace. `Required`: refuse to start without it; `BestEffort`: say it once and
    /// report the reduction.
    pub mounts: MountsMode,
    /// The caller's reason this session is reduced (the profile that grants the workspace
    /// both rights and allows executable memfds: `development`, `build`), reported first.
    pub reduced: Option<Reduction>,
    /// The session's own world, made in the mount namespace before the partition's binds
    /// (it needs the namespace; a part that cannot be made refuses the start, whatever
    /// `mounts` says).
    pub world: Option<&'a world::World>,
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
    aliases::refuse_aliases(partition)?;
    let mut reductions = Vec::new();
    // Inside a session that made them already (a nested `execguard run`), no new namespace
    // may be made (the outer filter refuses it) and the write set is noexec already: keep
    // those. Asked only when the mounts could not all be made (also when a bind failed after
    // the write set was remounted noexec): reading the mounts costs every session's start.
    let inherited = || {
        let m = report::report(partition);
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
        MountsMode::Required => Some(namespace::isolate(partition, options.world)),
        MountsMode::BestEffort => {
            Some(namespace::probe().and_then(|()| namespace::isolate(partition, options.world)))
        }
    };
    let (namespace, failure) = match tried {
        None => (None, None),
        Some(Ok((namespace, failed))) => (Some(namespace), failed),
        Some(Err(
            e @ (SealError::NamespaceUnfinished { .. }
            | SealError::World { .. }
            | SealError::Network { .. }),
        )) => return Err(e),
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
                reductions.push(Reduction::ExecDirsNoexec);
            }
            (_, false) => {
                eprintln!("execguard: notice: the write set is not mounted noexec ({e}): the guard still refuses written objects to dlopen, LD_PRELOAD and the loader, but not a program that maps a written file executable itself (FFI mmap)");
                reductions.push(Reduction::MappingsGuardOnly);
            }
        }
    }
    // The kept audit's key is hidden only by a mount of the namespace.
    if !made && !partition.hidden.is_empty() {
        eprintln!("execguard: notice: the audit signing key is not hidden from this session (no mount namespace): its kept log's signatures do not prove it untouched by the session");
        reductions.push(Reduction::AuditKeyReadable);
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
        Some(table) => report::report_in(partition, table),
        None => report::report(partition),
    };
    if let Some(why) = options.reduced {
        reductions.insert(0, why);
    } else {
        if !partition.both.is_empty() {
            reductions.insert(0, Reduction::WorkspaceWritableAndExecutable);
        }
        if !options.memfd_noexec {
            reductions.push(Reduction::MemfdExecAllowed);
        }
    }
    // A reduced profile's workspace keeps exec on purpose: every other mount must be noexec.
    let in_both = |m: &MountReport| partition.both.iter().any(|b| beneath(&m.mount_point, b));
    if made && mounts.iter().any(|m| !m.noexec && !in_both(m)) {
        reductions.push(Reduction::WriteSetNotAllNoexec);
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
