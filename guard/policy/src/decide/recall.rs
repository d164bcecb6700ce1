//! The glue to the process's memo of immutable exec targets ([`crate::memo`]): what a decision
//! may recall from it and what it offers to it.

use super::inspect::{Hop, ELF_MAGIC};
use super::request::{Context, Target};
use crate::path::is_under;
use crate::sys::Sys;

/// Fills `hop` from the memo ([`crate::memo`]) when the target is remembered there and a
/// `stat` of it still gives the same identity, size and change time.
pub(super) fn recall<S: Sys>(
    sys: &mut S,
    ctx: &Context<'_, '_>,
    target: Target<'_>,
    hop: &mut Hop,
) -> bool {
    let (Some(memo), Target::Path(path)) = (&ctx.memo, target) else {
        return false;
    };
    if !ctx.policy.seal() || !path.starts_with(b"/") {
        return false;
    }
    let Some(kept) = memo.recall(path, &mut hop.kpath) else {
        return false;
    };
    match sys.stat(path) {
        Ok(now) if now == kept => {}
        _ => return false,
    }
    hop.info = kept;
    hop.head[..ELF_MAGIC.len()].copy_from_slice(ELF_MAGIC);
    hop.head_len = ELF_MAGIC.len();
    hop.readable = true;
    hop.touched = false;
    true
}

/// Offers a freshly inspected target to the memo, if it is what the memo may keep: sealed, a
/// readable ELF outside the write set (the caller's `mutable` said no), named by a normal
/// absolute path (no empty, `.` or `..` component) that the session cannot redirect and that
/// means the same in every process (`touched`: nothing walked one by one in the write set,
/// nothing on the way in `/proc`).
pub(super) fn offer(ctx: &Context<'_, '_>, target: Target<'_>, hop: &Hop) {
    let (Some(memo), Target::Path(path)) = (&ctx.memo, target) else {
        return;
    };
    if ctx.policy.seal()
        && is_normal_absolute(path)
        && !is_under(path, b"/proc")
        && hop.readable
        && !hop.touched
        && hop.info.is_regular()
        && hop.info.nlink > 0
        && hop.head[..hop.head_len].starts_with(ELF_MAGIC)
    {
        memo.offer(path, hop.kpath.as_bytes(), &hop.info);
    }
}

/// An absolute path with no empty, `.` or `..` component.
fn is_normal_absolute(path: &[u8]) -> bool {
    path.len() > 1
        && path[0] == b'/'
        && path[1..]
            .split(|&c| c == b'/')
            .all(|c| !matches!(c, b"" | b"." | b".."))
}
