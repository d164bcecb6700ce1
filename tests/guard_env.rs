//! Loader and libc environment beyond `LD_*`: every variable glibc treats as unsafe for setuid
//! programs is classified, and those that make glibc map code from a directory they name
//! (`GCONV_PATH`, `LD_ORIGIN_PATH`, `LD_LIBRARY_PATH`) are refused at exec when they name a
//! mutable place, as root and as a non-root user.

mod support;

use execguard_policy::env::UNSECURE_ENVVARS;
use execguard_testkit::{identities, Identity};
use std::path::Path;
use support::*;

/// The installed loader's own `UNSECURE_ENVVARS`: one NUL-separated string inside ld.so,
/// sorted, starting with these three (ld.so holds other lists that also start with
/// `GCONV_PATH`, such as the variables `--list-diagnostics` prints).
fn loader_unsecure_envvars() -> Vec<String> {
    let bytes = std::fs::read(LOADER).unwrap();
    let head = b"GCONV_PATH\0GETCONF_DIR\0HOSTALIASES\0";
    let start = bytes
        .windows(head.len())
        .position(|w| w == head)
        .expect("no UNSECURE_ENVVARS list in the loader");
    let end = start
        + bytes[start..]
            .windows(2)
            .position(|w| w == b"\0\0")
            .unwrap();
    bytes[start..end]
        .split(|&c| c == 0)
        .map(|n| String::from_utf8(n.to_vec()).unwrap())
        .collect()
}

#[test]
fn every_variable_glibc_drops_for_setuid_programs_is_classified() {
    let installed = loader_unsecure_envvars();
    assert!(installed.len() > 15, "{installed:?}");
    let ours: Vec<String> = UNSECURE_ENVVARS
        .iter()
        .map(|(n, _)| String::from_utf8(n.to_vec()).unwrap())
        .collect();
    let missing: Vec<_> = installed.iter().filter(|n| !ours.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "not classified by the engine: {missing:?}"
    );
    let extra: Vec<_> = ours.iter().filter(|n| !installed.contains(n)).collect();
    assert!(
        extra.is_empty(),
        "not in this glibc's list (update the table): {extra:?}"
    );
}

/// A gconv module directory in `dir`: charset `EVIL` converted by `evil.so`, which announces
/// itself when mapped.
fn gconv_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    copy(&tools().evil, &dir.join("evil.so"));
    std::fs::write(
        dir.join("gconv-modules"),
        "module EVIL// INTERNAL evil 1\nmodule INTERNAL EVIL// evil 1\n",
    )
    .unwrap();
}

fn iconv(
    f: &Fixture,
    who: &Identity,
    policy: Option<&str>,
    gconv: &Path,
    through_env: bool,
) -> Outcome {
    // A guarded shell starts iconv: the guard decides execs (the first process of a session
    // is started by `execguard run`, which decides it the same way).
    let mut cmd = match policy {
        Some(p) => f.guarded(p, "/bin/sh"),
        None => f.plain("/bin/sh"),
    };
    let iconv = "/usr/bin/iconv -f EVIL -t UTF-8 /dev/null";
    if through_env {
        // env -i drops everything; the guard puts itself back, not GCONV_PATH.
        cmd.arg("-c").arg(format!(
            "exec /usr/bin/env -i GCONV_PATH='{}' {iconv}",
            s(gconv)
        ));
    } else {
        cmd.env("GCONV_PATH", gconv)
            .arg("-c")
            .arg(format!("exec {iconv}"));
    }
    run(who.apply(&mut cmd))
}

#[test]
fn a_workspace_gconv_path_loads_no_workspace_module() {
    for who in identities() {
        let f = Fixture::new("env-gconv");
        f.for_identity(&who);
        let ws_gconv = f.ws.join("gconv");
        gconv_dir(&ws_gconv);
        // The fixture is real: without the guard, iconv maps the workspace module.
        let o = iconv(&f, &who, None, &ws_gconv, false);
        assert!(o.stderr.contains("EVIL_SO_LOADED"), "fixture\n{o}");
        for through_env in [false, true] {
            let o = iconv(&f, &who, Some(&f.strict()), &ws_gconv, through_env);
            assert!(
                o.has_denial("library_path_mutable") && !o.stderr.contains("EVIL_SO_LOADED"),
                "{} (env -i: {through_env}): the workspace module was mapped or not refused\n{o}",
                who.label()
            );
        }
        // A module directory outside the mutable roots keeps working.
        let sys_gconv = f.sys.join("gconv");
        gconv_dir(&sys_gconv);
        let o = iconv(&f, &who, Some(&f.strict()), &sys_gconv, false);
        assert!(
            o.stderr.contains("EVIL_SO_LOADED") && o.denials().is_empty(),
            "{}: a system gconv directory was refused\n{o}",
            who.label()
        );
    }
}
#[test]
fn data_variables_naming_the_workspace_keep_working() {
    for who in identities() {
        let f = Fixture::new("env-data");
        f.for_identity(&who);
        let mut cmd = f.guarded(&f.strict(), &f.sys_argv);
        for var in [
            "LOCPATH",
            "NLSPATH",
            "TZDIR",
            "TMPDIR",
            "HOSTALIASES",
            "GETCONF_DIR",
        ] {
            cmd.env(var, &f.ws);
        }
        let o = run(who.apply(&mut cmd));
        o.assert_ran();
    }
}

#[test]
fn gconv_path_set_by_the_process_itself_is_checked_by_iconv_open() {
    for who in identities() {
        let f = Fixture::new("env-iconv-open");
        f.for_identity(&who);
        let (ws_gconv, sys_gconv) = (f.ws.join("gconv"), f.sys.join("gconv"));
        gconv_dir(&ws_gconv);
        gconv_dir(&sys_gconv);
        let mut cmd = f.guarded(&f.strict(), &tools().around);
        cmd.arg("iconv-setenv").arg(&ws_gconv);
        let o = run(who.apply(&mut cmd));
        assert!(
            o.has_denial("library_path_mutable") && !o.stderr.contains("EVIL_SO_LOADED"),
            "{}: iconv_open loaded from the workspace\n{o}",
            who.label()
        );
        assert_eq!(o.report().map(|r| r.errno), Some(EACCES), "{o}");
        let mut cmd = f.guarded(&f.strict(), &tools().around);
        cmd.arg("iconv-setenv").arg(&sys_gconv);
        let o = run(who.apply(&mut cmd));
        assert!(
            o.stderr.contains("EVIL_SO_LOADED") && o.denials().is_empty(),
            "{}: a system gconv directory was refused\n{o}",
            who.label()
        );
    }
}
