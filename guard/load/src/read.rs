//! The one bounded reader of whole files (the policy here, the session's inputs and records,
//! the container's state, manifests and home files): never more than a cap into memory.

use std::io::Read;

/// At most `limit + 1` bytes of `reader`: a caller that refuses what is longer than `limit`
/// with a message of its own (the policy parser's) sees that it is.
pub fn read_up_to(reader: impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// All of `reader`, refused (`ErrorKind::FileTooLarge`) when it holds more than `cap` bytes.
pub fn read_capped(reader: impl Read, cap: usize) -> std::io::Result<Vec<u8>> {
    let bytes = read_up_to(reader, cap)?;
    if bytes.len() > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {cap} bytes"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_the_last_byte_read() {
        assert_eq!(read_capped(&b"abc"[..], 3).unwrap(), b"abc");
        let e = read_capped(&b"abcd"[..], 3).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert_eq!(read_up_to(&b"abcdef"[..], 3).unwrap(), b"abcd");
    }
}
