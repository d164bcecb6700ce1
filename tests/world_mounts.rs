//! A mount the host makes while a session runs never comes into it (docs/limits.md): the
//! session's mount namespace is private, so neither a mount in the workspace (which would be
//! writable and executable there, without the session's `noexec`) nor one outside the write
//! set (writable, outside the read-only view) appears inside. As root and as a non-root user.
//!
//! The host's own mounts here propagate nowhere (none is shared), so the test makes the host's
//! side a world where they do: a mount namespace of its own with a shared tmpfs holding the
//! workspace, in which the mounts are made after the session started.

mod support;

use execguard_testkit::identities;
use std::process::Command;
use support::{session_fixture as fixture, shown, text, tools};

#[test]
fn a_mount_the_host_makes_during_the_session_does_not_come_in() {
    if !execguard_testkit::require_root("mounts made during a session (makes a shared mount)") {
        return;
    }
    for who in identities() {
        let f = fixture("world-mounts", &who);
        // The session waits until both mounts exist outside (`ready`), then tries to write and
        // run an ELF in each place and to make the outside one setuid.
        let inside = "while [ ! -e ../ready ]; do sleep 0.05; done; \
             grep -c egw-late /proc/self/mountinfo || true; \
             cp /bin/true sub/t 2>/dev/null && echo wrote-in-ws; \
             ./sub/t 2>/dev/null && echo ran-in-ws; \
             python3 -c \"import mmap,os; f=os.open('sub/t',os.O_RDONLY); mmap.mmap(f,4096,prot=mmap.PROT_READ|mmap.PROT_EXEC); print('mapped-exec-in-ws')\" 2>/dev/null; \
             touch ../out/x 2>/dev/null && echo wrote-out; \
             chmod 4755 ../out/operator 2>/dev/null && echo chmod-out; true";
        let (uid, gid) = (who.uid(), who.gid());
        let eg_as = format!(
            "setpriv --reuid {uid} --regid {gid} --clear-groups env -i PATH={} HOME={} USER=u LANG=C",
            f.path_var().to_string_lossy(),
            f.home().display()
        );
        let outer = format!(
            "set -e; mount -t tmpfs egw-base {base}; mount --make-shared {base}; \
             mkdir -p {base}/ws/sub {base}/out; chown -R {uid}:{gid} {base}/ws; \
             cd {base}/ws; \
             ( {eg_as} {eg} run --workspace {base}/ws --audit {log} -- sh -c \"$1\" ) & \
             sleep 1; mount -t tmpfs egw-late {base}/ws/sub; mount -t tmpfs egw-late {base}/out; \
             cp /bin/true {base}/out/operator; touch {base}/ready; wait $!; \
             echo \"after sub:$(ls -A {base}/ws/sub) out:$(ls -A {base}/out) mode:$(stat -c %a {base}/out/operator)\"",
            base = f.base.join("shared").display(),
            eg = tools().cli.display(),
            log = f.audit.display(),
        );
        std::fs::create_dir_all(f.base.join("shared")).unwrap();
        let o = Command::new("unshare")
            .args(["-m", "sh", "-c", &outer, "sh", inside])
            .output()
            .unwrap();
        let out = text(&o.stdout);
        let label = who.label();
        assert!(o.status.success(), "{label}: {}", shown(&o));
        assert!(out.contains("after"), "{label}: {}", shown(&o));
        // Neither mount is in the session's table; what it wrote went below them, where the
        // host's own later commands do not see it (the mounts cover it).
        assert!(
            out.starts_with("0\n"),
            "{label}: a host mount came in: {}",
            shown(&o)
        );
        for came_in in ["ran-in-ws", "mapped-exec-in-ws", "wrote-out", "chmod-out"] {
            assert!(!out.contains(came_in), "{label}: {came_in}: {}", shown(&o));
        }
        // The host's side is as the operator left it.
        assert!(
            out.contains("after sub: out:operator mode:755"),
            "{label}: {}",
            shown(&o)
        );
    }
}
