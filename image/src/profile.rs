//! The run profile: the one declaration of how a session container is hardened.

/// Where the image keeps what the entrypoint needs to know from the launcher.
pub const LABEL_MANIFEST: &str = "execguard.manifest.sha256";
/// The generated seccomp profile travels with the image, so a launcher needs no host file.
pub const LABEL_SECCOMP: &str = "execguard.seccomp";
/// The image `execguard image build` produces and `execguard image run` starts.
pub const DEFAULT_IMAGE: &str = "execguard:latest";
/// The image's own non-root user; a session started by root on the host runs as it.
pub const IMAGE_USER: (u32, u32) = (1000, 1000);
/// The seccomp profile's file name for Compose and on Kubernetes nodes
/// (`/var/lib/kubelet/seccomp/profiles/execguard-seccomp.json`).
pub const SECCOMP_FILE: &str = "execguard-seccomp.json";

/// A tmpfs the session gets.
#[derive(Debug)]
pub struct Tmpfs {
    pub path: &'static str,
    /// Mount flags that a platform may or may not be able to express.
    pub flags: &'static [&'static str],
    pub size_mib: u64,
    pub mode: u32,
}

/// The hardening of a session container.
#[derive(Debug)]
pub struct RunProfile {
    pub cap_drop_all: bool,
    pub no_new_privileges: bool,
    pub read_only_root: bool,
    pub tmpfs: &'static [Tmpfs],
    pub workspace: &'static str,
    /// `noexec` on the workspace bind mount in the strict profile.
    pub workspace_noexec_in_strict: bool,
    pub pids_limit: u64,
    pub memory_mib: u64,
    /// The entrypoint's start mode: the container starts as the mapped user with no
    /// capabilities at all (the root filesystem is read-only, so the entrypoint has no user
    /// database to write and never needs root).
    pub mutability: &'static str,
    pub workdir: &'static str,
}

pub const PROFILE: RunProfile = RunProfile {
    cap_drop_all: true,
    no_new_privileges: true,
    read_only_root: true,
    tmpfs: &[
        Tmpfs {
            path: "/tmp",
            flags: &["noexec", "nosuid", "nodev"],
            size_mib: 512,
            mode: 0o1777,
        },
        Tmpfs {
            path: "/run",
            flags: &["noexec", "nosuid", "nodev"],
            size_mib: 16,
            mode: 0o755,
        },
        Tmpfs {
            path: "/state",
            flags: &["noexec", "nosuid", "nodev"],
            size_mib: 1024,
            mode: 0o1777,
        },
    ],
    workspace: "/workspace",
    workspace_noexec_in_strict: true,
    pids_limit: 512,
    memory_mib: 4096,
    mutability: "readonly",
    workdir: "/workspace",
};

/// Syscalls the session never needs and Docker's default profile allows (some only with a
/// capability the session does not hold): ptrace and cross-process memory access, userfaultfd
/// (a classic exploit primitive), perf and BPF, the kernel keyring, and namespace creation.
pub const SECCOMP_DENY: &[&str] = &[
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    "userfaultfd",
    "perf_event_open",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "unshare",
    "setns",
];

/// Every `CLONE_NEW*` flag (and `CLONE_NEWTIME`, which is `CSIGNAL`-space on clone3 only).
pub const CLONE_NEW_MASK: u64 = 0x0200_0000 // CLONE_NEWCGROUP
    | 0x0400_0000 // CLONE_NEWUTS
    | 0x0800_0000 // CLONE_NEWIPC
    | 0x1000_0000 // CLONE_NEWUSER
    | 0x2000_0000 // CLONE_NEWPID
    | 0x4000_0000 // CLONE_NEWNET
    | 0x0002_0000; // CLONE_NEWNS

pub(crate) const ENOSYS: u64 = 38;
pub(crate) const EPERM: u64 = 1;
