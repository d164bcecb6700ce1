//! The kept log file: appended by writers outside every session (several supervisors of one
//! user may share it), one whole line at a time, each chained to the line before it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::Path;

use execguard_policy::audit::{append_whole, AppendError, AppendLog};

/// The longest kept line: a sender's record ([`execguard_policy::audit::RECORD_MAX`]) grows by
/// the writer's stamp, its link and a session's fields and signature.
pub const LINE_MAX: usize = 2 * execguard_policy::audit::RECORD_MAX;

/// An open kept log. The digest of its last line is remembered, with the size it was read at:
/// while no other writer has appended since, it is not read again.
pub struct KeptLog {
    file: File,
    tail: Option<(u64, [u8; 32])>,
}

struct Appending<'a>(&'a File);

impl AppendLog for Appending<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<usize, i32> {
        io::Write::write(&mut self.0, bytes).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
    fn offset(&mut self) -> Result<u64, i32> {
        io::Seek::stream_position(&mut self.0).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
    fn size(&mut self) -> Result<u64, i32> {
        self.0
            .metadata()
            .map(|m| m.len())
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
    fn truncate(&mut self, len: u64) -> Result<(), i32> {
        self.0
            .set_len(len)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
}

/// Holds `flock(LOCK_EX)` on the log while it lives: writers of one file take turns, so each
/// line's `prev` is the line right before it.
struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    fn new(file: &'a File) -> io::Result<Self> {
        loop {
            // SAFETY: flock takes a descriptor this File owns and an integer operation.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(Locked(file));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `new`; unlocking a lock this process holds.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl KeptLog {
    /// Opens (creating, `0600`) the log at `path`, never through a link as its last component,
    /// and only a regular file.
    pub fn open(path: &Path) -> io::Result<KeptLog> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the audit log is not a regular file",
            ));
        }
        Ok(KeptLog { file, tail: None })
    }

    /// Appends the line `make` builds from the digest of the line before it; returns that
    /// line's own digest. The line is in the log whole or not at all (a full disk: the part
    /// written is taken back).
    pub fn append(&mut self, make: impl FnOnce(&[u8; 32]) -> String) -> io::Result<[u8; 32]> {
        let _lock = Locked::new(&self.file)?;
        let mut size = self.file.metadata()?.len();
        let cached = self.tail;
        let prev = match cached {
            Some((at, digest)) if at == size => digest,
            _ => {
                let (digest, ended) = last_digest(&self.file, size)?;
                size += ended;
                digest
            }
        };
        let mut line = make(&prev).into_bytes();
        let digest = crate::digest(&line);
        line.push(b'\n');
        append_whole(&mut Appending(&self.file), &line).map_err(|e| match e {
            AppendError::Failed(errno) => io::Error::from_raw_os_error(errno),
            AppendError::Short => io::Error::new(
                io::ErrorKind::StorageFull,
                "the audit log took only part of a record (taken back)",
            ),
            AppendError::Torn => io::Error::other("the audit log holds part of a record"),
        })?;
        self.tail = Some((size + line.len() as u64, digest));
        Ok(digest)
    }
}

/// The digest of the last line of a log of `size` bytes ([`crate::GENESIS`] when empty).
/// A last line without its newline (a writer killed in the middle of its write) is ended
/// first, so the next line starts on its own (`verify` names the fragment); the second value
/// is the bytes that took (0 or 1).
fn last_digest(file: &File, size: u64) -> io::Result<([u8; 32], u64)> {
    if size == 0 {
        return Ok((crate::GENESIS, 0));
    }
    let window = size.min(LINE_MAX as u64 + 1);
    let mut buf = vec![0u8; window as usize];
    file.read_exact_at(&mut buf, size - window)?;
    let mut end = buf.len();
    let mut ended = 0;
    if buf[end - 1] == b'\n' {
        end -= 1;
    } else {
        io::Write::write_all(&mut &*file, b"\n")?;
        ended = 1;
    }
    let start = buf[..end]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    Ok((crate::digest(&buf[start..end]), ended))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_names_the_digest_of_the_one_before_across_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut a = KeptLog::open(&path).unwrap();
        let mut b = KeptLog::open(&path).unwrap();
        let mut prevs = Vec::new();
        for (i, which) in [0, 1, 0, 0, 1].into_iter().enumerate() {
            let log = if which == 0 { &mut a } else { &mut b };
            log.append(|prev| {
                prevs.push(*prev);
                format!("{{\"n\":{i}}}")
            })
            .unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(prevs[0], crate::GENESIS);
        for i in 1..5 {
            assert_eq!(prevs[i], crate::digest(lines[i - 1].as_bytes()), "line {i}");
        }
    }

    #[test]
    fn a_torn_last_line_is_ended_before_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":").unwrap();
        let mut log = KeptLog::open(&path).unwrap();
        let mut seen = None;
        log.append(|prev| {
            seen = Some(*prev);
            "{\"c\":3}".into()
        })
        .unwrap();
        assert_eq!(seen, Some(crate::digest(b"{\"b\":")));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":\n{\"c\":3}\n"
        );
    }

    #[test]
    fn a_link_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real"), b"").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("log")).unwrap();
        assert!(KeptLog::open(&dir.path().join("log")).is_err());
    }
}
