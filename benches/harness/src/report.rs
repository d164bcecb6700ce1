//! Results (what results.json holds) and the Markdown report.

use crate::elfinfo::LibInfo;
use crate::instr::InstrReport;
use crate::mem::MemResult;
pub use crate::run::Metric;
use crate::stats::{paired_ratio, Summary};
use crate::sysinfo::Machine;
use crate::workloads::Unit;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// The metric of `samples`, the ratios, the summary table, the chart and the budget.
    pub metric: Metric,
    pub command: String,
    pub date_utc: String,
    pub duration_s: f64,
    pub quick: bool,
    pub machine: Machine,
    pub loadavg_start: String,
    pub loadavg_end: String,
    /// `git rev-parse HEAD` of the tree the harness was built from.
    pub git_commit: Option<String>,
    /// Whether that tree had changes not committed (`git status --porcelain`) when it ran.
    #[serde(default)]
    pub git_dirty: Option<bool>,
    /// Names of the variables every measured run gets (values are not recorded).
    pub env_keys: Vec<String>,
    /// `--inherit-env`: the harness's whole environment was passed through.
    pub inherit_env: bool,
    /// LD_PRELOAD the harness itself was started with (removed for every run).
    pub inherited_ld_preload: Option<String>,
    pub bin_dir: String,
    /// `--note`: free text from whoever ran it.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantInfo {
    pub name: String,
    pub label: String,
    pub lib: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantResult {
    pub variant: String,
    /// Samples of the primary metric (`meta.metric`); both metrics follow.
    pub samples: Vec<f64>,
    pub samples_wall: Vec<f64>,
    pub samples_cpu: Vec<f64>,
    /// Driver workloads: the first call in each fresh process, µs.
    pub first_call: Vec<f64>,
    /// The session variant: `execguard run --workspace W -- /bin/true`, run with every sample
    /// (which is measured less it), ms.
    #[serde(default)]
    pub session_start_wall: Vec<f64>,
    #[serde(default)]
    pub session_start_cpu: Vec<f64>,
    pub summary: Option<Summary>,
    pub failed: Option<String>,
    pub notes: Vec<String>,
    /// median(variant) / median(plain).
    pub ratio_plain: Option<f64>,
    /// median, p10, p90 of the per-iteration ratios variant[i] / plain[i].
    pub ratio_plain_paired: Option<(f64, f64, f64)>,
    pub ratio_floor_c: Option<f64>,
    pub ratio_floor_rust: Option<f64>,
    /// median(variant) - median(plain), in the workload's unit.
    pub delta_plain: Option<f64>,
    /// The same delta per exec in the workload, µs (where the workload has a known exec count).
    pub delta_per_exec_us: Option<f64>,
    pub median_wall: Option<f64>,
    pub median_cpu: Option<f64>,
    pub ratio_plain_wall: Option<f64>,
    pub ratio_plain_cpu: Option<f64>,
}

impl VariantResult {
    pub fn new(variant: &str) -> Self {
        VariantResult {
            variant: variant.to_string(),
            samples: vec![],
            samples_wall: vec![],
            samples_cpu: vec![],
            first_call: vec![],
            session_start_wall: vec![],
            session_start_cpu: vec![],
            summary: None,
            failed: None,
            notes: vec![],
            ratio_plain: None,
            ratio_plain_paired: None,
            ratio_floor_c: None,
            ratio_floor_rust: None,
            delta_plain: None,
            delta_per_exec_us: None,
            median_wall: None,
            median_cpu: None,
            ratio_plain_wall: None,
            ratio_plain_cpu: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadResult {
    pub id: String,
    /// The metric of `samples` and the ratios for this workload.
    pub metric: Metric,
    pub title: String,
    pub unit: Unit,
    pub description: String,
    pub samples_planned: usize,
    pub skipped: Option<String>,
    pub results: Vec<VariantResult>,
}

/// The guard issue's budget for the process workloads (docs: issue 11): the guard's ratio to
/// plain, each also at most [`FLOOR_BUDGET`] times the empty floor's.
pub const PROCESS_BUDGETS: &[(&str, f64, &str)] = &[
    ("exec_chain", 1.08, "exec chain"),
    ("shell_loop", 1.05, "shell loop of /bin/true"),
];
pub const FLOOR_BUDGET: f64 = 1.04;
/// Issue 31: the same workloads in `execguard run`'s real session (variant `session`), at most
/// this times the empty floor's ratio.
pub const SESSION_FLOOR_BUDGET: f64 = 1.05;
/// A warm allow decision, guard minus plain.
pub const WARM_ALLOW_BUDGET_US: f64 = 5.0;

pub fn budget_of(id: &str) -> Option<f64> {
    PROCESS_BUDGETS
        .iter()
        .find(|(w, _, _)| *w == id)
        .map(|&(_, limit, _)| limit)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BudgetCheck {
    pub check: String,
    pub limit: String,
    pub measured: Option<String>,
    pub met: Option<bool>,
    /// The limit lies inside the paired p10–p90 range: this run cannot tell.
    #[serde(default)]
    pub borderline: bool,
    pub note: String,
}

impl BudgetCheck {
    pub fn status(&self) -> &'static str {
        match (self.met, self.borderline) {
            (Some(true), false) => "met",
            (Some(true), true) => "met (borderline)",
            (Some(false), false) => "NOT met",
            (Some(false), true) => "NOT met (borderline)",
            (None, _) => "n/a",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub meta: Meta,
    pub variants: Vec<VariantInfo>,
    pub libraries: Vec<LibInfo>,
    pub library_errors: Vec<String>,
    pub workloads: Vec<WorkloadResult>,
    pub memory: Vec<MemResult>,
    pub instructions: Option<InstrReport>,
    pub instructions_unavailable: Option<String>,
    pub budget: Vec<BudgetCheck>,
}

/// Fills ratios and deltas once every variant of a workload has its samples.
pub fn derive(w: &mut WorkloadResult, execs_per_sample: Option<f64>) {
    let find = |name: &str, rs: &[VariantResult]| {
        rs.iter()
            .find(|r| r.variant == name && r.failed.is_none())
            .and_then(|r| r.summary.clone().map(|s| (s, r.samples.clone())))
    };
    let plain = find("plain", &w.results);
    let floor_c = find("floor-c", &w.results);
    let floor_rust = find("floor-rust", &w.results);
    let unit_to_us = match w.unit {
        Unit::MicrosPerOp => 1.0,
        Unit::MillisPerRun => 1e3,
    };
    let med = |v: &[f64]| Some(crate::stats::median(v)).filter(|m| m.is_finite());
    let plain_wall_cpu = w
        .results
        .iter()
        .find(|r| r.variant == "plain" && r.failed.is_none())
        .map(|r| (med(&r.samples_wall), med(&r.samples_cpu)));
    for r in &mut w.results {
        if r.failed.is_none() {
            r.median_wall = med(&r.samples_wall);
            r.median_cpu = med(&r.samples_cpu);
            if let Some((pw, pc)) = plain_wall_cpu {
                // No ratio over a zero median (timer granularity): JSON has no infinity, so a
                // --render of results.json must see the same None.
                let over = |a: Option<f64>, b: Option<f64>| {
                    a.zip(b).map(|(a, b)| a / b).filter(|r| r.is_finite())
                };
                r.ratio_plain_wall = over(r.median_wall, pw);
                r.ratio_plain_cpu = over(r.median_cpu, pc);
            }
        }
        let Some(s) = r.summary.clone().filter(|_| r.failed.is_none()) else {
            continue;
        };
        if let Some((p, ps)) = &plain {
            r.ratio_plain = Some(s.median / p.median).filter(|x| x.is_finite());
            r.delta_plain = Some(s.median - p.median);
            r.delta_per_exec_us = execs_per_sample.map(|n| (s.median - p.median) * unit_to_us / n);
            if r.samples.len() == ps.len() {
                r.ratio_plain_paired = paired_ratio(&r.samples, ps);
            }
        }
        let finite = |x: f64| Some(x).filter(|x| x.is_finite());
        r.ratio_floor_c = floor_c
            .as_ref()
            .and_then(|(f, _)| finite(s.median / f.median));
        r.ratio_floor_rust = floor_rust
            .as_ref()
            .and_then(|(f, _)| finite(s.median / f.median));
    }
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn ratio(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}x")).unwrap_or_else(|| "–".into())
}

fn signed(v: Option<f64>) -> String {
    v.map(|x| format!("{}{}", if x >= 0.0 { "+" } else { "" }, num(x)))
        .unwrap_or_else(|| "–".into())
}

fn cell(w: &WorkloadResult, variant: &str) -> String {
    if let Some(s) = &w.skipped {
        return format!("skipped: {s}");
    }
    match w.results.iter().find(|r| r.variant == variant) {
        None => "–".into(),
        Some(r) if r.failed.is_some() => "FAILED".into(),
        Some(r) if variant == "plain" => r
            .summary
            .as_ref()
            .map(|s| format!("{} {}", num(s.median), w.unit.label()))
            .unwrap_or_else(|| "–".into()),
        Some(r) => ratio(r.ratio_plain),
    }
}

fn bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else if n >= 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{n} B")
    }
}

pub fn markdown(r: &Results) -> String {
    let m = &r.meta;
    let mut o = String::new();
    let _ = writeln!(o, "# execguard exec-overhead report\n");
    if m.quick {
        let _ = writeln!(
            o,
            "> **Quick smoke run** (`--quick`): very few samples; these numbers show that every \
             workload runs, not what anything costs. Use a full run for figures.\n"
        );
    }
    let _ = writeln!(o, "- command: `{}`", m.command);
    let _ = writeln!(
        o,
        "- metric: **{}** (`--metric {}`); the other metric is listed under each workload",
        m.metric.describe(),
        match m.metric {
            Metric::Cpu => "cpu",
            Metric::Wall => "wall",
        }
    );
    let _ = writeln!(o, "- date: {} (took {:.0} s)", m.date_utc, m.duration_s);
    let _ = writeln!(
        o,
        "- machine: {} CPUs ({}), kernel {}, {}",
        m.machine.nproc, m.machine.cpu, m.machine.kernel, m.machine.glibc
    );
    let _ = writeln!(o, "- compilers: {}; {}", m.machine.cc, m.machine.rustc);
    let _ = writeln!(
        o,
        "- load average at start / end: {} / {}",
        m.loadavg_start, m.loadavg_end
    );
    if let Some(c) = &m.git_commit {
        let tree = match m.git_dirty {
            Some(false) => " (clean tree)",
            Some(true) => " (**dirty tree**: uncommitted changes were measured too)",
            None => "",
        };
        let _ = writeln!(o, "- repository commit: `{c}`{tree}");
    }
    if m.inherit_env {
        let _ = writeln!(
            o,
            "- environment: the harness's own, passed through (`--inherit-env`), {} variables",
            m.env_keys.len()
        );
    } else {
        let _ = writeln!(
            o,
            "- environment of every measured run, all variants alike (values not recorded): {}",
            m.env_keys.join(", ")
        );
    }
    if m.machine.ld_so_preload {
        let _ = writeln!(
            o,
            "- **warning**: /etc/ld.so.preload exists, so \"plain\" is not preload-free here"
        );
    }
    if let Some(p) = &m.inherited_ld_preload {
        let _ = writeln!(
            o,
            "- note: the harness was started with LD_PRELOAD={p}; it is removed for every measured run"
        );
    }
    let _ = writeln!(o, "- measured programs built into: `{}`", m.bin_dir);
    if let Some(n) = &m.note {
        let _ = writeln!(o, "- note: {n}");
    }

    let _ = writeln!(o, "\n## Variants\n");
    let _ = writeln!(o, "| variant | what | library |");
    let _ = writeln!(o, "| --- | --- | --- |");
    for v in &r.variants {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            v.name,
            v.label,
            v.lib
                .as_deref()
                .map(|l| format!("`{l}`"))
                .unwrap_or("–".into())
        );
    }
    let _ = writeln!(
        o,
        "\nAll variants run in one process tree, interleaved: every iteration runs each variant \
         once, in an order rotated per iteration, so machine noise hits all of them alike. \
         A workload's first round per variant is a discarded warm-up."
    );

    if !r.budget.is_empty() {
        let _ = writeln!(o, "\n## Budget (the guard issue)\n");
        let _ = writeln!(
            o,
            "Borderline: the budget lies inside the p10–p90 range of the paired ratios, so this \
             run alone cannot settle it; repeat it, or read the instruction counts.\n"
        );
        let _ = writeln!(o, "| check | budget | measured | status | how |");
        let _ = writeln!(o, "| --- | --- | --- | --- | --- |");
        for b in &r.budget {
            let status = b.status().replace("NOT met", "**NOT met**");
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                b.check,
                b.limit,
                b.measured.as_deref().unwrap_or("–"),
                status,
                b.note
            );
        }
    }

    let _ = writeln!(o, "\n## Summary: ratio of medians vs plain\n");
    let names: Vec<&str> = r
        .variants
        .iter()
        .map(|v| v.name.as_str())
        .filter(|n| *n != "plain")
        .collect();
    let _ = write!(o, "| workload | plain |");
    for n in &names {
        let _ = write!(o, " {n} |");
    }
    let guard = names.contains(&"guard");
    if guard {
        let _ = write!(o, " guard Δ per exec |");
    }
    let _ = writeln!(o);
    let _ = write!(o, "| --- | --- |");
    for _ in &names {
        let _ = write!(o, " --- |");
    }
    if guard {
        let _ = write!(o, " --- |");
    }
    let _ = writeln!(o);
    for w in &r.workloads {
        let _ = write!(o, "| `{}` {} | {} |", w.id, w.title, cell(w, "plain"));
        for n in &names {
            let _ = write!(o, " {} |", cell(w, n));
        }
        if guard {
            let d = w
                .results
                .iter()
                .find(|x| x.variant == "guard")
                .and_then(|x| x.delta_per_exec_us);
            let _ = write!(
                o,
                " {} |",
                d.map(|d| format!("{} µs", signed(Some(d))))
                    .unwrap_or_else(|| "–".into())
            );
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o, "\n![ratio vs plain per workload](chart.png)");

    let _ = writeln!(o, "\n## Per workload\n");
    let _ = writeln!(
        o,
        "median, p10 and p90 over samples; MAD = median absolute deviation; ×plain = ratio of \
         medians, with the p10–p90 range of the per-iteration (paired) ratios in brackets; \
         Δ = median minus plain's median."
    );
    for w in &r.workloads {
        let _ = writeln!(o, "\n### `{}`: {}\n", w.id, w.title);
        let _ = writeln!(
            o,
            "{}. Unit: {}. Metric: {}.\n",
            w.description,
            w.unit.label(),
            w.metric.describe()
        );
        if let Some(s) = &w.skipped {
            let _ = writeln!(o, "**SKIPPED: {s}**");
            continue;
        }
        let _ = writeln!(
            o,
            "| variant | n | median | p10 | p90 | MAD | ×plain [paired p10–p90] | ×floor-c | ×floor-rust | Δ vs plain |"
        );
        let _ = writeln!(
            o,
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        );
        for x in &w.results {
            if let Some(f) = &x.failed {
                let _ = writeln!(
                    o,
                    "| {} | {} | **FAILED**: {} | | | | | | | |",
                    x.variant,
                    x.samples.len(),
                    f.replace('|', "\\|")
                );
                continue;
            }
            let Some(s) = &x.summary else { continue };
            if x.variant == "plain" {
                let _ = writeln!(
                    o,
                    "| plain | {} | {} | {} | {} | {} | baseline | {} | {} | – |",
                    s.n,
                    num(s.median),
                    num(s.p10),
                    num(s.p90),
                    num(s.mad),
                    ratio(x.ratio_floor_c),
                    ratio(x.ratio_floor_rust)
                );
                continue;
            }
            let paired = x
                .ratio_plain_paired
                .map(|(_, lo, hi)| format!(" [{lo:.3}–{hi:.3}]"))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {}{} | {} | {} | {} |",
                x.variant,
                s.n,
                num(s.median),
                num(s.p10),
                num(s.p90),
                num(s.mad),
                ratio(x.ratio_plain),
                paired,
                ratio(x.ratio_floor_c),
                ratio(x.ratio_floor_rust),
                signed(x.delta_plain)
            );
        }
        let both: Vec<String> = w
            .results
            .iter()
            .filter(|x| x.failed.is_none())
            .map(|x| {
                let f = |m: Option<f64>, r: Option<f64>| {
                    format!(
                        "{}{}",
                        m.map(num).unwrap_or("–".into()),
                        match r {
                            Some(r) if x.variant != "plain" => format!(" ({r:.3}x)"),
                            _ => String::new(),
                        }
                    )
                };
                format!(
                    "{}: wall {}, CPU {}",
                    x.variant,
                    f(x.median_wall, x.ratio_plain_wall),
                    f(x.median_cpu, x.ratio_plain_cpu)
                )
            })
            .collect();
        if !both.is_empty() {
            let _ = writeln!(
                o,
                "\nBoth metrics (medians, {}; ×plain): {}.",
                w.unit.label(),
                both.join("; ")
            );
        }
        let notes: Vec<String> = w
            .results
            .iter()
            .flat_map(|x| x.notes.iter().map(move |n| format!("{}: {n}", x.variant)))
            .collect();
        if !notes.is_empty() {
            let _ = writeln!(o, "\nstderr seen during samples:");
            for n in notes {
                let _ = writeln!(o, "- `{}`", n.replace('`', "'"));
            }
        }
        for x in w
            .results
            .iter()
            .filter(|x| !x.session_start_wall.is_empty())
        {
            let _ = writeln!(
                o,
                "\nSession start ({}: `execguard run --workspace W -- /bin/true`, run with every \
                 sample, which is measured less it): median wall {} ms, CPU {} ms, {} runs.",
                x.variant,
                num(crate::stats::median(&x.session_start_wall)),
                num(crate::stats::median(&x.session_start_cpu)),
                x.session_start_wall.len()
            );
        }
        if w.unit == Unit::MicrosPerOp {
            let firsts: Vec<String> = w
                .results
                .iter()
                .filter(|x| !x.first_call.is_empty())
                .map(|x| format!("{} {}", x.variant, num(crate::stats::median(&x.first_call))))
                .collect();
            if !firsts.is_empty() {
                let _ = writeln!(
                    o,
                    "\nFirst call in each fresh driver process (median µs, not in the table above): {}.",
                    firsts.join(", ")
                );
            }
        }
    }

    let _ = writeln!(o, "\n## Libraries\n");
    let _ = writeln!(
        o,
        "| variant | size | DT_NEEDED | SONAME | exported functions | exec entry points exported | load-time initialisers |"
    );
    let _ = writeln!(o, "| --- | --- | --- | --- | --- | --- | --- |");
    for l in &r.libraries {
        let _ = writeln!(
            o,
            "| {} | {} ({} B) | {} | {} | {} | {} | {} |",
            l.variant,
            bytes(l.size_bytes),
            l.size_bytes,
            if l.needed.is_empty() {
                "(none)".to_string()
            } else {
                l.needed.join(", ")
            },
            l.soname.as_deref().unwrap_or("–"),
            l.exported_functions,
            if l.exec_exports.is_empty() {
                "(none)".to_string()
            } else {
                l.exec_exports.join(", ")
            },
            l.load_time_initialisers
        );
    }
    for e in &r.library_errors {
        let _ = writeln!(o, "\n- could not inspect: {e}");
    }
    let _ = writeln!(
        o,
        "\nLoad-time initialisers = DT_INIT plus .init_array entries: code the loader runs in every \
         process before main (compiler-generated ones included, e.g. gcc's `frame_dummy`)."
    );

    let _ = writeln!(o, "\n## Memory per process\n");
    let _ = writeln!(
        o,
        "A tiny C program that blocks on stdin after start-up (and, in the second half, after one \
         `execve` call that the kernel refuses, so that a lazily initialised preload has set itself \
         up), read through /proc/PID/status and /proc/PID/smaps_rollup (median over runs, kB). Private = Private_Clean + Private_Dirty: \
         what this process alone costs.\n"
    );
    let _ = writeln!(
        o,
        "| variant | when | VmRSS | Δ VmRSS | Pss | Δ Pss | Private | Δ Private | runs |"
    );
    let _ = writeln!(o, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for x in &r.memory {
        let base = r
            .memory
            .iter()
            .find(|b| b.variant == "plain" && b.phase == x.phase);
        let is_base = x.variant == "plain";
        let d = |a: f64, b: Option<f64>| match b {
            Some(b) if !is_base => signed(Some(a - b)),
            _ => "–".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {}{} |",
            x.variant,
            match x.phase.as_str() {
                "start" => "after start-up",
                _ => "after one execve call",
            },
            num(x.vm_rss_kb),
            d(x.vm_rss_kb, base.map(|b| b.vm_rss_kb)),
            num(x.pss_kb),
            d(x.pss_kb, base.map(|b| b.pss_kb)),
            num(x.private_kb),
            d(x.private_kb, base.map(|b| b.private_kb)),
            x.runs,
            x.error
                .as_deref()
                .map(|e| format!(" (error: {e})"))
                .unwrap_or_default()
        );
    }

    let _ = writeln!(o, "\n## Instruction counts\n");
    match (&r.instructions, &r.instructions_unavailable) {
        (Some(ins), _) => {
            let _ = writeln!(
                o,
                "Tool: **{}**. User-space instructions of the whole process tree; repeatable \
                 where wall time is not. Δ = minus plain. callgrind writes a process's counts \
                 when it exits, so an image that execs is never counted: the exec path is \
                 counted where the kernel refuses the call (EACCES on a non-executable system \
                 ELF), from runs of the driver with 0, 1 and 1 + N calls.\n",
                ins.tool
            );
            let _ = write!(o, "| program |");
            for v in &r.variants {
                let _ = write!(o, " {} |", v.name);
            }
            let _ = writeln!(o);
            let _ = write!(o, "| --- |");
            for _ in &r.variants {
                let _ = write!(o, " --- |");
            }
            let _ = writeln!(o);
            for p in &ins.rows {
                let _ = write!(o, "| {} |", p.title);
                let base = p.counts.first().copied().flatten();
                for (i, c) in p.counts.iter().enumerate() {
                    match (c, base) {
                        (Some(n), Some(b)) if i > 0 => {
                            let _ = write!(o, " {n:.0} (Δ {:+.0}) |", n - b);
                        }
                        (Some(n), _) => {
                            let _ = write!(o, " {n:.0} |");
                        }
                        (None, _) => {
                            let _ = write!(
                                o,
                                " failed: {} |",
                                p.errors[i].as_deref().unwrap_or("?").replace('|', "\\|")
                            );
                        }
                    }
                }
                let _ = writeln!(o);
            }
            let _ = writeln!(
                o,
                "\nA new process image under a preload costs about `process start` Δ + `first call` Δ \
                 instructions more than plain (the exec chain pays this once per hop); a warm process \
                 pays `warm call` Δ per exec call."
            );
        }
        (None, Some(why)) => {
            let _ = writeln!(o, "Not measured: {why}.");
        }
        (None, None) => {
            let _ = writeln!(o, "Not measured.");
        }
    }
    let _ = writeln!(
        o,
        "\n## How to read this\n\nSee `benches/README.md`. In short: ratios taken in one \
         interleaved run are what count on a noisy shared machine; the floor rows say what any \
         preload costs, so guard ÷ floor is the guard's own work; instruction counts are the \
         stable cross-check."
    );
    o
}
