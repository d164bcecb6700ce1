//! The kernel's Landlock ABI, and whether it is enough for the partition.

use crate::error::SealError;
use landlock::ABI;

/// Test hook: an ABI version to report instead of the kernel's, only ever lower (so it can
/// simulate an old kernel or one without Landlock, never grant anything). Compiled only into
/// test builds (`cfg(test)` or the `test-hooks` feature, which only dev-dependencies enable).
#[cfg(any(test, feature = "test-hooks"))]
pub const FORCE_ABI_ENV: &str = "EXECGUARD_TEST_LANDLOCK_ABI";

/// The lowest Landlock ABI the partition needs: ABI 2 adds `REFER`, without which a handled
/// ruleset refuses every rename and hard link across directories (`EXDEV`).
pub const MIN_ABI: i64 = 2;

pub(crate) fn abi_of(abi: i64) -> ABI {
    ABI::from(i32::try_from(abi).unwrap_or(i32::MAX))
}

/// The kernel's Landlock ABI version (`Err(errno)` when there is none); in test builds,
/// lowered by [`FORCE_ABI_ENV`] when that is set.
pub fn kernel_abi() -> Result<i64, i32> {
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
    let real = if v < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOSYS))
    } else {
        Ok(v)
    };
    #[cfg(any(test, feature = "test-hooks"))]
    if let Some(forced) = std::env::var(FORCE_ABI_ENV)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        return if forced <= 0 {
            Err(libc::EOPNOTSUPP)
        } else {
            real.map(|r| r.min(forced))
        };
    }
    real
}

/// The kernel's ABI when it is enough for the partition, else the typed refusal.
pub fn partition_abi() -> Result<i64, SealError> {
    match kernel_abi() {
        Ok(abi) if abi >= MIN_ABI => Ok(abi),
        Ok(abi) => Err(SealError::Unavailable {
            detail: format!(
                "Landlock ABI {abi} has no REFER right (ABI {MIN_ABI}, Linux 5.19): renames across directories would fail"
            ),
        }),
        Err(errno) => Err(SealError::Unavailable {
            detail: format!(
                "no Landlock ({})",
                std::io::Error::from_raw_os_error(errno)
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_abi_below_two_is_unavailable() {
        // Run in a child so the variable does not leak into other tests' processes.
        if let Some(abi) = std::env::var_os("EXECGUARD_SEAL_CHILD") {
            let want_err = abi == "0";
            assert_eq!(kernel_abi().is_err(), want_err);
            match partition_abi() {
                Err(e @ SealError::Unavailable { .. }) => assert_eq!(e.code(), "seal_unavailable"),
                other => panic!("{other:?}"),
            }
            return;
        }
        for abi in ["0", "1"] {
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "abi::tests::forced_abi_below_two_is_unavailable",
                    "--nocapture",
                ])
                .env("EXECGUARD_SEAL_CHILD", abi)
                .env(FORCE_ABI_ENV, abi)
                .status()
                .unwrap();
            assert!(status.success(), "forced ABI {abi}");
        }
    }
}
