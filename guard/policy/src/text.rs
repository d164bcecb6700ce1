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

/// Splits `s` at blanks (space, tab), skipping empty pieces.
pub fn words(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&c| c == b' ' || c == b'\t')
        .filter(|w| !w.is_empty())
}
