//! `Policy::parse` on arbitrary bytes: never panics, and every document it accepts is TOML with
//! the same values (the claim in policy.rs's module documentation).
#![no_main]

use execguard_policy::Policy;
use libfuzzer_sys::fuzz_target;

fn s(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).expect("accepted policies are UTF-8")
}

fn strings(v: Option<&toml::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().expect("strings").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Policy::parse(data) else { return };
    let text = std::str::from_utf8(data).expect("accepted policies are UTF-8");
    let t: toml::Table = toml::from_str(text).expect("accepted policy is not TOML");
    assert_eq!(t.get("version").and_then(|v| v.as_integer()), Some(1));
    assert_eq!(
        t.get("profile")
            .and_then(|v| v.as_str())
            .unwrap_or("strict"),
        p.profile().as_str()
    );
    assert_eq!(
        t.get("workspace")
            .and_then(|v| v.as_str())
            .unwrap_or("/workspace"),
        s(p.workspace())
    );
    // The first six roots are the built-in ones and the workspace.
    let roots: Vec<String> = p.mutable_roots().skip(6).map(s).collect();
    assert_eq!(strings(t.get("mutable_roots")), roots);
    let allowed: Vec<String> = p.allow_commands().map(s).collect();
    assert_eq!(strings(t.get("allow_commands")), allowed);
    assert_eq!(
        t.get("audit_allow")
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        p.audit_allow()
    );
    assert_eq!(
        t.get("audit_log")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        p.audit_log().map(s)
    );
    assert_eq!(
        t.get("runtime_profile")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        p.runtime_profile().map(s)
    );
    let runtimes: Vec<[String; 3]> = p
        .runtimes()
        .map(|r| [s(r.name), s(r.path), s(r.wrapper)])
        .collect();
    let toml_runtimes: Vec<[String; 3]> = t
        .get("runtime")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .map(|r| {
                    let f = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
                    [f("name"), f("path"), f("wrapper")]
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(toml_runtimes, runtimes);
    for k in t.keys() {
        assert!(
            [
                "version",
                "profile",
                "workspace",
                "mutable_roots",
                "allow_commands",
                "audit_log",
                "audit_allow",
                "runtime_profile",
                "runtime"
            ]
            .contains(&k.as_str()),
            "unknown key {k} accepted"
        );
    }
});
