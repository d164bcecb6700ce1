//! The privilege drop, in explicit, verified phases.
//!
//! As root (ephemeral sessions) the order is:
//!
//! 1. `PR_SET_KEEPCAPS=1`: keep the *permitted* set across the uid change, only so that step 5
//!    can still hold `CAP_SETPCAP`, which `PR_CAPBSET_DROP` requires. Everything kept here is
//!    cleared in step 6.
//! 2. `setgroups([])`: supplementary groups first, while `CAP_SETGID` is still effective.
//! 3. `setresgid(g, g, g)`: the gid before the uid, for the same reason.
//! 4. `setresuid(u, u, u)`: the kernel clears the effective set (and the ambient set).
//! 5. raise `CAP_SETPCAP` from permitted into effective, `PR_CAP_AMBIENT_CLEAR_ALL`, then
//!    `PR_CAPBSET_DROP` every capability still in the bounding set.
//! 6. `capset` all of effective, permitted and inheritable to zero; `PR_SET_KEEPCAPS=0`.
//! 7. `PR_SET_NO_NEW_PRIVS=1`: no later exec (setuid, file capabilities) can grant anything.
//! 8. `umask(077)`.
//!
//! A session that starts unprivileged (read-only) skips steps 1–5's id changes: it can only
//! clear what it has, and the bounding set must already be empty (`--cap-drop ALL`).
//!
//! [`verify_dropped`] then reads everything back (`getresuid`, `getresgid`, `getgroups`, `capget`,
//! `PR_CAPBSET_READ`, `PR_CAP_AMBIENT_IS_SET`, `PR_GET_NO_NEW_PRIVS`) and actively probes that
//! `setresuid(0,0,0)` and `setgroups([0])` fail; the caller refuses to exec otherwise.
//!
//! Every privileged call goes through [`Syscall`]: [`LinuxSyscall`] is the real one,
//! [`RecordingSyscall`] a stateful recording double for unit tests, always passed explicitly.

use std::cell::RefCell;
use std::io;

/// Capability numbers used here (from `linux/capability.h`).
pub const CAP_SETGID: u32 = 6;
pub const CAP_SETUID: u32 = 7;
pub const CAP_SETPCAP: u32 = 8;

const fn bit(cap: u32) -> u64 {
    1u64 << cap
}

/// The three per-thread capability sets, one bit per capability.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CapSets {
    pub effective: u64,
    pub permitted: u64,
    pub inheritable: u64,
}

impl CapSets {
    pub const EMPTY: CapSets = CapSets {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    };
}

/// Privileged and read-back system calls used by the drop.
pub trait Syscall {
    fn set_keep_caps(&self, keep: bool) -> io::Result<()>;
    fn set_groups(&self, groups: &[u32]) -> io::Result<()>;
    fn set_resgid(&self, gid: u32) -> io::Result<()>;
    fn set_resuid(&self, uid: u32) -> io::Result<()>;
    fn set_capabilities(&self, caps: CapSets) -> io::Result<()>;
    fn clear_ambient_capabilities(&self) -> io::Result<()>;
    fn drop_bounding_capability(&self, cap: u32) -> io::Result<()>;
    fn set_no_new_privs(&self) -> io::Result<()>;
    /// Sets the umask and returns the previous one.
    fn set_umask(&self, mask: u32) -> u32;

    fn get_resuid(&self) -> io::Result<[u32; 3]>;
    fn get_resgid(&self) -> io::Result<[u32; 3]>;
    fn get_groups(&self) -> io::Result<Vec<u32>>;
    fn get_capabilities(&self) -> io::Result<CapSets>;
    fn is_bounding_capability_set(&self, cap: u32) -> io::Result<bool>;
    fn is_ambient_capability_set(&self, cap: u32) -> io::Result<bool>;
    fn get_no_new_privs(&self) -> io::Result<bool>;
    /// The highest capability number the kernel knows.
    fn last_capability(&self) -> io::Result<u32>;
}

/// The real system calls.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinuxSyscall;

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn prctl(option: libc::c_int, arg2: libc::c_ulong, arg3: libc::c_ulong) -> io::Result<libc::c_int> {
    // SAFETY: every option used here takes integer arguments only (no pointers), and unused
    // trailing arguments are passed as zero as the kernel requires.
    check(unsafe { libc::prctl(option, arg2, arg3, 0 as libc::c_ulong, 0 as libc::c_ulong) })
}

/// The sets as the `caps` crate names them. A bit it has no name for is refused (`EINVAL`)
/// rather than dropped: `caps::set` would silently leave it out.
fn named_caps(mask: u64) -> io::Result<caps::CapsHashSet> {
    let named: caps::CapsHashSet = caps::all()
        .into_iter()
        .filter(|c| mask & c.bitmask() != 0)
        .collect();
    let covered = named.iter().fold(0, |m, c| m | c.bitmask());
    if covered == mask {
        Ok(named)
    } else {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }
}

fn caps_error(e: caps::errors::CapsError) -> io::Error {
    io::Error::other(e.to_string())
}

fn read_caps(set: caps::CapSet) -> io::Result<u64> {
    let held = caps::read(None, set).map_err(caps_error)?;
    Ok(held.iter().fold(0, |m, c| m | c.bitmask()))
}

impl Syscall for LinuxSyscall {
    fn set_keep_caps(&self, keep: bool) -> io::Result<()> {
        prctl(libc::PR_SET_KEEPCAPS, libc::c_ulong::from(keep), 0).map(drop)
    }

    fn set_groups(&self, groups: &[u32]) -> io::Result<()> {
        // SAFETY: the pointer and length describe the live `groups` slice (gid_t is u32).
        check(unsafe { libc::setgroups(groups.len(), groups.as_ptr()) }).map(drop)
    }

    fn set_resgid(&self, gid: u32) -> io::Result<()> {
        // SAFETY: plain integer arguments; the result is checked.
        check(unsafe { libc::setresgid(gid, gid, gid) }).map(drop)
    }

    fn set_resuid(&self, uid: u32) -> io::Result<()> {
        // SAFETY: plain integer arguments; the result is checked.
        check(unsafe { libc::setresuid(uid, uid, uid) }).map(drop)
    }

    fn set_capabilities(&self, caps: CapSets) -> io::Result<()> {
        // One set at a time, in the order the kernel accepts a reduction in: effective first
        // (it must stay within permitted), permitted last (nothing can be raised from it
        // afterwards). Each `caps::set` replaces the whole set, bits it has no name for included.
        let (effective, inheritable, permitted) = (
            named_caps(caps.effective)?,
            named_caps(caps.inheritable)?,
            named_caps(caps.permitted)?,
        );
        caps::set(None, caps::CapSet::Effective, &effective).map_err(caps_error)?;
        caps::set(None, caps::CapSet::Inheritable, &inheritable).map_err(caps_error)?;
        caps::set(None, caps::CapSet::Permitted, &permitted).map_err(caps_error)
    }

    fn clear_ambient_capabilities(&self) -> io::Result<()> {
        caps::clear(None, caps::CapSet::Ambient).map_err(caps_error)
    }

    // The bounding and ambient sets are read and dropped by number, with `prctl`: the drop
    // walks every capability the kernel knows (`last_capability`), and a kernel newer than the
    // `caps` crate knows capabilities the crate has no name for.
    fn drop_bounding_capability(&self, cap: u32) -> io::Result<()> {
        prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0).map(drop)
    }

    fn set_no_new_privs(&self) -> io::Result<()> {
        prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0).map(drop)
    }

    fn set_umask(&self, mask: u32) -> u32 {
        // SAFETY: umask cannot fail and takes a plain integer.
        unsafe { libc::umask(mask as libc::mode_t) }
    }

    fn get_resuid(&self) -> io::Result<[u32; 3]> {
        let (mut r, mut e, mut s) = (0, 0, 0);
        // SAFETY: the three pointers are distinct live u32 locals the kernel writes once.
        check(unsafe { libc::getresuid(&mut r, &mut e, &mut s) })?;
        Ok([r, e, s])
    }

    fn get_resgid(&self) -> io::Result<[u32; 3]> {
        let (mut r, mut e, mut s) = (0, 0, 0);
        // SAFETY: the three pointers are distinct live u32 locals the kernel writes once.
        check(unsafe { libc::getresgid(&mut r, &mut e, &mut s) })?;
        Ok([r, e, s])
    }

    fn get_groups(&self) -> io::Result<Vec<u32>> {
        // SAFETY: a zero size with a null pointer only asks for the count.
        let n = check(unsafe { libc::getgroups(0, std::ptr::null_mut()) })?;
        let mut groups = vec![0u32; usize::try_from(n).unwrap_or(0)];
        // SAFETY: the buffer holds exactly `n` gid_t slots and lives across the call.
        let got = check(unsafe { libc::getgroups(n, groups.as_mut_ptr()) })?;
        groups.truncate(usize::try_from(got).unwrap_or(0));
        Ok(groups)
    }

    fn get_capabilities(&self) -> io::Result<CapSets> {
        // `caps::read` reports only the capabilities it has names for: on a kernel that knows
        // more, an empty answer would not prove an empty set, so the read-back refuses.
        let named = caps::all().iter().map(|c| u32::from(c.index())).max();
        let last = self.last_capability()?;
        if named.is_none_or(|named| last > named) {
            return Err(io::Error::other(format!(
                "the kernel knows capability {last}, which the caps crate cannot read back"
            )));
        }
        Ok(CapSets {
            effective: read_caps(caps::CapSet::Effective)?,
            permitted: read_caps(caps::CapSet::Permitted)?,
            inheritable: read_caps(caps::CapSet::Inheritable)?,
        })
    }

    fn is_bounding_capability_set(&self, cap: u32) -> io::Result<bool> {
        prctl(libc::PR_CAPBSET_READ, libc::c_ulong::from(cap), 0).map(|v| v == 1)
    }

    fn is_ambient_capability_set(&self, cap: u32) -> io::Result<bool> {
        prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_IS_SET as libc::c_ulong,
            libc::c_ulong::from(cap),
        )
        .map(|v| v == 1)
    }

    fn get_no_new_privs(&self) -> io::Result<bool> {
        prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0).map(|v| v == 1)
    }

    fn last_capability(&self) -> io::Result<u32> {
        // PR_CAPBSET_READ answers EINVAL for capabilities the kernel does not know.
        let mut last = None;
        for cap in 0..64 {
            match prctl(libc::PR_CAPBSET_READ, libc::c_ulong::from(cap), 0) {
                Ok(_) => last = Some(cap),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
                Err(e) => return Err(e),
            }
        }
        last.ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
    }
}

/// Who the process becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub uid: u32,
    pub gid: u32,
}

/// Whether the process starts as root (ephemeral) or already as the mapped user (read-only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    Root,
    Unprivileged,
}

/// What was actually enforced, as read back from the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropReport {
    pub uid: u32,
    pub gid: u32,
    /// Capabilities removed from the bounding set by this drop.
    pub bounding_dropped: u32,
    pub no_new_privs: bool,
    pub previous_umask: u32,
}

/// One variant per failing step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrivError {
    #[error("refusing to drop to uid/gid 0")]
    TargetIsRoot,
    #[error("failed to set keep-caps: {0}")]
    SetKeepCaps(#[source] io::Error),
    #[error("failed to set supplementary groups: {0}")]
    SetGroups(#[source] io::Error),
    #[error("failed to set gid: {0}")]
    SetResgid(#[source] io::Error),
    #[error("failed to set uid: {0}")]
    SetResuid(#[source] io::Error),
    #[error("failed to set capabilities: {0}")]
    SetCapabilities(#[source] io::Error),
    #[error("failed to clear ambient capabilities: {0}")]
    ClearAmbient(#[source] io::Error),
    #[error("failed to drop capability {cap} from the bounding set: {source}")]
    DropBounding { cap: u32, source: io::Error },
    #[error("failed to set no_new_privs: {0}")]
    SetNoNewPrivs(#[source] io::Error),
    #[error("failed to read back privileges: {0}")]
    ReadBack(#[source] io::Error),
    #[error("privileges remain after the drop: {0}")]
    Regainable(String),
}

impl PrivError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::TargetIsRoot => "drop_target_root",
            Self::Regainable(_) => "privilege_regainable",
            Self::ReadBack(_) => "privilege_readback_failed",
            _ => "privilege_drop_failed",
        }
    }
}

/// Drops every privilege in the documented order, then verifies with [`verify_dropped`].
pub fn drop_privileges(
    sys: &dyn Syscall,
    target: Target,
    start: Start,
) -> Result<DropReport, PrivError> {
    if target.uid == 0 || target.gid == 0 {
        return Err(PrivError::TargetIsRoot);
    }
    let last = sys.last_capability().map_err(PrivError::ReadBack)?;
    if start == Start::Root {
        sys.set_keep_caps(true).map_err(PrivError::SetKeepCaps)?;
        sys.set_groups(&[]).map_err(PrivError::SetGroups)?;
        sys.set_resgid(target.gid).map_err(PrivError::SetResgid)?;
        sys.set_resuid(target.uid).map_err(PrivError::SetResuid)?;
        // setresuid cleared the effective set; CAP_SETPCAP is needed for PR_CAPBSET_DROP.
        let caps = sys.get_capabilities().map_err(PrivError::ReadBack)?;
        if caps.permitted & bit(CAP_SETPCAP) != 0 {
            let raised = CapSets {
                effective: bit(CAP_SETPCAP),
                permitted: caps.permitted,
                inheritable: 0,
            };
            sys.set_capabilities(raised)
                .map_err(PrivError::SetCapabilities)?;
        }
    }
    sys.clear_ambient_capabilities()
        .map_err(PrivError::ClearAmbient)?;
    let mut bounding_dropped = 0;
    for cap in 0..=last {
        if sys
            .is_bounding_capability_set(cap)
            .map_err(PrivError::ReadBack)?
        {
            sys.drop_bounding_capability(cap)
                .map_err(|source| PrivError::DropBounding { cap, source })?;
            bounding_dropped += 1;
        }
    }
    sys.set_capabilities(CapSets::EMPTY)
        .map_err(PrivError::SetCapabilities)?;
    if start == Start::Root {
        sys.set_keep_caps(false).map_err(PrivError::SetKeepCaps)?;
    }
    // Last of the kernel steps: from here on no exec can add privileges.
    sys.set_no_new_privs().map_err(PrivError::SetNoNewPrivs)?;
    let previous_umask = sys.set_umask(0o077);
    let mut report = verify_dropped(sys, target)?;
    report.bounding_dropped = bounding_dropped;
    report.previous_umask = previous_umask;
    Ok(report)
}

/// Reads everything back and probes that nothing can be regained.
pub fn verify_dropped(sys: &dyn Syscall, target: Target) -> Result<DropReport, PrivError> {
    let fail = |what: String| Err(PrivError::Regainable(what));
    let uids = sys.get_resuid().map_err(PrivError::ReadBack)?;
    if uids != [target.uid; 3] || target.uid == 0 {
        return fail(format!("uids {uids:?}, expected {}", target.uid));
    }
    let gids = sys.get_resgid().map_err(PrivError::ReadBack)?;
    if gids != [target.gid; 3] || target.gid == 0 {
        return fail(format!("gids {gids:?}, expected {}", target.gid));
    }
    let groups = sys.get_groups().map_err(PrivError::ReadBack)?;
    if groups.iter().any(|g| *g != target.gid) {
        return fail(format!("supplementary groups {groups:?}"));
    }
    let caps = sys.get_capabilities().map_err(PrivError::ReadBack)?;
    if caps != CapSets::EMPTY {
        return fail(format!("capabilities {caps:x?}"));
    }
    let last = sys.last_capability().map_err(PrivError::ReadBack)?;
    for cap in 0..=last {
        if sys
            .is_bounding_capability_set(cap)
            .map_err(PrivError::ReadBack)?
        {
            return fail(format!("capability {cap} in the bounding set"));
        }
        if sys
            .is_ambient_capability_set(cap)
            .map_err(PrivError::ReadBack)?
        {
            return fail(format!("capability {cap} in the ambient set"));
        }
    }
    if !sys.get_no_new_privs().map_err(PrivError::ReadBack)? {
        return fail("no_new_privs is not set".to_owned());
    }
    // Active probes: these must fail now. Success would mean root is one call away.
    if sys.set_resuid(0).is_ok() {
        return fail("setresuid(0) succeeded".to_owned());
    }
    if sys.set_groups(&[0]).is_ok() {
        return fail("setgroups([0]) succeeded".to_owned());
    }
    Ok(DropReport {
        uid: target.uid,
        gid: target.gid,
        bounding_dropped: 0,
        no_new_privs: true,
        previous_umask: 0,
    })
}

/// A stateful recording double that models the kernel rules the drop depends on.
#[derive(Debug)]
pub struct RecordingSyscall {
    state: RefCell<Model>,
    calls: RefCell<Vec<String>>,
    /// Name of a call that fails with EPERM (to test each failure path).
    fail_on: Option<&'static str>,
    /// When true, the model "forgets" to apply one rule: setresuid(0) always succeeds.
    pub broken_setuid: bool,
}

#[derive(Clone, Debug)]
struct Model {
    uid: [u32; 3],
    gid: [u32; 3],
    groups: Vec<u32>,
    caps: CapSets,
    bounding: u64,
    ambient: u64,
    keep_caps: bool,
    nnp: bool,
    umask: u32,
    last_cap: u32,
}

impl RecordingSyscall {
    /// A root process as the host launcher starts it: `--cap-drop ALL` plus
    /// `--cap-add SETUID SETGID SETPCAP`.
    pub fn container_root() -> Self {
        let caps = bit(CAP_SETUID) | bit(CAP_SETGID) | bit(CAP_SETPCAP);
        Self::with(Model {
            uid: [0; 3],
            gid: [0; 3],
            groups: vec![0],
            caps: CapSets {
                effective: caps,
                permitted: caps,
                inheritable: 0,
            },
            bounding: caps,
            ambient: 0,
            keep_caps: false,
            nnp: false,
            umask: 0o022,
            last_cap: 40,
        })
    }

    /// A root process without CAP_SETPCAP (the bounding set cannot be cleared).
    pub fn container_root_without_setpcap() -> Self {
        let s = Self::container_root();
        {
            let mut m = s.state.borrow_mut();
            let caps = bit(CAP_SETUID) | bit(CAP_SETGID);
            m.caps = CapSets {
                effective: caps,
                permitted: caps,
                inheritable: 0,
            };
            m.bounding = caps;
        }
        s
    }

    /// A read-only session: already the mapped user, empty bounding set.
    pub fn unprivileged(uid: u32, gid: u32) -> Self {
        Self::with(Model {
            uid: [uid; 3],
            gid: [gid; 3],
            groups: vec![],
            caps: CapSets::EMPTY,
            bounding: 0,
            ambient: 0,
            keep_caps: false,
            nnp: false,
            umask: 0o022,
            last_cap: 40,
        })
    }

    fn with(model: Model) -> Self {
        Self {
            state: RefCell::new(model),
            calls: RefCell::new(Vec::new()),
            fail_on: None,
            broken_setuid: false,
        }
    }

    /// Makes the named call fail with EPERM.
    pub fn failing_on(mut self, call: &'static str) -> Self {
        self.fail_on = Some(call);
        self
    }

    /// The state-changing calls made so far, in order (read-backs are not recorded).
    pub fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    fn record(&self, name: &'static str, detail: String) -> io::Result<()> {
        self.calls.borrow_mut().push(if detail.is_empty() {
            name.to_owned()
        } else {
            format!("{name}({detail})")
        });
        if self.fail_on == Some(name) {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        Ok(())
    }

    fn eperm() -> io::Error {
        io::Error::from_raw_os_error(libc::EPERM)
    }

    fn has(m: &Model, cap: u32) -> bool {
        m.caps.effective & bit(cap) != 0
    }
}

impl Syscall for RecordingSyscall {
    fn set_keep_caps(&self, keep: bool) -> io::Result<()> {
        self.record("set_keep_caps", keep.to_string())?;
        self.state.borrow_mut().keep_caps = keep;
        Ok(())
    }

    fn set_groups(&self, groups: &[u32]) -> io::Result<()> {
        self.record("set_groups", format!("{groups:?}"))?;
        let mut m = self.state.borrow_mut();
        if !Self::has(&m, CAP_SETGID) {
            return Err(Self::eperm());
        }
        m.groups = groups.to_vec();
        Ok(())
    }

    fn set_resgid(&self, gid: u32) -> io::Result<()> {
        self.record("set_resgid", gid.to_string())?;
        let mut m = self.state.borrow_mut();
        if !Self::has(&m, CAP_SETGID) && !m.gid.contains(&gid) {
            return Err(Self::eperm());
        }
        m.gid = [gid; 3];
        Ok(())
    }

    fn set_resuid(&self, uid: u32) -> io::Result<()> {
        self.record("set_resuid", uid.to_string())?;
        let mut m = self.state.borrow_mut();
        if !self.broken_setuid && !Self::has(&m, CAP_SETUID) && !m.uid.contains(&uid) {
            return Err(Self::eperm());
        }
        let was_root = m.uid.contains(&0);
        m.uid = [uid; 3];
        if was_root && uid != 0 {
            m.caps.effective = 0;
            m.ambient = 0;
            if !m.keep_caps {
                m.caps.permitted = 0;
            }
        }
        Ok(())
    }

    fn set_capabilities(&self, caps: CapSets) -> io::Result<()> {
        self.record(
            "set_capabilities",
            format!(
                "e={:#x},p={:#x},i={:#x}",
                caps.effective, caps.permitted, caps.inheritable
            ),
        )?;
        let mut m = self.state.borrow_mut();
        if caps.permitted & !m.caps.permitted != 0 || caps.effective & !caps.permitted != 0 {
            return Err(Self::eperm());
        }
        m.caps = caps;
        Ok(())
    }

    fn clear_ambient_capabilities(&self) -> io::Result<()> {
        self.record("clear_ambient_capabilities", String::new())?;
        self.state.borrow_mut().ambient = 0;
        Ok(())
    }

    fn drop_bounding_capability(&self, cap: u32) -> io::Result<()> {
        self.record("drop_bounding_capability", cap.to_string())?;
        let mut m = self.state.borrow_mut();
        if !Self::has(&m, CAP_SETPCAP) {
            return Err(Self::eperm());
        }
        m.bounding &= !bit(cap);
        Ok(())
    }

    fn set_no_new_privs(&self) -> io::Result<()> {
        self.record("set_no_new_privs", String::new())?;
        self.state.borrow_mut().nnp = true;
        Ok(())
    }

    fn set_umask(&self, mask: u32) -> u32 {
        self.calls.borrow_mut().push(format!("set_umask({mask:o})"));
        std::mem::replace(&mut self.state.borrow_mut().umask, mask)
    }

    fn get_resuid(&self) -> io::Result<[u32; 3]> {
        Ok(self.state.borrow().uid)
    }

    fn get_resgid(&self) -> io::Result<[u32; 3]> {
        Ok(self.state.borrow().gid)
    }

    fn get_groups(&self) -> io::Result<Vec<u32>> {
        Ok(self.state.borrow().groups.clone())
    }

    fn get_capabilities(&self) -> io::Result<CapSets> {
        Ok(self.state.borrow().caps)
    }

    fn is_bounding_capability_set(&self, cap: u32) -> io::Result<bool> {
        Ok(self.state.borrow().bounding & bit(cap) != 0)
    }

    fn is_ambient_capability_set(&self, cap: u32) -> io::Result<bool> {
        Ok(self.state.borrow().ambient & bit(cap) != 0)
    }

    fn get_no_new_privs(&self) -> io::Result<bool> {
        Ok(self.state.borrow().nnp)
    }

    fn last_capability(&self) -> io::Result<u32> {
        Ok(self.state.borrow().last_cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Target = Target {
        uid: 1000,
        gid: 1001,
    };

    #[test]
    fn root_drop_runs_in_the_documented_order_and_reports_what_it_enforced() {
        let sys = RecordingSyscall::container_root();
        let report = drop_privileges(&sys, T, Start::Root).unwrap();
        assert_eq!(
            report,
            DropReport {
                uid: 1000,
                gid: 1001,
                bounding_dropped: 3,
                no_new_privs: true,
                previous_umask: 0o022
            }
        );
        let calls = sys.calls();
        let want = [
            "set_keep_caps(true)",
            "set_groups([])",
            "set_resgid(1001)",
            "set_resuid(1000)",
            "set_capabilities(e=0x100,p=0x1c0,i=0x0)",
            "clear_ambient_capabilities",
            "drop_bounding_capability(6)",
            "drop_bounding_capability(7)",
            "drop_bounding_capability(8)",
            "set_capabilities(e=0x0,p=0x0,i=0x0)",
            "set_keep_caps(false)",
            "set_no_new_privs",
            "set_umask(77)",
            // verification probes, both refused
            "set_resuid(0)",
            "set_groups([0])",
        ];
        assert_eq!(calls, want);
    }

    #[test]
    fn every_failing_step_stops_the_drop() {
        for (call, code) in [
            ("set_keep_caps", "privilege_drop_failed"),
            ("set_groups", "privilege_drop_failed"),
            ("set_resgid", "privilege_drop_failed"),
            ("set_resuid", "privilege_drop_failed"),
            ("set_capabilities", "privilege_drop_failed"),
            ("clear_ambient_capabilities", "privilege_drop_failed"),
            ("drop_bounding_capability", "privilege_drop_failed"),
            ("set_no_new_privs", "privilege_drop_failed"),
        ] {
            let sys = RecordingSyscall::container_root().failing_on(call);
            let err = drop_privileges(&sys, T, Start::Root).expect_err(call);
            assert_eq!(err.code(), code, "{call}: {err}");
            assert_eq!(
                sys.calls()
                    .last()
                    .map(|c| c.split('(').next().unwrap().to_owned()),
                Some(call.to_owned())
            );
            assert!(
                !sys.calls().iter().any(|c| c.starts_with("set_umask")),
                "{call}: stopped before umask"
            );
        }
    }

    #[test]
    fn without_setpcap_the_bounding_set_cannot_be_cleared_and_the_drop_is_refused() {
        let sys = RecordingSyscall::container_root_without_setpcap();
        let err = drop_privileges(&sys, T, Start::Root).unwrap_err();
        assert!(
            matches!(
                err,
                PrivError::DropBounding {
                    cap: CAP_SETGID,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_root_target_is_refused_before_any_call() {
        let sys = RecordingSyscall::container_root();
        for t in [Target { uid: 0, gid: 5 }, Target { uid: 5, gid: 0 }] {
            assert_eq!(
                drop_privileges(&sys, t, Start::Root).unwrap_err().code(),
                "drop_target_root"
            );
        }
        assert!(sys.calls().is_empty());
    }

    #[test]
    fn unprivileged_start_only_clears_and_locks() {
        let sys = RecordingSyscall::unprivileged(1000, 1001);
        drop_privileges(&sys, T, Start::Unprivileged).unwrap();
        assert_eq!(
            sys.calls(),
            [
                "clear_ambient_capabilities",
                "set_capabilities(e=0x0,p=0x0,i=0x0)",
                "set_no_new_privs",
                "set_umask(77)",
                "set_resuid(0)",
                "set_groups([0])"
            ]
        );
    }

    #[test]
    fn verification_catches_each_leftover() {
        // Wrong user: an unprivileged start as another uid.
        let sys = RecordingSyscall::unprivileged(1002, 1001);
        assert_eq!(
            drop_privileges(&sys, T, Start::Unprivileged)
                .unwrap_err()
                .code(),
            "privilege_regainable"
        );
        // A kernel that would let setresuid(0) succeed.
        let mut sys = RecordingSyscall::container_root();
        sys.broken_setuid = true;
        let err = drop_privileges(&sys, T, Start::Root).unwrap_err();
        assert!(err.to_string().contains("setresuid(0) succeeded"), "{err}");
        // Nothing dropped at all.
        let sys = RecordingSyscall::container_root();
        let err = verify_dropped(&sys, T).unwrap_err();
        assert_eq!(err.code(), "privilege_regainable");
        // Unprivileged start with a non-empty bounding set and no CAP_SETPCAP: refused.
        let sys = RecordingSyscall::unprivileged(1000, 1001);
        sys.state.borrow_mut().bounding = bit(CAP_SETUID);
        assert!(matches!(
            drop_privileges(&sys, T, Start::Unprivileged),
            Err(PrivError::DropBounding { .. })
        ));
    }
}
