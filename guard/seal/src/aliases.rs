//! Second names: where another mount shows one side of the partition on the other side, and
//! the seal's refusal when there is one.

use crate::error::SealError;
use crate::mountinfo::{mounts_now, rebase, Lookup, Mount};
use crate::partition::{beneath, Partition};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The other names of what lies at `path`: where another mount of the same file system (a
/// bind mount, a btrfs top-level mount) shows it, or a part of it, that the path alone does
/// not tell. Each is `(name, the same directory by its name beneath path)`. Only names that
/// reach it now (not covered by another mount) count; a mount of something onto itself (a
/// nested session's binds) gives no other name.
fn names_in(lookup: &Lookup<'_>, path: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Some((dev, here)) = lookup.place(path) else {
        return Vec::new();
    };
    let mut names: Vec<(PathBuf, PathBuf)> = Vec::new();
    for m in lookup.mounts.iter().filter(|m| m.dev == dev) {
        // All of it (it lies in what `m` shows), or the part of it `m` shows.
        let (name, shown) = match rebase(&here, &m.root, &m.point) {
            Some(name) => (name, here.clone()),
            None if beneath(&m.root, &here) => (m.point.clone(), m.root.clone()),
            None => continue,
        };
        let Some(by_path) = rebase(&shown, &here, path) else {
            continue;
        };
        if by_path != name
            && !names.iter().any(|(n, _)| *n == name)
            && lookup
                .place(&name)
                .is_some_and(|(d, p)| d == dev && p == shown)
        {
            names.push((name, by_path));
        }
    }
    names
}

/// The names by which one side of a partition is reachable from the other ([`names_in`]):
/// Landlock and the guard judge a file by the name it is reached by, and a mount is `noexec`
/// or read-only whatever it shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Aliases {
    /// (write-set directory, another name of it outside the write set): a file the session
    /// writes would run by that name.
    pub write_set: Vec<(PathBuf, PathBuf)>,
    /// (exec dir, a name on the write side of it or of a part of it): the session could write
    /// its programs there.
    pub exec_dirs: Vec<(PathBuf, PathBuf)>,
    /// Second names that cannot join the write set, or that cannot be ruled out: why.
    pub refused: Vec<String>,
}

impl Aliases {
    pub fn is_empty(&self) -> bool {
        self.write_set.is_empty() && self.exec_dirs.is_empty() && self.refused.is_empty()
    }

    /// The refusal for what no write set can take in: a second name that cannot join it or
    /// cannot be ruled out, then an exec dir reachable from the write side. (The write set's
    /// other names can join: the CLI adds them, the seal refuses a policy without them.)
    pub fn unjoinable(&self) -> Option<SealError> {
        if let Some(why) = self.refused.first() {
            return Some(SealError::AliasUnresolved { why: why.clone() });
        }
        self.exec_dirs
            .first()
            .map(|(dir, name)| SealError::ExecDirAliased {
                dir: dir.clone(),
                name: name.clone(),
            })
    }

    /// The exec dirs inside the write set's other names, by those names: a root that joins the
    /// write set by another name keeps its exec dirs on the execute side by that name too
    /// (read-only, and carved out of its write rights), or the session could write their
    /// programs through it.
    pub fn exec_dirs_within(&self, partition: &Partition) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (same, name) in &self.write_set {
            for dir in partition.exec_dirs.iter().filter(|e| beneath(e, same)) {
                if let Some(d) = rebase(dir, same, name).filter(|d| !out.contains(d)) {
                    out.push(d);
                }
            }
        }
        out
    }
}

/// The [`Aliases`] of `partition` in this mount table. Each side is asked for the names of
/// its roots and of every mount beneath them: a mount inside the workspace can show a
/// directory that is also reachable elsewhere.
pub fn aliases(partition: &Partition, mounts: &[Mount]) -> Aliases {
    aliases_with(partition, mounts, |p| std::fs::canonicalize(p).ok())
}

/// [`aliases`], with the overlay layers' names resolved by `canonical` (tests give names that
/// do not exist here).
fn aliases_with(
    partition: &Partition,
    mounts: &[Mount],
    canonical: impl Fn(&Path) -> Option<PathBuf>,
) -> Aliases {
    let lookup = Lookup::new(mounts);
    let in_exec_dir = |p: &Path| partition.exec_dirs.iter().find(|e| beneath(p, e));
    // `root` and the points of the mounts beneath it.
    let places = |root: &Path| -> Vec<PathBuf> {
        let mut out = vec![root.to_path_buf()];
        for m in mounts.iter().filter(|m| beneath(&m.point, root)) {
            if !out.contains(&m.point) {
                out.push(m.point.clone());
            }
        }
        out
    };
    // A name on a read-only mount writes nothing.
    let writable = |p: &Path| lookup.mount_of(p).is_some_and(|m| !m.read_only());
    let mut out = Aliases::default();
    let mut exec_dir = |dir: &PathBuf, name: PathBuf| {
        if !out.exec_dirs.iter().any(|(d, _)| d == dir) {
            out.exec_dirs.push((dir.clone(), name));
        }
    };
    for dir in &partition.exec_dirs {
        for place in places(dir) {
            for (name, _) in names_in(&lookup, &place) {
                if partition.in_write_set(&name) && in_exec_dir(&name).is_none() && writable(&name)
                {
                    exec_dir(dir, name);
                }
            }
        }
    }
    // Only what can hold files needs its other names in the write set: /dev holds devices,
    // which the session may write but not make (and a root granted all of /dev could write
    // a disk); a device (`/dev/null`, which Docker also binds over masked `/proc` files)
    // holds no file. Only /dev's roots are asked (`/dev/shm` holds files).
    let holds_files = |p: &Path| {
        !beneath(p, Path::new("/dev"))
            || (p != Path::new("/dev")
                && partition.write_set.iter().any(|r| r == p)
                && std::fs::metadata(p).map_or(true, |m| m.is_dir() || m.is_file()))
    };
    let mut write_set: Vec<(PathBuf, PathBuf)> = Vec::new();
    for root in &partition.write_set {
        for place in places(root)
            .into_iter()
            .filter(|p| holds_files(p) && writable(p))
        {
            for (name, same) in names_in(&lookup, &place) {
                if in_exec_dir(&same).is_some() {
                    continue; // an exec dir's content: its own names are judged above
                }
                if let Some(dir) = in_exec_dir(&name) {
                    // Write-set content shown inside an exec dir.
                    exec_dir(dir, same);
                } else if !partition.in_write_set(&name)
                    && !write_set.iter().any(|(_, n)| *n == name)
                {
                    write_set.push((same, name));
                }
            }
        }
    }
    if lookup.root.is_none() {
        out.refused.push(
            "the mount table has no mount on / (a chroot?), so no name can be traced to its mount"
                .to_string(),
        );
    }
    // An overlay shows its layers at its point under a device of its own, and writes through
    // it land in its upper layer: the point is another name of every layer, and the upper
    // layer one of the point. The table gives the layers as the mounter spelled them, in its
    // own mount namespace: each is resolved here, and one that does not resolve (a
    // container's root, whose layers lie on the host; a relative name) is not traced.
    let write_side = |p: &Path| partition.in_write_set(p) && in_exec_dir(p).is_none();
    let touches_write_set = |p: &Option<PathBuf>| {
        p.as_ref().is_some_and(|p| {
            write_side(p)
                || partition
                    .write_set
                    .iter()
                    .any(|r| beneath(r, p) && write_side(r))
        })
    };
    let resolve = |p: &PathBuf| p.is_absolute().then(|| canonical(p)).flatten();
    for m in mounts
        .iter()
        .filter(|m| lookup.mount_of(&m.point).is_some_and(|t| t.id == m.id))
    {
        let Some(o) = &m.overlay else { continue };
        let point = &m.point;
        for (spelled, layer) in o.lower.iter().chain(&o.upper).map(|l| (l, resolve(l))) {
            if !touches_write_set(&layer) {
                continue;
            }
            if let Some(dir) = in_exec_dir(point) {
                exec_dir(dir, layer.unwrap_or_else(|| spelled.clone()));
            } else if partition.in_write_set(point) {
                // The point is the write set's already: noexec, as its layer is.
            } else if m.read_only() {
                push_new(&mut write_set, (spelled.clone(), point.clone()));
            } else {
                // Joined to the write set, the overlay's writes (into its upper layer, outside
                // it) would be the session's too.
                out.refused.push(format!(
                    "the overlay at {} shows {}, which the session writes, and is writable",
                    point.display(),
                    spelled.display()
                ));
            }
        }
        if m.read_only() || !write_side(point) {
            continue;
        }
        for upper in o.upper.iter().filter_map(resolve) {
            match in_exec_dir(&upper) {
                Some(dir) => exec_dir(dir, point.clone()),
                None if !partition.in_write_set(&upper) => {
                    push_new(&mut write_set, (point.clone(), upper))
                }
                None => {}
            }
        }
    }
    out.write_set = write_set;
    out
}

fn push_new(v: &mut Vec<(PathBuf, PathBuf)>, alias: (PathBuf, PathBuf)) {
    if !v.iter().any(|(_, n)| *n == alias.1) {
        v.push(alias);
    }
}

/// [`aliases`] in this process's mount table, as the seal's refusal when there are any.
pub fn refuse_aliases(partition: &Partition) -> Result<(), SealError> {
    let found = aliases(partition, &mounts_now()?);
    if let Some(e) = found.unjoinable() {
        return Err(e);
    }
    if let Some((root, name)) = found.write_set.into_iter().next() {
        return Err(SealError::WriteSetAliased { root, name });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mountinfo::{mount_of, parse_mount, parse_mountinfo};
    use std::os::unix::ffi::OsStrExt;

    /// A mount table of `(dev, root, point)` lines, mounted in that order: each mount's parent
    /// is the mount its point reaches when it is made, as the kernel records it. That parent
    /// is found here without the lookup under test ([`mount_of`]): mounted in order (none
    /// tucked beneath), the mount a point reaches is the newest one made on that point or on a
    /// directory above it (a newer mount above covers every older one below; a newer one
    /// below sits on top).
    fn table(lines: &[(&str, &str, &str)]) -> Vec<Mount> {
        let mut mounts: Vec<Mount> = Vec::new();
        for (i, (dev, root, point)) in lines.iter().enumerate() {
            // `"8:1 ro"`: a read-only mount.
            let (dev, opts) = dev.split_once(' ').unwrap_or((dev, "rw"));
            let parent = mounts
                .iter()
                .rev()
                .find(|m| Path::new(point).starts_with(&m.point))
                .map_or(1, |m| m.id);
            let line = format!(
                "{} {parent} {dev} {root} {point} {opts} shared:1 - ext4 /dev/x rw",
                i + 20
            );
            mounts.push(parse_mount(line.as_bytes()).unwrap());
        }
        mounts
    }

    fn host() -> Partition {
        Partition::new([PathBuf::from("/home/u"), PathBuf::from("/tmp")])
            .with_exec_dirs([PathBuf::from("/home/u/.local/bin")])
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(PathBuf, PathBuf)> {
        v.iter()
            .map(|(a, b)| (PathBuf::from(a), PathBuf::from(b)))
            .collect()
    }

    /// Mounts added to a host's, and the aliases they give: of the write set, of exec dirs.
    type Case<'a> = (
        &'a [(&'a str, &'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
    );

    const CASES: usize = 17;

    #[test]
    fn a_second_mount_of_the_write_set_is_an_alias_and_a_bind_onto_itself_is_not() {
        let root = ("8:1", "/", "/");
        let tmp = ("0:30", "/", "/tmp");
        let dev = ("0:6", "/", "/dev");
        // (mounts besides `/` and `/tmp`, write-set aliases, exec-dir aliases)
        let cases: [Case; CASES] = [
            // Nothing else mounted.
            (&[], &[], &[]),
            // A nested session's binds: each root, exec dir and parent onto itself.
            (
                &[
                    ("8:1", "/home/u", "/home/u"),
                    ("8:1", "/home/u/.local", "/home/u/.local"),
                    ("8:1", "/home/u/.local/bin", "/home/u/.local/bin"),
                    ("0:30", "/", "/tmp"),
                ],
                &[],
                &[],
            ),
            // The workspace bound outside the write set.
            (
                &[("8:1", "/home/u/ws", "/srv/ws")],
                &[("/home/u/ws", "/srv/ws")],
                &[],
            ),
            // A btrfs top-level mount: all of home, and the exec dir with it, by another name.
            (
                &[("8:1", "/", "/mnt/top")],
                &[("/home/u", "/mnt/top/home/u")],
                &[],
            ),
            // A part of the exec dir shown outside the write set: exec content, no alias.
            (&[("8:1", "/home/u/.local/bin/x", "/opt/x")], &[], &[]),
            // /dev's file system shown again: the session makes no file there.
            (&[("0:6", "/", "/srv/chroot/dev")], &[], &[]),
            // Another mount of /tmp's file system.
            (&[("0:30", "/", "/run/t")], &[("/tmp", "/run/t")], &[]),
            // The exec dir is a bind of a workspace directory.
            (
                &[("8:1", "/home/u/ws/bin", "/home/u/.local/bin")],
                &[],
                &[("/home/u/.local/bin", "/home/u/ws/bin")],
            ),
            // The exec dir bound into the workspace.
            (
                &[("8:1", "/home/u/.local/bin", "/home/u/ws/tools")],
                &[],
                &[("/home/u/.local/bin", "/home/u/ws/tools")],
            ),
            // Workspace content shown inside the exec dir.
            (
                &[("8:1", "/home/u/ws/d", "/home/u/.local/bin/d")],
                &[],
                &[("/home/u/.local/bin", "/home/u/ws/d")],
            ),
            // An alias covered by a later mount on its point reaches nothing; a system
            // directory bound into the workspace is written there, so its own name joins.
            (
                &[
                    ("8:1", "/home/u/ws", "/srv/ws"),
                    ("0:40", "/", "/srv/ws"),
                    ("8:1", "/usr/share", "/home/u/ws/share"),
                ],
                &[("/home/u/ws/share", "/usr/share")],
                &[],
            ),
            // Covered by a mount on a directory above, made after it.
            (
                &[("8:1", "/home/u/ws", "/srv/a/ws"), ("0:41", "/", "/srv/a")],
                &[],
                &[],
            ),
            // A tmpfs in the workspace, bound out.
            (
                &[("0:42", "/", "/home/u/ws/c"), ("0:42", "/", "/srv/c")],
                &[("/home/u/ws/c", "/srv/c")],
                &[],
            ),
            // An outside file bound onto a workspace file.
            (
                &[("8:1", "/srv/tool", "/home/u/ws/evil")],
                &[("/home/u/ws/evil", "/srv/tool")],
                &[],
            ),
            // The exec dir bound into a tmpfs that is mounted in the workspace.
            (
                &[
                    ("0:43", "/", "/home/u/ws/t"),
                    ("8:1", "/home/u/.local/bin", "/home/u/ws/t/b"),
                ],
                &[],
                &[("/home/u/.local/bin", "/home/u/ws/t/b")],
            ),
            // A read-only mask of a workspace file (the image's provider configuration):
            // nothing is written through it.
            (
                &[("8:1 ro", "/run/masks/empty.json", "/home/u/ws/.mcp.json")],
                &[],
                &[],
            ),
            // A tmpfs root (its file system's /) shown again: no trailing `/` in the name.
            (&[("0:30", "/", "/srv/t")], &[("/tmp", "/srv/t")], &[]),
        ];
        for (extra, write_set, exec_dirs) in cases {
            let mounts = table(&[&[root, tmp, dev][..], extra].concat());
            let found = aliases(&host(), &mounts);
            let bytes = |v: &[(PathBuf, PathBuf)]| -> Vec<(Vec<u8>, Vec<u8>)> {
                v.iter()
                    .map(|(a, b)| {
                        (
                            a.as_os_str().as_bytes().to_vec(),
                            b.as_os_str().as_bytes().to_vec(),
                        )
                    })
                    .collect()
            };
            assert_eq!(
                bytes(&found.write_set),
                bytes(&pairs(write_set)),
                "{extra:?}"
            );
            assert_eq!(
                bytes(&found.exec_dirs),
                bytes(&pairs(exec_dirs)),
                "{extra:?}"
            );
        }
    }

    /// A mount tucked beneath another (`MOVE_MOUNT_BENEATH`) has the newer id but lies lower:
    /// the stack's top is found from the parents, not from the table's order.
    #[test]
    fn the_top_of_a_stack_comes_from_the_parents() {
        let text = "20 1 8:1 / / rw - ext4 /dev/x rw
21 20 0:30 / /tmp rw - tmpfs t rw
22 20 0:6 / /dev rw - devtmpfs d rw
23 24 8:1 /home/u/ws /srv/o rw - ext4 /dev/x rw
24 20 0:44 / /srv/o rw - tmpfs t rw
";
        let mounts = parse_mountinfo(text.as_bytes());
        assert_eq!(mount_of(&mounts, Path::new("/srv/o/x")).unwrap().id, 23);
        assert_eq!(mount_of(&mounts, Path::new("/srv")).unwrap().id, 20);
        let found = aliases(&host(), &mounts);
        assert_eq!(found.write_set, pairs(&[("/home/u/ws", "/srv/o")]));
    }

    /// An overlay is another name of its layers (under a device of its own). A read-only point
    /// outside the write set over a layer in it joins it; a writable one is refused (joined,
    /// its writes into an upper layer outside would be the session's). An upper layer outside
    /// under a point in the write set joins; one that shows the write set inside an exec dir is
    /// refused. A layer whose name does not resolve here is not traced.
    #[test]
    fn an_overlay_is_a_second_name_of_its_layers() {
        let base = "20 1 8:1 / / rw - ext4 /dev/x rw
21 20 0:30 / /tmp rw - tmpfs t rw
22 20 0:6 / /dev rw - devtmpfs d rw
";
        type Line<'a> = (
            &'a str,
            &'a [(&'a str, &'a str)],
            &'a [(&'a str, &'a str)],
            bool,
        );
        let cases: [Line; 7] = [
            (
                "23 20 0:50 / /srv/ov ro - overlay o rw,lowerdir=/srv/lo:/home/u/ws/lo",
                &[("/home/u/ws/lo", "/srv/ov")],
                &[],
                false,
            ),
            (
                "23 20 0:50 / /srv/ov rw - overlay o rw,lowerdir=/srv/lo,lowerdir+=/home/u/ws/lo,upperdir=/srv/up,workdir=/srv/wk",
                &[],
                &[],
                true,
            ),
            (
                "23 20 0:50 / /home/u/ws/ov rw - overlay o rw,lowerdir=/usr,upperdir=/srv/up,workdir=/srv/wk",
                &[("/home/u/ws/ov", "/srv/up"), ("/home/u/ws/ov", "/srv/wk")],
                &[],
                false,
            ),
            (
                "23 20 0:50 / /home/u/.local/bin/ov rw - overlay o rw,lowerdir=/home/u/ws,upperdir=/srv/up,workdir=/srv/wk",
                &[],
                &[("/home/u/.local/bin", "/home/u/ws")],
                false,
            ),
            // An upper layer spelled with `/./` (resolved, here by hand) inside an exec dir.
            (
                "23 20 0:50 / /home/u/ws/ov rw - overlay o rw,lowerdir=/usr,upperdir=/home/u/.local/./bin/up,workdir=/home/u/.local/wk",
                &[],
                &[("/home/u/.local/bin", "/home/u/ws/ov")],
                false,
            ),
            // A layer that does not resolve here (relative, or on a container's host): not
            // traced.
            (
                "23 20 0:50 / / ro - overlay o rw,lowerdir=lo:/var/lib/docker/overlay2/l/AB",
                &[],
                &[],
                false,
            ),
            // Layers and point all outside the write set (a container's root): nothing.
            (
                "23 20 0:50 / /var/lib/c/merged rw - overlay o rw,lowerdir=/var/lib/c/l,upperdir=/var/lib/c/u,workdir=/var/lib/c/w",
                &[],
                &[],
                false,
            ),
        ];
        // Resolves `/./`; the host's layer directories do not exist here.
        let canonical = |p: &Path| {
            let p = p.to_str()?;
            (!p.starts_with("/var/lib/docker")).then(|| PathBuf::from(p.replace("/./", "/")))
        };
        for (line, write_set, exec_dirs, refused) in cases {
            let mounts = parse_mountinfo(format!("{base}{line}\n").as_bytes());
            let found = aliases_with(&host(), &mounts, canonical);
            assert_eq!(found.write_set, pairs(write_set), "{line}");
            assert_eq!(found.exec_dirs, pairs(exec_dirs), "{line}");
            assert_eq!(
                !found.refused.is_empty(),
                refused,
                "{line}: {:?}",
                found.refused
            );
        }
        // A table with no mount on / (inside a chroot) rules nothing out.
        let chroot = parse_mountinfo(b"30 29 8:1 /srv/c/proc /proc rw - proc p rw\n");
        assert!(!aliases(&host(), &chroot).refused.is_empty());
    }

    /// A root that joins the write set by another name keeps its exec dirs by that name.
    #[test]
    fn the_exec_dirs_of_a_second_name_are_exec_dirs_by_it() {
        let mounts = table(&[
            ("8:1", "/", "/"),
            ("0:30", "/", "/tmp"),
            ("0:6", "/", "/dev"),
            ("8:1", "/home", "/mnt/h"),
        ]);
        let found = aliases(&host(), &mounts);
        assert_eq!(found.write_set, pairs(&[("/home/u", "/mnt/h/u")]));
        assert_eq!(
            found.exec_dirs_within(&host()),
            vec![PathBuf::from("/mnt/h/u/.local/bin")]
        );
        // A device root holds no file: Docker binds /dev/null over masked /proc files.
        let masked = table(&[
            ("8:1", "/", "/"),
            ("0:6", "/", "/dev"),
            ("0:6", "/null", "/proc/keys"),
        ]);
        let null = Partition::new([PathBuf::from("/dev/null")]);
        assert!(aliases(&null, &masked).is_empty());
        // With both added, nothing is left to find.
        let whole = Partition::new([
            PathBuf::from("/home/u"),
            PathBuf::from("/tmp"),
            PathBuf::from("/mnt/h/u"),
        ])
        .with_exec_dirs([
            PathBuf::from("/home/u/.local/bin"),
            PathBuf::from("/mnt/h/u/.local/bin"),
        ]);
        assert!(aliases(&whole, &mounts).is_empty());
    }
}
