//! Image mode: a root-owned `/etc/execguard/policy.toml` is the policy, and the environment is
//! never consulted. Each case runs in a private mount namespace with a copy of /etc bound over
//! the real one, so the host's /etc is never touched (CI runs as root).

mod support;

use std::os::unix::fs::PermissionsExt;
use support::*;

/// Runs the probe under the guard, with `policy` installed as /etc/execguard/policy.toml
/// (owner `uid`, `mode`) and a relaxed breakglass policy in the environment.
fn with_system_policy(f: &Fixture, policy: &str, uid: u32, mode: u32, args: &[&str]) -> Outcome {
    let etc = f.base.join("etc");
    if !etc.exists() {
        let ok = std::process::Command::new("cp")
            .args(["-a", "/etc"])
            .arg(&etc)
            .status()
            .unwrap();
        assert!(ok.success(), "cp -a /etc");
    }
    let dir = etc.join("execguard");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("policy.toml");
    std::fs::write(&file, policy).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(&file, Some(uid), Some(uid)).unwrap();
    let relaxed = format!(
        "version = 1\nprofile = \"breakglass\"\nworkspace = \"{}\"\n",
        s(&f.ws)
    );
    let mut c = f.guarded(&relaxed, "/usr/bin/unshare");
    c.args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c"])
        .arg("mount --bind \"$0\" /etc && exec \"$@\"")
        .arg(&etc)
        .arg(&tools().probe)
        .args(args);
    run(&mut c)
}

fn strict_for(f: &Fixture) -> String {
    format!(
        "version = 1\nprofile = \"strict\"\nworkspace = \"{}\"\n",
        s(&f.ws)
    )
}

#[test]
fn the_system_policy_wins_over_the_environment() {
    if !execguard_testkit::require_root(
        "a system policy: installing one needs root (a mount namespace, a root-owned file)",
    ) {
        return;
    }
    let f = Fixture::new("sys-policy");
    let o = with_system_policy(&f, &strict_for(&f), 0, 0o644, &["execve", s(&f.payload)]);
    o.assert_denied("mutable_native");
    o.assert_exec_failed(EACCES);
    // A system program still runs.
    let o = with_system_policy(&f, &strict_for(&f), 0, 0o644, &["execve", s(&f.sys_argv)]);
    o.assert_ran();
}

#[test]
fn an_untrusted_or_invalid_system_policy_refuses_every_exec() {
    if !execguard_testkit::require_root(
        "a system policy: installing one needs root (a mount namespace, a root-owned file)",
    ) {
        return;
    }
    let f = Fixture::new("sys-untrusted");
    let strict = strict_for(&f);
    for (uid, mode, reason) in [
        (65534, 0o644, "policy_untrusted"),
        (0, 0o666, "policy_untrusted"),
        (0, 0o664, "policy_untrusted"),
    ] {
        let o = with_system_policy(&f, &strict, uid, mode, &["execve", "/bin/true"]);
        o.assert_denied(reason);
    }
    let o = with_system_policy(
        &f,
        "version = 1\nunknown = 1\n",
        0,
        0o644,
        &["execve", "/bin/true"],
    );
    o.assert_denied("policy_invalid");
}
