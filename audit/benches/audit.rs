//! What the kept audit costs: a record delivered the old way (appended to the log by the
//! process itself) and the new way (sent to the writer, which stamps, chains and appends it,
//! and answered), and verifying 10,000 kept records.
//!
//! `nice -n 10 cargo bench -p execguard-audit --bench audit`

use criterion::{criterion_group, criterion_main, Criterion};
use execguard_audit::key::StateDir;
use execguard_audit::line::{self, Body, Link, Stamp};
use execguard_audit::writer::{Session, Writer};
use std::os::unix::ffi::OsStrExt;

const DENY: &[u8] = b"{\"time\":1700000000.000000005,\"pid\":42,\"uid\":1000,\"tool\":\"guard\",\"entry\":\"execve\",\"decision\":\"deny\",\"reason\":\"mutable_native\",\"profile\":\"strict\",\"path\":\"/home/u/project/target/debug/build/foo-1234/build-script-build\",\"target\":\"./target/debug/build/foo-1234/build-script-build\"}\n";

fn session() -> Session {
    Session {
        tool: "run",
        workspace: "/home/u/project".into(),
        profile: "strict".into(),
        assurance: "strict".into(),
    }
}

fn delivery(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("record");
    let old_log = dir.path().join("old.jsonl");
    let old = old_log.as_os_str().as_bytes().to_vec();
    g.bench_function("appended_by_the_process", |b| {
        b.iter(|| execguard_os::audit::append_record(&old, DENY).unwrap())
    });
    let state = StateDir::open(&dir.path().join("state")).unwrap();
    let writer = Writer::start(&state, session()).unwrap();
    let socket = writer.socket().as_os_str().as_bytes().to_vec();
    let serving = writer.serve(None).unwrap();
    // The sender's time only: between two records the writer catches up (untimed), as it
    // does between two refused execs of a session; a writer that fell behind would measure
    // its own throughput instead.
    let log = state.log();
    let timed = |answer: execguard_os::audit::Answer| {
        let (socket, log) = (socket.clone(), log.clone());
        move |iters: u64| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let size = std::fs::metadata(&log).unwrap().len();
                let t = std::time::Instant::now();
                execguard_os::audit::send_record_as(&socket, DENY, answer).unwrap();
                total += t.elapsed();
                while std::fs::metadata(&log).unwrap().len() == size {
                    std::thread::yield_now();
                }
            }
            total
        }
    };
    g.bench_function("sent_to_the_writer_and_kept", |b| {
        b.iter_custom(timed(execguard_os::audit::Answer::Wait))
    });
    g.bench_function("sent_to_the_writer_and_delivered", |b| {
        b.iter_custom(timed(execguard_os::audit::Answer::Delivered))
    });
    g.finish();
    serving.finish(None).unwrap();
    // The sender's system calls alone (socket, timeouts, connect, send, close) against a
    // listener nobody polls: what the exec path pays when the writer runs on another core.
    let bare = dir.path().join("bare.sock");
    let listener = std::os::unix::net::UnixListener::bind(&bare).unwrap();
    drop(listener);
    let _ = std::fs::remove_file(&bare);
    // SAFETY: raw socket calls on descriptors this function owns; the address is valid.
    let lfd = unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0);
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (d, s) in addr.sun_path.iter_mut().zip(bare.as_os_str().as_bytes()) {
            *d = *s as libc::c_char;
        }
        assert_eq!(
            libc::bind(
                fd,
                &addr as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_un>() as u32
            ),
            0
        );
        assert_eq!(libc::listen(fd, 4096), 0);
        fd
    };
    let bare_name = bare.as_os_str().as_bytes().to_vec();
    let mut g = c.benchmark_group("record");
    g.bench_function("sender_system_calls_only", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let t = std::time::Instant::now();
                execguard_os::audit::send_record_as(
                    &bare_name,
                    DENY,
                    execguard_os::audit::Answer::Delivered,
                )
                .unwrap();
                total += t.elapsed();
                // SAFETY: accepting and closing one queued connection on our listener.
                unsafe {
                    libc::close(libc::accept(
                        lfd,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    ))
                };
            }
            total
        })
    });
    g.finish();
}

fn kept_log(n: usize) -> Vec<u8> {
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let start = Body::writer(
        "run",
        line::SESSION_START,
        &[
            ("workspace", "/w".into()),
            ("assurance", "strict".into()),
            (
                "key",
                execguard_audit::hex(key.verifying_key().as_bytes()).into(),
            ),
        ],
    );
    let end = Body::writer(
        "run",
        line::SESSION_END,
        &[
            ("workspace", "/w".into()),
            ("assurance", "strict".into()),
            (
                "key",
                execguard_audit::hex(key.verifying_key().as_bytes()).into(),
            ),
        ],
    );
    let deny = Body::from_sender(DENY).unwrap();
    let mut prev = execguard_audit::GENESIS;
    let mut out = Vec::new();
    for seq in 0..n as u64 {
        let body = match seq {
            0 => &start,
            s if s == n as u64 - 1 => &end,
            _ => &deny,
        };
        let mut l = line::build(
            &Stamp::now(7, 1000),
            &Link {
                session: "0123456789abcdef",
                seq,
                prev: &prev,
            },
            body,
        );
        if seq == n as u64 - 1 {
            l = line::sign(&l, &key);
        }
        prev = execguard_audit::digest(l.as_bytes());
        out.extend_from_slice(l.as_bytes());
        out.push(b'\n');
    }
    out
}

fn verification(c: &mut Criterion) {
    let log = kept_log(10_000);
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]).verifying_key();
    assert!(execguard_audit::verify::verify(&log, Some(&key)).is_ok());
    let mut g = c.benchmark_group("verify");
    g.sample_size(20);
    g.bench_function("10000_records", |b| {
        b.iter(|| execguard_audit::verify::verify(&log, Some(&key)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, delivery, verification);

fn pieces(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut log = execguard_audit::log::KeptLog::open(&dir.path().join("k.jsonl")).unwrap();
    let body = Body::from_sender(DENY).unwrap();
    let mut g = c.benchmark_group("writer_pieces");
    g.bench_function("parse_body", |b| {
        b.iter(|| Body::from_sender(DENY).unwrap())
    });
    g.bench_function("chain_and_append", |b| {
        b.iter(|| {
            log.append(|prev| {
                line::build(
                    &Stamp::now(1, 1),
                    &Link {
                        session: "s",
                        seq: 1,
                        prev,
                    },
                    &body,
                )
            })
            .unwrap()
        })
    });
    g.finish();
}
criterion_group!(writer_pieces, pieces);
criterion_main!(benches, writer_pieces);
