//! The binaries and the library that ship hold no test hook. The hooks exist in test builds
//! only (the seal's `test-hooks` feature, which only dev-dependencies enable), and `cargo test`
//! builds the CLI with them: so the shipped set is built apart, by a plain `cargo build
//! --release` into a target directory of its own (`scripts/test` does it and names the
//! directory in `EXECGUARD_SHIPPED_DIR`), and checked here byte by byte.
//!
//! Without those binaries the test skips through the kit (a failure under `CI=true`).

use std::path::{Path, PathBuf};

/// What the README's `cargo build --release` installs.
const SHIPPED: &[&str] = &[
    "execguard",
    "libexecguard.so",
    "execguard-git",
    "execguard-node",
    "execguard-entrypoint",
    "execguard-provider",
];

/// Test-only names: the hooks' environment variables (all named `EXECGUARD_TEST_*`) and the
/// function that reads them (its symbol stays in an unstripped binary).
const TEST_ONLY: &[&str] = &["EXECGUARD_TEST_", "HookedSealSys"];

fn shipped_dir() -> PathBuf {
    std::env::var_os("EXECGUARD_SHIPPED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/shipped/release"))
}

/// Every test-only name `bytes` holds.
fn test_names_in(bytes: &[u8]) -> Vec<&'static str> {
    TEST_ONLY
        .iter()
        .copied()
        .filter(|name| bytes.windows(name.len()).any(|w| w == name.as_bytes()))
        .collect()
}

#[test]
fn the_shipped_binaries_hold_no_test_hook() {
    let dir = shipped_dir();
    let missing: Vec<&str> = SHIPPED
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        execguard_testkit::skip(&format!(
            "the shipped binaries' test hooks: {} missing in {} (scripts/test builds them with \
             `cargo build --release --target-dir target/shipped`)",
            missing.join(", "),
            dir.display()
        ));
        return;
    }
    for f in SHIPPED {
        let path = dir.join(f);
        let bytes = std::fs::read(&path).unwrap();
        let found = test_names_in(&bytes);
        assert!(
            found.is_empty(),
            "{} holds test-only names {found:?}: a shipped build has the test hooks",
            path.display()
        );
    }
}

/// The search finds a name in a real binary: a copy of `/bin/true` with one appended, and
/// the CLI as `cargo test` builds it (with the dev-dependencies' features) when the seal still
/// has hooks to compile in.
#[test]
fn the_search_finds_a_test_hook_where_there_is_one() {
    let mut bytes = std::fs::read("/bin/true").unwrap();
    assert!(test_names_in(&bytes).is_empty());
    bytes.extend_from_slice(b"\0EXECGUARD_TEST_PAUSE\0");
    assert_eq!(test_names_in(&bytes), ["EXECGUARD_TEST_"]);
    let seal = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/guard/seal/Cargo.toml"
    ))
    .unwrap();
    if seal.contains("test-hooks") {
        let test_build = std::fs::read(env!("CARGO_BIN_EXE_execguard")).unwrap();
        assert!(
            !test_names_in(&test_build).is_empty(),
            "the test build of the CLI holds no test hook, though the seal has them: the \
             search would miss them"
        );
    }
}
