//! The policy's allow-list of commands.

use super::request::{deny, Verdict};
use crate::path::basename;
use crate::policy::Policy;
use crate::reason::Reason;

/// Is the command on the allow-list? By the file's kernel name, or by the name it was asked
/// for when the session could not have made that name (`redirectable`: it went through the
/// write set, where `ln -s /usr/bin/perl ls` would make any program an allowed `ls`).
pub(super) fn check_allowed(
    policy: &Policy<'_>,
    requested: &[u8],
    redirectable: bool,
    kpath: &[u8],
) -> Result<(), Verdict> {
    if !policy.has_allow_list() {
        return Ok(());
    }
    let asked = (!redirectable).then_some(requested);
    let ok = policy.allow_commands().any(|entry| {
        if entry.contains(&b'/') {
            asked == Some(entry) || entry == kpath
        } else {
            asked.is_some_and(|r| entry == basename(r)) || entry == basename(kpath)
        }
    });
    if ok {
        Ok(())
    } else {
        Err(deny(
            Reason::CommandNotAllowed,
            if requested.is_empty() {
                kpath
            } else {
                requested
            },
        ))
    }
}
