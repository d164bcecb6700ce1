//! A full disk under the writer (the file size limit of its process stands in for it): the
//! record that does not fit is not kept and its sender is told, no part of it stays in the
//! log, and once there is room again a notice says how many were lost. Its own test binary:
//! the limit holds for the whole process.

use execguard_audit::key::StateDir;
use execguard_audit::writer::{Session, Writer};
use std::os::unix::ffi::OsStrExt;

const DENY: &[u8] = b"{\"time\":1.0,\"pid\":1,\"uid\":0,\"tool\":\"guard\",\"entry\":\"execve\",\"decision\":\"deny\",\"reason\":\"mutable_native\",\"path\":\"/w/a\",\"target\":\"./a\"}\n";

fn set_file_limit(bytes: u64) {
    let lim = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: `lim` is a valid rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) }, 0);
}

#[test]
fn a_full_disk_loses_no_record_silently_and_leaves_no_fragment() {
    // SAFETY: ignoring SIGXFSZ: a write past the limit then fails with EFBIG instead.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open(&dir.path().join("state")).unwrap();
    let writer = Writer::start(
        &state,
        Session {
            tool: "run",
            workspace: "/w".into(),
            profile: "strict".into(),
            assurance: "strict".into(),
        },
    )
    .unwrap();
    let socket = writer.socket().as_os_str().as_bytes().to_vec();
    let serving = writer.serve(None).unwrap();
    let before = std::fs::read(state.log()).unwrap();
    set_file_limit(before.len() as u64 + 40);
    assert!(execguard_os::audit::send_record(&socket, DENY).is_err());
    assert!(execguard_os::audit::send_record(&socket, DENY).is_err());
    assert_eq!(
        std::fs::read(state.log()).unwrap(),
        before,
        "no fragment left"
    );
    set_file_limit(libc::RLIM_INFINITY);
    execguard_os::audit::send_record(&socket, DENY).unwrap();
    serving.finish(None).unwrap();
    let text = std::fs::read_to_string(state.log()).unwrap();
    let lost: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["reason"] == "audit_lost")
        .collect();
    assert_eq!(lost.len(), 1, "{text}");
    assert_eq!(lost[0]["lost"], 2);
    let key = state.verifying_key().unwrap().unwrap();
    execguard_audit::verify::verify(text.as_bytes(), Some(&key)).unwrap();
}
