//! A record is in the audit log whole or not at all (issue 13 item 2): when the disk is full
//! or a file size limit cuts a write short, the guard takes the fragment back and refuses the
//! exec with `audit_unwritable`; the log never holds a piece that would glue itself to the
//! next record, and `execguard audit` reads it cleanly afterwards. As root and as a non-root
//! user.

mod support;

use execguard_testkit::{identities, require_root, Identity};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// One refused exec of the workspace payload, as `who`, logging to `log`, with `limit` as
/// the file size limit (`RLIMIT_FSIZE`) when given.
fn refused_once(f: &Fixture, who: &Identity, log: &Path, limit: Option<u64>) -> Outcome {
    let policy = f.strict().replace(s(&f.audit), s(log));
    let mut cmd = f.guarded(&policy, &tools().probe);
    cmd.args(["execve", s(&f.payload)]);
    who.apply(&mut cmd);
    if let Some(limit) = limit {
        // SAFETY: the hook runs in the forked child before exec and only makes two
        // async-signal-safe calls (signal, setrlimit) on its own process.
        unsafe {
            cmd.pre_exec(move || {
                // Past the limit the kernel sends SIGXFSZ; ignored, the write is cut short.
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: libc::RLIM_INFINITY,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    run(&mut cmd)
}

/// The log holds only whole records, each ending in a newline, and `execguard audit` agrees.
#[track_caller]
fn assert_whole(log: &Path, label: &str) -> usize {
    let raw = std::fs::read(log).unwrap();
    assert!(
        raw.is_empty() || raw.ends_with(b"\n"),
        "{label}: the log ends in a fragment: {:?}",
        String::from_utf8_lossy(&raw[raw.len().saturating_sub(120)..])
    );
    let n = read_audit(log).len(); // panics on a line that is not one record
    let out = run(Command::new(&tools().cli).arg("audit").arg(log));
    assert_eq!(out.code, Some(0), "{label}\n{out}");
    assert!(!out.stderr.contains("audit_fragment"), "{label}\n{out}");
    n
}

#[track_caller]
fn assert_refused_unrecorded(o: &Outcome, label: &str) {
    o.assert_denied("mutable_native");
    o.assert_exec_failed(EACCES);
    assert!(o.has_denial("audit_unwritable"), "{label}\n{o}");
}

#[test]
fn a_write_cut_short_by_the_file_size_limit_is_taken_back() {
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("audit-fsize");
        let dir = execguard_testkit::dir_for(&who, &f.base, "logdir");
        let log = dir.join("audit.jsonl");
        let o = refused_once(&f, &who, &log, None);
        o.assert_denied("mutable_native");
        assert!(!o.has_denial("audit_unwritable"), "{label}\n{o}");
        let size = std::fs::metadata(&log).unwrap().len();
        assert_eq!(assert_whole(&log, &label), 1);
        // The next record would end far past the limit: cut short, taken back, refused.
        for _ in 0..3 {
            let o = refused_once(&f, &who, &log, Some(size + 40));
            assert_refused_unrecorded(&o, &label);
            assert_eq!(std::fs::metadata(&log).unwrap().len(), size, "{label}");
        }
        // Room again: the next record follows the first, whole.
        let o = refused_once(&f, &who, &log, None);
        assert!(!o.has_denial("audit_unwritable"), "{label}\n{o}");
        assert_eq!(assert_whole(&log, &label), 2);
    }
}

/// A 64 KiB tmpfs, mounted for the test and unmounted after.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: PathBuf) -> SmallDisk {
        std::fs::create_dir_all(&at).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs"])
            .arg(&at)
            .status()
            .expect("mount (util-linux)");
        assert!(st.success(), "mount -t tmpfs failed");
        SmallDisk(at)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Fills the file system that holds `dir` until `ENOSPC`.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let filler = dir.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let block = [0u8; 1024];
    while file.write(&block).map(|n| n > 0).unwrap_or(false) {}
    filler
}

#[test]
fn a_full_disk_never_leaves_a_fragment() {
    if !require_root("mounting a 64 KiB tmpfs") {
        return;
    }
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("audit-full");
        let disk = SmallDisk::mount(f.base.join("disk"));
        who.own(&disk.0);
        let log = disk.0.join("audit.jsonl");
        // One record first, so the log owns a partly used page; then no space is left.
        refused_once(&f, &who, &log, None).assert_denied("mutable_native");
        let filler = fill(&disk.0);
        let (mut kept, mut refused) = (1, 0);
        for _ in 0..40 {
            let o = refused_once(&f, &who, &log, None);
            o.assert_denied("mutable_native");
            o.assert_exec_failed(EACCES);
            if o.has_denial("audit_unwritable") {
                refused += 1;
            } else {
                kept += 1;
            }
            assert_eq!(assert_whole(&log, &label), kept, "{label}");
        }
        assert!(refused > 0, "{label}: the disk never filled up");
        std::fs::remove_file(&filler).unwrap();
        let o = refused_once(&f, &who, &log, None);
        assert!(!o.has_denial("audit_unwritable"), "{label}\n{o}");
        assert_eq!(assert_whole(&log, &label), kept + 1, "{label}");
        drop(disk);
    }
}

/// What a crash (or a writer from before whole-or-nothing) leaves: a torn last record, or a
/// fragment the next record was glued to. `execguard audit` counts the records around it,
/// says how many fragments it skipped, and exits 0; a line that is no record at all is 1.
#[test]
fn the_reader_survives_fragments() {
    let f = Fixture::new("audit-fragments");
    let p = f.strict();
    for _ in 0..3 {
        f.probe(&p, ["execve", "./payload"])
            .assert_denied("mutable_native");
    }
    let whole = std::fs::read(&f.audit).unwrap();
    let first_end = whole.iter().position(|&c| c == b'\n').unwrap() + 1;
    let record = &whole[..first_end];
    let summarise = |log: &Path| run(Command::new(&tools().cli).arg("audit").arg(log));
    // A fragment glued to the next record, and a torn tail.
    let glued = f.base.join("glued.jsonl");
    let mut text = record.to_vec();
    text.extend_from_slice(&record[..record.len() / 2]);
    text.extend_from_slice(&whole);
    text.extend_from_slice(&record[..30]);
    std::fs::write(&glued, &text).unwrap();
    let o = summarise(&glued);
    assert_eq!(o.code, Some(0), "{o}");
    assert!(o.stdout.contains(": 4 records\n"), "{o}");
    assert!(
        o.stderr
            .contains("audit_fragment: 2 records were cut short"),
        "{o}"
    );
    // Not an audit log at all.
    let foreign = f.base.join("foreign.jsonl");
    std::fs::write(&foreign, [&whole[..], b"hello\n"].concat()).unwrap();
    let o = summarise(&foreign);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(o.stdout.contains(": 3 records\n"), "{o}");
    assert!(o.stderr.contains("audit_foreign: 1 lines"), "{o}");
}

/// The concurrent-audit storm on a disk that fills up under it: 6 processes of 4 threads
/// refused 40 times each. Every exec is refused, every record that made it is whole (a writer
/// whose write was cut short takes its bytes back before anyone else can append: the disk is
/// full until it does).
#[test]
fn a_storm_on_a_full_disk_leaves_only_whole_records() {
    if !require_root("mounting a 64 KiB tmpfs") {
        return;
    }
    for who in identities() {
        let label = who.label();
        let f = Fixture::new("audit-full-storm");
        let disk = SmallDisk::mount(f.base.join("disk"));
        who.own(&disk.0);
        let log = disk.0.join("audit.jsonl");
        let policy = f.strict().replace(s(&f.audit), s(&log));
        let (procs, threads, iterations) = (6, 4, 40);
        let children: Vec<_> = (0..procs)
            .map(|_| {
                let mut cmd = f.guarded(&policy, &tools().probe);
                cmd.args([
                    "--threads",
                    &threads.to_string(),
                    "--iterations",
                    &iterations.to_string(),
                    "storm",
                    s(&f.payload),
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null());
                who.apply(&mut cmd);
                cmd.spawn().unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains(&format!("eacces={} other=0", threads * iterations)),
                "{label}: {text}"
            );
        }
        let kept = assert_whole(&log, &label);
        assert!(kept > 0, "{label}");
        assert!(
            kept < procs * threads * iterations,
            "{label}: the disk never filled up"
        );
        drop(disk);
    }
}
