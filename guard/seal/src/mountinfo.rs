//! The mount table: `/proc/self/mountinfo` read and parsed, kept until this crate changes the
//! mounts, and the kernel's lookup of the mount a path reaches ([`Lookup`]).

use crate::error::SealError;
use crate::partition::beneath;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

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
/// change this module makes (a new namespace, a bind, a remount) forgets it. Before the
/// session's namespace is made, mounts made outside may appear at any time, after a fresh read
/// as after a kept one; inside it (private) none come in.
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
pub(crate) fn mounts_now() -> Result<std::sync::Arc<[Mount]>, SealError> {
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

pub(crate) fn parse_mount(line: &[u8]) -> Option<Mount> {
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
pub(crate) fn mount_of<'m>(mounts: &'m [Mount], path: &Path) -> Option<&'m Mount> {
    Lookup::new(mounts).mount_of(path)
}

/// Finds the mount a path reaches as the kernel's lookup does: from the root mount, down each
/// component, into a mount whose parent is the current one and whose point is that
/// component, and up each stack on it. Neither the order of the table nor the depth of a
/// point decides: a mount tucked beneath another (`MOVE_MOUNT_BENEATH`) is newer but lower,
/// and a mount on a directory above covers every mount made below it before.
pub(crate) struct Lookup<'m> {
    pub(crate) mounts: &'m [Mount],
    /// (parent id, point) -> the mount there.
    pub(crate) children: std::collections::HashMap<(u32, &'m Path), &'m Mount>,
    pub(crate) root: Option<&'m Mount>,
}

impl<'m> Lookup<'m> {
    pub(crate) fn new(mounts: &'m [Mount]) -> Self {
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
    pub(crate) fn top(&self, mut m: &'m Mount, at: &Path) -> &'m Mount {
        while let Some(next) = self.children.get(&(m.id, at)) {
            m = next;
        }
        m
    }

    pub(crate) fn mount_of(&self, path: &Path) -> Option<&'m Mount> {
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
    pub(crate) fn top_below(&self, m: &'m Mount, prefix: &[u8]) -> &'m Mount {
        let at = Path::new(std::ffi::OsStr::from_bytes(prefix));
        match self.children.get(&(m.id, at)) {
            Some(child) => self.top(child, at),
            None => m,
        }
    }

    /// Where `path` lies in its file system: the mount's device, and the path from that file
    /// system's root.
    pub(crate) fn place(&self, path: &Path) -> Option<(&'m str, PathBuf)> {
        let m = self.mount_of(path)?;
        Some((&m.dev, rebase(path, &m.point, &m.root)?))
    }
}

/// `path`, which lies beneath `from`, moved to the same place beneath `to`.
pub(crate) fn rebase(path: &Path, from: &Path, to: &Path) -> Option<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
