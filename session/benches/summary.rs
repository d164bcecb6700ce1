//! The end-of-session summary's cost (issue 30's budget: at most 1 ms of wall time on a
//! session with 100 refusals): reading the session's records back from the log, counting
//! them and formatting the lines. Run: `cargo bench -p execguard-session --bench summary`.

use criterion::{criterion_group, criterion_main, Criterion};
use execguard_session::summary::{Mark, Summary};
use std::io::Write as _;

/// A log with 1000 records of earlier sessions, then this session's: 100 refusals over 5
/// reasons among 400 allowed execs (an `audit_allow` session), paths of a cargo build.
fn log_with_a_session(dir: &std::path::Path) -> (std::path::PathBuf, Mark) {
    let log = dir.join("audit.jsonl");
    let record = |decision: &str, reason: &str, i: usize| {
        let pid = 4000 + i % 50;
        format!(
            "{{\"time\":1796300000.{i:09},\"pid\":{pid},\"uid\":1000,\"tool\":\"guard\",\"entry\":\"posix_spawn\",\"decision\":\"{decision}\",\"reason\":\"{reason}\",\"profile\":\"strict\",\"path\":\"/home/dev/src/app/target/debug/build/app-{i:016x}/build-script-build\",\"target\":\"/home/dev/src/app/target/debug/build/app-{i:016x}/build-script-build\"}}\n"
        )
    };
    let mut f = std::fs::File::create(&log).unwrap();
    for i in 0..1000 {
        f.write_all(record("deny", "mutable_native", i).as_bytes())
            .unwrap();
    }
    let mark = Mark::now(&log);
    let reasons = [
        "mutable_native",
        "anonymous_native",
        "preload_mutable",
        "library_path_mutable",
        "shebang_ambiguous",
    ];
    for i in 0..500 {
        let line = if i % 5 == 0 {
            record("deny", reasons[(i / 5) % reasons.len()], i)
        } else {
            record("allow", "allowed", i)
        };
        f.write_all(line.as_bytes()).unwrap();
    }
    (log, mark)
}

fn summary(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("eg-bench-summary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (log, mark) = log_with_a_session(&dir);
    let s = Summary::since(&mark);
    assert_eq!(s.rows.iter().map(|r| r.count).sum::<usize>(), 100);
    c.bench_function("summary of a session with 100 refusals", |b| {
        b.iter(|| {
            let s = Summary::since(&mark);
            std::hint::black_box(s.lines(&log))
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, summary);
criterion_main!(benches);
