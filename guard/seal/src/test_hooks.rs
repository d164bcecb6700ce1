//! The test hooks, for the process-level tests that run the real CLI and entrypoint (test
//! builds only: the `test-hooks` feature, which only dev-dependencies enable, so no shipped
//! binary holds them; `tests/shipped_binaries.rs` checks). They are one more answer of the
//! seam ([`SealSys`]): the kernel's calls, as these variables change them. Every other
//! fallback test goes through [`crate::sys::RecordingSealSys`] instead.
//!
//! - `EXECGUARD_TEST_LANDLOCK_ABI=N`: the Landlock ABI, only ever lowered (`0`: none), so a
//!   test can simulate an old kernel or one without Landlock, never grant anything.
//! - `EXECGUARD_TEST_NO_MOUNT_NAMESPACE`, `EXECGUARD_TEST_NO_NETWORK_NAMESPACE`: `unshare` of
//!   the mount (network) namespace refused, as by a kernel without it.
//! - `EXECGUARD_TEST_FAIL_BIND=STEP`: the namespace made, that step fails (`noexec`: before the
//!   write set is remounted noexec; `read_only`: before the exec dirs are made read-only;
//!   `hide`: before the hidden dirs are covered), as a bind the kernel refuses would; `enter`:
//!   a non-root user's namespace fails right after `unshare`, as under an LSM that gives it no
//!   capabilities.
//! - `EXECGUARD_TEST_PAUSE=STEP:FILE`: at `STEP` (`partition`: in the CLI, after its checks,
//!   before the partition is built; `noexec`: right after the mount table is read for the
//!   `noexec` pass; `rules`: after the Landlock grants are listed, before they are opened),
//!   create `FILE.ready` and wait until `FILE` exists (10 s at most), so that a test can change
//!   names from outside the session's namespace then, as another session would.
//! - `EXECGUARD_TEST_REDIRECT=STEP:DIR:TARGET`: at `STEP` (as above), move `DIR` aside (to
//!   `DIR-moved`) and put a symlink to `TARGET` in its place (`=SOURCE` for `TARGET`: the
//!   directory `SOURCE` moved there), as another process writing the same directory could.

use crate::error::SealError;
use crate::mountinfo::Mount;
use crate::sys::{LinuxSealSys, SealSys, Step};
use std::io;
use std::path::Path;
use std::sync::Arc;

/// The kernel's calls as the test hooks change them.
pub struct HookedSealSys;

fn hook(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn refused(name: &str) -> io::Error {
    io::Error::other(format!("{name} is set (test hook)"))
}

impl SealSys for HookedSealSys {
    fn ids(&self) -> (libc::uid_t, libc::gid_t) {
        LinuxSealSys.ids()
    }

    fn landlock_abi(&self) -> Result<i64, i32> {
        const FORCE: &str = "EXECGUARD_TEST_LANDLOCK_ABI";
        let real = LinuxSealSys.landlock_abi();
        match hook(FORCE).and_then(|s| s.parse::<i64>().ok()) {
            Some(forced) if forced <= 0 => Err(libc::EOPNOTSUPP),
            Some(forced) => real.map(|r| r.min(forced)),
            None => real,
        }
    }

    fn unshare(&self, flags: libc::c_int) -> io::Result<()> {
        for (flag, name) in [
            (libc::CLONE_NEWNS, "EXECGUARD_TEST_NO_MOUNT_NAMESPACE"),
            (libc::CLONE_NEWNET, "EXECGUARD_TEST_NO_NETWORK_NAMESPACE"),
        ] {
            if flags & flag != 0 && hook(name).is_some() {
                return Err(refused(name));
            }
        }
        LinuxSealSys.unshare(flags)
    }

    fn write_proc(&self, file: &str, text: &str) -> io::Result<()> {
        LinuxSealSys.write_proc(file, text)
    }

    fn mount(&self, src: Option<&Path>, dst: &Path, flags: libc::c_ulong) -> Result<(), SealError> {
        LinuxSealSys.mount(src, dst, flags)
    }

    fn add_attrs(&self, point: &Path, table: &[Mount], attrs: u64) -> Result<(), SealError> {
        LinuxSealSys.add_attrs(point, table, attrs)
    }

    fn hide(&self, dir: &Path) -> Result<(), SealError> {
        LinuxSealSys.hide(dir)
    }

    fn mount_table(&self) -> Result<Arc<[Mount]>, SealError> {
        LinuxSealSys.mount_table()
    }

    fn in_child(&self, attempt: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
        LinuxSealSys.in_child(attempt)
    }

    fn at_step(&self, step: Step) -> Result<(), SealError> {
        const FAIL: &str = "EXECGUARD_TEST_FAIL_BIND";
        let (failing, racing) = match step {
            Step::Partition => (None, Some("partition")),
            Step::Enter => (Some("enter"), None),
            Step::Binds => (Some("noexec"), None),
            Step::Noexec => (None, Some("noexec")),
            Step::ReadOnly => (Some("read_only"), None),
            Step::Hide => (Some("hide"), None),
            Step::Rules => (None, Some("rules")),
        };
        if let Some(name) = failing.filter(|n| hook(FAIL).as_deref() == Some(n)) {
            return Err(SealError::Noexec {
                detail: format!("{FAIL}={name} is set (test hook)"),
            });
        }
        if let Some(name) = racing {
            race_at(name);
        }
        Ok(())
    }
}

/// `EXECGUARD_TEST_PAUSE`, then `EXECGUARD_TEST_REDIRECT`, at `step`.
fn race_at(step: &str) {
    const PAUSE: &str = "EXECGUARD_TEST_PAUSE";
    const REDIRECT: &str = "EXECGUARD_TEST_REDIRECT";
    if let Some((at, file)) = hook(PAUSE)
        .as_deref()
        .and_then(|v| v.split_once(':'))
        .filter(|(at, _)| *at == step)
        .map(|(at, f)| (at.to_string(), f.to_string()))
    {
        std::fs::write(format!("{file}.ready"), at)
            .unwrap_or_else(|e| panic!("{PAUSE}: {file}.ready: {e}"));
        for _ in 0..1000 {
            if Path::new(&file).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let Some(value) = hook(REDIRECT) else {
        return;
    };
    let mut parts = value.splitn(3, ':');
    let (Some(at), Some(dir), Some(target)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{REDIRECT}={value}: want STEP:DIR:TARGET");
    };
    if at == step {
        std::fs::rename(dir, format!("{dir}-moved"))
            .and_then(|()| match target.strip_prefix('=') {
                Some(source) => std::fs::rename(source, dir),
                None => std::os::unix::fs::symlink(target, dir),
            })
            .unwrap_or_else(|e| panic!("{REDIRECT}={value}: {e}"));
    }
}
