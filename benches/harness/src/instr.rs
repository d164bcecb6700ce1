//! Instruction counts: stable where wall time is not. callgrind (valgrind)
//! counts user-space instructions of every process in the tree; `perf stat`
//! is used instead when asked for and the CPU exposes the counter.

use crate::run::{first_line, Env, Variant};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstrRow {
    pub id: String,
    pub title: String,
    /// Per variant (same order as the report's variants): instructions, or None on failure.
    pub counts: Vec<Option<f64>>,
    pub errors: Vec<Option<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstrReport {
    /// `callgrind (valgrind-3.19.0)` or `perf stat -e instructions:u`.
    pub tool: String,
    /// `process_start`: /bin/true, a whole process; `first_call`: the first
    /// `execve` in a process (lazy set-up included); `warm_call`: each further one.
    pub rows: Vec<InstrRow>,
    pub warm_call_ops: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Callgrind,
    Perf,
}

fn tool_version(cmd: &str, arg: &str) -> Option<String> {
    let out = Command::new(cmd)
        .arg(arg)
        .env_remove("LD_PRELOAD")
        .output()
        .ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    })
}

/// Picks the tool: `auto` prefers callgrind (exact and repeatable), then perf.
pub fn pick(choice: &str) -> Result<(Tool, String), String> {
    let callgrind = || {
        tool_version("valgrind", "--version").map(|v| (Tool::Callgrind, format!("callgrind ({v})")))
    };
    let perf = || {
        let out = Command::new("perf")
            .args(["stat", "-x", ",", "-e", "instructions:u", "/bin/true"])
            .env_remove("LD_PRELOAD")
            .output()
            .ok()?;
        let err = String::from_utf8_lossy(&out.stderr);
        (out.status.success() && !err.contains("not supported") && !err.contains("not counted"))
            .then(|| (Tool::Perf, "perf stat -e instructions:u".to_string()))
    };
    match choice {
        "none" => Err("instruction counts not requested (--instr none)".into()),
        "callgrind" => callgrind().ok_or_else(|| "valgrind not found".into()),
        "perf" => perf().ok_or_else(|| "perf stat -e instructions:u not supported here".into()),
        _ => callgrind()
            .or_else(perf)
            .ok_or_else(|| "neither valgrind nor a working perf instructions counter found".into()),
    }
}

fn count(
    tool: Tool,
    argv: &[String],
    env: &Env,
    variant: &Variant,
    dir: &Path,
) -> Result<(u64, usize), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let mut cmd = match tool {
        Tool::Callgrind => {
            let mut c = Command::new("valgrind");
            c.args(["--tool=callgrind", "--trace-children=yes", "-q"])
                .arg(format!("--callgrind-out-file={}/cg.%p", dir.display()));
            c
        }
        Tool::Perf => {
            let mut c = Command::new("perf");
            c.args(["stat", "-x", ",", "-e", "instructions:u", "-o"])
                .arg(dir.join("perf.csv"))
                .arg("--");
            c
        }
    };
    cmd.args(argv);
    env.apply(&mut cmd, variant);
    let out = cmd
        .output()
        .map_err(|e| format!("spawn {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{}; stderr: {}",
            out.status,
            first_line(&String::from_utf8_lossy(&out.stderr))
        ));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("denied") {
        return Err(format!(
            "the preload refused a call: {}",
            first_line(&stderr)
        ));
    }
    match tool {
        Tool::Callgrind => {
            let mut total = 0u64;
            let mut files = 0;
            for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
                let path = entry.map_err(|e| e.to_string())?.path();
                let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
                let n = text
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("summary:")
                            .or_else(|| l.strip_prefix("totals:"))
                    })
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| format!("no summary in {}", path.display()))?;
                total += n;
                files += 1;
            }
            Ok((total, files))
        }
        Tool::Perf => {
            let text = std::fs::read_to_string(dir.join("perf.csv")).map_err(|e| e.to_string())?;
            let n = text
                .lines()
                .filter(|l| l.contains("instructions"))
                .find_map(|l| l.split(',').next()?.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    format!("no instruction count in perf output: {}", first_line(&text))
                })?;
            Ok((n, 0))
        }
    }
}

pub struct Programs<'a> {
    pub driver: &'a Path,
    pub eacces_target: Option<&'a Path>,
    pub warm_ops: usize,
}

/// Counts whole single-image processes only. callgrind writes a process's
/// counts when it exits, so an image that calls execve is never written out:
/// chains and fork+exec children cannot be counted whole. The exec path is
/// instead counted in a process whose `execve` the kernel refuses (EACCES on
/// a non-executable ELF): the driver with 0, 1 and 1+W calls gives the first
/// (cold) call and the warm calls exactly; /bin/true gives the load cost that
/// every new process image pays.
pub fn measure(
    tool: Tool,
    label: String,
    progs: &Programs<'_>,
    env: &Env,
    variants: &[Variant],
    scratch: &Path,
) -> InstrReport {
    let s = |p: &Path| p.display().to_string();
    let run_all = |id: &str, argv: Vec<String>| -> Vec<Result<u64, String>> {
        variants
            .iter()
            .map(|v| {
                count(
                    tool,
                    &argv,
                    env,
                    v,
                    &scratch.join(format!("instr-{id}-{}", v.name)),
                )
                .map(|(n, _)| n)
            })
            .collect()
    };
    let row = |id: &str, title: String, vals: Vec<Result<f64, String>>| InstrRow {
        id: id.to_string(),
        title,
        counts: vals.iter().map(|r| r.as_ref().ok().copied()).collect(),
        errors: vals.iter().map(|r| r.as_ref().err().cloned()).collect(),
    };
    let start = run_all("true", vec!["/bin/true".into()]);
    let mut rows = vec![row(
        "process_start",
        "process start and exit: /bin/true".into(),
        start.into_iter().map(|r| r.map(|n| n as f64)).collect(),
    )];
    if let Some(t) = progs.eacces_target {
        let driver = |k: usize| vec![s(progs.driver), "warm_eacces".into(), k.to_string(), s(t)];
        let k0 = run_all("k0", driver(0));
        let k1 = run_all("k1", driver(1));
        let kw = run_all("kw", driver(progs.warm_ops + 1));
        let diff = |a: &Result<u64, String>, b: &Result<u64, String>, per: f64| match (a, b) {
            (Ok(a), Ok(b)) => Ok((*a as f64 - *b as f64) / per),
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        };
        rows.push(row(
            "first_call",
            "first `execve` call in a process (cold: lazy set-up included), refused by the kernel"
                .into(),
            k1.iter().zip(&k0).map(|(a, b)| diff(a, b, 1.0)).collect(),
        ));
        rows.push(row(
            "warm_call",
            format!(
                "each further `execve` call (warm), refused by the kernel; mean of {}",
                progs.warm_ops
            ),
            kw.iter()
                .zip(&k1)
                .map(|(a, b)| diff(a, b, progs.warm_ops as f64))
                .collect(),
        ));
    }
    InstrReport {
        tool: label,
        rows,
        warm_call_ops: progs.warm_ops,
    }
}
