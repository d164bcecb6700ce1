//! Running one measured command: environment per variant, wall time, timeout.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a sample's value is: CPU time of the measured process tree, or wall time.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// User + system CPU time of the measured process tree: what the work
    /// costs, hardly touched by other jobs competing for the cores.
    Cpu,
    /// Wall-clock time: what a user waits, including time spent waiting for a
    /// core on a busy machine.
    Wall,
}

impl Metric {
    pub fn describe(self) -> &'static str {
        match self {
            Metric::Cpu => "CPU time (user + system) of the measured process tree",
            Metric::Wall => "wall-clock time",
        }
    }
}

/// One way of running every workload: with no preload, or with one library preloaded.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Short stable name: `plain`, `floor-c`, `floor-rust`, `guard`, `compare`, `compare2`...
    pub name: String,
    /// What it is, for the report.
    pub label: String,
    pub lib: Option<PathBuf>,
    /// `execguard run`'s real session (its policy, seal and wrappers): this CLI starts each
    /// measured program, with `lib` as its guard (`EXECGUARD_LIB`) instead of `LD_PRELOAD`.
    pub session: Option<PathBuf>,
}

/// The environment every variant shares, applied to all variants alike, so
/// that the only difference between variants is `LD_PRELOAD`.
///
/// Measured runs start from a clean environment (`base`: PATH and HOME by
/// default) rather than the harness's own. A preload may scan the environment
/// on every exec, and `cargo run` alone adds some forty variables, among them
/// LD_LIBRARY_PATH, which every loader then searches. A clean one keeps the
/// figures the same however the harness is started. `--inherit-env` passes
/// everything through instead (LD_PRELOAD excepted).
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub base: Vec<(String, String)>,
    /// `--env` and `--policy` pairs, set after `base`.
    pub pairs: Vec<(String, String)>,
}

impl Env {
    pub fn new(inherit: bool) -> Self {
        let base = if inherit {
            std::env::vars()
                .filter(|(k, _)| k != "LD_PRELOAD")
                .collect()
        } else {
            vec![
                (
                    "PATH".to_string(),
                    std::env::var("PATH").unwrap_or_else(|_| {
                        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()
                    }),
                ),
                (
                    "HOME".to_string(),
                    std::env::var("HOME").unwrap_or_else(|_| "/root".into()),
                ),
            ]
        };
        Env {
            base,
            pairs: vec![],
        }
    }

    /// Names of every variable a measured run gets (besides LD_PRELOAD).
    pub fn keys(&self) -> Vec<String> {
        self.base
            .iter()
            .chain(&self.pairs)
            .map(|(k, _)| k.clone())
            .collect()
    }

    pub fn apply(&self, cmd: &mut Command, variant: &Variant) {
        cmd.env_clear();
        for (k, v) in self.base.iter().chain(&self.pairs) {
            cmd.env(k, v);
        }
        match (&variant.lib, &variant.session) {
            // The session makes its own policy and preloads the guard itself.
            (Some(lib), Some(_)) => {
                cmd.env_remove("EXECGUARD_POLICY").env("EXECGUARD_LIB", lib);
            }
            (Some(lib), None) => {
                cmd.env("LD_PRELOAD", lib);
            }
            (None, _) => {}
        }
    }
}

#[derive(Debug)]
pub struct Outcome {
    pub wall: Duration,
    /// User + system CPU time of the whole process tree (every descendant
    /// that was reaped), from getrusage(RUSAGE_CHILDREN) before and after.
    pub cpu: Duration,
    pub stdout: String,
    pub stderr: String,
}

/// CPU time (user + system) of this process's reaped children so far.
/// The kernel derives it from the scheduler's precise runtime, so it is exact
/// to the microsecond, unlike tick-sampled figures.
pub fn children_cpu() -> Duration {
    // SAFETY: all-zero bytes are a valid `rusage` (plain integers and timevals).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_CHILDREN is a valid `who`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs `cmd` to completion with stdout/stderr captured in files (no pipe readers,
/// so the timing covers spawn + the process's life + wait and nothing else).
/// Fails when the command exits non-zero or is killed after `timeout`.
/// The harness reaps one measured child at a time, so the RUSAGE_CHILDREN
/// delta around it is that child's tree alone.
pub fn run(mut cmd: Command, scratch: &Path, timeout: Duration) -> Result<Outcome, String> {
    let out_path = scratch.join("sample.stdout");
    let err_path = scratch.join("sample.stderr");
    let out = File::create(&out_path).map_err(|e| format!("create {}: {e}", out_path.display()))?;
    let err = File::create(&err_path).map_err(|e| format!("create {}: {e}", err_path.display()))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let (tx, rx) = mpsc::channel::<()>();
    let cpu0 = children_cpu();
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("spawn {:?}: {e}", cmd.get_program()))?;
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(timeout).is_err() {
            // Timed out (or the sender vanished): kill the stuck child. Only
            // this child, by its own pid.
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            true
        } else {
            false
        }
    });
    let status = child.wait();
    let wall = start.elapsed();
    let cpu = children_cpu().saturating_sub(cpu0);
    let _ = tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let status = status.map_err(|e| format!("wait: {e}"))?;
    if timed_out {
        return Err(format!(
            "timed out after {:.0} s and was killed; stderr: {}",
            timeout.as_secs_f64(),
            first_line(&stderr)
        ));
    }
    if !status.success() {
        return Err(format!("{status}; stderr: {}", first_line(&stderr)));
    }
    Ok(Outcome {
        wall,
        cpu,
        stdout,
        stderr,
    })
}

pub fn first_line(s: &str) -> String {
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut line = line.trim().to_string();
    if line.len() > 200 {
        let mut cut = 200;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    if line.is_empty() {
        "(empty)".to_string()
    } else {
        line
    }
}

/// Runs a setup command (not measured); returns stdout or an error with stderr.
pub fn setup(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("spawn {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{:?} {:?}: {}; stderr: {}",
            cmd.get_program(),
            cmd.get_args().collect::<Vec<_>>(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
