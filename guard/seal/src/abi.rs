//! The kernel's Landlock ABI, and whether it is enough for the partition.

use crate::error::SealError;
use crate::sys::SealSys;
use landlock::ABI;

/// The lowest Landlock ABI the partition needs: ABI 2 adds `REFER`, without which a handled
/// ruleset refuses every rename and hard link across directories (`EXDEV`).
pub const MIN_ABI: i64 = 2;

pub(crate) fn abi_of(abi: i64) -> ABI {
    ABI::from(i32::try_from(abi).unwrap_or(i32::MAX))
}

/// The kernel's Landlock ABI version (`Err(errno)` when there is none).
pub fn kernel_abi(sys: &dyn SealSys) -> Result<i64, i32> {
    sys.landlock_abi()
}

/// The kernel's ABI when it is enough for the partition, else the typed refusal.
pub fn partition_abi(sys: &dyn SealSys) -> Result<i64, SealError> {
    match kernel_abi(sys) {
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
    use crate::sys::RecordingSealSys;

    /// Each answer of the kernel: enough for the partition, too old (no `REFER`), none.
    #[test]
    fn the_partition_needs_abi_two() {
        /// The kernel's answer (an ABI or an errno), and the ABI or a part of the refusal.
        type Row = (Result<i64, i32>, Result<i64, &'static str>);
        let rows: [Row; 5] = [
            (Ok(7), Ok(7)),
            (Ok(2), Ok(2)),
            (Ok(1), Err("Landlock ABI 1 has no REFER right")),
            (Err(libc::EOPNOTSUPP), Err("no Landlock (")),
            (Err(libc::ENOSYS), Err("no Landlock (")),
        ];
        for (kernel, want) in rows {
            let sys = RecordingSealSys {
                abi: Some(kernel),
                ..Default::default()
            };
            match (partition_abi(&sys), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want),
                (Err(e), Err(want)) => {
                    assert_eq!(e.code(), "seal_unavailable");
                    assert!(e.to_string().contains(want), "{kernel:?}: {e}");
                }
                (got, want) => panic!("{kernel:?}: want {want:?}, got {got:?}"),
            }
            assert_eq!(sys.calls(), ["landlock_abi"]);
        }
    }
}
