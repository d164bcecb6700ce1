//! The session's seccomp filter, installed after the Landlock ruleset (with `no_new_privs`).
//! Built with `seccompiler`; no hand-written BPF.
//!
//! | system call | answer |
//! | --- | --- |
//! | `memfd_create` without `MFD_NOEXEC_SEAL`, or with `MFD_EXEC` (strict sessions) | `EPERM` |
//! | `unshare`, `clone` with any `CLONE_NEW*` flag | `EPERM` |
//! | `clone3` | `ENOSYS`: libc falls back to `clone`, whose flags the filter can read |
//! | `setns` | `EPERM` |
//! | the mount family: `mount`, `umount2`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `move_mount`, `open_tree`, `mount_setattr`, `pivot_root` | `EPERM` |
//! | `init_module`, `finit_module`, `kexec_load`, `kexec_file_load`, `bpf` (code into the kernel) | `EPERM` |
//! | `open_by_handle_at`, `fanotify_init` (descriptors that bypass the session's mounts) | `EPERM` |
//!
//! Numbers and arguments are compared as the kernel reads them: the syscall number is the
//! 32-bit `seccomp_data.nr`, flag arguments their low 32 bits (`Dword`). On x86_64 each rule
//! is repeated for the x32 number (`nr | 0x40000000`) when the kernel has the x32 ABI (without
//! it the kernel answers every x32 call `ENOSYS`), and a call through another ABI (i386
//! `int 0x80`) fails the filter's architecture check, which kills the process.

use crate::error::SealError;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use std::collections::BTreeMap;

const MFD_EXEC: u64 = 0x10;
const MFD_NOEXEC_SEAL: u64 = 0x8;

/// Every namespace flag of `unshare` and `clone3`.
const CLONE_NEW: [(u64, &str); 8] = [
    (libc::CLONE_NEWNS as u64, "CLONE_NEWNS"),
    (libc::CLONE_NEWCGROUP as u64, "CLONE_NEWCGROUP"),
    (libc::CLONE_NEWUTS as u64, "CLONE_NEWUTS"),
    (libc::CLONE_NEWIPC as u64, "CLONE_NEWIPC"),
    (libc::CLONE_NEWUSER as u64, "CLONE_NEWUSER"),
    (libc::CLONE_NEWPID as u64, "CLONE_NEWPID"),
    (libc::CLONE_NEWNET as u64, "CLONE_NEWNET"),
    // `clone` reads this bit as part of the exit signal (CSIGNAL): only `unshare` means it.
    (0x80, "CLONE_NEWTIME"),
];

/// The calls refused outright.
const REFUSED: &[(i64, &str)] = &[
    (libc::SYS_setns, "setns"),
    (libc::SYS_mount, "mount"),
    (libc::SYS_umount2, "umount2"),
    (libc::SYS_fsopen, "fsopen"),
    (libc::SYS_fsconfig, "fsconfig"),
    (libc::SYS_fsmount, "fsmount"),
    (libc::SYS_fspick, "fspick"),
    (libc::SYS_move_mount, "move_mount"),
    (libc::SYS_open_tree, "open_tree"),
    (libc::SYS_mount_setattr, "mount_setattr"),
    (libc::SYS_pivot_root, "pivot_root"),
    (libc::SYS_init_module, "init_module"),
    (libc::SYS_finit_module, "finit_module"),
    (libc::SYS_kexec_load, "kexec_load"),
    (libc::SYS_kexec_file_load, "kexec_file_load"),
    // Reopens a file by handle through any mount fd (say `/`): root (CAP_DAC_READ_SEARCH)
    // would get past the noexec and read-only binds of the session's mount namespace.
    (libc::SYS_open_by_handle_at, "open_by_handle_at"),
    // The same hole from the other side: root's fanotify (CAP_SYS_ADMIN) hands out a
    // descriptor of each file another process opens, on the mount that process used (the
    // host's executable one), so a written file could be mapped executable past the noexec
    // binds. Unprivileged fanotify gives no descriptors; nothing a session does needs it.
    (libc::SYS_fanotify_init, "fanotify_init"),
    // Programs into the kernel (root; Debian refuses unprivileged BPF already).
    (libc::SYS_bpf, "bpf"),
];

/// The numbers each rule is written for: the native one, and on x86_64 the x32 one
/// (`nr | X32`) when this kernel has the x32 ABI. It is chosen at boot, so a kernel that
/// answers an x32 `getpid` with `ENOSYS` does so for every x32 call, and rules for it would
/// only lengthen the filter (the kernel's cost of installing one grows with its length: about
/// 0.1 ms of each session's start for the x32 half).
fn aliases() -> &'static [i64] {
    #[cfg(target_arch = "x86_64")]
    {
        const X32: i64 = 0x4000_0000;
        // SAFETY: getpid takes no arguments and has no effects; through the x32 ABI it either
        // returns the pid or fails with ENOSYS.
        let pid = unsafe { libc::syscall(libc::SYS_getpid | X32) };
        if pid == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            &[0]
        } else {
            &[0, X32]
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        &[0]
    }
}

fn bit_set(arg: u8, bit: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(vec![SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(bit),
        bit,
    )?])
}

fn bit_clear(arg: u8, bit: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(vec![SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(bit),
        0,
    )?])
}

/// The two programs (refusals answered `EPERM`; `clone3` answered `ENOSYS`) and their
/// descriptions.
fn build(
    memfd_noexec: bool,
    aliases: &[i64],
) -> Result<(Vec<BpfProgram>, Vec<String>), seccompiler::BackendError> {
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut lines = Vec::new();
    let mut add = |nr: i64, rules: Vec<SeccompRule>| {
        for alias in aliases {
            eperm.insert(nr | alias, rules.clone());
        }
    };
    if memfd_noexec {
        add(
            libc::SYS_memfd_create,
            vec![bit_clear(1, MFD_NOEXEC_SEAL)?, bit_set(1, MFD_EXEC)?],
        );
        lines.push("memfd_create without MFD_NOEXEC_SEAL or with MFD_EXEC: EPERM".into());
    }
    let unshare: Vec<SeccompRule> = CLONE_NEW
        .iter()
        .map(|&(bit, _)| bit_set(0, bit))
        .collect::<Result<_, _>>()?;
    add(libc::SYS_unshare, unshare);
    let names: Vec<&str> = CLONE_NEW.iter().map(|&(_, n)| n).collect();
    lines.push(format!("unshare with {}: EPERM", names.join("|")));
    let clone: Vec<SeccompRule> = CLONE_NEW
        .iter()
        .filter(|&&(_, name)| name != "CLONE_NEWTIME")
        .map(|&(bit, _)| bit_set(0, bit))
        .collect::<Result<_, _>>()?;
    add(libc::SYS_clone, clone);
    lines.push(format!(
        "clone with {}: EPERM",
        names[..names.len() - 1].join("|")
    ));
    for &(nr, name) in REFUSED {
        add(nr, vec![]);
        lines.push(format!("{name}: EPERM"));
    }
    // TIOCSTI pushes bytes into a terminal's input: the session would type commands into the
    // operator's shell, to run unguarded once the session ends.
    add(
        libc::SYS_ioctl,
        vec![SeccompRule::new(vec![SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::TIOCSTI,
        )?])?],
    );
    lines.push("ioctl(TIOCSTI): EPERM".into());
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| seccompiler::BackendError::InvalidTargetArch(std::env::consts::ARCH.into()))?;
    let refuse = SeccompFilter::new(
        eperm,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let mut clone3: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for alias in aliases {
        clone3.insert(libc::SYS_clone3 | alias, vec![]);
    }
    lines.push("clone3: ENOSYS (libc falls back to clone)".into());
    let fallback = SeccompFilter::new(
        clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    if aliases.len() > 1 {
        lines.push("x32 numbers (nr | 0x40000000) of each rule: the same answer".into());
    } else if cfg!(target_arch = "x86_64") {
        lines.push("x32 numbers: the kernel has no x32 ABI (ENOSYS)".into());
    }
    lines.push("other ABIs (i386 int 0x80): the process is killed".into());
    Ok((vec![refuse.try_into()?, fallback.try_into()?], lines))
}

/// Installs the filter on the calling thread (its children inherit it). Returns the rules.
pub fn install(memfd_noexec: bool) -> Result<Vec<String>, SealError> {
    let fail = |detail: String| SealError::Seccomp { detail };
    let (programs, lines) = build(memfd_noexec, aliases()).map_err(|e| fail(e.to_string()))?;
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) takes no pointers and only restricts this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(fail(format!(
            "no_new_privs: {}",
            std::io::Error::last_os_error()
        )));
    }
    for p in &programs {
        seccompiler::apply_filter(p).map_err(|e| fail(e.to_string()))?;
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_builds_and_names_every_rule() {
        for memfd in [true, false] {
            let (programs, lines) = build(memfd, aliases()).unwrap();
            assert_eq!(programs.len(), 2);
            assert_eq!(lines.iter().any(|l| l.starts_with("memfd_create")), memfd);
            for &(_, name) in REFUSED {
                assert!(
                    lines.iter().any(|l| l == &format!("{name}: EPERM")),
                    "{name}"
                );
            }
        }
    }

    /// With the x32 ABI, every rule is there for its x32 number too; without it, none is.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_numbers_get_the_same_rules_when_the_kernel_has_them() {
        const X32: i64 = 0x4000_0000;
        let has = |programs: &[BpfProgram], nr: i64| {
            programs.iter().flatten().any(|i| i64::from(i.k) == nr)
        };
        let (native, _) = build(true, &[0]).unwrap();
        let (both, lines) = build(true, &[0, X32]).unwrap();
        for nr in [
            libc::SYS_mount,
            libc::SYS_unshare,
            libc::SYS_memfd_create,
            libc::SYS_clone3,
        ] {
            assert!(has(&native, nr) && has(&both, nr), "{nr}");
            assert!(has(&both, nr | X32) && !has(&native, nr | X32), "{nr}");
        }
        assert!(lines
            .iter()
            .any(|l| l.starts_with("x32 numbers (nr | 0x40000000)")));
    }
}
