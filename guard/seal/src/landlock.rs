//! The Landlock half of the partition: the rules (execute outside the write set and on the
//! exec dirs, the write rights beneath the write set) and the ruleset the kernel takes.

use crate::abi::{abi_of, partition_abi};
use crate::error::SealError;
use crate::mount_calls::{flags_of, open_path};
use crate::partition::{beneath, Partition};
use crate::report::{self, LandlockReport, RuleReport};
use crate::sys::{SealSys, Step};
use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use std::path::{Path, PathBuf};

/// The write rights the partition handles, each where the kernel's ABI has it. `ResolveUnix`
/// (ABI 9) is left unhandled: connecting to a socket writes no file.
pub fn write_rights(abi: i64) -> BitFlags<AccessFs> {
    let all = AccessFs::WriteFile
        | AccessFs::RemoveDir
        | AccessFs::RemoveFile
        | AccessFs::MakeChar
        | AccessFs::MakeDir
        | AccessFs::MakeReg
        | AccessFs::MakeSock
        | AccessFs::MakeFifo
        | AccessFs::MakeBlock
        | AccessFs::MakeSym
        | AccessFs::Refer
        | AccessFs::Truncate
        | AccessFs::IoctlDev;
    all & AccessFs::from_all(abi_of(abi))
}

/// For the documentation of the report: every write right the partition may handle.
pub const WRITE_RIGHTS: &[&str] = &[
    "write_file",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
];

/// The device files a session may write (`/dev/pts` with every terminal beneath it). Other
/// devices are read-only in a session: a disk or `/dev/mem` written would change programs.
pub const WRITABLE_DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Applies only the Landlock half of the partition (tests, and callers that make their own
/// mounts). `mounts_protect_exec_dirs`: the exec dirs are read-only mounts already, so the
/// write rights can be granted on whole write-set roots.
pub fn landlock_partition(
    sys: &dyn SealSys,
    partition: &Partition,
    mounts_protect_exec_dirs: bool,
) -> Result<LandlockReport, SealError> {
    let abi = partition_abi(sys)?;
    landlock_rules(sys, partition, abi, mounts_protect_exec_dirs)
}

/// One rule to add: a path and what it is granted.
struct Grant {
    path: PathBuf,
    access: BitFlags<AccessFs>,
    side: &'static str,
}

/// The rules of the partition, before they meet the kernel (tests read them).
fn plan(partition: &Partition, abi: i64, mounts_protect_exec_dirs: bool) -> Vec<Grant> {
    let write = write_rights(abi);
    let file_rights = AccessFs::from_file(abi_of(abi));
    let mut out = Vec::new();
    // Execute: everything outside the write set (a file root, the audit log, included: a
    // file the session writes is never executable, wherever it lies), plus the exec dirs.
    for path in grants(&partition.write_set) {
        out.push(Grant {
            path,
            access: AccessFs::Execute.into(),
            side: "execute",
        });
    }
    for dir in &partition.exec_dirs {
        out.push(Grant {
            path: dir.clone(),
            access: AccessFs::Execute.into(),
            side: "exec_dir",
        });
    }
    // Write: beneath the write set. Landlock rights are inherited down the tree, so a root
    // holding an exec dir is granted branch by branch around it, unless a read-only mount
    // protects the exec dir already.
    for root in &partition.write_set {
        let inner: Vec<PathBuf> = partition
            .exec_dirs
            .iter()
            .filter(|e| beneath(e, root))
            .cloned()
            .collect();
        if root == Path::new("/dev") {
            // The devices a session writes, and no others: a writable disk (root may write
            // /dev/vda) would rewrite programs outside the write set. Never made or removed
            // (/dev/shm, its own root, keeps every right).
            for dev in WRITABLE_DEVICES {
                out.push(Grant {
                    path: PathBuf::from(dev),
                    access: write & file_rights,
                    side: "write",
                });
            }
            continue;
        }
        if root.is_file() {
            // A file root takes only file rights.
            out.push(Grant {
                path: root.clone(),
                access: write & file_rights,
                side: "write",
            });
            continue;
        }
        if inner.is_empty() || mounts_protect_exec_dirs {
            out.push(Grant {
                path: root.clone(),
                access: write,
                side: "write",
            });
            continue;
        }
        for path in write_grants_around(root, &inner) {
            let access = if path.is_dir() {
                write
            } else {
                write & file_rights
            };
            out.push(Grant {
                path,
                access,
                side: "write",
            });
        }
    }
    for dir in &partition.both {
        out.push(Grant {
            path: dir.clone(),
            access: write | AccessFs::Execute,
            side: "both",
        });
    }
    out
}

pub(crate) fn landlock_rules(
    sys: &dyn SealSys,
    partition: &Partition,
    abi: i64,
    mounts_protect_exec_dirs: bool,
) -> Result<LandlockReport, SealError> {
    let apply = |step: &'static str| {
        move |e: landlock::RulesetError| SealError::Apply {
            step,
            detail: e.to_string(),
        }
    };
    let handled = write_rights(abi) | AccessFs::Execute;
    // Every handled right is one this ABI has (write_rights is cut to it): demand them all, so
    // the kernel enforces exactly what the report lists.
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(apply("handle the execute and write rights"))?;
    // ABI 6: the session can neither signal processes outside it (the supervisor that
    // quarantines a strict session's repository when it ends, the operator's own programs)
    // nor connect to their abstract UNIX sockets.
    let scoped = abi >= 6;
    if scoped {
        ruleset = ruleset
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(apply("scope signals and abstract sockets"))?;
    }
    let mut ruleset = ruleset.create().map_err(apply("create the ruleset"))?;
    let mut rules = Vec::new();
    let grants = plan(partition, abi, mounts_protect_exec_dirs);
    sys.at_step(Step::Rules)?;
    for grant in grants {
        // A path that does not exist (yet), vanished since it was listed, or that this user
        // cannot open gets no rule: Landlock then grants it nothing, neither write nor execute.
        // Only the execute side's entries outside the write set (`/bin`) are followed through
        // links: a name in the write set that leads through one now was a directory a moment
        // ago, replaced by another process, and its grant would land where the link points.
        let Ok(fd) = open_path(&grant.path, grant.side == "execute") else {
            continue;
        };
        // With the namespace made, what a write grant reaches lies on a mount made noexec, and
        // an exec dir on a read-only one. A name that leads elsewhere by now (another session
        // moved a directory of its own into its place after the binds) refuses the start.
        if mounts_protect_exec_dirs {
            let want = match grant.side {
                // A reduced profile's workspace keeps exec on purpose.
                "write" if partition.both.iter().any(|b| beneath(&grant.path, b)) => None,
                "write" => Some((libc::ST_NOEXEC, "noexec")),
                "exec_dir" => Some((libc::ST_RDONLY, "read-only")),
                _ => None,
            };
            if let Some((flag, what)) = want {
                if flags_of(&fd).is_none_or(|f| f & flag == 0) {
                    return Err(SealError::Noexec {
                        detail: format!(
                            "{}: not on a {what} mount any more (a directory was moved into its place while the session was sealed); start the session again",
                            grant.path.display()
                        ),
                    });
                }
            }
        }
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, grant.access))
            .map_err(|e| SealError::Apply {
                step: "add a rule",
                detail: format!("{}: {e}", grant.path.display()),
            })?;
        rules.push(RuleReport {
            path: grant.path,
            side: grant.side,
        });
    }
    let status = ruleset
        .restrict_self()
        .map_err(apply("restrict this process"))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(SealError::NotEnforced);
    }
    Ok(LandlockReport {
        abi,
        handled: report::right_names(handled),
        scoped: if scoped {
            vec!["signal", "abstract_unix_socket"]
        } else {
            Vec::new()
        },
        exec_dirs_read_only_by: if partition.exec_dirs.is_empty() {
            "none"
        } else if mounts_protect_exec_dirs {
            "read_only_mount"
        } else {
            "landlock_split"
        },
        rules,
    })
}

/// The paths that get the execute right: every entry of `/`, descending only into directories
/// that contain an excluded root, so that nothing at or beneath an excluded root is granted.
/// `excluded` must be canonical; ones that do not exist exclude nothing they could hold, and
/// their parents are still descended (a root created later gets no grant).
pub fn grants(excluded: &[PathBuf]) -> Vec<PathBuf> {
    grants_from(Path::new("/"), excluded)
}

/// [`grants`] for the tree below `root` (tests use a temporary tree).
pub fn grants_from(root: &Path, excluded: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(root, excluded, None, &mut out);
    out
}

/// The write grants beneath `root` that leave out the `exec_dirs` inside it: its entries,
/// descending into those that hold an exec dir. Links are never followed out: an entry is
/// granted only when it really lies in `root`, and a link gets nothing (its target inside the
/// root is granted under its own name).
fn write_grants_around(root: &Path, exec_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(root, exec_dirs, Some(root), &mut out);
    out
}

pub(crate) fn collect(
    dir: &Path,
    excluded: &[PathBuf],
    inside: Option<&Path>,
    out: &mut Vec<PathBuf>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let is_link = kind.is_symlink();
        if is_link && inside.is_some() {
            continue;
        }
        // Only directories and regular files can hold programs. Sockets, pipes and devices
        // (and links to them, such as /dev/stdin) get no grant: Landlock refuses rules on
        // pseudo file systems, and nothing there is executed. The entry's type says what it
        // is; a link is judged by what it leads to.
        let holds_programs = |t: std::fs::FileType| t.is_dir() || t.is_file();
        let kind_ok = if is_link {
            std::fs::metadata(&path).is_ok_and(|m| holds_programs(m.file_type()))
        } else {
            holds_programs(kind)
        };
        if !kind_ok {
            continue;
        }
        // A rule follows links: judge a link by where it leads.
        let real = if is_link {
            match path.canonicalize() {
                Ok(r) => r,
                Err(_) => continue,
            }
        } else {
            path.clone()
        };
        if excluded.iter().any(|e| beneath(&real, e)) {
            continue; // at or inside an excluded root
        }
        if excluded.iter().any(|e| beneath(e, &real)) {
            // Holds an excluded root: grant its other entries one level down. A link to such
            // a directory gets nothing; the directory is reached under its own name.
            if !is_link {
                collect(&path, excluded, inside, out);
            }
            continue;
        }
        out.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_never_cover_an_excluded_root() {
        let excluded = vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
            PathBuf::from("/dev"),
        ];
        let g = grants(&excluded);
        assert!(!g.is_empty());
        for p in &g {
            for e in &excluded {
                assert!(
                    !e.starts_with(p),
                    "{} would cover {}",
                    p.display(),
                    e.display()
                );
                assert!(!p.starts_with(e), "{} lies in {}", p.display(), e.display());
            }
        }
        assert!(g.contains(&PathBuf::from("/usr")));
        assert!(g.contains(&PathBuf::from("/var/lib")) || !Path::new("/var/lib").exists());
    }

    #[test]
    fn links_into_or_above_a_root_get_no_grant() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        for d in ["usr/bin", "run/user/1000", "var"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("usr/bin/tool"), b"x").unwrap();
        std::os::unix::fs::symlink(root.join("run"), root.join("var/run")).unwrap();
        std::os::unix::fs::symlink(root.join("run/user/1000"), root.join("home")).unwrap();
        std::os::unix::fs::symlink(root.join("usr/bin"), root.join("bin")).unwrap();
        let excluded = vec![root.join("run/user")];
        let mut g = grants_from(&root, &excluded);
        g.sort();
        // `var` holds only a link to `run`: Landlock judges the resolved file, so a grant on
        // `var` never reaches `run/user`.
        let want: Vec<PathBuf> = ["bin", "usr", "var"].iter().map(|p| root.join(p)).collect();
        assert_eq!(g, want);
    }

    /// A write-set root holding an exec dir: its other branches get the write rights, the
    /// branch to the exec dir only its siblings, and links never lead the grant out.
    #[test]
    fn write_grants_go_around_exec_dirs_and_never_follow_links() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        for d in [
            ".cargo/bin",
            ".cargo/registry",
            "src",
            ".local/bin",
            ".local/share",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".gitconfig"), b"").unwrap();
        std::os::unix::fs::symlink("/usr", home.join("usr-link")).unwrap();
        std::os::unix::fs::symlink(home.join(".cargo/bin"), home.join("bin-link")).unwrap();
        let exec = vec![home.join(".cargo/bin"), home.join(".local/bin")];
        let mut g = write_grants_around(&home, &exec);
        g.sort();
        let want: Vec<PathBuf> = [".cargo/registry", ".gitconfig", ".local/share", "src"]
            .iter()
            .map(|p| home.join(p))
            .collect();
        assert_eq!(g, want);
    }

    /// The plan, side by side: the exec dirs get execute only, the write set write only (and
    /// the roots holding an exec dir are split unless a read-only mount protects it), the
    /// `both` dirs both; no execute grant covers the write set.
    #[test]
    fn the_plan_keeps_the_two_sides_apart() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::create_dir_all(home.join("ws")).unwrap();
        std::fs::create_dir_all(home.join("notes")).unwrap();
        let p = Partition::new([home.clone(), PathBuf::from("/tmp")])
            .with_exec_dirs([home.join(".cargo/bin")]);
        let exec: BitFlags<AccessFs> = AccessFs::Execute.into();
        for split in [false, true] {
            let plan = plan(&p, 7, !split);
            for g in &plan {
                let in_w = p.in_write_set(&g.path);
                match g.side {
                    "execute" => {
                        assert_eq!(g.access, exec);
                        assert!(!in_w, "{}", g.path.display());
                        assert!(!p.write_set.iter().any(|r| r.starts_with(&g.path)));
                    }
                    "exec_dir" => assert_eq!(g.access, exec),
                    "write" => {
                        assert!(in_w, "{}", g.path.display());
                        assert!(!g.access.contains(AccessFs::Execute));
                        if g.path.starts_with("/dev") && !g.path.starts_with("/dev/shm") {
                            assert!(WRITABLE_DEVICES.contains(&g.path.to_str().unwrap()));
                            assert!(!g.access.contains(AccessFs::MakeReg));
                            assert!(g.access.contains(AccessFs::WriteFile));
                        } else if g.path.is_dir() {
                            assert!(g.access.contains(AccessFs::Refer));
                        }
                    }
                    other => panic!("{other}"),
                }
            }
            let home_rule = plan.iter().any(|g| g.side == "write" && g.path == home);
            assert_eq!(home_rule, !split, "split = {split}");
            if split {
                assert!(plan
                    .iter()
                    .any(|g| g.side == "write" && g.path == home.join("notes")));
                assert!(!plan
                    .iter()
                    .any(|g| g.side == "write" && g.path.starts_with(home.join(".cargo/bin"))));
            }
            assert!(plan
                .iter()
                .any(|g| g.side == "write" && g.path == Path::new("/dev/null")));
            assert!(!plan
                .iter()
                .any(|g| g.side == "write" && g.path == Path::new("/dev")));
        }
        // A file root outside every directory root (the audit log): file write rights, and
        // no execute grant at or above it.
        let outside = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let log = outside.path().canonicalize().unwrap().join("audit.jsonl");
        std::fs::write(&log, b"").unwrap();
        let mut with_log = p.clone();
        with_log.write_set.push(log.clone());
        let plan_log = plan(&with_log, 7, true);
        let g = plan_log
            .iter()
            .find(|g| g.side == "write" && g.path == log)
            .unwrap();
        assert!(g.access.contains(AccessFs::WriteFile) && !g.access.contains(AccessFs::Execute));
        assert!(!plan_log
            .iter()
            .any(|g| g.access.contains(AccessFs::Execute) && log.starts_with(&g.path)));
        let dev = p.clone().with_both([home.join("ws")]);
        let plan = plan(&dev, 7, true);
        let ws = plan.iter().find(|g| g.side == "both").unwrap();
        assert!(ws.access.contains(AccessFs::Execute) && ws.access.contains(AccessFs::WriteFile));
    }

    #[test]
    fn write_rights_follow_the_abi() {
        assert!(!write_rights(2).contains(AccessFs::Truncate));
        assert!(write_rights(2).contains(AccessFs::Refer));
        assert!(write_rights(3).contains(AccessFs::Truncate));
        assert!(!write_rights(4).contains(AccessFs::IoctlDev));
        assert!(write_rights(5).contains(AccessFs::IoctlDev));
        assert!(!write_rights(9).contains(AccessFs::ResolveUnix));
        assert!(!write_rights(7).contains(AccessFs::Execute));
    }
}
