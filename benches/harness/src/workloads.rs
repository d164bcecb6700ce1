//! The measured workloads and how one sample of each is taken.

use crate::assets::git_env;
use crate::run::{first_line, run, Env, Metric, Variant};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The exec entry points the driver exercises, in report order: fork + call
/// (or vfork + execve, or posix_spawn[p]) of /bin/true.
pub const DRIVER_MODES: &[(&str, &str)] = &[
    ("fork_execve", "execve"),
    ("fork_execv", "execv"),
    ("fork_execvp", "execvp"),
    ("fork_execvpe", "execvpe"),
    ("fork_execl", "execl"),
    ("fork_execle", "execle"),
    ("fork_execlp", "execlp"),
    ("fork_fexecve", "fexecve"),
    ("fork_execveat", "execveat"),
    ("vfork_execve", "vfork_execve"),
    ("posix_spawn", "posix_spawn"),
    ("posix_spawnp", "posix_spawnp"),
];

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds per operation (median of the ops inside one driver run).
    #[serde(rename = "us/op")]
    MicrosPerOp,
    /// Milliseconds of wall time for one whole run.
    #[serde(rename = "ms/run")]
    MillisPerRun,
}

impl Unit {
    pub fn label(self) -> &'static str {
        match self {
            Unit::MicrosPerOp => "µs/op",
            Unit::MillisPerRun => "ms/run",
        }
    }
}

#[derive(Debug, Clone)]
pub enum Kind {
    Driver {
        mode: &'static str,
        ops: usize,
    },
    /// The driver's `warm_eacces` (in the driver's warm process) or `vfork_eacces` (in a fresh
    /// vfork child): `execve` of a non-executable file, which the kernel refuses.
    WarmEacces {
        mode: &'static str,
        ops: usize,
        target: PathBuf,
    },
    /// The driver, preloading nothing itself, posix_spawns /bin/true with the variant's
    /// library preloaded in the child alone.
    ChildPreload {
        ops: usize,
    },
    Chain {
        hops: u32,
    },
    Shell {
        count: u32,
    },
    Make {
        dir: PathBuf,
    },
    Git {
        dir: PathBuf,
        git: PathBuf,
        iters: u32,
    },
    Node {
        node: PathBuf,
        children: u32,
    },
}

#[derive(Debug, Clone)]
pub struct Workload {
    pub id: String,
    pub title: String,
    pub unit: Unit,
    pub description: String,
    /// How many exec-like events one sample holds, to turn a delta into a per-exec figure.
    pub execs_per_sample: Option<f64>,
    pub samples: usize,
    pub kind: Kind,
    /// Set when the workload cannot run here (e.g. node is missing): the row is
    /// still reported, loudly, with this reason.
    pub skipped: Option<String>,
}

/// One measurement of one variant, in the workload's unit.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Wall-clock time.
    pub wall: f64,
    /// CPU time (user + system) of the measured process tree.
    pub cpu: f64,
    /// For driver workloads: the first op in the process (cold call), wall µs.
    pub first: Option<f64>,
    /// The session variant: the start of the session the sample is measured less, wall and
    /// CPU ms (`execguard run --workspace W -- /bin/true`).
    pub session_start: Option<(f64, f64)>,
    /// First line of anything the run printed on stderr (a guard's messages).
    pub note: Option<String>,
}

pub struct Ctx<'a> {
    pub env: &'a Env,
    pub driver: &'a Path,
    pub chain: &'a Path,
    pub spawn_js: &'a Path,
    pub scratch: &'a Path,
}

fn note(stderr: &str) -> Option<String> {
    if stderr.trim().is_empty() {
        None
    } else {
        Some(first_line(stderr))
    }
}

/// Driver output: one `wall_ns cpu_ns` line per op.
fn parse_ops(stdout: &str) -> Result<Vec<(f64, f64)>, String> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace().map(str::parse::<f64>);
            match (it.next(), it.next()) {
                (Some(Ok(w)), Some(Ok(c))) => Ok((w, c)),
                _ => Err(format!("bad driver output {l:?}")),
            }
        })
        .collect()
}

impl Workload {
    /// The metric this workload is judged on. The warm call (and the vfork child's) is a loop of
    /// sub-µs calls inside one process: whole-µs CPU accounting plus the cost
    /// of reading it would swamp it, and it is never preempted for long, so
    /// its median wall time is the measure.
    pub fn metric(&self, asked: Metric) -> Metric {
        match self.kind {
            Kind::WarmEacces { .. } => Metric::Wall,
            _ => asked,
        }
    }

    pub fn sample(&self, variant: &Variant, ctx: &Ctx<'_>) -> Result<Sample, String> {
        let timeout = Duration::from_secs(match self.kind {
            Kind::Make { .. } => 900,
            _ => 180,
        });
        let mut cmd;
        match &self.kind {
            Kind::Driver { mode, ops } => {
                cmd = Command::new(ctx.driver);
                cmd.arg(mode).arg(ops.to_string());
            }
            Kind::WarmEacces { mode, ops, target } => {
                cmd = Command::new(ctx.driver);
                cmd.arg(mode).arg(ops.to_string()).arg(target);
            }
            Kind::ChildPreload { ops } => {
                cmd = Command::new(ctx.driver);
                cmd.arg("child_preload").arg(ops.to_string());
                ctx.env.apply(&mut cmd, variant);
                cmd.env_remove("LD_PRELOAD");
                if let Some(lib) = &variant.lib {
                    cmd.env("BENCH_CHILD_PRELOAD", lib);
                }
            }
            Kind::Chain { hops } => {
                cmd = Command::new(ctx.chain);
                cmd.arg(hops.to_string());
            }
            Kind::Shell { count } => {
                cmd = Command::new("/bin/sh");
                cmd.arg("-c").arg(format!(
                    "i=0; while [ $i -lt {count} ]; do /bin/true || exit 1; i=$((i+1)); done"
                ));
            }
            Kind::Make { dir } => {
                cmd = Command::new("make");
                cmd.args(["-B", "-j2", "-s"]).current_dir(dir);
            }
            Kind::Git { dir, git, iters } => {
                // One sample = `iters` rounds of `git status` + `git log`, each its own process.
                let mut total = Duration::ZERO;
                let mut cpu = Duration::ZERO;
                let mut last_note = None;
                for _ in 0..*iters {
                    for args in [&["status"][..], &["log", "--oneline", "-n", "20"][..]] {
                        let mut c = Command::new(git);
                        c.args(args).current_dir(dir);
                        ctx.env.apply(&mut c, variant);
                        git_env(&mut c);
                        let out = run(c, ctx.scratch, timeout)?;
                        total += out.wall;
                        cpu += out.cpu;
                        last_note = last_note.or_else(|| note(&out.stderr));
                    }
                }
                return Ok(Sample {
                    wall: total.as_secs_f64() * 1e3,
                    cpu: cpu.as_secs_f64() * 1e3,
                    first: None,
                    session_start: None,
                    note: last_note,
                });
            }
            Kind::Node { node, children } => {
                cmd = Command::new(node);
                cmd.arg(ctx.spawn_js).arg(children.to_string());
            }
        }
        if !matches!(self.kind, Kind::ChildPreload { .. }) {
            ctx.env.apply(&mut cmd, variant);
        }
        if let Some(cli) = &variant.session {
            return self.sample_in_session(cli, cmd, ctx, timeout);
        }
        let out = run(cmd, ctx.scratch, timeout)?;
        let note = note(&out.stderr);
        match &self.kind {
            Kind::WarmEacces { .. } if out.stderr.contains("denied") => Err(format!(
                "the preload refused the call itself, so this is not its allow path: {}",
                first_line(&out.stderr)
            )),
            Kind::Driver { .. } | Kind::WarmEacces { .. } | Kind::ChildPreload { .. } => {
                let ops = parse_ops(&out.stdout)?;
                if ops.is_empty() {
                    return Err("driver printed no timings".into());
                }
                // The first op is the first call in a fresh process (a guard's
                // cold path); the sample is taken over the warm ones.
                let warm = if ops.len() > 1 { &ops[1..] } else { &ops[..] };
                let wall: Vec<f64> = warm.iter().map(|o| o.0).collect();
                let cpu: Vec<f64> = warm.iter().map(|o| o.1).collect();
                Ok(Sample {
                    wall: crate::stats::median(&wall) / 1e3,
                    cpu: crate::stats::median(&cpu) / 1e3,
                    first: Some(ops[0].0 / 1e3),
                    session_start: None,
                    note,
                })
            }
            _ => Ok(Sample {
                wall: out.wall.as_secs_f64() * 1e3,
                cpu: out.cpu.as_secs_f64() * 1e3,
                first: None,
                session_start: None,
                note,
            }),
        }
    }
}

impl Workload {
    /// `cmd` started by `execguard run` in a sealed session, less the same session running
    /// `/bin/true`: what the workload costs inside a session, without the session's start.
    fn sample_in_session(
        &self,
        cli: &Path,
        cmd: Command,
        ctx: &Ctx<'_>,
        timeout: Duration,
    ) -> Result<Sample, String> {
        if !matches!(self.kind, Kind::Chain { .. } | Kind::Shell { .. }) {
            return Err("the session variant measures the exec chain and the shell loop only (--only exec_chain,shell_loop)".into());
        }
        let ws = ctx.scratch.join("session-ws");
        std::fs::create_dir_all(&ws).map_err(|e| format!("{}: {e}", ws.display()))?;
        let in_session = |program: &std::ffi::OsStr, args: Vec<&std::ffi::OsStr>| {
            let mut c = Command::new(cli);
            c.arg("run")
                .arg("--workspace")
                .arg(&ws)
                .arg("--")
                .arg(program)
                .args(args);
            // The variant's environment (Env::apply cleared the rest), without a preload.
            c.env_clear();
            for (k, v) in cmd.get_envs() {
                if let Some(v) = v {
                    c.env(k, v);
                }
            }
            c
        };
        let full = run(
            in_session(cmd.get_program(), cmd.get_args().collect()),
            ctx.scratch,
            timeout,
        )?;
        if full.stderr.contains("denied") {
            return Err(format!(
                "refused in the session: {}",
                first_line(&full.stderr)
            ));
        }
        let empty = run(
            in_session(std::ffi::OsStr::new("/bin/true"), vec![]),
            ctx.scratch,
            timeout,
        )?;
        Ok(Sample {
            wall: (full.wall.as_secs_f64() - empty.wall.as_secs_f64()) * 1e3,
            cpu: (full.cpu.as_secs_f64() - empty.cpu.as_secs_f64()) * 1e3,
            first: None,
            session_start: Some((
                empty.wall.as_secs_f64() * 1e3,
                empty.cpu.as_secs_f64() * 1e3,
            )),
            note: note(&full.stderr),
        })
    }
}

/// Sizes of the workloads: the full run and the `--quick` smoke.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub micro_samples: usize,
    pub micro_ops: usize,
    pub warm_ops: usize,
    pub chain_samples: usize,
    pub make_samples: usize,
    pub make_files: usize,
    pub git_samples: usize,
    pub git_iters: u32,
    pub node_samples: usize,
    pub node_children: u32,
}

impl Sizes {
    pub fn full() -> Self {
        Sizes {
            micro_samples: 15,
            micro_ops: 21,
            warm_ops: 201,
            chain_samples: 31,
            make_samples: 5,
            make_files: 100,
            git_samples: 9,
            git_iters: 10,
            node_samples: 9,
            node_children: 50,
        }
    }

    pub fn quick() -> Self {
        Sizes {
            micro_samples: 3,
            micro_ops: 6,
            warm_ops: 51,
            chain_samples: 3,
            make_samples: 2,
            make_files: 12,
            git_samples: 2,
            git_iters: 3,
            node_samples: 2,
            node_children: 10,
        }
    }

    /// Overrides every sample count (for `--samples N`).
    pub fn with_samples(mut self, n: usize) -> Self {
        let n = n.max(1);
        self.micro_samples = n;
        self.chain_samples = n;
        self.make_samples = n;
        self.git_samples = n;
        self.node_samples = n;
        self
    }
}

pub struct Plan<'a> {
    pub sizes: Sizes,
    pub hops: u32,
    pub loop_count: u32,
    pub eacces_target: Option<PathBuf>,
    pub make_dir: Option<&'a Path>,
    pub git: Result<(PathBuf, PathBuf), String>,
    pub node: Result<PathBuf, String>,
}

/// Every workload, in report order. Skipped ones are included with their reason.
pub fn all(plan: &Plan<'_>) -> Vec<Workload> {
    let s = plan.sizes;
    let mut w = Vec::new();
    for (id, mode) in DRIVER_MODES {
        let (title, description) = match *mode {
            "posix_spawn" | "posix_spawnp" => (
                format!("{mode} /bin/true"),
                format!(
                    "`{mode}` of /bin/true and waitpid, in a warm process; the child loads the preload too"
                ),
            ),
            "vfork_execve" => (
                "vfork + execve /bin/true".to_string(),
                "vfork, `execve` of /bin/true in the vfork child, waitpid".to_string(),
            ),
            m => (
                format!("fork + {m} /bin/true"),
                format!("fork, `{m}` of /bin/true in the child (a cold decision), waitpid"),
            ),
        };
        w.push(Workload {
            id: id.to_string(),
            title,
            unit: Unit::MicrosPerOp,
            description,
            execs_per_sample: Some(1.0),
            samples: s.micro_samples,
            kind: Kind::Driver {
                mode,
                ops: s.micro_ops,
            },
            skipped: None,
        });
    }
    let no_eacces_target = plan
        .eacces_target
        .is_none()
        .then(|| "no non-executable system ELF found; pass --eacces-target".to_string());
    w.push(Workload {
        id: "warm_call_eacces".into(),
        title: "warm execve, refused by the kernel".into(),
        unit: Unit::MicrosPerOp,
        description: format!(
            "`execve` of a non-executable system ELF ({}) in a warm process: the kernel answers EACCES, \
             so this is the preload's per-call cost with no process created (an estimate of a warm allow decision)",
            plan.eacces_target
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "none found".into())
        ),
        execs_per_sample: Some(1.0),
        samples: s.micro_samples,
        kind: Kind::WarmEacces {
            mode: "warm_eacces",
            ops: s.warm_ops,
            target: plan.eacces_target.clone().unwrap_or_default(),
        },
        skipped: no_eacces_target.clone(),
    });
    w.push(Workload {
        id: "vfork_eacces".into(),
        title: "vfork child's execve, refused by the kernel".into(),
        unit: Unit::MicrosPerOp,
        description:
            "vfork, then in the child `execve` of the same non-executable ELF (EACCES) and \
                      `_exit`: a decision in a fresh vfork child, what a shell's child pays before \
                      its exec, with no image started"
                .into(),
        execs_per_sample: Some(1.0),
        samples: s.micro_samples,
        kind: Kind::WarmEacces {
            mode: "vfork_eacces",
            ops: s.micro_ops,
            target: plan.eacces_target.clone().unwrap_or_default(),
        },
        skipped: no_eacces_target.clone(),
    });
    w.push(Workload {
        id: "process_start".into(),
        title: "load in a new process (posix_spawn /bin/true, child preloaded)".into(),
        unit: Unit::MicrosPerOp,
        description: "the driver preloads nothing and `posix_spawn`s /bin/true with the library \
                      in the child's LD_PRELOAD alone: what loading it costs a process that never \
                      execs"
            .into(),
        execs_per_sample: Some(1.0),
        samples: s.micro_samples,
        kind: Kind::ChildPreload { ops: s.micro_ops },
        skipped: None,
    });
    w.push(Workload {
        id: "exec_chain".into(),
        title: format!("exec chain, {} hops", plan.hops),
        unit: Unit::MillisPerRun,
        description: format!(
            "a small C program re-executes itself {} times with execve; each hop is a fresh process",
            plan.hops
        ),
        execs_per_sample: Some(plan.hops as f64),
        samples: s.chain_samples,
        kind: Kind::Chain { hops: plan.hops },
        skipped: None,
    });
    w.push(Workload {
        id: "shell_loop".into(),
        title: format!("sh loop, {} × /bin/true", plan.loop_count),
        unit: Unit::MillisPerRun,
        description: format!(
            "`sh -c 'i=0; while [ $i -lt {n} ]; do /bin/true || exit 1; i=$((i+1)); done'`",
            n = plan.loop_count
        ),
        execs_per_sample: Some(plan.loop_count as f64),
        samples: s.chain_samples,
        kind: Kind::Shell {
            count: plan.loop_count,
        },
        skipped: None,
    });
    w.push(Workload {
        id: "make_j2".into(),
        title: format!("make -j2, {} C files", s.make_files + 1),
        unit: Unit::MillisPerRun,
        description: format!(
            "`make -B -j2` of a generated C project ({} translation units and a link: cc, cc1, as, collect2, ld per file)",
            s.make_files + 1
        ),
        execs_per_sample: None,
        samples: s.make_samples,
        kind: Kind::Make {
            dir: plan.make_dir.map(Path::to_path_buf).unwrap_or_default(),
        },
        skipped: plan
            .make_dir
            .is_none()
            .then(|| "make or cc unavailable".to_string()),
    });
    let (git_kind, git_skip) = match &plan.git {
        Ok((git, dir)) => (
            Kind::Git {
                dir: dir.clone(),
                git: git.clone(),
                iters: s.git_iters,
            },
            None,
        ),
        Err(e) => (
            Kind::Git {
                dir: PathBuf::new(),
                git: PathBuf::new(),
                iters: 0,
            },
            Some(e.clone()),
        ),
    };
    w.push(Workload {
        id: "git_loop".into(),
        title: format!("git status + git log, {} rounds", s.git_iters),
        unit: Unit::MillisPerRun,
        description: format!(
            "{} rounds of `git status` and `git log --oneline -n 20` in a generated repo (git: {})",
            s.git_iters,
            match &plan.git {
                Ok((g, _)) => g.display().to_string(),
                Err(_) => "unavailable".into(),
            }
        ),
        execs_per_sample: Some(2.0 * s.git_iters as f64),
        samples: s.git_samples,
        kind: git_kind,
        skipped: git_skip,
    });
    let (node_kind, node_skip) = match &plan.node {
        Ok(node) => (
            Kind::Node {
                node: node.clone(),
                children: s.node_children,
            },
            None,
        ),
        Err(e) => (
            Kind::Node {
                node: PathBuf::new(),
                children: 0,
            },
            Some(e.clone()),
        ),
    };
    w.push(Workload {
        id: "node_spawn".into(),
        title: format!("node spawning {} children", s.node_children),
        unit: Unit::MillisPerRun,
        description: format!(
            "node starts and runs `child_process.spawnSync('/bin/true')` {} times",
            s.node_children
        ),
        execs_per_sample: Some(s.node_children as f64 + 1.0),
        samples: s.node_samples,
        kind: node_kind,
        skipped: node_skip,
    });
    w
}
