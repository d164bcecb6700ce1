//! Small byte-string helpers shared by the parsers and the audit writer.

/// Shows bytes as text, escaping what is not printable ASCII (for Debug and messages).
pub struct Lossy<'a>(pub &'a [u8]);

impl core::fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for &c in self.0 {
            if (0x20..0x7f).contains(&c) {
                core::fmt::Write::write_char(f, c as char)?;
            } else {
                write!(f, "\\x{c:02x}")?;
            }
        }
        Ok(())
    }
}

impl core::fmt::Debug for Lossy<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// The decimal digits of `v`, written at the end of `buf` (no allocation: the guard formats
/// descriptor numbers and audit fields with it).
pub fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

/// Splits `s` at blanks (space, tab), skipping empty pieces.
pub fn words(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&c| c == b' ' || c == b'\t')
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_digits() {
        let mut b = [0u8; 20];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(42, &mut b), b"42");
        assert_eq!(decimal(u64::MAX, &mut b), b"18446744073709551615");
    }
}
