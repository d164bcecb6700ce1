//! The committed renderings of the run profile are current (no Docker needed).

use std::process::Command;

#[test]
fn generated_compose_and_kubernetes_files_are_up_to_date() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/image/generated");
    let out = Command::new(env!("CARGO_BIN_EXE_execguard"))
        .args(["image", "generate", "--check", "--dir", dir])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_image_policy_validates() {
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/image/policy.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_execguard"))
        .args(["policy", "validate", policy])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(policy).unwrap();
    for runtime in ["git", "node", "claude"] {
        assert!(
            text.contains(&format!("name = \"{runtime}\"")),
            "{runtime} is not a protected runtime"
        );
    }
}
