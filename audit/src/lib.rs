//! The kept audit: records a session sends reach a writer outside it (the supervisor of
//! `execguard run`, PID 1 of the image), which stamps what only it knows and appends them,
//! chained and signed, to a log the session can neither write nor remove. `docs/audit.md`
//! says where the log lives and why the session cannot reach it.
//!
//! # The chain
//! A kept record is the one schema of `execguard_policy::audit` plus three fields, in this
//! order after `time`, `pid` and `uid`: `session` (the session's id), `seq` (its records
//! numbered from 0) and `prev` (the SHA-256, in hex, of the line before it in the file; 64
//! zeros on a file's first line). So each line's digest covers every line before it, whichever
//! session wrote them. A session's first record (`reason` `session_start`) and its last
//! (`session_end`) name it: `workspace`, `profile`, `assurance`, and `key` (the writer's
//! ed25519 public key); the last ends in `sig`, the signature of that line without its `sig`,
//! which covers the chain head (its `prev`) and so every line before it.
//!
//! # Who stamps what
//! `time`, `pid`, `uid`, `session`, `seq`, `prev` and `sig` are the writer's: `pid` and `uid`
//! are the sender's as the kernel gives them (`SO_PEERCRED`), never what a sender claims. The
//! sender names only `tool`, `entry`, `decision`, `reason`, `profile`, `path`, `target`,
//! `truncated`.

pub mod export;
pub mod key;
pub mod line;
pub mod log;
pub mod verify;
pub mod writer;

/// SHA-256 of one line (without its newline).
pub fn digest(line: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(line).into()
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// Parses lower-case hex of exactly `N` bytes.
pub fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = nibble(s[2 * i])? << 4 | nibble(s[2 * i + 1])?;
    }
    Some(out)
}

/// The `prev` of a file's first line.
pub const GENESIS: [u8; 32] = [0; 32];

#[cfg(test)]
mod tests {
    #[test]
    fn hex_round_trips() {
        let d = super::digest(b"x");
        assert_eq!(super::unhex::<32>(&super::hex(&d)), Some(d));
        assert_eq!(super::unhex::<2>("0G00"), None);
        assert_eq!(super::unhex::<2>("ABCD"), None, "upper case is not ours");
    }
}
