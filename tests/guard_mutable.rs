//! One "mutable" predicate (docs/write-set.md): a file is mutable when it lies in the write set
//! (outside the exec dirs), and, when the kernel does not enforce the partition (no seal), when
//! the session's user could write it or a directory above it by permission. Root bypasses
//! permissions, so for root only the write set counts. Targets and preloaded objects alike.

mod support;

use execguard_testkit::identities;
use std::os::unix::fs::PermissionsExt;
use support::*;

#[test]
fn files_the_user_can_write_outside_the_write_set_are_mutable_unsealed() {
    for who in identities() {
        let f = Fixture::new("mutable-perm");
        f.for_identity(&who);
        // A directory outside every root that the session's user owns (for root: root's own).
        let userbin = f.base.join("userbin");
        std::fs::create_dir_all(&userbin).unwrap();
        copy(&tools().argv, &userbin.join("tool"));
        copy(&tools().evil, &userbin.join("lib.so"));
        who.own(&userbin);
        // A directory the user owns with every write bit off: its owner may `chmod` it back
        // and replace the program at any time.
        let locked = f.base.join("locked");
        std::fs::create_dir_all(&locked).unwrap();
        copy(&tools().argv, &locked.join("tool"));
        who.own(&locked);
        for p in [locked.join("tool"), locked.clone()] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        // A world-writable program in a root-owned directory.
        let ww = f.sys.join("world-writable");
        copy(&tools().argv, &ww);
        std::fs::set_permissions(&ww, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut failed = vec![];
        for (what, program) in [
            ("user-owned dir", userbin.join("tool")),
            ("user-owned dir and file, mode 555", locked.join("tool")),
            ("0777 file", ww),
        ] {
            let mut cmd = f.guarded(&f.strict(), &tools().probe);
            cmd.arg("execve").arg(&program);
            let o = run(who.apply(&mut cmd));
            let refused = o.has_denial("mutable_native") && !o.ran();
            if refused == who.is_root() {
                failed.push(format!("{} {what}: refused={refused}\n{o}", who.label()));
            }
            // Sealed, the kernel enforces the partition: only the write set counts.
            let sealed = f.policy("strict", "seal = true\n");
            let mut cmd = f.guarded(&sealed, &tools().probe);
            cmd.arg("execve").arg(&program);
            let o = run(who.apply(&mut cmd));
            if !o.ran() {
                failed.push(format!(
                    "{} {what} (sealed policy): refused\n{o}",
                    who.label()
                ));
            }
        }
        // A preloaded object there counts the same.
        let mut cmd = f.guarded(&f.strict(), &tools().probe);
        cmd.arg("--setenv")
            .arg(format!("LD_PRELOAD={}", s(&userbin.join("lib.so"))))
            .arg("execve")
            .arg(&f.sys_argv);
        let o = run(who.apply(&mut cmd));
        if o.has_denial("preload_mutable") == who.is_root() {
            failed.push(format!(
                "{} preload from a user-owned dir\n{o}",
                who.label()
            ));
        }
        // A root-owned program in a root-owned directory runs for everyone.
        let mut cmd = f.guarded(&f.strict(), &tools().probe);
        cmd.arg("execve").arg(&f.sys_argv);
        let o = run(who.apply(&mut cmd));
        if !o.ran() || !o.denials().is_empty() {
            failed.push(format!("{} system program\n{o}", who.label()));
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}

/// `CAP_FOWNER` lets a process change the mode of any file, and `CAP_CHOWN` make any file its
/// own: neither makes permissions meaningless the way root's `CAP_DAC_OVERRIDE` does. A
/// non-root process holding one finds every file on a writable mount mutable, a system
/// program too; without them its own programs stay mutable and system programs run.
#[test]
fn a_non_root_process_that_can_take_any_file_finds_every_file_mutable_unsealed() {
    if !execguard_testkit::require_root("handing a non-root user CAP_FOWNER and CAP_CHOWN") {
        return;
    }
    let user = identities().into_iter().find(|w| !w.is_root()).unwrap();
    let f = Fixture::new("mutable-fowner");
    f.for_identity(&user);
    let userbin = f.base.join("userbin");
    std::fs::create_dir_all(&userbin).unwrap();
    copy(&tools().argv, &userbin.join("tool"));
    user.own(&userbin);
    let tool = userbin.join("tool");
    let mut failed = vec![];
    for (caps, program, refused) in [
        ("-all", &tool, true),
        ("+fowner", &tool, true),
        ("-all", &f.sys_argv, false),
        ("+fowner", &f.sys_argv, true),
        ("+chown", &f.sys_argv, true),
    ] {
        // The guard is loaded after setpriv (which holds root's capabilities until its exec):
        // the probe decides with the user's ids and the ambient capabilities alone.
        let mut cmd = f.plain("/usr/bin/setpriv");
        cmd.arg(format!("--reuid={}", user.uid()))
            .arg(format!("--regid={}", user.gid()))
            .arg("--clear-groups")
            .arg(format!("--inh-caps={caps}"))
            .arg(format!("--ambient-caps={caps}"))
            .arg("/usr/bin/env")
            .arg(format!("LD_PRELOAD={}", s(&tools().lib)))
            .arg(format!("EXECGUARD_POLICY={}", f.strict()))
            .arg(&tools().probe)
            .arg("execve")
            .arg(program);
        let o = run(&mut cmd);
        let named = o
            .stderr
            .contains(&format!("mutable_native: {}", s(program)));
        if refused != (!o.ran() && named) {
            failed.push(format!(
                "capabilities {caps}, {}: refused expected: {refused}\n{o}",
                s(program)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
