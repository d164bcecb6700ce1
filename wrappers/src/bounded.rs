//! Reading a file that someone else may have planted: bounded, never blocking, never a device.

use std::fs;
use std::io;
use std::path::Path;

/// `file`'s bytes when it is a regular file of at most `max` bytes, judged on the opened file
/// itself (`EINVAL` when it is not regular, `EFBIG` when larger): a FIFO put there never
/// blocks the reader (`O_NONBLOCK`), and a device is never read without end. `follow`: through
/// a symlink as the last component, as git does; else never (`O_NOFOLLOW`). For the files the
/// supervisor reads outside the session, where the session may plant either.
pub fn read_regular(file: &Path, max: u64, follow: bool) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | nofollow)
        .open(file)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    if m.len() > max {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    }
    // Read to one byte past `max` at most: a file that grew since is refused too.
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    }
    Ok(bytes)
}
