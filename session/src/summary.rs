//! The end-of-session summary, a duty of the supervisor: the session's refusals read back
//! from the audit log, counted per reason, with the first path of each and its way forward,
//! printed on stderr when the session ends. npm, cargo, configure and ctest capture their
//! children's stderr, so a refusal line the guard printed there may never reach the person;
//! the record did reach the log, and this brings it back to the terminal.
//!
//! The session's records are those appended after the [`Mark`] taken at its start. A log
//! shared with another session of the same user running at the same time (the default log
//! is per user) may lend it some of that session's records too; a log of its own
//! (`--audit FILE`) never does.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How much of the log a summary reads at most: a session that wrote more is summarised on
/// its first records, and says so.
const READ_MAX: u64 = 4 << 20;

/// Where the session's records begin: the log's size when it started, and the log itself
/// when it was there: read back through that descriptor, a log no name reaches at the end
/// (the image's, unmounted before the session starts: `execguard_container::kept`) is read.
#[derive(Clone, Debug)]
pub struct Mark {
    log: PathBuf,
    offset: u64,
    file: Option<std::sync::Arc<std::fs::File>>,
}

impl Mark {
    /// The log as it is now; a log that does not exist yet begins at 0.
    pub fn now(log: &Path) -> Mark {
        let file = std::fs::File::open(log).ok();
        Mark {
            log: log.to_path_buf(),
            offset: file
                .as_ref()
                .and_then(|f| f.metadata().ok())
                .map_or(0, |m| m.len()),
            file: file.map(std::sync::Arc::new),
        }
    }

    /// The log the mark is in.
    pub fn log(&self) -> &Path {
        &self.log
    }
}

/// One reason's refusals in the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Who decided: `guard`, `run`, `git`, `node`.
    pub tool: String,
    pub reason: String,
    pub count: usize,
    /// The path (or argument) of the first refusal.
    pub first_path: String,
    /// What to do about it ([`execguard_policy::Reason::way_forward`], a wrapper's hint).
    pub way_forward: String,
}

/// The session's refusals, per reason, in the order each reason first occurred.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub rows: Vec<Row>,
    /// The session wrote more than [`READ_MAX`] bytes of records: only the first were read.
    pub cut: bool,
}

/// The fields of a record the summary needs (the schema: `execguard_policy::audit`).
#[derive(serde::Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    tool: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    decision: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    reason: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    profile: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    path: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    target: std::borrow::Cow<'a, str>,
}

impl Summary {
    /// Reads the records appended since `mark`. A log that cannot be read gives an empty
    /// summary: the refusals were said when they happened, and the log is the operator's to
    /// check (`execguard audit`).
    pub fn since(mark: &Mark) -> Summary {
        let opened;
        let mut file: &std::fs::File = match &mark.file {
            Some(f) => f,
            None => match std::fs::File::open(&mark.log) {
                Ok(f) => {
                    opened = f;
                    &opened
                }
                Err(_) => return Summary::default(),
            },
        };
        let mut bytes = Vec::new();
        let read = file
            .seek(SeekFrom::Start(mark.offset))
            .and_then(|_| file.by_ref().take(READ_MAX + 1).read_to_end(&mut bytes));
        if read.is_err() {
            return Summary::default();
        }
        let cut = bytes.len() as u64 > READ_MAX;
        let mut summary = Summary::of_records(&bytes[..bytes.len().min(READ_MAX as usize)]);
        summary.cut = cut;
        summary
    }

    /// The summary of `bytes`, JSON lines of the audit schema; a line that is not a record
    /// (a fragment a crash left) is skipped.
    pub fn of_records(bytes: &[u8]) -> Summary {
        let mut rows: Vec<Row> = Vec::new();
        let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
        // Every writer formats records alike (`execguard_policy::audit::format_record`): a line
        // without this is no refusal, and is not parsed (most of an `audit_allow` log).
        let deny = memchr::memmem::Finder::new(b"\"decision\":\"deny\"");
        let refusals = bytes
            .split(|&b| b == b'\n')
            .filter(|l| deny.find(l).is_some());
        for line in refusals {
            let Ok(rec) = serde_json::from_slice::<Record<'_>>(line) else {
                continue;
            };
            if rec.decision != "deny" {
                continue;
            }
            let key = (rec.tool.to_string(), rec.reason.to_string());
            if let Some(&i) = index.get(&key) {
                rows[i].count += 1;
                continue;
            }
            let path = if rec.path.is_empty() {
                &rec.target
            } else {
                &rec.path
            };
            index.insert(key, rows.len());
            rows.push(Row {
                way_forward: way_forward(&rec.tool, &rec.reason, rec.profile.as_deref()),
                tool: rec.tool.into_owned(),
                reason: rec.reason.into_owned(),
                count: 1,
                first_path: path.to_string(),
            });
        }
        Summary { rows, cut: false }
    }

    /// The lines to print, none when nothing was refused. Each names the reason, how often,
    /// the first path, and the way forward; none starts like a refusal line
    /// (`execguard: denied`), so a reader of stderr never counts a refusal twice.
    pub fn lines(&self, log: &Path) -> Vec<String> {
        if self.rows.is_empty() {
            return Vec::new();
        }
        let total: usize = self.rows.iter().map(|r| r.count).sum();
        let mut out = vec![format!(
            "execguard: session summary: {total} refusal{} (audit log {}{}):",
            if total == 1 { "" } else { "s" },
            log.display(),
            if self.cut {
                "; only its first 4 MiB read"
            } else {
                ""
            }
        )];
        for r in &self.rows {
            let by = match r.tool.as_str() {
                "guard" | "run" => String::new(),
                tool => format!(" ({tool})"),
            };
            out.push(format!(
                "execguard:   {} x {}{by}, first {} -- {}",
                r.count,
                r.reason,
                shown(&r.first_path),
                r.way_forward
            ));
        }
        out
    }

    /// Prints [`Summary::lines`] on stderr (one write: the lines stay together).
    pub fn print(&self, log: &Path) {
        let lines = self.lines(log);
        if lines.is_empty() {
            return;
        }
        let mut text = lines.join("\n");
        text.push('\n');
        use std::io::Write as _;
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

/// A path as the refusal line shows it: control characters escaped, so a file name cannot
/// forge terminal output.
fn shown(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The way forward of a recorded refusal: the engine's table for the guard's reasons (and
/// `execguard run`'s first command, decided by the same engine), a wrapper's own hint for
/// its reasons.
fn way_forward(tool: &str, reason: &str, profile: Option<&str>) -> String {
    let profile = profile.and_then(|p| execguard_policy::Profile::from_name(p.as_bytes()));
    if let Some(r) = execguard_policy::Reason::from_code(reason) {
        return r.way_forward(profile).to_string();
    }
    if tool == "network" && reason == crate::network::REFUSED {
        return crate::network::WAY_FORWARD.to_string();
    }
    if let Some(r) = execguard_wrappers::Reason::ALL
        .iter()
        .find(|r| r.as_str() == reason)
    {
        return format!("to proceed: {}", r.default_hint());
    }
    format!("see `execguard audit` and the {tool} reason codes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tool: &str, decision: &str, reason: &str, path: &str) -> String {
        format!(
            "{{\"time\":1.0,\"pid\":1,\"uid\":0,\"tool\":\"{tool}\",\"entry\":\"execve\",\"decision\":\"{decision}\",\"reason\":\"{reason}\",\"profile\":\"strict\",\"path\":\"{path}\",\"target\":\"x\"}}\n"
        )
    }

    #[test]
    fn refusals_are_counted_per_reason_with_the_first_path_and_the_way_forward() {
        let mut log = String::new();
        log += &record("guard", "deny", "mutable_native", "/w/target/debug/build/a");
        log += &record("guard", "allow", "allowed", "/usr/bin/cc");
        log += &record("guard", "deny", "mutable_native", "/w/target/debug/b");
        log += "{\"time\":1.0,\"pid\":1,\"tool\":\"gu"; // a fragment a crash left
        log += "\n";
        log += &record("git", "deny", "hook_bypass", "--no-verify");
        log += &record("run", "notice", "session_sealed", "strict");
        let s = Summary::of_records(log.as_bytes());
        assert_eq!(s.rows.len(), 2, "{s:?}");
        assert_eq!(
            (s.rows[0].reason.as_str(), s.rows[0].count),
            ("mutable_native", 2)
        );
        assert_eq!(s.rows[0].first_path, "/w/target/debug/build/a");
        assert!(s.rows[0].way_forward.contains("--profile development"));
        assert!(s.rows[1].way_forward.starts_with("to proceed: "));
        let lines = s.lines(Path::new("/log"));
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("3 refusals"), "{lines:?}");
        assert!(lines[1].contains("2 x mutable_native, first /w/target/debug/build/a -- native code written in this session"), "{lines:?}");
        assert!(
            lines[2].contains("1 x hook_bypass (git), first --no-verify"),
            "{lines:?}"
        );
        assert!(lines.iter().all(|l| !l.starts_with("execguard: denied")));
    }

    #[test]
    fn only_the_records_after_the_mark_count() {
        let dir = crate::test_dirs::tmp("summary-mark");
        let log = dir.join("audit.jsonl");
        std::fs::write(&log, record("guard", "deny", "mutable_native", "/before")).unwrap();
        let mark = Mark::now(&log);
        assert_eq!(Summary::since(&mark), Summary::default());
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(record("guard", "deny", "anonymous_native", "/memfd:x").as_bytes())
            .unwrap();
        let s = Summary::since(&mark);
        assert_eq!(s.rows.len(), 1, "{s:?}");
        assert_eq!(s.rows[0].reason, "anonymous_native");
        // A log no name reaches any more (the image's, unmounted) is read through the
        // descriptor the mark took.
        std::fs::remove_file(&log).unwrap();
        assert_eq!(Summary::since(&mark), s);
        // A log that never was says nothing (the refusals were said when they happened).
        let never = Mark::now(&dir.join("never.jsonl"));
        assert!(Summary::since(&never).lines(&log).is_empty());
    }

    #[test]
    fn a_path_cannot_forge_terminal_output() {
        let log = record("guard", "deny", "mutable_native", "/w/a\\u001b[2Jb");
        let s = Summary::of_records(log.as_bytes());
        let lines = s.lines(Path::new("/log"));
        assert!(lines[1].contains("/w/a\\x1b[2Jb"), "{lines:?}");
    }
}
