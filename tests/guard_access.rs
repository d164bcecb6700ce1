//! `access(X_OK)` answers as the exec will: under the W^X seal (and its `noexec` mounts) the
//! kernel refuses to execute any file of the write set, but the guard starts a mutable script
//! through its interpreter, so git must see a hook, and a shell a command, as executable.
//! Native code there, and a script without an execute bit, stay non-executable.

use execguard_testkit::identities;
use std::process::Command;

#[test]
fn x_ok_is_what_an_exec_would_do() {
    for who in identities() {
        let base = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "guard-access-{}-{}",
            who.uid(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        who.own(&base);
        let script = "printf '#!/bin/sh\\necho hi\\n' > s.sh && chmod 755 s.sh && \
                      cp s.sh plain.sh && chmod 644 plain.sh && cp /bin/true elf && chmod 755 elf && \
                      test -x s.sh && echo script=x; test -x plain.sh || echo plain=nox; \
                      test -x elf || echo elf=nox; \
                      python3 -c 'import os; print(\"py=\", os.access(\"s.sh\", os.X_OK), os.access(\"elf\", os.X_OK))'";
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_execguard"));
        cmd.arg("run")
            .arg("--workspace")
            .arg(&base)
            .args(["--", "/bin/sh", "-c", script])
            .current_dir(&base)
            .env("PATH", "/usr/bin:/bin");
        let out = who.apply(&mut cmd).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        for want in ["script=x", "plain=nox", "elf=nox", "py= True False"] {
            assert!(
                stdout.contains(want),
                "{}: missing {want}\nstdout: {stdout}\nstderr: {}",
                who.label(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
