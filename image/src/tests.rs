//! The three renderings agree control by control; the seccomp synthesis keeps its promises.

use crate::docker::*;
use crate::profile::*;
use crate::render::*;
use crate::seccomp::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn session(profile: &str) -> Session {
    Session {
        image: "execguard:test".into(),
        workspace: PathBuf::from("/srv/work"),
        profile: profile.into(),
        agent: "claude".into(),
        autonomy: "prompt".into(),
        breakglass_ack: None,
        repo_config_ack: None,
        allow_exec_mappings: false,
        uid: 1234,
        gid: 2345,
        user_name: "jane".into(),
        manifest_sha256: "0".repeat(64),
        seccomp_file: PathBuf::from("/x/seccomp.json"),
        pass_env: vec![],
        tty: false,
        entry_args: vec!["--version".into()],
        audit_dir: None,
    }
}

fn docker(profile: &str) -> Vec<String> {
    docker_run_args(&session(profile))
        .unwrap()
        .into_iter()
        .map(|a| a.into_string().unwrap())
        .collect()
}

/// Every control of the profile, as each platform must say it (or `None`: documented as
/// not expressible there).
fn controls() -> Vec<(String, String, String, Option<String>)> {
    let p = &PROFILE;
    let mut c = vec![(
        "cap drop ALL".to_string(),
        "--cap-drop=ALL".to_string(),
        "    cap_drop:\n      - ALL\n".to_string(),
        Some("capabilities:\n              drop:\n                - ALL\n".to_string()),
    )];
    c.push((
        "no-new-privileges".into(),
        "--security-opt=no-new-privileges:true".into(),
        "      - no-new-privileges:true\n".into(),
        Some("allowPrivilegeEscalation: false\n".into()),
    ));
    c.push((
        "read-only root".into(),
        "--read-only".into(),
        "    read_only: true\n".into(),
        Some("readOnlyRootFilesystem: true\n".into()),
    ));
    c.push((
        "seccomp".into(),
        "--security-opt=seccomp=/x/seccomp.json".into(),
        "      - seccomp=${EXECGUARD_SECCOMP:?}\n".into(),
        Some(format!(
            "type: Localhost\n              localhostProfile: profiles/{SECCOMP_FILE}\n"
        )),
    ));
    c.push((
        "memory".into(),
        format!("--memory={}m", p.memory_mib),
        format!("    mem_limit: {}m\n", p.memory_mib),
        Some(format!("memory: {}Mi\n", p.memory_mib)),
    ));
    c.push((
        "pids".into(),
        format!("--pids-limit={}", p.pids_limit),
        format!("    pids_limit: {}\n", p.pids_limit),
        None,
    ));
    c.push((
        "session user".into(),
        "EXECGUARD_HOST_UID=1234".into(),
        "      EXECGUARD_HOST_UID: ${EXECGUARD_HOST_UID:?}\n".into(),
        Some("runAsNonRoot: true\n".into()),
    ));
    for cap in p.start_caps {
        c.push((
            format!("start {cap}"),
            format!("--cap-add={cap}"),
            format!("      - {cap}\n"),
            // Kubernetes starts the entrypoint as the mapped user, with no capability.
            Some("drop:\n                - ALL\n".into()),
        ));
    }
    c.push((
        "mutability".into(),
        format!("EXECGUARD_MUTABILITY={}", p.mutability),
        format!("      EXECGUARD_MUTABILITY: {}\n", p.mutability),
        Some(format!(
            "- name: EXECGUARD_MUTABILITY\n              value: \"{}\"\n",
            p.mutability
        )),
    ));
    for t in p.tmpfs {
        c.push((
            format!("tmpfs {}", t.path),
            format!("--tmpfs={}", tmpfs_spec(t)),
            format!("      - {}\n", tmpfs_spec(t)),
            Some(format!(
                "- name: {}\n          emptyDir:\n            medium: Memory\n            sizeLimit: {}Mi\n",
                k8s_volume_name(t.path),
                t.size_mib
            )),
        ));
    }
    // noexec for the workspace: the entrypoint remounts it (docker, compose: a plain bind);
    // Kubernetes: bindMountOptions on every volume.
    c.push((
        "workspace bind".into(),
        "type=bind,src=/srv/work,dst=/workspace".into(),
        "      - type: bind\n        source: ${EXECGUARD_WORKSPACE:?}\n        target: /workspace\n"
            .into(),
        Some(format!(
            "- name: workspace\n              mountPath: /workspace\n              bindMountOptions: [{}]\n",
            p.write_set_flags.join(", ")
        )),
    ));
    c
}

#[test]
fn docker_compose_and_kubernetes_agree_on_every_control() {
    let args = docker("strict").join("\n");
    let compose = compose_yaml();
    let k8s = k8s_job_yaml();
    for (name, d, c, k) in controls() {
        assert!(args.contains(&d), "docker args lack {name}: {d}\n{args}");
        assert!(compose.contains(&c), "compose lacks {name}: {c}");
        match k {
            Some(k) => assert!(k8s.contains(&k), "k8s lacks {name}: {k}"),
            None => assert!(
                K8S_CANNOT_EXPRESS.iter().any(|(what, _)| {
                    let key = name.split(' ').next().unwrap();
                    what.contains(key)
                }),
                "{name} is neither in the k8s manifest nor listed as inexpressible"
            ),
        }
    }
    // Kubernetes gets the mount point of every tmpfs and of the workspace.
    for t in PROFILE.tmpfs {
        assert!(k8s.contains(&format!("mountPath: {}\n", t.path)));
    }
    assert!(k8s.contains("mountPath: /workspace\n"));
    assert!(!k8s.contains("hostPath"), "no host paths in the pod");
}

#[test]
fn every_kubernetes_volume_is_mounted_noexec_nosuid_nodev() {
    let k8s = k8s_job_yaml();
    let mounts = k8s.matches("mountPath: ").count();
    let opts = k8s
        .matches("bindMountOptions: [noexec, nosuid, nodev]\n")
        .count();
    assert_eq!(mounts, PROFILE.tmpfs.len() + 1);
    assert_eq!(opts, mounts, "{k8s}");
}

#[test]
fn only_the_start_capabilities_are_added_and_the_session_user_is_never_root() {
    let args = docker("strict");
    let added: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix("--cap-add="))
        .collect();
    assert_eq!(added, PROFILE.start_caps);
    assert!(args.contains(&"--cap-drop=ALL".to_string()));
    assert!(!args.iter().any(|a| a.starts_with("--privileged")));
    assert!(!args.iter().any(|a| a.contains("unconfined")));
    assert!(args.contains(&"EXECGUARD_HOST_UID=1234".to_string()));
    assert!(parse_user("0:1000").is_err());
    assert!(parse_user("1000:0").is_err());
    assert_eq!(parse_user("1:2").unwrap(), (1, 2));
}

#[test]
fn workspace_paths_that_would_break_the_mount_spec_are_refused() {
    assert!(workspace_mount(Path::new("/a,b")).is_err());
    assert!(workspace_mount(Path::new("/a\"b")).is_err());
    assert!(workspace_mount(Path::new("/a=b")).is_err());
}

#[test]
fn the_image_args_come_last() {
    let args = docker("strict");
    let i = args.iter().position(|a| a == "execguard:test").unwrap();
    assert_eq!(&args[i + 1..], ["--version"]);
}

/// A small profile in Docker's format (made for this test, shaped like Docker's).
fn fake_default() -> Value {
    json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "archMap": [],
        "syscalls": [
            {"names": ["read", "write", "ptrace", "userfaultfd", "perf_event_open", "keyctl"],
             "action": "SCMP_ACT_ALLOW", "args": [], "includes": {}, "excludes": {}},
            {"names": ["bpf", "clone", "clone3", "unshare", "setns", "mount"],
             "action": "SCMP_ACT_ALLOW", "args": [], "includes": {"caps": ["CAP_SYS_ADMIN"]}, "excludes": {}},
            {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": CLONE_NEW_MASK, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
             "includes": {}, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38,
             "args": [], "includes": {}, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["process_vm_readv", "process_vm_writev", "ptrace"],
             "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_PTRACE"]}}
        ]
    })
}

fn allowed_names(p: &Value) -> Vec<String> {
    p["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "SCMP_ACT_ALLOW")
        .flat_map(|r| r["names"].as_array().unwrap().clone())
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn seccomp_removes_every_denial_from_every_allow_rule() {
    let p = seccomp_profile(&fake_default()).unwrap();
    let allowed = allowed_names(&p);
    for d in SECCOMP_DENY {
        assert!(!allowed.contains(&d.to_string()), "{d} still allowed");
    }
    assert!(allowed.contains(&"read".to_string()));
    assert!(
        allowed.contains(&"mount".to_string()),
        "capability rules stay"
    );
    assert!(!allowed.contains(&"clone3".to_string()));
    // clone survives only with its namespace mask, for every capability set.
    let clones: Vec<&Value> = p["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "SCMP_ACT_ALLOW" && r["names"] == json!(["clone"]))
        .collect();
    assert_eq!(clones.len(), 1);
    assert!(clone_rule_masks_namespaces(clones[0]));
    assert!(clones[0]["excludes"].get("caps").is_none());
    let deny = p["syscalls"].as_array().unwrap().last().unwrap();
    assert_eq!(deny["names"], json!(SECCOMP_DENY));
    assert_eq!(deny["errnoRet"], json!(EPERM));
}

#[test]
fn seccomp_refuses_a_profile_it_does_not_understand() {
    let mut allow_default = fake_default();
    allow_default["defaultAction"] = json!("SCMP_ACT_ALLOW");
    assert!(seccomp_profile(&allow_default).is_err());
    let mut no_mask = fake_default();
    no_mask["syscalls"].as_array_mut().unwrap().remove(2);
    assert!(seccomp_profile(&no_mask).is_err());
}

#[test]
fn the_mask_covers_every_namespace_flag() {
    for flag in [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
    ] {
        assert_ne!(CLONE_NEW_MASK & flag as u64, 0, "{flag:#x}");
    }
}

#[test]
fn a_root_launcher_runs_the_session_as_the_workspace_owner_or_refuses() {
    let dir = std::env::temp_dir().join(format!("execguard-owner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let meta = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&dir).unwrap());
    // A non-root launcher is the session user; an explicit --user wins.
    assert_eq!(
        session_user(None, (1500, 1600), &dir).unwrap(),
        (1500, 1600)
    );
    assert_eq!(session_user(Some("7:8"), (0, 0), &dir).unwrap(), (7, 8));
    let as_root = session_user(None, (0, 0), &dir);
    if meta == 0 {
        let err = as_root.unwrap_err();
        let r = err.downcast_ref::<Refusal>().expect("a typed refusal");
        assert_eq!(r.code(), "workspace_owned_by_root");
        assert!(
            r.detail().contains("chown") && r.detail().contains("--user"),
            "{r}"
        );
        // Owned by someone else: the session runs as them.
        std::os::unix::fs::chown(&dir, Some(4242), Some(4343)).unwrap();
        assert_eq!(session_user(None, (0, 0), &dir).unwrap(), (4242, 4343));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_session_can_write_its_workspace_by_owner_group_or_other_bits() {
    // (owner, mode, session uid:gid, writable)
    for (owner, mode, who, want) in [
        ((1000, 1000), 0o755, (1000, 1000), true),
        ((1000, 1000), 0o555, (1000, 1000), false),
        ((0, 0), 0o755, (1000, 1000), false),
        ((0, 1000), 0o775, (1000, 1000), true),
        ((0, 0), 0o777, (1000, 1000), true),
        ((1000, 5), 0o577, (1000, 5), false),
    ] {
        assert_eq!(
            writable_by(owner, mode, who.0, who.1),
            want,
            "{owner:?} {mode:o} {who:?}"
        );
    }
}
