//! Bad input: NULL/empty argv and envp, long and non-UTF-8 paths, directories, missing targets,
//! garbage and overlong `#!` lines, deep `#!` chains, and broken policies (fail closed).

mod support;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use support::*;

#[test]
fn null_or_empty_argv_is_refused() {
    let f = Fixture::new("argv-empty");
    let p = f.strict();
    for opt in ["--argv-null", "--argv-empty"] {
        for entry in ["execve", "execv", "execl", "execveat", "syscall-execve"] {
            let o = f.probe(&p, [opt, entry, "/bin/true"]);
            assert!(o.has_denial("argv_empty"), "[{opt} {entry}]\n{o}");
            o.assert_exec_failed(EACCES);
        }
        let o = f.probe(&p, [opt, "posix_spawn", "/bin/true"]);
        assert!(o.has_denial("argv_empty"), "[{opt} posix_spawn]\n{o}");
        assert_eq!(o.report().unwrap().ret, i64::from(EACCES), "{o}");
    }
}

#[test]
fn null_or_empty_envp() {
    let f = Fixture::new("envp-null");
    let p = f.strict();
    for opt in ["--env-null", "--env-empty"] {
        for entry in ["execve", "execle", "execveat", "posix_spawn"] {
            f.probe(&p, [opt, entry, s(&f.sys_argv)]).assert_ran();
            let o = f.probe(&p, [opt, entry, s(&f.payload)]);
            o.assert_denied("mutable_native");
        }
    }
}

#[test]
fn path_longer_than_path_max_keeps_the_kernel_errno() {
    let f = Fixture::new("long-path");
    let p = f.strict();
    let long = format!("{}/{}", s(&f.ws), "a/".repeat(2100));
    for entry in ["execve", "execvp", "execveat", "syscall-execve"] {
        let o = f.probe(&p, [entry, &long]);
        o.assert_exec_failed(ENAMETOOLONG);
        assert!(o.denials().is_empty(), "[{entry}] {o}");
    }
    let o = f.probe(&p, ["posix_spawn", &long]);
    assert_eq!(o.report().unwrap().ret, i64::from(ENAMETOOLONG), "{o}");
    // A long bare name for a PATH search: glibc's ENAMETOOLONG.
    let o = f.probe(&p, ["execvp", &"x".repeat(5000)]);
    o.assert_exec_failed(ENAMETOOLONG);
}

#[test]
fn non_utf8_paths() {
    let f = Fixture::new("non-utf8");
    let p = f.strict();
    let mut name = f.ws.clone().into_os_string().into_vec();
    name.extend_from_slice(b"/pay\xff\x01load");
    let bad = bytes_path(&name);
    copy(&tools().argv, &bad);
    let o = run(f.guarded(&p, &tools().probe).arg("execve").arg(&bad));
    o.assert_denied("mutable_native");
    o.assert_exec_failed(EACCES);
    // The control byte is escaped on stderr, and the audit record is valid JSON.
    assert!(o.stderr.contains("pay\u{fffd}\\x01load"), "{o}");
    let records = f.audit_records();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0]["path"].as_str().unwrap(),
        format!("{}/pay\u{ff}\u{1}load", s(&f.ws)),
        "non-UTF-8 bytes are written as \\u00XX"
    );
    // The same name outside every mutable root runs.
    let mut name = f.sys.clone().into_os_string().into_vec();
    name.extend_from_slice(b"/ar\xffgv");
    let ok = bytes_path(&name);
    copy(&tools().argv, &ok);
    run(f.guarded(&p, &tools().probe).arg("execve").arg(&ok)).assert_ran();
}

#[test]
fn directories_get_eacces_without_a_denial() {
    let f = Fixture::new("directory");
    let p = f.strict();
    for dir in [s(&f.ws), "/usr", "."] {
        for entry in ["execve", "execv", "execveat", "execveat-empty", "fexecve"] {
            let o = f.probe(&p, [entry, dir]);
            o.assert_exec_failed(EACCES);
            assert!(o.denials().is_empty(), "[{entry} {dir}] {o}");
        }
        let o = f.probe(&p, ["posix_spawn", dir]);
        assert_eq!(o.report().unwrap().ret, i64::from(EACCES), "{o}");
        assert!(o.denials().is_empty(), "{o}");
    }
    assert!(f.audit_records().is_empty());
}

#[test]
fn missing_targets_keep_enoent() {
    let f = Fixture::new("missing");
    let p = f.strict();
    let missing = f.ws.join("no-such-file");
    for entry in [
        "execve",
        "execv",
        "execvp",
        "execvpe",
        "execl",
        "execle",
        "execlp",
        "execveat",
        "syscall-execve",
        "syscall-execveat",
        "fork",
        "vfork",
    ] {
        let o = f.probe(&p, [entry, s(&missing)]);
        o.assert_exec_failed(ENOENT);
        assert!(o.denials().is_empty(), "[{entry}] {o}");
    }
    for entry in ["execvp", "execlp", "execvpe"] {
        let o = f.probe(&p, [entry, "no-such-command-anywhere"]);
        o.assert_exec_failed(ENOENT);
        assert!(o.denials().is_empty(), "[{entry}] {o}");
    }
    for entry in ["posix_spawn", "posix_spawnp"] {
        let o = f.probe(&p, [entry, s(&missing)]);
        assert_eq!(o.report().unwrap().ret, i64::from(ENOENT), "{o}");
        assert!(o.denials().is_empty(), "{o}");
    }
    let o = f.probe(&p, ["posix_spawnp", "no-such-command-anywhere"]);
    assert_eq!(o.report().unwrap().ret, i64::from(ENOENT), "{o}");
    // A #! interpreter that does not exist: the kernel's ENOENT too.
    f.write_exec(&f.ws.join("dangling.sh"), b"#!/no/such/interpreter\n");
    let o = f.probe(&p, ["execve", "./dangling.sh"]);
    o.assert_exec_failed(ENOENT);
    assert!(o.denials().is_empty(), "{o}");
    assert!(f.audit_records().is_empty());
}

#[test]
fn binary_garbage_in_a_mutable_file() {
    let f = Fixture::new("garbage");
    let p = f.strict();
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    f.write_exec(&f.ws.join("garbage"), &garbage);
    for entry in ["execve", "execveat", "fexecve", "syscall-execve"] {
        let o = f.probe(&p, [entry, "./garbage"]);
        o.assert_exec_failed(ENOEXEC);
        // The kernel's own answer (so execvp and shells fall back to /bin/sh): not reported.
        assert!(o.denials().is_empty(), "[{entry}] {o}");
        assert!(!o.ran(), "[{entry}] {o}");
    }
    // Outside the mutable roots the kernel itself says ENOEXEC, and the guard stays silent.
    f.write_exec(&f.sys.join("garbage"), &garbage);
    let o = f.probe(&p, ["execve", s(&f.sys.join("garbage"))]);
    o.assert_exec_failed(ENOEXEC);
    assert!(o.denials().is_empty(), "{o}");
}

/// The errno the kernel gives for `path` with no guard at all.
fn kernel_errno(f: &Fixture, path: &str) -> Option<i32> {
    let o = run(f.plain(&tools().probe).arg("execve").arg(path));
    if o.ran() {
        return None;
    }
    Some(o.report().unwrap_or_else(|| panic!("no report\n{o}")).errno)
}

#[test]
fn overlong_shebang_without_terminator_agrees_with_the_kernel() {
    let f = Fixture::new("long-shebang");
    let p = f.strict();
    for dir in [&f.ws, &f.sys] {
        // No newline and no blank in the first 256 bytes: the name may be truncated. The guard
        // answers ENOEXEC as the kernel does, for mutable files without asking it.
        let mut line = format!("#!{}", s(&f.sys_argv)).into_bytes();
        line.resize(400, b'a');
        let path = dir.join("long.sh");
        f.write_exec(&path, &line);
        assert_eq!(kernel_errno(&f, s(&path)), Some(ENOEXEC));
        let o = f.probe(&p, ["execve", s(&path)]);
        o.assert_exec_failed(ENOEXEC);
        assert!(o.denials().is_empty(), "{o}");
        assert!(!o.ran(), "{o}");

        // A blank within the buffer: the kernel runs the interpreter with a cut argument.
        let mut line = format!("#!{} ", s(&f.sys_argv)).into_bytes();
        line.resize(400, b'b');
        let path = dir.join("long-arg.sh");
        f.write_exec(&path, &line);
        assert_eq!(kernel_errno(&f, s(&path)), None);
        let o = f.probe(&p, ["execve", s(&path)]);
        o.assert_ran();
        let argv = o.printed_argv().unwrap();
        let arg_len = 255 - (s(&f.sys_argv).len() + 3);
        assert_eq!(argv[1], vec![b'b'; arg_len], "{o}");
    }
}

#[test]
fn shebang_chains_deeper_than_the_kernel_follows() {
    let f = Fixture::new("deep-chain");
    let p = f.strict();
    let mut agreed_loop = false;
    for (dir, tag) in [(&f.sys, "sys"), (&f.ws, "ws")] {
        for depth in 1..=8 {
            // s0 -> s1 -> ... -> s{depth-1} -> argv printer (non-mutable).
            let name = |i: usize| dir.join(format!("chain{depth}-{i}.sh"));
            for i in 0..depth {
                let next = if i + 1 == depth {
                    f.sys_argv.clone()
                } else {
                    name(i + 1)
                };
                f.write_exec(&name(i), format!("#!{}\n", s(&next)).as_bytes());
            }
            let start = name(0);
            let kernel = kernel_errno(&f, s(&start));
            let o = f.probe(&p, ["execve", s(&start)]);
            match kernel {
                None => o.assert_ran(),
                Some(e) => {
                    assert_eq!(e, ELOOP, "[{tag} depth {depth}] kernel");
                    o.assert_exec_failed(ELOOP);
                    assert!(o.has_denial("shebang_too_deep"), "[{tag} {depth}] {o}");
                    agreed_loop = true;
                }
            }
        }
    }
    assert!(
        agreed_loop,
        "no chain was deep enough to reach the kernel's limit"
    );
}

fn expect_every_exec_refused(f: &Fixture, policy: &OsString, reason: &str) {
    for entry in ["execve", "execvp", "posix_spawn", "system"] {
        let o = run(f
            .guarded("", &tools().probe)
            .env("EXECGUARD_POLICY", policy)
            .args([entry, "/bin/true"]));
        assert!(o.has_denial(reason), "[{entry}] expected {reason}\n{o}");
        let r = o.report().unwrap_or_else(|| panic!("{o}"));
        assert!(r.ret != 0, "[{entry}] {o}");
    }
}

#[test]
fn broken_policies_fail_closed() {
    let f = Fixture::new("bad-policy");
    let good = f.strict();
    let unknown_key = format!("{good}no_such_key = true\n");
    let many_roots = format!(
        "{good}mutable_roots = [{}]\n",
        (0..33)
            .map(|i| format!("\"/r{i}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let many_runtimes = format!(
        "{good}{}",
        (0..=execguard_policy::policy::MAX_RUNTIMES)
            .map(|i| format!(
                "[[runtime]]\nname = \"r{i}\"\npath = \"/r/{i}\"\nwrapper = \"/w/{i}\"\n"
            ))
            .collect::<String>()
    );
    let oversized = format!("{good}#{}\n", "x".repeat(17 * 1024));
    let wrong_profile = good.replace("strict", "lenient");
    let escapes = format!("{good}mutable_roots = [\"/a\\u0041\"]\n");
    let mut non_utf8 = good.clone().into_bytes();
    non_utf8.extend_from_slice(b"# \xff\n");
    for text in [
        unknown_key.into(),
        many_roots.into(),
        many_runtimes.into(),
        oversized.into(),
        wrong_profile.into(),
        escapes.into(),
        "".into(),
        OsString::from_vec(non_utf8),
    ] {
        expect_every_exec_refused(&f, &text, "policy_invalid");
    }
}

#[test]
fn missing_policy_fails_closed() {
    let f = Fixture::new("no-policy");
    let o = run(f
        .plain(&tools().probe)
        .env("LD_PRELOAD", &tools().lib)
        .args(["execve", "/bin/true"]));
    assert!(o.has_denial("policy_missing"), "{o}");
    o.assert_exec_failed(EACCES);
}

/// An execute-only file in a mutable root cannot be inspected, so it is refused
/// (`unreadable_mutable`); the same file outside the mutable roots is left to the kernel.
/// Needs a non-root caller (root reads anything): the probe runs as nobody through setpriv.
#[test]
fn execute_only_files_in_mutable_roots_are_refused() {
    let f = Fixture::new("xonly");
    // No audit log: nobody could not create it in the fixture directory.
    let p = format!(
        "version = 1\nprofile = \"strict\"\nworkspace = \"{}\"\n",
        s(&f.ws)
    );
    let ws_x = f.ws.join("xonly");
    let sys_x = f.sys.join("xonly");
    for path in [&ws_x, &sys_x] {
        copy(&f.sys_argv, path);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    // Every directory on the way must be searchable by nobody.
    let mut dir = f.ws.parent().map(Path::to_path_buf);
    while let Some(d) = dir {
        let mode = std::fs::metadata(&d).unwrap().permissions().mode();
        assert!(
            mode & 0o001 != 0,
            "{} is not searchable by other users",
            d.display()
        );
        dir = d.parent().map(Path::to_path_buf);
    }
    let as_nobody = |target: &Path| {
        run(f
            .guarded(&p, "/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&tools().probe)
            .args(["execve", s(target)]))
    };
    let o = as_nobody(&ws_x);
    o.assert_denied("unreadable_mutable");
    o.assert_exec_failed(EACCES);
    let o = as_nobody(&sys_x);
    assert!(o.denials().is_empty(), "{o}");
    o.assert_ran();
}

/// The loader given a program without a `/` searches library directories for it: the guard
/// cannot tell which file would run, so it refuses.
#[test]
fn a_loader_program_without_a_slash_is_refused() {
    let f = Fixture::new("loader-bare");
    let p = f.strict();
    let o = f.probe(&p, ["execve", support::LOADER, "payload"]);
    o.assert_denied("loader_ambiguous");
    o.assert_exec_failed(EACCES);
    // With a path it is decided on the file: a system program runs.
    let o = f.probe(&p, ["execve", support::LOADER, s(&f.sys_argv), "x"]);
    o.assert_ran();
}

/// A mutable script whose `env -S` string needs quoting, escapes or expansion, or which changes
/// directory first, is refused rather than interpreted differently from env.
#[test]
fn ambiguous_env_lines_in_mutable_scripts_are_refused() {
    let f = Fixture::new("env-ambiguous");
    let p = f.strict();
    for (name, line) in [
        ("quoted.sh", "#!/usr/bin/env -S sh -c 'echo hi'\n"),
        ("escape.sh", "#!/usr/bin/env -S sh\\x20-e\n"),
        ("expand.sh", "#!/usr/bin/env -S ${SHELL}\n"),
        ("chdir.sh", "#!/usr/bin/env -C /tmp sh\n"),
    ] {
        let path = f.ws.join(name);
        f.write_exec(&path, line.as_bytes());
        let o = f.probe(&p, ["execve", s(&path)]);
        o.assert_denied("shebang_ambiguous");
    }
    // A plain `env -S` line runs.
    let path = f.ws.join("plain.sh");
    f.write_exec(
        &path,
        format!("#!/usr/bin/env -S {} -x\n", s(&f.sys_argv)).as_bytes(),
    );
    f.probe(&p, ["execve", s(&path)]).assert_ran();
}

/// Where a directory above a mutable root folds names (casefolded ext4, vfat, SMB, 9p from
/// Windows), `/x/WS/prog` can open `/x/ws/prog`; the guard cannot ask the filesystem, so a
/// loose spelling of a mutable root counts as that root. Shown here on a case-sensitive
/// filesystem, where `WS` is a different, non-mutable directory: refused all the same.
#[test]
fn loose_spellings_of_a_mutable_root_count_as_the_root() {
    let f = Fixture::new("casefold");
    let upper = f.base.join("WS");
    std::fs::create_dir_all(&upper).unwrap();
    let prog = upper.join("prog");
    copy(&f.sys_argv, &prog);
    let o = f.probe(&f.strict(), ["execve", s(&prog)]);
    o.assert_denied("mutable_native");
    o.assert_exec_failed(EACCES);
    // The same program under a name that no filesystem folds to `ws` runs.
    let other = f.base.join("wx");
    std::fs::create_dir_all(&other).unwrap();
    copy(&f.sys_argv, &other.join("prog"));
    let o = f.probe(&f.strict(), ["execve", s(&other.join("prog"))]);
    assert!(o.denials().is_empty(), "{o}");
    o.assert_ran();
}

/// A mutable `#!/usr/bin/env CMD` script makes the guard search PATH for CMD (a protected
/// runtime found there would be refused). A PATH entry too long to be a path is skipped, as
/// glibc's execvp (and so `env`) skips it: the search goes on exactly as env's will.
#[test]
fn a_path_entry_too_long_to_search_is_skipped_as_glibc_skips_it() {
    let f = Fixture::new("pathlong");
    let script = f.ws.join("long.sh");
    f.write_exec(&script, b"#!/usr/bin/env sh\necho ran\n");
    let long_dir = format!("/{}", "d".repeat(4100));
    let o = run(f
        .guarded(&f.strict(), &tools().probe)
        .env("PATH", format!("{long_dir}:/usr/bin:/bin"))
        .args(["execve", s(&script)]));
    assert!(o.denials().is_empty(), "{o}");
    assert_eq!((o.code, o.stdout.as_str()), (Some(0), "ran\n"), "{o}");
}

/// A system program reached through a workspace symlink is handed to the kernel by its
/// canonical name (so a swap of the link changes nothing); a canonical name longer than the
/// guard's buffer for it is refused (`path_too_long`) rather than exec'd by the redirectable
/// name.
#[test]
fn a_canonical_name_too_long_to_hand_the_kernel_is_refused() {
    let f = Fixture::new("execlong");
    let mut deep = f.sys.clone();
    while deep.as_os_str().len() < 1100 {
        deep.push("d".repeat(200));
    }
    std::fs::create_dir_all(&deep).unwrap();
    copy(&f.sys_argv, &deep.join("prog"));
    let link = f.ws.join("prog");
    std::os::unix::fs::symlink(deep.join("prog"), &link).unwrap();
    let o = f.probe(&f.strict(), ["execve", s(&link)]);
    o.assert_denied("path_too_long");
    o.assert_exec_failed(EACCES);
    // The same program by its own name runs.
    let o = f.probe(&f.strict(), ["execve", s(&deep.join("prog"))]);
    o.assert_ran();
}
