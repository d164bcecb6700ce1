//! The guard fuzz targets' invariants (`guard/fuzz/invariants`) as property tests of the normal
//! suite, so they cannot rot unseen (issue 13 item 6: the policy target's key list lacked
//! `seal`, the shebang target asserted things the kernel does not do), and the cases that
//! showed it, checked against the real kernel.

#[path = "../guard/fuzz/invariants/mod.rs"]
mod invariants;
mod support;

use execguard_policy::shebang::{self, Shebang};
use execguard_policy::Policy;
use proptest::prelude::*;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;
use support::*;

/// One line (or table) of a policy document, for every key the policy knows.
fn policy_line() -> impl Strategy<Value = String> {
    let path = prop::sample::select(vec![
        "/w", "/w/bin", "/srv/a", "/opt/x/y", "/tmp/t", "rel", "/a b",
    ]);
    let list = prop::collection::vec(path.clone(), 0..3).prop_map(|v| {
        let items: Vec<String> = v.iter().map(|p| format!("\"{p}\"")).collect();
        format!("[{}]", items.join(", "))
    });
    prop_oneof![
        prop::sample::select(vec!["strict", "development", "build", "breakglass", "lax"])
            .prop_map(|p| format!("profile = \"{p}\"")),
        path.clone().prop_map(|p| format!("workspace = \"{p}\"")),
        list.clone().prop_map(|l| format!("mutable_roots = {l}")),
        list.clone().prop_map(|l| format!("exec_dirs = {l}")),
        list.prop_map(|l| format!("allow_commands = {l}")),
        path.clone().prop_map(|p| format!("audit_log = \"{p}\"")),
        path.clone()
            .prop_map(|p| format!("runtime_profile = \"{p}\"")),
        any::<bool>().prop_map(|b| format!("audit_allow = {b}")),
        any::<bool>().prop_map(|b| format!("seal = {b}")),
        (path.clone(), path).prop_map(|(p, w)| format!(
            "[[runtime]]\nname = \"git\"\npath = \"{p}\"\nwrapper = \"{w}\""
        )),
    ]
}

fn policy_doc() -> impl Strategy<Value = Vec<u8>> {
    let mutation = prop::option::of((any::<prop::sample::Index>(), any::<u8>()));
    (prop::collection::vec(policy_line(), 0..8), mutation).prop_map(|(lines, mutation)| {
        // Tables last, as TOML requires for the top-level keys after them.
        let (tables, keys): (Vec<String>, Vec<String>) =
            lines.into_iter().partition(|l| l.starts_with("[["));
        let mut doc = String::from("version = 1\n");
        for l in keys.iter().chain(&tables) {
            doc.push_str(l);
            doc.push('\n');
        }
        let mut bytes = doc.into_bytes();
        if let Some((at, byte)) = mutation {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        bytes
    })
}

fn shebang_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => Just(b' '),
        2 => Just(b'\t'),
        2 => Just(0u8),
        2 => Just(b'\n'),
        1 => Just(b'\r'),
        4 => Just(b'a'),
        2 => Just(b'/'),
        1 => any::<u8>(),
    ];
    (any::<bool>(), prop::collection::vec(byte, 0..300)).prop_map(|(hashbang, rest)| {
        let mut v = if hashbang { b"#!".to_vec() } else { Vec::new() };
        v.extend(rest);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn policy_invariants_on_documents(doc in policy_doc()) {
        invariants::policy(&doc);
    }

    #[test]
    fn policy_invariants_on_bytes(data in prop::collection::vec(any::<u8>(), 0..128)) {
        invariants::policy(&data);
    }

    #[test]
    fn shebang_invariants(data in shebang_bytes()) {
        invariants::shebang(&data);
    }
}

/// The document generator reaches every key, accepted.
#[test]
fn every_policy_key_is_known_to_the_parser_and_the_invariant() {
    let doc = "version = 1\nprofile = \"strict\"\nworkspace = \"/w\"\nmutable_roots = [\"/srv/a\"]\nexec_dirs = [\"/w/bin\"]\nallow_commands = [\"ls\"]\naudit_log = \"/srv/a/log\"\naudit_allow = true\nruntime_profile = \"/run/p\"\nseal = true\nown_loaders = [\"valgrind\"]\n[[runtime]]\nname = \"git\"\npath = \"/usr/bin/git\"\nwrapper = \"/usr/lib/w\"\n";
    let p = Policy::parse(doc.as_bytes()).expect("every key with a valid value parses");
    assert!(p.seal() && p.exec_dirs().count() == 1 && p.own_loaders().count() == 1);
    invariants::policy(doc.as_bytes());
    let t: toml::Table = toml::from_str(doc).unwrap();
    for k in t.keys() {
        assert!(invariants::POLICY_KEYS.contains(&k.as_str()), "{k}");
    }
    assert_eq!(
        t.len(),
        invariants::POLICY_KEYS.len(),
        "the document holds every key"
    );
}

/// What the kernel passes for a `#!` file: `Err(errno)` or the argv the interpreter sees.
fn kernel_runs(f: &Fixture, name: &str, content: &[u8]) -> Result<Vec<Vec<u8>>, i32> {
    let file = f.sys.join(name);
    f.write_exec(&file, content);
    match Command::new(&file).env_clear().output() {
        Ok(out) => Ok(Outcome::new(name.into(), out)
            .printed_argv()
            .expect("the interpreter prints its argv")),
        Err(e) => Err(e.raw_os_error().unwrap()),
    }
}

/// The lines that showed the shebang target wrong, against the kernel: an empty argument, an
/// argument ending in a blank before a NUL, and an empty interpreter name.
#[test]
fn the_shebang_cases_the_fuzz_target_got_wrong_match_the_kernel() {
    let f = Fixture::new("fuzz-shebang");
    let interp = s(&f.sys_argv).as_bytes().to_vec();
    let line = |tail: &[u8]| [b"#!".as_slice(), &interp, tail].concat();
    let empty_arg = line(b" \0\n");
    let blank_before_nul = line(b" a \0b\n");
    for (name, content, arg) in [
        ("empty-arg", &empty_arg, &b""[..]),
        ("blank-before-nul", &blank_before_nul, b"a "),
    ] {
        invariants::shebang(content);
        let buf = shebang::pad(content);
        assert_eq!(
            shebang::parse(&buf),
            Shebang::Script {
                interpreter: &interp,
                argument: Some(arg)
            },
            "{name}"
        );
        let script = f.sys.join(name);
        let argv = kernel_runs(&f, name, content).unwrap();
        assert_eq!(
            argv,
            vec![
                interp.clone(),
                arg.to_vec(),
                script.as_os_str().as_bytes().to_vec()
            ],
            "{name}: the kernel's argv"
        );
    }
    invariants::shebang(b"#!");
    assert_eq!(
        shebang::parse(&shebang::pad(b"#!")),
        Shebang::Script {
            interpreter: b"",
            argument: None
        }
    );
    assert_eq!(kernel_runs(&f, "only-hashbang", b"#!"), Err(EACCES));
}
