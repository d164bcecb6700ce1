//! execguard-bench: the end-to-end exec-overhead harness.
//!
//! Runs every workload with no preload (plain), with empty preload libraries
//! (the floor), with the guard and with any library to compare, interleaved in
//! one run, and writes REPORT.md, chart.png and results.json. See
//! benches/README.md.

mod assets;
mod chart;
mod elfinfo;
mod instr;
mod mem;
mod report;
mod run;
mod stats;
mod sysinfo;
mod workloads;

use clap::Parser;
use report::{BudgetCheck, Meta, Metric, Results, VariantInfo, VariantResult, WorkloadResult};
use run::{Env, Variant};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;
use workloads::{Ctx, Sizes};

#[derive(Parser, Debug)]
#[command(
    name = "execguard-bench",
    about = "Exec-overhead harness: plain vs empty preload (floor) vs guard, interleaved in one run"
)]
struct Cli {
    /// The guard to measure (LD_PRELOAD-able), e.g. target/release/libexecguard.so.
    #[arg(long, value_name = "PATH")]
    guard: Option<PathBuf>,
    /// Also measure `execguard run`'s real session (variant `session`): this CLI starts each
    /// measured program in a sealed session with the --guard library; each sample is less
    /// the same session running nothing (`/bin/true`), so it counts the workload alone.
    #[arg(long, value_name = "PATH", requires = "guard")]
    session: Option<PathBuf>,
    /// Another preload library measured side by side (repeatable).
    #[arg(long, value_name = "PATH")]
    compare: Vec<PathBuf>,
    /// Set KEY=VALUE in the environment of every measured run, all variants alike (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    envs: Vec<String>,
    /// Read a policy file and pass its text as EXECGUARD_POLICY (how the guard reads it in host mode).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// What the ratios, chart and budget use: CPU time of the measured process
    /// tree (steady on a shared machine) or wall time. Both are recorded.
    #[arg(long, value_enum, default_value = "cpu")]
    metric: Metric,
    /// Smoke run: few samples and small workloads (about a minute). No figures.
    #[arg(long)]
    quick: bool,
    /// Where REPORT.md, chart.png and results.json go.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// git used by the git loop (point it at the git wrapper to measure it).
    #[arg(long, value_name = "PATH", default_value = "/usr/bin/git")]
    git: PathBuf,
    /// node used by the node workload (searched on PATH when not a path).
    #[arg(long, value_name = "PATH", default_value = "node")]
    node: PathBuf,
    /// Where the measured C programs are built. Under a strict guard, exec of
    /// a file in a mutable root (the workspace, /tmp...) is refused: put them
    /// somewhere the policy treats as immutable (e.g. /opt/execguard-bench).
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Override every workload's sample count.
    #[arg(long, value_name = "N")]
    samples: Option<usize>,
    /// Hops of the exec chain.
    #[arg(long, default_value_t = 300)]
    hops: u32,
    /// Iterations of the shell loop.
    #[arg(long, default_value_t = 300)]
    loop_count: u32,
    /// Only these workload ids (comma-separated); the others are reported as skipped.
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    only: Vec<String>,
    /// Instruction counter: auto (callgrind, else perf), callgrind, perf or none.
    #[arg(long, default_value = "auto")]
    instr: String,
    /// A non-executable ELF in an immutable place for the warm-call workload (default: libm).
    #[arg(long, value_name = "PATH")]
    eacces_target: Option<PathBuf>,
    /// TrueType font for the chart's text, or `none` for a chart without text.
    #[arg(long, value_name = "PATH")]
    font: Option<PathBuf>,
    /// A line of free text for the report's header (e.g. where the guard was built from).
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// Give measured runs the harness's whole environment instead of a clean
    /// one (PATH, HOME and the --env/--policy variables).
    #[arg(long)]
    inherit_env: bool,
    /// Measure nothing: rewrite REPORT.md and chart.png in --out from an
    /// existing results.json (e.g. after a change to the report's layout).
    #[arg(long, value_name = "results.json")]
    render: Option<PathBuf>,
    /// Keep the temporary build and work directory.
    #[arg(long)]
    keep_tmp: bool,
}

fn default_out() -> PathBuf {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    harness
        .parent()
        .map(|benches| benches.join("results"))
        .unwrap_or_else(|| harness.join("../results"))
}

fn find_on_path(p: &Path) -> Option<PathBuf> {
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(p))
            .find(|c| c.is_file())
    })
}

fn default_eacces_target() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
        "/usr/lib/aarch64-linux-gnu/libm.so.6",
        "/usr/lib64/libm.so.6",
        "/lib64/libm.so.6",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 == 0)
            .unwrap_or(false)
    })
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).map(|a| shell_quote(&a)).collect();
    format!(
        "cargo run --release -p execguard-bench --{}{}",
        if args.is_empty() { "" } else { " " },
        args.join(" ")
    )
}

fn mkdir(p: &Path) -> Result<(), String> {
    std::fs::create_dir_all(p).map_err(|e| format!("mkdir {}: {e}", p.display()))
}

/// Checks that ld.so really loads the library: a library it cannot preload is
/// only a warning, and that variant would silently measure plain.
fn check_preload(v: &Variant, env: &Env) -> Result<(), String> {
    let mut cmd = Command::new("/bin/true");
    env.apply(&mut cmd, v);
    let out = cmd
        .output()
        .map_err(|e| format!("{}: cannot run /bin/true: {e}", v.name))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("cannot be preloaded") || err.contains("ERROR: ld.so") {
        return Err(format!(
            "{}: ld.so did not load the library: {}",
            v.name,
            err.trim()
        ));
    }
    if !out.status.success() {
        return Err(format!(
            "{}: /bin/true failed under the preload ({}): {}",
            v.name,
            out.status,
            err.trim()
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("execguard-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn loud(msg: &str) {
    eprintln!("execguard-bench: *** {msg} ***");
}

/// Writes results.json (unless re-rendering), chart.png and REPORT.md.
fn write_outputs(
    results: &Results,
    out: &Path,
    font: Option<&Path>,
    json: bool,
) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let json_path = out.join("results.json");
    if json {
        let text = serde_json::to_string_pretty(results).map_err(|e| e.to_string())?;
        std::fs::write(&json_path, text).map_err(|e| format!("{}: {e}", json_path.display()))?;
    }
    let chart_path = out.join("chart.png");
    let font = chart::load_font(font);
    if font.is_none() {
        loud("no TrueType font found (install fonts-dejavu-core or pass --font): chart drawn without text");
    }
    chart::draw(results, &chart_path, font.is_some())
        .map_err(|e| format!("chart {}: {e}", chart_path.display()))?;
    let mut md = report::markdown(results);
    if font.is_none() {
        md.push_str("\n(The chart was drawn without text: no TrueType font was found.)\n");
    }
    let md_path = out.join("REPORT.md");
    std::fs::write(&md_path, md).map_err(|e| format!("{}: {e}", md_path.display()))?;
    Ok((md_path, chart_path, json_path))
}

fn real_main(cli: Cli) -> Result<(), String> {
    let started = Instant::now();
    if let Some(path) = &cli.render {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut results: Results =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        // Verdicts are derived data: recompute them with this version's rules.
        let names: Vec<&str> = results.variants.iter().map(|v| v.name.as_str()).collect();
        let budget = budget_checks(
            &results.workloads,
            results.instructions.as_ref(),
            &names,
            results.meta.quick,
            results.meta.metric,
        );
        results.budget = budget;
        let out = cli.out.clone().unwrap_or_else(default_out);
        mkdir(&out)?;
        let same = out.join("results.json").canonicalize().ok() == path.canonicalize().ok();
        if !same {
            std::fs::copy(path, out.join("results.json")).map_err(|e| e.to_string())?;
        }
        let (md, chart, _) = write_outputs(&results, &out, cli.font.as_deref(), false)?;
        eprintln!(
            "execguard-bench: re-rendered {} and {} from {}",
            md.display(),
            chart.display(),
            path.display()
        );
        return Ok(());
    }
    let date = sysinfo::now_utc();
    // The tree as it was when the run began: the run itself writes into it (`--out`).
    let tree = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (git_commit, git_dirty) = (sysinfo::git_commit(tree), sysinfo::git_dirty(tree));
    let loadavg_start = sysinfo::loadavg();
    let out = cli.out.clone().unwrap_or_else(default_out);
    mkdir(&out)?;
    let tmp = std::env::temp_dir().join(format!("execguard-bench-{}", std::process::id()));
    let src_dir = tmp.join("src");
    let lib_dir = tmp.join("lib");
    let scratch = tmp.join("scratch");
    let bin_dir = cli.bin_dir.clone().unwrap_or_else(|| tmp.join("bin"));
    for d in [&src_dir, &lib_dir, &scratch, &bin_dir] {
        mkdir(d)?;
    }
    let bin_dir = bin_dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", bin_dir.display()))?;

    // Environment shared by every variant.
    let mut env = Env::new(cli.inherit_env);
    for kv in &cli.envs {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--env {kv:?}: expected KEY=VALUE"))?;
        if k == "LD_PRELOAD" {
            return Err("--env LD_PRELOAD: the harness sets LD_PRELOAD per variant".into());
        }
        env.pairs.push((k.to_string(), v.to_string()));
    }
    if let Some(p) = &cli.policy {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("--policy {}: {e}", p.display()))?;
        env.pairs.push(("EXECGUARD_POLICY".into(), text));
    }

    eprintln!(
        "execguard-bench: building helpers and floors in {}",
        tmp.display()
    );
    let helpers = assets::build_helpers(&src_dir, &bin_dir)?;
    let mut variants = vec![Variant {
        name: "plain".into(),
        label: "no preload".into(),
        lib: None,
        session: None,
    }];
    variants.push(Variant {
        name: "floor-c".into(),
        label: "empty C shared library (cc -shared -fPIC -O2), exports nothing".into(),
        lib: Some(assets::build_floor_c(&src_dir, &lib_dir)?),
        session: None,
    });
    match assets::build_floor_rust(&src_dir, &lib_dir) {
        Ok(lib) => variants.push(Variant {
            name: "floor-rust".into(),
            label: "empty #![no_std] Rust cdylib (rustc -C opt-level=3 -C lto -C panic=abort), exports nothing".into(),
            lib: Some(lib),
            session: None,
        }),
        Err(e) => loud(&format!("Rust floor not built, variant skipped: {e}")),
    }
    let mut add_lib = |name: String, label: String, p: &Path| -> Result<(), String> {
        let lib = p
            .canonicalize()
            .map_err(|e| format!("{name} library {}: {e}", p.display()))?;
        variants.push(Variant {
            name,
            label,
            lib: Some(lib),
            session: None,
        });
        Ok(())
    };
    match &cli.guard {
        Some(g) => add_lib("guard".into(), "the exec guard under test".into(), g)?,
        None => loud("no --guard given: measuring plain and the floors only"),
    }
    for (i, c) in cli.compare.iter().enumerate() {
        let name = if cli.compare.len() == 1 {
            "compare".to_string()
        } else {
            format!("compare-{}", i + 1)
        };
        let label = format!(
            "comparison library {}",
            c.file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default()
        );
        add_lib(name, label, c)?;
    }
    if let (Some(cli_path), Some(g)) = (&cli.session, &cli.guard) {
        variants.push(Variant {
            name: "session".into(),
            label: format!(
                "`{} run --workspace W -- PROGRAM`: the guard under the session's own policy, sealed, less the session's start",
                cli_path.display()
            ),
            lib: Some(g.canonicalize().map_err(|e| format!("--guard {}: {e}", g.display()))?),
            session: Some(cli_path.canonicalize().map_err(|e| format!("--session {}: {e}", cli_path.display()))?),
        });
    }
    for v in variants.iter().filter(|v| v.session.is_none()) {
        check_preload(v, &env)?;
    }
    if cli.guard.is_some() && cli.bin_dir.is_none() {
        loud(
            "the measured programs are built under the temp dir, a mutable root: a strict guard \
             will refuse the exec chain's self-exec; pass --bin-dir to an immutable directory",
        );
    }

    // Library facts.
    let mut libraries = Vec::new();
    let mut library_errors = Vec::new();
    for v in &variants {
        if let Some(lib) = &v.lib {
            match elfinfo::inspect(&v.name, lib) {
                Ok(info) => libraries.push(info),
                Err(e) => library_errors.push(e),
            }
        }
    }

    // Workload inputs.
    let sizes = {
        let s = if cli.quick {
            Sizes::quick()
        } else {
            Sizes::full()
        };
        match cli.samples {
            Some(n) => s.with_samples(n),
            None => s,
        }
    };
    let make_dir = tmp.join("cproject");
    let make_ok = match assets::generate_c_project(&make_dir, sizes.make_files).and_then(|_| {
        run::setup(
            Command::new("make")
                .args(["-j2", "-s"])
                .current_dir(&make_dir)
                .env_remove("LD_PRELOAD"),
        )
    }) {
        Ok(_) => true,
        Err(e) => {
            loud(&format!("make workload skipped: {e}"));
            false
        }
    };
    let git = if cli.git.is_file() {
        let dir = tmp.join("gitrepo");
        assets::generate_git_repo(&dir, &cli.git).map(|_| (cli.git.clone(), dir))
    } else {
        Err(format!("git not found at {}", cli.git.display()))
    };
    if let Err(e) = &git {
        loud(&format!("git workload skipped: {e}"));
    }
    let node = find_on_path(&cli.node)
        .ok_or_else(|| format!("node not found ({}); pass --node PATH", cli.node.display()));
    if let Err(e) = &node {
        loud(&format!("node workload skipped: {e}"));
    }
    let eacces_target = cli.eacces_target.clone().or_else(default_eacces_target);
    let plan = workloads::Plan {
        sizes,
        hops: cli.hops,
        loop_count: cli.loop_count,
        eacces_target: eacces_target.clone(),
        make_dir: make_ok.then_some(make_dir.as_path()),
        git,
        node,
    };
    let mut all = workloads::all(&plan);
    if !cli.only.is_empty() {
        for w in &mut all {
            if !cli.only.iter().any(|o| o == &w.id) && w.skipped.is_none() {
                w.skipped = Some("not selected (--only)".into());
            }
        }
    }

    // Measure, interleaved.
    let ctx = Ctx {
        env: &env,
        driver: &helpers.driver,
        chain: &helpers.chain,
        spawn_js: &helpers.spawn_js,
        scratch: &scratch,
    };
    let mut results_w = Vec::new();
    let total = all.len();
    for (wi, w) in all.iter().enumerate() {
        let metric = w.metric(cli.metric);
        let mut wr = WorkloadResult {
            id: w.id.clone(),
            metric,
            title: w.title.clone(),
            unit: w.unit,
            description: w.description.clone(),
            samples_planned: w.samples,
            skipped: w.skipped.clone(),
            results: Vec::new(),
        };
        if let Some(s) = &w.skipped {
            eprintln!("[{}/{total}] {}: SKIPPED: {s}", wi + 1, w.id);
            results_w.push(wr);
            continue;
        }
        let mut vr: Vec<VariantResult> = variants
            .iter()
            .map(|v| VariantResult::new(&v.name))
            .collect();
        let nv = variants.len();
        // Round -1 is the warm-up (discarded); order rotates every round.
        for round in -1..w.samples as isize {
            for j in 0..nv {
                let vi = (round.rem_euclid(nv as isize) as usize + j) % nv;
                if vr[vi].failed.is_some() {
                    continue;
                }
                match w.sample(&variants[vi], &ctx) {
                    Ok(s) => {
                        if let Some(n) = s.note {
                            if !vr[vi].notes.contains(&n) && vr[vi].notes.len() < 3 {
                                vr[vi].notes.push(n);
                            }
                        }
                        if round >= 0 {
                            vr[vi].samples.push(match metric {
                                Metric::Cpu => s.cpu,
                                Metric::Wall => s.wall,
                            });
                            vr[vi].samples_wall.push(s.wall);
                            vr[vi].samples_cpu.push(s.cpu);
                            vr[vi].first_call.extend(s.first);
                            if let Some((wall, cpu)) = s.session_start {
                                vr[vi].session_start_wall.push(wall);
                                vr[vi].session_start_cpu.push(cpu);
                            }
                        }
                    }
                    Err(e) => {
                        loud(&format!("{} under {} FAILED: {e}", w.id, variants[vi].name));
                        vr[vi].failed = Some(e);
                    }
                }
            }
        }
        for r in &mut vr {
            r.summary = stats::summarize(&r.samples);
        }
        wr.results = vr;
        report::derive(&mut wr, w.execs_per_sample);
        let line: Vec<String> = wr
            .results
            .iter()
            .map(|r| match (&r.failed, &r.summary, r.ratio_plain) {
                (Some(_), _, _) => format!("{} FAILED", r.variant),
                (_, Some(s), Some(x)) if r.variant != "plain" => {
                    format!("{} {:.1} ({x:.3}x)", r.variant, s.median)
                }
                (_, Some(s), _) => format!("{} {:.1}", r.variant, s.median),
                _ => format!("{} –", r.variant),
            })
            .collect();
        eprintln!(
            "[{}/{total}] {} ({}): {}",
            wi + 1,
            w.id,
            w.unit.label(),
            line.join(", ")
        );
        results_w.push(wr);
    }

    eprintln!("execguard-bench: memory per process");
    let memory = mem::measure(
        &helpers.sleeper,
        eacces_target.as_deref(),
        &env,
        &variants,
        if cli.quick { 3 } else { 7 },
    );

    let (instructions, instructions_unavailable) = match instr::pick(&cli.instr) {
        Ok((tool, label)) => {
            eprintln!("execguard-bench: instruction counts with {label}");
            let progs = instr::Programs {
                driver: &helpers.driver,
                eacces_target: eacces_target.as_deref(),
                warm_ops: if cli.quick { 10 } else { 100 },
            };
            (
                Some(instr::measure(
                    tool, label, &progs, &env, &variants, &scratch,
                )),
                None,
            )
        }
        Err(e) => {
            loud(&format!("no instruction counts: {e}"));
            (None, Some(e))
        }
    };

    let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    let budget = budget_checks(
        &results_w,
        instructions.as_ref(),
        &names,
        cli.quick,
        cli.metric,
    );
    for (w, x) in results_w
        .iter()
        .flat_map(|w| w.results.iter().map(move |x| (w, x)))
        .filter(|(_, x)| !x.session_start_wall.is_empty())
    {
        eprintln!(
            "execguard-bench: session start (`execguard run -- /bin/true`, with {}): median wall {:.2} ms, CPU {:.2} ms",
            w.id,
            stats::median(&x.session_start_wall),
            stats::median(&x.session_start_cpu)
        );
    }
    for b in &budget {
        let measured = b.measured.as_deref().unwrap_or("–");
        eprintln!(
            "execguard-bench: budget: {}: {measured}, {} ({})",
            b.check,
            b.limit,
            b.status()
        );
    }

    let results = Results {
        meta: Meta {
            metric: cli.metric,
            command: command_line(),
            date_utc: date,
            duration_s: started.elapsed().as_secs_f64(),
            quick: cli.quick,
            machine: sysinfo::machine(),
            loadavg_start,
            loadavg_end: sysinfo::loadavg(),
            git_commit,
            git_dirty,
            env_keys: env.keys(),
            inherit_env: cli.inherit_env,
            inherited_ld_preload: std::env::var("LD_PRELOAD").ok(),
            bin_dir: bin_dir.display().to_string(),
            note: cli.note.clone(),
        },
        variants: variants
            .iter()
            .map(|v| VariantInfo {
                name: v.name.clone(),
                label: v.label.clone(),
                lib: v.lib.as_ref().map(|l| l.display().to_string()),
            })
            .collect(),
        libraries,
        library_errors,
        workloads: results_w,
        memory,
        instructions,
        instructions_unavailable,
        budget,
    };

    let (md_path, chart_path, json_path) =
        write_outputs(&results, &out, cli.font.as_deref(), true)?;
    if !cli.keep_tmp {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    eprintln!(
        "execguard-bench: wrote {}, {} and {} in {:.0} s",
        md_path.display(),
        chart_path.display(),
        json_path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One variant's result in one workload: `None` when not measured, `Err` when skipped or
/// failed.
fn variant_of(
    ws: &[WorkloadResult],
    id: &str,
    variant: &str,
) -> Option<Result<VariantResult, String>> {
    let w = ws.iter().find(|w| w.id == id)?;
    if let Some(s) = &w.skipped {
        return Some(Err(format!("skipped: {s}")));
    }
    let r = w.results.iter().find(|r| r.variant == variant)?;
    Some(match &r.failed {
        Some(f) => Err(format!("failed: {f}")),
        None => Ok(r.clone()),
    })
}

/// A variant's own share of a workload: its ratio to plain over the lower of the two empty
/// libraries' ratios, where its share is largest, at most `limit`.
fn floor_check(
    ws: &[WorkloadResult],
    id: &str,
    title: &str,
    variant: &str,
    limit: f64,
    result: &Option<Result<VariantResult, String>>,
    qnote: &str,
) -> BudgetCheck {
    let floor = ws.iter().find(|w| w.id == id).and_then(|w| {
        w.results
            .iter()
            .filter(|r| r.variant.starts_with("floor") && r.failed.is_none())
            .filter_map(|r| Some((r, r.ratio_plain?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    });
    let mut borderline = false;
    let (measured, met, note) = match (result, floor) {
        (Some(Ok(r)), Some((fr, f))) => match r.ratio_plain {
            Some(x) => {
                let name = &fr.variant;
                // Paired as against plain: same round, same machine noise.
                let paired = stats::paired_ratio(&r.samples, &fr.samples);
                borderline = paired.is_some_and(|(_, lo, hi)| lo <= limit && limit <= hi);
                (
                    Some(format!(
                        "{:.3}x {name}{}",
                        x / f,
                        paired
                            .map(|(_, lo, hi)| format!(" (paired p10–p90 {lo:.3}–{hi:.3})"))
                            .unwrap_or_default()
                    )),
                    Some(x / f <= limit),
                    format!("{variant} {x:.3}x ÷ {name} {f:.3}x (the lower floor: the {variant}'s share is largest against it).{qnote}"),
                )
            }
            None => (None, None, "no plain baseline".to_string()),
        },
        (Some(Err(e)), _) => (None, None, e.clone()),
        (_, None) => (None, None, "no floor measured".to_string()),
        (None, _) => (None, None, "not measured".to_string()),
    };
    BudgetCheck {
        check: format!("{title}, {variant} ÷ empty floor"),
        limit: format!("≤ {limit:.2}x the floor"),
        measured,
        met,
        borderline,
        note,
    }
}

fn budget_checks(
    ws: &[WorkloadResult],
    instr: Option<&instr::InstrReport>,
    variants: &[&str],
    quick: bool,
    metric: Metric,
) -> Vec<BudgetCheck> {
    let has_guard = variants.contains(&"guard");
    // What the empty libraries alone take of the budget, for every check.
    let floors = |id: &str, f: fn(&VariantResult) -> Option<String>| {
        let w = ws.iter().find(|w| w.id == id && w.skipped.is_none());
        let parts: Vec<String> = w
            .map(|w| {
                w.results
                    .iter()
                    .filter(|r| r.variant.starts_with("floor") && r.failed.is_none())
                    .filter_map(|r| f(r).map(|v| format!("{} {v}", r.variant)))
                    .collect()
            })
            .unwrap_or_default();
        if parts.is_empty() {
            String::new()
        } else {
            format!(" Floors: {}.", parts.join(", "))
        }
    };
    let guard_of = |id: &str| {
        if !has_guard {
            return Some(Err("no --guard in this run.".to_string()));
        }
        variant_of(ws, id, "guard")
    };
    let plain_of = |id: &str, f: fn(&VariantResult) -> Option<f64>| {
        ws.iter()
            .find(|w| w.id == id)?
            .results
            .iter()
            .find(|r| r.variant == "plain")
            .and_then(f)
    };
    let qnote = if quick {
        " Quick run: too few samples for a verdict."
    } else {
        ""
    };
    let mut out = Vec::new();
    for &(id, limit, what) in report::PROCESS_BUDGETS {
        let fl = floors(id, |r| r.ratio_plain.map(|x| format!("{x:.3}x")));
        let borderline = matches!(
            guard_of(id),
            Some(Ok(VariantResult { ratio_plain_paired: Some((_, lo, hi)), .. })) if lo <= limit && limit <= hi
        );
        let (measured, met, note) = match guard_of(id) {
            Some(Ok(r)) => match r.ratio_plain {
                Some(x) => (
                    Some(format!(
                        "{x:.3}x{}",
                        r.ratio_plain_paired
                            .map(|(_, lo, hi)| format!(" (paired p10–p90 {lo:.3}–{hi:.3})"))
                            .unwrap_or_default()
                    )),
                    Some(x <= limit),
                    format!(
                        "ratio of medians, guard vs plain, interleaved ({}; wall {}, CPU {}).{qnote}",
                        metric.describe(),
                        r.ratio_plain_wall.map(|x| format!("{x:.3}x")).unwrap_or("–".into()),
                        r.ratio_plain_cpu.map(|x| format!("{x:.3}x")).unwrap_or("–".into()),
                    ),
                ),
                None => (None, None, "no plain baseline".to_string()),
            },
            Some(Err(e)) => (None, None, e),
            None => (None, None, "not measured".to_string()),
        };
        let title = ws
            .iter()
            .find(|w| w.id == id)
            .map(|w| w.title.clone())
            .unwrap_or_else(|| what.to_string());
        out.push(BudgetCheck {
            check: title.clone(),
            limit: format!("≤ {limit:.2}x plain"),
            measured,
            met,
            borderline,
            note: format!("{note}{fl}"),
        });
        out.push(floor_check(
            ws,
            id,
            &title,
            "guard",
            report::FLOOR_BUDGET,
            &guard_of(id),
            qnote,
        ));
        // Issue 31: `execguard run`'s real session against the same floor.
        if variants.contains(&"session") {
            let session = variant_of(ws, id, "session");
            out.push(floor_check(
                ws,
                id,
                &title,
                "session",
                report::SESSION_FLOOR_BUDGET,
                &session,
                qnote,
            ));
        }
    }
    let instr_note = instr
        .and_then(|i| {
            let g = variants.iter().position(|n| *n == "guard")?;
            let warm = i.rows.iter().find(|r| r.id == "warm_call")?;
            let base = warm.counts.first().copied().flatten()?;
            let gv = warm.counts.get(g).copied().flatten()?;
            Some(format!(
                " {}: {:+.0} instructions per call vs plain.",
                i.tool,
                gv - base
            ))
        })
        .unwrap_or_default();
    let (measured, met, note) = match guard_of("warm_call_eacces") {
        Some(Ok(r)) => match r.delta_plain {
            Some(d) => (
                Some(format!(
                    "{d:+.2} µs per call (wall {}, CPU {})",
                    r.median_wall
                        .zip(plain_of("warm_call_eacces", |p| p.median_wall))
                        .map(|(a, b)| format!("{:+.2}", a - b))
                        .unwrap_or("–".into()),
                    r.median_cpu
                        .zip(plain_of("warm_call_eacces", |p| p.median_cpu))
                        .map(|(a, b)| format!("{:+.2}", a - b))
                        .unwrap_or("–".into()),
                )),
                Some(d <= report::WARM_ALLOW_BUDGET_US),
                format!(
                    "median wall time of a warm `execve` call (refused by the kernel, so no process is created), guard minus plain; \
                     an estimate of the warm allow decision.{instr_note}{qnote}"
                ),
            ),
            None => (None, None, "no plain baseline".to_string()),
        },
        Some(Err(e)) => (None, None, e),
        None => (None, None, "not measured".to_string()),
    };
    let fl = floors("warm_call_eacces", |r| {
        r.delta_plain.map(|d| format!("{d:+.2} µs"))
    });
    out.push(BudgetCheck {
        check: "warm allow decision".into(),
        limit: format!("≤ {} µs", report::WARM_ALLOW_BUDGET_US),
        measured,
        met,
        borderline: false,
        note: format!("{note}{fl}"),
    });
    out
}
