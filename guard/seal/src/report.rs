//! The enforcement report: what this session's kernel accepted, layer by layer, and the
//! assurance that follows. One struct for `execguard doctor`, `execguard run -v` and the
//! session's start record.

use crate::mount_calls::{flags_of, reach};
use crate::mountinfo::{forget, table, Lookup, Mount};
use crate::partition::{beneath, Partition};
use execguard_policy::Reduction;
use landlock::{AccessFs, BitFlags};
use serde::Serialize;
use std::path::Path;
use std::path::PathBuf;

/// What the seal enforces for this session.
#[derive(Clone, Debug, Serialize)]
pub struct Enforcement {
    pub landlock: LandlockReport,
    /// The seccomp rules installed (one line each, as [`crate::seccomp::install`] built them).
    pub seccomp: Vec<String>,
    /// The capabilities a root session gave up ([`crate::capabilities::DROPPED`] that this
    /// kernel has); empty for a non-root session, which holds none.
    pub capabilities_dropped: Vec<String>,
    /// The private mount namespace, when one was made (also when a bind in it then failed:
    /// see its `incomplete`).
    pub namespace: Option<crate::namespace::Namespace>,
    /// Each mount of the write set, read back from `/proc/self/mountinfo`.
    pub mounts: Vec<MountReport>,
    pub assurance: Assurance,
}

/// The Landlock ruleset as the kernel took it.
#[derive(Clone, Debug, Serialize)]
pub struct LandlockReport {
    pub abi: i64,
    /// The rights the ruleset handles (everything else is not restricted by Landlock).
    pub handled: Vec<&'static str>,
    /// What the session is scoped from outside it (ABI 6): `signal`, `abstract_unix_socket`.
    pub scoped: Vec<&'static str>,
    /// How the exec dirs inside the write set are kept read-only: `read_only_mount` (the
    /// write rights cover whole roots), `landlock_split` (the write rights are granted around
    /// them, so a root that holds one cannot get new entries itself), or `none`.
    pub exec_dirs_read_only_by: &'static str,
    /// Every rule added.
    pub rules: Vec<RuleReport>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RuleReport {
    pub path: PathBuf,
    /// `execute` (outside the write set), `exec_dir`, `write`, or `both` (a reduced profile's
    /// workspace).
    pub side: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct MountReport {
    /// The write-set root.
    pub root: PathBuf,
    /// The mount it lies on, or a mount beneath it.
    pub mount_point: PathBuf,
    pub fstype: String,
    pub noexec: bool,
}

/// `strict`, or `reduced:<why>[,<why>...]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct Assurance {
    pub reductions: Vec<Reduction>,
}

impl Assurance {
    pub fn from_reductions(reductions: Vec<Reduction>) -> Self {
        Assurance { reductions }
    }

    pub fn is_strict(&self) -> bool {
        self.reductions.is_empty()
    }
}

impl std::fmt::Display for Assurance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.reductions.is_empty() {
            f.write_str("strict")
        } else {
            execguard_policy::reduction::write_reduced(f, &self.reductions)
        }
    }
}

impl From<Assurance> for String {
    fn from(a: Assurance) -> String {
        a.to_string()
    }
}

/// The kernel's names of the rights, lower case.
pub fn right_names(rights: BitFlags<AccessFs>) -> Vec<&'static str> {
    rights
        .iter()
        .map(|r| match r {
            AccessFs::Execute => "execute",
            AccessFs::WriteFile => "write_file",
            AccessFs::ReadFile => "read_file",
            AccessFs::ReadDir => "read_dir",
            AccessFs::RemoveDir => "remove_dir",
            AccessFs::RemoveFile => "remove_file",
            AccessFs::MakeChar => "make_char",
            AccessFs::MakeDir => "make_dir",
            AccessFs::MakeReg => "make_reg",
            AccessFs::MakeSock => "make_sock",
            AccessFs::MakeFifo => "make_fifo",
            AccessFs::MakeBlock => "make_block",
            AccessFs::MakeSym => "make_sym",
            AccessFs::Refer => "refer",
            AccessFs::Truncate => "truncate",
            AccessFs::IoctlDev => "ioctl_dev",
            _ => "other",
        })
        .collect()
}

impl Enforcement {
    /// The human form: a few lines, counts instead of the hundreds of execute rules.
    pub fn lines(&self) -> Vec<String> {
        let count = |side: &str| {
            self.landlock
                .rules
                .iter()
                .filter(|r| r.side == side)
                .count()
        };
        let mut out = vec![
            format!("assurance: {}", self.assurance),
            format!(
                "landlock: ABI {}, handles {}; scoped from outside: {}",
                self.landlock.abi,
                self.landlock.handled.join(" "),
                if self.landlock.scoped.is_empty() {
                    "nothing (ABI < 6)".to_string()
                } else {
                    self.landlock.scoped.join(" ")
                }
            ),
            format!(
                "landlock rules: {} execute (outside the write set), {} exec dirs, {} write, {} both; exec dirs read-only by {}",
                count("execute"),
                count("exec_dir"),
                count("write"),
                count("both"),
                self.landlock.exec_dirs_read_only_by
            ),
        ];
        for r in &self.landlock.rules {
            if r.side != "execute" {
                out.push(format!("  {} {}", r.side, r.path.display()));
            }
        }
        match &self.namespace {
            Some(ns) => {
                out.push(match &ns.incomplete {
                    None => format!("mount namespace: {}", ns.kind),
                    Some(why) => format!("mount namespace: {}, incomplete ({why})", ns.kind),
                });
                for d in &ns.read_only {
                    out.push(format!("  exec dir mount {}: read-only", d.display()));
                }
                out.push(format!(
                    "  outside the write set: {} mounts read-only",
                    ns.outside_read_only.len()
                ));
                out.extend(world_lines(ns.world.as_ref()));
            }
            None => out.push("mount namespace: none".into()),
        }
        for m in &self.mounts {
            out.push(format!(
                "  write-set mount {} ({}, for {}): {}",
                m.mount_point.display(),
                m.fstype,
                m.root.display(),
                if m.noexec { "noexec" } else { "exec allowed" }
            ));
        }
        out.push(format!("seccomp: {} rules", self.seccomp.len()));
        for s in &self.seccomp {
            out.push(format!("  {s}"));
        }
        if !self.capabilities_dropped.is_empty() {
            out.push(format!(
                "capabilities dropped (root session): {}",
                self.capabilities_dropped.join(" ")
            ));
        }
        out
    }
}

/// Each write-set root's mount, and every mount beneath it, with `noexec` or not. Roots that
/// do not exist are left out (they get no rule at all).
pub fn report(partition: &Partition) -> Vec<MountReport> {
    let mounts = table().unwrap_or_else(|_| Vec::new().into());
    report_from(partition, &mounts)
}

/// [`report`] from the mount table `mounts`.
pub(crate) fn report_from(partition: &Partition, mounts: &[Mount]) -> Vec<MountReport> {
    report_with(partition, mounts, |m, _| Some(m.noexec())).unwrap_or_default()
}

/// [`report`] from the table the session's namespace read after its binds, without reading
/// it again: the remounts since changed only flags, which are asked of each mount itself
/// (found by its id at the path that reaches it), and the exec-dir binds added mounts only
/// beneath exec dirs, which the report leaves out. A path that reaches another mount by now
/// (a directory above it was moved) makes it read the table afresh.
pub fn report_in(partition: &Partition, after_binds: &[Mount]) -> Vec<MountReport> {
    let noexec = |m: &Mount, reached: &Path| {
        let (fd, id) = reach(reached).ok()?;
        if id != u64::from(m.id) {
            return None;
        }
        Some(flags_of(&fd)? & libc::ST_NOEXEC != 0)
    };
    report_with(partition, after_binds, noexec).unwrap_or_else(|| {
        forget();
        report(partition)
    })
}

/// The report from `mounts`, each mount's `noexec` from `noexec(mount, the path that reaches
/// it)`; `None` when that cannot say.
fn report_with(
    partition: &Partition,
    mounts: &[Mount],
    noexec: impl Fn(&Mount, &Path) -> Option<bool>,
) -> Option<Vec<MountReport>> {
    let lookup = Lookup::new(mounts);
    let mut out = Vec::new();
    for root in &partition.write_set {
        if !root.exists() {
            continue;
        }
        let mut seen: Vec<&Path> = Vec::new();
        let covering = lookup.mount_of(root);
        // Only the mounts a path reaches: not one beneath another on its point, nor one that
        // a mount on a directory above covers.
        let under = mounts.iter().filter(|m| {
            beneath(&m.point, root) && lookup.mount_of(&m.point).is_some_and(|t| t.id == m.id)
        });
        for m in covering.into_iter().chain(under) {
            if seen.contains(&m.point.as_path()) {
                continue;
            }
            seen.push(&m.point);
            // A mount beneath an exec dir is on the execute side.
            if partition.exec_dirs.iter().any(|e| beneath(&m.point, e)) {
                continue;
            }
            // The covering mount is reached at the root, the others at their points.
            let reached = if m.point.as_os_str().len() < root.as_os_str().len() {
                root
            } else {
                &m.point
            };
            out.push(MountReport {
                root: root.clone(),
                mount_point: m.point.clone(),
                fstype: m.fstype.clone(),
                noexec: noexec(m, reached)?,
            });
        }
    }
    Some(out)
}

/// The session's own world, as `execguard run -v` names it.
pub fn world_lines(world: Option<&crate::world::WorldReport>) -> Vec<String> {
    let Some(w) = world else {
        return vec![
            "world: the operator's (no home layer; shared temp dirs, sockets and network)".into(),
        ];
    };
    let list = |v: &[PathBuf]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    vec![
        match (&w.home_upper, w.home_exec) {
            (Some(upper), Some(exec)) => format!(
                "world: home layer {} ({})",
                upper.display(),
                match exec {
                    crate::world::LayerExec::Noexec => "written, never run",
                    crate::world::LayerExec::Exec =>
                        "written, and run in this workspace's sessions",
                }
            ),
            _ => "world: home is the operator's own".into(),
        },
        format!("world: own temp and runtime dirs: {}", list(&w.temp)),
        format!(
            "world: of those, written and run in the session: {}",
            list(&w.temp_exec)
        ),
        format!("world: kept real inside them: {}", list(&w.kept)),
        format!(
            "world: outside sockets hidden: {} ({}); shared: {}",
            w.hidden_sockets.len(),
            list(&w.hidden_sockets),
            list(&w.shared_sockets)
        ),
        match &w.network {
            Some(n) => format!(
                "world: network: a namespace of its own (lo only); outbound through the supervisor's proxy on 127.0.0.1:{} (host loopback, link-local and the host's own addresses refused); host ports: {}",
                n.proxy_port,
                if n.host_ports.is_empty() {
                    "none".to_string()
                } else {
                    n.host_ports.iter().map(u16::to_string).collect::<Vec<_>>().join(" ")
                }
            ),
            None => "world: network: the host's (--allow-host-network)".into(),
        },
    ]
}
