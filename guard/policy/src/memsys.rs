//! The recording in-memory [`Sys`] double (tests only): a file tree with contents, modes,
//! symlinks and a cwd, answering as the kernel would, and a log of every call. The engine's
//! rules are tested table-driven against it (`decide::rule_tests`), without `cc` or processes;
//! the process matrix in `tests/` stays the black-box layer.

use crate::path::PathBuf;
use crate::sys::{
    At, Errno, FileInfo, OpenMode, Sys, EACCES, EINVAL, ELOOP, ENOENT, S_IFDIR, S_IFREG,
};
use std::collections::BTreeMap;
use std::string::String;
use std::vec::Vec;

#[derive(Clone)]
enum Node {
    File {
        mode: u32,
        content: Vec<u8>,
        ino: u64,
        ctime_ns: u64,
    },
    Dir {
        ino: u64,
    },
    Link(Vec<u8>),
}

/// The session's user, when not root.
const SESSION_UID: u32 = 1000;

/// A file system in memory. Paths are absolute and canonical when added.
pub struct MemSys {
    nodes: BTreeMap<Vec<u8>, Node>,
    writable: Vec<Vec<u8>>,
    owned: Vec<Vec<u8>>,
    unlinked: Vec<Vec<u8>>,
    unreadable: Vec<Vec<u8>>,
    no_proc: bool,
    cwd: Vec<u8>,
    root: bool,
    next_ino: u64,
    open: Vec<Vec<u8>>,
    /// Every call, in order (`open /usr/bin/x`, `may_write /ws`...).
    pub calls: Vec<String>,
}

impl MemSys {
    pub fn new() -> Self {
        let mut s = MemSys {
            nodes: BTreeMap::new(),
            writable: Vec::new(),
            owned: Vec::new(),
            unlinked: Vec::new(),
            unreadable: Vec::new(),
            no_proc: false,
            cwd: b"/".to_vec(),
            root: false,
            next_ino: 1,
            open: Vec::new(),
            calls: Vec::new(),
        };
        s.dir(b"/");
        s
    }

    fn ino(&mut self) -> u64 {
        self.next_ino += 1;
        self.next_ino
    }

    /// Adds a directory and its parents.
    pub fn dir(&mut self, path: &[u8]) -> &mut Self {
        let mut at = 0;
        while let Some(i) = path[at..].iter().position(|&c| c == b'/') {
            let end = at + i;
            let prefix = if end == 0 { &b"/"[..] } else { &path[..end] };
            if !self.nodes.contains_key(prefix) {
                let ino = self.ino();
                self.nodes.insert(prefix.to_vec(), Node::Dir { ino });
            }
            at = end + 1;
        }
        if !self.nodes.contains_key(path) {
            let ino = self.ino();
            self.nodes.insert(path.to_vec(), Node::Dir { ino });
        }
        self
    }

    /// Adds a file (and its directories).
    pub fn file(&mut self, path: &[u8], mode: u32, content: &[u8]) -> &mut Self {
        if let Some(cut) = path.iter().rposition(|&c| c == b'/').filter(|&c| c > 0) {
            self.dir(&path[..cut]);
        }
        let ino = self.ino();
        self.nodes.insert(
            path.to_vec(),
            Node::File {
                mode,
                content: content.to_vec(),
                ino,
                ctime_ns: 1,
            },
        );
        self
    }

    pub fn elf(&mut self, path: &[u8]) -> &mut Self {
        self.file(path, 0o755, b"\x7fELF\x02\x01\x01")
    }

    pub fn script(&mut self, path: &[u8], text: &[u8]) -> &mut Self {
        self.file(path, 0o755, text)
    }

    pub fn symlink(&mut self, path: &[u8], target: &[u8]) -> &mut Self {
        self.nodes
            .insert(path.to_vec(), Node::Link(target.to_vec()));
        self
    }

    /// The kernel lets the session's user write `path` (a file or directory), whatever the
    /// mode bits show.
    pub fn writable(&mut self, path: &[u8]) -> &mut Self {
        self.writable.push(path.to_vec());
        self
    }

    /// The session's user owns `path`, whose mode lets nobody write it.
    pub fn owned(&mut self, path: &[u8]) -> &mut Self {
        self.owned.push(path.to_vec());
        self
    }

    /// Changes the file at `path` in place (same inode, a later change time), as a write or a
    /// `chmod` would.
    pub fn touch(&mut self, path: &[u8]) -> &mut Self {
        if let Some(Node::File { ctime_ns, .. }) = self.nodes.get_mut(path) {
            *ctime_ns += 1;
        }
        self
    }

    /// The file at `path` has no name on disk any more (deleted while open: link count 0).
    pub fn unlinked(&mut self, path: &[u8]) -> &mut Self {
        self.unlinked.push(path.to_vec());
        self
    }

    /// The session's user may execute `path` but not read it (mode `--x`): a read open fails.
    pub fn unreadable(&mut self, path: &[u8]) -> &mut Self {
        self.unreadable.push(path.to_vec());
        self
    }

    /// `/proc` is not mounted: no descriptor's name and no caller's executable can be asked.
    pub fn without_proc(&mut self) -> &mut Self {
        self.no_proc = true;
        self
    }

    pub fn cwd_at(&mut self, path: &[u8]) -> &mut Self {
        self.cwd = path.to_vec();
        self
    }

    pub fn as_root(&mut self) -> &mut Self {
        self.root = true;
        self
    }

    fn log(&mut self, what: &str, path: &[u8]) {
        self.calls
            .push(std::format!("{what} {}", String::from_utf8_lossy(path)));
    }

    /// The canonical path `path` names (following every symlink), or the errno.
    fn resolve(&self, path: &[u8], follow_last: bool) -> Result<Vec<u8>, Errno> {
        let mut pending: Vec<Vec<u8>> = Vec::new();
        let full = if path.starts_with(b"/") {
            path.to_vec()
        } else {
            [&self.cwd[..], b"/", path].concat()
        };
        for c in full.split(|&c| c == b'/').rev() {
            pending.push(c.to_vec());
        }
        let mut out: Vec<u8> = Vec::new();
        let mut links = 0;
        while let Some(c) = pending.pop() {
            match &c[..] {
                b"" | b"." => continue,
                b".." => {
                    let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                    out.truncate(cut);
                    continue;
                }
                _ => {}
            }
            let mut next = out.clone();
            next.push(b'/');
            next.extend_from_slice(&c);
            match self.nodes.get(&next) {
                None => return Err(ENOENT),
                Some(Node::Link(t)) if follow_last || !pending.is_empty() => {
                    links += 1;
                    if links > 40 {
                        return Err(ELOOP);
                    }
                    if t.starts_with(b"/") {
                        out.clear();
                    }
                    for part in t.split(|&b| b == b'/').rev() {
                        pending.push(part.to_vec());
                    }
                }
                Some(_) => out = next,
            }
        }
        Ok(if out.is_empty() { b"/".to_vec() } else { out })
    }

    fn info(&self, canonical: &[u8]) -> FileInfo {
        let mut info = match self.nodes.get(canonical) {
            Some(Node::File {
                mode,
                ino,
                ctime_ns,
                content,
            }) => FileInfo {
                dev: 1,
                ino: *ino,
                nlink: 1,
                mode: S_IFREG | mode,
                uid: 0,
                ctime_ns: *ctime_ns,
                size: content.len() as u64,
            },
            Some(Node::Dir { ino }) => FileInfo {
                dev: 1,
                ino: *ino,
                nlink: 2,
                mode: S_IFDIR | 0o755,
                uid: 0,
                ctime_ns: 1,
                size: 4096,
            },
            _ => return FileInfo::default(),
        };
        // `writable` leaves the mode alone: the kernel's answer is not always the mode bits'
        // (FUSE, NFS, CIFS), and the engine must ask it.
        let has = |list: &[Vec<u8>]| list.iter().any(|p| p == canonical);
        if has(&self.owned) {
            info.uid = SESSION_UID;
            info.mode &= !0o222;
        }
        if has(&self.unlinked) {
            info.nlink = 0;
        }
        info
    }

    fn open_canonical(&mut self, canonical: Vec<u8>) -> usize {
        self.open.push(canonical);
        self.open.len() - 1
    }
}

impl Default for MemSys {
    fn default() -> Self {
        Self::new()
    }
}

impl Sys for MemSys {
    type Fd = usize;

    fn open(&mut self, at: At<'_>, mode: OpenMode, follow: bool) -> Result<usize, Errno> {
        let At::Cwd(path) = at else {
            return Err(EINVAL);
        };
        self.log("open", path);
        let canonical = self.resolve(path, follow)?;
        if matches!(mode, OpenMode::Read) && self.unreadable.contains(&canonical) && !self.root {
            return Err(EACCES);
        }
        Ok(self.open_canonical(canonical))
    }

    fn fstat(&mut self, fd: &usize) -> Result<FileInfo, Errno> {
        Ok(self.info(&self.open[*fd].clone()))
    }

    fn read_head(&mut self, fd: &usize, buf: &mut [u8]) -> Result<usize, Errno> {
        match self.nodes.get(&self.open[*fd]) {
            Some(Node::File { content, .. }) => {
                let n = content.len().min(buf.len());
                buf[..n].copy_from_slice(&content[..n]);
                Ok(n)
            }
            _ => Ok(0),
        }
    }

    fn fd_path(&mut self, fd: &usize, out: &mut PathBuf) -> Result<(), Errno> {
        if self.no_proc {
            return Err(ENOENT);
        }
        out.truncate(0);
        out.push_bytes(&self.open[*fd].clone()).map_err(|_| EINVAL)
    }

    fn close(&mut self, _fd: usize) {}

    fn stat(&mut self, path: &[u8]) -> Result<FileInfo, Errno> {
        self.log("stat", path);
        let canonical = self.resolve(path, true)?;
        Ok(self.info(&canonical))
    }

    fn caller_exe(&mut self) -> Result<FileInfo, Errno> {
        if self.no_proc {
            return Err(ENOENT);
        }
        Ok(FileInfo::default())
    }

    fn caller_exe_path(&mut self, out: &mut PathBuf) -> Result<(), Errno> {
        out.truncate(0);
        Ok(())
    }

    fn is_executable(&mut self, path: &[u8]) -> bool {
        self.log("is_executable", path);
        match self.resolve(path, true) {
            Ok(c) => {
                matches!(self.nodes.get(&c), Some(Node::File { mode, .. }) if mode & 0o111 != 0)
            }
            Err(_) => false,
        }
    }

    fn may_write(&mut self, path: &[u8]) -> Result<(), Errno> {
        self.log("may_write", path);
        if self.writable.iter().any(|w| w == path) {
            Ok(())
        } else {
            Err(EACCES)
        }
    }

    fn owns_every_file(&mut self) -> bool {
        false
    }

    fn effective_uid(&mut self) -> u32 {
        if self.root {
            0
        } else {
            SESSION_UID
        }
    }

    fn bypasses_permissions(&mut self) -> bool {
        self.root
    }

    fn read_link(&mut self, path: &[u8], out: &mut [u8]) -> Result<usize, Errno> {
        match self.nodes.get(path) {
            Some(Node::Link(t)) if t.len() <= out.len() => {
                out[..t.len()].copy_from_slice(t);
                Ok(t.len())
            }
            Some(Node::Link(_)) => Err(crate::sys::ENAMETOOLONG),
            Some(_) => Err(EINVAL),
            None => Err(ENOENT),
        }
    }

    fn cwd(&mut self, out: &mut PathBuf) -> Result<(), Errno> {
        out.truncate(0);
        out.push_bytes(&self.cwd.clone()).map_err(|_| EINVAL)
    }

    fn open_exact(&mut self, path: &[u8], mode: OpenMode) -> Result<usize, Errno> {
        // Fails with ELOOP when any component is a symlink, as RESOLVE_NO_SYMLINKS does.
        let mut at = 1;
        loop {
            let end = path[at..]
                .iter()
                .position(|&c| c == b'/')
                .map_or(path.len(), |i| at + i);
            if let Some(Node::Link(_)) = self.nodes.get(&path[..end]) {
                return Err(ELOOP);
            }
            if end == path.len() {
                break;
            }
            at = end + 1;
        }
        self.open(At::Cwd(path), mode, true)
    }
}
