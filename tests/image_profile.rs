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

/// The generated Job validates strictly (no unknown field) against the Kubernetes schema of the
/// release it targets, offline, with `kubernetes-validate` (PyPI; scripts/test installs it in
/// target/tools/k8s-validate).
#[test]
fn the_kubernetes_job_validates_strictly_against_the_schema() {
    let tool = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/target/tools/k8s-validate/bin/kubernetes-validate"
    );
    let tool = std::env::var("EXECGUARD_KUBERNETES_VALIDATE").unwrap_or_else(|_| tool.into());
    if !std::path::Path::new(&tool).exists() {
        execguard_testkit::skip(&format!(
            "the Kubernetes schema check: {tool} is missing (scripts/test installs it)"
        ));
        return;
    }
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/image/generated/k8s-job.yaml");
    let out = Command::new(&tool)
        .args(["--strict", "--kubernetes-version", "1.37.0", manifest])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    assert!(all.contains("passed"), "{all}");
    // The validator does refuse an unknown field (so a pass means something).
    let bad = std::env::temp_dir().join(format!("execguard-k8s-bad-{}.yaml", std::process::id()));
    let text = std::fs::read_to_string(manifest).unwrap();
    std::fs::write(&bad, text.replace("runAsNonRoot:", "runAsNonRooot:")).unwrap();
    let out = Command::new(&tool)
        .args(["--strict", "--kubernetes-version", "1.37.0"])
        .arg(&bad)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&bad);
    assert!(
        !out.status.success(),
        "a misspelled field passed the validator"
    );
}

/// The committed renderings state every control of a list written and reviewed by hand
/// (tests/expected/image-profile.txt), not made by the code that renders them. With
/// `generated_compose_and_kubernetes_files_are_up_to_date` (the code renders exactly these
/// files), a profile change that drops or weakens a control fails here until the list is
/// changed too, in review.
#[test]
fn the_committed_renderings_hold_every_reviewed_control() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read =
        |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    let expected = read("tests/expected/image-profile.txt");
    let (mut file, mut text, mut checked, mut wrong) = (None, String::new(), 0, Vec::new());
    for line in expected.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(p) = line.strip_prefix("FILE ") {
            text = read(p);
            file = Some(p);
            continue;
        }
        let f = file.expect("a control before the first FILE line");
        checked += 1;
        match line.strip_prefix("NOT ") {
            Some(t) if text.contains(t) => wrong.push(format!("{f} holds `{t}`")),
            Some(_) => {}
            None if !text.lines().any(|l| l == line) => wrong.push(format!("{f} lacks `{line}`")),
            None => {}
        }
    }
    assert!(checked >= 40, "only {checked} controls listed");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every volume the pod mounts is mounted noexec, nosuid, nodev.
    let k8s = read("image/generated/k8s-job.yaml");
    let count = |pred: &dyn Fn(&str) -> bool| k8s.lines().filter(|l| pred(l.trim())).count();
    let mounts = count(&|l| l.starts_with("mountPath:"));
    let options = count(&|l| l == "bindMountOptions: [noexec, nosuid, nodev]");
    assert_eq!((mounts, options), (4, 4), "{k8s}");
}
