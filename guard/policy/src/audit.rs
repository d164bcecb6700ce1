//! The one audit record schema, shared by the guard, the wrappers, the container entrypoint
//! and `execguard run`; formatted into a caller's buffer (no allocation), so the preload
//! library can emit a record with one `write`: one JSON object per line, appended with
//! `O_APPEND`, so concurrent processes never interleave; and [`append_whole`], the rule that
//! a record is in the log whole or not at all.
//!
//! | field | type | meaning |
//! | --- | --- | --- |
//! | `time` | number | seconds since the epoch, nanosecond fraction |
//! | `pid`, `uid` | number | the process that decided, and its real uid |
//! | `tool` | string | who decided: `guard`, `git`, `node`, `entrypoint`, `provider`, `run` |
//! | `entry` | string | the entry point (`execve`, `posix_spawn`, ...), `wrapper`, `start` |
//! | `decision` | string | `allow`, `deny`, or `notice` (an event, e.g. a session start) |
//! | `reason` | string | the stable reason code of the tool that decided |
//! | `profile` | string | the session profile, when known (otherwise absent) |
//! | `path` | string | the file, argument or key that decided |
//! | `target` | string | what the caller asked to run (a wrapper: its command line) |
//! | `truncated` | `true` | present when `path` or `target` was cut to fit [`RECORD_MAX`] |

use crate::sys::Errno;
use crate::{Profile, Reason};

/// A buffer this size always holds a record (long paths are cut and marked `"truncated":true`).
pub const RECORD_MAX: usize = 4096;

/// What a record says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
    /// An event that is not a decision (a session start, a quarantine).
    Notice,
}

impl Decision {
    pub const fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::Notice => "notice",
        }
    }
}

/// One record. Every writer fills all of it; see the module's table.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// Wall-clock time: seconds and nanoseconds since the epoch.
    pub time: (u64, u32),
    pub pid: i32,
    pub uid: u32,
    /// Who decided: `guard`, `git`, `node`, `entrypoint`, `provider`, `run`.
    pub tool: &'a str,
    /// The entry point (`execve`, `posix_spawn`, ...), `wrapper`, or `start`.
    pub entry: &'a str,
    pub decision: Decision,
    /// A stable reason code (snake_case; the guard's [`crate::Reason::code`], a wrapper's,
    /// the entrypoint's).
    pub reason: &'a str,
    pub profile: Option<Profile>,
    /// The file (or argument, or key) that decided.
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
    fn num(&mut self, v: u64) {
        let mut digits = [0u8; 20];
        self.raw(crate::text::decimal(v, &mut digits));
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
    o.raw(b",\"decision\":\"");
    o.raw(rec.decision.as_str().as_bytes());
    o.raw(b"\",\"reason\":");
    o.string(rec.reason.as_bytes());
    if let Some(profile) = rec.profile {
        o.raw(b",\"profile\":\"");
        o.raw(profile.as_str().as_bytes());
        o.raw(b"\"");
    }
    o.raw(b",\"path\":");
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

/// What separates the path from the way forward on a refusal line (never part of a way
/// forward, so the last one on the line ends the path).
pub const WAY_FORWARD_SEPARATOR: &str = " -- ";

/// A refusal line shows the whole path up to this many bytes (the kernel's own limit for a
/// name); a longer one is cut there, with a marker that says how much was left out.
pub const DENIAL_PATH_MAX: usize = crate::path::PATH_MAX;

/// A buffer this size always holds a refusal line with its whole path (up to
/// [`DENIAL_PATH_MAX`] bytes, each at most 4 when escaped) and its way forward.
pub const DENIAL_MAX: usize = 4 * DENIAL_PATH_MAX + 1024;

/// Room kept for the cut marker `...[cut: N more bytes]`.
const CUT_MARKER_MAX: usize = 48;

/// Writes the refusal line `<tool>: denied <reason>: <path> -- <way forward>\n` into `buf`
/// and returns its length. The way forward is [`Reason::way_forward`] for `profile`. The path
/// is whole up to [`DENIAL_PATH_MAX`] bytes in a [`DENIAL_MAX`] buffer; cut (a smaller buffer,
/// a longer path, or `omitted` bytes cut off before, as a [`crate::ShownPath`] does), it ends
/// in `...[cut: N more bytes]`. Control characters are escaped (`\xNN`):
/// a file name must not forge terminal output.
pub fn format_denial(
    tool: &str,
    reason: Reason,
    profile: Option<Profile>,
    path: &[u8],
    omitted: usize,
    buf: &mut [u8],
) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let way = reason.way_forward(profile).as_bytes();
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
    let tail = if way.is_empty() {
        1
    } else {
        WAY_FORWARD_SEPARATOR.len() + way.len() + 1
    };
    let path_end = o.buf.len().saturating_sub(tail + CUT_MARKER_MAX);
    let mut shown = 0;
    for &c in path.iter().take(DENIAL_PATH_MAX) {
        let escaped = c < 0x20 || c == 0x7f;
        if o.len + if escaped { 4 } else { 1 } > path_end {
            break;
        }
        if escaped {
            o.raw(&[b'\\', b'x', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
        } else {
            o.raw(&[c]);
        }
        shown += 1;
    }
    if shown < path.len() || omitted > 0 {
        let mut digits = [0u8; 20];
        o.raw(b"...[cut: ");
        o.raw(crate::text::decimal(
            (path.len() - shown + omitted) as u64,
            &mut digits,
        ));
        o.raw(b" more bytes]");
    }
    if !way.is_empty() {
        o.raw(WAY_FORWARD_SEPARATOR.as_bytes());
        // Only a buffer too small for its own prefix cuts the way forward.
        let room = o.buf.len().saturating_sub(o.len + 1);
        o.raw(&way[..way.len().min(room)]);
    }
    if o.len == o.buf.len() {
        o.len -= 1;
    }
    o.raw(b"\n");
    o.len
}

const EINTR: Errno = 4;

/// An audit log opened for appending (`O_APPEND`), as [`append_whole`] needs it.
pub trait AppendLog {
    /// One `write(2)`: the number of bytes written, or the errno.
    fn write(&mut self, bytes: &[u8]) -> Result<usize, Errno>;
    /// The descriptor's offset (`lseek(fd, 0, SEEK_CUR)`): after an `O_APPEND` write, the
    /// end of the bytes it wrote.
    fn offset(&mut self) -> Result<u64, Errno>;
    /// The file's size (`fstat`).
    fn size(&mut self) -> Result<u64, Errno>;
    /// `ftruncate`.
    fn truncate(&mut self, len: u64) -> Result<(), Errno>;
}

/// Why a record is not in the log (the caller refuses with `audit_unwritable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// Nothing was written: the errno of the write.
    Failed(Errno),
    /// Only part was written (a full disk, a file size limit) and taken back.
    Short,
    /// Only part was written and could not be taken back (another record followed it, or
    /// truncating failed): the log holds a fragment, which `execguard audit` counts.
    Torn,
}

/// Appends `record` (one line, ending in `\n`) with a single `write`, so concurrent writers
/// never interleave; when the write is cut short, truncates the log back to where the record
/// began, so a fragment never glues itself to the next record. The log then holds the record
/// whole or not at all (unless another record followed the fragment before it could be taken
/// back: [`AppendError::Torn`]).
pub fn append_whole(log: &mut impl AppendLog, record: &[u8]) -> Result<(), AppendError> {
    let n = loop {
        match log.write(record) {
            Err(EINTR) => continue,
            Err(e) => return Err(AppendError::Failed(e)),
            Ok(n) => break n,
        }
    };
    if n == record.len() {
        return Ok(());
    }
    if n == 0 {
        return Err(AppendError::Short);
    }
    // Our bytes end at the offset; only when nothing follows them may we cut them off.
    match (log.offset(), log.size()) {
        (Ok(end), Ok(size)) if end == size && end >= n as u64 => {
            match log.truncate(end - n as u64) {
                Ok(()) => Err(AppendError::Short),
                Err(_) => Err(AppendError::Torn),
            }
        }
        _ => Err(AppendError::Torn),
    }
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
            decision: Decision::Deny,
            reason: Reason::MutableNative.code(),
            profile: Some(Profile::Strict),
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
    fn profile_is_absent_when_unknown_and_codes_are_escaped() {
        let mut r = rec(b"/x", b"x");
        r.profile = None;
        r.tool = "entrypoint";
        r.reason = "bad\"code";
        r.decision = Decision::Notice;
        let mut buf = [0u8; RECORD_MAX];
        let n = format_record(&r, &mut buf);
        let line = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(!line.contains("profile"), "{line}");
        assert!(
            line.contains(",\"decision\":\"notice\",\"reason\":\"bad\\\"code\","),
            "{line}"
        );
    }

    /// A log in memory whose writes stop after `room` bytes, like a full disk.
    struct Disk {
        data: Vec<u8>,
        room: usize,
        interrupted: usize,
        appended_by_other: &'static [u8],
        truncate_fails: bool,
        offset: usize,
    }

    impl Disk {
        fn new(data: &[u8], room: usize) -> Disk {
            Disk {
                data: data.to_vec(),
                room,
                interrupted: 0,
                appended_by_other: b"",
                truncate_fails: false,
                offset: data.len(),
            }
        }
    }

    impl AppendLog for Disk {
        fn write(&mut self, bytes: &[u8]) -> Result<usize, Errno> {
            if self.interrupted > 0 {
                self.interrupted -= 1;
                return Err(EINTR);
            }
            let n = bytes.len().min(self.room);
            if n == 0 {
                return Err(28); // ENOSPC
            }
            self.room -= n;
            self.data.extend_from_slice(&bytes[..n]);
            let end = self.data.len();
            self.data.extend_from_slice(self.appended_by_other);
            self.appended_by_other = b"";
            self.offset = end;
            Ok(n)
        }
        fn offset(&mut self) -> Result<u64, Errno> {
            Ok(self.offset as u64)
        }
        fn size(&mut self) -> Result<u64, Errno> {
            Ok(self.data.len() as u64)
        }
        fn truncate(&mut self, len: u64) -> Result<(), Errno> {
            if self.truncate_fails {
                return Err(5);
            }
            self.data.truncate(len as usize);
            Ok(())
        }
    }

    #[test]
    fn a_record_is_appended_whole_or_not_at_all() {
        let prior = b"{\"a\":1}\n";
        let rec = b"{\"b\":2}\n";
        // (room on the disk, interrupted writes, another writer's bytes right after ours,
        //  truncate fails) -> (result, log afterwards)
        type Case = (
            usize,
            usize,
            &'static [u8],
            bool,
            Result<(), AppendError>,
            &'static [u8],
        );
        let cases: &[Case] = &[
            (100, 0, b"", false, Ok(()), b"{\"a\":1}\n{\"b\":2}\n"),
            (100, 2, b"", false, Ok(()), b"{\"a\":1}\n{\"b\":2}\n"),
            (
                0,
                0,
                b"",
                false,
                Err(AppendError::Failed(28)),
                b"{\"a\":1}\n",
            ),
            (3, 0, b"", false, Err(AppendError::Short), b"{\"a\":1}\n"),
            (
                rec.len() - 1,
                0,
                b"",
                false,
                Err(AppendError::Short),
                b"{\"a\":1}\n",
            ),
            (3, 0, b"", true, Err(AppendError::Torn), b"{\"a\":1}\n{\"b"),
            // Someone appended after our fragment: cutting would destroy their record.
            (
                3,
                0,
                b"{\"c\":3}\n",
                false,
                Err(AppendError::Torn),
                b"{\"a\":1}\n{\"b{\"c\":3}\n",
            ),
        ];
        for &(room, interrupted, other, truncate_fails, want, after) in cases {
            let mut d = Disk::new(prior, room);
            d.interrupted = interrupted;
            d.appended_by_other = other;
            d.truncate_fails = truncate_fails;
            assert_eq!(append_whole(&mut d, rec), want, "room {room}");
            assert_eq!(
                String::from_utf8_lossy(&d.data),
                String::from_utf8_lossy(after),
                "room {room}"
            );
        }
    }

    fn line(reason: Reason, profile: Option<Profile>, path: &[u8], buf: &mut [u8]) -> String {
        let n = format_denial("execguard", reason, profile, path, 0, buf);
        assert!(n <= buf.len());
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn denial_line_ends_with_the_way_forward() {
        let mut buf = [0u8; DENIAL_MAX];
        let got = line(
            Reason::MutableNative,
            Some(Profile::Strict),
            b"/w/a\nb",
            &mut buf,
        );
        assert_eq!(
            got,
            format!(
                "execguard: denied mutable_native: /w/a\\x0ab -- {}\n",
                Reason::MutableNative.way_forward(Some(Profile::Strict))
            )
        );
        assert!(got.contains("--profile development"), "{got}");
    }

    #[test]
    fn denial_line_keeps_the_whole_path() {
        // Long, and all control characters: the worst case of escaping.
        let mut path = vec![b'/'; 1];
        path.extend(core::iter::repeat_n(b'\x01', DENIAL_PATH_MAX - 1));
        let mut buf = [0u8; DENIAL_MAX];
        let got = line(Reason::MutableNative, None, &path, &mut buf);
        assert_eq!(got.matches("\\x01").count(), DENIAL_PATH_MAX - 1, "{got}");
        assert!(!got.contains("[cut"), "{got}");
        assert!(got.ends_with(" -- native code written in this session does not run under strict; to run what the workspace builds, start the session with `execguard run --profile development`\n"));
        // 300 bytes: more than the 119 the line used to show.
        let path = [b'a'; 300];
        let got = line(Reason::MutableNative, None, &path, &mut buf);
        assert!(
            got.contains(&"a".repeat(300)) && !got.contains("[cut"),
            "{got}"
        );
    }

    #[test]
    fn a_cut_path_says_so() {
        let long = [b'a'; DENIAL_PATH_MAX + 10];
        let mut buf = [0u8; DENIAL_MAX];
        let got = line(Reason::PathTooLong, None, &long, &mut buf);
        assert!(got.contains("...[cut: 10 more bytes] -- "), "{got}");
        // Cut before (a ShownPath): the marker counts those bytes too.
        let shown = crate::ShownPath::new(&long);
        let n = format_denial(
            "execguard",
            Reason::MutableNative,
            None,
            shown.as_bytes(),
            shown.omitted(),
            &mut buf,
        );
        let got = core::str::from_utf8(&buf[..n]).unwrap();
        let want = format!(
            "...[cut: {} more bytes] -- ",
            long.len() - crate::ShownPath::MAX
        );
        assert!(got.contains(&want), "{got}");
        // A small buffer cuts earlier, still marked, still with its newline.
        let mut small = [0u8; 256];
        let got = line(Reason::MutableNative, None, &long, &mut small);
        assert!(got.contains("...[cut: "), "{got}");
        assert!(got.ends_with('\n'));
        let mut tiny = [0u8; 16];
        let got = line(Reason::MutableNative, None, &long, &mut tiny);
        assert!(got.ends_with('\n') && got.len() <= 16, "{got}");
    }
}
