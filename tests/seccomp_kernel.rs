//! The seal's seccomp filter, as the kernel applies it: a child process (this test binary
//! started again) installs the filter and makes each system call, the way bubblewrap's
//! `try-syscall.c` probes its own; the answers are compared with a table written here, from
//! the seal's documentation, not from the filter's own list. The same calls without the filter
//! are the positive control: the kernel's own answer is not the filter's (so an `EPERM` seen
//! is the filter's), which only holds for root (a non-root caller gets `EPERM` from the kernel
//! for most of them): the test needs root, and skips through the kit otherwise.

use std::process::Command;

const CHILD: &str = "EXECGUARD_SECCOMP_PROBE";

/// What the filter must answer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    Errno(i32),
    /// Not refused: the call succeeds (returns 0 or more).
    Runs,
}

fn sys(nr: libc::c_long, args: [libc::c_long; 5]) -> (i64, i32) {
    // SAFETY: every call below is given null or invalid pointers, invalid descriptors or flags
    // the kernel rejects before doing anything, or is harmless in this throw-away child
    // (getpid, unshare(0), memfd_create, a namespace it keeps to itself).
    let ret = unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4]) };
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    (ret, if ret < 0 { errno } else { 0 })
}

const NEW_NS: libc::c_long = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWCGROUP) as libc::c_long;
const MFD_NOEXEC_SEAL: libc::c_long = 0x8;
const MFD_EXEC: libc::c_long = 0x10;

/// The calls, their arguments, and what a strict session's filter answers (the table of
/// guard/seal/src/seccomp.rs's documentation, written out again by hand).
fn cases() -> Vec<(&'static str, libc::c_long, [libc::c_long; 5], Want)> {
    let eperm = Want::Errno(libc::EPERM);
    let name = c"x".as_ptr() as libc::c_long;
    let nowhere = c"/nonexistent-execguard-probe".as_ptr() as libc::c_long;
    vec![
        ("getpid", libc::SYS_getpid, [0; 5], Want::Runs),
        ("unshare(0)", libc::SYS_unshare, [0; 5], Want::Runs),
        (
            "memfd_create(MFD_NOEXEC_SEAL)",
            libc::SYS_memfd_create,
            [name, MFD_NOEXEC_SEAL, 0, 0, 0],
            Want::Runs,
        ),
        (
            "memfd_create(0)",
            libc::SYS_memfd_create,
            [name, 0, 0, 0, 0],
            eperm,
        ),
        (
            "memfd_create(MFD_EXEC)",
            libc::SYS_memfd_create,
            [name, MFD_EXEC, 0, 0, 0],
            eperm,
        ),
        (
            "unshare(CLONE_NEWNS)",
            libc::SYS_unshare,
            [libc::CLONE_NEWNS as libc::c_long, 0, 0, 0, 0],
            eperm,
        ),
        (
            "unshare(CLONE_NEWNET)",
            libc::SYS_unshare,
            [libc::CLONE_NEWNET as libc::c_long, 0, 0, 0, 0],
            eperm,
        ),
        (
            "clone(CLONE_NEW*)",
            libc::SYS_clone,
            [NEW_NS | libc::SIGCHLD as libc::c_long, 0, 0, 0, 0],
            eperm,
        ),
        (
            "clone3",
            libc::SYS_clone3,
            [0; 5],
            Want::Errno(libc::ENOSYS),
        ),
        ("setns", libc::SYS_setns, [-1, 0, 0, 0, 0], eperm),
        ("mount", libc::SYS_mount, [0; 5], eperm),
        ("umount2", libc::SYS_umount2, [nowhere, 0, 0, 0, 0], eperm),
        ("fsopen", libc::SYS_fsopen, [0; 5], eperm),
        ("fsconfig", libc::SYS_fsconfig, [-1, 0, 0, 0, 0], eperm),
        ("fsmount", libc::SYS_fsmount, [-1, 0, 0, 0, 0], eperm),
        ("fspick", libc::SYS_fspick, [-1, 0, 0, 0, 0], eperm),
        ("move_mount", libc::SYS_move_mount, [-1, 0, -1, 0, 0], eperm),
        ("open_tree", libc::SYS_open_tree, [-1, 0, 0, 0, 0], eperm),
        (
            "mount_setattr",
            libc::SYS_mount_setattr,
            [-1, 0, 0, 0, 0],
            eperm,
        ),
        ("pivot_root", libc::SYS_pivot_root, [0; 5], eperm),
        ("init_module", libc::SYS_init_module, [0; 5], eperm),
        (
            "finit_module",
            libc::SYS_finit_module,
            [-1, 0, 0, 0, 0],
            eperm,
        ),
        // Flags no kernel knows: refused before anything is loaded or unloaded.
        (
            "kexec_load",
            libc::SYS_kexec_load,
            [0, 0, 0, 0x7fff_0000, 0],
            eperm,
        ),
        (
            "kexec_file_load",
            libc::SYS_kexec_file_load,
            [-1, -1, 0, 0, 0x7fff_0000],
            eperm,
        ),
        (
            "open_by_handle_at",
            libc::SYS_open_by_handle_at,
            [-1, 0, 0, 0, 0],
            eperm,
        ),
        (
            "fanotify_init",
            libc::SYS_fanotify_init,
            [0x7fff_0000, 0, 0, 0, 0],
            eperm,
        ),
        ("bpf", libc::SYS_bpf, [-1, 0, 0, 0, 0], eperm),
        // TIOCSTI on a descriptor that is no terminal: the kernel says ENOTTY.
        (
            "ioctl(TIOCSTI)",
            libc::SYS_ioctl,
            [-1, libc::TIOCSTI as libc::c_long, 0, 0, 0],
            eperm,
        ),
        (
            "ioctl(FIONREAD)",
            libc::SYS_ioctl,
            [-1, libc::FIONREAD as libc::c_long, 0, 0, 0],
            Want::Errno(libc::EBADF),
        ),
        // Last: without the filter it succeeds, and in a user namespace of its own root's
        // answers to the calls above would change.
        (
            "unshare(CLONE_NEWUSER)",
            libc::SYS_unshare,
            [libc::CLONE_NEWUSER as libc::c_long, 0, 0, 0, 0],
            eperm,
        ),
    ]
}

/// The child: with `EXECGUARD_SECCOMP_PROBE=filtered` it installs the strict filter on this
/// thread first; then it makes each call and prints `CALL <name> <ret> <errno>`. Run as a
/// test of its own (started by the test below with `--exact`); without the variable it does
/// nothing.
#[test]
fn seccomp_probe_child() {
    let Some(mode) = std::env::var_os(CHILD) else {
        return;
    };
    if mode == "filtered" {
        execguard_seal::seccomp::install(true).expect("install the filter");
    }
    for (name, nr, args, _) in cases() {
        let (ret, errno) = sys(nr, args);
        if ret == 0 && nr == libc::SYS_clone {
            // The new process (the kernel allowed the clone): it must not go on as a copy.
            // SAFETY: _exit ends this process at once; nothing is shared.
            unsafe { libc::_exit(0) };
        }
        println!("CALL {name} {ret} {errno}");
    }
}

/// Every call's `(ret, errno)`, from a child started as `mode`.
fn probe(mode: &str) -> Vec<(String, i64, i32)> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "seccomp_probe_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, mode)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the {mode} probe failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        // libtest may print `test seccomp_probe_child ... ` before the first line.
        .filter_map(|l| Some(&l[l.find("CALL ")? + "CALL ".len()..]))
        .map(|l| {
            let (rest, errno) = l.rsplit_once(' ').unwrap();
            let (name, ret) = rest.rsplit_once(' ').unwrap();
            (
                name.to_string(),
                ret.parse().unwrap(),
                errno.parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_kernel_answers_each_call_as_the_seal_documents() {
    if !execguard_testkit::require_root(
        "the seccomp probe: only root's answers tell the filter's EPERM from the kernel's",
    ) {
        return;
    }
    let cases = cases();
    let plain = probe("plain");
    let filtered = probe("filtered");
    assert_eq!(plain.len(), cases.len(), "{plain:?}");
    assert_eq!(filtered.len(), cases.len(), "{filtered:?}");
    let mut wrong = Vec::new();
    for (((name, _, _, want), plain), filtered) in cases.iter().zip(&plain).zip(&filtered) {
        assert_eq!(
            (&plain.0, &filtered.0),
            (&name.to_string(), &name.to_string())
        );
        let got = if filtered.1 >= 0 {
            Want::Runs
        } else {
            Want::Errno(filtered.2)
        };
        if got != *want {
            wrong.push(format!(
                "{name}: want {want:?}, the kernel answered {got:?}"
            ));
        }
        // The positive control: without the filter the kernel answers otherwise, so the
        // answer above is the filter's.
        let refused = matches!(want, Want::Errno(e) if *e == libc::EPERM || *e == libc::ENOSYS);
        if refused && plain.2 == filtered.2 {
            wrong.push(format!(
                "{name}: the kernel answers {} without the filter too: the probe proves nothing",
                plain.2
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
