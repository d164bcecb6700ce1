//! Per-process memory a preload adds: a sleeping child, read through /proc.

use crate::run::{Env, Variant};
use crate::stats::median;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemResult {
    pub variant: String,
    /// `start`: right after start-up; `after_exec_call`: after one execve
    /// call that the kernel refused (a lazily initialised preload is set up).
    pub phase: String,
    /// Medians over the runs, in kB.
    pub vm_rss_kb: f64,
    pub pss_kb: f64,
    pub private_kb: f64,
    pub runs: usize,
    pub error: Option<String>,
}

fn field_kb(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

fn one(
    sleeper: &Path,
    target: Option<&Path>,
    env: &Env,
    variant: &Variant,
) -> Result<(f64, f64, f64), String> {
    let mut cmd = Command::new(sleeper);
    if let Some(t) = target {
        cmd.arg(t);
    }
    env.apply(&mut cmd, variant);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(|e| format!("spawn sleeper: {e}"))?;
    let pid = child.id();
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|o| BufReader::new(o).read_line(&mut line));
    let result = if line.trim() == "ready" {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let rollup =
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
        match (
            field_kb(&status, "VmRSS:"),
            field_kb(&rollup, "Pss:"),
            field_kb(&rollup, "Private_Clean:"),
            field_kb(&rollup, "Private_Dirty:"),
        ) {
            (Some(rss), Some(pss), Some(pc), Some(pd)) => Ok((rss, pss, pc + pd)),
            (Some(rss), _, _, _) => Ok((rss, f64::NAN, f64::NAN)),
            _ => Err("could not read /proc/PID/status".to_string()),
        }
    } else {
        Err(format!("sleeper did not start ({read:?})"))
    };
    drop(child.stdin.take()); // EOF: the sleeper exits.
    let _ = child.wait();
    result
}

/// VmRSS, Pss and Private samples, and the last error, for one variant.
type Acc = (Vec<f64>, Vec<f64>, Vec<f64>, Option<String>);

/// Memory of the sleeper under each variant, right after start-up and, when
/// `target` is given, after one refused execve call.
pub fn measure(
    sleeper: &Path,
    target: Option<&Path>,
    env: &Env,
    variants: &[Variant],
    runs: usize,
) -> Vec<MemResult> {
    let mut out = phase(sleeper, None, env, variants, runs);
    if target.is_some() {
        out.extend(phase(sleeper, target, env, variants, runs));
    }
    out
}

fn phase(
    sleeper: &Path,
    target: Option<&Path>,
    env: &Env,
    variants: &[Variant],
    runs: usize,
) -> Vec<MemResult> {
    let mut acc: Vec<Acc> = vec![Default::default(); variants.len()];
    // Interleaved like the timings, although memory is not noisy.
    for _ in 0..runs {
        for (i, v) in variants.iter().enumerate() {
            match one(sleeper, target, env, v) {
                Ok((r, p, pr)) => {
                    acc[i].0.push(r);
                    acc[i].1.push(p);
                    acc[i].2.push(pr);
                }
                Err(e) => acc[i].3 = Some(e),
            }
        }
    }
    variants
        .iter()
        .zip(acc)
        .map(|(v, (r, p, pr, err))| MemResult {
            variant: v.name.clone(),
            phase: if target.is_some() {
                "after_exec_call".into()
            } else {
                "start".into()
            },
            vm_rss_kb: median(&r),
            pss_kb: median(&p),
            private_kb: median(&pr),
            runs: r.len(),
            error: err,
        })
        .collect()
}
