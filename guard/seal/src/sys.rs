//! The seam between the seal and the kernel, after youki's `Syscall` and the container's
//! `privs.rs`: every call whose answer chooses between the seal's ways on (the Landlock ABI,
//! the namespaces, the binds and remounts, the mount table they are checked against) goes
//! through [`SealSys`]. [`LinuxSealSys`] makes the calls; [`RecordingSealSys`] answers as it is
//! told and records what was asked, so each fallback has a table test that needs neither root
//! nor a particular kernel, and changes no mount of the process that runs it.

use crate::error::SealError;
use crate::mountinfo::Mount;
use std::cell::RefCell;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// A named step of a session's start, where another process writing the same directories
/// could act (and a test build can make it act, or fail the step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The CLI's checks done, before the partition is built.
    Partition,
    /// A non-root user's namespace: right after `unshare`, before its maps are written.
    Enter,
    /// The write set bound onto itself, before the mount table is read for the `noexec` pass.
    Binds,
    /// The mount table read for the `noexec` pass.
    Noexec,
    /// The `noexec` pass done, before the exec dirs are made read-only.
    ReadOnly,
    /// Before the hidden directories are covered.
    Hide,
    /// The Landlock grants listed, before they are opened.
    Rules,
}

/// The kernel calls of the seal that have more than one way on.
pub trait SealSys {
    /// `geteuid(2)`, `getegid(2)`: root's namespace needs no user namespace around it.
    fn ids(&self) -> (libc::uid_t, libc::gid_t);
    /// `landlock_create_ruleset(NULL, 0, VERSION)`: the kernel's Landlock ABI, or the errno.
    fn landlock_abi(&self) -> Result<i64, i32>;
    /// `unshare(2)`.
    fn unshare(&self, flags: libc::c_int) -> io::Result<()>;
    /// Writes `text` to `file` (the new user namespace's `/proc/self` maps).
    fn write_proc(&self, file: &str, text: &str) -> io::Result<()>;
    /// `mount(src, dst, NULL, flags, NULL)`: a bind, or a remount of one.
    fn mount(&self, src: Option<&Path>, dst: &Path, flags: libc::c_ulong) -> Result<(), SealError>;
    /// Adds `attrs` (`MOUNT_ATTR_*`) to the mount `table` places at `point`, through a
    /// descriptor checked to reach that mount (`mount_calls::add_attrs_at`).
    fn add_attrs(&self, point: &Path, table: &[Mount], attrs: u64) -> Result<(), SealError>;
    /// Covers `dir` with an empty, read-only tmpfs.
    fn hide(&self, dir: &Path) -> Result<(), SealError>;
    /// This process's mount table now.
    fn mount_table(&self) -> Result<Arc<[Mount]>, SealError>;
    /// Runs `attempt` in a forked child and says how it went (its error's text), so that what
    /// it does to its process cannot stay (`namespace::probe`: a user namespace that cannot be
    /// left). The caller must be single-threaded.
    fn in_child(&self, attempt: &dyn Fn() -> Result<(), String>) -> Result<(), String>;
    /// `step` of the start is reached. The kernel has nothing to say; a test build may act
    /// there as a racing process would, or fail the step.
    fn at_step(&self, step: Step) -> Result<(), SealError> {
        let _ = step;
        Ok(())
    }
}

/// The real calls.
pub struct LinuxSealSys;

impl SealSys for LinuxSealSys {
    fn ids(&self) -> (libc::uid_t, libc::gid_t) {
        // SAFETY: geteuid/getegid have no preconditions.
        unsafe { (libc::geteuid(), libc::getegid()) }
    }

    fn landlock_abi(&self) -> Result<i64, i32> {
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
        if v < 0 {
            return Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ENOSYS));
        }
        Ok(v)
    }

    fn unshare(&self, flags: libc::c_int) -> io::Result<()> {
        // SAFETY: unshare takes only flags; it affects this process alone.
        if unsafe { libc::unshare(flags) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn write_proc(&self, file: &str, text: &str) -> io::Result<()> {
        std::fs::write(file, text)
    }

    fn mount(&self, src: Option<&Path>, dst: &Path, flags: libc::c_ulong) -> Result<(), SealError> {
        crate::mount_calls::mount(src, dst, flags)
    }

    fn add_attrs(&self, point: &Path, table: &[Mount], attrs: u64) -> Result<(), SealError> {
        crate::mount_calls::add_attrs_at(point, table, attrs)
    }

    fn hide(&self, dir: &Path) -> Result<(), SealError> {
        crate::mount_calls::hide(dir)
    }

    fn mount_table(&self) -> Result<Arc<[Mount]>, SealError> {
        crate::mountinfo::mounts_now()
    }

    fn in_child(&self, attempt: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(format!("pipe2 /: {}", io::Error::last_os_error()));
        }
        // SAFETY: this process is single-threaded (the caller's contract), so the child may
        // run ordinary Rust code, allocation included, before it exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: the child's copy of the read end is not used.
            unsafe { libc::close(fds[0]) };
            let code = match attempt() {
                Ok(()) => 0,
                Err(msg) => {
                    // SAFETY: writes the message from a live buffer to the pipe's write end.
                    unsafe { libc::write(fds[1], msg.as_ptr().cast(), msg.len()) };
                    1
                }
            };
            // SAFETY: _exit ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        // SAFETY: the parent's copy of the write end is not used.
        unsafe { libc::close(fds[1]) };
        if pid < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closes the read end made above.
            unsafe { libc::close(fds[0]) };
            return Err(format!("fork /: {e}"));
        }
        let mut msg = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            // SAFETY: reads into a live buffer of the stated size.
            let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            msg.extend_from_slice(&buf[..n as usize]);
        }
        // SAFETY: closes the read end made above.
        unsafe { libc::close(fds[0]) };
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            return Ok(());
        }
        Err(if msg.is_empty() {
            format!("the namespace probe ended with status {status}")
        } else {
            String::from_utf8_lossy(&msg).into_owned()
        })
    }
}

/// The recording double: each call is recorded as text; a call whose record starts with a
/// prefix in `refuse` fails with that errno, the others succeed without touching the kernel.
#[derive(Default)]
pub struct RecordingSealSys {
    /// The calls made, as [`RecordingSealSys::calls`] returns them.
    pub calls: RefCell<Vec<String>>,
    /// `landlock_abi`'s answer; ABI 7 when unset.
    pub abi: Option<Result<i64, i32>>,
    /// The calls that fail: a prefix of their record (`unshare(CLONE_NEWNS`, `bind /w`,
    /// `write /proc/self/uid_map`, `mount_setattr`, `at Binds`) and the errno.
    pub refuse: Vec<(&'static str, i32)>,
    /// `mount_table`'s answer.
    pub table: Vec<Mount>,
    /// `ids`' answer: root's by default.
    pub ids: (libc::uid_t, libc::gid_t),
}

impl RecordingSealSys {
    /// The calls made, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    fn record(&self, call: String) -> io::Result<()> {
        let refused = self.refuse.iter().find(|(p, _)| call.starts_with(p));
        self.calls.borrow_mut().push(call);
        match refused {
            Some((_, errno)) => Err(io::Error::from_raw_os_error(*errno)),
            None => Ok(()),
        }
    }
}

/// `unshare`'s flags by name, as the records show them.
fn namespaces(flags: libc::c_int) -> String {
    let names = [
        (libc::CLONE_NEWUSER, "CLONE_NEWUSER"),
        (libc::CLONE_NEWNS, "CLONE_NEWNS"),
        (libc::CLONE_NEWNET, "CLONE_NEWNET"),
    ];
    let named: Vec<&str> = names
        .iter()
        .filter(|(f, _)| flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
    named.join("|")
}

fn errno_detail(what: String, e: io::Error) -> SealError {
    SealError::Noexec {
        detail: format!("{what}: {e}"),
    }
}

impl SealSys for RecordingSealSys {
    fn ids(&self) -> (libc::uid_t, libc::gid_t) {
        self.ids
    }

    fn landlock_abi(&self) -> Result<i64, i32> {
        self.record("landlock_abi".into()).ok();
        self.abi.unwrap_or(Ok(7))
    }

    fn unshare(&self, flags: libc::c_int) -> io::Result<()> {
        self.record(format!("unshare({})", namespaces(flags)))
    }

    fn write_proc(&self, file: &str, text: &str) -> io::Result<()> {
        self.record(format!("write {file} {text}"))
    }

    fn mount(&self, src: Option<&Path>, dst: &Path, flags: libc::c_ulong) -> Result<(), SealError> {
        let kind = if src.is_some() { "bind" } else { "remount" };
        self.record(format!("{kind} {} {flags:#x}", dst.display()))
            .map_err(|e| errno_detail(format!("{kind} {}", dst.display()), e))
    }

    fn add_attrs(&self, point: &Path, _table: &[Mount], attrs: u64) -> Result<(), SealError> {
        let call = format!("mount_setattr {} {attrs:#x}", point.display());
        self.record(call.clone()).map_err(|e| errno_detail(call, e))
    }

    fn hide(&self, dir: &Path) -> Result<(), SealError> {
        let call = format!("hide {}", dir.display());
        self.record(call.clone()).map_err(|e| errno_detail(call, e))
    }

    fn mount_table(&self) -> Result<Arc<[Mount]>, SealError> {
        self.record("mount_table".into())
            .map_err(|e| errno_detail("/proc/self/mountinfo".into(), e))?;
        Ok(self.table.clone().into())
    }

    fn in_child(&self, attempt: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
        // Nothing the double does is real, so the attempt runs here, not in a child.
        self.record("in_child".into()).ok();
        attempt()
    }

    fn at_step(&self, step: Step) -> Result<(), SealError> {
        let call = format!("at {step:?}");
        self.record(call.clone()).map_err(|e| errno_detail(call, e))
    }
}
