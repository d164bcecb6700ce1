//! What a root session gives up: the capabilities that reach past the partition or leave
//! something for after the session, none of which ordinary work in a session needs. Dropped
//! from every set, the bounding set included, so that no program the session starts (root's
//! programs get the bounding set on exec) takes them back. Kept: what root's file work, its
//! own processes and its servers use (`CAP_CHOWN`, `CAP_DAC_OVERRIDE`, `CAP_FOWNER`,
//! `CAP_SETUID`, `CAP_KILL`, `CAP_NET_BIND_SERVICE`, `CAP_SYS_PTRACE`, ...).

use caps::{CapSet, Capability};

/// Grouped by what each would let a root session do.
pub const DROPPED: &[Capability] = &[
    // fanotify descriptors past the noexec binds, and the rest of the administrative calls.
    Capability::CAP_SYS_ADMIN,
    // `prctl(PR_SET_MM_EXE_FILE)`: another `/proc/self/exe`, which names a wrapper.
    Capability::CAP_CHECKPOINT_RESTORE,
    // Device nodes and file capabilities in the write set: inert inside (`nodev`, no new
    // privileges), live for every user once the session is over.
    Capability::CAP_MKNOD,
    Capability::CAP_SETFCAP,
    // Code and data into the kernel and its devices.
    Capability::CAP_SYS_MODULE,
    Capability::CAP_SYS_RAWIO,
    Capability::CAP_BPF,
    Capability::CAP_PERFMON,
    Capability::CAP_SYSLOG,
    // The host's security modules, audit, network, clock and power.
    Capability::CAP_MAC_ADMIN,
    Capability::CAP_MAC_OVERRIDE,
    Capability::CAP_AUDIT_CONTROL,
    Capability::CAP_NET_ADMIN,
    Capability::CAP_SYS_BOOT,
    Capability::CAP_SYS_TIME,
    Capability::CAP_LINUX_IMMUTABLE,
    Capability::CAP_SYS_PACCT,
    Capability::CAP_WAKE_ALARM,
    Capability::CAP_BLOCK_SUSPEND,
];

/// Drops [`DROPPED`] from the calling thread's bounding, inheritable, permitted and effective
/// sets. The bounding set first, which needs `CAP_SETPCAP` (kept); a root without it (in a
/// container that took it) keeps its bounding set, and `no_new_privs`, set with the seal,
/// keeps an exec from raising anything past the permitted set. Returns the names of those
/// that were held.
pub fn drop_for_root_session() -> Result<Vec<String>, String> {
    let err = |what: &str, e: caps::errors::CapsError| format!("{what}: {e}");
    let read = |set: CapSet| caps::read(None, set).map_err(|e| err(&format!("{set:?}"), e));
    let (mut inheritable, mut effective, mut permitted) = (
        read(CapSet::Inheritable)?,
        read(CapSet::Effective)?,
        read(CapSet::Permitted)?,
    );
    let bounding_droppable = effective.contains(&Capability::CAP_SETPCAP);
    let mut dropped = Vec::new();
    for &cap in DROPPED {
        let name = cap.to_string();
        // The bounding set is read one capability at a time (PR_CAPBSET_READ).
        let bounded = caps::has_cap(None, CapSet::Bounding, cap).map_err(|e| err(&name, e))?;
        if bounded && bounding_droppable {
            caps::drop(None, CapSet::Bounding, cap).map_err(|e| err(&name, e))?;
        }
        if bounded || permitted.contains(&cap) || inheritable.contains(&cap) {
            dropped.push(name);
        }
    }
    for (set, held) in [
        (CapSet::Inheritable, &mut inheritable),
        (CapSet::Effective, &mut effective),
        (CapSet::Permitted, &mut permitted),
    ] {
        let before = held.len();
        for cap in DROPPED {
            held.remove(cap);
        }
        if held.len() != before {
            caps::set(None, set, held).map_err(|e| err(&format!("{set:?}"), e))?;
        }
    }
    Ok(dropped)
}
