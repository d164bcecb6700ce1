//! No two files of a crate import each other (GUIDE: "No two files import each other"):
//! `scripts/circles.py` over the tree, and the same check seeing a circle made on purpose.

use std::path::Path;
use std::process::Command;

fn circles(repo: &Path) -> std::process::Output {
    Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/circles.py"))
        .arg(repo)
        .output()
        .unwrap()
}

#[test]
fn no_two_files_import_each_other() {
    let o = circles(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        o.status.success(),
        "files that import each other:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_circle_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("c/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::two;\npub fn one() {}\n").unwrap();
    std::fs::write(src.join("b.rs"), "pub fn two() { super::a::one() }\n").unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    let o = circles(dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "c/src: a.rs <-> b.rs\n");
    // One side taken away: no circle.
    std::fs::write(src.join("b.rs"), "pub fn two() {}\n").unwrap();
    assert!(circles(dir.path()).status.success());
}
