//! Everything outside the write set, read-only in the session's namespace. Landlock's write
//! rights cover writing, creating, renaming and removing, but not `chmod`, `chown`, extended
//! attributes or times: a root session could still make an outside program setuid-root, hand
//! the operator's files to another user or write the host's `/proc/sys` (a `core_pattern`
//! naming the session's ELF). Each mount outside the write set gets `MOUNT_ATTR_RDONLY` in the
//! session's own namespace (the write-set roots are mounts of their own by then, so they stay
//! writable); the kernel then refuses all of these with `EROFS`, for root and every user.

use crate::error::SealError;
use crate::mountinfo::Mount;
use crate::partition::beneath;
use std::path::{Path, PathBuf};

/// `MOUNT_ATTR_RDONLY` (`<linux/mount.h>`).
const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// Makes read-only every mount of `table` (read after the write-set roots were bound onto
/// themselves) whose point is outside every root of `roots`, and returns those points. A
/// mount this process cannot reach by its name (a directory it may not search, a mount
/// covered by a later one) is skipped: the session cannot reach it either.
pub(crate) fn outside_read_only(
    sys: &dyn crate::sys::SealSys,
    roots: &[PathBuf],
    table: &[Mount],
) -> Result<Vec<PathBuf>, SealError> {
    let lookup = crate::mountinfo::Lookup::new(table);
    let mut done: Vec<PathBuf> = Vec::new();
    for m in table {
        let point = &m.point;
        if roots.iter().any(|r| beneath(point, r)) || done.contains(point) {
            continue;
        }
        // Covered: the name leads to a mount higher up (handled as its own point).
        if lookup
            .mount_of(point)
            .is_some_and(|top| top.point != *point)
        {
            continue;
        }
        if !reachable(point) {
            continue;
        }
        sys.add_attrs(point, table, MOUNT_ATTR_RDONLY)?;
        done.push(point.clone());
    }
    Ok(done)
}

/// Can this process open `point` (`O_PATH`, following links as the table's names do)?
fn reachable(point: &Path) -> bool {
    match crate::mount_calls::reach(point) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.raw_os_error(),
            Some(libc::EACCES | libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
        ),
    }
}
