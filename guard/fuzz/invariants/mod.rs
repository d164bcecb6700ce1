//! The guard fuzz targets' invariants, in one place: `cargo fuzz` runs them
//! (`fuzz_targets/*.rs`) and so does the normal test suite (`tests/fuzz_invariants.rs`), so
//! they cannot rot unseen.

use execguard_policy::shebang::{pad, parse, Shebang, BINPRM_BUF_SIZE};
use execguard_policy::Policy;

/// Every key a policy document may hold (top level, and `runtime` for `[[runtime]]`).
pub const POLICY_KEYS: &[&str] = &[
    "version",
    "profile",
    "workspace",
    "mutable_roots",
    "exec_dirs",
    "allow_commands",
    "audit_log",
    "audit_allow",
    "runtime_profile",
    "seal",
    "own_loaders",
    "runtime",
];

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

/// `Policy::parse` on arbitrary bytes: never panics, and every document it accepts is TOML
/// with the same values (the claim in policy.rs's module documentation).
pub fn policy(data: &[u8]) {
    let Ok(p) = Policy::parse(data) else { return };
    let text = std::str::from_utf8(data).expect("accepted policies are UTF-8");
    let t: toml::Table = toml::from_str(text)
        .unwrap_or_else(|e| panic!("accepted policy is not TOML ({e}):\n{text}"));
    assert_eq!(t.get("version").and_then(|v| v.as_integer()), Some(1));
    let str_of = |k: &str| t.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let bool_of = |k: &str| t.get(k).and_then(|v| v.as_bool()).unwrap_or(false);
    assert_eq!(
        str_of("profile").as_deref().unwrap_or("strict"),
        p.profile().as_str()
    );
    assert_eq!(
        str_of("workspace").as_deref().unwrap_or("/workspace"),
        s(p.workspace())
    );
    // The first six roots are the built-in ones and the workspace.
    let roots: Vec<String> = p.mutable_roots().skip(6).map(s).collect();
    assert_eq!(strings(t.get("mutable_roots")), roots);
    let exec_dirs: Vec<String> = p.exec_dirs().map(s).collect();
    assert_eq!(strings(t.get("exec_dirs")), exec_dirs);
    let allowed: Vec<String> = p.allow_commands().map(s).collect();
    assert_eq!(strings(t.get("allow_commands")), allowed);
    let own_loaders: Vec<String> = p.own_loaders().map(s).collect();
    match t.get("own_loaders") {
        Some(v) => assert_eq!(strings(Some(v)), own_loaders),
        None => assert_eq!(
            own_loaders,
            execguard_policy::policy::DEFAULT_OWN_LOADERS
                .map(s)
                .to_vec()
        ),
    }
    assert_eq!(bool_of("audit_allow"), p.audit_allow());
    assert_eq!(bool_of("seal"), p.seal());
    assert_eq!(str_of("audit_log"), p.audit_log().map(s));
    assert_eq!(str_of("runtime_profile"), p.runtime_profile().map(s));
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
            POLICY_KEYS.contains(&k.as_str()),
            "unknown key {k} accepted:\n{text}"
        );
    }
}

/// `shebang::parse` on arbitrary bytes: never panics, and whatever it returns lies inside the
/// kernel's 256-byte buffer with the invariants of `fs/binfmt_script.c`. The name stops at a
/// blank or NUL and may be empty (`#!` alone: the kernel then fails the exec with `EACCES`);
/// the argument may be empty too (the kernel passes `""` for `#!/bin/echo \0`) and stops at a
/// NUL, so it may end in a blank that preceded one.
pub fn shebang(data: &[u8]) {
    let buf = pad(data);
    match parse(&buf) {
        Shebang::NotScript => assert!(!data.starts_with(b"#!")),
        Shebang::Invalid => assert!(data.starts_with(b"#!")),
        Shebang::Script {
            interpreter,
            argument,
        } => {
            assert!(data.starts_with(b"#!"));
            assert!(interpreter.len() < BINPRM_BUF_SIZE);
            assert!(!interpreter
                .iter()
                .any(|&c| c == b' ' || c == b'\t' || c == 0 || c == b'\n'));
            // The name is the first word after `#!` and its blanks.
            let lead = buf[2..]
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count();
            assert!(buf[2 + lead..].starts_with(interpreter));
            let after = 2 + lead + interpreter.len();
            if let Some(a) = argument {
                // Only a blank (never a NUL) after the name opens an argument.
                assert!(buf[after] == b' ' || buf[after] == b'\t');
                assert!(!a.contains(&0) && !a.contains(&b'\n'));
                assert!(!a.starts_with(b" ") && !a.starts_with(b"\t"));
                if a.ends_with(b" ") || a.ends_with(b"\t") {
                    let end = a.as_ptr() as usize - buf.as_ptr() as usize + a.len();
                    assert_eq!(buf[end], 0, "a trailing blank is kept only before a NUL");
                }
            }
        }
    }
}
