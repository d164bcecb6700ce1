//! The README states the policy parser's limits; they are the parser's constants (the runtime
//! count said 16 while the parser allowed 32).

use execguard_policy::policy::{MAX_ALLOWED, MAX_POLICY_BYTES, MAX_ROOTS, MAX_RUNTIMES};

#[test]
fn the_readme_states_the_parser_limits() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let want = format!(
        "(max {} KiB, {MAX_ROOTS} extra roots, {MAX_ALLOWED} allowed commands, {MAX_RUNTIMES} runtimes)",
        MAX_POLICY_BYTES / 1024
    );
    assert!(flat.contains(&want), "README.md must say {want}");
}
