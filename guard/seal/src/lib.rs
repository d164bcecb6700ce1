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
//! One concern per file; this file applies them in order ([`seal`]):
//!
//! | file | what it owns |
//! |------|--------------|
//! | `abi` | the kernel's Landlock ABI, and whether it is enough for the partition |
//! | `partition` | the write set, the exec dirs, the `both` roots, the hidden dirs |
//! | [`mountinfo`] | the mount table, and the kernel's lookup of the mount a path reaches |
//! | [`aliases`] | second names of either side of the partition |
//! | `mounts_step` | the namespace as [`MountsMode`] asks, or the reduction a session goes on at without it |
//! | [`namespace`] | the private mount namespace and the partition's binds in it |
//! | `read_only_view` | every mount outside the write set, read-only in the namespace |
//! | [`world`] | the session's own world: home layer, temp dirs, hidden sockets |
//! | [`network`] | the session's own network namespace and its listeners |
//! | [`fd_passing`] | the one `SCM_RIGHTS` sender and receiver |
//! | `mount_calls` | the raw calls on mounts and names |
//! | `landlock` | the Landlock rules and the ruleset |
//! | [`seccomp`] | the session's seccomp filter |
//! | [`capabilities`] | what a root session gives up |
//! | [`report`] | what was enforced |
//! | `error` | the refusals ([`SealError`]) |
//! | [`sys`] | the seam to the kernel ([`SealSys`]) and its recording double |
//! | `test_hooks` | the process-level tests' answers of that seam (test builds only) |

mod abi;
pub mod aliases;
pub mod capabilities;
mod error;
pub mod fd_passing;
mod landlock;
mod mount_calls;
pub mod mountinfo;
mod mounts_step;
pub mod namespace;
pub mod network;
mod partition;
mod read_only_view;
pub mod report;
pub mod seccomp;
pub mod sys;
#[cfg(feature = "test-hooks")]
mod test_hooks;
pub mod world;

pub use self::landlock::{
    grants, grants_from, landlock_partition, write_rights, WRITABLE_DEVICES, WRITE_RIGHTS,
};
pub use abi::{kernel_abi, partition_abi, MIN_ABI};
pub use error::SealError;
pub use mount_calls::kept_flags;
pub use partition::Partition;
pub use report::{Assurance, Enforcement, LandlockReport, MountReport, RuleReport};
pub use sys::{SealSys, Step};

use self::landlock::landlock_rules;
use execguard_policy::Reduction;
use mounts_step::Mounts;
use partition::beneath;

/// The seam ([`SealSys`]) this build's seal goes through: the kernel's ([`sys::LinuxSealSys`]);
/// in a test build (the `test-hooks` feature, which only dev-dependencies enable), the kernel's
/// as the test hooks change them (`test_hooks::HookedSealSys`).
pub fn host_sys() -> &'static dyn SealSys {
    #[cfg(feature = "test-hooks")]
    return &test_hooks::HookedSealSys;
    #[cfg(not(feature = "test-hooks"))]
    &sys::LinuxSealSys
}

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
pub fn seal(
    sys: &dyn SealSys,
    partition: &Partition,
    options: &Options,
) -> Result<Enforcement, SealError> {
    let abi = partition_abi(sys)?;
    // Every layer goes by name: a second name of either side would undo the partition.
    aliases::refuse_aliases(partition)?;
    let Mounts {
        namespace,
        made,
        mut reductions,
    } = mounts_step::mounts(sys, partition, options)?;
    // Only a namespace with all its mounts keeps the exec dirs read-only by mount.
    let landlock = landlock_rules(sys, partition, abi, made)?;
    // After the mounts, which need CAP_SYS_ADMIN; before seccomp, which refuses nothing here.
    let capabilities_dropped = if sys.ids().0 == 0 {
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
