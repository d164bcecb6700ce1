//! The machine a run happened on, for the report's header.

use serde::{Deserialize, Serialize};
use std::process::Command;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub nproc: usize,
    pub kernel: String,
    pub glibc: String,
    pub cpu: String,
    pub cc: String,
    pub rustc: String,
    /// /etc/ld.so.preload exists: then "plain" also has a preload.
    pub ld_so_preload: bool,
}

fn cmd_line(prog: &str, args: &[&str]) -> String {
    Command::new(prog)
        .args(args)
        .env_remove("LD_PRELOAD")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

pub fn machine() -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|r| r.trim_start_matches([' ', '\t', ':']).trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    Machine {
        nproc: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into()),
        glibc: cmd_line("getconf", &["GNU_LIBC_VERSION"]),
        cpu,
        cc: cmd_line("cc", &["--version"]),
        rustc: cmd_line(
            &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()),
            &["--version"],
        ),
        ld_so_preload: std::path::Path::new("/etc/ld.so.preload").exists(),
    }
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// UTC date and time of `t`, as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(t: std::time::SystemTime) -> String {
    // humantime's Display panics before the epoch and past 9999: clamp to what it writes.
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.min(253_402_300_799));
    // RFC 3339 (`2026-12-03T13:22:44Z`), spelled as the reports have always spelled it.
    let rfc = humantime::format_rfc3339_seconds(t).to_string();
    format!("{} UTC", rfc.trim_end_matches('Z').replacen('T', " ", 1))
}

pub fn now_utc() -> String {
    utc(std::time::SystemTime::now())
}

fn git(dir: &std::path::Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("LD_PRELOAD")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit the tree at `dir` is on (`git rev-parse HEAD`).
pub fn git_commit(dir: &std::path::Path) -> Option<String> {
    git(dir, &["rev-parse", "HEAD"])
}

/// Whether the tree at `dir` has changes not committed, untracked files included.
pub fn git_dirty(dir: &std::path::Path) -> Option<bool> {
    git(dir, &["status", "--porcelain"]).map(|s| !s.is_empty())
}
#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        let at = |secs| super::utc(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(at(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(at(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}
