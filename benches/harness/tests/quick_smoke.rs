//! Functional smoke test: runs the harness with `--quick` into a temporary
//! directory, with an empty C library standing in for the guard and for a
//! comparison library, and checks that the report, the chart and the JSON
//! exist and hold a row for every workload. No timing is asserted.

use std::path::{Path, PathBuf};
use std::process::Command;

const WORKLOADS: &[&str] = &[
    "fork_execve",
    "fork_execv",
    "fork_execvp",
    "fork_execvpe",
    "fork_execl",
    "fork_execle",
    "fork_execlp",
    "fork_fexecve",
    "fork_execveat",
    "vfork_execve",
    "posix_spawn",
    "posix_spawnp",
    "warm_call_eacces",
    "vfork_eacces",
    "process_start",
    "exec_chain",
    "shell_loop",
    "make_j2",
    "git_loop",
    "node_spawn",
];

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir() -> TempDir {
    let dir = std::env::temp_dir().join(format!(
        "execguard-bench-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    TempDir(dir)
}

/// The floor library, built the way the harness builds it.
fn floor_lib(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../floor/empty.c");
    let out = dir.join("libstand_in.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed to build the floor library");
    out
}

#[test]
fn quick_run_writes_report_chart_and_json_with_every_workload() {
    let tmp = temp_dir();
    let out = tmp.0.join("results");
    let lib = floor_lib(&tmp.0);
    let output = Command::new(env!("CARGO_BIN_EXE_execguard-bench"))
        .arg("--quick")
        .arg("--out")
        .arg(&out)
        .arg("--guard")
        .arg(&lib)
        .arg("--compare")
        .arg(&lib)
        .args(["--env", "EXECGUARD_BENCH_TEST=1"])
        .output()
        .expect("run the harness");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "harness failed:\n{stderr}");

    let report = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md");
    let json_text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let json: serde_json::Value = serde_json::from_str(&json_text).expect("valid JSON");
    let png = std::fs::read(out.join("chart.png")).expect("chart.png");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1000,
        "chart.png is not a PNG"
    );

    for header in [
        "## Summary",
        "## Libraries",
        "## Memory per process",
        "## Instruction counts",
        "## Budget",
        "- command: `",
        "- machine: ",
    ] {
        assert!(report.contains(header), "REPORT.md lacks {header:?}");
    }
    // The commit the run measured, in full, and whether the tree held uncommitted changes.
    let commit = json["meta"]["git_commit"]
        .as_str()
        .expect("meta.git_commit");
    assert!(
        commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "meta.git_commit is not a full commit id: {commit:?}"
    );
    assert!(json["meta"]["git_dirty"].is_boolean(), "meta.git_dirty");
    assert!(
        report.contains(&format!("- repository commit: `{commit}` (")),
        "REPORT.md does not name the commit and the tree's state"
    );
    let workloads = json["workloads"].as_array().expect("workloads array");
    for id in WORKLOADS {
        assert!(
            report.contains(&format!("| `{id}` ")),
            "REPORT.md has no summary row for {id}"
        );
        let w = workloads
            .iter()
            .find(|w| w["id"] == *id)
            .unwrap_or_else(|| panic!("results.json has no workload {id}"));
        if w["skipped"].is_null() {
            let variants: Vec<&str> = w["results"]
                .as_array()
                .expect("results")
                .iter()
                .map(|r| r["variant"].as_str().unwrap_or(""))
                .collect();
            for v in ["plain", "floor-c", "guard", "compare"] {
                assert!(variants.contains(&v), "{id} has no {v} result");
            }
            for r in w["results"].as_array().unwrap() {
                assert!(
                    r["failed"].is_null(),
                    "{id}/{} failed: {}",
                    r["variant"],
                    r["failed"]
                );
            }
        }
    }
    let libs = json["libraries"].as_array().expect("libraries");
    assert!(libs.iter().any(|l| l["variant"] == "guard"));
    assert_eq!(json["meta"]["quick"], true);
    let keys: Vec<&str> = json["meta"]["env_keys"]
        .as_array()
        .expect("env_keys")
        .iter()
        .filter_map(|k| k.as_str())
        .collect();
    assert!(keys.contains(&"EXECGUARD_BENCH_TEST") && keys.contains(&"PATH"));
    // Each process workload against plain and against the floor, and the warm decision.
    let budget = json["budget"].as_array().expect("budget");
    assert_eq!(budget.len(), 5);
    for (check, limit) in [
        ("exec chain", "≤ 1.08x plain"),
        ("exec chain", "≤ 1.04x the floor"),
        ("sh loop", "≤ 1.05x plain"),
        ("sh loop", "≤ 1.04x the floor"),
        ("warm allow decision", "≤ 5 µs"),
    ] {
        let found = budget.iter().any(|b| {
            b["check"].as_str().is_some_and(|c| c.starts_with(check)) && b["limit"] == limit
        });
        assert!(found, "no budget row {check} {limit}: {budget:?}");
    }

    // The stored results alone re-render the same report.
    let again = tmp.0.join("rendered");
    let status = Command::new(env!("CARGO_BIN_EXE_execguard-bench"))
        .arg("--render")
        .arg(out.join("results.json"))
        .arg("--out")
        .arg(&again)
        .status()
        .expect("run the harness with --render");
    assert!(status.success(), "--render failed");
    let rendered = std::fs::read_to_string(again.join("REPORT.md")).expect("rendered REPORT.md");
    assert_eq!(rendered, report, "--render changed the report");
    assert!(again.join("chart.png").is_file());
}
