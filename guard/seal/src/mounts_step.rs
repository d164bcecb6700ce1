//! The seal's first step: the private mount namespace as [`MountsMode`] asks, or the
//! reduction a session goes on at without it (said once on stderr), or the refusal. Every
//! fallback is decided here, from the answers of the seam ([`SealSys`]).

use crate::error::SealError;
use crate::sys::SealSys;
use crate::{namespace, report, MountsMode, Options, Partition};
use execguard_policy::Reduction;

/// What the mounts step ([`mounts`]) made.
pub(crate) struct Mounts {
    pub namespace: Option<namespace::Namespace>,
    /// The namespace with all its mounts.
    pub made: bool,
    /// The reductions it leaves the session at, each said once on stderr.
    pub reductions: Vec<Reduction>,
}

/// The seal's first step: the private namespace and its mounts as `options.mounts` asks, or
/// the reduction the session goes on at without them, or the refusal.
pub(crate) fn mounts(
    sys: &dyn SealSys,
    partition: &Partition,
    options: &Options,
) -> Result<Mounts, SealError> {
    let mut reductions = Vec::new();
    // Inside a session that made them already (a nested `execguard run`), no new namespace
    // may be made (the outer filter refuses it) and the write set is noexec already: keep
    // those. Asked only when the mounts could not all be made (also when a bind failed after
    // the write set was remounted noexec): reading the mounts costs every session's start.
    let inherited = || {
        let table = sys.mount_table().unwrap_or_else(|_| Vec::new().into());
        let m = report::report_from(partition, &table);
        !m.is_empty() && m.iter().all(|m| m.noexec)
    };
    // A user namespace cannot be left once entered, and a kernel or LSM may refuse part of it
    // (Ubuntu's restricted user namespaces): that process can only exit. A required namespace
    // is tried here directly, since without it the session is refused anyway. One that may be
    // done without is tried in a child first (`probe`, about 0.3 ms of CPU), so that the
    // session can go on without it. A bind that fails after that leaves the mounts made so
    // far, which only take exec or writes away: the namespace is kept (and reported
    // incomplete), but counts as not made.
    let tried = match options.mounts {
        MountsMode::Off => None,
        MountsMode::Required => Some(namespace::isolate(sys, partition, options.world)),
        MountsMode::BestEffort => Some(
            namespace::probe(sys).and_then(|()| namespace::isolate(sys, partition, options.world)),
        ),
    };
    let (namespace, failure) = match tried {
        None => (None, None),
        Some(Ok((namespace, failed))) => (Some(namespace), failed),
        Some(Err(
            e @ (SealError::NamespaceUnfinished { .. }
            | SealError::World { .. }
            | SealError::Network { .. }),
        )) => return Err(e),
        Some(Err(e)) => (None, Some(e)),
    };
    let made = namespace.is_some() && failure.is_none();
    if let Some(e) = failure {
        // Read once: the whole write set noexec already?
        match (namespace.is_some(), inherited()) {
            // A nested session: the outer mounts hold, and its exec dirs work.
            (false, true) => {}
            _ if options.mounts == MountsMode::Required => return Err(e),
            // Half made after the noexec pass: mappings are refused, but the exec dirs not
            // made read-only yet are noexec with their roots, so their programs do not run.
            (true, true) => {
                eprintln!("execguard: notice: the exec dirs are not all mounted executable ({e}): programs in them may not run in this session");
                reductions.push(Reduction::ExecDirsNoexec);
            }
            (_, false) => {
                eprintln!("execguard: notice: the write set is not mounted noexec ({e}): the guard still refuses written objects to dlopen, LD_PRELOAD and the loader, but not a program that maps a written file executable itself (FFI mmap)");
                reductions.push(Reduction::MappingsGuardOnly);
            }
        }
    }
    // The kept audit's key is hidden only by a mount of the namespace.
    if !made && !partition.hidden.is_empty() {
        eprintln!("execguard: notice: the audit signing key is not hidden from this session (no mount namespace): its kept log's signatures do not prove it untouched by the session");
        reductions.push(Reduction::AuditKeyReadable);
    }
    Ok(Mounts {
        namespace,
        made,
        reductions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mountinfo::parse_mount;
    use crate::sys::RecordingSealSys;

    /// What a row wants: the reductions and whether a namespace was kept (and complete), or
    /// the refusal's code and a part of its text.
    #[derive(Debug)]
    enum Want {
        Goes(&'static [Reduction], Option<bool>),
        Refused(&'static str, &'static str),
    }

    struct Row {
        mounts: MountsMode,
        /// The ids the double answers (root, or a user's).
        uid: u32,
        /// The call refused, by the start of its record (`{home}`, `{bin}` for the paths).
        refuse: Option<&'static str>,
        /// The write set is `noexec` already in the mount table (a nested session).
        table_noexec: bool,
        hidden: bool,
        want: Want,
    }

    fn row(mounts: MountsMode, uid: u32, refuse: Option<&'static str>, want: Want) -> Row {
        Row {
            mounts,
            uid,
            refuse,
            table_noexec: false,
            hidden: false,
            want,
        }
    }

    /// Every way on from the kernel's answers: the namespace made; the session refused when the
    /// mounts are required; reduced (said once) when they may be done without; a nested
    /// session's outer mounts kept; a user namespace that cannot be finished always refused.
    #[test]
    fn each_failure_of_the_mounts_is_refused_or_reduced_as_documented() {
        use Reduction::{AuditKeyReadable, ExecDirsNoexec, MappingsGuardOnly};
        use Want::{Goes, Refused};
        let (req, best) = (MountsMode::Required, MountsMode::BestEffort);
        let rows = [
            row(MountsMode::Off, 0, None, Goes(&[], None)),
            row(req, 0, None, Goes(&[], Some(true))),
            row(req, 1001, None, Goes(&[], Some(true))),
            row(
                req,
                0,
                Some("unshare("),
                Refused("noexec_unavailable", "unshare(CLONE_NEWNS) /"),
            ),
            row(best, 0, Some("unshare("), Goes(&[MappingsGuardOnly], None)),
            row(
                best,
                1001,
                Some("unshare("),
                Goes(&[MappingsGuardOnly], None),
            ),
            Row {
                table_noexec: true,
                ..row(best, 0, Some("unshare("), Goes(&[], None))
            },
            Row {
                hidden: true,
                ..row(
                    best,
                    0,
                    Some("unshare("),
                    Goes(&[MappingsGuardOnly, AuditKeyReadable], None),
                )
            },
            row(
                req,
                0,
                Some("bind {home}"),
                Refused("noexec_unavailable", "bind"),
            ),
            row(
                best,
                0,
                Some("bind {home}"),
                Goes(&[MappingsGuardOnly], Some(false)),
            ),
            Row {
                table_noexec: true,
                ..row(
                    best,
                    0,
                    Some("bind {bin}"),
                    Goes(&[ExecDirsNoexec], Some(false)),
                )
            },
            Row {
                table_noexec: true,
                ..row(
                    req,
                    0,
                    Some("bind {bin}"),
                    Refused("noexec_unavailable", "bind"),
                )
            },
            row(
                best,
                1001,
                Some("write /proc/self/uid_map"),
                Goes(&[MappingsGuardOnly], None),
            ),
            row(
                req,
                1001,
                Some("write /proc/self/uid_map"),
                Refused("noexec_unavailable", "cannot leave"),
            ),
            row(
                best,
                0,
                Some("mount_setattr {home}"),
                Goes(&[MappingsGuardOnly], Some(false)),
            ),
        ];
        for (n, r) in rows.iter().enumerate() {
            let tmp = tempfile::tempdir().unwrap();
            let home = tmp.path().join("home");
            let bin = home.join(".local/bin");
            let key = tmp.path().join("key");
            for d in [&bin, &key] {
                std::fs::create_dir_all(d).unwrap();
            }
            let mut partition = Partition::new([home.clone()]).with_exec_dirs([bin.clone()]);
            if r.hidden {
                partition.hidden.push(key.clone());
            }
            let options = if r.table_noexec {
                "rw,nosuid,noexec"
            } else {
                "rw"
            };
            // The partition's write set holds `/dev` too, on the root mount here.
            let root = format!("1 0 8:1 / / {options} - ext4 /dev/sda1 rw");
            let line = format!(
                "40 1 8:1 / {} {options} - ext4 /dev/sda1 rw",
                home.display()
            );
            let named = |s: &str| {
                s.replace("{home}", &home.display().to_string())
                    .replace("{bin}", &bin.display().to_string())
            };
            let refuse: Vec<(&'static str, i32)> = r
                .refuse
                .map(|p| (&*Box::leak(named(p).into_boxed_str()), libc::EPERM))
                .into_iter()
                .collect();
            let sys = RecordingSealSys {
                refuse,
                table: [root.as_bytes(), line.as_bytes()]
                    .iter()
                    .map(|l| parse_mount(l).unwrap())
                    .collect(),
                ids: (r.uid, r.uid),
                ..Default::default()
            };
            let opts = Options {
                memfd_noexec: true,
                mounts: r.mounts,
                reduced: None,
                world: None,
            };
            let got = mounts(&sys, &partition, &opts);
            let calls = sys.calls();
            match (&r.want, got) {
                (Want::Goes(reductions, namespace), Ok(m)) => {
                    assert_eq!(m.reductions, *reductions, "row {n}: {calls:?}");
                    let kept = m.namespace.as_ref().map(|ns| ns.incomplete.is_none());
                    assert_eq!(kept, *namespace, "row {n}: {calls:?}");
                    assert_eq!(m.made, *namespace == Some(true), "row {n}");
                }
                (Want::Refused(code, text), Err(e)) => {
                    assert_eq!(e.code(), *code, "row {n}: {e}");
                    assert!(e.to_string().contains(text), "row {n}: {e}");
                }
                (want, got) => panic!(
                    "row {n}: want {want:?}, got {:?}; {calls:?}",
                    got.map(|m| m.reductions)
                ),
            }
            // A namespace made takes exec from the write set and writes from the exec dir.
            if matches!(r.want, Want::Goes(_, Some(true))) {
                let want = [
                    format!("bind {}", home.display()),
                    format!("mount_setattr {}", home.display()),
                    format!("bind {}", bin.display()),
                ];
                for w in want {
                    assert!(
                        calls.iter().any(|c| c.starts_with(&w)),
                        "row {n}: {w}: {calls:?}"
                    );
                }
            }
            if r.mounts == MountsMode::Off {
                assert!(calls.is_empty(), "{calls:?}");
            }
        }
    }
}
