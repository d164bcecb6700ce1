//! docs/policy.md states the policy parser's limits; they are the parser's constants (the runtime
//! count said 16 while the parser allowed 32).

use execguard_policy::policy::{MAX_ALLOWED, MAX_POLICY_BYTES, MAX_ROOTS, MAX_RUNTIMES};

#[test]
fn the_policy_reference_states_the_parser_limits() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/policy.md")).unwrap();
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let want = format!(
        "(max {} KiB, {MAX_ROOTS} extra roots, {MAX_ALLOWED} allowed commands, {MAX_RUNTIMES} runtimes)",
        MAX_POLICY_BYTES / 1024
    );
    assert!(flat.contains(&want), "docs/policy.md must say {want}");
}
