//! Reading files the user names (a policy, an audit log): only regular files, opened without
//! blocking (a FIFO must not hang the command) and read up to a documented cap (`/dev/zero`
//! must not exhaust memory).

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file could not be read as input; the message names the file and how to proceed.
#[derive(Debug)]
pub enum InputError {
    Unreadable(String, std::io::Error),
    /// A FIFO, a device, a directory, a socket.
    NotRegular(String, &'static str),
    TooLarge(String, usize),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Unreadable(p, e) => write!(f, "cannot read {p}: {e}"),
            InputError::NotRegular(p, kind) => {
                write!(f, "{p} is {kind}, not a regular file: name a regular file")
            }
            InputError::TooLarge(p, cap) => {
                write!(
                    f,
                    "{p} is larger than {cap} bytes, the limit for this input"
                )
            }
        }
    }
}

impl std::error::Error for InputError {}

fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading; refuses anything but a regular file (following symlinks, as the
/// user named it). `O_NONBLOCK` makes opening a FIFO return at once; it changes nothing for
/// regular files.
pub fn open_regular(path: &Path) -> Result<File, InputError> {
    open_regular_with(path, 0)
}

fn open_regular_with(path: &Path, flags: libc::c_int) -> Result<File, InputError> {
    let shown = || path.display().to_string();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | flags)
        .open(path)
        .map_err(|e| InputError::Unreadable(shown(), e))?;
    let meta = file
        .metadata()
        .map_err(|e| InputError::Unreadable(shown(), e))?;
    if !meta.is_file() {
        return Err(InputError::NotRegular(shown(), kind(meta.file_type())));
    }
    Ok(file)
}

/// The whole of a regular file of at most `cap` bytes.
pub fn read_capped(path: &Path, cap: usize) -> Result<Vec<u8>, InputError> {
    read_file_capped(open_regular(path)?, path, cap)
}

/// [`read_capped`] of a record execguard keeps where sessions can write (the shim base): a
/// symlink there is not followed, so a session cannot make it name a file elsewhere.
pub fn read_record(path: &Path, cap: usize) -> Result<Vec<u8>, InputError> {
    read_file_capped(open_regular_with(path, libc::O_NOFOLLOW)?, path, cap)
}

fn read_file_capped(file: File, path: &Path, cap: usize) -> Result<Vec<u8>, InputError> {
    execguard_load::read::read_capped(file, cap).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => InputError::TooLarge(path.display().to_string(), cap),
        _ => InputError::Unreadable(path.display().to_string(), e),
    })
}

/// A policy file the user names (`policy validate`, `run --policy`, `check --policy`), capped
/// at the policy limit.
pub fn read_policy(path: &Path) -> Result<Vec<u8>, InputError> {
    read_capped(path, execguard_policy::policy::MAX_POLICY_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let dir = std::env::temp_dir().join(format!("eg-input-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::fs::write(dir.join("big"), vec![b'#'; 101]).unwrap();
        std::fs::write(dir.join("ok"), b"x").unwrap();
        let cases: &[(&Path, &str)] = &[
            (
                Path::new("/dev/zero"),
                "a character device, not a regular file",
            ),
            (&fifo, "a FIFO, not a regular file"),
            (&dir, "a directory, not a regular file"),
            (&dir.join("big"), "larger than 100 bytes"),
            (&dir.join("missing"), "cannot read"),
        ];
        for (path, want) in cases {
            let e = read_capped(path, 100).unwrap_err().to_string();
            assert!(e.contains(want), "{}: {e}", path.display());
        }
        assert_eq!(read_capped(&dir.join("ok"), 100).unwrap(), b"x");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
