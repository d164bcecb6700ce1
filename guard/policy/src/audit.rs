//! Audit records and refusal lines, formatted into a caller's buffer (no allocation) so the
//! preload library can emit each with one `write`: one JSON object per line, appended with
//! `O_APPEND`, so concurrent processes never interleave.

use crate::{Profile, Reason};

/// A buffer this size always holds a record (long paths are cut and marked `"truncated":true`).
pub const RECORD_MAX: usize = 4096;

/// One decision.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// Wall-clock time: seconds and nanoseconds since the epoch.
    pub time: (u64, u32),
    pub pid: i32,
    pub uid: u32,
    /// Who decided: `guard`, `git`, `node`, ...
    pub tool: &'a str,
    /// The entry point (`execve`, `posix_spawn`, ...) or the wrapper's subcommand.
    pub entry: &'a str,
    pub allowed: bool,
    pub reason: Reason,
    pub profile: Profile,
    /// The file (or argument) that decided.
    pub path: &'a [u8],
    /// What the caller asked to run.
    pub target: &'a [u8],
}

struct Out<'b> {
    buf: &'b mut [u8],
    len: usize,
    limit: usize,
    truncated: bool,
}

impl Out<'_> {
    fn raw(&mut self, s: &[u8]) {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }
    fn num(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.raw(&digits[i..]);
    }
    /// A JSON string. Valid UTF-8 passes through; other bytes are written as `\u00XX`.
    fn string(&mut self, s: &[u8]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let utf8 = core::str::from_utf8(s).is_ok();
        self.raw(b"\"");
        for &c in s {
            if self.len + 8 > self.limit {
                // Never cut inside a UTF-8 sequence: back off to a character boundary.
                if utf8 {
                    while self.len > 0 && (self.buf[self.len - 1] & 0xc0) == 0x80 {
                        self.len -= 1;
                    }
                    if self.len > 0 && self.buf[self.len - 1] >= 0xc0 {
                        self.len -= 1;
                    }
                }
                self.truncated = true;
                break;
            }
            match c {
                b'"' => self.raw(b"\\\""),
                b'\\' => self.raw(b"\\\\"),
                0x20..=0x7e => self.raw(&[c]),
                0x80..=0xff if utf8 => self.raw(&[c]),
                _ => self.raw(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(c >> 4) as usize],
                    HEX[(c & 15) as usize],
                ]),
            }
        }
        self.raw(b"\"");
    }
}

/// Writes `rec` as one JSON line into `buf` and returns its length (`buf` should be
/// [`RECORD_MAX`] bytes; a smaller one only cuts paths earlier).
pub fn format_record(rec: &Record<'_>, buf: &mut [u8]) -> usize {
    let limit = buf.len().saturating_sub(40); // room for the closing fields
    let mut o = Out {
        buf,
        len: 0,
        limit,
        truncated: false,
    };
    o.raw(b"{\"time\":");
    o.num(rec.time.0);
    o.raw(b".");
    let mut frac = [b'0'; 9];
    let mut ns = rec.time.1.min(999_999_999);
    for d in frac.iter_mut().rev() {
        *d = b'0' + (ns % 10) as u8;
        ns /= 10;
    }
    o.raw(&frac);
    o.raw(b",\"pid\":");
    o.num(rec.pid.max(0) as u64);
    o.raw(b",\"uid\":");
    o.num(u64::from(rec.uid));
    o.raw(b",\"tool\":");
    o.string(rec.tool.as_bytes());
    o.raw(b",\"entry\":");
    o.string(rec.entry.as_bytes());
    o.raw(if rec.allowed {
        b",\"decision\":\"allow\""
    } else {
        b",\"decision\":\"deny\""
    });
    o.raw(b",\"reason\":\"");
    o.raw(rec.reason.code().as_bytes());
    o.raw(b"\",\"profile\":\"");
    o.raw(rec.profile.as_str().as_bytes());
    o.raw(b"\",\"path\":");
    o.limit = (o.len + (limit - o.len) / 2).min(limit);
    o.string(rec.path);
    o.limit = limit;
    o.raw(b",\"target\":");
    o.string(rec.target);
    o.limit = o.buf.len();
    if o.truncated {
        o.raw(b",\"truncated\":true");
    }
    o.raw(b"}\n");
    o.len
}

/// Writes the refusal line `<tool>: denied <reason>: <path>\n` into `buf`; returns its length.
pub fn format_denial(tool: &str, reason: Reason, path: &[u8], buf: &mut [u8]) -> usize {
    let mut o = Out {
        len: 0,
        limit: buf.len(),
        buf,
        truncated: false,
    };
    o.raw(tool.as_bytes());
    o.raw(b": denied ");
    o.raw(reason.code().as_bytes());
    o.raw(b": ");
    let room = o.buf.len().saturating_sub(o.len + 1);
    // Control characters would let a file name forge terminal output: show them escaped.
    for &c in path.iter().take(room / 4) {
        if c < 0x20 || c == 0x7f {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            o.raw(&[b'\\', b'x', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
        } else {
            o.raw(&[c]);
        }
    }
    if o.len == o.buf.len() {
        o.len -= 1;
    }
    o.raw(b"\n");
    o.len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec<'a>(path: &'a [u8], target: &'a [u8]) -> Record<'a> {
        Record {
            time: (1700000000, 5),
            pid: 42,
            uid: 1000,
            tool: "guard",
            entry: "execve",
            allowed: false,
            reason: Reason::MutableNative,
            profile: Profile::Strict,
            path,
            target,
        }
    }

    #[test]
    fn record_shape() {
        let mut buf = [0u8; RECORD_MAX];
        let n = format_record(&rec(b"/workspace/a \"b\"", b"./a"), &mut buf);
        let line = core::str::from_utf8(&buf[..n]).unwrap();
        assert_eq!(
            line,
            "{\"time\":1700000000.000000005,\"pid\":42,\"uid\":1000,\"tool\":\"guard\",\"entry\":\"execve\",\"decision\":\"deny\",\"reason\":\"mutable_native\",\"profile\":\"strict\",\"path\":\"/workspace/a \\\"b\\\"\",\"target\":\"./a\"}\n"
        );
    }

    #[test]
    fn long_and_binary_paths_are_cut_and_escaped() {
        let long = [b'\xff'; 5000];
        let mut buf = [0u8; RECORD_MAX];
        let n = format_record(&rec(&long, &long), &mut buf);
        let line = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(line.ends_with(",\"truncated\":true}\n"), "{line}");
        assert!(line.contains("\\u00ff"));
        assert!(n <= RECORD_MAX);
    }

    #[test]
    fn denial_line() {
        let mut buf = [0u8; 256];
        let n = format_denial("execguard", Reason::MutableNative, b"/w/a\nb", &mut buf);
        assert_eq!(&buf[..n], b"execguard: denied mutable_native: /w/a\\x0ab\n");
    }
}
