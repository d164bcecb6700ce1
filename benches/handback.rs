//! Criterion bench of the repository hand-back (docs/handback.md): a workspace repository of
//! 10,000 files with 3 nested repositories, recorded once; measured: the end-of-session hand-back
//! of a session that changed nothing (every control file read and compared, every directory
//! walked), and the record at the start. Budget: the hand-back at most 50 ms. And the end's
//! sweep (`privileges::Sweep`, which disarms native files, `native_left`) of the same
//! workspace: after a session that changed nothing, and after one that wrote every file, 100
//! of them ELF programs (`target/`) and 100 shared objects (a venv's `.so`).
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

fn native_sweep(c: &mut Criterion) {
    use std::os::unix::fs::PermissionsExt;
    let scratch = tempfile::tempdir().unwrap();
    let ws = scratch.path().canonicalize().unwrap().join("ws");
    for d in 0..100 {
        let dir = ws.join(format!("src/d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:03}.py")), b"X = 1\n").unwrap();
        }
    }
    let elf = std::fs::read("/bin/true").unwrap();
    let native: Vec<std::path::PathBuf> = (0..200)
        .map(|i| {
            let p = if i < 100 {
                ws.join(format!("src/d{:03}/app{i}", i % 100))
            } else {
                ws.join(format!(
                    "src/d{:03}/m{i}.cpython-311-x86_64-linux-gnu.so",
                    i % 100
                ))
            };
            std::fs::write(&p, &elf).unwrap();
            p
        })
        .collect();
    let rearm = || {
        let _ = std::fs::remove_dir_all(ws.join(".execguard-quarantine"));
        for p in &native {
            let mut off = p.as_os_str().to_os_string();
            off.push(".execguard-off");
            let _ = std::fs::rename(&off, p);
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    };
    let sweep = |since: i64| execguard_session::privileges::Sweep {
        since,
        started: (since, 0),
        ..execguard_session::privileges::Sweep::starting_now(
            (vec![ws.clone()], vec![]),
            Some(ws.clone()),
            None,
        )
    };
    let unchanged = sweep(i64::MAX);
    c.bench_function("sweep: 10,000 files, none changed", |b| {
        b.iter(|| assert!(unchanged.run().disarmed.is_empty()))
    });
    let all = sweep(0);
    c.bench_function("sweep: 10,000 files written, 200 native disarmed", |b| {
        b.iter_batched(
            rearm,
            |()| assert_eq!(all.run().disarmed.len(), 200),
            criterion::BatchSize::PerIteration,
        )
    });
}

criterion_group!(benches, handback, native_sweep);
criterion_main!(benches);
