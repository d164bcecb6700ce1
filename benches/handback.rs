//! Criterion bench of the repository hand-back (docs/handback.md): a workspace repository of
//! 10,000 files with 3 nested repositories, recorded once; measured: the end-of-session hand-back
//! of a session that changed nothing (every control file read and compared, every directory
//! walked), and the record at the start. Budget: the hand-back at most 50 ms.
//!
//! Run: `cargo bench --bench handback` (figures in docs/handback.md).

use criterion::{criterion_group, criterion_main, Criterion};
use execguard_wrappers::takeover::{hand_back, Snapshot};
use std::path::Path;
use std::process::Command;

fn git_init(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn handback(c: &mut Criterion) {
    let scratch = tempfile::tempdir().unwrap();
    let ws = scratch.path().canonicalize().unwrap().join("ws");
    git_init(&ws);
    // 10,000 files: 100 directories of 100, a third of them Python sources beside caches
    // git would not show.
    for d in 0..100 {
        let dir = ws.join(format!("src/d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:03}.py")), b"X = 1\n").unwrap();
        }
    }
    for nested in ["vendor/a", "vendor/b", "lib/deep/c"] {
        git_init(&ws.join(nested));
    }
    let record = Snapshot::record_workspace(&ws, None).unwrap();
    assert_eq!(record.len(), 4);
    c.bench_function("hand-back: 10,000 files, 3 nested repositories", |b| {
        b.iter(|| {
            let q = hand_back(&record, &ws, None);
            assert!(q.is_empty(), "{q:?}");
        })
    });
    drop(record);
    c.bench_function("record: 10,000 files, 3 nested repositories", |b| {
        b.iter(|| Snapshot::record_workspace(&ws, None).unwrap())
    });
}

criterion_group!(benches, handback);
criterion_main!(benches);
