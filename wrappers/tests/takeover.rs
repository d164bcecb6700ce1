//! Rule 3: what the session plants in a repository's control files is quarantined at the end
//! of the session and the recorded versions come back; ordinary config changes stay. The
//! repository belongs to each identity in turn (the supervisor may be root).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use execguard_testkit::identities;
use execguard_wrappers::takeover::{notice, Snapshot};

fn git(dir: &Path, args: &[&str]) {
    // The repository may belong to the other identity: root's git would call it dubious.
    let st = Command::new("/usr/bin/git")
        .args(["-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?}");
}

fn write_exec(p: &Path, t: &str) {
    fs::write(p, t).unwrap();
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
}

fn repo(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("eg-takeover-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    git(&d, &["init", "-q", "-b", "main"]);
    write_exec(
        &d.join(".git/hooks/pre-commit"),
        "#!/bin/sh\necho operator\n",
    );
    d.canonicalize().unwrap()
}

#[test]
fn planted_hooks_and_command_config_are_quarantined_ordinary_changes_stay() {
    for who in identities() {
        let d = repo(&format!("plant-{}", who.uid()));
        who.own(&d);
        let hooks = d.join(".git/hooks");
        let snap = Snapshot::record(&d, None).unwrap().expect("a repository");

        // The session: plants a hook, rewrites the operator's hook, adds a command-running key
        // and an include, and does ordinary config work (a remote).
        write_exec(&hooks.join("post-checkout"), "#!/bin/sh\ntouch pwned\n");
        write_exec(&hooks.join("pre-commit"), "#!/bin/sh\nexit 0\n");
        git(
            &d,
            &["remote", "add", "origin", "https://example.invalid/r"],
        );
        git(&d, &["config", "core.fsmonitor", "touch pwned"]);
        who.own(&d);

        let q = snap.quarantine("t1", None).unwrap();
        let paths: Vec<&Path> = q.iter().map(|x| x.path.as_path()).collect();
        assert!(
            paths.contains(&hooks.join("post-checkout").as_path()),
            "{q:?}"
        );
        assert!(paths.contains(&hooks.join("pre-commit").as_path()), "{q:?}");
        assert!(paths.contains(&d.join(".git/config").as_path()), "{q:?}");
        assert!(!hooks.join("post-checkout").exists());
        assert_eq!(
            fs::read_to_string(hooks.join("pre-commit")).unwrap(),
            "#!/bin/sh\necho operator\n"
        );
        let m = fs::metadata(hooks.join("pre-commit")).unwrap();
        assert_eq!(
            (m.uid(), m.mode() & 0o777),
            (who.uid(), 0o755),
            "{}",
            who.label()
        );
        let cfg = fs::read_to_string(d.join(".git/config")).unwrap();
        assert!(!cfg.contains("fsmonitor"), "{cfg}");
        let saved = d.join(".git/execguard-quarantine/t1");
        assert!(fs::read_to_string(saved.join("hooks__post-checkout"))
            .unwrap()
            .contains("pwned"));
        assert!(fs::read_to_string(saved.join("config"))
            .unwrap()
            .contains("fsmonitor"));
        let line = notice(&q, None).unwrap();
        assert!(line.starts_with("execguard: quarantined 3 "), "{line}");
        assert_eq!(line.lines().count(), 1);

        // A session that only does ordinary work leaves everything as it is.
        let snap = Snapshot::record(&d, None).unwrap().unwrap();
        git(&d, &["remote", "add", "second", "../second"]);
        git(&d, &["config", "core.pager", "false"]);
        git(&d, &["config", "--unset", "core.pager"]);
        git(&d, &["config", "user.name", "x"]);
        let q = snap.quarantine("t2", None).unwrap();
        assert!(q.is_empty(), "{q:?}");
        assert!(fs::read_to_string(d.join(".git/config"))
            .unwrap()
            .contains("second"));
        assert!(notice(&q, None).is_none());
        fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn an_included_file_a_deleted_hook_and_a_replaced_hooks_dir_are_caught() {
    let d = repo("include");
    let home = d.join("home");
    fs::create_dir_all(&home).unwrap();
    fs::write(home.join("local.inc"), "[user]\n\tname = a\n").unwrap();
    git(&d, &["config", "include.path", "~/local.inc"]);
    let snap = Snapshot::record(&d, Some(&home)).unwrap().unwrap();
    // The session edits the already-included file and removes the operator's hook.
    fs::write(home.join("local.inc"), "[core]\n\tpager = touch pwned\n").unwrap();
    fs::remove_file(d.join(".git/hooks/pre-commit")).unwrap();
    let q = snap.quarantine("t", Some(&home)).unwrap();
    assert!(
        q.iter()
            .any(|x| x.path == home.join("local.inc") && x.restored),
        "{q:?}"
    );
    assert_eq!(
        fs::read_to_string(home.join("local.inc")).unwrap(),
        "[user]\n\tname = a\n"
    );
    assert!(
        d.join(".git/hooks/pre-commit").is_file(),
        "the operator's hook is back"
    );

    // A hooks directory replaced by a symlink to the work tree.
    let snap = Snapshot::record(&d, Some(&home)).unwrap().unwrap();
    fs::create_dir_all(d.join("evil-hooks")).unwrap();
    write_exec(&d.join("evil-hooks/pre-commit"), "#!/bin/sh\ntouch pwned\n");
    fs::rename(d.join(".git/hooks"), d.join("old-hooks")).unwrap();
    std::os::unix::fs::symlink(d.join("evil-hooks"), d.join(".git/hooks")).unwrap();
    let q = snap.quarantine("t3", Some(&home)).unwrap();
    assert!(
        fs::symlink_metadata(d.join(".git/hooks")).unwrap().is_dir(),
        "{q:?}"
    );
    assert_eq!(
        fs::read_to_string(d.join(".git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh\necho operator\n"
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_workspace_of_checkouts_and_a_submodules_git_dir_are_covered() {
    let ws = std::env::temp_dir().join(format!("eg-takeover-{}-ws", std::process::id()));
    let _ = fs::remove_dir_all(&ws);
    fs::create_dir_all(ws.join("one")).unwrap();
    fs::create_dir_all(ws.join("two")).unwrap();
    let ws = ws.canonicalize().unwrap();
    git(&ws.join("one"), &["init", "-q"]);
    git(&ws.join("two"), &["init", "-q"]);
    // A submodule's git dir lives in its superproject's .git/modules.
    let module = ws.join("one/.git/modules/sub");
    fs::create_dir_all(module.join("hooks")).unwrap();
    git(&module, &["init", "-q", "--bare"]);
    let snaps = Snapshot::record_workspace(&ws, None).unwrap();
    assert_eq!(snaps.len(), 3, "{snaps:?}");
    write_exec(
        &ws.join("two/.git/hooks/pre-push"),
        "#!/bin/sh\ntouch pwned\n",
    );
    write_exec(
        &module.join("hooks/post-checkout"),
        "#!/bin/sh\ntouch pwned\n",
    );
    let mut all = Vec::new();
    for s in &snaps {
        all.extend(s.quarantine("t", None).unwrap());
    }
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(!ws.join("two/.git/hooks/pre-push").exists());
    assert!(!module.join("hooks/post-checkout").exists());
    fs::remove_dir_all(&ws).unwrap();
}

/// A file outside the repository that a planted include names is not moved (the supervisor may
/// be root: red-team finding, it moved a root-owned file the session merely named); the
/// include itself is quarantined with the repository's config.
#[test]
fn a_file_a_new_include_names_is_left_in_place() {
    let d = repo("new-include");
    let outside = d.join("outside");
    fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("victim");
    fs::write(&victim, "[core]\n\teditor = vim\n").unwrap();
    let snap = Snapshot::record(&d, None).unwrap().unwrap();
    git(&d, &["config", "include.path", victim.to_str().unwrap()]);
    let q = snap.quarantine("t", None).unwrap();
    assert!(victim.exists(), "the named file was moved: {q:?}");
    assert!(
        !fs::read_to_string(d.join(".git/config"))
            .unwrap()
            .contains("include"),
        "the include stayed: {q:?}"
    );
    fs::remove_dir_all(&d).unwrap();
}

/// A venv's 724 `.pyc` and two hooks: the notice is one line with the count of each kind, the
/// first few paths and where every one is listed, never all 726 paths.
#[test]
fn the_notice_counts_each_kind_and_names_only_the_first_few() {
    use execguard_wrappers::takeover::Quarantined;
    let hook = |n: &str| Quarantined {
        path: PathBuf::from(format!("/w/.git/hooks/{n}")),
        saved_as: Some(PathBuf::from(format!(
            "/w/.git/execguard-quarantine/1-2/hooks__{n}"
        ))),
        why: "hook added during the session".into(),
        restored: false,
    };
    let mut q = vec![hook("pre-commit"), hook("pre-push")];
    for i in 0..724 {
        q.push(Quarantined {
            path: PathBuf::from(format!("/w/venv/lib/m{i}/__pycache__/m{i}.cpython-311.pyc")),
            saved_as: None,
            why: "executable cache written during the session: removed".into(),
            restored: false,
        });
    }
    let line = notice(&q, Some(Path::new("/state/audit.jsonl"))).unwrap();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with("execguard: quarantined 726 repository file(s)"),
        "{line}"
    );
    assert!(
        line.contains("2 hook(s), 724 executable cache(s) removed"),
        "{line}"
    );
    assert!(
        line.contains("/w/.git/hooks/pre-commit, /w/.git/hooks/pre-push, "),
        "{line}"
    );
    assert!(line.contains("m2.cpython-311.pyc, and 721 more"), "{line}");
    assert!(!line.contains("m3.cpython-311.pyc"), "{line}");
    assert!(line.contains("/w/.git/execguard-quarantine/1-2"), "{line}");
    assert!(
        line.contains("`execguard audit /state/audit.jsonl`"),
        "{line}"
    );
    assert!(line.len() < 1000, "{} bytes: {line}", line.len());
    let without = notice(&q, None).unwrap();
    assert!(without.contains("keeps no audit log"), "{without}");
}
