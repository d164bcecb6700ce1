//! The seam between the session steps and the kernel, after youki's `Syscall`: every call
//! whose answer chooses between a step's ways on (a fallback, a reduced mode, a refusal) goes
//! through [`SessionSys`], passed in explicitly. [`LinuxSessionSys`] makes the calls;
//! [`RecordingSessionSys`] answers as it is told and records what was asked, so each fallback
//! has a table test that needs neither root nor a particular kernel.

use std::cell::RefCell;
use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// The kernel calls of the session steps that have more than one way on.
pub trait SessionSys {
    /// Can the kernel enforce the W^X partition (`execguard_seal::partition_abi`)?
    fn partition_abi(&self) -> Result<i64, execguard_seal::SealError>;
    /// `memfd_create(2)`.
    fn memfd_create(&self, name: &CStr, flags: libc::c_uint) -> io::Result<OwnedFd>;
    /// `kcmp(2)` `KCMP_FILE` on two descriptors of this process: do they share one open file
    /// description?
    fn same_file_description(&self, a: RawFd, b: RawFd) -> io::Result<bool>;
    /// The seal's own seam (`execguard_seal::sys`).
    fn seal_sys(&self) -> &dyn execguard_seal::SealSys;
}

/// The real calls.
pub struct LinuxSessionSys;

impl SessionSys for LinuxSessionSys {
    fn partition_abi(&self) -> Result<i64, execguard_seal::SealError> {
        execguard_seal::partition_abi(execguard_seal::host_sys())
    }

    fn seal_sys(&self) -> &dyn execguard_seal::SealSys {
        execguard_seal::host_sys()
    }

    fn memfd_create(&self, name: &CStr, flags: libc::c_uint) -> io::Result<OwnedFd> {
        // SAFETY: `name` is a NUL-terminated string that outlives the call; memfd_create
        // returns a new descriptor or -1.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn same_file_description(&self, a: RawFd, b: RawFd) -> io::Result<bool> {
        const KCMP_FILE: libc::c_long = 0;
        // SAFETY: kcmp compares two descriptor numbers of this process; it reads no memory.
        let answer = unsafe {
            let pid = libc::getpid() as libc::c_long;
            libc::syscall(
                libc::SYS_kcmp,
                pid,
                pid,
                KCMP_FILE,
                a as libc::c_long,
                b as libc::c_long,
            )
        };
        if answer < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(answer == 0)
    }
}

/// The recording double: each call is recorded as text; its answer is the one set for it
/// (an errno fails the call), else what a current kernel answers.
#[derive(Default)]
pub struct RecordingSessionSys {
    pub(crate) calls: RefCell<Vec<String>>,
    /// `partition_abi`: the Landlock ABI, or `Err(detail)` for a kernel without the partition.
    pub abi: Option<Result<i64, String>>,
    /// `memfd_create`: the errno for each flag set that fails.
    pub memfd_errno: Vec<(libc::c_uint, i32)>,
    /// `kcmp`: the errno it fails with (ENOSYS: a kernel without it), else "not the same".
    pub kcmp: Option<Result<bool, i32>>,
    /// The seal's calls.
    pub seal: execguard_seal::sys::RecordingSealSys,
}

impl RecordingSessionSys {
    /// The calls made, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    fn record(&self, call: String) {
        self.calls.borrow_mut().push(call);
    }
}

impl SessionSys for RecordingSessionSys {
    fn partition_abi(&self) -> Result<i64, execguard_seal::SealError> {
        self.record("partition_abi".into());
        match &self.abi {
            None => Ok(7),
            Some(Ok(abi)) => Ok(*abi),
            Some(Err(detail)) => Err(execguard_seal::SealError::Unavailable {
                detail: detail.clone(),
            }),
        }
    }

    fn memfd_create(&self, name: &CStr, flags: libc::c_uint) -> io::Result<OwnedFd> {
        self.record(format!(
            "memfd_create({}, {flags:#x})",
            name.to_string_lossy()
        ));
        if let Some((_, errno)) = self.memfd_errno.iter().find(|(f, _)| *f == flags) {
            return Err(io::Error::from_raw_os_error(*errno));
        }
        // A real descriptor, so the step can go on: an anonymous file of the same kind.
        LinuxSessionSys.memfd_create(name, flags & !MFD_NOEXEC_SEAL)
    }

    fn seal_sys(&self) -> &dyn execguard_seal::SealSys {
        &self.seal
    }

    fn same_file_description(&self, a: RawFd, b: RawFd) -> io::Result<bool> {
        self.record(format!("kcmp({a}, {b})"));
        match self.kcmp {
            None => Ok(false),
            Some(Ok(same)) => Ok(same),
            Some(Err(errno)) => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// `MFD_NOEXEC_SEAL` (Linux 6.3): the memfd can never be made executable.
pub const MFD_NOEXEC_SEAL: libc::c_uint = 0x8;
