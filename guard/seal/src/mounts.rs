//! `noexec` for mappings: Landlock checks execute only at `execve`, while the kernel refuses
//! `mmap(PROT_EXEC)` of a file only on a `noexec` mount. So the session gets a private mount
//! namespace in which every mount of the write set is bind-mounted onto itself `noexec,nosuid`
//! (`nodev` too, outside `/dev`) and every exec dir read-only (exec still allowed).
//!
//! A non-root user makes the namespace inside a new user namespace that maps its uid and gid to
//! themselves (so files keep their owners; `setgroups` is denied there, as the kernel requires
//! for an unprivileged map). Root needs no user namespace. The mount namespace is a slave of
//! the parent's: mounts made outside still appear, none made inside leak out. The seccomp
//! filter then refuses every mount call, so the session cannot undo this.

use crate::report::MountReport;
use crate::{beneath, Partition, SealError};
use serde::Serialize;
use std::ffi::CString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Test hook: behave as a kernel that refuses the namespace (test builds only, like
/// [`crate::FORCE_ABI_ENV`]).
#[cfg(any(test, feature = "test-hooks"))]
pub const NO_NAMESPACE_ENV: &str = "EXECGUARD_TEST_NO_MOUNT_NAMESPACE";

/// Test hook: make the namespace, then fail the bind step this names (`noexec`: before the
/// write set is remounted noexec; `read_only`: before the exec dirs are made read-only), as a
/// bind the kernel refuses would; `enter`: fail a non-root user's namespace right after
/// `unshare`, as an LSM that gives it no capabilities would (test builds only).
#[cfg(any(test, feature = "test-hooks"))]
pub const FAIL_BIND_ENV: &str = "EXECGUARD_TEST_FAIL_BIND";

/// The namespace the session runs in.
#[derive(Clone, Debug, Serialize)]
pub struct Namespace {
    /// `user+mount` (non-root) or `mount` (root).
    pub kind: &'static str,
    /// Mount points remounted `noexec`.
    pub noexec: Vec<PathBuf>,
    /// Exec dirs bind-mounted read-only.
    pub read_only: Vec<PathBuf>,
    /// The bind that failed, when the namespace was made but not all of its mounts: the
    /// ones listed above were made (they only take exec or writes away).
    pub incomplete: Option<String>,
    /// The mount table read after the binds of the write set, for [`report_in`].
    #[serde(skip)]
    pub(crate) table: Option<std::sync::Arc<[Mount]>>,
}

/// One line of `/proc/self/mountinfo`.
#[derive(Clone, Debug)]
pub struct Mount {
    /// The mount's id, and the id of the mount it is mounted on (the one its point lies on).
    pub id: u32,
    pub parent: u32,
    /// The file system's device (`major:minor`): mounts of one file system share it.
    pub dev: String,
    /// The directory of that file system this mount shows (`/` for a whole one; a bind shows
    /// a directory inside it).
    pub root: PathBuf,
    pub point: PathBuf,
    pub fstype: String,
    /// The per-mount options (`rw,nosuid,noexec,...`).
    pub options: String,
    /// An overlay's layers, from its super options: what it shows is also reachable by
    /// these names, under a device of its own.
    pub overlay: Option<Overlay>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overlay {
    pub lower: Vec<PathBuf>,
    /// Where writes through the overlay land (with its work directory).
    pub upper: Vec<PathBuf>,
}

impl Mount {
    pub fn noexec(&self) -> bool {
        self.options.split(',').any(|o| o == "noexec")
    }

    pub fn read_only(&self) -> bool {
        self.options.split(',').any(|o| o == "ro")
    }
}

/// The mounts of this process (in id order, which is not always the order they stack in:
/// [`mount_of`]); none when
/// `/proc/self/mountinfo` cannot be read (a report then lists no mounts, and the seal's binds
/// fail instead: [`mounts_now`]).
pub fn mountinfo() -> Vec<Mount> {
    read_mountinfo().unwrap_or_default()
}

/// The mount table as this process last read it through [`table`]. The kernel prints every
/// mount for each read (2 µs a line here: 45-90 µs of a session's start each time), and a
/// session start asks before its fork and again in the child, in the same namespace. Any
/// change this module makes (a new namespace, a bind, a remount) forgets it. Mounts made
/// outside (the namespace is a slave of the parent's) may appear at any time, after a fresh
/// read as after a kept one.
static KNOWN: std::sync::Mutex<Option<std::sync::Arc<[Mount]>>> = std::sync::Mutex::new(None);

fn known() -> std::sync::MutexGuard<'static, Option<std::sync::Arc<[Mount]>>> {
    // A panic elsewhere while it was held leaves a value that is still whole.
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// This process's mount table: read again only when this module changed the mounts since it
/// was last read.
pub fn table() -> std::io::Result<std::sync::Arc<[Mount]>> {
    let mut known = known();
    if let Some(t) = &*known {
        return Ok(t.clone());
    }
    let t: std::sync::Arc<[Mount]> = read_mountinfo()?.into();
    *known = Some(t.clone());
    Ok(t)
}

/// Forgets the kept table: for code that changes this process's mounts itself (the
/// container's entrypoint), after each change.
pub fn forget() {
    *known() = None;
}

/// [`table`] for the binds: a table that cannot be read is an error, never an empty one
/// (which would leave every mount as it is).
fn mounts_now() -> Result<std::sync::Arc<[Mount]>, SealError> {
    table().map_err(|e| SealError::Noexec {
        detail: format!("/proc/self/mountinfo: {e}"),
    })
}

/// Reads this process's mount table. Mount points are bytes: a name that is not UTF-8 (which
/// the session can give a directory above a mount) must not make the table unreadable.
pub fn read_mountinfo() -> std::io::Result<Vec<Mount>> {
    use std::io::Read;
    // /proc gives the file no size, so `fs::read` would start with a 32-byte read and grow
    // from there: eight system calls for a small table, each making the kernel walk it again.
    let mut bytes = Vec::with_capacity(64 * 1024);
    std::fs::File::open("/proc/self/mountinfo")?.read_to_end(&mut bytes)?;
    Ok(parse_mountinfo(&bytes))
}

/// Parses `/proc/self/mountinfo` bytes; lines it cannot read are skipped (none in practice).
pub fn parse_mountinfo(bytes: &[u8]) -> Vec<Mount> {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(parse_mount)
        .collect()
}

fn parse_mount(line: &[u8]) -> Option<Mount> {
    let sep = line.windows(3).position(|w| w == b" - ")?;
    let (left, right) = (&line[..sep], &line[sep + 3..]);
    let mut f = left.split(|&b| b == b' ');
    let mut number = || std::str::from_utf8(f.next()?).ok()?.parse::<u32>().ok();
    let (id, parent) = (number()?, number()?);
    let dev = f.next()?;
    let root = f.next()?;
    let point = f.next()?;
    let options = f.next()?;
    let mut r = right.split(|&b| b == b' ');
    let fstype = r.next()?;
    let super_options = r.nth(1).unwrap_or_default();
    let path = |b: &[u8]| PathBuf::from(std::ffi::OsString::from_vec(unescape(b)));
    let overlay = (fstype == b"overlay").then(|| {
        let mut o = Overlay::default();
        // The kernel escapes `,` (and `\`) in a value as `\ooo`; `:` separates lower layers.
        for opt in super_options.split(|&b| b == b',') {
            if let Some(v) = opt.strip_prefix(b"lowerdir=") {
                o.lower.extend(v.split(|&b| b == b':').map(path));
            } else if let Some(v) = opt
                .strip_prefix(b"lowerdir+=")
                .or_else(|| opt.strip_prefix(b"datadir+="))
            {
                o.lower.push(path(v));
            } else if let Some(v) = opt
                .strip_prefix(b"upperdir=")
                .or_else(|| opt.strip_prefix(b"workdir="))
            {
                o.upper.push(path(v));
            }
        }
        o
    });
    Some(Mount {
        id,
        parent,
        dev: String::from_utf8_lossy(dev).into_owned(),
        root: path(root),
        point: path(point),
        options: String::from_utf8_lossy(options).into_owned(),
        fstype: String::from_utf8_lossy(fstype).into_owned(),
        overlay,
    })
}

/// The kernel writes a space, tab, newline or backslash in a name as `\ooo` (octal).
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let octal = s
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (s[i], octal) {
            (b'\\', Some(d)) => {
                let value = d.iter().fold(0u16, |v, c| v << 3 | u16::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The mount `path` lies on: the one the kernel's lookup reaches ([`Lookup`]).
#[cfg(test)]
fn mount_of<'m>(mounts: &'m [Mount], path: &Path) -> Option<&'m Mount> {
    Lookup::new(mounts).mount_of(path)
}

/// Finds the mount a path reaches as the kernel's lookup does: from the root mount, down each
/// component, into a mount whose parent is the current one and whose point is that
/// component, and up each stack on it. Neither the order of the table nor the depth of a
/// point decides: a mount tucked beneath another (`MOVE_MOUNT_BENEATH`) is newer but lower,
/// and a mount on a directory above covers every mount made below it before.
struct Lookup<'m> {
    mounts: &'m [Mount],
    /// (parent id, point) -> the mount there.
    children: std::collections::HashMap<(u32, &'m Path), &'m Mount>,
    root: Option<&'m Mount>,
}

impl<'m> Lookup<'m> {
    fn new(mounts: &'m [Mount]) -> Self {
        let children = mounts
            .iter()
            .filter(|m| m.id != m.parent)
            .map(|m| ((m.parent, m.point.as_path()), m))
            .collect();
        let ids: std::collections::HashSet<u32> = mounts.iter().map(|m| m.id).collect();
        // The bottom of the stack on /: its parent is not in this table (it lies outside this
        // process's root).
        let root = mounts
            .iter()
            .find(|m| m.point == Path::new("/") && (!ids.contains(&m.parent) || m.id == m.parent));
        Lookup {
            mounts,
            children,
            root,
        }
    }

    /// The top of the stack that starts with `m`, at its point `at`.
    fn top(&self, mut m: &'m Mount, at: &Path) -> &'m Mount {
        while let Some(next) = self.children.get(&(m.id, at)) {
            m = next;
        }
        m
    }

    fn mount_of(&self, path: &Path) -> Option<&'m Mount> {
        // A lookup starts at this process's root and never goes up a stack on it (a mount
        // made on / later is not reached by /...).
        let mut m = self.root?;
        let bytes = path.as_os_str().as_bytes();
        for (i, _) in bytes.iter().enumerate().skip(1).filter(|(_, &c)| c == b'/') {
            m = self.top_below(m, &bytes[..i]);
        }
        if bytes.len() > 1 {
            m = self.top_below(m, bytes);
        }
        Some(m)
    }

    /// The mount reached at `prefix` from `m`: a mount on it, and up its stack.
    fn top_below(&self, m: &'m Mount, prefix: &[u8]) -> &'m Mount {
        let at = Path::new(std::ffi::OsStr::from_bytes(prefix));
        match self.children.get(&(m.id, at)) {
            Some(child) => self.top(child, at),
            None => m,
        }
    }

    /// Where `path` lies in its file system: the mount's device, and the path from that file
    /// system's root.
    fn place(&self, path: &Path) -> Option<(&'m str, PathBuf)> {
        let m = self.mount_of(path)?;
        Some((&m.dev, rebase(path, &m.point, &m.root)?))
    }
}

/// `path`, which lies beneath `from`, moved to the same place beneath `to`.
fn rebase(path: &Path, from: &Path, to: &Path) -> Option<PathBuf> {
    if !beneath(path, from) {
        return None;
    }
    let (path, from, to) = (
        path.as_os_str().as_bytes(),
        from.as_os_str(),
        to.as_os_str(),
    );
    // Empty or starting with `/`.
    let rest = match (from == "/", path) {
        (true, b"/") => &[][..],
        (true, _) => path,
        (false, _) => &path[from.len()..],
    };
    let mut out = if to == "/" && !rest.is_empty() {
        Vec::new()
    } else {
        to.as_bytes().to_vec()
    };
    out.extend_from_slice(rest);
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

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

/// Each write-set root's mount, and every mount beneath it, with `noexec` or not. Roots that
/// do not exist are left out (they get no rule at all).
pub fn report(partition: &Partition) -> Vec<MountReport> {
    let mounts = table().unwrap_or_else(|_| Vec::new().into());
    report_with(partition, &mounts, |m, _| Some(m.noexec())).unwrap_or_default()
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

fn cstr(p: &Path) -> Result<CString, SealError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SealError::Noexec {
        detail: format!("{}: a NUL in the path", p.display()),
    })
}

fn fail(step: &str, p: &Path) -> SealError {
    SealError::Noexec {
        detail: format!(
            "{step} {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        ),
    }
}

/// `mount(src, dst, NULL, flags, NULL)`.
fn mount(src: Option<&Path>, dst: &Path, flags: libc::c_ulong) -> Result<(), SealError> {
    let dst_c = cstr(dst)?;
    let src_c = src.map(cstr).transpose()?;
    // SAFETY: every pointer is a valid NUL-terminated string or NULL, as mount(2) accepts;
    // the call changes only this process's (private) mount namespace.
    let rc = unsafe {
        libc::mount(
            src_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            dst_c.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(fail(if src.is_some() { "bind" } else { "remount" }, dst));
    }
    forget();
    Ok(())
}

/// `mount_setattr`'s flags (`<linux/mount.h>`), which the libc crate does not name.
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// A descriptor of what `path` reaches now, and the id of its mount (the ids of
/// `/proc/self/mountinfo`).
fn reach(path: &Path) -> std::io::Result<(std::os::fd::OwnedFd, u64)> {
    use std::os::fd::AsRawFd;
    let fd = crate::open_path(path, true)?;
    // SAFETY: statx writes only into the zeroed struct it is given.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open, the empty path is NUL-terminated, `st` is writable.
    let rc = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_MNT_ID,
            &mut st,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if st.stx_mask & libc::STATX_MNT_ID == 0 {
        return Err(std::io::Error::from_raw_os_error(libc::ENOSYS));
    }
    Ok((fd, st.stx_mnt_id))
}

/// The flags (`ST_*`) of the mount `fd` is on, as `statvfs` gives them.
pub(crate) fn flags_of(fd: &std::os::fd::OwnedFd) -> Option<libc::c_ulong> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatvfs writes only into the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is writable.
    (unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut st) } == 0).then_some(st.f_flag)
}

/// Adds `attrs` to the mount that `table` places at `point`, through a descriptor of what the
/// name reaches, checked to be that mount. The write set is shared with every other session: a
/// directory above `point` that another process moves between the table's read and this step
/// must not lead the name to another mount and leave this one executable. Adding
/// (`mount_setattr`, Linux 5.12) keeps every flag the mount has, locked ones included.
fn add_attrs_at(point: &Path, table: &[Mount], attrs: u64) -> Result<(), SealError> {
    use std::os::fd::AsRawFd;
    let (fd, id) = reach(point).map_err(|e| SealError::Noexec {
        detail: format!("{}: {e}", point.display()),
    })?;
    if !table
        .iter()
        .any(|m| u64::from(m.id) == id && m.point == point)
    {
        return Err(SealError::Noexec {
            detail: format!(
                "{}: a directory above this mount was moved while the session was sealed; start the session again",
                point.display()
            ),
        });
    }
    /// `struct mount_attr`.
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `fd` is open, the empty path is NUL-terminated, and `attr` is a readable
    // mount_attr of the size passed; the call changes only the mount `fd` is on, in this
    // process's own namespace.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(fail("mount_setattr", point));
    }
    forget();
    Ok(())
}

/// statvfs's flag for a `nosymfollow` mount (Linux 5.10, `<linux/statfs.h>`), which the libc
/// crate does not name. A remount that left it out would follow symlinks there again.
const ST_NOSYMFOLLOW: libc::c_ulong = 0x2000;

/// The flags of the mount `path` reaches, as a remount of it must give them to keep them: a
/// mount inherited into a user namespace has them locked. (Also the container's, for its
/// remounts: one map of the flags.)
pub fn kept_flags(path: &Path) -> Result<libc::c_ulong, SealError> {
    let c = cstr(path)?;
    // SAFETY: statvfs writes only into the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` is writable.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(fail("statvfs", path));
    }
    let map = [
        (libc::ST_RDONLY, libc::MS_RDONLY),
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
        (ST_NOSYMFOLLOW, libc::MS_NOSYMFOLLOW),
    ];
    let flags = map
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms);
    // statvfs has no flag for strictatime: it is neither noatime nor relatime. A remount that
    // does not say so gets relatime, which a locked mount refuses (EPERM).
    Ok(match st.f_flag & (libc::ST_NOATIME | libc::ST_RELATIME) {
        0 => flags | libc::MS_STRICTATIME,
        _ => flags,
    })
}

fn write_proc(file: &str, text: &str) -> Result<(), SealError> {
    std::fs::write(file, text).map_err(|e| SealError::Noexec {
        detail: format!("{file}: {e}"),
    })
}

/// Does [`enter`] work here? Asked only where a failure of it could not be undone and the
/// session should go on without it (`MountsMode::BestEffort`): a non-root user's new user
/// namespace cannot be left, and a kernel or LSM may accept it and then refuse what comes next
/// (Ubuntu's restricted user namespaces give it no capabilities), which would leave this
/// process inside one with its ids unmapped. Root's mount namespace needs no such
/// question: a failed step leaves a private copy of the mounts it had. So it is tried in a
/// forked child, which reports how it went; the caller must be single-threaded (as for
/// [`isolate`]).
pub fn probe() -> Result<(), SealError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(fail("pipe2", Path::new("/")));
    }
    // SAFETY: this process is single-threaded (the caller's contract), so the child may run
    // ordinary Rust code, allocation included, before it exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: the child's copy of the read end is not used.
        unsafe { libc::close(fds[0]) };
        let code = match enter() {
            Ok(_) => 0,
            Err(e) => {
                let msg = match e {
                    SealError::Noexec { detail } | SealError::NamespaceUnfinished { detail } => {
                        detail
                    }
                    e => e.to_string(),
                };
                // SAFETY: writes the message from a live buffer to the pipe's write end.
                unsafe { libc::write(fds[1], msg.as_ptr().cast(), msg.len()) };
                1
            }
        };
        // SAFETY: _exit ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    // SAFETY: the parent's copy of the write end is not used.
    unsafe { libc::close(fds[1]) };
    if pid < 0 {
        // SAFETY: closes the read end made above.
        unsafe { libc::close(fds[0]) };
        return Err(fail("fork", Path::new("/")));
    }
    let mut msg = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        // SAFETY: reads into a live buffer of the stated size.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        msg.extend_from_slice(&buf[..n as usize]);
    }
    // SAFETY: closes the read end made above.
    unsafe { libc::close(fds[0]) };
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(());
    }
    Err(SealError::Noexec {
        detail: if msg.is_empty() {
            format!("the namespace probe ended with status {status}")
        } else {
            String::from_utf8_lossy(&msg).into_owned()
        },
    })
}

/// Makes the private namespace and its mounts (see the module). The caller must be
/// single-threaded (`unshare(CLONE_NEWUSER)` refuses otherwise). The current directory is
/// entered again afterwards, so it is seen through the new mounts.
pub fn isolate(partition: &Partition) -> Result<(Namespace, Option<SealError>), SealError> {
    #[cfg(any(test, feature = "test-hooks"))]
    if std::env::var_os(NO_NAMESPACE_ENV).is_some() {
        return Err(SealError::Noexec {
            detail: format!("{NO_NAMESPACE_ENV} is set (test hook)"),
        });
    }
    let cwd = std::env::current_dir().ok();
    let kind = enter()?;
    let (mut noexec, mut read_only, mut table) = (Vec::new(), Vec::new(), None);
    let failed = bind_partition(partition, &mut noexec, &mut read_only, &mut table).err();
    if let Some(cwd) = cwd {
        let _ = std::env::set_current_dir(cwd);
    }
    let namespace = Namespace {
        kind,
        noexec,
        read_only,
        incomplete: failed.as_ref().map(|e| e.to_string()),
        table,
    };
    Ok((namespace, failed))
}

/// The namespaces themselves: a mount namespace (in a user namespace of its own for a
/// non-root user, ids mapped to themselves) that is a slave of the parent's.
fn enter() -> Result<&'static str, SealError> {
    // SAFETY: geteuid/getegid have no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if uid == 0 {
        // SAFETY: unshare takes only flags; it affects this process alone.
        if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
            return Err(fail("unshare(CLONE_NEWNS)", Path::new("/")));
        }
        // New mount ids; nothing made here may reach the parent namespace.
        forget();
        mount(None, Path::new("/"), libc::MS_REC | libc::MS_SLAVE)?;
        return Ok("mount");
    }
    // SAFETY: as above.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(fail("unshare(CLONE_NEWUSER|CLONE_NEWNS)", Path::new("/")));
    }
    forget();
    // From here on this process is inside the user namespace for good.
    let finish = || -> Result<(), SealError> {
        #[cfg(any(test, feature = "test-hooks"))]
        if std::env::var(FAIL_BIND_ENV).is_ok_and(|v| v == "enter") {
            return Err(SealError::Noexec {
                detail: format!("{FAIL_BIND_ENV}=enter is set (test hook)"),
            });
        }
        write_proc("/proc/self/setgroups", "deny")?;
        write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
        write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
        mount(None, Path::new("/"), libc::MS_REC | libc::MS_SLAVE)
    };
    finish().map(|()| "user+mount").map_err(|e| match e {
        SealError::Noexec { detail } => SealError::NamespaceUnfinished { detail },
        e => e,
    })
}

/// The binds of the partition in the namespace [`enter`] made, recording the mount points
/// remounted `noexec` and the exec dirs made read-only. A failure stops at the step that
/// failed: what was made before it only takes exec or writes away.
fn bind_partition(
    partition: &Partition,
    noexec: &mut Vec<PathBuf>,
    read_only: &mut Vec<PathBuf>,
    table: &mut Option<std::sync::Arc<[Mount]>>,
) -> Result<(), SealError> {
    #[cfg(any(test, feature = "test-hooks"))]
    let fail_at = |step: &str| match std::env::var(FAIL_BIND_ENV) {
        Ok(v) if v == step => Err(SealError::Noexec {
            detail: format!("{FAIL_BIND_ENV}={step} is set (test hook)"),
        }),
        _ => Ok(()),
    };
    // A file root (the audit log) is bind-mounted as a file.
    let mut roots: Vec<&PathBuf> = partition
        .write_set
        .iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_dir() || m.is_file()))
        .collect();
    roots.sort_by_key(|p| p.as_os_str().len());
    let exec_dirs: Vec<&PathBuf> = partition.exec_dirs.iter().filter(|p| p.is_dir()).collect();
    // The exec dirs keep the flags of the mount they are on now (locked ones included).
    let exec_flags: Vec<libc::c_ulong> = exec_dirs
        .iter()
        .map(|d| kept_flags(d))
        .collect::<Result<_, _>>()?;
    let both = |p: &Path| partition.both.iter().any(|b| beneath(p, b));
    for root in &roots {
        mount(Some(root), root, libc::MS_BIND | libc::MS_REC)?;
    }
    // The directories between a root and an exec dir (`~/.local` for `~/.local/bin`) become
    // mount points too: the kernel refuses to rename a mount point (EBUSY), so the session
    // cannot move an exec dir aside and plant a new one in its place.
    let mut ancestors: Vec<PathBuf> = Vec::new();
    for dir in &exec_dirs {
        let Some(root) = roots
            .iter()
            .filter(|r| beneath(dir, r))
            .max_by_key(|r| r.as_os_str().len())
        else {
            continue;
        };
        let mut a = dir.parent();
        while let Some(p) = a.filter(|p| beneath(p, root) && p != root) {
            if !ancestors.iter().any(|x| x == p) {
                ancestors.push(p.to_path_buf());
            }
            a = p.parent();
        }
    }
    ancestors.sort_by_key(|p| p.as_os_str().len());
    for a in &ancestors {
        mount(Some(a), a, libc::MS_BIND | libc::MS_REC)?;
    }
    #[cfg(any(test, feature = "test-hooks"))]
    fail_at("noexec")?;
    let after_binds = mounts_now()?;
    *table = Some(after_binds.clone());
    crate::test_hooks_at("noexec");
    let points: Vec<PathBuf> = after_binds.iter().map(|m| m.point.clone()).collect();
    for point in &points {
        if !roots.iter().any(|r| beneath(point, r)) || noexec.contains(point) {
            continue;
        }
        if both(point) {
            // A reduced profile's workspace (a root itself, bound above with the flags it had)
            // keeps exec.
            continue;
        }
        let mut attrs = MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID;
        if !beneath(point, Path::new("/dev")) || beneath(point, Path::new("/dev/shm")) {
            attrs |= MOUNT_ATTR_NODEV;
        }
        add_attrs_at(point, &after_binds, attrs)?;
        noexec.push(point.clone());
    }
    #[cfg(any(test, feature = "test-hooks"))]
    fail_at("read_only")?;
    // Mounts inside an exec dir become read-only with it (a remount is not recursive, so each
    // is its own), including the ones made above for a nested exec dir's parents. They stay
    // noexec, like every mount under the write set: one may be a bind of a directory the
    // session writes through another name.
    // The table read above still holds: remounts change flags, not mount points.
    let mut inner_exec_mounts: Vec<PathBuf> = Vec::new();
    for point in points {
        // Not a write-set root an exec dir holds (a workspace in it: the CLI refuses that, and
        // the root stays writable here), nor anything under one.
        let held_root = partition
            .write_set
            .iter()
            .any(|r| beneath(&point, r) && exec_dirs.iter().any(|d| beneath(r, d)));
        if exec_dirs.iter().any(|d| beneath(&point, d) && point != **d)
            && !held_root
            && !inner_exec_mounts.contains(&point)
        {
            inner_exec_mounts.push(point);
        }
    }
    for (dir, flags) in exec_dirs.iter().zip(exec_flags) {
        mount(Some(dir), dir, libc::MS_BIND | libc::MS_REC)?;
        mount(
            None,
            dir,
            libc::MS_REMOUNT | libc::MS_BIND | flags | libc::MS_RDONLY | libc::MS_NOSUID,
        )?;
        read_only.push((*dir).clone());
        for point in inner_exec_mounts.iter().filter(|p| beneath(p, dir)) {
            // Its flags now: those of the copy the recursive bind made, noexec included.
            let flags = kept_flags(point)?;
            mount(
                None,
                point,
                libc::MS_REMOUNT | libc::MS_BIND | flags | libc::MS_RDONLY | libc::MS_NOSUID,
            )?;
            read_only.push(point.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mount table of `(dev, root, point)` lines, mounted in that order: each mount's parent
    /// is the mount its point reaches when it is made, as the kernel records it.
    fn table(lines: &[(&str, &str, &str)]) -> Vec<Mount> {
        let mut mounts: Vec<Mount> = Vec::new();
        for (i, (dev, root, point)) in lines.iter().enumerate() {
            // `"8:1 ro"`: a read-only mount.
            let (dev, opts) = dev.split_once(' ').unwrap_or((dev, "rw"));
            let parent = mount_of(&mounts, Path::new(point)).map_or(1, |m| m.id);
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

    /// No other test of this crate changes mounts in its process: nothing else forgets.
    #[test]
    fn the_table_is_read_again_only_after_this_module_changed_the_mounts() {
        let first = super::table().unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &super::table().unwrap()));
        forget();
        let again = super::table().unwrap();
        assert!(!std::sync::Arc::ptr_eq(&first, &again));
        let points = |t: &[Mount]| t.iter().map(|m| m.point.clone()).collect::<Vec<_>>();
        assert_eq!(points(&first), points(&again));
    }

    /// `kept_flags` (statvfs) against the kernel's other account of the same flags, the option
    /// strings of `/proc/self/mountinfo`, for every mount of this process that a path reaches.
    #[test]
    fn kept_flags_match_the_mount_table() {
        let mounts = read_mountinfo().unwrap();
        let names = [
            ("ro", libc::MS_RDONLY),
            ("nosuid", libc::MS_NOSUID),
            ("nodev", libc::MS_NODEV),
            ("noexec", libc::MS_NOEXEC),
            ("noatime", libc::MS_NOATIME),
            ("nodiratime", libc::MS_NODIRATIME),
            ("relatime", libc::MS_RELATIME),
            ("nosymfollow", libc::MS_NOSYMFOLLOW),
        ];
        let mut checked = 0;
        for m in &mounts {
            // Only the mount a path reaches now (not one covered by a later mount).
            if !std::ptr::eq(mount_of(&mounts, &m.point).unwrap(), m) {
                continue;
            }
            let Ok(kept) = kept_flags(&m.point) else {
                continue; // not reachable by this process (a permission, a gone path)
            };
            let opts: Vec<&str> = m.options.split(',').collect();
            let mut want = names
                .iter()
                .filter(|(n, _)| opts.contains(n))
                .fold(0, |acc, (_, f)| acc | f);
            if !opts.contains(&"noatime") && !opts.contains(&"relatime") {
                want |= libc::MS_STRICTATIME;
            }
            assert_eq!(kept, want, "{}: {}", m.point.display(), m.options);
            checked += 1;
        }
        assert!(checked > 0, "no mount was checked");
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

    #[test]
    fn rebase_moves_a_path_between_roots() {
        let r = |p: &str, f: &str, t: &str| rebase(Path::new(p), Path::new(f), Path::new(t));
        assert_eq!(r("/a/b", "/a", "/x"), Some(PathBuf::from("/x/b")));
        assert_eq!(r("/a", "/a", "/x"), Some(PathBuf::from("/x")));
        assert_eq!(r("/a/b", "/", "/x"), Some(PathBuf::from("/x/a/b")));
        assert_eq!(r("/a/b", "/a", "/"), Some(PathBuf::from("/b")));
        assert_eq!(r("/a", "/a", "/"), Some(PathBuf::from("/")));
        let bytes = |p: Option<PathBuf>| p.map(|p| p.into_os_string().into_vec());
        assert_eq!(
            bytes(r("/", "/", "/x")),
            Some(b"/x".to_vec()),
            "no trailing /"
        );
        assert_eq!(r("/ab", "/a", "/x"), None);
    }

    #[test]
    fn a_mount_table_line_is_read_as_bytes_with_its_escapes() {
        let line = b"36 35 98:0 / /home/u/\xff\\040x rw,noatime master:1 - tmpfs src\\040\xfe rw";
        let m = parse_mount(line).expect("a valid line");
        assert_eq!(m.point.as_os_str().as_bytes(), b"/home/u/\xff x");
        assert_eq!(m.options, "rw,noatime");
        assert_eq!(m.fstype, "tmpfs");
        assert_eq!(unescape(b"a\\011b\\012c\\134d\\0"), b"a\tb\nc\\d\\0");
        assert!(parse_mount(b"no separator here").is_none());
    }
}
