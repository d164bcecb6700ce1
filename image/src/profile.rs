//! The run profile: the one declaration of how a session container is hardened.

/// Where the image keeps what the entrypoint needs to know from the launcher.
pub const LABEL_MANIFEST: &str = "execguard.manifest.sha256";
/// The generated seccomp profile travels with the image, so a launcher needs no host file.
pub const LABEL_SECCOMP: &str = "execguard.seccomp";
/// The providers the image was built with, comma-separated.
pub const LABEL_PROVIDERS: &str = "execguard.providers";
/// Every provider `execguard image build` knows.
pub const PROVIDERS: [&str; 4] = ["codex", "claude", "gemini", "copilot"];
/// The image `execguard image build` produces and `execguard image run` starts.
pub const DEFAULT_IMAGE: &str = "execguard:latest";
/// The image's own non-root user (the Kubernetes Job's user).
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
    /// Mount flags of every writable volume of the write set (the workspace included; outside
    /// strict the workspace keeps exec, which is what those profiles stand for). Docker and
    /// Compose: the entrypoint applies them with `start_caps`; Kubernetes: `bindMountOptions`.
    pub write_set_flags: &'static [&'static str],
    pub pids_limit: u64,
    pub memory_mib: u64,
    /// The entrypoint's start mode: a read-only root file system (no user database is written).
    pub mutability: &'static str,
    /// Docker and Compose start the entrypoint as root holding only these capabilities, and only
    /// until the session starts: it records the session's profile for the guard (a root-owned
    /// runtime state file) and remounts the write set with `write_set_flags`, then drops every
    /// capability, the bounding set included, and verifies the drop. The session never runs as
    /// root. Kubernetes starts it as the mapped user (`runAsNonRoot`), strict only.
    pub start_caps: &'static [&'static str],
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
    write_set_flags: &["noexec", "nosuid", "nodev"],
    pids_limit: 512,
    memory_mib: 4096,
    mutability: "readonly",
    start_caps: &[
        "SETUID",
        "SETGID",
        "SETPCAP",
        "CHOWN",
        "FOWNER",
        "DAC_OVERRIDE",
        "SYS_ADMIN",
    ],
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
