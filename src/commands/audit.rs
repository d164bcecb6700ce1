//! `execguard audit`: summarise an audit log (one JSON object per line).

use crate::session;
use anyhow::{bail, Context as _, Result};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The audit log; default: the one named by the policy in force
    file: Option<PathBuf>,
    /// How many denied paths to list
    #[arg(long, default_value_t = 10)]
    top: usize,
}

/// Exit status: 0 when every line parsed, 1 when some did not, 2 when the log cannot be read.
pub fn run(args: Args) -> Result<ExitCode> {
    let file = match args.file {
        Some(f) => f,
        None => {
            let loaded =
                session::policy_in_force()?.context("no policy in force: name the audit log")?;
            let policy = loaded.policy();
            match policy.audit_log() {
                Some(p) => PathBuf::from(String::from_utf8_lossy(p).into_owned()),
                None => bail!("the policy in force names no audit_log"),
            }
        }
    };
    let reader = std::io::BufReader::new(
        std::fs::File::open(&file).with_context(|| format!("cannot open {}", file.display()))?,
    );
    let mut decisions: BTreeMap<String, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut denied_paths: BTreeMap<String, usize> = BTreeMap::new();
    let (mut total, mut bad) = (0usize, 0usize);
    for line in reader.split(b'\n') {
        let line = line?;
        if line.is_empty() {
            continue;
        }
        total += 1;
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
            bad += 1;
            continue;
        };
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("?").to_string();
        let decision = field("decision");
        *decisions.entry(decision.clone()).or_default() += 1;
        *reasons.entry((field("tool"), field("reason"))).or_default() += 1;
        if decision == "deny" {
            *denied_paths.entry(field("path")).or_default() += 1;
        }
    }
    println!("{}: {total} records", file.display());
    for (d, n) in &decisions {
        println!("  {d:<6} {n}");
    }
    println!("by tool and reason:");
    for ((tool, reason), n) in &reasons {
        println!("  {tool:<8} {reason:<28} {n}");
    }
    let mut top: Vec<_> = denied_paths.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if !top.is_empty() {
        println!("most denied:");
        for (p, n) in top.into_iter().take(args.top) {
            println!("  {n:>6}  {p}");
        }
    }
    if bad > 0 {
        eprintln!("execguard: {bad} of {total} lines are not audit records");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
