//! The engine's own path walk (`resolve`), which replaces `readlink /proc/self/fd/N` on the
//! exec path, must name exactly the file the kernel opens, or give up (`None`) so the guard
//! asks `/proc`. Every case here is checked against the kernel's answer.

use execguard_os::LibcSys;
use execguard_policy::path::PathBuf;
use execguard_policy::resolve::open_resolved;
use execguard_policy::sys::{OpenMode, Sys};
use std::ffi::OsStr;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf as StdPathBuf};

/// The kernel's name for `path` as exec would open it (following every symlink).
fn kernel_name(path: &Path) -> Option<Vec<u8>> {
    let file = fs::File::open(path).ok()?;
    let link = fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    Some(link.as_os_str().as_bytes().to_vec())
}

fn engine_name(path: &[u8]) -> Option<Vec<u8>> {
    let mut out = PathBuf::new();
    let (fd, _) = open_resolved(&mut LibcSys, path, OpenMode::Read, &mut out)?;
    LibcSys.close(fd);
    Some(out.as_bytes().to_vec())
}

/// A tree with every kind of link the walk must follow.
fn tree() -> (tempfile::TempDir, StdPathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    fs::write(root.join("a/b/c/prog"), b"\x7fELF").unwrap();
    fs::write(root.join("a/top"), b"#!/bin/sh\n").unwrap();
    symlink("b/c", root.join("a/rel")).unwrap(); // relative, two components
    symlink(root.join("a/b"), root.join("abs")).unwrap(); // absolute
    symlink("../rel/prog", root.join("a/b/up")).unwrap(); // `..` inside link text
    symlink("up", root.join("a/b/chain")).unwrap(); // link to a link
    symlink("c/..", root.join("a/b/dotdot")).unwrap(); // resolves to a/b itself
    symlink("loop2", root.join("loop1")).unwrap();
    symlink("loop1", root.join("loop2")).unwrap();
    symlink("missing", root.join("dangling")).unwrap();
    (tmp, root)
}

#[test]
fn names_what_the_kernel_names() {
    let (_tmp, root) = tree();
    let cases = [
        "a/b/c/prog",
        "a/rel/prog",
        "abs/c/prog",
        "a/b/up",
        "a/b/chain",
        "a/b/dotdot/c/prog",
        "a/rel/../../top", // `..` after a symlink: the parent of its target, not of the link
        "abs/../top",      // the same through an absolute link
        "./a//b/./c/../c/prog",
        "a/b/c/../../top",
    ];
    for case in cases {
        let path = root.join(case);
        let bytes = path.as_os_str().as_bytes();
        let kernel = kernel_name(&path).unwrap_or_else(|| panic!("{case}: kernel cannot open it"));
        assert_eq!(
            engine_name(bytes).as_deref().map(OsStr::from_bytes),
            Some(OsStr::from_bytes(&kernel)),
            "{case}"
        );
        let mut name = PathBuf::new();
        let (fd, info) = open_resolved(&mut LibcSys, bytes, OpenMode::Read, &mut name)
            .unwrap_or_else(|| panic!("{case}: open_resolved gave up"));
        LibcSys.close(fd);
        assert_eq!(name.as_bytes(), kernel.as_slice(), "{case}");
        assert!(info.is_regular(), "{case}");
    }
}

#[test]
fn gives_up_where_the_kernel_must_answer() {
    let (_tmp, root) = tree();
    for case in [
        "loop1",
        "dangling",
        "a/b/c/prog/",
        "nothing/here",
        "a/b/c/prog/..",
    ] {
        let path = root.join(case);
        let mut name = PathBuf::new();
        assert!(
            open_resolved(
                &mut LibcSys,
                path.as_os_str().as_bytes(),
                OpenMode::Read,
                &mut name
            )
            .is_none(),
            "{case}: the engine must leave this to the kernel"
        );
    }
}

#[test]
fn magic_links_are_left_to_proc() {
    // /proc/self/fd/N of a deleted file: its link text names a path that no longer holds it.
    // Even when a decoy file now sits at that name, the engine must not pick the decoy.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let gone = dir.join("payload");
    fs::write(&gone, b"\x7fELF payload").unwrap();
    let held = fs::File::open(&gone).unwrap();
    fs::remove_file(&gone).unwrap();
    fs::write(dir.join("payload (deleted)"), b"decoy").unwrap();
    let magic = format!("/proc/self/fd/{}", held.as_raw_fd());
    let mut name = PathBuf::new();
    let opened = open_resolved(&mut LibcSys, magic.as_bytes(), OpenMode::Read, &mut name);
    assert!(
        opened.is_none(),
        "a magic link was resolved as text: {name:?}"
    );
}

#[test]
fn relative_paths_start_at_the_current_directory() {
    // The test binary's cwd is the package root; a relative name resolves against it.
    let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    assert_eq!(
        engine_name(b"Cargo.toml").as_deref().map(OsStr::from_bytes),
        Some(cwd.join("Cargo.toml").as_os_str())
    );
    assert_eq!(
        engine_name(b"./guard/../Cargo.toml")
            .as_deref()
            .map(OsStr::from_bytes),
        Some(cwd.join("Cargo.toml").as_os_str())
    );
}

mod random_trees {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 10] = ["d1", "d2", "f", "s0", "s1", "s2", "s3", "..", ".", ""];

    fn components() -> impl Strategy<Value = Vec<usize>> {
        prop::collection::vec(0..NAMES.len(), 1..6)
    }

    fn join(parts: &[usize]) -> String {
        parts
            .iter()
            .map(|&i| NAMES[i])
            .collect::<Vec<_>>()
            .join("/")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        /// On random trees of nested directories and symlinks (relative and absolute, through
        /// `..`, to links, dangling, looping), whenever the engine names a file it is the
        /// file the kernel opens, under the kernel's name.
        #[test]
        fn never_disagrees_with_the_kernel(
            links in prop::collection::vec((0..3usize, any::<bool>(), components()), 4),
            query in components(),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().canonicalize().unwrap();
            let dirs = [root.clone(), root.join("d1"), root.join("d1/d2")];
            fs::create_dir_all(&dirs[2]).unwrap();
            for d in &dirs {
                fs::write(d.join("f"), b"file").unwrap();
            }
            for (i, (dir, absolute, target)) in links.iter().enumerate() {
                let text = if *absolute {
                    format!("{}/{}", root.display(), join(target))
                } else {
                    join(target)
                };
                // The kernel refuses an empty symlink.
                let text = if text.is_empty() { ".".to_string() } else { text };
                symlink(text, dirs[*dir].join(format!("s{i}"))).unwrap();
            }
            let path = root.join(join(&query));
            let bytes = path.as_os_str().as_bytes();
            let mut name = PathBuf::new();
            if let Some((fd, _)) = open_resolved(&mut LibcSys, bytes, OpenMode::Read, &mut name) {
                LibcSys.close(fd);
                let kernel = kernel_name(&path);
                prop_assert_eq!(Some(name.as_bytes().to_vec()), kernel, "{}", path.display());
            }
        }
    }
}
