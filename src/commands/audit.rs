//! `execguard audit`: summarise an audit log (one record per line, the schema of
//! `execguard_policy::audit`), surviving what a crash or a full disk leaves behind;
//! `execguard audit verify` checks a kept log's chain and signatures (`execguard_audit`),
//! `execguard audit export` hands it on as JSON lines or OCSF with its chain.

use anyhow::{bail, Context as _, Result};
use execguard_policy::audit::RECORD_MAX;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// The audit log; default: the one named by the policy in force, else the one
    /// `execguard run` keeps by default
    file: Option<PathBuf>,
    /// How many denied paths to list
    #[arg(long, default_value_t = 10)]
    top: usize,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Check a kept log's chain and signatures; report the first gap or edit with its line
    /// (exit 0: whole; 1: broken; 2: unreadable)
    Verify(Kept),
    /// Write a kept log's records to stdout, chain included (exit 1 if it does not verify)
    Export {
        #[command(flatten)]
        kept: Kept,
        /// jsonl (the lines as kept) or ocsf (OCSF Process Activity events)
        #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "ocsf"])]
        format: String,
    },
}

#[derive(clap::Args)]
struct Kept {
    /// The kept log; default: the one named by the policy in force, else the user's
    /// ($XDG_STATE_HOME/execguard/audit.jsonl, else ~/.local/state/execguard/audit.jsonl)
    file: Option<PathBuf>,
    /// The writer's public key (hex); default: audit.pub beside the log, else the user's
    #[arg(long)]
    key: Option<PathBuf>,
}

/// The largest kept log verify or export reads (1 GiB).
const KEPT_MAX: usize = 1 << 30;

/// The kept log to read: `file`, the policy's, or the user's.
fn kept_log(file: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(f) = file {
        return Ok(f);
    }
    if let Some(loaded) = execguard_session::policy_text::policy_in_force()? {
        if let Some(p) = loaded.policy().audit_log() {
            return Ok(PathBuf::from(std::ffi::OsStr::from_bytes(p)));
        }
    }
    Ok(execguard_audit::key::default_state_dir()?.join("audit.jsonl"))
}

/// The key to check signatures with: `--key`, `audit.pub` beside the log, the user's.
fn trusted_key(
    key: Option<PathBuf>,
    log: &std::path::Path,
) -> Result<Option<(PathBuf, ed25519_dalek::VerifyingKey)>> {
    let candidates: Vec<PathBuf> = match key {
        Some(k) => vec![k],
        None => [
            log.parent().map(|d| d.join("audit.pub")),
            execguard_audit::key::default_state_dir()
                .ok()
                .map(|d| d.join("audit.pub")),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let given = candidates.len() == 1;
    for c in candidates {
        match execguard_audit::key::read_public(&c) {
            Ok(Some(k)) => return Ok(Some((c, k))),
            Ok(None) if given => bail!("audit_unreadable: {}: no such key", c.display()),
            Ok(None) => {}
            Err(e) => bail!("audit_unreadable: {e}"),
        }
    }
    Ok(None)
}

/// Verifies the kept log; prints the verdict (stdout when whole, stderr when broken).
fn verify_kept(kept: Kept, quiet_ok: bool) -> Result<(Vec<u8>, bool)> {
    let file = kept_log(kept.file)?;
    let text = execguard_session::input::read_capped(&file, KEPT_MAX)
        .map_err(|e| anyhow::anyhow!("audit_unreadable: {e}"))?;
    let key = trusted_key(kept.key, &file)?;
    match execguard_audit::verify::verify(&text, key.as_ref().map(|(_, k)| k)) {
        Ok(v) => {
            let by = match &key {
                Some((p, _)) => format!("checked against {}", p.display()),
                None => "checked against the key each session names (no audit.pub found: pass --key to check the writer too)".into(),
            };
            let line = format!(
                "{}: verified: {} lines, {} sessions, every chain whole, signatures {by}",
                file.display(),
                v.lines,
                v.sessions
            );
            if quiet_ok {
                eprintln!("execguard: {line}");
            } else {
                println!("{line}");
            }
            Ok((text, true))
        }
        Err(b) => {
            eprintln!(
                "execguard: audit_broken: {} line {}: {}",
                file.display(),
                b.line,
                b.what
            );
            Ok((text, false))
        }
    }
}

fn run_action(action: Action) -> Result<ExitCode> {
    match action {
        Action::Verify(kept) => {
            let (_, whole) = verify_kept(kept, false)?;
            Ok(ExitCode::from(if whole { 0 } else { 1 }))
        }
        Action::Export { kept, format } => {
            let (text, whole) = verify_kept(kept, true)?;
            let format = execguard_audit::export::Format::from_name(&format)
                .context("format: jsonl or ocsf")?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            execguard_audit::export::export(&text, format, &mut out)?;
            std::io::Write::flush(&mut out)?;
            Ok(ExitCode::from(if whole { 0 } else { 1 }))
        }
    }
}

/// How every record begins ([`execguard_policy::audit::format_record`]).
const RECORD_START: &[u8] = b"{\"time\":";

/// What the lines of a log were.
#[derive(Default, Debug, PartialEq, Eq)]
struct Tally {
    records: Vec<Summary>,
    /// Pieces of records cut short (a crash, a full disk before writes were whole-or-nothing),
    /// alone or glued to the record after them.
    fragments: usize,
    /// Lines that are not records at all (another file, a foreign format).
    foreign: usize,
}

#[derive(Debug, PartialEq, Eq)]
struct Summary {
    decision: String,
    tool: String,
    reason: String,
    path: String,
    target: String,
}

fn parse_record(bytes: &[u8]) -> Option<Summary> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    v.get("time")?.as_f64()?;
    let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    Some(Summary {
        decision: field("decision")?,
        tool: field("tool")?,
        reason: field("reason")?,
        path: field("path").unwrap_or_default(),
        target: field("target").unwrap_or_default(),
    })
}

impl Tally {
    /// One line (without its newline; `None` when it was longer than any record).
    fn line(&mut self, line: Option<&[u8]>) {
        let Some(line) = line else {
            self.foreign += 1;
            return;
        };
        if line.is_empty() {
            return;
        }
        if let Some(r) = parse_record(line) {
            self.records.push(r);
            return;
        }
        if !line.starts_with(RECORD_START) {
            self.foreign += 1;
            return;
        }
        // A fragment, perhaps with whole records glued after it: each piece starts where a
        // record starts.
        let starts: Vec<usize> = (0..line.len())
            .filter(|&i| line[i..].starts_with(RECORD_START))
            .chain(std::iter::once(line.len()))
            .collect();
        for w in starts.windows(2) {
            match parse_record(&line[w[0]..w[1]]) {
                Some(r) => self.records.push(r),
                None => self.fragments += 1,
            }
        }
    }
}

/// Reads `reader` line by line, never holding more than one record's worth of a line.
fn tally(mut reader: impl BufRead) -> std::io::Result<Tally> {
    let mut t = Tally::default();
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (chunk, end) = match buf.iter().position(|&c| c == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !overlong {
            if line.len() + chunk.len() > RECORD_MAX {
                overlong = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = end.unwrap_or(buf.len());
        reader.consume(used);
        if end.is_some() {
            t.line((!overlong).then_some(&line[..]));
            line.clear();
            overlong = false;
        }
    }
    if overlong || !line.is_empty() {
        // The last line has no newline: a record whose write was cut short (a fragment, as
        // `line` decides), or a foreign tail.
        t.line((!overlong).then_some(&line[..]));
    }
    Ok(t)
}

/// Exit status: 0 when every line is a record or a fragment a crash or full disk left (those
/// are counted and said on stderr); 1 when some lines are not records at all; 2 when the log
/// cannot be read (not a regular file, missing).
pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(action) = args.action {
        return run_action(action);
    }
    let file = match args.file {
        Some(f) => f,
        None => match execguard_session::policy_text::policy_in_force()? {
            Some(loaded) => match loaded.policy().audit_log() {
                Some(p) => PathBuf::from(std::ffi::OsStr::from_bytes(p)),
                None => bail!("the policy in force names no audit_log: name the audit log"),
            },
            // Outside a session: the kept log `execguard run` keeps by default, else the
            // runtime directory's log, which sessions wrote themselves before it.
            None => match execguard_audit::key::default_state_dir()
                .map(|d| d.join("audit.jsonl"))
                .ok()
                .filter(|l| l.exists())
            {
                Some(kept) => kept,
                None => execguard_session::preflight::default_audit_log()?,
            },
        },
    };
    let reader = std::io::BufReader::new(
        execguard_session::input::open_regular(&file)
            .map_err(|e| anyhow::anyhow!("audit_unreadable: {e}"))?,
    );
    let t = tally(reader).with_context(|| format!("audit_unreadable: {}", file.display()))?;
    let mut decisions: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut denied_paths: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &t.records {
        *decisions.entry(&r.decision).or_default() += 1;
        *reasons.entry((&r.tool, &r.reason)).or_default() += 1;
        if r.decision == "deny" {
            *denied_paths.entry(&r.path).or_default() += 1;
        }
    }
    println!("{}: {} records", file.display(), t.records.len());
    for (d, n) in &decisions {
        println!("  {d:<6} {n}");
    }
    println!("by tool and reason:");
    for ((tool, reason), n) in &reasons {
        println!("  {tool:<10} {reason:<28} {n}");
    }
    let mut top: Vec<_> = denied_paths.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    if !top.is_empty() {
        println!("most denied:");
        for (p, n) in top.into_iter().take(args.top) {
            println!("  {n:>6}  {p}");
        }
    }
    // Each file the hand-back quarantined (docs/handback.md), where it went; each native
    // file the end of a session made not to run outside.
    for (reason, heading) in [
        ("repository_quarantine", "quarantined by the hand-back:"),
        (
            "native_left",
            "native files made not to run outside a session:",
        ),
    ] {
        let mut listed = t.records.iter().filter(|r| r.reason == reason).peekable();
        if listed.peek().is_some() {
            println!("{heading}");
        }
        for r in listed {
            if r.target == r.path || r.target.is_empty() {
                println!("  {}", r.path);
            } else {
                println!("  {} -> {}", r.path, r.target);
            }
        }
    }
    if t.fragments > 0 {
        eprintln!(
            "execguard: audit_fragment: {} records were cut short (a crash or a full disk) and are not counted; the others are",
            t.fragments
        );
    }
    if t.foreign > 0 {
        eprintln!(
            "execguard: audit_foreign: {} lines are not audit records: is {} an audit log?",
            t.foreign,
            file.display()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: &str = "{\"time\":1.5,\"pid\":1,\"uid\":0,\"tool\":\"guard\",\"entry\":\"execve\",\"decision\":\"deny\",\"reason\":\"mutable_native\",\"path\":\"/w/a\",\"target\":\"a\"}";

    fn counts(text: &str) -> (usize, usize, usize) {
        let t = tally(text.as_bytes()).unwrap();
        (t.records.len(), t.fragments, t.foreign)
    }

    #[test]
    fn fragments_are_counted_and_the_records_around_them_kept() {
        let frag = &R[..40];
        let long = format!("{{\"x\":\"{}\"}}", "a".repeat(5000));
        let cases: Vec<(String, (usize, usize, usize))> = vec![
            (format!("{R}\n{R}\n"), (2, 0, 0)),
            (format!("{R}\n\n{R}\n"), (2, 0, 0)),
            // A torn tail (a crash mid-write).
            (format!("{R}\n{frag}"), (1, 1, 0)),
            // A fragment the next record was glued to (a full disk, then space again).
            (format!("{R}\n{frag}{R}\n{R}\n"), (3, 1, 0)),
            (format!("{frag}{frag}{R}\n"), (1, 2, 0)),
            // A record whose newline was lost still parses.
            (R.to_string(), (1, 0, 0)),
            (format!("{R}\nnot json\n{{\"a\":1}}\n"), (1, 0, 2)),
            (format!("{long}\n{R}\n"), (1, 0, 1)),
            (format!("{R}\n{long}"), (1, 0, 1)),
            ("\0\0\0\0".to_string(), (0, 0, 1)),
        ];
        for (text, want) in cases {
            assert_eq!(counts(&text), want, "{text:.200}");
        }
    }

    #[test]
    fn wrapper_and_entrypoint_records_count_under_their_tool() {
        let git = R.replace("\"tool\":\"guard\"", "\"tool\":\"git\"");
        let t = tally(format!("{git}\n").as_bytes()).unwrap();
        assert_eq!(t.records[0].tool, "git");
    }
}
